"""Missing values at speed: expected embeddings and EM, each beside pyAgrum in the same run.

- Expected-embedding throughput on alarm (100,000 rows, 10% of cells missing completely at random) against the
  complete-data ``embed`` of the same rows (each the best of 3 runs) and against pyAgrum's LazyPropagation, one
  row at a time, asked for the joint posterior of every family that touches a missing value (the same numbers
  bnfisher computes); pyAgrum's rate is measured on the first 300 rows. bnfisher's compiled code is timed (the
  steady state of a long job; ``bnfisher._utils.jit.FALLBACK_BUDGET = 0``), after a warm-up call.
- EM on asia (3,000 rows, no prior) and alarm (2,000 rows, pseudocount / smoothing prior 1: pyAgrum refuses
  unseen parent configurations without a prior), 20% of cells missing: bnfisher's ``fit_em`` against pyAgrum's
  ``BNLearner`` EM (difference criterion 1e-6), both to convergence.

Run:  python benchmarks/missing.py [--embeddings-only]
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher.bn.em import fit_em
from kernel import best_of  # benchmarks/kernel.py: the best of 3 wall times

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bif"  # shipped with the tests


def embedding_throughput(rows: int = 100_000, rate: float = 0.1, peer_rows: int = 300) -> None:
    import pyagrum as gum

    from bnfisher.bn.formats.interop import to_pyagrum

    network = bf.read_bif(BIF_DIR / "alarm.bif.gz")
    kernel = bf.FisherKernel(network)
    complete = network.sample(rows, random_state=0)
    holed = complete.astype(object).mask(np.random.default_rng(0).random(complete.shape) < rate)
    kernel.embed(holed.iloc[:1000])  # warm-up
    ours = best_of(kernel.embed, holed)[0]
    plain = best_of(kernel.embed, complete)[0]
    bn = to_pyagrum(network)
    families = [(v,) + tuple(network.parents[v]) for v in network.variables]
    start = time.perf_counter()
    for _, row in holed.iloc[:peer_rows].iterrows():
        engine = gum.LazyPropagation(bn)
        engine.setEvidence({v: str(value) for v, value in row.items() if value is not None and value == value})
        engine.makeInference()
        missing = {v for v, value in row.items() if value is None or value != value}
        for family in families:
            if missing & set(family):
                engine.addJointTarget(set(family)) if len(family) > 1 else None
        for family in families:
            if missing & set(family):
                (engine.jointPosterior(set(family)) if len(family) > 1 else engine.posterior(family[0]))
    peer = (time.perf_counter() - start) / peer_rows
    from bnfisher.bn.inference.components import plan_components

    codes = kernel.encode(holed).codes
    plan = plan_components(network, codes, list(kernel.families))
    singles = sum(group.rows.size for group in plan.groups if len(group.variables) == 1)
    print(f"components of the missing values: {len(plan.groups)} batches by variable set, "
          f"{singles / sum(group.rows.size for group in plan.groups):.0%} of the enumerated groups one variable; "
          f"{plan.fallback.size:,} rows ({plan.fallback.size / rows:.1%}) to the junction tree; "
          f"the map has {kernel.embed(holed).nnz:,} non-zeros")
    print(f"alarm, {rows:,} rows, {rate:.0%} missing: expected embedding {ours:.2f} s ({rows / ours:,.0f} rows/s); "
          f"complete-data embed {plain:.2f} s ({rows / plain:,.0f} rows/s); pyAgrum LazyPropagation per row "
          f"{1000 * peer:.2f} ms ({1 / peer:,.0f} rows/s) -> bnfisher {rows / ours * peer:,.0f}x pyAgrum's rate")


def em_against_pyagrum(name: str, rows: int, rate: float = 0.2, pseudocount: float = 0.0) -> None:
    import pyagrum as gum

    from bnfisher.bn.formats.interop import to_pyagrum

    network = bf.read_bif(BIF_DIR / f"{name}.bif.gz")
    frame = network.sample(rows, random_state=0).astype(str)
    frame = frame.mask(np.random.default_rng(0).random(frame.shape) < rate, "?")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        frame.to_csv(path, index=False)
        learner = gum.BNLearner(str(path), to_pyagrum(network), ["?"])
        learner.useEMWithDiffCriterion(1e-6)
        if pseudocount:
            learner.useSmoothingPrior(pseudocount)  # the same Dirichlet prior as bnfisher's pseudocount
        else:
            learner.useNoPrior()
        start = time.perf_counter()
        learner.learnParameters(to_pyagrum(network).dag())
        peer = time.perf_counter() - start
        peer_iterations = learner.EMnbrIterations()
    start = time.perf_counter()
    # Stop when the objective changes by less than ~1e-6 nats, as pyAgrum's difference criterion.
    result = fit_em(frame.replace("?", np.nan), dict(network.parents), pseudocount=pseudocount,
                    tol=1e-6 / rows, max_iter=1000)
    ours = time.perf_counter() - start
    print(f"EM on {name}, {rows:,} rows, {rate:.0%} missing, pseudocount {pseudocount:g}: bnfisher {ours:.2f} s "
          f"({result.n_iter} iterations, "
          f"converged {result.converged}); pyAgrum {peer:.2f} s ({peer_iterations} iterations) -> "
          f"{peer / ours:.1f}x faster")


if __name__ == "__main__":
    from bnfisher._utils import jit as _jit

    _jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it (small jobs run NumPy fallbacks)
    warnings.simplefilter("ignore")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    embedding_throughput()
    if "--embeddings-only" not in sys.argv[1:]:
        em_against_pyagrum("asia", 3000)
        em_against_pyagrum("alarm", 2000, pseudocount=1.0)
