"""Local scores of many families: the compiled batch (LocalScorer's engine) beside numpy, in one run.

The reference is what LocalScorer did before the compiled loop: per family, a mixed-radix
configuration index, one ``np.bincount`` and the vectorised ``local_score``.  All score the
same families (1 to 3 random parents each, the sizes hill climbing and the order search ask
for) of alarm and hailfinder samples and of letter; the scores must agree to 1e-9.  The
compiled batch runs by a pass over the rows per family and, for tables of at most
``BIT_CELLS`` cells, from bit sets of the rows (``bnfisher.bn.scores._bits``; their building
time printed apart): the same scores, bit for bit.

Run:  python benchmarks/family_scores.py [--rows 5000 50000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher._utils import jit as _jit
from bnfisher.bn.scores import local_score
from bnfisher.bn.scores._bits import row_bits
from bnfisher.bn.scores._family import family_scores
from bnfisher.data.counts import configuration_index
from bnfisher.datasets import load

_jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it (small jobs start on NumPy fallbacks)

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bif"


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


def tables(rows):
    for name in ("alarm", "hailfinder"):
        network = bf.read_bif(BIF_DIR / f"{name}.bif.gz")
        for n_rows in rows:
            yield name, bf.encode(network.sample(n_rows, random_state=0))
    yield "letter", bf.encode(load("letter").iloc[:10000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[5000, 50000])
    args = parser.parse_args()
    print(f"{'table':<11}{'rows':>7}{'families':>9}{'numpy s':>9}{'pass 1 thread s':>16}"
          f"{'bits 1 thread s':>16}{'(x pass)':>9}{'bits all threads s':>19}{'building bits s':>16}")
    for name, encoded in tables(args.rows):
        codes = np.asfortranarray(encoded.codes)
        cardinalities = np.asarray(encoded.cardinalities, dtype=np.int64)
        n_rows, n = codes.shape
        rng = np.random.default_rng(0)
        families = [(v, tuple(int(u) for u in rng.choice([u for u in range(n) if u != v], size=k, replace=False)))
                    for v in range(n) for k in (1, 2, 2, 3, 3, 3) for _ in range(10)]
        bits, t_bits = best_of(3, row_bits, codes.T, cardinalities)
        family_scores(codes.T, cardinalities, families[:5], score="bic", ess=1.0, bits=bits)  # load the compiled code
        reference, t_numpy = best_of(2, numpy_scores, codes.astype(np.intp), cardinalities, families)
        one, t_one = best_of(5, family_scores, codes.T, cardinalities, families, score="bic", ess=1.0, n_threads=1)
        from_bits, t_from_bits = best_of(5, family_scores, codes.T, cardinalities, families, score="bic", ess=1.0,
                                         n_threads=1, bits=bits)
        every, t_all = best_of(5, family_scores, codes.T, cardinalities, families, score="bic", ess=1.0, bits=bits)
        assert np.allclose(one, reference, rtol=0, atol=1e-9)
        assert np.array_equal(one, from_bits) and np.array_equal(one, every)
        print(f"{name:<11}{n_rows:>7,}{len(families):>9,}{t_numpy:>9.3f}{t_one:>16.3f}{t_from_bits:>16.3f}"
              f"{t_one / t_from_bits:>8.1f}x{t_all:>19.3f}{t_bits:>16.4f}")


if __name__ == "__main__":
    main()
