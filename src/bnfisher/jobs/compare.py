"""The comparison job: is B different from A, and where?  One call, one result object.

:func:`compare` resolves its inputs once (one schema for both tables, each table
encoded once), learns or takes the network, runs the permutations once, and
returns a :class:`ComparisonResult` from which the text (``str``), the HTML report
(:meth:`~ComparisonResult.to_html`), the JSON (:meth:`~ComparisonResult.to_json`)
and the notebook display are all rendered without computing anything again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_random_state, free_name
from bnfisher.bn.network import BayesianNetwork
from bnfisher.comparison.attribution import conditional_family_tests, family_tables, resolve_floor
from bnfisher.comparison.explain import ADJUSTMENT, FAMILY_ORDER, cells_from_counts, family_profiles, family_table
from bnfisher.comparison.permutation import PermutationStatistics, permutation_statistics
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.comparison.splits import draw_note
from bnfisher.comparison.two_sample import TwoSampleResult, effect_interval
from bnfisher.comparison.validity import fitted_on_one_sample, one_sample_warning
from bnfisher.data.binning import Binning
from bnfisher.data.guardrails import split_columns
from bnfisher.data.profile import tables_of
from bnfisher.data.rows import DistinctRows
from bnfisher.exceptions import OptionTypeError
from bnfisher.jobs.attribute import SEARCHED_STRUCTURES, mechanism_table, neighbourhood_graph, no_mechanisms
from bnfisher.jobs.inputs import feature_advice, prepare, warn
from bnfisher.jobs.result import JobResult
from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.fisher import FisherKernel

__all__ = ["ComparisonResult", "compare", "compare_encoded"]

@dataclass(repr=False)
class ComparisonResult(JobResult):
    """Everything :func:`compare` found, computed once; printed, rendered and serialised from here.

    Attributes
    ----------
    names : tuple of str
        The two samples' names.
    test : TwoSampleResult
        MMD² (eq. 10), its unbiased estimate and the permutation p-value.
    families : DataFrame
        One row per family (a variable given its parents), from
        :func:`bnfisher.comparison.explain.family_table`: share and excess above chance, MMD²
        part, the p-value of its conditional test and Holm's adjusted p-value.
    cells : DataFrame
        The cells whose frequencies differ most, in the user's labels.
    witness : tuple of ndarray
        ``f(x) = <Phi(x), mu_A - mu_B>`` of every row of A and of B (positive: typical of A).
    network : BayesianNetwork
    kernel : FamilyKernel
    samples : tuple of DataFrame
        The rows as the user gave them (for the typical rows shown).
    notes : list of str
        What was done on the way (binning, missing cells, the network learned).
    top : int
        Families, cells and rows shown.
    advice : list of str
        Warnings about the input (also emitted as DataWarning): identifier columns,
        undeclared missing markers, a column that defines the split, a dominating family.
    profiles : list of dict
        For each of the top families, the child's distribution in A and in B in the parent
        configuration where they differ most (what the report draws inline).
    copies : tuple of (ndarray or None)
        For a sample known only by its distinct rows (a window of Dask data in
        :func:`bnfisher.drift`): how many rows each row of its ``samples`` frame and
        ``witness`` stands for; None for a sample given row by row.
    mechanisms : DataFrame
        Which mechanisms changed (:func:`bnfisher.jobs.attribute.mechanism_table`): one
        row per variable, whether its dependence on the sample survives every
        conditioning set searched, clearest first.  This table answers "what changed", and
        the verdict states only what it holds.  Empty, with its columns
        (:func:`~bnfisher.jobs.attribute.no_mechanisms`, ``attrs["searched"]`` False), where
        the search did not run (the test's p-value above 0.05, or a drift window's above
        ``alpha``).
    mechanism_cell : dict or None
        The cell of the clearest changed mechanism whose conditional frequency differs most.
    sizes : tuple of dict or None
        Each sample's ``rows`` and ``missing_cells`` when ``samples`` hold only the rows
        shown (data beyond memory, :func:`~bnfisher.jobs.compare_distributed.compare_distributed`);
        None: counted from ``samples``.
    witness_histogram : tuple or None
        ``(edges, counts)`` of each sample's witness (counts of shape (2, bins)) when
        ``witness`` holds only the typical rows' values (data beyond memory).

    Examples
    --------
    >>> result = bf.compare(data.iloc[::2], data.iloc[1::2], n_permutations=99, random_state=0)
    >>> result.families.columns[:3].tolist()
    ['variable', 'parents', 'share']
    >>> result.to_dict()["kind"]
    'comparison'
    """

    names: tuple
    test: TwoSampleResult
    families: pd.DataFrame
    cells: pd.DataFrame
    witness: tuple
    network: BayesianNetwork
    kernel: FamilyKernel
    samples: tuple
    notes: list = field(default_factory=list)
    top: int = 10
    advice: list = field(default_factory=list)
    profiles: list = field(default_factory=list)
    copies: tuple = (None, None)
    mechanisms: pd.DataFrame = field(default_factory=no_mechanisms)
    mechanism_cell: dict | None = None
    sizes: tuple | None = None
    witness_histogram: tuple | None = None

    def witness_bars(self) -> tuple:
        """Return what the witness histograms are drawn from: ``(values_x, values_y, weights, bins)``.

        Returns
        -------
        tuple
            Every row's witness and copies (40 bins), or, for data beyond memory, the bins'
            centres weighted by their counts over the bins' edges.
        """
        if self.witness_histogram is None:
            return self.witness[0], self.witness[1], self.copies, 40
        edges, counts = self.witness_histogram
        centres = (edges[:-1] + edges[1:]) / 2
        return centres, centres, (counts[0], counts[1]), edges

    def typical_rows(self, n: int = 3) -> pd.DataFrame:
        """Return the rows of each sample most typical of it against the other (largest witness, by sign).

        Parameters
        ----------
        n : int, default=3
            Rows per sample.

        Returns
        -------
        DataFrame
            Columns ``sample``, ``row`` (0-based position), ``witness``, then the row's values
            (after ``copies`` when a sample is known by its distinct rows: ``row`` is then
            the distinct row's position).  Where the data has a column of one of these
            names, the result's column takes a trailing ``_`` (:func:`free_name`).
        """
        parts = []
        for name, frame, order, values, copies in self._typical(n):
            shown = frame.iloc[order].reset_index(drop=True)
            own = {key: free_name(key, frame.columns) for key in ("sample", "row", "witness", "copies")}
            if copies is not None:  # a sample known by its distinct rows: each shown row stands for its copies
                shown.insert(0, own["copies"], copies[order])
            shown.insert(0, own["witness"], values[order])
            shown.insert(0, own["row"], order)
            shown.insert(0, own["sample"], name)
            parts.append(shown)
        return pd.concat(parts, ignore_index=True)

    def _typical(self, n: int):
        """Each sample's name, table, its ``n`` most typical rows' positions, its witness values and copies."""
        for name, frame, values, copies, sign in zip(self.names, self.samples, self.witness, self.copies, (1, -1)):
            yield name, frame, np.argsort(-sign * values, kind="stable")[:n], values, copies

    def verdict(self, alpha: float = 0.05) -> str:
        """One sentence a non-statistician can act on.

        Parameters
        ----------
        alpha : float, default=0.05

        Returns
        -------
        str
        """
        a, b = self.names
        p = self.test.p_value
        if p > alpha:
            return f"No significant difference between {a} and {b} (p = {p:.3g})."
        named = self._mechanism_verdict(alpha)
        if named:
            return f"{a} and {b} differ (p = {p:.3g}); {named}"
        if self.mechanisms.attrs.get("searched"):  # the search ran and named nothing: say so, name no family
            return (f"{a} and {b} differ (p = {p:.3g}), but no single variable's mechanism is named: for each, some "
                    "set of its neighbours explains its difference, or none differs enough. The family table shows "
                    "where the learned network's factorisation moved.")
        lead = self.families.iloc[0]
        parents = f" given {lead['parents']}" if lead["parents"] not in ("", "-") else ""
        if lead["p_adjusted"] > alpha:
            return (f"{a} and {b} differ (p = {p:.3g}), but no single family's conditional distribution changed "
                    f"significantly; the strongest hint is {lead['variable']}{parents} (adjusted p = "
                    f"{lead['p_adjusted']:.3g}).")
        floored = lead["p_value"] <= self.families.attrs.get("p_floor", 0.0) * (1 + 1e-9)
        return (f"{a} and {b} differ (p = {p:.3g}); the clearest change is in the distribution of "
                f"{lead['variable']}{parents} (adjusted p {'<=' if floored else '='} {lead['p_adjusted']:.3g}; "
                f"{100 * lead['share']:.3g}% of the difference above chance).")

    def _mechanism_verdict(self, alpha: float) -> str:
        """Return the verdict's account of which mechanism changed ("" when not searched or none found)."""
        table = self.mechanisms
        if not table.attrs.get("searched"):
            return ""
        changed = table[table["p_adjusted"] <= alpha]
        groups = [" or ".join(group) for group in table.attrs.get("unoriented", []) if len(group) > 1]
        unoriented = (f" The data cannot tell which of {'; which of '.join(groups)} changed (each explains the "
                      "other's difference)." if groups else "")
        if changed.empty:
            if groups:
                return (f"the difference lies in {groups[0]}, and the data cannot tell which changed (each explains "
                        "the other's difference).")
            return ""
        lead = changed.iloc[0]
        floored = lead["p_value"] <= table.attrs["p_floor"] * (1 + 1e-9)
        also = (f" Also changed: {', '.join(changed['variable'].iloc[1:])}." if len(changed) > 1 else "")
        cell = (f" Largest change: {self.mechanism_cell['text']}." if self.mechanism_cell is not None
                and self.mechanism_cell["variable"] == lead["variable"] else "")
        return (f"the mechanism that changed is {lead['variable']}'s (no set of its neighbours explains its "
                f"difference; adjusted p {'<=' if floored else '='} {lead['p_adjusted']:.3g}).{cell}{also}"
                f"{unoriented}")

    def signal(self) -> str:
        """Say which kind of difference carried the test's signal (the component with the smallest p-value).

        Returns
        -------
        str
        """
        components = self.test.components
        if components is None:
            return ""
        lead = self.test.carried_by
        if components.loc[lead, "p_value"] > 0.05:
            return "No component is significant on its own."
        block = components.loc["blocks", "column"]
        what = {"fisher": "the network's families taken together (many small changes)",
                "blocks": (f"the family of {block} (its conditional distribution given its parents, or the "
                           "dependence around it)" if components.loc["blocks", "block"] == "family"
                           else f"the marginal distribution of {block}"),
                "columns": f"the marginal distribution of {components.loc['columns', 'column']}"}[lead]
        return f"The signal is carried by {what} ({lead} component)."

    def to_text(self, *, notes: bool = True, advice: bool = True) -> str:
        """Return the result as text: the steps' notes (unless ``notes=False``), the verdict, then the evidence.

        Parameters
        ----------
        notes : bool, default=True
        advice : bool, default=True
            Include the warnings about the input (the command line prints them on stderr instead).

        Returns
        -------
        str
        """
        warned = [f"Warning: {message}" for message in self.advice] if advice else []
        lines = (list(self.notes) if notes else []) + warned
        test = self.test
        lines += [self.verdict(),
                  f"MMD² (eq. 10, biased) = {test.statistic:.6g}; effect size: unbiased MMD²_u = {test.unbiased:.6g}"
                  + (f" (95% CI {test.unbiased_ci[0]:.3g} to {test.unbiased_ci[1]:.3g})" if test.unbiased_ci else ""),
                  f"Permutation p-value ({test.method} test, {len(test.null_distribution)} permutations) = "
                  f"{test.p_value:.4g}"]
        if test.components is not None:
            parts = [f"{name} p = {row['p_value']:.3g}" + (f" ({row['column']})" if row["column"] is not None else "")
                     for name, row in test.components.iterrows()]
            lines.append(f"Components on the same permutations: {'; '.join(parts)}. {self.signal()}")
        floor = self.families.attrs.get("p_floor", 0.0)
        at_floor = self.families["p_value"] <= floor * (1 + 1e-9)

        def bound(values):  # "<= x" where the permutations' floor is reached: the p-value is at most that
            return [f"<= {v:.3g}" if low else f"{v:.3g}" for v, low in zip(values, at_floor)]

        lines += self._mechanism_lines()
        lines += ["",
                  "Which conditional distributions of the kernel's network changed (a variable given its parents): "
                  "each family's exact test of 'P(variable | parents) is the same', with share = its part of the "
                  f"difference above chance and p-values adjusted by {ADJUSTMENT}; sorted by "
                  f"{', '.join(FAMILY_ORDER)}"
                  + ("; this table describes the learned network's factorisation, where a changed mechanism also "
                     "shifts the families it feeds: the table above answers what changed"
                     if self.mechanisms.attrs.get("searched") else "")
                  + (f"; '<=': at the floor of {round(1 / floor) - 1} permutations" if at_floor.any() else "") + ":"]
        shown = self.families.head(self.top).assign(
            share=lambda t: (100 * t["share"]).round(1).astype(str) + "%",
            p_value=lambda t: bound(t["p_value"])[:len(t)], p_adjusted=lambda t: bound(t["p_adjusted"])[:len(t)])
        with pd.option_context("display.width", 160, "display.max_colwidth", 40):
            lines.append(shown[["variable", "parents", "share", "excess", "mmd2", "p_value", "p_adjusted"]]
                         .to_string(index=False))
        lead = [self.mechanism_cell["text"] + " (the changed mechanism's cell)"] if self.mechanism_cell else []
        lines += ["", "Largest cells:"] + [f"  {text}" for text in lead + list(self.cells["text"].head(5))]
        for name, values, sign in zip(self.names, self.witness, (1, -1)):
            rows = np.argsort(-sign * values, kind="stable")[:3]
            lines.append(f"Rows most typical of {name} against the other (witness): "
                         + ", ".join(f"row {int(r)} ({sign * values[r]:.3g})" for r in rows))
        lines.append("Note: the Fisher kernel is not universal; the test detects differences the network's "
                     "families can express.")
        return "\n".join(lines)

    def _mechanism_lines(self) -> list:
        """Return the mechanism table as text lines (none when the search was not run)."""
        table = self.mechanisms
        if not table.attrs.get("searched"):
            return []
        floor = table.attrs["p_floor"]
        bound = ["<= " if p <= floor * (1 + 1e-9) else "" for p in table["p_value"]]
        shown = table.head(self.top).assign(
            p_value=[f"{m}{v:.3g}" for m, v in zip(bound, table["p_value"])][:min(self.top, len(table))],
            p_adjusted=[f"{m}{v:.3g}" for m, v in zip(bound, table["p_adjusted"])][:min(self.top, len(table))],
            z=lambda t: t["z"].round(1))
        lines = ["", "Which mechanisms changed (a variable whose difference between the samples no set of its "
                 "neighbours explains; p = the largest over the sets searched, adjusted by Holm over the variables"
                 + (f"; '<=': at the floor of {round(1 / floor) - 1} permutations" if any(bound) else "") + "):"]
        with pd.option_context("display.width", 160, "display.max_colwidth", 40):
            lines.append(shown.to_string(index=False))
        for group in table.attrs.get("unoriented", []):
            lines.append(f"Cannot orient: {' or '.join(group)} (each explains the other's difference).")
        return lines

    def to_dict(self) -> dict:
        """Return the result as JSON-serialisable content (what ``--json`` writes and the report renders).

        Returns
        -------
        dict
        """
        rows = [{"sample": name, "row": int(i), "witness": float(values[i]),
                 "values": {str(k): (None if pd.isna(v) else str(v)) for k, v in frame.iloc[int(i)].items()}}
                for name, frame, order, values, _ in self._typical(min(self.top, 5)) for i in order]
        return {
            "kind": "comparison",
            "verdict": self.verdict(),
            "samples": [{"name": n, "columns": int(f.shape[1]), **(size if size is not None else {
                "rows": int(len(f) if c is None else c.sum()),
                "missing_cells": int(f.isna().sum().sum() if c is None else f.isna().sum(axis=1) @ c)})}
                        for n, f, c, size in zip(self.names, self.samples, self.copies, self.sizes or (None, None))],
            "notes": list(self.notes),
            "warnings": list(self.advice),
            "network": {"summary": repr(self.network), "arcs": [[str(p), str(c)] for p, c in self.network.edges]},
            "test": {"mmd2": self.test.statistic, "mmd2_unbiased": self.test.unbiased,
                     "mmd2_unbiased_ci": None if self.test.unbiased_ci is None else list(self.test.unbiased_ci),
                     "p_value": self.test.p_value, "permutations": int(len(self.test.null_distribution)),
                     "method": self.test.method, "signal": self.signal(),
                     "components": {str(name): {"p_value": float(row["p_value"]), "weight": float(row["weight"]),
                                                "column": None if row["column"] is None else str(row["column"])}
                                    for name, row in (self.test.components if self.test.components is not None
                                                      else pd.DataFrame()).iterrows()}},
            "families": json.loads(self.families.to_json(orient="records", double_precision=15)),
            "families_order": list(FAMILY_ORDER), "p_floor": self.families.attrs.get("p_floor"),
            "cells": json.loads(self.cells.to_json(orient="records", double_precision=15)),
            "typical_rows": rows,
            "adjustment": ADJUSTMENT,
            "profiles": self.profiles,
            "mechanisms": json.loads(self.mechanisms.to_json(orient="records", double_precision=15)),
            "mechanisms_searched": bool(self.mechanisms.attrs.get("searched")),
            "mechanisms_p_floor": self.mechanisms.attrs.get("p_floor"),
            "unoriented": self.mechanisms.attrs.get("unoriented", []),
            "mechanism_cell": self.mechanism_cell,
        }

    def plot(self, path=None):
        """Draw the family chart (which conditionals changed) above the witness histograms.

        Parameters
        ----------
        path : str or path-like, optional
            A PNG file to write; without it the matplotlib figure is returned.

        Returns
        -------
        matplotlib.figure.Figure or None
        """
        from bnfisher.viz.plotting import plot_comparison

        return plot_comparison(self, path)

    def _figures(self) -> dict:
        from bnfisher.viz.report import comparison_figures

        return comparison_figures(self)

    def _title(self) -> str:
        return f"{self.names[0]} against {self.names[1]}"

    def _repr_html_(self) -> str:
        return (f"<p>{self.verdict()}</p>"
                + html_table("Families", [(r["variable"], f"{100 * r['share']:.1f}% (p_adj {r['p_adjusted']:.3g})")
                                          for _, r in self.families.head(self.top).iterrows()]))



def compare(A, B, *, network: BayesianNetwork | None = None, structure: str = "chow-liu", bins: int | None = None,
            bin_columns=None, categorical=None, na_values=(), n_permutations: int = 1000, test: str = "aggregate",
            top: int = 10,
            names: tuple = ("A", "B"), random_state=None, learn_options: dict | None = None) -> ComparisonResult:
    """Compare two tables: an exact permutation test of the Fisher-kernel MMD, and where the difference lies.

    Parameters
    ----------
    A, B : DataFrame or ReferenceProfile
        The two samples, as read (labels; numeric columns are binned when ``bins`` is given),
        or a profile of one (:func:`bnfisher.profile`; a binned profile bins the other
        table's numeric columns with its edges).
    network : BayesianNetwork, optional
        The model whose Fisher kernel compares them.  Default: learned from A and B
        pooled (then the p-value is exact: the kernel does not favour either side).
    structure : str, default="chow-liu"
        How to learn the network (see :func:`bnfisher.learn`) when ``network`` is not given.
    bins, bin_columns, categorical, na_values
        How the columns become states: quantile bins of numeric columns, the columns binned, columns never binned, extra
        missing-value markers (:class:`~bnfisher.Binning` documents them once). Here: bin numeric columns into at most
        this many quantile bins, with the same edges for both tables.
    n_permutations : int, default=1000
    test : {"aggregate", "mmd"}, default="aggregate"
        Which p-value decides: the aggregate test (:mod:`bnfisher.comparison.aggregate`:
        the Fisher MMD, its largest standardised block and per-column tests on the
        same permutations, exact) or the Fisher-kernel MMD alone.
    top : int, default=10
        Families, cells and rows shown.
    names : tuple of str, default=("A", "B")
    random_state : None, int or Generator
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn`.

    Returns
    -------
    ComparisonResult

    Examples
    --------
    >>> data = load("nursery")
    >>> result = compare(data.iloc[:600], data.iloc[600:1200], n_permutations=50, random_state=0)
    >>> 0 < result.test.p_value <= 1
    True
    """
    check_option(test, "test", ("aggregate", "mmd"))
    A, B = tables_of([A, B], bins=bins)
    for name, frame in (("A", A), ("B", B)):
        if not isinstance(frame, pd.DataFrame):
            kind = f"{type(frame).__module__.split('.')[0]}.{type(frame).__name__}"
            raise OptionTypeError(f"`{name}` must be a pandas DataFrame or a ReferenceProfile; got {kind}"
                                  + (": compute it first (.compute()), or compare on a Dask engine with mmd_test."
                                     if kind.startswith("dask") else "."))
    given = network is not None
    network, (encoded_a, encoded_b), notes, advice = prepare([A, B], network=network, structure=structure,
                                                             binning=Binning(bins, bin_columns, categorical,
                                                                             na_values),
                                                             learn_options=learn_options)
    sample = fitted_on_one_sample(network, encoded_a.codes, encoded_b.codes) if given else None
    if sample is not None:
        advice.append(one_sample_warning(sample, tuple(names)))
    elif given:
        notes.append("The p-value is exact if the given network does not depend on which table a row came from "
                     "(learned on other data, or on both tables pooled).")
    searched = given or (isinstance(structure, str) and structure in SEARCHED_STRUCTURES)
    result = compare_encoded(network, (DistinctRows.of(encoded_a), DistinctRows.of(encoded_b)), (A, B),
                             names=tuple(names),
                             n_permutations=n_permutations, test=test, top=top, random_state=random_state,
                             notes=notes, advice=advice, graph=network.parent_indices() if searched else None)
    families = result.families
    for column in split_columns(A, B):
        share = float(families.loc[families["variable"] == column, "share"].sum())
        advice.append(f"Column {column!r} is constant within each table ({names[0]}: {A[column].dropna().iloc[0]!r}, "
                      f"{names[1]}: {B[column].dropna().iloc[0]!r}) and carries {100 * share:.0f}% of the MMD²: it "
                      "alone makes the tables differ. Drop it to see what else does.")
    warn(advice)  # result.advice is this list
    return result


def compare_encoded(network: BayesianNetwork, encoded: tuple, samples: tuple, *, names: tuple,
                    n_permutations: int, test: str, top: int, random_state, notes: list,
                    advice: list, graph: list | None = None, attribute_below: float = 0.05,
                    early_stop: EarlyStop | None = None) -> ComparisonResult:
    """Compare two tables already encoded with the network's schema (the core of :func:`compare` and of drift).

    Inner code: trusts its inputs (encoded once at the boundary).  Runs the permutations of
    the two-sample test and the families' conditional tests once, and returns the result.

    Parameters
    ----------
    network : BayesianNetwork
    encoded : tuple of DistinctRows
        The two samples, encoded with ``network``'s schema and reduced to distinct rows.
    samples : tuple of DataFrame
        The same rows as the user gave them (shown as typical rows).
    names : tuple of str
    n_permutations : int
    test : {"aggregate", "mmd"}
    top : int
    random_state : None, int or Generator
    notes, advice : list of str
        What was done so far, and the warnings so far (extended here).
    graph : list of tuple of int, optional
        The mechanism search's DAG (each variable's parents); default: learned by
        :func:`~bnfisher.jobs.attribute.neighbourhood_graph` on the two samples pooled.
    attribute_below : float, default=0.05
        Search for the changed mechanisms only when the test's p-value is at most this (when
        the samples do not differ there is no mechanism to name, and the search is the
        costliest step on wide networks).
    early_stop : EarlyStop, optional
        Stop the permutations where the p-value is plainly large
        (:class:`~bnfisher.comparison.sequential.EarlyStop`); default: all of them.

    Returns
    -------
    ComparisonResult
    """
    kernel = FisherKernel(network)
    notes.append(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
    advice += feature_advice(kernel)
    rng = check_random_state(random_state)
    statistics = permutation_statistics(kernel, *encoded, n_permutations=n_permutations, random_state=rng,
                                        witness=True, early_stop=early_stop)
    notes += draw_note(sum(int(rows.copies.sum()) for rows in encoded))
    samples_codes = [(kernel.encode(rows.encoded).codes, rows.copies) for rows in encoded]
    tests, note = resolved_family_tests(network, *samples_codes, random_state=rng)
    notes.append(note)
    result = _result(kernel, statistics, tests, encoded, samples, names, notes, top, test)
    result.advice = advice
    if result.test.p_value <= attribute_below:
        find_mechanisms(result, encoded, graph=graph, random_state=rng)
    return result


def find_mechanisms(result: ComparisonResult, encoded: tuple, *, graph: list | None, random_state) -> None:
    """Search for the changed mechanisms of a comparison and set its ``mechanisms`` and ``mechanism_cell``.

    Parameters
    ----------
    result : ComparisonResult
        Its network, kernel, names and notes are used; the notes get the search's lines.
    encoded : tuple of DistinctRows
        The two samples, encoded with the network's schema.
    graph : list of tuple of int, optional
        The search's DAG; default :func:`~bnfisher.jobs.attribute.neighbourhood_graph` on the samples pooled.
    random_state : Generator
    """
    network = result.network
    samples_codes = tuple((result.kernel.encode(rows.encoded).codes, rows.copies) for rows in encoded)
    if graph is None:
        graph, note = neighbourhood_graph(network, encoded)
        result.notes.append(note)
    result.mechanisms, result.mechanism_cell = mechanism_table(network, samples_codes, graph, names=result.names,
                                                               random_state=random_state)
    table = result.mechanisms
    budget = round(1 / table.attrs["p_floor"]) - 1
    result.notes.append(f"Mechanism tests: {int(table['sets'].sum())} conditioning sets, "
                        f"{table.attrs['permutations']:,} permutations in all (a variable's tests stop once one set "
                        f"explains it, at 99 or 999 permutations; the others run {budget}).")


def resolved_family_tests(network: BayesianNetwork, X, Y, *, random_state, alpha: float = 0.05,
                          tables: list | None = None) -> tuple:
    """Return the family tests, those at the p-value floor run again (:func:`~bnfisher.comparison.resolve_floor`).

    Parameters
    ----------
    network : BayesianNetwork
    X, Y : tuple of (ndarray of int, ndarray), or None
        Codes and copies of each sample's distinct rows.
    random_state : Generator
    alpha : float, default=0.05
    tables : list, optional
        Instead of ``X`` and ``Y``: every family's two count tables
        (:func:`~bnfisher.comparison.conditional_family_tests`).

    Returns
    -------
    tests : FamilyTests
    note : str
        How many permutations the tests took, and why.
    """
    if tables is None:
        tables = family_tables(network.cardinalities, list(enumerate(network.parent_indices())), [X, Y])
    first = conditional_family_tests(network, None, None, random_state=random_state, tables=tables)
    tests, budget = resolve_floor(network, first, None, None, random_state=random_state, tables=tables)
    again = f"; the clearest, at the floor of the p-values, run again with {budget}" if budget else ""
    return tests, (f"Family tests: {first.n_permutations} permutations within parent configurations "
                   f"({len(tests.families)} families){again}.")


def _result(kernel: FamilyKernel, statistics: PermutationStatistics, tests, encoded: tuple, samples: tuple,
            names: tuple, notes: list, top: int, method: str) -> ComparisonResult:
    assert statistics.x.witness is not None and statistics.y.witness is not None  # set by permutation_statistics
    # Each row's witness; a sample known only by its distinct rows keeps one value per distinct row (and its copies).
    witness = tuple(values if rows.inverse is None else values[rows.inverse]
                    for values, rows in zip((statistics.x.witness, statistics.y.witness), encoded))
    families = family_table(kernel, statistics, tests)
    test = TwoSampleResult.from_statistics(statistics, method=method)
    test.unbiased_ci = effect_interval(test.unbiased, test.null_distribution, (statistics.x.witness, encoded[0].copies),
                                       (statistics.y.witness, encoded[1].copies))
    components = test.components if test.components is not None else pd.DataFrame()
    for name in ("blocks", "columns"):  # name the variables, not their indices
        column = components.loc[name, "column"]
        if column is not None:
            components.loc[name, "column"] = kernel.network.variables[int(column)]
    counts = ((statistics.x.counts, statistics.x.n), (statistics.y.counts, statistics.y.n))
    return ComparisonResult(names=names, test=test, families=families,
                            cells=cells_from_counts(kernel, *counts, n=top, names=names), witness=witness,
                            network=kernel.network, kernel=kernel, samples=samples, notes=notes, top=top,
                            profiles=family_profiles(kernel, counts, families, top),
                            copies=tuple(rows.copies if rows.inverse is None else None for rows in encoded))
