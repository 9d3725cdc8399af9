"""Local scores of many families: the compiled batch (LocalScorer's engine) beside numpy, in one run.

The reference is what LocalScorer did before the compiled loop: per family, a mixed-radix
configuration index, one ``np.bincount`` and the vectorised ``local_score``.  Both score the
same families of alarm samples (1 to 3 random parents each, the sizes hill climbing and the
order search ask for); the scores must agree to 1e-9.

Run:  python benchmarks/family_scores.py [--rows 5000 50000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher import _jit
from bnfisher.bn._family_scores import family_scores
from bnfisher.bn.scores import local_score
from bnfisher.data.counts import configuration_index

_jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it (small jobs start on NumPy fallbacks)

BIF = Path(__file__).resolve().parents[1] / "tests" / "data" / "bif" / "alarm.bif.gz"


def numpy_scores(codes, cardinalities, families):
    out = np.empty(len(families))
    n_rows = codes.shape[0]
    for f, (child, parents) in enumerate(families):
        r = int(cardinalities[child])
        q = int(np.prod([cardinalities[p] for p in parents])) if parents else 1
        index = configuration_index(codes, parents, cardinalities) * r + codes[:, child]
        table = np.bincount(index, minlength=q * r).reshape(q, r)
        out[f] = local_score(table, "bic", n_rows=n_rows, n_configurations=q)
    return out


def best_of(repeats, function, *args, **kwargs):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return result, min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[5000, 50000])
    args = parser.parse_args()
    network = bf.read_bif(BIF)
    print(f"{'rows':>8}{'families':>10}{'numpy s':>10}{'compiled 1 thread s':>21}{'compiled all threads s':>24}"
          f"{'speed-up':>10}")
    for n_rows in args.rows:
        encoded = bf.encode(network.sample(n_rows, random_state=0))
        codes = np.asfortranarray(encoded.codes)
        cardinalities = np.asarray(encoded.cardinalities, dtype=np.int64)
        n = codes.shape[1]
        rng = np.random.default_rng(0)
        families = [(v, tuple(int(u) for u in rng.choice([u for u in range(n) if u != v], size=k, replace=False)))
                    for v in range(n) for k in (1, 2, 2, 3, 3, 3) for _ in range(10)]
        family_scores(codes.T, cardinalities, families[:5], score="bic", ess=1.0)  # load the compiled code
        reference, t_numpy = best_of(2, numpy_scores, codes.astype(np.intp), cardinalities, families)
        one, t_one = best_of(5, family_scores, codes.T, cardinalities, families, score="bic", ess=1.0, n_threads=1)
        every, t_all = best_of(5, family_scores, codes.T, cardinalities, families, score="bic", ess=1.0)
        assert np.allclose(one, reference, rtol=0, atol=1e-9) and np.array_equal(one, every)
        print(f"{n_rows:>8,}{len(families):>10,}{t_numpy:>10.3f}{t_one:>21.3f}{t_all:>24.3f}"
              f"{t_numpy / t_all:>9.1f}x")


if __name__ == "__main__":
    main()
