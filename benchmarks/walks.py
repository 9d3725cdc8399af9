"""How far a reader walks: the files a job's calls pass through, in call order, to a given depth.

A *stay* is a run of consecutive calls (depth-first order) in one file; a *return* is a stay
in a file the walk had already left.  ``python benchmarks/walks.py`` traces, with
``sys.setprofile``, the calls into bnfisher's own modules (``bnfisher._utils`` and
``bnfisher.exceptions``, the shared helpers, left out) made by

* ``drift``'s preparation of its reference: from the call of :func:`bnfisher.drift` to the
  first window's comparison (the calls that schema, count, learn and hold the reference);
* ``compare``'s first table: :func:`bnfisher.compare` on two samples that do not differ
  (no mechanism search), to its return;
* the mechanism search: ``find_mechanisms`` in a comparison where one column's mechanism
  changed (the search's graph, its tests and the changed cell);

each to ``--depth`` levels below the job's own function (default 3; the reference in the same
run is the whole walk, every depth).  Run it on two commits to compare a change's walks.
"""

from __future__ import annotations

import argparse
import os
import sys

import bnfisher as bf
from bnfisher.datasets import load

PACKAGE = os.path.dirname(bf.__file__)
SHARED = (os.path.join(PACKAGE, "_utils"), os.path.join(PACKAGE, "exceptions.py"))


class Walk:
    """Record (depth, file, function) of every call into bnfisher's modules below ``entry``."""

    def __init__(self, entry: str, stop: str | None = None):
        self.entry, self.stop, self.calls, self.depth, self.inside, self.done = entry, stop, [], 0, False, False

    def __call__(self, frame, event, arg):
        if self.done or event not in ("call", "return"):
            return
        name = frame.f_code.co_filename
        if not name.startswith(PACKAGE):
            return
        if event == "return":
            if self.inside:
                self.depth -= 1
                if self.depth == 0:
                    self.done = True
            return
        function = frame.f_code.co_name
        if not self.inside:
            if function != self.entry:
                return
            self.inside = True
        elif self.stop is not None and function == self.stop:
            self.done = True
            return
        self.depth += 1
        if not name.startswith(SHARED) and not function.startswith("<"):  # comprehensions are not calls one reads
            self.calls.append((self.depth, os.path.relpath(name, PACKAGE), function))


def stays(calls: list, depth: int | None) -> tuple:
    """Return (stays, files, returns) of the calls at most ``depth`` deep (None: all)."""
    files = [f for d, f, _ in calls if depth is None or d <= depth + 1]
    runs = [f for k, f in enumerate(files) if k == 0 or f != files[k - 1]]
    seen, returns = set(), 0
    for f in runs:
        returns += f in seen
        seen.add(f)
    return len(runs), len(seen), returns


def trace(job, entry: str, stop: str | None = None) -> list:
    walk = Walk(entry, stop)
    sys.setprofile(walk)
    try:
        job()
    finally:
        sys.setprofile(None)
    return walk.calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print the walk's stays")
    args = parser.parse_args()
    data = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    moved = data.iloc[2000:4000].copy()  # one cell of finance's mechanism changed: where housing is critical
    moved.loc[moved["housing"] == "critical", "finance"] = "inconv"
    jobs = {
        "drift's reference": (lambda: bf.drift(data.iloc[:3000], data.iloc[3000:3400], window=200, n_permutations=19,
                                               random_state=0), "drift", "compare_encoded"),
        "compare's first table": (lambda: bf.compare(data.iloc[:2000], data.iloc[2000:4000], n_permutations=19,
                                                     random_state=0), "compare", None),
        "the mechanism search": (lambda: bf.compare(data.iloc[:2000], moved, n_permutations=99, random_state=0),
                                 "find_mechanisms", None),
    }
    print(f"{'walk':<24} {'depth':>5} {'stays':>6} {'files':>6} {'returns':>8}")
    for name, (job, entry, stop) in jobs.items():
        calls = trace(job, entry, stop)
        for depth in (args.depth, None):
            s, f, r = stays(calls, depth)
            print(f"{name:<24} {depth if depth is not None else 'all':>5} {s:>6} {f:>6} {r:>8}")
        if args.show:
            files = [c for c in calls if c[0] <= args.depth + 1]
            previous = None
            for d, f, function in files:
                if f != previous:
                    print(f"    {'  ' * (d - 1)}{f}: {function}")
                previous = f


if __name__ == "__main__":
    main()
