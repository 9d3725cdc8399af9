"""Which mechanism changed: bnfisher's default attribution beside DoWhy's ``gcm.distribution_change``.

Same data for both: A from a bnlearn network, B from a copy with one CPT changed (alarm: HYPOVOLEMIA's prior
reversed; child: the row of Disease's CPT for its parent's most frequent state rolled), n = m rows, several seeds.
bnfisher runs :func:`bnfisher.compare` under its defaults (no graph given). DoWhy (the peer for "which mechanism
changed", Budhathoki et al. 2021) gets a graph and fits a ``ProbabilisticCausalModel`` with auto-assigned
mechanisms (classifiers for categorical nodes), then ``gcm.distribution_change(model, A, B, target)`` attributes
the change of the target's marginal distribution to the mechanisms upstream of it (target: the sink with the most
ancestors downstream of the changed variable). DoWhy runs twice: given the **true** graph, and given the hill-
climbing graph bnfisher learns on the pool.

Figures per method: whether the changed variable is ranked first; localisation F1 of the variables named (bnfisher:
flagged at adjusted p <= 0.05; DoWhy: the variables holding at least 10% of the total absolute attribution, a rule
stated here because DoWhy returns scores, not decisions); false flags; seconds per call; the coefficient of
variation over seeds of the changed variable's share (DoWhy) or of its adjusted p-value's being <= 0.05 (bnfisher:
the fraction of seeds that flag it alone).

DoWhy needs its own environment (``python -m venv /tmp/dowhy && /tmp/dowhy/bin/pip install dowhy``); this script
runs bnfisher in the current interpreter and DoWhy through ``--python``.

Run:  python benchmarks/mechanisms_dowhy.py --python /tmp/dowhy/bin/python [--seeds 3] [--n 3000]
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

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "bif"
SCENARIOS = {"alarm": "HYPOVOLEMIA", "child": "Disease"}
SHARE = 0.10


def dowhy_worker(path: str) -> None:
    """Run in DoWhy's environment: read the scenario, fit, attribute, write the scores and the time."""
    import networkx as nx
    import pandas as pd
    from dowhy import gcm

    job = json.loads(Path(path).read_text())
    A, B = (pd.read_csv(job[key], dtype=str, keep_default_na=False) for key in ("A", "B"))
    out = {}
    for name, edges in job["graphs"].items():
        graph = nx.DiGraph(edges)
        graph.add_nodes_from(A.columns)
        model = gcm.ProbabilisticCausalModel(graph)
        gcm.auto.assign_causal_mechanisms(model, A)
        target = job["targets"][name]
        started = time.perf_counter()
        scores = gcm.distribution_change(model, A, B, target)
        out[name] = {"scores": {str(k): float(v) for k, v in scores.items()}, "seconds": time.perf_counter() - started,
                     "target": target}
    Path(job["out"]).write_text(json.dumps(out))


def plant(bf, net, variable: str):
    """Roll (root: reverse) the CPT row of ``variable``'s most frequent parent configuration."""
    cpts = dict(net.cpts)
    cpt = np.array(cpts[variable], dtype=float)
    rows = cpt.reshape(-1, cpt.shape[-1]).copy()
    parents = list(net.parents[variable])
    if parents:
        sample = net.sample(20_000, random_state=12345)
        codes = [sample[p].map({s: k for k, s in enumerate(net.states[p])}).to_numpy() for p in parents]
        j = int(np.argmax(np.bincount(np.ravel_multi_index(codes, [len(net.states[p]) for p in parents]),
                                      minlength=rows.shape[0])))
        rows[j] = np.roll(rows[j], 1)
    else:
        rows[0] = rows[0][::-1]
    cpts[variable] = rows.reshape(cpt.shape)
    return bf.BayesianNetwork(dict(net.parents), cpts, dict(net.states))


def target_of(parents: dict, changed: str) -> str:
    """The sink downstream of ``changed`` with the most ancestors."""
    import networkx as nx

    graph = nx.DiGraph([(p, c) for c, ps in parents.items() for p in ps])
    graph.add_nodes_from(parents)
    sinks = [v for v in nx.descendants(graph, changed) | {changed} if graph.out_degree(v) == 0]
    return max(sinks, key=lambda v: (len(nx.ancestors(graph, v)), v))


