"""A year of weekly monitoring, simulated: the false-alarm rate without change, and how fast a change is caught.

Generator: the *asia* network (tests/fixtures/bif), whose truth is known.  Each simulated year draws a reference of
5,000 rows and 52 weekly windows of 500 rows, and runs ``bnfisher.monitor`` once a week (one window per run) on a
fresh SQLite store, with the defaults: alpha = 0.05 over a horizon of 52 windows, so each window is tested at
0.05 / 52.  The guarantee: a year without change raises an alarm with probability at most 0.05.

1. No change: the share of years with any alarm (goal <= 0.05, up to Monte-Carlo error).
2. A change from week 27 on (the prior of ``smoke`` moves from 0.5 to 0.65, or the CPT of ``dysp`` given
   ``bronc``/``either`` has its most frequent row rolled): the week of the first alarm, counted from the change
   (0: caught in the first changed week), and the false alarms before it.

3. With ``--size-runs N``: N independent unchanged windows (a fresh reference and window each), each tested once by
   ``bnfisher.drift`` with the monitor's permutations; the share with p <= 0.05 and <= 0.01 (the per-window size,
   whose excess a year's Bonferroni bound multiplies by 52).

Run:  python benchmarks/monitor_year.py [--years 40] [--change-years 10] [--size-runs 0]
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import bnfisher as bf

ASIA = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bif" / "asia.bif.gz"
WEEKS, CHANGE, WINDOW = 52, 26, 500


def changed(network: bf.BayesianNetwork, kind: str) -> bf.BayesianNetwork:
    cpts = dict(network.cpts)
    if kind == "smoke":
        cpts["smoke"] = np.array([0.65, 0.35])
    else:
        dysp = np.array(cpts["dysp"], dtype=float)
        dysp[1, 1] = np.roll(dysp[1, 1], 1)  # bronc = no, either = no: the most frequent configuration
        cpts["dysp"] = dysp
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))


def year(network, other, seed: int) -> tuple:
    """Run 52 weekly monitors; return the weeks that alarmed (0-based) and the seconds per run."""
    rng = np.random.default_rng(seed)
    reference = network.sample(5000, random_state=rng)
    seconds, alarms = [], []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "history.db"
        for week in range(WEEKS):
            source = other if other is not None and week >= CHANGE else network
            window = source.sample(WINDOW, random_state=rng)
            started = time.perf_counter()
            run = bf.monitor(reference, {f"week {week:02d}": window}, store=store, random_state=seed * 100 + week)
            seconds.append(time.perf_counter() - started)
            if not run.alarms.empty:
                alarms.append(week)
    return alarms, float(np.median(seconds))


def window_size(network, runs: int) -> str:
    """The share of unchanged windows, each with its own reference, whose drift p-value is <= 0.05 and <= 0.01."""
    p_values = []
    for seed in range(runs):
        rng = np.random.default_rng(10_000 + seed)
        reference, window = network.sample(5000, random_state=rng), network.sample(WINDOW, random_state=rng)
        result = bf.drift(reference, {"week": window}, n_permutations=4159, random_state=seed)
        p_values.append(float(result.windows["p_value"].iloc[0]))
    p = np.array(p_values)
    parts = []
    for level in (0.05, 0.01):
        rate = float(np.mean(p <= level))
        parts.append(f"p <= {level}: {int(np.sum(p <= level))}/{runs} = {rate:.3f} ± "
                     f"{np.sqrt(level * (1 - level) / runs):.3f} (standard error at the nominal level)")
    return f"Per-window size, {runs} independent unchanged windows: " + "; ".join(parts) + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--years", type=int, default=40)
    parser.add_argument("--change-years", type=int, default=10)
    parser.add_argument("--size-runs", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    network = bf.read_bif(ASIA)
    if args.size_runs:
        print(window_size(network, args.size_runs), flush=True)
    if not args.years:
        return
    begin = time.perf_counter()
    quiet = [year(network, None, seed) for seed in range(args.years)]
    alarmed = sum(bool(a) for a, _ in quiet)
    se = np.sqrt(max(alarmed * (args.years - alarmed), 1) / args.years**3)
    lines = [f"Command: `python benchmarks/monitor_year.py --years {args.years} --change-years {args.change_years}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); asia, reference 5,000 rows, 52 "
             f"weekly windows of {WINDOW} rows, one monitor run a week on a fresh SQLite store, defaults (alpha 0.05 "
             "over 52 windows).", "",
             "| scenario | years | years with an alarm before any change | first alarm after the change (weeks, "
             "median and range) | seconds per weekly run (median) |", "|---|---|---|---|---|",
             f"| no change | {args.years} | {alarmed}/{args.years} = {alarmed / args.years:.3f} ± {se:.3f} | — | "
             f"{np.median([s for _, s in quiet]):.2f} |"]
    for kind, what in (("smoke", "smoke's prior 0.5 → 0.65"), ("dysp", "one row of dysp's CPT rolled")):
        other = changed(network, kind)
        runs = [year(network, other, 1000 + seed) for seed in range(args.change_years)]
        early = sum(any(w < CHANGE for w in a) for a, _ in runs)
        delays = [min(w for w in a if w >= CHANGE) - CHANGE for a, _ in runs if any(w >= CHANGE for w in a)]
        caught = f"{np.median(delays):.0f} ({min(delays)}–{max(delays)}), caught in {len(delays)}/{len(runs)} years" \
            if delays else f"not caught in {len(runs)} years"
        lines.append(f"| from week {CHANGE + 1}: {what} | {len(runs)} | {early}/{len(runs)} | {caught} | "
                     f"{np.median([s for _, s in runs]):.2f} |")
    lines += ["", f"Wall time: {time.perf_counter() - begin:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
