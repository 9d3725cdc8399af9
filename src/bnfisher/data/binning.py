"""Bin edges and bin labels of numeric columns (the edges a :class:`~bnfisher.data.Schema` keeps)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bnfisher.exceptions import DataError

__all__ = ["BIN_SEPARATOR"]


#: Separator of the two edges in a bin label: ``"0.1~0.375"`` is the bin (0.1, 0.375].
BIN_SEPARATOR = "~"


# ------------------------------------------------------------------- bins
def make_bin_edges(values: np.ndarray, bins: int, strategy: str, column) -> np.ndarray:
    """Edges of at most ``bins`` bins over finite ``values`` (distinct, increasing)."""
    if not np.all(np.isfinite(values)):
        bad = values[~np.isfinite(values)][0]
        row = int(np.flatnonzero(~np.isfinite(values))[0])
        raise DataError(f"Column {column!r} has the non-finite value {bad} (row {row}); it cannot be binned. "
                        "Replace or drop it first.")
    if values.size == 0:
        raise DataError(f"Column {column!r} has no values to compute bin edges from.")
    distinct = np.unique(values)
    wanted = min(bins, distinct.size)
    if strategy == "uniform":
        edges = np.linspace(distinct[0], distinct[-1], bins + 1) if distinct.size > 1 else distinct[[0, 0]]
    else:
        edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)))
        if edges.size - 1 < wanted:
            # Ties (e.g. a zero-inflated column) merged quantile bins: use quantiles of the distinct values,
            # so every distinct value is not swallowed by one bin.
            edges = np.unique(np.quantile(distinct, np.linspace(0, 1, wanted + 1)))
    if edges.size < 2:  # one distinct value: one bin holding it
        edges = np.array([distinct[0], distinct[0]])
    return edges.astype(np.float64)


def interval_labels(edges: Sequence[float]) -> tuple:
    """``"lo~hi"`` for the bin ``(lo, hi]``: short, unique, and safe in BIF files and CSV."""
    edges = np.asarray(edges, dtype=np.float64)
    for digits in range(4, 18):
        labels = [f"{lo:.{digits}g}{BIN_SEPARATOR}{hi:.{digits}g}" for lo, hi in zip(edges[:-1], edges[1:])]
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
