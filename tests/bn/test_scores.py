import math
import tempfile
import warnings
from collections import Counter
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnfisher import encode, read_bif, score
from bnfisher.bn.scores import LocalScorer, local_score

from _helpers import bif_path


def _brute_force(child, parents, score_name, ess=1.0):
    """Scores from the definitions, with Python loops over the rows and cells."""
    n = len(child)
    r = max(child) + 1 if n else 1
    configs = {}
    for row in range(n):
        configs.setdefault(tuple(p[row] for p in parents), []).append(child[row])
    q = math.prod(max(p) + 1 for p in parents) if parents else 1
    ll = 0.0
    for values in configs.values():
        for k in range(r):
            n_jk = values.count(k)
            if n_jk:
                ll += n_jk * math.log(n_jk / len(values))
    free = q * (r - 1)
    if score_name == "ll":
        return ll
    if score_name == "bic":
        return ll - 0.5 * math.log(n) * free
    if score_name == "aic":
        return ll - free
    alpha = 1.0 if score_name == "k2" else ess / (q * r)
    total = 0.0
    for values in configs.values():
        total += math.lgamma(r * alpha) - math.lgamma(r * alpha + len(values))
        for k in range(r):
            total += math.lgamma(alpha + values.count(k)) - math.lgamma(alpha)
    return total


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), score_name=st.sampled_from(["ll", "bic", "aic", "bdeu", "k2"]),
       n_parents=st.integers(0, 2), ess=st.floats(0.1, 20))
def test_local_scores_equal_brute_force(seed, score_name, n_parents, ess):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    cards = rng.integers(2, 4, size=n_parents + 1)
    columns = [np.r_[np.arange(c), rng.integers(0, c, size=n - c)] for c in cards]  # every state occurs
    codes = np.column_stack(columns)
    scorer = LocalScorer(codes, cards, score_name, ess=ess)
    expected = _brute_force(columns[-1].tolist(), [c.tolist() for c in columns[:-1]], score_name, ess)
    assert scorer(n_parents, tuple(range(n_parents))) == pytest.approx(expected, rel=1e-10, abs=1e-9)
    # The batched column scorer agrees with the one-family path.
    if n_parents:
        batched = LocalScorer(codes, cards, score_name, ess=ess).scores_adding(
            n_parents, tuple(range(n_parents - 1)), [n_parents - 1])
        assert batched[0] == pytest.approx(expected, rel=1e-10, abs=1e-9)


def test_sparse_counting_path_gives_the_same_score():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 9, size=(50, 6))  # 9^5 configurations >> 50 rows: sparse path
    cards = np.full(6, 9)
    for score_name in ["ll", "bic", "bdeu", "k2"]:
        scorer = LocalScorer(codes, cards, score_name)
        value = scorer(5, (0, 1, 2, 3, 4))
        expected = _brute_force(codes[:, 5].tolist(), [codes[:, i].tolist() for i in range(5)], score_name)
        # _brute_force infers q from the observed maxima; all 9 states occur in 50 draws here
        assert value == pytest.approx(expected, rel=1e-10)


def test_total_score_is_sum_of_local_scores_and_prior():
    network = read_bif(bif_path("asia"))
    data = network.sample(2000, random_state=0)
    per_variable = score(network, data, "bdeu", ess=3.0, by_variable=True)
    assert score(network, data, "bdeu", ess=3.0) == pytest.approx(sum(per_variable.values()))
    with_prior = score(network, data, "bic", structure_prior=0.5)
    assert with_prior == pytest.approx(score(network, data, "bic") + len(network.edges) * math.log(0.5))


def test_local_score_doctest_value():
    assert local_score(np.array([3, 1]), "ll") == pytest.approx(3 * math.log(3 / 4) + math.log(1 / 4))


@pytest.fixture(scope="module")
def asia_sample():
    network = read_bif(bif_path("asia"))
    return network, network.sample(5000, random_state=0)


