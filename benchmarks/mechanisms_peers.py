"""Which mechanism changed, side by side: bnfisher against CD-NOD, RCD and DoWhy on the same planted changes.

Two protocols, the same data for every method:

* **RCD's** (Ikram et al., NeurIPS 2022, Sec. 5): a random discrete network of 10-50 nodes with 6 states each
  (a random order; each node takes ``min(i, Poisson(1.5))`` parents among the earlier ones, at most 3; every CPT
  row drawn from a flat Dirichlet), 1,000 rows from it and 1,000 from a copy where one node's CPT is redrawn.
* **bnlearn networks** with one CPT row changed (``benchmarks/mechanisms.py``'s plant: the most frequent parent
  configuration's row rolled by one state), ``--n`` rows a side.

Methods: **bnfisher** (:func:`bnfisher.compare` under its defaults, no graph given; named: the mechanism table's
flagged variables, ranked as the table ranks them); **CD-NOD** (causal-learn, Huang et al. 2020) with its
chi-square and G-square tests at alpha = 0.05 (named: the variables adjacent to the context node; CD-NOD gives no
ranking, so its "first" counts a hit only when it names the changed variable alone); **RCD** (PyRCA's
implementation, its defaults: top 3, chi-square, no binning of the integer codes); **DoWhy**
``gcm.distribution_change`` given the *true* graph (named: variables holding >= 10% of the absolute attribution,
ranked by it; target: the sink downstream of the change with the most ancestors) -- optional, slow.

**Oracles** (not methods: they are told which variable changed and its true parents; numpy and SciPy, no
bnfisher code): the changed variable's exact conditional permutation test of "its distribution given its true
parents is the same in both", the G statistic summed over the parents' configurations, 999 permutations of the
label within each configuration, at alpha = 0.05 ("oracle, one test": what a method that knew where to look could
name) and at alpha / V ("oracle, Bonferroni over V": what a method controlling the family-wise error over the V
variables could name, even with the graph given).  A goal above the oracle's rate is beyond any test with this
statistic on these rows.

Figures per protocol and method: top-1 recall (the changed variable ranked first), set F1 (precision of the named
set against the one changed variable, and recall), the rate of runs flagging an unchanged variable, and seconds per
call (median).  Every method on one core: run the script under ``taskset -c 0`` (bnfisher counts the cores it
may use; the peers, in their own interpreters, inherit the affinity and run with OMP/BLAS threads at 1).

The peers need their own environments (none is a dependency of bnfisher)::

    python -m venv /tmp/peers && /tmp/peers/bin/pip install causal-learn dowhy
    python -m venv /tmp/pyrca && /tmp/pyrca/bin/pip install --no-deps sfr-pyrca && \\
        /tmp/pyrca/bin/pip install pandas scikit-learn pyyaml schema networkx dill

Run:  taskset -c 0 python benchmarks/mechanisms_peers.py --causal-learn /tmp/peers/bin/python \
          --pyrca /tmp/pyrca/bin/python
      [--dowhy /tmp/peers/bin/python] [--seeds 3] [--sizes 10 20 30 50] [--networks alarm child sachs insurance]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data" / "bif"
SHARE = 0.10
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}


def worker(path: str) -> None:
    """Run in a peer's environment: read the job, run the methods it names, write what each named and its time."""
    import pandas as pd

    job = json.loads(Path(path).read_text())
    A, B = (pd.read_csv(job[key]) for key in ("A", "B"))
    out = {}
    for method in job["methods"]:  # imports before the clock starts
        __import__(IMPORTS[INTERPRETERS[method]])
    for method in job["methods"]:
        started = time.perf_counter()
        ranked = RUNNERS[method](A, B, job)
        out[method] = {"ranked": [str(v) for v in ranked["ranked"]], "named": [str(v) for v in ranked["named"]],
                       "seconds": time.perf_counter() - started}
    Path(job["out"]).write_text(json.dumps(out))


def run_cdnod(A, B, job, test: str) -> dict:
    from causallearn.search.ConstraintBased.CDNOD import cdnod

    data = np.vstack([A.to_numpy(), B.to_numpy()]).astype(float)
    context = np.r_[np.zeros(len(A)), np.ones(len(B))].reshape(-1, 1)
    graph = cdnod(data, context, alpha=0.05, indep_test=test, show_progress=False).G.graph
    named = [A.columns[i] for i in np.flatnonzero(graph[-1, :-1] != 0)]
    return {"named": named, "ranked": named if len(named) == 1 else []}


