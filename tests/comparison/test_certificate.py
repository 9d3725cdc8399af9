"""Exact null moments of the within-configuration permutation test, and the p-value bound they certify.

Oracles: every within-configuration split of small tables, enumerated (the exact permutation law); the
Monte-Carlo null of :func:`~bnfisher.comparison.attribution.conditional_tests` (another computation of the same
statistic); simulation of null tables with the repetitions stated.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnfisher.comparison.attribution import conditional_tests
from bnfisher.comparison.certificate import cantelli_bound, chernoff_bounds, excesses, null_moments, pair_moments
from bnfisher.comparison.staged import staged_tests


def _enumerated(configurations, k):
    """Every split of each configuration's rows (``n`` of them to the first sample): the law of sum_j Q_j."""
    laws = []
    for states, n in configurations:
        K = np.bincount(states, minlength=k).astype(float)
        values = []
        for chosen in itertools.combinations(range(states.size), n):
            X = np.bincount(states[list(chosen)], minlength=k)
            expected = n * K / states.size
            values.append(np.divide((X - expected) ** 2, K, out=np.zeros(k), where=K > 0).sum())
        laws.append(np.asarray(values))
    total = laws[0]
    for law in laws[1:]:
        total = (total[:, None] + law[None, :]).ravel()
    return total


@pytest.mark.parametrize("seed", range(40))
def test_null_moments_equal_the_moments_of_every_split(seed):
    """Oracle: enumeration of every within-configuration split (up to 3 configurations of up to 11 rows)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    configurations = []
    for _ in range(int(rng.integers(1, 4))):
        size = int(rng.integers(1, 12))
        configurations.append((rng.integers(0, k, size=size), int(rng.integers(0, size + 1))))
    law = _enumerated(configurations, k)
    first = np.array([np.bincount(s[:n], minlength=k) for s, n in configurations], dtype=float)
    pooled = np.array([np.bincount(s, minlength=k) for s, n in configurations], dtype=float)
    mean, variance = null_moments(first, pooled)
    assert mean.sum() == pytest.approx(law.mean(), rel=1e-10, abs=1e-12)
    assert variance.sum() == pytest.approx(law.var(), rel=1e-9, abs=1e-12)
    q, _, _, z = pair_moments(first, pooled - first)
    assert q == pytest.approx(law[0], abs=1e-9)  # the first split is the observed one
    exact_p = np.mean(law >= q - 1e-12)
    assert exact_p <= cantelli_bound(z) + 1e-12  # the certificate bounds the exact p-value


@pytest.mark.parametrize("seed", range(60))
def test_chernoff_bounds_the_exact_p_value_of_every_split(seed):
    """Oracle: enumeration of every within-configuration split (up to 3 configurations of up to 11 rows, 2-4 child
    states, so both the exact two-state factor and Hölder's product); the bound is at least the exact p-value."""
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(2, 5))
    configurations = []
    for _ in range(int(rng.integers(1, 4))):
        size = int(rng.integers(2, 12))
        states = rng.integers(0, k, size=size)
        if seed % 2:  # a split that sorts the states: a large excess, the bound's use
            states = np.sort(states)
        configurations.append((states, int(rng.integers(1, size))))
    law = _enumerated(configurations, k)
    first = np.array([np.bincount(s[:n], minlength=k) for s, n in configurations], dtype=float)
    pooled = np.array([np.bincount(s, minlength=k) for s, n in configurations], dtype=float)
    exact_p = np.mean(law >= law[0] - 1e-12)
    bound = chernoff_bounds([(first, pooled - first)])[0]
    assert exact_p <= bound + 1e-12, (exact_p, bound)