@pytest.mark.parametrize("score_name", ["ll", "bic", "aic", "k2"])
def test_scores_equal_pyagrum_on_real_data(asia_sample, score_name):
    gum = pytest.importorskip("pyagrum")
    network, data = asia_sample
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as handle:
        data.astype(str).to_csv(handle, index=False)
    learner = gum.BNLearner(handle.name)
    {"ll": learner.useScoreLog2Likelihood, "bic": learner.useScoreBIC, "aic": learner.useScoreAIC,
     "k2": learner.useScoreK2}[score_name]()
    ours = score(network, data, score_name, by_variable=True)
    for v in network.variables:
        theirs = learner.score(v, list(network.parents[v]))
        free = network.cpts[v].size // network.cpts[v].shape[-1] * (network.cpts[v].shape[-1] - 1)
        # pyAgrum works in log2; its AIC subtracts the parameter count from the log2-likelihood.
        expected = theirs * math.log(2) if score_name != "aic" else (theirs + free) * math.log(2) - free
        assert ours[v] == pytest.approx(expected, rel=1e-8, abs=1e-6), v  # pyAgrum: log2 rounding


@pytest.mark.parametrize("score_name, ess", [("bic", 1.0), ("aic", 1.0), ("k2", 1.0), ("bdeu", 1.0), ("bdeu", 7.0)])
def test_scores_equal_pgmpy_on_real_data(score_name, ess):
    estimators = pytest.importorskip("pgmpy.estimators")
    from bnfisher.datasets import load

    data = load("nursery").astype(str)
    parents = {"class": ["health", "has_nurs"], "form": ["class"], "finance": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if score_name == "bdeu":
            theirs = estimators.BDeu(data, equivalent_sample_size=ess)
        else:
            theirs = {"bic": estimators.BIC, "aic": estimators.AIC, "k2": estimators.K2}[score_name](data)
        ours = score({**{v: [] for v in data.columns}, **parents}, data, score_name, ess=ess, by_variable=True)
        for v, ps in parents.items():
            assert ours[v] == pytest.approx(theirs.local_score(v, ps), rel=1e-9), v


def test_score_rejects_bad_input():
    data = pd.DataFrame({"a": list("xy"), "b": list("uv")})
    with pytest.raises(ValueError, match="`structure_score` must be one of"):
        score({"a": []}, data, "mdl")
    with pytest.raises(ValueError, match="cycle"):
        score({"a": ["b"], "b": ["a"]}, data)
    with pytest.raises(ValueError, match=r"absent from the data"):
        score({"a": ["zzz"]}, data)
    with pytest.raises(ValueError, match=r"Variable 'b' lists a parent twice: \('a', 'a'\)"):
        score({"a": [], "b": ["a", "a"]}, data)  # a silently different penalty before
    with pytest.raises(ValueError, match="structure_prior"):
        score({"a": []}, data, structure_prior=2.0)
    assert encode(data).n_rows == 2


def test_families_with_more_configurations_than_int64_score_exactly():
    """q = 100**10 > 2**63: the parent index must not wrap around (it used to, silently)."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 100, size=(60, 11))
    codes[:30] = codes[30:]  # repeated parent configurations, so the log-likelihood is not 0
    scorer = LocalScorer(codes, [100] * 11, "ll")
    parents = tuple(range(10))
    # Brute force: N_jk from the rows' parent tuples.
    groups: dict = {}
    for row in codes:
        groups.setdefault(tuple(row[:10]), []).append(row[10])
    expected = sum(n * np.log(n / len(v)) for v in groups.values() for n in np.unique(v, return_counts=True)[1])
    assert scorer(10, parents) == pytest.approx(expected, rel=1e-12)
    assert scorer.scores_adding(10, parents[:9], [9])[0] == pytest.approx(expected, rel=1e-12)
    bic = LocalScorer(codes, [100] * 11, "bic")(10, parents)
    assert bic == pytest.approx(expected - 0.5 * np.log(60) * 100**10 * 99, rel=1e-12)


def test_threaded_batches_equal_one_thread():
    """Large batches are split across threads; every family's score is the same as on one thread."""
    from bnfisher.bn.scores._family import family_scores

    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, size=(20_000, 8)).astype(np.int8)
    cards = np.full(8, 3, dtype=np.int64)
    families = [(v, tuple(sorted(rng.choice([u for u in range(8) if u != v], size=k, replace=False))))
                for v in range(8) for k in (0, 1, 2, 3) for _ in range(5)]
    one = family_scores(np.asfortranarray(codes).T, cards, families, score="bic", ess=1.0, n_threads=1)
    two = family_scores(np.asfortranarray(codes).T, cards, families, score="bic", ess=1.0, n_threads=2)
    np.testing.assert_array_equal(one, two)
    assert one[0] == pytest.approx(_brute_force(codes[:, 0].tolist(), [], "bic"), rel=1e-12)


