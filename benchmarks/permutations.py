"""The permutation engine's two hot steps: the split draws, and the products that turn them into count tables.

Data: 600,000 rows sampled from *alarm* (tests/fixtures/bif), pooled as a two-sample test of 500,000
against 100,000 rows pools them (the drift benchmark's reference test part and one window), reduced to
distinct rows with their multiplicities.

(a) ``split_draws(method="bernoulli")`` (1,000 splits, best of 3): the Bernoulli sums of the distinct rows
    with 16 copies or fewer added one copy index at a time, beside the former code (float32 uniforms compared with p
    and summed over the short last axis).  Both consume the same random stream and give the same
    splits (checked).
(b) The count tables of 1,000 splits, by splits per pass (64 is what ``permutation_statistics`` uses;
    8 to 256): one compiled pass over the distinct rows' cell index (``KernelColumns.cell_sums``,
    reading the splits as drawn) beside the former code, a sparse (cells x distinct rows) CSC matrix
    in float32 times a transposed float32 copy of the splits.  The same tables (checked).
(c) The whole ``permutation_statistics`` (1,000 permutations, best of 3) on one core and on every
    core (the next batch of splits drawn on a second thread while this batch's products run), with
    ``--rows`` rows per sample (default 1,000,000 + 1,000,000, HR's CPT reversed in the second):
    the same statistics, bit for bit (checked).
(e) ``conditional_family_tests`` on the samples of (c) as distinct rows: their count tables by the package's
    counting kernel (``count_block``, every core) beside a bincount per family and sample (the former
    code), the same tables (checked); and the whole tests on one core and on every core, the same
    p-values (checked).
(d) ``distinct_rows`` of ``--distinct`` alarm rows (default 2,000,000; int8 codes, best of 3): blocks of
    2^20 rows sorted on every core and merged, beside ``np.unique(axis=0)`` with the inverse and counts
    (NumPy's reference, run once): the same distinct rows and counts (checked).

(f) ``split_draws``' two exact methods side by side (1,000 splits, best of 3): ``"subsets"`` (NumPy's ``choice``
    of the smaller sample's rows, counted by distinct row) and ``"bernoulli"`` (a Bernoulli draw per row copy,
    then the excess removed), in a drift window's hash bucket (``--bucket`` pooled alarm rows, default 122,000, a
    tenth and a hundredth of them drawn) and in a pool with many copies per distinct row; and whether
    ``method="auto"`` (a cost model of the inputs alone) takes the faster.

Run:  python benchmarks/permutations.py [--rows 1000000] [--distinct 2000000] [--bucket 122000] [--steps abcdef]
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import bnfisher as bf
from bnfisher._utils import parallel as _parallel
from bnfisher._utils.jit import _materialise
from bnfisher.comparison.permutation import permutation_statistics
from bnfisher.comparison.splits import BERNOULLI_COPIES as _BERNOULLI_COPIES
from bnfisher.comparison.splits import split_draws
from bnfisher.data.counts import distinct_rows

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
    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
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
    parser.add_argument("--distinct", type=int, default=2_000_000, help="rows in (d)")
    parser.add_argument("--bucket", type=int, default=122_000, help="pooled rows in (f)")
    parser.add_argument("--steps", default="abcdef", help="the parts to run, e.g. 'f'")
    args = parser.parse_args()
    if set(args.steps) <= set("cdef"):  # the parts that need no split draws of (a)
        print(f"python benchmarks/permutations.py (bnfisher {bf.__version__}, {datetime.date.today()})")
        _rest(args)
        return
    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
    data = network.sample(600_000, random_state=0)
    kernel = bf.FisherKernel(network)
    units = kernel.columns(kernel.encode(data))
    multiplicity = np.sort(units.multiplicity)
    print(f"python benchmarks/permutations.py (bnfisher {bf.__version__}, {datetime.date.today()}): alarm, "
          f"600,000 rows pooled, {units.n_units:,} distinct rows, 500,000 sent to the first sample")
    size = 1000
    ours_time, ours = best_of(lambda: split_draws(multiplicity, 500_000, size, random_state=1, method="bernoulli"))
    reference, theirs = best_of(lambda: numpy_split_draws(multiplicity, 500_000, size, np.random.default_rng(1)))
    assert np.array_equal(ours, theirs), "the draws differ from the former code's"
    print(f"(a) split_draws, {size} splits (best of 3): sums by copy index {ours_time:.2f} s | sums over the last "
          f"axis (former code) {reference:.2f} s | {reference / ours_time:.1f}x; the same splits")
    order = np.argsort(units.multiplicity, kind="stable")
    units.renumber(order)  # as permutation_statistics does: the units in the splits' order
    cells = units.cells
    width = cells.shape[1]
    matrix = sp.csc_matrix((np.ones(cells.size, dtype=np.float32), cells.ravel().astype(np.int32),
                            np.arange(0, cells.size + 1, width, dtype=np.int64)),
                           shape=(units.n_cells + 1, units.n_units))[: units.n_cells]
    splits = np.ascontiguousarray(ours.T)  # a split per row, as drawn
    _materialise()
    line, same = [], True
    for step in (8, 16, 32, 64, 128, 256):
        out = np.empty((units.n_cells + 1, step), dtype=np.float32)

        def compiled(step=step, out=out):
            for first in range(0, size, step):
                units.cell_sums(splits[first: first + step], dtype=np.float32, out=out)

        def former(step=step):
            for first in range(0, size, step):
                matrix @ np.ascontiguousarray(splits[first: first + step].T, dtype=np.float32)

        ours_time, _ = best_of(compiled)
        reference, _ = best_of(former)
        same &= np.array_equal(units.cell_sums(splits[:step], dtype=np.float32),
                               matrix @ np.ascontiguousarray(splits[:step].T, dtype=np.float32))
        line.append(f"{step}: {ours_time:.2f} s against {reference:.2f} s" + (" (used)" if step == 64 else ""))
    print(f"(b) count tables of {size} splits, {units.n_units:,} distinct rows x {width} families, compiled pass "
          f"over the cell index against the sparse matrix product (former code), by splits per pass (best of 3): "
          + " | ".join(line) + f"; the same tables: {same}")
    _rest(args)


def _rest(args) -> None:
    """Run (c), (e), (d) and (f) as ``--steps`` asks."""
    if "c" in args.steps:
        cores(args.rows)
    if "e" in args.steps:
        family_tests(args.rows)
    if "d" in args.steps:
        distinct(args.distinct)
    if "f" in args.steps:
        subsets(args.bucket)


def subsets(n_total: int) -> None:
    """(f): the two exact ways of drawing splits, side by side, and the one ``method="auto"`` takes."""
    from bnfisher.comparison.splits import draws_by_subsets

    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
    cases = []
    for label, rows, share in ((f"a drift window's bucket: {n_total:,} alarm rows, a tenth drawn", n_total, 10),
                               ("a drift window's bucket, a hundredth drawn", n_total, 100),
                               ("a test of 50,000 + 50,000 alarm rows (many copies)", 100_000, 2)):
        codes = network.encode(network.sample(rows, random_state=0, as_frame=False).astype(np.int8)).codes
        _, _, multiplicity = distinct_rows(codes)
        cases.append((label, multiplicity.astype(np.int64), np.full(1000, rows // share, dtype=np.int64)))
    for label, multiplicity, first in cases:
        out = np.empty((first.size, multiplicity.size), dtype=np.int32)
        seconds = {}
        for method in ("subsets", "bernoulli"):
            def draw(method=method, multiplicity=multiplicity, first=first, out=out):
                return split_draws(multiplicity, first, first.size, random_state=1, out=out, method=method)
            seconds[method] = best_of(draw)[0]
        chosen = "subsets" if draws_by_subsets(multiplicity, first) else "bernoulli"
        faster = min(seconds, key=seconds.get)
        print(f"(f) {label} ({multiplicity.size:,} distinct rows), {first.size} splits (best of 3): subsets "
              f"{seconds['subsets']:.3f} s | bernoulli {seconds['bernoulli']:.3f} s | auto takes {chosen}: "
              f"{'the faster' if chosen == faster else 'NOT the faster'}")


def family_tests(rows: int) -> None:
    """(e): the family tests' tables against a bincount per family, and the tests on one core and on every core."""
    from bnfisher.comparison import conditional_family_tests
    from bnfisher.comparison.attribution import family_tables
    from bnfisher.data.rows import DistinctRows

    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
    changed = dict(network.cpts)
    changed["HR"] = np.asarray(changed["HR"])[..., ::-1].copy()
    other = bf.BayesianNetwork(dict(network.parents), changed, dict(network.states), schema=network.schema)
    samples = []
    for model, seed in ((network, 0), (other, 1)):
        reduced = DistinctRows.of(network.encode(model.sample(rows, random_state=seed, as_frame=False).astype(np.int8)))
        samples.append((reduced.encoded.codes, reduced.copies.astype(np.float64)))
    pairs = list(enumerate(network.parent_indices()))
    cards = network.cardinalities

    def bincounts() -> list:  # the former code: the rows observed on the family, then a bincount, per sample
        out = []
        for i, parents in pairs:
            columns = [*parents, i]
            tables = []
            for codes, copies in samples:
                observed = np.all(codes[:, columns] >= 0, axis=1)
                index = np.ravel_multi_index(codes[observed][:, columns].T, [int(cards[c]) for c in columns])
                tables.append(np.bincount(index, weights=copies[observed], minlength=int(np.prod(
                    [int(cards[c]) for c in columns]))).reshape(-1, int(cards[i])))
            out.append(tuple(tables))
        return out

    ours_time, ours = best_of(lambda: family_tables(cards, pairs, samples))
    reference, theirs = best_of(bincounts)
    same = all(a is None or all(np.array_equal(x, y) for x, y in zip(a, b)) for a, b in zip(ours, theirs))
    every = _parallel.resolve_jobs(-1)
    outcomes, seconds = {}, {}
    for n in (1, every):
        _parallel.resolve_jobs = lambda n_jobs, n=n: n_jobs if n_jobs and n_jobs > 0 else n  # a machine of n cores
        seconds[n], outcomes[n] = best_of(lambda: conditional_family_tests(network, *samples, random_state=0))
    equal = np.array_equal(outcomes[1].p_value, outcomes[every].p_value)
    print(f"(e) family tests, {rows:,} + {rows:,} rows ({outcomes[1].n_permutations} permutations): tables by the "
          f"counting kernel {ours_time:.2f} s | a bincount per family (former code) {reference:.2f} s | "
          f"{reference / ours_time:.1f}x, the same tables: {same}; the whole tests (best of 3) one core "
          f"{seconds[1]:.2f} s | {every} cores {seconds[every]:.2f} s | {seconds[1] / seconds[every]:.2f}x; the same "
          f"p-values: {equal}")


def distinct(rows: int) -> None:
    """(d): ``distinct_rows`` against ``np.unique(axis=0)``."""
    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
    encoded = network.encode(np.vstack([network.sample(min(10**6, rows - start), random_state=start,
                                                       as_frame=False).astype(np.int8)
                                        for start in range(0, rows, 10**6)]))
    codes = encoded.codes
    ours_time, (first, inverse, copies) = best_of(lambda: distinct_rows(codes, encoded.cardinalities))
    reference, (unique, _, counts) = best_of(lambda: np.unique(codes, axis=0, return_inverse=True,
                                                               return_counts=True), repeats=1)
    same = unique.shape[0] == first.size and np.array_equal(np.sort(counts), np.sort(copies)) and \
        np.array_equal(codes[first][inverse], codes)
    print(f"(d) distinct_rows, {rows:,} alarm rows, {first.size:,} distinct (best of 3): {ours_time:.2f} s | "
          f"np.unique(axis=0) (once) {reference:.2f} s | {reference / ours_time:.0f}x; the same rows and counts: "
          f"{same}")


if __name__ == "__main__":
    main()
