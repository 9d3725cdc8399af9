"""Counts providers: the one seam between data and the core (a DataFrame, codes, Dask data or a file).

:func:`as_provider` resolves any input once; everything inside takes a provider or encoded data and trusts it.
Backends outside the core (the Dask shell) plug in through :func:`register_provider`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from bnfisher._utils.validation import check_option
from bnfisher.data._pair_gram import pair_tables
from bnfisher.data.counts import count_block, count_family, sample_positions
from bnfisher.data.io import read_table
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, SchemaError

__all__ = ["Backend", "CountsProvider", "ExpectedCountsProvider", "GroupingProvider", "NumpyCounts", "as_provider",
           "backend_for", "in_memory", "register_provider"]


@runtime_checkable
class CountsProvider(Protocol):
    """What every consumer of data needs: count tables, rows block by block, samples.

    A provider is the one interface between data and the rest of bnfisher (scores,
    structure learning, CPTs, MMD, selection, tests).  Get one with
    :func:`as_provider`.  Two optional capabilities are declared apart:
    :class:`GroupingProvider` (distinct rows and all rows of data beyond memory) and
    :class:`ExpectedCountsProvider` (expected count tables where cells are missing).

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

    Examples
    --------
    >>> provider = bf.as_provider(data, network.schema)
    >>> provider.n_rows, len(provider.counts([(0,)])[0])
    (648, 3)
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


@runtime_checkable
class GroupingProvider(Protocol):
    """An optional capability of a :class:`CountsProvider` of data beyond memory: grouping it where it lies.

    The permutation tests, the family tests and the pooled search ask for it with
    ``isinstance(provider, GroupingProvider)`` (:class:`bnfisher.dask.DaskCounts` has it).

    Attributes
    ----------
    distinct, rows : method
        The capability's two methods (below).
    """

    def distinct(self, *, max_rows: int | None = None) -> tuple | None:
        """Return the distinct rows' codes and their multiplicities, or None beyond ``max_rows`` distinct rows.

        Parameters
        ----------
        max_rows : int, optional

        Returns
        -------
        (ndarray of int, ndarray of int64) or None
        """

    def rows(self):
        """Return every row, in order, as a DataFrame of labels (for data known to fit in memory).

        Returns
        -------
        DataFrame
        """


@runtime_checkable
class ExpectedCountsProvider(Protocol):
    """An optional capability of a :class:`CountsProvider` that keeps missing cells (``missing == "allow"``).

    Its expected count tables under a network (an E-step where the data lies) give the kernel's
    mean embedding of rows with missing cells (paper Sec. 8).

    Attributes
    ----------
    missing : str
        ``"allow"`` when missing cells are kept.
    """

    missing: str

    def expected_counts(self, network, families: Sequence[Sequence[int]]) -> list:
        """Return the expected count tables of ``families`` under ``network``.

        Parameters
        ----------
        network : BayesianNetwork
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
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
        if not isinstance(schema, Schema):
            raise OptionTypeError(f"`schema` must be a Schema; got {type(schema).__name__}.")
        self.missing = check_option(missing, "missing", ("error", "available-case"))
        if missing == "error" and codes.shape[0] and codes.min() < 0:
            raise DataError("The data has missing values (code -1); count tables need complete rows. Use "
                            "`bnfisher.bn.inference.expected_counts`, missing='available-case', or a method that "
                            "marginalizes them.")
        self.codes = codes
        self.schema = schema
        self.variables = schema.variables
        self.cardinalities = schema.cardinalities
        self.weights = weights
        self.block_size = block_size
        self._holes: np.ndarray | None = None  # the columns with missing cells, found at the first count

    @classmethod
    def from_encoded(cls, encoded: EncodedData) -> NumpyCounts:
        """Return a provider over an :class:`~bnfisher.data.EncodedData`.

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
        """The codes with their schema, as :class:`~bnfisher.data.EncodedData` (no copy)."""
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
        # Many pairs (Chow-Liu's): the one-hot Gram matrix, the same tables (integer counts, or whole-number weights).
        tables = pair_tables(self.codes, families, self.cardinalities, weights=self.weights,
                             missing=self.missing != "error")
        if tables is not None:
            return tables
        if self.missing == "error":
            return count_block(self.codes, families, self.cardinalities, self.weights, n_jobs=None)
        if self._holes is None:  # one scan of the codes, not one per pass (hill climbing makes dozens)
            self._holes = (self.codes < 0).any(axis=0)
        holes = self._holes
        if not holes.any():
            return count_block(self.codes, families, self.cardinalities, self.weights, n_jobs=None)
        buffer = np.empty(self.n_rows, dtype=np.intp)
        tables = []
        for family in families:
            rows = None
            if holes[list(family)].any():
                rows = (self.codes[:, list(family)] >= 0).all(axis=1)
            tables.append(count_family(self.codes, family, self.cardinalities, self.weights, buffer=buffer,
                                       rows=rows))
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


