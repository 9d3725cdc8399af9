"""Compiled local scores of many families over in-memory integer codes (private engine of ``LocalScorer``).

One call scores a batch of families ``(child, parents)``: each family's rows are
indexed by their parent configuration (mixed radix, renumbered densely when the
index would overflow), counted densely when the table is small next to the data
and by one sort otherwise, and scored in the same loop -- no per-family Python
overhead.  Batches large enough to pay for it are split across threads (the
loop releases the GIL).

The score formulas are those of :mod:`bnfisher.scores` (natural log):
``ll = sum_jk N_jk log(N_jk / N_j)``, ``bic = ll - 0.5 log(N) q (r - 1)``,
``aic = ll - q (r - 1)``, BDeu with ``a_jk = ess / (q r)`` and K2 with ``a_jk = 1``,
over all ``q`` parent configurations (unobserved ones add nothing); a structure
prior adds ``|parents| log c``.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

__all__ = ["SCORE_KINDS", "family_scores"]

#: Score names in the order of the compiled kernel's ``kind`` codes.
SCORE_KINDS = ("ll", "bic", "aic", "bdeu", "k2")
#: A configuration index is renumbered densely before it would exceed this (int64 safety).
_COMPACT_ABOVE = 1 << 40
#: A family table is counted densely when it has at most this many cells per row (plus 4096, at most 2**22).
DENSE_CELLS_PER_ROW = 4
_MAX_DENSE_CELLS = 1 << 22
#: ``n log n`` is looked up for counts below this.
_XLOGX_TABLE = 1 << 20
#: Below this many row visits (families x rows x columns) a batch runs on one thread.
_PARALLEL_WORK = 4_000_000


@njit(cache=True, nogil=True)
def _renumber(key):  # pragma: no cover - compiled
    """Replace ``key`` by the rank of its value among the distinct values; return how many there are."""
    order = np.argsort(key, kind="mergesort")
    rank = np.empty_like(key)
    distinct = 0
    previous = key[order[0]] if key.size else 0
    for position in range(order.size):
        value = key[order[position]]
        if position > 0 and value != previous:
            distinct += 1
        rank[order[position]] = distinct
        previous = value
    key[:] = rank
    return distinct + 1 if key.size else 1


@njit(cache=True, nogil=True)
def _cell_term(n, kind, alpha, xlogx):  # pragma: no cover - compiled
    """One child-state cell's share of the score (``n > 0``)."""
    if kind <= 2:
        return xlogx[n] if n < xlogx.size else n * math.log(n)
    return math.lgamma(alpha + n) - math.lgamma(alpha)


@njit(cache=True, nogil=True)
def _config_term(total, r, kind, alpha, xlogx):  # pragma: no cover - compiled
    """One observed parent configuration's share of the score, from its row count ``total``."""
    if kind <= 2:
        return -(xlogx[total] if total < xlogx.size else total * math.log(total))
    return math.lgamma(r * alpha) - math.lgamma(r * alpha + total)


@njit(cache=True, nogil=True)
def _family_score(codes_t, cardinalities, child, parents, kind, ess, key, cells, xlogx):  # pragma: no cover
    """Score one family (compiled); ``key`` and ``cells`` are scratch."""
    n_rows = codes_t.shape[1]
    r = cardinalities[child]
    key[:] = 0
    span = 1  # the index takes values in [0, span)
    q = 1.0  # all parent configurations (float: the product may exceed int64)
    for p in parents:
        c = cardinalities[p]
        q *= c
        if span > _COMPACT_ABOVE // c:
            span = _renumber(key)
        column = codes_t[p]
        for t in range(n_rows):
            key[t] = key[t] * c + column[t]
        span *= c
    alpha = 1.0 if kind == 4 else ess / (q * r)
    x = codes_t[child]
    value = 0.0
    if span * r <= cells.size:  # dense counts over all span * r cells
        cells[:span * r] = 0
        for t in range(n_rows):
            cells[key[t] * r + x[t]] += 1
        for j in range(span):
            total = 0
            for cell in range(j * r, (j + 1) * r):
                if cells[cell] > 0:
                    value += _cell_term(cells[cell], kind, alpha, xlogx)
                    total += cells[cell]
            if total > 0:
                value += _config_term(total, r, kind, alpha, xlogx)
    else:  # sparse: sort the rows by (configuration, child state) and read the runs
        if span > (1 << 62) // r:
            span = _renumber(key)
        for t in range(n_rows):
            key[t] = key[t] * r + x[t]
        key.sort()
        start = 0
        while start < n_rows:
            config = key[start] // r
            stop = start
            while stop < n_rows and key[stop] // r == config:
                run = stop
                while stop < n_rows and key[stop] == key[run]:
                    stop += 1
                value += _cell_term(stop - run, kind, alpha, xlogx)
            value += _config_term(stop - start, r, kind, alpha, xlogx)
            start = stop
    free = q * (r - 1)
    if kind == 1 and n_rows > 0:
        value -= 0.5 * math.log(n_rows) * free
    elif kind == 2:
        value -= free
    return value


