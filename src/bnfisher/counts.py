"""Count tables: the sufficient statistics behind fitting, scores and the kernel.

A *family* is a tuple of column indices ``(p_1, ..., p_m, c)``; its count table is
an array of shape ``(r_{p_1}, ..., r_{p_m}, r_c)`` (C order, the last index
fastest), i.e. the layout of a CPT.  Counting is one mixed-radix index per family
and one ``np.bincount`` -- never a Python loop over rows.

Every module that needs data asks for a *counts provider* (:class:`CountsProvider`,
declared here once) and gets one from :func:`as_provider`, the single entry that
turns any accepted input -- a DataFrame, an array of codes, :class:`EncodedData`,
a Dask DataFrame, a Parquet or CSV path -- into a provider.  :class:`NumpyCounts`
is the in-memory provider; :class:`bnfisher.scale.DaskCounts` (optional extra
``[dask]``, imported only when Dask data arrives) the distributed one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .encoding import EncodedData, Schema
from .exceptions import DataError, OptionTypeError, ResourceError

__all__ = ["CountsProvider", "NumpyCounts", "as_provider", "configuration_index", "count_family", "count_block",
           "distinct_rows", "n_configurations", "sample_positions", "in_memory"]

#: Largest dense count table (in cells) that is allocated.
MAX_TABLE_CELLS = 2**31
#: Largest number of configurations a mixed-radix index may reach without overflowing int64.
_MAX_INDEX = 2**62


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


def n_configurations(cardinalities: Sequence[int], columns: Sequence[int] = None) -> int:
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
    from ._memory import check_allocation

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

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    families : sequence of sequence of int
    cardinalities : sequence of int
    weights : ndarray of shape (n_rows,), optional

    Returns
    -------
    list of ndarray
        One table per family, as :func:`count_family`.
    """
    # One index buffer for every family of the block: no large temporary per family (with
    # Dask's nanny setting MALLOC_TRIM_THRESHOLD_, such temporaries are returned to the OS and
    # re-faulted every time).
    buffer = np.empty(codes.shape[0], dtype=np.intp)
    return [count_family(codes, family, cardinalities, weights, buffer=buffer) for family in families]


@runtime_checkable
class CountsProvider(Protocol):
    """What every consumer of data needs: count tables, rows block by block, samples.

    A provider is the one interface between data and the rest of bnfisher (scores,
    structure learning, CPTs, MMD, selection, tests).  Get one with
    :func:`as_provider`.

    Attributes
    ----------
    schema : Schema
        Variables (column order of every family index), states, bin edges.
    variables : tuple
        ``schema.variables``.
    states : mapping
        ``schema.states``.
    cardinalities : ndarray of int
        Number of states per variable.
    n_rows : int
        Number of rows.
    """

    schema: Schema
    variables: tuple
    cardinalities: np.ndarray

    @property
    def states(self):
        """``{variable: tuple of labels}``, as ``schema.states``."""

    @property
    def n_rows(self) -> int:
        """Number of rows."""

    def counts(self, families: Sequence[Sequence[int]]) -> list:
        """Return the count tables of ``families`` (tuples of column indices, child last), from one pass.

        Parameters
        ----------
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
            One table per family, shaped by the family's cardinalities.
        """

    def map_rows(self, function: Callable) -> list:
        """Apply ``function(codes_block)`` to consecutive blocks of rows; the list of results, in row order.

        Parameters
        ----------
        function : callable
            ``function(codes_block) -> object``.

        Returns
        -------
        list
        """

    def sample(self, n: int, *, random_state=None):
        """Return about ``n`` uniformly sampled rows (without replacement) as a DataFrame of labels.

        Parameters
        ----------
        n : int
        random_state : None, int or Generator

        Returns
        -------
        DataFrame
            Its index holds the rows' positions in the whole data.
        """


