"""The summarize job: representative rows of a table (Algorithm 1), with what they are worth.

:func:`summarize` resolves its input once, learns or takes the network, builds the
kernel columns once (the search and the random baseline share them) and returns a
:class:`SummaryResult`: the text, the report, the JSON, the plot and the subset file
are all rendered from it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_positive_int, check_random_state, free_name
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.data.binning import Binning
from bnfisher.data.io import read_table
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import OptionError, OptionTypeError
from bnfisher.jobs.inputs import binned_note, feature_advice, prepare, warn
from bnfisher.jobs.result import JobResult
from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.fisher import FisherKernel
from bnfisher.summary.baselines import random_subsets
from bnfisher.summary.criteria import MMDCriterion, chi2_criterion
from bnfisher.summary.fidelity import Fidelity, column_fidelity
from bnfisher.summary.search import SelectionResult, complete_candidates, select_representatives

__all__ = ["SummaryResult", "summarize", "summarize_distributed"]


@dataclass(repr=False)
class SummaryResult(JobResult):
    """What :func:`summarize` found, computed once; printed, rendered and serialised from here.

    Attributes
    ----------
    data : DataFrame
        The rows as the user gave them.
    selection : SelectionResult
        Algorithm 1's outcome: ``selection.indices`` are 0-based positions in ``data``.
    mmd2 : float
        Squared MMD (eq. 10) of the subset to the full data.
    random_mmd2 : ndarray
        The same for random subsets of the same size (the baseline).
    encoded : EncodedData
        ``data`` encoded with the network's schema (missing cells are -1).
    kernel : FamilyKernel
        The Fisher kernel; its ``network`` is :attr:`network`.
    source : str
        The data's name, for reports.
    notes : list of str
        What was done on the way (binning, missing cells, the network learned).
    random_chi2 : ndarray or None
        For ``criterion="chi2"``: the chi-square criterion of random subsets.
    advice : list of str
        Warnings about the input (also emitted as DataWarning).
    n_rows : int or None
        For data beyond memory: the rows of the whole data; ``data`` is then the uniform
        pool the subset was chosen from (its index holds the rows' 0-based numbers),
        and the random subsets are drawn from the pool, measured against the whole data.
    fidelity : Fidelity or None
        What a user checks: each column's observed labels in the subset against the
        table's (total-variation distance), beside random subsets of the same size, and
        the common labels the subset lacks (:func:`bnfisher.summary.fidelity.column_fidelity`).

    Examples
    --------
    >>> summary = bf.summarize(data, 20, n_init=50, n_random=20, random_state=0)
    >>> len(summary.subset), bool(summary.mmd2 < summary.random_mmd2.mean())
    (20, True)
    """

    data: pd.DataFrame
    selection: SelectionResult
    mmd2: float
    random_mmd2: np.ndarray
    encoded: EncodedData
    kernel: FamilyKernel
    source: str = "data"
    notes: list = field(default_factory=list)
    random_chi2: np.ndarray | None = None
    advice: list = field(default_factory=list)
    n_rows: int | None = None
    fidelity: Fidelity | None = None

    @property
    def network(self) -> BayesianNetwork:
        """The network whose Fisher kernel measured representativeness (``kernel.network``)."""
        return self.kernel.network

    @property
    def indices(self) -> np.ndarray:
        """0-based row numbers of the selected rows in the input (positions in ``data`` unless it is a pool)."""
        return self.selection.indices

    @property
    def positions(self) -> np.ndarray:
        """Positions of the selected rows in ``data`` (in the pool, for data beyond memory)."""
        pooled = self.selection.pool_positions
        return self.selection.indices if pooled is None else pooled

    @property
    def subset(self) -> pd.DataFrame:
        """The selected rows, as the user gave them, with a leading ``row`` column (their 0-based positions).

        Named ``row_`` (or with more ``_``) when the data has a column ``row``.
        """
        out = self.data.iloc[self.positions].reset_index(drop=True)
        out.insert(0, free_name("row", out.columns), self.indices)
        return out

    def incomplete_share(self) -> tuple[float, float]:
        """Share of rows with a missing cell, in the subset and in the full data.

        Returns
        -------
        subset, data : float
        """
        incomplete = np.asarray((self.encoded.codes < 0).any(axis=1))
        return float(incomplete[self.positions].mean()), float(incomplete.mean())

    def verdict(self) -> str:
        """One sentence: how much closer to the full data the subset is than random subsets of its size.

        Returns
        -------
        str
        """
        k = len(self.indices)
        beaten = float(np.mean(self.random_mmd2 > self.mmd2))
        mean = float(self.random_mmd2.mean())
        ratio = f"{mean / self.mmd2:.1f} times closer" if self.mmd2 > 0 else "as close as possible"
        drawn = f" drawn from a uniform pool of {len(self.data)} of its {self.n_rows} rows" if self.n_rows else ""
        kernel = (f"The {k} rows chosen are closer to the full data than {100 * beaten:.1f}% of "
                  f"{len(self.random_mmd2)} random subsets of {k}{drawn} (MMD² {self.mmd2:.4g} against {mean:.4g} on "
                  f"average: {ratio}).")
        found = self.fidelity
        if found is None or not found.tv.size:
            return kernel
        columns = self.network.variables
        lost = f" It lacks {len(found.lost)} common label{'s' if len(found.lost) != 1 else ''}." if found.lost else ""
        return (f"{kernel} Column by column, its labels are closer to the data's than {100 * found.beaten:.1f}% of "
                f"{len(found.random_tv)} random subsets (mean total-variation distance {found.mean_tv:.3f} against "
                f"{found.random_tv.mean():.3f}; worst column {columns[found.worst]}, {found.tv[found.worst]:.3f})."
                f"{lost}")

    def fidelity_advice(self) -> list:
        """Return the warnings about what a user checks: common labels lost, a share of incomplete rows far off.

        A lost label is named when most random subsets of the subset's size hold it (at
        tiny ``k`` every subset loses some labels).

        Returns
        -------
        list of str
        """
        found = self.fidelity
        if found is None:
            return []
        out = []
        network = self.network
        unusual = [lost for lost in found.lost if lost[3] < 0.5]  # a loss most random subsets of its size avoid
        for column, code, share, missed in unusual[:5]:
            name = network.variables[column]
            out.append(f"Label {network.states[name][code]!r} of column {name!r} holds {100 * share:.1f}% of the "
                       f"column's observed cells but is absent from the subset (random subsets of its size lack it "
                       f"{100 * missed:.0f}% of the time): choose a larger k, or candidates='auto' when the label "
                       "lives in rows with missing cells.")
        subset, table = found.incomplete
        k = len(self.indices)
        if abs(subset - table) > max(0.05, 1.0 / k):
            out.append(f"Rows with a missing cell are {100 * subset:.1f}% of the subset against {100 * table:.1f}% "
                       "of the data: the subset does not represent them in proportion; use candidates='auto'.")
        return out

    def to_text(self, *, notes: bool = True, advice: bool = True) -> str:
        """Return the result as text: the steps' notes (unless ``notes=False``), the verdict, then the numbers.

        Parameters
        ----------
        notes : bool, default=True
        advice : bool, default=True
            Include the warnings about the input (the command line prints them on stderr instead).

        Returns
        -------
        str
        """
        selection, k = self.selection, len(self.indices)
        random = self.random_mmd2
        plural = "s" if selection.n_sweeps != 1 else ""
        warned = [f"Warning: {message}" for message in self.advice] if advice else []
        pooled = ([f"The search ran on a uniform pool of {len(self.data)} of the {self.n_rows} rows (more than "
                   "pool_size): an approximation of the search over every row."] if self.n_rows else [])
        lines = (list(self.notes) if notes else []) + warned + [
            self.verdict(), *pooled,
            f"Selected k={k} rows by greedy {selection.criterion}: {selection.n_sweeps} sweep{plural}, "
            f"{selection.n_swaps} swaps.",
            f"MMD² (eq. 10) of the subset to the full data: {self.mmd2:.6g}",
            f"MMD² of {len(random)} random subsets of {k}:   {random.mean():.6g} ± "
            f"{random.std(ddof=1) if len(random) > 1 else 0.0:.3g} (mean ± sd)",
        ]
        if self.random_chi2 is not None:
            lines.append(f"chi2 criterion: subset {selection.final_value:.6g}; random {self.random_chi2.mean():.6g} "
                         f"± {self.random_chi2.std(ddof=1) if len(self.random_chi2) > 1 else 0.0:.3g}")
        share_subset, share_data = self.incomplete_share()
        if share_data > 0:
            lines.append(f"Rows with a missing cell: {100 * share_subset:.1f}% of the subset, "
                         f"{100 * share_data:.1f}% of the data.")
        if self.fidelity is not None and self.fidelity.tv.size:
            found = self.fidelity
            lines.append(f"Per column (total-variation distance of observed labels): subset mean {found.mean_tv:.4f}, "
                         f"random subsets {found.random_tv.mean():.4f} ± {found.random_tv.mean(axis=1).std():.3g}; "
                         f"worst column {self.network.variables[found.worst]} ({found.tv[found.worst]:.4f}).")
        if len(selection.criticisms):
            lines.append("Criticisms (rows the subset represents worst): "
                         + ", ".join(map(str, selection.criticisms)))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Return the result as JSON-serialisable content (what ``--json`` writes and the report renders).

        Returns
        -------
        dict
        """
        def rows(indices, positions):
            shown = self.data.iloc[positions].astype(object)
            return [{"row": int(i), "values": {str(k): (None if pd.isna(v) else str(v)) for k, v in r.items()}}
                    for i, (_, r) in zip(indices, shown.iterrows())]

        selection = self.selection
        share_subset, share_data = self.incomplete_share()
        return {
            "kind": "summary",
            "verdict": self.verdict(),
            "samples": [{"name": self.source, "rows": int(self.n_rows or len(self.data)),
                         "columns": int(self.data.shape[1]),
                         "missing_cells": int(self.data.isna().sum().sum())}],
            "notes": list(self.notes),
            "warnings": list(self.advice),
            "network": {"summary": repr(self.network), "arcs": [[str(p), str(c)] for p, c in self.network.edges]},
            "selection": {"k": int(len(selection.indices)), "criterion": selection.criterion,
                          "initial": selection.initial_value, "final": selection.final_value,
                          "sweeps": selection.n_sweeps, "swaps": selection.n_swaps,
                          "converged": bool(selection.converged), "mmd2": self.mmd2,
                          "random_mmd2_mean": float(self.random_mmd2.mean()),
                          "random_mmd2_sd": float(self.random_mmd2.std(ddof=1)) if len(self.random_mmd2) > 1 else 0.0,
                          "random_subsets": int(len(self.random_mmd2)),
                          "incomplete_rows_subset": share_subset, "incomplete_rows_data": share_data},
            "fidelity": None if self.fidelity is None else {
                "columns": {str(v): float(t) for v, t in zip(self.network.variables, self.fidelity.tv)},
                "mean_tv": self.fidelity.mean_tv,
                "random_mean_tv": float(self.fidelity.random_tv.mean()) if len(self.fidelity.random_tv) else None,
                "beaten": self.fidelity.beaten,
                "worst_column": str(self.network.variables[self.fidelity.worst]) if self.fidelity.tv.size else None,
                "lost_labels": [{"column": str(self.network.variables[c]),
                                 "label": str(self.network.states[self.network.variables[c]][code]),
                                 "share": share, "random_lacks": missed}
                                for c, code, share, missed in self.fidelity.lost]},
            "prototypes": rows(selection.indices, self.positions),
            "criticisms": [dict(r, witness=float(w)) for r, w in zip(rows(selection.criticisms, selection.criticisms),
                                                                     selection.criticism_witness)],
        }

    def _figures(self) -> dict:
        from bnfisher.viz.report import summary_figures

        return summary_figures(self)

    def _title(self) -> str:
        return "Representative rows"

    def plot(self, path=None):
        """Draw the objective per sweep and every variable's marginals, subset against data.

        Parameters
        ----------
        path : str or path-like, optional
            A PNG file to write; without it the matplotlib figure is returned.

        Returns
        -------
        matplotlib.figure.Figure or None
        """
        from bnfisher.viz.plotting import plot_summary

        random = self.random_chi2 if self.random_chi2 is not None else self.random_mmd2
        baseline = (float(random.mean()), float(random.std(ddof=1)) if len(random) > 1 else 0.0)
        return plot_summary(self.selection, self.encoded.select(self.network.schema.variables), self.positions, path,
                            baseline=baseline)

    def _repr_html_(self) -> str:
        return f"<p>{self.verdict()}</p>" + html_table(
            "Subset", [(f"row {r}", ", ".join(map(str, self.data.iloc[p].tolist())))
                       for r, p in zip(self.indices[:10], self.positions[:10])])



