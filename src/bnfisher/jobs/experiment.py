"""The experiment job: the paper's summarization experiments (Sec. 7) over data sets, models and seeds."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bnfisher.experiments import MODELS, run_experiment
from bnfisher.experiments.report import summarize_claims
from bnfisher.experiments.summarization import CRITERIA

__all__ = ["CRITERIA", "MODELS", "experiment"]


def experiment(output: str, *, datasets: Sequence[str], models: Sequence[str], sizes: Sequence[int],
               n_random: int, seeds: Sequence[int], criteria: Sequence[str], progress: bool = False) -> str:
    """Run the experiments, write their files to ``output`` and return what they show, as text.

    Parameters
    ----------
    output : str
        A folder (see :func:`bnfisher.experiments.run_experiment` for its files).
    datasets, models : sequence of str
    sizes : sequence of int
        Subset sizes k.
    n_random : int
        Random subsets per k (the baseline).
    seeds : sequence of int
    criteria : sequence of str
    progress : bool, default=False

    Returns
    -------
    str
        The runs' count and time, the files written, and per method the share of
        (data set, model, seed, k) where the greedy subset beats the random mean.
    """
    started = time.perf_counter()
    outcome = run_experiment(output, datasets=datasets, models=models, sizes=sizes, n_random=n_random,
                             seeds=seeds, criteria=criteria, progress=progress)
    shares = summarize_claims(outcome.results).groupby("method")["beats_random"].mean()
    return "\n".join([
        f"{len(datasets) * len(models) * len(seeds)} runs in {time.perf_counter() - started:.1f} s; wrote "
        f"results.csv, timings.csv, claims.csv, report.md and figure-<model>.png to {output}",
        "Share of (data set, model, seed, k) where the greedy subset beats the random mean:",
        shares.round(3).to_string()])
