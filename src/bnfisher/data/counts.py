"""Count tables: the sufficient statistics behind fitting, scores and the kernel.

A *family* is a tuple of column indices ``(p_1, ..., p_m, c)``; its count table is
an array of shape ``(r_{p_1}, ..., r_{p_m}, r_c)`` (C order, the last index
fastest), i.e. the layout of a CPT.  :func:`count_family` counts one family by a
mixed-radix index and ``np.bincount``; :func:`count_block` counts many in one
compiled pass that reads each row once (``bnfisher.data._row_counts``).

Every module that needs data asks for a *counts provider* (:class:`CountsProvider`,
declared here once) and gets one from :func:`as_provider`, the single entry that
turns any accepted input -- a DataFrame, an array of codes, :class:`EncodedData`,
a Dask DataFrame, a Parquet or CSV path -- into a provider.  :class:`NumpyCounts`
is the in-memory provider; :class:`bnfisher.dask.DaskCounts` (optional extra
``[dask]``, imported only when Dask data arrives) the distributed one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, overload

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher._utils.validation import check_positive_int, check_random_state
from bnfisher.data._row_counts import ROW_PASS_CELLS, RUN_CELLS, check_codes, count_tables, dealt
from bnfisher.exceptions import DataError, ResourceError

__all__ = ['configuration_index', 'count_family', 'count_block', 'distinct_rows', 'n_configurations',
           'sample_positions']


#: Largest dense count table (in cells) that is allocated.
MAX_TABLE_CELLS = 2**31


#: Largest number of configurations a mixed-radix index may reach without overflowing int64.
_MAX_INDEX = 2**62


def configuration_index(codes: np.ndarray, columns: Sequence[int], cardinalities: Sequence[int] | np.ndarray,
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
    if n_configurations(cardinalities, columns) > _MAX_INDEX:
        raise ResourceError(f"Columns {tuple(columns)} have more joint configurations than a 64-bit index holds; "
                            "use fewer or smaller columns.")
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


def n_configurations(cardinalities: Sequence[int] | np.ndarray, columns: Sequence[int] | None = None) -> int:
    """Return the number of joint configurations ``prod(cardinalities[c] for c in columns)``, as a Python int.

    Python integers do not overflow, so the count of a large family is exact
    (callers compare it with a memory limit before allocating).

    Parameters
    ----------
    cardinalities : sequence of int
    columns : sequence of int, optional
        Default: all of ``cardinalities``.

    Returns
    -------
    int
        1 for no columns.

    Examples
    --------
    >>> n_configurations([2, 3, 4], [0, 2])
    8
    """
    size = 1
    for column in range(len(cardinalities)) if columns is None else columns:
        size *= int(cardinalities[column])
    return size


def _table_size(columns: Sequence[int], cardinalities: Sequence[int]) -> int:
    size = n_configurations(cardinalities, columns)
    check_allocation(8.0 * size, f"The count table over columns {tuple(columns)} ({size} cells)",
                     "limit the number of parents (e.g. `max_parents`) or bin variables into fewer states.")
    if size > MAX_TABLE_CELLS:
        raise ResourceError(
            f"The count table over columns {tuple(columns)} would have {size} cells "
            f"(more than {MAX_TABLE_CELLS}); limit the number of parents (e.g. `max_parents`)."
        )
    return size


def count_family(
    codes: np.ndarray,
    columns: Sequence[int],
    cardinalities: Sequence[int] | np.ndarray,
    weights: np.ndarray | None = None,
    buffer: np.ndarray | None = None,
    rows: np.ndarray | None = None,
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
    rows : ndarray of bool, shape (n_rows,), optional
        Count only these rows (the others may hold anything, -1 included).

    Returns
    -------
    ndarray of shape ``tuple(cardinalities[c] for c in columns)``
        int64 counts (float64 with weights); a 0-d array holding the number of rows
        for an empty family.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.data import count_family
    >>> codes = np.array([[0, 1], [1, 1], [1, 0]])
    >>> count_family(codes, [0, 1], [2, 2]).tolist()  # rows: column 0's state; columns: column 1's
    [[0, 1], [1, 1]]
    """
    shape = tuple(int(cardinalities[c]) for c in columns)
    size = _table_size(columns, cardinalities)
    index = configuration_index(codes, columns, cardinalities, out=buffer)
    if rows is not None:
        index, weights = index[rows], None if weights is None else weights[rows]
    counts = np.bincount(index, weights=weights, minlength=size)
    counts = counts.astype(np.int64 if weights is None else np.float64, copy=False)  # no rows: bincount gives ints
    return counts.reshape(shape)


