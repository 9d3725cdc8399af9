"""Sequential permutation tests (early stop): valid p-values by enumeration of every split, the stopping rule, drift."""

from __future__ import annotations

import itertools
import json
from functools import partial

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher import FisherKernel
from bnfisher.cli import main
from bnfisher.comparison import EarlyStop, permutation_pvalue, permutation_statistics, statistics_pvalue
from bnfisher.datasets import load
from bnfisher.exceptions import OptionError, OptionTypeError

from _helpers import random_network


def _mmd_pvalue(outcome) -> float:
    return float(permutation_pvalue(outcome.observed.sum(), outcome.null.sum(axis=1)))


@pytest.mark.slow  # a simulation over every split of the pool
def test_a_stopped_test_keeps_its_p_value_valid_over_every_split_of_a_pool():
    """Under the null the observed split is a uniformly random one of the pool's splits.  A pool of 12 rows has
    924 splits into 6 + 6; the staged test (checkpoints 9 above 0.5, 49 above 0.2, 199 in all) runs on each with
    its own seed, and over the 924, P(p <= t) stays within t plus three standard errors of the simulation for
    every t (measured: 0.048, 0.102, 0.171, 0.280, 0.438, 0.679) -- while reporting the smallest p-value of the
    stages, which is no valid rule, exceeds it (0.134 at t = 0.1)."""
    network = random_network(np.random.default_rng(22), n_vars=4, max_parents=2, max_states=4)
    kernel = FisherKernel(network)
    pooled = network.sample(12, random_state=12, as_frame=False)
    assert len({tuple(row) for row in pooled}) == 11  # nearly distinct: a fine-grained null
    rule = EarlyStop(((9, 0.5), (49, 0.2)), _mmd_pvalue)
    staged, smallest, done = [], [], []
    for seed, first in enumerate(itertools.combinations(range(12), 6)):
        rest = np.setdiff1d(np.arange(12), first)
        outcome = permutation_statistics(kernel, pooled[list(first)], pooled[rest], n_permutations=199,
                                         random_state=seed, early_stop=rule)
        staged.append(_mmd_pvalue(outcome))
        done.append(outcome.null.shape[0])
        null = outcome.null.sum(axis=1)
        smallest.append(min(_mmd_pvalue(outcome), *(float(permutation_pvalue(outcome.observed.sum(), null[:b]))
                                                     for b, _ in rule.checkpoints if b <= null.size)))
    staged, smallest, done = np.array(staged), np.array(smallest), np.array(done)
    assert {9, 49, 199} <= set(done.tolist())  # every stage ends some tests
    for t in (0.05, 0.1, 0.2, 0.3, 0.5, 0.7):
        assert np.mean(staged <= t) <= t + 3 * np.sqrt(t * (1 - t) / staged.size), t
    assert np.mean(smallest <= 0.1) > 0.1 + 2 * np.sqrt(0.1 * 0.9 / smallest.size)  # the minimum is no p-value


def test_a_stopped_test_holds_the_first_permutations_of_the_same_plan():
    """Stopping changes how many permutations are run, never which: the stopped null is the prefix of the run
    that went on (same checkpoints, so the same rounds and streams)."""
    data = load("nursery").iloc[::7]
    kernel = FisherKernel(bf.learn(data))
    X, Y = data.iloc[::2], data.iloc[1::2]
    stopped = permutation_statistics(kernel, X, Y, n_permutations=300, random_state=3,
                                     early_stop=EarlyStop(((50, 0.0),), _mmd_pvalue))
    went_on = permutation_statistics(kernel, X, Y, n_permutations=300, random_state=3,
                                     early_stop=EarlyStop(((50, 1.0),), _mmd_pvalue))
    assert stopped.null.shape[0] == 50 and went_on.null.shape[0] == 300
    np.testing.assert_array_equal(stopped.null, went_on.null[:50])
    np.testing.assert_array_equal(stopped.columns_null, went_on.columns_null[:50])
    np.testing.assert_array_equal(stopped.observed, went_on.observed)


def test_a_clear_difference_runs_every_permutation():
    data = load("nursery")
    kernel = FisherKernel(bf.learn(data))
    X, Y = data[data["health"] == "recommended"], data[data["health"] != "recommended"]
    rule = EarlyStop.for_alpha(0.05, partial(statistics_pvalue, method="aggregate"))
    outcome = permutation_statistics(kernel, X, Y, n_permutations=1500, random_state=0, early_stop=rule)
    assert outcome.null.shape[0] == 1500 and statistics_pvalue(outcome, "aggregate") == 1 / 1501


