"""Hill climbing with BIC: bnfisher vs pyAgrum (C++) and pgmpy, time and score in one run.

Data: 5,000 and 50,000 rows sampled from alarm and insurance, and letter (10,000 rows,
17 variables binned to 4 states).  Every learned DAG is scored by the same BIC
(natural log, bnfisher.score; pyAgrum's own BIC is the same value in log2).

Run:  python benchmarks/structure.py [--quick] [--skip-pgmpy-above N]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import bnfisher as bf
from bnfisher.datasets import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _helpers import pyagrum_hill_climb  # noqa: E402

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "bif"  # shipped with the tests


def ours(frame, **options):
    encoded = bf.encode(frame)
    start = time.perf_counter()
    network = bf.learn(encoded, "hc", **options)
    return {v: list(network.parents[v]) for v in network.variables}, time.perf_counter() - start


def pyagrum(frame, threads=None):
    return pyagrum_hill_climb(frame, threads=threads)


def pgmpy(frame):
    from pgmpy.estimators import HillClimbSearch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = HillClimbSearch(frame.astype(str))
        start = time.perf_counter()
        dag = search.estimate(scoring_method="bic-d", show_progress=False)
    elapsed = time.perf_counter() - start
    return {v: list(dag.predecessors(v)) for v in frame.columns}, elapsed


def datasets(quick: bool):
    sizes = [5000] if quick else [5000, 50000]
    for name in ("alarm", "insurance"):
        network = bf.read_bif(BIF_DIR / f"{name}.bif.gz")
        for n in sizes:
            yield f"{name} {n:,}", network.sample(n, random_state=0)
    yield "letter 10,000", load("letter").iloc[:10000].reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-pgmpy-above", type=int, default=60000, help="rows above which pgmpy is skipped")
    args = parser.parse_args()
    header = (f"{'data':<17}{'method':<28}{'time s':>9}{'BIC':>14}{'vs pyAgrum':>12}{'arcs':>6}")
    print(header)
    print("-" * len(header))
    for label, frame in datasets(args.quick):
        rows = []
        reference = pyagrum(frame)
        rows.append(("pyAgrum GHC (default threads)", *reference))
        rows.append(("pyAgrum GHC (1 thread)", *pyagrum(frame, threads=1)))
        if len(frame) <= args.skip_pgmpy_above:
            rows.append(("pgmpy HillClimbSearch", *pgmpy(frame)))
        rows.append(("bnfisher hc", *ours(frame)))
        rows.append(("bnfisher hc tabu=10", *ours(frame, tabu=10)))
        rows.append(("bnfisher hc start=chow-liu", *ours(frame, start="chow-liu")))
        reference_score = bf.score(reference[0], frame, "bic")
        for method, parents, elapsed in rows:
            value = bf.score(parents, frame, "bic")
            arcs = sum(len(p) for p in parents.values())
            print(f"{label:<17}{method:<28}{elapsed:>9.3f}{value:>14.1f}{value - reference_score:>+12.1f}{arcs:>6}")
        print()


if __name__ == "__main__":
    main()
