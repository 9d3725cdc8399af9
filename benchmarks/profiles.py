"""Reference profiles against whylogs' sketches: profiling rows, and merging profiles of parts.

Data: 1,000,000 rows sampled from the alarm network (37 categorical columns), as labels.

* Profiling: ``bnfisher.profile`` of the 10^6 rows on one core (``NUMBA_NUM_THREADS=1`` and one BLAS thread, set
  before import), beside ``whylogs.log`` of the same rows in whylogs' own environment (one process). Goal: >= 30x
  whylogs' rows per second.
* Merging: ``bnfisher.merge_profiles`` of the profiles of 10 parts of 10^5 rows, beside ``DatasetProfileView.merge``
  of whylogs' 10 views. Goal: under 0.1 s, and the merge equal to the profile of the union (checked here).

The times are the best of ``--repeats`` runs.  whylogs runs in the environment ``/tmp/v_whylogs``
(``python -m venv /tmp/v_whylogs && /tmp/v_whylogs/bin/pip install whylogs scipy ipython "pandas<3" pyarrow``);
without it, its column is left out.

Run:  python benchmarks/profiles.py [--rows 1000000] [--parts 10] [--repeats 3]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # one core, as whylogs runs
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import bnfisher as bf  # noqa: E402
from permutations import best_of  # noqa: E402  (benchmarks/permutations.py)

HERE = Path(__file__).resolve().parent
ALARM = HERE.parent / "tests" / "fixtures" / "bif" / "alarm.bif.gz"
WHYLOGS = Path("/tmp/v_whylogs/bin/python")
_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import pandas as pd
import whylogs as why
frame = pd.read_parquet(sys.argv[1])
parts, repeats = int(sys.argv[2]), int(sys.argv[3])
why.log(frame.iloc[:1000])  # warm-up
times = []
for _ in range(repeats):
    begin = time.perf_counter(); why.log(frame); times.append(time.perf_counter() - begin)
size = len(frame) // parts
views = [why.log(frame.iloc[i * size:(i + 1) * size]).view() for i in range(parts)]
merges = []
for _ in range(repeats):
    begin = time.perf_counter()
    merged = views[0]
    for view in views[1:]:
        merged = merged.merge(view)
    merges.append(time.perf_counter() - begin)
print(json.dumps({"profile": min(times), "merge": min(merges)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    frame = bf.read_bif(ALARM).sample(args.rows, random_state=0)
    size = args.rows // args.parts
    pieces = [frame.iloc[i * size:(i + 1) * size] for i in range(args.parts)]
    bf.profile(frame.iloc[:1000])  # warm-up (compilation)
    t_profile, whole = best_of(lambda: bf.profile(frame), args.repeats)
    parts = [bf.profile(piece) for piece in pieces]
    t_merge, merged = best_of(lambda: bf.merge_profiles(parts), args.repeats)
    union = bf.profile(frame.iloc[: size * args.parts])
    equal = bool(merged.schema == union.schema and np.array_equal(merged.codes, union.codes)
                 and np.array_equal(merged.counts, union.counts))
    theirs = None
    if WHYLOGS.exists():
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "rows.parquet"
            frame.to_parquet(path, index=False)
            done = subprocess.run([str(WHYLOGS), "-c", _CHILD, str(path), str(args.parts), str(args.repeats)],
                                  capture_output=True, text=True, env=os.environ | {"OMP_NUM_THREADS": "1"})
            if done.returncode == 0:
                theirs = json.loads(done.stdout.strip().splitlines()[-1])
            else:
                print(f"whylogs failed: {done.stderr.strip().splitlines()[-1]}")
    print(f"Command: `python benchmarks/profiles.py --rows {args.rows} --parts {args.parts} --repeats {args.repeats}` "
          f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); alarm, {args.rows:,} rows x 37 "
          f"columns, one core each; best of {args.repeats}.\n")
    print("| step | bnfisher | whylogs | ratio | goal |")
    print("|---|---|---|---|---|")
    if theirs:
        print(f"| profile {args.rows:,} rows | {t_profile:.2f} s ({args.rows / t_profile:,.0f} rows/s) | "
              f"{theirs['profile']:.2f} s | {theirs['profile'] / t_profile:.1f}x faster | >= 30x |")
        print(f"| merge {args.parts} profiles of {size:,} rows | {t_merge:.3f} s | {theirs['merge']:.3f} s | "
              f"{t_merge / theirs['merge']:.1f}x whylogs' time | < 0.1 s |")
    else:
        print(f"| profile {args.rows:,} rows | {t_profile:.2f} s | - | - | >= 30x whylogs |")
        print(f"| merge {args.parts} profiles of {size:,} rows | {t_merge:.3f} s | - | - | < 0.1 s |")
    print(f"\nThe merge equals the profile of the union: {equal} ({len(merged.counts):,} distinct rows; whole table "
          f"{len(whole.counts):,}).")


if __name__ == "__main__":
    main()
