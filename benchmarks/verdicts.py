"""What the verdict sentence claims, read as a user reads it: planted single-CPT changes, `compare` with its defaults.

The networks are ones the mechanism search was not tuned on (sachs, survey, water, hepar2 from bnlearn; the search
was tuned on alarm, child, insurance, hailfinder and win95pts in ``benchmarks/mechanisms.py``).  Each run plants
one change as ``benchmarks/mechanisms.py`` does (one CPT row of a root, a middle node or a leaf rolled by one
state), draws A from the network and B from the changed copy, and calls ``bnfisher.compare(A, B)`` with its
defaults.  Then it reads ``result.verdict()``, the sentence a user reads: the variables it claims changed are those
it names outside the changed cell's text ("Largest change: ...") and outside "given ..." conditions.

Per run: the verdict names the planted variable; it names it first; it makes **a claim about an unchanged
variable** (goal: at most 5% of single-change verdicts); it says the tables differ at all.  Beside it, in the same
run, the mechanism table (``result.mechanisms``): an unchanged variable flagged.  Rates with one Monte-Carlo
standard error.

Run:  python benchmarks/verdicts.py [--runs 5] [--networks sachs survey water hepar2] [--sizes 500 2000]
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
import warnings

import numpy as np
import pandas as pd

import bnfisher as bf
from mechanisms import POSITIONS, SHARED, plant, positions, rate

UNTUNED = ("sachs", "survey", "water", "hepar2")


def claimed(verdict: str, variables) -> list:
    """Return the variables a verdict claims changed, in the order it names them."""
    if "differ (p" not in verdict:
        return []
    sentences = re.split(r"(?<=\.) (?=[A-Z])", re.split(r"\)[;,] ", verdict, maxsplit=1)[-1])
    text = " ".join(s for s in sentences if not s.startswith("Largest change:"))  # the cell is no claim
    text = re.sub(r" given [^;()]*?(?= \(|;|\.$|$)", "", text)  # nor are the conditions of a family
    found = []
    for variable in variables:
        for match in re.finditer(rf"(?<![\w-]){re.escape(str(variable))}(?![\w-])", text):
            found.append((match.start(), variable))
    return [v for _, v in sorted(found)]


def one_run(net, variable, n, seed, frequencies) -> dict | None:
    planted = plant(net, variable, frequencies)
    if planted is None:
        return None
    other = planted[0]
    first, second = net.sample(n, random_state=seed), other.sample(n, random_state=seed + 10_000)
    started = time.perf_counter()
    result = bf.compare(first, second, names=("first sample", "second sample"), random_state=seed)
    seconds = time.perf_counter() - started
    verdict = result.verdict()
    named = claimed(verdict, net.variables)
    flagged = result.mechanisms.loc[result.mechanisms["changed"].astype(bool), "variable"].tolist()
    return {"differ": result.test.p_value <= 0.05, "named": variable in named,
            "first": bool(named) and named[0] == variable, "claim_unchanged": any(v != variable for v in named),
            "table_unchanged": any(v != variable for v in flagged), "seconds": seconds, "verdict": verdict}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--networks", nargs="+", default=list(UNTUNED))
    parser.add_argument("--sizes", nargs="+", type=int, default=[500, 2000])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    begin = time.perf_counter()
    records = []
    for name in args.networks:
        path = SHARED / f"{name}.bif"
        if not path.exists():
            sys.exit(f"needs {path} (the bnlearn networks in ../shared/data/bif)")
        net = bf.read_bif(path)
        frequencies = net.sample(20_000, random_state=12345)
        for position, candidates in positions(net).items():
            for n in args.sizes:
                for run in range(args.runs):
                    rng = np.random.default_rng([len(name), POSITIONS.index(position), n, run, 59])
                    variable = candidates[int(rng.integers(len(candidates)))]
                    outcome = one_run(net, variable, n, int(rng.integers(2**31)), frequencies)
                    if outcome is not None:
                        records.append({"network": name, "position": position, "n": n, "variable": variable}
                                       | outcome)
                        print({k: v for k, v in records[-1].items()}, file=sys.stderr, flush=True)
    table = pd.DataFrame(records)
    print(f"Command: `python benchmarks/verdicts.py --runs {args.runs} --networks {' '.join(args.networks)} --sizes "
          f"{' '.join(map(str, args.sizes))}` ({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); "
          "rates ± one Monte-Carlo standard error.\n")
    print("| network | runs | tables differ | verdict names the change | names it first | verdict claims an "
          "unchanged variable | mechanism table flags an unchanged variable | seconds (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, group in [*table.groupby("network", sort=False), ("all", table)]:
        print(f"| {name} | {len(group)} | {rate(group['differ'])} | {rate(group['named'])} | {rate(group['first'])} | "
              f"{rate(group['claim_unchanged'])} | {rate(group['table_unchanged'])} | "
              f"{group['seconds'].median():.1f} |")
    share = table["claim_unchanged"].mean()
    print(f"\nGoal: a claim about an unchanged variable in at most 5% of single-change verdicts: "
          f"{100 * share:.1f}% ({'met' if share <= 0.05 else 'missed'}). "
          f"Wall time {time.perf_counter() - begin:.0f} s.")
    wrong = table[table["claim_unchanged"]]
    for _, row in wrong.head(8).iterrows():
        print(f"- {row['network']} {row['position']} {row['variable']} n={row['n']}: {row['verdict']}")


if __name__ == "__main__":
    main()
