"""Structure learning with BIC: bnfisher (exact, default hc, plain hc) vs pyAgrum (C++) and pgmpy, in one run.

Data: 5,000 and 50,000 rows sampled from alarm, insurance and hailfinder, and letter (10,000 rows,
17 variables binned to 4 states).  Every learned DAG is scored by the same BIC (natural log,
bnfisher.score; pyAgrum's own BIC is the same value in log2).  Where the exact optimum is feasible
(letter; the first 20 variables of insurance), it is computed and every heuristic's gap to it printed.

pgmpy's result depends on Python's string-hash seed, so it runs in fresh interpreters under three seeds.
bnfisher's and pyAgrum's times are the best of three runs; pgmpy's is one run.

Run:  python benchmarks/structure.py [--quick] [--skip-pgmpy-above N]
      python benchmarks/structure.py --limits     # exact learning: time and memory by size
      python benchmarks/structure.py --wide       # hc on wide binary tables against pyAgrum, and its estimate
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import bnfisher as bf
from bnfisher._utils import jit as _jit
from bnfisher.datasets import load

_jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it (small jobs start on NumPy fallbacks)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _helpers import pyagrum_hill_climb, wide_frame  # noqa: E402

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bif"  # shipped with the tests


#: bnfisher's and pyAgrum's times are the best of this many runs (the structures are the same in each).
REPEATS = 3


def ours(frame, **options):
    encoded = bf.encode(frame)
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        network = bf.learn(encoded, "hc", **options)
        times.append(time.perf_counter() - start)
    return {v: list(network.parents[v]) for v in network.variables}, min(times)


def pyagrum(frame, threads=None):
    runs = [pyagrum_hill_climb(frame, threads=threads) for _ in range(REPEATS)]
    return runs[0][0], min(elapsed for _, elapsed in runs)


def pgmpy(frame):
    from pgmpy.estimators import HillClimbSearch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = HillClimbSearch(frame.astype(str))
        start = time.perf_counter()
        dag = search.estimate(scoring_method="bic-d", show_progress=False)
    elapsed = time.perf_counter() - start
    return {v: list(dag.predecessors(v)) for v in frame.columns}, elapsed


#: pgmpy's search depends on Python's string hashing (set order): each table is run under these hash seeds.
PGMPY_HASH_SEEDS = (0, 1, 2)


def pgmpy_in_process(label: str, seed: int):
    """Run pgmpy on the table ``label`` in a fresh interpreter with ``PYTHONHASHSEED=seed``."""
    environment = dict(os.environ, PYTHONHASHSEED=str(seed))
    output = subprocess.run([sys.executable, __file__, "--pgmpy-child", label], capture_output=True, text=True,
                            check=True, env=environment).stdout
    result = json.loads(output.strip().splitlines()[-1])
    return result["parents"], result["seconds"]


def datasets(quick: bool):
    sizes = [5000] if quick else [5000, 50000]
    for name in ("alarm", "insurance", "hailfinder"):
        network = bf.read_bif(BIF_DIR / f"{name}.bif.gz")
        for n in sizes:
            yield f"{name} {n:,}", network.sample(n, random_state=0)
    yield "letter 10,000", load("letter").iloc[:10000].reset_index(drop=True)
    insurance = bf.read_bif(BIF_DIR / "insurance.bif.gz").sample(5000, random_state=0)
    yield "insurance[:20] 5,000", insurance.iloc[:, :20]


def exact(frame):
    encoded = bf.encode(frame)
    start = time.perf_counter()
    network = bf.learn(encoded, "exact")
    return {v: list(network.parents[v]) for v in network.variables}, time.perf_counter() - start


def limits() -> None:
    """Exact learning's time and memory against variables, max_parents, rows and score (docs/structure.md)."""
    cases = [("letter", 17, 20000, None, "bic"), ("letter", 17, 20000, 3, "bdeu"),
             ("hailfinder", 20, 5000, None, "bic"), ("hailfinder", 22, 5000, 3, "bic"),
             ("insurance", 23, 50000, 3, "bic"), ("insurance", 25, 5000, 2, "bic")]
    print(f"{'data':<14}{'vars':>5}{'rows':>8}{'max_parents':>12}{'score':>7}{'local scores':>14}{'time s':>9}"
          f"{'peak GiB':>9}")
    for name, n_vars, rows, max_parents, score in cases:
        frame = (load("letter").iloc[:rows] if name == "letter"
                 else bf.read_bif(BIF_DIR / f"{name}.bif.gz").sample(rows, random_state=0)).iloc[:, :n_vars]
        encoded = bf.encode(frame)
        start = time.perf_counter()
        network = bf.learn(encoded, "exact", max_parents=max_parents, structure_score=score)
        elapsed = time.perf_counter() - start
        hc = bf.learn(encoded, "hc", max_parents=max_parents, structure_score=score)
        gap = bf.score(network, encoded, score) - bf.score(hc, encoded, score)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        count = network.learning_.get("local_scores", 0)
        print(f"{name:<14}{n_vars:>5}{rows:>8}{str(max_parents):>12}{score:>7}{count:>14,}"
              f"{elapsed:>9.1f}{peak:>9.2f}   (exact - default hc: {gap:+.1f})", flush=True)


