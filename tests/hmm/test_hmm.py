import numpy as np
import pytest

hmmlearn = pytest.importorskip("hmmlearn")
from hmmlearn.hmm import GaussianHMM  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from bnfisher.exceptions import OptionError  # noqa: E402
from bnfisher.hmm import forward_backward, hmm_scores, log_emissions  # noqa: E402
from bnfisher.sklearn import HMMFisherKernel  # noqa: E402


def _parameters(rng, K=3, D=2):
    startprob = rng.dirichlet(np.ones(K))
    transmat = rng.dirichlet(np.ones(K) * 2, size=K)
    means = rng.normal(size=(K, D)) * 2
    covariances = []
    for _ in range(K):
        a = rng.normal(size=(D, D))
        covariances.append(a @ a.T + D * np.eye(D) * 0.5)
    return startprob, transmat, means, np.array(covariances)


def _sample(rng, startprob, transmat, means, covariances, T):
    """A path of the chain (inverse CDF of one uniform per step) and Gaussian emissions (Cholesky factor times
    standard normals)."""
    last = len(startprob) - 1
    uniforms = rng.random(T)
    cumulative = np.cumsum(transmat, axis=1)
    states = np.empty(T, dtype=int)
    states[0] = min(int(np.searchsorted(np.cumsum(startprob), uniforms[0], side="right")), last)
    for t in range(1, T):
        states[t] = min(int(np.searchsorted(cumulative[states[t - 1]], uniforms[t], side="right")), last)
    noise = rng.standard_normal((T, means.shape[1]))
    return means[states] + np.einsum("tij,tj->ti", np.linalg.cholesky(covariances)[states], noise)


def test_log_likelihood_and_posteriors_equal_hmmlearn():
    rng = np.random.default_rng(0)
    params = _parameters(rng)
    X = _sample(rng, *params, T=200)
    model = GaussianHMM(n_components=3, covariance_type="full", init_params="", params="")
    model.startprob_, model.transmat_, model.means_, model.covars_ = params
    log_likelihood, gamma, _ = forward_backward(X, *params)
    assert log_likelihood == pytest.approx(model.score(X), rel=1e-10)
    np.testing.assert_allclose(gamma, model.predict_proba(X), atol=1e-9)


def _log_likelihood(X, startprob, transmat, means, covariances):
    return forward_backward(X, startprob, transmat, means, covariances)[0]


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("seed", [1, 2])
def test_every_gradient_block_equals_central_finite_differences(seed):
    rng = np.random.default_rng(seed)
    startprob, transmat, means, covariances = _parameters(rng)
    X = _sample(rng, startprob, transmat, means, covariances, T=60)
    # Evaluate away from the optimum: the data come from these parameters, the model does not fit them exactly.
    score = hmm_scores(X, startprob, transmat, means, covariances)
    h = 1e-5
    numeric = []
    logits = np.log(startprob)  # softmax steps stay on the simplex
    for i in range(3):
        step = np.zeros(3)
        step[i] = h
        numeric.append((_log_likelihood(X, _softmax(logits + step), transmat, means, covariances)
                        - _log_likelihood(X, _softmax(logits - step), transmat, means, covariances)) / (2 * h))
    row_logits = np.log(transmat)
    for i in range(3):
        for j in range(3):
            step = np.zeros((3, 3))
            step[i, j] = h
            numeric.append((_log_likelihood(X, startprob, _softmax(row_logits + step), means, covariances)
                            - _log_likelihood(X, startprob, _softmax(row_logits - step), means, covariances)) / (2 * h))
    for k in range(3):
        for d in range(2):
            step = np.zeros_like(means)
            step[k, d] = h
            numeric.append((_log_likelihood(X, startprob, transmat, means + step, covariances)
                            - _log_likelihood(X, startprob, transmat, means - step, covariances)) / (2 * h))
    for k in range(3):
        for a, b in zip(*np.triu_indices(2)):
            step = np.zeros_like(covariances)
            step[k, a, b] = step[k, b, a] = h  # symmetric step: one parameter per pair
            numeric.append((_log_likelihood(X, startprob, transmat, means, covariances + step)
                            - _log_likelihood(X, startprob, transmat, means, covariances - step)) / (2 * h))
    np.testing.assert_allclose(score, np.array(numeric), rtol=1e-5, atol=1e-5)


