"""Representative subsets of tables with missing cells, judged the way a user checks them: column by column.

For each table and k, ``bnfisher.summarize`` under each candidate rule -- ``auto`` (the default: complete and
incomplete rows chosen apart, in the table's proportions), ``complete`` (the earlier default: complete rows only,
against the whole table) and ``all`` (every row in one search) -- is scored by what
:func:`bnfisher.summary.fidelity.column_fidelity` measures: the share of 200 random subsets of size k whose mean
per-column total-variation distance (observed labels) is larger than the subset's ("beats"), the two means, the
common labels (>= 5% of a column) the subset lacks and how often random subsets lack them, and the share of
incomplete rows in the subset against the table's.  The kernel MMD² against random subsets is printed beside it.

Tables with real missing cells: mushroom (stalk-root, 30.5% of rows) and adult (workclass, occupation,
native-country; numeric columns in 4 quantile bins) from ``../shared/data/uci``; tables with cells removed by the
benchmark: nursery (bundled) with 10% of cells removed completely at random (MCAR), and with the cells of
``health = not_recom`` and ``finance = inconv`` removed with probability 0.5 (MNAR: whether a cell is missing
depends on its value).

Run:  python benchmarks/subset_fidelity.py [--k 50 200] [--seeds 2]
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.datasets import load

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "uci"
RULES = ("auto", "complete", "all")


def tables() -> dict:
    out = {}
    if (SHARED / "mushroom.csv.gz").exists():
        out["mushroom"] = pd.read_csv(SHARED / "mushroom.csv.gz", dtype=str)
    if (SHARED / "adult.csv.gz").exists():
        out["adult"] = pd.read_csv(SHARED / "adult.csv.gz")
    nursery = load("nursery").astype(object)
    rng = np.random.default_rng(0)
    out["nursery MCAR 10%"] = nursery.mask(rng.random(nursery.shape) < 0.10)
    mnar = nursery.copy()
    for column, label in (("health", "not_recom"), ("finance", "inconv")):
        hide = (mnar[column] == label).to_numpy() & (rng.random(len(mnar)) < 0.5)
        mnar.loc[hide, column] = None
    out["nursery MNAR"] = mnar
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    begin = time.perf_counter()
    lines = [f"Command: `python benchmarks/subset_fidelity.py --k {' '.join(map(str, args.k))} --seeds {args.seeds}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); 200 random subsets per run, "
             "n_init=200; figures are means over the seeds.", "",
             "| table | incomplete rows | k | candidates | beats (per column) | mean TV: subset / random | common "
             "labels lost (random subsets lack them) | incomplete rows in the subset | MMD² beats | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, table in tables().items():
        bins = 4 if name == "adult" else None
        share = float(table.isna().any(axis=1).mean())
        for k in args.k:
            for rule in RULES:
                runs = []
                for seed in range(args.seeds):
                    started = time.perf_counter()
                    result = bf.summarize(table, k, bins=bins, n_init=200, n_random=200, random_state=seed,
                                          candidates=rule)
                    found = result.fidelity
                    runs.append((found.beaten, found.mean_tv, float(found.random_tv.mean()), len(found.lost),
                                 float(np.mean([m for *_, m in found.lost])) if found.lost else np.nan,
                                 found.incomplete[0], float(np.mean(result.random_mmd2 > result.mmd2)),
                                 time.perf_counter() - started))
                # nanmean: "how often random subsets lack the lost labels" is undefined when none is lost
                beaten, tv, random_tv, lost, missed, incomplete, mmd, seconds = np.nanmean(np.array(runs), axis=0)
                lost_text = f"{lost:.1f}" + (f" ({100 * missed:.0f}%)" if np.isfinite(missed) else "")
                lines.append(f"| {name} | {100 * share:.1f}% | {k} | {rule} | {100 * beaten:.0f}% | {tv:.4f} / "
                             f"{random_tv:.4f} | {lost_text} | {100 * incomplete:.1f}% | {100 * mmd:.0f}% | "
                             f"{seconds:.1f} |")
                print(lines[-1], flush=True)
    lines += ["", f"Wall time: {time.perf_counter() - begin:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
