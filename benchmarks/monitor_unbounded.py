"""A guarantee without a horizon: three years of weekly monitoring under both guarantees, and what it costs in power.

``bnfisher.monitor(guarantee="horizon")`` tests every window at alpha / 52: at most alpha over 52 windows, so up to
3 alpha over three years.  ``guarantee="unbounded"`` tests the store's k-th window at alpha 52 / ((k + 51)(k + 52)):
at most alpha over every window, ever.  Generator: the *asia* network (tests/fixtures/bif), reference 5,000 rows,
weekly windows of 500 rows, alpha = 0.05.

1. The promise, by arithmetic: the bound on any false alarm after 1, 2, 3 and 10 years (the levels' sum).
2. Simulated years: each stream draws a reference and three years of weekly windows and runs ``bnfisher.monitor``
   once a year (52 new windows a run) on a fresh SQLite store under each guarantee, the same windows and seeds for
   both.  Without change: the share of streams with any alarm by the end of each year.  With a change from week 27
   of year 2 (window 79) on: the week of the first alarm after it.
3. Power against the level: changed windows, each tested once by ``bnfisher.drift`` with a fixed budget of
   permutations that reaches every level shown; the share that alarms at the level of window 1, 52, 104 and 156
   under each guarantee (what the unbounded guarantee costs as the store ages), with its Monte-Carlo error.

Run:  python benchmarks/monitor_unbounded.py [--streams 30] [--change-streams 8] [--power-windows 100]
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
from bnfisher.comparison.spending import WindowLevels

ASIA = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bif" / "asia.bif.gz"
WEEKS, YEARS, WINDOW, CHANGE = 52, 3, 500, 52 + 26  # the change from window 79 (0-based 78) on
GUARANTEES = ("horizon", "unbounded")


def changed(network: bf.BayesianNetwork, kind: str) -> bf.BayesianNetwork:
    """The network with one mechanism changed: smoke's prior, or dysp's CPT row of its commonest parents."""
    cpts = dict(network.cpts)
    if kind == "smoke":
        cpts["smoke"] = np.array([0.6, 0.4])
    else:
        dysp = np.array(cpts["dysp"], dtype=float)
        dysp[1, 1] = [0.2, 0.8]  # bronc = no, either = no: 0.1 -> 0.2
        cpts["dysp"] = dysp
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))


def stream(network, other, seed: int) -> dict:
    """Three years of windows under each guarantee; return the windows (0-based) that alarmed, and the seconds."""
    rng = np.random.default_rng(seed)
    reference = network.sample(5000, random_state=rng)
    weeks = [(other if other is not None and k >= CHANGE else network).sample(WINDOW, random_state=rng)
             for k in range(WEEKS * YEARS)]
    found = {}
    for guarantee in GUARANTEES:
        alarms, seconds = [], 0.0
        with tempfile.TemporaryDirectory() as folder:
            for year in range(YEARS):
                batch = {f"week {k:03d}": weeks[k] for k in range(year * WEEKS, (year + 1) * WEEKS)}
                started = time.perf_counter()
                run = bf.monitor(reference, batch, store=Path(folder) / "h.db", guarantee=guarantee,
                                 random_state=seed * 10 + year)
                seconds += time.perf_counter() - started
                alarms += [int(label.split()[1]) for label in run.alarms["label"]]
        found[guarantee] = (alarms, seconds)
    return found


def power(network, kind: str, windows: int, permutations: int) -> list:
    """Fixed-budget p-values of changed windows, each against its own reference."""
    other = changed(network, kind)
    p_values = []
    for seed in range(windows):
        rng = np.random.default_rng(50_000 + seed)
        reference, window = network.sample(5000, random_state=rng), other.sample(WINDOW, random_state=rng)
        result = bf.drift(reference, {"week": window}, n_permutations=permutations, stopping="fixed",
                          random_state=seed)
        p_values.append(float(result.windows["p_value"].iloc[0]))
    return p_values


def _rate(hits: int, n: int) -> str:
    return f"{hits}/{n} = {hits / n:.3f} ± {np.sqrt(max(hits * (n - hits), 1) / n**3):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=30)
    parser.add_argument("--change-streams", type=int, default=8)
    parser.add_argument("--power-windows", type=int, default=100)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    network = bf.read_bif(ASIA)
    begin = time.perf_counter()
    levels = {g: WindowLevels(0.05, WEEKS, g) for g in GUARANTEES}
    lines = [f"Command: `python benchmarks/monitor_unbounded.py --streams {args.streams} --change-streams "
             f"{args.change_streams} --power-windows {args.power_windows}` ({datetime.date.today().isoformat()}, "
             f"bnfisher {bf.__version__}); asia, reference 5,000 rows, weekly windows of {WINDOW} rows, alpha 0.05, "
             "horizon 52.", "",
             "| guarantee | bound on any false alarm: 1 year | 2 years | 3 years | 10 years | level of window 1 | "
             "52 | 104 | 156 |", "|---|---|---|---|---|---|---|---|---|"]
    for g, spending in levels.items():
        bounds = " | ".join(f"{min(spending.spent(WEEKS * y), 1.0):.3f}" for y in (1, 2, 3, 10))
        shown = " | ".join(f"{spending.levels(k, 1)[0]:.2e}" for k in (1, 52, 104, 156))
        lines.append(f"| {g} | {bounds} | {shown} |")
    print("\n".join(lines), flush=True)

    lines = ["", "| scenario | streams | guarantee | any alarm by year 1 | by year 2 | by year 3 | first alarm after "
                 "the change (weeks: median, range; caught) | seconds per 52-window run |",
             "|---|---|---|---|---|---|---|---|"]
    quiet = [stream(network, None, seed) for seed in range(args.streams)]
    for g in GUARANTEES:
        by_year = [sum(any(a < WEEKS * y for a in s[g][0]) for s in quiet) for y in (1, 2, 3)]
        lines.append(f"| no change | {args.streams} | {g} | " + " | ".join(_rate(h, args.streams) for h in by_year)
                     + f" | — | {np.median([s[g][1] for s in quiet]) / YEARS:.1f} |")
    for kind, what in (("smoke", "smoke's prior 0.5 → 0.6"), ("dysp", "dysp's commonest row 0.1 → 0.2")):
        runs = [stream(network, changed(network, kind), 1000 + seed) for seed in range(args.change_streams)]
        for g in GUARANTEES:
            early = sum(any(a < CHANGE for a in r[g][0]) for r in runs)
            after = [[a - CHANGE for a in r[g][0] if a >= CHANGE] for r in runs]
            delays = [min(a) for a in after if a]
            caught = (f"{np.median(delays):.0f} ({min(delays)}–{max(delays)}); {len(delays)}/{len(runs)}"
                      if delays else f"not caught in {len(runs)}")
            lines.append(f"| from window {CHANGE + 1}: {what} | {len(runs)} | {g} | false alarms before the change: "
                         f"{early}/{len(runs)} | | | {caught} | {np.median([r[g][1] for r in runs]) / YEARS:.1f} |")
        print("\n".join(lines), flush=True)
        lines = []

    if args.power_windows:
        permutations = 39_999  # reaches 2.5e-5, below every level shown
        lines = ["", f"Power against the level ({args.power_windows} changed windows per change, each against its own "
                     f"reference, {permutations} permutations, stopping='fixed'; ± one Monte-Carlo standard error):",
                 "", "| change | guarantee | window 1 | window 52 | window 104 | window 156 |",
                 "|---|---|---|---|---|---|"]
        for kind, what in (("smoke", "smoke's prior 0.5 → 0.6"), ("dysp", "dysp's commonest row 0.1 → 0.2")):
            p = np.array(power(network, kind, args.power_windows, permutations))
            for g, spending in levels.items():
                cells = " | ".join(_rate(int(np.sum(p <= spending.levels(k, 1)[0])), p.size) for k in (1, 52, 104, 156))
                lines.append(f"| {what} | {g} | {cells} |")
    lines += ["", f"Wall time: {time.perf_counter() - begin:.0f} s."]
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
