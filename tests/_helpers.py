"""Independent reference computations for the tests (brute force from definitions)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from bnfisher import BayesianNetwork

#: Networks shipped with the tests (gzip-compressed BIF; attribution in data/bif/README.md).
#: The tests' data files (tests/fixtures/README.md says where each comes from).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BIF_DIR = FIXTURES / "bif"


def bif_path(name: str) -> Path:
    """Path of a shipped network, e.g. ``bif_path("alarm")``."""
    return BIF_DIR / f"{name}.bif.gz"


def random_network(rng: np.random.Generator, n_vars: int = 4, max_parents: int = 2, max_states: int = 3,
                   min_states: int = 2, concentration: float = 1.0, floor: float = 1e-3) -> BayesianNetwork:
    """A random DAG over X0..X{n-1} (parents among earlier variables) with Dirichlet CPTs."""
    names = [f"X{i}" for i in range(n_vars)]
    cards = rng.integers(min_states, max_states + 1, size=n_vars)
    parents, cpts, states = {}, {}, {}
    for i, v in enumerate(names):
        k = int(rng.integers(0, min(i, max_parents) + 1))
        ps = sorted(rng.choice(i, size=k, replace=False).tolist()) if k else []
        rng.shuffle(ps)  # parents in arbitrary listed order
        parents[v] = [names[p] for p in ps]
        shape = tuple(int(cards[p]) for p in ps) + (int(cards[i]),)
        cpts[v] = rng.dirichlet(np.full(shape[-1], concentration), size=shape[:-1]).reshape(shape)
        cpts[v] = np.clip(cpts[v], floor, None)
        cpts[v] /= cpts[v].sum(axis=-1, keepdims=True)
        states[v] = [f"s{k}" for k in range(int(cards[i]))]
    return BayesianNetwork(parents, cpts, states)


def all_configurations(network: BayesianNetwork) -> np.ndarray:
    """Every joint configuration, as codes in ``network.variables`` order."""
    return np.array(list(itertools.product(*(range(r) for r in network.cardinalities))), dtype=np.intp)


def joint_probabilities(network: BayesianNetwork, configurations: np.ndarray) -> np.ndarray:
    """P(x) for each configuration by the chain rule, one row at a time (no bnfisher code)."""
    index = {v: i for i, v in enumerate(network.variables)}
    probabilities = np.ones(len(configurations))
    for row, x in enumerate(configurations):
        for v in network.variables:
            position = tuple(x[index[p]] for p in network.parents[v]) + (x[index[v]],)
            probabilities[row] *= network.cpts[v][position]
    return probabilities


def brute_force_marginal(network: BayesianNetwork, variables) -> np.ndarray:
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    index = {v: i for i, v in enumerate(network.variables)}
    shape = tuple(len(network.states[v]) for v in variables)
    table = np.zeros(shape)
    for x, p in zip(configurations, probabilities):
        table[tuple(x[index[v]] for v in variables)] += p
    return table


def theorem1_kernel(network: BayesianNetwork, marginals: dict, x: np.ndarray, y: np.ndarray) -> float:
    """Eq. 2 of the paper evaluated literally for one pair of rows."""
    index = {v: i for i, v in enumerate(network.variables)}
    total = 0.0
    for v in network.variables:
        px = tuple(x[index[p]] for p in network.parents[v])
        py = tuple(y[index[p]] for p in network.parents[v])
        if px != py:
            continue
        probability = float(np.asarray(marginals[v])[px]) if px else 1.0
        theta = network.cpts[v][px + (x[index[v]],)]
        total += ((1.0 / theta if x[index[v]] == y[index[v]] else 0.0) - 1.0) / probability
    return total


def theorem1_gram(network: BayesianNetwork, marginals: dict, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Eq. 2 for every pair of rows of ``X`` and ``Y`` at once: :func:`theorem1_kernel`, broadcast over pairs."""
    index = {v: i for i, v in enumerate(network.variables)}
    total = np.zeros((len(X), len(Y)))
    for v in network.variables:
        columns = [index[p] for p in network.parents[v]]
        same = np.all(X[:, None, columns] == Y[None, :, columns], axis=2) if columns else np.ones(total.shape, bool)
        px = tuple(X[:, c] for c in columns)
        probability = np.asarray(marginals[v])[px] if columns else np.ones(len(X))
        theta = np.asarray(network.cpts[v])[px + (X[:, index[v]],)]
        equal = X[:, None, index[v]] == Y[None, :, index[v]]
        total += same * (np.where(equal, 1.0 / theta[:, None], 0.0) - 1.0) / probability[:, None]
    return total


def _free_parameters(network: BayesianNetwork) -> list:
    """(variable, parent configuration, state k < r) for every free parameter."""
    out = []
    for v in network.variables:
        table = network.cpts[v]
        for position in itertools.product(*(range(s) for s in table.shape[:-1])):
            for k in range(table.shape[-1] - 1):
                out.append((v, position, k))
    return out


