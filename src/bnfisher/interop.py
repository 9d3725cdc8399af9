"""Optional interoperability with pyAgrum (``pip install pyagrum``).

pyAgrum serves the tests and benchmarks as an independent engine; these helpers
only translate models and data.  pyAgrum's own BIF reader rejects some state labels
(e.g. in child), so networks are built from bnfisher's parsed model instead.
"""

from __future__ import annotations

import tempfile

import numpy as np
import pandas as pd

from .network import BayesianNetwork

__all__ = ["to_pyagrum", "pyagrum_hill_climb"]


def to_pyagrum(network: BayesianNetwork):
    """The same network as a ``pyagrum.BayesNet`` (labels as text, identical CPTs)."""
    import pyagrum as gum

    bn = gum.BayesNet()
    for v in network.variables:
        bn.add(gum.LabelizedVariable(v, v, [str(s) for s in network.states[v]]))
    for parent, child in network.edges:
        bn.addArc(parent, child)
    for v in network.variables:
        cpt = bn.cpt(v)
        ours = (v,) + network.parents[v]
        # A pyAgrum tensor's array axes are its variable names in reverse order.
        axes = [ours.index(name) for name in reversed(cpt.names)]
        cpt.fillWith(np.transpose(np.moveaxis(network.cpts[v], -1, 0), axes).ravel().tolist())
    return bn


def pyagrum_hill_climb(frame: pd.DataFrame, threads: int | None = None) -> tuple[dict, float]:
    """pyAgrum's greedy hill climbing with BIC (no prior) on ``frame``.

    Returns the parent sets ``{variable: [parents]}`` and the seconds ``learnDAG`` took.
    """
    import time

    import pyagrum as gum

    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as handle:
        frame.astype(str).to_csv(handle, index=False)
    learner = gum.BNLearner(handle.name)
    learner.useGreedyHillClimbing()
    learner.useScoreBIC()
    learner.useNoPrior()
    if threads is not None:
        learner.setNumberOfThreads(threads)
    start = time.perf_counter()
    dag = learner.learnDAG()
    elapsed = time.perf_counter() - start
    names = {learner.idFromName(c): c for c in frame.columns}
    return {names[n]: [names[p] for p in dag.parents(n)] for n in dag.nodes()}, elapsed
