"""The expected feature map of rows with missing cells, assembled as a CSR matrix without sorting its non-zeros."""

from __future__ import annotations

import numpy as np

from bnfisher._lazy import sparse as sp
from bnfisher._memory import check_allocation

__all__ = ["expected_feature_map"]


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
    blocks = []  # (family, rows, configurations, summed feature rows, entries per row), by (row, config.)
    per_row = np.zeros(n_rows, dtype=np.int64)
    for i, (rows, cells, cell_weights) in enumerate(weights):
        d = int(tables[i].shape[1])
        if d == 0 or rows.size == 0:
            continue
        r = int(cardinalities[i])
        configurations = tables[i].shape[0] // r
        key = np.asarray(rows, dtype=np.int64) * configurations + np.asarray(cells) // r
        order = np.argsort(key, kind="stable")  # runs that are already sorted cost little
        key = key[order]
        values = tables[i].take(np.asarray(cells)[order], axis=0)
        values *= cell_weights[order, None]
        change = key[1:] != key[:-1]
        if not change.all():
            group = np.concatenate([[0], np.cumsum(change)])
            values = np.column_stack([np.bincount(group, weights=values[:, k], minlength=int(group[-1]) + 1)
                                      for k in range(d)])
            key = key[np.concatenate([[True], change])]
        rows = key // configurations
        count = np.bincount(rows, minlength=n_rows)
        blocks.append((i, rows, key - rows * configurations, values, count))
        per_row += count * d
    indptr = np.concatenate([[0], np.cumsum(per_row)])
    nnz = int(indptr[-1])
    index_dtype = np.int32 if max(nnz, n_features) < 2**31 else np.int64
    check_allocation((8.0 + np.dtype(index_dtype).itemsize) * nnz, f"The expected feature map of {n_rows} rows",
                     "embed the rows in blocks, or use `mean_embedding` / `mmd`.")
    data = np.empty(nnz)
    indices = np.empty(nnz, dtype=index_dtype)
    filled = indptr[:-1].copy()  # next free slot of every row
    for i, rows, configurations, values, count in blocks:
        d = values.shape[1]
        first = np.cumsum(count) - count  # a row's first entry of this family
        position = filled[rows] + (np.arange(rows.size) - first[rows]) * d
        columns = (block_offsets[i] + configurations * d).astype(index_dtype)
        for k in range(d):
            data[position + k] = values[:, k]
            indices[position + k] = columns + k
        filled += count * d
    matrix = sp.csr_matrix((data, indices, indptr.astype(index_dtype)), shape=(n_rows, n_features))
    matrix.has_sorted_indices = True
    return matrix
