"""The exact test where the rows lie: the client's peak memory as the rows grow, beside the former gathering engine.

Data, written once to Parquet (row groups of --partition rows, kept in --cache):

* ``distinct``: nearly distinct rows, from a chain of 16 variables of 10 states each (CPT rows drawn
  from a flat Dirichlet, seed 0): 10^16 configurations, so almost every row is new;
* ``alarm``: rows of the *alarm* network (tests/fixtures/bif; 37 variables, many repeated rows).

Sample B has one CPT changed.  Each measurement runs in a fresh process with a 2-worker local cluster
(``bnfisher.dask.dask_client``, 1 thread each) and reports the process's (the client's) peak
resident memory and each worker's:

* **where the rows lie** (``mmd_test`` on Dask DataFrames: each worker draws its hash buckets' share of
  every permutation; the client holds ``cells x permutations`` numbers);
* **gathered** (the reference, the former engine: each sample reduced to its distinct rows by a
  distributed group-by and brought to the client, which draws the permutations; reached here through
  ``DaskCounts`` providers, whose backend does not draw where the rows lie).

Both give the same p-value (the same buckets and streams), checked.  Goal: from 10^6 to 4 x 10^6 nearly
distinct rows a side, the client's peak grows by at most 1.3x where the rows lie.

Run:  python benchmarks/exact_test_dask.py [--rows 1000000 4000000] [--kind distinct] [--permutations 200]
      python benchmarks/exact_test_dask.py --rows 50000000 --kind alarm distinct --permutations 200
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import bnfisher as bf

ROOT = Path(__file__).resolve().parent.parent


def network_of(kind: str) -> bf.BayesianNetwork:
    """The network rows are drawn from (states are small integers)."""
    if kind == "alarm":
        network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
        states = {v: tuple(range(len(network.states[v]))) for v in network.variables}
        return bf.BayesianNetwork(dict(network.parents), dict(network.cpts), states)
    rng = np.random.default_rng(0)
    names = [f"x{i}" for i in range(16)]
    parents = {name: ([names[i - 1]] if i else []) for i, name in enumerate(names)}
    cpts = {name: rng.dirichlet(np.full(10, 5.0), size=10 if i else None) for i, name in enumerate(names)}
    return bf.BayesianNetwork(parents, cpts, {name: tuple(range(10)) for name in names})


def changed(network: bf.BayesianNetwork) -> bf.BayesianNetwork:
    """The same network with its last variable's CPT reversed (sample B)."""
    cpts = dict(network.cpts)
    last = network.variables[-1]
    cpts[last] = np.asarray(cpts[last])[..., ::-1].copy()
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states), schema=network.schema)


def write(network: bf.BayesianNetwork, rows: int, path: Path, chunk: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    partial = path.with_suffix(".partial")
    writer = None
    for start in range(0, rows, chunk):
        codes = network.sample(min(chunk, rows - start), random_state=seed * 10**6 + start // chunk, as_frame=False)
        table = pa.table({v: codes[:, i].astype(np.int8) for i, v in enumerate(network.schema.variables)})
        writer = writer or pq.ParquetWriter(partial, table.schema)
        writer.write_table(table, row_group_size=chunk)
    assert writer is not None
    writer.close()
    partial.rename(path)


def files(kind: str, rows: int, chunk: int, cache: Path) -> tuple[Path, Path]:
    network = network_of(kind)
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for side, model in (("a", network), ("b", changed(network))):
        path = cache / f"{kind}-{rows}-{chunk}-{side}.parquet"
        if not path.exists():
            write(model, rows, path, chunk, seed=1 if side == "a" else 2)
        out.append(path)
    return out[0], out[1]


def child(kind: str, rows: int, chunk: int, cache: Path, mode: str, permutations: int) -> dict:
    """One measurement in this (fresh) process: seconds, p-value, client and worker peaks in GiB."""
    import dask.dataframe as dd

    from bnfisher.dask import DaskCounts, dask_client

    a, b = files(kind, rows, chunk, cache)
    network = network_of(kind)
    kernel = bf.FisherKernel(network)
    with dask_client(n_workers=2) as client:
        first, second = dd.read_parquet(a, split_row_groups=True), dd.read_parquet(b, split_row_groups=True)
        if mode == "gathered":  # providers whose backend does not draw where the rows lie: the former engine
            first, second = (DaskCounts(frame, network.schema, missing="allow") for frame in (first, second))
        started = time.perf_counter()
        test = bf.mmd_test(kernel, first, second, n_permutations=permutations, random_state=0)
        seconds = time.perf_counter() - started
        workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    return {"seconds": seconds, "p_value": float(test.p_value), "statistic": float(test.statistic),
            "client": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "workers": sorted(workers.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000], help="rows a side")
    parser.add_argument("--kind", nargs="+", default=["distinct"], choices=["distinct", "alarm"])
    parser.add_argument("--partition", type=int, default=1_000_000, help="rows per row group (partition)")
    parser.add_argument("--permutations", type=int, default=200)
    parser.add_argument("--modes", nargs="+", default=["lie", "gathered"], choices=["lie", "gathered"])
    parser.add_argument("--cache", default="/tmp/bnfisher-exact-test")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "ROWS", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    cache = Path(args.cache)
    if args.child:
        kind, rows, mode = args.child[0], int(args.child[1]), args.child[2]
        print(json.dumps(child(kind, rows, args.partition, cache, mode, args.permutations)))
        return
    print(f"python benchmarks/exact_test_dask.py --rows {' '.join(map(str, args.rows))} --kind {' '.join(args.kind)} "
          f"--permutations {args.permutations} (bnfisher {bf.__version__}, {datetime.date.today()}, "
          f"{os.cpu_count()} cores, 2 workers, partitions of {args.partition:,} rows)")
    peaks: dict = {}
    for kind in args.kind:
        for rows in args.rows:
            files(kind, rows, args.partition, cache)  # written once, outside the measurements
            line = []
            for mode in args.modes:
                output = subprocess.run([sys.executable, __file__, "--child", kind, str(rows), mode, "--partition",
                                         str(args.partition), "--permutations", str(args.permutations), "--cache",
                                         str(cache)], check=True, capture_output=True, text=True).stdout
                result = json.loads(output.strip().splitlines()[-1])
                peaks[(kind, rows, mode)] = result
                line.append(f"{'where the rows lie' if mode == 'lie' else 'gathered (former engine)'}: "
                            f"{result['seconds']:.0f} s, client {result['client']:.2f} GiB, workers "
                            f"{', '.join(f'{w:.2f}' for w in result['workers'])} GiB, p = {result['p_value']:.4f}")
            same = len({peaks[(kind, rows, m)]["p_value"] for m in args.modes}) == 1
            print(f"{kind}, {rows:,} + {rows:,} rows: " + " | ".join(line) + f"; the same p-value: {same}",
                  flush=True)
        sizes = sorted(args.rows)
        if len(sizes) > 1:
            for mode in args.modes:
                growth = peaks[(kind, sizes[-1], mode)]["client"] / peaks[(kind, sizes[0], mode)]["client"]
                print(f"{kind}: client peak at {sizes[-1]:,} / at {sizes[0]:,} rows a side, "
                      f"{'where the rows lie' if mode == 'lie' else 'gathered'}: {growth:.2f}x"
                      + (" (goal <= 1.3x)" if mode == "lie" else ""))


if __name__ == "__main__":
    main()
