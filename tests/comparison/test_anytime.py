"""Anytime-valid permutation tests: the wealth against quadrature, validity by simulation and by enumerating every
split, Holm over sequential p-values, the null scale against every split, and the jobs' defaults."""

from __future__ import annotations

import itertools
import json
import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special

import bnfisher as bf
from bnfisher import FisherKernel
from bnfisher.cli import main
from bnfisher.comparison import AnytimeTest, holm, permutation_statistics
from bnfisher.comparison.aggregate import split_scores
from bnfisher.comparison.anytime import RunningTests
from bnfisher.comparison.staged import anytime_tests
from bnfisher.datasets import load
from bnfisher.exceptions import OptionError

from _helpers import random_network


def _wealth_by_quadrature(s: int, t: int, c_max: float) -> float:
    """The likelihood ratio of the bettor's law (c uniform on (0, c_max]) to Polya's urn, by numerical integration."""
    bettor = integrate.quad(lambda c: c**s * (1 - c) ** (t - s), 0.0, c_max, epsabs=0, epsrel=1e-11)[0] / c_max
    urn = integrate.quad(lambda c: c**s * (1 - c) ** (t - s), 0.0, 1.0, epsabs=0, epsrel=1e-11, points=[c_max])[0]
    return bettor / urn


@pytest.mark.parametrize("s, t", [(0, 1), (0, 30), (1, 40), (3, 200), (0, 2000), (12, 100)])
def test_the_wealth_is_the_likelihood_ratio_of_the_bettor_to_the_urn(s, t):
    test = AnytimeTest(0.05, "mmd", bet=0.5)
    scores = np.array([1.0] + [2.0] * s + [0.0] * (t - s))  # s exceedances first: the wealth depends on s and t
    running = RunningTests(test, scores[:1])
    running.add(scores[1:, None])
    c_max = 0.025
    assert running.wealth[0] == pytest.approx(max(1.0, max(_wealth_by_quadrature(min(s, k), k, c_max)
                                                            for k in range(1, t + 1))), rel=1e-7)


def test_the_urn_is_the_law_of_the_exceedances_under_exchangeability():
    """The martingale rests on P(I_t = 1 | k of t - 1 exceeded) = (k + 1) / (t + 1) for exchangeable statistics:
    counted over 200,000 simulated sequences (continuous i.i.d. scores), within four standard errors."""
    rng = np.random.default_rng(0)
    scores = rng.random((200_000, 6))
    exceed = scores[:, 1:] >= scores[:, :1]
    for t in (2, 4, 5):
        before = exceed[:, : t - 1].sum(axis=1)
        for k in range(t):
            chosen = before == k
            rate = exceed[chosen, t - 1].mean()
            expected = (k + 1) / (t + 1)
            assert abs(rate - expected) <= 4 * np.sqrt(expected * (1 - expected) / chosen.sum()), (t, k, rate)


def _fed(test: AnytimeTest, scores: np.ndarray, chunk: int = 32) -> RunningTests:
    """Run a test per row of ``scores`` (observed first), fed ``chunk`` permutations at a time."""
    running = RunningTests(test, scores[:, 0])
    for start in range(1, scores.shape[1], chunk):
        if running.add(scores[:, start: start + chunk].T):
            break
    return running


@pytest.mark.slow
@pytest.mark.parametrize("alpha, bet", [(0.05, 0.5), (0.01, 0.25), (0.2, 0.9)])
def test_under_the_null_no_stopping_time_makes_the_p_value_small(alpha, bet):
    """Ville: P(max over every t <= 2,000 of W_t >= 1 / u) <= u for every u, whatever rule picks the time --
    the wealth in closed form over 3,000 simulated exchangeable sequences (i.i.d. uniform scores), within three
    standard errors."""
    scores = np.random.default_rng(1).random((3000, 2001))
    s = np.cumsum(scores[:, 1:] >= scores[:, :1], axis=1)
    t = np.arange(1, 2001)
    c_max = bet * alpha
    smallest = 1.0 / np.maximum(special.betainc(s + 1, t - s + 1, c_max) / c_max, 1.0).max(axis=1)
    stopped = _fed(AnytimeTest(alpha, "mmd", bet=bet), scores).outcome()[0]  # the library's, at its own stops
    assert np.all(stopped >= smallest - 1e-12)
    assert np.mean(stopped <= alpha) <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / stopped.size)
    for u in (alpha / 2, alpha, 2 * alpha):
        assert np.mean(smallest <= u) <= u + 3 * np.sqrt(u * (1 - u) / smallest.size), u


