"""The aggregate test's p-value lattice: its size at alpha = 0.01 and 0.05 by the number of permutations.

The aggregate's p-value is a rank among the B + 1 splits, so it lies on {1, 2, ..., B + 1} / (B + 1), and the
weighted min-p it ranks ties often when B is small (it is itself made of rank p-values): the test is then
conservative at small alpha.  This script measures, under an exact null (the rows of one table split at random
into two samples of 400, a network learned on the rest), the rejection rate at alpha = 0.01 and 0.05 for
B = 99 and B = 999, beside the lattice's bound, with the Monte-Carlo standard error of each rate.

    python benchmarks/lattice.py --runs 400

Writes nothing; docs/statistics.md quotes its output with the command and the date.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import bnfisher as bf
from bnfisher.comparison import mmd_test
from bnfisher.datasets import load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="null splits per number of permutations")
    args = parser.parse_args()
    data = load("nursery")
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    print(f"{'B':>5} {'runs':>5} {'P(p <= 0.01)':>16} {'P(p <= 0.05)':>16} {'smallest p':>11}")
    for n_permutations in (99, 999):
        p_values = []
        for _ in range(args.runs):
            order = rng.permutation(len(data))
            fit, a, b = data.iloc[order[:4000]], data.iloc[order[4000:4400]], data.iloc[order[4400:4800]]
            kernel = bf.FisherKernel(bf.learn(fit, "chow-liu"))
            p_values.append(mmd_test(kernel, a, b, n_permutations=n_permutations, random_state=rng,
                                     method="aggregate").p_value)
        p = np.asarray(p_values)
        cells = []
        for alpha in (0.01, 0.05):
            rate = float(np.mean(p <= alpha))
            cells.append(f"{rate:.4f} ± {np.sqrt(max(rate * (1 - rate), 1e-12) / len(p)):.4f}")
        print(f"{n_permutations:>5} {len(p):>5} {cells[0]:>16} {cells[1]:>16} {1 / (n_permutations + 1):>11.4g}")
    print(f"({time.perf_counter() - started:.0f} s; nursery, splits of 400 against 400, Chow-Liu on 4,000 other rows)")


if __name__ == "__main__":
    main()
