"""What the mechanism search costs beside the test: ``compare`` with one changed CPT against ``compare`` without.

For each network, A is drawn from it and B from a copy with one CPT row of a middle variable changed
(``benchmarks/mechanisms.py``'s plant), ``--n`` rows a side; the reference call compares A with a second sample of
the unchanged network (its test does not reject, so no search runs).  Printed per network: seconds of ``compare``
without and with the change and their ratio (goal: at most 10), the search's seconds (graph and tests) and its share
of the changed call, the permutations the search drew (its marginal tests included); inside the changed call, the
aggregate test's seconds (its permutations and its p-value) beside the search's graph and its tests (the goal: the
tests at most the aggregate test); and -- the reference measured in the same run -- the same
search with every test run to a budget of 40 per variable and no certificate (no checkpoint, no exact bound: the
search's tests before 0.3), its permutations and seconds.
One core each (run under ``taskset -c 0``).

With ``--drift``: a drift window of 10,000 rows of alarm against a reference of 100,000, unchanged and with the same
change as above; the changed one also with the search's graph learned on every pooled row (the reference: before
``GRAPH_ROWS``).

With ``--adult``: UCI adult's men against its women (many variables changed, 14 columns of up to 42 states),
beside two random samples of all rows of the same sizes.

Run:  taskset -c 0 python benchmarks/mechanisms_cost.py [--networks alarm hepar2 andes pathfinder barley] [--n 5000]
                                                        [--drift] [--adult]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
import bnfisher.comparison.mechanisms as mechanisms
import bnfisher.comparison.staged as search
from bnfisher.data.rows import DistinctRows
from bnfisher.jobs.attribute import mechanism_table, neighbourhood_graph

HERE = Path(__file__).resolve().parent
compare_job = importlib.import_module("bnfisher.jobs.compare")  # the module (the package's face exports the function)


def timed_search(A, B, seed: int) -> tuple:
    """The search alone, as ``compare`` runs it: graph on the pool, then the tests; seconds and permutations."""
    tree = bf.learn(pd.concat([A, B], ignore_index=True), "chow-liu", missing="available-case")
    encoded = [DistinctRows.of(tree.encode(frame, missing="allow")) for frame in (A, B)]
    samples = tuple((rows.encoded.codes, rows.copies) for rows in encoded)
    started = time.perf_counter()
    graph, _ = neighbourhood_graph(tree, tuple(encoded), random_state=np.random.default_rng(seed))
    table = mechanism_table(tree, samples, graph, names=("A", "B"), random_state=np.random.default_rng(seed))
    return time.perf_counter() - started, table.attrs["permutations"], table.loc[table["changed"], "variable"].tolist()


def timed_steps(A, B, seed: int) -> tuple:
    """``compare(A, B)`` with its aggregate permutation test, the search's graph and its tests timed inside it."""
    seconds = dict.fromkeys(("permutation_statistics", "two_sample_test", "neighbourhood_graph", "mechanism_table"),
                            0.0)
    real = {name: getattr(compare_job, name) for name in seconds}

    def timer(name):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return real[name](*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - started
        return timed

    for name in seconds:
        setattr(compare_job, name, timer(name))
    try:
        started = time.perf_counter()
        result = bf.compare(A, B, random_state=seed)
        total = time.perf_counter() - started
    finally:
        for name, function in real.items():
            setattr(compare_job, name, function)
    return result, total, seconds


def drift_windows(network, plant, positions) -> list:
    """Seconds of ``drift`` for one 10,000-row alarm window against 100,000 reference rows: quiet, changed, and
    changed with the search's graph on every pooled row (the better of two runs each)."""
    attribute = importlib.import_module("bnfisher.jobs.attribute")
    net = network("alarm")
    frequencies = net.sample(20_000, random_state=1)
    for variable in np.random.default_rng(3).permutation(positions(net)["middle"]):
        planted = plant(net, variable, frequencies)
        if planted is not None:
            break
    reference = net.sample(100_000, random_state=1)
    windows = {"unchanged": net.sample(10_000, random_state=2), "changed": planted[0].sample(10_000, random_state=3)}
    seconds: dict = {}
    for _ in range(2):  # the first round compiles what the sizes need: the better of two
        for name, rows in [*windows.items(), ("changed, graph on every row", windows["changed"])]:
            cap, attribute.GRAPH_ROWS = attribute.GRAPH_ROWS, (10**9 if "every" in name else attribute.GRAPH_ROWS)
            try:
                started = time.perf_counter()
                result = bf.drift(reference, {"w": rows}, random_state=0)
                elapsed = time.perf_counter() - started
            finally:
                attribute.GRAPH_ROWS = cap
            seconds[name] = (min(elapsed, seconds.get(name, (np.inf,))[0]), result.windows["mechanism"].iloc[0])
    return ["", f"Drift, alarm ({variable} changed), a window of 10,000 rows against a reference of 100,000:", "",
            "| window | seconds | mechanism named |", "|---|---|---|",
            *[f"| {name} | {t:.2f} | {named or '-'} |" for name, (t, named) in seconds.items()]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["alarm", "hepar2", "andes", "pathfinder", "barley"])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--drift", action="store_true", help="also time a drift window against a long reference")
    parser.add_argument("--adult", action="store_true", help="also compare adult's men against its women")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from mechanisms import network, plant, positions

    warnings.simplefilter("ignore")
    lines = [f"Command: `taskset -c 0 python benchmarks/mechanisms_cost.py --networks {' '.join(args.networks)} "
             f"--n {args.n}{' --drift' if args.drift else ''}{' --adult' if args.adult else ''}` "
             f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}).", "",
             "| network (changed) | compare, no change (s) | compare, change (s) | ratio (goal <= 10) | search (s) | "
             "search's share | permutations | named | aggregate test (s) | search's graph (s) | search's tests (s) | "
             "fixed budgets: permutations | fixed budgets: search (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.networks:
        net = network(name)
        frequencies = net.sample(20_000, random_state=1)
        middle = positions(net)["middle"]
        rng = np.random.default_rng(3)
        for variable in rng.permutation(middle):
            planted = plant(net, variable, frequencies)
            if planted is not None:
                break
        moved = planted[0]
        A, B, C = net.sample(args.n, random_state=1), moved.sample(args.n, random_state=2), net.sample(args.n,
                                                                                                        random_state=3)
        lines.append(cost_row(f"{name} ({variable})", A, B, C))
    if args.adult:
        lines.append(cost_row("adult (men against women)", *adult_tables()))
    if args.drift:
        lines += drift_windows(network, plant, positions)
    print("\n".join(lines))


