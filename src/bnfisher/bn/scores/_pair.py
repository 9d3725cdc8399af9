"""Every family of at most one parent, each pair of columns counted once (private engine of ``LocalScorer``).

A climb from the empty graph, and the candidate screening of a wide table, start
from the scores of every variable with each single parent: ``n (n - 1)`` families.
The table of a pair of columns ``(u, v)`` holds both ``v``'s family with the parent
``u`` and ``u``'s with the parent ``v``, so one count per pair serves two families.
The scores are those of :func:`bnfisher.bn.scores._family.family_scores`, bit for bit.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher.bn.scores._bits import no_bits, pair_table, state_counts
from bnfisher.bn.scores._family import (
    BIT_CELLS,
    SCORE_KINDS,
    _dense_cells,
    _dense_value,
    _family_score,
    _penalised,
    _xlogx_table,
)
from bnfisher.bn.scores.formulas import local_score

__all__ = ["pair_scores"]


@compiled(nogil=True)
def _count_pair(x, y, r_y, cells, size):  # pragma: no cover - compiled
    """Count the rows of (``x``, ``y``) into ``cells[:size]`` (``size = r_x * r_y``, cell ``x * r_y + y``)."""
    if 4 * size <= cells.size:  # four interleaved tables: consecutive rows hitting one cell do not wait
        cells[:4 * size] = 0
        stop = x.size - x.size % 4
        for t in range(0, stop, 4):
            cells[x[t] * r_y + y[t]] += 1
            cells[size + x[t + 1] * r_y + y[t + 1]] += 1
            cells[2 * size + x[t + 2] * r_y + y[t + 2]] += 1
            cells[3 * size + x[t + 3] * r_y + y[t + 3]] += 1
        for t in range(stop, x.size):
            cells[x[t] * r_y + y[t]] += 1
        for cell in range(size):
            cells[cell] += cells[size + cell] + cells[2 * size + cell] + cells[3 * size + cell]
    else:
        cells[:size] = 0
        for t in range(x.size):
            cells[x[t] * r_y + y[t]] += 1


def _numpy_pair_rows(codes_t, cardinalities, lo, hi, kind, ess, cells, xlogx, log_prior, out, bits=None, first=None):
    """Fill :func:`_pair_rows`' entries with NumPy (its fallback; ``bits`` unused): a ``bincount`` per pair."""
    n, n_rows = codes_t.shape
    for u in range(lo, hi):
        r_u = int(cardinalities[u])
        out[u, u] = local_score(np.bincount(codes_t[u], minlength=r_u)[None, :], SCORE_KINDS[kind], n_rows=n_rows,
                                ess=ess, n_configurations=1)
        for v in range(u + 1, n):
            r_v = int(cardinalities[v])
            table = np.bincount(codes_t[u].astype(np.int64) * r_v + codes_t[v], minlength=r_u * r_v).reshape(r_u, r_v)
            for child, parent, counts in ((v, u, table), (u, v, table.T)):
                observed = counts[counts.any(axis=1)]
                out[parent, child] = local_score(observed, SCORE_KINDS[kind], n_rows=n_rows, ess=ess,
                                                 n_configurations=int(cardinalities[parent])) + log_prior


def _pair_rows_cost(codes_t, cardinalities, lo, hi, *_args) -> float:
    """Estimated seconds of :func:`_numpy_pair_rows` (as :func:`_batch_cost`, for two families per pair)."""
    pairs = sum(codes_t.shape[0] - 1 - u for u in range(lo, hi))
    return 4e-5 * pairs + 5e-9 * codes_t.shape[1] * pairs


