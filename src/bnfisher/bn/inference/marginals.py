"""Exact and sampled marginals of a Bayesian network.

In particular the parent marginals ``P(pi_i(D) = j)`` that the Fisher kernel needs
(Theorem 1, eq. 2), and exact class posteriors.

Three engines:

``"junction-tree"``
    Moralise, triangulate greedily (min-fill, ties by min-weight), build the
    elimination tree of cliques, calibrate once by a Hugin two-pass schedule
    (numpy ``einsum`` messages), and read every parent marginal from the clique
    that hosts the family.  Fastest for small and medium networks.
``"elimination"``
    One variable-elimination run per distinct parent set, pruned to the ancestors
    of the query (barren nodes sum to one).  Wins on very large, loosely coupled
    networks (e.g. munin) where a single junction tree is huge.
``"sampling"``
    Forward sampling of ``n_samples`` rows with ``pseudocount`` per parent
    configuration, as the paper does when the treewidth is large ([1]_, Sec. 7.1).

``"auto"`` chooses the cheaper exact engine from symbolic cost estimates and falls
back to sampling when a table would exceed ``max_table_size`` cells.

References
----------
.. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
   categorical feature spaces. Behaviormetrika 47, 81-103.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bnfisher.bn.inference.exact import DEFAULT_MAX_TABLE_SIZE, _resolve
from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import OptionError

__all__ = ['parent_marginals', 'marginal']


def parent_marginals(
    network: BayesianNetwork,
    method: str = "auto",
    *,
    max_table_size: int = DEFAULT_MAX_TABLE_SIZE,
    n_samples: int = 10**6,
    pseudocount: float = 1.0,
    random_state=None,
) -> tuple[dict, str]:
    """Marginal distribution of every variable's parent set.

    Parameters
    ----------
    network : BayesianNetwork
    method : {"auto", "exact", "junction-tree", "elimination", "sampling"}, default="auto"
        ``"exact"`` is whichever exact engine is cheaper and fits in memory.
    max_table_size : int, default=2**24
        Largest table (in cells) an exact engine may build; beyond it ``"auto"``
        samples instead.
    n_samples : int, default=10**6
        Rows drawn by the sampling engine.
    pseudocount : float, default=1.0
        Added to every parent-configuration count by the sampling engine.
    random_state : None, int or Generator, default=None
        Seed of the sampling engine.

    Returns
    -------
    marginals : dict
        ``marginals[v]`` has shape ``tuple(len(states[p]) for p in parents[v])``,
        axes in the listed parent order; ``1.0`` for a variable without parents.
    method_used : str
        ``"junction-tree"``, ``"elimination"`` or ``"sampling"``.

    Examples
    --------
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({"a": [], "b": ["a"]}, {"a": [0.3, 0.7], "b": [[0.5, 0.5], [0.1, 0.9]]},
    ...                       {"a": [0, 1], "b": [0, 1]})
    >>> marginals, used = parent_marginals(net)
    >>> marginals["b"].tolist(), used
    ([0.3, 0.7], 'elimination')
    """
    queries = [tuple(p) for p in network.parent_indices()]
    results, used = _resolve(network, queries, method, max_table_size, n_samples, pseudocount, random_state)
    return dict(zip(network.variables, results)), used


def marginal(network: BayesianNetwork, variables: Sequence[str], method: str = "exact", *,
             max_table_size: int = DEFAULT_MAX_TABLE_SIZE, n_samples: int = 10**6, pseudocount: float = 1.0,
             random_state=None) -> np.ndarray:
    """Joint marginal ``P(variables)`` as an array with axes in the given order.

    Parameters
    ----------
    network : BayesianNetwork
    variables : sequence of str, or str
        One name is one variable (not the sequence of its letters).
        Distinct variable names.
    method : str, default="exact"
        As in :func:`parent_marginals`.
    max_table_size, n_samples, pseudocount, random_state
        As in :func:`parent_marginals` (``n_samples``, ``pseudocount`` and
        ``random_state`` matter only for ``method="sampling"``).

    Returns
    -------
    ndarray
        Shaped by the variables' cardinalities, in the order given.

    Examples
    --------
    >>> bf.marginal(network, ["health"]).round(3)
    array([0.333, 0.333, 0.333])
    """
    index = {v: i for i, v in enumerate(network.variables)}
    if np.ndim(variables) == 0:  # one name ("class"), not a sequence of its letters
        variables = [variables]  # type: ignore[list-item]
    unknown = [v for v in variables if v not in index]
    if unknown:
        more = ", ..." if len(network.variables) > 8 else ""
        raise OptionError(f"Unknown variable(s) {unknown}; the network's variables are "
                          f"{', '.join(map(str, network.variables[:8]))}{more}.")
    if len(set(variables)) != len(variables):
        raise OptionError(f"`variables` has duplicates: {list(variables)}.")
    query = tuple(index[v] for v in variables)
    results, _ = _resolve(network, [query], method, max_table_size=max_table_size, n_samples=n_samples,
                          pseudocount=pseudocount, random_state=random_state)
    return np.asarray(results[0])
