"""Does a window keep its size when it shows a label its reference lacks?

Simulation, no change anywhere: a network whose root ``R`` has a rare label ``r`` (probability ``--rare``) that
moves its child ``C`` strongly.  Each run draws a reference of ``--reference`` rows *that lacks* ``r`` and a window
of ``--window`` rows *that shows* it (both by rejection: the law of the rows given those events), and tests the
window with :func:`bnfisher.drift` under its defaults.  Beside it, in the same run, the reference measure: windows
that lack ``r`` too.  A window's size is its rate of p <= alpha; each rate is given with one Monte-Carlo standard
error, and the two are compared by a one-sided Fisher exact test.

Run:  python benchmarks/unseen_labels.py [--runs 200] [--rare 0.002] [--reference 2000] [--window 1000]
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings

import numpy as np
from scipy.stats import fisher_exact

import bnfisher as bf


def network(rare: float) -> bf.BayesianNetwork:
    """R (a, b, r) -> C (x, y, z) -> D (u, v); the rare r makes C = z likely."""
    states = {"R": ("a", "b", "r"), "C": ("x", "y", "z"), "D": ("u", "v")}
    cpts = {"R": [0.6 - rare / 2, 0.4 - rare / 2, rare],
            "C": [[0.7, 0.25, 0.05], [0.3, 0.6, 0.1], [0.05, 0.05, 0.9]],
            "D": [[0.8, 0.2], [0.4, 0.6], [0.1, 0.9]]}
    return bf.BayesianNetwork({"R": [], "C": ["R"], "D": ["C"]}, cpts, states)


def draw(net, rows: int, shows: bool, rng):
    """Rows of ``net`` given that label r of R is (``shows``) or is not among them."""
    while True:
        frame = net.sample(rows, random_state=int(rng.integers(2**31)))
        if (frame["R"] == "r").any() == shows:
            return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rare", type=float, default=0.002)
    parser.add_argument("--reference", type=int, default=2000)
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    net = network(args.rare)
    rng = np.random.default_rng(20261128)
    begin = time.perf_counter()
    rejected = {True: 0, False: 0}
    for run in range(args.runs):
        reference = draw(net, args.reference, False, rng)
        for shows in (True, False):
            window = draw(net, args.window, shows, rng)
            result = bf.drift(reference, [window], random_state=run)
            rejected[shows] += bool(result.windows["p_value"].iloc[0] <= args.alpha)
    print(f"Command: `python benchmarks/unseen_labels.py --runs {args.runs} --rare {args.rare} --reference "
          f"{args.reference} --window {args.window}` ({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); "
          f"alpha = {args.alpha}.\n")
    print("| windows | runs | p <= alpha | size ± 1 s.e. |\n|---|---|---|---|")
    for shows, label in ((True, "show a label the reference lacks"), (False, "show no such label (reference)")):
        k, r = rejected[shows], args.runs
        print(f"| {label} | {r} | {k} | {k / r:.3f} ± {np.sqrt(max(k * (r - k), 1) / r**3):.3f} |")
    odds = fisher_exact([[rejected[True], args.runs - rejected[True]], [rejected[False], args.runs - rejected[False]]],
                        alternative="greater")
    print(f"\nOne-sided Fisher exact test, unseen against none: p = {odds.pvalue:.3g}. Wall time: "
          f"{time.perf_counter() - begin:.0f} s.")


if __name__ == "__main__":
    main()
