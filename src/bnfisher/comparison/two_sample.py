"""The kernel two-sample test (MMD, eq. 10) with an exact permutation p-value."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bnfisher._html import html_table
from bnfisher.comparison.permutation import permutation_pvalue, permutation_statistics
from bnfisher.kernels.base import FamilyKernel

__all__ = ['TwoSampleResult', 'mmd_test']


# ------------------------------------------------------------------ two-sample
@dataclass
class TwoSampleResult:
    """Outcome of :func:`mmd_test`.

    Attributes
    ----------
    statistic : float
        The biased MMD^2 of eq. 10 (the test statistic).
    p_value : float
        ``(1 + #{T_b >= T}) / (1 + B)`` over ``B`` permutations.
    unbiased : float
        The unbiased estimate MMD^2_u of [2]_ (eq. 3 there).
    null_distribution : ndarray
        The permutation statistics ``T_b``.
    full_statistic : float or None
        For Dask data: eq. 10 between the *whole* samples, from distributed counts
        (the test itself runs on in-memory uniform subsamples).
    """

    statistic: float
    p_value: float
    unbiased: float
    null_distribution: np.ndarray = field(repr=False)
    full_statistic: float | None = None

    @classmethod
    def from_statistics(cls, outcome) -> TwoSampleResult:
        """Return the test of the total MMD² from per-family permutation statistics.

        Parameters
        ----------
        outcome : PermutationStatistics
            From :func:`permutation_statistics` (which :func:`mmd_test` calls).

        Returns
        -------
        TwoSampleResult
        """
        observed = float(outcome.observed.sum())
        null = outcome.null.sum(axis=1)
        # Ties within rounding count as "at least as extreme".
        return cls(observed, float(permutation_pvalue(observed, null)), outcome.unbiased, null,
                   outcome.full_statistic)

    def _repr_html_(self) -> str:
        rows = [("MMD² (eq. 10)", f"{self.statistic:.6g}"), ("unbiased MMD²_u", f"{self.unbiased:.6g}"),
                ("p-value", f"{self.p_value:.4g}"), ("permutations", f"{len(self.null_distribution)}")]
        if self.full_statistic is not None:
            rows.append(("MMD² of the whole samples", f"{self.full_statistic:.6g}"))
        return html_table("Two-sample test", rows)


def mmd_test(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, random_state=None,
             max_rows: int = 10_000_000) -> TwoSampleResult:
    """Permutation two-sample test with the Fisher-kernel MMD, from count tables.

    A random re-split of the pooled rows only decides how many copies of each
    *distinct* row go to the first sample -- a multivariate hypergeometric draw
    over the distinct rows with their multiplicities, the same null distribution
    as row permutations.  eq. 10 is a function of the resulting count tables, so a
    batch of draws costs one sparse (cells x distinct rows) times dense (distinct
    rows x batch) product per family (:func:`permutation_statistics`).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Without ``normalize`` (the MMD must be a function of counts).
    X, Y : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
        The two samples (encoded with ``kernel.schema``).
    n_permutations : int, default=1000
    random_state : None, int or Generator
    max_rows : int, default=10_000_000
        For Dask DataFrames (data beyond memory): the test needs only each
        sample's distinct rows and their counts, from a distributed group-by, and
        is then exact on all rows.  When a sample has more than ``max_rows``
        distinct rows (too many for memory) a UserWarning says so and the test
        runs on uniform subsamples of ``max_rows`` rows instead, with
        ``full_statistic`` holding eq. 10 of the whole samples.

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
    The permutation p-value is valid (exact level) whatever the kernel.
    """
    outcome = permutation_statistics(kernel, X, Y, n_permutations=n_permutations, random_state=random_state,
                                     max_rows=max_rows)
    return TwoSampleResult.from_statistics(outcome)
