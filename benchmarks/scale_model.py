"""A model of the exact test on a Dask cluster of W workers, from per-partition costs measured here.

The distributed exact test (``bnfisher.dask.permutations``) does three kinds of work, each measured on
one partition in this process (the same functions the workers run, one thread):

1. ``piece``: a partition of --partition rows is reduced to distinct rows and cut by bucket group
   (seconds per row; read from Parquet not included: see ``read`` below);
2. ``shard``: a group's distinct rows are reduced again and indexed (``KernelColumns``: seconds and bytes per
   distinct row);
3. ``draw``: the buckets' splits are drawn and their count tables added (seconds per distinct row and
   permutation), plus the client's share per round (bucket counts and statistics).

``read``: reading a row group of --partition rows from Parquet into pandas (seconds per row); ``encode``: its
labels to codes (``Schema.encode``); ``uniques``: finding every column's labels (the pass that learns a schema).

Model, for N rows (D distinct), B permutations, W workers (one thread each):
    time  = N (read + encode + piece) / W + D shard / W + D B draw / W + client
    worker memory = D / W x (bytes per held distinct row) + a batch of splits (2^25 x 4 bytes) + the
                    round's tables (cells x round x 8 bytes)
    client memory = its baseline + cells x round x 8 bytes x 3 + round x buckets x 8 bytes
The model is printed for the runs of ``benchmarks/exact_test_dask.py`` (so the two can be set side by side)
and for 10^9 rows on 2, 16 and 64 workers.

``--drift`` adds the two other distributed jobs, for alarm rows (the runs of ``benchmarks/drift_dask.py``):

* **drift** of N rows in windows of w rows against a reference of R rows: one pass (read, encode and window
  pieces, N (read + encode + piece) / W), then every window on one worker thread: the CPTs refitted on the pool
  (``fit``: seconds per pooled distinct row, measured), its shard and its draws (the costs above) over the
  pool's distinct rows.  Windows run one per worker thread: time = pass + ceil(windows / W) x window.  A worker
  holds its windows' distinct rows (``held_window`` bytes each) and one pool's shard; the client the reference
  (its table and distinct rows) and each window's result (``result`` bytes, measured pickled).
* **profile** of N rows: two passes (every column's labels for the schema; then read, encode and each
  partition's distinct rows), then the workers merge the partitions' distinct rows in a tree and the client
  receives the profile: D distinct rows with counts (``profile_row`` bytes each, measured).  The profile is the
  data's distinct rows: it grows with them by design.

Run:  python benchmarks/scale_model.py [--kind alarm distinct] [--partition 1000000] [--permutations 1000]
      [--alarm-distinct SHARE] [--drift --drift-distinct AT_1E7 AT_1E8]
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
from exact_test_dask import changed, network_of

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
    started = time.perf_counter()
    ordered = network.encode(frame).codes
    encode = (time.perf_counter() - started) / partition
    from bnfisher.dask.counts import _partition_uniques

    started = time.perf_counter()
    _partition_uniques(frame, list(frame.columns), ())
    uniques = (time.perf_counter() - started) / partition
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
    plan = NullPlan.draw(np.random.default_rng(0), int(shard.first.sum()), shard.sizes, permutations,
                         n_cells=shard.units.n_cells)
    started = time.perf_counter()
    counts = plan.bucket_counts(0)
    client_round = time.perf_counter() - started
    started = time.perf_counter()
    from bnfisher.comparison.null import bucket_null_sums

    bucket_null_sums(shard.units, shard.multiplicity, shard.bounds, shard.buckets, plan, 0,
                     counts[:, shard.buckets], n_jobs=1)
    draw = (time.perf_counter() - started) / (distinct * plan.round_size)
    return {"read": read, "encode": encode, "uniques": uniques, "piece": piece, "shard": shard_seconds / distinct,
            "held": held, "draw": draw,
            "distinct_share": distinct / partition, "cells": shard.units.n_cells, "round": plan.round_size,
            "client_round": client_round, "buckets_measured": buckets}


def model(costs: dict, rows: int, workers: int, permutations: int, distinct_share: float | None = None) -> dict:
    """Seconds and GiB the model gives for ``rows`` rows on ``workers`` workers."""
    share = costs["distinct_share"] if distinct_share is None else distinct_share
    distinct = rows * share
    rounds = -(-permutations // costs["round"])
    seconds = (rows * (costs["read"] + costs["encode"] + costs["piece"]) + distinct * costs["shard"]
               + distinct * permutations * costs["draw"]) / workers + rounds * costs["client_round"] * (
        n_buckets(rows) / costs["buckets_measured"])
    tables = costs["cells"] * costs["round"] * 8
    worker = (distinct / workers * costs["held"] + null.BATCH_CELLS * 4 + 2 * tables) / GiB
    client = (3 * tables + costs["round"] * n_buckets(rows) * 8) / GiB
    return {"seconds": seconds, "worker": worker, "client_extra": client}


def measure_drift(window: int, reference_rows: int, permutations: int) -> dict:
    """Per-window costs of drift on alarm rows: the refit per pooled distinct row, the held bytes, a result's size."""
    import pickle

    import pandas as pd

    from bnfisher.data.rows import DistinctRows
    from bnfisher.jobs.reference import _fit_pool

    network = network_of("alarm")
    schema = network.schema
    samples = [network.encode(network.sample(n, random_state=seed, as_frame=False))
               for n, seed in ((reference_rows, 3), (window, 4))]
    rows = [DistinctRows.of(encoded, with_inverse=False) for encoded in samples]
    pool = DistinctRows.of(network.encode(np.vstack([s.codes for s in samples])), with_inverse=False)
    started = time.perf_counter()
    _fit_pool(schema, "chow-liu", 1.0, {}, *rows)
    fit = (time.perf_counter() - started) / pool.copies.size
    # A held window's codes are those the schema gives a partition (its smallest integer type) and int64 copies.
    held_window = np.dtype(schema.code_dtype).itemsize * len(schema.variables) + 8
    # A window's result as the client keeps it: a window held by Dask (synchronous scheduler), pickled.
    import dask
    import dask.dataframe as dd

    frames = [pd.DataFrame({v: s.codes[:20_000, i] for i, v in enumerate(schema.variables)}) for s in samples]
    with dask.config.set(scheduler="synchronous"):
        result = bf.drift(frames[0], dd.from_pandas(frames[1], npartitions=2), window=len(frames[1]),
                          n_permutations=min(permutations, 99), random_state=0)
    return {"fit": fit, "pool_distinct": int(pool.copies.size), "reference_distinct": int(rows[0].copies.size),
            "window_share": rows[1].copies.size / window, "held_window": held_window,
            "result": len(pickle.dumps(result.comparisons[0]))}