def test_checkpoints_are_checked_and_scale_with_alpha():
    with pytest.raises(OptionError, match="must not increase"):
        EarlyStop(((10, 0.1), (100, 0.2)), _mmd_pvalue)
    with pytest.raises(OptionError, match="increasing"):
        EarlyStop(((100, 0.2), (10, 0.1)), _mmd_pvalue)
    assert EarlyStop.for_alpha(0.2, _mmd_pvalue).checkpoints == ((199, 0.6), (999, 0.4))
    # At a small level a checkpoint is never below ten permutations' worth, so a test near the floor goes on.
    assert EarlyStop.for_alpha(1e-4, _mmd_pvalue).checkpoints == ((199, 0.05), (999, 0.01))
    assert EarlyStop.for_alpha(0.05, _mmd_pvalue).stages(150) == ()


def test_drift_with_early_stop_flags_what_the_full_test_flags_and_says_where_it_stopped(capsys, tmp_path):
    nursery = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    changed = nursery.iloc[5000:5600].copy()
    changed["health"] = np.random.default_rng(1).permutation(changed["health"].to_numpy())
    windows = {"a": nursery.iloc[3000:3600], "b": nursery.iloc[3600:4200], "changed": changed}
    reference = nursery.iloc[:3000]
    full = bf.drift(reference, windows, random_state=0, stopping="fixed")
    early = bf.drift(reference, windows, random_state=0, stopping="checkpoints")
    assert early.windows["drift"].tolist() == full.windows["drift"].tolist() == [False, False, True]
    done = [len(c.test.null_distribution) for c in early.comparisons]
    assert done[2] == 2999 and min(done[:2]) < 2999  # the unchanged windows stopped early
    note = next(n for n in early.notes if n.startswith("Early stop"))
    assert f"{sum(done):,} in all" in note
    with pytest.raises(OptionTypeError, match="early_stop"):
        bf.drift(reference, windows, early_stop="yes")
    few = bf.drift(reference, windows, random_state=0, stopping="checkpoints", n_permutations=99)
    assert "no checkpoint comes before the 99 permutations" in next(n for n in few.notes if n.startswith("Early"))
    reference.to_csv(tmp_path / "ref.csv", index=False)
    for name, frame in windows.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    assert main(["drift", str(tmp_path / "ref.csv"), *(str(tmp_path / f"{n}.csv") for n in windows),
                 "--stopping", "checkpoints", "--quiet", "--json", str(tmp_path / "out.json")]) == 0
    table = pd.DataFrame(json.loads((tmp_path / "out.json").read_text())["windows"])
    np.testing.assert_allclose(table["p_value"].to_numpy(), early.windows["p_value"].to_numpy())


def test_early_stop_on_dask_gives_the_windows_of_memory():
    """Windows held by Dask workers stop at the same checkpoints, with the same p-values, as in memory."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    nursery = load("nursery").sample(frac=1.0, random_state=1).reset_index(drop=True)
    reference, data = nursery.iloc[:3000], nursery.iloc[3000:4800].reset_index(drop=True)
    memory = bf.drift(reference, data, window=600, random_state=0, stopping="checkpoints")
    with dask.config.set(scheduler="synchronous"):
        held = bf.drift(reference, dd.from_pandas(data, npartitions=3), window=600, random_state=0,
                        stopping="checkpoints")
    np.testing.assert_array_equal(held.windows["p_value"].to_numpy(), memory.windows["p_value"].to_numpy())
    done = [len(c.test.null_distribution) for c in held.comparisons]
    assert done == [len(c.test.null_distribution) for c in memory.comparisons] and max(done) < 2999


@pytest.mark.parametrize("case", ["constant", "one row", "reserved names"])
def test_early_stop_on_edge_tables_gives_a_result_or_a_one_line_refusal(case):
    from bnfisher.exceptions import DataError

    table = {"constant": pd.DataFrame({"a": ["x"] * 40, "b": ["y"] * 40}),
             "one row": pd.DataFrame({"a": ["x"], "b": ["y"]}),
             "reserved names": pd.DataFrame({"row": list("xyxy") * 10, "sample": list("uuvv") * 10,
                                             "witness": list("ab") * 20, "copies": list("pq") * 20})}[case]
    reference = pd.concat([table] * (10 if len(table) == 1 else 1), ignore_index=True)
    if case == "one row":
        with pytest.raises(DataError, match="fewer than 2 rows") as refused:
            bf.drift(reference, table, window=20, n_permutations=250, stopping="checkpoints", random_state=0)
        assert len(str(refused.value).splitlines()) == 1
        return
    result = bf.drift(reference, table, window=20, n_permutations=250, stopping="checkpoints", random_state=0)
    assert result.windows["rows"].tolist() == [20, 20] and not result.windows["drift"].any()
    assert any(note.startswith("Early stop") for note in result.notes)