def summarize(data, k: int, *, network: BayesianNetwork | None = None, structure: str = "chow-liu",
              bins: int | None = None, bin_columns=None, categorical=None, na_values=(), criterion: str = "mmd",
              n_init: int = 1000,
              n_random: int = 1000, n_criticisms: int = 0, source: str = "data", random_state=None,
              progress: bool = False, learn_options: dict | None = None, candidates: str = "auto",
              pool_size: int | None = None) -> SummaryResult:
    """Pick ``k`` representative rows of a table (Algorithm 1) and say how representative they are.

    Parameters
    ----------
    data : DataFrame
        The table, as read (labels; numeric columns are binned when ``bins`` is given).
    k : int
        Rows to pick.
    network : BayesianNetwork, optional
        The model whose Fisher kernel measures representativeness.  Default: learned from ``data``.
    structure : str, default="chow-liu"
        How to learn the network (see :func:`bnfisher.learn`) when ``network`` is not given.
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Bin numeric columns into at most this many quantile bins.
    criterion : {"mmd", "chi2"}, default="mmd"
        The objective of the greedy search (eq. 10, or the paper's chi-square heuristic).
    n_init : int, default=1000
        Random subsets the search starts from the best of.
    n_random : int, default=1000
        Random subsets of size ``k`` for the baseline.
    n_criticisms : int, default=0
        Rows the subset represents worst (MMD-critic), reported beside it.
    source : str, default="data"
        The data's name, for reports.
    candidates : {"auto", "all", "complete"}, default="auto"
        Which rows may be chosen.  ``"auto"``: on a table with missing cells, the complete
        rows and the rows with a missing cell are chosen apart, in the table's proportions,
        each set chosen to represent its own rows (incomplete rows by their expected
        embedding, paper Sec. 8), so the subset keeps the labels that live only in
        incomplete rows and the table's share of them; every row otherwise.  ``"complete"``:
        only complete rows, against the whole table's mean embedding.  ``"all"``: every row,
        in one search (incomplete rows' expected embeddings sit near the mean, so the search
        favours them).  ``criterion="chi2"`` is defined on complete rows: ``"auto"`` then
        means ``"complete"``.
    random_state : None, int or Generator
    progress : bool, default=False
        Show progress of the search.
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn`.
    pool_size : int, optional
        On a table of more rows, the search chooses among a uniform pool of this many rows
        (default :data:`POOL_SIZE`), still against the whole table's mean embedding; the
        subset is measured against the whole table and random subsets of it.  A search's
        sweep costs a kernel column over the candidates per chosen row, so a pool keeps
        large ``k`` on large tables fast; give a larger value (or the row count) for the
        search over every row.

    Returns
    -------
    SummaryResult

    Examples
    --------
    >>> result = summarize(load("nursery").iloc[:2000], 20, n_init=50, n_random=50, random_state=0)
    >>> len(result.indices), bool(result.mmd2 < result.random_mmd2.mean())
    (20, True)
    """
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    if criterion not in ("mmd", "chi2"):
        raise OptionError(f"`criterion` must be 'mmd' or 'chi2'; got {criterion!r}.")
    n_random = check_positive_int(n_random, "n_random")
    rng = check_random_state(random_state)
    network, (encoded,), notes, advice = prepare([data], network=network, structure=structure,
                                                 binning=Binning(bins, bin_columns, categorical, na_values),
                                                 learn_options=learn_options)
    kernel = FisherKernel(network)
    notes.append(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
    advice += feature_advice(kernel)
    warn(advice)
    encoded = kernel.encode(encoded)  # the network's column order
    check_option(candidates, "candidates", CANDIDATES)
    candidates = "complete" if criterion == "chi2" and candidates == "auto" else candidates
    search: dict[str, Any] = dict(criterion=criterion, n_init=n_init, random_state=rng, progress=progress,
                                  n_criticisms=n_criticisms)
    mmd = MMDCriterion(kernel, encoded)  # the whole table: the target, and the yardstick of every subset
    pool = _pool(encoded.n_rows, k, POOL_SIZE if pool_size is None else pool_size, rng)
    searched = encoded if pool is None else encoded.take(pool)
    if pool is not None:
        notes.append(f"The search chose among a uniform pool of {len(pool):,} of the {encoded.n_rows:,} rows "
                     "(pool_size), against the whole table's mean embedding.")
    selection, note = _select(kernel, searched, k, candidates=candidates, criterion=criterion, mmd=mmd,
                              pooled=pool is not None, search=search)
    notes += note
    if pool is not None:  # back to positions in the data
        selection.indices, selection.criticisms = pool[selection.indices], pool[selection.criticisms]
    subset_mmd = float(mmd.evaluate_many(np.sort(selection.indices)[None, :])[0])
    baseline = random_subsets(encoded.n_rows, len(selection.indices), n_random, random_state=rng)
    random_chi2 = _random_chi2(encoded, len(selection.indices), n_random, rng) if criterion == "chi2" else None
    fidelity = column_fidelity(encoded.codes, encoded.cardinalities, np.asarray(selection.indices),
                               baseline[:FIDELITY_SUBSETS])
    result = SummaryResult(data=data, selection=selection, mmd2=subset_mmd, random_mmd2=mmd.evaluate_many(baseline),
                           encoded=encoded, kernel=kernel, source=source, notes=notes,
                           random_chi2=random_chi2, advice=advice, fidelity=fidelity)
    later = result.fidelity_advice()
    warn(later)
    result.advice += later
    return result


def _select(kernel, searched, k, *, candidates: str, criterion: str, mmd, pooled: bool, search: dict) -> tuple:
    """Run the search over the rows ``candidates`` allows; return the selection (positions in ``searched``) and notes.

    ``auto`` with missing cells: stratified by missingness pattern; ``all``: every row; otherwise the complete rows
    (every row when all are complete), measured against every row.
    """
    if candidates == "auto" and searched.n_rows and searched.codes.min() < 0:
        selection, strata = _stratified(kernel, searched, k, search)
        return selection, [strata]
    if candidates == "all":
        within = mmd if not pooled else MMDCriterion(kernel, searched, mmd.target_cells)
        search["criterion"] = within if criterion == "mmd" else "chi2"
        return select_representatives(kernel, searched, k, candidates="all", **search), []
    candidate_set, candidate_rows, target = complete_candidates(kernel, searched)
    if candidate_rows is not None and isinstance(k, int) and k >= len(candidate_rows):
        raise OptionError(f"Only {len(candidate_rows)} rows are complete, too few to choose k={k} among them; "
                          "choose a smaller k, or candidates='auto' or 'all'.")
    within = mmd if candidate_rows is None and not pooled else MMDCriterion(
        kernel, candidate_set, mmd.target_cells if pooled else target)
    search["criterion"] = within if criterion == "mmd" else "chi2"
    selection = select_representatives(kernel, candidate_set, k, candidates="all", **search)
    if candidate_rows is not None:  # back to positions in the searched rows
        selection.indices = candidate_rows[selection.indices]
        selection.criticisms = candidate_rows[selection.criticisms]
    return selection, []


def _random_chi2(encoded, k: int, n_random: int, rng) -> np.ndarray:
    """Return the chi-square criterion of random subsets of the complete rows (where that criterion is defined)."""
    complete = np.flatnonzero((encoded.codes >= 0).all(axis=1))
    subsets = random_subsets(complete.size, k, min(n_random, 200), random_state=rng)
    return np.array([chi2_criterion(encoded.codes[complete], np.sort(s)) for s in subsets])


#: Rows a search chooses among at most, by default (``summarize``'s and ``summarize_distributed``'s ``pool_size``).
POOL_SIZE = 100_000


def _pool(n_rows: int, k, pool_size, rng) -> np.ndarray | None:
    """Return the sorted positions of a uniform pool of ``pool_size`` rows, or None when the table is no larger."""
    pool_size = check_positive_int(pool_size, "pool_size")
    if n_rows <= pool_size:
        return None
    if isinstance(k, int) and k >= pool_size:
        raise OptionError(f"k={k} is not below pool_size={pool_size}; give a larger pool_size (at most the "
                          f"{n_rows} rows) or a smaller k.")
    return np.sort(rng.choice(n_rows, size=pool_size, replace=False))


#: How ``summarize`` chooses its candidates (see its ``candidates`` parameter).
CANDIDATES = ("auto", "all", "complete")
#: Random subsets the per-column fidelity is compared with (their per-column tables cost more than their MMD).
FIDELITY_SUBSETS = 200


def _stratified(kernel: FamilyKernel, encoded: EncodedData, k: int, search: dict) -> tuple:
    """Choose the complete and the incomplete rows' shares of ``k`` apart, each representing its own stratum.

    The table's mean embedding is the share-weighted mean of its two strata's, so a subset whose strata
    are in the table's proportions and each close to its own stratum's mean is close to the table's;
    and each stratum keeps its labels (a label that lives only in incomplete rows is among the candidates).
    Returns the merged selection (positions in ``encoded``) and a note.
    """
    incomplete = (encoded.codes < 0).any(axis=1)
    strata = [np.flatnonzero(~incomplete), np.flatnonzero(incomplete)]
    k = check_positive_int(k, "k")
    if k > encoded.n_rows:
        raise OptionError(f"k={k} is more than the {encoded.n_rows} rows of the data; choose a smaller k.")
    wanted = int(round(k * incomplete.mean()))
    wanted = min(max(wanted, k - strata[0].size), strata[1].size)
    sizes = [k - wanted, wanted]
    parts, first = [], None
    for rows, size in zip(strata, sizes):
        if size == 0:
            continue
        if size == rows.size:  # the whole stratum
            parts.append(rows)
            continue
        stratum = encoded.take(rows)
        found = select_representatives(kernel, stratum, size, candidates="all", **(search | (
            {"criterion": MMDCriterion(kernel, stratum)} if search["criterion"] == "mmd" else {})))
        parts.append(rows[found.indices])
        if first is None:
            found.criticisms = rows[found.criticisms]
            first = found
    indices = np.concatenate(parts)
    if first is None:  # every stratum taken whole
        first = SelectionResult(indices=indices, objective=[], converged=True, criterion=search["criterion"]
                                if isinstance(search["criterion"], str) else "mmd")
    first.indices = indices
    note = (f"Candidates by stratum: {sizes[0]} of the {strata[0].size} complete rows and {sizes[1]} of the "
            f"{strata[1].size} rows with a missing cell (the table's proportions), each chosen to represent its "
            "own stratum (incomplete rows by their expected embedding, paper Sec. 8).")
    return first, note


def summarize_distributed(path, k: int, *, scheduler: str | None = None, n_workers: int = 2, timeout: float = 10.0,
                          pool_size: int = POOL_SIZE, network: BayesianNetwork | None = None,
                          structure: str = "chow-liu", bins: int | None = None, bin_columns=None,
                          categorical=None, na_values=(), n_init: int = 1000,
                          n_random: int = 1000, random_state=None, progress: bool = False,
                          learn_options: dict | None = None) -> SummaryResult:
    """Pick ``k`` representative rows of data that stays where it lies (Parquet or CSV, read by Dask).

    Data of at most ``pool_size`` rows is read whole and summarized as :func:`summarize` does (the same
    search and the same rows).  Larger data: the network is learned from distributed counts, the
    search runs on a uniform pool of ``pool_size`` rows against the whole data's mean embedding (an
    approximation of the search over every row, said in the verdict), and the random baseline draws
    its subsets from the pool.

    Parameters
    ----------
    path : str, path-like or list of them
        Parquet or CSV file(s), or a folder of Parquet parts.
    k : int
    scheduler : str, optional
        A Dask scheduler's address; default a local cluster of ``n_workers`` processes.
    n_workers : int, default=2
    timeout : float, default=10.0
        Seconds to wait for the scheduler.
    pool_size : int, default=100_000
    network, structure, bins, na_values, n_init, n_random, random_state, progress, learn_options
        As in :func:`summarize`.
    bin_columns, categorical : None
        Refused (the data is binned where it lies, by the rule: float columns, and integer
        columns with more than ``max(bins, 30)`` values).

    Returns
    -------
    SummaryResult
        With ``n_rows`` set and ``data`` the pool when the data exceeds the pool.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "nursery.parquet"
    >>> load("nursery").iloc[::5].astype(str).to_parquet(path)
    >>> result = summarize_distributed(path, 10, pool_size=1000, n_init=20, n_random=20, random_state=0,
    ...                                n_workers=1)  # doctest: +SKIP
    >>> len(result.indices), result.n_rows  # doctest: +SKIP
    (10, 2592)
    """
    from bnfisher.dask.client import dask_client  # Dask: a heavy optional dependency
    from bnfisher.dask.counts import DaskCounts

    if bin_columns is not None or categorical is not None:
        raise OptionError("`bin_columns` and `categorical` apply to tables in memory; data read by Dask is binned by "
                          "the rule (float columns, and integer columns with more than max(bins, 30) values).")
    rng = check_random_state(random_state)
    n_random = check_positive_int(n_random, "n_random")
    source = ", ".join(map(str, path)) if isinstance(path, (list, tuple)) else str(path)
    with dask_client(scheduler, n_workers=n_workers, timeout=timeout):
        provider = (DaskCounts(path, network.schema, missing="allow") if network is not None else
                    DaskCounts(path, bins=bins, na_values=tuple(na_values or ()), missing="allow"))
        if provider.n_rows <= pool_size:  # one file is read as the in-memory job reads it (same types, same rows)
            data = read_table(path, na_values=na_values or None) if os.path.isfile(str(path)) else provider.rows()
            result = summarize(data, k, network=network, structure=structure, bins=bins, na_values=na_values,
                               n_init=n_init, n_random=n_random, source=source, random_state=rng,
                               progress=progress, learn_options=learn_options)
            result.notes.insert(0, f"{source}: {provider.n_rows} rows, at most pool_size={pool_size}: read whole "
                                   "and summarized in memory (the same search, and rows, as in memory)")
            return result
        notes = [f"{source}: {provider.n_rows} rows in {provider.frame.npartitions} partitions"]
        if network is None:
            started = time.perf_counter()
            if provider.schema.bin_edges:
                notes += binned_note(provider.schema, bins, "with edges over the whole data")
            network = learn(provider, structure, missing="em", **(learn_options or {}))
            notes.append(f"Network ({structure}, learned from distributed counts in "
                         f"{time.perf_counter() - started:.2f} s): {network}")
        kernel = FisherKernel(network)
        notes.append(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
        selection = select_representatives(kernel, provider, k, n_init=n_init, random_state=rng,
                                           pool_size=pool_size, progress=progress)
    pool = selection.pool
    encoded = kernel.encode(pool)
    baseline = random_subsets(encoded.n_rows, k, n_random, random_state=rng)
    random_mmd2 = MMDCriterion(kernel, encoded, selection.pool_target).evaluate_many(baseline)
    return SummaryResult(data=pool, selection=selection, mmd2=float(selection.final_value), random_mmd2=random_mmd2,
                         encoded=encoded, kernel=kernel, source=source, notes=notes,
                         n_rows=int(provider.n_rows))
