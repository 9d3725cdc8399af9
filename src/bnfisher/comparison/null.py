"""The permutation null, drawn where the rows are: hash buckets of distinct rows, a random stream per bucket.

A permutation of the pooled rows sends a uniformly random ``n_x``-subset to the first
sample: a multivariate hypergeometric draw over the distinct rows.  It factorises
exactly over any fixed partition of the distinct rows: first how many of the ``n_x``
fall in each part (a multivariate hypergeometric draw over the parts' sizes), then,
given that number, a uniform subset within each part, independently.  bnfisher's
parts are **buckets**, fixed by a hash of each distinct row's codes and by the pool's
size alone, so

* a bucket's draws need only its own rows: a thread, or a Dask worker holding the
  bucket, draws them and adds up its count tables, and the client holds only
  ``permutations x cells`` numbers;
* every bucket has its own random stream, spawned from the seed by
  :class:`numpy.random.SeedSequence` (key: bucket and round), and the sums are added in
  one fixed order (buckets in groups, groups in order), so the null statistics, bit for
  bit, do not depend on the number of threads, partitions or workers.

This module is the pure core of that plan: the Dask shell
(:mod:`bnfisher.dask.permutations`) and the in-memory engine
(:mod:`bnfisher.comparison.permutation`) both call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher._utils.validation import check_random_state
from bnfisher.comparison.splits import _split_draws, split_draws
from bnfisher.data.counts import row_keys

__all__ = ["NullPlan", "PooledRows", "bucket_fixed_sums", "bucket_group", "bucket_null_sums", "bucket_order",
           "n_buckets", "ordered_sum", "permutation_splits", "row_buckets", "split_draws"]

#: Pooled rows per hash bucket (the pool's size, not its partitions, sets the number of buckets).
ROWS_PER_BUCKET = 1 << 17

#: Buckets per group: a group's buckets are summed in order, then the groups in order (a Dask task per group).
BUCKETS_PER_GROUP = 16

#: Count-table entries (cells x permutations) held per round of permutations: the client's memory for the null.
ROUND_CELLS = 1 << 23

#: Split counts drawn per batch within a bucket (permutations x the bucket's distinct rows).
BATCH_CELLS = 1 << 25

#: Count tables computed per pass over a bucket's cell index.
BLOCK = 64


def n_buckets(n_rows: int) -> int:
    """Return the hash buckets of a pool of ``n_rows`` rows: one per :data:`ROWS_PER_BUCKET` rows, at least one.

    Parameters
    ----------
    n_rows : int
        Pooled rows (both samples, copies counted).

    Returns
    -------
    int
    """
    return max(1, -(-int(n_rows) // ROWS_PER_BUCKET))


def row_buckets(codes: np.ndarray, buckets: int) -> np.ndarray:
    """Return the bucket of every row: a 64-bit hash of its codes (missing cells, -1, included) modulo ``buckets``.

    The hash depends on the codes' values only (not their integer type, the row's place or
    the process), so a row falls in the same bucket on every machine.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_variables)
    buckets : int

    Returns
    -------
    ndarray of int64, shape (n_rows,)

    Examples
    --------
    >>> import numpy as np
    >>> rows = np.array([[0, 1], [1, 0], [0, 1]])
    >>> b = row_buckets(rows, 4)
    >>> bool(b[0] == b[2]) and b.dtype == np.int64
    True
    """
    n_rows = codes.shape[0]
    if buckets == 1 or n_rows == 0:
        return np.zeros(n_rows, dtype=np.int64)
    out = np.empty(n_rows, dtype=np.int64)
    starts = range(0, n_rows, 1 << 18)

    def block(start: int) -> None:  # (row by row: blocks on every core give the same buckets)
        out[start: start + (1 << 18)] = _hash_rows(codes[start: start + (1 << 18)], buckets)

    list(map_threads(block, starts, n_jobs=threads_for(n_rows * codes.shape[1])))
    return out


def _hash_rows(codes: np.ndarray, buckets: int) -> np.ndarray:
    key = np.full(codes.shape[0], 0xCBF29CE484222325, dtype=np.uint64)
    factor = np.uint64(0x100000001B3)
    for column in range(codes.shape[1]):  # FNV-1a over the codes (shifted to be >= 0), then a murmur3 finish
        key ^= (codes[:, column].astype(np.int64) + 1).astype(np.uint64)
        key *= factor
    key ^= key >> np.uint64(33)
    key *= np.uint64(0xFF51AFD7ED558CCD)
    key ^= key >> np.uint64(33)
    key *= np.uint64(0xC4CEB9FE1A85EC53)
    key ^= key >> np.uint64(33)
    return (key % np.uint64(buckets)).astype(np.int64)


def bucket_order(codes: np.ndarray, multiplicity: np.ndarray, buckets: np.ndarray,
                 cardinalities: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Return the order in which a pool's distinct rows are drawn: by bucket, then multiplicity, then codes.

    Within a bucket, rows of equal multiplicity are contiguous (the draws fill blocks) and
    ties go by the rows' codes, so the draws depend on the samples as multisets of rows.

    Parameters
    ----------
    codes : ndarray of int, shape (n_distinct, n_variables)
    multiplicity : ndarray of int, shape (n_distinct,)
    buckets : ndarray of int, shape (n_distinct,)
    cardinalities : sequence of int, optional
        Of the codes' columns (packs them into few sort keys, :func:`~bnfisher.data.counts.row_keys`;
        the order does not depend on them).

    Returns
    -------
    ndarray of intp
    """
    keys = row_keys(codes, cardinalities)
    return np.lexsort(np.vstack([keys.T[::-1], np.asarray(multiplicity)[None, :], np.asarray(buckets)[None, :]]))


