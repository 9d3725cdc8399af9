"""The exact permutation test where the rows lie: hash buckets of distinct rows held by the workers.

Every partition of both samples is reduced to its distinct rows with their copies and cut
by :func:`~bnfisher.comparison.null.row_buckets` into groups of buckets; each group is
gathered on one worker (a shuffle of distinct rows, not of rows), reduced again and kept
there.  For every round of permutations the client draws how many first-sample rows fall in
each bucket (:meth:`~bnfisher.comparison.null.NullPlan.bucket_counts`) and each worker draws
its buckets' splits and adds up their count tables
(:func:`~bnfisher.comparison.null.bucket_null_sums`): the client receives ``cells x
permutations`` numbers and never a row.  The sums, and so the p-values, are those of the
in-memory engine, bit for bit, on any number of partitions and workers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnfisher.comparison.null import (
    BUCKETS_PER_GROUP,
    NullPlan,
    bucket_fixed_sums,
    bucket_null_sums,
    bucket_order,
    n_buckets,
    row_buckets,
)
from bnfisher.dask.counts import _compute
from bnfisher.dask.windows import HeldWindow
from bnfisher.data.counts import distinct_rows
from bnfisher.data.schema import EncodedData
from bnfisher.data.windows import WindowRows
from bnfisher.exceptions import DataError
from bnfisher.kernels.columns import CellLayout, KernelColumns

__all__ = ["DaskPool", "pooled_rows"]


@dataclass
class _Shard:
    """A group of whole buckets on a worker: their distinct rows as kernel columns, in bucket order."""

    units: KernelColumns
    codes: np.ndarray
    first: np.ndarray
    multiplicity: np.ndarray
    bounds: np.ndarray
    buckets: np.ndarray
    sizes: np.ndarray


def _partition_pieces(block, columns: np.ndarray, cardinalities, buckets: int, groups: int) -> list:
    """Cut a partition's distinct rows (with copies) by group of buckets: a ``(codes, copies)`` piece per group.

    ``block`` is a partition's codes, or a held window's distinct rows
    (:class:`~bnfisher.data.windows.WindowRows`); ``columns`` puts its columns in the
    kernel's (the network's) order.
    """
    if isinstance(block, WindowRows):  # distinct rows already, with their copies
        codes, copies = block.codes[:, columns], block.counts
    else:
        codes = block[:, columns]
        first, _, copies = distinct_rows(codes, cardinalities, with_inverse=False)
        codes = codes[first]
    group = row_buckets(codes, buckets) // BUCKETS_PER_GROUP
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(groups + 1))
    return [(codes[order[bounds[g]: bounds[g + 1]]], copies[order[bounds[g]: bounds[g + 1]]]) for g in range(groups)]


def _piece(pieces: list, g: int) -> tuple:
    return pieces[g]


def _shard(kernel, buckets: int, n_x_pieces: int, *pieces) -> _Shard | None:
    """Gather one group's pieces (the first ``n_x_pieces`` from the first sample) into a :class:`_Shard`."""
    codes = np.vstack([codes for codes, _ in pieces])
    if codes.shape[0] == 0:
        return None
    sides = np.concatenate([np.full(c.size, k < n_x_pieces) for k, (_, c) in enumerate(pieces)])
    copies = np.concatenate([c for _, c in pieces]).astype(np.int64)
    first, inverse, _ = distinct_rows(codes, kernel.network.cardinalities)
    in_first = np.bincount(inverse, weights=copies * sides, minlength=first.size).astype(np.int64)
    multiplicity = np.bincount(inverse, weights=copies, minlength=first.size).astype(np.int64)
    codes = codes[first]
    bucket = row_buckets(codes, buckets)
    order = bucket_order(codes, multiplicity, bucket, kernel.network.cardinalities)
    bucket = bucket[order]
    present, starts = np.unique(bucket, return_index=True)
    bounds = np.append(starts, bucket.size)
    network = kernel.network
    units = KernelColumns(kernel, EncodedData(np.asfortranarray(codes[order]), network.variables,
                                              dict(network.states), schema=kernel.schema), batches=bounds,
                         distinct=True)
    return _Shard(units, codes[order], in_first[order], multiplicity[order], bounds, present,
                  np.bincount(bucket, weights=multiplicity[order], minlength=buckets).astype(np.int64))


