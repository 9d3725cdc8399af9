import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnfisher import BayesianNetwork, FisherKernel

from _helpers import (
    _free_parameters,
    all_configurations,
    fisher_kernel_from_definition,
    hessian_information,
    joint_probabilities,
    random_network,
    theorem1_kernel,
)


@pytest.mark.parametrize("seed", range(12))
def test_fisher_kernel_equals_definition_on_random_networks(seed):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=int(rng.integers(2, 5)), max_parents=2, max_states=3)
    configurations, expected = fisher_kernel_from_definition(network)
    kernel = FisherKernel(network)
    np.testing.assert_allclose(kernel.gram(configurations), expected, rtol=1e-7, atol=1e-7)


def test_fisher_information_outer_product_equals_negative_hessian():
    # The reference above uses I = E[s s^T]; check it equals the paper's -E[Hessian].
    network = random_network(np.random.default_rng(3), n_vars=3, max_parents=2, max_states=3)
    parameters = _free_parameters(network)
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    configurations, _ = fisher_kernel_from_definition(network, information="identity")
    from _helpers import _log_likelihood_complex

    theta = np.array([network.cpts[v][p + (k,)] for v, p, k in parameters])
    scores = np.array(
        [
            [
                _log_likelihood_complex(network, parameters, theta + 1j * 1e-30 * np.eye(len(theta))[q], x).imag
                / 1e-30
                for q in range(len(theta))
            ]
            for x in configurations
        ]
    )
    outer = (scores * probabilities[:, None]).T @ scores
    np.testing.assert_allclose(hessian_information(network), outer, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_identity_information_kernel_equals_score_inner_product(seed):
    network = random_network(np.random.default_rng(100 + seed), n_vars=3, max_parents=2, max_states=3)
    configurations, expected = fisher_kernel_from_definition(network, information="identity")
    kernel = FisherKernel(network, information="identity")
    np.testing.assert_allclose(kernel.gram(configurations), expected, rtol=1e-9, atol=1e-7)


def test_lemma1_univariate_kernel():
    theta = np.array([0.2, 0.5, 0.3])
    network = BayesianNetwork({}, {"D": theta}, {"D": ["a", "b", "c"]})
    codes = np.arange(3)[:, None]
    expected = np.where(np.eye(3, dtype=bool), (1 - theta) / theta, -1.0)
    np.testing.assert_allclose(FisherKernel(network).gram(codes), expected)


def test_section_5_1_worked_numbers():
    states = {"A": [0, 1], "B": [0, 1]}
    empty = BayesianNetwork({}, {"A": [0.7, 0.3], "B": [0.4, 0.6]}, states)
    arc = BayesianNetwork({"B": ["A"]}, {"A": [0.7, 0.3], "B": [[0.4, 0.6], [0.4, 0.6]]}, states)
    x = pd.DataFrame({"A": [0], "B": [0]})
    assert FisherKernel(empty).gram(x)[0, 0] == pytest.approx(1 + 13 / 14)
    assert FisherKernel(arc).gram(x)[0, 0] == pytest.approx(2 + 4 / 7)


def _reverse_covered_arc(network: BayesianNetwork, parent: str, child: str) -> BayesianNetwork:
    """Reverse the covered arc parent -> child, transforming CPTs by Bayes' rule."""
    ps, cs = network.parents[parent], network.parents[child]
    common = tuple(p for p in cs if p != parent)
    assert set(common) == set(ps), "arc is not covered"
    states = network.states
    # Joint P(parent, child | common) with axes (common..., parent, child).
    parent_cpt = np.moveaxis(network.cpts[parent], [ps.index(c) for c in common], range(len(common)))
    order = [cs.index(c) for c in common] + [cs.index(parent)]
    child_cpt = np.moveaxis(network.cpts[child], order, range(len(order)))
    joint = parent_cpt[..., :, None] * child_cpt
    child_marginal = joint.sum(axis=-2)  # P(child | common)
    parent_given_child = np.swapaxes(joint / child_marginal[..., None, :], -1, -2)  # (common, child, parent)
    parents = dict(network.parents)
    cpts = dict(network.cpts)
    parents[child] = common
    cpts[child] = child_marginal
    parents[parent] = common + (child,)
    cpts[parent] = parent_given_child
    return BayesianNetwork(parents, cpts, dict(states))


@pytest.mark.parametrize("seed", range(6))
def test_theorem4_equal_kernels_after_covered_arc_reversal(seed):
    rng = np.random.default_rng(200 + seed)
    states = {v: [f"{v}{k}" for k in range(int(rng.integers(2, 4)))] for v in "ZABW"}
    r = {v: len(s) for v, s in states.items()}
    # Z -> A, Z -> B, A -> B is covered (B's parents = A's parents + A); W <- B adds a descendant.
    parents = {"Z": [], "A": ["Z"], "B": ["A", "Z"], "W": ["B"]}
    cpts = {
        v: rng.dirichlet(np.ones(r[v]), size=tuple(r[p] for p in parents[v])).reshape(
            tuple(r[p] for p in parents[v]) + (r[v],)
        )
        for v in parents
    }
    network = BayesianNetwork(parents, cpts, states)
    reversed_network = _reverse_covered_arc(network, "A", "B")
    assert ("B", "A") in reversed_network.edges
    configurations = all_configurations(network)
    frame = network.decode(configurations)
    np.testing.assert_allclose(
        joint_probabilities(network, configurations),
        np.exp(reversed_network.log_likelihood(frame)),
        rtol=1e-10,
    )
    np.testing.assert_allclose(FisherKernel(network).gram(frame), FisherKernel(reversed_network).gram(frame),
                               rtol=1e-9, atol=1e-9)


def test_kernel_differs_for_non_equivalent_structures():
    rng = np.random.default_rng(5)
    network = random_network(rng, n_vars=3, max_parents=2)
    frame = network.decode(all_configurations(network))
    reduced = BayesianNetwork({}, {v: np.full(len(s), 1 / len(s)) for v, s in network.states.items()},
                              dict(network.states))
    assert not np.allclose(FisherKernel(network).gram(frame), FisherKernel(reduced).gram(frame))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 40))
