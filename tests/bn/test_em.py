"""EM for parameters with missing values: monotone, closer to the truth than deletion, and equal to pyAgrum's EM."""

import itertools

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.bn.em import fit_em
from bnfisher.data.providers import NumpyCounts

from _helpers import bif_path, random_network


def _aligned(table, network, reference, v):
    """``table`` of ``network`` re-indexed to the parent order and state labels of ``reference``."""
    order = [network.parents[v].index(p) for p in reference.parents[v]] + [len(reference.parents[v])]
    table = np.transpose(np.asarray(table), order)
    for axis, name in enumerate(list(reference.parents[v]) + [v]):
        labels = [str(s) for s in network.states[name]]
        table = np.take(table, [labels.index(str(s)) for s in reference.states[name]], axis=axis)
    return table


def _weighted_kl(truth, estimate, network) -> float:
    """sum_i sum_j P(pi_i = j) KL(theta_ij || theta_hat_ij) under the true network."""
    marginals, _ = bf.parent_marginals(truth, "exact")
    total = 0.0
    for v in truth.variables:
        p = np.asarray(truth.cpts[v]).reshape(-1, len(truth.states[v]))
        q = _aligned(estimate.cpts[v], network, truth, v).reshape(p.shape)
        weight = np.asarray(marginals[v]).reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * np.log(p / q), 0.0)
        total += float(weight @ terms.sum(axis=1))
    return total


@pytest.mark.parametrize("pseudocount", [0.0, 1.0])
def test_em_never_decreases_its_objective(pseudocount):
    rng = np.random.default_rng(0)
    network = random_network(rng, n_vars=6, max_parents=2, max_states=3)
    frame = network.sample(2000, random_state=1).astype(object).mask(rng.random((2000, 6)) < 0.3)
    result = fit_em(frame, dict(network.parents), pseudocount=pseudocount)
    assert result.converged and result.n_missing > 0
    assert np.all(np.diff(result.objective) >= -1e-9 * np.abs(result.objective[-1]))


def test_em_on_complete_data_is_the_maximum_likelihood_estimate():
    network = random_network(np.random.default_rng(1), n_vars=4)
    frame = network.sample(500, random_state=0)
    result = fit_em(frame, dict(network.parents), pseudocount=1.0)
    direct = bf.BayesianNetwork.from_data(frame, dict(network.parents), pseudocount=1.0)
    for v in network.variables:
        np.testing.assert_allclose(result.network.cpts[v], direct.cpts[v], atol=1e-12)


@pytest.mark.slow
def test_em_is_closer_to_the_truth_than_deleting_rows_or_cells():
    """alarm, 20% of cells missing completely at random: EM < available-case < complete-case in KL."""
    truth = bf.read_bif(bif_path("alarm"))
    rng = np.random.default_rng(0)
    frame = truth.sample(20_000, random_state=0).astype(object)
    frame = frame.mask(rng.random(frame.shape) < 0.2)
    parents = dict(truth.parents)
    em = fit_em(frame, parents, pseudocount=1.0, tol=1e-7)
    schema = em.network.schema
    codes = schema.encode(frame, missing="allow")
    available = bf.BayesianNetwork.from_data(NumpyCounts(codes.codes, schema, missing="available-case"), parents,
                                             pseudocount=1.0)
    complete_rows = frame.dropna()
    assert len(complete_rows) < 100  # 0.8**37 of the rows: complete-case analysis throws almost everything away
    complete = bf.BayesianNetwork.from_data(schema.encode(complete_rows), parents, pseudocount=1.0)
    kl = {name: _weighted_kl(truth, model, model) for name, model in
          [("em", em.network), ("available", available), ("complete", complete)]}
    assert kl["em"] < kl["available"] < kl["complete"], kl


@pytest.mark.slow
def test_em_equals_pyagrums_em(tmp_path):
    gum = pytest.importorskip("pyagrum")
    from bnfisher.bn.formats.interop import from_pyagrum, to_pyagrum

    truth = bf.read_bif(bif_path("asia"))
    rng = np.random.default_rng(0)
    frame = truth.sample(3000, random_state=0).astype(str)
    frame = frame.mask(rng.random(frame.shape) < 0.2, "?")
    path = tmp_path / "asia.csv"
    frame.to_csv(path, index=False)
    learner = gum.BNLearner(str(path), to_pyagrum(truth), ["?"])
    learner.useEMWithDiffCriterion(1e-9)
    learner.useNoPrior()
    theirs = from_pyagrum(learner.learnParameters(to_pyagrum(truth).dag()))
    ours = fit_em(frame.replace("?", np.nan), dict(truth.parents), pseudocount=0.0, tol=1e-12, max_iter=1000)
    for v in truth.variables:
        # Both converged tightly: 1.1e-6 apart at most (pyAgrum 2.x); the tolerance is ten times that.
        np.testing.assert_allclose(_aligned(ours.network.cpts[v], ours.network, theirs, v), theirs.cpts[v],
                                   atol=1e-5)


