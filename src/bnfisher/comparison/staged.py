"""Tests of many ``(variable, conditioning set)`` pairs run in stages, a pair's tests stopping once its answer is known.

The engine of the mechanism search (:mod:`bnfisher.comparison.mechanisms`) and of the anytime
family tests: the within-configuration permutation tests of
:func:`~bnfisher.comparison.attribution.conditional_tests`, drawn in stages for the pairs still
live -- each stage's permutations new and independent of the earlier ones -- either at Besag &
Clifford's checkpoints (:func:`staged_tests`) or at the looks of an anytime-valid test
(:func:`anytime_tests`, :class:`~bnfisher.comparison.AnytimeTest`).
"""

from __future__ import annotations

import numpy as np

from bnfisher.comparison.anytime import AnytimeTest, RunningTests
from bnfisher.comparison.attribution import FamilyTests, conditional_tests, family_tables
from bnfisher.comparison.certificate import certified_bounds, excesses

__all__ = ["CHECKPOINTS", "anytime_tests", "staged_tests"]

#: Permutations after which a search's tests may stop (Besag & Clifford's checkpoints; then at the budget).
CHECKPOINTS = (99, 999)


def staged_tests(cardinalities, pairs: list, samples: list, *, n_permutations: int, stop: float,
                 random_state, anytime: AnytimeTest | None = None, certify: float = 0.0,
                 later_stop: float | None = None) -> tuple:
    """Test each ``(variable, set)`` pair in stages; stop a variable's tests once one of its p-values exceeds ``stop``.

    After :data:`CHECKPOINTS` permutations (then ``n_permutations``) each live pair's
    p-value is that of every permutation drawn for it so far,
    ``p_k = (1 + G_k) / (1 + b_k)`` (:func:`~bnfisher.comparison.permutation_pvalue`).
    When a pair's ``p_k`` exceeds ``stop``, every pair of its variable stops: the variable's
    p-value (the largest over its sets) is then above ``stop`` whatever the rest would give.
    The stages draw new permutations, independent of the earlier ones, for the pairs still
    live, so ``p_k`` is an exact permutation p-value of ``b_k`` permutations, and a pair's
    reported p-value keeps ``P(p <= t) <= t`` for ``t`` up to the smallest threshold of any
    stage (Besag & Clifford 1991; the argument of :mod:`bnfisher.comparison.sequential`): a
    pair that stopped at stage ``k`` reports ``p_k`` above that stage's threshold, so below it
    ``{p <= t}`` lies within ``{p_B <= t}``, the p-value of all ``B`` permutations.
    Inner code: trusts encoded inputs.

    Parameters
    ----------
    cardinalities : sequence of int
    pairs : list of (int, tuple of int)
        Each test's variable and conditioning set.
    samples : list of two (ndarray of int, ndarray)
    n_permutations : int
        A test's budget.
    stop : float
        The p-value above which a variable's tests stop (``1.0``: every test runs its budget).
    later_stop : float, optional
        The threshold from the second checkpoint on (default ``stop``): the level a search
        answers at, once a p-value's first 99 permutations have been drawn (its p-values are
        then valid up to ``min(stop, later_stop)``).
    random_state : Generator
    anytime : AnytimeTest, optional
        Instead of the stages: every pair's test stops once settled at ``anytime.alpha``, a
        variable's once one of its sets settles without rejecting (its p-values anytime-valid;
        ``n_permutations`` is then the cap and ``stop`` is not used).
    certify : float, default=0.0
        A level ``tau`` fixed beforehand: a pair whose exact bound (Cantelli's of its exact ``z``, or
        Chernoff's: :func:`~bnfisher.comparison.certificate.certified_bounds`) is at most
        ``tau`` draws no permutation and reports the bound; every other pair reports its
        Monte-Carlo p-value plus ``tau`` (together valid: see
        :mod:`~bnfisher.comparison.certificate`), and ``z`` is the exact standardised excess
        for every pair.  The first checkpoint is then drawn first for each variable's pair of
        smallest exact ``z`` alone (the set likeliest to explain it): a variable whose pair there
        exceeds ``stop`` draws nothing for its other pairs, which report p-value 1 and no
        permutation.  0: no certificate, ``z`` over the permutations drawn.

    Returns
    -------
    p_value, z : ndarray of shape (n_pairs,)
        Each pair's p-value and standardised excess ``(D - mean) / sd`` over its permutations.
    drawn : ndarray of int, shape (n_pairs,)
        The permutations each pair's test drew (0: certified, or left untried once its variable stopped).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> codes = rng.integers(0, 2, size=(400, 2))
    >>> samples = [(codes[:200], np.ones(200)), (codes[200:], np.ones(200))]
    >>> p, z, drawn = staged_tests([2, 2], [(0, ()), (0, (1,))], samples, n_permutations=2000, stop=0.2,
    ...                            random_state=np.random.default_rng(1))
    >>> bool(p.max() > 0.2), drawn.tolist()    # no difference: both tests stop after 99 permutations
    (True, [99, 99])
    """
    tables = family_tables(cardinalities, pairs, samples)
    if certify > 0:
        return _certified(cardinalities, pairs, tables, n_permutations=n_permutations, stop=(stop, later_stop),
                          random_state=random_state, anytime=anytime, tau=certify)
    return _drawn(cardinalities, pairs, tables, n_permutations=n_permutations, stop=(stop, later_stop),
                  random_state=random_state, anytime=anytime)


