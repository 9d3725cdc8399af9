import numpy as np
import pandas as pd
import pytest

from bnfisher import BayesianNetwork, Schema
from bnfisher.exceptions import OptionError

from _helpers import all_configurations, joint_probabilities, random_network

STATES = {"A": ["a0", "a1"], "B": ["b0", "b1", "b2"]}


def test_network_exposes_readonly_attributes_and_topological_order():
    network = BayesianNetwork(
        {"A": ["B"], "B": []},
        {"A": [[0.1, 0.9], [0.5, 0.5], [0.3, 0.7]], "B": [0.2, 0.3, 0.5]},
        STATES,
    )
    assert network.variables == ("B", "A")
    assert network.parents["A"] == ("B",)
    assert network.n_parameters == 2 + 3
    with pytest.raises(TypeError):
        network.parents["A"] = ()
    with pytest.raises(ValueError):
        network.cpts["B"][0] = 1.0


@pytest.mark.parametrize(
    "parents, cpts, match",
    [
        ({"A": ["B"], "B": ["A"]}, {"A": [[0.5, 0.5]] * 3, "B": [[0.2, 0.3, 0.5]] * 2}, "cycle"),
        ({}, {"A": [0.5, 0.5], "B": [0.5, 0.5]}, r"CPT of 'B' has shape \(2,\); expected \(3,\)"),
        ({}, {"A": [0.5, 0.6], "B": [0.2, 0.3, 0.5]}, "sums to 1.1"),
        ({}, {"A": [1.5, -0.5], "B": [0.2, 0.3, 0.5]}, "negative"),
        ({"A": ["C"]}, {"A": [0.5, 0.5], "B": [0.2, 0.3, 0.5]}, "parent 'C'"),
        ({"A": ["A"]}, {"A": [0.5, 0.5], "B": [0.2, 0.3, 0.5]}, "its own parent"),
        ({}, {"A": [0.5, 0.5]}, "No CPT given for variable 'B'"),
    ],
    ids=["cycle", "shape", "row-sum", "negative", "unknown-parent", "self-loop", "missing-cpt"],
)
def test_network_validation_raises(parents, cpts, match):
    with pytest.raises(ValueError, match=match):
        BayesianNetwork(parents, cpts, STATES)


def test_fit_uses_pseudocount_formula():
    data = pd.DataFrame({"A": ["a0", "a0", "a1", "a0"], "B": ["b0", "b2", "b2", "b2"]})
    network = BayesianNetwork.from_data(data, {"A": [], "B": ["A"]}, pseudocount=1.0,
                                        schema=Schema({"A": ["a0", "a1"], "B": ["b0", "b1", "b2"]}))
    # theta_ijk = (N_ijk + 1) / (N_ij + r_i)
    np.testing.assert_allclose(network.cpts["A"], [(3 + 1) / (4 + 2), (1 + 1) / (4 + 2)])
    np.testing.assert_allclose(network.cpts["B"][0], [(1 + 1) / 6, 1 / 6, (2 + 1) / 6])
    np.testing.assert_allclose(network.cpts["B"][1], [1 / 4, 1 / 4, 2 / 4])


def test_fit_keeps_unused_categories():
    data = pd.DataFrame({"A": pd.Categorical(["x", "x"], categories=["x", "y", "z"])})
    network = BayesianNetwork.from_data(data, {"A": []}, pseudocount=0.0)
    assert network.states["A"] == ("x", "y", "z")
    np.testing.assert_allclose(network.cpts["A"], [1, 0, 0])


def test_log_likelihood_equals_chain_rule():
    network = random_network(np.random.default_rng(7), n_vars=4, max_parents=2)
    configurations = all_configurations(network)
    np.testing.assert_allclose(np.exp(network.log_likelihood(configurations)),
                               joint_probabilities(network, configurations), rtol=1e-12)
    np.testing.assert_allclose(network.log_likelihood(network.decode(configurations)),
                               network.log_likelihood(configurations))


def test_sample_is_reproducible_and_matches_the_distribution():
    network = random_network(np.random.default_rng(8), n_vars=3, max_parents=2, max_states=3)
    first = network.sample(200_000, random_state=5, as_frame=False)
    np.testing.assert_array_equal(first, network.sample(200_000, random_state=5, as_frame=False))
    configurations = all_configurations(network)
    expected = joint_probabilities(network, configurations)
    radix = np.cumprod(np.r_[1, network.cardinalities[::-1][:-1]])[::-1]
    observed = np.bincount(first @ radix, minlength=len(expected)) / len(first)
    np.testing.assert_allclose(observed, expected, atol=4e-3)
    frame = network.sample(10, random_state=5)
    assert list(frame.columns) == list(network.variables)
    assert all(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in frame.columns)


def test_sample_respects_zero_probabilities():
    network = BayesianNetwork({"B": ["A"]}, {"A": [0.0, 1.0], "B": [[0.5, 0.5], [0.0, 1.0]]},
                              {"A": [0, 1], "B": [0, 1]})
    codes = network.sample(10_000, random_state=0, as_frame=False)
    assert np.all(codes == 1)


def test_with_cpts_keeps_the_structure_and_checks_the_tables():
    net = BayesianNetwork({"b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
                          {"a": ["x", "y"], "b": ["u", "v"]})
    net.learning_["missing"] = "em"
    new = net.with_cpts({"a": [0.25, 0.75], "b": net.cpts["b"]})
    assert new.parents == net.parents and new.schema is net.schema and new.learning_ == {}
    np.testing.assert_array_equal(new.cpts["a"], [0.25, 0.75])
    np.testing.assert_array_equal(net.cpts["a"], [0.5, 0.5])  # the original is unchanged
    rebuilt = BayesianNetwork(dict(net.parents), {"a": [0.25, 0.75], "b": net.cpts["b"]}, dict(net.states))
    assert [new.cpts[v].tolist() for v in new.variables] == [rebuilt.cpts[v].tolist() for v in rebuilt.variables]
    trusted = net.with_cpts({"a": np.array([0.25, 0.75]), "b": net.cpts["b"]}, validate=False)
    assert not trusted.cpts["a"].flags.writeable and trusted.cpts["a"].tolist() == [0.25, 0.75]
    with pytest.raises(OptionError, match="No CPT given for variable 'b'"):
        net.with_cpts({"a": [0.5, 0.5]})
    with pytest.raises(OptionError, match="has shape"):
        net.with_cpts({"a": [0.5, 0.5], "b": [0.5, 0.5]})
    with pytest.raises(OptionError, match="sums to"):
        net.with_cpts({"a": [0.5, 0.6], "b": net.cpts["b"]})
