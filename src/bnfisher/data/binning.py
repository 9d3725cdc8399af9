"""Bin edges and bin labels of numeric columns (the edges a :class:`~bnfisher.data.Schema` keeps)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bnfisher.exceptions import DataError, SchemaError

__all__ = ["BIN_SEPARATOR", "Binning"]


@dataclass(frozen=True)
class Binning:
    """How a table's columns become nominal variables: the one value the jobs pass on for it.

    The public functions take its four parts as keywords (``bins``, ``bin_columns``,
    ``categorical``, ``na_values``), documented here once; inside, they travel as one
    ``Binning``, and :meth:`schema_options` gives :meth:`Schema.from_data
    <bnfisher.data.Schema.from_data>` its keywords.

    Parameters
    ----------
    bins : int, optional
        Quantile bins for numeric columns (edges from the data the schema is learned on;
        a table without it may hold no float column).
    columns : sequence, optional
        With ``bins``: the numeric columns to bin (default: float columns, and integer
        columns with more than ``max(bins, 30)`` values).  The keyword ``bin_columns``.
    categorical : sequence, optional
        Columns never binned: their values are labels, whatever their type.
    na_values : sequence, default=()
        Markers of a missing value besides NaN and None (e.g. ``"?"``).

    Examples
    --------
    >>> Binning(bins=5, na_values=["?"]).schema_options()
    {'bins': 5, 'columns': None, 'categorical': None, 'na_values': ('?',)}
    """

    bins: int | None = None
    columns: Sequence | None = None
    categorical: Sequence | None = None
    na_values: Sequence = ()

    @property
    def markers(self) -> tuple:
        """The missing-value markers besides NaN and None, as a tuple."""
        return tuple(self.na_values or ())

    def schema_options(self) -> dict:
        """Return the keywords of :meth:`Schema.from_data <bnfisher.data.Schema.from_data>`.

        Returns
        -------
        dict
        """
        return {"bins": self.bins, "columns": self.columns, "categorical": self.categorical,
                "na_values": self.markers}


#: Separator of the two edges in a bin label: ``"0.1~0.375"`` is the bin (0.1, 0.375].
BIN_SEPARATOR = "~"


# ------------------------------------------------------------------- bins
def make_bin_edges(values: np.ndarray, bins: int, strategy: str, column) -> np.ndarray:
    """Edges of at most ``bins`` bins over the finite ``values`` of a column (one per row).

    ``"quantile"`` gives equal-frequency bins over the *rows*: see :func:`quantile_cuts`.
    ``"uniform"`` gives equal-width bins between the smallest and the largest value.
    """
    if not np.all(np.isfinite(values)):
        bad = values[~np.isfinite(values)][0]
        row = int(np.flatnonzero(~np.isfinite(values))[0])
        raise DataError(f"Column {column!r} has the non-finite value {bad} (row {row}); it cannot be binned. "
                        "Replace or drop it first.")
    if values.size == 0:
        raise DataError(f"Column {column!r} has no values to compute bin edges from.")
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size == 1:  # one distinct value: one bin holding it
        return np.array([distinct[0], distinct[0]], dtype=np.float64)
    if strategy == "uniform":
        return np.linspace(distinct[0], distinct[-1], bins + 1).astype(np.float64)
    cuts = quantile_cuts(counts, bins)
    # Bin k is (e_k, e_k+1]; a first bin holding only the smallest value gets a lower edge one step below it.
    lowest = distinct[0] - (distinct[1] - distinct[0]) if cuts[0] == 1 else distinct[0]
    return np.concatenate([[lowest], distinct[cuts - 1], distinct[[-1]]]).astype(np.float64)


def quantile_cuts(counts: np.ndarray, bins: int) -> np.ndarray:
    """Where to cut a sorted column into at most ``bins`` equal-frequency bins, keeping ties whole.

    The column is given by the row counts of its distinct values, in increasing
    order.  A cut falls between two distinct values (a value's rows are never
    split).  Cuts are placed left to right: with ``b`` bins still to make and ``R``
    rows left, the next bin aims at ``R / b`` rows and ends at the boundary nearest
    that target, so a block of ties larger than one bin takes its own bin and the
    rows after it are shared equally among the bins left (a zero-inflated column
    keeps several bins).  A bin, and the rows it leaves, must hold at least half
    the target (``R / (2 b)``): no near-empty bin at the edges.  With continuous
    values (no ties) the bins are the row quantiles, to one row.

    Parameters
    ----------
    counts : ndarray of int, shape (n_distinct,)
        Rows holding each distinct value, in increasing order of the value.
    bins : int
        The most bins to make (at least 2).

    Returns
    -------
    ndarray of int
        Increasing cut positions ``e`` in ``1 .. n_distinct - 1``: a bin ends after the
        ``e``-th distinct value.  At least one cut whenever ``n_distinct >= 2``.

    Examples
    --------
    >>> quantile_cuts(np.array([70, 10, 10, 10]), 4).tolist()   # the tie block is one bin; the rest share 3
    [1, 2, 3]
    >>> quantile_cuts(np.array([1, 40, 20, 20, 19]), 2).tolist()  # no bin of 1 row at the edge
    [2]
    """
    cumulative = np.concatenate([[0], np.cumsum(counts)]).astype(np.float64)
    total, n_distinct = cumulative[-1], counts.size
    cuts: list[int] = []
    start, left = 0, int(bins)
    while left > 1 and start < n_distinct - 1:
        remaining = total - cumulative[start]
        target = cumulative[start] + remaining / left
        floor = remaining / (2 * left)
        candidates = np.arange(start + 1, n_distinct)
        smaller = np.minimum(cumulative[candidates] - cumulative[start], total - cumulative[candidates])
        valid = smaller >= floor
        if valid.any():
            best = candidates[valid][np.argmin(np.abs(cumulative[candidates[valid]] - target))]
        elif cuts:
            break  # the rows left are too few for another bin of their own
        else:  # never a single bin for a column with two values or more: the most balanced two
            best = candidates[np.argmax(smaller)]
        cuts.append(int(best))
        start, left = int(best), left - 1
    return np.asarray(cuts, dtype=np.intp)


def interval_labels(edges: Sequence[float] | np.ndarray) -> tuple:
    """``"lo~hi"`` for the bin ``(lo, hi]``: short, unique, and safe in BIF files and CSV."""
    values = np.asarray(edges, dtype=np.float64)
    for digits in range(4, 18):
        labels = [f"{lo:.{digits}g}{BIN_SEPARATOR}{hi:.{digits}g}" for lo, hi in zip(values[:-1], values[1:])]
        if len(set(labels)) == len(labels):
            return tuple(labels)
    return tuple(f"bin{k}" for k in range(len(edges) - 1))  # pragma: no cover - edges are distinct


def bin_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin index of each value: bin ``k`` is ``(e_k, e_{k+1}]``, the first bin also holds ``e_0``.

    Values below the first edge go to the first bin and values above the last to
    the last bin (as scikit-learn's ``KBinsDiscretizer`` does).
    """
    inner = edges[1:-1]
    return np.searchsorted(inner, values, side="left").astype(np.intp)


def check_bin_edges(v, values, n_states: int) -> tuple:
    """Return bin edges as floats: one more than the states, finite and strictly increasing (or one point bin)."""
    try:
        values = tuple(float(e) for e in values)
    except (TypeError, ValueError):
        raise SchemaError(f"Variable {v!r}: bin edges must be numbers; got {values!r}.") from None
    increasing = all(b > a for a, b in zip(values, values[1:])) or (len(values) == 2 and values[0] == values[1])
    if len(values) != n_states + 1 or not all(np.isfinite(values)) or not increasing:
        raise SchemaError(f"Variable {v!r}: bin edges {values} do not fit its {n_states} states (need one more edge "
                          "than states, finite and strictly increasing).")
    return values