def test_gram_matches_theorem1_pairwise_and_is_psd(seed, n_rows):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=int(rng.integers(1, 6)), max_parents=3, max_states=4)
    kernel = FisherKernel(network)
    codes = network.sample(n_rows, random_state=rng, as_frame=False)
    gram = kernel.gram(codes)
    expected = np.array([[theorem1_kernel(network, kernel.parent_marginals_, x, y) for y in codes] for x in codes])
    np.testing.assert_allclose(gram, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gram, gram.T, rtol=1e-12, atol=1e-12)
    assert np.linalg.eigvalsh(gram).min() >= -1e-8 * max(1.0, np.abs(gram).max())
    embedding = kernel.embed(codes)
    np.testing.assert_allclose((embedding @ embedding.T).toarray(), gram, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(kernel.diag(codes), np.diag(gram), rtol=1e-9, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_x=st.integers(1, 30), n_y=st.integers(1, 30))
def test_set_kernel_and_mmd_equal_pairwise_definitions(seed, n_x, n_y):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=int(rng.integers(1, 6)), max_parents=2, max_states=4)
    kernel = FisherKernel(network)
    X = network.sample(n_x, random_state=rng, as_frame=False)
    Y = network.sample(n_y, random_state=rng, as_frame=False)
    assert kernel.set_kernel(X, Y) == pytest.approx(kernel.gram(X, Y).mean(), rel=1e-9, abs=1e-9)
    expected = kernel.gram(X).mean() + kernel.gram(Y).mean() - 2 * kernel.gram(X, Y).mean()  # eq. 10
    mmd = kernel.mmd(X, Y)
    assert mmd == pytest.approx(expected, rel=1e-8, abs=1e-8)
    assert mmd >= 0


def test_set_kernel_is_zero_for_an_empty_set():
    network = random_network(np.random.default_rng(0), n_vars=3)
    kernel = FisherKernel(network)
    X = network.sample(5, random_state=0, as_frame=False)
    assert kernel.set_kernel(X, X[:0]) == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        kernel.mmd(X, X[:0])


