import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnfisher import marginal, parent_marginals, read_bif

from _helpers import bif_path, brute_force_marginal, random_network

EXACT = ["junction-tree", "elimination"]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), method=st.sampled_from(EXACT))
def test_parent_marginals_equal_brute_force_enumeration(seed, method):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=int(rng.integers(1, 7)), max_parents=3, max_states=3)
    marginals, used = parent_marginals(network, method)
    assert used == method
    for v in network.variables:
        parents = network.parents[v]
        if not parents:
            assert float(marginals[v]) == 1.0
            continue
        np.testing.assert_allclose(marginals[v], brute_force_marginal(network, parents), atol=1e-12)


@pytest.mark.parametrize("name", ["asia", "cancer", "survey", "earthquake"])
def test_marginal_of_any_variable_set_on_small_bif_networks(name):
    network = read_bif(bif_path(name))
    variables = network.variables
    for pair in itertools.islice(itertools.combinations(variables, 2), 8):
        np.testing.assert_allclose(marginal(network, pair), brute_force_marginal(network, pair), atol=1e-12)


def test_sampling_engine_is_close_and_seeded():
    network = read_bif(bif_path("asia"))
    exact, _ = parent_marginals(network, "exact")
    sampled, used = parent_marginals(network, "sampling", n_samples=200_000, random_state=1)
    again, _ = parent_marginals(network, "sampling", n_samples=200_000, random_state=1)
    assert used == "sampling"
    for v in network.variables:
        if network.parents[v]:
            np.testing.assert_allclose(sampled[v], exact[v], atol=5e-3)
            np.testing.assert_array_equal(sampled[v], again[v])
            assert np.all(sampled[v] > 0)  # pseudocount keeps every configuration possible


def test_auto_falls_back_to_sampling_when_tables_are_too_large():
    network = read_bif(bif_path("alarm"))
    _, used = parent_marginals(network, "auto", max_table_size=10, n_samples=2000)
    assert used == "sampling"
    with pytest.raises(MemoryError, match="max_table_size"):
        parent_marginals(network, "junction-tree", max_table_size=10)


def _pyagrum_network(network):
    gum = pytest.importorskip("pyagrum")
    from bnfisher.bn.formats.interop import to_pyagrum

    bn = to_pyagrum(network)
    for v in network.variables:  # the translation itself, checked against our CPTs
        cpt = bn.cpt(v)
        axes = [((v,) + network.parents[v]).index(name) for name in reversed(cpt.names)]
        np.testing.assert_allclose(cpt.toarray(), np.transpose(np.moveaxis(network.cpts[v], -1, 0), axes))
    return gum, bn


@pytest.mark.parametrize("name", ["alarm", "hailfinder", "win95pts"])
def test_parent_marginals_equal_pyagrum_lazy_propagation(name):
    network = read_bif(bif_path(name))
    gum, bn = _pyagrum_network(network)
    engine = gum.LazyPropagation(bn)
    parent_sets = {frozenset(network.parents[v]) for v in network.variables if len(network.parents[v]) > 1}
    for parent_set in parent_sets:
        engine.addJointTarget(set(parent_set))
    for v in network.variables:
        engine.addTarget(v)
    engine.makeInference()
    for method in EXACT:
        marginals, _ = parent_marginals(network, method)
        for v in network.variables:
            parents = network.parents[v]
            if not parents:
                continue
            if len(parents) == 1:
                tensor = engine.posterior(parents[0])
            else:
                tensor = engine.jointPosterior(set(parents))
            theirs = np.transpose(tensor.toarray(), [list(reversed(tensor.names)).index(p) for p in parents])
            np.testing.assert_allclose(marginals[v], theirs, atol=1e-10, err_msg=f"{name}: parents of {v}")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["andes", "pathfinder", "water", "munin"])
def test_exact_engines_agree_on_large_networks(name):
    network = read_bif(bif_path(name))
    first, _ = parent_marginals(network, "elimination")
    if name == "munin":
        second, _ = parent_marginals(network, "junction-tree")
    else:
        second, _ = parent_marginals(network, "junction-tree", max_table_size=2**26)
    for v in network.variables:
        np.testing.assert_allclose(first[v], second[v], atol=1e-10)
        if network.parents[v]:
            assert float(np.sum(first[v])) == pytest.approx(1.0)


def test_marginal_rejects_unknown_variables():
    network = read_bif(bif_path("asia"))
    with pytest.raises(ValueError, match="Unknown variable"):
        marginal(network, ["nope"])
    with pytest.raises(ValueError, match="`inference` must be one of"):
        parent_marginals(network, "magic")


