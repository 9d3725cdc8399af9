"""Hill climbing (structure/hill_climb.py): acyclicity, local optimality, options, tabu and restarts."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnfisher import encode, learn, read_bif, score
from bnfisher.bn.scores import LocalScorer
from bnfisher.bn.structure.hill_climb import _closure, _Search

from _helpers import bif_path, random_network


def _is_acyclic(parents) -> bool:
    return not np.any(np.diag(_closure([tuple(p) for p in parents])))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_hill_climbing_move_keeps_the_graph_acyclic(seed):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=int(rng.integers(3, 7)), max_parents=2)
    encoded = encode(network.sample(300, random_state=rng, as_frame=False))
    n = encoded.codes.shape[1]
    search = _Search(LocalScorer(encoded.codes, encoded.cardinalities), n, None,
                     np.zeros((n, n), bool), np.zeros((n, n), bool))
    search.reset([() for _ in range(n)])
    for _ in range(30):
        add, delete, reverse = search.moves()
        legal = np.argwhere(np.isfinite(np.stack([add, delete, reverse])))
        if len(legal) == 0:
            break
        kind, i, j = (int(x) for x in legal[rng.integers(len(legal))])
        if kind == 2:
            from bnfisher.bn.structure.hill_climb import _path_avoiding_arc

            if _path_avoiding_arc(search.parents, i, j):
                continue
        search.apply(kind, i, j)
        assert _is_acyclic(search.parents)
        np.testing.assert_array_equal(search.reach, _closure([tuple(p) for p in search.parents]))
        assert search.total == pytest.approx(sum(search.scorer(v, search.parents[v]) for v in range(n)))


def test_hill_climbing_result_is_a_local_optimum_and_deterministic():
    network = read_bif(bif_path("asia"))
    data = network.sample(3000, random_state=1)
    learned = learn(data, "hc")
    assert learned.edges == learn(data, "hc").edges
    base = score(learned, data)
    variables = learned.variables
    parents = {v: set(learned.parents[v]) for v in variables}
    for a, b in itertools.permutations(variables, 2):
        trial = {v: set(ps) for v, ps in parents.items()}
        if a in trial[b]:
            trial[b].discard(a)
        else:
            trial[b].add(a)
        try:
            assert score({v: sorted(ps) for v, ps in trial.items()}, data) <= base + 1e-6
        except ValueError:  # the move would create a cycle
            pass


def _pyagrum_bic(frame):
    pytest.importorskip("pyagrum")
    from _helpers import pyagrum_hill_climb

    return score(pyagrum_hill_climb(frame)[0], frame)


def _pgmpy_bic(frame):
    estimators = pytest.importorskip("pgmpy.estimators")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dag = estimators.HillClimbSearch(frame.astype(str)).estimate(scoring_method="bic-d", show_progress=False)
    return score({v: list(dag.predecessors(v)) for v in frame.columns}, frame)


@pytest.mark.slow
@pytest.mark.parametrize("name, options, tolerance", [
    ("asia", {}, 0.0005),
    ("alarm", {"start": "chow-liu"}, 0.005),
])
def test_hill_climbing_recovers_a_high_scoring_structure(name, options, tolerance):
    network = read_bif(bif_path(name))
    data = network.sample(20_000, random_state=0)
    learned = score(learn(data, "hc", **options), data)
    true = score(network, data)
    assert learned >= true - tolerance * abs(true)
    assert learned >= _pyagrum_bic(data) - 1e-6
    assert learned >= _pgmpy_bic(data) - 1e-6


def test_whitelist_blacklist_and_max_parents_are_respected():
    network = read_bif(bif_path("asia"))
    data = network.sample(3000, random_state=2)
    learned = learn(data, "hc", whitelist=[("asia", "dysp")], blacklist=[("smoke", "lung"), ("lung", "smoke")],
                    max_parents=1)
    assert ("asia", "dysp") in learned.edges
    assert ("smoke", "lung") not in learned.edges and ("lung", "smoke") not in learned.edges
    assert max(len(p) for p in learned.parents.values()) <= 1


@pytest.mark.parametrize("options, match", [
    ({"whitelist": [("a", "b")], "blacklist": [("a", "b")]}, "both `whitelist` and `blacklist`"),
    ({"whitelist": [("a", "b"), ("b", "a")]}, "not acyclic"),
    ({"whitelist": [("a", "zzz")]}, "'zzz', which is not a column"),
    ({"tabu": -1}, "`tabu` must be >= 0"),
    ({"structure_score": "mdl"}, "`structure_score` must be one of"),
    ({"search": "multi-start"}, "`search` must be 'order'"),
])
def test_hill_climbing_bad_options_raise(options, match):
    data = pd.DataFrame({"a": list("xyxy"), "b": list("uuvv"), "c": list("pqqp")})
    with pytest.raises(ValueError, match=match):
        learn(data, "hc", **options)


def test_tabu_and_restarts_never_end_below_plain_hill_climbing():
    network = read_bif(bif_path("insurance"))
    data = encode(network.sample(3000, random_state=3))
    plain = score(learn(data, "hc"), data)
    assert score(learn(data, "hc", tabu=10), data) >= plain - 1e-6
    restarted = learn(data, "hc", restarts=3, perturb=3, random_state=0)
    assert score(restarted, data) >= plain - 1e-6
    assert learn(data, "hc", restarts=3, perturb=3, random_state=0).edges == restarted.edges




def test_hill_climbing_warns_with_the_parameter_to_raise():
    from bnfisher import ConvergenceWarning

    network = random_network(np.random.default_rng(2), n_vars=6, max_parents=2)
    frame = network.sample(2000, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        learn(frame, "hc", max_iter=1)


def test_max_time_bounds_the_climb_and_names_itself():
    import time
    import warnings

    import pandas as pd

    from bnfisher import ConvergenceWarning, learn

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.integers(0, 2, (300, 150)), columns=[f"c{i}" for i in range(150)])
    started = time.perf_counter()
    unbounded = learn(frame, "hc")
    full = time.perf_counter() - started
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bounded = learn(frame, "hc", max_time=0)
    assert time.perf_counter() - started < full
    assert any(issubclass(w.category, ConvergenceWarning) and "max_time=0" in str(w.message) for w in caught)
    assert len(bounded.edges) < len(unbounded.edges)
