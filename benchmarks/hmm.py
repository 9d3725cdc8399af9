"""Throughput of HMMFisherKernel.transform: sequences of 10,000 steps, K = 6 states, D = 10 channels.

The reference in the same run is hmmlearn's own forward-backward (``GaussianHMM.score_samples``) on the
same sequences: the score features need one forward-backward pass plus the gradient sums.

Run:  python benchmarks/hmm.py [--sequences 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bnfisher.hmm import HMMFisherKernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    K, D, T = 6, 10, 10_000
    means = rng.normal(size=(K, D)) * 2
    sequences = []
    for _ in range(args.sequences):
        states = np.repeat(rng.integers(0, K, size=T // 50), 50)
        sequences.append(means[states] + rng.normal(size=(T, D)))
    kernel = HMMFisherKernel(n_states=K, n_init=1, n_iter=20, random_state=0).fit(sequences[:4])
    start = time.perf_counter()
    features = kernel.transform(sequences)
    elapsed = time.perf_counter() - start
    start = time.perf_counter()
    for s in sequences:
        kernel.model_.score_samples(s)
    reference = time.perf_counter() - start
    print(f"{args.sequences} sequences x {T} steps, K={K}, D={D}: {features.shape[1]} features per sequence")
    print(f"  bnfisher transform:               {elapsed:7.2f} s = {args.sequences / elapsed:6.2f} sequences/s "
          f"({args.sequences * T / elapsed:,.0f} steps/s)")
    print(f"  hmmlearn score_samples (fwd-bwd): {reference:7.2f} s = {args.sequences / reference:6.2f} sequences/s")


if __name__ == "__main__":
    main()