def run_rcd(A, B, job) -> dict:
    from pyrca.analyzers.rcd import RCD, RCDConfig

    np.random.seed(job["seed"])
    found = RCD(RCDConfig(bins=None)).find_root_causes(A, B).root_cause_nodes
    named = [node for node, _ in found]
    return {"named": named, "ranked": named}


def run_dowhy(A, B, job) -> dict:
    import networkx as nx
    from dowhy import gcm

    graph = nx.DiGraph([tuple(e) for e in job["edges"]])
    graph.add_nodes_from(A.columns)
    model = gcm.ProbabilisticCausalModel(graph)
    gcm.auto.assign_causal_mechanisms(model, A.astype(str))
    scores = gcm.distribution_change(model, A.astype(str), B.astype(str), job["target"])
    total = sum(abs(v) for v in scores.values()) or 1.0
    share = {str(k): abs(v) / total for k, v in scores.items()}
    ranked = sorted(share, key=share.get, reverse=True)
    return {"named": [k for k in ranked if share[k] >= SHARE], "ranked": ranked}


RUNNERS = {"CD-NOD (chi-square)": lambda A, B, job: run_cdnod(A, B, job, "chisq"),
           "CD-NOD (G-square)": lambda A, B, job: run_cdnod(A, B, job, "gsq"),
           "RCD (PyRCA)": run_rcd, "DoWhy (true graph)": run_dowhy}
IMPORTS = {"causal_learn": "causallearn.search.ConstraintBased.CDNOD", "pyrca": "pyrca.analyzers.rcd",
           "dowhy": "dowhy.gcm"}
INTERPRETERS = {"CD-NOD (chi-square)": "causal_learn", "CD-NOD (G-square)": "causal_learn",
                "RCD (PyRCA)": "pyrca", "DoWhy (true graph)": "dowhy"}


def random_network(bf, n_nodes: int, rng, states: int = 6):
    """RCD's protocol: a random DAG over ``n_nodes`` nodes with ``states`` states and flat-Dirichlet CPT rows."""
    names = [f"X{i}" for i in range(n_nodes)]
    parents = {}
    for i, name in enumerate(names):
        k = int(min(i, rng.poisson(1.5), 3))
        parents[name] = [names[j] for j in sorted(rng.choice(i, size=k, replace=False))] if k else []
    cpts = {v: rng.dirichlet(np.ones(states), size=states ** len(parents[v])).reshape(
        [states] * len(parents[v]) + [states]) for v in names}
    labels = {v: tuple(str(s) for s in range(states)) for v in names}
    return bf.BayesianNetwork(parents, cpts, labels)


def redraw(bf, net, variable: str, rng):
    """The network with ``variable``'s whole CPT drawn anew (RCD's intervention)."""
    cpts = dict(net.cpts)
    shape = np.asarray(cpts[variable]).shape
    cpts[variable] = rng.dirichlet(np.ones(shape[-1]), size=int(np.prod(shape[:-1]))).reshape(shape)
    return bf.BayesianNetwork(dict(net.parents), cpts, dict(net.states))


