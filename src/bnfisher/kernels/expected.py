"""The expected feature map of rows with missing cells, assembled as a CSR matrix without sorting its non-zeros."""

from __future__ import annotations

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.lazy import sparse as sp
from bnfisher._utils.memory import check_allocation

__all__ = ["expected_feature_map"]


def _numpy_fill(position, columns, values, data, indices):
    """:func:`_fill` in NumPy: one scatter per feature of the block."""
    for k in range(values.shape[1]):
        data[position + k] = values[:, k]
        indices[position + k] = columns + k


def _fill_cost(position, columns, values, data, indices) -> float:
    """Estimated seconds of :func:`_numpy_fill` (about 15 ns per non-zero, measured on alarm)."""
    return 1.5e-8 * values.size


@compiled(nogil=True, fallback=_numpy_fill, cost=_fill_cost)
def _fill(position, columns, values, data, indices):  # pragma: no cover - compiled
    """Write entry ``e``'s feature row at ``data[position[e]:]``, its columns from ``columns[e]`` on."""
    for e in range(position.shape[0]):
        slot = position[e]
        for k in range(values.shape[1]):
            data[slot + k] = values[e, k]
            indices[slot + k] = columns[e] + k


def expected_feature_map(tables: list, cardinalities, block_offsets: np.ndarray, n_features: int, weights: list,
                         n_rows: int):
    """Return ``E[Phi(Z) | x] = sum_cells weight * Phi(cell)`` of every row as a CSR matrix.

    Parameters
    ----------
    tables : list of ndarray of shape (q_i r_i, d_i)
        Every family's feature rows per cell (:meth:`bnfisher.kernels.FamilyKernel.cell_features`).
    cardinalities : sequence of int
        ``r_i`` of every family's child.
    block_offsets : ndarray of int
        First column of every family's block.
    n_features : int
    weights : list of (rows, cells, weights)
        One triple per family (:func:`bnfisher.bn.inference.family_cell_weights`).
    n_rows : int

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_rows, n_features)
        Canonical: sorted indices, no duplicates; int32 indices when they fit.

    Raises
    ------
    ResourceError
        When the matrix would not fit in memory.
    """
    # Per family, the weighted feature rows of a row's cells that share a parent configuration (the same d_i
    # columns) are summed; the CSR arrays are then filled in place, rows in order and families in column
    # order, so no sort of the non-zeros is needed.
    blocks = []  # (family, pieces, entries per row); a piece's rows are sorted, and no row is in two pieces
    per_row = np.zeros(n_rows, dtype=np.int64)
    for i, (rows, cells, cell_weights) in enumerate(weights):
        d = int(tables[i].shape[1])
        if d == 0 or rows.size == 0:
            continue
        pieces = _pieces(tables[i], int(cardinalities[i]), np.asarray(rows, dtype=np.int64), np.asarray(cells),
                         np.asarray(cell_weights, dtype=np.float64), n_rows)
        count = sum(np.bincount(piece[0], minlength=n_rows) for piece in pieces)
        blocks.append((i, pieces, count))
        per_row += count * d
    indptr = np.concatenate([[0], np.cumsum(per_row)])
    nnz = int(indptr[-1])
    index_dtype = np.int32 if max(nnz, n_features) < 2**31 else np.int64
    check_allocation((8.0 + np.dtype(index_dtype).itemsize) * nnz, f"The expected feature map of {n_rows} rows",
                     "embed the rows in blocks, or use `mean_embedding` / `mmd`.")
    data = np.empty(nnz)
    indices = np.empty(nnz, dtype=index_dtype)
    filled = indptr[:-1].copy()  # next free slot of every row
    for i, pieces, count in blocks:
        d = tables[i].shape[1]
        for rows, configurations, values, once in pieces:
            position = filled[rows]
            if not once:  # rows with several entries: each after the row's earlier ones
                first = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
                position += (np.arange(rows.size) - first[rows]) * d
            _fill(position, (block_offsets[i] + configurations * d).astype(index_dtype), values, data, indices)
        filled += count * d
    matrix = sp.csr_matrix((data, indices, indptr.astype(index_dtype)), shape=(n_rows, n_features))
    matrix.has_sorted_indices = True
    return matrix


def _pieces(table: np.ndarray, r: int, rows: np.ndarray, cells: np.ndarray, weights: np.ndarray,
            n_rows: int) -> list:
    """Split one family's entries into pieces ``(rows, configurations, summed feature rows, one per row)``.

    Each piece is sorted by row and configuration, with one entry per (row, configuration), and no row is in two
    pieces.  A leading run of distinct, increasing rows (one cell each: how :func:`family_cell_weights` lists the rows
    where the family is observed) is a piece as it is; the rest is sorted and its cells of one configuration
    summed.
    """
    configurations = table.shape[0] // r
    descending = np.flatnonzero(rows[1:] <= rows[:-1])
    head = rows.size if descending.size == 0 else int(descending[0]) + 1
    if head < rows.size:
        seen = np.zeros(n_rows, dtype=bool)
        seen[rows[:head]] = True
        if seen[rows[head:]].any():
            head = 0  # the rest shares rows with the run: sort everything
    pieces = []
    if head:
        values = table.take(cells[:head], axis=0)
        values *= weights[:head, None]
        pieces.append((rows[:head], cells[:head] // r, values, True))
    if head < rows.size:
        key = rows[head:] * configurations + cells[head:] // r
        order = np.argsort(key, kind="stable")
        key = key[order]
        values = table.take(cells[head:][order], axis=0)
        values *= weights[head:][order, None]
        change = key[1:] != key[:-1]
        if not change.all():
            group = np.concatenate([[0], np.cumsum(change)])
            values = np.column_stack([np.bincount(group, weights=values[:, k], minlength=int(group[-1]) + 1)
                                      for k in range(table.shape[1])])
            key = key[np.concatenate([[True], change])]
        rows = key // configurations
        pieces.append((rows, key - rows * configurations, values, rows.size < 2 or bool((rows[1:] > rows[:-1]).all())))
    return pieces