def test_provider_scores_come_in_passes_bounded_by_table_cells(monkeypatch):
    """Families whose count tables would not fit one pass's budget are scored over several passes, alike."""
    from bnfisher.bn.scores import ProviderScorer
    from bnfisher.data.providers import NumpyCounts

    network = read_bif(bif_path("alarm"))
    data = network.sample(3000, random_state=0)
    data = data.mask(np.random.default_rng(0).random(data.shape) < 0.05)  # available-case: the provider path
    provider = NumpyCounts(network.schema.encode(data, missing="allow").codes, network.schema,
                           missing="available-case")
    families = [(child, tuple(p for p in range(4) if p != child)) for child in range(12)]
    one_pass = ProviderScorer(provider).family_scores(families)
    passes = []
    counts = provider.counts
    monkeypatch.setattr(provider, "counts", lambda asked: passes.append(len(asked)) or counts(asked))
    monkeypatch.setattr(ProviderScorer, "PASS_CELLS", 200)
    chunked = ProviderScorer(provider).family_scores(families)
    np.testing.assert_array_equal(chunked, one_pass)
    assert len(passes) > 1 and sum(passes) == len(families)


def _family_batch_arguments(score_name: str, path: str) -> tuple:
    """Five families on 400 rows with repeated configurations: dense tables or sorted (sparse) counting, and parent
    keys renumbered before int64 overflows (eight parents of 90 states)."""
    from bnfisher.bn.scores._family import SCORE_KINDS, _xlogx_table

    rng = np.random.default_rng(7)
    cards = np.array([3, 2, 4, 5, 90, 90, 90, 90, 90, 90, 90, 90], dtype=np.int64)
    codes = np.stack([rng.integers(0, c, size=400) for c in cards]).astype(np.int8)  # variables x rows, as scored
    codes[:, :200] = codes[:, 200:]  # repeated configurations
    families = [(0, ()), (1, (0,)), (2, (0, 1)), (3, (0, 1, 2)), (0, (4, 5, 6, 7, 8, 9, 10, 11))]
    children = np.array([c for c, _ in families], dtype=np.int64)
    members = np.array([p for _, ps in families for p in ps], dtype=np.int64)
    offsets = np.cumsum([0] + [len(ps) for _, ps in families]).astype(np.int64)
    cells = np.empty(4096 if path == "dense" else 4, dtype=np.int32)
    return families, (codes, cards, children, members, offsets, SCORE_KINDS.index(score_name), 2.0, cells, 0.5,
                      _xlogx_table(400), np.zeros(0, dtype=np.int64), 400, np.zeros((0, 0), dtype=np.uint64),
                      np.zeros(1, dtype=np.int64))