@pytest.mark.slow  # a simulation over every split of the pool
def test_a_stopped_test_is_valid_over_every_split_of_a_pool():
    """Under the null the observed split is a uniformly random split of the pool.  A pool of 12 rows has 924
    splits into 6 + 6; the anytime test at alpha = 0.2 runs on each with its own seed, and its p-value keeps
    P(p <= u) <= u (plus three standard errors) for every u."""
    network = random_network(np.random.default_rng(22), n_vars=4, max_parents=2, max_states=4)
    kernel = FisherKernel(network)
    pooled = network.sample(12, random_state=12, as_frame=False)
    test = AnytimeTest(0.2, "mmd")
    p, used = [], []
    for seed, first in enumerate(itertools.combinations(range(12), 6)):
        rest = np.setdiff1d(np.arange(12), first)
        outcome = permutation_statistics(kernel, pooled[list(first)], pooled[rest], n_permutations=400,
                                         random_state=seed, early_stop=test)
        result = test.outcome(outcome)
        p.append(result.p_value)
        used.append(result.permutations)
    p = np.array(p)
    for u in (0.05, 0.1, 0.2, 0.3, 0.5):
        assert np.mean(p <= u) <= u + 3 * np.sqrt(u * (1 - u) / p.size), u
    assert min(used) < 20 and max(used) <= 400


@pytest.mark.slow
def test_holm_over_anytime_p_values_keeps_the_family_wise_error():
    """Ten null tests, each stopped by its own rule at alpha / 10, then Holm at alpha: over 3,000 simulated
    families the chance of any rejection stays at most alpha (plus three standard errors)."""
    rng = np.random.default_rng(2)
    alpha, tests = 0.1, 10
    test = AnytimeTest(alpha / tests, "mmd")
    any_rejected = []
    for _ in range(3):
        p_values = _fed(test, rng.random((1000 * tests, 2001))).outcome()[0].reshape(1000, tests)
        any_rejected += [bool(np.any(holm(row) <= alpha)) for row in p_values]
    rate = np.mean(any_rejected)
    assert rate <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / len(any_rejected)), rate