def f1(named: set, changed: str) -> float:
    hit = changed in named
    return 0.0 if not hit else 2.0 / (1.0 + len(named))  # precision 1/|named|, recall 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="the interpreter of DoWhy's environment")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--networks", nargs="+", default=list(SCENARIOS))
    parser.add_argument("--dowhy-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dowhy_worker:
        return dowhy_worker(args.dowhy_worker)
    import bnfisher as bf

    warnings.simplefilter("ignore")
    lines = [f"Command: `python benchmarks/mechanisms_dowhy.py --python <DoWhy's python> --seeds {args.seeds} "
             f"--n {args.n} --networks {' '.join(args.networks)}` ({datetime.date.today().isoformat()}, bnfisher "
             f"{bf.__version__}); bnfisher on one thread, DoWhy with its default joblib workers (2 processes), "
             "on the same 2 cores.", "",
             "| network (changed) | method | changed first | F1 (mean) | false flags (mean) | changed share or "
             "flag (mean ± sd over seeds) | seconds per call (median) |", "|---|---|---|---|---|---|---|"]
    for name in args.networks:
        net = bf.read_bif(SHARED / f"{name}.bif")
        changed = SCENARIOS[name]
        moved = plant(bf, net, changed)
        rows = {"bnfisher": [], "DoWhy, true graph": [], "DoWhy, learned graph": []}
        for seed in range(args.seeds):
            A, B = net.sample(args.n, random_state=seed), moved.sample(args.n, random_state=seed + 100)
            started = time.perf_counter()
            result = bf.compare(A, B, random_state=seed)
            seconds = time.perf_counter() - started
            table = result.mechanisms
            named = set(table.loc[table["changed"], "variable"])
            first = bool(len(table)) and table["variable"].iloc[0] == changed and changed in named
            rows["bnfisher"].append((first, f1(named, changed), len(named - {changed}), float(named == {changed}),
                                     seconds))
            if not args.python:
                continue
            learned = bf.learn(__import__("pandas").concat([A, B], ignore_index=True), "hc")
            graphs = {"true": [[p, c] for c in net.variables for p in net.parents[c]],
                      "learned": [[p, c] for c in learned.variables for p in learned.parents[c]]}
            targets = {"true": target_of(dict(net.parents), changed),
                       "learned": target_of(dict(learned.parents), changed)}
            with tempfile.TemporaryDirectory() as folder:
                A.to_csv(Path(folder) / "A.csv", index=False)
                B.to_csv(Path(folder) / "B.csv", index=False)
                job = {"A": str(Path(folder) / "A.csv"), "B": str(Path(folder) / "B.csv"), "graphs": graphs,
                       "targets": targets, "out": str(Path(folder) / "out.json")}
                (Path(folder) / "job.json").write_text(json.dumps(job))
                subprocess.run([args.python, __file__, "--dowhy-worker", str(Path(folder) / "job.json")], check=True,
                               env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                    "PATH": "/usr/bin:/bin"})
                out = json.loads((Path(folder) / "out.json").read_text())
            for key, label in (("true", "DoWhy, true graph"), ("learned", "DoWhy, learned graph")):
                scores = out[key]["scores"]
                total = sum(abs(v) for v in scores.values()) or 1.0
                share = {k: abs(v) / total for k, v in scores.items()}
                named = {k for k, s in share.items() if s >= SHARE}
                top = max(share, key=share.get) if share else None
                rows[label].append((top == changed, f1(named, changed), len(named - {changed}),
                                    share.get(changed, 0.0), out[key]["seconds"]))
            print(name, seed, {k: v[-1] for k, v in rows.items()}, file=sys.stderr, flush=True)
        for label, values in rows.items():
            if not values:
                continue
            first, score, false, share, seconds = map(np.asarray, zip(*values))
            lines.append(f"| {name} ({changed}) | {label} | {int(first.sum())}/{len(first)} | {score.mean():.2f} | "
                         f"{false.mean():.1f} | {share.mean():.2f} ± {share.std(ddof=1) if len(share) > 1 else 0:.2f}"
                         f" | {np.median(seconds):.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