class NumpyCounts:
    """In-memory counts provider over integer codes.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        Integer codes (not copied; must not be modified while in use).
    schema : Schema
        Variables and states of the columns of ``codes``.
    weights : ndarray of shape (n_rows,), optional
        Row weights (counts become sums of weights).
    block_size : int, default=1_000_000
        Rows per block in :meth:`map_rows`.
    missing : {"error", "available-case"}, default="error"
        Codes of -1 (missing values) raise, or are skipped family by family.

    Examples
    --------
    >>> import numpy as np
    >>> provider = as_provider(np.array([[0, 1], [1, 1], [0, 0]]))
    >>> provider.counts([(0, 1)])[0].tolist()
    [[1, 1], [0, 1]]
    """

    def __init__(self, codes: np.ndarray, schema: Schema, *, weights: np.ndarray | None = None,
                 block_size: int = 1_000_000, missing: str = "error"):
        from ._validation import check_option

        if not isinstance(schema, Schema):
            raise OptionTypeError(f"`schema` must be a Schema; got {type(schema).__name__}.")
        self.missing = check_option(missing, "missing", ("error", "available-case"))
        if missing == "error" and codes.shape[0] and codes.min() < 0:
            raise DataError("The data has missing values (code -1); count tables need complete rows. Use "
                            "`bnfisher.inference.expected_counts`, missing='available-case', or a method that "
                            "marginalizes them.")
        self.codes = codes
        self.schema = schema
        self.variables = schema.variables
        self.cardinalities = schema.cardinalities
        self.weights = weights
        self.block_size = block_size

    @classmethod
    def from_encoded(cls, encoded: EncodedData) -> NumpyCounts:
        """Return a provider over an :class:`~bnfisher.encoding.EncodedData`.

        Parameters
        ----------
        encoded : EncodedData

        Returns
        -------
        NumpyCounts
        """
        return cls(encoded.codes, encoded.schema)

    @property
    def states(self):
        """``{variable: tuple of labels}``."""
        return self.schema.states

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.codes.shape[0])

    @property
    def encoded(self) -> EncodedData:
        """The codes with their schema, as :class:`~bnfisher.encoding.EncodedData` (no copy)."""
        return EncodedData(self.codes, self.variables, dict(self.schema.states), schema=self.schema)

    def counts(self, families: Sequence[Sequence[int]]) -> list:
        """Return the count tables of ``families`` (each a sequence of column indices, child last).

        With ``missing="available-case"`` each family is counted over the rows where
        all of its variables are observed (its table then sums to fewer than ``n_rows``).

        Parameters
        ----------
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
        """
        if self.missing == "error":
            return count_block(self.codes, families, self.cardinalities, self.weights)
        tables = []
        for family in families:
            complete = (self.codes[:, list(family)] >= 0).all(axis=1) if len(family) else slice(None)
            weights = None if self.weights is None else self.weights[complete]
            tables.append(count_family(self.codes[complete], family, self.cardinalities, weights))
        return tables

    def map_rows(self, function: Callable) -> list:
        """Apply ``function(codes_block)`` to consecutive blocks of rows; results in row order.

        Parameters
        ----------
        function : callable

        Returns
        -------
        list
        """
        return [function(self.codes[start : start + self.block_size])
                for start in range(0, self.n_rows, self.block_size)]

    def sample(self, n: int, *, random_state=None):
        """``min(n, n_rows)`` rows drawn uniformly without replacement, as a DataFrame of labels.

        The DataFrame's index holds the rows' positions in the data.

        Parameters
        ----------
        n : int
        random_state : None, int or Generator

        Returns
        -------
        DataFrame
        """
        import pandas as pd

        rows = sample_positions(self.n_rows, n, random_state=random_state)
        codes = self.codes[rows]
        frame = pd.DataFrame({v: pd.Categorical.from_codes(codes[:, i], categories=pd.Index(list(self.states[v]),
                                                                                                dtype=object))
                              for i, v in enumerate(self.variables)}, index=rows)
        return frame

    def __repr__(self) -> str:
        return f"NumpyCounts(n_rows={self.n_rows}, n_variables={len(self.variables)})"


_PROTOCOL = ("schema", "variables", "cardinalities", "states", "n_rows", "counts", "map_rows", "sample")