@pytest.mark.parametrize("first", [7, 4])
def test_the_null_scale_is_the_mean_and_variance_over_every_split(first):
    """Each family's NullScale mean and variance are its MMD²'s over all splits of a pool of 14 complete rows
    (enumerated: C(14, 7) = 3,432 splits of 7 and 7, C(14, 4) = 1,001 of 4 and 10), to rounding; its degrees of
    freedom count the pool's seen configurations' states."""
    network = random_network(np.random.default_rng(5), n_vars=4, max_parents=2, max_states=3)
    kernel = FisherKernel(network)
    pooled = network.sample(14, random_state=3, as_frame=False)
    outcome = permutation_statistics(kernel, pooled[:first], pooled[first:], n_permutations=5, random_state=0)
    features = np.asarray(kernel.embed(pooled).toarray() if hasattr(kernel.embed(pooled), "toarray")
                          else kernel.embed(pooled))
    splits = np.array(list(itertools.combinations(range(14), first)))
    member = np.zeros((len(splits), 14))
    np.put_along_axis(member, splits, 1.0, axis=1)
    difference = member @ features / first - (features.sum(axis=0) - member @ features) / (14 - first)
    offsets = kernel.block_offsets
    mmd2 = np.column_stack([np.sum(difference[:, offsets[i]: offsets[i + 1]] ** 2, axis=1) for i in outcome.families])
    np.testing.assert_allclose(outcome.scale.family_mean, mmd2.mean(axis=0), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(outcome.scale.family_variance, mmd2.var(axis=0), rtol=1e-8, atol=1e-15)
    codes = kernel.encode(pooled).codes
    for k, i in enumerate(outcome.families):
        parents = list(network.parent_indices()[i])
        seen = {}
        for row in codes:
            seen.setdefault(tuple(row[parents]), set()).add(row[i])
        assert outcome.scale.family_df[k] == sum(len(states) - 1 for states in seen.values())


def test_the_null_scale_variance_is_the_permutations_variance():
    """Each family's NullScale variance against the variance of its MMD² over 4,000 permutations of two nursery
    halves (relative standard error about 2%): within 10%, on a pool of 6,000 rows where enumeration cannot go."""
    data = load("nursery").sample(frac=1.0, random_state=0)
    kernel = FisherKernel(bf.learn(data))
    outcome = permutation_statistics(kernel, data.iloc[:3000], data.iloc[3000:6000], n_permutations=4000,
                                     random_state=0)
    np.testing.assert_allclose(outcome.scale.family_variance, outcome.null.var(axis=0), rtol=0.10)
    np.testing.assert_allclose(outcome.scale.family_mean, outcome.null.mean(axis=0), rtol=0.03)


def test_split_scores_score_each_split_alone_and_rank_a_clear_change_first():
    data = load("nursery")
    kernel = FisherKernel(bf.learn(data))
    X, Y = data[data["health"] == "recommended"], data[data["health"] != "recommended"]
    outcome = permutation_statistics(kernel, X, Y, n_permutations=60, random_state=0)
    scores = split_scores(outcome, "aggregate")
    assert scores.shape == (61,) and np.all(np.isfinite(scores)) and scores[0] > scores[1:].max()
    # A split's score does not change with the other permutations drawn beside it.
    fewer = permutation_statistics(kernel, X, Y, n_permutations=60, random_state=0)
    np.testing.assert_array_equal(split_scores(fewer, "aggregate"), scores)
    np.testing.assert_array_equal(split_scores(outcome, "mmd")[1:], outcome.null.sum(axis=1))


def test_options_are_checked():
    for options in ({"alpha": 0.0}, {"alpha": 0.05, "bet": 1.0}, {"alpha": 0.05, "risk": 0.0}):
        with pytest.raises(OptionError, match="must lie in"):
            AnytimeTest(method="mmd", **options)
    with pytest.raises(OptionError, match="'mmd' or 'aggregate'"):
        AnytimeTest(0.05, "fisher")
    assert AnytimeTest(0.05).stages(300) == (10, 20, 40, 80, 160)


def test_drift_stops_quiet_windows_early_and_flags_the_changed_one_on_any_number_of_threads(tmp_path):
    nursery = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    changed = nursery.iloc[5000:5600].copy()
    changed["health"] = np.random.default_rng(1).permutation(changed["health"].to_numpy())
    windows = {"a": nursery.iloc[3000:3600], "b": nursery.iloc[3600:4200], "changed": changed}
    reference = nursery.iloc[:3000]
    fixed = bf.drift(reference, windows, random_state=0, stopping="fixed")
    futility = bf.drift(reference, windows, random_state=0)  # the default
    anytime = bf.drift(reference, windows, random_state=0, stopping="anytime")
    threads = bf.drift(reference, windows, random_state=0, stopping="anytime", n_jobs=2)
    for result in (fixed, futility, anytime):
        assert result.windows["drift"].tolist() == [False, False, True]
    used = anytime.windows["permutations"].tolist()
    assert max(used[:2]) < 100 and used[2] < fixed.windows["permutations"].iloc[2] == 2999
    pd.testing.assert_frame_equal(threads.windows, anytime.windows)
    assert anytime.comparisons[2].test.sequential.rejected
    assert any(n.startswith("Anytime-valid tests") for n in anytime.notes)
    # Futility: the unchanged windows stop early with p = 1; the changed one runs every permutation, and its p-value
    # is the fixed aggregate test's over them all.
    assert futility.windows["p_value"].iloc[:2].tolist() == [1.0, 1.0]
    assert max(futility.windows["permutations"][:2]) < 100
    assert futility.windows["permutations"].iloc[2] == 2999 and futility.windows["p_value"].iloc[2] <= 0.05 / 3
    assert any(n.startswith("Stopped for futility") for n in futility.notes)
    families = anytime.comparisons[2].families
    assert families.iloc[0]["variable"] == "health" and families.iloc[0]["p_adjusted"] <= 0.05
    with pytest.warns(FutureWarning, match="stopping='checkpoints'"):
        old = bf.drift(reference, windows, random_state=0, early_stop=True)
    assert old.windows["permutations"].max() == 2999
    with pytest.raises(OptionError, match="Give `stopping` alone"):
        bf.drift(reference, windows, stopping="fixed", early_stop=True)
    with pytest.raises(OptionError, match="Give `stopping` alone"):
        bf.drift(reference, windows, stopping="anytime", early_stop=True)
    with pytest.raises(OptionError, match="stopping"):
        bf.drift(reference, windows, stopping="sometimes")


@pytest.mark.slow
@pytest.mark.parametrize("run", [4, 13, 17, 19])
def test_the_futility_stop_keeps_the_fixed_tests_flag_near_the_level(run):
    """A changed window near Holm's first level (alarm, HYPOVOLEMIA's prior 0.2 -> 0.3, 500 rows among ten, against
    4,000; ``benchmarks/early_stop.py``'s runs) that every permutation flags is flagged by the default too: the stop
    reads the anytime statistic, whose families' tails must match the permutations'.  With the families' variances
    taken as Gaussian (before 2026-11-30) the default stopped each of these four for futility."""
    network = bf.read_network(pathlib.Path(__file__).parent.parent / "fixtures" / "bif" / "alarm.bif.gz")
    cpts = dict(network.cpts)
    cpts["HYPOVOLEMIA"] = np.array([0.3, 0.7])
    changed = bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))
    rng = np.random.default_rng(run)
    reference = network.sample(4000, random_state=rng)
    windows = [network.sample(500, random_state=rng) for _ in range(10)]
    windows[5] = changed.sample(500, random_state=rng)
    fixed = bf.drift(reference, windows, random_state=run, stopping="fixed").windows
    default = bf.drift(reference, windows, random_state=run).windows
    assert fixed["drift"].iloc[5]
    assert default["drift"].iloc[5] and default["permutations"].iloc[5] == fixed["permutations"].iloc[5]


