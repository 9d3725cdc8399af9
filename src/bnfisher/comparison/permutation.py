"""The permutation engine of the two-sample test: draws over distinct rows, statistics per family."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._utils.validation import check_positive_int, check_random_state
from bnfisher.comparison.aggregate import TIE_TOLERANCE, split_scores
from bnfisher.comparison.anytime import AnytimeTest, RunningTests
from bnfisher.comparison.null import (
    NullPlan,
    PooledRows,
    bucket_fixed_sums,
    bucket_null_sums,
    bucket_order,
    n_buckets,
    row_buckets,
    split_draws,
)
from bnfisher.comparison.null_scale import family_moments
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.data.counts import distinct_rows
from bnfisher.data.providers import backend_for, in_memory
from bnfisher.data.rows import DistinctRows
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import DataError, DataWarning, OptionError
from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.columns import CellLayout, KernelColumns

__all__ = ["LocalPool", "NullScale", "PermutationStatistics", "SampleStatistics", "cell_witness",
           "permutation_pvalue", "permutation_statistics", "pooled_statistics", "split_draws"]


@dataclass(frozen=True)
class NullScale:
    r"""The size of every block's statistic under no difference, known before any permutation.

    What the anytime aggregate test (:func:`~bnfisher.comparison.aggregate.split_scores`) needs to
    score one split alone: a family's part of eq. 10 and a column's Pearson statistic divided by
    their mean over all splits and referred to a chi-square law of their free parameters.

    Attributes
    ----------
    family_mean : ndarray of shape (n_families,)
        Each family's MMD² averaged over all splits of the pool: with ``S_f`` the sum over the
        pooled rows of ``||phi_f(x) - phi_f-bar||^2``, ``N S_f / (n m (N - 1))`` (exact for
        complete rows, sampling without replacement; rows with missing cells count their
        cells' weights).
    family_variance : ndarray of shape (n_families,)
        Its variance over all splits, exact for complete rows (:mod:`bnfisher.comparison.null_scale`: the
        features' second and fourth moments in the pool, sampling without replacement).
    family_df : ndarray of int, shape (n_families,)
        Each family's free parameters seen in the pool: over the parent configurations
        seen, the child's states seen there minus one.
    column_df : ndarray of int, shape (n_families,)
        Each family's child's states seen in the pool minus one (the per-column Pearson
        statistics' degrees of freedom).
    """

    family_mean: np.ndarray
    family_variance: np.ndarray
    family_df: np.ndarray
    column_df: np.ndarray


@dataclass(frozen=True)
class SampleStatistics:
    """What one side of the observed split holds: its count tables, rows, mean embedding and witness values.

    Attributes
    ----------
    counts : list
        The sample's count table of every family (expected counts where values are missing;
        None for a family without features), in ``kernel.families`` order.
    n : int
        Rows of the sample.
    mean : ndarray
        Its mean embedding.
    witness : ndarray or None
        With ``witness=True``: the witness ``<Phi(x), mu_X - mu_Y>`` of each row as given (each
        distinct row once, for :class:`~bnfisher.data.rows.DistinctRows`).

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> from bnfisher.comparison import permutation_statistics
    >>> outcome = permutation_statistics(kernel, data.iloc[::2], data.iloc[1::2], n_permutations=9, random_state=0)
    >>> outcome.x.n + outcome.y.n == len(data), outcome.x.mean.shape == outcome.y.mean.shape
    (True, True)
    """

    counts: list
    n: int
    mean: np.ndarray
    witness: np.ndarray | None = None


@dataclass(frozen=True)
class PermutationStatistics:
    """Per-family MMD² of the observed split and of every permutation (see :func:`permutation_statistics`).

    Attributes
    ----------
    families : list of int
        Indices (in ``kernel.families``) of the families with features.
    observed : ndarray of shape (n_families,)
        Each family's contribution ``||mu_X,f - mu_Y,f||^2``; they sum to eq. 10.
    null : ndarray of shape (n_permutations, n_families)
        The same for every permutation.
    unbiased : float
        ``MMD^2_u`` of the observed split.
    full_statistic : float or None
        For data beyond memory: eq. 10 between the whole samples.
    x, y : SampleStatistics
        Each observed sample's count tables, rows, mean embedding and witness values.
    columns_observed : ndarray of shape (n_families,)
        Each family's child, compared by its marginal distribution alone: Pearson's
        statistic ``n m / (n + m) sum_a (p^X_a - p^Y_a)^2 / p_a`` (``p_a`` pooled).
    scale : NullScale
        Every block's mean and degrees of freedom under no difference.
    columns_null : ndarray of shape (n_permutations, n_families)
        The same for every permutation.
    overlap_observed : float
        The overlap (Hamming) kernel's MMD², ``sum_v sum_a (p^X_va - p^Y_va)^2``.
    overlap_null : ndarray of shape (n_permutations,)

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.comparison import permutation_statistics
    >>> outcome = permutation_statistics(kernel, A, B, n_permutations=99, random_state=0)
    >>> outcome.null.shape[0]
    99
    """

    families: list
    observed: np.ndarray
    null: np.ndarray
    unbiased: float
    full_statistic: float | None
    x: SampleStatistics
    y: SampleStatistics
    columns_observed: np.ndarray | None = None
    columns_null: np.ndarray | None = None
    scale: NullScale | None = None
    overlap_observed: float = 0.0
    overlap_null: np.ndarray | None = None


def permutation_statistics(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, random_state=None,
                           max_rows: int | None = None, witness: bool = False,
                           early_stop: EarlyStop | AnytimeTest | None = None) -> PermutationStatistics:
    """Per-family MMD² of two samples and of ``n_permutations`` random re-splits, from count tables.

    The engine of :func:`mmd_test` and :func:`bnfisher.comparison.explain.mmd_by_family`: with the
    same ``random_state`` both see the same permutations.  The pooled rows are
    compressed to distinct rows with multiplicities; a permutation is the number of
    copies of each distinct row sent to the first sample (a multivariate
    hypergeometric draw: the same null as permuting rows), and every family's count
    table is a weighted sum over distinct rows (one cell per complete family, the
    posterior where values are missing).  A batch of draws is one pass over the
    distinct rows' cells, and yields every family's statistic at once.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Without ``normalize``.
    X, Y : DataFrame, ndarray of int, EncodedData, DistinctRows, Dask DataFrame or path
    n_permutations : int, default=1000
    random_state : None, int or Generator
    max_rows : int, optional
        For data beyond memory whose backend cannot draw the null where the rows lie:
        the most distinct rows a sample may bring into memory (see :func:`mmd_test`).
    witness : bool, default=False
        Also return the witness of every given row (``witness_x``, ``witness_y``).
    early_stop : AnytimeTest or EarlyStop, optional
        Stop once the decision is settled (:class:`~bnfisher.comparison.AnytimeTest`) or at a
        checkpoint where the test's p-value is plainly large
        (:class:`~bnfisher.comparison.EarlyStop`); ``null`` then holds the permutations done
        (an anytime test's stopping time may fall before the end of the last round).  Default:
        every permutation.

    Returns
    -------
    PermutationStatistics

    Raises
    ------
    OptionError
        For a normalized kernel.
    DataError
        When a sample has fewer than 2 rows.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.comparison import permutation_statistics
    >>> outcome = permutation_statistics(kernel, A, B, n_permutations=99, random_state=0)
    >>> outcome.null.shape[0]
    99
    """
    if kernel.normalize:
        raise OptionError("mmd_test needs a kernel without normalize=True (the MMD must come from counts).")
    rng = check_random_state(random_state)
    n_permutations = check_positive_int(n_permutations, "n_permutations")
    limit = None if max_rows is None else check_positive_int(max_rows, "max_rows")
    pool, full_statistic = _pool(kernel, X, Y, limit=limit, witness=witness, rng=rng)
    return replace(_pooled_statistics(pool, n_permutations, rng, witness=witness, early_stop=early_stop),
                   full_statistic=full_statistic)


def pooled_statistics(pool: PooledRows, n_permutations: int, random_state=None, *,
                      witness: bool = False,
                      early_stop: EarlyStop | AnytimeTest | None = None) -> PermutationStatistics:
    """Every statistic of the observed split and of ``n_permutations`` re-splits of pooled rows held anywhere.

    The engine of :func:`permutation_statistics` once the samples are pooled: in memory
    (:class:`LocalPool`) or held where they lie (a backend's ``pooled_rows``).

    Parameters
    ----------
    pool : PooledRows
    n_permutations : int
    random_state : None, int or Generator
    witness : bool, default=False
        Also the witness of every given row (a :class:`LocalPool` only).
    early_stop : AnytimeTest or EarlyStop, optional
        As :func:`permutation_statistics`: the rounds of the null end at its looks.

    Returns
    -------
    PermutationStatistics
    """
    return _pooled_statistics(pool, n_permutations, check_random_state(random_state), witness=witness,
                              early_stop=early_stop)


def _pooled_statistics(pool: PooledRows, n_permutations: int, rng: np.random.Generator, *, witness: bool,
                       early_stop: EarlyStop | AnytimeTest | None) -> PermutationStatistics:
    """:func:`pooled_statistics` with its generator resolved (the caller's ``random_state``, checked once)."""
    layout, n_x, n_y = pool.layout, pool.n_x, pool.n_y
    fixed, sizes = pool.fixed_sums()
    observed_counts, pooled_counts = fixed[: layout.n_cells].T
    statistics = _Statistics(layout, n_x, n_y, pooled_counts)
    observed_parts, observed_columns, observed_overlap = (part[0] for part in statistics(observed_counts[:, None]))
    check_allocation(8.0 * n_permutations * len(layout.active), f"{n_permutations} permutations' statistics",
                     "use fewer permutations (`n_permutations`; 1,000-10,000 resolve p-values to 0.1-0.01%).")
    stages = early_stop.stages(n_permutations) if early_stop is not None else ()
    plan = NullPlan.draw(rng, n_x, sizes, n_permutations, n_cells=layout.n_cells, stages=stages)
    null_parts = np.empty((n_permutations, len(layout.active)))
    null_columns = np.empty((n_permutations, len(layout.active)))
    null_overlap = np.empty(n_permutations)
    kernel = layout.kernel
    counts_x: list = [None] * len(kernel.families)
    counts_y: list = [None] * len(kernel.families)
    for k, i in enumerate(layout.active):
        counts_x[i] = observed_counts[layout.offsets[k]: layout.offsets[k + 1]]
        counts_y[i] = pooled_counts[layout.offsets[k]: layout.offsets[k + 1]] - counts_x[i]
    mean_x = kernel.mean_embedding_from_counts(counts_x, n_x)
    mean_y = kernel.mean_embedding_from_counts(counts_y, n_y)
    # MMD^2_u: sum_{i != j} k(x_i, x_j) = ||sum_i phi(x_i)||^2 - sum_i k(x_i, x_i), so for Y.
    diag_x, diag_pool = fixed[layout.n_cells]
    unbiased = ((n_x**2 * float(mean_x @ mean_x) - diag_x) / (n_x * (n_x - 1))
                + (n_y**2 * float(mean_y @ mean_y) - (diag_pool - diag_x)) / (n_y * (n_y - 1))
                - 2 * float(mean_x @ mean_y))
    outcome = PermutationStatistics(
        families=list(layout.active), observed=observed_parts, null=null_parts, unbiased=unbiased,
        full_statistic=None, x=SampleStatistics(counts_x, n_x, mean_x), y=SampleStatistics(counts_y, n_y, mean_y),
        columns_observed=observed_columns, columns_null=null_columns, scale=statistics.scale,
        overlap_observed=float(observed_overlap), overlap_null=null_overlap)
    done = n_permutations
    settled = _settled(early_stop, outcome, stages)
    for r in range(plan.n_rounds):
        rows = plan.round(r)
        null_parts[rows], null_columns[rows], null_overlap[rows] = statistics(
            pool.null_sums(plan, r, plan.bucket_counts(r)))
        if settled(rows):
            done = rows.stop
            break
    _check_finite(observed_parts, null_parts[:done])
    outcome = _first(outcome, done)
    if isinstance(pool, LocalPool) and witness:
        witness_x, witness_y = pool.witness(mean_x - mean_y)
        outcome = replace(outcome, x=replace(outcome.x, witness=witness_x), y=replace(outcome.y, witness=witness_y))
    return outcome


def _settled(rule, outcome: PermutationStatistics, stages: tuple):
    """Return the check, after each round of ``outcome``'s null is filled in, of whether ``rule`` stops the test.

    An anytime test scores each round's permutations once (:class:`~bnfisher.comparison.anytime.RunningTests`);
    checkpoints look at every permutation done, at their stages only.
    """
    if isinstance(rule, AnytimeTest):
        running = RunningTests(rule, split_scores(_rows(outcome, slice(0, 0)), rule.method))

        def anytime(rows: slice) -> bool:
            _check_finite(outcome.observed, outcome.null[rows])
            return running.add(split_scores(_rows(outcome, rows), rule.method)[1:, None])

        return anytime

    def checkpoint(rows: slice) -> bool:
        if rule is None or rows.stop not in stages:
            return False
        _check_finite(outcome.observed, outcome.null[: rows.stop])
        return bool(rule.stops(rows.stop, _first(outcome, rows.stop)))

    return checkpoint


def _first(outcome: PermutationStatistics, done: int) -> PermutationStatistics:
    """Return the statistics of the observed split and of the first ``done`` permutations."""
    return outcome if done == outcome.null.shape[0] else _rows(outcome, slice(0, done))


def _rows(outcome: PermutationStatistics, rows: slice) -> PermutationStatistics:
    """Return the statistics of the observed split and of the permutations ``rows``."""
    assert outcome.columns_null is not None and outcome.overlap_null is not None  # set by pooled_statistics
    return replace(outcome, null=outcome.null[rows], columns_null=outcome.columns_null[rows],
                   overlap_null=outcome.overlap_null[rows])


def _check_finite(observed: np.ndarray, null: np.ndarray) -> None:
    if not (np.all(np.isfinite(observed)) and np.all(np.isfinite(null))):
        raise DataError("The MMD² is not finite (a cell of probability ~0 under the network); no p-value is given "
                        "for it. Refit the network's CPTs with a pseudocount.")


class _Statistics:
    """Per-family MMD², per-column Pearson and overlap MMD² of first-sample cell sums (a column per split)."""

    def __init__(self, layout: CellLayout, n_x: int, n_y: int, pooled_counts: np.ndarray):
        self.layout, self.n_x, self.n_y, self.pooled_counts = layout, n_x, n_y, pooled_counts
        # Pooled marginal frequency of each family's child (the weights of the per-column Pearson statistics).
        n = n_x + n_y
        self.inverse_marginal, columns_df = [], []
        for pooled_marginal in layout.marginals(pooled_counts[:, None] / n):
            self.inverse_marginal.append(n_x * n_y / n * np.divide(
                1.0, pooled_marginal, out=np.zeros_like(pooled_marginal), where=pooled_marginal > 0))
            columns_df.append(max(int(np.sum(pooled_marginal > 0)) - 1, 0))
        mean, variance, df = family_moments(layout, pooled_counts, n_x, n_y)
        self.scale = NullScale(mean, variance, df, np.asarray(columns_df))

    def __call__(self, counts_x: np.ndarray) -> tuple:
        """Return the three statistics of every column of ``counts_x`` (shape ``(n_cells, k)``)."""
        n_x, n_y, layout = self.n_x, self.n_y, self.layout
        difference = counts_x * (1 / n_x + 1 / n_y) - (self.pooled_counts / n_y)[:, None]  # counts_x/n_x - .._y/n_y
        marginal = layout.marginals(difference)
        k = counts_x.shape[1]
        columns = np.stack([np.sum(m**2 * w, axis=0) for m, w in zip(marginal, self.inverse_marginal)], axis=1) \
            if marginal else np.zeros((k, 0))
        overlap = sum((np.sum(m**2, axis=0) for m in marginal), np.zeros(k))
        return layout.mmd2_by_family(difference), columns, overlap


@dataclass(frozen=True)
class _Sample:
    """One sample as the engine takes it: distinct rows, their copies, and each given row's distinct row.

    ``codes`` are in the kernel's order; ``given`` serves a witness row by row (None when the rows were given
    distinct).
    """

    codes: np.ndarray
    copies: np.ndarray
    given: np.ndarray | None = None


def _common_backend(X, Y):
    """Return the backend that holds both samples and can pool them where they lie, or None."""
    backends = [None if isinstance(data, DistinctRows) or in_memory(data) else backend_for(data) for data in (X, Y)]
    if backends[0] is not None and backends[0] is backends[1] and backends[0].pooled_rows is not None:
        return backends[0]
    return None


def _sample(kernel: FamilyKernel, data, *, limit: int, witness: bool, rng) -> tuple:
    """One sample's distinct rows and copies, and whether they are a uniform subsample of ``limit`` rows."""
    if isinstance(data, DistinctRows):  # reduced already (drift reduces its reference once)
        return _Sample(kernel.encode(data.encoded).codes, data.copies), False
    if in_memory(data):  # reduced here, a block at a time: no pooled copy of the rows
        rows = DistinctRows.of(kernel.encode(data), with_inverse=witness)
        return _Sample(rows.encoded.codes, rows.copies, rows.inverse), False
    # Distributed rows: a group-by to distinct rows and counts, which is all the test needs.
    rows, sampled = DistinctRows.from_provider(kernel.provider(data), max_rows=limit, random_state=rng)
    return _Sample(kernel.encode(rows.encoded).codes, rows.copies), sampled


def _pool(kernel: FamilyKernel, X, Y, *, limit: int | None, witness: bool, rng) -> tuple[PooledRows, float | None]:
    """Resolve both samples to pooled distinct rows: in memory, or held where they lie by a backend that can.

    Data beyond memory whose backend cannot draw the permutations where the rows are is grouped to distinct rows
    where it lies; a sample with more than ``limit`` distinct rows is subsampled (with a warning), and then the
    second value is eq. 10 of the whole samples.
    """
    backend = None if witness else _common_backend(X, Y)
    if backend is not None:
        if limit is not None:
            warnings.warn(f"`max_rows={limit}` has no effect on {backend.name} data: the permutation test runs "
                          "where the rows lie and the client holds none of them. Leave it out.", DataWarning,
                          stacklevel=4)
        return backend.pooled_rows(kernel, X, Y), None
    limit = 10_000_000 if limit is None else limit
    samples, sampled = zip(*(_sample(kernel, data, limit=limit, witness=witness, rng=rng) for data in (X, Y)))
    full_statistic = None
    if any(sampled):
        warnings.warn(f"A sample has more than max_rows={limit} distinct rows, too many to hold in memory: "
                      f"the permutation test runs on a uniform subsample of {limit} rows of each sample "
                      "(`full_statistic` holds eq. 10 of the whole samples). Raise `max_rows` if memory "
                      "allows.", UserWarning, stacklevel=4)
        full_statistic = kernel.mmd(*(data if in_memory(data) else kernel.provider(data) for data in (X, Y)))
    n_x, n_y = (int(sample.copies.sum()) for sample in samples)
    if n_x < 2 or n_y < 2:
        raise DataError(f"Each sample needs at least 2 rows; got {n_x} and {n_y}.")
    return LocalPool(kernel, *samples), full_statistic


class LocalPool:
    """Two samples' pooled distinct rows in memory, in hash buckets (a :class:`~bnfisher.comparison.null.PooledRows`).

    Statistics depend on the rows only through how many copies of each distinct row each side holds: the engine
    works on distinct rows (*units*; one inference per distinct row when values are missing) with their
    multiplicities, in :func:`~bnfisher.comparison.null.bucket_order`, and draws the buckets on every core.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    x, y : _Sample
    """

    def __init__(self, kernel: FamilyKernel, x: _Sample, y: _Sample):
        self.kernel, self.x, self.y = kernel, x, y
        self.n_x, self.n_y = int(x.copies.sum()), int(y.copies.sum())
        codes = np.vstack([x.codes, y.codes])  # each sample's distinct rows
        first, inverse, _ = distinct_rows(codes, kernel.network.cardinalities)
        multiplicity = np.bincount(inverse, weights=np.concatenate([x.copies, y.copies]),
                                   minlength=first.size).astype(np.int64)
        in_first = np.bincount(inverse[: x.copies.size], weights=x.copies, minlength=first.size).astype(np.int64)
        unit_codes = codes[first]
        del codes
        self.n_buckets = n_buckets(self.n_x + self.n_y)
        buckets = row_buckets(unit_codes, self.n_buckets)
        order = bucket_order(unit_codes, multiplicity, buckets, kernel.network.cardinalities)
        rank = np.empty(order.size, dtype=np.intp)
        rank[order] = np.arange(order.size)
        self.inverse = rank[inverse]  # each sample's distinct rows' unit
        self.multiplicity, self.first, buckets = multiplicity[order], in_first[order], buckets[order]
        self.buckets, starts = np.unique(buckets, return_index=True)
        self.bounds = np.append(starts, buckets.size)
        self.sizes = np.bincount(buckets, weights=self.multiplicity, minlength=self.n_buckets).astype(np.int64)
        self._jobs = -1 if self.buckets.size > 1 else 1  # threads over the buckets (the sums do not depend on it)
        # Posterior weights of rows with missing cells are computed bucket by bucket, as a worker holding the bucket
        # computes them: the same values on every engine.
        network = kernel.network
        self.layout = KernelColumns(kernel, EncodedData(np.asfortranarray(unit_codes[order]), network.variables,
                                                        dict(network.states), schema=kernel.schema),
                                    batches=self.bounds, distinct=True)

    def fixed_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the observed split's and the pool's cell sums, and every bucket's rows.

        Returns
        -------
        sums : ndarray of shape (n_cells + 1, 2)
            :func:`~bnfisher.comparison.null.bucket_fixed_sums` of the pool.
        sizes : ndarray of int64, shape (n_buckets,)
            Pooled rows in every bucket.
        """
        return bucket_fixed_sums(self.layout, self.first, self.multiplicity, self.bounds, self.buckets,
                                 n_jobs=self._jobs), self.sizes

    def null_sums(self, plan: NullPlan, r: int, counts: np.ndarray) -> np.ndarray:
        """Return round ``r``'s first-sample cell sums (threads over the buckets; the same sums on any number).

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
        return bucket_null_sums(self.layout, self.multiplicity, self.bounds, self.buckets, plan, r,
                                counts[:, self.buckets], n_jobs=self._jobs)

    def witness(self, difference: np.ndarray) -> tuple:
        """Return ``<Phi(x), mu_X - mu_Y>`` of every row as given (its distinct row's cells' witness, summed).

        Parameters
        ----------
        difference : ndarray of shape (n_features,)
            ``mu_X - mu_Y``.

        Returns
        -------
        witness_x, witness_y : ndarray
        """
        values = self.layout.inner(cell_witness(self.kernel, difference))[self.inverse]
        parts = (values[: self.x.codes.shape[0]], values[self.x.codes.shape[0]:])
        return tuple(part if sample.given is None else part[sample.given]
                     for part, sample in zip(parts, (self.x, self.y)))


def cell_witness(kernel: FamilyKernel, difference: np.ndarray) -> np.ndarray:
    """Return ``<F[c], difference>`` of every cell ``c`` of the kernel's active families, side by side.

    A row's witness ``<Phi(x), mu_X - mu_Y>`` is the sum of its cells' (a posterior-weighted
    sum where it has missing cells): :meth:`~bnfisher.kernels.columns.KernelColumns.inner`.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    difference : ndarray of shape (n_features,)
        ``mu_X - mu_Y``.

    Returns
    -------
    ndarray of shape (n_cells,)
        Cells as in :class:`~bnfisher.kernels.columns.CellLayout`.
    """
    parts = []
    for i in CellLayout(kernel).active:  # a cell meets only its configuration's block
        d = kernel.block_width(i)
        block = difference[kernel.block_offsets[i]: kernel.block_offsets[i + 1]].reshape(-1, d)
        features = kernel.cell_features(i).reshape(block.shape[0], -1, d)
        parts.append(np.einsum("jad,jd->ja", features, block).ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def permutation_pvalue(observed, null) -> np.ndarray:
    r"""Return the permutation p-value by the one rule of bnfisher: :math:`p = (1 + \#\{b : T_b \ge T\}) / (1 + B)`.

    Ties count as at least as extreme (up to rounding: a null statistic within a
    relative :data:`~bnfisher.comparison.aggregate.TIE_TOLERANCE` of the observed one
    is a tie), and the observed split counts as one of the permutations, so
    ``p >= 1 / (1 + B)`` and the test has level at most ``alpha`` for every ``B``
    (Phipson & Smyth 2010).

    Parameters
    ----------
    observed : float or ndarray of shape (m,) or (k, m)
        Observed statistics (larger means more extreme); with a 2-D ``null``, the
        last axis runs over its columns.
    null : ndarray of shape (B,) or (B, m)
        The statistics of ``B`` permutations, a column per observed statistic.

    Returns
    -------
    ndarray of the shape of ``observed``

    References
    ----------
    .. [1] Phipson & Smyth (2010). Permutation p-values should never be zero.
       Statistical Applications in Genetics and Molecular Biology 9(1).

    Examples
    --------
    >>> float(permutation_pvalue(2.0, np.array([1.0, 2.0, 3.0])))   # (1 + 2) / (1 + 3)
    0.75
    """
    observed = np.asarray(observed, dtype=np.float64)
    null = np.asarray(null, dtype=np.float64)
    threshold = observed - (TIE_TOLERANCE * np.abs(observed) + 1e-300)  # rounding noise is a tie, not a smaller one
    if null.ndim == 1:
        exceed = np.sum(null >= threshold[..., None], axis=-1) if threshold.ndim else np.sum(null >= threshold)
        return (1 + exceed) / (1 + null.shape[0])
    if null.shape[1] == 0:  # no statistic (e.g. no family with a free parameter)
        return np.ones(threshold.shape)
    # One sort per column, then a binary search per statistic: O(B log B) for a whole (k, m) block of statistics.
    ordered = np.sort(null, axis=0)
    flat = threshold.reshape(-1, null.shape[1])
    below = np.stack([np.searchsorted(ordered[:, f], flat[:, f], side="left") for f in range(null.shape[1])], axis=1)
    return ((1 + null.shape[0] - below) / (1 + null.shape[0])).reshape(threshold.shape)