def _is_provider(data) -> bool:
    """Whether ``data`` has every member of :class:`CountsProvider` (read statically: no property runs)."""
    import inspect

    missing = object()
    return not isinstance(data, EncodedData) and all(
        inspect.getattr_static(data, name, missing) is not missing for name in _PROTOCOL)


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
    from ._validation import check_positive_int, check_random_state

    n = check_positive_int(n, "n", minimum=0)
    rng = check_random_state(random_state)
    return np.sort(rng.choice(n_rows, size=min(n, n_rows), replace=False))


def in_memory(data) -> bool:
    """Return whether ``data`` is rows in memory (a DataFrame, codes, EncodedData), not a provider, Dask or a path.

    Parameters
    ----------
    data : object

    Returns
    -------
    bool
    """
    from .scale import is_distributed

    if isinstance(data, NumpyCounts):
        return True  # its rows are in memory (``data.encoded``)
    return not (_is_provider(data) or is_distributed(data) or _is_path(data))


def _is_path(data) -> bool:
    return isinstance(data, (str, os.PathLike)) or (
        isinstance(data, (list, tuple)) and len(data) > 0 and all(isinstance(p, (str, os.PathLike)) for p in data))


def as_provider(data, schema: Schema | None = None, *, engine: str = "auto", missing: str = "error") -> CountsProvider:
    """Turn any accepted input into a counts provider.

    Parameters
    ----------
    data : DataFrame, ndarray of int, EncodedData, provider, Dask DataFrame, or path(s)
        A DataFrame holds labels; an integer array holds codes whose columns follow
        ``schema.variables`` (the network's declared variable order); a provider
        is returned as it is (checked against ``schema``); a Dask DataFrame is
        counted by Dask workers; a path is a CSV/Parquet table (read into memory,
        or by Dask with ``engine="dask"``; a list of paths needs Dask).
    schema : Schema, optional
        The fitted schema to encode with (a network's ``schema``).  Default: learned
        from ``data`` itself.
    engine : {"auto", "numpy", "dask"}, default="auto"
        ``"auto"``: Dask for Dask data, in memory for everything else.
    missing : {"error", "allow"}, default="error"
        ``"allow"``: missing cells are kept (available-case counts; a Dask provider
        also gives expected counts under a network).

    Returns
    -------
    CountsProvider

    Raises
    ------
    SchemaError
        When the data does not match ``schema``.
    OptionTypeError
        For an input of another type.

    Examples
    --------
    >>> import pandas as pd
    >>> provider = as_provider(pd.DataFrame({"a": ["x", "y", "x"]}))
    >>> provider.n_rows, provider.states["a"]
    (3, ('x', 'y'))
    """
    from ._validation import check_option

    check_option(engine, "engine", ("auto", "numpy", "dask"))
    check_option(missing, "missing", ("error", "allow"))
    if schema is not None and not isinstance(schema, Schema):
        raise OptionTypeError(f"`schema` must be a bnfisher Schema; got {type(schema).__name__}.")
    if _is_provider(data):
        if schema is not None:
            _check_provider_schema(data, schema)
        return data
    from .scale import is_distributed  # the Dask shell; it imports no Dask until Dask data arrives

    if is_distributed(data) or engine == "dask" or (_is_path(data) and not isinstance(data, (str, os.PathLike))):
        from .scale import DaskCounts

        return DaskCounts(data, schema=schema, missing=missing)
    if _is_path(data):
        from .io import read_table

        data = read_table(data, na_values=schema.na_values if schema is not None else None)
    if missing == "allow":
        if schema is None:
            raise OptionTypeError("missing='allow' needs the `schema` to encode with.")
        encoded = schema.encode(data, missing="allow")
        return NumpyCounts(encoded.codes, encoded.schema, missing="available-case")
    encoded = (schema.encode(data) if schema is not None else _encode_new(data))
    return NumpyCounts.from_encoded(encoded)


