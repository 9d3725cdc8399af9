"""The permutation engine of the two-sample test: draws over distinct rows, statistics per family."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, overload

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._utils.parallel import prefetch
from bnfisher._utils.validation import check_positive_int, check_random_state
from bnfisher.data.providers import in_memory
from bnfisher.data.rows import DistinctRows
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import DataError, OptionError
from bnfisher.kernels.base import FamilyKernel

__all__ = ["permutation_pvalue", 'PermutationStatistics', 'permutation_statistics', 'split_draws']


@dataclass
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
    mean_x, mean_y : ndarray
        The observed samples' mean embeddings.
    columns_observed : ndarray of shape (n_families,)
        Each family's child, compared by its marginal distribution alone: Pearson's
        statistic ``n m / (n + m) sum_a (p^X_a - p^Y_a)^2 / p_a`` (``p_a`` pooled).
    columns_df : ndarray of shape (n_families,)
        Its degrees of freedom: the child's states seen in the pool, minus one.
    columns_null : ndarray of shape (n_permutations, n_families)
        The same for every permutation.
    overlap_observed : float
        The overlap (Hamming) kernel's MMD², ``sum_v sum_a (p^X_va - p^Y_va)^2``.
    overlap_null : ndarray of shape (n_permutations,)
    counts_x, counts_y : list
        Each sample's count table of every family (expected counts where values are
        missing; None for a family without features), in ``kernel.families`` order.
    n_x, n_y : int
        Rows of each sample.
    witness_x, witness_y : ndarray or None
        With ``witness=True``: the witness ``<Phi(x), mu_X - mu_Y>`` of each row of ``X``
        and of ``Y`` as given (each distinct row once, for
        :class:`~bnfisher.data.rows.DistinctRows`).

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
    mean_x: np.ndarray
    mean_y: np.ndarray
    columns_observed: np.ndarray | None = None
    columns_null: np.ndarray | None = None
    columns_df: np.ndarray | None = None
    overlap_observed: float = 0.0
    overlap_null: np.ndarray | None = None
    counts_x: list | None = None
    counts_y: list | None = None
    n_x: int = 0
    n_y: int = 0
    witness_x: np.ndarray | None = None
    witness_y: np.ndarray | None = None


def permutation_statistics(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, random_state=None,
                           max_rows: int = 10_000_000, witness: bool = False) -> PermutationStatistics:
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
    max_rows : int, default=10_000_000
        For data beyond memory: the most distinct rows a sample may have for the
        exact test (see :func:`mmd_test`).
    witness : bool, default=False
        Also return the witness of every given row (``witness_x``, ``witness_y``).

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
    limit = check_positive_int(max_rows, "max_rows")
    samples, full_statistic = _samples(kernel, X, Y, limit=limit, witness=witness, rng=rng)
    pool = _Pool(kernel, *samples)
    observed = pool.observed(witness=witness)
    null_parts, null_columns, null_overlap = pool.null(n_permutations, rng)
    if not (np.all(np.isfinite(observed["observed"])) and np.all(np.isfinite(null_parts))):
        raise DataError("The MMD² is not finite (a cell of probability ~0 under the network); no p-value is given "
                        "for it. Refit the network's CPTs with a pseudocount.")
    return PermutationStatistics(families=list(pool.units.active), null=null_parts, columns_null=null_columns,
                                 overlap_null=null_overlap, full_statistic=full_statistic, **observed)


@dataclass(frozen=True)
class _Sample:
    """One sample as the engine takes it: distinct rows, their copies, and each given row's distinct row.

    ``codes`` are in the kernel's order; ``given`` serves a witness row by row (None when the rows were given
    distinct).
    """

    codes: np.ndarray
    copies: np.ndarray
    given: np.ndarray | None = None


def _samples(kernel: FamilyKernel, X, Y, *, limit: int, witness: bool, rng) -> tuple[tuple, float | None]:
    """Resolve both samples to distinct rows with copies (tables in memory, DistinctRows, or data beyond memory).

    Data beyond memory is grouped where it lies; a sample with more than ``limit`` distinct rows is subsampled
    (with a warning), and then ``full_statistic`` is eq. 10 of the whole samples.
    """
    full_statistic = None
    samples = []
    for data in (X, Y):
        if isinstance(data, DistinctRows):  # reduced already (drift reduces its reference once)
            samples.append(_Sample(kernel.encode(data.encoded).codes, data.copies))
        elif in_memory(data):  # reduced here, a block at a time: no pooled copy of the rows
            rows = DistinctRows.of(kernel.encode(data), with_inverse=witness)
            samples.append(_Sample(rows.encoded.codes, rows.copies, rows.inverse))
        else:  # distributed rows: a group-by to distinct rows and counts, which is all the test needs
            rows, sampled = DistinctRows.from_provider(kernel.provider(data), max_rows=limit, random_state=rng)
            if sampled:
                warnings.warn(f"A sample has more than max_rows={limit} distinct rows, too many to hold in memory: "
                              f"the permutation test runs on a uniform subsample of {limit} rows of each sample "
                              "(`full_statistic` holds eq. 10 of the whole samples). Raise `max_rows` if memory "
                              "allows.", UserWarning, stacklevel=4)
                full_statistic = kernel.mmd(kernel.provider(X) if not in_memory(X) else X,
                                            kernel.provider(Y) if not in_memory(Y) else Y)
            samples.append(_Sample(kernel.encode(rows.encoded).codes, rows.copies))
    n_x, n_y = (int(sample.copies.sum()) for sample in samples)
    if n_x < 2 or n_y < 2:
        raise DataError(f"Each sample needs at least 2 rows; got {n_x} and {n_y}.")
    return tuple(samples), full_statistic


class _Pool:
    """The pooled distinct rows of two samples (*units*) with their copies, and the statistics of any split of them.

    ``multiplicity`` counts each unit's copies in the pool, ``first`` in the first sample.
    Statistics depend on the rows only through how many copies of each distinct row each side holds: the engine
    works on distinct rows (one inference per distinct row when values are missing) with their multiplicities.
    """

    def __init__(self, kernel: FamilyKernel, x: _Sample, y: _Sample):
        self.kernel, self.x, self.y = kernel, x, y
        self.n_x, self.n_y = int(x.copies.sum()), int(y.copies.sum())
        pooled = EncodedData(np.vstack([x.codes, y.codes]), kernel.network.variables, dict(kernel.network.states),
                             schema=kernel.schema)
        self.units = units = kernel.columns(pooled)
        representative = np.empty(units.n_units, dtype=np.intp)  # each distinct row's first place in the pool
        representative[units.inverse[::-1]] = np.arange(units.inverse.size - 1, -1, -1)
        unit_codes = pooled.codes[representative]
        del pooled
        multiplicity = np.bincount(units.inverse, weights=np.concatenate([x.copies, y.copies]),
                                   minlength=units.n_units).astype(np.int64)
        observed = np.bincount(units.inverse[: x.copies.size], weights=x.copies,
                               minlength=units.n_units).astype(np.int64)
        # Every side's count tables sum copies of distinct rows: exact in float64, and in float32 (half the memory
        # traffic) below 2**24 copies, posterior weights aside.
        self.dtype = np.float32 if units.incomplete.size == 0 and max(self.n_x, self.n_y) < 2**24 else np.float64
        self.observed_counts, self.pooled_counts = units.cell_sums(
            np.stack([observed, multiplicity]).astype(np.float64)).T
        # Distinct rows in order of multiplicity: split_draws then fills contiguous blocks, and the count tables read
        # the cell index front to back. Ties go by the rows' codes, so the draws, and the p-values, depend on the
        # samples as multisets of rows: not on the rows' order, and a profile gives its table's answer.
        order = np.lexsort(np.vstack([unit_codes.T[::-1], multiplicity[None, :]]))
        units.renumber(order)
        self.multiplicity, self.first = multiplicity[order], observed[order]
        # Pooled marginal frequency of each family's child (the weights of the per-column Pearson statistics).
        n = self.n_x + self.n_y
        self.inverse_marginal, self.columns_df = [], []
        for pooled_marginal in units.marginals(self.pooled_counts[:, None] / n):
            self.inverse_marginal.append(self.n_x * self.n_y / n * np.divide(
                1.0, pooled_marginal, out=np.zeros_like(pooled_marginal), where=pooled_marginal > 0))
            self.columns_df.append(max(int(np.sum(pooled_marginal > 0)) - 1, 0))

    def parts(self, draws: np.ndarray, out: np.ndarray | None = None) -> tuple:
        """Return the per-family MMD², per-column Pearson and overlap MMD² of every row of ``draws``."""
        n_x, n_y = self.n_x, self.n_y
        counts_x = self.units.cell_sums(draws, dtype=self.dtype, out=out).astype(np.float64)
        difference = counts_x * (1 / n_x + 1 / n_y) - (self.pooled_counts / n_y)[:, None]  # counts_x/n_x - .._y/n_y
        marginal = self.units.marginals(difference)
        columns = np.stack([np.sum(m**2 * w, axis=0) for m, w in zip(marginal, self.inverse_marginal)], axis=1) \
            if marginal else np.zeros((draws.shape[0], 0))
        overlap = sum((np.sum(m**2, axis=0) for m in marginal), np.zeros(draws.shape[0]))
        return self.units.mmd2_by_family(difference), columns, overlap

    def observed(self, *, witness: bool) -> dict:
        """Return the observed split's statistics, by the names of :class:`PermutationStatistics`' fields."""
        kernel, units, active = self.kernel, self.units, self.units.active
        observed_parts, observed_columns, observed_overlap = (part[0] for part in self.parts(self.first[None, :]))
        counts_x: list = [None] * len(kernel.families)
        counts_y: list = [None] * len(kernel.families)
        for k, i in enumerate(active):
            counts_x[i] = self.observed_counts[units.offsets[k]: units.offsets[k + 1]]
            counts_y[i] = self.pooled_counts[units.offsets[k]: units.offsets[k + 1]] - counts_x[i]
        mean_x = kernel.mean_embedding_from_counts(counts_x, self.n_x)
        mean_y = kernel.mean_embedding_from_counts(counts_y, self.n_y)
        return {"observed": observed_parts, "columns_observed": observed_columns,
                "overlap_observed": float(observed_overlap), "columns_df": np.asarray(self.columns_df),
                "unbiased": self._unbiased(mean_x, mean_y), "mean_x": mean_x, "mean_y": mean_y,
                "counts_x": counts_x, "counts_y": counts_y, "n_x": self.n_x, "n_y": self.n_y,
                **dict(zip(("witness_x", "witness_y"), self._witness(mean_x - mean_y) if witness else (None, None)))}

    def _unbiased(self, mean_x: np.ndarray, mean_y: np.ndarray) -> float:
        """Return ``MMD^2_u`` (``sum_{i != j} k(x_i, x_j) = ||sum_i phi(x_i)||^2 - sum_i k(x_i, x_i)``, so for Y)."""
        n_x, n_y, self_kernel = self.n_x, self.n_y, self.units.diag  # K(x, x) of every distinct row
        within_x = (n_x**2 * float(mean_x @ mean_x) - float(self_kernel @ self.first)) / (n_x * (n_x - 1))
        within_y = (n_y**2 * float(mean_y @ mean_y) - float(self_kernel @ (self.multiplicity - self.first))) / (
            n_y * (n_y - 1))
        return within_x + within_y - 2 * float(mean_x @ mean_y)

    def _witness(self, difference: np.ndarray) -> tuple:
        """Return ``<Phi(x), mu_X - mu_Y>`` of every row as given (its distinct row's cells' witness, summed)."""
        active = self.units.active
        cell_witness = np.concatenate([_cell_witness(self.kernel, i, difference) for i in active]) if active else \
            np.zeros(0)
        values = self.units.inner(cell_witness)[self.units.inverse]
        parts = (values[: self.x.codes.shape[0]], values[self.x.codes.shape[0]:])
        return tuple(part if sample.given is None else part[sample.given]
                     for part, sample in zip(parts, (self.x, self.y)))

    def null(self, n_permutations: int, rng) -> tuple:
        """Return the statistics of ``n_permutations`` random re-splits of the copies (one stream, in batches).

        The copies of each distinct row sent first follow a multivariate hypergeometric law (the same null as
        permuting rows); a batch of draws is one pass over the distinct rows' cells.
        """
        units, active = self.units, self.units.active
        check_allocation(8.0 * n_permutations * len(active), f"{n_permutations} permutations' statistics",
                         "use fewer permutations (`n_permutations`; 1,000-10,000 resolve p-values to 0.1-0.01%).")
        null_parts = np.empty((n_permutations, len(active)))
        null_columns = np.empty((n_permutations, len(active)))
        null_overlap = np.empty(n_permutations)
        # Draws in batches of up to 2**25 cells (their random streams fix the p-values: keep the batches), count
        # tables of 64 draws at a time (benchmarks/permutations.py). Buffers are reused rather than fresh arrays,
        # whose page faults can cost more than the draws. On two cores the next batch is drawn while this one's count
        # tables are computed (one stream, drawn in the same order: the same p-values on any number of cores), into
        # two buffers in turn.
        batch = int(max(1, min(n_permutations, _BATCH_CELLS // max(units.n_units, 1))))
        width = min(batch, 64)
        count_buffer = np.empty((units.n_cells + 1, width), dtype=self.dtype)
        starts = range(0, n_permutations, batch)
        split_buffers = [np.empty((batch, units.n_units), dtype=np.int32) for _ in range(min(2, len(starts)))]

        def draw(position: int) -> tuple:
            size = min(batch, n_permutations - starts[position])
            return split_draws(self.multiplicity, self.n_x, size, random_state=rng,
                               out=split_buffers[position % 2][:size], defer=True)

        # The draws (one random stream) take longer than the count tables: the splits' last step, which draws
        # nothing, runs here rather than on the drawing thread.
        for start, (splits, picks) in zip(starts, prefetch(draw, range(len(starts)))):
            splits = splits.T  # a split per row, as drawn
            _even_out(splits, self.multiplicity, picks)
            size = splits.shape[0]
            for first in range(0, size, width):
                k = min(width, size - first)
                block = slice(start + first, start + first + k)
                null_parts[block], null_columns[block], null_overlap[block] = self.parts(
                    splits[first: first + k], out=count_buffer if k == width else None)
        return null_parts, null_columns, null_overlap


def _cell_witness(kernel: FamilyKernel, i: int, difference: np.ndarray) -> np.ndarray:
    """``<F[c], difference>`` of every cell ``c`` of family ``i`` (a cell meets only its configuration's block)."""
    d = kernel.block_width(i)
    block = difference[kernel.block_offsets[i]: kernel.block_offsets[i + 1]].reshape(-1, d)
    features = kernel.cell_features(i).reshape(block.shape[0], -1, d)
    return np.einsum("jad,jd->ja", features, block).ravel()


def permutation_pvalue(observed, null) -> np.ndarray:
    r"""Return the permutation p-value by the one rule of bnfisher: :math:`p = (1 + \#\{b : T_b \ge T\}) / (1 + B)`.

    Ties count as at least as extreme (up to rounding: a null statistic within a
    relative 1e-12 of the observed one is a tie), and the observed split counts as one
    of the permutations, so ``p >= 1 / (1 + B)`` and the test has level at most
    ``alpha`` for every ``B`` (Phipson & Smyth 2010).

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
    threshold = observed - (1e-12 * np.abs(observed) + 1e-300)  # rounding noise is a tie, not a smaller statistic
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


#: Split counts drawn per batch (permutations x distinct rows); the batches fix the random stream, so the p-values.
_BATCH_CELLS = 1 << 25

#: Distinct rows with at most this many copies are split by Bernoulli draws, the others by binomials.
_BERNOULLI_COPIES = 16


@overload
def split_draws(multiplicity: np.ndarray, n_first: int, size: int, *, random_state=None,
                out: np.ndarray | None = None, defer: Literal[False] = ...) -> np.ndarray: ...


@overload
def split_draws(multiplicity: np.ndarray, n_first: int, size: int, *, random_state=None,
                out: np.ndarray | None = None, defer: Literal[True]) -> tuple[np.ndarray, list]: ...


def split_draws(multiplicity, n_first, size, *, random_state=None, out=None, defer=False):
    """Random splits of pooled rows, as copies of each distinct row sent to the first sample.

    Each column is one uniformly random ``n_first``-subset of the pooled rows, counted by
    distinct row: a multivariate hypergeometric draw, the null of a permutation test.
    It is drawn in ``O(n_distinct)``: every row joins the first sample independently
    with probability ``n_first / N`` (a binomial per distinct row), then the excess
    or shortfall, ``O(sqrt(N))`` rows, is removed from or added to it uniformly at
    random.  The result is exchangeable over the rows and always has ``n_first`` of
    them, hence uniform over the ``n_first``-subsets.

    Parameters
    ----------
    multiplicity : ndarray of int, shape (n_distinct,)
        Copies of each distinct row in the pooled sample.
    n_first : int
        Rows of the first sample, ``0 <= n_first <= multiplicity.sum()``.
    size : int
        Number of splits.
    random_state : None, int or Generator
    out : ndarray of int32, shape (size, n_distinct), optional
        Where to write the splits (a buffer reused across calls saves the page faults of a fresh one).
    defer : bool, default=False
        Return the splits before their last, deterministic step, with what it needs:
        ``(splits, picks)``, completed by ``_even_out(splits.T, multiplicity, picks)``
        (the permutation engine runs that step on another thread than the draws).

    Returns
    -------
    ndarray of int32, shape (n_distinct, size)
        (A transposed view: each split is contiguous; of ``out`` when given.)

    Examples
    --------
    >>> import numpy as np
    >>> draws = split_draws(np.array([3, 1, 2]), 4, 5, random_state=0)
    >>> draws.sum(axis=0).tolist(), bool((draws <= [[3], [1], [2]]).all())
    ([4, 4, 4, 4, 4], True)
    """
    rng = check_random_state(random_state)
    multiplicity = np.asarray(multiplicity, dtype=np.int64)
    n_total = int(multiplicity.sum())
    # Every row's inclusion probability: a multiple of 2**-24, so that a float32 uniform below it has exactly that
    # probability, the same as each row's in the binomials (rows must be exchangeable; any common p will do).
    p = np.floor(n_first / n_total * 2**24) / 2**24 if n_total else 0.0
    # Draw in order of multiplicity (contiguous blocks of equal copies); sorted input needs no reordering.
    order = np.argsort(multiplicity, kind="stable")
    ordered = multiplicity[order]
    rows = np.empty((size, multiplicity.size), dtype=np.int32) if out is None else out  # one split per row
    bounds = np.searchsorted(ordered, np.arange(_BERNOULLI_COPIES + 2))
    # Few copies: a sum of Bernoulli draws per distinct row, copies c = 1 .. 16 in turn, from float32 uniforms drawn
    # a few splits at a time into a reused buffer (a large fresh array costs more in page faults than the draws:
    # the stream is the same as one (size, rows, c) array per c) and summed one copy index at a time (with NumPy's sum
    # over the short last axis the whole draw takes longer: benchmarks/permutations.py).
    buffer = np.empty(1 << 20, dtype=np.float32)
    for copies in range(1, _BERNOULLI_COPIES + 1):
        begin, end = bounds[copies], bounds[copies + 1]
        if end == begin:
            continue
        per_split = (end - begin) * copies
        chunk = max(1, min(size, buffer.size // per_split))
        if chunk * per_split > buffer.size:
            buffer = np.empty(per_split, dtype=np.float32)
        for first in range(0, size, chunk):
            k = min(chunk, size - first)
            uniforms = buffer[: k * per_split].reshape(k, end - begin, copies)
            rng.random(out=uniforms, dtype=np.float32)
            _bernoulli_sums(uniforms, np.float32(p), rows[first: first + k, begin:end])
    rows[:, : bounds[1]] = 0  # rows with no copies (an empty unit) never move
    begin = bounds[_BERNOULLI_COPIES + 1]
    if begin < ordered.size:
        rows[:, begin:] = rng.binomial(ordered[begin:], p, size=(size, ordered.size - begin))
    if np.any(np.diff(order) != 1):
        rows[:] = rows[:, np.argsort(order)]
    # Remove |excess| rows of the first sample, or add them from the rest, uniformly among those rows: which rows
    # is drawn here, in split order (the same stream as drawing each when it is applied); applying them needs no
    # random number (`_even_out`), so the permutation engine does it on the thread that uses the splits.
    excess = rows.sum(axis=1, dtype=np.int64) - n_first
    picks = [(k, int(e), rng.choice(int(sums) if e > 0 else n_total - int(sums), size=abs(int(e)), replace=False))
             for k, (e, sums) in enumerate(zip(excess, excess + n_first)) if e]
    if defer:
        return rows.T, picks
    _even_out(rows, multiplicity, picks)
    return rows.T


def _even_out(rows: np.ndarray, multiplicity: np.ndarray, picks: list) -> None:
    """Apply :func:`split_draws`' drawn corrections: in split ``k``, take or give back the rows ``picked``."""
    for k, excess, picked in picks:
        draw = rows[k]
        cumulative = np.cumsum(draw if excess > 0 else multiplicity - draw)
        np.add.at(draw, np.searchsorted(cumulative, picked, side="right"), -1 if excess > 0 else 1)


def _bernoulli_sums(uniforms: np.ndarray, p: np.float32, out: np.ndarray) -> None:
    """``out[b, j] = #{i : uniforms[b, j, i] < p}``: how many copies of distinct row ``j`` split ``b`` sends first.

    One comparison per copy index ``i``, added in place: NumPy's ``sum`` over the short last axis is 3x slower.
    """
    np.less(uniforms[:, :, 0], p, out=out, casting="unsafe")
    for i in range(1, uniforms.shape[2]):
        out += uniforms[:, :, i] < p