@pytest.mark.parametrize("score_name", ["ll", "bic", "aic", "bdeu", "k2"])
@pytest.mark.parametrize("path", ["dense", "sparse"])
def test_the_numpy_fallback_equals_brute_force(score_name, path):
    """The NumPy scores a small job runs instead of compiling (bnfisher._utils.jit), against the definitions."""
    from bnfisher.bn.scores._family import _numpy_batch

    families, arguments = _family_batch_arguments(score_name, path)
    codes = arguments[0]
    expected = [_brute_force(codes[c].tolist(), [codes[p].tolist() for p in ps], score_name, ess=2.0) + 0.5 * len(ps)
                for c, ps in families]
    np.testing.assert_allclose(_numpy_batch(*arguments), expected, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("score_name", ["ll", "bic", "aic", "bdeu", "k2"])
@pytest.mark.parametrize("path", ["dense", "sparse"])
def test_the_compiled_family_kernel_equals_the_numpy_fallback(score_name, path):
    """The compiled family kernel against the fallback checked above (slow: compiling it from an empty numba cache
    takes 7 s on CI's machine)."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.scores._family import _batch, _numpy_batch

    _, arguments = _family_batch_arguments(score_name, path)
    _materialise()
    np.testing.assert_allclose(_numpy_batch(*arguments), _batch(*arguments), rtol=1e-13)


@pytest.mark.slow
@pytest.mark.parametrize("structure", ["hc", "exact"])
def test_a_job_learns_the_same_network_without_and_with_the_compiler(structure):
    """A small job runs the NumPy fallbacks, a large one compiles: the same network either way (fresh processes,
    the fallback budget 0 and unbounded)."""
    import subprocess
    import sys

    code = ("import sys, bnfisher as bf, bnfisher._utils.jit as j; from bnfisher.datasets import load; "
            "j.FALLBACK_BUDGET = float(sys.argv[1]); "
            f"net = bf.learn(load('nursery').iloc[::3], {structure!r}); "
            "print(sorted((v, tuple(p)) for v, p in net.parents.items())); print('numba' in sys.modules)")
    out = {budget: subprocess.run([sys.executable, "-c", code, budget], capture_output=True, text=True,
                                  check=True).stdout.splitlines() for budget in ("0", "1e9")}
    assert out["0"][0] == out["1e9"][0]
    assert out["0"][1] == "True" and out["1e9"][1] == "False"  # compiled, and not even imported


@pytest.mark.parametrize("score_name", ["ll", "bic", "aic", "bdeu", "k2"])
def test_codes_with_missing_cells_score_as_the_available_case_tables(score_name):
    """LocalScorer on codes with -1 (the compiled kernel on the rows each family observes) against ProviderScorer
    on the available-case count tables, which scales each family's score on its observed rows to all rows."""
    from bnfisher.bn.scores import ProviderScorer
    from bnfisher.data.providers import NumpyCounts
    from bnfisher.data.schema import Schema

    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(500, 5))
    codes[rng.random(codes.shape) < np.array([0.0, 0.2, 0.0, 0.5, 0.0])] = -1  # columns 1 and 3 incomplete
    codes[:, 4][codes[:, 3] < 0] = 0
    codes[:40, 1] = -1
    codes[:40, 3] = -1
    schema = Schema({f"v{i}": [0, 1, 2] for i in range(5)})
    provider = NumpyCounts(codes, schema, missing="available-case")
    families = [(c, ps) for c in range(5) for ps in [(), ((c + 1) % 5,), ((c + 1) % 5, (c + 3) % 5)]]
    ours = LocalScorer(codes, [3] * 5, score_name, ess=2.0).family_scores(families)
    theirs = ProviderScorer(provider, score_name, ess=2.0).family_scores(families)
    np.testing.assert_allclose(ours, theirs, rtol=1e-11)


def test_pair_scores_are_the_single_parent_family_scores_on_every_scorer():
    """The (n, n) matrix of scores alone and with one parent, packed as arrays (LocalScorer) or batched through a
    provider (ProviderScorer; and LocalScorer with missing cells), against the cached scorer's one-family scores."""
    from bnfisher.bn.scores import ProviderScorer
    from bnfisher.data.providers import NumpyCounts
    from bnfisher.data.schema import Schema

    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, size=(400, 6))
    codes[:, 1] = (codes[:, 0] + (rng.random(400) < 0.2)) % 3
    schema = Schema({f"v{i}": [0, 1, 2] for i in range(6)})
    holed = codes.copy()
    holed[rng.random(holed.shape) < 0.1] = -1
    scorers = [LocalScorer(codes, [3] * 6, "bdeu", ess=2.0, structure_prior=0.3),
               ProviderScorer(NumpyCounts(codes, schema), "bdeu", ess=2.0, structure_prior=0.3),
               LocalScorer(holed, [3] * 6, "bic")]
    for scorer in scorers:
        pairs = scorer.pair_scores()
        for u in range(6):
            for v in range(6):
                assert pairs[u, v] == pytest.approx(scorer(v, () if u == v else (u,)), rel=1e-12)
    np.testing.assert_allclose(scorers[0].pair_scores(), scorers[1].pair_scores(), rtol=1e-12)