def count_block(codes: np.ndarray, families: Sequence[Sequence[int]], cardinalities: Sequence[int] | np.ndarray,
                weights: np.ndarray | None = None, *, n_jobs: int | None = 1) -> list:
    """Count tables of many families over one block of rows.

    The block-counting kernel shared by every counts provider: the in-memory one
    calls it on the whole array, the Dask one on every partition and sums.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    families : sequence of sequence of int
    cardinalities : sequence of int
    weights : ndarray of shape (n_rows,), optional
    n_jobs : int or None, default=1
        Threads for a large block (rows x families of at least
        :data:`bnfisher._utils.parallel.PARALLEL_WORK`); the tables are the same.
        None or -1: every core.

    Returns
    -------
    list of ndarray
        One table per family, as :func:`count_family`.

    Raises
    ------
    ValueError
        When a code of a family's column lies outside ``0..r-1`` (e.g. a missing
        value's -1); the message names the row and the column.

    Notes
    -----
    Families of at most 16,384 cells are counted together in one pass that reads each
    row once (compiled; ``bnfisher.data._row_counts``), on runs of rows per thread;
    larger ones by a mixed-radix index and ``np.bincount`` each, split between threads.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.data import count_block
    >>> codes = np.array([[0, 1], [1, 1], [1, 0]])
    >>> [table.tolist() for table in count_block(codes, [(0,), (0, 1)], [2, 2])]
    [[1, 2], [[0, 1], [1, 1]]]
    """
    threads = threads_for(codes.shape[0] * len(families), -1 if n_jobs is None else n_jobs)
    sizes = [n_configurations(cardinalities, family) for family in families]
    # Families of few cells (integer codes) are counted in runs, one pass over the rows each; the others apart.
    one_pass = codes.dtype.kind in "iu"
    small = [k for k, size in enumerate(sizes) if one_pass and size <= ROW_PASS_CELLS]
    large = sorted(set(range(len(families))).difference(small))
    found: dict = {}
    for run in _runs(small, sizes):
        found.update(zip(run, count_tables(codes, [families[j] for j in run], cardinalities, weights,
                                           threads=threads)))
    if large:
        found.update(zip(large, _count_apart(codes, [families[k] for k in large], cardinalities, weights,
                                             min(threads, len(large)))))
    return [found[k] for k in range(len(families))]


def _runs(families: list, sizes: list) -> list:
    """Consecutive runs of ``families`` whose tables together hold at most ``RUN_CELLS`` cells."""
    runs: list = [[]]
    cells = 0
    for k in families:
        if runs[-1] and cells + sizes[k] > RUN_CELLS:
            runs.append([])
            cells = 0
        runs[-1].append(k)
        cells += sizes[k]
    return [run for run in runs if run]


def _count_apart(codes: np.ndarray, families: list, cardinalities, weights, threads: int) -> list:
    """One table per family by a mixed-radix index and ``np.bincount``, the families dealt to the threads."""
    check_codes(codes, [c for family in families for c in family], cardinalities)

    def count(part: list) -> list:
        # One index buffer for all: no large temporary per family (with Dask's nanny setting
        # MALLOC_TRIM_THRESHOLD_, such temporaries are returned to the OS and re-faulted every time).
        buffer = np.empty(codes.shape[0], dtype=np.intp)
        return [count_family(codes, family, cardinalities, weights, buffer=buffer) for family in part]

    return dealt(count, families, threads)


def sample_positions(n_rows: int, n: int, *, random_state=None) -> np.ndarray:
    """Return ``min(n, n_rows)`` sorted row positions drawn uniformly without replacement.

    The one sampling rule of every provider's :meth:`~CountsProvider.sample`.

    Parameters
    ----------
    n_rows, n : int
    random_state : None, int or Generator

    Returns
    -------
    ndarray of int
    """
    n = check_positive_int(n, "n", minimum=0)
    rng = check_random_state(random_state)
    return np.sort(rng.choice(n_rows, size=min(n, n_rows), replace=False))


#: Rows sorted at a time: the temporaries of a block (about 40 bytes a row) stay near 40 MB whatever the table.
BLOCK_ROWS = 2**20
#: Rows packed into keys at a time: a block's 256 kB key stays in the cache while every column is added.
PACK_ROWS = 2**15