def measure_profile(partition: int) -> dict:
    """The client's bytes per distinct row of a profile, and the workers' merge per piece row (alarm rows)."""
    from bnfisher.dask.counts import _distinct_codes, _merge_distinct

    network = network_of("alarm")
    codes = network.sample(partition, random_state=5, as_frame=False)
    cards = network.cardinalities
    pieces = [_distinct_codes(codes[i::4], cards, None) for i in range(4)]
    started = time.perf_counter()
    merged = _merge_distinct(cards, None, *pieces)
    merge = (time.perf_counter() - started) / sum(p[1].size for p in pieces)
    per_row = (merged[0].nbytes + merged[1].nbytes) / merged[1].size
    return {"merge": merge, "profile_row": per_row}


def model_drift(costs: dict, drift: dict, rows: int, window: int, workers: int, permutations: int,
                window_share: float | None = None) -> dict:
    """Seconds and GiB of drift over ``rows`` alarm rows in windows of ``window`` rows on ``workers`` workers."""
    windows = -(-rows // window)
    share = drift["window_share"] if window_share is None else window_share
    pool = drift["reference_distinct"] + share * window
    per_window = pool * (drift["fit"] + costs["shard"] + permutations * costs["draw"])
    seconds = rows * (costs["read"] + costs["encode"] + costs["piece"]) / workers + -(-windows // workers) * per_window
    worker = (windows * share * window * drift["held_window"] / workers + pool * costs["held"]
              + null.BATCH_CELLS * 4) / GiB
    client = windows * drift["result"] / GiB
    return {"seconds": seconds, "worker": worker, "client_extra": client, "per_window": per_window}


def model_profile(costs: dict, profile: dict, rows: int, workers: int, share: float) -> dict:
    """Seconds and GiB of a profile of ``rows`` alarm rows (``share`` of them distinct) on ``workers`` workers."""
    pieces = rows * costs["distinct_share"]  # the partitions' distinct rows, merged in a tree on the workers
    # Two passes: the labels of every column (the schema), then each partition encoded and reduced.
    seconds = (rows * (2 * costs["read"] + costs["uniques"] + costs["encode"] + costs["piece"])
               + pieces * profile["merge"] * 2) / workers
    distinct = rows * share
    return {"seconds": seconds, "client_extra": distinct * profile["profile_row"] * 2 / GiB,
            "worker": min(pieces, distinct * 8) * profile["profile_row"] * 2 / workers / GiB}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", nargs="+", default=["alarm", "distinct"], choices=["alarm", "distinct"])
    parser.add_argument("--partition", type=int, default=1_000_000)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--alarm-distinct", type=float, default=None, metavar="SHARE",
                        help="distinct rows / rows of alarm at 10^8 rows (counted from the files of "
                             "exact_test_dask.py); the model's 10^8 and 10^9 lines for alarm then use it")
    parser.add_argument("--drift", action="store_true", help="also model drift and profile (alarm rows)")
    parser.add_argument("--drift-distinct", type=float, nargs=2, default=None, metavar=("AT_1E7", "AT_1E8"),
                        help="distinct rows / rows of the drift files at 10^7 and 10^8 rows (benchmarks/drift_dask.py "
                             "prints them); the profile lines use them (10^9: the 10^8 share, an upper bound)")
    parser.add_argument("--window", type=int, default=1_000_000)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--drift-permutations", type=int, default=999)
    args = parser.parse_args()
    print(f"python benchmarks/scale_model.py --kind {' '.join(args.kind)} --partition {args.partition} "
          f"--permutations {args.permutations}" + (" --drift" if args.drift else "")
          + f" (bnfisher {bf.__version__}, {datetime.date.today()}, one thread)")
    measured = {}
    for kind in args.kind:
        costs = measured[kind] = measure(kind, args.partition, min(args.permutations, 200))
        print(f"{kind}: per row read {costs['read'] * 1e9:.0f} ns + encode {costs['encode'] * 1e9:.0f} ns + pieces "
              f"{costs['piece'] * 1e9:.0f} ns (labels of a column, for a schema: {costs['uniques'] * 1e9:.0f} ns); per "
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
    if args.drift:
        costs = measured.get("alarm") or measure("alarm", args.partition, 200)
        drift = measure_drift(args.window, args.reference_rows, args.drift_permutations)
        print(f"drift (alarm): refit {drift['fit'] * 1e9:.0f} ns per pooled distinct row; a window of "
              f"{args.window:,} rows {100 * drift['window_share']:.0f}% distinct, the reference "
              f"{drift['reference_distinct']:,} distinct rows, {drift['held_window']:.0f} bytes per held distinct "
              f"row, a window's result {drift['result'] / 2**20:.3f} MiB pickled")
        for rows, workers in ((10**7, 2), (10**8, 2), (10**9, 2), (10**9, 16), (10**9, 64)):
            out = model_drift(costs, drift, rows, args.window, workers, args.drift_permutations)
            print(f"  model, drift of {rows:,} rows in windows of {args.window:,}, {args.drift_permutations} "
                  f"permutations, {workers} workers: {out['seconds']:.0f} s ({out['per_window']:.1f} s a window on "
                  f"one thread), {out['worker']:.2f} GiB a worker, the client its baseline + the reference + "
                  f"{out['client_extra']:.3f} GiB")
        profile = measure_profile(args.partition)
        print(f"profile (alarm): merge {profile['merge'] * 1e9:.0f} ns per piece row on the workers; "
              f"{profile['profile_row']:.0f} bytes per distinct row on the client")
        for rows, workers in ((10**7, 2), (10**8, 2), (10**9, 2), (10**9, 16), (10**9, 64)):
            share = (args.drift_distinct[rows >= 10**8] if args.drift_distinct else costs["distinct_share"])
            out = model_profile(costs, profile, rows, workers, share)
            print(f"  model, profile of {rows:,} rows ({100 * share:.1f}% distinct), {workers} workers: "
                  f"{out['seconds']:.0f} s, {out['worker']:.2f} GiB a worker, the client its baseline + "
                  f"{out['client_extra']:.2f} GiB (the profile)")


if __name__ == "__main__":
    main()
