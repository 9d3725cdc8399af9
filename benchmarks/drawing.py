"""Pictures and reports against the analysis they show: ``summarize``, its plot and its HTML report, timed apart.

Tables: mushroom (8,124 rows with real missing cells, ``../shared/data/uci``; nursery when it is absent) and
1,000,000 rows sampled from the alarm network (37 variables), k = 50 on mushroom and k = 200 on alarm, the
default options otherwise (``n_init=1000``, ``n_random=1000``).  Each figure is the best of ``--repeats`` runs
in this process, after one untimed warm-up run of each step (matplotlib's and the report's first import).
Goal: the plot and the report each take at most the analysis's own time.

Run:  python benchmarks/drawing.py [--rows 1000000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
import warnings
from pathlib import Path

import pandas as pd

import bnfisher as bf
from bnfisher.datasets import load
from permutations import best_of  # benchmarks/permutations.py (this folder is on the path)

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data" / "uci"
ALARM = HERE.parent / "tests" / "fixtures" / "bif" / "alarm.bif.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    mushroom = SHARED / "mushroom.csv.gz"
    tables = {"mushroom": (pd.read_csv(mushroom, dtype=str), 50)} if mushroom.exists() else {
        "nursery": (load("nursery"), 50)}
    tables[f"alarm, {args.rows:,} rows"] = (bf.read_bif(ALARM).sample(args.rows, random_state=0), 200)
    print(f"Command: `python benchmarks/drawing.py --rows {args.rows} --repeats {args.repeats}` "
          f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); best of {args.repeats}.\n")
    print("| table | k | analysis (summarize) | plot (PNG) | HTML report | plot / analysis | report / analysis |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, (frame, k) in tables.items():
            def analyse(frame=frame, k=k):
                return bf.summarize(frame, k, random_state=0)

            result = analyse()  # warm-up (compilation, first imports)
            result.plot(Path(folder) / "warm.png")
            result.to_html(Path(folder) / "warm.html")
            analysis, result = best_of(analyse, args.repeats)
            plot, _ = best_of(lambda result=result: result.plot(Path(folder) / "subset.png"), args.repeats)
            report, _ = best_of(lambda result=result: result.to_html(Path(folder) / "subset.html"), args.repeats)
            print(f"| {name} | {k} | {analysis:.2f} s | {plot:.2f} s | {report:.2f} s | {plot / analysis:.2f} | "
                  f"{report / analysis:.2f} |", flush=True)


if __name__ == "__main__":
    main()