def _certified(cardinalities, pairs: list, tables: list, *, n_permutations: int, stop: tuple, random_state,
               anytime: AnytimeTest | None, tau: float) -> tuple:
    """Return :func:`staged_tests` with the certificate ``tau``: bounds where they reach it, permutations elsewhere."""
    z = excesses(tables)
    bound = certified_bounds(tables, z, tau)
    certified = bound <= tau
    p_value, drawn = bound.copy(), np.zeros(len(pairs), dtype=np.int64)
    rest = np.flatnonzero(~certified)
    if rest.size:
        p_rest, _, drawn_rest = _drawn(cardinalities, [pairs[k] for k in rest], [tables[k] for k in rest],
                                       n_permutations=n_permutations, stop=stop, random_state=random_state,
                                       anytime=anytime, first=_first(pairs, rest, z))
        p_value[rest], drawn[rest] = np.minimum(p_rest + tau, 1.0), drawn_rest
    return p_value, z, drawn


def _first(pairs: list, index: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Return, among the pairs ``index``, each variable's pair with the smallest exact ``z`` (positions in ``index``).

    The set likeliest to explain its variable: when its p-value exceeds the stop, the variable's
    other sets need no permutation.
    """
    owner = np.asarray([pairs[k][0] for k in index])
    order = np.lexsort((z[index], owner))  # by variable, the smallest z first
    return order[np.r_[True, owner[order][1:] != owner[order][:-1]]]


def _stages(n_permutations: int, first: np.ndarray | None, n_pairs: int) -> list:
    """Return the stages of :func:`_drawn`: each checkpoint, and the pairs it is for (None: every live pair).

    With ``first`` (fewer than every pair), a stage at the first checkpoint for those pairs alone comes first.
    """
    checkpoints = [(b, None) for b in CHECKPOINTS if b < n_permutations] + [(n_permutations, None)]
    if first is None or len(first) >= n_pairs:
        return checkpoints
    return [(checkpoints[0][0], np.sort(np.asarray(first, dtype=np.intp))), *checkpoints]


def _drawn(cardinalities, pairs: list, tables: list, *, n_permutations: int, stop: tuple, random_state,
           anytime: AnytimeTest | None, first: np.ndarray | None = None) -> tuple:
    """Return :func:`staged_tests`'s outcome from permutations alone.

    With ``first`` (positions in ``pairs``, at most one per variable), those pairs draw the first
    checkpoint's permutations alone; a variable whose pair then exceeds ``stop`` is settled, and
    its other pairs draw nothing.
    """
    owner = np.asarray([v for v, _ in pairs])
    if anytime is not None:
        tests, drawn = anytime_tests(cardinalities, pairs, None, n_permutations=n_permutations,
                                     random_state=random_state, rule=anytime, groups=owner, tables=tables)
        p_value, z = np.ones(len(pairs)), np.zeros(len(pairs))
        p_value[tests.families], z[tests.families] = tests.p_value, tests.z
        return p_value, z, drawn
    statistic, exceed, total, square = (np.zeros(len(pairs)) for _ in range(4))
    drawn = np.zeros(len(pairs), dtype=np.int64)
    p_value = np.ones(len(pairs))
    live = np.ones(len(pairs), dtype=bool)
    stages = _stages(n_permutations, first, len(pairs))
    for b, only in stages:
        index = np.flatnonzero(live & (drawn < b)) if only is None else only
        if not index.size:
            continue
        step = b - int(drawn[index[0]])
        tests = conditional_tests(cardinalities, [pairs[k] for k in index], None, n_permutations=step,
                                  random_state=random_state, tables=[tables[k] for k in index])
        statistic[index] = tests.statistic
        exceed[index] += np.rint(tests.p_value * (step + 1)) - 1
        total[index] += tests.null_mean * step
        square[index] += (tests.null_sd**2 + tests.null_mean**2) * step
        drawn[index] = b
        p_value[index] = (1 + exceed[index]) / (1 + b)
        threshold = stop[0] if b == stages[0][0] or stop[1] is None else stop[1]
        live &= ~np.isin(owner, owner[index[p_value[index] > threshold]])
    mean = total / np.maximum(drawn, 1)
    sd = np.sqrt(np.maximum(square / np.maximum(drawn, 1) - mean**2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, (statistic - mean) / sd, 0.0)
    return p_value, z, drawn


def anytime_tests(cardinalities, pairs: list, samples: list | None, *, n_permutations: int, random_state,
                  rule: AnytimeTest, groups: np.ndarray | None = None, tables: list | None = None) -> tuple:
    """Test every ``(variable, set)`` pair by betting: new permutations at each look for the tests still live.

    At each of ``rule``'s looks (then the cap ``n_permutations``) the live pairs draw the permutations
    up to it, new and independent of the earlier ones, so each pair's exceedances extend its sequence;
    its wealth is looked at after the stage
    (:meth:`~bnfisher.comparison.anytime.RunningTests.add_counts`) and the pair stops once settled at
    ``rule.alpha`` -- with ``groups``, once a pair of its group settles without rejecting.  Every
    p-value is anytime-valid.  Inner code: trusts encoded inputs.

    Parameters
    ----------
    cardinalities : sequence of int
    pairs : list of (int, tuple of int)
    samples : list of two (ndarray of int, ndarray), or None
        As :func:`~bnfisher.comparison.attribution.conditional_tests` (or ``tables``).
    n_permutations : int
        The cap of a pair's test.
    random_state : Generator
    rule : AnytimeTest
    groups : ndarray of int, optional
        Pairs that answer one question together (a variable and its conditioning sets).
    tables : list, optional
        Each pair's two count tables, instead of ``samples``.

    Returns
    -------
    tests : FamilyTests
        ``families`` the positions in ``pairs`` tested; ``null_mean`` and ``null_sd`` over the
        permutations each pair drew; ``n_permutations`` the most any pair drew.
    drawn : ndarray of int, shape (n_pairs,)
        The permutations each pair drew.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> codes = rng.integers(0, 2, size=(400, 2))
    >>> samples = [(codes[:200], np.ones(200)), (codes[200:], np.ones(200))]
    >>> tests, drawn = anytime_tests([2, 2], [(0, ()), (0, (1,))], samples, n_permutations=2000,
    ...                              random_state=np.random.default_rng(1), rule=AnytimeTest(0.05, "mmd"))
    >>> bool(tests.p_value.min() > 0.05), int(drawn.max()) < 100    # no difference: settled at once
    (True, True)
    """
    tables = family_tables(cardinalities, pairs, samples) if tables is None else tables
    tested = np.flatnonzero([table is not None for table in tables])  # a child of one state has no test
    statistic, total, square = (np.zeros(len(pairs)) for _ in range(3))
    drawn = np.zeros(len(pairs), dtype=np.int64)
    rows = np.zeros((len(pairs), 2), dtype=np.int64)
    # The stages give each pair's exceedances as counts (add_counts): the observed statistics are not needed there.
    running = RunningTests(rule, np.zeros(len(pairs)), None if groups is None else np.asarray(groups))
    running.stop[np.setdiff1d(np.arange(len(pairs)), tested)] = -1  # never live (p-value 1)
    index = tested
    for b in [*rule.stages(n_permutations), n_permutations]:
        if not index.size:
            break
        step = b - int(drawn[index].max(initial=0))
        tests = conditional_tests(cardinalities, [pairs[k] for k in index], None, n_permutations=step,
                                  random_state=random_state, tables=[tables[k] for k in index])
        index = index[np.asarray(tests.families, dtype=np.intp)]  # the live pairs' tests, as conditional_tests ran them
        statistic[index], rows[index] = tests.statistic, tests.rows  # the data's: alike at every stage
        running.add_counts(np.rint(tests.p_value * (step + 1)).astype(np.int64) - 1, step, index)
        total[index] += tests.null_mean * step
        square[index] += (tests.null_sd**2 + tests.null_mean**2) * step
        drawn[index] += step
        index = running.live()
    mean = total / np.maximum(drawn, 1)
    sd = np.sqrt(np.maximum(square / np.maximum(drawn, 1) - mean**2, 0.0))
    tests = FamilyTests(list(tested), statistic[tested], mean[tested], sd[tested], running.outcome()[0][tested],
                        rows[tested], int(drawn.max(initial=0)))
    return tests, drawn
