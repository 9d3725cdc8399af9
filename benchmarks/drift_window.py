"""The cost of one drift window, beside alibi-detect's ChiSquareDrift on the same windows, with their false alarms.

Data: the *alarm* network (tests/fixtures/bif), a reference of ``--reference`` rows and ``--windows`` windows of
``--rows`` rows drawn from the same network (no drift: every flag is a false alarm), then one more window in which
30% of HR's values are permuted among its rows (a dependence change, every marginal unchanged in expectation) and
one drawn with P(HYPOVOLEMIA = TRUE) 0.2 -> 0.4 (a marginal change).

* bnfisher: ``bnfisher.drift(reference, windows)`` with its defaults (the whole reference against each window,
  the aggregate test, Holm over the windows), on every core (``--jobs``), compiled (``FALLBACK_BUDGET = 0``, after
  a warm-up call); its time per window is the whole call's time over the number of windows.
* alibi-detect: ``ChiSquareDrift(reference, p_val=0.05)`` (a chi-square test per column, Bonferroni over the 37
  columns), built once on the reference as a monitor would, then ``predict`` per window, in its own environment
  (``--peers-python``, an interpreter with alibi-detect and numpy < 2:
  ``python -m venv /tmp/v_alibi && /tmp/v_alibi/bin/pip install "numpy<2" alibi-detect "pandas<3" scipy``).

Goal (issue "The exact test where the data lies"): a window within 3x of ChiSquareDrift's time per window, at the
same error rate.

Run:  python benchmarks/drift_window.py --peers-python /tmp/v_alibi/bin/python [--reference 100000] [--rows 10000]
      [--windows 10] [--jobs -1] [--stopping anytime|fixed|checkpoints]   (drift(..., stopping=...))
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher._utils import jit as _jit

HERE = Path(__file__).resolve().parent
ALARM = HERE.parent / "tests" / "fixtures" / "bif" / "alarm.bif.gz"

_CHILD = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
from alibi_detect.cd import ChiSquareDrift
data = np.load(sys.argv[1])
reference, windows = data["reference"], [data[k] for k in sorted(k for k in data.files if k.startswith("w"))]
start = time.perf_counter()
detector = ChiSquareDrift(reference, p_val=0.05)
built = time.perf_counter() - start
flags, seconds = [], []
for x in windows:
    start = time.perf_counter()
    flags.append(bool(detector.predict(x)["data"]["is_drift"]))
    seconds.append(time.perf_counter() - start)
print(json.dumps({"built": built, "seconds": seconds, "flags": flags}))
"""


def _windows(network: bf.BayesianNetwork, args) -> list:
    """``args.windows`` unchanged windows, then a dependence change and a marginal change."""
    windows = [network.sample(args.rows, random_state=100 + k) for k in range(args.windows)]
    rng = np.random.default_rng(7)
    dependence = network.sample(args.rows, random_state=99)
    rows = rng.choice(args.rows, size=int(0.3 * args.rows), replace=False)
    dependence.loc[rows, "HR"] = dependence.loc[rng.permutation(rows), "HR"].to_numpy()
    cpts = dict(network.cpts)
    cpts["HYPOVOLEMIA"] = np.array([0.4, 0.6])  # P(TRUE) 0.2 -> 0.4
    marginal = bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states)).sample(args.rows,
                                                                                          random_state=98)
    return windows + [dependence, marginal]


def _codes(reference: pd.DataFrame, frames: list) -> tuple:
    """Integer codes per column, categories from the reference; a label it never showed gets a code of its own."""
    out_ref, out = [], [[] for _ in frames]
    for column in reference.columns:
        categories = {c: k for k, c in enumerate(sorted(reference[column].astype(str).unique()))}
        out_ref.append(reference[column].astype(str).map(categories).to_numpy())
        for k, frame in enumerate(frames):
            out[k].append(frame[column].astype(str).map(categories).fillna(len(categories)).to_numpy())
    return np.stack(out_ref, 1).astype(np.float32), [np.stack(o, 1).astype(np.float32) for o in out]