def test_chernoff_is_the_exact_moment_generating_function_of_one_configuration():
    """Oracle: scipy.stats.hypergeom's pmf: for a two-state configuration the bound is the minimum over lambda of
    exp(-lambda q) E exp(lambda c U^2), here over a grid of 20,001 values with scipy's law (within 1e-5)."""
    from scipy.stats import hypergeom

    first, second = np.array([[30.0, 5.0]]), np.array([[12.0, 25.0]])
    K, N, n = 42.0, 72.0, 35.0
    x = np.arange(0, 36)
    pmf = hypergeom(int(N), int(K), int(n)).pmf(x)
    c = 1 / 42 + 1 / 30
    q = c * (30 - n * K / N) ** 2
    grid = np.geomspace(1e-4, 1e2, 20001)
    direct = min(np.exp(-lam * q) * np.sum(pmf * np.exp(lam * c * (x - n * K / N) ** 2)) for lam in grid)
    bound = chernoff_bounds([(first, second)])[0]
    assert direct * (1 - 1e-5) <= bound <= direct * (1 + 1e-9)  # the grid's minimum, or a little below it


def test_chernoff_is_far_below_cantelli_for_a_large_excess_and_one_for_none(monkeypatch):
    rng = np.random.default_rng(12)
    parent = rng.integers(0, 4, 4000)
    child = (parent + (rng.random(4000) < 0.3)) % 6
    child[:2000][rng.random(2000) < 0.2] = 5  # the first sample's state 5 is more frequent
    tables = [np.zeros((4, 6)), np.zeros((4, 6))]
    for table, rows in zip(tables, (slice(0, 2000), slice(2000, 4000))):
        np.add.at(table, (parent[rows], child[rows]), 1.0)
    z = excesses([tuple(tables)])[0]
    assert z > 20
    assert chernoff_bounds([tuple(tables)])[0] < 1e-6 * cantelli_bound(z)
    same = [(tables[0], tables[0]), None]
    assert chernoff_bounds(same).tolist() == [1.0, 1.0]
    import bnfisher.comparison.certificate as certificate

    monkeypatch.setattr(certificate, "CHERNOFF_POINTS", 100)  # too large a support: no bound (Cantelli's stays)
    assert chernoff_bounds([tuple(tables)]).tolist() == [1.0]


def test_many_tests_at_once_give_each_test_s_z():
    """Oracle: pair_moments one test at a time (itself checked against every split above); tests of 2-5 child
    states and 1-6 configurations, some empty, stacked together, and a test given as None."""
    rng = np.random.default_rng(11)
    tables = []
    for _ in range(30):
        shape = (int(rng.integers(1, 7)), int(rng.integers(2, 6)))
        tables.append(tuple(rng.integers(0, 6, size=shape) * (rng.random(shape) < 0.7) for _ in range(2)))
    tables.insert(7, None)
    expected = [0.0 if t is None else pair_moments(*t)[3] for t in tables]
    assert excesses(tables) == pytest.approx(expected, rel=1e-10, abs=1e-12)
    assert excesses([None]).tolist() == [0.0]


def test_exact_z_agrees_with_the_permutation_null_of_the_test():
    """Oracle: 20,000 within-configuration permutations of conditional_tests (its statistic D is affine in Q);
    the exact z is within five Monte-Carlo standard errors of theirs, ``sqrt((1 + z^2 (kurtosis - 1) / 4) / B)``
    with the null's kurtosis taken as that of a chi-square of 9 degrees of freedom (about 4.3)."""
    rng = np.random.default_rng(4)
    parent = rng.integers(0, 3, 3000)
    child = (parent + (rng.random(3000) < 0.3)) % 4
    child[:1500][rng.random(1500) < 0.01] = 3
    codes = np.c_[parent, child]
    samples = [(codes[:1500], np.ones(1500)), (codes[1500:], np.ones(1500))]
    tests = conditional_tests([3, 4], [(1, (0,))], samples, n_permutations=20_000,
                              random_state=np.random.default_rng(5))
    z_mc = (tests.statistic[0] - tests.null_mean[0]) / tests.null_sd[0]
    tables = [np.zeros((3, 4)), np.zeros((3, 4))]
    for table, (rows, _) in zip(tables, samples):
        np.add.at(table, (rows[:, 0], rows[:, 1]), 1.0)
    q, _, _, z = pair_moments(*tables)
    assert tests.statistic[0] == pytest.approx(3000 * (1 / 1500 + 1 / 1500) ** 2 * q, rel=1e-12)  # (n_X + n_Y) s^2 Q
    assert 1 < z < 10, z
    assert z == pytest.approx(z_mc, abs=5 * np.sqrt((1 + z**2 * 3.3 / 4) / 20_000))