def oracle_pvalue(codes, labels, child: int, parents, rng, n_permutations: int = 999) -> float:
    """The exact conditional permutation p-value of ``child`` against ``labels`` given ``parents`` (G statistic).

    The labels are permuted within each configuration of the parents (strata); the G statistic is
    ``2 sum O log(O / E)`` over (configuration, child state, label) cells, ``E`` from the configuration's margins.
    The permutations are drawn in batches of at most about 4 million labels.
    """
    strata = np.zeros(len(labels), dtype=np.int64)
    for j in parents:
        strata = strata * (codes[:, j].max() + 1) + codes[:, j]
    strata = np.unique(strata, return_inverse=True)[1]
    states = codes[:, child].max() + 1
    cell = strata * states + codes[:, child]
    order = np.argsort(strata, kind="stable")
    size = (strata.max() + 1) * states
    total = np.bincount(strata, minlength=size // states)

    def g_statistics(permuted: np.ndarray) -> np.ndarray:
        offsets = np.arange(len(permuted))[:, None] * (2 * size)
        counts = np.bincount((offsets + 2 * cell[None, :] + permuted).ravel(),
                             minlength=len(permuted) * 2 * size).reshape(len(permuted), -1, 2)
        cells = counts.sum(axis=2, keepdims=True)
        by_label = np.bincount((strata[None, :] * 2 + permuted + offsets // states).ravel(),
                               minlength=len(permuted) * 2 * (size // states)).reshape(len(permuted), -1, 2)
        expected = cells * np.repeat(by_label, states, axis=1) / np.repeat(total, states)[None, :, None]
        return 2 * np.where(counts > 0, counts * np.log(np.where(counts > 0, counts, 1)
                                                        / np.where(expected > 0, expected, 1)), 0.0).sum(axis=(1, 2))

    observed = g_statistics(np.asarray(labels)[None, :])[0]
    batch = max(1, min(n_permutations, 4_000_000 // len(labels)))
    exceed = 0
    for begin in range(0, n_permutations, batch):
        b = min(batch, n_permutations - begin)
        shuffled = np.argsort(strata[order][None, :] + rng.random((b, len(labels))), axis=1)
        permuted = np.empty((b, len(labels)), dtype=np.int64)
        permuted[:, order] = labels[order][shuffled]
        exceed += int(np.sum(g_statistics(permuted) >= observed - 1e-9))
    return float((1 + exceed) / (n_permutations + 1))


def run_oracles(net, A, B, changed: str, seed: int) -> dict:
    """The oracles: the changed variable alone, given its true parents, at alpha and at alpha / V."""
    codes = np.vstack([net.encode(frame).codes for frame in (A, B)]).astype(np.int64)
    labels = np.r_[np.zeros(len(A), dtype=np.int64), np.ones(len(B), dtype=np.int64)]
    index = {v: i for i, v in enumerate(net.variables)}
    started = time.perf_counter()
    p = oracle_pvalue(codes, labels, index[changed], [index[u] for u in net.parents[changed]],
                      np.random.default_rng([seed, 7]))
    seconds = time.perf_counter() - started
    return {label: {"named": [changed] if p <= level else [], "ranked": [changed] if p <= level else [],
                    "seconds": seconds}
            for label, level in (("oracle, one test", 0.05),
                                 ("oracle, Bonferroni over V", 0.05 / len(net.variables)))}


def score(named, ranked, changed: str) -> dict:
    named = set(named)
    hit = changed in named
    return {"first": bool(ranked) and ranked[0] == changed and hit,
            "f1": 0.0 if not hit else 2.0 / (1.0 + len(named)), "false": bool(named - {changed})}


def run_bnfisher(bf, A, B, seed: int) -> dict:
    started = time.perf_counter()
    result = bf.compare(A, B, random_state=seed)
    seconds = time.perf_counter() - started
    table = result.mechanisms
    named = table.loc[table["changed"], "variable"].tolist()
    return {"named": named, "ranked": named, "seconds": seconds}


def run_peers(args, A, B, net, changed: str, seed: int) -> dict:
    """Each peer on the same rows (integer codes), in its own interpreter."""
    sys.path.insert(0, str(HERE))
    from mechanisms_dowhy import target_of  # DoWhy attributes a target's change: the sink it chooses

    out = {}
    with tempfile.TemporaryDirectory() as folder:
        codes = [net.encode(frame).codes for frame in (A, B)]
        for key, values in zip("AB", codes):
            np.savetxt(Path(folder) / f"{key}.csv", values, fmt="%d", delimiter=",", header=",".join(net.variables),
                       comments="")
        for interpreter in ("causal_learn", "pyrca", "dowhy"):
            python = getattr(args, interpreter)
            methods = [m for m, i in INTERPRETERS.items() if i == interpreter]
            if not python:
                continue
            job = {"A": str(Path(folder) / "A.csv"), "B": str(Path(folder) / "B.csv"), "methods": methods,
                   "seed": seed, "out": str(Path(folder) / "out.json"),
                   "edges": [[p, c] for c in net.variables for p in net.parents[c]],
                   "target": target_of(dict(net.parents), changed)}
            (Path(folder) / "job.json").write_text(json.dumps(job))
            subprocess.run([python, __file__, "--worker", str(Path(folder) / "job.json")], check=True,
                           env=ONE_THREAD | {"PYTHONPATH": ""}, capture_output=True)
            out |= json.loads((Path(folder) / "out.json").read_text())
    return out


def scenarios(bf, args):
    """Yield (protocol, label, network, changed network, changed variable, rows a side, seed)."""
    for size in args.sizes:
        for seed in range(args.seeds):
            rng = np.random.default_rng([size, seed])
            net = random_network(bf, size, rng)
            variable = net.variables[int(rng.integers(size))]
            yield "RCD's protocol", f"{size} nodes", net, redraw(bf, net, variable, rng), variable, 1000, seed
    sys.path.insert(0, str(HERE))
    from mechanisms import plant

    for name in args.networks:
        net = bf.read_bif(SHARED / f"{name}.bif")
        frequencies = net.sample(20_000, random_state=12345)
        for seed in range(args.seeds):
            rng = np.random.default_rng([len(name), seed])
            for variable in rng.permutation(net.variables):
                planted = plant(net, variable, frequencies)
                if planted is not None:
                    yield "bnlearn, one CPT row", name, net, planted[0], variable, args.n, seed
                    break


def table(records: list) -> list:
    methods = list(dict.fromkeys(r["method"] for r in records))
    lines = ["| protocol | method | runs | top-1 | set F1 (mean) | unchanged flagged | seconds (median) |",
             "|---|---|---|---|---|---|---|"]
    for protocol in dict.fromkeys(r["protocol"] for r in records):
        for method in methods:
            rows = [r for r in records if r["protocol"] == protocol and r["method"] == method]
            if not rows:
                continue
            first, f1, false, seconds = (np.asarray([r[k] for r in rows], dtype=float)
                                         for k in ("first", "f1", "false", "seconds"))
            lines.append(f"| {protocol} | {method} | {len(rows)} | {first.mean():.2f} | {f1.mean():.2f} | "
                         f"{false.mean():.2f} | {np.median(seconds):.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--causal-learn", dest="causal_learn", help="the interpreter of causal-learn's environment")
    parser.add_argument("--pyrca", help="the interpreter of PyRCA's environment")
    parser.add_argument("--dowhy", help="the interpreter of DoWhy's environment (slow: minutes a call)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10, 20, 30, 50])
    parser.add_argument("--networks", nargs="+", default=["alarm", "child", "sachs", "insurance"])
    parser.add_argument("--n", type=int, default=2000, help="rows a side on the bnlearn networks")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    import bnfisher as bf

    warnings.simplefilter("ignore")
    begin = time.perf_counter()
    warm = random_network(bf, 5, np.random.default_rng(0))  # compiled code and imports before the clock starts
    run_bnfisher(bf, warm.sample(500, random_state=0), redraw(bf, warm, "X4", np.random.default_rng(1)).sample(
        500, random_state=1), 0)
    records = []
    for protocol, label, net, moved, variable, n, seed in scenarios(bf, args):
        A, B = net.sample(n, random_state=seed), moved.sample(n, random_state=seed + 10_000)
        found = {"bnfisher": run_bnfisher(bf, A, B, seed)} | run_peers(args, A, B, net, variable, seed) \
            | run_oracles(net, A, B, variable, seed)
        for method, outcome in found.items():
            records.append({"protocol": protocol, "label": label, "method": method, "seconds": outcome["seconds"]}
                           | score(outcome["named"], outcome["ranked"], variable))
        print({"protocol": protocol, "label": label, "variable": variable,
               "found": {m: (o["named"], round(o["seconds"], 2)) for m, o in found.items()}}, file=sys.stderr,
              flush=True)
    print(f"Command: `taskset -c 0 python benchmarks/mechanisms_peers.py --seeds {args.seeds} --sizes "
          f"{' '.join(map(str, args.sizes))} --networks {' '.join(args.networks)} --n {args.n}` "
          f"({datetime.date.today().isoformat()}, bnfisher {bf.__version__}); peers: "
          f"{', '.join(m for m, i in INTERPRETERS.items() if getattr(args, i))}.")
    print("\n" + "\n".join(table(records)))
    print(f"\nGoal: top-1 >= 0.95, F1 >= 0.9, unchanged flagged <= 0.05, faster than CD-NOD. Wall time: "
          f"{time.perf_counter() - begin:.0f} s.")


if __name__ == "__main__":
    main()