def _alibi(python: str, reference: pd.DataFrame, windows: list) -> dict | None:
    x_ref, xs = _codes(reference, windows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "codes.npz"
        np.savez(path, reference=x_ref, **{f"w{k:03d}": x for k, x in enumerate(xs)})
        done = subprocess.run([python, "-c", _CHILD, str(path)], capture_output=True, text=True)
    if done.returncode:
        print(f"alibi-detect failed: {done.stderr.strip().splitlines()[-1]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--windows", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=-1, help="bnfisher's n_jobs (-1: every core)")
    parser.add_argument("--peers-python", default=None)
    parser.add_argument("--stopping", choices=("anytime", "fixed", "checkpoints"), default="anytime",
                        help="bnfisher.drift(..., stopping=...) (default: anytime, drift's default)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    _jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a monitor that runs for weeks runs it
    network = bf.read_network(ALARM)
    reference = network.sample(args.reference, random_state=0)
    windows = _windows(network, args)
    bf.drift(reference.iloc[:2000], [windows[0].iloc[:500]], n_permutations=99, random_state=0)  # compile, warm
    start = time.perf_counter()
    result = bf.drift(reference, windows, random_state=0, n_jobs=args.jobs, stopping=args.stopping)
    ours = time.perf_counter() - start
    flags = result.windows["drift"].tolist()
    n = args.windows
    start = time.perf_counter()  # the unchanged windows alone: what a monitor's quiet week costs
    bf.drift(reference, windows[:n], random_state=0, n_jobs=args.jobs, stopping=args.stopping,
             n_permutations=_budget(result, args.stopping))  # the same budget as above
    quiet = (time.perf_counter() - start) / n
    theirs = _alibi(args.peers_python, reference, windows) if args.peers_python else None
    flag = f" --stopping {args.stopping}"
    print(f"Command: `python benchmarks/drift_window.py --reference {args.reference} --rows {args.rows} --windows "
          f"{n} --jobs {args.jobs}{flag}` ({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); alarm, a "
          f"{args.reference:,}-row reference, {n} unchanged windows of {args.rows:,} rows, then a dependence and a "
          "marginal change.\n")
    print("| detector | time per window | false alarms | dependence change | marginal change |")
    print("|---|---|---|---|---|")
    done = result.windows["permutations"].to_numpy()
    cores = "every core" if args.jobs == -1 else f"n_jobs={args.jobs}"
    permutations = (f"stopping={args.stopping!r}: {np.mean(done[:n]):.0f} permutations for an unchanged window, "
                    f"{int(done[n])} and {int(done[n + 1])} for the changed ones")
    print(f"| bnfisher drift ({permutations}, {cores}) | {ours / len(windows):.3f} s ({quiet:.3f} s unchanged) | "
          f"{sum(flags[:n])} of {n} | {_said(flags[n])} | {_said(flags[n + 1])} |")
    if theirs:
        per = float(np.mean(theirs["seconds"]))
        print(f"| alibi-detect ChiSquareDrift (one core; built once in {theirs['built']:.3f} s) | {per:.3f} s | "
              f"{sum(theirs['flags'][:n])} of {n} | {_said(theirs['flags'][n])} | {_said(theirs['flags'][n + 1])} |")
        print(f"\nbnfisher's time per window: {ours / len(windows) / per:.1f}x ChiSquareDrift's over all windows, "
              f"{quiet / per:.1f}x over the unchanged windows alone (goal: within 3x). A flagged window also runs "
              "every permutation and the mechanism search.")
    else:
        print("| alibi-detect ChiSquareDrift | not run (give --peers-python) | | | |")


def _budget(result, stopping: str) -> int:
    """Return the permutations per window (the cap) the run above used."""
    if stopping == "fixed":
        return max(len(c.test.null_distribution) for c in result.comparisons)
    return int(re.search(r"at most (\d+)", next(n for n in result.notes if n.startswith("Windows"))).group(1))


def _said(flag) -> str:
    return "flagged" if flag else "missed"


if __name__ == "__main__":
    main()
