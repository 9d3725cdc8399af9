"""Bayesian network classifier structures: naive Bayes, TAN and KDB.

All three make the class a parent of every feature.  TAN (Friedman, Geiger &
Goldszmidt 1997) adds a maximum-weight spanning tree over the features with
weights ``I(X_i; X_j | C)``.  KDB (Sahami 1996) orders the features by ``I(X_i; C)``
and gives each one up to ``k`` parents among the earlier features, those with
the highest ``I(X_i; X_j | C)``.
"""

from __future__ import annotations

import numpy as np

from bnfisher.bn.structure.chow_liu import (
    conditional_mutual_information_matrix,
    pairwise_mutual_information,
    spanning_forest_parents,
)

__all__ = ["naive_bayes_parents", "tan_parents", "kdb_parents"]


def naive_bayes_parents(n_variables: int, class_index: int) -> list:
    """Every feature has the class as its only parent.

    Parameters
    ----------
    n_variables : int
    class_index : int

    Returns
    -------
    list of tuple
    """
    return [() if i == class_index else (class_index,) for i in range(n_variables)]


def tan_parents(provider, class_index: int) -> list:
    """Class -> every feature, plus the conditional-MI spanning tree over the features.

    Parameters
    ----------
    provider : CountsProvider
    class_index : int
        Column of the class.

    Returns
    -------
    list of tuple
        Parent column indices of every variable.
    """
    n = len(provider.cardinalities)
    features = [i for i in range(n) if i != class_index]
    information = conditional_mutual_information_matrix(provider, class_index)
    tree = spanning_forest_parents(information[np.ix_(features, features)])
    parents: list = [() for _ in range(n)]
    for position, i in enumerate(features):
        parents[i] = (class_index,) + tuple(features[p] for p in tree[position])
    return parents


def kdb_parents(provider, class_index: int, k: int) -> list:
    """Sahami's k-dependence Bayesian classifier structure.

    Features are taken in decreasing ``I(X_i; C)`` (ties: lower column first); each
    gets the class and up to ``k`` earlier features with the highest positive
    ``I(X_i; X_j | C)`` (ties: earlier in that order).

    Parameters
    ----------
    provider : CountsProvider
    class_index : int
    k : int
        Largest number of feature parents per feature.

    Returns
    -------
    list of tuple
    """
    n = len(provider.cardinalities)
    features = [i for i in range(n) if i != class_index]
    with_class = np.zeros(n)
    with_class[features] = pairwise_mutual_information(provider, [(i, class_index) for i in features])
    order = sorted(features, key=lambda i: (-with_class[i], i))
    conditional = conditional_mutual_information_matrix(provider, class_index)
    parents: list = [() for _ in range(n)]
    for position, i in enumerate(order):
        earlier = order[:position]
        ranked = sorted(earlier, key=lambda j: (-conditional[i, j], earlier.index(j)))
        chosen = [j for j in ranked[:k] if conditional[i, j] > 0]
        parents[i] = (class_index,) + tuple(chosen)
    return parents