def test_the_notes_eq13_covariance_gradient_fails_the_check():
    rng = np.random.default_rng(3)
    startprob, transmat, means, covariances = _parameters(rng)
    X = _sample(rng, startprob, transmat, means, covariances, T=60)
    _, gamma, _ = forward_backward(X, startprob, transmat, means, covariances)
    k, h = 0, 1e-5
    inverse = np.linalg.inv(covariances[k])
    centred = X - means[k]
    # Eq. 13 of the note: 1/2 sum_t gamma (-1/2 C^-1 + 1/2 C^-1 r r^T C^-1), i.e. half the true gradient.
    note = 0.5 * sum(g * (-0.5 * inverse + 0.5 * inverse @ np.outer(r, r) @ inverse)
                     for g, r in zip(gamma[:, k], centred))
    step = np.zeros_like(covariances)
    step[k, 0, 0] = h
    numeric = (_log_likelihood(X, startprob, transmat, means, covariances + step)
               - _log_likelihood(X, startprob, transmat, means, covariances - step)) / (2 * h)
    ours = hmm_scores(X, startprob, transmat, means, covariances, parameters=["covars"])[0]
    assert ours == pytest.approx(numeric, rel=1e-5)
    assert note[0, 0] != pytest.approx(numeric, rel=1e-2)


def test_diagonal_covariance_gradient_equals_finite_differences():
    rng = np.random.default_rng(4)
    startprob, transmat, means, covariances = _parameters(rng)
    covariances = np.stack([np.diag(np.diag(c)) for c in covariances])
    X = _sample(rng, startprob, transmat, means, covariances, T=50)
    score = hmm_scores(X, startprob, transmat, means, covariances, "diag", parameters=["covars"])
    h = 1e-6
    numeric = []
    for k in range(3):
        for d in range(2):
            step = np.zeros_like(covariances)
            step[k, d, d] = h
            numeric.append((_log_likelihood(X, startprob, transmat, means, covariances + step)
                            - _log_likelihood(X, startprob, transmat, means, covariances - step)) / (2 * h))
    np.testing.assert_allclose(score, numeric, rtol=1e-5, atol=1e-6)


def _two_groups(rng, n_per_group=20, T=300, persistence=(0.95, 0.7)):
    means = np.array([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])
    covariances = np.stack([np.eye(2)] * 3)
    sequences, labels = [], []
    for label, stay in enumerate(persistence):
        transmat = np.full((3, 3), (1 - stay) / 2) + np.eye(3) * (stay - (1 - stay) / 2)
        for _ in range(n_per_group):
            sequences.append(_sample(rng, np.full(3, 1 / 3), transmat, means, covariances, T))
            labels.append(label)
    return sequences, np.array(labels)


@pytest.fixture(scope="module")
def groups():
    return _two_groups(np.random.default_rng(5))


@pytest.mark.slow
def test_scores_at_the_fitted_optimum_are_near_zero(groups):
    sequences, _ = groups
    kernel = HMMFisherKernel(n_states=3, parameters=["means", "covars"], n_init=3, n_iter=200, tol=1e-6,
                             random_state=0).fit(sequences)
    total = kernel.transform(sequences).sum(axis=0)
    per_sequence = np.abs(kernel.transform(sequences)).sum(axis=0)
    assert np.all(np.abs(total) <= 1e-2 * per_sequence + 1e-3)
    assert len(kernel.init_log_likelihoods_) == 3
    assert kernel.log_likelihood_ == pytest.approx(max(kernel.init_log_likelihoods_))
    assert kernel.log_likelihood_ == pytest.approx(kernel.score_sequences(sequences).sum(), rel=1e-8)


