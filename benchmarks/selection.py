"""Greedy representative selection (Algorithm 1): the search from integer codes vs the embedding search.

Data: the 10,000-row training half of letter, binned to 4 quantile bins (the paper's set-up) and
as it is (16 states per feature); a hill-climbing (BIC) network; its Fisher kernel; k = 200 and 1000.

* "bnfisher": ``select_representatives`` -- kernel columns from the integer codes (``n`` gathers of
  per-family lookup tables over the distinct rows, O(N n) per position), started from the best of
  1,000 random subsets.
* "embedding reference": the first round's search, the same Algorithm 1 with one sparse mat-vec
  against the N x sum(r_i) embedding per kernel column (``tests/_helpers.embedding_greedy``),
  from the same start; it must select exactly the same rows.
* With ``--summarize-rows N``: ``bnfisher summarize`` on N rows sampled from alarm (37 variables),
  k = 200 and 1000 from Parquet, k = 200 from CSV, with its wall time and peak memory (``VmHWM``
  of the child), and the search's inner loop -- a kernel column's gathers over the distinct rows --
  compiled on one thread and on every core beside NumPy's one ``take`` per family.

* With ``--only margins``: the refinement's inner loop (``summary.margins._row_sums``: each candidate's sum of
  its cells' gains) compiled beside NumPy's gather and row sum, on random cells of 4,000-20,000 rows.
* With ``--only walk``: the annealing walk (``summary.anneal._walk``) compiled beside the same function run as
  Python (each proposal depends on the ones accepted before it, so there is no NumPy version to run instead), on
  the pool of 2,048 rows ``summarize`` walks on nursery at k = 64, the same proposals given to both.

Run:  python benchmarks/selection.py [--quick] [--summarize-rows 10000000] [--only margins|walk|summarize]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher._utils import jit as _jit
from bnfisher._utils import parallel as _parallel
from bnfisher._utils.jit import _materialise
from bnfisher._utils.parallel import map_threads, resolve_jobs
from bnfisher.datasets import load, train_test_split
from bnfisher.kernels.columns import _gather_rows, _numpy_gather
from bnfisher.summary import random_subsets, select_representatives

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _helpers import bif_path, embedding_greedy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel import best_of

_jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it (small jobs start on NumPy fallbacks)

PAPER_MINUTES = {200: 0.7, 1000: 19.0}  # greedy MMD on letter, Sec. 7.1.1
GOALS = {(4, 1000): 2.3, (16, 1000): 10.0}  # seconds (issue: 0.2% of the paper's 19 minutes; raw letter)


def letter(bins: int, ks: list) -> None:
    train, _ = train_test_split(load("letter", bins=bins), random_state=0)
    train = train.reset_index(drop=True)
    network = bf.learn(train, "hc")
    kernel = bf.FisherKernel(network)
    width = sum(kernel.block_width(i) + 1 for i in range(len(kernel.families)))
    print(f"\nletter, {bins} bins: {len(train)} rows; {network}; {kernel.n_features_} features "
          f"(~{width} cells touched per row)")
    for k in ks:
        start = random_subsets(len(train), k, 1, random_state=np.random.default_rng(k))[0]
        begin = time.perf_counter()
        ours = select_representatives(kernel, train, k, init=start)
        t_ours = time.perf_counter() - begin
        begin = time.perf_counter()
        reference, value, sweeps = embedding_greedy(kernel.embed(train), start)
        t_reference = time.perf_counter() - begin
        same = np.array_equal(reference, ours.indices)
        print(f"  k = {k:4d}: bnfisher {t_ours:6.2f} s, embedding reference {t_reference:7.2f} s "
              f"({t_reference / t_ours:5.1f}x); same rows: {same}; {ours.n_sweeps} sweeps, {ours.n_swaps} swaps, "
              f"d {ours.initial_value:.4g} -> {ours.final_value:.4g}")
        begin = time.perf_counter()
        full = select_representatives(kernel, train, k, random_state=0)  # best of 1000 random starts, as the CLI
        t_full = time.perf_counter() - begin
        goal = GOALS.get((bins, k))
        met = "met" if goal is not None and t_full < goal else "MISSED"
        verdict = "" if goal is None else f"; goal < {goal} s: {met}"
        share = 100 * t_full / (PAPER_MINUTES[k] * 60)
        print(f"           best-of-1000 start + search: {t_full:6.2f} s = {share:.2f}% "
              f"of the paper's {PAPER_MINUTES[k]} min ({full.n_sweeps} sweeps){verdict}")


# The command, run in a fresh interpreter that reports its own peak resident memory in KiB: VmHWM of its own
# address space (getrusage's ru_maxrss would carry this process's peak over the spawn on Linux).
_CHILD = ("import re, sys; from bnfisher.cli.commands import main; code = main(sys.argv[1:]); "
          "print(re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1), file=sys.stderr); "
          "sys.exit(code)")


def summarize(rows: int, ks: list) -> None:
    """``bnfisher summarize`` on ``rows`` alarm rows from Parquet and from CSV, and the kernel-column gathers."""
    network = bf.read_bif(bif_path("alarm"))
    frame = network.sample(rows, random_state=0)
    with tempfile.TemporaryDirectory() as folder:
        runs = [("parquet", k, "margins") for k in ks] + [("parquet", max(ks), "none"), ("csv", ks[0], "margins")]
        for suffix, k, refine in runs:
            path = Path(folder) / f"alarm.{suffix}"
            if not path.exists():
                frame.to_parquet(path, index=False) if suffix == "parquet" else frame.to_csv(path, index=False)
            command = ["summarize", str(path), "-k", str(k), "--quiet", "-o", str(Path(folder) / "out.csv"),
                       "--refine", refine, "--json", str(Path(folder) / "out.json")]
            begin = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", _CHILD, *command], check=True, capture_output=True,
                                  text=True)
            seconds = time.perf_counter() - begin
            peak = int(done.stderr.split()[-1]) / 1024**2  # GiB
            print(f"  bnfisher summarize, {rows:,} x 37 alarm rows from {suffix.upper()} "
                  f"({path.stat().st_size / 1e6:,.0f} MB), k = {k}, --refine {refine}: {seconds:.1f} s wall, peak "
                  f"{peak:.2f} GiB "
                  f"(goals: < {90 if k <= 200 else 60} s and < {4 if suffix == 'parquet' else 2.5} GiB at 10^7 rows)")
            cpts = np.array(list(json.loads((Path(folder) / "out.json").read_text())["fidelity"]["cpts"].values()))
            print(f"    CPTs re-estimated from the subset within expected TV 0.05 of the data's: "
                  f"{np.sum(cpts <= 0.05)} of {cpts.size} families (goal >= 95%); largest {cpts.max():.3f}")
    # The search's inner loop: a kernel column is a sum of one table lookup per family over the distinct rows.
    columns = bf.FisherKernel(network).columns(frame)
    parallel_work = _parallel.PARALLEL_WORK
    lookup = np.random.default_rng(0).random(columns.n_cells + 1)
    lookup[-1] = 0.0
    out = np.empty(columns.n_units)
    n_units, width = columns.cells.shape
    t_numpy, reference = best_of(_numpy_gather, columns.cells, lookup, out, 0, n_units)
    reference = out.copy()
    _materialise()
    _gather_rows(columns.cells, lookup, out, 0, n_units)  # compile
    t_one, _ = best_of(_gather_rows, columns.cells, lookup, out, 0, n_units)
    t_all, both = best_of(columns.inner, lookup)  # no missing cell, no normalisation: the sums, on every core
    _parallel.PARALLEL_WORK = 2**62
    t_serial, _ = best_of(columns.inner, lookup)  # the same call on one thread
    _parallel.PARALLEL_WORK = parallel_work
    print(f"  a kernel column over {n_units:,} distinct rows x {width} families ({columns.cells.dtype} cells): "
          f"NumPy (one take per family) {1e3 * t_numpy:.1f} ms; compiled {1e3 * t_one:.1f} ms "
          f"({t_numpy / t_one:.1f}x); KernelColumns.inner on one thread {1e3 * t_serial:.1f} ms, on "
          f"{resolve_jobs(-1)} threads {1e3 * t_all:.1f} ms ({t_serial / t_all:.2f}x); the same values: "
          f"{np.array_equal(reference, both)}")
    # The machine's ceiling for work that reads those cells: the read alone (np.max) on one thread and on all.
    cells, threads = columns.cells, resolve_jobs(-1)
    bounds = np.linspace(0, n_units, threads + 1).astype(int)
    t_read_one, _ = best_of(np.max, cells)
    t_read_all, _ = best_of(lambda: list(map_threads(lambda k: cells[bounds[k]:bounds[k + 1]].max(), range(threads),
                                                     n_jobs=threads)))
    print(f"  reading those cells alone (np.max, {cells.nbytes / 1e6:.0f} MB): one thread {1e3 * t_read_one:.1f} ms "
          f"({cells.nbytes / t_read_one / 1e9:.1f} GB/s), {threads} threads {1e3 * t_read_all:.1f} ms "
          f"({t_read_one / t_read_all:.2f}x): the memory's ceiling for the gathers")


def margins_loop() -> None:
    """The refinement's candidate sums, compiled against NumPy's gather and row sum, the same values."""
    from bnfisher._utils import jit as _jit
    from bnfisher.summary.margins import _numpy_row_sums, _row_sums

    _jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long search runs it
    for rows, width, cells in ((4000, 73, 2000), (12960, 45, 800), (20000, 153, 3000)):
        rng = np.random.default_rng(0)
        table = rng.integers(0, cells, size=(rows, width)).astype(np.int32)
        gain = rng.random(cells)
        out = np.empty(rows)
        _row_sums(gain, table, out)  # compiled on this first call
        timed = {}
        for name, function in (("NumPy", _numpy_row_sums), ("compiled", _row_sums)):
            begin = time.perf_counter()
            for _ in range(50):
                function(gain, table, out)
            timed[name] = (time.perf_counter() - begin) / 50
        same = np.allclose(_numpy_row_sums(gain, table, np.empty(rows)), _row_sums(gain, table, np.empty(rows)))
        print(f"  candidate sums, {rows:,} rows x {width} cells: NumPy {1e3 * timed['NumPy']:.2f} ms, compiled "
              f"{1e3 * timed['compiled']:.2f} ms ({timed['NumPy'] / timed['compiled']:.1f}x); the same values: {same}")


def walk_loop() -> None:
    """The annealing walk compiled against the same function as Python, on the same proposals: the same subset."""
    from bnfisher.summary import MMDCriterion, anneal
    from bnfisher.summary.anneal import _walk
    from bnfisher.summary.margins import MarginCounts, margin_pairs

    frame = load("nursery")
    kernel = bf.FisherKernel(bf.learn(frame))
    encoded = kernel.encode(frame)
    pool = np.random.default_rng(0).choice(encoded.n_rows, anneal.POOL_ROWS, replace=False)
    margins = MarginCounts(encoded.codes[pool], tuple(encoded.cardinalities), margin_pairs(encoded.codes.shape[1], []),
                           encoded.codes)
    features = kernel.embed(encoded.take(pool))
    gram = np.asarray(features @ features.T.toarray())
    criterion = MMDCriterion(kernel, encoded)
    positions = np.arange(64)
    mmd2 = criterion.start(criterion.inverse[pool[positions]])
    is_pair = (np.arange(margins.weights.size) >= margins.offsets[encoded.codes.shape[1]]).astype(np.int64)
    cells = margins.cells.astype(np.int64)
    _jit.FALLBACK_BUDGET = 0.0  # the stand-in calls the compiled walk, as summarize's walks run it

    def walk(function, proposals: int) -> tuple:
        rng = np.random.default_rng(1)
        counts = np.bincount(cells[positions].ravel(), minlength=margins.weights.size).astype(np.float64)
        inside = np.zeros(pool.size, dtype=bool)
        inside[positions] = True
        target = np.asarray(margins.target) * 64
        terms = margins.weights * np.abs(counts - target)
        parts = np.array([terms[is_pair == 0].sum(), terms[is_pair == 1].sum()])
        draws = rng.integers(pool.size, size=proposals), rng.integers(64, size=proposals), rng.random(proposals)
        begin = time.perf_counter()
        found = function(gram, criterion.inner[criterion.inverse[pool]].copy(), positions.copy(), inside, cells,
                         margins.weights, is_pair, counts, target, parts, np.array([1.0, 1.0]), 1.45 * mmd2, mmd2,
                         *draws)
        return time.perf_counter() - begin, found

    walk(_walk, 1000)  # compiled (or loaded from the cache) on this first call
    python, by_python = walk(_walk.function, 20_000)
    compiled, by_compiled = walk(_walk, 20_000)
    whole, _ = walk(_walk, anneal.PROPOSALS)
    same = bool(np.array_equal(by_python[0], by_compiled[0]) and by_python[1] == by_compiled[1])
    print(f"  annealing walk, 20,000 proposals on {pool.size:,} pool rows x {cells.shape[1]} cells: Python "
          f"{python:.2f} s, compiled {1e3 * compiled:.1f} ms ({python / compiled:.0f}x); the same subset and swaps: "
          f"{same}; {anneal.PROPOSALS:,} proposals (one walk of summarize's) compiled: {whole:.2f} s, as Python "
          f"about {python * anneal.PROPOSALS / 20_000:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="k = 200 only")
    parser.add_argument("--summarize-rows", type=int, default=0, help="also run `bnfisher summarize` on this many "
                        "rows sampled from alarm")
    parser.add_argument("--summarize-k", type=int, nargs="+", default=[200, 1000], help="subset sizes for "
                        "--summarize-rows (from Parquet; the first also from CSV)")
    parser.add_argument("--only", choices=["margins", "walk", "summarize"], default=None,
                        help="only the refinement's inner loop, only the annealing walk, or only the --summarize-rows "
                        "runs")
    args = parser.parse_args()
    if args.only in ("margins", "walk"):
        (margins_loop if args.only == "margins" else walk_loop)()
        return
    ks = [200] if args.quick else [200, 1000]
    for bins in (4, 16) if args.only is None else ():
        letter(bins, ks)
    if args.summarize_rows:
        summarize(args.summarize_rows, args.summarize_k)


if __name__ == "__main__":
    main()
