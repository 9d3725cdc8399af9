"""Which mechanism changed, under the defaults: planted single-CPT changes in five bnlearn networks.

For each network (alarm, child, insurance, hailfinder, win95pts), each position of the changed variable (a
root's prior, a middle node with parents and children, a leaf) and each size n = m (500, 2,000, 20,000), the
benchmark draws A from the network and B from a copy where one row of one CPT is rolled by one state (the
row of the most frequent parent configuration whose roll moves at least 0.3 of probability; the variable drawn
at random among those of its position).  Nothing about the true DAG is given to bnfisher.

What is measured, per run:

* **bnfisher's default attribution** (what :func:`bnfisher.compare` reports under its defaults: the mechanism
  search of :mod:`bnfisher.comparison.mechanisms` over a hill-climbing DAG learned on the pool): whether the
  changed variable is flagged (adjusted p <= 0.05) and ranked first; whether any unchanged variable is
  flagged (family-wise); whether the changed variable sits in a group the data cannot orient; whether the
  changed cell is the one the verdict names: a value whose probability moved, given the planted parent
  configuration with no other condition (a planted parent may be left out only when its planted value holds at
  least 95% of the named configuration's rows of A: the data cannot tell the two configurations apart); the time
  of the search (graph and tests).
* **The previous default** (the reference, measured in the same run): each family's exact test of the default
  Chow-Liu tree (:func:`bnfisher.comparison.conditional_family_tests`, Holm): the changed variable's family
  flagged and first; any family of an unchanged variable flagged.
* **The oracle** (not a method: it is told which variable changed and its true parents; numpy, no bnfisher code,
  ``mechanisms_peers.oracle_pvalue``): the changed variable's exact conditional permutation test given its true
  parents (G statistic, ``2 V / alpha`` permutations within the parents' configurations) at ``alpha / V``, the
  level a method controlling the family-wise error over the V variables faces.  What the oracle misses, the rows
  do not show to such a method even with the true graph given; a goal above its rate is beyond the rows.

Rates are given with one Monte-Carlo standard error.

Run:  python benchmarks/mechanisms.py [--runs 4] [--networks alarm child ...] [--sizes 500 2000 20000]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.comparison import conditional_family_tests
from bnfisher.data.rows import DistinctRows
from bnfisher.jobs.attribute import mechanism_table, neighbourhood_graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mechanisms_peers import oracle_pvalue  # a benchmark beside this one

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "bif"
NETWORKS = ("alarm", "child", "insurance", "hailfinder", "win95pts")
POSITIONS = ("root", "middle", "leaf")


def network(name: str) -> bf.BayesianNetwork:
    path = SHARED / f"{name}.bif"
    if not path.exists():
        sys.exit(f"needs {path} (the bnlearn networks in ../shared/data/bif)")
    return bf.read_bif(path)


def positions(net: bf.BayesianNetwork) -> dict:
    """The variables of each position (two states or more)."""
    children = {v: [c for c in net.variables if v in net.parents[c]] for v in net.variables}
    cards = dict(zip(net.variables, net.cardinalities))
    usable = [v for v in net.variables if cards[v] >= 2]
    return {"root": [v for v in usable if not net.parents[v]],
            "middle": [v for v in usable if net.parents[v] and children[v]],
            "leaf": [v for v in usable if net.parents[v] and not children[v]]}


def plant(net: bf.BayesianNetwork, variable: str, frequencies: pd.DataFrame):
    """Roll one row of ``variable``'s CPT; return the changed network and the row's parent configuration (labels)."""
    parents = list(net.parents[variable])
    cpt = np.array(net.cpts[variable], dtype=float)
    rows = cpt.reshape(-1, cpt.shape[-1])
    if parents:
        shape = [len(net.states[p]) for p in parents]
        codes = [frequencies[p].map({s: k for k, s in enumerate(net.states[p])}).to_numpy() for p in parents]
        order = np.argsort(-np.bincount(np.ravel_multi_index(codes, shape), minlength=rows.shape[0]), kind="stable")
    else:
        shape, order = [], np.array([0])
    for j in order:
        rolled = np.roll(rows[j], 1)
        if 0.5 * np.abs(rolled - rows[j]).sum() >= 0.3:
            break
    else:
        return None
    moved = rows.copy()
    moved[j] = rolled
    cpts = dict(net.cpts)
    cpts[variable] = moved.reshape(cpt.shape)
    configuration = np.unravel_index(j, shape) if parents else ()
    given = {p: net.states[p][k] for p, k in zip(parents, configuration)}
    changed_states = {net.states[variable][a] for a in np.flatnonzero(np.abs(rolled - rows[j]) > 1e-12)}
    return bf.BayesianNetwork(dict(net.parents), cpts, dict(net.states)), given, changed_states


#: A cell leaving out a planted parent is still the planted configuration when that parent's value holds this share of
#: the cell's rows (the data cannot tell the two apart).
SAME_ROWS = 0.95


def cell_matches(named: dict, planted: dict, rows: pd.DataFrame) -> bool:
    """Whether a named cell is the planted configuration: no condition outside it, and the rows it selects in it."""
    planted = {str(p): str(s) for p, s in planted.items()}
    if any(planted.get(u) != k for u, k in named.items()):
        return False  # a needless condition, or a wrong value
    text = rows.astype(str)
    selected = np.all([text[u].to_numpy() == k for u, k in named.items()], axis=0) if named else np.ones(len(rows),
                                                                                                          bool)
    inside = selected & np.all([text[u].to_numpy() == k for u, k in planted.items()], axis=0) if planted else selected
    return bool(selected.sum() and inside.sum() / selected.sum() >= SAME_ROWS)


def one_run(net, variable, n, seed, frequencies) -> dict | None:
    planted = plant(net, variable, frequencies)
    if planted is None:
        return None
    other, given, states = planted
    A = net.sample(n, random_state=seed)
    B = other.sample(n, random_state=seed + 10_000)
    pool = pd.concat([A, B], ignore_index=True)
    tree = bf.learn(pool, "chow-liu")
    encoded = [DistinctRows.of(tree.encode(frame)) for frame in (A, B)]
    samples = tuple((rows.encoded.codes, rows.copies) for rows in encoded)
    started = time.perf_counter()
    graph, _ = neighbourhood_graph(tree, tuple(encoded), random_state=np.random.default_rng(seed))
    table = mechanism_table(tree, samples, graph, names=("A", "B"), random_state=np.random.default_rng(seed))
    cell = table.attrs["cell"]
    seconds = time.perf_counter() - started
    flagged = table.loc[table["changed"], "variable"].tolist()
    families = conditional_family_tests(tree, *samples, random_state=np.random.default_rng(seed))
    adjusted = bf.comparison.holm(families.p_value)
    names = [tree.variables[i] for i in families.families]
    family_flags = [v for v, p in zip(names, adjusted) if p <= 0.05]
    first_family = names[int(np.lexsort((-families.z, families.p_value))[0])] if names else None
    cell_right = cell is not None and cell["variable"] == variable and cell["state"] in states and cell_matches(
        cell["given"], given, A)
    return {"parents": len(net.parents[variable]), "flagged": variable in flagged,
            "oracle": oracle(net, A, B, variable, seed),
            "first": bool(flagged) and flagged[0] == variable,
            "false": any(v != variable for v in flagged), "n_false": sum(v != variable for v in flagged),
            "unoriented": any(variable in g for g in table.attrs["unoriented"]), "cell": cell_right,
            "seconds": seconds, "tree_first": first_family == variable and variable in family_flags,
            "tree_false": any(v != variable for v in family_flags)}


def oracle(net: bf.BayesianNetwork, A: pd.DataFrame, B: pd.DataFrame, variable: str, seed: int,
           alpha: float = 0.05) -> bool:
    """Whether the changed variable's exact test given its true parents rejects at ``alpha / V``."""
    codes = np.vstack([net.encode(frame).codes for frame in (A, B)]).astype(np.int64)
    labels = np.r_[np.zeros(len(A), dtype=np.int64), np.ones(len(B), dtype=np.int64)]
    index = {v: i for i, v in enumerate(net.variables)}
    level = alpha / len(net.variables)
    p = oracle_pvalue(codes, labels, index[variable], [index[u] for u in net.parents[variable]],
                      np.random.default_rng([seed, 7]), n_permutations=int(np.ceil(2 / level)) - 1)
    return p <= level