def _relabel(kernel, order):
    """Relabel the hidden states of a fitted kernel: every fitted attribute, features included."""
    K, D = kernel.means_.shape
    width = D * (D + 1) // 2
    # feature positions per block for the state order: startprob (K), transmat (K x K), means (K x D), covars
    index = [order, (order[:, None] * K + order[None, :]).ravel() + K,
             (order[:, None] * D + np.arange(D)).ravel() + K + K * K,
             (order[:, None] * width + np.arange(width)).ravel() + K + K * K + K * D]
    features = np.concatenate(index)
    kernel.startprob_ = kernel.startprob_[order]
    kernel.transmat_ = kernel.transmat_[np.ix_(order, order)]
    kernel.means_ = kernel.means_[order]
    kernel.covariances_ = kernel.covariances_[order]
    kernel.occupancy_, kernel.visits_ = kernel.occupancy_[order], kernel.visits_[order]
    if kernel.information == "complete":  # recomputed from the relabelled parameters, not permuted
        from scipy.linalg import block_diag

        from bnfisher.hmm.scores import complete_information, inverse_root

        matrices = complete_information(kernel.startprob_, kernel.transmat_, kernel.covariances_, kernel.occupancy_,
                                        kernel.visits_)
        kernel.whitening_ = block_diag(*[inverse_root(m) for m in matrices])
    elif kernel.whitening_ is not None:
        kernel.whitening_ = kernel.whitening_[np.ix_(features, features)]
    if kernel.normalize == "standardize":
        kernel.mean_, kernel.scale_ = kernel.mean_[features], kernel.scale_[features]
    if kernel.block_scale_ is not None:
        kernel.block_scale_ = kernel.block_scale_[features]


@pytest.mark.parametrize("information, normalize", [("complete", "blocks"), ("complete", None),
                                                    ("identity", None), ("identity", "standardize"),
                                                    ("empirical", "l2"), ("empirical", "blocks")])
def test_permuting_hidden_states_leaves_the_kernel_unchanged(groups, information, normalize):
    sequences, _ = groups
    # Invariance holds at any parameters, not only at convergence: a few EM iterations suffice.
    kernel = HMMFisherKernel(n_states=3, n_init=1, information=information, normalize=normalize, n_iter=8,
                             random_state=0).fit(sequences[:10])
    gram = kernel.gram(sequences[:6])
    _relabel(kernel, np.array([2, 0, 1]))
    np.testing.assert_allclose(kernel.gram(sequences[:6]), gram, rtol=1e-8, atol=1e-10 * np.abs(gram).max())
    assert np.allclose(gram, gram.T) and np.linalg.eigvalsh(gram).min() > -1e-8 * np.abs(gram).max()


@pytest.mark.slow
@pytest.mark.parametrize("information, normalize", [("identity", "standardize"), ("empirical", None)])
def test_kernel_separates_groups_that_differ_only_in_persistence(groups, information, normalize):
    sequences, labels = groups
    kernel = HMMFisherKernel(n_states=3, parameters=["transmat"], information=information, normalize=normalize,
                             n_init=2, random_state=0).fit(sequences)
    gram = kernel.gram(sequences)
    accuracy = cross_val_score(SVC(kernel="precomputed"), gram, labels,
                               cv=StratifiedKFold(5, shuffle=True, random_state=0)).mean()
    assert accuracy >= 0.85


def test_sequences_as_one_array_with_lengths_and_errors(groups):
    sequences, _ = groups
    kernel = HMMFisherKernel(n_states=2, covariance_type="diag", n_init=1, random_state=0).fit(sequences[:4])
    stacked = np.vstack(sequences[:4])
    np.testing.assert_allclose(kernel.transform(stacked, lengths=[len(s) for s in sequences[:4]]),
                               kernel.transform(sequences[:4]))
    with pytest.raises(ValueError, match="lengths"):
        kernel.transform(stacked, lengths=[5])
    with pytest.raises(ValueError, match="`information` must be one of"):
        HMMFisherKernel(information="exact").fit(sequences[:2])
    with pytest.raises(ValueError, match="channels"):
        kernel.transform([np.zeros((10, 3))])
    for bad, lengths, what in (([np.array([[1.0], ["z"]], dtype=object)], None, "Sequence 0"),
                               (np.array([[1.0], [2.0], ["q"]], dtype=object), [3], "The sequences' array")):
        with pytest.raises(ValueError, match=rf"{what} holds a value that is not a number \('[zq]'\); the HMM "
                                             "kernel needs real-valued observations"):
            kernel.transform(bad, lengths=lengths)  # was numpy's "could not convert string to float"


