"""Dask scale-out: a counts provider over a Dask DataFrame or Parquet/CSV files.

Every statistic bnfisher needs from data -- structure scores, CPTs, MMD and set
kernels -- is a set of count tables.  :class:`DaskCounts` computes many families'
tables in **one pass** over the partitions: each partition is encoded with the one
fitted :class:`~bnfisher.data.Schema` (so every partition is binned and coded
alike) and counted by the same block-counting kernel as the in-memory provider
(:func:`bnfisher.data.counts.count_block`); the per-partition tables are summed in a
tree.  The same code runs on a laptop (``LocalCluster``) and on a cluster
(``Client("tcp://scheduler:8786")``, dask-jobqueue, Dask Kubernetes): bnfisher only
builds the task graph; whatever Dask client is active runs it.

This is the only module that knows about Dask; the core reaches it through
:func:`bnfisher.data.providers.as_provider`.  Optional extra: ``pip install "bnfisher[dask]"``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option
from bnfisher.bn.inference.evidence import expected_counts
from bnfisher.dask.client import is_distributed
from bnfisher.dask.reading import read_paths, reading
from bnfisher.data.binning import interval_labels, make_bin_edges
from bnfisher.data.counts import count_block, distinct_rows, sample_positions
from bnfisher.data.labels import MANY_INTEGER_VALUES, check_column_names, sorted_states
from bnfisher.data.providers import NumpyCounts
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, OptionTypeError

__all__ = ["DaskCounts", "embed_distributed"]


# --------------------------------------------------------------- tasks
def _encode_partition(frame: pd.DataFrame, schema: Schema) -> np.ndarray:
    return schema.encode(frame).codes


def _count_partition(frame: pd.DataFrame, schema: Schema, families: list) -> list:
    return count_block(schema.encode(frame).codes, families, schema.cardinalities)


def _count_codes(codes: np.ndarray, families: list, cardinalities) -> list:
    return count_block(codes, families, cardinalities)


def _add_tables(first: list, second: list) -> list:
    return [a + b for a, b in zip(first, second)]


def _partition_uniques(frame: pd.DataFrame, columns: list, na_values: tuple, allow_missing: bool = False) -> dict:
    out = {}
    for column in columns:
        series = frame[column]
        missing = series.isna() | (series.isin(na_values) if na_values else False)
        if missing.any():
            if not allow_missing:
                raise DataError(f"Column {column!r} has missing values; pass missing='allow' (available-case counts, "
                                "EM, the marginalized kernel) or drop them.")
            series = series[~missing]
        out[column] = pd.unique(series.to_numpy())
    return out


def _count_partition_available(frame: pd.DataFrame, schema: Schema, families: list) -> list:
    codes = schema.encode(frame, missing="allow").codes
    return NumpyCounts(codes, schema, missing="available-case").counts(families)


def _expected_partition(frame: pd.DataFrame, network, families: list) -> list:
    return expected_counts(network, network.encode(frame, missing="allow").codes, families)


def _distinct_codes(codes: np.ndarray, cardinalities, max_rows: int | None):
    first, _, multiplicity = distinct_rows(codes, cardinalities, with_inverse=False)
    if max_rows is not None and first.size > max_rows:
        return None
    small = np.int8 if int(np.max(cardinalities, initial=1)) < 127 else np.int32
    return codes[first].astype(small), multiplicity


def _merge_distinct(cardinalities, max_rows: int | None, *parts):
    """Merge partitions' distinct rows with counts (None: one of them, or the merge, exceeds ``max_rows``)."""
    if any(part is None for part in parts):
        return None
    codes = np.vstack([part[0] for part in parts])
    first, inverse, _ = distinct_rows(codes, cardinalities)
    if max_rows is not None and first.size > max_rows:
        return None
    counts = np.bincount(inverse, weights=np.concatenate([part[1] for part in parts]), minlength=first.size)
    return codes[first], counts.astype(np.int64)


#: Partitions' distinct rows merged per task of the tree that reduces them on the workers.
MERGE_FAN_IN = 8


