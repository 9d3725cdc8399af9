"""The levels of a monitor's windows: the sums against exact rational arithmetic, the error rate by simulation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from bnfisher.comparison.spending import WindowLevels
from bnfisher.exceptions import OptionError


def _exact_level(alpha: Fraction, h: int, k: int) -> Fraction:
    """The k-th window's level from its definition, in exact arithmetic."""
    return alpha * h / ((k + h - 1) * (k + h))


@pytest.mark.parametrize("h", [1, 7, 52])
def test_the_levels_and_their_sum_match_exact_arithmetic(h):
    levels = WindowLevels(0.05, h, "unbounded")
    alpha = Fraction(1, 20)
    shown = levels.levels(1, 400)
    exact = [_exact_level(alpha, h, k) for k in range(1, 401)]
    np.testing.assert_allclose(shown, [float(x) for x in exact], rtol=1e-14)
    running = Fraction(0)
    for n, level in enumerate(exact, start=1):  # the closed form of the sum, at every length
        running += level
        assert levels.spent(n) == pytest.approx(float(running), rel=1e-13)
    assert running < alpha  # and never reaches alpha
    # The tail: windows 401 onwards, in exact arithmetic over 10^4 more, close the gap to alpha as 1 / n.
    tail = sum(_exact_level(alpha, h, k) for k in range(401, 401 + 10_000))
    assert float(alpha - running - tail) == pytest.approx(float(alpha) * h / (10_400 + h), rel=1e-9)
    # A window's level depends on its place only: a later run starting at window 201 sees the same levels.
    np.testing.assert_array_equal(levels.levels(201, 5), shown[200:205])


def test_a_horizon_spends_alpha_per_horizon_and_the_unbounded_guarantee_half_of_it_in_the_first():
    horizon, unbounded = WindowLevels(0.05, 52), WindowLevels(0.05, 52, "unbounded")
    assert horizon.spent(52) == pytest.approx(0.05) and horizon.spent(156) == pytest.approx(0.15)
    assert unbounded.spent(52) == pytest.approx(0.025) and unbounded.spent(10**9) < 0.05
    assert unbounded.levels(1, 1)[0] == pytest.approx(0.05 / 53)
    assert unbounded.levels(52, 1)[0] == pytest.approx(0.05 * 52 / (103 * 104))


@pytest.mark.slow
def test_the_chance_of_any_false_alarm_stays_below_alpha_by_simulation():
    """Independent uniform p-values, 20,000 streams of 3,000 windows: the union bound is close to tight here.

    A window without change has a (super-)uniform p-value; the share of streams with any p_k <= alpha_k is the
    family-wise error.  Monte-Carlo standard error at 0.05: 0.0015; the check allows three of them.  Doubling the
    levels (a sum of 2 alpha) must fail it, and a 52-window horizon over three years does.
    """
    rng = np.random.default_rng(20261129)
    streams, windows = 20_000, 3_000
    unbounded = WindowLevels(0.05, 52, "unbounded").levels(1, windows)
    any_alarm = np.zeros(streams, dtype=bool)
    any_doubled = np.zeros(streams, dtype=bool)
    for start in range(0, windows, 500):  # in blocks: never a 20,000 x 3,000 matrix
        p = rng.random((streams, 500))
        any_alarm |= (p <= unbounded[start:start + 500]).any(axis=1)
        any_doubled |= (p <= 2 * unbounded[start:start + 500]).any(axis=1)
    se = np.sqrt(0.05 * 0.95 / streams)
    expected = 1 - np.prod(1 - unbounded)  # independent windows: the exact rate
    assert abs(any_alarm.mean() - expected) <= 4 * np.sqrt(expected * (1 - expected) / streams)
    assert any_alarm.mean() <= 0.05 + 3 * se
    assert any_doubled.mean() > 0.05 + 3 * se  # the check can fail
    three_years = 1 - (1 - 0.05 / 52) ** 156  # the horizon's promise covers one year only
    assert three_years > 0.13


def test_bad_options_are_named():
    with pytest.raises(OptionError, match="guarantee"):
        WindowLevels(0.05, 52, "forever")
    with pytest.raises(OptionError, match="horizon"):
        WindowLevels(0.05, 0, "unbounded")
    with pytest.raises(OptionError, match="alpha"):
        WindowLevels(1.5, 52)
