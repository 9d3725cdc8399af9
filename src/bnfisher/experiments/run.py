"""Run the summarization experiment and write its results, claims and report (the command's body)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.progress import progress_bar
from bnfisher.data.io import check_outputs, write_table, write_text
from bnfisher.datasets import DATASETS
from bnfisher.exceptions import OutputError
from bnfisher.experiments.report import plot_summarization, report_markdown, summarize_claims
from bnfisher.experiments.summarization import CRITERIA, MODELS, ExperimentResult, run_summarization

__all__ = ["run_experiment"]


def _prepare_folder(output: str, names: list) -> None:
    """Create the output folder; refuse a file, or a folder that holds one of the results already."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise OutputError(f"Output {output!r} is a file; the experiment writes a folder of results.")
    present = [n for n in names if os.path.lexists(os.path.join(output, n))]
    if present:
        raise OutputError(f"Output folder {output!r} already holds {', '.join(present)}; choose a new folder (or "
                          "move those files away): results are never replaced.")
    os.makedirs(output, exist_ok=True)
    check_outputs([os.path.join(output, n) for n in names])


def run_experiment(output: str, *, datasets: Sequence[str] = tuple(DATASETS), models: Sequence[str] = MODELS,
                   sizes: Sequence[int] = (200, 400, 600, 1000), n_random: int = 1000, seeds: Sequence[int] = (0,),
                   criteria: Sequence[str] = CRITERIA, progress: bool = False) -> ExperimentResult:
    """Run :func:`run_summarization` for every data set, model and seed, and write the report.

    Writes ``results.csv``, ``timings.csv``, ``claims.csv``, ``report.md`` and
    ``figure-<model>.png`` to the folder ``output`` (created if absent; each file
    written atomically).  Refuses, before any run, a folder that already holds any
    of these files: earlier results are never replaced.

    Parameters
    ----------
    output : str
        Output folder.
    datasets, models, sizes, n_random, seeds, criteria, progress
        As for :func:`run_summarization`.

    Returns
    -------
    ExperimentResult
        All runs' results and timings, concatenated.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.experiments import run_experiment
    >>> outcome = run_experiment(str(folder), datasets=("nursery",), models=("hc",), sizes=(50,), n_random=20,
    ...                          criteria=("mmd",))
    >>> sorted(p.name for p in folder.iterdir())[:3]
    ['claims.csv', 'figure-hc.png', 'report.md']
    """
    _prepare_folder(output, ["results.csv", "timings.csv", "claims.csv", "report.md",
                             *(f"figure-{m}.png" for m in models)])
    runs = [(d, m, s) for s in seeds for m in models for d in datasets]
    iterator = progress_bar(runs, desc="experiment", unit="run") if progress else runs
    started = time.perf_counter()
    outcomes = [run_summarization(d, m, sizes=sizes, n_random=n_random, seed=s, criteria=criteria, progress=progress)
                for d, m, s in iterator]
    results = pd.concat([o.results for o in outcomes], ignore_index=True)
    timings = pd.concat([o.timings for o in outcomes], ignore_index=True)
    write_table(results, os.path.join(output, "results.csv"))
    write_table(timings, os.path.join(output, "timings.csv"))
    write_table(summarize_claims(results), os.path.join(output, "claims.csv"))
    for model in models:
        plot_summarization(results, os.path.join(output, f"figure-{model}.png"), model)
    elapsed = time.perf_counter() - started
    write_text(os.path.join(output, "report.md"),
               f"# Summarisation experiment: tables\n\nWall time: {elapsed:.1f} s for {len(runs)} runs.\n\n"
               + report_markdown(results, timings))
    return ExperimentResult(results, timings)
