"""Compiled local scores of many families over in-memory integer codes (private engine of ``LocalScorer``).

One call scores a batch of families ``(child, parents)``: each family's rows are
indexed by their parent configuration (mixed radix, renumbered densely when the
index would overflow), counted densely when the table is small next to the data
and by one sort otherwise, and scored in the same loop -- no per-family Python
overhead.  Batches large enough to pay for it are split across threads (the
loop releases the GIL).

The score formulas are those of :mod:`bnfisher.bn.scores.formulas` (natural log):
``ll = sum_jk N_jk log(N_jk / N_j)``, ``bic = ll - 0.5 log(N) q (r - 1)``,
``aic = ll - q (r - 1)``, BDeu with ``a_jk = ess / (q r)`` and K2 with ``a_jk = 1``,
over all ``q`` parent configurations (unobserved ones add nothing); a structure
prior adds ``|parents| log c``.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher.bn.scores._bits import GROUP_BYTES, GROUPS, bit_table, groups_of, no_bits
from bnfisher.bn.scores.formulas import SCORES, local_score

__all__ = ["SCORE_KINDS", "family_scores", "packed_scores"]

#: Score names in the order of the compiled kernel's ``kind`` codes.
SCORE_KINDS = SCORES
#: A configuration index is renumbered densely before it would exceed this (int64 safety).
_COMPACT_ABOVE = 1 << 40
#: A family table is counted densely when it has at most this many cells per row (plus 4096, at most 2**22).
DENSE_CELLS_PER_ROW = 4
_MAX_DENSE_CELLS = 1 << 22
#: Tables of at most this many cells are counted in four interleaved copies.
_SMALL_TABLE = 1024
#: A family is counted from bit sets of the rows (:mod:`bnfisher.bn.scores._bits`) when its table has at most
#: this many cells: a cell costs ``n_rows / 64`` words ANDed and counted, where a pass costs a few operations a row.
BIT_CELLS = 1024
#: ``n log n`` is looked up for counts below this.
_XLOGX_TABLE = 1 << 20


@compiled(nogil=True)
def _renumber(key):  # pragma: no cover - compiled
    """Replace ``key`` by the rank of its value among the distinct values; return how many there are.

    Written with one in-place sort and a binary search rather than ``argsort``: the same
    result, and numba compiles it in a fraction of the time (this runs rarely, but is
    compiled with every score).
    """
    values = key.copy()
    values.sort()
    distinct = 0
    for t in range(values.size):  # compact the distinct values into values[:distinct]
        if t == 0 or values[t] != values[distinct - 1]:
            values[distinct] = values[t]
            distinct += 1
    for t in range(key.size):
        lo, hi = 0, distinct - 1
        while lo < hi:
            middle = (lo + hi) // 2
            if values[middle] < key[t]:
                lo = middle + 1
            else:
                hi = middle
        key[t] = lo
    return max(distinct, 1)


@compiled(nogil=True)
def _cell_term(n, kind, alpha, xlogx):  # pragma: no cover - compiled
    """One child-state cell's share of the score (``n > 0``)."""
    if kind <= 2:
        return xlogx[n] if n < xlogx.size else n * math.log(n)
    return math.lgamma(alpha + n) - math.lgamma(alpha)


@compiled(nogil=True)
def _config_term(total, r, kind, alpha, xlogx):  # pragma: no cover - compiled
    """One observed parent configuration's share of the score, from its row count ``total``."""
    if kind <= 2:
        return -(xlogx[total] if total < xlogx.size else total * math.log(total))
    return math.lgamma(r * alpha) - math.lgamma(r * alpha + total)


@compiled(nogil=True)
def _parent_key(codes_t, cardinalities, parents, key):  # pragma: no cover - compiled
    """Write each row's configuration of ``parents`` into ``key``; return how many values it can take.

    Mixed radix, renumbered densely before an int64 could overflow.
    """
    key[:] = 0
    span = 1
    for p in parents:
        c = cardinalities[p]
        if span > _COMPACT_ABOVE // c:
            span = _renumber(key)
        column = codes_t[p]
        for t in range(key.size):
            key[t] = key[t] * c + column[t]
        span *= c
    return span


