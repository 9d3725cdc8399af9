"""What :func:`~bnfisher.jobs.summarize.summarize` found: a subset and how close it is, printed and serialised."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.text import counted
from bnfisher._utils.validation import free_name
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.schema import EncodedData
from bnfisher.jobs.result import JobResult
from bnfisher.kernels.base import FamilyKernel
from bnfisher.summary.fidelity import CPT_TOLERANCE, Fidelity
from bnfisher.summary.search import SelectionResult

__all__ = ["SummaryResult"]


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
        """Say what a user checks first: each column and pair of columns against random subsets, then the MMD.

        Returns
        -------
        str
        """
        k = len(self.indices)
        beaten = float(np.mean(self.random_mmd2 > self.mmd2))
        mean = float(self.random_mmd2.mean())
        ratio = f"{mean / self.mmd2:.1f} times closer" if self.mmd2 > 0 else "as close as possible"
        drawn = f" drawn from a uniform pool of {len(self.data)} of its {self.n_rows} rows" if self.n_rows else ""
        found = self.fidelity
        if found is None or not found.tv.size:
            return (f"The {k} rows chosen are closer to the full data than {100 * beaten:.1f}% of "
                    f"{len(self.random_mmd2)} random subsets of {k}{drawn} (MMD² {self.mmd2:.4g} against {mean:.4g} "
                    f"on average: {ratio}).")
        columns = self.network.variables
        pairs = (f"; pair by pair of columns, than {100 * found.pairs_beaten:.1f}% (mean {found.pair_tv.mean():.3f} "
                 f"against {found.random_pair_tv.mean():.3f} over {counted(found.pair_tv.size, 'pair')})"
                 if found.pair_tv.size and len(found.random_pair_tv) else "")
        head = (f"Column by column, the {k} rows chosen are closer to the data than {100 * found.beaten:.1f}% of "
                f"{len(found.random_tv)} random subsets of {k}{drawn} (mean total-variation distance "
                f"{found.mean_tv:.3f} against {found.random_tv.mean():.3f}; worst column {columns[found.worst]}, "
                f"{found.tv[found.worst]:.3f}){pairs}.")
        far = found.farther
        farther = (" Farther from the data than the average random subset: " + ", ".join(
            f"{columns[c]} ({found.tv[c]:.3f} against {found.random_tv[:, c].mean():.3f})" for c in far[:3])
            + (", ..." if far.size > 3 else "") + "." if far.size else "")
        lost = f" It lacks {len(found.lost)} common label{'s' if len(found.lost) != 1 else ''}." if found.lost else ""
        return (f"{head}{farther}{lost} By the Fisher-kernel MMD², closer than {100 * beaten:.1f}% of "
                f"{len(self.random_mmd2)} random subsets (MMD² {self.mmd2:.4g} against {mean:.4g} on average: "
                f"{ratio}).")

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
            lines += _pair_lines(found) + _cpt_lines(found, self.network.variables)
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
                "farther_than_random": [str(self.network.variables[c]) for c in self.fidelity.farther],
                "pairs": _pairs(self.fidelity),
                "cpts": {str(v): float(t) for v, t in zip(self.network.variables, self.fidelity.cpt_tv)},
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


def _pairs(found: Fidelity) -> dict:
    """Return the pairwise fidelity as JSON content (None where it was not measured)."""
    measured = bool(found.pair_tv.size and len(found.random_pair_tv))
    return {"count": int(found.pair_tv.size), "mean_tv": float(found.pair_tv.mean()) if measured else None,
            "random_mean_tv": float(found.random_pair_tv.mean()) if measured else None,
            "beaten": found.pairs_beaten if measured else None}


def _pair_lines(found: Fidelity) -> list:
    """Return the text line of the pairwise fidelity (none where it was not measured)."""
    if not (found.pair_tv.size and len(found.random_pair_tv)):
        return []
    return [f"Per pair of columns ({counted(found.pair_tv.size, 'pair')}, joint observed labels): subset mean "
            f"{found.pair_tv.mean():.4f}, random subsets {found.random_pair_tv.mean():.4f} ± "
            f"{found.random_pair_tv.mean(axis=1).std():.3g}."]


def _cpt_lines(found: Fidelity, variables) -> list:
    """Return the text line of the CPT certificate (none where it was not measured)."""
    if not found.cpt_tv.size:
        return []
    kept = int(np.sum(found.cpt_tv <= CPT_TOLERANCE))
    worst = int(np.argmax(found.cpt_tv))
    share = 100 * kept / found.cpt_tv.size
    return [f"CPTs re-estimated from the subset: {kept} of {found.cpt_tv.size} families ({share:.0f}%) within "
            f"expected total variation {CPT_TOLERANCE:g} of the full data's; farthest {variables[worst]} "
            f"({found.cpt_tv[worst]:.3f})."]