@njit(cache=True, nogil=True)
def _batch(codes_t, cardinalities, children, members, offsets, kind, ess, dense_cells,
           log_prior):  # pragma: no cover - compiled
    n_rows = codes_t.shape[1]
    key = np.empty(n_rows, np.int64)
    cells = np.empty(dense_cells, np.int64)
    xlogx = np.zeros(min(n_rows, _XLOGX_TABLE) + 1)
    for n in range(1, xlogx.size):
        xlogx[n] = n * math.log(n)
    out = np.empty(children.size)
    for f in range(children.size):
        parents = members[offsets[f]:offsets[f + 1]]
        out[f] = _family_score(codes_t, cardinalities, children[f], parents, kind, ess, key, cells, xlogx)
        out[f] += log_prior * parents.size
    return out


def family_scores(codes_t: np.ndarray, cardinalities: np.ndarray, families, *, score: str, ess: float,
                  log_prior: float = 0.0, n_threads: int | None = None) -> np.ndarray:
    """Local scores of ``families`` over complete integer codes.

    Parameters
    ----------
    codes_t : ndarray of shape (n_variables, n_rows)
        Codes, one row per variable (C-contiguous, any integer dtype).
    cardinalities : ndarray of int64
    families : sequence of (child, parents)
    score : {"ll", "bic", "aic", "bdeu", "k2"}
    ess : float
    log_prior : float, default=0.0
        ``log c`` of the structure prior, added once per parent.
    n_threads : int, optional
        Threads for large batches (default: the CPU count).

    Returns
    -------
    ndarray of shape (len(families),)
    """
    children = np.fromiter((c for c, _ in families), dtype=np.int64, count=len(families))
    sizes = np.fromiter((len(ps) for _, ps in families), dtype=np.int64, count=len(families))
    offsets = np.zeros(len(families) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    members = np.fromiter((p for _, ps in families for p in ps), dtype=np.int64, count=int(offsets[-1]))
    kind = SCORE_KINDS.index(score)
    n_rows = codes_t.shape[1]
    dense_cells = min(DENSE_CELLS_PER_ROW * n_rows + 4096, _MAX_DENSE_CELLS)
    arguments = (codes_t, cardinalities, kind, float(ess), dense_cells, float(log_prior))
    threads = min(n_threads or os.cpu_count() or 1, len(families))
    if threads <= 1 or n_rows * (len(families) + int(offsets[-1])) < _PARALLEL_WORK:
        return _batch(codes_t, cardinalities, children, members, offsets, *arguments[2:])
    bounds = np.linspace(0, len(families), threads + 1).astype(np.int64)

    def run(part):
        lo, hi = bounds[part], bounds[part + 1]
        return _batch(codes_t, cardinalities, children[lo:hi], members[offsets[lo]:offsets[hi]],
                      offsets[lo:hi + 1] - offsets[lo], *arguments[2:])

    with ThreadPoolExecutor(threads) as pool:
        return np.concatenate(list(pool.map(run, range(threads))))