def _log_likelihood_complex(network: BayesianNetwork, parameters: list, values: np.ndarray, x: np.ndarray):
    """log P(x; theta) with theta given by the free-parameter vector (complex allowed), eq. 1/7."""
    tables = {v: np.array(network.cpts[v], dtype=complex) for v in network.variables}
    for (v, position, k), value in zip(parameters, values):
        tables[v][position + (k,)] = value
    for v in network.variables:  # theta_ijr = 1 - sum_{k<r} theta_ijk
        tables[v][..., -1] = 1.0 - tables[v][..., :-1].sum(axis=-1)
    index = {v: i for i, v in enumerate(network.variables)}
    total = 0.0 + 0.0j
    for v in network.variables:
        position = tuple(x[index[p]] for p in network.parents[v]) + (x[index[v]],)
        total += np.log(tables[v][position])
    return total


def complex_step_scores(log_likelihood, theta: np.ndarray, rows) -> np.ndarray:
    """Score vectors d/dtheta log_likelihood(theta, x) of every row, by complex-step differentiation."""
    step = 1e-30
    scores = np.zeros((len(rows), len(theta)))
    for row, x in enumerate(rows):
        for p in range(len(theta)):
            shifted = theta.astype(complex)
            shifted[p] += 1j * step
            scores[row, p] = log_likelihood(shifted, x).imag / step
    return scores


def fisher_kernel_from_definition(network: BayesianNetwork, information: str = "fisher"):
    """K = S I^{-1} S^T over all configurations, with the score from complex-step
    differentiation of the log-likelihood and I = E[s s^T] by enumeration."""
    parameters = _free_parameters(network)
    theta = np.array([network.cpts[v][position + (k,)] for v, position, k in parameters])
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    scores = complex_step_scores(lambda values, x: _log_likelihood_complex(network, parameters, values, x), theta,
                                 configurations)
    if information == "identity":
        return configurations, scores @ scores.T
    information_matrix = (scores * probabilities[:, None]).T @ scores
    return configurations, scores @ np.linalg.solve(information_matrix, scores.T)


def hessian_information(network: BayesianNetwork) -> np.ndarray:
    """-E[d^2 log P / d theta^2] by central differences of the complex-step score."""
    parameters = _free_parameters(network)
    theta = np.array([network.cpts[v][position + (k,)] for v, position, k in parameters])
    configurations = all_configurations(network)
    probabilities = joint_probabilities(network, configurations)
    m = len(parameters)

    def score(values, x):
        out = np.zeros(m)
        for p in range(m):
            shifted = values.astype(complex)
            shifted[p] += 1j * 1e-30
            out[p] = _log_likelihood_complex(network, parameters, shifted, x).imag / 1e-30
        return out

    information = np.zeros((m, m))
    h = 1e-6
    for x, probability in zip(configurations, probabilities):
        for q in range(m):
            up, down = theta.copy(), theta.copy()
            up[q] += h
            down[q] -= h
            information[:, q] -= probability * (score(up, x) - score(down, x)) / (2 * h)
    return information


def pyagrum_hill_climb(frame, threads: int | None = None) -> tuple[dict, float]:
    """pyAgrum's greedy hill climbing with BIC (no prior) on ``frame``.

    Returns the parent sets ``{variable: [parents]}`` and the seconds ``learnDAG`` took.
    """
    import tempfile
    import time

    import pyagrum as gum

    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as handle:
        frame.astype(str).to_csv(handle, index=False)
    learner = gum.BNLearner(handle.name)
    learner.useGreedyHillClimbing()
    learner.useScoreBIC()
    learner.useNoPrior()
    if threads is not None:
        learner.setNumberOfThreads(threads)
    start = time.perf_counter()
    dag = learner.learnDAG()
    elapsed = time.perf_counter() - start
    names = {learner.idFromName(c): c for c in frame.columns}
    return {names[n]: [names[p] for p in dag.parents(n)] for n in dag.nodes()}, elapsed


def embedding_greedy(features, start, tol=1e-10):
    """Algorithm 1 on the N x sum(r_i) embedding: one sparse mat-vec per kernel column (the first round's search).

    An independent reference for :func:`bnfisher.select_representatives`, which works from integer codes
    on distinct rows: both must pick the same rows. Returns (sorted rows, final value, sweeps).
    """
    import scipy.sparse as sp

    features = sp.csr_matrix(features)
    n, k = features.shape[0], len(start)
    target = np.asarray(features.mean(axis=0)).ravel()
    diagonal = np.asarray(features.multiply(features).sum(axis=1)).ravel()
    scale = float(diagonal.mean())
    S = np.sort(np.asarray(start)).copy()
    member = np.zeros(n, dtype=bool)
    member[S] = True

    def state(subset):
        delta = np.asarray(features[subset].mean(axis=0)).ravel() - target
        return delta, features @ delta, float(delta @ delta)

    def column(row):
        return features @ features[row].toarray().ravel()

    delta, inner, current = state(S)
    sweeps = 0
    while True:
        sweeps += 1
        swapped = 0
        for position in range(k):
            i = S[position]
            col = column(i)
            values = current + (2.0 / k) * (inner - inner[i]) + (diagonal - 2 * col + diagonal[i]) / k**2
            values[member] = np.inf
            best = values.min()
            if best < current - (tol * max(abs(current), scale) + 1e-300):
                j = int(np.flatnonzero(values <= best + 1e-12 * abs(best) + 1e-300)[0])
                delta = delta + (features[j].toarray().ravel() - features[i].toarray().ravel()) / k
                inner = inner + (column(j) - col) / k
                member[i], member[j] = False, True
                S[position] = j
                current = float(values[j])
                swapped += 1
        delta, inner, current = state(S)
        if swapped == 0:
            return np.sort(S), current, sweeps