def test_em_refuses_hidden_variables_for_now():
    frame = pd.DataFrame({"a": list("xyxy")})
    with pytest.raises(bf.BnfisherError, match="absent from the data"):
        fit_em(frame, {"a": ["h"], "h": []})


@pytest.mark.parametrize("structure", ["chow-liu", "hc", "tan",
                                       pytest.param("kdb", marks=pytest.mark.slow)])  # KDB's cliques: 20k cells
@pytest.mark.slow
def test_learn_with_missing_values_reports_and_stays_close_to_the_complete_data_structure(structure):
    truth = bf.read_bif(bif_path("alarm"))
    frame = truth.sample(5000, random_state=0).astype(object)
    options = {"class_variable": "CVP"} if structure in ("tan", "kdb") else {}
    if structure == "kdb":
        options["k"] = 1  # k = 3 makes junction-tree cliques of 20,736 cells: minutes per EM iteration
    complete = bf.learn(frame, structure, **options)
    holed = frame.mask(np.random.default_rng(0).random(frame.shape) < 0.2)
    with pytest.raises(bf.BnfisherError, match='missing value.*missing="em"'):
        bf.learn(holed, structure, missing="error", **options)
    learned = bf.learn(holed, structure, **options)  # missing="auto": EM, because cells are missing
    report = learned.learning_
    assert report["missing"] == "em" and report["n_missing_cells"] == int(holed.isna().sum().sum())
    assert report["em_converged"]
    common = len(set(complete.edges) & set(learned.edges))
    assert common >= 0.5 * len(complete.edges)
    assert len(learned.edges) <= 1.5 * len(complete.edges)
    available = bf.learn(holed, structure, missing="available-case", **options)
    assert available.learning_["missing"] == "available-case"


def test_structural_em_reports_what_its_search_did():
    """learning_ of structural EM keeps the last round's search report beside EM's (max_candidates for hc, the
    optimum for exact), as learning without missing cells does."""
    from bnfisher.datasets import load

    frame = load("nursery").iloc[::6, :6].astype(object)
    holed = frame.mask(np.random.default_rng(1).random(frame.shape) < 0.05)
    hc = bf.learn(holed, "hc", missing="em", max_candidates=2).learning_
    assert hc["missing"] == "em" and hc["max_candidates"] == 2 and "sem_rounds" in hc
    exact = bf.learn(holed, "exact", missing="em").learning_
    assert exact["structure"] == "exact" and np.isfinite(exact["optimum"]) and exact["sem_rounds"] >= 1


def test_hidden_variables_are_fitted_by_em_and_marginalized_by_the_kernel(tmp_path):
    truth = bf.BayesianNetwork(
        {"A": ["H"], "B": ["H"], "C": ["H"]},
        {"H": [0.4, 0.6], "A": [[0.8, 0.1, 0.1], [0.1, 0.2, 0.7]], "B": [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]],
         "C": [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]},
        {"H": [0, 1], "A": list("xyz"), "B": list("xyz"), "C": list("xyz")})
    frame = truth.sample(5000, random_state=0).drop(columns="H")
    with pytest.raises(bf.BnfisherError, match="declare them in `hidden`"):
        fit_em(frame, dict(truth.parents))
    network = bf.learn(frame, dict(truth.parents), hidden={"H": 2}, random_state=0)
    assert network.learning_["em_converged"] and network.schema.hidden == ("H",)
    # The distribution of what is observed matches the truth (hidden labels are arbitrary).
    grid = pd.DataFrame(list(itertools.product("xyz", repeat=3)), columns=list("ABC"))
    observed = {}
    for model in (truth, network):
        joint = np.zeros(len(grid))
        for h in model.states["H"]:
            joint += np.exp(model.log_likelihood(grid.assign(H=h)))
        observed[model] = joint
    assert np.abs(observed[truth] - observed[network]).sum() / 2 < 0.03  # total variation
    # The kernel marginalizes the hidden variable in every row; the schema keeps it hidden through BIF and JSON.
    kernel = bf.FisherKernel(network)
    gram = kernel.gram(frame.iloc[:20])
    np.testing.assert_allclose(gram, gram.T)
    assert np.all(np.linalg.eigvalsh(gram) > -1e-8)
    again = bf.parse_bif(bf.write_bif(network))
    assert again.schema.hidden == ("H",) and bf.Schema.from_json(network.schema.to_json()).hidden == ("H",)
    np.testing.assert_allclose(bf.FisherKernel(again).gram(frame.iloc[:20]), gram, rtol=1e-9)