def wide(sizes, rows: int, all_up_to: int, pyagrum_up_to: int) -> None:
    """Default hc (candidate parents screened above 100 columns) against every candidate and pyAgrum.

    bnfisher's time is the better of two runs, pyAgrum's one run.

    The estimate is what ``learn(..., progress=True)`` states before the search, plus the single-parent
    scores it has timed by then: it is printed beside the whole time of that (separate) run.
    """
    header = (f"{'columns':>8}{'rows':>6}  {'method':<34}{'time s':>9}{'estimate s':>11}{'its run s':>10}{'BIC':>14}"
              f"{'vs pyAgrum':>12}{'arcs':>6}")
    print(header)
    print("-" * len(header))
    for n_vars in sizes:
        frame = wide_frame(n_vars, rows)
        encoded = bf.encode(frame)
        reference = pyagrum_hill_climb(frame) if n_vars <= pyagrum_up_to else None
        runs = [("bnfisher hc (default)", {})]
        if n_vars <= all_up_to:
            runs.append(("bnfisher hc max_candidates='all'", {"max_candidates": "all"}))
        lines = []
        if reference is not None:
            lines.append(("pyAgrum GHC (default threads)", reference[0], reference[1], None))
        for method, options in runs:
            times = []
            for _ in range(2):  # the first run also loads the compiled functions
                start = time.perf_counter()
                network = bf.learn(encoded, "hc", **options)
                times.append(time.perf_counter() - start)
            elapsed = min(times)
            stated = io.StringIO()
            with contextlib.redirect_stderr(stated):
                start = time.perf_counter()
                bf.learn(encoded, "hc", progress=True, **options)
                whole = time.perf_counter() - start
            found = re.search(r"scored in ([0-9.]+) s; the search should take roughly ([0-9.]+) s", stated.getvalue())
            estimate = float(found.group(1)) + float(found.group(2))
            lines.append((method, {v: list(network.parents[v]) for v in network.variables}, elapsed,
                          (estimate, whole)))
        reference_score = bf.score(reference[0], frame, "bic") if reference is not None else None
        for method, parents, elapsed, estimate in lines:
            value = bf.score(parents, frame, "bic")
            versus = f"{value - reference_score:>+12.1f}" if reference_score is not None else f"{'':>12}"
            stated = f"{estimate[0]:>11.2f}{estimate[1]:>10.2f}" if estimate else f"{'':>21}"
            print(f"{n_vars:>8,}{rows:>6}  {method:<34}{elapsed:>9.2f}{stated:>11}{value:>14.1f}{versus}"
                  f"{sum(len(p) for p in parents.values()):>6}", flush=True)
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-pgmpy-above", type=int, default=60000, help="rows above which pgmpy is skipped")
    parser.add_argument("--limits", action="store_true", help="only exact learning's limits (docs/structure.md)")
    parser.add_argument("--wide", action="store_true", help="only hc on wide binary tables (500 rows)")
    parser.add_argument("--wide-sizes", type=int, nargs="+", default=[200, 500, 1000, 2000])
    parser.add_argument("--wide-all-up-to", type=int, default=1000,
                        help="columns up to which max_candidates='all' runs too")
    parser.add_argument("--wide-pyagrum-up-to", type=int, default=2000,
                        help="columns up to which pyAgrum runs (2,000 took 419 s on 2026-11-26)")
    parser.add_argument("--pgmpy-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pgmpy_child:
        frame = next(f for label, f in datasets(quick=False) if label == args.pgmpy_child)
        parents, elapsed = pgmpy(frame)
        print(json.dumps({"parents": parents, "seconds": elapsed}))
        return
    if args.limits:
        limits()
        return
    if args.wide:
        wide(args.wide_sizes, 500, args.wide_all_up_to, args.wide_pyagrum_up_to)
        return
    header = (f"{'data':<21}{'method':<34}{'time s':>9}{'BIC':>14}{'vs pyAgrum':>12}{'vs optimum':>12}{'arcs':>6}")
    print(header)
    print("-" * len(header))
    for label, frame in datasets(args.quick):
        rows = []
        if frame.shape[1] <= 20:
            rows.append(("bnfisher exact (optimum)", *exact(frame)))
        reference = pyagrum(frame)
        rows.append(("pyAgrum GHC (default threads)", *reference))
        rows.append(("pyAgrum GHC (1 thread)", *pyagrum(frame, threads=1)))
        if len(frame) <= args.skip_pgmpy_above:
            for seed in PGMPY_HASH_SEEDS:
                rows.append((f"pgmpy HillClimbSearch (hash {seed})", *pgmpy_in_process(label, seed)))
        rows.append(("bnfisher hc (default)", *ours(frame)))
        rows.append(("bnfisher hc search=plain", *ours(frame, search="plain")))
        reference_score = bf.score(reference[0], frame, "bic")
        optimum = bf.score(rows[0][1], frame, "bic") if rows[0][0].startswith("bnfisher exact") else None
        for method, parents, elapsed in rows:
            value = bf.score(parents, frame, "bic")
            arcs = sum(len(p) for p in parents.values())
            gap = f"{value - optimum:>+12.1f}" if optimum is not None else f"{'':>12}"
            print(f"{label:<21}{method:<34}{elapsed:>9.3f}{value:>14.1f}{value - reference_score:>+12.1f}{gap}"
                  f"{arcs:>6}", flush=True)
        print()


if __name__ == "__main__":
    main()
