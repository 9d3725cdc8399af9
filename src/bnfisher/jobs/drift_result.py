"""The drift job's result: the window table, each window's comparison, and how they print, render and serialise."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.lazy import pandas as pd
from bnfisher.bn.network import BayesianNetwork
from bnfisher.jobs.compare_result import ComparisonResult
from bnfisher.jobs.result import JobResult

__all__ = ["MIN_WINDOW_ROWS", "NO_SINGLE_FAMILY", "WINDOW_ADJUSTMENT", "DriftResult"]

#: The family column of a drifted window whose family tests found no change (Holm over its families).
NO_SINGLE_FAMILY = "(no single family stands out)"


#: The fewest rows a window needs to be tested (a permutation test compares two samples of at least 2 rows).
MIN_WINDOW_ROWS = 2

#: How the window p-values are adjusted, and why that controls the family-wise rate.
WINDOW_ADJUSTMENT = ("Holm's step-down procedure over the windows: the probability that any window without drift is "
                     "flagged is at most alpha, whichever windows drifted and however the windows' tests depend on "
                     "each other (they share the reference rows)")


@dataclass(repr=False)
class DriftResult(JobResult):
    """Everything :func:`drift` found, one :class:`ComparisonResult` per window; printed, rendered and serialised.

    Attributes
    ----------
    windows : DataFrame
        One row per window: ``window`` (label), ``start`` and ``end`` (first and last time,
        for time windows), ``rows``, ``missing_cells``, ``unseen_cells`` (labels the
        reference never showed, marginalized like missing cells), ``mmd2`` (eq. 10,
        biased: it grows as windows shrink), ``mmd2_u`` (the unbiased MMD²_u, the effect
        size: centred at 0 under no change whatever the window's size, so comparable
        across windows), ``mmd2_u_low`` and ``mmd2_u_high`` (its 95% confidence interval,
        :func:`bnfisher.comparison.two_sample.effect_interval`), ``p_value`` (the
        permutation p-value: valid at the window's stop, exact with ``stopping="fixed"``),
        ``permutations`` (how many it rests on), ``p_adjusted`` (Holm over windows), ``drift``
        (``p_adjusted <= alpha``, and ``mmd2_u >= min_effect`` when ``min_effect`` is given), and the window's
        clearest family: ``family``,
        ``parents``, ``share`` and ``family_p_adjusted`` (Holm over the families of that
        window; a drifted window with no family found says so in ``family``), and its
        clearest changed mechanism (:mod:`bnfisher.comparison.mechanisms`): ``mechanism``
        ("A or B" when the data cannot tell which) and ``mechanism_p_adjusted``.
    min_effect : float or None
        The smallest ``mmd2_u`` a window must reach to be flagged (None: any).
    comparisons : list of ComparisonResult or None
        The full comparison of each window (families, cells, typical rows, witness);
        None for a window with fewer than :data:`MIN_WINDOW_ROWS` rows, which is listed
        with empty p-values and not tested.
    network : BayesianNetwork
        The structure, learned on the reference's fitting part (each window refits its CPTs).
    reference : dict
        Rows of the reference, of its fitting part and of its test part.
    alpha : float
    notes, advice : list of str
        The steps taken, and the warnings about the input (also emitted as DataWarning).
    top : int

    Examples
    --------
    >>> data = load("nursery").sample(3000, random_state=0)
    >>> result = bf.drift(data.iloc[:1000], data.iloc[1000:], window=1000, n_permutations=99, random_state=0)
    >>> len(result.windows), result.to_dict()["kind"]
    (2, 'drift')
    """

    windows: pd.DataFrame
    comparisons: list
    network: BayesianNetwork
    reference: dict
    alpha: float = 0.05
    notes: list = field(default_factory=list)
    advice: list = field(default_factory=list)
    top: int = 5
    min_effect: float | None = None

    @property
    def flagged(self) -> pd.DataFrame:
        """The windows that differ from the reference (Holm-adjusted p-value at most ``alpha``)."""
        return self.windows[self.windows["drift"]]

    def comparison(self, window: str) -> ComparisonResult:
        """Return the full comparison of one window.

        Parameters
        ----------
        window : str
            The window's label (column ``window`` of :attr:`windows`).

        Returns
        -------
        ComparisonResult

        Raises
        ------
        KeyError
            Naming the labels there are.
        """
        labels = list(self.windows["window"])
        if window not in labels:
            raise KeyError(f"No window {window!r}; the windows are {', '.join(labels[:6])}"
                           f"{', ...' if len(labels) > 6 else ''}.")
        found = self.comparisons[labels.index(window)]
        if found is None:
            raise KeyError(f"Window {window!r} has fewer than {MIN_WINDOW_ROWS} rows and was not tested.")
        return found

    def verdict(self) -> str:
        """One or two sentences a non-statistician can act on.

        Returns
        -------
        str
        """
        n = int(self.windows["p_value"].notna().sum())
        untested = len(self.windows) - n
        skipped = (f" ({untested} window{'s' if untested != 1 else ''} too small to test)" if untested else "")
        flagged = self.flagged
        if flagged.empty:
            best = self.windows.loc[self.windows["p_adjusted"].idxmin()]
            return (f"No window differs from the reference: {n} window{'s' if n != 1 else ''} tested{skipped}, "
                    f"smallest adjusted p = {best['p_adjusted']:.3g} (window {best['window']}).")
        first = flagged.iloc[0]
        where = _where(first)
        others = ", ".join(flagged["window"].iloc[1:4]) + (", ..." if len(flagged) > 4 else "")
        large = f" and MMD²_u ≥ {self.min_effect:g}" if self.min_effect is not None else ""
        return (f"{len(flagged)} of {n} windows tested differ from the reference (adjusted p ≤ {self.alpha:g}{large})"
                f"{skipped}. The first is "
                f"{first['window']} (adjusted p = {first['p_adjusted']:.3g}){where}."
                + (f" Also: {others}." if others else ""))

    def to_text(self, *, notes: bool = True, advice: bool = True) -> str:
        """Return the result as text: notes, the verdict, one line per window, then each flagged window's families.

        Parameters
        ----------
        notes : bool, default=True
        advice : bool, default=True
            Include the warnings (the command line prints them on stderr instead).

        Returns
        -------
        str
        """
        lines = (list(self.notes) if notes else []) + (
            [f"Warning: {message}" for message in self.advice] if advice else [])
        lines += [self.verdict(), "", f"Windows against the reference (p-values adjusted by {WINDOW_ADJUSTMENT}):"]
        shown = self.windows.assign(share=lambda t: (100 * t["share"]).round(1).astype(str) + "%",
                                    drift=lambda t: np.where(t["drift"], "yes", ""))
        shown["mmd2_u_95%"] = [f"{a:.3g} to {b:.3g}" if np.isfinite(a) else "" for a, b in
                               zip(self.windows["mmd2_u_low"], self.windows["mmd2_u_high"])]
        columns = ["window", "rows", "missing_cells", "unseen_cells", "mmd2_u", "mmd2_u_95%", "p_value", "permutations",
                   "p_adjusted", "drift", "mechanism", "family", "share"]
        with pd.option_context("display.width", 160, "display.max_colwidth", 40, "display.max_rows", 500):
            lines.append(shown[columns].to_string(index=False))
        for label in self.flagged["window"]:
            result = self.comparison(label)
            lines += ["", f"Window {label}: {result.verdict()}"]
            families = result.families.head(self.top).assign(
                share=lambda t: (100 * t["share"]).round(1).astype(str) + "%")
            with pd.option_context("display.width", 160, "display.max_colwidth", 40):
                lines.append(families[["variable", "parents", "share", "p_value", "p_adjusted"]]
                             .to_string(index=False))
            lines += [f"  {text}" for text in result.cells["text"].head(3)]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Return the result as JSON-serialisable content (what ``--json`` writes and the report renders).

        Returns
        -------
        dict
            ``kind`` "drift", the verdict, notes, warnings, the reference's rows, the
            network, the window table, and each flagged window's comparison (its
            :meth:`ComparisonResult.to_dict`).
        """
        table = self.windows.assign(start=self.windows["start"].map(_iso), end=self.windows["end"].map(_iso))
        counts = ("rows", "missing_cells", "unseen_cells")
        records = [{str(k): (int(v) if k in counts else bool(v) if k == "drift"
                             else None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                   for r in table.to_dict(orient="records")]
        return {
            "kind": "drift",
            "verdict": self.verdict(),
            "notes": list(self.notes),
            "warnings": list(self.advice),
            "alpha": self.alpha,
            "adjustment": WINDOW_ADJUSTMENT,
            "reference": dict(self.reference),
            "network": {"summary": repr(self.network), "arcs": [[str(p), str(c)] for p, c in self.network.edges]},
            "windows": records,
            "flagged": {label: self.comparison(label).to_dict() for label in self.flagged["window"]},
        }

    def plot(self, path=None, *, ax=None):
        """Draw the timeline: MMD² per window with the flagged windows marked, and the families' shares under it.

        Parameters
        ----------
        path : str or path-like, optional
            A PNG file to write (atomically); without it the figure is returned.
        ax : pair of matplotlib Axes, optional

        Returns
        -------
        matplotlib.figure.Figure or None
            The figure, when no ``path`` is given.
        """
        from bnfisher.viz.plotting import save_figure
        from bnfisher.viz.timeline import plot_drift

        figure = plot_drift(self, ax=ax)
        if path is None:
            return figure
        save_figure(figure, path)
        return None

    def _figures(self) -> dict:
        from bnfisher.viz.plotting import figure_png

        return {"timeline": figure_png(self.plot())}

    def _title(self) -> str:
        return f"Drift against the reference: {len(self.windows)} windows"

    def _repr_html_(self) -> str:
        return (f"<p>{self.verdict()}</p>"
                + html_table("Windows", [(r["window"], f"p_adj {r['p_adjusted']:.3g}"
                                          + (f"; {r['family']} ({100 * r['share']:.0f}%)" if r["family"] else ""))
                                         for _, r in self.windows.iterrows()]))


def _iso(value) -> str | None:
    return None if value is None or pd.isna(value) else pd.Timestamp(value).isoformat()




def _where(first: pd.Series) -> str:
    """Return where a flagged window changed, for the verdict: its mechanism, else its clearest family."""
    if first["mechanism"]:
        if np.isfinite(first["mechanism_p_adjusted"]):
            return (f"; the mechanism that changed most clearly is {first['mechanism']}'s (adjusted p = "
                    f"{first['mechanism_p_adjusted']:.3g})")
        return f"; the change lies in {first['mechanism']} (the data cannot tell which)"
    if first["family"] == NO_SINGLE_FAMILY:
        return "; no single family's conditional distribution stands out (the change is spread over several)"
    given = f" given {first['parents']}" if first["parents"] else ""
    return (f"; the clearest change is in {first['family']}{given}"
            + f" (adjusted p = {first['family_p_adjusted']:.3g})")