def wide_frame(n_vars: int, n_rows: int, seed: int = 0):
    """Binary columns, each a noisy OR (15% of values flipped) of up to two random earlier columns (a wide table)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    data = np.empty((n_rows, n_vars), dtype=np.int8)
    data[:, 0] = rng.integers(0, 2, n_rows)
    for j in range(1, n_vars):
        chosen = rng.choice(j, size=min(int(rng.integers(0, 3)), j), replace=False)
        value = data[:, chosen].max(axis=1) if chosen.size else rng.integers(0, 2, n_rows)
        data[:, j] = np.where(rng.random(n_rows) < 0.15, 1 - value, value)
    return pd.DataFrame(data, columns=[f"V{j}" for j in range(n_vars)])


def mutate_bytes(data: bytes, rng: np.random.Generator, tokens: list, *, hostile: bool = False) -> bytes:
    """1-4 byte or token mutations at uniformly random places: flip, cut, insert a token, delete, duplicate.

    ``hostile`` adds a sixth: a token repeated 100-5,000 times (readers must stay linear), and duplicates a random
    stretch of 1-80 bytes rather than the rest of the line.
    """
    data = bytearray(data)
    actions = ["flip", "truncate", "insert", "delete", "duplicate"] + (["repeat"] if hostile else [])
    for _ in range(int(rng.integers(1, 5))):
        if not data:
            break
        action = rng.choice(actions)
        position = int(rng.integers(0, len(data)))
        if action == "flip":
            data[position] = int(rng.integers(0, 256))
        elif action == "truncate":
            del data[position:]
        elif action == "insert":
            data[position:position] = tokens[int(rng.integers(len(tokens)))]
        elif action == "delete":
            del data[position:position + int(rng.integers(1, 40))]
        elif action == "duplicate" and hostile:
            data[position:position] = data[position:position + int(rng.integers(1, 80))]
        elif action == "duplicate":
            end = data.find(b"\n", position)
            data[position:position] = data[position:end if end > 0 else position + 20]
        else:
            data[position:position] = tokens[int(rng.integers(len(tokens)))] * int(rng.integers(100, 5000))
    return bytes(data)


def fuzz_settings(default_examples: int):
    """Hypothesis settings of the fuzz modules: ``BNFISHER_FUZZ_EXAMPLES`` examples (else the default), reproducible."""
    import os

    from hypothesis import HealthCheck, settings

    return settings(max_examples=int(os.environ.get("BNFISHER_FUZZ_EXAMPLES", str(default_examples))), deadline=None,
                    derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                             HealthCheck.function_scoped_fixture])


def report_fuzz_counts(outcomes: dict) -> None:
    """Add a fuzz module's counts to ``BNFISHER_FUZZ_REPORT``, when set (the module's teardown calls it)."""
    import os

    path = os.environ.get("BNFISHER_FUZZ_REPORT")
    if path:
        add_fuzz_counts(path, outcomes)


def add_fuzz_counts(path: str, outcomes: dict) -> None:
    """Add a fuzz module's outcome counts to the JSON report at ``path`` (under a lock: xdist workers share it)."""
    import collections
    import fcntl
    import json
    import os

    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = {}
        if os.path.exists(path):
            with open(path) as handle:
                found = json.load(handle)
        for kind, counts in outcomes.items():
            merged = collections.Counter(found.get(kind, {}))
            merged.update(counts)
            found[kind] = dict(merged)
        with open(path, "w") as handle:
            json.dump(found, handle, indent=1)


#: A PostgreSQL server's URL for the store's tests (.ci/run starts one and sets it), or None.
POSTGRES = __import__("os").environ.get("BNFISHER_TEST_POSTGRES")


def postgres_database(password: str | None = None):
    """Yield the URL of a fresh PostgreSQL database on :data:`POSTGRES`'s server, dropped afterwards.

    With ``password`` the URL carries it (the test server trusts local users and ignores it).
    """
    import uuid

    import psycopg

    name = f"bnfisher_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = POSTGRES.replace("/bnfisher_test", f"/{name}")
    yield url.replace("postgresql://postgres@", f"postgresql://postgres:{password}@") if password else url
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
