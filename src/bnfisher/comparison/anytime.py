r"""Anytime-valid permutation tests: draw permutations until the decision is settled, by betting against the null.

A permutation test compares the observed split's statistic ``T_0`` with the permutations'
``T_1, T_2, ...``.  Under the null the ``T`` are exchangeable, so given that ``k`` of the first
``t - 1`` permutations were at least ``T_0``, the next one is with probability ``(k + 1) / (t + 1)``
exactly (it falls in any of the ``t + 1`` gaps between ``T_0, ..., T_{t-1}`` alike, and ``k + 1``
of them lie above ``T_0``): the indicators ``I_t = 1{T_t >= T_0}`` follow Pólya's urn, the
uniform mixture of Bernoulli laws.  A bettor who wagers that the permutations are rarely at
least ``T_0`` -- as if ``I_t`` were Bernoulli(``c``) with ``c`` uniform on ``(0, c_max]`` -- holds,
after ``t`` permutations of which ``S_t`` exceeded, the wealth

.. math::  W_t = \frac{\int_0^{c_{max}} c^{S_t} (1 - c)^{t - S_t} \, dc / c_{max}}
                      {\int_0^1 c^{S_t} (1 - c)^{t - S_t} \, dc}
               = \frac{F_{\mathrm{Beta}(S_t + 1,\, t - S_t + 1)}(c_{max})}{c_{max}},

the likelihood ratio of the bettor's law to the urn's (Fischer & Ramdas [1]_, the binomial
mixture strategy).  Under the null ``W`` is a nonnegative martingale with ``W_0 = 1``, so by
Ville's inequality ``P(sup_t W_t >= 1 / alpha) <= alpha``: the p-value
``p_t = min(1, 1 / max_{s <= t} W_s)`` is valid at **every** stopping time, whatever rule chose it
-- the test may stop as soon as ``W_t >= 1 / alpha`` (reject) or as soon as a rejection has become
implausible (accept), and a p-value read earlier or later stays valid.

**The rule.**  :class:`AnytimeTest` stops at the first permutation where ``W_t >= 1 / alpha``, or
where the ``S_t`` exceedances make a permutation p-value below ``alpha`` implausible: the lower
Clopper-Pearson bound of ``P(T >= T_0)`` at confidence ``1 - risk`` is above ``alpha`` (stopping to
accept never makes a rejection more likely, so it costs no validity; ``risk`` bounds the chance,
at each look, of accepting a test whose permutation p-value is below ``alpha``).  With
``c_max = bet * alpha`` the test can reject after ``t`` permutations with none as extreme once
``1 - (1 - c_max)^{t + 1} >= bet``: about ``-log(1 - bet) / (bet alpha)`` permutations
(``1.39 / alpha`` at ``bet = 0.5``), against the ``1 / alpha - 1`` below which no permutation
test can reach ``alpha`` at all.  A small ``bet`` reaches a clear difference sooner, a large one
keeps more power near ``alpha``; ``benchmarks/anytime.py`` measures both.

**Multiplicity.**  Each p-value is valid (``P(p <= u) <= u`` for every ``u``) at whatever time its
test stopped, which is all that Holm's procedure needs of its p-values to bound the family-wise
error [2]_: the windows of :func:`bnfisher.drift` are adjusted as fixed-budget ones are.

References
----------
.. [1] Fischer & Ramdas (2024). Sequential Monte-Carlo testing by betting. arXiv:2401.07365
   (Journal of the Royal Statistical Society B, 2025).
.. [2] Holm (1979). A simple sequentially rejective multiple test procedure. Scandinavian
   Journal of Statistics 6, 65-70.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnfisher.comparison.aggregate import TIE_TOLERANCE, split_scores
from bnfisher.exceptions import OptionError

__all__ = ["AnytimeOutcome", "AnytimeTest", "RunningTests"]

#: Permutation counts after which a sequential test may stop before 320 (then every 256 permutations).
FIRST_STAGES = (10, 20, 40, 80, 160, 320)

#: Permutations between looks after the first stages.
STAGE_STEP = 256


@dataclass(frozen=True)
class AnytimeOutcome:
    """Where an anytime-valid test stopped, and what it found.

    Attributes
    ----------
    p_value : float
        ``min(1, 1 / max_{s <= t} W_s)`` at the stopping time ``t``: valid whatever the rule.
    rejected : bool
        Whether the test rejected at its level (``p_value <= alpha``).
    settled : bool
        Whether the rule stopped it (False: the cap of permutations did).
    permutations : int
        Permutations the decision rests on (the stopping time).
    exceedances : int
        Of those, how many were at least as extreme as the observed split.

    Examples
    --------
    >>> test = AnytimeTest(0.05, "mmd")
    >>> clear = test.decide(np.array([5.0, *np.linspace(0.0, 1.0, 60)]))   # nothing as extreme
    >>> clear.rejected, clear.permutations, round(clear.p_value, 4)
    (True, 27, 0.0492)
    """

    p_value: float
    rejected: bool
    settled: bool
    permutations: int
    exceedances: int


@dataclass(frozen=True)
class AnytimeTest:
    """A permutation test that stops once its decision at ``alpha`` is settled, its p-value valid at any stop.

    Parameters
    ----------
    alpha : float
        The level the decision is taken at, in (0, 1).
    method : {"mmd", "aggregate"}
        The statistic (:func:`~bnfisher.comparison.aggregate.split_scores`).
    bet : float, default=0.5
        The bettor's largest exceedance rate, as a fraction of ``alpha`` (``c_max = bet alpha``),
        in (0, 1).
    risk : float, default=1e-3
        The confidence of the stop to accept: a test stops without rejecting once the lower
        ``1 - risk`` Clopper-Pearson bound of its permutation p-value is above ``alpha``.
    reject_early : bool, default=True
        False: stop only to accept (p = 1), and a test the rule does not stop runs to the cap
        and reports the fixed test's p-value of all of them -- the fixed test's power, less the
        tests stopped to accept that the fixed test would have rejected (at most ``risk`` a look
        where this statistic, :func:`~bnfisher.comparison.aggregate.split_scores`, would reject
        too; more where the fixed aggregate test's ranks see what it does not), with the savings
        of the early stops where nothing changed.  Valid: the reported p-value is never below
        that of every permutation up to the cap.

    Raises
    ------
    OptionError
        For ``alpha``, ``bet`` or ``risk`` out of range.

    See Also
    --------
    bnfisher.comparison.EarlyStop : Besag & Clifford's checkpoints (valid only at them).

    References
    ----------
    .. [1] Fischer & Ramdas (2024). Sequential Monte-Carlo testing by betting. arXiv:2401.07365.

    Examples
    --------
    >>> test = AnytimeTest(0.05, "mmd")
    >>> test.stages(3000)[:8]
    (10, 20, 40, 80, 160, 320, 576, 832)
    >>> quiet = test.decide(np.array([0.5, *np.random.default_rng(0).random(40)]))   # half as extreme
    >>> quiet.rejected, quiet.settled, quiet.permutations, quiet.p_value
    (False, True, 7, 1.0)
    """

    alpha: float
    method: str = "aggregate"
    bet: float = 0.5
    risk: float = 1e-3
    reject_early: bool = True

    def __post_init__(self) -> None:
        for name, value in (("alpha", self.alpha), ("bet", self.bet), ("risk", self.risk)):
            if not 0.0 < float(value) < 1.0:
                raise OptionError(f"An anytime test's `{name}` must lie in (0, 1); got {value!r}.")
        if self.method not in ("mmd", "aggregate"):
            raise OptionError(f"An anytime test's `method` must be 'mmd' or 'aggregate'; got {self.method!r}.")

    def stages(self, n_permutations: int) -> tuple:
        """Return the permutation counts at which the test looks, below the cap ``n_permutations``.

        Every look ends a round of the null's plan, so the looks depend on the cap alone
        (the same rounds, and so the same draws, on any number of threads or workers).

        Parameters
        ----------
        n_permutations : int
            The cap.

        Returns
        -------
        tuple of int
        """
        later = range(FIRST_STAGES[-1] + STAGE_STEP, int(n_permutations), STAGE_STEP)
        return tuple(b for b in (*FIRST_STAGES, *later) if b < int(n_permutations))

    def stops(self, done: int, statistics) -> bool:
        """Return whether the decision is settled within the first ``done`` permutations.

        Parameters
        ----------
        done : int
        statistics : PermutationStatistics
            Holding those ``done`` permutations.

        Returns
        -------
        bool
        """
        return self.decide(split_scores(statistics, self.method)).settled

    def outcome(self, statistics) -> AnytimeOutcome:
        """Return the test's outcome from the permutations done.

        Parameters
        ----------
        statistics : PermutationStatistics

        Returns
        -------
        AnytimeOutcome
        """
        return self.decide(split_scores(statistics, self.method))

    def decide(self, scores: np.ndarray) -> AnytimeOutcome:
        """Return the outcome of the observed score ``scores[0]`` against the permutations' ``scores[1:]`` in order.

        Parameters
        ----------
        scores : ndarray of shape (1 + B,)
            Larger is more extreme; a permutation within the tie tolerance of the observed
            score counts as at least as extreme.

        Returns
        -------
        AnytimeOutcome
        """
        scores = np.asarray(scores, dtype=np.float64)
        p_value, settled, stop, exceedances = self.decide_columns(scores[:1], scores[1:, None])
        return AnytimeOutcome(float(p_value[0]), bool(p_value[0] <= self.alpha), bool(settled[0]), int(stop[0]),
                              int(exceedances[0]))

    def decide_columns(self, observed: np.ndarray, null: np.ndarray) -> tuple:
        """Return every column's outcome at once: a test per column of ``null`` against ``observed``.

        Parameters
        ----------
        observed : ndarray of shape (m,)
        null : ndarray of shape (B, m)
            The permutations' statistics, in the order drawn.

        Returns
        -------
        p_value : ndarray of shape (m,)
            Anytime-valid, at each column's stop.
        settled : ndarray of bool, shape (m,)
            Whether the rule stopped the column within the ``B`` permutations.
        stop : ndarray of int, shape (m,)
            The permutations each column's decision rests on (``B`` for an unsettled one).
        exceedances : ndarray of int, shape (m,)
            Of those, how many were at least as extreme as observed.
        """
        running = RunningTests(self, observed)
        running.add(np.asarray(null, dtype=np.float64).reshape(-1, running.observed.size))
        return running.outcome()


class RunningTests:
    """Anytime tests, one per column, fed their permutations' statistics a round at a time.

    Each round costs only its own permutations (the tests already settled are not looked at again).

    Parameters
    ----------
    test : AnytimeTest
    observed : ndarray of shape (m,)
        The observed statistic of each test (larger is more extreme).
    groups : ndarray of int, shape (m,), optional
        Tests that answer one question together, as an intersection-union test does (a variable
        is changed only when every conditioning set rejects): a group is done once one of its
        tests settles without rejecting, or all of them settle.  Default: every test alone.

    Examples
    --------
    >>> running = RunningTests(AnytimeTest(0.05, "mmd"), np.array([5.0, 0.5]))
    >>> rng = np.random.default_rng(0)
    >>> running.add(rng.random((20, 2))), running.add(rng.random((20, 2)))   # the first settles after 27
    (False, True)
    >>> running.outcome()[2].tolist()
    [27, 9]
    """

    def __init__(self, test: AnytimeTest, observed: np.ndarray, groups: np.ndarray | None = None):
        self.test = test
        self.observed = np.atleast_1d(np.asarray(observed, dtype=np.float64))
        self.groups = np.arange(self.observed.size) if groups is None else np.asarray(groups)
        self.threshold = self.observed - (TIE_TOLERANCE * np.abs(self.observed) + 1e-300)
        m = self.observed.size
        self.drawn = np.zeros(m, dtype=np.int64)  # permutations each test has seen
        self.exceeded = np.zeros(m, dtype=np.int64)
        self.wealth = np.ones(m)  # the running maximum of the wealth
        self.stop = np.zeros(m, dtype=np.int64)  # 0: not settled yet
        self.p_value = np.ones(m)
        self.at_stop = np.zeros(m, dtype=np.int64)

    @property
    def done(self) -> int:
        """The most permutations any test has seen."""
        return int(self.drawn.max(initial=0))

    def live(self) -> np.ndarray:
        """Return the tests still to run: not settled, in a group whose answer is not known.

        Returns
        -------
        ndarray of int
        """
        return np.flatnonzero((self.stop == 0) & ~np.isin(self.groups, self._answered()))

    def add(self, null: np.ndarray, columns: np.ndarray | None = None) -> bool:
        """Take the next permutations' statistics, in order; return whether every test (or group) is done.

        Parameters
        ----------
        null : ndarray of shape (rows, m), or (rows, len(columns))
        columns : ndarray of int, optional
            The tests the columns of ``null`` belong to (default: all of them); those already
            done are passed over.

        Returns
        -------
        bool
            Whether every test, or every group (``groups``), is done.
        """
        columns = np.arange(self.observed.size) if columns is None else np.asarray(columns)
        keep = np.isin(columns, self.live())
        if null.shape[0] and keep.any():
            columns = columns[keep]
            exceed = null[:, keep] >= self.threshold[columns]
            t = self.drawn[columns] + np.arange(1, null.shape[0] + 1)[:, None]
            self._bet(columns, t, self.exceeded[columns] + np.cumsum(exceed, axis=0))
        return self.finished()

    def add_counts(self, exceedances: np.ndarray, rows: int, columns: np.ndarray) -> bool:
        """Take ``rows`` more permutations of the tests ``columns``, known by how many were as extreme only.

        The wealth is then looked at after the last of them alone: a test may stop there, not
        within them (any stopping time keeps the p-values valid).

        Parameters
        ----------
        exceedances : ndarray of int, shape (len(columns),)
        rows : int
        columns : ndarray of int

        Returns
        -------
        bool
            As :meth:`add`.
        """
        columns = np.asarray(columns)
        keep = np.isin(columns, self.live())
        if rows and keep.any():
            columns = columns[keep]
            self._bet(columns, (self.drawn[columns] + rows)[None, :],
                      (self.exceeded[columns] + np.asarray(exceedances)[keep])[None, :])
        return self.finished()

    def _bet(self, columns: np.ndarray, t: np.ndarray, s: np.ndarray) -> None:
        """Update the tests ``columns`` with their exceedances ``s`` after ``t`` permutations (a row per look)."""
        from scipy.special import betainc  # imported here: scipy.special takes time to import

        c_max = self.test.bet * self.test.alpha
        wealth = np.maximum.accumulate(np.maximum(betainc(s + 1, t - s + 1, c_max) / c_max, self.wealth[columns]),
                                       axis=0)
        # P(Beta(s, t - s + 1) <= alpha) < risk: the lower Clopper-Pearson bound of the p-value is above alpha.
        hopeless = (s > 0) & (betainc(np.maximum(s, 1), t - s + 1, self.test.alpha) < self.test.risk)
        decided = ((wealth >= 1.0 / self.test.alpha) | hopeless) if self.test.reject_early else hopeless
        now = decided.any(axis=0)
        first, where = decided.argmax(axis=0)[now], np.flatnonzero(now)
        settled = columns[now]
        self.stop[settled] = t[first, where]
        # Without early rejection a test stops only to accept, and says so with p = 1 (valid: above the p-value
        # its every permutation would give).
        self.p_value[settled] = np.minimum(1.0, 1.0 / wealth[first, where]) if self.test.reject_early else 1.0
        self.at_stop[settled] = s[first, where]
        self.drawn[columns], self.exceeded[columns], self.wealth[columns] = t[-1], s[-1], wealth[-1]

    def finished(self) -> bool:
        """Return whether every test, or every group (``groups``), is done.

        Returns
        -------
        bool
        """
        return not self.live().size

    def outcome(self) -> tuple:
        """Return every test's outcome so far.

        Returns
        -------
        tuple
            ``(p_value, settled, stop, exceedances)``, as :meth:`AnytimeTest.decide_columns` returns them.
        """
        settled = self.stop > 0
        # A test the rule did not stop: the betting p-value, or, without early rejection, the permutation p-value
        # of every permutation drawn (the fixed test's at the cap).
        running = np.minimum(1.0, 1.0 / self.wealth) if self.test.reject_early else \
            (1.0 + self.exceeded) / (1.0 + np.maximum(self.drawn, 0))
        return (np.where(settled, self.p_value, running), settled,
                np.where(settled, self.stop, self.drawn), np.where(settled, self.at_stop, self.exceeded))

    def _answered(self) -> np.ndarray:
        """Return the groups with a test settled without rejecting (the group's answer is known)."""
        return np.unique(self.groups[(self.stop > 0) & (self.p_value > self.test.alpha)])