def test_auto_uses_the_junction_tree_when_elimination_is_too_large_but_the_tree_fits(monkeypatch):
    """On mildew with max_table_size=4e6, auto used to sample (kernel diagonal off by up to 84%)."""
    from bnfisher.bn.inference import exact as inference

    network = read_bif(bif_path("alarm"))

    def too_large(*args, **kwargs):
        raise inference._TableTooLarge("forced")  # noqa: SLF001 - the engine's own signal

    monkeypatch.setattr(inference, "_elimination_marginals", too_large)
    monkeypatch.setattr(inference, "_JUNCTION_TREE_COST_LIMIT", 0)  # the tree fits but is not "cheap"
    marginals, used = parent_marginals(network, "auto")
    assert used == "junction-tree"
    monkeypatch.undo()
    exact, _ = parent_marginals(network, "elimination")
    for v in network.variables:
        np.testing.assert_allclose(marginals[v], exact[v], atol=1e-12)


@pytest.mark.parametrize("path", ["default", "enumerated", "junction tree"])
@pytest.mark.parametrize("seed", range(4))
def test_family_cell_weights_equal_brute_force_enumeration_on_every_path(seed, path, monkeypatch):
    """Each component of a row's missing values is enumerated, or (large or rare ones) left to the junction tree:
    the weights and log P(observed) of both paths against enumeration of the joint over all the row's missing
    values, on random networks with rows missing one to four values."""
    from bnfisher.bn.inference import components
    from bnfisher.bn.inference.evidence import family_cell_weights
    from bnfisher.data.counts import configuration_index

    if path == "enumerated":
        monkeypatch.setattr(components, "MIN_ROWS", 1)
    elif path == "junction tree":
        monkeypatch.setattr(components, "MAX_COMPLETIONS", 0)
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=6, max_parents=2)
    codes = network.sample(60, random_state=seed, as_frame=False).astype(np.intp)
    for r in range(len(codes)):
        codes[r, rng.choice(codes.shape[1], size=1 + r % 4, replace=False)] = -1
    cards = network.cardinalities
    families = [tuple(p) + (i,) for i, p in enumerate(network.parent_indices())]
    found = components.missing_components(network, codes, families)
    if path == "enumerated":
        assert found.fallback.size == 0 and max(len(g.variables) for g in found.groups) >= 3
    if path == "junction tree":
        assert not found.groups and found.fallback.size == len(codes)
    out, log_likelihood = family_cell_weights(network, codes, families, return_log_likelihood=True)
    for r in range(len(codes)):
        hidden = np.flatnonzero(codes[r] < 0)
        completions = []
        for states in itertools.product(*[range(cards[h]) for h in hidden]):
            row = codes[r].copy()
            row[hidden] = states
            joint = np.prod([np.asarray(network.cpts[v]).reshape(-1)[configuration_index(row[None], f, cards)[0]]
                             for v, f in zip(network.variables, families)])
            completions.append((row, joint))
        total = sum(j for _, j in completions)
        assert log_likelihood[r] == pytest.approx(np.log(total), rel=1e-10)
        for (rows, cells, weights), family in zip(out, families):
            expected: dict = {}
            for row, joint in completions:
                cell = int(configuration_index(row[None], family, cards)[0])
                expected[cell] = expected.get(cell, 0.0) + joint / total
            got: dict = {}
            for cell, weight in zip(cells[rows == r], weights[rows == r]):
                got[int(cell)] = got.get(int(cell), 0.0) + weight
            assert got.keys() <= expected.keys()
            for cell, weight in expected.items():
                assert got.get(cell, 0.0) == pytest.approx(weight, abs=1e-12)


def test_families_that_span_components_get_the_product_of_their_posteriors():
    """A requested variable set that is no family of the network joins the components it touches: its joint
    posterior against enumeration (two missing values in different parts of the network)."""
    from bnfisher.bn.inference.evidence import family_cell_weights
    from bnfisher.data.counts import configuration_index

    rng = np.random.default_rng(3)
    network = random_network(rng, n_vars=6, max_parents=1)
    codes = network.sample(30, random_state=3, as_frame=False).astype(np.intp)
    codes[:, 0] = -1
    codes[:, 5] = -1
    cards = network.cardinalities
    families = [tuple(p) + (i,) for i, p in enumerate(network.parent_indices())]
    (rows, cells, weights), = family_cell_weights(network, codes, [(0, 5)])
    for r in range(len(codes)):
        joint = np.zeros((cards[0], cards[5]))
        for a, b in itertools.product(range(cards[0]), range(cards[5])):
            row = codes[r].copy()
            row[[0, 5]] = a, b
            joint[a, b] = np.prod([np.asarray(network.cpts[v]).reshape(-1)[configuration_index(row[None], f, cards)[0]]
                                   for v, f in zip(network.variables, families)])
        got = np.bincount(cells[rows == r], weights=weights[rows == r], minlength=joint.size)
        np.testing.assert_allclose(got, (joint / joint.sum()).ravel(), atol=1e-12)
