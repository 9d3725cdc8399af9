"""Missing values: the marginalized kernel (paper Sec. 8), exact queries with evidence, expected counts."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bnfisher as bf
from bnfisher import FisherKernel
from bnfisher.bn.inference import expected_counts, query
from bnfisher.comparison.null import permutation_splits
from bnfisher.data.counts import distinct_rows

from _helpers import (
    _free_parameters,
    _log_likelihood_complex,
    all_configurations,
    bif_path,
    complex_step_scores,
    joint_probabilities,
    random_network,
    theorem1_gram,
    theorem1_kernel,
)


def _completions(network, x, configurations, probabilities):
    """P(h | x) over all full configurations consistent with the observed part of x (brute force)."""
    consistent = np.all((x < 0) | (configurations == x), axis=1)
    weights = probabilities * consistent
    return weights / weights.sum()


def _random_missing(rng, network, n_rows):
    codes = network.encode(network.sample(n_rows, random_state=rng)).codes.astype(np.intp)
    mask = rng.random(codes.shape) < rng.uniform(0.1, 0.6)
    mask[0] = True  # an all-missing row
    mask[1] = False  # a complete row
    return np.where(mask, -1, codes)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_marginalized_gram_equals_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=int(rng.integers(3, 6)), max_parents=3, max_states=4, floor=1e-5)
    codes = _random_missing(rng, network, 6)
    kernel = FisherKernel(network)
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    marginals = kernel.parent_marginals_
    full = theorem1_gram(network, marginals, configurations, configurations)
    pairs = rng.integers(len(configurations), size=(20, 2))  # the broadcast eq. 2 against the literal one
    np.testing.assert_allclose([full[a, b] for a, b in pairs],
                               [theorem1_kernel(network, marginals, configurations[a], configurations[b])
                                for a, b in pairs], rtol=1e-12)
    posterior = np.array([_completions(network, x, configurations, probabilities) for x in codes])
    expected = posterior @ full @ posterior.T
    declared = [network.variables.index(v) for v in network.schema.variables]
    ours = kernel.gram(codes[:, declared])  # arrays follow the declared order
    np.testing.assert_allclose(ours, expected, rtol=1e-7, atol=1e-7 * np.abs(expected).max())
    np.testing.assert_allclose(kernel.diag(codes[:, declared]), np.diag(expected), rtol=1e-7,
                               atol=1e-7 * np.abs(expected).max())


def test_fishers_identity_expected_score_is_the_observed_data_score():
    """E[s(Z) | x] equals the complex-step gradient of log P(x_obs): the kernel is E[s]^T I^-1 E[s]."""
    rng = np.random.default_rng(11)
    network = random_network(rng, n_vars=4, max_parents=2, max_states=3)
    codes = _random_missing(rng, network, 5)
    parameters = _free_parameters(network)
    theta = np.array([network.cpts[v][position + (k,)] for v, position, k in parameters])
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)

    def observed_log_likelihood(values, x):
        consistent = configurations[np.all((x < 0) | (configurations == x), axis=1)]
        total = sum(np.exp(_log_likelihood_complex(network, parameters, values, z)) for z in consistent)
        return np.log(total)

    scores = complex_step_scores(observed_log_likelihood, theta, codes)
    complete_scores = complex_step_scores(lambda values, z: _log_likelihood_complex(network, parameters, values, z),
                                          theta, configurations)
    information = (complete_scores * probabilities[:, None]).T @ complete_scores
    expected = scores @ np.linalg.solve(information, scores.T)
    declared = [network.variables.index(v) for v in network.schema.variables]
    np.testing.assert_allclose(FisherKernel(network).gram(codes[:, declared]), expected, rtol=1e-6, atol=1e-9)


def test_expected_counts_equal_brute_force():
    rng = np.random.default_rng(5)
    network = random_network(rng, n_vars=5, max_parents=2, max_states=3)
    codes = _random_missing(rng, network, 40)
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    families = [p + (i,) for i, p in enumerate(network.parent_indices())]
    ours = expected_counts(network, codes, families)
    for family, table in zip(families, ours):
        reference = np.zeros(table.shape)
        for x in codes:
            weights = _completions(network, x, configurations, probabilities)
            for z, w in zip(configurations, weights):
                reference[tuple(z[list(family)])] += w
        np.testing.assert_allclose(table, reference, atol=1e-12)


def test_query_equals_enumeration():
    rng = np.random.default_rng(2)
    network = random_network(rng, n_vars=6, max_parents=2, max_states=3)
    frame = network.sample(30, random_state=rng).astype(object)
    frame = frame.mask(rng.random(frame.shape) < 0.4)
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    codes = network.encode(frame, missing="allow").codes.astype(np.intp)
    for target in network.variables:
        got = query(network, target, frame.drop(columns=[target]))
        i = network.variables.index(target)
        for row, x in enumerate(codes):
            x = x.copy()
            x[i] = -1
            weights = _completions(network, x, configurations, probabilities)
            reference = np.bincount(configurations[:, i], weights=weights, minlength=len(network.states[target]))
            np.testing.assert_allclose(got.iloc[row].to_numpy(dtype=float), reference, atol=1e-12)


@pytest.mark.parametrize("name", ["alarm", "hailfinder", "win95pts"])
def test_query_equals_pyagrum_lazy_propagation(name):
    gum = pytest.importorskip("pyagrum")
    from bnfisher.bn.formats.interop import to_pyagrum

    network = bf.read_bif(bif_path(name))
    bn = to_pyagrum(network)
    rng = np.random.default_rng(0)
    frame = network.sample(8, random_state=1).astype(object)
    observed = rng.choice(network.variables, size=min(10, len(network.variables) // 3), replace=False)
    evidence = frame[list(observed)]
    targets = [v for v in network.variables if v not in observed][:6]
    ours = query(network, targets, evidence)
    for row in range(len(frame)):
        engine = gum.LazyPropagation(bn)
        engine.setEvidence({v: str(evidence.iloc[row][v]) for v in observed})
        engine.makeInference()
        for t in targets:
            reference = np.asarray(engine.posterior(t).toarray())
            np.testing.assert_allclose(ours[t].iloc[row].to_numpy(dtype=float), reference, atol=1e-9)


def test_query_rejects_impossible_evidence_and_unknown_names():
    network = bf.BayesianNetwork({"b": ["a"]}, {"a": [1.0, 0.0], "b": [[0.5, 0.5], [0.5, 0.5]]},
                                 {"a": ["x", "y"], "b": ["u", "v"]})
    with pytest.raises(bf.BnfisherError, match="probability 0"):
        query(network, "b", {"a": "y"})
    with pytest.raises(bf.BnfisherError, match="not variables"):
        query(network, "c", {"a": "x"})


def test_missing_markers_and_unknown_values_are_marginalized_only_when_asked():
    network = bf.read_bif(bif_path("asia"))
    frame = network.sample(50, random_state=0).astype(object)
    frame.iloc[3, 2] = "?"
    frame.iloc[4, 1] = "teal"
    strict = FisherKernel(network)
    with pytest.raises(bf.BnfisherError, match="'teal'.*handle_unknown='marginalize'"):
        strict.embed(frame.replace("?", np.nan))
    lenient = FisherKernel(network, handle_unknown="marginalize")
    marked = bf.BayesianNetwork(dict(network.parents), dict(network.cpts), dict(network.states),
                                schema=bf.Schema(dict(network.states), na_values=["?"]))
    values = FisherKernel(marked, handle_unknown="marginalize").diag(frame)
    as_nan = frame.replace({"?": np.nan, "teal": np.nan})
    np.testing.assert_allclose(values, lenient.diag(as_nan))
    assert np.all(np.isfinite(values))


def test_mmd_and_mean_embedding_with_missing_values_come_from_expected_counts():
    network = bf.read_bif(bif_path("asia"))
    kernel = FisherKernel(network)
    frame = network.sample(200, random_state=0).astype(object)
    frame = frame.mask(np.random.default_rng(0).random(frame.shape) < 0.2)
    other = network.sample(100, random_state=1)
    E = kernel.embed(frame)
    mean = np.asarray(E.mean(axis=0)).ravel()
    np.testing.assert_allclose(kernel.mean_embedding(frame), mean, atol=1e-12)
    gram = kernel.gram(pd.concat([frame, other.astype(object)], ignore_index=True))
    n = len(frame)
    by_gram = gram[:n, :n].mean() + gram[n:, n:].mean() - 2 * gram[:n, n:].mean()
    assert kernel.mmd(frame, other) == pytest.approx(by_gram, rel=1e-9)
    assert list(itertools.islice(kernel.cell_weights(frame), 1))


def test_two_sample_test_with_missing_values_equals_the_gram_matrix_definition():
    from bnfisher.comparison import mmd_test

    network = bf.read_bif(bif_path("asia"))
    kernel = FisherKernel(network)
    rng = np.random.default_rng(3)
    X = network.sample(40, random_state=1).astype(object).mask(rng.random((40, 8)) < 0.25)
    Y = network.sample(30, random_state=2).astype(object).mask(rng.random((30, 8)) < 0.25)
    result = mmd_test(kernel, X, Y, n_permutations=30, random_state=7)
    gram = kernel.gram(pd.concat([X, Y], ignore_index=True))
    n_x, n = len(X), len(X) + len(Y)

    def biased(first):
        second = np.setdiff1d(np.arange(n), first)
        return gram[np.ix_(first, first)].mean() + gram[np.ix_(second, second)].mean() \
            - 2 * gram[np.ix_(first, second)].mean()

    assert result.statistic == pytest.approx(biased(np.arange(n_x)), rel=1e-9)
    kxx, kyy = gram[:n_x, :n_x], gram[n_x:, n_x:]
    unbiased = ((kxx.sum() - np.trace(kxx)) / (n_x * (n_x - 1)) + (kyy.sum() - np.trace(kyy)) / (30 * 29)
                - 2 * gram[:n_x, n_x:].mean())
    assert result.unbiased == pytest.approx(unbiased, rel=1e-9)
    # The same draws, from the same seed: copies of each distinct row (missing cells included) sent first.
    codes = kernel.encode(pd.concat([X, Y], ignore_index=True)).codes
    first, inverse, multiplicity = distinct_rows(codes)
    draws = permutation_splits(codes[first], multiplicity, n_x, 30, random_state=np.random.default_rng(7))
    null = [biased(np.concatenate([np.flatnonzero(inverse == d)[:count] for d, count in enumerate(draw)]))
            for draw in draws]
    np.testing.assert_allclose(result.null_distribution, null, rtol=1e-9)


def test_selection_with_missing_values_uses_expected_embeddings():
    from bnfisher.summary import select_representatives

    network = bf.read_bif(bif_path("asia"))
    kernel = FisherKernel(network)
    X = network.sample(300, random_state=0).astype(object)
    X = X.mask(np.random.default_rng(0).random(X.shape) < 0.2)
    result = select_representatives(kernel, X, 20, n_init=30, random_state=0, candidates="all")
    assert result.final_value == pytest.approx(kernel.mmd(X.iloc[result.indices], X), rel=1e-9)
    assert result.final_value < result.initial_value
    with pytest.raises(bf.BnfisherError, match="needs complete rows"):
        select_representatives(kernel, X, 20, criterion="chi2", candidates="all")


def test_by_default_only_complete_rows_are_chosen_and_the_target_is_every_row():
    from bnfisher.summary import select_representatives

    network = bf.read_bif(bif_path("asia"))
    kernel = FisherKernel(network)
    X = network.sample(400, random_state=0).astype(object)
    X = X.mask(np.random.default_rng(0).random(X.shape) < 0.05)
    complete = X.notna().all(axis=1).to_numpy()
    result = select_representatives(kernel, X, 20, n_init=30, random_state=0, n_criticisms=3)
    assert complete[result.indices].all() and complete[result.criticisms].all()
    # The objective is the MMD² to the whole data (expected embeddings of the incomplete rows), from counts.
    assert result.final_value == pytest.approx(kernel.mmd(X.iloc[result.indices], X), rel=1e-9)
    chi2 = select_representatives(kernel, X, 20, criterion="chi2", n_init=30, random_state=0)
    assert complete[chi2.indices].all()
    with pytest.raises(bf.BnfisherError, match="candidates='all'"):
        select_representatives(kernel, X.mask(np.ones(X.shape, dtype=bool) & (np.arange(8) == 0)), 5)


def test_cross_validation_runs_when_rare_categories_fall_in_one_fold_and_cells_are_missing():
    sklearn = pytest.importorskip("sklearn")  # noqa: F841
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.pipeline import make_pipeline

    from bnfisher.datasets import load
    from bnfisher.sklearn.classifier import BayesianNetworkClassifier
    from bnfisher.sklearn.embedding import FisherEmbedding

    data = load("nursery").sample(2000, random_state=0).reset_index(drop=True)  # the file is sorted
    X, y = data.drop(columns="class").astype(object), data["class"].astype(str)
    y = y.where(y != "recommend", "priority")  # a two-row class cannot be stratified
    X.loc[:4, "form"] = "rare"  # a category that only the first fold sees
    X = X.mask(np.random.default_rng(0).random(X.shape) < 0.1)  # 10% of the cells missing
    folds = KFold(5, shuffle=False)
    pipeline = make_pipeline(FisherEmbedding(), LogisticRegression(max_iter=2000))
    embedding_scores = cross_val_score(pipeline, X, y, cv=folds, error_score="raise")
    classifier_scores = cross_val_score(BayesianNetworkClassifier(structure="tan"), X, y, cv=folds,
                                        error_score="raise")
    assert embedding_scores.mean() > 0.75 and classifier_scores.mean() > 0.75


@pytest.mark.parametrize("enumerate_all", [False, True])
def test_posterior_modes_match_the_junction_tree_for_one_and_several_missing_values(enumerate_all, monkeypatch):
    """Enumerated components and the batched junction tree give the same modes."""
    from bnfisher.bn.inference import components, posterior_modes, posteriors_given_rows

    if enumerate_all:
        monkeypatch.setattr(components, "MIN_ROWS", 1)

    rng = np.random.default_rng(5)
    network = random_network(rng, n_vars=6, max_parents=2, max_states=4)
    codes = _random_missing(rng, network, 300)
    expected = codes.copy()
    holes = codes < 0
    columns = [i for i in range(codes.shape[1]) if holes[:, i].any()]
    posteriors, _ = posteriors_given_rows(network, codes, [(i,) for i in columns])
    for i, posterior in zip(columns, posteriors):
        expected[holes[:, i], i] = np.argmax(posterior[holes[:, i]], axis=1)
    assert (holes.sum(axis=1) == 1).sum() > 20 and (holes.sum(axis=1) > 1).sum() > 20  # both paths are used
    np.testing.assert_array_equal(posterior_modes(network, codes), expected)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_expected_feature_map_is_the_weighted_sum_of_the_cells_feature_rows(seed, compiled, monkeypatch):
    """The CSR assembly (no sort, duplicates summed per parent configuration; its entries written by the
    compiled loop or by NumPy) against the definition ``E[Phi | x] = sum_cells weight * Phi(cell)`` accumulated
    densely, on random weight triples with repeated, unsorted cells."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.kernels import expected

    if compiled:
        _materialise()
        assert expected._fill.__class__.__name__ != "_Deferred"  # noqa: SLF001 - numba's dispatcher
    else:
        monkeypatch.setattr(expected, "_fill", expected._numpy_fill)  # noqa: SLF001
    rng = np.random.default_rng(seed)
    network = random_network(rng, n_vars=5, max_parents=2, max_states=4)
    kernel = FisherKernel(network)
    n_rows = 12
    triples = []
    for i in range(len(kernel.families)):
        cells_in_family = kernel.cell_features(i).shape[0]
        size = int(rng.integers(0, 40))
        triples.append((rng.integers(n_rows, size=size), rng.integers(cells_in_family, size=size),
                        rng.random(size)))
    dense = np.zeros((n_rows, kernel.n_features_))
    for i, (rows, cells, weights) in enumerate(triples):
        columns = kernel.feature_columns(i, cells)
        for row, column, cell, weight in zip(rows, columns, cells, weights):
            dense[row, column] += weight * kernel.cell_features(i)[cell]
    matrix = kernel.embed_weights(triples, n_rows)
    assert matrix.has_canonical_format
    np.testing.assert_allclose(matrix.toarray(), dense, rtol=1e-12, atol=1e-14)
