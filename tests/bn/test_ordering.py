"""Order search (structure/ordering.py) and the default hill climbing that uses it, against brute force."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnfisher import encode, learn, read_bif, score
from bnfisher.bn.scores import LocalScorer
from bnfisher.bn.structure.ordering import _best, candidate_sets, order_search

from _helpers import bif_path, random_network


def _problem(seed, n_vars=6, n_rows=400):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=n_vars, max_parents=2)
    encoded = encode(network.sample(n_rows, random_state=rng, as_frame=False))
    return rng, encoded, LocalScorer(encoded.codes, encoded.cardinalities)


def _all_sets(scorer, n, max_size, black=()):
    """Every parent set of at most ``max_size`` allowed parents, with its score: the unpruned candidate list."""
    out = []
    for v in range(n):
        allowed = [u for u in range(n) if u != v and (u, v) not in black]
        out.append({s: scorer(v, s) for k in range(max_size + 1) for s in itertools.combinations(allowed, k)})
    return out


def _order_value(sets, order):
    """Sum over variables of the best set among their predecessors (Teyssier & Koller's order score)."""
    total, seen = 0.0, set()
    for v in order:
        total += max(value for s, value in sets[v].items() if set(s) <= seen)
        seen.add(v)
    return total


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_best_candidate_within_a_mask_equals_brute_force(seed):
    rng, encoded, scorer = _problem(seed)
    n = encoded.codes.shape[1]
    # With every other variable a candidate and sets up to n - 1, the candidates are all subsets.
    candidates = candidate_sets(scorer, n, n_candidates=n, max_size=n - 1)
    sets = _all_sets(scorer, n, n - 1)
    for _ in range(10):
        v = int(rng.integers(n))
        inside = [u for u in range(n) if u != v and rng.random() < 0.5]
        mask = np.zeros(1, dtype=np.uint64)
        for u in inside:
            mask[0] |= np.uint64(1) << np.uint64(u)
        k = _best(v, mask, candidates.masks, candidates.offsets)
        expected = max(value for s, value in sets[v].items() if set(s) <= set(inside))
        assert candidates.scores[k] == pytest.approx(expected, abs=1e-9)
        assert set(candidates.parents(k)) <= set(inside)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_size=st.integers(1, 3))
def test_order_search_ends_at_an_order_no_insertion_improves(seed, max_size):
    rng, encoded, scorer = _problem(seed, n_vars=int(np.random.default_rng(seed).integers(3, 7)))
    n = encoded.codes.shape[1]
    candidates = candidate_sets(scorer, n, n_candidates=n, max_size=max_size)
    sets = _all_sets(scorer, n, max_size)
    start = rng.permutation(n).tolist()
    order, parents = order_search(candidates, start)
    assert sorted(order) == list(range(n))
    value = _order_value(sets, order)
    assert value >= _order_value(sets, start) - 1e-9
    # The DAG is each variable's best set among its predecessors, so its score is the order's value.
    assert sum(scorer(v, ps) for v, ps in enumerate(parents)) == pytest.approx(value, abs=1e-8)
    position = {v: k for k, v in enumerate(order)}
    assert all(position[p] < position[v] for v, ps in enumerate(parents) for p in ps)
    for i, p in itertools.product(range(n), range(n)):  # every insertion move, by brute force
        moved = order[:i] + order[i + 1:]
        moved.insert(p, order[i])
        assert _order_value(sets, moved) <= value + 1e-6


def test_candidate_sets_respect_lists_and_keep_the_start_sets():
    _, encoded, scorer = _problem(5, n_vars=6)
    n = encoded.codes.shape[1]
    start = [(), (0,), (0, 1), (0, 2), (0, 1, 2, 3), (0, 4)]  # holds the whitelist, not the blacklist
    candidates = candidate_sets(scorer, n, starts=[start], n_candidates=2, max_size=2, whitelist=[(0, 5)],
                                blacklist=[(1, 3), (3, 1)])
    for v in range(n):
        kept = [candidates.parents(k) for k in range(candidates.offsets[v], candidates.offsets[v + 1])]
        assert all(1 not in ps for ps in kept) if v == 3 else True
        assert all(0 in ps for ps in kept) if v == 5 else True
    # A start set is dropped only when a subset of it scores at least as well.
    for v, ps in enumerate(start):
        within = [candidates.scores[k] for k in range(candidates.offsets[v], candidates.offsets[v + 1])
                  if set(candidates.parents(k)) <= set(ps)]
        assert max(within) >= scorer(v, ps) - 1e-9


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_default_search_never_ends_below_plain_hill_climbing(seed):
    _, encoded, _ = _problem(seed, n_vars=7, n_rows=600)
    plain = score(learn(encoded, "hc", search="plain"), encoded)
    assert score(learn(encoded, "hc"), encoded) >= plain - 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("name", ["insurance", "alarm"])
def test_default_search_beats_plain_on_bundled_networks(name):
    data = encode(read_bif(bif_path(name)).sample(5000, random_state=0))
    plain = score(learn(data, "hc", search="plain"), data)
    assert score(learn(data, "hc"), data) > plain


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_words=st.integers(1, 2))
def test_dominated_sets_are_exactly_those_with_an_earlier_subset(seed, n_words):
    """A set is dropped when an earlier set of the same variable lies inside it: the compiled loop and its NumPy
    fallback against the definition, on one- and two-word masks."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.structure.ordering import _numpy_undominated, _undominated

    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 12, size=4)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    members = [sorted(set(rng.choice(64 * n_words, size=int(rng.integers(0, 4))).tolist())) for _ in range(bounds[-1])]
    masks = np.zeros((len(members), n_words), dtype=np.uint64)
    for k, parents in enumerate(members):
        for u in parents:
            masks[k, u // 64] |= np.uint64(1) << np.uint64(u % 64)
    expected = [not any(set(members[a]) <= set(members[b]) for a in range(bounds[v], b))
                for v in range(sizes.size) for b in range(bounds[v], bounds[v + 1])]
    _materialise()
    np.testing.assert_array_equal(_undominated(masks, bounds), expected)
    np.testing.assert_array_equal(_numpy_undominated(masks, bounds), expected)
