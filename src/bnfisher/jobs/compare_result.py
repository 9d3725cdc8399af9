"""What a comparison found: :class:`ComparisonResult` and its parts, printed, rendered and serialised from here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import free_name
from bnfisher.bn.network import BayesianNetwork
from bnfisher.comparison.explain import ADJUSTMENT, FAMILY_ORDER
from bnfisher.comparison.two_sample import TwoSampleResult
from bnfisher.jobs.attribute import no_mechanisms
from bnfisher.jobs.result import JobResult
from bnfisher.kernels.base import FamilyKernel

__all__ = ["ComparedSamples", "ComparisonResult", "Witness"]


@dataclass(frozen=True)
class ComparedSamples:
    """The two samples as a comparison holds them: the rows it can show, what each stands for, their sizes.

    Attributes
    ----------
    frames : tuple of DataFrame
        The rows as the user gave them (for the typical rows shown); for data beyond memory,
        the distinct rows shown.
    copies : tuple of (ndarray or None)
        For a sample known only by its distinct rows (a window of Dask data in
        :func:`bnfisher.drift`): how many rows each row of its frame and witness value stands
        for; None for a sample given row by row.
    sizes : tuple of dict or None
        Each sample's ``rows`` and ``missing_cells`` when ``frames`` hold only the rows shown
        (data beyond memory); None: counted from ``frames``.

    Examples
    --------
    >>> import pandas as pd
    >>> ComparedSamples((pd.DataFrame({"a": ["x"]}), pd.DataFrame({"a": ["y"]}))).copies
    (None, None)
    """

    frames: tuple
    copies: tuple = (None, None)
    sizes: tuple | None = None


@dataclass(frozen=True)
class Witness:
    """The witness ``f(x) = <Phi(x), mu_A - mu_B>`` of the rows each sample holds (positive: typical of A).

    Attributes
    ----------
    values : tuple of ndarray
        Of every row of A and of B (of the rows shown, for data beyond memory).
    histogram : tuple or None
        ``(edges, counts)`` of each sample's witness (counts of shape (2, bins)) when
        ``values`` hold only the typical rows' values (data beyond memory).

    Examples
    --------
    >>> import numpy as np
    >>> Witness((np.array([0.5]), np.array([-0.5]))).histogram is None
    True
    """

    values: tuple
    histogram: tuple | None = None


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
    witness : Witness
        ``f(x) = <Phi(x), mu_A - mu_B>`` of every row of A and of B (positive: typical of A).
    kernel : FamilyKernel
        The Fisher kernel; its ``network`` is :attr:`network`.
    samples : ComparedSamples
        The rows as the user gave them (for the typical rows shown), and their sizes.
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
    mechanisms : DataFrame
        Which mechanisms changed (:func:`bnfisher.jobs.attribute.mechanism_table`): one
        row per variable, whether its dependence on the sample survives every
        conditioning set searched, clearest first.  This table answers "what changed", and
        the verdict states only what it holds.  Empty, with its columns
        (:func:`~bnfisher.jobs.attribute.no_mechanisms`, ``attrs["searched"]`` False), where
        the search did not run (the test's p-value above 0.05, or a drift window's above
        ``alpha``).  Its ``attrs["cell"]`` is :attr:`mechanism_cell`.

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
    witness: Witness
    kernel: FamilyKernel
    samples: ComparedSamples
    notes: list = field(default_factory=list)
    top: int = 10
    advice: list = field(default_factory=list)
    profiles: list = field(default_factory=list)
    mechanisms: pd.DataFrame = field(default_factory=no_mechanisms)

    @property
    def network(self) -> BayesianNetwork:
        """The network whose Fisher kernel compared the samples."""
        return self.kernel.network

    @property
    def mechanism_cell(self) -> dict | None:
        """The cell of the clearest changed mechanism whose conditional frequency differs most (None: none named)."""
        return self.mechanisms.attrs.get("cell")

    def witness_bars(self) -> tuple:
        """Return what the witness histograms are drawn from: ``(values_x, values_y, weights, bins)``.

        Returns
        -------
        tuple
            Every row's witness and copies (40 bins), or, for data beyond memory, the bins'
            centres weighted by their counts over the bins' edges.
        """
        if self.witness.histogram is None:
            return self.witness.values[0], self.witness.values[1], self.samples.copies, 40
        edges, counts = self.witness.histogram
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

    def _cells_and_rows(self, cells: list) -> list:
        """Return the text's lines of the largest cells (``cells``: their sentences) and each side's typical rows."""
        lines = ["Largest cells:" if cells else "Largest cells: none (no cell differs between the tables)"]
        lines += [f"  {text}" for text in cells]
        for name, values, sign in zip(self.names, self.witness.values, (1, -1)):
            rows = np.argsort(-sign * values, kind="stable")[:3]
            lines.append(f"Rows most typical of {name} against the other (witness): "  # + 0.0: no "-0"
                         + ", ".join(f"row {int(r)} ({sign * values[r] + 0.0:.3g})" for r in rows))
        return lines

    def _typical(self, n: int):
        """Each sample's name, table, its ``n`` most typical rows' positions, its witness values and copies."""
        for name, frame, values, copies, sign in zip(self.names, self.samples.frames, self.witness.values,
                                                     self.samples.copies, (1, -1)):
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
        lines += ["", *self._cells_and_rows(lead + list(self.cells["text"].head(5)))]
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
                 + (f"; '<=': a bound, at the floor of {table.attrs['budget']} permutations or below it by the "
                    "exact null moments (no permutation drawn)" if any(bound) else "") + "):"]
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
            "samples": [{"name": n, "columns": int(f.shape[1]), **(size if size is not None else _size(f, c))}
                        for n, f, c, size in zip(self.names, self.samples.frames, self.samples.copies,
                                                 self.samples.sizes or (None, None))],
            "notes": list(self.notes),
            "warnings": list(self.advice),
            "network": {"summary": repr(self.network), "arcs": [[str(p), str(c)] for p, c in self.network.edges]},
            "test": {"mmd2": self.test.statistic, "mmd2_unbiased": self.test.unbiased,
                     "mmd2_unbiased_ci": None if self.test.unbiased_ci is None else list(self.test.unbiased_ci),
                     "p_value": self.test.p_value, "permutations": int(len(self.test.null_distribution)),
                     "method": self.test.method, "signal": self.signal(),
                     "components": _components(self.test.components)},
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
        """Draw the mechanism chart (when one changed), the family chart and the witness histograms.

        Parameters
        ----------
        path : str or path-like, optional
            A PNG file to write; without it the matplotlib figure is returned.

        Returns
        -------
        matplotlib.figure.Figure or None
        """
        from bnfisher.viz.comparison import plot_comparison

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


def _size(frame: pd.DataFrame, copies) -> dict:
    """Return a sample's rows and missing cells (``copies``: each distinct row's copies, or None)."""
    if copies is None:
        return {"rows": len(frame), "missing_cells": int(frame.isna().sum().sum())}
    return {"rows": int(copies.sum()), "missing_cells": int(frame.isna().sum(axis=1) @ copies)}


def _components(components: pd.DataFrame | None) -> dict:
    """Return a combined test's components (p-value, weight, column) by name."""
    if components is None:
        return {}
    return {str(name): {"p_value": float(row["p_value"]), "weight": float(row["weight"]),
                        "column": None if row["column"] is None else str(row["column"])}
            for name, row in components.iterrows()}
