"""The paper's data-summarisation experiment (Sec. 7.1, Figures 1-3), and more.

For a data set and a model (hill climbing with BIC, TAN or KDB-3, pseudocount 1):
learn the network on the training half, build its Fisher kernel, and for every
subset size ``k`` draw random subsets and run Algorithm 1 with several criteria
(each started from the best random subset under its own criterion).  Every subset
re-fits the CPTs (structure fixed, pseudocount 1) and is evaluated on the test half:
per-sample negative log-likelihood for hill climbing; misclassification rate and
per-sample log loss of the class for TAN and KDB.

Beyond the paper: several seeds of the split, and two more criteria -- the MMD under
the "practical" identity-information kernel and under the overlap (Hamming) kernel.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.parallel import available_cores
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_option, check_positive_int, check_random_state
from bnfisher.bn.inference.posterior import ClassPosterior
from bnfisher.bn.network import BayesianNetwork, cpt_from_counts
from bnfisher.bn.structure.learn import learn
from bnfisher.data.counts import configuration_index
from bnfisher.datasets import load, train_test_split
from bnfisher.kernels.fisher import FisherKernel
from bnfisher.kernels.overlap import OverlapKernel
from bnfisher.summary.baselines import random_subsets
from bnfisher.summary.criteria import Chi2Criterion, MMDCriterion
from bnfisher.summary.search import select_representatives

__all__ = ["MODELS", "CRITERIA", "ExperimentResult", "run_summarization"]


MODELS = ("hc", "tan", "kdb")


#: criterion name -> what the greedy search minimises
CRITERIA = ("mmd", "chi2", "mmd-identity", "mmd-overlap")


CLASS = "class"


class _Evaluator:
    """Re-fit CPTs on a subset of the training rows and evaluate on the test rows, vectorised."""

    def __init__(self, network: BayesianNetwork, train, test, classification: bool):
        self.network = network
        self.cards = network.cardinalities
        self.parent_index = network.parent_indices()
        train_codes = network.encode(train).codes
        test_codes = network.encode(test).codes
        self.families = [parents + (i,) for i, parents in enumerate(self.parent_index)]
        self.sizes = [int(np.prod([self.cards[c] for c in f], dtype=np.int64)) for f in self.families]
        self.train_index = [configuration_index(train_codes, f, self.cards) for f in self.families]
        self.classification = classification
        if not classification:
            # The test log-likelihood is linear in the log CPTs: sum over cells of test counts x log theta.
            self.test_counts = [np.bincount(configuration_index(test_codes, f, self.cards), minlength=size)
                                for f, size in zip(self.families, self.sizes)]
            self.n_test = test_codes.shape[0]
            return
        class_position = network.variables.index(CLASS)
        self.test_truth = test_codes[:, class_position]
        self.posterior = ClassPosterior(self.families, self.cards, test_codes, class_position)

    def tables(self, subsets: np.ndarray) -> list:
        """Log CPTs re-fitted (pseudocount 1) on each row of ``subsets`` (training row positions): ``(m, cells)``."""
        m = subsets.shape[0]
        out = []
        for family, index, size in zip(self.families, self.train_index, self.sizes):
            flat = (np.arange(m)[:, None] * size + index[subsets]).ravel()
            counts = np.bincount(flat, minlength=m * size).reshape(m, -1, int(self.cards[family[-1]]))
            # pseudocount 1, as in the paper; > 0, so every log is finite
            out.append(np.log(cpt_from_counts(counts, 1.0)).reshape(m, size))
        return out

    def evaluate(self, rows: np.ndarray | None) -> dict:
        """Metrics of the model re-fitted on ``rows`` (None: all training rows)."""
        subsets = (np.arange(self.train_index[0].size) if rows is None else np.asarray(rows))[None, :]
        return {name: float(values[0]) for name, values in self.evaluate_many(subsets).items()}

    def evaluate_many(self, subsets: np.ndarray) -> dict:
        """Return the metrics of the models re-fitted on every row of ``subsets``, a block of models at a time.

        Count tables and test-set scores of a block are computed at once (no loop over subsets).
        """
        n_test = self.test_truth.size if self.classification else 1
        width = n_test * (self.posterior.n_classes if self.classification else 1)
        block = max(1, (1 << 24) // max(width, 1))

        def evaluate_block(start: int) -> dict:
            tables = self.tables(subsets[start : start + block])
            if not self.classification:
                return {"nll": -sum(t @ counts for t, counts in zip(tables, self.test_counts)) / self.n_test}
            joint = self.posterior.log_joint_many(tables)  # (rows, classes, models)
            truth = self.test_truth
            normaliser = self.posterior.log_normaliser(joint)
            return {"error": np.mean(np.argmax(joint, axis=1) != truth[:, None], axis=0),
                    "logloss": -np.mean(joint[np.arange(truth.size), truth] - normaliser, axis=0)}

        # Blocks run on threads: the sparse products and ufuncs release the GIL.
        starts = range(0, subsets.shape[0], block)
        with ThreadPoolExecutor(max_workers=min(len(starts), available_cores(), 4)) as pool:
            blocks = list(pool.map(evaluate_block, starts))
        metrics: dict = {}
        for values in blocks:
            for name, value in values.items():
                metrics.setdefault(name, []).append(value)
        return {name: np.concatenate(parts) for name, parts in metrics.items()}


@dataclass
class ExperimentResult:
    """Tidy results of :func:`run_summarization`.

    Attributes
    ----------
    results : DataFrame
        One row per evaluated subset: ``dataset, model, seed, k, method, replicate,
        mmd, chi2`` and the metrics (``nll`` or ``error, logloss``).  ``method`` is
        ``random``, ``greedy-<criterion>`` or ``full``.
    timings : DataFrame
        ``dataset, model, seed, stage, k, seconds``.

    Examples
    --------
    >>> from bnfisher.experiments import run_summarization
    >>> outcome = run_summarization("nursery", "hc", sizes=(50,), n_random=20, criteria=("mmd",),
    ...                             data=load("nursery").iloc[::4])
    >>> sorted(set(outcome.results["method"]))
    ['full', 'greedy-mmd', 'random']
    """

    results: pd.DataFrame
    timings: pd.DataFrame


def _learn(model: str, train: pd.DataFrame) -> BayesianNetwork:
    if model == "hc":  # the paper's hill climbing (bnlearn's hc from the empty graph), as docs/reproduction.md states
        return learn(train, "hc", search="plain", structure_score="bic", pseudocount=1.0)
    if model == "tan":
        return learn(train, "tan", class_variable=CLASS, pseudocount=1.0)
    return learn(train, "kdb", class_variable=CLASS, k=3, pseudocount=1.0)


def run_summarization(
    dataset: str,
    model: str,
    *,
    sizes: Sequence[int] = (200, 400, 600, 1000),
    n_random: int = 1000,
    seed: int = 0,
    criteria: Sequence[str] = CRITERIA,
    progress: bool = False,
    data: pd.DataFrame | None = None,
) -> ExperimentResult:
    """Run the summarisation experiment for one data set, model and split seed.

    Parameters
    ----------
    dataset : {"letter", "nursery", "waveform-5000"}
        Bundled data set (or a label for ``data``).
    model : {"hc", "tan", "kdb"}
        Hill climbing with BIC (Fig. 1), TAN (Fig. 2) or KDB with k = 3 (Fig. 3).
    sizes : sequence of int, default=(200, 400, 600, 1000)
    n_random : int, default=1000
        Random subsets per size (also the pool for the greedy starts).
    seed : int, default=0
        Seed of the 50/50 split and of the random subsets.
    criteria : sequence of str
        Greedy criteria among ``"mmd"`` (Fisher kernel), ``"chi2"``,
        ``"mmd-identity"`` (identity-information kernel), ``"mmd-overlap"``.
    progress : bool, default=False
    data : DataFrame, optional
        Use this prepared data instead of the bundled ``dataset``.

    Returns
    -------
    ExperimentResult

    Examples
    --------
    >>> from bnfisher.experiments import run_summarization
    >>> outcome = run_summarization("nursery", "hc", sizes=(50,), n_random=20, criteria=("mmd",),
    ...                             data=load("nursery").iloc[::4])
    >>> sorted(set(outcome.results["method"]))
    ['full', 'greedy-mmd', 'random']
    """
    check_option(model, "model", MODELS)
    for criterion in criteria:
        check_option(criterion, "criteria", CRITERIA)
    n_random = check_positive_int(n_random, "n_random")
    frame = load(dataset) if data is None else data
    train, test = train_test_split(frame, random_state=seed)
    rng = check_random_state(seed)
    timings: list = []
    rows: list = []
    base = {"dataset": dataset, "model": model, "seed": seed}

    def timed(stage, k, started):
        timings.append({**base, "stage": stage, "k": k, "seconds": time.perf_counter() - started})

    started = time.perf_counter()
    network = _learn(model, train)
    timed("learn network", None, started)
    started = time.perf_counter()
    kernels = {"mmd": FisherKernel(network)}
    encoded = network.encode(train)
    mmd_criterion = MMDCriterion(kernels["mmd"], encoded)  # embeds the training rows once
    timed("parent probabilities and kernel", None, started)
    if "mmd-identity" in criteria:
        kernels["mmd-identity"] = FisherKernel(network, information="identity")
    if "mmd-overlap" in criteria:
        kernels["mmd-overlap"] = OverlapKernel(network)
    chi2_criterion = Chi2Criterion(encoded.codes, encoded.cardinalities)
    evaluator = _Evaluator(network, train, test, classification=model != "hc")
    full = evaluator.evaluate(None)
    rows.append({**base, "k": len(train), "method": "full", "replicate": 0, "mmd": 0.0, "chi2": np.nan, **full})
    iterator = sizes
    if progress:

        iterator = progress_bar(sizes, desc=f"{dataset}/{model}/seed {seed}", unit="size", leave=False)
    for k in iterator:
        k = int(k)
        started = time.perf_counter()
        subsets = random_subsets(len(train), k, n_random, random_state=rng)
        values = {"mmd": mmd_criterion.evaluate_many(subsets), "chi2": chi2_criterion.evaluate_many(subsets)}
        timed("random subsets: mmd and chi2", k, started)
        started = time.perf_counter()
        metrics = evaluator.evaluate_many(subsets)  # every re-fit and evaluation, in blocks of models
        for replicate in range(len(subsets)):
            rows.append({**base, "k": k, "method": "random", "replicate": replicate,
                         "mmd": values["mmd"][replicate], "chi2": values["chi2"][replicate],
                         **{name: float(value[replicate]) for name, value in metrics.items()}})
        timed("random subsets: re-fit and evaluate", k, started)
        for criterion in criteria:
            started = time.perf_counter()
            if criterion not in values:
                values[criterion] = MMDCriterion(kernels[criterion], encoded).evaluate_many(subsets)
            start = subsets[int(np.argmin(values[criterion]))]
            kernel = kernels.get(criterion, kernels["mmd"])
            result = select_representatives(kernel, encoded, k, criterion="chi2" if criterion == "chi2" else "mmd",
                                            init=start)
            timed(f"greedy {criterion}", k, started)
            chosen = result.indices
            rows.append({**base, "k": k, "method": f"greedy-{criterion}", "replicate": 0,
                         "mmd": kernels["mmd"].mmd(encoded.take(chosen), encoded),
                         "chi2": chi2_criterion.evaluate_many(chosen[None, :])[0],
                         "sweeps": result.n_sweeps, "swaps": result.n_swaps, **evaluator.evaluate(chosen)})
    return ExperimentResult(pd.DataFrame(rows), pd.DataFrame(timings))
