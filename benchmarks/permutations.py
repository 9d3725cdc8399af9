"""The permutation engine's two hot steps: the split draws, and the products that turn them into count tables.

Data: 600,000 rows sampled from *alarm* (tests/data/bif), pooled as a two-sample test of 500,000
against 100,000 rows pools them (the drift benchmark's reference test part and one window), reduced to
distinct rows with their multiplicities.

(a) ``split_draws`` (1,000 splits, best of 3): the Bernoulli sums of the distinct rows with 16 copies
    or fewer added one copy index at a time, beside the former code (float32 uniforms compared with p
    and summed over the short last axis).  Both consume the same random stream and give the same
    splits (checked).
(b) The count tables of 1,000 splits: the sparse (cells x distinct rows) matrix times the splits,
    64 splits per product (what ``permutation_statistics`` uses) beside 8, 16, 32, 128 and 256.
(c) The whole ``permutation_statistics`` (1,000 permutations, best of 3) on one core and on every
    core (the next batch of splits drawn on a second thread while this batch's products run), with
    ``--rows`` rows per sample (default 1,000,000 + 1,000,000, HR's CPT reversed in the second):
    the same statistics, bit for bit (checked).

Run:  python benchmarks/permutations.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher import _parallel
from bnfisher.comparison.permutation import _BERNOULLI_COPIES, permutation_statistics, split_draws

ROOT = Path(__file__).resolve().parent.parent


def numpy_split_draws(multiplicity: np.ndarray, n_first: int, size: int, rng) -> np.ndarray:
    """The former NumPy code of ``split_draws`` (input sorted by multiplicity): the same stream, the same splits."""
    n_total = int(multiplicity.sum())
    p = np.floor(n_first / n_total * 2**24) / 2**24
    rows = np.empty((size, multiplicity.size), dtype=np.int32)
    bounds = np.searchsorted(multiplicity, np.arange(_BERNOULLI_COPIES + 2))
    for copies in range(1, _BERNOULLI_COPIES + 1):
        begin, end = bounds[copies], bounds[copies + 1]
        if end > begin:
            uniforms = rng.random((size, end - begin, copies), dtype=np.float32)
            rows[:, begin:end] = (uniforms < np.float32(p)).sum(axis=2, dtype=np.int32)
    rows[:, : bounds[1]] = 0
    begin = bounds[_BERNOULLI_COPIES + 1]
    if begin < multiplicity.size:
        rows[:, begin:] = rng.binomial(multiplicity[begin:], p, size=(size, multiplicity.size - begin))
    for draw in rows:
        excess = int(draw.sum(dtype=np.int64)) - n_first
        if excess:
            cumulative = np.cumsum(draw if excess > 0 else multiplicity - draw)
            picked = rng.choice(int(cumulative[-1]), size=abs(excess), replace=False)
            np.add.at(draw, np.searchsorted(cumulative, picked, side="right"), -1 if excess > 0 else 1)
    return rows.T


def best_of(function, repeats: int = 3) -> tuple:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), result


def cores(rows: int) -> None:
    """(c): ``permutation_statistics`` on one core (no thread drawing ahead) and on every core."""
    network = bf.read_network(ROOT / "tests" / "data" / "bif" / "alarm.bif.gz")
    kernel = bf.FisherKernel(network)
    changed = dict(network.cpts)
    changed["HR"] = np.asarray(changed["HR"])[..., ::-1].copy()
    other = bf.BayesianNetwork(dict(network.parents), changed, dict(network.states), schema=network.schema)
    X = network.encode(network.sample(rows, random_state=0, as_frame=False).astype(np.int8))
    Y = network.encode(other.sample(rows, random_state=1, as_frame=False).astype(np.int8))
    every = _parallel.resolve_jobs(-1)
    outcomes, seconds = {}, {}
    for n in (1, every):
        _parallel.resolve_jobs = lambda n_jobs, n=n: n_jobs if n_jobs and n_jobs > 0 else n  # a machine of n cores
        seconds[n], outcomes[n] = best_of(lambda: permutation_statistics(kernel, X, Y, n_permutations=1000,
                                                                         random_state=0))
    same = all(np.array_equal(getattr(outcomes[1], name), getattr(outcomes[every], name))
               for name in ("null", "columns_null", "overlap_null"))
    print(f"(c) permutation_statistics, {rows:,} + {rows:,} rows, 1000 permutations (best of 3): one core "
          f"{seconds[1]:.1f} s | {every} cores {seconds[every]:.1f} s | {seconds[1] / seconds[every]:.2f}x; "
          f"the same statistics: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per sample in (c)")
    args = parser.parse_args()
    network = bf.read_network(ROOT / "tests" / "data" / "bif" / "alarm.bif.gz")
    data = network.sample(600_000, random_state=0)
    kernel = bf.FisherKernel(network)
    units = kernel.columns(kernel.encode(data))
    multiplicity = np.sort(units.multiplicity)
    print(f"python benchmarks/permutations.py (bnfisher {bf.__version__}, {datetime.date.today()}): alarm, "
          f"600,000 rows pooled, {units.n_units:,} distinct rows, 500,000 sent to the first sample")
    size = 1000
    ours_time, ours = best_of(lambda: split_draws(multiplicity, 500_000, size, random_state=1))
    reference, theirs = best_of(lambda: numpy_split_draws(multiplicity, 500_000, size, np.random.default_rng(1)))
    assert np.array_equal(ours, theirs), "the draws differ from the former code's"
    print(f"(a) split_draws, {size} splits (best of 3): sums by copy index {ours_time:.2f} s | sums over the last "
          f"axis (former code) {reference:.2f} s | {reference / ours_time:.1f}x; the same splits")
    matrix = units.cell_matrix(np.float32).tocsc()
    order = np.argsort(units.multiplicity, kind="stable")
    matrix = matrix[:, order]
    splits = np.ascontiguousarray(ours, dtype=np.float32)
    line = []
    for width in (8, 16, 32, 64, 128, 256):
        def products(width=width):
            for first in range(0, size, width):
                matrix @ np.ascontiguousarray(splits[:, first: first + width])
        seconds, _ = best_of(products)
        line.append(f"{width}: {seconds:.2f} s" + (" (used)" if width == 64 else ""))
    print(f"(b) count tables of {size} splits, sparse {matrix.shape[0]} x {matrix.shape[1]:,} matrix, by splits per "
          f"product (best of 3): " + " | ".join(line))
    cores(args.rows)


if __name__ == "__main__":
    main()
