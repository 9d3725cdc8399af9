"""Exact structure learning against a brute-force oracle over variable orders."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

import bnfisher as bf
from bnfisher.data.providers import NumpyCounts
from bnfisher.exceptions import OptionError, ResourceError

from _helpers import bif_path, random_network


def _oracle_local(codes, cards, child, parents, score, ess=1.0, log_prior=0.0):
    """A local score written from the formulas, independent of bnfisher.scores."""
    n = codes.shape[0]
    r = cards[child]
    q = int(np.prod([cards[p] for p in parents])) if parents else 1
    config = np.zeros(n, dtype=np.int64)
    for p in parents:
        config = config * cards[p] + codes[:, p]
    table = np.bincount(config * r + codes[:, child], minlength=q * r).reshape(q, r).astype(float)
    totals = table.sum(axis=1)
    if score == "bic":
        ll = sum(table[j, k] * math.log(table[j, k] / totals[j]) for j in range(q) for k in range(r) if table[j, k])
        value = ll - 0.5 * math.log(n) * q * (r - 1)
    else:
        a_jk = 1.0 if score == "k2" else ess / (q * r)
        a_j = a_jk * r
        value = float(np.sum(gammaln(a_j) - gammaln(a_j + totals)) + np.sum(gammaln(a_jk + table) - gammaln(a_jk)))
    return value + log_prior * len(parents)


def _oracle_optimum(codes, cards, score, max_parents=None, white=(), black=(), log_prior=0.0):
    """max over orders of sum_v max over parent sets among v's predecessors (lists and max_parents respected)."""
    n = len(cards)
    limit = n - 1 if max_parents is None else max_parents
    cache = {}

    def best(child, candidates):
        key = (child, candidates)
        if key not in cache:
            required = {p for p, c in white if c == child}
            if not required <= set(candidates):
                cache[key] = -math.inf
                return cache[key]
            options = [p for p in candidates if (p, child) not in black]
            values = [_oracle_local(codes, cards, child, parents, score, log_prior=log_prior)
                      for size in range(limit + 1) for parents in itertools.combinations(options, size)
                      if required <= set(parents)]
            cache[key] = max(values, default=-math.inf)
        return cache[key]

    return max(sum(best(v, tuple(sorted(order[:i]))) for i, v in enumerate(order))
               for order in itertools.permutations(range(n)))


def _problem(seed, n_vars):
    network = random_network(np.random.default_rng(seed), n_vars=n_vars, max_parents=2, max_states=3)
    codes = network.sample(300, random_state=seed, as_frame=False)
    cards = [len(network.states[v]) for v in network.schema.variables]
    return codes, cards, None, list(network.schema.variables)


@pytest.mark.parametrize("score", ["bic", "bdeu", "k2"])
@pytest.mark.parametrize("seed, n_vars, max_parents", [(0, 5, None), (1, 6, 2), (2, 5, 1)])
def test_exact_optimum_equals_the_best_order(score, seed, n_vars, max_parents):
    codes, cards, _, names = _problem(seed, n_vars)
    learned = bf.learn(codes, "exact", structure_score=score, max_parents=max_parents)
    ours = bf.score(learned, codes, structure_score=score)
    assert ours == pytest.approx(_oracle_optimum(codes, cards, score, max_parents), rel=1e-9)
    if max_parents is not None:
        assert max(len(p) for p in learned.parents.values()) <= max_parents


@pytest.mark.parametrize("score", ["bdeu", "k2"])
@pytest.mark.parametrize("seed", [85, 91, 171])
def test_exact_on_distinct_rows_with_copies_reaches_the_optimum(score, seed):
    # Distinct rows weighted by their copies (what drift pools): the pruning rule for BDeu / K2 counts a parent
    # configuration's rows, and one distinct row with copies is several rows (these seeds found it pruning the optimum).
    rng = np.random.default_rng(seed)
    n_vars, n = int(rng.integers(3, 6)), int(rng.integers(5, 40))
    cards = [int(r) for r in rng.integers(2, 4, size=n_vars)]
    base = np.column_stack([rng.integers(0, r, size=n) for r in cards])
    codes = base[rng.integers(0, n, size=n * 4)]
    schema = bf.Schema({f"X{i}": tuple(range(r)) for i, r in enumerate(cards)})
    distinct, copies = np.unique(codes, axis=0, return_counts=True)
    weighted = NumpyCounts(distinct, schema, weights=copies.astype(float))
    learned = bf.learn(weighted, "exact", schema=schema, structure_score=score)
    assert bf.score(learned, codes, structure_score=score) == pytest.approx(
        _oracle_optimum(codes, cards, score), rel=1e-9)


def test_exact_respects_lists_and_the_structure_prior():
    codes, cards, _, _ = _problem(3, 5)
    names = [f"X{i}" for i in range(5)]
    white, black = [(0, 4)], [(1, 2), (2, 1), (3, 0)]
    learned = bf.learn(codes, "exact", whitelist=[(names[a], names[b]) for a, b in white],
                       blacklist=[(names[a], names[b]) for a, b in black], structure_prior=0.2)
    edges = {(names.index(a), names.index(b)) for a, b in learned.edges}
    assert set(white) <= edges and not set(black) & edges
    ours = sum(_oracle_local(codes, cards, i, tuple(names.index(p) for p in learned.parents[v]), "bic",
                             log_prior=math.log(0.2)) for i, v in enumerate(names))
    assert ours == pytest.approx(_oracle_optimum(codes, cards, "bic", white=white, black=black,
                                                 log_prior=math.log(0.2)), rel=1e-9)


@pytest.mark.parametrize("name, rows", [("cancer", 100_000), ("earthquake", 100_000), ("survey", 100_000)])
def test_exact_recovers_the_equivalence_class_of_small_networks(name, rows):
    network = bf.read_bif(bif_path(name))
    data = network.sample(rows, random_state=0)
    learned = bf.learn(data, "exact")

    def cpdag(net):
        parents = {v: set(net.parents[v]) for v in net.variables}
        skeleton = {frozenset((p, v)) for v in parents for p in parents[v]}
        colliders = {(frozenset((a, b)), c) for c in parents for a, b in itertools.combinations(sorted(parents[c]), 2)
                     if frozenset((a, b)) not in skeleton}
        return skeleton, colliders

    assert cpdag(learned) == cpdag(network)


@pytest.mark.parametrize("name", ["asia", "insurance"])
def test_exact_scores_at_least_hill_climbing(name):
    network = bf.read_bif(bif_path(name))
    data = network.sample(2000, random_state=1)
    if name == "insurance":  # 27 variables: keep the 14 first (declared order)
        data = data.iloc[:, :14]
    exact = bf.learn(data, "exact", max_parents=3)
    hc = bf.learn(data, "hc", max_parents=3)
    assert bf.score(exact, data) >= bf.score(hc, data) - 1e-6


def test_exact_refuses_what_it_cannot_do():
    wide = pd.DataFrame(np.random.default_rng(0).integers(0, 2, size=(50, 26)), columns=[f"c{i}" for i in range(26)])
    with pytest.raises(ResourceError, match="at most 25 variables"):
        bf.learn(wide.astype(str), "exact")
    codes, _, _, _ = _problem(4, 6)
    with pytest.raises(ResourceError, match="max_local_scores"):
        bf.learn(codes, "exact", structure_score="bdeu", max_local_scores=10)
    with pytest.raises(OptionError, match="No DAG"):
        bf.learn(codes, "exact", whitelist=[("X0", "X1"), ("X1", "X0")])
    with pytest.raises(TypeError, match="Unexpected option"):
        bf.learn(codes, "exact", tabu=3)
