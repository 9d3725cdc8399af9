"""``mmd_by_family`` and ``mmd_test`` at scale: 1,000 permutations on alarm, time and memory.

Both draw permutations over *distinct* rows (multivariate hypergeometric copies per distinct row, a batch of
permutations as one pass over the distinct rows' cells). The reference, in the same run: permuting rows and
recounting them (``kernel.mmd`` of the two re-split samples), timed on 5 permutations and extrapolated to 1,000.

With ``--rows 10000000`` (the goals: 10M + 10M rows, 1,000 permutations, under 3 minutes, >= 10x the row method,
and peak memory <= 2x the samples' codes), the row-permutation reference is timed at a tenth of the rows and
extrapolated linearly (it recounts every row per permutation), and the rows are sampled as int8 codes in blocks of
10^6. Memory during ``mmd_test`` is the resident memory sampled every 2 ms, beside the memory before the call
(the samples, the interpreter and its libraries); the process peak includes sampling the rows.

Run:  python benchmarks/explain.py [--rows 1000000] [--permutations 1000]
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher.comparison import mmd_test
from bnfisher.comparison.explain import mmd_by_family

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bif"  # shipped with the tests


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def rss_gib() -> float:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


class PeakMemory:
    """The largest resident memory seen (every 2 ms) inside the ``with`` block, and the memory before it."""

    def __enter__(self) -> PeakMemory:
        self.before = self.peak = rss_gib()
        self._stop = threading.Event()

        def watch() -> None:
            while not self._stop.wait(0.002):
                self.peak = max(self.peak, rss_gib())

        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_gib())


def sample(network, rows: int, seed: int) -> bf.EncodedData:
    """``rows`` rows of int8 codes, drawn in blocks of 10^6 (10^7 rows of intp codes would take 3 GB)."""
    rng = np.random.default_rng(seed)
    blocks = [network.sample(min(10**6, rows - start), random_state=rng, as_frame=False).astype(np.int8)
              for start in range(0, rows, 10**6)]
    return network.encode(np.vstack(blocks))


def run(network, rows: int, permutations: int, reference_rows: int) -> None:
    kernel = bf.FisherKernel(network)
    changed = dict(network.cpts)
    changed["HR"] = np.asarray(changed["HR"])[..., ::-1].copy()
    other = bf.BayesianNetwork(dict(network.parents), changed, dict(network.states), schema=network.schema)
    X, Y = sample(network, rows, 0), sample(other, rows, 1)
    with PeakMemory() as memory:
        start = time.perf_counter()
        test = mmd_test(kernel, X, Y, n_permutations=permutations, random_state=0)
        t_test = time.perf_counter() - start
    # the row-permutation reference: permute the pooled rows and recount (linear in the rows)
    pooled = np.vstack([X.codes[:reference_rows], Y.codes[:reference_rows]])
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(5):
        order = rng.permutation(len(pooled))
        kernel.mmd(bf.EncodedData(pooled[order[:reference_rows]], X.variables, X.states),
                   bf.EncodedData(pooled[order[reference_rows:]], X.variables, X.states))
    t_rows = (time.perf_counter() - start) / 5 * permutations * rows / reference_rows
    measured = "" if reference_rows == rows else f", timed at {reference_rows:,} + {reference_rows:,} and extrapolated"
    line = (f"{rows:,} + {rows:,} rows, {permutations} permutations: mmd_test {t_test:.1f} s (row permutations "
            f"{t_rows:.0f} s{measured}; {t_rows / t_test:.0f}x slower); test p {test.p_value:.3g}")
    if rows <= 10**6:
        start = time.perf_counter()
        table = mmd_by_family(kernel, X, Y, n_permutations=permutations, random_state=0)
        line += (f"; mmd_by_family {time.perf_counter() - start:.1f} s, top family {table.iloc[0]['variable']} "
                 f"({100 * table.iloc[0]['share']:.1f}%, adjusted p {table.iloc[0]['p_adjusted']:.3g})")
    codes = (X.codes.nbytes + Y.codes.nbytes) / 2**30
    print(line + f"; memory during mmd_test: peak {memory.peak:.2f} GiB, {memory.peak - memory.before:.2f} GiB above "
          f"the {memory.before:.2f} GiB before it (the samples' codes: {codes:.2f} GiB; peak / codes "
          f"{memory.peak / codes:.1f}, added / codes {(memory.peak - memory.before) / codes:.1f}); process peak "
          f"{peak_gib():.2f} GiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--permutations", type=int, default=1000)
    args = parser.parse_args()
    network = bf.read_bif(BIF_DIR / "alarm.bif.gz")
    run(network, args.rows // 10, args.permutations, args.rows // 10)
    run(network, args.rows, args.permutations, min(args.rows, 10**6))


if __name__ == "__main__":
    main()
