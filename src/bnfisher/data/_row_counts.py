"""Count tables of many families in one pass over the rows (the private engine of ``count_block``).

A pass per family (a mixed-radix index, then ``np.bincount``) reads the codes once per family:
over 37 families of 10^7 rows, the 370 MB of codes 37 times (each column a strided read of the
whole array) and an 80 MB index twice per family, and two threads shared the memory bandwidth
that limited one.  Here the rows are read once, a block at a time: while a block sits in cache,
every family's cells are found and counted, into tables of a few thousand cells.  Integer counts
are exact in any order, so threads take contiguous runs of rows, each with its own tables, summed
at the end: the same tables on any number of threads.  Weighted counts (float sums) keep one
thread per family, so each cell adds its weights in row order, as ``np.bincount`` does.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.parallel import map_threads

__all__ = ["ROW_PASS_CELLS", "RUN_CELLS", "check_codes", "count_tables", "dealt", "packed_families"]

#: Largest table (in cells) counted by the row pass; larger ones do not sit in cache and take a pass of their own.
ROW_PASS_CELLS = 1 << 14

#: Cells of the tables counted in one pass (four copies: 2 MiB of int64 per thread); more families take more passes.
RUN_CELLS = 1 << 16

#: Rows taken at a time (about 150 kB of 37 int8 columns: in cache while every family is counted).
BLOCK = 4096


def packed_families(families, cardinalities) -> tuple:
    """Return the families' columns, each column's stride and cardinality, and their tables' offsets (flat arrays).

    Parameters
    ----------
    families : sequence of sequence of int
        Parents first, child last (the last column varies fastest: C order).
    cardinalities : sequence of int

    Returns
    -------
    members, offsets, strides, states, table_offsets : ndarray of int64
        Family ``f`` holds ``members[offsets[f]:offsets[f + 1]]`` and its table the cells
        ``table_offsets[f]:table_offsets[f + 1]`` of a flat array.
    """
    cards = [int(c) for c in cardinalities]
    members = np.fromiter((c for family in families for c in family), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(family) for family in families])]).astype(np.int64)
    states = np.array([cards[c] for c in members], dtype=np.int64)
    strides = np.ones(members.size, dtype=np.int64)
    sizes = np.ones(len(families), dtype=np.int64)
    for f in range(len(families)):
        stride = 1
        for k in range(offsets[f + 1] - 1, offsets[f] - 1, -1):  # the last column fastest
            strides[k] = stride
            stride *= int(states[k])
        sizes[f] = stride
    table_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return members, offsets, strides, states, table_offsets


def _numpy_count(codes, lo, hi, members, offsets, strides, states, table_offsets, weights, out):
    """Return :func:`_count`'s result with NumPy (its fallback): an index and a ``np.bincount`` per family."""
    codes, weights = codes[lo:hi], weights[lo:hi] if weights.size else weights
    columns, first = np.unique(members, return_index=True)
    block = codes[:, columns]  # the families' columns, each checked against its states by two reductions
    if block.size and (block.min() < 0 or (block.max(axis=0) >= states[first]).any()):
        return lo + int(np.argmax(((block < 0) | (block >= states[first])).any(axis=1)))
    index = np.empty(codes.shape[0], dtype=np.int64)
    for f in range(offsets.size - 1):
        index[:] = 0
        for k in range(offsets[f], offsets[f + 1]):  # index = index * r + code (the last column fastest)
            index *= states[k]
            index += codes[:, members[k]]
        first, last = table_offsets[f], table_offsets[f + 1]
        out[first:last] += np.bincount(index, weights=weights if weights.size else None, minlength=last - first)
    return -1


@compiled(nogil=True)
def _first_bad_row(codes, start, m, members, states, first, last):  # pragma: no cover - compiled
    """Return the first row of ``start:start+m`` with a code outside its column's states (members first:last)."""
    for t in range(m):
        for k in range(first, last):
            if np.uint64(np.int64(codes[start + t, members[k]])) >= np.uint64(states[k]):
                return start + t
    return -1


@compiled(nogil=True, inline="always")
def _add_interleaved(four, cell, m, size):  # pragma: no cover - compiled
    """Count ``cell[:m]`` into four interleaved copies of the tables (``size`` cells each), four rows at a time."""
    stop = m - m % 4
    for t in range(0, stop, 4):
        four[cell[t]] += 1
        four[size + cell[t + 1]] += 1
        four[2 * size + cell[t + 2]] += 1
        four[3 * size + cell[t + 3]] += 1
    for t in range(stop, m):
        four[cell[t]] += 1


@compiled(nogil=True, fallback=_numpy_count,
          cost=lambda codes, lo, hi, members, offsets, *_: 5e-9 * (hi - lo) * (offsets.size - 1 + members.size))
