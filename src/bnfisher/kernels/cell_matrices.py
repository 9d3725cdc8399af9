"""The sparse matrices behind :class:`~bnfisher.kernels.columns.KernelColumns`, over a kernel's active cells.

A cell is one (family, parent configuration, child state); the active families' cells are numbered family by family
(``offsets``).  ``P`` maps cells to features (row ``c`` holds ``F_f[c]`` in the block of its configuration), and
``M = P P^T`` holds, per family and configuration, the ``r x r`` Gram of its cells' features (Theorem 1 of
Leppä-aho et al. 2020: two cells of different configurations or families are orthogonal).
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import sparse as sp
from bnfisher._utils.memory import check_allocation
from bnfisher.data.counts import distinct_rows
from bnfisher.data.schema import EncodedData


def distinct_units(codes: np.ndarray, cards, *, distinct: bool) -> tuple:
    """Return (first, inverse, multiplicity, units) of the units the columns are kept for.

    The distinct rows (``units``, Fortran order, read by column), or every row a unit of its own when ``distinct``
    (a repeated row is then a unit of its own: still exact).
    """
    n_rows = codes.shape[0]
    if distinct:
        first = np.arange(n_rows, dtype=np.intp)
        return first, first, np.ones(n_rows, dtype=np.int64), np.asfortranarray(codes)
    first, inverse, multiplicity = distinct_rows(codes, cards)
    units = np.empty((first.size, codes.shape[1]), dtype=codes.dtype, order="F")
    for column in range(codes.shape[1]):
        np.take(codes[:, column], first, out=units[:, column])
    return first, inverse, multiplicity, units


def cell_feature_matrix(kernel, active: tuple, sizes: list):
    """Return ``P``, cells x features (CSR)."""
    blocks = []
    for i, size in zip(active, sizes):
        d = kernel.block_width(i)
        columns = kernel.feature_columns(i, np.arange(size))
        blocks.append(sp.csr_matrix((kernel.cell_features(i).ravel(), columns.ravel(), np.arange(size + 1) * d),
                                    shape=(size, kernel.n_features_)))
    return sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, kernel.n_features_))


def cell_gram_matrix(kernel, active: tuple, offsets: np.ndarray):
    """Return ``M = P P^T``, cells x cells (CSR).

    Per family and configuration the ``r x r`` Gram ``F_j F_j^T`` (batched BLAS), cell ``c``'s row holding the
    cells of its configuration.
    """
    sizes = np.diff(offsets).tolist()
    cards = kernel.network.cardinalities
    check_allocation(8.0 * sum(size * int(cards[i]) for i, size in zip(active, sizes)),
                     "The within-configuration cell inner products", "limit the parents (`max_parents`) or use "
                     "variables with fewer states.")
    if not active:
        return sp.csr_matrix((0, 0))
    grams, columns, lengths = [], [], []
    for a, (i, size) in enumerate(zip(active, sizes)):
        r = int(cards[i])
        table = kernel.cell_features(i).reshape(size // r, r, -1)
        grams.append(np.matmul(table, table.transpose(0, 2, 1)).ravel())
        cells = np.arange(size).reshape(size // r, 1, r) + offsets[a]
        columns.append(np.broadcast_to(cells, (size // r, r, r)).ravel())
        lengths.append(np.full(size, r))
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(lengths))])
    n_cells = int(offsets[-1])
    return sp.csr_matrix((np.concatenate(grams), np.concatenate(columns), indptr), shape=(n_cells, n_cells))


def incomplete_cell_weights(kernel, encoded: EncodedData, units: np.ndarray, incomplete: np.ndarray, active: tuple,
                            offsets: np.ndarray, batches: np.ndarray | None):
    """Return the posterior cell weights of the incomplete units, incomplete units x cells (CSR).

    The marginalized kernel of Sec. 8: one sparse row per unit, computed per batch of units (``batches``: unit
    bounds; default one batch).
    """
    n_cells = int(offsets[-1])
    if not (incomplete.size and active):  # (no active family: no feature, nothing to weigh)
        return sp.csr_matrix((incomplete.size, n_cells))
    bounds = np.searchsorted(incomplete, [0, units.shape[0]] if batches is None else batches)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi == lo:
            continue
        subset = EncodedData(units[incomplete[lo:hi]], encoded.variables, encoded.states, schema=encoded.schema)
        triples = kernel.cell_weights(subset)
        parts.append(sp.coo_matrix(
            (np.concatenate([triples[i][2] for i in active]),
             (np.concatenate([triples[i][0] for i in active]),
              np.concatenate([offsets[a] + triples[i][1] for a, i in enumerate(active)]))),
            shape=(hi - lo, n_cells)))
    return sp.vstack(parts, format="csr")
