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
from bnfisher.bn.structure.hill_climb import _Search

from _helpers import bif_path, random_network, wide_frame


def _reach_oracle(parents) -> np.ndarray:
    """``[a, b]``: a path a -> ... -> b, by networkx's transitive closure (an independent oracle)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(parents)))
    graph.add_edges_from((p, j) for j, ps in enumerate(parents) for p in ps)
    reach = np.zeros((len(parents), len(parents)), dtype=bool)
    for a, b in nx.transitive_closure_dag(graph).edges:
        reach[a, b] = True
    return reach


def _is_acyclic(parents) -> bool:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_edges_from((p, j) for j, ps in enumerate(parents) for p in ps)
    return nx.is_directed_acyclic_graph(graph)


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
        legal = np.argwhere(np.isfinite(search.moves()))
        if len(legal) == 0:
            break
        kind, i, j = (int(x) for x in legal[rng.integers(len(legal))])
        if kind == 2:
            turned = [set(ps) for ps in search.parents]
            turned[j].discard(i)
            turned[i].add(j)
            closes = not _is_acyclic(turned)
            assert search.creates_cycle(i, j) == closes
            if closes:
                continue
        search.apply(kind, i, j)
        assert _is_acyclic(search.parents)
        np.testing.assert_array_equal(search.reach, _reach_oracle(search.parents))
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
    network = read_bif(bif_path("child"))
    data = encode(network.sample(1000, random_state=3))
    plain = score(learn(data, "hc"), data)
    assert score(learn(data, "hc", tabu=10), data) >= plain - 1e-6
    restarted = learn(data, "hc", restarts=2, perturb=3, random_state=0)
    assert score(restarted, data) >= plain - 1e-6
    assert learn(data, "hc", restarts=2, perturb=3, random_state=0).edges == restarted.edges




def test_hill_climbing_warns_with_the_parameter_to_raise():
    from bnfisher import ConvergenceWarning

    network = random_network(np.random.default_rng(2), n_vars=6, max_parents=2)
    frame = network.sample(2000, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        learn(frame, "hc", max_iter=1)


def test_max_time_bounds_the_climb_and_names_itself():
    import warnings

    import pandas as pd

    from bnfisher import ConvergenceWarning, learn

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.integers(0, 2, (300, 40)), columns=[f"c{i}" for i in range(40)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one_pass = learn(frame, "hc", max_iter=1)
        bounded = learn(frame, "hc", max_time=0)
    # The deadline has passed before the first move: no arc, where one iteration adds many. (A wall-clock comparison
    # with the unbounded climb was flaky: the candidate screening both runs pay is most of the bounded run's time.)
    assert not bounded.edges and one_pass.edges
    assert any(issubclass(w.category, ConvergenceWarning) and "max_time=0" in str(w.message) for w in caught)


def _random_climb_state(rng, n):
    """A random DAG (arcs, ancestors), gains with deliberate ties, candidate lists holding every arc, and lists."""
    order = rng.permutation(n)
    arcs = np.zeros((n, n), dtype=bool)
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < 0.25:
                arcs[order[a], order[b]] = True
    parents = [set(np.flatnonzero(arcs[:, j]).tolist()) for j in range(n)]
    candidates = [sorted(set(rng.choice(n, size=int(rng.integers(0, n)), replace=False).tolist()) | parents[j]
                         - {j}) for j in range(n)]
    add_gain = np.round(rng.normal(size=(n, n)), int(rng.integers(1, 3)))  # few values: many ties
    add_gain[rng.random((n, n)) < 0.1] += 4e-7  # equal up to the 1e-6 rounding: still ties
    delete_gain = np.round(rng.normal(size=(n, n)), 1)
    white = arcs & (rng.random((n, n)) < 0.2)
    black = ~arcs & (rng.random((n, n)) < 0.1)
    return parents, arcs, candidates, add_gain, delete_gain, white, black


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_best_move_compiled_and_in_numpy_is_the_enumerated_one(seed):
    """The move scan (compiled, and its NumPy version for small jobs) against enumerating every move from the
    definitions: legality by networkx paths (a reversal must not close a cycle), gains rounded to 1e-6 with ties in
    (kind, i, j) order, exclusions; on the climb's Fortran-ordered tables and on C-ordered ones."""
    import networkx as nx

    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.structure.hill_climb import _best_move, _numpy_best_move

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    parents, arcs, candidates, add_gain, delete_gain, white, black = _random_climb_state(rng, n)
    counts = arcs.sum(axis=0)
    max_parents = int(rng.integers(1, n + 1))
    minimum = float(rng.choice([1e-9, -np.inf, -0.5]))
    skip_neutral = bool(rng.random() < 0.3)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(*np.nonzero(arcs)))
    moves = []
    for i, j in itertools.permutations(range(n), 2):
        if i in candidates[j] and not arcs[i, j] and not nx.has_path(graph, j, i) and not black[i, j] \
                and counts[j] < max_parents:
            moves.append((0, i, j, add_gain[i, j]))
        if arcs[i, j] and not white[i, j]:
            moves.append((1, i, j, delete_gain[i, j]))
            without = graph.copy()
            without.remove_edge(i, j)
            if not black[j, i] and counts[i] < max_parents and j in candidates[i] and not nx.has_path(without, i, j):
                moves.append((2, i, j, delete_gain[i, j] + add_gain[j, i]))
    moves = [m for m in moves if m[3] > minimum and not (skip_neutral and abs(m[3]) <= 1e-6)]
    excluded = [(k * n + i) * n + j for k, i, j, _ in moves if rng.random() < 0.2]
    moves = [m for m in moves if (m[0] * n + m[1]) * n + m[2] not in excluded]
    expected = min(moves, key=lambda m: (-np.round(m[3], 6), m[0], m[1], m[2]))[:3] if moves else (-1, -1, -1)

    search = _Search(None, n, max_parents, white, black, candidates)
    full_add = np.where(_allowed_matrix(candidates, n), add_gain, -np.inf)  # gains exist only for candidates
    for layout in (np.ascontiguousarray, np.asfortranarray):
        arguments = (search.candidates, search.lengths, layout(full_add), layout(delete_gain), layout(arcs),
                     _reach_oracle(parents), layout(white), layout(black), counts, max_parents, minimum,
                     skip_neutral, np.asarray(excluded, dtype=np.int64))
        assert _numpy_best_move(*arguments)[:3] == expected
        _materialise()
        assert tuple(int(x) for x in _best_move(*arguments)[:3]) == expected