def test_certified_tests_draw_nothing_and_the_others_pay_tau():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 2, size=(2000, 2))
    y = x.copy()
    y[:, 0] = rng.random(2000) < 0.9  # column 0 moves far; column 1 does not
    samples = [(x, np.ones(2000)), (y, np.ones(2000))]
    pairs = [(0, ()), (1, ())]
    p, z, drawn = staged_tests([2, 2], pairs, samples, n_permutations=999, stop=0.2,
                               random_state=np.random.default_rng(0), certify=1e-4)
    assert drawn[0] == 0 and p[0] == pytest.approx(1.0 / (1.0 + z[0] ** 2)) and p[0] <= 1e-4
    plain, _, _ = staged_tests([2, 2], pairs, samples, n_permutations=999, stop=0.2,
                               random_state=np.random.default_rng(0))
    assert drawn[1] > 0 and p[1] == pytest.approx(min(1.0, plain[1] + 1e-4))


@pytest.mark.slow
def test_certified_p_values_keep_their_level_under_the_null():
    """Simulation: 600 null tables (two samples of 60 over 2 configurations, 3 states), tau = 0.02; P(p <= t) for
    t = 0.03 and 0.1 within 3 Monte-Carlo standard errors of at most t."""
    rng = np.random.default_rng(7)
    runs, small = 600, {0.03: 0, 0.1: 0}
    for _ in range(runs):
        codes = np.c_[rng.integers(0, 2, 120), rng.integers(0, 3, 120)]
        p, _, _ = staged_tests([2, 3], [(1, (0,))], [(codes[:60], np.ones(60)), (codes[60:], np.ones(60))],
                               n_permutations=499, stop=1.0, random_state=rng, certify=0.02)
        for t in small:
            small[t] += p[0] <= t
    for t, count in small.items():
        assert count / runs <= t + 3 * np.sqrt(t * (1 - t) / runs), (t, count)


def test_the_permutation_null_of_sparse_configurations_has_the_exact_moments():
    """Oracle: the exact null mean and standard deviation (:func:`pair_moments`, checked against enumeration above)
    of a sparse table -- 60 configurations of 1 to 6 rows, many holding one child state only, where each
    configuration's last present state takes what the others left without a draw. 20,000 within-configuration
    permutations of :func:`conditional_tests` give both within five Monte-Carlo standard errors (the mean's
    ``sd / sqrt(B)``; the standard deviation's ``sd sqrt((kurtosis - 1) / (4 B))`` with the kurtosis bounded by
    6)."""
    rng = np.random.default_rng(11)
    parent = np.repeat(np.arange(60), rng.integers(1, 7, 60))
    child = np.where(parent % 3 == 0, parent % 4, rng.integers(0, 4, parent.size))  # a third hold one state
    side = rng.random(parent.size) < 0.5
    codes = np.c_[parent, child]
    samples = [(codes[side], np.ones(side.sum())), (codes[~side], np.ones((~side).sum()))]
    tests = conditional_tests([60, 4], [(1, (0,))], samples, n_permutations=20_000,
                              random_state=np.random.default_rng(12))
    tables = [np.zeros((60, 4)), np.zeros((60, 4))]
    for table, (rows, _) in zip(tables, samples):
        np.add.at(table, (rows[:, 0], rows[:, 1]), 1.0)
    q, mean, sd, _ = pair_moments(*tables)
    n_x, n_y = side.sum(), (~side).sum()
    scale = tests.statistic[0] / q  # D is Q times a constant of the sizes
    assert scale == pytest.approx((n_x + n_y) * (1 / n_x + 1 / n_y) ** 2, rel=1e-12)
    assert tests.null_mean[0] == pytest.approx(scale * mean, abs=5 * scale * sd / np.sqrt(20_000))
    assert tests.null_sd[0] == pytest.approx(scale * sd, abs=5 * scale * sd * np.sqrt(5 / (4 * 20_000)))