def rate(values) -> str:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]  # records printed before a column existed hold none of it
    k, r = values.sum(), len(values)
    return f"{k:.0f}/{r} ({100 * k / r:.0f} ± {100 * np.sqrt(max(k * (r - k), 1) / r**3):.0f}%)" if r else "—"


def summary(table: pd.DataFrame, args) -> list:
    """Return the tables of the runs (one row per network and size, then per position), with the command."""
    lines = [f"Command: `python benchmarks/mechanisms.py --runs {args.runs} --networks {' '.join(args.networks)} "
             f"--sizes {' '.join(map(str, args.sizes))}` ({datetime.date.today().isoformat()}, bnfisher "
             f"{bf.__version__}); rates ± one Monte-Carlo standard error.", "",
             "| network | n | runs | changed flagged | changed first | any unchanged flagged | cannot orient | "
             "cell named | seconds (median) | tree families: changed first | tree families: unchanged flagged | "
             "oracle (true parents, alpha / V) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, n), group in table.groupby(["network", "n"], sort=False):
        lines.append(f"| {name} | {n} | {len(group)} | {rate(group['flagged'])} | {rate(group['first'])} | "
                     f"{rate(group['false'])} | {rate(group['unoriented'])} | {rate(group['cell'])} | "
                     f"{group['seconds'].median():.1f} | {rate(group['tree_first'])} | {rate(group['tree_false'])} | "
                     f"{rate(group['oracle'])} |")
    lines += ["", "| position | runs | changed flagged | changed first | any unchanged flagged | cell named | oracle |",
              "|---|---|---|---|---|---|---|"]
    for position, group in table.groupby("position", sort=False):
        lines.append(f"| {position} | {len(group)} | {rate(group['flagged'])} | {rate(group['first'])} | "
                     f"{rate(group['false'])} | {rate(group['cell'])} | {rate(group['oracle'])} |")
    lines += ["", "| true parents | runs (middle and leaf) | changed first | cell named |", "|---|---|---|---|"]
    for count, group in table[table["position"] != "root"].groupby("parents"):
        lines.append(f"| {count} | {len(group)} | {rate(group['first'])} | {rate(group['cell'])} |")
    return lines + ["", f"All runs: changed flagged {rate(table['flagged'])}, first {rate(table['first'])}, any "
                    f"unchanged flagged {rate(table['false'])}; the tree's families: changed first "
                    f"{rate(table['tree_first'])}, unchanged flagged {rate(table['tree_false'])}; the oracle (true "
                    f"parents, alpha / V): {rate(table['oracle'])}."]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[500, 2000, 20000])
    parser.add_argument("--records", help=argparse.SUPPRESS)  # summarise the runs this script printed on stderr
    args = parser.parse_args()
    if args.records:
        import ast

        lines = [ast.literal_eval(line) for line in Path(args.records).read_text().splitlines() if line.startswith("{")]
        table = pd.DataFrame(lines)
        table["oracle"] = table.get("oracle", np.nan)
        print("\n".join(summary(table[table["network"].isin(args.networks) & table["n"].isin(args.sizes)], args)))
        return
    warnings.simplefilter("ignore")
    begin = time.perf_counter()
    records = []
    for name in args.networks:
        net = network(name)
        frequencies = net.sample(20_000, random_state=12345)
        for position, candidates in positions(net).items():
            for n in args.sizes:
                for run in range(args.runs):
                    rng = np.random.default_rng([len(name), POSITIONS.index(position), n, run])
                    variable = candidates[int(rng.integers(len(candidates)))]
                    outcome = one_run(net, variable, n, int(rng.integers(2**31)), frequencies)
                    if outcome is not None:
                        records.append({"network": name, "position": position, "n": n, "variable": variable}
                                       | outcome)
                        print(records[-1], file=sys.stderr, flush=True)
    lines = summary(pd.DataFrame(records), args)
    lines += ["", f"Wall time: {time.perf_counter() - begin:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