@overload
def distinct_rows(codes: np.ndarray, cardinalities: Sequence[int] | np.ndarray | None = None, *,
                  with_inverse: Literal[True] = ..., n_jobs: int | None = -1
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def distinct_rows(codes: np.ndarray, cardinalities: Sequence[int] | np.ndarray | None = None, *,
                  with_inverse: bool, n_jobs: int | None = -1) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]: ...


def distinct_rows(codes, cardinalities=None, *, with_inverse=True, n_jobs=-1):
    """Distinct rows of ``codes``, numbered by first occurrence, with the row-to-distinct map and multiplicities.

    Rows are packed into 64-bit words by mixed radix (as few words as the
    cardinalities allow), so the sort runs on one or a few integer keys rather than
    on whole rows.  Missing values (code -1) are a state of their own here.  Blocks of
    :data:`BLOCK_ROWS` rows are reduced on their own (on every core) and their distinct
    rows merged, so the working memory beyond the result is that of a block and of the
    distinct rows, not of the table.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        Integer codes, -1 for missing.
    cardinalities : sequence of int, optional
        Default: ``codes.max(axis=0) + 1``.
    with_inverse : bool, default=True
        Whether to return each row's distinct row (8 bytes a row).
    n_jobs : int or None, default=-1
        Threads for the blocks (-1: every core); the result does not depend on it.

    Returns
    -------
    first : ndarray of int, shape (n_distinct,)
        Row position of each distinct row's first occurrence (increasing).
    inverse : ndarray of int, shape (n_rows,), or None
        Distinct row of every row: ``codes[first][inverse] == codes`` (None unless
        ``with_inverse``).
    multiplicity : ndarray of int, shape (n_distinct,)

    Raises
    ------
    DataError
        When a column holds a code at or beyond its cardinality.

    Examples
    --------
    >>> import numpy as np
    >>> first, inverse, counts = distinct_rows(np.array([[1, 0], [0, 1], [1, 0]]))
    >>> first.tolist(), inverse.tolist(), counts.tolist()
    ([0, 1], [0, 1, 0], [2, 1])
    """
    codes = np.asarray(codes)
    n_rows = codes.shape[0]
    if n_rows == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, (empty if with_inverse else None), empty
    cardinalities = _checked_cardinalities(codes, cardinalities)
    # A column with missing cells has one value more (-1, shifted to 0): often one 64-bit word for all columns.
    shift = (codes.min(axis=0) < 0).astype(int)
    words = _words([int(r) + int(s) for r, s in zip(cardinalities, shift)], shift)
    if n_rows <= BLOCK_ROWS:
        first, inverse, multiplicity = _distinct_keys(_pack(codes, words))
        return first, (inverse if with_inverse else None), multiplicity
    # Each block: its distinct rows' keys, their first rows and copies, and (in place) its rows' local numbers.
    starts = range(0, n_rows, BLOCK_ROWS)
    inverse = np.empty(n_rows, dtype=np.intp) if with_inverse else None

    def reduce(start: int) -> tuple:
        keys = _pack(codes[start: start + BLOCK_ROWS], words)
        first, local, multiplicity = _distinct_keys(keys)
        if inverse is not None:
            inverse[start: start + local.size] = local
        return keys[first], first + start, multiplicity

    threads = threads_for(n_rows * codes.shape[1], n_jobs)
    keys, first, multiplicity = (list(part) for part in zip(*map_threads(reduce, starts, n_jobs=threads)))
    # The blocks' distinct rows in block order, each block's by first occurrence: the first occurrence of a row
    # among them is its first occurrence in the table, so merging numbers the rows as one sort of the table would.
    merged_first, merged, _ = _distinct_keys(np.concatenate(keys))
    offsets = np.concatenate([[0], np.cumsum([part.size for part in first])])
    if inverse is not None:
        for start, offset in zip(starts, offsets):
            block = inverse[start: start + BLOCK_ROWS]
            block[:] = merged[offset + block]
    copies = np.bincount(merged, weights=np.concatenate(multiplicity), minlength=merged_first.size)
    return np.concatenate(first)[merged_first], inverse, copies.astype(np.intp)


def _checked_cardinalities(codes: np.ndarray, cardinalities):
    """``cardinalities``, checked against the largest code of each column (default: the largest code + 1)."""
    largest = codes.max(axis=0)
    if cardinalities is None:
        return largest + 1
    beyond = largest >= np.asarray(cardinalities)
    if np.any(beyond):
        column = int(np.argmax(beyond))
        raise DataError(f"Column {column} holds code {int(largest[column])}, beyond its cardinality "
                        f"{int(cardinalities[column])}.")
    return cardinalities