def test_hmm_kernel_cli(tmp_path, groups):
    from bnfisher.cli import main

    sequences, _ = groups
    archive = tmp_path / "sequences.npz"
    np.savez(archive, *sequences[:6])
    output = tmp_path / "K.npy"
    assert main(["hmm-kernel", str(archive), "-o", str(output), "--n-states", "2", "--n-init", "1"]) == 0
    gram = np.load(output)
    assert gram.shape == (6, 6) and np.allclose(gram, gram.T)


def test_batched_forward_backward_equals_one_sequence_at_a_time():
    rng = np.random.default_rng(8)
    params = _parameters(rng)
    batch = np.stack([_sample(rng, *params, T=80) for _ in range(4)])
    log_likelihood, gamma, xi_sum = forward_backward(batch, *params)
    for b in range(4):
        single = forward_backward(batch[b], *params)
        assert log_likelihood[b] == pytest.approx(single[0], rel=1e-12)
        np.testing.assert_allclose(gamma[b], single[1], atol=1e-12)
        np.testing.assert_allclose(xi_sum[b], single[2], atol=1e-10)


@pytest.mark.slow
def test_complete_information_equals_the_monte_carlo_covariance_of_complete_data_scores():
    """Simulate states and observations; the covariance of the complete-data scores is the information."""
    from bnfisher.hmm.scores import complete_information, scores_from_statistics

    rng = np.random.default_rng(3)
    startprob, transmat, means, covariances = _parameters(rng, K=2, D=2)
    T, n = 30, 6000
    scores, occupancy, visits = [], np.zeros(2), np.zeros(2)
    for _ in range(n):
        states = np.empty(T, dtype=int)
        states[0] = rng.choice(2, p=startprob)
        for t in range(1, T):
            states[t] = rng.choice(2, p=transmat[states[t - 1]])
        X = means[states] + np.einsum("tij,tj->ti", np.linalg.cholesky(covariances)[states], rng.normal(size=(T, 2)))
        gamma = np.eye(2)[states]  # the states are observed: one-hot posteriors
        xi_sum = np.zeros((2, 2))
        np.add.at(xi_sum, (states[:-1], states[1:]), 1.0)
        residual = X[:, None, :] - means  # (T, K, D)
        stats = {"first": gamma[:1], "xi": xi_sum[None], "occupancy": gamma.sum(axis=0)[None],
                 "m1": np.einsum("tk,tkd->kd", gamma, residual)[None],
                 "m2": np.einsum("tk,tkd,tke->kde", gamma, residual, residual)[None]}
        scores.append(scores_from_statistics(stats, startprob, transmat, means, covariances, "full",
                                              ("startprob", "transmat", "means", "covars"), "logit")[0])
        occupancy += gamma.sum(axis=0) / n
        visits += gamma[:-1].sum(axis=0) / n
    empirical = np.cov(np.array(scores).T)
    blocks = complete_information(startprob, transmat, covariances, occupancy, visits)
    start = 0
    for block in blocks:
        size = block.shape[0]
        part = empirical[start : start + size, start : start + size]
        np.testing.assert_allclose(part, block, atol=0.08 * np.abs(block).max())
        start += size
    assert start == empirical.shape[0]


def test_fewer_sequences_than_features_do_not_blow_up(groups):
    sequences, _ = groups
    train, test = sequences[:8], sequences[20:28]
    for information in ("complete", "empirical"):
        with pytest.warns(UserWarning) if information == "empirical" else _no_warning():
            kernel = HMMFisherKernel(n_states=3, information=information, normalize=None, n_init=1,
                                     random_state=0).fit(train)
        ratio = np.median(np.diag(kernel.gram(test))) / np.median(np.diag(kernel.gram(train)))
        assert 0.1 < ratio < 10, (information, ratio)


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


