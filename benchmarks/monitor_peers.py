"""A year of weekly monitoring, side by side: bnfisher against Evidently, NannyML, deepchecks and whylogs.

The same simulated years as ``benchmarks/monitor_year.py`` (asia; a reference of 5,000 rows and 52 weekly windows
of 500 rows): years without change, and years whose CPT of ``dysp`` given ``bronc``/``either`` has its most
frequent row rolled from week 27 on (a change in a dependence: every column's marginal moves little).  Every tool
sees the same rows.  bnfisher runs ``bnfisher.monitor`` once a week on a fresh SQLite store with its defaults
(alpha 0.05 over a horizon of 52 windows); each peer runs its documented drift quick-start with its default
thresholds in its own virtual environment (``benchmarks/_monitor_peer.py`` states what each one is and what
counts as its alarm).

Printed: the share of years without change that raised any alarm (a false alarm: what a person on call meets),
the false alarms per year, and for the change, the weeks from the change to the first alarm.

Run:  python benchmarks/monitor_peers.py [--years 20] [--change-years 6] [--peers evidently nannyml ...]
      with the peers' environments at /tmp/v_TOOL (``python -m venv /tmp/v_evidently &&
      /tmp/v_evidently/bin/pip install evidently "pandas<3" pyarrow``; likewise nannyml (+ statsmodels "pandas<3"),
      deepchecks (+ "numpy<2" "pyarrow<20" "scikit-learn<1.6" "category-encoders<2.7" "pandas<2.3" ipython) and
      whylogs (+ scipy ipython "pandas<3")).
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf

HERE = Path(__file__).resolve().parent
ASIA = HERE.parent / "tests" / "fixtures" / "bif" / "asia.bif.gz"
WEEKS, CHANGE, WINDOW, REFERENCE = 52, 26, 500, 5000
PEERS = ("evidently", "nannyml", "deepchecks", "whylogs")  # evidently reports two alarm rules


def changed(network: bf.BayesianNetwork) -> bf.BayesianNetwork:
    """dysp's most frequent CPT row (bronc = no, either = no) rolled by one state."""
    cpts = dict(network.cpts)
    dysp = np.array(cpts["dysp"], dtype=float)
    dysp[1, 1] = np.roll(dysp[1, 1], 1)
    cpts["dysp"] = dysp
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))


def draw_year(network, other, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = [network.sample(REFERENCE, random_state=rng).assign(week=-1)]
    for week in range(WEEKS):
        source = other if other is not None and week >= CHANGE else network
        parts.append(source.sample(WINDOW, random_state=rng).assign(week=week))
    return pd.concat(parts, ignore_index=True)


def bnfisher_year(frame: pd.DataFrame, seed: int) -> tuple:
    reference = frame[frame["week"] < 0].drop(columns="week")
    alarms, seconds = [], []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "history.db"
        for week, window in frame[frame["week"] >= 0].groupby("week"):
            begin = time.perf_counter()
            run = bf.monitor(reference, {f"week {week:02d}": window.drop(columns="week")}, store=store,
                             random_state=seed * 100 + int(week))
            seconds.append(time.perf_counter() - begin)
            if not run.alarms.empty:
                alarms.append(int(week))
    return alarms, float(np.median(seconds))


def peer_years(tool: str, folder: Path) -> dict:
    """``{rule: {year: (alarmed weeks, seconds per window)}}`` from the tool's own environment."""
    python = Path(f"/tmp/v_{tool}/bin/python")
    if not python.exists():
        print(f"{tool}: no environment at {python.parent.parent}; left out")
        return {}
    done = subprocess.run([str(python), str(HERE / "_monitor_peer.py"), tool, str(folder)], capture_output=True,
                          text=True)
    if done.returncode:
        print(f"{tool} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
        return {}
    out: dict = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            out.setdefault(row["tool"], {})[row["year"]] = (row["alarms"], row["seconds"])
    return out


def describe(name: str, quiet: list, changes: list) -> str:
    alarmed = sum(bool(a) for a, _ in quiet)
    n = len(quiet)
    se = np.sqrt(max(alarmed * (n - alarmed), 1) / n**3)
    per_year = np.mean([len(a) for a, _ in quiet])
    early = sum(any(w < CHANGE for w in a) for a, _ in changes)
    delays = [min(w for w in a if w >= CHANGE) - CHANGE for a, _ in changes if any(w >= CHANGE for w in a)]
    caught = (f"{np.median(delays):.0f} ({min(delays)}–{max(delays)}), {len(delays)}/{len(changes)} years"
              if delays else f"not caught in {len(changes)} years")
    seconds = np.median([s for _, s in quiet + changes])
    return (f"| {name} | {alarmed}/{n} = {alarmed / n:.2f} ± {se:.2f} | {per_year:.2f} | {early}/{len(changes)} | "
            f"{caught} | {seconds:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--years", type=int, default=20)
    parser.add_argument("--change-years", type=int, default=6)
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    network = bf.read_bif(ASIA)
    other = changed(network)
    begin = time.perf_counter()
    lines = [f"Command: `python benchmarks/monitor_peers.py --years {args.years} --change-years {args.change_years}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); asia, reference {REFERENCE:,} rows, "
             f"{WEEKS} weekly windows of {WINDOW} rows; each tool's defaults.", "",
             "| tool | years without change with an alarm | false alarms per year | change years with an alarm "
             "before the change | weeks from the change to the first alarm (median, range) | seconds per window "
             "(median) |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as folder:
        quiet_dir, change_dir = Path(folder) / "quiet", Path(folder) / "change"
        quiet_dir.mkdir()
        change_dir.mkdir()
        seeds = {"quiet": range(args.years), "change": range(1000, 1000 + args.change_years)}
        ours: dict = {"quiet": [], "change": []}
        for kind, where in (("quiet", quiet_dir), ("change", change_dir)):
            for seed in seeds[kind]:
                frame = draw_year(network, other if kind == "change" else None, seed)
                frame.to_parquet(where / f"year-{seed:04d}.parquet", index=False)
                ours[kind].append(bnfisher_year(frame, seed))
        lines.append(describe("bnfisher monitor", ours["quiet"], ours["change"]))
        print(lines[-1], flush=True)
        for tool in args.peers:
            quiet, change = peer_years(tool, quiet_dir), peer_years(tool, change_dir)
            for rule in quiet:
                if rule in change:
                    lines.append(describe(rule, list(quiet[rule].values()), list(change[rule].values())))
                    print(lines[-1], flush=True)
    lines += ["", f"Wall time: {time.perf_counter() - begin:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
