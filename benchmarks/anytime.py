"""Anytime-valid permutation tests beside the fixed budget and Besag-Clifford's checkpoints, in one run.

Every figure is printed beside its reference, measured in the same run:

1. **Size** over ``--windows`` null windows per network and level: a reference of 1,000 rows and a window of 300
   drawn from the same network (*asia*: 8 columns of 2 states; *sachs*: 11 of 3), tested with the true network's
   Fisher kernel (a kernel that does not depend on the split: the test is exact), the aggregate test stopped by
   :class:`bnfisher.comparison.AnytimeTest` at alpha (cap ``2 max(2999, 4 / alpha - 1)``).  Reference: the
   fixed budget of 999 permutations on the first 500 windows.  Goal: size <= alpha.
2. **Stopping times** of the unchanged windows: anytime beside Besag-Clifford's checkpoints (199, 999, 2,999) on
   the first 300 windows of asia at 0.05; histogram written to ``docs/_static/anytime-stops.png``.
3. **Power** near the edge of detection: *sachs* with the root PKC's prior moved (``--shift``), 300 windows, at 0.05
   (anytime, cap 5,998; futility, cap 2,999; the fixed 2,999) and at 0.05 / 52 (8,318; 4,159; 4,159).  Goal: within
   0.02 of the fixed test.
4. **A clear change at alpha / 52**: alarm, 10^4 rows against 10^4 with HYPOVOLEMIA's prior 0.2 -> 0.4: the
   permutations the anytime test needs, beside the fixed 4,159, Besag-Clifford's, and the floor ``52 / 0.05 - 1``
   below which no permutation test can reach the level (goal in the issue: 500).
5. **compare on alarm with one changed CPT** (HYPOVOLEMIA's prior, 5,000 rows a side): the permutations of the test,
   the family tests and the mechanism tests, ``stopping="anytime"`` against ``"fixed"``, and the verdicts.  Goal:
   10x fewer at the same verdicts.

The quiet window's cost beside alibi-detect and 52 windows of 10^5 rows against 10^6 are
``benchmarks/drift_window.py`` and ``benchmarks/drift_scale.py`` (``--stopping``).

Run:  python benchmarks/anytime.py [--windows 2000] [--shift 0.1]
"""

from __future__ import annotations

import argparse
import datetime
import re
import time
import warnings
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher.comparison import (
    AnytimeTest,
    EarlyStop,
    TwoSampleResult,
    permutation_statistics,
    statistics_pvalue,
)

HERE = Path(__file__).resolve().parent
BIF = HERE.parent / "tests" / "fixtures" / "bif"
FIGURE = HERE.parent / "docs" / "_static" / "anytime-stops.png"


def network(name: str) -> bf.BayesianNetwork:
    return bf.read_network(BIF / f"{name}.bif.gz")


def moved(net: bf.BayesianNetwork, variable: str, prior) -> bf.BayesianNetwork:
    return bf.BayesianNetwork(dict(net.parents), {**net.cpts, variable: np.asarray(prior, dtype=float)},
                              dict(net.states))


def rate(k: float, n: int) -> str:
    return f"{k / n:.3f} ± {np.sqrt(max(k / n * (1 - k / n), 1 / n) / n):.3f} ({k:.0f}/{n})"


def cap(alpha: float) -> int:
    return 2 * max(2999, int(np.ceil(4 / alpha)) - 1)


def test_once(kernel, reference, window, *, seed: int, rule=None, n_permutations: int):
    """Return (p, permutations) of the aggregate test, stopped by ``rule`` (None: every permutation)."""
    outcome = permutation_statistics(kernel, reference, window, n_permutations=n_permutations, random_state=seed,
                                     early_stop=rule)
    if isinstance(rule, AnytimeTest):  # the p-value drift reports: anytime-valid, or futility's
        test = TwoSampleResult.from_statistics(outcome, method="aggregate", stopping=rule)
        return test.p_value, test.sequential.permutations
    return statistics_pvalue(outcome, "aggregate"), outcome.null.shape[0]


