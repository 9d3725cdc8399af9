"""The kernel two-sample test (MMD, eq. 10) with an exact permutation p-value."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.tails import normal_quantile
from bnfisher._utils.validation import check_option
from bnfisher.comparison.aggregate import aggregate_pvalues
from bnfisher.comparison.anytime import AnytimeOutcome, AnytimeTest
from bnfisher.comparison.permutation import permutation_pvalue, permutation_statistics
from bnfisher.comparison.validity import fitted_on_one_sample, one_sample_warning
from bnfisher.data.providers import in_memory
from bnfisher.exceptions import DataWarning
from bnfisher.kernels.base import FamilyKernel

__all__ = ['TwoSampleResult', 'effect_interval', 'mmd_test', 'statistics_pvalue']


# ------------------------------------------------------------------ two-sample
@dataclass
class TwoSampleResult:
    """Outcome of :func:`mmd_test`.

    Attributes
    ----------
    statistic : float
        The biased MMD^2 of eq. 10.
    p_value : float
        The p-value of ``method``: for ``"mmd"``, ``(1 + #{T_b >= T}) / (1 + B)`` over
        ``B`` permutations of the MMD²; for ``"aggregate"``, that of the min-p
        combination of :mod:`bnfisher.comparison.aggregate`.
    unbiased : float
        The unbiased estimate MMD^2_u of [2]_ (eq. 3 there).
    null_distribution : ndarray
        The permutation statistics ``T_b``.
    full_statistic : float or None
        For Dask data: eq. 10 between the *whole* samples, from distributed counts
        (the test itself runs on in-memory uniform subsamples).
    method : {"mmd", "aggregate"}
    components : DataFrame
        The aggregate test's components (``fisher``, ``blocks``, ``columns``), each
        with its own p-value from the same permutations.
    unbiased_ci : tuple of float or None
        A 95% confidence interval of the population MMD² around ``unbiased``
        (:func:`effect_interval`); None where the rows' witness was not computed.
    sequential : AnytimeOutcome or None
        For an anytime-valid test (:class:`~bnfisher.comparison.AnytimeTest`): where it stopped,
        its decision and the permutations it rests on; ``p_value`` is then its anytime-valid
        p-value.  None for a test of fixed size.

    References
    ----------
    .. [2] A. Gretton, K. Borgwardt, M. Rasch, B. Schölkopf, A. Smola (2012). A kernel
       two-sample test. JMLR 13, 723-773.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> test = bf.mmd_test(kernel, A, B, n_permutations=99, random_state=0)
    >>> test.null_distribution.shape, test.method
    ((99,), 'mmd')
    """

    statistic: float
    p_value: float
    unbiased: float
    null_distribution: np.ndarray = field(repr=False)
    full_statistic: float | None = None
    method: str = "mmd"
    components: pd.DataFrame | None = field(default=None, repr=False)
    unbiased_ci: tuple | None = None
    sequential: AnytimeOutcome | None = None

    @property
    def carried_by(self) -> str:
        """The component with the smallest weighted p-value: which kind of difference the signal came from."""
        if self.components is None:
            return "fisher"
        return str((self.components["p_value"] / self.components["weight"]).idxmin())

    @classmethod
    def from_statistics(cls, outcome, *, method: str = "mmd", stopping=None) -> TwoSampleResult:
        """Return the test from per-family permutation statistics.

        Parameters
        ----------
        outcome : PermutationStatistics
            From :func:`permutation_statistics` (which :func:`mmd_test` calls).
        method : {"mmd", "aggregate"}, default="mmd"
        stopping : AnytimeTest or EarlyStop, optional
            The rule that ended the permutations: an :class:`~bnfisher.comparison.AnytimeTest`
            gives the p-value (anytime-valid, at its stopping time; without early rejection, 1 where
            it stopped for futility and ``method``'s p-value of every permutation where it ran to the
            cap); otherwise the p-value is the permutations' (``method``'s rule).

        Returns
        -------
        TwoSampleResult
        """
        check_option(method, "method", ("mmd", "aggregate"))
        aggregate, components = aggregate_pvalues(outcome)
        p_value = statistics_pvalue(outcome, method) if method == "mmd" else aggregate
        sequential = stopping.outcome(outcome) if isinstance(stopping, AnytimeTest) else None
        if sequential is not None and (stopping.reject_early or sequential.settled):
            p_value = sequential.p_value  # anytime-valid; or 1, for a test stopped for futility
        # Stopped for futility alone and run to the cap: the fixed test's p-value of every permutation (valid: the
        # reported p-value is 1 wherever the test stopped early, so never below it).
        return cls(float(outcome.observed.sum()), p_value,
                   outcome.unbiased, outcome.null.sum(axis=1), outcome.full_statistic, method, components,
                   sequential=sequential)

    def _repr_html_(self) -> str:
        rows = [("MMD² (eq. 10)", f"{self.statistic:.6g}"), ("unbiased MMD²_u", f"{self.unbiased:.6g}"),
                (f"p-value ({self.method})", f"{self.p_value:.4g}"),
                ("permutations", f"{len(self.null_distribution)}")]
        if self.sequential is not None:
            rows.append(("anytime-valid test", f"stopped after {self.sequential.permutations} permutations"
                         + ("" if self.sequential.settled else " (the cap)")))
        if self.components is not None:
            rows += [(f"component {name}", f"p = {row['p_value']:.4g}") for name, row in self.components.iterrows()]
        if self.full_statistic is not None:
            rows.append(("MMD² of the whole samples", f"{self.full_statistic:.6g}"))
        return html_table("Two-sample test", rows)


def statistics_pvalue(outcome, method: str) -> float:
    """Return the p-value of test ``method`` from permutation statistics (ties within rounding count as extreme).

    Parameters
    ----------
    outcome : PermutationStatistics
    method : {"mmd", "aggregate"}

    Returns
    -------
    float

    Examples
    --------
    >>> outcome = bf.comparison.permutation_statistics(bf.FisherKernel(network), data.iloc[::2], data.iloc[1::2],
    ...                                                n_permutations=99, random_state=0)
    >>> 0 < statistics_pvalue(outcome, "mmd") <= 1
    True
    """
    if method == "mmd":
        return float(permutation_pvalue(float(outcome.observed.sum()), outcome.null.sum(axis=1)))
    return aggregate_pvalues(outcome)[0]


def effect_interval(unbiased: float, null: np.ndarray, X: tuple, Y: tuple, *, level: float = 0.95) -> tuple:
    r"""Return a normal-approximation confidence interval of the population MMD² around the unbiased estimate.

    The variance of the two-sample U-statistic ``MMD²_u`` has a first-order part, the
    variance of the witness ``f(x) = <Phi(x), mu_X - mu_Y>`` ([2]_, Sec. 6):
    ``4 Var_X f / n + 4 Var_Y f / m``, which vanishes when the samples agree, and a
    second-order part of order ``1 / n^2``, which does not; the permutation
    distribution's variance estimates the latter (it is that part's value under no
    difference).  The interval is ``MMD²_u -+ z_{(1+level)/2} sqrt(first + second)``;
    its coverage is measured by simulation in ``tests/comparison/test_effect_size.py``.

    Parameters
    ----------
    unbiased : float
        ``MMD²_u``.
    null : ndarray
        The permutation statistics.
    X, Y : tuple of (ndarray, ndarray)
        Each sample's witness values and how many rows each stands for.
    level : float, default=0.95

    Returns
    -------
    tuple of float
        ``(low, high)``.

    References
    ----------
    .. [2] A. Gretton, K. Borgwardt, M. Rasch, B. Schölkopf, A. Smola (2012). A kernel
       two-sample test. JMLR 13, 723-773.

    Examples
    --------
    >>> import numpy as np
    >>> low, high = effect_interval(0.01, np.array([0.0, 0.002, 0.001]), (np.array([1.0, -1.0]), np.array([50, 50])),
    ...                             (np.array([0.5, -0.5]), np.array([50, 50])))
    >>> bool(low < 0.01 < high)
    True
    """
    first = 0.0
    for values, copies in (X, Y):
        copies = np.asarray(copies, dtype=np.float64)
        n = copies.sum()
        mean = np.average(values, weights=copies)
        first += 4.0 * float(np.average((values - mean) ** 2, weights=copies)) / n
    spread = float(normal_quantile(0.5 + level / 2)) * np.sqrt(first + float(np.var(null)))
    return (float(unbiased - spread), float(unbiased + spread))


def mmd_test(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, random_state=None,
             max_rows: int | None = None, method: str = "mmd") -> TwoSampleResult:
    """Permutation two-sample test with the Fisher-kernel MMD, from count tables.

    A random re-split of the pooled rows only decides how many copies of each
    *distinct* row go to the first sample -- a multivariate hypergeometric draw
    over the distinct rows with their multiplicities, the same null distribution
    as row permutations.  eq. 10 is a function of the resulting count tables, so a
    batch of draws costs one pass over the distinct rows' cells
    (:func:`permutation_statistics`).  Each sample is reduced to its distinct rows
    first, a block of rows at a time, so the working memory follows the distinct
    rows, not the rows.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Without ``normalize`` (the MMD must be a function of counts).
    X, Y : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
        The two samples (encoded with ``kernel.schema``).
    n_permutations : int, default=1000
    random_state : None, int or Generator
    max_rows : int, optional
        Not needed for Dask DataFrames and Parquet/CSV paths: the test runs where
        the rows lie (each worker draws its hash buckets' share of every
        permutation, :mod:`bnfisher.comparison.null`), exact on all rows, and the
        client holds no rows (a DataWarning says ``max_rows`` has no effect there).
        For a provider that cannot do that (a custom backend): the most distinct
        rows a sample may bring into memory (default 10,000,000); beyond them a
        UserWarning says so and the test runs on uniform subsamples of ``max_rows``
        rows instead, with ``full_statistic`` holding eq. 10 of the whole samples.
    method : {"mmd", "aggregate"}, default="mmd"
        ``"mmd"``: the paper's test of the Fisher-kernel MMD².  ``"aggregate"``: the
        weighted min-p combination of the Fisher MMD, its largest standardised block
        (a family or a column) and per-column tests on the same permutations
        (:mod:`bnfisher.comparison.aggregate`), with power on marginal shifts as
        well as on changes of dependence; exact too.

    Returns
    -------
    TwoSampleResult

    Notes
    -----
    The Fisher kernel's RKHS is finite-dimensional, hence not universal: the
    population MMD is zero for any two distributions whose expected feature maps
    agree -- those that share, per variable and parent configuration, the
    parent-configuration-weighted conditional frequencies the network sees.  The
    test therefore has power against differences *the network's families can
    express* (the paper's caveat, [1]_ Sec. 6.3), not against every difference.

    The p-value is exact (``P(p <= alpha) <= alpha`` when both samples come from one
    distribution) when the kernel does not depend on which sample a row came from:
    a network given in advance, learned on other data, or learned on ``X`` and
    ``Y`` pooled.  It is **not** exact for a network fitted to one of the samples
    alone: the kernel then fits that sample better than any re-split of it
    (measured size 0.175 at alpha = 0.05 with a network fitted to ``X``).  Fit on
    the pool, or split: fit on part of ``X`` and test the rest of ``X`` against
    ``Y`` (:func:`bnfisher.comparison.reference_split`).  A UserWarning is given when
    the network's CPTs are exactly those of one sample.

    References
    ----------
    .. [1] J. Leppä-aho, T. Silander, T. Roos (2020). Bayesian network Fisher kernel for
       categorical feature spaces. Behaviormetrika 47, 81-103.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> test = bf.mmd_test(kernel, A, B, n_permutations=199, random_state=0)
    >>> test.statistic > 0, 0 < test.p_value <= 1
    (True, True)
    """
    check_option(method, "method", ("mmd", "aggregate"))
    if in_memory(X) and in_memory(Y):
        sample = fitted_on_one_sample(kernel.network, kernel.encode(X).codes, kernel.encode(Y).codes)
        if sample is not None:
            warnings.warn(one_sample_warning(sample), DataWarning, stacklevel=2)
    outcome = permutation_statistics(kernel, X, Y, n_permutations=n_permutations, random_state=random_state,
                                     max_rows=max_rows)
    return TwoSampleResult.from_statistics(outcome, method=method)
