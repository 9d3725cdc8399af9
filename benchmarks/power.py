"""Size and power of the two-sample tests on every kind of shift: Fisher MMD, overlap MMD, per-column, aggregate.

Every scenario draws two samples A and B of n rows each (rows drawn with replacement from a real table, or from a
bnlearn network), learns a network on A and B pooled (``bnfisher.learn``, Chow-Liu, as ``compare`` does) and runs
one set of permutations, from which all permutation tests below take their p-values:

* ``fisher``: the Fisher-kernel MMD² (eq. 10), the paper's test (``mmd_test(method="mmd")``);
* ``overlap``: the overlap-kernel MMD² (every column's marginal, unweighted), a reference;
* ``columns``: the smallest per-column Pearson p-value, calibrated on the permutations;
* ``blocks``: the largest standardised block (a family's part of the Fisher MMD², or a column's marginal);
* ``aggregate``: the weighted min-p combination of ``fisher``, ``blocks`` and ``columns``
  (``mmd_test(method="aggregate")``, the default of ``compare``);
* ``chi2-holm`` (reference, not from the permutations): scipy's chi-square test of homogeneity per column,
  Holm-adjusted over the columns.

Shifts: ``null`` (A and B from the same rows), ``marginal`` (B's rows drawn with one value's weight multiplied:
its column's marginal and whatever depends on it move), ``dependence`` (in B a share of one column's values is
shuffled among B's rows: every marginal stays, the column's dependence on the others weakens), ``conditional``
(B from the network with one CPT replaced), ``diffuse`` (B from the network with every CPT moved a little toward
a random one).  Rejection rates at alpha = 0.05 over R repetitions, with one
Monte-Carlo standard error sqrt(p(1-p)/R).

Run:  python benchmarks/power.py [--repetitions 200]   (about 4 minutes with 200; needs ../shared for mushroom and
adult, and skips those scenarios without it; the networks ship with the tests)
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import chi2_contingency

import bnfisher as bf
from bnfisher.comparison.attribution import holm
from bnfisher.comparison.permutation import permutation_pvalue, permutation_statistics
from bnfisher.comparison.two_sample import TwoSampleResult
from bnfisher.datasets import load

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
BIF = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bif"
PERMUTATIONS = 500
ALPHA = 0.05
METHODS = ("fisher", "overlap", "columns", "blocks", "aggregate", "chi2-holm")
SINGLE = ("fisher", "overlap", "columns", "chi2-holm")  # the methods of bnfisher 0.2 and the references


def read_table(name: str) -> pd.DataFrame | None:
    if name == "nursery":
        return load("nursery")
    path = SHARED / "uci" / f"{name}.csv.gz"
    if not path.exists():
        return None
    frame = pd.read_csv(path, dtype=str, na_values=["?"], keep_default_na=False)
    return frame.dropna().reset_index(drop=True)


def chi2_holm(A: pd.DataFrame, B: pd.DataFrame) -> float:
    p = []
    for column in A.columns:
        table = pd.crosstab(np.r_[np.zeros(len(A)), np.ones(len(B))],
                            np.r_[A[column].astype(str).to_numpy(), B[column].astype(str).to_numpy()])
        p.append(float(chi2_contingency(table)[1]) if table.shape[1] > 1 else 1.0)
    return float(holm(p).min())


def marginal(table: pd.DataFrame, column: str, value: str, factor: float):
    weights = np.where(table[column] == value, factor, 1.0)
    weights = weights / weights.sum()

    def draw(n: int, rng) -> tuple:
        A = table.iloc[rng.integers(0, len(table), n)].reset_index(drop=True)
        B = table.iloc[rng.choice(len(table), n, p=weights)].reset_index(drop=True)
        return A, B
    return draw


def dependence(table: pd.DataFrame, column: str, fraction: float):
    def draw(n: int, rng) -> tuple:
        A = table.iloc[rng.integers(0, len(table), n)].reset_index(drop=True)
        B = table.iloc[rng.integers(0, len(table), n)].reset_index(drop=True)
        rows = rng.choice(n, int(fraction * n), replace=False)
        B.loc[rows, column] = B.loc[rng.permutation(rows), column].to_numpy()
        return A, B
    return draw


def null(table: pd.DataFrame):
    def draw(n: int, rng) -> tuple:
        rows = table.iloc[rng.integers(0, len(table), 2 * n)].reset_index(drop=True)
        return rows.iloc[:n].reset_index(drop=True), rows.iloc[n:].reset_index(drop=True)
    return draw


def conditional(network: bf.BayesianNetwork, variable: str, seed: int):
    cpts = dict(network.cpts)
    shape = np.asarray(cpts[variable]).shape
    cpts[variable] = np.random.default_rng(seed).dirichlet(np.ones(shape[-1]), size=shape[:-1]).reshape(shape)
    other = bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))

    def draw(n: int, rng) -> tuple:
        return network.sample(n, random_state=rng), other.sample(n, random_state=rng)
    return draw


def diffuse(network: bf.BayesianNetwork, share: float, seed: int):
    rng = np.random.default_rng(seed)
    cpts = {}
    for v in network.variables:
        table = np.asarray(network.cpts[v])
        noise = rng.dirichlet(np.ones(table.shape[-1]), size=table.shape[:-1]).reshape(table.shape)
        cpts[v] = (1 - share) * table + share * noise
    other = bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))

    def draw(n: int, rng) -> tuple:
        return network.sample(n, random_state=rng), other.sample(n, random_state=rng)
    return draw


def scenarios() -> list:
    out = []
    nursery = read_table("nursery")
    out += [("nursery", "null", 400, null(nursery)),
            ("nursery", "marginal: P(finance = convenient) x 1.6", 400,
             marginal(nursery, "finance", "convenient", 1.6)),
            ("nursery", "dependence: 30% of health shuffled", 400, dependence(nursery, "health", 0.3))]
    mushroom = read_table("mushroom")
    if mushroom is not None:
        out += [("mushroom", "null", 300, null(mushroom)),
                ("mushroom", "marginal: P(habitat = d) x 2", 300, marginal(mushroom, "habitat", "d", 2.0)),
                ("mushroom", "dependence: 30% of odor shuffled", 300, dependence(mushroom, "odor", 0.3))]
    adult = read_table("adult")
    if adult is not None:
        adult = adult.drop(columns=[c for c in ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                                                "hours-per-week") if c in adult.columns])
        out += [("adult", "marginal: P(sex = Female) x 1.4", 500, marginal(adult, "sex", "Female", 1.4))]
        out += [("adult", "null", 500, null(adult))]
    insurance = bf.read_bif(BIF / "insurance.bif.gz")
    out += [("insurance", "conditional: CPT of HomeBase replaced", 300, conditional(insurance, "HomeBase", 7)),
            ("insurance", "diffuse: every CPT 4% of the way to a random one", 500, diffuse(insurance, 0.04, 8))]
    child = bf.read_bif(BIF / "child.bif.gz")
    out += [("child", "conditional: CPT of LungParench replaced", 200, conditional(child, "LungParench", 9))]
    return out


def run(draw, n: int, repetitions: int, seed: int) -> dict:
    rejections = dict.fromkeys(METHODS, 0)
    rng = np.random.default_rng(seed)
    for _ in range(repetitions):
        A, B = draw(n, rng)
        pool = pd.concat([A, B], ignore_index=True)
        network = bf.learn(pool)
        kernel = bf.FisherKernel(network)
        outcome = permutation_statistics(kernel, A, B, n_permutations=PERMUTATIONS, random_state=rng)
        aggregate = TwoSampleResult.from_statistics(outcome, method="aggregate")
        components = aggregate.components["p_value"]
        overlap = float(permutation_pvalue(outcome.overlap_observed, outcome.overlap_null))
        p = {"fisher": components["fisher"], "overlap": overlap, "columns": components["columns"],
             "blocks": components["blocks"],
             "aggregate": aggregate.p_value, "chi2-holm": chi2_holm(A, B)}
        for method in METHODS:
            rejections[method] += p[method] <= ALPHA
    return {method: rejections[method] / repetitions for method in METHODS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    r = args.repetitions
    error = np.sqrt(0.25 / r)
    lines = [f"Command: `python benchmarks/power.py --repetitions {r}` ({datetime.date.today().isoformat()}, "
             f"bnfisher {bf.__version__}); {PERMUTATIONS} permutations, alpha = {ALPHA}; rejection rates over {r} "
             f"repetitions (Monte-Carlo standard error at most {error:.3f}; {np.sqrt(0.05 * 0.95 / r):.3f} at 0.05).",
             "", "| data | shift | n = m | " + " | ".join(METHODS) + " | aggregate ≥ best − 0.05 |",
             "|---|---|---|" + "---|" * (len(METHODS) + 1)]
    lines.insert(1, "Goal: the aggregate's power at least that of the best of fisher, overlap, columns and chi2-holm "
                    "minus 0.05.")
    for k, (data, shift, n, draw) in enumerate(scenarios()):
        rates = run(draw, n, r, seed=k)
        if shift == "null":
            ok = "size ≤ α + 2 s.e." if rates["aggregate"] <= ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / r) \
                else "**size too high**"
        else:
            best = max(rates[m] for m in SINGLE)
            ok = "yes" if rates["aggregate"] >= best - 0.05 else f"**no** (best {best:.2f})"
        lines.append(f"| {data} | {shift} | {n} | " + " | ".join(f"{rates[m]:.2f}" for m in METHODS) + f" | {ok} |")
        print(lines[-1], flush=True)
    lines += ["", f"Wall time: {time.perf_counter() - start:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