def _shard_fixed(shard: _Shard | None):
    if shard is None:
        return None
    return bucket_fixed_sums(shard.units, shard.first, shard.multiplicity, shard.bounds, shard.buckets), shard.sizes


def _shard_witness(shard: _Shard | None, cell_witness: np.ndarray, top: int):
    """Each side's witness moments, range and ``top`` most typical distinct rows (largest for A, smallest for B)."""
    if shard is None:
        return None
    values = shard.units.inner(cell_witness)
    out = []
    for copies, sign in ((shard.first, 1.0), (shard.multiplicity - shard.first, -1.0)):
        held = np.flatnonzero(copies > 0)
        kept = held[np.argsort(-sign * values[held], kind="stable")[:top]]
        weights = copies[held].astype(np.float64)
        out.append({"n": float(weights.sum()), "sum": float(weights @ values[held]),
                    "squares": float(weights @ values[held] ** 2),
                    "low": float(values[held].min(initial=np.inf)), "high": float(values[held].max(initial=-np.inf)),
                    "codes": shard.codes[kept], "values": values[kept], "copies": copies[kept]})
    return out


def _shard_histogram(shard: _Shard | None, cell_witness: np.ndarray, edges: np.ndarray):
    """Each side's histogram of witness values (rows counted) over ``edges``."""
    if shard is None:
        return None
    values = shard.units.inner(cell_witness)
    return np.stack([np.histogram(values, bins=edges, weights=copies)[0]
                     for copies in (shard.first, shard.multiplicity - shard.first)])


def _chain(total, part):
    """Add group sums in group order (the in-memory engine's order); None is an empty group."""
    if part is None:
        return total
    if total is None:
        return part
    if isinstance(part, tuple):
        return total[0] + part[0], total[1] + part[1]
    return total + part


