"""Model-file readers on hostile input: time at 1x, 4x and 16x, beside the regular-expression NET reader of 0.3.dev.

    python benchmarks/readers.py [--base 5000]

Inputs: ``node a {`` and ``potential (a) {`` repeated (unclosed blocks, the finding of 2026-11-27), ``(``
repeated (nesting), ``1`` repeated after ``BAYES`` (UAI) and ``<VARIABLE>`` repeated (XMLBIF).  Each reader must
fail at once, in time linear in the file.  The reference is the former NET reader (non-greedy regular expressions
over the whole text), reproduced here from the code it replaced, timed on the same inputs up to 4x (it is
quadratic: 16x would take about half an hour).
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time

import bnfisher as bf
from bnfisher.bn.formats import read_net, read_uai, read_xmlbif

# The reader that bnfisher.bn.formats.exchange had before 2026-11-27 (its parsing steps; the table building is
# not needed to show the cost: it never got that far on these inputs).
_NODE = re.compile(r"node\s+(\w+)\s*\{(.*?)\}", re.S)
_POTENTIAL = re.compile(r"potential\s*\(\s*(\w+)\s*(?:\|\s*([\w\s]*))?\)\s*\{(.*?)\}", re.S)


def former_net_reader(path: str) -> None:
    text = re.sub(r"%[^\n]*", "", open(path).read())
    _NODE.findall(text)
    _POTENTIAL.findall(text)


def seconds(reader, path: str) -> float:
    started = time.perf_counter()
    try:
        reader(path)
    except bf.BnfisherError:
        pass
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=5000, help="repetitions at 1x")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    cases = [("NET, unclosed node blocks", ".net", "node a {\n", read_net, True),
             ("NET, unclosed potential blocks", ".net", "potential (a) {\n", read_net, True),
             ("NET, nested lists", ".net", "node a { states = (", read_net, False),
             ("UAI, a count then numbers", ".uai", "1 ", read_uai, False),
             ("XMLBIF, variables", ".xml", "<VARIABLE><NAME>a</NAME></VARIABLE>", read_xmlbif, False)]
    print(f"{'input':34} {'reader':10} " + " ".join(f"{f'{k}x':>9}" for k in (1, 4, 16)) + "   16x / 1x")
    for title, suffix, unit, reader, compare in cases:
        paths = []
        for factor in (1, 4, 16):
            path = os.path.join(folder, f"h{factor}{suffix}")
            head = {".uai": "BAYES\n", ".xml": "<BIF VERSION='0.3'><NETWORK>"}.get(suffix, "")
            with open(path, "w") as handle:
                handle.write(head + unit * (args.base * factor))
            paths.append(path)
        ours = [min(seconds(reader, p) for _ in range(3)) for p in paths]
        print(f"{title:34} {'bnfisher':10} " + " ".join(f"{t:9.4f}" for t in ours) + f"   {ours[2] / ours[0]:8.1f}")
        if compare:
            former = [seconds(former_net_reader, p) for p in paths[:2]]
            print(f"{'':34} {'former':10} " + " ".join(f"{t:9.4f}" for t in former) + f" {'-':>9}"
                  + f"   4x / 1x: {former[1] / former[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
