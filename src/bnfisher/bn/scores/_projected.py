"""Families counted on the distinct rows of a few columns, with their multiplicities (private engine).

The order search asks, for each variable, for every subset of at most 3 of its 8 best
single parents: families that all lie among about 9 columns.  Those columns hold far
fewer distinct rows than the table (300 of alarm's 5,000 rows in the median), so each
group's rows are reduced to the distinct ones by one hashed pass, and its families are
counted on them by the family kernel (:mod:`bnfisher.bn.scores._family`), each cell
incremented by a row's count.  The count tables are those of all rows, so the scores are
the same, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher.bn.scores._family import (
    SCORE_KINDS,
    _batch,
    _batch_cost,
    _dense_cells,
    _packed,
    _xlogx_table,
    packed_scores,
)

__all__ = ["projected_scores"]


def _numpy_project(codes_t, columns, cardinalities):
    """Return :func:`_project`'s distinct rows and weights with NumPy (its fallback; the rows in another order)."""
    key = np.zeros(codes_t.shape[1], dtype=np.int64)
    for column in columns:
        key = key * cardinalities[column] + codes_t[column]
    _, first, weights = np.unique(key, return_index=True, return_counts=True)
    return np.ascontiguousarray(codes_t[columns][:, first]), weights.astype(np.int64)


def _project_cost(codes_t, columns, *_args) -> float:
    """Estimated seconds of :func:`_numpy_project` (a sort of the keys dominates)."""
    return 2e-8 * codes_t.shape[1] * (columns.size + 5)


@compiled(nogil=True, fallback=_numpy_project, cost=_project_cost)
def _project(codes_t, columns, cardinalities):  # pragma: no cover - compiled
    """Return the distinct rows of ``codes_t[columns]`` (one column each, by first occurrence) and their counts.

    One pass over the rows with an open-addressing hash table of the rows' mixed-radix keys (the
    caller makes sure the product of the columns' cardinalities fits an int64).
    """
    n_rows = codes_t.shape[1]
    bits = 1
    while (1 << bits) < 2 * n_rows:
        bits += 1
    slot_mask = (1 << bits) - 1
    slots = np.full(1 << bits, -1, np.int64)
    keys = np.empty(n_rows, np.int64)
    first = np.empty(n_rows, np.int64)
    weights = np.zeros(n_rows, np.int64)
    distinct = 0
    shift = np.uint64(64 - bits)
    for t in range(n_rows):
        key = np.int64(0)
        for k in range(columns.size):
            key = key * cardinalities[columns[k]] + codes_t[columns[k], t]
        slot = np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> shift)  # Fibonacci hashing
        while True:
            found = slots[slot]
            if found < 0:
                slots[slot] = distinct
                keys[distinct] = key
                first[distinct] = t
                weights[distinct] = 1
                distinct += 1
                break
            if keys[found] == key:
                weights[found] += 1
                break
            slot = (slot + 1) & slot_mask
    rows = np.empty((columns.size, distinct), codes_t.dtype)
    for k in range(columns.size):
        column = codes_t[columns[k]]
        for d in range(distinct):
            rows[k, d] = column[first[d]]
    return rows, weights[:distinct].copy()


def _projected_batch_cost(codes_t, cardinalities, columns, column_offsets, children, members, *_args) -> float:
    """Estimated seconds of :func:`_projected_batch` uncompiled: its projections and families, on their fallbacks."""
    return (_project_cost(codes_t, columns) + 5e-6 * column_offsets.size
            + _batch_cost(codes_t, cardinalities, children, members))


@compiled(nogil=True, fallback="python", cost=_projected_batch_cost)  # uncompiled, its steps run their fallbacks
def _projected_batch(codes_t, cardinalities, columns, column_offsets, children, members, offsets, family_offsets,
                     kind, ess, cells, log_prior, xlogx):  # pragma: no cover - compiled
    """Score groups of families, each counted on the distinct rows of its columns (local indices in the families).

    Group ``g`` owns the columns ``columns[column_offsets[g]:column_offsets[g + 1]]`` and the
    families ``family_offsets[g]:family_offsets[g + 1]``, whose variables are positions among them.
    """
    out = np.empty(children.size)
    no_bits, no_first = np.zeros((0, 0), np.uint64), np.zeros(1, np.int64)
    for g in range(column_offsets.size - 1):
        lo, hi = family_offsets[g], family_offsets[g + 1]
        if hi > lo:
            own = columns[column_offsets[g]:column_offsets[g + 1]]
            rows, weights = _project(codes_t, own, cardinalities)
            scores = _batch(rows, cardinalities[own], children[lo:hi], members[offsets[lo]:offsets[hi]],
                            offsets[lo:hi + 1] - offsets[lo], kind, ess, cells, log_prior, xlogx, weights,
                            codes_t.shape[1], no_bits, no_first)
            for f in range(hi - lo):  # element by element: a slice assignment compiles numba's string-formatting
                out[lo + f] = scores[f]  # error path (about 1.5 s in a cold process)
    return out


