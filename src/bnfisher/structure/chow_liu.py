"""Chow-Liu trees: the maximum-weight spanning forest over pairwise mutual information."""

from __future__ import annotations

import networkx as nx
import numpy as np

from ..counts import count_family

__all__ = ["mutual_information_matrix", "spanning_forest_parents", "chow_liu_parents"]


def mutual_information_matrix(codes: np.ndarray, cardinalities: np.ndarray) -> np.ndarray:
    """Empirical mutual information (nats) between every pair of columns.

    ``I(a; b) = sum_xy p(x, y) log(p(x, y) / (p(x) p(y)))`` from one joint count
    table per pair.
    """
    n_rows, n_vars = codes.shape
    information = np.zeros((n_vars, n_vars))
    if n_rows == 0:
        return information
    for a in range(n_vars):
        for b in range(a + 1, n_vars):
            joint = count_family(codes, (a, b), cardinalities).astype(np.float64)
            information[a, b] = information[b, a] = _mutual_information(joint, n_rows)
    return information


def _mutual_information(joint: np.ndarray, n_rows: float) -> float:
    row = joint.sum(axis=1, keepdims=True)
    column = joint.sum(axis=0, keepdims=True)
    nonzero = joint > 0
    # N_ab N / (N_a N_b) > 0 wherever N_ab > 0, so the log is finite on the mask.
    ratio = joint[nonzero] * n_rows / (row @ column)[nonzero]
    return float(max(0.0, np.sum(joint[nonzero] * np.log(ratio)) / n_rows))


def spanning_forest_parents(weights: np.ndarray, names=None) -> list:
    """Maximum-weight spanning forest of a symmetric weight matrix, oriented from roots.

    Only strictly positive weights become edges.  Each tree is rooted at its
    lowest-index node and arcs point away from it; ties between equal weights
    keep the lower-index pair first (Kruskal on a stable sort), so the result is
    deterministic.

    Returns
    -------
    list of tuple
        ``parents[i]`` is ``()`` or ``(j,)``.
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


def chow_liu_parents(codes: np.ndarray, cardinalities: np.ndarray) -> list:
    """Parent sets of the Chow-Liu forest of the data (columns as indices)."""
    return spanning_forest_parents(mutual_information_matrix(codes, cardinalities))