def _allowed_matrix(candidates, n):
    allowed = np.zeros((n, n), dtype=bool)
    for j, pool in enumerate(candidates):
        allowed[list(pool), j] = True
    return allowed


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_ancestor_matrix_compiled_and_in_numpy_is_the_transitive_closure(seed):
    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.structure.hill_climb import _numpy_reach, _reach

    rng = np.random.default_rng(seed)
    parents, arcs, *_ = _random_climb_state(rng, int(rng.integers(1, 12)))
    expected = _reach_oracle(parents)
    np.testing.assert_array_equal(_numpy_reach(arcs), expected)
    _materialise()
    np.testing.assert_array_equal(_reach(arcs), expected)


def test_screened_candidates_are_the_best_single_parents_and_bound_the_parents():
    """max_candidates=k: each variable's parents come from its k best single parents by score gain (checked against
    the scorer's own single-family scores), whitelisted arcs kept and blacklisted ones never candidates."""
    from bnfisher.bn.structure.hill_climb import screen_candidates

    frame = wide_frame(30, 400)
    encoded = encode(frame)
    scorer = LocalScorer(encoded.codes, encoded.cardinalities)
    screened = screen_candidates(scorer, 30, 4, blacklist=[(0, 5)])
    for v in range(30):
        gains = {u: scorer(v, (u,)) - scorer(v, ()) for u in range(30) if u != v and (u, v) != (0, 5)}
        ranked = sorted(gains, key=lambda u: (-gains[u], u))[:4]
        assert screened[v] == sorted(ranked)
    learned = learn(encoded, "hc", max_candidates=4, whitelist=[("V29", "V1")])
    for v, ps in learned.parents.items():
        index = int(v[1:])
        allowed = {f"V{u}" for u in screened[index]}
        for p in ps:  # a reversal needs the new parent among the candidates too
            assert p in allowed or (p, v) == ("V29", "V1")
    assert ("V29", "V1") in learned.edges


def test_max_candidates_all_or_more_than_the_variables_is_the_full_search_and_auto_screens_wide_tables(monkeypatch):
    import importlib

    learn_module = importlib.import_module("bnfisher.bn.structure.learn")  # the module, not the function
    # A table wider than WIDE keeps CANDIDATES parents per variable (100 and 20 in the package: the rule, on a table
    # a small job learns).
    WIDE, CANDIDATES = 16, 6
    monkeypatch.setattr(learn_module, "WIDE", WIDE)
    monkeypatch.setattr(learn_module, "WIDE_CANDIDATES", CANDIDATES)
    narrow = wide_frame(12, 500, seed=1)
    full = learn(narrow, "hc")
    assert learn(narrow, "hc", max_candidates="all").edges == full.edges
    assert learn(narrow, "hc", max_candidates=11).edges == full.edges
    wide = wide_frame(WIDE + 1, 200, seed=2)
    screened = learn(wide, "hc")
    assert screened.edges == learn(wide, "hc", max_candidates=CANDIDATES).edges
    assert screened.learning_["max_candidates"] == CANDIDATES and full.learning_["max_candidates"] == "all"
    assert learn(wide.iloc[:, :WIDE], "hc").edges == learn(wide.iloc[:, :WIDE], "hc", max_candidates="all").edges


@pytest.mark.parametrize("value, match", [(0, "`max_candidates` must be >= 1"),
                                          ("some", "`max_candidates` must be an integer >= 1, 'auto' or 'all'"),
                                          (2.5, "`max_candidates` must be an integer")])
def test_max_candidates_bad_values_raise(value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        learn(wide_frame(5, 50), "hc", max_candidates=value)


def test_progress_states_the_estimated_time_before_the_climb(capsys):
    learn(wide_frame(20, 300), "hc", max_candidates=5, progress=True)
    err = capsys.readouterr().err
    assert "hc: 20 variables x 300 rows" in err and "its 5 best single parents" in err
    assert "should take roughly" in err and "max_time" in err
