"""Fuzz the API, the command line and the metamorphic relations at scale, and print the outcome counts.

    python benchmarks/fuzz.py [--examples 2500] [--surfaces-only | --unattended-only]

Runs ``tests/test_fuzz.py`` (random tables through every job, mutated CSV/Parquet/BIF files)
and ``tests/test_fuzz_surfaces.py`` (model files in every format, profiles, time windows,
hostile names and labels, all-constant and one-state columns, a column only the second table
has and one table given twice (named in a warning, escaped in the report), windows with a label the
reference lacks, and the relations profile = table, merge of parts = profile of the union,
label round trips, shuffled rows, a window's test = the test of its rows without a new label) and
``tests/test_fuzz_unattended.py`` (store faults at every driver call, misbehaving webhook servers,
hostile names in every output, options at and beyond their bounds, stray arguments holding a store's or a
webhook's password where none is expected: no password in any output, exit status 1 only with an alarm) with
``BNFISHER_FUZZ_EXAMPLES`` examples per test, on every core (pytest-xdist).  A raw traceback
(any error that is not a ``BnfisherError``), a silent wrong answer (a metamorphic relation or
an invariant broken), a data loss (an output changed by a failed command), a hang (a call over
20 s) or an exit status other than 0/2 (0/1/2 for monitor and --exit-code) fails the run: the
counts below are printed only when there were none.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SUITES = ("tests/test_fuzz.py", "tests/test_fuzz_surfaces.py", "tests/test_fuzz_unattended.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2500, help="hypothesis examples per fuzz test")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--surfaces-only", action="store_true", help="only tests/test_fuzz_surfaces.py")
    only.add_argument("--unattended-only", action="store_true", help="only tests/test_fuzz_unattended.py")
    args = parser.parse_args()
    report = os.path.join(tempfile.mkdtemp(), "fuzz.json")
    env = dict(os.environ, BNFISHER_FUZZ_EXAMPLES=str(args.examples), BNFISHER_FUZZ_REPORT=report)
    suites = SUITES[1:2] if args.surfaces_only else SUITES[2:] if args.unattended_only else SUITES
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--run-slow", "-n", "auto",
                           *suites], env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        print(f"FAILED: a raw traceback, a broken relation, a data loss, a hang or a bad exit ({elapsed:.0f} s); see "
              "the output above.")
        return 1
    with open(report) as handle:
        outcomes = json.load(handle)
    print(f"{args.examples} examples per test, {elapsed:.0f} s")
    api = outcomes.pop("api", None)
    if api:
        print(f"API: {api.get('calls', 0)} calls on {sum(v for k, v in api.items() if k != 'calls')} random tables; "
              f"tables answered: {api.get('ok', 0)}; refused with a BnfisherError: "
              + ", ".join(f"{k} {v}" for k, v in sorted(api.items()) if k not in ("calls", "ok")))
    calls = 0
    for kind, counts in sorted(outcomes.items()):
        calls += counts.get("calls", 0)
        shown = sorted(((k, v) for k, v in counts.items() if k != "calls"), key=lambda kv: -kv[1])[:8]
        prefix = f"{kind}: {counts['calls']} calls; " if "calls" in counts else f"{kind}: "
        print(prefix + ", ".join(f"{k} {v}" for k, v in shown))
    print(f"calls on the surfaces and the command line: {calls}")
    print("raw tracebacks 0, silent wrong answers 0 (metamorphic relations and invariants held), data losses 0 "
          "(failed commands left every output as it was), hangs 0 (no call over 20 s), exit statuses other than 0 "
          "and 2: 0 (1 only for monitor and --exit-code, and in tests/test_fuzz_unattended.py only with an alarm)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