def _mixed_codes(seed: int, n_rows: int = 300):
    """Codes (variables x rows, int8) with repeated rows, small tables and one of 120 states (tables too large to
    count densely: scored by sorting); every state occurs, so the brute force reads the cardinalities off the codes."""
    rng = np.random.default_rng(seed)
    cards = np.array([2, 3, 4, 3, 2, 120], dtype=np.int64)
    codes = np.stack([rng.integers(0, c, size=n_rows) for c in cards])
    half = n_rows // 2
    codes[:4, :half] = codes[:4, half:2 * half]  # repeated rows over the small columns
    codes[5, :120] = np.arange(120)
    for v, c in enumerate(cards):
        codes[v, :c] = np.arange(c) if c < 120 else codes[v, :c]
    return np.ascontiguousarray(codes.astype(np.int8)), cards


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize("score_name", ["ll", "bic", "aic", "bdeu", "k2"])
def test_pair_scores_count_each_pair_once_and_score_both_ways_as_the_family_kernel(score_name, compiled):
    """pair_scores (one table per pair of columns, read by rows and by columns; pairs too large for two dense tables
    through the family kernel) against the family kernel bit for bit, the brute force from the definitions, and
    its NumPy fallback; on one thread and on two.  Compiled (slow: the family kernel compiles in 7 s from an empty
    numba cache), or on the path a small job takes."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.scores._family import SCORE_KINDS, family_scores
    from bnfisher.bn.scores._pair import _numpy_pair_rows, pair_scores

    codes, cards = _mixed_codes(1)
    n = cards.size
    if compiled:
        _materialise()
    families = [(v, (u,) if u != v else ()) for u in range(n) for v in range(n)]
    kernel = family_scores(codes, cards, families, score=score_name, ess=2.0, n_threads=1).reshape(n, n)
    kernel += 0.25 * (1 - np.eye(n))
    for threads in (1, 2):
        ours = pair_scores(codes, cards, score=score_name, ess=2.0, log_prior=0.25, n_threads=threads)
        np.testing.assert_array_equal(ours, kernel)
    expected = np.array([[_brute_force(codes[v].tolist(), [codes[u].tolist()] if u != v else [], score_name, ess=2.0)
                          for v in range(n)] for u in range(n)]) + 0.25 * (1 - np.eye(n))
    np.testing.assert_allclose(ours, expected, rtol=1e-12)
    fallback = np.empty((n, n))
    _numpy_pair_rows(codes, cards, 0, n, SCORE_KINDS.index(score_name), 2.0, None, None, 0.25, fallback)
    np.testing.assert_allclose(fallback, expected, rtol=1e-12)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)])
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_rows=st.integers(120, 400), score_name=st.sampled_from(["bic", "bdeu", "k2"]))
def test_projected_scores_on_distinct_rows_equal_the_scores_on_all_rows(compiled, seed, n_rows, score_name):
    """Families counted on the distinct rows of a few columns with their multiplicities: the family kernel's scores
    on all rows bit for bit (tables too large for a dense count go to all rows), and the NumPy fallbacks (hash-free
    projection, weighted bincount) equal to the definitions.  Compiled (slow, as above) or as a small job runs."""
    from bnfisher._utils.jit import _materialise
    from bnfisher._utils.parallel import PARALLEL_WORK
    from bnfisher.bn.scores._family import SCORE_KINDS, _numpy_batch, family_scores
    from bnfisher.bn.scores._projected import _numpy_project, _project, projected_scores

    rng = np.random.default_rng(seed)
    codes, cards = _mixed_codes(seed, n_rows=n_rows)
    columns = sorted(rng.choice(6, size=int(rng.integers(1, 7)), replace=False).tolist())
    families = []
    for _ in range(12):
        child = int(rng.choice(columns))
        others = [c for c in columns if c != child]
        parents = tuple(int(p) for p in rng.permutation(others)[:int(rng.integers(0, min(3, len(others)) + 1))])
        families.append((child, parents))
    if compiled:
        _materialise()
    # One group, and the same families split into groups over their own columns (in parts for two threads).
    ours = projected_scores(codes, cards, [(families, columns)], score=score_name, ess=2.0, log_prior=-0.5)
    split = [(families[k:k + 3], {v for c, ps in families[k:k + 3] for v in (c, *ps)}) for k in range(0, 12, 3)]
    theirs = family_scores(codes, cards, families, score=score_name, ess=2.0, log_prior=-0.5, n_threads=1)
    np.testing.assert_array_equal(ours, theirs)
    for work in (PARALLEL_WORK, 0):  # one thread, and two whatever the work
        with mock.patch("bnfisher._utils.parallel.PARALLEL_WORK", work):
            np.testing.assert_array_equal(projected_scores(codes, cards, split, score=score_name, ess=2.0,
                                                           log_prior=-0.5, n_threads=2), theirs)
    # The projection: every distinct row once, with its count, in the compiled and the NumPy version.
    for rows, weights in (_project(codes, np.array(columns), cards), _numpy_project(codes, np.array(columns), cards)):
        assert weights.sum() == codes.shape[1]
        seen = {tuple(row): int(w) for row, w in zip(rows.T.tolist(), weights.tolist())}
        assert len(seen) == rows.shape[1]
        assert seen == Counter(map(tuple, codes[columns].T.tolist()))
    local = {c: k for k, c in enumerate(columns)}
    picked = [(local[c], tuple(local[p] for p in ps)) for c, ps in families]
    children = np.array([c for c, _ in picked], dtype=np.int64)
    members = np.array([p for _, ps in picked for p in ps], dtype=np.int64)
    offsets = np.cumsum([0] + [len(ps) for _, ps in picked]).astype(np.int64)
    rows, weights = _numpy_project(codes, np.array(columns), cards)  # the steps' fallbacks, as a small job runs them
    fallback = _numpy_batch(rows, cards[columns], children, members, offsets, SCORE_KINDS.index(score_name), 2.0,
                            None, -0.5, None, weights, codes.shape[1])
    expected = [_brute_force(codes[c].tolist(), [codes[p].tolist() for p in ps], score_name, ess=2.0) - 0.5 * len(ps)
                for c, ps in families]
    np.testing.assert_allclose(fallback, expected, rtol=1e-11, atol=1e-9)
    np.testing.assert_allclose(ours, expected, rtol=1e-11, atol=1e-9)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_projected_scores_count_large_tables_and_overflowing_keys_on_all_rows(compiled):
    """A family whose table is too large to count densely, and columns whose mixed-radix key would overflow an int64:
    scored on all rows instead of the distinct ones, to the same scores (compiled, or as a small job runs)."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.scores._family import _dense_cells, family_scores
    from bnfisher.bn.scores._projected import projected_scores

    rng = np.random.default_rng(5)
    cards = np.array([100] * 9 + [4, 4], dtype=np.int64)  # 100**9 * 16 > 2**62
    codes = np.ascontiguousarray(np.stack([rng.integers(0, c, size=300) for c in cards]).astype(np.int8))
    big = (0, (1, 2))  # 10**6 cells
    assert 100 ** 3 > _dense_cells(300)
    if compiled:
        _materialise()
    for columns, families in (([0, 1, 2, 9, 10], [big, (9, (10,)), (10, ())]),
                              (list(range(11)), [(9, (10,)), (10, (9, 0)), big])):
        ours = projected_scores(codes, cards, [(families, columns)], score="bic", ess=1.0)
        np.testing.assert_array_equal(ours, family_scores(codes, cards, families, score="bic", ess=1.0, n_threads=1))


