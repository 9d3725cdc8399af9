"""Interoperability with pgmpy and pyAgrum (optional: ``pip install pgmpy`` / ``pip install pyagrum``).

Networks convert both ways, so any format those libraries read (XMLBIF, UAI,
NET, DSL, ...) becomes usable: read it there, convert with :func:`from_pgmpy` or
:func:`from_pyagrum`, and build a Fisher kernel.  pyAgrum and pgmpy are never the
engine; bnfisher only translates models.

Labels cross as text where the other library stores text (pyAgrum's labels are
strings; pgmpy keeps whatever it is given).
"""

from __future__ import annotations

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import OptionTypeError

__all__ = ["to_pgmpy", "from_pgmpy", "to_pyagrum", "from_pyagrum"]


def _check_network(network) -> None:
    if not isinstance(network, BayesianNetwork):
        raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")


def to_pgmpy(network: BayesianNetwork):
    """Return the same network as a ``pgmpy.models.DiscreteBayesianNetwork`` (identical CPTs and state names).

    Parameters
    ----------
    network : BayesianNetwork

    Returns
    -------
    pgmpy.models.DiscreteBayesianNetwork

    Examples
    --------
    >>> from bnfisher.bn.formats import to_pgmpy, from_pgmpy
    >>> other = to_pgmpy(network)
    >>> from_pgmpy(other).parents == network.parents
    True
    """
    _check_network(network)
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    model = DiscreteBayesianNetwork()
    model.add_nodes_from(network.variables)
    model.add_edges_from(network.edges)
    for v in network.variables:
        parents = list(network.parents[v])
        r = len(network.states[v])
        # pgmpy: one column per parent configuration (first parent slowest), one row per state.
        values = np.asarray(network.cpts[v]).reshape(-1, r).T
        names = {v: list(network.states[v]), **{p: list(network.states[p]) for p in parents}}
        model.add_cpds(TabularCPD(v, r, values, evidence=parents or None,
                                  evidence_card=[len(network.states[p]) for p in parents] or None,
                                  state_names=names))
    return model


def from_pgmpy(model) -> BayesianNetwork:
    """Return a bnfisher network from a pgmpy discrete Bayesian network with CPDs.

    Parameters
    ----------
    model : pgmpy.models.DiscreteBayesianNetwork

    Returns
    -------
    BayesianNetwork

    Examples
    --------
    >>> from bnfisher.bn.formats import to_pgmpy, from_pgmpy
    >>> other = to_pgmpy(network)
    >>> from_pgmpy(other).parents == network.parents
    True
    """
    parents, cpts, states = {}, {}, {}
    for cpd in model.get_cpds():
        child, *given = cpd.variables
        names = cpd.state_names
        cards = [len(names[p]) for p in given]
        parents[child] = tuple(given)
        states[child] = tuple(names[child])
        cpts[child] = np.asarray(cpd.get_values(), dtype=np.float64).T.reshape(*cards, len(names[child]))
    missing = [v for v in model.nodes() if v not in cpts]
    if missing:
        raise OptionTypeError(f"The pgmpy model has no CPD for {missing}; add CPDs before converting.")
    order = [v for v in model.nodes()]
    return BayesianNetwork(parents, cpts, {v: states[v] for v in order})


def to_pyagrum(network: BayesianNetwork):
    """Return the same network as a ``pyagrum.BayesNet`` (labels as text, identical CPTs).

    Parameters
    ----------
    network : BayesianNetwork

    Returns
    -------
    pyagrum.BayesNet

    Examples
    --------
    >>> from bnfisher.bn.formats import to_pyagrum, from_pyagrum
    >>> other = to_pyagrum(network)
    >>> from_pyagrum(other).parents == network.parents
    True
    """
    _check_network(network)
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


def from_pyagrum(bn) -> BayesianNetwork:
    """Return a bnfisher network from a ``pyagrum.BayesNet`` (labels as pyAgrum's text labels).

    Parameters
    ----------
    bn : pyagrum.BayesNet

    Returns
    -------
    BayesianNetwork

    Examples
    --------
    >>> from bnfisher.bn.formats import to_pyagrum, from_pyagrum
    >>> other = to_pyagrum(network)
    >>> from_pyagrum(other).parents == network.parents
    True
    """
    parents, cpts, states = {}, {}, {}
    for node in sorted(bn.nodes()):
        name = bn.variable(node).name()
        states[name] = tuple(bn.variable(node).labels())
    for name in states:
        cpt = bn.cpt(name)
        axes = list(reversed(cpt.names))  # the array's axes, see to_pyagrum
        given = [a for a in axes if a != name]
        table = np.transpose(np.asarray(cpt.toarray(), dtype=np.float64), [axes.index(a) for a in given + [name]])
        parents[name] = tuple(given)
        cpts[name] = table
    return BayesianNetwork(parents, cpts, states)
