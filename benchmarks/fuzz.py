"""Fuzz the API, the command line and the metamorphic relations at scale, and print the outcome counts.

    python benchmarks/fuzz.py [--examples 2500]

Runs ``tests/test_fuzz.py`` with ``BNFISHER_FUZZ_EXAMPLES`` examples per test.  A raw
traceback (any error that is not a ``BnfisherError``), a silent wrong answer (a
metamorphic relation broken), a modified input or an exit status other than 0/2 fails
the run: the counts below are printed only when there were none.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2500, help="hypothesis examples per fuzz test")
    args = parser.parse_args()
    report = os.path.join(tempfile.mkdtemp(), "fuzz.json")
    env = dict(os.environ, BNFISHER_FUZZ_EXAMPLES=str(args.examples), BNFISHER_FUZZ_REPORT=report)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py"],
                          env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        print(f"FAILED: a raw traceback, a broken relation or a bad exit ({elapsed:.0f} s); see the output above.")
        return 1
    with open(report) as handle:
        outcomes = json.load(handle)
    api = outcomes.get("api", {})
    print(f"{args.examples} examples per test, {elapsed:.0f} s")
    print(f"API: {api.get('calls', 0)} calls on {sum(v for k, v in api.items() if k != 'calls')} random tables; "
          f"tables answered: {api.get('ok', 0)}; refused with a BnfisherError: "
          + ", ".join(f"{k} {v}" for k, v in sorted(api.items()) if k not in ("calls", "ok")))
    for kind, counts in sorted(outcomes.items()):
        if kind != "api":
            print(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:8]))
    print("raw tracebacks 0, silent wrong answers 0 (metamorphic relations held), modified inputs 0, "
          "exit statuses other than 0 and 2: 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
