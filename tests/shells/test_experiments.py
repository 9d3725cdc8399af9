import numpy as np
import pandas as pd
import pytest

from bnfisher import BayesianNetwork
from bnfisher.cli import main
from bnfisher.datasets import DATASETS, load, train_test_split
from bnfisher.experiments import run_summarization
from bnfisher.experiments.report import summarize_claims


@pytest.mark.parametrize("name, shape", [("letter", (20000, 17)), ("nursery", (12960, 9)),
                                         ("waveform-5000", (5000, 41))])
def test_loaders_return_documented_shapes_and_binned_categoricals(name, shape):
    data = load(name)
    assert data.shape == shape == DATASETS[name][1]
    assert data.columns[-1] == "class"
    assert all(isinstance(data[c].dtype, pd.CategoricalDtype) for c in data.columns)
    features = [c for c in data.columns if c != "class"]
    assert max(len(data[c].cat.categories) for c in features) <= (5 if name == "nursery" else 4)
    assert not data.isna().any().any()


def test_split_is_seeded_and_halves_keep_every_category():
    data = load("nursery")
    train, test = train_test_split(data, random_state=3)
    again, _ = train_test_split(data, random_state=3)
    assert train.index.equals(again.index)
    assert len(train) == len(test) == 6480 and not set(train.index) & set(test.index)
    network = BayesianNetwork.from_data(train.iloc[:50], {"class": ["health"]})
    assert network.states["class"] == tuple(data["class"].cat.categories)  # unseen states kept
    assert np.all(np.isfinite(network.log_likelihood(test)))


@pytest.mark.parametrize("model", ["hc", "tan"])
def test_small_experiment_runs_and_full_refit_reproduces_the_reference(model):
    outcome = run_summarization("nursery", model, sizes=[50], n_random=20, seed=0)
    results = outcome.results
    metrics = ["nll"] if model == "hc" else ["error", "logloss"]
    assert len(results) == 1 + 20 + 4  # full, 20 random, 4 greedy criteria
    assert set(results["method"]) == {"full", "random", "greedy-mmd", "greedy-chi2", "greedy-mmd-identity",
                                      "greedy-mmd-overlap"}
    assert np.all(np.isfinite(results[metrics].to_numpy()))
    assert np.all(np.isfinite(results.loc[results["method"] != "full", ["mmd", "chi2"]].to_numpy()))
    # The greedy MMD subset has a lower MMD than the best random start it came from.
    random_best = results.loc[results["method"] == "random", "mmd"].min()
    assert results.loc[results["method"] == "greedy-mmd", "mmd"].iloc[0] <= random_best
    # Re-fitting on the whole training half with pseudocount 1 is the learned network itself.
    data = load("nursery")
    train, test = train_test_split(data, random_state=0)
    from bnfisher.experiments.summarization import _learn

    network = _learn(model, train)
    full = results[results["method"] == "full"].iloc[0]
    if model == "hc":
        assert full["nll"] == pytest.approx(-network.log_likelihood(test).mean(), rel=1e-10)
    else:
        from bnfisher.sklearn.classifier import BayesianNetworkClassifier

        clf = BayesianNetworkClassifier(structure="tan").fit(train.drop(columns="class"), train["class"])
        proba = clf.predict_proba(test.drop(columns="class"))
        truth = np.searchsorted(clf.classes_, test["class"].astype(str))
        assert full["logloss"] == pytest.approx(-np.mean(np.log(proba[np.arange(len(test)), truth])), rel=1e-9)
    assert set(outcome.timings["stage"]) >= {"learn network", "parent probabilities and kernel", "greedy mmd"}
    claims = summarize_claims(results)
    assert set(claims["method"]) == {"greedy-mmd", "greedy-chi2", "greedy-mmd-identity", "greedy-mmd-overlap"}


def test_experiment_cli_writes_tidy_csv_and_figures(tmp_path):
    assert main(["experiment", "summarization", "--dataset", "nursery", "--model", "kdb", "--sizes", "40",
                 "--n-random", "10", "--n-seeds", "2", "--quiet", "-o", str(tmp_path)]) == 0
    results = pd.read_csv(tmp_path / "results.csv")
    assert len(results) == 2 * (1 + 10 + 4)
    assert sorted(results["seed"].unique()) == [0, 1]
    assert (tmp_path / "figure-kdb.png").stat().st_size > 10_000
    assert (tmp_path / "timings.csv").exists() and (tmp_path / "claims.csv").exists()


@pytest.mark.parametrize("model", ["hc", "kdb"])
def test_vectorised_refits_equal_one_network_per_subset(model):
    """The random subsets' metrics (count tables and scores for blocks of models at once) against fitting one
    BayesianNetwork per subset and scoring the test rows with its log-likelihood."""
    from bnfisher.experiments.summarization import _learn

    data = load("nursery").iloc[::4].reset_index(drop=True)
    outcome = run_summarization("nursery", model, sizes=[30], n_random=6, seed=1, criteria=("mmd",), data=data)
    train, test = train_test_split(data, random_state=1)
    network = _learn(model, train)
    rng = np.random.default_rng(1)
    from bnfisher.summary import random_subsets

    subsets = random_subsets(len(train), 30, 6, random_state=rng)  # the experiment's draws for this seed
    random_rows = outcome.results[outcome.results["method"] == "random"].sort_values("replicate")
    for subset, (_, row) in zip(subsets, random_rows.iterrows()):
        refit = BayesianNetwork.from_data(train.iloc[subset], network.parents, pseudocount=1.0,
                                          schema=network.schema)
        if model == "hc":
            assert row["nll"] == pytest.approx(-refit.log_likelihood(test).mean(), rel=1e-12)
            continue
        # class posterior by enumeration: the joint log-likelihood of each row completed with every class value
        classes = network.states["class"]
        joint = np.column_stack([refit.log_likelihood(test.assign(**{"class": pd.Categorical(
            [c] * len(test), categories=classes)})) for c in classes])
        log_posterior = joint - np.logaddexp.reduce(joint, axis=1, keepdims=True)
        truth = pd.Categorical(test["class"], categories=classes).codes
        assert row["logloss"] == pytest.approx(-np.mean(log_posterior[np.arange(len(test)), truth]), rel=1e-10)
        assert row["error"] == pytest.approx(np.mean(np.argmax(log_posterior, axis=1) != truth), abs=1e-12)