def test_the_command_line_takes_stopping_and_warns_of_the_old_flag(tmp_path, capsys):
    nursery = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    nursery.iloc[:2000].to_csv(tmp_path / "ref.csv", index=False)
    nursery.iloc[2000:2600].to_csv(tmp_path / "w.csv", index=False)
    for flags, permutations in ((["--stopping", "fixed"], 2999), (["--stopping", "anytime"], None), ([], None)):
        capsys.readouterr()
        assert main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "w.csv"), "--quiet", "--json", "-",
                     *flags]) == 0
        table = pd.DataFrame(json.loads(capsys.readouterr().out)["windows"])
        assert permutations is None or table["permutations"].iloc[0] == permutations
    assert table["permutations"].iloc[0] < 2999  # futility, the default: an unchanged window stops early
    assert main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "w.csv"), "--quiet", "--early-stop"]) == 0
    assert "deprecated" in capsys.readouterr().err


def test_anytime_family_tests_stop_once_settled_and_name_the_changed_family():
    network = bf.BayesianNetwork({"a": [], "b": ["a"], "c": ["b"]},
                                 {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]], "c": [[0.7, 0.3], [0.4, 0.6]]},
                                 {v: ("0", "1") for v in "abc"})
    moved = bf.BayesianNetwork(dict(network.parents), {**network.cpts, "c": [[0.5, 0.5], [0.4, 0.6]]},
                               dict(network.states))
    X = (network.encode(network.sample(3000, random_state=0)).codes, np.ones(3000))
    Y = (moved.encode(moved.sample(3000, random_state=1)).codes, np.ones(3000))
    rule = AnytimeTest(0.05 / 3, "mmd")
    tests, drawn = anytime_tests(network.cardinalities, list(enumerate(network.parent_indices())), [X, Y],
                                 n_permutations=20000, random_state=np.random.default_rng(0), rule=rule)
    assert [bool(p <= 0.05 / 3) for p in tests.p_value] == [False, False, True]
    assert drawn[2] < 2000 and drawn[:2].max() < 100  # the unchanged settle at once, the changed one soon
    fixed = bf.comparison.conditional_family_tests(network, X, Y, n_permutations=2000, random_state=0)
    np.testing.assert_allclose(tests.statistic, fixed.statistic)  # the same statistics, tested by betting


@pytest.mark.slow
def test_anytime_windows_on_dask_stop_where_they_stop_in_memory():
    """Windows held by Dask workers stop after the same permutations, with the same p-values, as in memory."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    nursery = load("nursery").sample(frac=1.0, random_state=1).reset_index(drop=True)
    reference, data = nursery.iloc[:3000], nursery.iloc[3000:4800].reset_index(drop=True)
    data.loc[1200:, "health"] = "priority"  # the last window changed
    memory = bf.drift(reference, data, window=600, random_state=0)
    with dask.config.set(scheduler="synchronous"):
        held = bf.drift(reference, dd.from_pandas(data, npartitions=3), window=600, random_state=0)
    for column in ("p_value", "permutations", "drift"):
        np.testing.assert_array_equal(held.windows[column].to_numpy(), memory.windows[column].to_numpy())
    assert memory.windows["drift"].tolist() == [False, False, True]
