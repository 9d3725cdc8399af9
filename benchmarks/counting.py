"""One counting pass over in-memory codes beside its per-core bound and the former pass, on one thread and two.

Data: 10^7 rows sampled from alarm (37 variables), encoded as ``bnfisher.encode`` keeps them (int8 codes).  The
pass counts the 37 families of the network (``bnfisher.data.count_block``, the kernel every in-memory counts
provider uses).  The bound: ``np.bincount`` alone over a precomputed configuration index of the same length, once
per family (what counting costs when the index is free).  Two threads: ``count_block(..., n_jobs=2)``, the
rows split between two threads (in-memory counts providers use every core for a block this large).  The
former pass, in the same run: a mixed-radix index and an ``np.bincount`` per family (``count_family``), the
families split between two threads.
Goals (issue "performance"): a counting pass within 3x of the per-core bound; at least 1.7x on 2 cores against
1, the same tables.

``--fallback``: the compiler's NumPy fallback (``_numpy_count``, what a small job runs before numba pays) on a
call of the mechanism search's hill climb (6,700 weighted alarm rows, one child with each of the other 36 columns
as a parent), and its range check beside the former one (a pair of comparisons per counted column).

Run:  python benchmarks/counting.py [--rows 10000000] [--fallback]   (about a minute)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher._utils.parallel import map_threads
from bnfisher.data.counts import configuration_index, count_block, count_family
from kernel import best_of  # benchmarks/kernel.py: the best of 3 wall times

BIF = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bif" / "alarm.bif.gz"


def per_family(codes, families, cards, threads: int) -> list:
    """The former pass: one index and one ``np.bincount`` per family, the families dealt to ``threads`` threads."""

    def part(start: int) -> list:
        buffer = np.empty(codes.shape[0], dtype=np.intp)
        return [count_family(codes, families[k], cards, buffer=buffer) for k in range(start, len(families), threads)]

    parts = list(map_threads(part, range(threads), n_jobs=threads))
    return [parts[k % threads][k // threads] for k in range(len(families))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--fallback", action="store_true", help="time the NumPy fallback of one small call instead")
    args = parser.parse_args()
    if args.fallback:
        fallback()
        return
    network = bf.read_bif(BIF)
    codes = network.encode(network.sample(args.rows, random_state=0)).codes
    cards = network.cardinalities
    families = [tuple(p) + (i,) for i, p in enumerate(network.parent_indices())]
    index = configuration_index(codes, families[0], cards)
    bound = best_of(lambda: [np.bincount(index, minlength=64) for _ in families])[0]
    one = best_of(lambda: count_block(codes, families, cards, n_jobs=1))[0]
    two = best_of(lambda: count_block(codes, families, cards, n_jobs=2))[0]
    former_one = best_of(lambda: per_family(codes, families, cards, 1))[0]
    former_two = best_of(lambda: per_family(codes, families, cards, 2))[0]
    tables = count_block(codes, families, cards, n_jobs=1)
    same = all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in
               zip(tables, count_block(codes, families, cards, n_jobs=2), per_family(codes, families, cards, 1)))
    increments = len(families) * args.rows
    print(f"alarm, {args.rows:,} rows x {codes.shape[1]} columns ({codes.dtype} codes), {len(families)} families")
    print(f"  bound (np.bincount over a ready index, per family): {bound:.3f} s "
          f"({increments / bound:.2e} increments/s)")
    print(f"  count_block, one thread:  {one:.3f} s ({increments / one:.2e} increments/s) = "
          f"{one / bound:.2f}x the bound (goal <= 3x)")
    print(f"  count_block, two threads: {two:.3f} s = {one / two:.2f}x one thread (goal >= 1.7x); same tables: {same}")
    print(f"  former pass (an index and np.bincount per family): one thread {former_one:.3f} s "
          f"({former_one / one:.1f}x count_block's), two threads {former_two:.3f} s ({former_one / former_two:.2f}x)")


def fallback() -> None:
    """The NumPy fallback on one hill-climbing call; its range check beside the former column-by-column one."""
    from bnfisher.data import _row_counts

    count = _row_counts._numpy_count  # noqa: SLF001 - the fallback itself is what is timed
    network = bf.read_bif(BIF)
    codes = np.asfortranarray(network.encode(network.sample(6_700, random_state=0)).codes)
    cards = network.cardinalities
    families = [(u, 5) for u in range(codes.shape[1]) if u != 5]
    members, offsets, strides, states, table_offsets = _row_counts.packed_families(families, cards)
    weights = np.random.default_rng(0).integers(1, 3, codes.shape[0]).astype(np.float64)
    columns, first = np.unique(members, return_index=True)

    def check(rows):  # the check in the fallback now: two reductions over the counted columns
        block = rows[:, columns]
        if block.min() < 0 or (block.max(axis=0) >= states[first]).any():
            return int(np.argmax(((block < 0) | (block >= states[first])).any(axis=1)))
        return -1

    def former(rows):  # the former check: a pair of comparisons per counted column
        outside = np.zeros(rows.shape[0], dtype=bool)
        for column in np.unique(members):
            r = states[np.argmax(members == column)]
            outside |= (rows[:, column] < 0) | (rows[:, column] >= r)
        return int(np.argmax(outside)) if outside.any() else -1

    def call():
        out = np.zeros(int(table_offsets[-1]))
        return count(codes, 0, codes.shape[0], members, offsets, strides, states, table_offsets, weights, out)

    whole = best_of(lambda: [call() for _ in range(50)])[0] / 50
    now = best_of(lambda: [check(codes) for _ in range(50)])[0] / 50
    before = best_of(lambda: [former(codes) for _ in range(50)])[0] / 50
    bad = codes.copy()
    bad[4_000, 7], bad[5_000, 3] = -1, 9
    same = check(codes) == former(codes) == -1 and check(bad) == former(bad) == 4_000
    print(f"NumPy fallback, one call ({codes.shape[0]:,} weighted rows, {len(families)} families): "
          f"{1e3 * whole:.3f} ms, "
          f"of which the range check {1e3 * now:.3f} ms; the former check {1e3 * before:.3f} ms (the call "
          f"{(whole - now + before) / whole:.2f}x as long with it); the same rows found: {same}")


if __name__ == "__main__":
    main()
