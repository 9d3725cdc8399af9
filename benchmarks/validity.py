"""Size of the two-sample test by where its network was fitted: the pool, one sample alone, or a reference split.

Both samples are drawn (with replacement) from the same table, so every rejection is a false one; the rate should
be at most alpha.  For each of R repetitions: A and B of n rows from nursery; a Chow-Liu network (pseudocount 1)
fitted (a) on A and B pooled, (b) on A alone, (c) on a random half of A (``reference_split``), the test then
comparing the other half of A with B.  ``mmd_test`` with 200 permutations, alpha = 0.05.

Run:  python benchmarks/validity.py [--repetitions 400]   (about 2 minutes)
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.comparison.validity import reference_split
from bnfisher.datasets import load

ALPHA = 0.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=400)
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    table = load("nursery")
    rng = np.random.default_rng(0)
    rejections = {"pool": 0, "first sample alone": 0, "reference split": 0}
    start = time.perf_counter()
    for _ in range(args.repetitions):
        rows = table.iloc[rng.integers(0, len(table), 2 * args.n)].reset_index(drop=True)
        A, B = rows.iloc[: args.n], rows.iloc[args.n:]
        cases = {"pool": (bf.learn(pd.concat([A, B])), A), "first sample alone": (bf.learn(A), A)}
        fit, rest = reference_split(A, random_state=rng)
        cases["reference split"] = (bf.learn(fit, schema=bf.Schema.from_data(table)), rest)
        for name, (network, first) in cases.items():
            p = bf.mmd_test(bf.FisherKernel(network), first, B, n_permutations=200, random_state=rng).p_value
            rejections[name] += p <= ALPHA
    r = args.repetitions
    print(f"Command: `python benchmarks/validity.py --repetitions {r} --n {args.n}` "
          f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); nursery, n = m = {args.n}, "
          f"200 permutations, alpha = {ALPHA}; Monte-Carlo standard error {np.sqrt(ALPHA * (1 - ALPHA) / r):.3f} "
          "at a true size of 0.05.\n")
    print("| network fitted on | size (false rejections) |\n|---|---|")
    for name, k in rejections.items():
        print(f"| {name} | {k / r:.3f} ± {np.sqrt(k / r * (1 - k / r) / r):.3f} |")
    print(f"\nWall time: {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    main()