@dataclass(frozen=True)
class NullPlan:
    """How the null is drawn: the seed's entropy, the buckets' sizes, and the rounds of permutations.

    Parameters
    ----------
    entropy : int
        Seeds every stream (:meth:`bucket_counts`, :meth:`stream`).
    n_first : int
        Rows of the first sample.
    bucket_sizes : ndarray of int64, shape (n_buckets,)
        Pooled rows (copies counted) in every bucket.
    n_permutations : int
    round_size : int
        Permutations per round (a round's count tables are ``cells x round_size`` numbers).
    stages : tuple of int, default=()
        Permutation counts at which a round also ends, so that a sequential test can stop
        there (:class:`~bnfisher.comparison.sequential.EarlyStop`).  The first ``s``
        permutations of a plan are ``s`` independent uniform splits whatever follows them.

    Examples
    --------
    >>> import numpy as np
    >>> plan = NullPlan.draw(np.random.default_rng(0), 3, np.array([4, 2]), 10, n_cells=5)
    >>> counts = plan.bucket_counts(0)
    >>> counts.shape, counts.sum(axis=1).tolist() == [3] * 10
    ((10, 2), True)
    """

    entropy: int
    n_first: int
    bucket_sizes: np.ndarray
    n_permutations: int
    round_size: int
    stages: tuple = ()

    @classmethod
    def draw(cls, rng: np.random.Generator, n_first: int, bucket_sizes: np.ndarray, n_permutations: int, *,
             n_cells: int, stages: Sequence[int] = ()) -> NullPlan:
        """Return the plan of ``n_permutations`` draws, its entropy drawn from ``rng``.

        Parameters
        ----------
        rng : Generator
            The caller's generator, resolved where the user's ``random_state`` came in.
        n_first : int
        bucket_sizes : ndarray of int
        n_permutations : int
        n_cells : int
            Cells of the count tables (sets the round size).
        stages : sequence of int, default=()
            Permutation counts at which a round ends as well.

        Returns
        -------
        NullPlan
        """
        entropy = int(rng.integers(2**63))
        round_size = int(min(n_permutations, max(BLOCK, ROUND_CELLS // max(int(n_cells) + 1, 1))))
        stages = tuple(sorted({int(s) for s in stages if 0 < int(s) < n_permutations}))
        return cls(entropy, int(n_first), np.asarray(bucket_sizes, dtype=np.int64), int(n_permutations), round_size,
                   stages)

    @property
    def bounds(self) -> np.ndarray:
        """Where every round starts, and the end: every ``round_size`` permutations and at every stage."""
        regular = np.arange(0, self.n_permutations, self.round_size)
        return np.unique(np.concatenate([regular, np.asarray(self.stages, dtype=np.int64), [self.n_permutations]]))

    @property
    def n_buckets(self) -> int:
        """Buckets of the pool."""
        return int(self.bucket_sizes.size)

    @property
    def n_rounds(self) -> int:
        """Rounds of permutations."""
        return int(self.bounds.size - 1)

    def round(self, r: int) -> slice:
        """Return the permutations of round ``r``.

        Parameters
        ----------
        r : int

        Returns
        -------
        slice
        """
        bounds = self.bounds
        return slice(int(bounds[r]), int(bounds[r + 1]))

    @property
    def n_groups(self) -> int:
        """Groups of buckets."""
        return -(-self.n_buckets // BUCKETS_PER_GROUP)

    def bucket_counts(self, r: int) -> np.ndarray:
        """Return the first sample's rows in every bucket, for every permutation of round ``r``.

        A multivariate hypergeometric draw over the buckets' sizes (:func:`split_draws`), from
        the round's own stream.

        Parameters
        ----------
        r : int

        Returns
        -------
        ndarray of int64, shape (round permutations, n_buckets)
        """
        size = self.round(r).stop - self.round(r).start
        if self.n_buckets == 1:
            return np.full((size, 1), self.n_first, dtype=np.int64)
        return _split_draws(self.bucket_sizes, self.n_first, size, self._generator(0, r)).T.astype(
            np.int64)

    def stream(self, bucket: int, r: int) -> np.random.Generator:
        """Return the random stream of ``bucket`` in round ``r`` (spawned from the entropy).

        Parameters
        ----------
        bucket, r : int

        Returns
        -------
        Generator
        """
        return self._generator(1, int(bucket), r)

    def _generator(self, *key: int) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.entropy, spawn_key=key)))


class PooledRows(Protocol):
    """Two samples' pooled distinct rows, held in buckets where they lie: what the permutation engine needs of them.

    :class:`bnfisher.comparison.permutation.LocalPool` holds them in memory (threads over the
    buckets); the Dask shell holds each group of buckets on a worker.  Both give the same
    sums, bit for bit.

    Attributes
    ----------
    layout : CellLayout
        The kernel's cells (:class:`~bnfisher.kernels.columns.CellLayout`).
    n_x, n_y : int
        Rows of each sample.
    """

    layout: Any
    n_x: int
    n_y: int

    def fixed_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Return :func:`bucket_fixed_sums` of the whole pool and the rows of every bucket (copies counted).

        Returns
        -------
        sums : ndarray of shape (n_cells + 1, 2)
        sizes : ndarray of int64, shape (n_buckets,)
        """

    def null_sums(self, plan: NullPlan, r: int, counts: np.ndarray) -> np.ndarray:
        """Return :func:`bucket_null_sums` of the whole pool for round ``r``.

        Parameters
        ----------
        plan : NullPlan
        r : int
        counts : ndarray of int, shape (round permutations, n_buckets)
            :meth:`NullPlan.bucket_counts` of the round.

        Returns
        -------
        ndarray of shape (n_cells, round permutations)
        """


def bucket_fixed_sums(units, first: np.ndarray, multiplicity: np.ndarray, bounds: np.ndarray,
                      buckets: np.ndarray, *, n_jobs: int | None = 1) -> np.ndarray:
    """Return the observed split's and the pool's cell sums over some whole buckets, in the fixed order.

    Parameters
    ----------
    units : KernelColumns
        The buckets' distinct rows, in :func:`bucket_order`.
    first, multiplicity : ndarray of int, shape (n_units,)
        Copies of every unit in the first sample, and in the pool.
    bounds, buckets : ndarray of int
        As for :func:`bucket_null_sums`.
    n_jobs : int or None, default=1
        Threads over the buckets; the sums do not depend on it.

    Returns
    -------
    ndarray of float64, shape (n_cells + 1, 2)
        Column 0 for the first sample, column 1 for the pool; the last row holds
        ``sum_u K(u, u) copies_u`` (the kernel's diagonal, for ``MMD^2_u``).
    """

    def one(j: int) -> np.ndarray:
        held = slice(int(bounds[j]), int(bounds[j + 1]))
        weights = np.stack([first[held], multiplicity[held]]).astype(np.float64)
        return np.vstack([units.cell_sums(weights, units=held), units.diag[held] @ weights.T])

    return ordered_sum(map_threads(one, range(len(buckets)), n_jobs=n_jobs, lookahead=4),
                       [bucket_group(b) for b in buckets])


def bucket_group(bucket: int) -> int:
    """Return the group of ``bucket``: :data:`BUCKETS_PER_GROUP` consecutive buckets.

    Parameters
    ----------
    bucket : int

    Returns
    -------
    int
    """
    return int(bucket) // BUCKETS_PER_GROUP


def bucket_null_sums(units, multiplicity: np.ndarray, bounds: np.ndarray, buckets: np.ndarray, plan: NullPlan,
                     r: int, counts: np.ndarray, *, n_jobs: int | None = 1) -> np.ndarray:
    """Return the first sample's cell sums of round ``r``'s permutations over some whole buckets, in the fixed order.

    Parameters
    ----------
    units : KernelColumns
        The buckets' distinct rows, in :func:`bucket_order`.
    multiplicity : ndarray of int, shape (n_units,)
        Pooled copies of every unit.
    bounds : ndarray of int, shape (k + 1,)
        Units of the ``j``-th bucket held: ``bounds[j]:bounds[j + 1]``.
    buckets : ndarray of int, shape (k,)
        Which bucket each is (increasing).
    plan : NullPlan
    r : int
        The round.
    counts : ndarray of int, shape (round permutations, k)
        The first sample's rows in each bucket held (columns of :meth:`NullPlan.bucket_counts`).
    n_jobs : int or None, default=1
        Threads over the buckets; the sums do not depend on it.

    Returns
    -------
    ndarray of float64, shape (n_cells, round permutations)
        Summed within each group of buckets in bucket order, then over groups in order.
    """

    def one(j: int) -> np.ndarray:
        held = slice(int(bounds[j]), int(bounds[j + 1]))
        return _bucket_sums(units, held, multiplicity[held], counts[:, j], plan.stream(buckets[j], r))

    groups = [bucket_group(b) for b in buckets]
    return ordered_sum(map_threads(one, range(len(buckets)), n_jobs=n_jobs, lookahead=4), groups)


def ordered_sum(parts, groups: list) -> np.ndarray:
    """Sum arrays in the engine's one order: within a group in the given order, then the groups' sums in order.

    Parameters
    ----------
    parts : iterable of ndarray
    groups : list of int
        The group of each part (non-decreasing).

    Returns
    -------
    ndarray
    """
    total = group_total = None
    current = None
    for part, group in zip(parts, groups):
        if group != current and group_total is not None:
            total = group_total if total is None else total + group_total
            group_total = None
        current = group
        group_total = part.astype(np.float64, copy=True) if group_total is None else group_total + part
    if group_total is not None:
        total = group_total if total is None else total + group_total
    assert total is not None, "no bucket to sum"
    return total


def _bucket_sums(units, held: slice, multiplicity: np.ndarray, n_first: np.ndarray, rng) -> np.ndarray:
    """Cell sums of one bucket's first-sample copies for every permutation, :data:`BLOCK` count tables a pass."""
    out = np.zeros((units.n_cells, n_first.size))
    exact32 = not units.has_incomplete(held) and int(multiplicity.sum()) < 2**24
    dtype = np.float32 if exact32 else np.float64  # float32 sums of copies are exact below 2**24
    scratch = np.empty((units.n_cells + 1, BLOCK), dtype=dtype)
    for start, splits in _bucket_draws(multiplicity, n_first, rng):
        for first in range(0, splits.shape[0], BLOCK):
            width = min(BLOCK, splits.shape[0] - first)
            out[:, start + first: start + first + width] = units.cell_sums(
                splits[first: first + width], units=held, dtype=dtype, out=scratch if width == BLOCK else None)
    return out


def _bucket_draws(multiplicity: np.ndarray, n_first: np.ndarray, rng):
    """Yield ``(start, splits)``: a bucket's splits (a row each) in batches of :data:`BATCH_CELLS`, from its stream.

    The batches depend on the bucket alone, so the draws do too; ``splits`` is a reused buffer.
    """
    size, n_units = n_first.size, multiplicity.size
    batch = int(max(1, min(size, BATCH_CELLS // max(n_units, 1))))
    buffer = np.empty((batch, n_units), dtype=np.int32 if int(multiplicity.sum()) < 2**31 else np.int64)
    for start in range(0, size, batch):
        k = min(batch, size - start)
        yield start, _split_draws(multiplicity, n_first[start: start + k], k, rng, out=buffer[:k]).T


def permutation_splits(codes: np.ndarray, multiplicity: np.ndarray, n_first: int, n_permutations: int, *,
                       random_state=None, stages: Sequence[int] = ()) -> np.ndarray:
    """Return the permutations the engine draws for a pool: copies of every distinct row sent to the first sample.

    The same draws as :func:`~bnfisher.comparison.permutation_statistics` with the same
    ``random_state`` (on any number of threads, partitions or workers): for checking the
    engine from the definition, and for reading which rows a permutation moved.

    Parameters
    ----------
    codes : ndarray of int, shape (n_distinct, n_variables)
        The pool's distinct rows, in the kernel's variable order (-1 for a missing cell).
    multiplicity : ndarray of int, shape (n_distinct,)
        Their pooled copies.
    n_first : int
        Rows of the first sample.
    n_permutations : int
    random_state : None, int or Generator
    stages : sequence of int, default=()
        As :meth:`NullPlan.draw` (the rounds of a sequential test, :class:`~bnfisher.comparison.EarlyStop`).

    Returns
    -------
    ndarray of int64, shape (n_permutations, n_distinct)
        In the order of ``codes``.

    Examples
    --------
    >>> import numpy as np
    >>> splits = permutation_splits(np.array([[0], [1], [2]]), np.array([2, 1, 3]), 4, 5, random_state=0)
    >>> splits.sum(axis=1).tolist(), bool((splits <= [2, 1, 3]).all())
    ([4, 4, 4, 4, 4], True)
    """
    multiplicity = np.asarray(multiplicity, dtype=np.int64)
    buckets = row_buckets(codes, n_buckets(int(multiplicity.sum())))
    order = bucket_order(codes, multiplicity, buckets)
    sizes = np.bincount(buckets, weights=multiplicity, minlength=n_buckets(int(multiplicity.sum()))).astype(np.int64)
    plan = NullPlan.draw(check_random_state(random_state), n_first, sizes, n_permutations, n_cells=0,
                         stages=stages)
    ordered_buckets = buckets[order]
    present, starts = np.unique(ordered_buckets, return_index=True)
    bounds = np.append(starts, order.size)
    out = np.zeros((n_permutations, multiplicity.size), dtype=np.int64)
    for r in range(plan.n_rounds):
        counts, rows = plan.bucket_counts(r), plan.round(r)
        for j, b in enumerate(present):
            held = order[bounds[j]: bounds[j + 1]]
            for start, splits in _bucket_draws(multiplicity[held], counts[:, b], plan.stream(b, r)):
                out[rows.start + start: rows.start + start + splits.shape[0], held] = splits
    return out
