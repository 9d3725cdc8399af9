"""Dask scale-out: a counts provider over a Dask DataFrame or Parquet files.

Every statistic bnfisher needs from data -- structure scores, CPTs, MMD and set
kernels -- is a set of count tables.  :class:`DaskCounts` computes many families'
tables in **one pass** over the partitions: each partition is encoded to a
column-major block of codes and counted by the same block-counting kernel as the
in-memory provider (:func:`bnfisher.counts.count_block`); the per-partition tables
are summed in a tree.  The same code runs on a laptop (``LocalCluster``) and on a
cluster (``Client("tcp://scheduler:8786")``, dask-jobqueue, Dask Kubernetes):
bnfisher only builds the task graph; whatever Dask client is active runs it.

Optional extra: ``pip install "bnfisher[dask]"``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .counts import count_block
from .encoding import _sorted_unique, encode

__all__ = ["DaskCounts", "read_parquet"]


def read_parquet(path, columns: Sequence[str] | None = None, blocksize: str | None = None):
    """A Dask DataFrame over Parquet file(s) (a thin wrapper of ``dask.dataframe.read_parquet``)."""
    import dask.dataframe as dd

    options = {} if blocksize is None else {"blocksize": blocksize}
    return dd.read_parquet(path, columns=list(columns) if columns is not None else None, **options)


def _count_partition(frame: pd.DataFrame, variables: tuple, states: dict, families: list, cardinalities) -> list:
    encoded = encode(frame, states=states, variables=variables)
    return count_block(encoded.codes, families, cardinalities)


def _encode_partition(frame: pd.DataFrame, variables: tuple, states: dict, dtype) -> np.ndarray:
    """Column-major codes in the smallest integer type that holds them (kept in worker memory)."""
    return np.asfortranarray(encode(frame, states=states, variables=variables).codes.astype(dtype))


def _count_codes(codes: np.ndarray, families: list, cardinalities) -> list:
    return count_block(codes, families, cardinalities)


def _add_tables(first: list, second: list) -> list:
    return [a + b for a, b in zip(first, second)]


def _partition_uniques(frame: pd.DataFrame, columns: list) -> dict:
    for column in columns:
        if frame[column].isna().any():
            raise ValueError(f"Column {column!r} has missing values; bnfisher needs complete data.")
    return {column: pd.unique(frame[column].to_numpy()) for column in columns}


def _partition_length(frame: pd.DataFrame) -> int:
    return len(frame)


class DaskCounts:
    """Counts provider over a Dask DataFrame (or Parquet paths).

    Parameters
    ----------
    data : dask.dataframe.DataFrame, str, path-like or list of them
        The data, or Parquet file(s) / directories to read lazily.
    states : mapping, optional
        ``{variable: labels}``.  Default: categorical columns' categories (when
        known), otherwise the sorted distinct values of each column, found in one
        pass.
    variables : sequence of str, optional
        Columns to use (default: all).
    persist : bool, default=False
        Encode every partition once and keep the column-major codes (smallest
        integer type, 1 byte per cell for up to 256 states) in worker memory, so
        repeated passes (hill climbing) skip reading and encoding.  Default:
        stream the data on every pass.

    Attributes
    ----------
    variables, states, cardinalities, n_rows
        As for :class:`bnfisher.counts.NumpyCounts`.

    Notes
    -----
    Batch many families per :meth:`counts` call: each call is one pass over the
    data, and the learners ask for a whole iteration's candidates at once.  Use
    worker *processes* (the counting kernel holds the GIL in parts).
    """

    def __init__(self, data, states=None, variables: Sequence[str] | None = None, persist: bool = False):
        if isinstance(data, (str, os.PathLike)) or (isinstance(data, (list, tuple)) and data
                                                     and isinstance(data[0], (str, os.PathLike))):
            data = read_parquet(data, columns=variables)
        if not hasattr(data, "to_delayed"):
            raise TypeError(f"`data` must be a Dask DataFrame or Parquet path(s); got {type(data).__name__}.")
        columns = list(variables) if variables is not None else list(data.columns)
        missing = [c for c in columns if c not in data.columns]
        if missing:
            raise ValueError(f"Column(s) {missing} are absent from the data (it has {list(data.columns)}).")
        self.frame = data[columns]
        self.variables = tuple(columns)
        self.states = {v: tuple(states[v]) for v in columns} if states is not None else self._infer_states()
        self.cardinalities = np.array([len(self.states[v]) for v in self.variables], dtype=np.intp)
        self._n_rows = None
        self._blocks = None
        if persist:
            import dask

            dtype = np.min_scalar_type(int(self.cardinalities.max()) - 1 if len(self.cardinalities) else 0)
            blocks = [dask.delayed(_encode_partition)(part, self.variables, self.states, dtype)
                      for part in self.frame.to_delayed()]
            self._blocks = list(dask.persist(*blocks))

    def _infer_states(self) -> dict:
        import dask

        known, unknown = {}, []
        for v in self.variables:
            dtype = self.frame[v].dtype
            if isinstance(dtype, pd.CategoricalDtype) and self.frame[v].cat.known:
                known[v] = tuple(c.item() if isinstance(c, np.generic) else c for c in dtype.categories)
            else:
                unknown.append(v)
        if unknown:
            # One pass: distinct values per partition, merged here (no shuffle).
            parts = dask.compute(*[dask.delayed(_partition_uniques)(part, unknown)
                                   for part in self.frame.to_delayed()])
            for v in unknown:
                values = np.concatenate([np.asarray(part[v], dtype=object) for part in parts])
                known[v] = _sorted_unique(values, v)
        return {v: known[v] for v in self.variables}

    @property
    def n_rows(self) -> int:
        if self._n_rows is None:
            import dask

            lengths = [dask.delayed(_partition_length)(part) for part in self.frame.to_delayed()]
            self._n_rows = int(sum(dask.compute(*lengths)))
        return self._n_rows

    def counts(self, families: Sequence[Sequence[int]]) -> list:
        """Count tables of all ``families`` (tuples of column indices), from one pass."""
        import dask

        families = [tuple(int(c) for c in f) for f in families]
        if not families:
            return []
        if self._blocks is not None:  # codes already encoded and held by the workers
            tasks = [dask.delayed(_count_codes)(block, families, self.cardinalities) for block in self._blocks]
        else:  # stream: read, encode and count every partition
            tasks = [dask.delayed(_count_partition)(part, self.variables, self.states, families, self.cardinalities)
                     for part in self.frame.to_delayed()]
        while len(tasks) > 1:  # pairwise tree sum of the per-partition tables
            tasks = [dask.delayed(_add_tables)(tasks[i], tasks[i + 1]) if i + 1 < len(tasks) else tasks[i]
                     for i in range(0, len(tasks), 2)]
        (tables,) = dask.compute(tasks[0])
        return tables

    def map_rows(self, function) -> list:
        """``function(codes_block)`` on every partition's codes; returns the list of results."""
        import dask

        def apply(frame):
            return function(encode(frame, states=self.states, variables=self.variables).codes)

        return list(dask.compute(*[dask.delayed(apply)(part) for part in self.frame.to_delayed()]))

    def sample(self, n: int, random_state=None) -> pd.DataFrame:
        """About ``n`` uniformly sampled rows (in memory), for candidate pools."""
        from ._validation import check_random_state

        rng = check_random_state(random_state)
        fraction = min(1.0, 1.2 * n / max(self.n_rows, 1))
        sample = self.frame.sample(frac=fraction, random_state=int(rng.integers(2**31 - 1))).compute()
        if len(sample) > n:
            sample = sample.iloc[np.sort(rng.choice(len(sample), size=n, replace=False))]
        return sample