def row_keys(codes: np.ndarray, cardinalities: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Return packed 64-bit keys of the rows whose lexicographic order is that of the rows' codes.

    Mixed-radix words (as :func:`distinct_rows` sorts them): sorting by the keys, first word
    first, sorts the rows by their codes, first column first (missing cells, -1, first).

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_variables)
    cardinalities : sequence of int, optional
        Default: ``codes.max(axis=0) + 1``.

    Returns
    -------
    ndarray of int64, shape (n_rows, n_words)

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[1, 0], [0, 2], [0, -1]])
    >>> keys = row_keys(codes, [2, 3])
    >>> np.lexsort(keys.T[::-1]).tolist() == np.lexsort(codes.T[::-1]).tolist()
    True
    """
    codes = np.asarray(codes)
    if cardinalities is None:
        cardinalities = codes.max(axis=0, initial=0) + 1
    shift = (codes.min(axis=0, initial=0) < 0).astype(int)
    return _pack(codes, _words([int(r) + int(s) for r, s in zip(cardinalities, shift)], shift))


def _words(radix: list[int], shift) -> list[list[tuple[int, int, int]]]:
    """``(column, radix, shift)`` of the columns packed into each 64-bit word: as many as fit, in order."""
    words: list = [[]]
    width = 1
    for column, r in enumerate(radix):
        if words[-1] and width * r > _MAX_INDEX:
            words.append([])
            width = 1
        words[-1].append((column, r, int(shift[column])))
        width *= r
    return words


def _pack(codes: np.ndarray, words: list) -> np.ndarray:
    """Mixed-radix keys of the rows, one int64 column per word.

    Built :data:`PACK_ROWS` rows at a time: a block's key stays in the cache while every column is added to it
    (on 10^6 x 37 codes about 1.6x faster than whole columns, which stream 8 MB through memory per column).
    """
    n_rows = codes.shape[0]
    keys = np.empty((n_rows, len(words)), dtype=np.int64)
    by_column = codes.T if codes.flags.f_contiguous else np.ascontiguousarray(codes.T)  # each column contiguous
    buffer = np.empty(min(n_rows, PACK_ROWS), dtype=np.int64)
    for start in range(0, n_rows, PACK_ROWS):
        key = buffer[:min(PACK_ROWS, n_rows - start)]
        for w, columns in enumerate(words):
            key[:] = 0
            offset = 0  # the shifts, added once: sum of (code + shift) x place = sum of code x place + shift terms
            for column, r, shift in columns:
                key *= r
                key += by_column[column, start:start + key.size]
                offset = offset * r + shift
            if offset:
                key += offset
            keys[start:start + key.size, w] = key
    return keys


def _unpack(keys: np.ndarray, columns: list, dtype) -> np.ndarray:
    """Return the rows whose one-word keys :func:`_pack` made (``columns``: the word's ``(column, radix, shift)``)."""
    rows = np.empty((keys.size, len(columns)), dtype=dtype, order="F")  # each column written contiguously
    rest = keys.copy()
    for column, r, shift in reversed(columns):  # the last column is the least significant digit
        quotient = rest // r  # NumPy divides by a scalar fast; np.divmod was 10x slower here
        rest -= quotient * r
        rest -= shift
        rows[:, column] = rest
        rest = quotient
    return np.ascontiguousarray(rows)


def _distinct_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`distinct_rows` of packed keys: first rows, each row's distinct row, copies; by first occurrence."""
    n_rows = keys.shape[0]
    # One stable sort over the packed words (lexicographic); runs of equal keys are the distinct rows.
    order = np.lexsort(keys.T[::-1]) if keys.shape[1] > 1 else np.argsort(keys[:, 0], kind="stable")
    ordered = keys[order]
    starts = np.ones(n_rows, dtype=bool)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    del ordered
    group = np.cumsum(starts) - 1
    inverse = np.empty(n_rows, dtype=np.intp)
    inverse[order] = group
    del group
    boundaries = np.flatnonzero(starts)
    first = order[boundaries]  # stable sort: the smallest row of each run
    multiplicity = np.diff(np.append(boundaries, n_rows))
    # Renumber by first occurrence, so distinct row u's first row precedes distinct row u + 1's.
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse], multiplicity[order]
