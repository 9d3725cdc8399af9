"""A model of the exact test on a Dask cluster of W workers, from per-partition costs measured here.

The distributed exact test (``bnfisher.dask.permutations``) does three kinds of work, each measured on
one partition in this process (the same functions the workers run, one thread):

1. ``piece``: a partition of --partition rows is reduced to distinct rows and cut by bucket group
   (seconds per row; read from Parquet not included: see ``read`` below);
2. ``shard``: a group's distinct rows are reduced again and indexed (``KernelColumns``: seconds and bytes per
   distinct row);
3. ``draw``: the buckets' splits are drawn and their count tables added (seconds per distinct row and
   permutation), plus the client's share per round (bucket counts and statistics).

``read``: reading a row group of --partition rows from Parquet into pandas (seconds per row).

Model, for N rows (D distinct), B permutations, W workers (one thread each):
    time  = N (read + piece) / W + D shard / W + D B draw / W + client
    worker memory = D / W x (bytes per held distinct row) + a batch of splits (2^25 x 4 bytes) + the
                    round's tables (cells x round x 8 bytes)
    client memory = its baseline + cells x round x 8 bytes x 3 + round x buckets x 8 bytes
The model is printed for the runs of ``benchmarks/exact_test_dask.py`` (so the two can be set side by side)
and for 10^9 rows on 2, 16 and 64 workers.

Run:  python benchmarks/scale_model.py [--kind alarm distinct] [--partition 1000000] [--permutations 1000]
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
from bnfisher.comparison import null
from bnfisher.comparison.null import NullPlan, n_buckets
from bnfisher.dask.permutations import _partition_pieces, _shard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exact_test_dask import changed, network_of  # noqa: E402

GiB = 2**30


def _rss() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / GiB


def measure(kind: str, partition: int, permutations: int) -> dict:
    """Per-row, per-distinct-row and per-(distinct row x permutation) costs on one partition, one thread."""
    import pandas as pd

    network = network_of(kind)
    kernel = bf.FisherKernel(network)
    codes = np.vstack([network.sample(partition // 2, random_state=1, as_frame=False),
                       changed(network).sample(partition // 2, random_state=2, as_frame=False)])
    frame = pd.DataFrame({v: codes[:, i].astype(np.int8) for i, v in enumerate(network.schema.variables)})
    path = Path(f"/tmp/bnfisher-scale-model-{kind}.parquet")
    frame.to_parquet(path, row_group_size=partition)
    started = time.perf_counter()
    pd.read_parquet(path)
    read = (time.perf_counter() - started) / partition
    ordered = network.encode(frame).codes
    buckets = n_buckets(partition)  # buckets of the real size (2^17 pooled rows), the draws' unit of work
    groups = -(-buckets // null.BUCKETS_PER_GROUP)
    started = time.perf_counter()
    pieces = _partition_pieces(ordered[: partition // 2], np.arange(ordered.shape[1]), network.cardinalities,
                               buckets, groups)
    pieces += _partition_pieces(ordered[partition // 2:], np.arange(ordered.shape[1]), network.cardinalities,
                                buckets, groups)
    piece = (time.perf_counter() - started) / partition
    # One shard holding every bucket of the partition (the worker's work per distinct row does not depend on it).
    merged = [(np.vstack([p[0] for p in pieces[:groups]]), np.concatenate([p[1] for p in pieces[:groups]])),
              (np.vstack([p[0] for p in pieces[groups:]]), np.concatenate([p[1] for p in pieces[groups:]]))]
    before = _rss()
    started = time.perf_counter()
    shard = _shard(kernel, buckets, 1, *merged)
    shard_seconds = time.perf_counter() - started
    assert shard is not None
    distinct = int(shard.multiplicity.size)
    held = max(_rss() - before, 0.0) * GiB / distinct
    plan = NullPlan.draw(0, int(shard.first.sum()), shard.sizes, permutations, n_cells=shard.units.n_cells)
    started = time.perf_counter()
    counts = plan.bucket_counts(0)
    client_round = time.perf_counter() - started
    started = time.perf_counter()
    from bnfisher.comparison.null import bucket_null_sums

    bucket_null_sums(shard.units, shard.multiplicity, shard.bounds, shard.buckets, plan, 0,
                     counts[:, shard.buckets], n_jobs=1)
    draw = (time.perf_counter() - started) / (distinct * plan.round_size)
    return {"read": read, "piece": piece, "shard": shard_seconds / distinct, "held": held, "draw": draw,
            "distinct_share": distinct / partition, "cells": shard.units.n_cells, "round": plan.round_size,
            "client_round": client_round, "buckets_measured": buckets}


def model(costs: dict, rows: int, workers: int, permutations: int, distinct_share: float | None = None) -> dict:
    """Seconds and GiB the model gives for ``rows`` rows on ``workers`` workers."""
    share = costs["distinct_share"] if distinct_share is None else distinct_share
    distinct = rows * share
    rounds = -(-permutations // costs["round"])
    seconds = (rows * (costs["read"] + costs["piece"]) + distinct * costs["shard"]
               + distinct * permutations * costs["draw"]) / workers + rounds * costs["client_round"] * (
        n_buckets(rows) / costs["buckets_measured"])
    tables = costs["cells"] * costs["round"] * 8
    worker = (distinct / workers * costs["held"] + null.BATCH_CELLS * 4 + 2 * tables) / GiB
    client = (3 * tables + costs["round"] * n_buckets(rows) * 8) / GiB
    return {"seconds": seconds, "worker": worker, "client_extra": client}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", nargs="+", default=["alarm", "distinct"], choices=["alarm", "distinct"])
    parser.add_argument("--partition", type=int, default=1_000_000)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--alarm-distinct", type=float, default=None, metavar="SHARE",
                        help="distinct rows / rows of alarm at 10^8 rows (counted from the files of "
                             "exact_test_dask.py); the model's 10^8 and 10^9 lines for alarm then use it")
    args = parser.parse_args()
    print(f"python benchmarks/scale_model.py --kind {' '.join(args.kind)} --partition {args.partition} "
          f"--permutations {args.permutations} (bnfisher {bf.__version__}, {datetime.date.today()}, one thread)")
    for kind in args.kind:
        costs = measure(kind, args.partition, min(args.permutations, 200))
        print(f"{kind}: per row read {costs['read'] * 1e9:.0f} ns + pieces {costs['piece'] * 1e9:.0f} ns; per "
              f"distinct row shard {costs['shard'] * 1e9:.0f} ns and {costs['held']:.0f} bytes held; per distinct "
              f"row and permutation {costs['draw'] * 1e9:.1f} ns; distinct rows {100 * costs['distinct_share']:.0f}% "
              f"of a partition; {costs['cells']} cells, rounds of {costs['round']} permutations; process peak "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
        for rows, workers, permutations in ((8_000_000, 2, 200), (100_000_000, 2, 1000), (10**9, 2, 1000),
                                            (10**9, 16, 1000), (10**9, 64, 1000)):
            # Distinct rows grow slower than the rows on alarm: the partition's share is an upper bound there.
            share = args.alarm_distinct if kind == "alarm" and rows >= 10**8 else None
            out = model(costs, rows, workers, permutations, share)
            print(f"  model, {rows:,} rows, {permutations} permutations, {workers} workers"
                  + (f" ({100 * share:.1f}% distinct)" if share else "") + f": {out['seconds']:.0f} s, "
                  f"{out['worker']:.2f} GiB a worker, the client its baseline + {out['client_extra']:.3f} GiB")


if __name__ == "__main__":
    main()