def size(windows: int) -> tuple:
    lines = ["| network | alpha | anytime: size | permutations (median, mean) | fixed 999: size (first 500) |",
             "|---|---|---|---|---|"]
    stops = {}
    for name in ("asia", "sachs"):
        net = network(name)
        kernel = bf.FisherKernel(net)
        for alpha in (0.05, 0.01):
            rule = AnytimeTest(alpha, "aggregate")
            rejected, used, fixed = 0, [], []
            for k in range(windows):
                rng = np.random.default_rng(10_000 * (alpha == 0.01) + k)
                reference, window = net.sample(1000, random_state=rng), net.sample(300, random_state=rng)
                p, b = test_once(kernel, reference, window, seed=k, rule=rule, n_permutations=cap(alpha))
                rejected += p <= alpha
                used.append(b)
                if k < 500:
                    fixed.append(test_once(kernel, reference, window, seed=k, n_permutations=999)[0] <= alpha)
                if name == "asia" and alpha == 0.05 and k < 300:
                    checkpoints = EarlyStop.for_alpha(alpha, lambda s: statistics_pvalue(s, "aggregate"))
                    stops.setdefault("anytime", []).append(b)
                    stops.setdefault("checkpoints", []).append(
                        test_once(kernel, reference, window, seed=k, rule=checkpoints, n_permutations=2999)[1])
            lines.append(f"| {name} | {alpha:g} | {rate(rejected, windows)} | {np.median(used):.0f}, "
                         f"{np.mean(used):.0f} | {rate(sum(fixed), len(fixed))} |")
            print(lines[-1], flush=True)
    return lines, stops


def histogram(stops: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 3.2))
    bins = np.unique(np.geomspace(1, 3000, 40).astype(int))
    for label, values in (("anytime (betting)", stops["anytime"]),
                          ("Besag-Clifford checkpoints", stops["checkpoints"])):
        axis.hist(values, bins=bins, alpha=0.6, label=f"{label}: mean {np.mean(values):.0f}")
    axis.set_xscale("log")
    axis.set_xlabel("permutations until the test stopped (unchanged window, alpha = 0.05)")
    axis.set_ylabel("windows")
    axis.legend(frameon=False)
    figure.tight_layout()
    figure.savefig(FIGURE, dpi=110)
    plt.close(figure)
    return (f"Stopping times over {len(stops['anytime'])} unchanged asia windows at 0.05: anytime mean "
            f"{np.mean(stops['anytime']):.0f} (median {np.median(stops['anytime']):.0f}, max "
            f"{max(stops['anytime'])}), checkpoints mean {np.mean(stops['checkpoints']):.0f} (median "
            f"{np.median(stops['checkpoints']):.0f}); figure {FIGURE.relative_to(HERE.parent)}.")


