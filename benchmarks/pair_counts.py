"""Every pair's count table from the one-hot Gram matrix, beside the compiled row pass that counted them before.

Chow-Liu's tree (``compare``'s and ``drift``'s default network, refitted on every drift window's pool) asks for the
count table of every pair of columns. ``NumpyCounts.counts`` now takes them from ``H^T H`` (``H`` the one-hot rows,
a block at a time, BLAS in float32; ``bnfisher.data._pair_gram``). The reference, in the same run: the compiled row
pass (``count_block`` with the kernels compiled), which counted them before. Both give the same tables, checked
here cell by cell; ``tests/data/test_counts.py`` checks them against a count of each row by hand. Also the same with
the rows as distinct rows and their copies (whole-number weights, as ``drift`` holds a reference), and the whole of
``mutual_information_matrix`` (the tree's weights) through the provider. Data: ``--n`` rows of each network; best of
3 wall times, both ways on the same threads (the row pass on every core, BLAS with its own threads).

Run:  python benchmarks/pair_counts.py [--networks alarm hepar2 andes pathfinder] [--n 10000]
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher._utils.jit import _materialise
from bnfisher.bn.structure.chow_liu import mutual_information_matrix
from bnfisher.data._pair_gram import pair_tables
from bnfisher.data.counts import count_block, distinct_rows
from bnfisher.data.providers import NumpyCounts
from kernel import best_of  # benchmarks/kernel.py: the best of 3 wall times

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["alarm", "hepar2", "andes", "pathfinder"])
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from mechanisms import network

    _materialise()  # the reference at its best: the row pass compiled
    lines = [f"Command: `python benchmarks/pair_counts.py --networks {' '.join(args.networks)} --n {args.n}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}).", "",
             "| network | columns, states, pairs | Gram (s) | row pass, compiled (s) | same tables | "
             "distinct rows: Gram (s) | row pass (s) | same | mutual information, all pairs (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in args.networks:
        net = network(name)
        encoded = net.encode(net.sample(args.n, random_state=0))
        codes, cards = encoded.codes, np.asarray(net.cardinalities)
        pairs = [(a, b) for a in range(cards.size) for b in range(a + 1, cards.size)]
        count_block(codes, pairs[:2], cards, n_jobs=None)  # compiled before timing
        gram, ours = best_of(pair_tables, codes, pairs, cards, missing=False)
        rows, theirs = best_of(count_block, codes, pairs, cards, n_jobs=None)
        same = all(np.array_equal(a, b) for a, b in zip(ours, theirs))
        first, _, multiplicity = distinct_rows(codes, cards, with_inverse=False)
        distinct, copies = codes[first], multiplicity.astype(np.float64)
        weighted_gram, ours_w = best_of(pair_tables, distinct, pairs, cards, weights=copies,
                                        missing=False)
        weighted_rows, theirs_w = best_of(count_block, distinct, pairs, cards, copies, n_jobs=None)
        same_w = all(np.array_equal(a, b) for a, b in zip(ours_w, theirs_w))
        provider = NumpyCounts(codes, encoded.schema)
        information, _ = best_of(mutual_information_matrix, provider)
        lines.append(f"| {name} | {cards.size}, {int(cards.sum())}, {len(pairs):,} | {gram:.3f} | {rows:.3f} | "
                     f"{same} | {weighted_gram:.3f} | {weighted_rows:.3f} | {same_w} | {information:.3f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