def _distinct_partition(frame: pd.DataFrame, schema: Schema, missing: str, max_rows: int | None):
    codes = schema.encode(frame, missing=missing).codes
    return _distinct_codes(codes, schema.cardinalities, max_rows)


def _apply_codes(frame: pd.DataFrame, schema: Schema, missing: str, function, *args):
    return function(schema.encode(frame, missing=missing).codes, *args)


def _partition_length(frame: pd.DataFrame) -> int:
    return len(frame)


def _is_numeric_dtype(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _looks_numeric(values: pd.Series) -> bool:
    """Return True when every non-missing value of a text column parses as a number (CSV read as text)."""
    present = values.dropna()
    return len(present) > 0 and bool(pd.to_numeric(present, errors="coerce").notna().all())


def _compute(source: str, *tasks):
    """``dask.compute``, with a corrupt or unreadable part reported as a DataError naming the data."""
    import dask

    with reading(source):
        return dask.compute(*tasks)


def _persist(source: str, *tasks) -> tuple:
    """``dask.persist`` (the results stay on the workers), with errors reported as :func:`_compute` reports them."""
    import dask

    with reading(source):
        return dask.persist(*tasks)


def _tree_sum(tasks: list, source: str) -> list:
    """Sum per-partition lists of tables pairwise in a tree, and compute."""
    import dask

    while len(tasks) > 1:
        tasks = [dask.delayed(_add_tables)(tasks[i], tasks[i + 1]) if i + 1 < len(tasks) else tasks[i]
                 for i in range(0, len(tasks), 2)]
    (tables,) = _compute(source, tasks[0])
    return tables


def _take_rows(frame: pd.DataFrame, local: np.ndarray, global_rows: np.ndarray) -> pd.DataFrame:
    out = frame.iloc[local].copy()
    out.index = global_rows
    return out


def _checked_columns(data, schema: Schema | None) -> list:
    """Return the columns to count (the schema's, or the data's), refusing bad names, repeats and absent ones."""
    columns = list(schema.variables) if schema is not None else list(data.columns)
    check_column_names(list(data.columns))
    repeated = sorted({str(c) for c in data.columns if list(data.columns).count(c) > 1})
    if repeated:  # as a table in memory is refused (Dask would select a frame for each such name)
        raise DataError(f"Duplicate column names: {repeated}.")
    absent = [c for c in columns if c not in data.columns]
    if absent:
        raise DataError(f"Column(s) {absent} are absent from the data (it has {list(data.columns)}).")
    return columns


def _to_bin(v, dtype, head, bins: int | None) -> bool:
    """Return whether a column without declared categories is binned (numeric, with ``bins``); refuse floats without."""
    if bins is not None and (_is_numeric_dtype(dtype) or _looks_numeric(head[v])):
        return True
    if pd.api.types.is_float_dtype(dtype):
        raise DataError(f"Column {v!r} is floating point; bin it with `bins` (command line: --bins 4).")
    return False


class DaskCounts:
    """Counts provider over a Dask DataFrame (or Parquet/CSV paths).

    Parameters
    ----------
    data : dask.dataframe.DataFrame, str, path-like or list of them
        The data, or Parquet/CSV file(s) to read lazily (:func:`read_dask`).
    schema : Schema, optional
        How to encode every partition (e.g. a network's ``schema``).  Default:
        learned from the data in one pass (categorical columns' categories, else
        the sorted distinct values; numeric columns binned with ``bins``).
    bins : int, optional
        When learning the schema: bin numeric columns into at most this many
        quantile bins, with edges from the whole data (exact quantiles of the
        column, computed by Dask).
    na_values : sequence, optional
        Missing-value markers, when learning the schema.
    persist : bool, default=False
        Encode every partition once and keep the column-major codes in worker
        memory, so repeated passes (hill climbing) skip reading and encoding.
    missing : {"error", "allow"}, default="error"
        ``"allow"``: missing cells are kept; :meth:`counts` gives available-case
        tables (each family over the rows where it is observed), and
        :meth:`expected_counts` the expected tables under a network (EM, the
        marginalized kernel's mean embedding).

    Attributes
    ----------
    schema, variables, states, cardinalities, n_rows
        As for :class:`bnfisher.data.providers.NumpyCounts`.
    partition_offsets : ndarray of int
        Global row number of the first row of each partition (length
        ``npartitions + 1``): rows are numbered across the whole data.

    Notes
    -----
    Batch many families per :meth:`counts` call: each call is one pass over the
    data, and the learners ask for a whole iteration's candidates at once.  Use
    worker *processes* (the counting kernel holds the GIL in parts).

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> distributed = dd.from_pandas(data, npartitions=4)
    >>> from bnfisher.dask import DaskCounts
    >>> provider = DaskCounts(distributed, schema=network.schema)
    >>> provider.n_rows
    648
    """

    def __init__(self, data, schema: Schema | None = None, *, bins: int | None = None,
                 na_values: Sequence = (), persist: bool = False, missing: str = "error"):

        self.missing = check_option(missing, "missing", ("error", "allow"))
        self.source, data, groups = read_paths(data, schema, na_values)
        if not is_distributed(data) or not hasattr(data, "to_delayed"):
            raise OptionTypeError(f"`data` must be a Dask DataFrame or Parquet/CSV path(s); "
                                  f"got {type(data).__name__}.")
        if schema is not None and bins is not None:
            raise OptionTypeError("Pass either a fitted `schema` or `bins` (to learn one), not both.")
        self.frame = data[_checked_columns(data, schema)]
        self._parts = self.frame.to_delayed()
        self._lengths = None
        if groups is not None and len(groups[0]) == len(self._parts):  # the same partitions, read directly
            self._parts, self._lengths = groups
        self.schema = schema if schema is not None else self._learn_schema(bins, tuple(na_values or ()))
        self.variables = self.schema.variables
        self.cardinalities = self.schema.cardinalities
        self._blocks = None
        if persist and missing == "error":
            import dask

            blocks = [dask.delayed(_encode_partition)(part, self.schema) for part in self._parts]
            self._blocks = list(dask.persist(*blocks))

    @property
    def states(self):
        """``{variable: tuple of labels}``."""
        return self.schema.states

    def _distinct_states(self, columns: list, na_values: tuple) -> dict:
        """Return the states of ``columns`` in one pass: distinct values per partition, merged here (no shuffle)."""
        import dask

        parts = _compute(self.source, *[dask.delayed(_partition_uniques)(part, columns, na_values,
                                                                         self.missing == "allow")
                                        for part in self._parts])
        return {v: sorted_states(np.concatenate([np.asarray(part[v], dtype=object) for part in parts]), v)
                for v in columns}

    def _declared_states(self, bins: int | None) -> tuple:
        """Return the states of known categorical columns, the columns whose labels are to find, and those to bin."""
        states, unknown, numeric = {}, [], []
        head = self.frame.head(1000, npartitions=-1) if bins is not None else None
        for v in self.frame.columns:
            dtype = self.frame[v].dtype
            if isinstance(dtype, pd.CategoricalDtype) and self.frame[v].cat.known:
                states[v] = tuple(c.item() if isinstance(c, np.generic) else c for c in dtype.categories)
            else:
                (numeric if _to_bin(v, dtype, head, bins) else unknown).append(v)
        return states, unknown, numeric

    def _learn_schema(self, bins: int | None, na_values: tuple) -> Schema:
        states, unknown, numeric = self._declared_states(bins)
        edges: dict = {}
        if numeric:
            binned = self._binned_states(numeric, bins)
            unknown += [v for v in numeric if v not in binned]  # whole numbers with few values are labels
            edges.update({v: found for v, (found, _) in binned.items()})
            states.update({v: labels for v, (_, labels) in binned.items()})
        if unknown:
            states.update(self._distinct_states(unknown, na_values))
        return Schema({v: states[v] for v in self.frame.columns}, bin_edges=edges, na_values=na_values)

    def _binned_states(self, numeric: list, bins: int) -> dict:
        """Return ``{column: (edges, labels)}`` of the numeric columns to bin: exact quantile edges over the data.

        Each column is brought to the client once, as float64; an integer column with few distinct values is
        left out (its whole numbers are labels, as :meth:`Schema.from_data` has them).
        """
        import dask.dataframe as dd

        (columns,) = _compute(self.source, [dd.to_numeric(self.frame[v], errors="coerce").astype("float64")
                                            for v in numeric])
        binned = {}
        for v, values in zip(numeric, columns):
            values = np.asarray(values)
            if self.missing == "allow":
                values = values[~np.isnan(values)]
            if np.isnan(values).any():
                raise DataError(f"Column {v!r} has missing or non-numeric values; bnfisher needs complete "
                                "numeric data to bin it.")
            if not pd.api.types.is_float_dtype(self.frame[v].dtype) and \
                    np.unique(values).size <= max(bins, MANY_INTEGER_VALUES):
                continue
            found = make_bin_edges(values, bins, "quantile", v)
            binned[v] = (found, interval_labels(found))
        return binned

    @property
    def partition_offsets(self) -> np.ndarray:
        """Global row number where each partition starts (and the total, last)."""
        if self._lengths is None:
            import dask

            self._lengths = np.array(_compute(self.source, *[dask.delayed(_partition_length)(p)
                                                             for p in self._parts]),
                                     dtype=np.int64)
        return np.concatenate([[0], np.cumsum(self._lengths)])

    @property
    def n_rows(self) -> int:
        """Number of rows (one pass the first time)."""
        return int(self.partition_offsets[-1])

    def counts(self, families: Sequence[Sequence[int]]) -> list:
        """Count tables of all ``families`` (tuples of column indices), from one pass.

        Parameters
        ----------
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
        """
        import dask

        families = [tuple(int(c) for c in f) for f in families]
        if not families:
            return []
        if self._blocks is not None:  # codes already encoded and held by the workers
            tasks = [dask.delayed(_count_codes)(block, families, self.cardinalities) for block in self._blocks]
        elif self.missing == "allow":  # each family over the rows where it is observed
            tasks = [dask.delayed(_count_partition_available)(part, self.schema, families) for part in self._parts]
        else:  # stream: read, encode and count every partition
            tasks = [dask.delayed(_count_partition)(part, self.schema, families) for part in self._parts]
        return _tree_sum(tasks, self.source)

    def expected_counts(self, network, families: Sequence[Sequence[int]]) -> list:
        """Return the expected count tables of ``families`` under ``network``, in one pass (a distributed E-step).

        Parameters
        ----------
        network : BayesianNetwork
            Its schema encodes every partition.
        families : sequence of sequence of int
            Column indices in ``network.variables`` order.

        Returns
        -------
        list of ndarray
            Float tables: complete rows count once, the others by their exact posterior.
        """
        families = [tuple(int(c) for c in f) for f in families]
        if not families:
            return []
        import dask

        return _tree_sum([dask.delayed(_expected_partition)(part, network, families) for part in self._parts],
                         self.source)

    def map_rows(self, function) -> list:
        """``function(codes_block)`` on every partition's codes; the list of results, in row order.

        Parameters
        ----------
        function : callable

        Returns
        -------
        list
        """
        import dask

        def apply(frame):
            return function(self.schema.encode(frame).codes)

        return list(_compute(self.source, *[dask.delayed(apply)(part) for part in self._parts]))

    def code_tasks(self, function, *args) -> list:
        """Return a delayed ``function(codes, *args)`` per partition, ``codes`` its encoded rows (not computed).

        Parameters
        ----------
        function : callable
        *args
            Passed on (a large argument is best given as a delayed object).

        Returns
        -------
        list of Delayed
        """
        import dask

        if self._blocks is not None:
            return [dask.delayed(function)(block, *args) for block in self._blocks]
        return [dask.delayed(_apply_codes)(part, self.schema, self.missing, function, *args) for part in self._parts]

    def distinct(self, *, max_rows: int | None = None):
        """Distinct rows with their multiplicities, by a distributed group-by.

        Every partition reduces its rows to distinct rows and counts; the workers merge
        them in a tree (:data:`MERGE_FAN_IN` at a time), so the client receives the
        distinct rows once, never the partitions' pieces.  Rows keep the order of their
        first occurrence.  Missing cells (with ``missing="allow"``) are code -1, a
        value of their own.

        Parameters
        ----------
        max_rows : int, optional
            Give up (return None) when a partition, or all together, hold more
            distinct rows than this: they would not fit in memory.

        Returns
        -------
        (codes, multiplicity) or None
            ``codes``: the distinct rows (columns in ``variables`` order, the smallest
            signed integer type that holds them), ``multiplicity``: int64 counts.
        """
        import dask

        if self._blocks is not None:
            parts = [dask.delayed(_distinct_codes)(block, self.cardinalities, max_rows) for block in self._blocks]
        else:
            parts = [dask.delayed(_distinct_partition)(part, self.schema, self.missing, max_rows)
                     for part in self._parts]
        while len(parts) > 1:
            parts = [dask.delayed(_merge_distinct)(self.cardinalities, max_rows, *parts[i: i + MERGE_FAN_IN])
                     for i in range(0, len(parts), MERGE_FAN_IN)]
        if not parts:
            return np.zeros((0, len(self.variables)), dtype=np.int8), np.zeros(0, dtype=np.int64)
        (result,) = _compute(self.source, parts[0])
        return result

    def sample(self, n: int, *, random_state=None) -> pd.DataFrame:
        """``min(n, n_rows)`` rows drawn uniformly without replacement, into memory.

        The returned DataFrame's index holds each row's **global** row number (its
        position in the whole data, counted across partitions).

        Parameters
        ----------
        n : int
        random_state : None, int or Generator

        Returns
        -------
        DataFrame
        """
        import dask

        offsets = self.partition_offsets
        rows = sample_positions(self.n_rows, n, random_state=random_state)
        part_of = np.searchsorted(offsets, rows, side="right") - 1
        tasks = []
        for p in np.unique(part_of):
            chosen = rows[part_of == p]
            tasks.append(dask.delayed(_take_rows)(self._parts[p], chosen - offsets[p], chosen))
        if not tasks:
            return self.frame.head(0, npartitions=1)
        return pd.concat(_compute(self.source, *tasks))

    def rows(self) -> pd.DataFrame:
        """Every row, in order, into memory (index: the global row numbers); for data known to fit.

        Returns
        -------
        DataFrame
        """
        frame = pd.concat(_compute(self.source, *self._parts), ignore_index=True)
        return frame

    def __repr__(self) -> str:
        return f"DaskCounts(npartitions={len(self._parts)}, n_variables={len(self.variables)})"


def embed_distributed(kernel, frame):
    """Return a kernel's feature map of a Dask DataFrame: a Dask array of CSR blocks, one per partition.

    Parameters
    ----------
    kernel : FamilyKernel
    frame : dask.dataframe.DataFrame

    Returns
    -------
    dask.array.Array

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> distributed = dd.from_pandas(data, npartitions=4)
    >>> from bnfisher.dask import embed_distributed
    >>> features = embed_distributed(bf.FisherKernel(network), distributed)
    >>> features.shape[0].compute() if hasattr(features.shape[0], "compute") else features.shape[0]
    648
    """
    import dask
    import dask.array as da
    import scipy.sparse as sp

    parts = frame.to_delayed()
    lengths = _compute("the Dask DataFrame", *[dask.delayed(len)(part) for part in parts])
    blocks = [
        da.from_delayed(dask.delayed(kernel.embed)(part), shape=(n, kernel.n_features_), dtype=np.float64,
                        meta=sp.csr_matrix((0, kernel.n_features_)))
        for part, n in zip(parts, lengths)
    ]
    return da.concatenate(blocks, axis=0)