def power(shift: float, windows: int) -> list:
    net = network("sachs")
    kernel = bf.FisherKernel(net)
    prior = np.asarray(net.cpts["PKC"], dtype=float)
    shifted = (prior + np.array([shift, -shift / 2, -shift / 2])).clip(0.01)
    changed = moved(net, "PKC", shifted / shifted.sum())
    lines = ["| level | anytime (cap) | power | permutations (mean) | futility (cap) | power | permutations (mean) "
             "| fixed | power |", "|---|---|---|---|---|---|---|---|---|"]
    for alpha, n in ((0.05, windows), (0.05 / 52, windows // 2)):
        budget = max(2999, int(np.ceil(4 / alpha)) - 1)
        rules = {"anytime": (AnytimeTest(alpha, "aggregate"), 2 * budget),
                 "futility": (AnytimeTest(alpha, "aggregate", reject_early=False), budget)}
        found = {name: 0 for name in (*rules, "fixed")}
        used: dict = {name: [] for name in rules}
        for k in range(n):
            rng = np.random.default_rng(50_000 + k)
            reference, window = net.sample(1000, random_state=rng), changed.sample(300, random_state=rng)
            for name, (rule, cap_) in rules.items():
                p, b = test_once(kernel, reference, window, seed=k, rule=rule, n_permutations=cap_)
                found[name] += p <= alpha
                used[name].append(b)
            found["fixed"] += test_once(kernel, reference, window, seed=k, n_permutations=budget)[0] <= alpha
        lines.append(f"| {alpha:.3g} | {2 * budget} | {rate(found['anytime'], n)} | {np.mean(used['anytime']):.0f} | "
                     f"{budget} | {rate(found['futility'], n)} | {np.mean(used['futility']):.0f} | {budget} | "
                     f"{rate(found['fixed'], n)} |")
        print(lines[-1], flush=True)
    return lines


def clear_change() -> str:
    net = network("alarm")
    kernel = bf.FisherKernel(net)
    changed = moved(net, "HYPOVOLEMIA", [0.4, 0.6])
    alpha = 0.05 / 52
    used, fixed = [], None
    for k in range(5):
        reference, window = net.sample(10_000, random_state=k), changed.sample(10_000, random_state=100 + k)
        p, b = test_once(kernel, reference, window, seed=k, rule=AnytimeTest(alpha, "aggregate"),
                         n_permutations=cap(alpha))
        used.append((b, p))
        if fixed is None:
            checkpoints = EarlyStop.for_alpha(alpha, lambda s: statistics_pvalue(s, "aggregate"))
            fixed = test_once(kernel, reference, window, seed=k, rule=checkpoints, n_permutations=4159)
    return (f"A clear change at alpha / 52 = {alpha:.5f} (alarm, 10^4 rows a side, HYPOVOLEMIA 0.2 -> 0.4, 5 runs): "
            f"anytime stopped after {', '.join(str(b) for b, _ in used)} permutations (p {used[0][1]:.6f}); fixed "
            f"budget 4,159; Besag-Clifford {fixed[1]:,} (p {fixed[0]:.6f}); no permutation test can reach the level "
            f"with fewer than 1 / alpha - 1 = {int(np.ceil(1 / alpha)) - 1:,} (goal 500: missed, impossible).")


def _family_permutations(result) -> int:
    note = next(n for n in result.notes if n.startswith("Family tests"))
    numbers = [int(x.replace(",", "")) for x in re.findall(r"[\d,]+(?= permutations| families|\.\))", note)]
    if "in all" in note:
        return numbers[0]
    again = re.search(r"run again with (\d+)", note)
    return numbers[0] * int(re.search(r"\((\d+) families", note).group(1)) + (int(again.group(1)) if again else 0)


def compare_cost() -> list:
    net = network("alarm")
    changed = moved(net, "HYPOVOLEMIA", [0.3, 0.7])
    A, B = net.sample(5000, random_state=1), changed.sample(5000, random_state=2)
    lines = ["| stopping | test | family tests | mechanism tests | all | seconds | p | mechanism named |",
             "|---|---|---|---|---|---|---|---|"]
    totals = {}
    for stopping in ("fixed", "anytime"):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = bf.compare(A, B, random_state=0, stopping=stopping)
        seconds = time.perf_counter() - started
        test = result.test.sequential.permutations if result.test.sequential else len(result.test.null_distribution)
        families = _family_permutations(result)
        mechanisms = int(result.mechanisms.attrs.get("permutations", 0))
        named = result.mechanisms.loc[result.mechanisms["changed"], "variable"].tolist()
        totals[stopping] = test + families + mechanisms
        lines.append(f"| {stopping} | {test:,} | {families:,} | {mechanisms:,} | {totals[stopping]:,} | "
                     f"{seconds:.1f} | {result.test.p_value:.4g} | {', '.join(named) or '-'} |")
        print(lines[-1], flush=True)
    lines.append(f"\nAll permutations: {totals['fixed'] / totals['anytime']:.1f}x fewer with anytime (goal 10x).")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=2000)
    parser.add_argument("--shift", type=float, default=0.1)
    parser.add_argument("--only", choices=("power",), default=None, help="run one section alone")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    print(f"python benchmarks/anytime.py --windows {args.windows} --shift {args.shift} (bnfisher {bf.__version__}, "
          f"{datetime.date.today()})\n")
    if args.only == "power":
        print("3. Power near the edge\n\n" + "\n".join(power(args.shift, 300)))
        return
    print("1. Size\n")
    lines, stops = size(args.windows)
    print("\n".join(lines) + "\n")
    print("2. " + histogram(stops) + "\n")
    print("3. Power near the edge\n\n" + "\n".join(power(args.shift, 300)) + "\n")
    print("4. " + clear_change() + "\n")
    print("5. compare on alarm, one changed CPT\n\n" + "\n".join(compare_cost()))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