@dataclass(frozen=True)
class Backend:
    """A registered counts-provider backend: how the core reaches data it does not hold in memory.

    Attributes
    ----------
    name : str
        The ``engine`` name that selects it (``as_provider(data, engine=name)``).
    detects : callable
        ``detects(data) -> bool``: whether ``data`` belongs to this backend (checked
        without importing the backend's library).
    provider : callable
        ``provider(data, schema, missing, **options) -> CountsProvider``; options
        (``bins``, ``na_values``) learn the schema when ``schema`` is None.
    embed : callable
        ``embed(kernel, data)``: the kernel's feature map of ``data``, blockwise.
    paths : bool
        Whether the backend reads lists of paths (a single path is read into memory otherwise).
    windows : callable, optional
        ``windows(data, schema, *, time, window) -> (list, str)``: the data cut into
        windows in one pass, each held where it lies (:class:`~bnfisher.data.windows.HeldRows`;
        what :func:`bnfisher.drift` needs of data beyond memory).
    pooled_rows : callable, optional
        ``pooled_rows(kernel, X, Y) -> PooledRows``: two samples' distinct rows held in hash
        buckets where they lie (:class:`~bnfisher.comparison.null.PooledRows`), so that the
        permutation test draws its null there and the client holds no rows.  ``X`` and ``Y``
        may be held windows.
    hold : callable, optional
        ``hold(rows: WindowRows) -> HeldRows``: send rows in memory (a drift reference) to the backend, once.
    threads : callable, optional
        ``threads() -> int``: the backend's worker threads (how many windows drift tests at a time).
    """

    name: str
    detects: Callable
    provider: Callable
    embed: Callable
    paths: bool = False
    windows: Callable | None = None
    pooled_rows: Callable | None = None
    hold: Callable | None = None
    threads: Callable | None = None


_BACKENDS: dict = {}


def register_provider(backend: Backend) -> None:
    """Register a counts-provider backend (the seam where Dask and other engines plug in).

    Parameters
    ----------
    backend : Backend
        Replaces a backend registered under the same name.

    Examples
    --------
    >>> from bnfisher.data.providers import Backend, register_provider, backend_for
    >>> register_provider(Backend("toy", detects=lambda d: d == "toy", provider=None, embed=None))
    >>> backend_for("toy").name
    'toy'
    >>> _ = _BACKENDS.pop("toy")
    """
    _BACKENDS[backend.name] = backend


def backend_for(data, engine: str = "auto") -> Backend | None:
    """Return the registered backend for ``data`` (or the one named ``engine``); None for in-memory data.

    Parameters
    ----------
    data : object
    engine : str, default="auto"

    Returns
    -------
    Backend or None

    Raises
    ------
    OptionError
        When ``engine`` names no registered backend.
    """
    if engine not in ("auto", "numpy"):
        if engine not in _BACKENDS:
            raise OptionError(f"`engine={engine!r}` is not available; registered engines: "
                              f"{['auto', 'numpy', *sorted(_BACKENDS)]}. For 'dask': pip install 'bnfisher[dask]'.")
        return _BACKENDS[engine]
    if engine == "numpy":
        return None
    for backend in _BACKENDS.values():
        if backend.detects(data):
            return backend
    if _is_path(data) and not isinstance(data, (str, os.PathLike)):
        return next((b for b in _BACKENDS.values() if b.paths), None)
    return None


_PROTOCOL = ("schema", "variables", "cardinalities", "states", "n_rows", "counts", "map_rows", "sample")


def _is_provider(data) -> bool:
    """Whether ``data`` has every member of :class:`CountsProvider` (read statically: no property runs)."""
    import inspect

    missing = object()
    return not isinstance(data, EncodedData) and all(
        inspect.getattr_static(data, name, missing) is not missing for name in _PROTOCOL)


def in_memory(data) -> bool:
    """Return whether ``data`` is rows in memory (a DataFrame, codes, EncodedData), not a provider, Dask or a path.

    Parameters
    ----------
    data : object

    Returns
    -------
    bool
    """
    if isinstance(data, NumpyCounts):
        return True  # its rows are in memory (``data.encoded``)
    return not (_is_provider(data) or _is_path(data) or any(b.detects(data) for b in _BACKENDS.values()))


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
    engine : {"auto", "numpy"} or a registered backend's name ("dask"), default="auto"
        ``"auto"``: the registered backend that recognises ``data`` (Dask for Dask data), in memory
        for everything else.
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
    check_option(engine, "engine", ("auto", "numpy", *_BACKENDS))
    check_option(missing, "missing", ("error", "allow"))
    if schema is not None and not isinstance(schema, Schema):
        raise OptionTypeError(f"`schema` must be a bnfisher Schema; got {type(schema).__name__}.")
    if _is_provider(data):
        if schema is not None:
            _check_provider_schema(data, schema)
        return data
    backend = backend_for(data, engine)
    if backend is not None:
        return backend.provider(data, schema, missing)
    if _is_path(data):
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
    for v in schema.variables:
        if v not in provider.variables:
            raise SchemaError(f"Column {v!r} required by the model is absent from the data "
                              f"(it has {list(provider.variables)}).")
        if tuple(provider.states[v]) != tuple(schema.states[v]):
            raise SchemaError(f"Column {v!r} has states {tuple(provider.states[v])} in the data but "
                              f"{tuple(schema.states[v])} in the model; build the provider with the model's schema.")
