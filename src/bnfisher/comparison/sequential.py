r"""Sequential permutation tests: stop where the p-value is plainly large, and keep every p-value valid.

A drift monitor tests many windows, and Holm's adjustment over ``W`` windows needs a
window's p-value resolved to about ``alpha / W``: thousands of permutations per
window.  Most windows have not drifted, and their p-value is plainly large after a
couple of hundred.  :class:`EarlyStop` runs a test in stages: after ``b_1``
permutations it stops if the p-value ``p_1`` of those permutations is above ``c_1``,
after ``b_2`` if ``p_2 > c_2``, and so on; the last stage runs every permutation.  The
reported p-value is that of the stage where the test stopped.

**Validity.**  Each ``p_k`` is an exact permutation p-value of the first ``b_k``
permutations (independent uniform splits, whatever follows them), so
``P(p_k <= t) <= t`` under the null.  With non-increasing thresholds
``c_1 >= c_2 >= ...`` the reported ``p`` keeps ``P(p <= t) <= t`` for every ``t``: let
``j`` be the first stage with ``c_j < t`` (the last stage if there is none).  A stop at
an earlier stage ``k`` reports ``p_k > c_k >= t``; so ``p <= t`` needs the test to reach
stage ``j``, and there either it stops with ``p_j <= t`` or it goes on because
``p_j <= c_j < t``.  Hence ``{p <= t}`` lies within ``{p_j <= t}``.  This is Besag &
Clifford's argument for sequential Monte Carlo p-values [1]_, with stops at fixed
checkpoints only.

**Cost and power.**  Under the null a test goes past checkpoint ``k`` with probability
about ``c_k``: with the checkpoints of :meth:`EarlyStop.for_alpha` at ``alpha = 0.05``
(199 permutations, ``c = 0.15``; 999, ``c = 0.10``) a test of 2,999 permutations runs
about 519 of them on average (570 measured over 400 unchanged alarm windows,
``benchmarks/early_stop.py``).  A test whose full p-value is small stops early only
through Monte-Carlo error.  For the Fisher MMD alone (``"mmd"``) the count of
permutations as extreme is binomial: a permutation p-value of 0.05 passes the first
checkpoint (at most 29 of 199 as extreme) with probability ``1 - 8e-8`` and the second
(at most 99 of 999) with ``1 - 8e-11``.  The aggregate test's p-value moves more with
the permutations (its components are calibrated on them too); ``benchmarks/early_stop.py``
measures how often its verdict differs from the full test's: on a change near the edge of
detection, in 1 of 40 runs (power 0.825 against 0.800), with the same false-alarm rate.

References
----------
.. [1] Besag & Clifford (1991). Sequential Monte Carlo p-values. Biometrika 78(2), 301-304.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bnfisher.exceptions import OptionError

__all__ = ["EarlyStop"]


@dataclass(frozen=True)
class EarlyStop:
    """Checkpoints of a sequential permutation test: stop at ``b`` permutations when the p-value is above ``c``.

    Parameters
    ----------
    checkpoints : tuple of (int, float)
        ``(b, c)`` pairs: permutations done, and the p-value above which the test stops
        there.  ``b`` increasing, ``c`` non-increasing (what keeps the p-value valid).
    p_value : callable
        The test's p-value of :class:`~bnfisher.comparison.PermutationStatistics` holding the
        permutations done so far.

    Raises
    ------
    OptionError
        When the permutation counts do not increase or the thresholds increase.

    Examples
    --------
    >>> from bnfisher.comparison import permutation_pvalue
    >>> rule = EarlyStop.for_alpha(0.05, lambda s: float(permutation_pvalue(s.observed.sum(), s.null.sum(axis=1))))
    >>> rule.checkpoints, rule.stages(2999), rule.stages(500)
    (((199, 0.15), (999, 0.1)), (199, 999), (199,))
    >>> EarlyStop.for_alpha(0.001, rule.p_value).checkpoints   # a small level: ten permutations' worth at least
    ((199, 0.05), (999, 0.01))
    """

    checkpoints: tuple
    p_value: Callable[[Any], float]

    def __post_init__(self) -> None:
        counts = [int(b) for b, _ in self.checkpoints]
        thresholds = [float(c) for _, c in self.checkpoints]
        if any(b <= 0 for b in counts) or counts != sorted(set(counts)):
            raise OptionError(f"An early stop's permutation counts must be positive and increasing; got {counts}.")
        if any(later > earlier for earlier, later in zip(thresholds, thresholds[1:])):
            raise OptionError(f"An early stop's thresholds must not increase (else its p-values are not valid); "
                              f"got {thresholds}.")

    @classmethod
    def for_alpha(cls, alpha: float, p_value: Callable[[Any], float]) -> EarlyStop:
        """Return bnfisher's checkpoints for a test at level ``alpha``: 199 and 999 permutations.

        At 199 permutations the test stops when its p-value is above ``max(3 alpha, 0.05)``,
        at 999 when above ``max(2 alpha, 0.01)``: a multiple of ``alpha``, and never below
        ten permutations' worth of p-value (``10 / (b + 1)``), so that a test whose p-value
        is far below ``alpha`` -- at a small ``alpha``, near the floor ``1 / (b + 1)`` of a
        checkpoint -- goes on to its last permutation.

        Parameters
        ----------
        alpha : float
            In (0, 1).
        p_value : callable
            As the class's.

        Returns
        -------
        EarlyStop
        """
        return cls(tuple((b, round(min(1.0, max(m * alpha, 10.0 / (b + 1))), 12)) for b, m in ((199, 3.0), (999, 2.0))),
                   p_value)

    def stages(self, n_permutations: int) -> tuple:
        """Return the checkpoints a test of ``n_permutations`` can stop at (those before its end).

        Parameters
        ----------
        n_permutations : int

        Returns
        -------
        tuple of int
        """
        return tuple(int(b) for b, _ in self.checkpoints if int(b) < n_permutations)

    def stops(self, done: int, statistics) -> bool:
        """Return whether the test stops after ``done`` permutations, whose statistics are ``statistics``.

        Parameters
        ----------
        done : int
            Permutations done (only a checkpoint can stop the test).
        statistics : PermutationStatistics
            Holding those ``done`` permutations.

        Returns
        -------
        bool
        """
        threshold = dict((int(b), float(c)) for b, c in self.checkpoints).get(int(done))
        return threshold is not None and threshold < 1.0 and self.p_value(statistics) > threshold
