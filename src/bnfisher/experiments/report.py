"""Report and figures of the summarisation experiment: tables, claims and plots from its tidy results."""

from __future__ import annotations

from bnfisher._utils.lazy import pandas as pd
from bnfisher.datasets import DATASETS
from bnfisher.experiments.summarization import MODELS

__all__ = ["plot_summarization", "summarize_claims", "report_markdown", "metrics"]


def metrics(model: str) -> list:
    """Return the evaluation metrics of a model: test NLL for hill climbing, error and log loss for classifiers.

    Parameters
    ----------
    model : {"hc", "tan", "kdb"}

    Returns
    -------
    list of str
    """
    return ["nll"] if model == "hc" else ["error", "logloss"]


def plot_summarization(results: pd.DataFrame, path: str, model: str) -> None:
    """Figures laid out like the paper's Figures 1-3: one panel per data set (and metric).

    Random subsets: mean ± sd (averaged over seeds); greedy criteria: mean over
    seeds with the range over seeds as a band; full set: a horizontal line.

    Parameters
    ----------
    results : DataFrame
        ``ExperimentResult.results``.
    path : str
        PNG file to write (atomically).
    model : {"hc", "tan", "kdb"}
    """
    from bnfisher.viz.plotting import figures, save_figure

    plt = figures()

    frame = results[results["model"] == model]
    datasets = [d for d in DATASETS if d in set(frame["dataset"])] or sorted(set(frame["dataset"]))
    panels = metrics(model)
    figure, axes = plt.subplots(len(panels), len(datasets), figsize=(4.5 * len(datasets), 3.6 * len(panels)),
                                squeeze=False)
    labels = {"greedy-mmd": "greedy MMD (Fisher)", "greedy-chi2": "greedy χ²",
              "greedy-mmd-identity": "greedy MMD (identity)", "greedy-mmd-overlap": "greedy MMD (overlap)"}
    for column, dataset in enumerate(datasets):
        part = frame[frame["dataset"] == dataset]
        for row, metric in enumerate(panels):
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
    save_figure(figure, path, dpi=100)


def summarize_claims(results: pd.DataFrame) -> pd.DataFrame:
    """How often each greedy criterion beats the random mean, per data set, model and size.

    Parameters
    ----------
    results : DataFrame
        ``ExperimentResult.results``.

    Returns
    -------
    DataFrame
        One row per (data set, model, seed, k, greedy method) with ``beats_random``.
    """
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


def _cell(values: pd.Series, random_mean: float, spread: bool) -> str:
    """Return a method's mean (with its range over seeds when ``spread``), bold when below the random mean."""
    text = f"{values.mean():.4f}"
    if spread:
        text += f" [{values.min():.4f}, {values.max():.4f}]"
    return f"**{text}**" if values.mean() < random_mean else text


def _timing_lines(timings: pd.DataFrame) -> list:
    """Return the stage timings table (summed over the sizes, mean over seeds) and the greedy MMD's per size."""
    table = (timings.groupby(["dataset", "model", "seed", "stage"])["seconds"].sum()
             .groupby(["dataset", "model", "stage"]).mean().unstack("stage").round(2))
    columns = list(table.columns)
    lines = ["## Stage timings (seconds; summed over the sizes, mean over seeds)", "",
             "| data set | model | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for (dataset, model), row in table.iterrows():
        lines.append(f"| {dataset} | {model} | " + " | ".join(f"{row[c]:.2f}" for c in columns) + " |")
    per_k = timings[timings["stage"] == "greedy mmd"].groupby(["dataset", "model", "k"])["seconds"].mean()
    return lines + ["", "Greedy MMD per size (seconds): " + "; ".join(
        f"{d}/{m} k={int(k)}: {v:.2f}" for (d, m, k), v in per_k.items())]


def report_markdown(results: pd.DataFrame, timings: pd.DataFrame) -> str:
    """Write the Markdown tables of a run.

    Per model and metric: random mean ± sd, greedy criteria, full set; then the
    stage timings (seconds, summed over sizes, mean over seeds).

    Parameters
    ----------
    results, timings : DataFrame
        ``ExperimentResult.results`` and ``.timings``.

    Returns
    -------
    str
    """
    methods = ["greedy-mmd", "greedy-chi2", "greedy-mmd-identity", "greedy-mmd-overlap"]
    names = {"greedy-mmd": "MMD Fisher", "greedy-chi2": "χ²", "greedy-mmd-identity": "MMD identity",
             "greedy-mmd-overlap": "MMD overlap"}
    lines = []
    seeds = sorted(results["seed"].unique())
    spread = len(seeds) > 1
    for model in [m for m in MODELS if m in set(results["model"])]:
        for metric in metrics(model):
            title = {"nll": "test NLL per sample", "error": "misclassification rate", "logloss": "test log loss"}
            lines.append(f"## {model}: {title[metric]}" + (f" (mean [min, max] over {len(seeds)} seeds)"
                                                              if spread else ""))
            lines.append("")
            present = [m for m in methods if m in set(results["method"])]
            lines.append("| data set | k | random mean ± sd | " + " | ".join(names[m] for m in present) + " | full |")
            lines.append("|---|---|---|" + "---|" * (len(present) + 1))
            part = results[results["model"] == model]
            for (dataset, k), group in part[part["method"] != "full"].groupby(["dataset", "k"]):
                random = group[group["method"] == "random"][metric]
                cells = [dataset, str(k), f"{random.mean():.4f} ± {random.std():.4f}"]
                cells += [_cell(group[group["method"] == method][metric], random.mean(), spread) for method in present]
                full = part[(part["method"] == "full") & (part["dataset"] == dataset)][metric].mean()
                cells.append(f"{full:.4f}")
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    lines.append("Bold: below the random mean.")
    lines.append("")
    return "\n".join(lines + _timing_lines(timings)) + "\n"