def _count(codes, lo, hi, members, offsets, strides, states, table_offsets, weights,
           out):  # pragma: no cover - compiled
    """Add the cell of every family of rows ``lo:hi`` to ``out`` (a row's weight, or 1); return -1, or a bad row.

    Rows are taken :data:`BLOCK` at a time (in cache): each family's cells of the block are found
    column by column, then counted.  Counts go to four interleaved copies of the tables, so that
    consecutive rows in the same cell do not wait on each other's increment; weights are added in
    row order, as ``np.bincount`` adds them.  A code outside ``0..r-1`` stops the pass before its
    block is counted (the caller raises): no cell outside a table is written.  The rows are given
    by bounds, not as a slice, which would lose a column-major array's layout (and its speed).
    """
    size = out.size
    weighted = weights.size > 0
    cell = np.empty(BLOCK, np.int64)
    four = np.zeros(0 if weighted else 4 * size, np.int64)
    for start in range(lo, hi, BLOCK):
        m = min(BLOCK, hi - start)
        for f in range(offsets.size - 1):
            cell[:m] = table_offsets[f]
            bad = False
            for k in range(offsets[f], offsets[f + 1]):
                column, stride, r = members[k], strides[k], np.uint64(states[k])
                for t in range(m):
                    code = np.int64(codes[start + t, column])
                    bad |= np.uint64(code) >= r  # negative codes too
                    cell[t] += code * stride
            if bad:
                return _first_bad_row(codes, start, m, members, states, offsets[f], offsets[f + 1])
            if weighted:
                for t in range(m):
                    out[cell[t]] += weights[start + t]
            else:
                _add_interleaved(four, cell, m, size)
    if not weighted:
        for c in range(size):
            out[c] += four[c] + four[size + c] + four[2 * size + c] + four[3 * size + c]
    return -1


def check_codes(codes: np.ndarray, columns, cardinalities) -> None:
    """Raise when a code of ``columns`` lies outside its column's ``0..r-1``, naming the first such row.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    columns : sequence of int
    cardinalities : sequence of int

    Raises
    ------
    ValueError
        Naming the row, the column and the code.
    """
    columns = sorted({int(c) for c in columns})
    if not columns or not codes.shape[0]:
        return
    states = np.array([int(cardinalities[c]) for c in columns])
    outside = (codes[:, columns] < 0) | (codes[:, columns] >= states)
    if outside.any():
        row, k = np.unravel_index(int(np.argmax(outside)), outside.shape)
        column, r = columns[k], int(states[k])
        raise ValueError(f"Row {row} holds code {int(codes[row, column])} in column {column}, outside its {r} "
                         f"states (0..{r - 1}); count complete, encoded codes (missing values are -1: drop or "
                         "marginalize those rows).")


def dealt(function, items: list, threads: int) -> list:
    """Return ``function(part)``'s results for the round-robin parts of ``items``, one part a thread, in order.

    Parameters
    ----------
    function : callable
        Takes a list of items and returns a list of one result per item.
    items : list
    threads : int

    Returns
    -------
    list
        One result per item, in the order of ``items``.
    """
    parts = [items[start::threads] for start in range(threads)]
    out: list = [None] * len(items)
    for start, results in zip(range(threads), map_threads(function, parts, n_jobs=threads)):
        out[start::threads] = results
    return out


def count_tables(codes: np.ndarray, families, cardinalities, weights: np.ndarray | None, *, threads: int) -> list:
    """Return the count table of every family (each with at most :data:`ROW_PASS_CELLS` cells), rows read once.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables), integer
    families : sequence of sequence of int
    cardinalities : sequence of int
    weights : ndarray of shape (n_rows,) or None
    threads : int
        Threads: runs of rows without weights (the same integer tables), families with.

    Returns
    -------
    list of ndarray
        int64 tables (float64 with weights), shaped by the families' cardinalities.

    Raises
    ------
    ValueError
        When a code lies outside its column's ``0..r-1`` (a missing value's -1, or codes not
        encoded with these cardinalities); the message names the row and the column.
    """
    members, offsets, strides, states, table_offsets = packed_families(families, cardinalities)
    n_rows = codes.shape[0]
    # The kernel adds into float64 tables either way (one compiled version, not two: exact below 2**53 rows);
    # integer counts are returned as int64.
    dtype = np.int64 if weights is None else np.float64
    weights = np.zeros(0) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    if weights.size and threads > 1:  # each family in one thread: its cells add their weights in row order
        return dealt(lambda part: count_tables(codes, part, cardinalities, weights, threads=1), list(families),
                     threads)
    bounds = np.linspace(0, n_rows, max(threads, 1) + 1).astype(np.int64)

    def run(part: int) -> tuple:
        out = np.zeros(int(table_offsets[-1]))
        bad = _count(codes, bounds[part], bounds[part + 1], members, offsets, strides, states, table_offsets,
                     weights, out)
        return out, int(bad)

    results = list(map_threads(run, range(bounds.size - 1), n_jobs=bounds.size - 1))
    if any(row >= 0 for _, row in results):
        check_codes(codes, members, cardinalities)
    total = results[0][0]
    for out, _ in results[1:]:
        total += out
    total = total.astype(dtype, copy=False)
    return [total[table_offsets[f]:table_offsets[f + 1]].reshape([int(states[k]) for k in
                                                                  range(offsets[f], offsets[f + 1])])
            for f in range(len(families))]