@compiled(nogil=True, fallback=_numpy_pair_rows, cost=_pair_rows_cost)
def _pair_rows(codes_t, cardinalities, lo, hi, kind, ess, cells, xlogx, log_prior, out, bits,
               first):  # pragma: no cover - compiled
    """Fill ``out[u, u]`` and ``out[u, v]``, ``out[v, u]`` (``v > u``) for ``u`` in ``lo:hi``: one count per pair.

    The table of (u, v) is counted once and read twice: by rows for ``v`` with the parent ``u``,
    by columns (copied transposed) for ``u`` with the parent ``v``: the cells summed in the order
    :func:`_family_score` sums them, so the same scores.  A pair whose two tables do not fit
    ``cells`` is scored by :func:`_family_score`.  With bit sets of the rows (``bits``: not empty), a
    table of at most ``BIT_CELLS`` cells is counted from them, the same counts.
    """
    n, n_rows = codes_t.shape
    base = np.zeros(n_rows, np.int64)
    key = np.empty(n_rows, np.int64)
    none = np.zeros(0, np.int64)
    one = np.empty(1, np.int64)
    unit = np.int64(1)  # a span of one, typed int64 (a literal 1 would compile _family_score a second time)
    for u in range(lo, hi):
        r_u = cardinalities[u]
        x = codes_t[u]
        if bits.shape[0] > 0:  # the family without parents, as _family_score sums its table
            state_counts(bits, first, u, r_u, cells)
            alpha = 1.0 if kind == 4 else ess / (1.0 * r_u)
            out[u, u] = _penalised(_dense_value(cells, unit, r_u, kind, alpha, xlogx), 1.0, r_u, kind, n_rows)
        else:
            out[u, u] = _family_score(codes_t, cardinalities, u, none, base, unit, kind, ess, key, cells, xlogx, none,
                                      n_rows)
        for v in range(u + 1, n):
            r_v = cardinalities[v]
            size = r_u * r_v
            if 2 * size > cells.size:
                one[0] = u
                out[u, v] = _family_score(codes_t, cardinalities, v, one, base, unit, kind, ess, key, cells,
                                          xlogx, none, n_rows) + log_prior
                one[0] = v
                out[v, u] = _family_score(codes_t, cardinalities, u, one, base, unit, kind, ess, key, cells,
                                          xlogx, none, n_rows) + log_prior
                continue
            if bits.shape[0] > 0 and size <= BIT_CELLS:
                pair_table(bits, first, u, v, r_u, r_v, cells)
            else:
                _count_pair(x, codes_t[v], r_v, cells, size)
            alpha = 1.0 if kind == 4 else ess / (r_u * r_v)  # the same q * r either way
            value = _dense_value(cells, r_u, r_v, kind, alpha, xlogx)
            out[u, v] = _penalised(value, float(r_u), r_v, kind, n_rows) + log_prior
            for a in range(r_u):  # the transposed table, after the first
                for b in range(r_v):
                    cells[size + b * r_u + a] = cells[a * r_v + b]
            value = _dense_value(cells[size:], r_v, r_u, kind, alpha, xlogx)
            out[v, u] = _penalised(value, float(r_v), r_u, kind, n_rows) + log_prior


def pair_scores(codes_t: np.ndarray, cardinalities: np.ndarray, *, score: str, ess: float,
                log_prior: float = 0.0, n_threads: int | None = None, bits: tuple | None = None) -> np.ndarray:
    """Return every variable's local score alone and with each single parent, counting each pair of columns once.

    Parameters
    ----------
    codes_t : ndarray of shape (n_variables, n_rows)
        Complete codes, one row per variable (C-contiguous).
    cardinalities : ndarray of int64
    score, ess, log_prior
        As :func:`family_scores`.
    n_threads : int, optional
        As :func:`family_scores`.
    bits : tuple, optional
        :func:`bnfisher.bn.scores._bits.row_bits` of ``codes_t``: small tables counted from them.

    Returns
    -------
    ndarray of shape (n_variables, n_variables)
        ``[u, v]``: the score of ``v`` with the parent ``u``; ``[v, v]``: with no parent; the
        same values as :func:`family_scores` of those families.
    """
    n, n_rows = codes_t.shape
    kind = SCORE_KINDS.index(score)
    out = np.empty((n, n))
    cells = _dense_cells(n_rows)
    cell_type = np.int32 if n_rows < 2**31 else np.int64
    xlogx = _xlogx_table(n_rows)
    threads = min(threads_for(n_rows * n * n, n_threads or -1), max(n, 1))
    # Rows u of the triangle in parts of about equal numbers of pairs (row u holds n - 1 - u of them).
    load = np.concatenate([[0], np.cumsum(np.arange(n, 0, -1))])
    bounds = np.searchsorted(load, np.linspace(0, load[-1], threads + 1)).astype(np.int64)
    bounds[0], bounds[-1] = 0, n

    bits, first = bits if bits is not None else no_bits()

    def run(part):
        _pair_rows(codes_t, cardinalities, int(bounds[part]), int(bounds[part + 1]), kind, float(ess),
                   np.empty(cells, cell_type), xlogx, float(log_prior), out, bits, first)

    list(map_threads(run, range(threads), n_jobs=threads))
    return out