def test_a_start_that_collapses_a_state_is_rejected_not_raised():
    """Two far outliers attract a state in some starts (a singular covariance); those starts are rejected."""
    rng = np.random.default_rng(1)
    sequences = [rng.normal(size=(200, 2)) for _ in range(4)]
    sequences[0][50] = [40.0, 40.0]
    sequences[1][70] = [40.0, -40.0]
    with pytest.warns(UserWarning, match="collapsed"):  # every start puts a state on the outliers
        kernel = HMMFisherKernel(n_states=3, n_init=6, random_state=0).fit(sequences)
    assert np.isfinite(kernel.log_likelihood_)
    assert np.all(np.isfinite(kernel.transform(sequences)))
    assert np.linalg.eigvalsh(kernel.covariances_).min() > 0  # floored, not singular
    # Without the outliers' pull (2 states), no start collapses and none is reported.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        two = HMMFisherKernel(n_states=2, n_init=3, random_state=0).fit([s[:40] for s in sequences[2:]])
    assert two.occupancy_.min() * 2 >= 3
    assert kernel.log_likelihood_ == pytest.approx(kernel.score_sequences(sequences).sum(), rel=1e-8)
    raw = HMMFisherKernel(n_states=3, n_init=2, form="raw", information="identity", random_state=0).fit(sequences)
    assert np.all(np.isfinite(raw.transform(sequences)))


@pytest.mark.slow
def test_the_default_kernel_detects_a_small_persistence_difference():
    """0.95 against 0.90 self-transition, everything else equal: the default kernel separates the groups."""
    rng = np.random.default_rng(11)
    means = rng.normal(size=(3, 3))
    covariances = np.stack([np.eye(3)] * 3)
    sequences, labels = [], []
    for label, stay in enumerate((0.95, 0.90)):
        transmat = np.full((3, 3), (1 - stay) / 2) + np.eye(3) * (stay - (1 - stay) / 2)
        for _ in range(20):
            sequences.append(_sample(rng, np.full(3, 1 / 3), transmat, means, covariances, 800))
            labels.append(label)
    labels = np.array(labels)
    accuracies = []
    for information in ("complete", "identity"):
        options = {} if information == "complete" else {"information": "identity", "normalize": None}
        kernel = HMMFisherKernel(n_states=3, n_init=2, random_state=0, **options).fit(sequences)
        accuracies.append(cross_val_score(SVC(kernel="precomputed"), kernel.gram(sequences), labels,
                                          cv=StratifiedKFold(5, shuffle=True, random_state=0)).mean())
    assert accuracies[0] >= 0.8 and accuracies[0] > accuracies[1]


def test_complete_information_needs_the_logit_form(groups):
    sequences, _ = groups
    with pytest.raises(ValueError, match="form='logit'"):
        HMMFisherKernel(form="raw", n_init=1).fit(sequences[:2])


@pytest.mark.parametrize("chunk_bytes", [64 << 20, 8 * 3 * 50])
def test_ragged_sequences_in_one_pass_equal_hmmlearn_sequence_by_sequence(chunk_bytes):
    """Lengths 2..400 batched together (and in chunks smaller than one sequence) against hmmlearn's posteriors."""
    from bnfisher.hmm._forward_backward import sequence_statistics

    rng = np.random.default_rng(11)
    params = _parameters(rng, K=3, D=2)
    parts = [_sample(rng, *params, T=T) for T in (2, 400, 37, 3, 150)]
    model = GaussianHMM(n_components=3, covariance_type="full", implementation="scaling", init_params="",
                        params="")
    model.startprob_, model.transmat_, model.means_, model.covars_ = params
    stats = sequence_statistics(parts, *params, posteriors=True, chunk_bytes=chunk_bytes)
    start = 0
    for i, X in enumerate(parts):
        log_likelihood, gamma = model.score_samples(X)
        assert stats["log_likelihood"][i] == pytest.approx(log_likelihood, rel=1e-10)
        np.testing.assert_allclose(stats["gamma"][start : start + len(X)], gamma, atol=1e-9)
        np.testing.assert_allclose(stats["first"][i], gamma[0], atol=1e-9)
        np.testing.assert_allclose(stats["occupancy"][i], gamma.sum(axis=0), atol=1e-8)
        residual = X[:, None, :] - params[2]  # (T, K, D), moments from hmmlearn's posteriors
        np.testing.assert_allclose(stats["m1"][i], np.einsum("tk,tkd->kd", gamma, residual), atol=1e-8)
        np.testing.assert_allclose(stats["m2"][i], np.einsum("tk,tkd,tke->kde", gamma, residual, residual),
                                   atol=1e-7)
        # expected transitions from the definition: alpha_t(i) A_ij b_{t+1}(j) beta_{t+1}(j) / p(x), by brute force
        if len(X) <= 3:
            from itertools import product

            density = np.exp(log_emissions(X, params[2], params[3]))
            xi = np.zeros((3, 3))
            for path in product(range(3), repeat=len(X)):
                p = params[0][path[0]] * np.prod([params[1][a, b] for a, b in zip(path, path[1:])])
                p *= np.prod(density[np.arange(len(X)), path])
                for a, b in zip(path, path[1:]):
                    xi[a, b] += p
            np.testing.assert_allclose(stats["xi"][i], xi / np.exp(log_likelihood), atol=1e-10)
        start += len(X)


