"""The aggregate test's p-values from permutations computed once, beside the per-column tails they used to take.

``bnfisher.comparison.aggregate_pvalues`` turns the permutation statistics into the aggregate test's p-value. Its
``columns`` component needs, for every split, the smallest Pearson tail over the columns; a tail falls as its
statistic grows, so among the columns of one number of degrees of freedom it is the largest statistic's: one tail
per split and distinct ``df``.  The reference, in the same run: the former step alone, a log tail for every split
and column (``chi2_logsf`` over the whole array) and its minimum per split -- the same minimum for the observed
split (checked against the component's statistic; ``tests/comparison/test_statistics.py`` checks every split).
The same for the sequential scores of anytime-valid tests (``split_scores``, drift's default): their whole time
beside their former column step alone.
Data: ``--n`` rows a side from the same network (alarm: 37 columns of 2-4 states; andes: 223 binary columns), a
Chow-Liu kernel, 999 permutations; best of 3.

Run:  python benchmarks/aggregate_tails.py [--networks alarm andes] [--n 5000]
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher._utils.tails import chi2_logsf
from bnfisher.comparison.aggregate import _chi2_logsf, aggregate_pvalues, split_scores
from bnfisher.comparison.permutation import permutation_statistics
from kernel import best_of  # benchmarks/kernel.py: the best of 3 wall times

HERE = Path(__file__).resolve().parent


def per_column_minimum(outcome) -> np.ndarray:
    """The former step: every split's and column's log tail, then the smallest per split."""
    columns = np.vstack([outcome.columns_observed[None, :], outcome.columns_null])
    df = np.asarray(outcome.scale.column_df)
    tails = np.where(df > 0, np.maximum(chi2_logsf(columns, np.maximum(df, 1)), -1e300), 0.0)
    return tails.min(axis=1)


def former_sequential_columns(outcome) -> np.ndarray:
    """The sequential scores' former column step: every split's and column's tail, then the smallest per split."""
    columns = np.vstack([outcome.columns_observed[None, :], outcome.columns_null])
    df = np.asarray(outcome.scale.column_df)
    return np.where(df > 0, _chi2_logsf(columns, np.maximum(df, 1)), 0.0).min(axis=1, initial=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["alarm", "andes"])
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from mechanisms import network

    lines = [f"Command: `python benchmarks/aggregate_tails.py --networks {' '.join(args.networks)} --n {args.n}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}).", "",
             "| network | columns (distinct df) | aggregate_pvalues (s) | the former per-column tails alone (s) | "
             "same minima | split_scores, sequential (s) | its former column step alone (s) |",
             "|---|---|---|---|---|---|---|"]
    for name in args.networks:
        net = network(name)
        A, B = net.sample(args.n, random_state=1), net.sample(args.n, random_state=3)
        kernel = bf.FisherKernel(bf.learn(pd.concat([A, B], ignore_index=True), "chow-liu"))
        outcome = permutation_statistics(kernel, A, B, n_permutations=999, random_state=0)
        now, (_, components) = best_of(aggregate_pvalues, outcome)
        before, minima = best_of(per_column_minimum, outcome)
        same = bool(np.isclose(components.loc["columns", "statistic"], np.exp(minima[0]), rtol=1e-12))
        df = np.asarray(outcome.scale.column_df)
        sequential, _ = best_of(split_scores, outcome, "aggregate")
        former, _ = best_of(former_sequential_columns, outcome)
        lines.append(f"| {name} | {df.size} ({np.unique(df[df > 0]).size}) | {now:.4f} | {before:.4f} | {same} | "
                     f"{sequential:.4f} | {former:.4f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