def adult_tables() -> tuple:
    """UCI adult (``../shared/data``): men and women (the column ``sex`` left out), and -- the unchanged reference,
    which does not reject -- two disjoint random samples of all rows of the same sizes; numeric columns in 4
    quantile bins."""
    path = HERE.parent.parent / "shared" / "data" / "uci" / "adult.csv.gz"
    if not path.exists():
        sys.exit(f"--adult needs {path}")
    data = pd.read_csv(path, na_values=["?"])
    for column in data.select_dtypes(include="number").columns:
        data[column] = pd.qcut(data[column], 4, duplicates="drop").astype(str)
    men = data["sex"] == data["sex"].mode()[0]
    table = data.drop(columns="sex")
    order = np.random.default_rng(0).permutation(len(table))
    return table[men], table[~men], (table.iloc[order[:men.sum()]], table.iloc[order[men.sum():]])


def cost_row(label: str, A, B, C) -> str:
    """One row of the table: ``compare(A, C)`` (no change; ``C`` may be the pair to compare instead) and
    ``compare(A, B)`` (a change), as the header says."""
    unchanged = C if isinstance(C, tuple) else (A, C)
    bf.compare(unchanged[0].iloc[:200], unchanged[1].iloc[:200], random_state=0)  # compiled code before the clock
    started = time.perf_counter()
    quiet = bf.compare(*unchanged, random_state=0)
    without = time.perf_counter() - started
    changed, seconds, steps = timed_steps(A, B, 0)
    found, drawn, named = timed_search(A, B, 0)
    checkpoints, search.CHECKPOINTS = search.CHECKPOINTS, ()
    share, mechanisms.CERTIFY_SHARE = mechanisms.CERTIFY_SHARE, 0.0
    budget, mechanisms.SEARCH_PERMUTATIONS = mechanisms.SEARCH_PERMUTATIONS, 40
    try:
        fixed, fixed_drawn, _ = timed_search(A, B, 0)
    finally:
        search.CHECKPOINTS, mechanisms.CERTIFY_SHARE = checkpoints, share
        mechanisms.SEARCH_PERMUTATIONS = budget
    searched = changed.mechanisms.attrs.get("searched")
    line = (f"| {label} | {without:.2f} (p = {quiet.test.p_value:.3g}) | {seconds:.2f} "
            f"(p = {changed.test.p_value:.3g}{'' if searched else ', no search'}) | {seconds / without:.1f} | "
            f"{found:.2f} | {found / seconds:.0%} | {drawn:,} | {', '.join(named) or '-'} | "
            f"{steps['permutation_statistics'] + steps['two_sample_test']:.2f} | {steps['neighbourhood_graph']:.2f} | "
            f"{steps['mechanism_table']:.2f} | {fixed_drawn:,} | {fixed:.2f} |")
    print(line, file=sys.stderr, flush=True)
    return line


if __name__ == "__main__":
    main()