def projected_scores(codes_t: np.ndarray, cardinalities: np.ndarray, groups, *, score: str, ess: float,
                     log_prior: float = 0.0, n_threads: int | None = None) -> np.ndarray:
    """Return :func:`family_scores` of groups of families, each group counted on the distinct rows of a few columns.

    The rows of a group's columns are reduced to the distinct ones, each with its count, in one
    pass; the group's families are then counted over the distinct rows, their cells incremented
    by the counts.  The count tables are those of all rows, so the scores are the same, bit for
    bit (the cells are summed in the same order).  A family is scored on all rows instead when its
    table is too large to count densely or its group's keys would overflow an int64.

    Parameters
    ----------
    codes_t : ndarray of shape (n_variables, n_rows)
    cardinalities : ndarray of int64
    groups : sequence of (families, columns)
        ``families``: (child, parents) pairs whose variables all lie in ``columns``.
    score, ess, log_prior, n_threads
        As :func:`family_scores`.

    Returns
    -------
    ndarray
        The scores of all the groups' families, group after group.
    """
    n_variables, n_rows = codes_t.shape
    children, members, offsets = _packed([family for families, _ in groups for family in families])
    sizes = np.diff(offsets)
    group_columns = [sorted(set(map(int, columns))) for _, columns in groups]
    columns = np.array([c for own in group_columns for c in own], dtype=np.int64)
    column_offsets = np.concatenate([[0], np.cumsum([len(own) for own in group_columns])]).astype(np.int64)
    group = np.repeat(np.arange(len(groups)), [len(families) for families, _ in groups])
    # log2 of each family's table size (with a margin: a table at the limit is counted on all rows, to the same score)
    logs = np.log2(cardinalities.astype(np.float64))
    within = np.concatenate([[0.0], np.cumsum(logs[members])])
    fits = logs[children] + within[offsets[1:]] - within[offsets[:-1]] <= math.log2(_dense_cells(n_rows)) - 1e-6
    key_bits = np.add.reduceat(logs[columns], column_offsets[:-1]) if columns.size else np.zeros(0)
    fits &= (key_bits < 62 - 1e-6)[group]  # the group's mixed-radix keys must fit an int64
    out = np.empty(children.size)
    if fits.any():
        # Each variable's position among its group's columns: ``group * n + column`` is sorted across the groups.
        positions = np.repeat(np.arange(len(groups)), np.diff(column_offsets)) * n_variables + columns

        def local(variables, owners):
            return np.searchsorted(positions, owners * n_variables + variables) - column_offsets[owners]

        chosen, kept = np.flatnonzero(fits), np.repeat(fits, sizes)
        local_children = local(children[chosen], group[chosen])
        local_members = local(members[kept], np.repeat(group, sizes)[kept])
        local_offsets = np.concatenate([[0], np.cumsum(sizes[chosen])]).astype(np.int64)
        family_offsets = np.searchsorted(group[chosen], np.arange(len(groups) + 1)).astype(np.int64)
        kind, xlogx = SCORE_KINDS.index(score), _xlogx_table(n_rows)
        cell_type = np.int32 if n_rows < 2**31 else np.int64
        work = n_rows * (column_offsets.size + chosen.size)
        threads = min(threads_for(work, n_threads or -1), len(groups))
        # Parts of about equal numbers of families, whole groups each.
        bounds = np.searchsorted(family_offsets, np.linspace(0, chosen.size, threads + 1))
        bounds[0], bounds[-1] = 0, len(groups)

        def run(part):
            first, stop = int(bounds[part]), int(bounds[part + 1])
            lo, hi = family_offsets[first], family_offsets[stop]
            return _projected_batch(codes_t, cardinalities, columns, column_offsets[first:stop + 1],
                                    local_children[lo:hi], local_members[local_offsets[lo]:local_offsets[hi]],
                                    local_offsets[lo:hi + 1] - local_offsets[lo],
                                    family_offsets[first:stop + 1] - lo, kind, float(ess),
                                    np.empty(_dense_cells(n_rows), cell_type), float(log_prior), xlogx)

        out[chosen] = np.concatenate([np.zeros(0)] + list(map_threads(run, range(threads), n_jobs=threads)))
    if not fits.all():
        others, kept = np.flatnonzero(~fits), np.repeat(~fits, sizes)
        out[others] = packed_scores(codes_t, cardinalities, children[others], members[kept],
                                    np.concatenate([[0], np.cumsum(sizes[others])]).astype(np.int64), score=score,
                                    ess=ess, log_prior=log_prior, n_threads=n_threads)
    return out
