"""Many pair tables at once, as the Gram matrix of the rows' one-hot codes (private).

Chow-Liu's tree asks for the count table of every pair of columns: ``m (m - 1) / 2``
tables, so counting row by row costs ``n m^2 / 2`` increments.  The same tables are the
blocks of ``H^T H``, where ``H`` is the ``n x S`` one-hot matrix of the codes (``S`` the
total number of states): block ``(a, b)`` holds ``#{rows: a = x, b = y}`` in cell
``(x, y)``.  A missing code (-1) is a row of zeros in its column's block, so each pair is
counted over the rows observed on both, the available-case tables.  ``H`` is built a
block of rows at a time (never ``n x S`` whole) and multiplied by BLAS in float32, exact
for the at most 8,192 rows of a block; the blocks' products are summed as int64.  On
10,000 rows of andes (223 columns, 446 states, 24,753 pairs) this took 0.09 s against
0.36 s for the compiled row pass, and as long as it on alarm's 37 columns
(``benchmarks/pair_counts.py``, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["pair_tables"]

#: The Gram matrix is used for at most this many states in all (an int64 S x S of 32 MB).
MAX_STATES = 2048
#: Rows per block of the one-hot matrix: at most 2**22 cells (16 MB of float32, 32 MB of float64 with weights), at
#: most 8,192 rows (exact float32 sums).
BLOCK_CELLS = 1 << 22
MAX_BLOCK_ROWS = 8192


def pair_tables(codes: np.ndarray, families: Sequence[Sequence[int]], cardinalities: np.ndarray, *,
                weights: np.ndarray | None = None, missing: bool) -> list | None:
    """Return the count tables of ``families`` from the one-hot Gram matrix, or None when it does not pay.

    It pays when every family is a pair of two different columns and there are at least a
    quarter as many pairs as states in their columns (e.g. every pair of a table's columns).

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    families : sequence of (int, int)
    cardinalities : ndarray of int
    weights : ndarray of shape (n_rows,), optional
        Whole numbers of copies of each row (distinct rows with their multiplicities): the
        sums are then exact in float64, the same in any order.  Other weights return None.
    missing : bool
        Whether a code of -1 (missing) is allowed; the pair is then counted over the rows
        observed on both columns.

    Returns
    -------
    list of ndarray or None
        Tables of shape ``(r_a, r_b)``, C-contiguous (copies): int64, or float64 with
        ``weights``, as the row pass gives them.  None when the families are not all pairs,
        the Gram matrix does not pay, the weights are not whole numbers below 2**53 in all,
        or a code lies outside its column's states (the row pass then names it).
    """
    if not families or any(len(family) != 2 or family[0] == family[1] for family in families):
        return None
    columns = np.unique(np.asarray(families, dtype=np.int64))
    cards = np.asarray(cardinalities, dtype=np.int64)[columns]
    n_states = int(cards.sum())
    if (n_states > MAX_STATES or 4 * len(families) < n_states or not _whole(weights)
            or not _in_range(codes, columns, cards, missing)):
        return None
    first = np.concatenate([[0], np.cumsum(cards)])
    gram = _gram(codes, columns, cards, first, weights)
    where = {int(c): k for k, c in enumerate(columns)}
    tables = []
    for a, b in families:
        i, j = where[int(a)], where[int(b)]
        tables.append(np.ascontiguousarray(gram[first[i]:first[i + 1], first[j]:first[j + 1]]))
    return tables


def _in_range(codes: np.ndarray, columns: np.ndarray, cards: np.ndarray, missing: bool) -> bool:
    """Whether every code of ``columns`` lies in ``0..r-1`` (or is -1 when ``missing``)."""
    if not codes.shape[0]:
        return True
    picked = codes if columns.size == codes.shape[1] else codes[:, columns]  # every column: no copy
    return bool((picked.max(axis=0) < cards).all() and picked.min() >= (-1 if missing else 0))


def _whole(weights: np.ndarray | None) -> bool:
    """Whether ``weights`` is None or whole numbers >= 0 summing below 2**53 (exact float64 sums)."""
    if weights is None:
        return True
    weights = np.asarray(weights, dtype=np.float64)
    return bool(np.all(weights >= 0) and np.all(weights == np.floor(weights)) and weights.sum() < 2.0**53)


def _gram(codes: np.ndarray, columns: np.ndarray, cards: np.ndarray, first: np.ndarray,
          weights: np.ndarray | None) -> np.ndarray:
    """``H^T W H`` (S x S) of the one-hot codes of ``columns``, a block of rows at a time.

    Without weights: float32 products (exact for a block's at most 8,192 rows) summed as
    int64.  With whole-number weights: float64 throughout (exact below 2**53).
    """
    n_rows, n_states = codes.shape[0], int(first[-1])
    total = np.zeros((n_states, n_states), dtype=np.int64 if weights is None else np.float64)
    block = max(1, min(MAX_BLOCK_ROWS, BLOCK_CELLS // max(n_states, 1)))
    onehot = np.empty((min(block, n_rows), n_states), dtype=np.float32 if weights is None else np.float64)
    for start in range(0, n_rows, block):
        part = codes[start:start + block]
        rows = onehot[:part.shape[0]]
        for k, column in enumerate(columns):
            np.equal(part[:, column, None], np.arange(cards[k]), out=rows[:, first[k]:first[k + 1]],
                     casting="unsafe")
        if weights is None:
            total += (rows.T @ rows).astype(np.int64)
        else:
            total += (rows * np.asarray(weights[start:start + block], dtype=np.float64)[:, None]).T @ rows
    return total
