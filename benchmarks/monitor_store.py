"""A monitor run's cost against its store's age: one new window, an empty store beside a store of 10,000 windows.

Goal (issue "a monitor you can leave in cron"): a store of 10,000 windows changes a one-window run's time and peak
memory by at most 1.2x.  Each stored window carries a real comparison result (that of a changed nursery window, as
JSON), so the store is as large as a real one.  Each run is a fresh process (its peak resident memory is its own),
the two stores interleaved, ``--repeats`` times; the dashboard's size is printed for each.

Run:  python benchmarks/monitor_store.py [--windows 10000] [--repeats 3] [--permutations 999]
"""

from __future__ import annotations

import argparse
import datetime
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ONE_RUN = """
import resource, sys, time, warnings
import pandas as pd
import bnfisher as bf
warnings.simplefilter("ignore")
reference, week = pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2])
started = time.perf_counter()
run = bf.monitor(reference, {"new week": week}, store=sys.argv[3], dashboard=sys.argv[4],
                 n_permutations=int(sys.argv[5]), horizon=1)
seconds = time.perf_counter() - started
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, run.totals[0])
"""


def build(folder: Path, n_windows: int, permutations: int) -> tuple:
    """Write the tables and the two stores; return their paths."""
    import bnfisher as bf
    from bnfisher.datasets import load
    from bnfisher.store import Store

    data = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    data.iloc[:4000].to_csv(folder / "reference.csv", index=False)
    data.iloc[4000:5000].to_csv(folder / "week.csv", index=False)
    changed = data.iloc[5000:6000].copy()
    changed["finance"] = "inconv"
    seed_store = folder / "seed.db"
    bf.monitor(data.iloc[:4000], {"changed": changed}, store=seed_store, n_permutations=permutations, horizon=1)
    with Store(seed_store) as opened:
        record = opened.windows(results=True).iloc[0].to_dict()
    record["result"] = json.dumps(record["result"])
    empty, full = folder / "empty.db", folder / "full.db"
    Store(empty).close()
    run = {"started": "2026-01-01T00:00:00+00:00", "reference": "reference", "reference_digest": "r", "alpha": 0.05,
           "horizon": 52, "min_effect": None}
    start = np.datetime64("2000-01-03")
    with Store(full) as opened:
        for first in range(0, n_windows, 500):
            rows = []
            for k in range(first, min(first + 500, n_windows)):
                day = str(start + np.timedelta64(7 * k, "D"))
                rows.append(dict(record, window_key=f"key-{k}", label=day, start=day, end=day, alarm=k % 97 == 0,
                                 signalled=1))
            opened.append(run, [{c: v for c, v in r.items() if c not in ("run_id", "started")} for r in rows])
    return folder / "reference.csv", folder / "week.csv", empty, full, len(record["result"])


def one_run(paths: tuple, store: Path, permutations: int, folder: Path) -> tuple:
    """One monitor run of the new week on a copy of ``store``, in a fresh process: seconds, peak MiB, page KiB."""
    copy = folder / f"run-{store.name}"
    shutil.copy(store, copy)
    page = folder / "dashboard.html"
    out = subprocess.run([sys.executable, "-c", ONE_RUN, str(paths[0]), str(paths[1]), str(copy), str(page),
                          str(permutations)], capture_output=True, text=True, check=True).stdout.split()
    size = page.stat().st_size / 1024
    copy.unlink()
    return float(out[0]), float(out[1]), size, int(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--permutations", type=int, default=999)
    args = parser.parse_args()
    print(f"# benchmarks/monitor_store.py --windows {args.windows} --repeats {args.repeats} --permutations "
          f"{args.permutations}  ({datetime.date.today()})")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        started = time.perf_counter()
        *paths, empty, full, result_bytes = build(folder, args.windows, args.permutations)
        print(f"stores built in {time.perf_counter() - started:.0f} s: {args.windows} windows, each result "
              f"{result_bytes / 1024:.0f} KiB of JSON; the full store {full.stat().st_size / 2**20:.0f} MiB")
        measured: dict = {"empty": [], "full": []}
        for _ in range(args.repeats):
            for label, store in (("empty", empty), ("full", full)):
                measured[label].append(one_run(tuple(paths), store, args.permutations, folder))
        print(f"{'store':>24} {'seconds (median)':>17} {'peak MiB (median)':>18} {'dashboard KiB':>14}")
        medians = {}
        for label in ("empty", "full"):
            runs = np.array([m[:3] for m in measured[label]])
            medians[label] = np.median(runs, axis=0)
            windows = measured[label][0][3]
            print(f"{f'{label} ({windows} windows after)':>24} {medians[label][0]:17.2f} {medians[label][1]:18.0f} "
                  f"{medians[label][2]:14.0f}")
        ratio = medians["full"] / medians["empty"]
        verdict = "met" if ratio[0] <= 1.2 and ratio[1] <= 1.2 else "missed"
        print(f"ratio full / empty: time {ratio[0]:.2f}x, memory {ratio[1]:.2f}x (goal <= 1.2x: {verdict})")
        print(f"this process's peak: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
