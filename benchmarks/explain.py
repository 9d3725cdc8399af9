"""``mmd_by_family`` at scale: 1,000 permutations on 1,000,000 + 1,000,000 rows of alarm, time and memory.

Beside it, in the same run: ``mmd_test`` on the same data and permutations (the total statistic only, the
reference cost), and both at 100,000 + 100,000 rows to show the linear scaling.

Run:  python benchmarks/explain.py [--rows 1000000] [--permutations 1000]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher.explain import mmd_by_family
from bnfisher.selection import mmd_test

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "bif"  # shipped with the tests


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run(network, rows: int, permutations: int) -> None:
    kernel = bf.FisherKernel(network)
    changed = dict(network.cpts)
    changed["HR"] = np.asarray(changed["HR"])[..., ::-1].copy()
    other = bf.BayesianNetwork(dict(network.parents), changed, dict(network.states), schema=network.schema)
    X = network.encode(network.sample(rows, random_state=0, as_frame=False))
    Y = other.encode(other.sample(rows, random_state=1, as_frame=False))
    start = time.perf_counter()
    test = mmd_test(kernel, X, Y, n_permutations=permutations, random_state=0)
    t_test = time.perf_counter() - start
    start = time.perf_counter()
    table = mmd_by_family(kernel, X, Y, n_permutations=permutations, random_state=0)
    t_family = time.perf_counter() - start
    print(f"{rows:,} + {rows:,} rows, {permutations} permutations: mmd_by_family {t_family:.1f} s "
          f"(mmd_test alone {t_test:.1f} s); top family {table.iloc[0]['variable']} "
          f"({100 * table.iloc[0]['share']:.1f}%, adjusted p {table.iloc[0]['p_adjusted']:.3g}); "
          f"test p {test.p_value:.3g}; peak memory {peak_gib():.2f} GiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--permutations", type=int, default=1000)
    args = parser.parse_args()
    network = bf.read_bif(BIF_DIR / "alarm.bif.gz")
    run(network, args.rows // 10, args.permutations)
    run(network, args.rows, args.permutations)


if __name__ == "__main__":
    main()
