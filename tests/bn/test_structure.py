
import numpy as np
import pandas as pd
import pytest

from bnfisher import as_provider, learn
from bnfisher.bn.structure.chow_liu import conditional_mutual_information_matrix, mutual_information_matrix


def _is_acyclic(parents) -> bool:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_edges_from((p, j) for j, ps in enumerate(parents) for p in ps)
    return nx.is_directed_acyclic_graph(graph)


def test_forest_keeps_only_positive_score_gains():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 2000)
    frame = pd.DataFrame({"a": a, "b": a ^ (rng.random(2000) < 0.1), "noise": rng.integers(0, 3, 2000)})
    forest = learn(frame, "forest", structure_score="bic")
    assert forest.edges == [("a", "b")]  # the noise column stays unconnected under BIC
    assert len(learn(frame, "chow-liu").edges) == 2  # mutual information is always >= 0
    k2 = learn(frame, "forest", structure_score="k2")  # asymmetric weights: maximum branching
    assert max(len(p) for p in k2.parents.values()) <= 1


def test_conditional_mutual_information_matches_definition():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, size=(400, 3))
    cmi = conditional_mutual_information_matrix(as_provider(codes), given=2)
    joint = np.zeros((3, 3, 3))
    np.add.at(joint, (codes[:, 0], codes[:, 1], codes[:, 2]), 1)
    p = joint / joint.sum()
    pz = p.sum(axis=(0, 1))
    pxz = p.sum(axis=1)
    pyz = p.sum(axis=0)
    expected = sum(p[x, y, z] * np.log(p[x, y, z] * pz[z] / (pxz[x, z] * pyz[y, z]))
                   for x in range(3) for y in range(3) for z in range(3) if p[x, y, z] > 0)
    assert cmi[0, 1] == pytest.approx(expected)
    mi = mutual_information_matrix(as_provider(codes))
    pxy = p.sum(axis=2)
    expected_mi = sum(pxy[x, y] * np.log(pxy[x, y] / (pxy[x].sum() * pxy[:, y].sum()))
                      for x in range(3) for y in range(3) if pxy[x, y] > 0)
    assert mi[0, 1] == pytest.approx(expected_mi)


@pytest.fixture(scope="module")
def nursery():
    from bnfisher.datasets import load

    return load("nursery")


def test_tan_and_kdb_have_the_right_shapes(nursery):
    tan = learn(nursery, "tan", class_variable="class")
    assert tan.parents["class"] == ()
    features = [v for v in tan.variables if v != "class"]
    for v in features:
        assert "class" in tan.parents[v]
        assert len(tan.parents[v]) <= 2
    assert sum(len(tan.parents[v]) == 1 for v in features) == 1  # the tree's root
    for k in (0, 1, 3):
        kdb = learn(nursery, "kdb", class_variable="class", k=k)
        for v in features:
            assert kdb.parents[v][0] == "class"
            assert len(kdb.parents[v]) - 1 <= k
    nb = learn(nursery, "naive-bayes", class_variable="class")
    assert all(nb.parents[v] == ("class",) for v in features)


@pytest.mark.parametrize("structure, options, match", [
    ("tan", {"class_variable": "nope"}, "`class_variable` 'nope' is not a column"),
    ("kdb", {"class_variable": "class", "k": -1}, "`k` must be >= 0"),
    ("magic", {}, "`structure` must be one of"),
])
def test_classifier_structures_bad_input(nursery, structure, options, match):
    with pytest.raises(ValueError, match=match):
        learn(nursery, structure, **options)


def test_classifier_structures_default_to_the_class_column(nursery):
    # LEARN_OPTIONS' default class_variable is "class": used when present, named in the error when absent.
    assert learn(nursery, "tan").edges == learn(nursery, "tan", class_variable="class").edges
    with pytest.raises(ValueError, match="needs the class column: `class_variable` 'class' is not a column"):
        learn(nursery.rename(columns={"class": "label"}), "naive-bayes")


def test_given_structures_only_fit_parameters():
    data = pd.DataFrame({"a": list("xxyy"), "b": list("uvuv"), "c": list("ppqq")})
    from_edges = learn(data, [("a", "b"), ("b", "c")])
    from_mapping = learn(data, {"b": ["a"], "c": ["b"]})
    assert from_edges.edges == from_mapping.edges == learn(data, from_edges).edges
    with pytest.raises(ValueError, match="cycle"):
        learn(data, [("a", "b"), ("b", "a")])
    with pytest.raises(TypeError, match="Unexpected option"):
        learn(data, "chow-liu", k=3)
