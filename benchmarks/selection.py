"""Greedy representative selection (Algorithm 1) on letter: bnfisher vs reference implementations.

Data: the 10,000-row training half of letter (17 variables, numeric features in 4 quantile
bins), a hill-climbing (BIC) network, its Fisher kernel, k = 200 and k = 1000.

References measured in the same run:
* "Gram reference": Algorithm 1 with a precomputed N x N Gram matrix, scoring every
  candidate j of a position by d(X_{S-i+j}, X) from Gram sums (O(N k) per position, vectorised);
  it must select exactly the same rows.
* "literal reference": d(X_{S u {j}}, X) recomputed from pairwise kernels for every j
  (O(N k^2) per position); timed on a few positions and extrapolated to the whole run.

Run:  python benchmarks/selection.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import bnfisher as bf
from bnfisher.datasets import load, train_test_split
from bnfisher.selection import random_mmd_baseline, random_subsets, select_representatives

PAPER_MINUTES = {200: 0.7, 1000: 19.0}  # greedy MMD on letter, Sec. 7.1.1


def gram_reference(gram: np.ndarray, start: np.ndarray, max_positions: int | None = None):
    """Algorithm 1 on a precomputed Gram matrix, vectorised over the candidates of a position.

    With ``max_positions``, stop after that many positions and return the seconds per position.
    """
    n = gram.shape[0]
    k = start.size
    row_sums = gram.sum(axis=1)
    total = row_sums.sum() / n**2
    S = np.sort(start).copy()
    member = np.zeros(n, dtype=bool)
    member[S] = True

    def value(subset):
        return gram[np.ix_(subset, subset)].sum() / k**2 + total - 2 * row_sums[subset].sum() / (k * n)

    current = value(S)
    scale = float(np.diag(gram).mean())
    sweeps = 0
    begin = time.perf_counter()
    while True:
        sweeps += 1
        swapped = 0
        for position in range(k):
            if max_positions is not None and position == max_positions:
                return (time.perf_counter() - begin) / max_positions
            others = np.delete(S, position)
            within = gram[np.ix_(others, others)].sum()
            cross = gram[:, others].sum(axis=1)
            values = ((within + 2 * cross + np.diag(gram)) / k**2 + total
                      - 2 * (row_sums[others].sum() + row_sums) / (k * n))
            values[member] = np.inf
            best = values.min()
            # The documented acceptance rule of select_representatives (tol=1e-10 relative to the value, or to
            # the mean K(x, x) when the value is ~0), and its tie rule (1e-12 relative).
            if best < current - 1e-10 * max(abs(current), scale):
                j = int(np.flatnonzero(values <= best + 1e-12 * abs(best) + 1e-300)[0])
                member[S[position]], member[j] = False, True
                S[position] = j
                current = best
                swapped += 1
        current = value(S)
        if swapped == 0:
            return np.sort(S), current, sweeps


def literal_position_seconds(gram: np.ndarray, start: np.ndarray, positions: int = 2) -> float:
    """Seconds per position when every candidate's d is recomputed from pairwise kernels."""
    n = gram.shape[0]
    S = list(np.sort(start))
    constant = gram.mean()  # the X-X term does not depend on the subset
    begin = time.perf_counter()
    for position in range(positions):
        others = S[:position] + S[position + 1:]
        for j in range(n):
            if j in S:
                continue
            subset = others + [j]
            gram[np.ix_(subset, subset)].mean() + constant - 2 * gram[subset].mean()
    return (time.perf_counter() - begin) / positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="k = 200 only, no literal reference")
    args = parser.parse_args()
    train, _ = train_test_split(load("letter"), random_state=0)
    train = train.reset_index(drop=True)
    start = time.perf_counter()
    network = bf.learn(train, "hc")
    kernel = bf.FisherKernel(network)
    print(f"letter train: {len(train)} rows; hc network {network}; kernel {kernel.n_features_} features "
          f"({time.perf_counter() - start:.2f} s to learn and build)")
    gram = kernel.gram(train)  # for the references only
    rng = np.random.default_rng(0)
    for k in ([200] if args.quick else [200, 1000]):
        print(f"\nk = {k}")
        begin = time.perf_counter()
        random_mmd_baseline(kernel, train, k, n=1000, random_state=0)  # the work of the best-random start
        t_random = time.perf_counter() - begin
        print(f"  best of 1000 random subsets (MMD):   {t_random:8.2f} s")
        starting = random_subsets(len(train), k, 1, random_state=rng)[0]
        begin = time.perf_counter()
        ours = select_representatives(kernel, train, k, init=starting)
        t_ours = time.perf_counter() - begin
        print(f"  bnfisher greedy MMD:                 {t_ours:8.2f} s  ({ours.n_sweeps} sweeps, {ours.n_swaps} swaps, "
              f"d {ours.initial_value:.4g} -> {ours.final_value:.4g})")
        if k <= 400:
            begin = time.perf_counter()
            reference, reference_value, sweeps = gram_reference(gram, starting)
            t_reference = time.perf_counter() - begin
            same = np.array_equal(reference, ours.indices)
            print(f"  Gram reference (N x N in memory):    {t_reference:8.2f} s  same rows: {same}; "
                  f"ratio {t_reference / t_ours:.1f}x")
        else:  # a full run would take tens of minutes: time 50 positions and extrapolate
            per_position = gram_reference(gram, starting, max_positions=50)
            estimate = per_position * k * ours.n_sweeps
            print(f"  Gram reference (extrapolated):       {estimate:8.0f} s  ({per_position:.3f} s/position x "
                  f"{k} positions x {ours.n_sweeps} sweeps); ratio {estimate / t_ours:.0f}x")
        if not args.quick and k <= 400:  # O(N k^2) per position: hours for k = 1000
            per_position = literal_position_seconds(gram, starting)
            estimate = per_position * k * ours.n_sweeps
            print(f"  literal reference (extrapolated):    {estimate:8.0f} s  ({per_position:.2f} s/position x {k} "
                  f"positions x {ours.n_sweeps} sweeps); ratio {estimate / t_ours:,.0f}x")
        begin = time.perf_counter()
        chi = select_representatives(kernel, train, k, criterion="chi2", init=starting)
        print(f"  bnfisher greedy chi2:                {time.perf_counter() - begin:8.2f} s  ({chi.n_sweeps} sweeps)")
        total = t_random + t_ours
        paper = PAPER_MINUTES[k] * 60
        print(f"  best-random start + greedy MMD:      {total:8.2f} s = {100 * total / paper:.2f}% of the paper's "
              f"{PAPER_MINUTES[k]} min (goal for k = 1000: < 1%)")


if __name__ == "__main__":
    main()
