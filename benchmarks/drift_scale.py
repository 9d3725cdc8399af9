"""Drift at scale: 10^6 alarm reference rows against 52 weekly windows of 10^5 rows, beside alibi's MMDDrift.

Data: rows sampled from the *alarm* network (tests/fixtures/bif), 37 variables; a reference of
--reference-rows and --windows windows of --window-rows, no drift.  bnfisher: ``bnfisher.drift`` with
its defaults (each window stopped once its decision is settled, ``--stopping``) or --permutations per window
at most (goal: 10^6 + 52 x 10^5 rows under 60 s on this 2-core machine).  Reference, in the same run: alibi-detect's
``MMDDrift`` (PyTorch backend, Gaussian kernel on one-hot rows, 100 permutations, its default) on the
first two windows; it builds (n + m) x (n + m) kernel matrices, so it runs on a random subsample of
--alibi-rows rows of the reference and of each window (said in the output), with --peers-python.

Run:  python benchmarks/drift_scale.py [--peers-python PEERS/bin/python] [--jobs 1]
      [--stopping futility|anytime|fixed|checkpoints]   (a few minutes)
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import bnfisher as bf

ROOT = Path(__file__).resolve().parent.parent

ALIBI = textwrap.dedent("""
    import sys, time, warnings, json
    warnings.filterwarnings("ignore")
    import numpy as np
    from alibi_detect.cd import MMDDrift
    data = np.load(sys.argv[1])
    reference, windows = data["reference"], [data[k] for k in sorted(data.files) if k.startswith("window")]
    sizes = data["sizes"]
    def one_hot(codes):
        return np.concatenate([np.eye(s, dtype=np.float32)[codes[:, j]] for j, s in enumerate(sizes)], 1)
    start = time.perf_counter()
    detector = MMDDrift(one_hot(reference), backend="pytorch", p_val=0.05, n_permutations=100)
    flags = [bool(detector.predict(one_hot(w))["data"]["is_drift"]) for w in windows]
    print(json.dumps({"seconds": time.perf_counter() - start, "flags": flags}))
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, default=52)
    parser.add_argument("--window-rows", type=int, default=100_000)
    parser.add_argument("--permutations", type=int, default=None,
                        help="per window, at most (default: drift's, which lets a window reach alpha / 52)")
    parser.add_argument("--peers-python", default=None)
    parser.add_argument("--alibi-rows", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=-1, help="bnfisher.drift's n_jobs (default -1: all cores)")
    parser.add_argument("--stopping", choices=("futility", "anytime", "fixed", "checkpoints"), default="futility",
                        help="bnfisher.drift(..., stopping=...) (default: futility, drift's default)")
    args = parser.parse_args()
    network = bf.read_network(ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz")
    n = args.reference_rows + args.windows * args.window_rows
    started = time.perf_counter()
    data = network.sample(n, random_state=0)
    sampled = time.perf_counter() - started
    reference = data.iloc[:args.reference_rows]
    windows = [data.iloc[args.reference_rows + k * args.window_rows: args.reference_rows + (k + 1) * args.window_rows]
               for k in range(args.windows)]
    print(f"python benchmarks/drift_scale.py (bnfisher {bf.__version__}, {datetime.date.today()}): alarm, "
          f"{args.reference_rows:,} reference rows, {args.windows} windows of {args.window_rows:,} rows "
          f"({n:,} rows sampled in {sampled:.1f} s), {args.permutations or 'the default'} permutations per window")
    started = time.perf_counter()
    result = bf.drift(reference, windows, n_permutations=args.permutations, random_state=0, n_jobs=args.jobs,
                      stopping=args.stopping)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    done = result.windows["permutations"].tolist()
    print(f"bnfisher.drift (n_jobs={args.jobs}, stopping={args.stopping!r}, {os.cpu_count()} cores): "
          f"{seconds:.1f} s ({seconds / args.windows:.2f} s per window; goal: under 60 s in all; "
          f"{np.mean(done):.0f} permutations per window); "
          f"{int(result.windows['drift'].sum())} of {args.windows} windows flagged (no drift planted); "
          f"peak memory {peak:.2f} GiB")
    if not args.peers_python:
        print("alibi-detect MMDDrift: not run (give --peers-python)")
        return
    rng = np.random.default_rng(0)
    schema = result.network.schema
    encode = lambda frame: schema.encode(frame, missing="allow", handle_unknown="marginalize").codes  # noqa: E731
    pick = lambda frame: frame.iloc[rng.choice(len(frame), size=min(args.alibi_rows, len(frame)), replace=False)]  # noqa: E731
    arrays = {"reference": encode(pick(reference)), "window_0": encode(pick(windows[0])),
              "window_1": encode(pick(windows[1])),
              "sizes": np.array([len(schema.states[v]) for v in schema.variables])}
    if min(a.min() for k, a in arrays.items() if k != "sizes") < 0:
        raise SystemExit("a subsampled row holds a label the schema lacks; rerun with another seed")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "windows.npz"
        np.savez(path, **arrays)
        run = subprocess.run([args.peers_python, "-c", ALIBI, str(path)], capture_output=True, text=True, check=True)
    import json

    answer = json.loads(run.stdout.strip().splitlines()[-1])
    per_window = answer["seconds"] / 2
    print(f"alibi-detect MMDDrift on a subsample ({args.alibi_rows:,} reference rows and {args.alibi_rows:,} rows per "
          f"window; it cannot hold the full size's kernel matrices): {per_window:.2f} s per window, "
          f"{per_window * args.windows:.0f} s for {args.windows} windows at that subsample (bnfisher, full size: "
          f"{seconds / args.windows:.2f} s per window)")


if __name__ == "__main__":
    main()
