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
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validation import check_option, check_positive_int, check_random_state
from .classifier import ClassPosterior
from .counts import configuration_index
from .datasets import DATASETS, load, train_test_split
from .kernel import FisherKernel, OverlapKernel
from .network import BayesianNetwork
from .selection import _Chi2Criterion, _MMDCriterion, _random_subsets, select_representatives
from .structure import learn

__all__ = ["MODELS", "CRITERIA", "ExperimentResult", "run_summarization", "plot_summarization"]

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
            self.test_index = [configuration_index(test_codes, f, self.cards) for f in self.families]
            return
        class_position = network.variables.index(CLASS)
        self.test_truth = test_codes[:, class_position]
        self.posterior = ClassPosterior(self.families, self.cards, test_codes, class_position)

    def tables(self, rows: np.ndarray | None) -> list:
        """Log CPTs re-fitted (pseudocount 1) on the training rows ``rows`` (None: all)."""
        out = []
        for family, index, size in zip(self.families, self.train_index, self.sizes):
            counts = np.bincount(index if rows is None else index[rows], minlength=size).astype(np.float64)
            r = int(self.cards[family[-1]])
            counts = counts.reshape(-1, r) + 1.0  # pseudocount 1, as in the paper
            out.append(np.log(counts / counts.sum(axis=1, keepdims=True)).reshape(-1))
        return out

    def evaluate(self, rows: np.ndarray | None) -> dict:
        tables = self.tables(rows)
        if not self.classification:
            total = sum(t[index] for t, index in zip(tables, self.test_index))
            return {"nll": float(-np.mean(total))}
        log_posterior = self.posterior.log_posterior(tables)
        truth = self.test_truth
        return {
            "error": float(np.mean(np.argmax(log_posterior, axis=1) != truth)),
            "logloss": float(-np.mean(log_posterior[np.arange(truth.size), truth])),
        }


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
    """

    results: pd.DataFrame
    timings: pd.DataFrame


def _learn(model: str, train: pd.DataFrame) -> BayesianNetwork:
    if model == "hc":
        return learn(train, "hc", score="bic", pseudocount=1.0)
    if model == "tan":
        return learn(train, "tan", class_variable=CLASS, pseudocount=1.0)
    return learn(train, "kdb", class_variable=CLASS, k=3, pseudocount=1.0)


def run_summarization(
    dataset: str,
    model: str,
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
    mmd_criterion = _MMDCriterion(kernels["mmd"], encoded)  # embeds the training rows once
    timed("parent probabilities and kernel", None, started)
    if "mmd-identity" in criteria:
        kernels["mmd-identity"] = FisherKernel(network, information="identity")
    if "mmd-overlap" in criteria:
        kernels["mmd-overlap"] = OverlapKernel(network)
    chi2_criterion = _Chi2Criterion(encoded.codes, encoded.cardinalities)
    evaluator = _Evaluator(network, train, test, classification=model != "hc")
    full = evaluator.evaluate(None)
    rows.append({**base, "k": len(train), "method": "full", "replicate": 0, "mmd": 0.0, "chi2": np.nan, **full})
    iterator = sizes
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(sizes, desc=f"{dataset}/{model}/seed {seed}", unit="size", leave=False)
    for k in iterator:
        k = int(k)
        started = time.perf_counter()
        subsets = _random_subsets(rng, len(train), k, n_random)
        values = {"mmd": mmd_criterion.evaluate_many(subsets), "chi2": chi2_criterion.evaluate_many(subsets)}
        timed("random subsets: mmd and chi2", k, started)
        started = time.perf_counter()
        for replicate, subset in enumerate(subsets):
            rows.append({**base, "k": k, "method": "random", "replicate": replicate,
                         "mmd": values["mmd"][replicate], "chi2": values["chi2"][replicate],
                         **evaluator.evaluate(subset)})
        timed("random subsets: re-fit and evaluate", k, started)
        for criterion in criteria:
            started = time.perf_counter()
            if criterion not in values:
                values[criterion] = _MMDCriterion(kernels[criterion], encoded).evaluate_many(subsets)
            start = subsets[int(np.argmin(values[criterion]))]
            kernel = kernels.get(criterion, kernels["mmd"])
            result = select_representatives(kernel, encoded, k, criterion="chi2" if criterion == "chi2" else "mmd",
                                            init=start)
            timed(f"greedy {criterion}", k, started)
            chosen = result.indices
            rows.append({**base, "k": k, "method": f"greedy-{criterion}", "replicate": 0,
                         "mmd": kernels["mmd"].mmd(encoded.codes[chosen], encoded),
                         "chi2": chi2_criterion.evaluate_many(chosen[None, :])[0],
                         "sweeps": result.n_sweeps, "swaps": result.n_swaps, **evaluator.evaluate(chosen)})
    return ExperimentResult(pd.DataFrame(rows), pd.DataFrame(timings))


def _metrics(model: str) -> list:
    return ["nll"] if model == "hc" else ["error", "logloss"]


def plot_summarization(results: pd.DataFrame, path: str, model: str) -> None:
    """Figures laid out like the paper's Figures 1-3: one panel per data set (and metric).

    Random subsets: mean ± sd (averaged over seeds); greedy criteria: mean over
    seeds with the range over seeds as a band; full set: a horizontal line.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = results[results["model"] == model]
    datasets = [d for d in DATASETS if d in set(frame["dataset"])] or sorted(set(frame["dataset"]))
    metrics = _metrics(model)
    figure, axes = plt.subplots(len(metrics), len(datasets), figsize=(4.5 * len(datasets), 3.6 * len(metrics)),
                                squeeze=False)
    labels = {"greedy-mmd": "greedy MMD (Fisher)", "greedy-chi2": "greedy χ²",
              "greedy-mmd-identity": "greedy MMD (identity)", "greedy-mmd-overlap": "greedy MMD (overlap)"}
    for column, dataset in enumerate(datasets):
        part = frame[frame["dataset"] == dataset]
        for row, metric in enumerate(metrics):
            ax = axes[row, column]
            random = part[part["method"] == "random"].groupby("k")[metric]
            ax.errorbar(random.mean().index, random.mean().values, yerr=random.std().values, fmt="o-", color="grey",
                        capsize=3, label="random mean ± sd")
            for method, label in labels.items():
                greedy = part[part["method"] == method]
                if greedy.empty:
                    continue
                by_k = greedy.groupby("k")[metric]
                line = ax.plot(by_k.mean().index, by_k.mean().values, "s-", label=label)[0]
                if greedy["seed"].nunique() > 1:
                    ax.fill_between(by_k.min().index, by_k.min().values, by_k.max().values, alpha=0.15,
                                    color=line.get_color())
            full = part[part["method"] == "full"][metric].mean()
            ax.axhline(full, color="black", linestyle="--", label="full set")
            ax.set_title(f"{dataset} ({model})")
            ax.set_xlabel("subset size k")
            ax.set_ylabel({"nll": "test NLL per sample", "error": "misclassification rate",
                           "logloss": "test log loss"}[metric])
    axes[0, 0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def summarize_claims(results: pd.DataFrame) -> pd.DataFrame:
    """How often each greedy criterion beats the random mean, per data set, model and size."""
    out = []
    for (dataset, model, seed, k), part in results[results["method"] != "full"].groupby(
            ["dataset", "model", "seed", "k"]):
        metric = "nll" if model == "hc" else "logloss"
        random_mean = part.loc[part["method"] == "random", metric].mean()
        for method in sorted(set(part["method"]) - {"random"}):
            value = part.loc[part["method"] == method, metric].iloc[0]
            out.append({"dataset": dataset, "model": model, "seed": seed, "k": k, "method": method,
                        "metric": metric, "value": value, "random_mean": random_mean,
                        "beats_random": bool(value < random_mean)})
    return pd.DataFrame(out)


def report_markdown(results: pd.DataFrame, timings: pd.DataFrame) -> str:
    """Markdown tables of a run: per model and metric, random mean ± sd, greedy criteria, full set;
    then the stage timings (seconds, summed over sizes, mean over seeds)."""
    methods = ["greedy-mmd", "greedy-chi2", "greedy-mmd-identity", "greedy-mmd-overlap"]
    names = {"greedy-mmd": "MMD Fisher", "greedy-chi2": "χ²", "greedy-mmd-identity": "MMD identity",
             "greedy-mmd-overlap": "MMD overlap"}
    lines = []
    seeds = sorted(results["seed"].unique())
    spread = len(seeds) > 1
    for model in [m for m in MODELS if m in set(results["model"])]:
        for metric in _metrics(model):
            title = {"nll": "test NLL per sample", "error": "misclassification rate", "logloss": "test log loss"}
            lines.append(f"### {model}: {title[metric]}" + (f" (mean [min, max] over {len(seeds)} seeds)"
                                                              if spread else ""))
            lines.append("")
            present = [m for m in methods if m in set(results["method"])]
            lines.append("| data set | k | random mean ± sd | " + " | ".join(names[m] for m in present) + " | full |")
            lines.append("|---|---|---|" + "---|" * (len(present) + 1))
            part = results[results["model"] == model]
            for (dataset, k), group in part[part["method"] != "full"].groupby(["dataset", "k"]):
                random = group[group["method"] == "random"][metric]
                cells = [dataset, str(k), f"{random.mean():.4f} ± {random.std():.4f}"]
                for method in present:
                    values = group[group["method"] == method][metric]
                    text = f"{values.mean():.4f}"
                    if spread:
                        text += f" [{values.min():.4f}, {values.max():.4f}]"
                    cells.append(f"**{text}**" if values.mean() < random.mean() else text)
                full = part[(part["method"] == "full") & (part["dataset"] == dataset)][metric].mean()
                cells.append(f"{full:.4f}")
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    lines.append("Bold: below the random mean.")
    lines.append("")
    lines.append("### Stage timings (seconds; summed over the sizes, mean over seeds)")
    lines.append("")
    table = (timings.groupby(["dataset", "model", "seed", "stage"])["seconds"].sum()
             .groupby(["dataset", "model", "stage"]).mean().unstack("stage").round(2))
    columns = list(table.columns)
    lines.append("| data set | model | " + " | ".join(columns) + " |")
    lines.append("|---|---|" + "---|" * len(columns))
    for (dataset, model), row in table.iterrows():
        lines.append(f"| {dataset} | {model} | " + " | ".join(f"{row[c]:.2f}" for c in columns) + " |")
    per_k = timings[timings["stage"] == "greedy mmd"].groupby(["dataset", "model", "k"])["seconds"].mean()
    lines.append("")
    lines.append("Greedy MMD per size (seconds): " + "; ".join(
        f"{d}/{m} k={int(k)}: {v:.2f}" for (d, m, k), v in per_k.items()))
    return "\n".join(lines) + "\n"