@pytest.mark.slow
def test_structural_em_recovers_the_structure_better_than_available_case_counts():
    truth = bf.read_bif(bif_path("alarm"))
    frame = truth.sample(5000, random_state=0).astype(object)
    holed = frame.mask(np.random.default_rng(0).random(frame.shape) < 0.2)

    def distance(network) -> int:
        """Structural Hamming distance to the true DAG: missing, extra and reversed arcs."""
        ours, true = set(network.edges), set(truth.edges)
        skeleton = {frozenset(e) for e in ours} ^ {frozenset(e) for e in true}
        return len(skeleton) + sum((child, parent) in true for parent, child in ours)

    available = bf.learn(holed, "hc", missing="available-case")
    structural = bf.learn(holed, "hc", missing="em")
    report = structural.learning_
    assert report["sem_converged"] and report["sem_rounds"] >= 1 and len(report["arcs_per_round"]) >= 1
    assert distance(structural) < distance(available)


def test_a_warm_start_from_the_fixed_point_stays_there():
    """EM started from its own converged CPTs stops at once with the same CPTs and objective; a family whose
    parents differ in the warm start starts from available-case counts instead."""
    rng = np.random.default_rng(2)
    network = random_network(rng, n_vars=5, max_parents=2, max_states=3)
    frame = network.sample(1500, random_state=3).astype(object).mask(rng.random((1500, 5)) < 0.2)
    parents = dict(network.parents)
    cold = fit_em(frame, parents, tol=1e-12, max_iter=500)
    warm = fit_em(frame, parents, tol=1e-9, warm_start=cold.network)
    assert warm.n_iter <= 2 and warm.objective[0] == pytest.approx(cold.objective[-1], rel=1e-12)
    for v in network.variables:
        np.testing.assert_allclose(warm.network.cpts[v], cold.network.cpts[v], atol=1e-6)
    other = dict(parents, X4=())  # X4's family differs: not taken from the warm start
    mixed = fit_em(frame, other, max_iter=1, warm_start=cold.network)
    assert mixed.objective[0] != pytest.approx(cold.objective[-1], rel=1e-9)


def test_structural_em_that_cycles_stops_and_keeps_the_cycles_best_structure(monkeypatch):
    """Rounds that cycle through structures stop at the first repeat, without a ConvergenceWarning, and return
    the cycle's structure with the highest observed-data BIC (computed here from each structure's own EM fit)."""
    import importlib
    import warnings

    learn_module = importlib.import_module("bnfisher.bn.structure.learn")
    real = learn_module._structure_parents  # noqa: SLF001 - the rounds are replaced to make them cycle

    network = bf.read_bif(bif_path("asia"))
    data = network.sample(2000, random_state=0)
    data = data.mask(np.random.default_rng(0).random(data.shape) < 0.1)
    variables = list(network.variables)
    sparse = {v: () for v in variables}
    dense = dict(network.parents)
    medium = {v: tuple(ps[:1]) for v, ps in dense.items()}  # one parent each at most
    calls, proposed = [], []

    def alternating(provider, structure, options):
        """The start structure as learned; then the rounds cycle: sparse, dense, medium, sparse, ..."""
        calls.append(structure)
        if len(calls) == 1:
            return real(provider, structure, options)
        parents = (sparse, dense, medium)[len(proposed) % 3]  # then sparse again: a cycle of three
        proposed.append(parents)
        return [tuple(variables.index(p) for p in parents[v]) for v in variables], {}

    monkeypatch.setattr(learn_module, "_structure_parents", alternating)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bf.ConvergenceWarning)
        learned = bf.learn(data, "chow-liu", missing="em")
    assert learned.learning_["sem_converged"] and learned.learning_["sem_cycle"] == 3
    candidates = [fit_em(data, {v: tuple(p) for v, p in parents.items()}) for parents in (sparse, dense, medium)]
    bic = [c.objective[-1] - 0.5 * np.log(len(data)) * c.network.n_parameters for c in candidates]
    best = (sparse, dense, medium)[int(np.argmax(bic))]
    # Neither the last structure fitted nor the repeated one is the best: keeping either would fail here.
    assert proposed[-2] is not best and proposed[-1] is not best
    assert {v: set(p) for v, p in learned.parents.items()} == {v: set(best[v]) for v in variables}
