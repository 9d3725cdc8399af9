"""The effect size: the unbiased MMD²_u's confidence interval covers the population MMD² (simulation).

The population MMD² of a fixed kernel between two networks is computed by enumeration of every joint state
(``sum_x P(x) Phi(x) - sum_x Q(x) Phi(x)``, squared), independently of the estimator.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.comparison.permutation import permutation_statistics
from bnfisher.comparison.two_sample import effect_interval
from bnfisher.data.rows import DistinctRows


def _networks():
    states = {v: ("0", "1") for v in "abc"}
    parents = {"a": [], "b": ["a"], "c": ["b"]}
    p = bf.BayesianNetwork(parents, {"a": [0.6, 0.4], "b": [[0.8, 0.2], [0.3, 0.7]], "c": [[0.7, 0.3], [0.2, 0.8]]},
                           states)
    q = bf.BayesianNetwork(parents, {"a": [0.5, 0.5], "b": p.cpts["b"], "c": [[0.6, 0.4], [0.2, 0.8]]}, states)
    return p, q


def _population_mmd2(kernel, p, q) -> float:
    every = pd.DataFrame(list(itertools.product("01", repeat=3)), columns=list(p.variables))
    features = kernel.embed(every)
    features = features.toarray() if hasattr(features, "toarray") else np.asarray(features)
    weights = [np.exp(np.ravel([net.log_likelihood(every.iloc[[k]]) for k in range(len(every))])) for net in (p, q)]
    return float(((weights[0] - weights[1]) @ features) @ ((weights[0] - weights[1]) @ features))


def _coverage(p, q, n: int, runs: int) -> tuple:
    kernel = bf.FisherKernel(p)
    truth = _population_mmd2(kernel, p, q) if q is not p else 0.0
    covered = []
    for r in range(runs):
        X = DistinctRows.of(kernel.encode(p.sample(n, random_state=2 * r)))
        Y = DistinctRows.of(kernel.encode(q.sample(n, random_state=2 * r + 1)))
        stats = permutation_statistics(kernel, X, Y, n_permutations=199, random_state=r, witness=True)
        low, high = effect_interval(stats.unbiased, stats.null.sum(axis=1), (stats.x.witness, X.copies),
                                    (stats.y.witness, Y.copies))
        covered.append(low <= truth <= high)
    return float(np.mean(covered)), truth


@pytest.mark.slow
def test_the_interval_covers_zero_under_no_change_and_the_population_value_under_a_change():
    """Simulation: 80 runs each, n = m = 400; coverage of the nominal 95% interval >= 0.95 - 3 Monte-Carlo
    standard errors (0.024 each)."""
    p, q = _networks()
    bound = 0.95 - 3 * np.sqrt(0.95 * 0.05 / 80)
    null, _ = _coverage(p, p, 400, 80)
    change, truth = _coverage(p, q, 400, 80)
    assert truth > 0.001
    assert null >= bound and change >= bound, (null, change, truth)