def test_gram_sparse_and_dense_paths_agree():
    network = random_network(np.random.default_rng(1), n_vars=5, max_parents=2)
    kernel = FisherKernel(network)
    X = network.sample(50, random_state=1, as_frame=False)
    Y = network.sample(30, random_state=2, as_frame=False)
    np.testing.assert_allclose(kernel.gram(X, Y, dense_output=False).toarray(), kernel.gram(X, Y), atol=1e-10)


def test_normalized_kernel_is_cosine():
    network = random_network(np.random.default_rng(2), n_vars=4)
    X = network.sample(20, random_state=3, as_frame=False)
    raw = FisherKernel(network).gram(X)
    d = np.sqrt(np.diag(raw))
    np.testing.assert_allclose(FisherKernel(network, normalize=True).gram(X), raw / np.outer(d, d), atol=1e-10)
    cosine = FisherKernel(network, normalize=True)
    assert cosine.set_kernel(X, X) == pytest.approx(cosine.gram(X).mean())


def test_single_state_variable_contributes_nothing():
    states = {"A": ["only"], "B": ["x", "y"], "C": ["u", "v"]}
    network = BayesianNetwork(
        {"B": ["A"], "C": ["B"]},
        {"A": [1.0], "B": [[0.3, 0.7]], "C": [[0.9, 0.1], [0.2, 0.8]]},
        states,
    )
    assert network.n_parameters == 1 + 2
    configurations = all_configurations(network)
    _, expected = fisher_kernel_from_definition(network)
    np.testing.assert_allclose(FisherKernel(network).gram(configurations), expected, rtol=1e-8, atol=1e-8)


def test_zero_probability_row_is_rejected_with_the_variable_name():
    network = BayesianNetwork({"B": ["A"]}, {"A": [0.5, 0.5], "B": [[1.0, 0.0], [0.5, 0.5]]},
                              {"A": ["a0", "a1"], "B": ["b0", "b1"]})
    kernel = FisherKernel(network)
    with pytest.raises(ValueError, match="'B' = 'b1'.*probability 0"):
        kernel.gram(pd.DataFrame({"A": ["a0"], "B": ["b1"]}))
    with pytest.raises(ValueError, match="probability 0"):
        kernel.mmd(pd.DataFrame({"A": ["a0"], "B": ["b1"]}), pd.DataFrame({"A": ["a1"], "B": ["b1"]}))


def test_feature_names_match_embedding_columns():
    network = random_network(np.random.default_rng(4), n_vars=3)
    kernel = FisherKernel(network)
    names = kernel.feature_names()
    assert len(names) == kernel.n_features_
    codes = network.sample(1, random_state=0, as_frame=False)
    columns = kernel.embed(codes).indices
    labels = network.decode(codes).iloc[0]
    for column in columns:
        variable, config, _ = names[column]
        assert all(labels[p] == value for p, value in config.items())


def test_kernel_rejects_bad_arguments():
    network = random_network(np.random.default_rng(0), n_vars=2)
    with pytest.raises(ValueError, match="`information` must be one of"):
        FisherKernel(network, information="empirical")
    with pytest.raises(ValueError, match="`inference` must be one of"):
        FisherKernel(network, inference="magic")
    with pytest.raises(TypeError, match="BayesianNetwork"):
        FisherKernel({"A": []})


def test_allocations_beyond_memory_are_refused_with_an_alternative(monkeypatch):
    from bnfisher._utils import memory as _memory
    from bnfisher.exceptions import ResourceError

    network = random_network(np.random.default_rng(0), n_vars=4)
    kernel = FisherKernel(network)
    X = network.sample(300, random_state=0)
    monkeypatch.setattr(_memory, "available_memory", lambda: 100_000)
    with pytest.raises(ResourceError, match="Gram matrix would need.*use `embed`"):
        kernel.gram(X)
    with pytest.raises(ResourceError, match="feature map of 300 rows.*`mmd`"):
        kernel.embed(X)
    assert kernel.mmd(X, X.iloc[:10]) >= 0  # counts only: still fine