def test_grouped_scores_and_cached_pairs_are_the_family_scores_on_every_scorer():
    """Groups of families (candidate parent sets), counted on their columns' distinct rows by LocalScorer, batched
    by ProviderScorer and by LocalScorer with missing cells, and the cached single-parent families: each the
    scorer's own one-family scores of a fresh scorer."""
    from bnfisher.bn.scores import ProviderScorer
    from bnfisher.data.providers import NumpyCounts
    from bnfisher.data.schema import Schema

    rng = np.random.default_rng(8)
    codes = rng.integers(0, 3, size=(500, 6))
    codes[:, 2] = (codes[:, 0] + codes[:, 1] * (rng.random(500) < 0.7)) % 3
    holed = codes.copy()
    holed[rng.random(holed.shape) < 0.1] = -1
    schema = Schema({f"v{i}": [0, 1, 2] for i in range(6)})
    groups = [([(2, ()), (2, (0,)), (2, (0, 1)), (2, (1,))], {0, 1, 2}),
              ([(5, (3, 4)), (5, ()), (5, (4,))], {3, 4, 5}),
              ([(0, (1, 2, 3))], {0, 1, 2, 3})]
    makers = [lambda: LocalScorer(codes, [3] * 6, "bic", structure_prior=0.5),
              lambda: ProviderScorer(NumpyCounts(codes, schema), "bic", structure_prior=0.5),
              lambda: LocalScorer(holed, [3] * 6, "bdeu", ess=3.0)]
    for make in makers:
        scorer, fresh = make(), make()
        scorer.prefetch([(2, (0,))])  # one family cached before: looked up, not scored again
        for (families, _), values in zip(groups, scorer.grouped_scores(groups)):
            np.testing.assert_array_equal(values, [fresh(c, ps) for c, ps in families])
        paired, fresh = make(), make()
        paired.cache_pairs()
        for v in range(6):
            for u in range(6):
                assert paired(v, (u,) if u != v else ()) == fresh(v, (u,) if u != v else ())