def _encode_new(data) -> EncodedData:
    import pandas as pd

    if isinstance(data, EncodedData):
        return data
    if isinstance(data, (pd.DataFrame, pd.Series)):
        frame = data.to_frame() if isinstance(data, pd.Series) else data
        return Schema.from_data(frame).encode(frame)
    if isinstance(data, np.ndarray) or isinstance(data, (list, tuple)):
        return Schema.from_codes(data).encode(data)
    raise OptionTypeError(f"Cannot use data of type {type(data).__name__}: pass a DataFrame, an array of integer "
                          "codes, a Dask DataFrame or a table path.")


def _check_provider_schema(provider, schema: Schema) -> None:
    from .exceptions import SchemaError

    for v in schema.variables:
        if v not in provider.variables:
            raise SchemaError(f"Column {v!r} required by the model is absent from the data "
                              f"(it has {list(provider.variables)}).")
        if tuple(provider.states[v]) != tuple(schema.states[v]):
            raise SchemaError(f"Column {v!r} has states {tuple(provider.states[v])} in the data but "
                              f"{tuple(schema.states[v])} in the model; build the provider with the model's schema.")


def distinct_rows(codes: np.ndarray, cardinalities: Sequence[int] | None = None):
    """Distinct rows of ``codes``, numbered by first occurrence, with the row-to-distinct map and multiplicities.

    Rows are packed into 64-bit words by mixed radix (as few words as the
    cardinalities allow), so the sort runs on one or a few integer keys rather than
    on whole rows.  Missing values (code -1) are a state of their own here.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        Integer codes, -1 for missing.
    cardinalities : sequence of int, optional
        Default: ``codes.max(axis=0) + 1``.

    Returns
    -------
    first : ndarray of int, shape (n_distinct,)
        Row position of each distinct row's first occurrence (increasing).
    inverse : ndarray of int, shape (n_rows,)
        Distinct row of every row: ``codes[first][inverse] == codes``.
    multiplicity : ndarray of int, shape (n_distinct,)

    Examples
    --------
    >>> import numpy as np
    >>> first, inverse, counts = distinct_rows(np.array([[1, 0], [0, 1], [1, 0]]))
    >>> first.tolist(), inverse.tolist(), counts.tolist()
    ([0, 1], [0, 1, 0], [2, 1])
    """
    codes = np.asarray(codes)
    n_rows, n_variables = codes.shape
    if n_rows == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, empty
    largest = codes.max(axis=0)
    if cardinalities is None:
        cardinalities = largest + 1
    elif np.any(largest >= np.asarray(cardinalities)):
        column = int(np.argmax(largest >= np.asarray(cardinalities)))
        raise DataError(f"Column {column} holds code {int(largest[column])}, beyond its cardinality "
                        f"{int(cardinalities[column])}.")
    radix = [int(r) + 1 for r in cardinalities]  # + 1: the missing code -1 shifts to 0
    words, current, width = [], [], 1
    for column, r in enumerate(radix):
        if current and width * r > _MAX_INDEX:
            words.append(current)
            current, width = [], 1
        current.append(column)
        width *= r
    words.append(current)
    keys = np.empty((n_rows, len(words)), dtype=np.int64)
    for w, columns in enumerate(words):
        key = keys[:, w]
        key[:] = 0
        for column in columns:
            key *= radix[column]
            key += codes[:, column].astype(np.int64) + 1
    # One stable sort over the packed words (lexicographic); runs of equal keys are the distinct rows.
    order = np.lexsort(keys.T[::-1]) if len(words) > 1 else np.argsort(keys[:, 0], kind="stable")
    ordered = keys[order]
    starts = np.ones(n_rows, dtype=bool)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    del ordered
    group = np.cumsum(starts) - 1
    inverse = np.empty(n_rows, dtype=np.intp)
    inverse[order] = group
    boundaries = np.flatnonzero(starts)
    first = order[boundaries]  # stable sort: the smallest row of each run
    multiplicity = np.diff(np.append(boundaries, n_rows))
    # Renumber by first occurrence, so distinct row u's first row precedes distinct row u + 1's.
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse], multiplicity[order]
