"""First run against second run: what a new user waits for after ``pip install``.

Each command runs in a fresh interpreter twice with the same, initially empty numba cache
directory (``NUMBA_CACHE_DIR``): the first run compiles what it calls and writes the cache,
the second reads it.  The reference for ``import bnfisher`` is ``import numpy`` and
``import pandas`` timed the same way in the same run.  Goals (issue: performance):
first run within 2x of the second, ``import bnfisher`` under 0.5 s.

Also: one job (hill climbing on 5,000 alarm rows) on the fallbacks only and compiled only, each timed in a fresh
interpreter after a warm-up (best of 3): what a job pays while it runs on the fallbacks (bnfisher._utils.jit).

Run:  python benchmarks/first_run.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

SNIPPETS = {
    "import numpy": "import numpy",
    "import pandas": "import pandas",
    "import bnfisher": "import bnfisher",
    "learn(nursery, 'hc')": ("import bnfisher as bf; from bnfisher.datasets import load; "
                             "bf.learn(load('nursery'), 'hc')"),
    "summarize(nursery, k=200)": ("import bnfisher as bf; from bnfisher.datasets import load; "
                                  "bf.summarize(load('nursery'), 200, random_state=0)"),
    "compare(nursery halves)": ("import bnfisher as bf; from bnfisher.datasets import load; d = load('nursery'); "
                                "bf.compare(d.iloc[::2], d.iloc[1::2], random_state=0)"),
    "learn(asia sample, 'exact')": ("import bnfisher as bf; from pathlib import Path; "
                                     "net = bf.read_bif(Path(bf.__file__).parents[2] / 'tests' / 'fixtures' / "
                                     "'bif' / 'asia.bif.gz'); "
                                     "bf.learn(net.sample(2000, random_state=0), 'exact')"),
    "learn(alarm 50,000 rows, 'hc')": ("import bnfisher as bf; from pathlib import Path; "
                                       "net = bf.read_bif(Path(bf.__file__).parents[2] / 'tests' / 'fixtures' / "
                                       "'bif' / 'alarm.bif.gz'); "
                                       "bf.learn(net.sample(50000, random_state=0), 'hc')"),
}


def run(code: str, cache: str) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    return time.perf_counter() - start


FALLBACK_JOB = """
import sys, time, bnfisher as bf, bnfisher._utils.jit as j
from pathlib import Path
j.FALLBACK_BUDGET = float(sys.argv[1])
data = bf.read_bif(Path(bf.__file__).parents[2] / "tests/fixtures/bif/alarm.bif.gz").sample(5000, random_state=0)
bf.learn(data.iloc[:500], "hc")
times = []
for _ in range(3):
    start = time.perf_counter()
    bf.learn(data, "hc")
    times.append(time.perf_counter() - start)
print(min(times), "numba" in sys.modules)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh caches per command; the best is shown")
    parser.add_argument("--only", nargs="+", choices=list(SNIPPETS), help="these commands only")
    args = parser.parse_args()
    print(f"{'command (fresh interpreter)':32s} {'first':>8s} {'second':>8s} {'ratio':>7s}  (goal <= 2x)")
    names = args.only or list(SNIPPETS)
    for name in names:
        code = SNIPPETS[name]
        firsts, seconds = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                firsts.append(run(code, cache))
                seconds.append(run(code, cache))
        first, second = min(firsts), min(seconds)
        print(f"{name:32s} {first:7.2f}s {second:7.2f}s {first / second:6.1f}x")
    out = {}
    for budget in ("1e9", "0"):
        found = subprocess.run([sys.executable, "-c", FALLBACK_JOB, budget], check=True, capture_output=True,
                               text=True).stdout.split()
        out[budget] = (float(found[0]), found[1])
    print(f"\nlearn(alarm 5,000 rows, 'hc'), best of 3 after a warm-up: on the fallbacks {out['1e9'][0]:.3f} s "
          f"(numba imported: {out['1e9'][1]}); compiled {out['0'][0]:.3f} s "
          f"({out['1e9'][0] / out['0'][0]:.1f}x)")


if __name__ == "__main__":
    main()
