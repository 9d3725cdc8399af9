"""Drift over 10^8 rows in Parquet on a 2-worker local Dask cluster: 100 windows, each held by a worker.

Data: rows sampled from the *alarm* network (tests/fixtures/bif; 37 variables, labels stored as small
integers), written once to a Parquet file of --rows rows in row groups of --window rows (kept in
--cache for later runs).  The reference: --reference-rows more rows of the same network, in memory.
``bnfisher.drift`` cuts the Parquet data into --rows / --window windows of consecutive rows in one
pass on the local cluster of ``bnfisher.dask.dask_client`` (2 worker processes, 1 thread each; each
window reduced to its distinct rows with counts and kept by a worker), then tests every window where
its rows lie (refit, permutations, family tables and witness on the workers; two windows at a time,
``n_jobs=-1``) with --permutations permutations.  The goals: 10^8 rows in 100 windows under 10
minutes, memory bounded by the partition size, on the workers and on the client.  No drift is planted.

Then ``mmd_test`` between the file's two halves, 1,000 permutations, drawn where the rows lie, and
``bnfisher.profile`` of the whole file (one distributed pass; the profile, the distinct rows with their
counts, is built on the client: it grows with the distinct rows by design).

Reference, in the same run: reading every row group of the file into pandas in one process (pyarrow),
the floor of any pass over the data.  Peak memory: this process's largest resident memory within each
step (sampled every 2 ms, and its memory before the step) and each worker's max RSS so far.

Run:  python benchmarks/drift_dask.py [--rows 100000000] [--cache /tmp/bnfisher-drift-dask] [--steps drift test profile]
      [--stopping anytime|fixed|checkpoints]
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

import bnfisher as bf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from explain import PeakMemory

ROOT = Path(__file__).resolve().parent.parent


def write_parquet(network, rows: int, path: Path, chunk: int) -> float:
    """Write ``rows`` sampled rows in row groups of ``chunk``; return the seconds it took."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    started = time.perf_counter()
    partial = path.with_suffix(".partial")
    writer = None
    for start in range(0, rows, chunk):
        codes = network.sample(min(chunk, rows - start), random_state=1000 + start // chunk, as_frame=False)
        table = pa.table({v: codes[:, i].astype(np.int8) for i, v in enumerate(network.schema.variables)})
        writer = writer or pq.ParquetWriter(partial, table.schema)
        writer.write_table(table, row_group_size=chunk)
    writer.close()
    partial.rename(path)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--window", type=int, default=1_000_000)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--stopping", choices=("anytime", "fixed", "checkpoints"), default="anytime",
                        help="bnfisher.drift(..., stopping=...) (default: anytime, drift's default)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default="/tmp/bnfisher-drift-dask")
    steps = ["drift", "test", "profile"]
    parser.add_argument("--steps", nargs="+", default=steps, choices=steps, help="what to run (the test needs drift)")
    args = parser.parse_args()
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    from bnfisher.dask import dask_client

    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
    states = {v: tuple(range(len(network.states[v]))) for v in network.variables}
    coded = bf.BayesianNetwork(dict(network.parents), dict(network.cpts), states)
    folder = Path(args.cache)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"alarm-{args.rows}-{args.window}.parquet"
    print(f"python benchmarks/drift_dask.py --rows {args.rows} (bnfisher {bf.__version__}, {datetime.date.today()}, "
          f"{os.cpu_count()} cores)")
    if not path.exists():
        seconds = write_parquet(coded, args.rows, path, args.window)
        print(f"wrote {args.rows:,} rows x {len(states)} columns to {path} in {seconds:.0f} s "
              f"({path.stat().st_size / 2**20:.0f} MiB)")
    else:
        print(f"reusing {path} ({path.stat().st_size / 2**20:.0f} MiB)")
    reference = coded.sample(args.reference_rows, random_state=7)
    started = time.perf_counter()
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        file.read_row_group(group).to_pandas()
    floor = time.perf_counter() - started
    print(f"reference: reading every row group into pandas, one process: {floor:.1f} s")
    with dask_client(n_workers=args.workers) as client:  # the local cluster `bnfisher drift --engine dask` starts
        data = dd.read_parquet(path, split_row_groups=True)
        if "drift" in args.steps or "test" in args.steps:
            with PeakMemory() as drift_memory:
                started = time.perf_counter()
                result = bf.drift(reference, data, window=args.window, n_permutations=args.permutations,
                                  random_state=0, n_jobs=-1, stopping=args.stopping)
                seconds = time.perf_counter() - started
            workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
        half = data.npartitions // 2
        if "test" in args.steps:
            kernel = bf.FisherKernel(result.network)
            with PeakMemory() as test_memory:
                started = time.perf_counter()
                test = bf.mmd_test(kernel, data.partitions[:half], data.partitions[half:], n_permutations=1000,
                                   random_state=0)
                test_seconds = time.perf_counter() - started
            test_workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
        if "profile" in args.steps:
            with PeakMemory() as profile_memory:
                started = time.perf_counter()
                profiled = bf.profile(data)
                profile_seconds = time.perf_counter() - started
            profile_workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)

    def gib(values) -> str:
        return ", ".join(f"{v:.2f}" for v in values.values())

    if "drift" not in args.steps and "test" not in args.steps:
        report_profile(args, profiled, profile_seconds, profile_memory, gib(profile_workers))
        return
    windows = result.windows
    print(f"bnfisher.drift, {args.rows:,} rows from Parquet in {len(windows)} windows of {args.window:,} rows, "
          f"{args.permutations} permutations each{early(result)}, reference {args.reference_rows:,} rows: "
          f"{seconds:.0f} s "
          f"(goal: under 600 s); {int(windows['drift'].sum())} windows flagged (no drift planted)")
    print(f"peak memory: this process {drift_memory.peak:.2f} GiB (before: {drift_memory.before:.2f}); workers "
          f"{gib(workers)} GiB; a partition: {args.window:,} rows")
    print(f"smallest p-value {windows['p_value'].min():.4f}, smallest adjusted {windows['p_adjusted'].min():.3f}")
    if "test" in args.steps:
        first = min(half * args.window, args.rows)
        print(f"mmd_test between the halves ({first:,} + {args.rows - first:,} rows from Parquet, 1000 "
              f"permutations, the network drift learned): {test_seconds:.0f} s, p = {test.p_value:.3f}; peak memory "
              f"this process {test_memory.peak:.2f} GiB (before: {test_memory.before:.2f}), workers "
              f"{gib(test_workers)} GiB (max so far)")
    if "profile" in args.steps:
        report_profile(args, profiled, profile_seconds, profile_memory, gib(profile_workers))


def early(result) -> str:
    """How many permutations the windows ran on average, when they may stop early."""
    done = result.windows["permutations"].to_numpy()
    return f" at most ({done.mean():.0f} on average)" if done.size and done.min() < done.max(initial=0) else ""


def report_profile(args, profiled, seconds: float, memory, workers: str) -> None:
    print(f"bnfisher.profile of the {args.rows:,} rows: {seconds:.0f} s, {profiled.counts.size:,} distinct "
          f"rows ({100 * profiled.counts.size / args.rows:.2f}%); peak memory this process {memory.peak:.2f} "
          f"GiB (before: {memory.before:.2f}), workers {workers} GiB (max so far)")

if __name__ == "__main__":
    main()