@compiled(nogil=True)
def _dense_value(cells, span, r, kind, alpha, xlogx):  # pragma: no cover - compiled
    """Return the score's sum over a dense ``(span, r)`` count table."""
    value = 0.0
    for j in range(span):
        total = np.int64(0)
        for cell in range(j * r, (j + 1) * r):
            n = np.int64(cells[cell])
            if n > 0:
                value += _cell_term(n, kind, alpha, xlogx)
                total += n
        if total > 0:
            value += _config_term(total, r, kind, alpha, xlogx)
    return value


@compiled(nogil=True)
def _key_value(key, span, x, r, kind, alpha, cells, xlogx):  # pragma: no cover - compiled
    """Return the score's sum over the table of (``key``, child ``x``): dense when it fits ``cells``, else sorted."""
    n_rows = key.size
    if span <= cells.size // r:
        cells[:span * r] = 0
        for t in range(n_rows):
            cells[key[t] * r + x[t]] += 1
        return _dense_value(cells, span, r, kind, alpha, xlogx)
    if span > (1 << 62) // r:
        span = _renumber(key)
    for t in range(n_rows):
        key[t] = key[t] * r + x[t]
    key.sort()
    value = 0.0
    start = 0
    while start < n_rows:  # one parent configuration per run of key // r
        config = key[start] // r
        stop = start
        while stop < n_rows and key[stop] // r == config:
            run = stop
            while stop < n_rows and key[stop] == key[run]:
                stop += 1
            value += _cell_term(stop - run, kind, alpha, xlogx)
        value += _config_term(stop - start, r, kind, alpha, xlogx)
        start = stop
    return value


@compiled(nogil=True)
def _weighted_value(x, last, c, base, span, r, weights, kind, alpha, cells, xlogx):  # pragma: no cover - compiled
    """Return the sum over the table of (``base``, ``last``, child ``x``), row ``t`` counted ``weights[t]`` times."""
    cells[:span * c * r] = 0
    for t in range(x.size):
        cells[(base[t] * c + last[t]) * r + x[t]] += weights[t]
    return _dense_value(cells, span * c, r, kind, alpha, xlogx)


@compiled(nogil=True)
def _family_constants(cardinalities, child, parents, kind, ess):  # pragma: no cover - compiled
    """Return a family's child states ``r``, parent configurations ``q`` and BDeu's ``alpha`` (K2: 1)."""
    r = cardinalities[child]
    q = 1.0  # all parent configurations (float: the product may exceed int64)
    for p in parents:
        q *= cardinalities[p]
    return r, q, 1.0 if kind == 4 else ess / (q * r)


@compiled(nogil=True)
def _family_score(codes_t, cardinalities, child, parents, base, base_span, kind, ess, key, cells, xlogx,
                  weights, n_total):  # pragma: no cover - compiled
    """Score one family, ``base`` holding the configuration key of all its parents but the last.

    With ``weights`` (distinct rows, each counted ``weights[t]`` times; empty: every row once) the
    family's whole table is counted densely: the caller makes sure it fits ``cells``.  ``n_total``
    is the number of rows (the weights' sum) in the penalty.
    """
    r, q, alpha = _family_constants(cardinalities, child, parents, kind, ess)
    x = codes_t[child]
    if weights.size > 0:
        key[:] = 0
        if parents.size == 0:
            value = _weighted_value(x, key, np.int64(1), key, np.int64(1), r, weights, kind, alpha, cells, xlogx)
        else:
            value = _weighted_value(x, codes_t[parents[-1]], cardinalities[parents[-1]], base, base_span, r,
                                    weights, kind, alpha, cells, xlogx)
    elif parents.size == 0:
        key[:] = 0
        value = _key_value(key, np.int64(1), x, r, kind, alpha, cells, xlogx)
    else:
        c = cardinalities[parents[-1]]
        last = codes_t[parents[-1]]
        if base_span <= cells.size // (c * r):
            # Dense, in one pass over the rows: the last parent and the child folded into the cell index.
            span = base_span * c
            size = span * r
            if size <= _SMALL_TABLE:
                # Four interleaved tables: consecutive rows hitting the same cell do not wait on each other.
                cells[:4 * size] = 0
                stop = x.size - x.size % 4
                for t in range(0, stop, 4):
                    cells[(base[t] * c + last[t]) * r + x[t]] += 1
                    cells[size + (base[t + 1] * c + last[t + 1]) * r + x[t + 1]] += 1
                    cells[2 * size + (base[t + 2] * c + last[t + 2]) * r + x[t + 2]] += 1
                    cells[3 * size + (base[t + 3] * c + last[t + 3]) * r + x[t + 3]] += 1
                for t in range(stop, x.size):
                    cells[(base[t] * c + last[t]) * r + x[t]] += 1
                for cell in range(size):
                    cells[cell] += cells[size + cell] + cells[2 * size + cell] + cells[3 * size + cell]
            else:
                cells[:size] = 0
                for t in range(x.size):
                    cells[(base[t] * c + last[t]) * r + x[t]] += 1
            value = _dense_value(cells, span, r, kind, alpha, xlogx)
        else:
            value = _sparse_value(key, base, base_span, last, c, x, r, kind, alpha, cells, xlogx)
    return _penalised(value, q, r, kind, n_total)