class DaskPool:
    """Two samples' pooled distinct rows held by Dask workers in groups of hash buckets (a ``PooledRows``).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    X, Y : Dask DataFrame, Parquet/CSV path(s) or HeldWindow
        A :class:`~bnfisher.dask.windows.HeldWindow` is a window's distinct rows already
        on a worker (drift), encoded with the kernel's schema.

    Attributes
    ----------
    layout : CellLayout
    n_x, n_y : int
    """

    def __init__(self, kernel, X, Y):
        import dask

        providers = [data if isinstance(data, HeldWindow) else kernel.provider(data) for data in (X, Y)]
        self.n_x, self.n_y = (int(p.n_rows) for p in providers)
        if self.n_x < 2 or self.n_y < 2:
            raise DataError(f"Each sample needs at least 2 rows; got {self.n_x} and {self.n_y}.")
        self.source = providers[0].source
        self.layout = CellLayout(kernel)
        buckets = n_buckets(self.n_x + self.n_y)
        groups = -(-buckets // BUCKETS_PER_GROUP)
        network = kernel.network
        parts = [provider.code_tasks(_partition_pieces, np.array([provider.variables.index(v) for v in
                                                                  network.variables]),
                                     network.cardinalities, buckets, groups) for provider in providers]
        shards = []
        for g in range(groups):
            pieces = [dask.delayed(_piece)(part, g) for side in parts for part in side]
            shards.append(dask.delayed(_shard)(kernel, buckets, len(parts[0]), *pieces))
        self._shards = list(dask.persist(*shards))
        self._buckets = buckets

    def fixed_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the observed split's and the pool's cell sums, and every bucket's rows (one pass over the shards).

        Returns
        -------
        sums : ndarray of shape (n_cells + 1, 2)
            :func:`~bnfisher.comparison.null.bucket_fixed_sums` of the pool.
        sizes : ndarray of int64, shape (n_buckets,)
            Pooled rows in every bucket.
        """
        return self._reduce([_delayed(_shard_fixed)(shard) for shard in self._shards])

    def null_sums(self, plan: NullPlan, r: int, counts: np.ndarray) -> np.ndarray:
        """Return round ``r``'s first-sample cell sums: each worker draws its buckets, the client adds the groups.

        Parameters
        ----------
        plan : NullPlan
        r : int
        counts : ndarray of int, shape (round permutations, n_buckets)
            :meth:`~bnfisher.comparison.null.NullPlan.bucket_counts` of the round.

        Returns
        -------
        ndarray of shape (n_cells, round permutations)
        """
        tasks = []
        for g, shard in enumerate(self._shards):
            held = counts[:, g * BUCKETS_PER_GROUP: (g + 1) * BUCKETS_PER_GROUP]
            tasks.append(_delayed(_shard_null_group)(shard, plan, r, held, g * BUCKETS_PER_GROUP))
        return self._reduce(tasks)

    def witness_summary(self, cell_witness: np.ndarray, *, top: int = 5, bins: int = 40) -> dict:
        """Summarise the witness ``<Phi(x), mu_A - mu_B>`` where the rows lie: moments, histograms, typical rows.

        Two passes over the held distinct rows (the range, then the histogram); the client
        receives a few numbers per shard and ``top`` rows per side and shard.

        Parameters
        ----------
        cell_witness : ndarray of shape (n_cells,)
            The witness of every cell (a row's witness is the sum over its cells).
        top : int, default=5
            Rows of each side kept as its most typical.
        bins : int, default=40
            Of the histograms, over the witness's range.

        Returns
        -------
        dict
            ``moments``: per side ``(rows, mean, variance)``; ``edges`` and ``counts`` (2, bins):
            the histograms; ``codes``, ``values``, ``copies``: per side its ``top`` most
            typical distinct rows (codes in the kernel's order), most typical first.
        """
        import dask

        parts = [part for part in _compute(self.source, *[dask.delayed(_shard_witness)(shard, cell_witness, top)
                                                          for shard in self._shards]) if part is not None]
        low = min(side["low"] for part in parts for side in part)
        high = max(side["high"] for part in parts for side in part)
        edges = np.histogram_bin_edges(np.array([low, high]), bins=bins)
        counts = self._reduce([_delayed(_shard_histogram)(shard, cell_witness, edges) for shard in self._shards])
        summary: dict = {"edges": edges, "counts": counts, "moments": [], "codes": [], "values": [], "copies": []}
        for k, sign in ((0, 1.0), (1, -1.0)):
            for key, value in _side_summary([part[k] for part in parts], sign, top).items():
                summary[key].append(value)
        return summary

    def _reduce(self, tasks: list):
        total = None
        for task in tasks:
            total = _delayed(_chain)(total, task)
        (result,) = _compute(self.source, total)
        return result


def _shard_null_group(shard: _Shard | None, plan: NullPlan, r: int, held: np.ndarray, offset: int):
    if shard is None:
        return None
    return bucket_null_sums(shard.units, shard.multiplicity, shard.bounds, shard.buckets, plan, r,
                            held[:, shard.buckets - offset])


def _delayed(function):
    import dask

    return dask.delayed(function)


def pooled_rows(kernel, X, Y) -> DaskPool:
    """Return the Dask backend's :class:`~bnfisher.comparison.null.PooledRows` of two samples.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    X, Y : Dask DataFrame or Parquet/CSV path(s)

    Returns
    -------
    DaskPool
    """
    return DaskPool(kernel, X, Y)


def _side_summary(sides: list, sign: float, top: int) -> dict:
    """Return one sample's witness moments (n, mean, variance) and its ``top`` rows, merged over the shards.

    The top rows are those of largest ``sign * witness``.
    """
    n = sum(side["n"] for side in sides)
    mean = sum(side["sum"] for side in sides) / n
    values = np.concatenate([side["values"] for side in sides])
    order = np.argsort(-sign * values, kind="stable")[:top]
    return {"moments": (n, mean, max(sum(side["squares"] for side in sides) / n - mean**2, 0.0)),
            "values": values[order], "codes": np.vstack([side["codes"] for side in sides])[order],
            "copies": np.concatenate([side["copies"] for side in sides])[order]}
