"""Drift's four stoppings side by side in one run: false alarms, verdicts, permutations, time, seed spread.

Generator: the *alarm* network (tests/fixtures/bif), whose truth is known.  Each run draws a 4,000-row
reference and 10 windows of 500 rows; ``bnfisher.drift`` runs on them four times with one seed:
``stopping="fixed"`` (every permutation, 2,999 per window), ``"checkpoints"``
(:class:`bnfisher.comparison.EarlyStop`: stop after 199 permutations when the p-value is above 0.15, after 999
when above 0.10), ``"anytime"`` (:class:`bnfisher.comparison.AnytimeTest` at Holm's first level 0.05 / 10, cap
5,998) and ``"futility"`` (the default: the same rule, stopping only to accept).

1. Size: --runs runs with no change: the rate of windows with p <= 0.05 and of runs with a window flagged
   after Holm, for each (goal: <= 0.05 up to Monte-Carlo error; an anytime p-value is a bound, so its rate of
   p <= 0.05 is lower).
2. Verdicts under change: the same with window 5 drawn with P(HYPOVOLEMIA = TRUE) --shift instead of 0.2
   (near the edge of detection, where Monte-Carlo error decides most): how often each flags it, and how
   often the verdicts differ.
3. Work: permutations per window (mean) and seconds per run, each way.
4. Seed spread: one unchanged window of 2,000 rows against a 20,000-row reference, seeds 0..9: max - min of
   its p-value, each way (goal for the default: at most 0.10, or the decision stored and said).

Run:  python benchmarks/early_stop.py [--runs 40] [--shift 0.3]
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings
from pathlib import Path

import numpy as np

import bnfisher as bf

ALARM = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bif" / "alarm.bif.gz"
WAYS = {"stopping='fixed' (every permutation)": "fixed", "stopping='checkpoints' (Besag-Clifford)": "checkpoints",
        "stopping='anytime'": "anytime", "stopping='futility' (default)": "futility"}


def moved(network: bf.BayesianNetwork, shift: float) -> bf.BayesianNetwork:
    cpts = dict(network.cpts)
    cpts["HYPOVOLEMIA"] = np.array([shift, 1 - shift])
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))


def rate(k: float, n: int) -> str:
    return f"{k:.0f}/{n} = {k / n:.3f} ± {np.sqrt(max(k / n * (1 - k / n), 1 / n) / n):.3f}"


def runs(network, n_runs: int, shift: float) -> list:
    changed = moved(network, shift)
    lines = ["| scenario | test | windows with p <= 0.05 (unchanged) | runs with an unchanged window flagged (Holm) "
             "| changed window flagged | permutations per window (mean) | seconds per run |",
             "|---|---|---|---|---|---|---|"]
    for scenario in ("none", f"P(HYPOVOLEMIA) 0.2 -> {shift:g}"):
        tallies = {way: dict(small=0, any=0, found=0, done=[], seconds=[]) for way in WAYS}
        differ = 0
        for run in range(n_runs):
            rng = np.random.default_rng(run)
            reference = network.sample(4000, random_state=rng)
            windows = [network.sample(500, random_state=rng) for _ in range(10)]
            if scenario != "none":
                windows[5] = changed.sample(500, random_state=rng)
            flagged = {}
            for way, early in WAYS.items():
                started = time.perf_counter()
                result = bf.drift(reference, windows, random_state=run, stopping=early)
                tally = tallies[way]
                tally["seconds"].append(time.perf_counter() - started)
                table = result.windows
                clean = table.drop(index=5) if scenario != "none" else table
                tally["small"] += int((clean["p_value"] <= 0.05).sum())
                tally["any"] += int(clean["drift"].any())
                tally["done"] += result.windows["permutations"].tolist()
                flagged[way] = bool(table["drift"].iloc[5])
                tally["found"] += flagged[way]
            differ += len(set(flagged.values())) > 1
        n_clean = n_runs * (10 if scenario == "none" else 9)
        for way, tally in tallies.items():
            found = rate(tally["found"], n_runs) if scenario != "none" else "-"
            lines.append(f"| {scenario} | {way} | {rate(tally['small'], n_clean)} | {rate(tally['any'], n_runs)} | "
                         f"{found} | {np.mean(tally['done']):.0f} | {np.median(tally['seconds']):.2f} |")
        lines.append(f"| {scenario} | runs whose window-5 verdicts differ between the four | | | "
                     f"{rate(differ, n_runs)} | | |")
    return lines


def seed_spread(network) -> list:
    reference, window = network.sample(20_000, random_state=0), network.sample(2_000, random_state=1)
    lines = ["| test | p over seeds 0-9 | max - min | permutations (mean) |", "|---|---|---|---|"]
    for way, early in WAYS.items():
        results = [bf.drift(reference, [window], random_state=seed, stopping=early) for seed in range(10)]
        p = [r.windows["p_value"].iloc[0] for r in results]
        done = [r.windows["permutations"].iloc[0] for r in results]
        lines.append(f"| {way} | {min(p):.3f} to {max(p):.3f} | {max(p) - min(p):.3f} | {np.mean(done):.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--shift", type=float, default=0.3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    network = bf.read_network(ALARM)
    started = time.perf_counter()
    print(f"python benchmarks/early_stop.py --runs {args.runs} --shift {args.shift} (bnfisher {bf.__version__}, "
          f"{datetime.date.today().isoformat()})\n")
    print("\n".join(runs(network, args.runs, args.shift)))
    print()
    print("\n".join(seed_spread(network)))
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
