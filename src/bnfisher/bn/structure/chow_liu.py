"""Trees and forests.

Chow-Liu (mutual information), score-weighted spanning forests, and the
conditional mutual information used by TAN and KDB.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import networkx as nx

__all__ = [
    "mutual_information_matrix",
    "pairwise_mutual_information",
    "conditional_mutual_information_matrix",
    "spanning_forest_parents",
    "chow_liu_parents",
    "score_forest_parents",
]


def mutual_information_matrix(provider) -> np.ndarray:
    """Empirical mutual information (nats) between every pair of columns.

    ``I(a; b) = sum_xy p(x, y) log(p(x, y) / (p(x) p(y)))``, from the joint count
    tables of all pairs, asked of the counts provider in one pass.

    Parameters
    ----------
    provider : CountsProvider
        See :func:`bnfisher.data.providers.as_provider`.

    Returns
    -------
    ndarray of shape (n_variables, n_variables)
        Symmetric, zero diagonal.
    """
    n_rows, n_vars = provider.n_rows, len(provider.cardinalities)
    information = np.zeros((n_vars, n_vars))
    if n_rows == 0:
        return information
    pairs = [(a, b) for a in range(n_vars) for b in range(a + 1, n_vars)]
    for (a, b), value in zip(pairs, pairwise_mutual_information(provider, pairs)):
        information[a, b] = information[b, a] = value
    return information


def pairwise_mutual_information(provider, pairs: list) -> np.ndarray:
    """Return ``I(a; b)`` (nats) of every pair from one pass, tables of one shape scored together.

    Each table uses its own total: with available-case counts (missing values) each pair has its own N.

    Parameters
    ----------
    provider : CountsProvider
    pairs : list of (int, int)

    Returns
    -------
    ndarray of shape (len(pairs),)
    """
    tables = provider.counts(pairs)
    out = np.zeros(len(pairs))
    by_shape: dict = {}
    for position, table in enumerate(tables):
        by_shape.setdefault(np.shape(table), []).append(position)
    for positions in by_shape.values():
        joint = np.stack([np.asarray(tables[p], dtype=np.float64) for p in positions])  # (m, a, b)
        total = joint.sum(axis=(1, 2), keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(joint > 0, joint * np.log(joint * total / (joint.sum(axis=2, keepdims=True)
                                                                         * joint.sum(axis=1, keepdims=True))), 0.0)
        out[positions] = np.maximum(terms.sum(axis=(1, 2)), 0.0) / np.maximum(total[:, 0, 0], 1e-300)
    return out


def conditional_mutual_information_matrix(provider, given: int = 0) -> np.ndarray:
    """``I(a; b | given)`` (nats) for every pair of columns, from 3-way tables asked in one pass.

    ``I(a; b | c) = sum p(x, y, z) log(p(x, y, z) p(z) / (p(x, z) p(y, z)))``; rows and
    columns of ``given`` itself are 0.

    Parameters
    ----------
    provider : CountsProvider
    given : int, default=0
        Column index of the conditioning variable.

    Returns
    -------
    ndarray of shape (n_variables, n_variables)
    """
    n_rows, n_vars = provider.n_rows, len(provider.cardinalities)
    information = np.zeros((n_vars, n_vars))
    if n_rows == 0:
        return information
    pairs = [(a, b) for a in range(n_vars) for b in range(a + 1, n_vars) if given not in (a, b)]
    tables = provider.counts([(given, a, b) for a, b in pairs])
    # Tables of one shape are stacked and scored together (no Python loop over pairs or slices).
    by_shape: dict = {}
    for position, table in enumerate(tables):
        by_shape.setdefault(np.shape(table), []).append(position)
    for positions in by_shape.values():
        joint = np.stack([np.asarray(tables[p], dtype=np.float64) for p in positions])  # (m, z, a, b)
        # I(a; b | c) = sum_z p(z) I(a; b | c = z) = (1/N) sum_zab N_zab log(N_zab N_z / (N_za N_zb))
        n_z = joint.sum(axis=(2, 3), keepdims=True)
        n_za = joint.sum(axis=3, keepdims=True)
        n_zb = joint.sum(axis=2, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(joint > 0, joint * np.log(joint * n_z / (n_za * n_zb)), 0.0)
        total = joint.sum(axis=(1, 2, 3))
        values = np.maximum(terms.sum(axis=(1, 2, 3)), 0.0) / np.maximum(total, 1.0)
        for p, value in zip(positions, values):
            a, b = pairs[p]
            information[a, b] = information[b, a] = value
    return information


def spanning_forest_parents(weights: np.ndarray) -> list:
    """Maximum-weight spanning forest of a symmetric weight matrix, oriented from roots.

    Only strictly positive weights become edges.  Each tree is rooted at its
    lowest-index node and arcs point away from it; ties between equal weights
    keep the lower-index pair first (Kruskal on a stable sort), so the result is
    deterministic.

    Returns
    -------
    list of tuple
        ``parents[i]`` is ``()`` or ``(j,)``.

    Parameters
    ----------
    weights : ndarray of shape (n, n)
        Symmetric weights.
    """
    n = weights.shape[0]
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    for a in range(n):
        for b in range(a + 1, n):
            if weights[a, b] > 0:
                graph.add_edge(a, b, weight=float(weights[a, b]))
    forest = nx.maximum_spanning_tree(graph, algorithm="kruskal")
    parents: list = [() for _ in range(n)]
    for component in sorted(nx.connected_components(forest), key=min):
        root = min(component)
        for parent, child in nx.bfs_edges(forest, root, sort_neighbors=sorted):
            parents[child] = (parent,)
    return parents


def score_forest_parents(scorer, n_variables: int) -> list:
    """Maximum-weight spanning forest with weights ``w_{j->i} = S(i | {j}) - S(i)``.

    Score-equivalent scores (ll, bic, aic, bdeu) give symmetric weights and an
    undirected forest rooted at each tree's lowest index; otherwise (k2) the
    maximum-weight branching (Edmonds) picks the arc directions.  Only positive
    weights become arcs.

    Parameters
    ----------
    scorer : LocalScorer or ProviderScorer
    n_variables : int

    Returns
    -------
    list of tuple
        Parent column indices of every variable.
    """
    n = n_variables
    pairs = scorer.pair_scores()  # pairs[j, i]: i with the parent j; pairs[i, i]: i alone
    weights = pairs - np.diag(pairs)[None, :]  # weights[j, i] = gain of the arc j -> i
    np.fill_diagonal(weights, 0.0)
    if np.allclose(weights, weights.T, rtol=1e-9, atol=1e-9):
        return spanning_forest_parents(np.maximum(weights, weights.T))
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from((j, i, float(weights[j, i])) for j in range(n) for i in range(n)
                                  if i != j and weights[j, i] > 0)
    branching = nx.maximum_branching(graph)
    parents: list = [() for _ in range(n)]
    for j, i in sorted(branching.edges()):
        parents[i] = (j,)
    return parents


def chow_liu_parents(provider) -> list:
    """Parent sets of the Chow-Liu forest of the data (columns as indices).

    Parameters
    ----------
    provider : CountsProvider

    Returns
    -------
    list of tuple
    """
    return spanning_forest_parents(mutual_information_matrix(provider))