@compiled(nogil=True)
def _sparse_value(key, base, base_span, last, c, x, r, kind, alpha, cells, xlogx):  # pragma: no cover - compiled
    """Return the family's value through configuration keys (``base`` renumbered when its span is too wide)."""
    for t in range(key.size):
        key[t] = base[t]
    span = base_span
    if span > _COMPACT_ABOVE // c:
        span = _renumber(key)
    for t in range(x.size):
        key[t] = key[t] * c + last[t]
    return _key_value(key, span * c, x, r, kind, alpha, cells, xlogx)


@compiled(nogil=True)
def _penalised(value, q, r, kind, n_total):  # pragma: no cover - compiled
    """Return a family's sum over its table less the penalty of ``q`` parent configurations (BIC, AIC)."""
    free = q * (r - 1)
    if kind == 1 and n_total > 0:
        value -= 0.5 * math.log(n_total) * free
    elif kind == 2:
        value -= free
    return value


def _numpy_batch(codes_t, cardinalities, children, members, offsets, kind, ess, cells, log_prior, xlogx, weights,
                 n_total, bits=None, first=None):
    """Return the scores of :func:`_batch` family by family with NumPy (its fallback; xlogx and the bits unused).

    Each family is counted (densely, or by one ``np.unique`` when its table is large next to the data) and its
    observed parent configurations (the others add nothing) scored by :func:`bnfisher.bn.scores.formulas.local_score`;
    equal to the compiled scores up to rounding.
    """
    n_rows = codes_t.shape[1]
    out = np.empty(children.size)
    for f in range(children.size):
        child, parents = int(children[f]), members[offsets[f]:offsets[f + 1]]
        r = int(cardinalities[child])
        key = np.zeros(n_rows, dtype=np.int64)
        span = 1
        for p in parents:
            c = int(cardinalities[p])
            if span > _COMPACT_ABOVE // c:  # renumber densely before int64 could overflow
                distinct, key = np.unique(key, return_inverse=True)
                key, span = key.reshape(-1).astype(np.int64), max(distinct.size, 1)
            key = key * c + codes_t[p]
            span *= c
        cell = key * r + codes_t[child]
        if weights.size:  # distinct rows with their multiplicities (whole numbers, exact in float64)
            table: np.ndarray = np.bincount(cell, weights=weights, minlength=span * r).reshape(span, r).astype(np.int64)
            table = table[table.any(axis=1)]
        elif span * r <= cells.size:
            table = np.bincount(cell, minlength=span * r).reshape(span, r)
            table = table[table.any(axis=1)]  # the observed parent configurations only
        else:  # the observed parent configurations, by one sort
            found, counts = np.unique(cell, return_counts=True)
            _, configuration = np.unique(found // r, return_inverse=True)
            table = np.zeros((int(configuration.max()) + 1 if found.size else 1, r))
            table[configuration.reshape(-1), found % r] = counts
        q = math.prod(int(cardinalities[p]) for p in parents)
        out[f] = local_score(table, SCORE_KINDS[kind], n_rows=n_total, ess=ess, n_configurations=q)
        out[f] += log_prior * parents.size
    return out


def _batch_cost(codes_t, cardinalities, children, members, *_args) -> float:
    """Estimated seconds of :func:`_numpy_batch` (measured on nursery and alarm samples, with a margin)."""
    return 4e-5 * children.size + 2.5e-9 * codes_t.shape[1] * (children.size + members.size)


@compiled(nogil=True, fallback="python", cost=lambda size: 1e-7 * size)
def _xlogx_values(size):  # pragma: no cover - compiled
    """``n log n`` for ``n < size`` (the same libm ``log`` compiled or not)."""
    xlogx = np.zeros(size)
    for n in range(1, size):
        xlogx[n] = n * math.log(n)
    return xlogx


@functools.lru_cache(maxsize=4)
def _xlogx_table(n_rows: int) -> np.ndarray:
    """``n log n`` for ``n`` up to ``min(n_rows, 2**20)``, read-only and kept between calls (a climb's batches)."""
    table = _xlogx_values(min(n_rows, _XLOGX_TABLE) + 1)
    table.flags.writeable = False
    return table


@compiled(nogil=True)
def _bit_family_score(bits, first, cardinalities, child, parents, groups, index, count, span, kind, ess, cells,
                      xlogx, n_total):  # pragma: no cover - compiled
    """Score one family from bit sets, ``groups`` holding (configuration of all parents but the last, child state)."""
    r, q, alpha = _family_constants(cardinalities, child, parents, kind, ess)
    last = parents[-1] if parents.size > 0 else -1
    c = cardinalities[last] if parents.size > 0 else 1
    bit_table(bits, first, last, c, groups, index, count, r, cells, span * c * r)
    return _penalised(_dense_value(cells, span * c, r, kind, alpha, xlogx), q, r, kind, n_total)


@compiled(nogil=True, fallback=_numpy_batch, cost=_batch_cost)
def _batch(codes_t, cardinalities, children, members, offsets, kind, ess, cells, log_prior, xlogx, weights,
           n_total, bits, first):  # pragma: no cover - compiled
    n_rows = codes_t.shape[1]
    base = np.zeros(n_rows, np.int64)
    key = np.empty(n_rows, np.int64)
    out = np.empty(children.size)
    base_span, base_first, base_size = 1, 0, -1  # base holds members[base_first:base_first + base_size]
    use_bits = bits.shape[0] > 0 and weights.size == 0
    capacity = min(GROUPS, max(16, GROUP_BYTES // (8 * max(bits.shape[1], 1)))) if use_bits else 0
    groups = np.empty((capacity, bits.shape[1]), np.uint64)
    index = np.empty(capacity, np.int64)
    group_child, group_first, group_size, group_count = -1, 0, -1, 0  # groups of members[group_first:...]
    for f in range(children.size):
        parents = members[offsets[f]:offsets[f + 1]]
        if use_bits:
            r = cardinalities[children[f]]
            span = np.int64(1)  # not the literal 1: one compiled _bit_family_score, not two
            for k in range(parents.size - 1):
                span *= cardinalities[parents[k]]
            c = cardinalities[parents[-1]] if parents.size > 0 else 1
            if span * r <= capacity and span * c * r <= min(BIT_CELLS, cells.size):
                same = group_child == children[f] and group_size == max(parents.size - 1, 0)
                for k in range(parents.size - 1):
                    if not same:
                        break
                    same = members[group_first + k] == parents[k]
                if not same:
                    group_count = groups_of(bits, first, cardinalities, parents[:max(parents.size - 1, 0)],
                                            children[f], groups, index)
                    group_child, group_first, group_size = children[f], offsets[f], max(parents.size - 1, 0)
                out[f] = _bit_family_score(bits, first, cardinalities, children[f], parents, groups, index,
                                           group_count, span, kind, ess, cells, xlogx, n_total)
                out[f] += log_prior * parents.size
                continue
        if parents.size > 0:
            prefix = parents[:-1]
            same = base_size == prefix.size
            for k in range(prefix.size):
                if not same:
                    break
                same = members[base_first + k] == prefix[k]
            if not same:  # consecutive families sharing all parents but the last share this pass
                base_span = _parent_key(codes_t, cardinalities, prefix, base)
                base_first, base_size = offsets[f], prefix.size
        out[f] = _family_score(codes_t, cardinalities, children[f], parents, base, base_span, kind, ess, key,
                               cells, xlogx, weights, n_total)
        out[f] += log_prior * parents.size
    return out


def _packed(families) -> tuple:
    """Return ``(child, parents)`` pairs as the arrays of :func:`packed_scores`: children, members, offsets."""
    children = np.array([child for child, _ in families], dtype=np.int64)
    parent_sets = [parents for _, parents in families]
    offsets = np.zeros(len(families) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parent_sets), dtype=np.int64, count=len(families)), out=offsets[1:])
    members = np.fromiter(itertools.chain.from_iterable(parent_sets), dtype=np.int64, count=int(offsets[-1]))
    return children, members, offsets


def family_scores(codes_t: np.ndarray, cardinalities: np.ndarray, families, *, score: str, ess: float,
                  log_prior: float = 0.0, n_threads: int | None = None,
                  weights: np.ndarray | None = None, bits: tuple | None = None) -> np.ndarray:
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
        Threads for a large batch (rows x families of at least
        :data:`bnfisher._utils.parallel.PARALLEL_WORK`; default: every core).
    weights : ndarray of int64, optional
        How often each column of ``codes_t`` occurs (distinct rows; see :func:`projected_scores`).
    bits : tuple, optional
        :func:`bnfisher.bn.scores._bits.row_bits` of complete ``codes_t``: families with small
        tables are counted from them (the same counts).

    Returns
    -------
    ndarray of shape (len(families),)
    """
    children, members, offsets = _packed(families)
    return packed_scores(codes_t, cardinalities, children, members, offsets, score=score, ess=ess,
                         log_prior=log_prior, n_threads=n_threads, weights=weights, bits=bits)


def _dense_cells(n_rows: int) -> int:
    """Cells of a dense count table for a family over ``n_rows`` rows (larger tables are counted by sorting)."""
    return min(DENSE_CELLS_PER_ROW * n_rows + 4096, _MAX_DENSE_CELLS)


def packed_scores(codes_t: np.ndarray, cardinalities: np.ndarray, children: np.ndarray, members: np.ndarray,
                  offsets: np.ndarray, *, score: str, ess: float, log_prior: float = 0.0,
                  n_threads: int | None = None, weights: np.ndarray | None = None,
                  bits: tuple | None = None) -> np.ndarray:
    """Return :func:`family_scores` of families given as arrays.

    Family ``f`` is ``children[f]`` with the parents ``members[offsets[f]:offsets[f + 1]]``
    (int64); consecutive families sharing all parents but the last share a pass over the rows.
    With ``weights`` (int64, one per column of ``codes_t``: distinct rows and how often each
    occurs) every family's whole table must have at most ``_dense_cells(weights.sum())`` cells.
    ``bits``: :func:`bnfisher.bn.scores._bits.row_bits` of ``codes_t`` (complete codes), for small tables.
    """
    kind = SCORE_KINDS.index(score)
    n_rows = codes_t.shape[1] if weights is None else int(weights.sum())
    weights = np.zeros(0, dtype=np.int64) if weights is None else weights
    dense_cells = _dense_cells(n_rows)
    # Dense count tables (scratch, one per thread): 32-bit counts unless the rows could overflow them.
    cell_type = np.int32 if n_rows < 2**31 else np.int64
    threads = min(threads_for(codes_t.shape[1] * (children.size + members.size), n_threads or -1), children.size)
    xlogx = _xlogx_table(n_rows)
    bits, first = bits if bits is not None else no_bits()
    if threads <= 1:
        return _batch(codes_t, cardinalities, children, members, offsets, kind, float(ess),
                      np.empty(dense_cells, cell_type), float(log_prior), xlogx, weights, n_rows, bits, first)
    bounds = np.linspace(0, children.size, threads + 1).astype(np.int64)

    def run(part):
        lo, hi = bounds[part], bounds[part + 1]
        return _batch(codes_t, cardinalities, children[lo:hi], members[offsets[lo]:offsets[hi]],
                      offsets[lo:hi + 1] - offsets[lo], kind, float(ess), np.empty(dense_cells, cell_type),
                      float(log_prior), xlogx, weights, n_rows, bits, first)

    return np.concatenate(list(map_threads(run, range(threads), n_jobs=threads)))