@pytest.mark.slow  # compiled only (the bit sets have no fallback): the family kernel compiles in 7 s, cold
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_rows=st.integers(1, 300))
def test_counts_from_bit_sets_equal_a_pass_over_the_rows(seed, n_rows):
    """Count tables from bit sets of the rows (an AND and a population count per cell; configurations no row has
    skipped) against np.bincount over the rows; the family kernel and the pair scores with and without bit sets give
    the same scores bit for bit (a 30-state column sends large tables to the row pass)."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.bn.scores._bits import _numpy_row_bits, bit_table, groups_of, row_bits
    from bnfisher.bn.scores._family import family_scores
    from bnfisher.bn.scores._pair import pair_scores

    rng = np.random.default_rng(seed)
    cards = np.array([2, 3, 4, 2, 30, 3], dtype=np.int64)
    codes = np.ascontiguousarray(np.stack([rng.integers(0, c, size=n_rows) for c in cards]).astype(np.int8))
    codes[1] = np.where(rng.random(n_rows) < 0.8, codes[0], codes[1])  # dependence: empty configurations
    _materialise()
    bits, first = row_bits(codes, cards)
    np.testing.assert_array_equal(bits, _numpy_row_bits(codes, cards, first))
    groups, index = np.empty((4096, bits.shape[1]), np.uint64), np.empty(4096, np.int64)
    for _ in range(5):
        child = int(rng.integers(0, 6))
        parents = [int(p) for p in rng.permutation([v for v in range(6) if v != child])[:int(rng.integers(0, 4))]]
        prefix, last = np.array(parents[:-1], dtype=np.int64), (parents[-1] if parents else -1)
        c = int(cards[last]) if parents else 1
        span = int(np.prod(cards[prefix])) if prefix.size else 1
        count = groups_of(bits, first, cards, prefix, child, groups, index)
        cells = np.full(span * c * int(cards[child]) + 7, -1, dtype=np.int64)
        bit_table(bits, first, last, c, groups, index, count, int(cards[child]), cells, span * c * int(cards[child]))
        key = np.zeros(n_rows, dtype=np.int64)
        for p in parents:
            key = key * cards[p] + codes[p]
        expected = np.bincount(key * cards[child] + codes[child], minlength=span * c * int(cards[child]))
        np.testing.assert_array_equal(cells[:expected.size], expected)
        # One group per (configuration of all parents but the last, child state) that holds a row, none empty.
        prefix_key = np.zeros(n_rows, dtype=np.int64)
        for p in parents[:-1]:
            prefix_key = prefix_key * cards[p] + codes[p]
        assert count == np.unique(prefix_key * cards[child] + codes[child]).size
    families = [(v, tuple(int(p) for p in rng.permutation([u for u in range(6) if u != v])[:k]))
                for v in range(6) for k in range(4)]
    for score_name in ("bic", "bdeu", "k2"):
        plain = family_scores(codes, cards, families, score=score_name, ess=2.0, n_threads=1)
        np.testing.assert_array_equal(family_scores(codes, cards, families, score=score_name, ess=2.0, n_threads=1,
                                                    bits=(bits, first)), plain)
        np.testing.assert_array_equal(pair_scores(codes, cards, score=score_name, ess=2.0, bits=(bits, first)),
                                      pair_scores(codes, cards, score=score_name, ess=2.0))
