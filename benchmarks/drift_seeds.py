"""Drift without a random split: the window p-value's spread over seeds, its size, its power, and the effect size.

Generator: the *alarm* network (tests/fixtures/bif), whose truth is known.  bnfisher's default
(``fit_fraction=None``: the whole reference against each window, each window's structure learned on the
pool) beside the earlier default measured in the same run (``fit_fraction=0.5``: a structure learned on a
random half of the reference, the other half tested).

1. Seed spread: one unchanged window of 2,000 rows against a 20,000-row reference, ``random_state`` 0..9:
   max - min of the window's p-value (goal: <= 0.10 for the default).
2. Size: --runs runs of 10 unchanged windows of 500 rows against a 4,000-row reference: the rate of windows
   with p <= 0.05 and of runs with any window flagged after Holm (goal: <= 0.05 up to Monte-Carlo error).
3. Power: the same with window 6 changed (HYPOVOLEMIA's prior 0.2 -> 0.35): how often it is flagged, and how
   often its mechanism (HYPOVOLEMIA) is the one named.
4. The effect size MMD²_u with its 95% interval (:func:`bnfisher.comparison.effect_interval`) under no change
   and under the change of 3., for windows of 10^3 to 10^6 rows against a reference of the same size (one
   draw each): near zero at every size under no change, stable in n under the change.

Run:  python benchmarks/drift_seeds.py [--runs 40] [--largest 1000000]
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher.comparison.permutation import permutation_statistics
from bnfisher.comparison.two_sample import effect_interval
from bnfisher.data.rows import DistinctRows

ALARM = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bif" / "alarm.bif.gz"
CONSTRUCTIONS = {"default (whole reference, structure per pool)": None, "fit_fraction=0.5 (random split)": 0.5}


def moved(network: bf.BayesianNetwork) -> bf.BayesianNetwork:
    cpts = dict(network.cpts)
    cpts["HYPOVOLEMIA"] = np.array([0.35, 0.65])
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))


def rate(k: float, n: int) -> str:
    return f"{k:.0f}/{n} = {k / n:.3f} ± {np.sqrt(max(k / n * (1 - k / n), 1 / n) / n):.3f}"


def seed_spread(network) -> list:
    reference, window = network.sample(20_000, random_state=0), network.sample(2_000, random_state=1)
    lines = ["| construction | permutations | p over seeds 0-9 | max - min |", "|---|---|---|---|"]
    for (name, fraction), permutations in [*((c, 999) for c in CONSTRUCTIONS.items()),
                                           (next(iter(CONSTRUCTIONS.items())), None)]:
        p = [bf.drift(reference, [window], n_permutations=permutations, fit_fraction=fraction,
                      random_state=seed).windows["p_value"].iloc[0] for seed in range(10)]
        lines.append(f"| {name} | {permutations or 'default (2,999)'} | {min(p):.3f} to {max(p):.3f} | "
                     f"{max(p) - min(p):.3f} |")
    return lines


def size_and_power(network, runs: int) -> list:
    changed = moved(network)
    lines = ["| construction | scenario | windows with p <= 0.05 (unchanged) | runs with an unchanged window flagged "
             "(Holm) | changed window flagged | its mechanism named | seconds per run |",
             "|---|---|---|---|---|---|---|"]
    for name, fraction in CONSTRUCTIONS.items():
        for scenario in ("none", "HYPOVOLEMIA"):
            per_window = any_flag = found = named = 0
            seconds = []
            for run in range(runs):
                rng = np.random.default_rng(run)
                reference = network.sample(4000, random_state=rng)
                windows = [network.sample(500, random_state=rng) for _ in range(10)]
                if scenario != "none":
                    windows[5] = changed.sample(500, random_state=rng)
                started = time.perf_counter()
                table = bf.drift(reference, windows, fit_fraction=fraction, random_state=run).windows
                seconds.append(time.perf_counter() - started)
                clean = table.drop(index=5) if scenario != "none" else table
                per_window += int((clean["p_value"] <= 0.05).sum())
                any_flag += bool(clean["drift"].any())
                if scenario != "none":
                    found += bool(table["drift"].iloc[5])
                    named += table["mechanism"].iloc[5] == "HYPOVOLEMIA"
            clean_windows = runs * (10 if scenario == "none" else 9)
            lines.append(f"| {name} | {scenario} | {rate(per_window, clean_windows)} | {rate(any_flag, runs)} | "
                         + (f"{rate(found, runs)} | {rate(named, runs)}" if scenario != "none" else "— | —")
                         + f" | {np.median(seconds):.1f} |")
    return lines


def effect_sizes(network, largest: int) -> list:
    changed = moved(network)
    lines = ["| rows a side | MMD²_u, no change (95% interval) | MMD²_u, HYPOVOLEMIA changed (95% interval) | "
             "seconds |", "|---|---|---|---|"]
    n = 1000
    while n <= largest:
        started = time.perf_counter()
        cells = []
        for other in (network, changed):
            A, B = network.sample(n, random_state=n), other.sample(n, random_state=n + 1)
            kernel = bf.FisherKernel(bf.learn(A, "chow-liu"))  # fixed: learned on independent data
            X = DistinctRows.of(kernel.encode(network.sample(n, random_state=n + 2)))
            Y = DistinctRows.of(kernel.encode(B))
            stats = permutation_statistics(kernel, X, Y, n_permutations=99, random_state=0, witness=True)
            low, high = effect_interval(stats.unbiased, stats.null.sum(axis=1), (stats.x.witness, X.copies),
                                        (stats.y.witness, Y.copies))
            cells.append(f"{stats.unbiased:.2e} ({low:.2e} to {high:.2e})")
        lines.append(f"| {n:,} | {cells[0]} | {cells[1]} | {time.perf_counter() - started:.1f} |")
        n *= 10
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--largest", type=int, default=1_000_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    network = bf.read_bif(ALARM)
    begin = time.perf_counter()
    lines = [f"Command: `python benchmarks/drift_seeds.py --runs {args.runs} --largest {args.largest}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); rates ± one Monte-Carlo standard "
             "error.", "", "### Seed spread of one unchanged window", ""]
    lines += seed_spread(network)
    lines += ["", "### Size and power over windows", ""] + size_and_power(network, args.runs)
    lines += ["", "### The effect size at every size", ""] + effect_sizes(network, args.largest)
    lines += ["", f"Wall time: {time.perf_counter() - begin:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
