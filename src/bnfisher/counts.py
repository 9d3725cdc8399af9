"""Count tables: the sufficient statistics behind fitting, scores and the kernel.

A *family* is a tuple of column indices ``(p_1, ..., p_m, c)``; its count table is
an array of shape ``(r_{p_1}, ..., r_{p_m}, r_c)`` (C order, the last index
fastest), i.e. the layout of a CPT.  Counting is one mixed-radix index per family
and one ``np.bincount`` -- never a Python loop over rows.

:class:`NumpyCounts` is the in-memory *counts provider*.  Anything with the same
``counts(families)`` method (for example a Dask-backed provider) can stand in for
it wherever count tables are needed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["configuration_index", "count_family", "count_block", "NumpyCounts"]

#: Largest dense count table (in cells) that is allocated.
MAX_TABLE_CELLS = 2**31


def configuration_index(codes: np.ndarray, columns: Sequence[int], cardinalities: Sequence[int],
                        out: np.ndarray | None = None) -> np.ndarray:
    """Mixed-radix index of each row's configuration of ``columns``.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        Integer codes.
    columns : sequence of int
        Column indices; the last one varies fastest (C order).
    cardinalities : sequence of int
        Cardinality of every column of ``codes``.
    out : ndarray of shape (n_rows,), dtype intp, optional
        Buffer to write into (saves an allocation per family).

    Returns
    -------
    ndarray of shape (n_rows,), dtype intp
        ``sum_k codes[:, columns[k]] * prod(cardinalities[columns[k+1:]])``; all zeros
        for an empty ``columns``.

    Examples
    --------
    >>> import numpy as np
    >>> configuration_index(np.array([[1, 2], [0, 1]]), [0, 1], [2, 3]).tolist()
    [5, 1]
    """
    if out is None:
        index = np.zeros(codes.shape[0], dtype=np.intp)
    else:
        index = out
        index[:] = 0
    for column in columns:
        # index = index * r + code, accumulated in place (no temporaries per column).
        index *= int(cardinalities[column])
        index += codes[:, column]
    return index


def _table_size(columns: Sequence[int], cardinalities: Sequence[int]) -> int:
    size = 1
    for column in columns:
        size *= int(cardinalities[column])
    if size > MAX_TABLE_CELLS:
        raise MemoryError(
            f"The count table over columns {tuple(columns)} would have {size} cells "
            f"(more than {MAX_TABLE_CELLS}); limit the number of parents (e.g. `max_parents`)."
        )
    return size


def count_family(
    codes: np.ndarray,
    columns: Sequence[int],
    cardinalities: Sequence[int],
    weights: np.ndarray | None = None,
    buffer: np.ndarray | None = None,
) -> np.ndarray:
    """Count the joint configurations of ``columns``.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        Integer codes.
    columns : sequence of int
        The family, parents first and the child last.
    cardinalities : sequence of int
        Cardinality of every column of ``codes``.
    weights : ndarray of shape (n_rows,), optional
        Row weights; counts are float64 sums of weights when given.
    buffer : ndarray of shape (n_rows,), dtype intp, optional
        Scratch space for the configuration index.

    Returns
    -------
    ndarray of shape ``tuple(cardinalities[c] for c in columns)``
        int64 counts (float64 with weights); a 0-d array holding the number of rows
        for an empty family.
    """
    shape = tuple(int(cardinalities[c]) for c in columns)
    size = _table_size(columns, cardinalities)
    index = configuration_index(codes, columns, cardinalities, out=buffer)
    counts = np.bincount(index, weights=weights, minlength=size)
    if weights is None:
        counts = counts.astype(np.int64, copy=False)
    return counts.reshape(shape)


def count_block(codes: np.ndarray, families: Sequence[Sequence[int]], cardinalities: Sequence[int],
                weights: np.ndarray | None = None) -> list:
    """Count tables of many families over one block of rows.

    The block-counting kernel shared by every counts provider: the in-memory one
    calls it on the whole array, the Dask one on every partition and sums.
    """
    # One index buffer for every family of the block: no large temporary per family (with
    # Dask's nanny setting MALLOC_TRIM_THRESHOLD_, such temporaries are returned to the OS and
    # re-faulted every time).
    buffer = np.empty(codes.shape[0], dtype=np.intp)
    return [count_family(codes, family, cardinalities, weights, buffer=buffer) for family in families]


class NumpyCounts:
    """In-memory counts provider over integer codes.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        Integer codes (not copied; must not be modified while in use).
    cardinalities : sequence of int
        Number of states of every column.
    weights : ndarray of shape (n_rows,), optional
        Row weights.

    Notes
    -----
    The provider protocol is ``counts(families) -> list of ndarray`` (one table per
    family, all from one pass over the data), ``n_rows`` and ``cardinalities``, and
    ``map_rows(function)`` for row-wise work that returns one result per block of
    rows.
    """

    def __init__(self, codes: np.ndarray, cardinalities: Sequence[int], weights: np.ndarray | None = None,
                 variables: Sequence[str] | None = None, states: dict | None = None):
        self.codes = codes
        self.cardinalities = np.asarray(cardinalities, dtype=np.intp)
        self.weights = weights
        self.variables = tuple(variables) if variables is not None else tuple(f"X{i}" for i in range(codes.shape[1]))
        self.states = states if states is not None else {v: tuple(range(int(r)))
                                                         for v, r in zip(self.variables, self.cardinalities)}

    @classmethod
    def from_encoded(cls, encoded) -> NumpyCounts:
        """Provider over an :class:`~bnfisher.encoding.EncodedData`."""
        return cls(encoded.codes, encoded.cardinalities, variables=encoded.variables, states=encoded.states)

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    def counts(self, families: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Count tables of ``families`` (each a sequence of column indices)."""
        return count_block(self.codes, families, self.cardinalities, self.weights)

    def map_rows(self, function, block_size: int = 1_000_000) -> list:
        """Apply ``function(codes_block)`` to consecutive blocks of rows."""
        return [function(self.codes[start : start + block_size]) for start in range(0, self.n_rows, block_size)]
