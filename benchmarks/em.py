"""Structural EM on a real table with missing cells: time and score beside learning without EM, in one run.

Data: UCI mushroom (8,124 rows, 23 nominal columns, 2,480 missing cells in stalk-root; read from
``../shared/data/uci/mushroom.csv.gz``, empty cells and ``?`` as missing).  ``learn(..., missing="em")`` runs
structural EM (each round imputes the missing cells by their posterior mode, re-learns the structure and refits
by EM, accelerated by SQUAREM); the reference is the same ``learn`` with ``missing="available-case"`` (counts
over the observed cells, no EM), timed in the same run.  Goals (issue "performance"): hill climbing with
structural EM under 20 s; exact learning with structural EM under 20 s (on the first 12 columns, which end with
stalk-root: the exact search is exponential in the number of variables; and on the first 15).

Also, for one fixed structure (TAN on mushroom, learned from the complete rows), ``fit_em`` (accelerated by
SQUAREM) beside plain EM written out here from the same E-step: E-steps, seconds and the objective reached.

Run:  python benchmarks/em.py   (about two minutes)
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.bn.em import fit_em

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "uci" / "mushroom.csv.gz"


def timed(table, structure, missing):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        network = bf.learn(table, structure, missing=missing)
    seconds = time.perf_counter() - start
    return seconds, network, sorted({f"{w.category.__name__}: {str(w.message)[:90]}" for w in caught})


def plain_em(table, parents, *, tol=1e-8, max_iter=1000):
    """EM without acceleration from fit_em's start: one E-step and one M-step per iteration (the reference)."""
    from bnfisher.bn import em
    from bnfisher.bn.network import BayesianNetwork, cpt_from_counts

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one step by design: "stopped before converging"
        start = fit_em(table, parents, max_iter=1, tol=0.0)  # the same encoding and available-case start
    network = BayesianNetwork(dict(start.network.parents), {v: np.asarray(c) for v, c in start.network.cpts.items()},
                              dict(start.network.states), schema=start.network.schema)
    codes = network.encode(table[list(network.variables)], missing="allow").codes
    families = [p + (i,) for i, p in enumerate(network.parent_indices())]
    incomplete, fixed = em._complete_counts(codes, families, network.cardinalities)  # noqa: SLF001
    counts, value = em._objective(network, incomplete, fixed, families, 1.0)  # noqa: SLF001
    for iteration in range(1, max_iter + 1):
        cpts = {v: cpt_from_counts(c, 1.0) for v, c in zip(network.variables, counts)}
        network = BayesianNetwork(dict(network.parents), cpts, dict(network.states), schema=network.schema)
        previous = value
        counts, value = em._objective(network, incomplete, fixed, families, 1.0)  # noqa: SLF001
        if abs(value - previous) <= tol * max(abs(value), 1.0):
            return iteration + 2, value  # + the start's E-step and fit_em's one step
    return max_iter + 2, value


def main() -> None:
    table = pd.read_csv(SHARED, dtype=str, na_values=["?", ""], keep_default_na=False)
    print(f"mushroom: {len(table)} rows, {table.shape[1]} columns, {int(table.isna().sum().sum())} missing cells; "
          f"bnfisher {bf.__version__}")
    # Compile the scoring kernel first, so that the timings compare steady states (a first run in a fresh
    # environment compiles once, about 5 s; small jobs run NumPy fallbacks instead: bnfisher._utils.jit).
    from bnfisher._utils import jit as _jit

    _jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it
    for structure in ("hc", "exact"):  # every path: the table's scores and structural EM's
        for missing in ("available-case", "em"):
            bf.learn(table.iloc[:500, :12], structure, missing=missing)
    print("| structure | columns | missing= | seconds | structural EM rounds | EM iterations (last round) | warnings |")
    print("|---|---|---|---|---|---|---|")
    for structure, columns in (("hc", table.columns), ("exact", table.columns[:12]), ("exact", table.columns[:15])):
        part = table[list(columns)]
        for missing in ("available-case", "em"):
            seconds, network, caught = timed(part, structure, missing)
            info = network.learning_
            print(f"| {structure} | {len(columns)} | {missing} | {seconds:.2f} | {info.get('sem_rounds', '-')} | "
                  f"{info.get('em_iterations', '-')} | {'; '.join(caught) or '-'} |")

    parents = dict(bf.learn(table.dropna(), "tan", class_variable=table.columns[0]).parents)
    print("\nFixed structure (TAN), EM to a relative change of 1e-8:")
    print("| EM | E-steps | seconds | objective |")
    print("|---|---|---|---|")
    start = time.perf_counter()
    steps, value = plain_em(table, parents)
    print(f"| plain EM (reference) | {steps} | {time.perf_counter() - start:.2f} | {value:.4f} |")
    start = time.perf_counter()
    result = fit_em(table, parents, max_iter=1000, tol=1e-8)
    print(f"| fit_em (SQUAREM) | {result.n_iter + 1} | {time.perf_counter() - start:.2f} | "
          f"{result.objective[-1]:.4f} |")


if __name__ == "__main__":
    main()