def test_transform_of_a_ragged_collection_equals_one_sequence_at_a_time(groups):
    sequences, _ = groups
    kernel = HMMFisherKernel(n_states=3, n_init=1, n_iter=8, random_state=0).fit(sequences[:10])  # any parameters
    ragged = [s[: 50 + 40 * i] for i, s in enumerate(sequences[:5])]
    together = kernel.transform(ragged)
    one_by_one = np.vstack([kernel.transform([s]) for s in ragged])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-10, atol=1e-12)


def test_the_uncompiled_forward_backward_gives_the_compiled_result(monkeypatch):
    """The compiled loop and the same source run as plain Python give the same statistics."""
    from bnfisher.hmm import _forward_backward as engine

    rng = np.random.default_rng(12)
    params = _parameters(rng, K=3, D=2)
    parts = [_sample(rng, *params, T=T) for T in (30, 5)]
    compiled = engine.sequence_statistics(parts, *params, posteriors=True)  # the loop has no fallback: compiled
    compiled_pass = getattr(engine, "_pass")  # noqa: B009 - the module's private loop, swapped below
    monkeypatch.setattr(engine, "_pass", compiled_pass.py_func)
    plain = engine.sequence_statistics(parts, *params, posteriors=True)
    for key, value in compiled.items():
        np.testing.assert_allclose(plain[key], value, rtol=1e-12, atol=1e-12)


def test_a_start_is_abandoned_only_when_its_recent_gain_cannot_bring_it_near_the_leader():
    from bnfisher.hmm.starts import MARGIN, _hopeful, _Start

    start = _Start(model=None, history=[-130.0, -120.0, -110.0, -100.0])  # gaining 10 nats per iteration
    assert _hopeful(start, lead=-100.0 + 10 * 6 + MARGIN, window=3, n_iter=10)  # 6 iterations left: reaches it
    assert not _hopeful(start, lead=-100.0 + 10 * 6 + MARGIN + 1, window=3, n_iter=10)
    assert not _hopeful(_Start(model=None, history=[-5.0], failed=True), lead=-100.0, window=3, n_iter=10)


def test_abandoning_starts_saves_em_iterations_and_keeps_the_best_finished_start(monkeypatch):
    """Against running every start to the end: fewer EM iterations, the winner is a finished start, and every
    abandoned start had stopped below it."""
    from bnfisher.hmm.starts import _Fitter

    rng = np.random.default_rng(4)
    sequences = [np.concatenate([rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 3]) for _ in range(4)]
    iterations: dict = {}
    advance = _Fitter.advance

    def counting(self, start, budget):
        before = start.iterations
        advance(self, start, budget)
        iterations[self.key] = iterations.get(self.key, 0) + start.iterations - before

    monkeypatch.setattr(_Fitter, "advance", counting)
    fits = {}
    for check_every in (None, 2):
        monkeypatch.setattr(_Fitter, "key", check_every, raising=False)
        fits[check_every] = HMMFisherKernel(n_states=3, n_init=6, check_every=check_every, n_iter=30, tol=1e-6,
                                            random_state=0).fit(sequences)
    assert iterations[2] < iterations[None]
    raced = fits[2]
    assert raced.log_likelihood_ == max(raced.init_log_likelihoods_)
    assert len(raced.init_log_likelihoods_) == 6
    with pytest.raises(OptionError, match="check_every"):
        HMMFisherKernel(check_every=0).fit(sequences)
