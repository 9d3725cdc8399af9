"""The null scale of a comparison's families on a column of many labels (an identifier column), and what it costs a
``compare``.

(a) ``comparison.null_scale.family_moments`` (each family's MMD² mean and variance over the splits of the pool):
    the blocks ``B_j = sum_a p_ja F_ja F_ja^T`` by a batched matrix product (BLAS), beside the former code, a
    three-operand ``np.einsum("qr,qrd,qre->qde")`` (NumPy's own loop), on the kernel of a ``compare`` whose table
    has an identifier column; the same means and variances (checked).
(b) ``bnfisher.compare`` of two halves of every ``--step``-th row of *nursery* with an identifier column added
    (``n_permutations=19``, best of 3), whole.

Run:  python benchmarks/null_scale.py [--step 10]
"""

from __future__ import annotations

import argparse
import datetime
import warnings

import numpy as np

import bnfisher as bf
from bnfisher.comparison import null_scale, permutation
from bnfisher.datasets import load
from permutations import best_of  # benchmarks/permutations.py (this folder is on the path)


def _former_scale(layout, pooled_counts, n_x, n_y):
    """The former code of ``family_moments``: the blocks by a three-operand einsum."""
    kernel, cards, n = layout.kernel, layout.kernel.network.cardinalities, n_x + n_y
    c2s, c2 = n / (n_x * n_y * (n - 1)) * n, (n / (n_x * n_y)) ** 2
    a, b, c = null_scale.quadratic_form_coefficients(n, n_x)
    mean, variance = np.zeros(len(layout.active)), np.zeros(len(layout.active))
    for k, i in enumerate(layout.active):
        frequency = pooled_counts[layout.offsets[k]: layout.offsets[k + 1]].reshape(-1, int(cards[i])) / n
        features = kernel.cell_features(i).reshape(frequency.shape[0], int(cards[i]), -1)
        centre = np.einsum("qr,qrd->qd", frequency, features)
        blocks = np.einsum("qr,qrd,qre->qde", frequency, features, features)
        square = float(np.sum(centre**2))
        trace = float(np.einsum("qdd->", blocks)) - square
        trace_square = (float(np.sum(blocks**2)) - 2 * float(np.einsum("qd,qde,qe->", centre, blocks, centre))
                        + square**2)
        length = np.sum((features - centre[:, None, :]) ** 2, axis=2) + (square - np.sum(centre**2, axis=1))[:, None]
        fourth = float(np.sum(frequency * length**2))
        mean[k] = c2s * max(trace, 0.0)
        variance[k] = c2**2 * (a * (n * trace) ** 2 + b * n * fourth + c * n**2 * max(trace_square, 0.0))
    return mean, np.maximum(variance, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", type=int, default=10, help="every STEP-th row of nursery (default 10: 1,296 rows)")
    args = parser.parse_args()
    data = load("nursery").iloc[:: args.step].reset_index(drop=True)
    data["id"] = [f"row-{i}" for i in range(len(data))]
    X, Y = data.iloc[::2], data.iloc[1::2]
    warnings.simplefilter("ignore")
    print(f"{datetime.date.today()}: {len(data):,} rows of nursery with an identifier column of {len(data):,} labels")
    kernel = bf.FisherKernel(bf.learn(data, "chow-liu"))
    sample = permutation._sample  # noqa: SLF001 - the engine's own step, timed alone
    pool = permutation.LocalPool(kernel, *(sample(kernel, d, limit=10**7, witness=False, rng=None)[0] for d in (X, Y)))
    fixed, _ = pool.fixed_sums()
    counts, n_x, n_y = fixed[: pool.layout.n_cells].T[1], pool.n_x, pool.n_y
    now, (mean, variance, _) = best_of(lambda: null_scale.family_moments(pool.layout, counts, n_x, n_y))
    before, (mean0, variance0) = best_of(lambda: _former_scale(pool.layout, counts, n_x, n_y), repeats=1)
    same = np.allclose(mean, mean0, rtol=1e-10) and np.allclose(variance, variance0, rtol=1e-8)
    print(f"(a) the null scale: {now:.3f} s by batched BLAS, {before:.3f} s by the former einsum "
          f"({before / now:.0f}x); the same means and variances: {same}")
    whole, _ = best_of(lambda: bf.compare(X, Y, n_permutations=19, random_state=0))
    print(f"(b) compare, whole (best of 3): {whole:.2f} s")


if __name__ == "__main__":
    main()
