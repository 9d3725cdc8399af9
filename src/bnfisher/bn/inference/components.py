"""Posteriors of missing cells by enumeration, one connected group of missing values at a time.

Given a row's observed values, the joint of its missing values is proportional to the
product of the CPT entries of the families that contain a missing value (every other
factor is a constant).  Two missing values interact only through a family that holds
both, so the missing values of a row split into connected components of the moral
graph, and the components are independent given the observed values.  A component
of a few variables has few completions: its posterior is their joint, enumerated and
normalised, with no junction tree.  (``benchmarks/missing.py`` counts them: with 10%
of alarm's cells missing, 85% of the components are a single variable.)

Components are grouped by their variable set, so each group is one batch of array
operations over its rows.  Rows with a component of more than :data:`MAX_COMPLETIONS`
completions, or whose component's variable set is a component in fewer than
:data:`MIN_ROWS` rows, are left to the junction tree
(:func:`bnfisher.bn.inference.evidence.posteriors_given_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.counts import configuration_index

__all__ = ["MAX_COMPLETIONS", "MIN_ROWS", "Component", "ComponentPlan", "Components", "missing_components",
           "plan_components"]

#: Largest number of completions a component is enumerated for; rows with a larger one use the junction tree.
MAX_COMPLETIONS = 1024

#: Fewest rows a variable set is enumerated for as one batch; rarer sets (each a batch of Python-level array calls)
#: go to the junction tree with the other fallback rows, whose cost per row does not depend on the set.
MIN_ROWS = 8


@dataclass(frozen=True)
class Component:
    """One variable set that is a connected component of missing values in some rows, with its posteriors.

    Attributes
    ----------
    variables : tuple of int
        The missing variables (column indices, increasing).
    rows : ndarray of shape (m,)
        The rows in which exactly these variables form a component.
    grid : ndarray of shape (P, len(variables))
        Every completion of the variables (C order: the last varies fastest).
    posterior : ndarray of shape (m, P)
        ``P(completion | row's observed values)``.
    """

    variables: tuple
    rows: np.ndarray
    grid: np.ndarray
    posterior: np.ndarray
    _cells: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def variables_set(self) -> frozenset:
        """The variables as a set."""
        return frozenset(self.variables)

    @property
    def possible(self) -> bool:
        """Whether every completion has positive posterior probability."""
        return bool((self.posterior > 0).all())

    def cells(self, filled: np.ndarray, family, cardinalities) -> np.ndarray:
        """Return the mixed-radix cell of ``family`` in each of the rows under each completion.

        Computed once per family.

        Parameters
        ----------
        filled : ndarray of shape (n_rows, n_variables)
            The codes with missing values set to 0 (:attr:`Components.filled`).
        family : sequence of int
            Column indices; it must hold no missing variable of these rows outside :attr:`variables`.
        cardinalities : sequence of int

        Returns
        -------
        ndarray of shape (m, P)
        """
        family = tuple(family)
        if family in self._cells:
            return self._cells[family]
        base = np.zeros(self.rows.size, dtype=np.intp)
        offset = np.zeros(self.grid.shape[0], dtype=np.intp)
        for column in family:  # mixed radix, the last column fastest; one column gathered at a time
            base *= int(cardinalities[column])
            offset *= int(cardinalities[column])
            if column in self.variables:
                offset += self.grid[:, self.variables.index(column)]
            else:
                base += filled[self.rows, column]
        self._cells[family] = base[:, None] + offset[None, :]
        return self._cells[family]


@dataclass(frozen=True)
class Components:
    """The components of every incomplete row, and what is left to the junction tree.

    Attributes
    ----------
    groups : list of Component
    filled : ndarray of shape (n_rows, n_variables)
        The codes with missing values set to 0 (for :meth:`Component.cells`).
    log_likelihood : ndarray of shape (n_rows,)
        ``log P(observed values)`` of the incomplete rows that were enumerated (``-inf`` when impossible); NaN for
        complete rows and for :attr:`fallback` rows.
    fallback : ndarray of int
        Incomplete rows left to the junction tree (a component too large, or of a rare variable set).
    """

    groups: list
    filled: np.ndarray
    log_likelihood: np.ndarray
    fallback: np.ndarray


def _moral_pairs(families: list) -> np.ndarray:
    pairs = {(min(a, b), max(a, b)) for family in families for a in family for b in family if a != b}
    return np.array(sorted(pairs), dtype=np.intp).reshape(-1, 2)


def _label_components(missing: np.ndarray, pairs: np.ndarray):
    """Return, per missing cell: its row, its variable and its component label (rows never share a label)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    row_of, variable_of = np.nonzero(missing)
    cell = np.full(missing.shape, -1, dtype=np.intp)
    cell[row_of, variable_of] = np.arange(row_of.size)
    both = [np.flatnonzero(missing[:, a] & missing[:, b]) for a, b in pairs]
    heads = np.concatenate([cell[rows, a] for rows, (a, _) in zip(both, pairs)] + [np.zeros(0, np.intp)])
    tails = np.concatenate([cell[rows, b] for rows, (_, b) in zip(both, pairs)] + [np.zeros(0, np.intp)])
    graph = coo_matrix((np.ones(heads.size, dtype=np.int8), (heads, tails)), shape=(row_of.size, row_of.size))
    count, labels = connected_components(graph, directed=False)
    return row_of, variable_of, labels, count


@dataclass(frozen=True)
class ComponentPlan:
    """The components of a table's missing values, without their posteriors.

    Made once per table and network structure, evaluated for any CPTs of that structure (as EM does at every
    iteration).

    Attributes
    ----------
    groups : list of Component
        With empty posteriors.
    filled : ndarray of shape (n_rows, n_variables)
        The codes with missing values set to 0.
    fallback : ndarray of int
        Rows left to the junction tree.
    network_families : list of tuple of int
        The network's families (parents, then the child).
    observed_cells : list of (ndarray, ndarray)
        Per network family: the enumerated incomplete rows in which the family is observed, and its cell there.
    enumerated : ndarray of bool, shape (n_rows,)
        The incomplete rows that are enumerated.
    memo : dict
        Room for a caller's own CPT-independent arrays (e.g. those of
        :func:`~bnfisher.bn.inference.family_cell_weights`).
    """

    groups: list
    filled: np.ndarray
    fallback: np.ndarray
    network_families: list
    observed_cells: list
    enumerated: np.ndarray
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def evaluate(self, network: BayesianNetwork) -> Components:
        """Return the posteriors of the components under ``network``'s CPTs.

        Parameters
        ----------
        network : BayesianNetwork
            The structure the plan was made for, with any CPTs.

        Returns
        -------
        Components
        """
        with np.errstate(divide="ignore"):  # zero probabilities (pseudocount 0) are log 0 = -inf
            tables = [np.log(np.asarray(network.cpts[v], dtype=np.float64)).reshape(-1) for v in network.variables]
        cards = network.cardinalities
        # log P(observed): the families observed in the row, then each component's normaliser.
        log_likelihood = np.where(self.enumerated, 0.0, np.nan)
        for child, (rows, cells) in enumerate(self.observed_cells):
            np.add.at(log_likelihood, rows, tables[child][cells])
        groups = []
        for group in self.groups:
            log_joint = np.zeros((group.rows.size, group.grid.shape[0]))
            for child, family in enumerate(self.network_families):
                if not group.variables_set.isdisjoint(family):  # the factors that depend on the component
                    log_joint += tables[child][group.cells(self.filled, family, cards)]
            with np.errstate(invalid="ignore", divide="ignore"):  # a row impossible under the network: all -inf
                peak = log_joint.max(axis=1)
                posterior = np.exp(log_joint - np.where(np.isfinite(peak), peak, 0.0)[:, None])
                total = posterior.sum(axis=1)
                normaliser = np.log(total) + peak
                posterior = np.where(total[:, None] > 0, posterior / total[:, None], 0.0)
            np.add.at(log_likelihood, group.rows, normaliser)
            groups.append(replace(group, posterior=posterior))  # shares the cells computed once
        return Components(groups, self.filled, log_likelihood, self.fallback)


def plan_components(network: BayesianNetwork, codes: np.ndarray, families: Sequence = (), *,
                    max_completions: int | None = None, min_rows: int | None = None) -> ComponentPlan:
    """Find the components of every row's missing values (see the module docstring).

    Parameters
    ----------
    network : BayesianNetwork
        Its structure and cardinalities are used, not its CPTs.
    codes : ndarray of int, shape (n_rows, n_variables)
        ``network.variables`` order; -1 marks a missing value.
    families : list of tuple of int, optional
        Variable sets whose joint posterior will be asked for; their variables are joined into one component, so
        each set's missing variables lie in one component.
    max_completions : int, optional
        Rows with a component of more completions are left to the junction tree (:attr:`ComponentPlan.fallback`;
        default :data:`MAX_COMPLETIONS`).
    min_rows : int, optional
        So are rows with a component whose variable set is a component in fewer rows (default :data:`MIN_ROWS`).

    Returns
    -------
    ComponentPlan
    """
    max_completions = MAX_COMPLETIONS if max_completions is None else max_completions
    min_rows = MIN_ROWS if min_rows is None else min_rows
    cards = [int(c) for c in network.cardinalities]
    network_families = [tuple(p) + (i,) for i, p in enumerate(network.parent_indices())]
    missing = codes < 0
    filled = np.where(missing, 0, codes)  # the codes' own (compact) dtype
    n_rows, n_variables = codes.shape
    row_of, variable_of, labels, count = _label_components(missing, _moral_pairs(network_families + list(families)))
    component_row = np.zeros(count, dtype=np.intp)
    component_row[labels] = row_of
    order, bounds, variable_sets = _group_by_variables(labels, variable_of, count, n_variables)
    left_out = [math.prod(cards[v] for v in s) > max_completions or bounds[k + 1] - bounds[k] < min_rows
                 for k, s in enumerate(variable_sets)]
    fallback = np.unique(np.concatenate([component_row[order[bounds[k]:bounds[k + 1]]]
                                         for k in range(len(variable_sets)) if left_out[k]] + [np.zeros(0, np.intp)]))
    enumerated: np.ndarray = np.asarray(missing.any(axis=1))
    enumerated[fallback] = False
    observed_cells = []
    for family in network_families:
        rows = np.flatnonzero(enumerated & ~missing[:, list(family)].any(axis=1))
        observed_cells.append((rows, configuration_index(filled, family, cards)[rows]))
    groups = []
    for k, variables in enumerate(variable_sets):
        rows = component_row[order[bounds[k]:bounds[k + 1]]]
        rows = rows[enumerated[rows]]
        if left_out[k] or rows.size == 0:
            continue
        shape = tuple(cards[v] for v in variables)
        grid = np.indices(shape).reshape(len(shape), -1).T.astype(np.intp)
        groups.append(Component(variables, rows, grid, np.empty(0)))
    return ComponentPlan(groups, filled, fallback, network_families, observed_cells, enumerated)


def _group_by_variables(labels: np.ndarray, variable_of: np.ndarray, count: int, n_variables: int) -> tuple:
    """Group the components by variable set with one sort: ``(order, bounds, variable sets)``.

    A component's variable set is a bit mask (62 variables per word); ``order[bounds[k]:bounds[k + 1]]`` are the
    components of the ``k``-th set.
    """
    words = n_variables // 62 + 1
    masks = np.zeros((count, words), dtype=np.int64)
    np.add.at(masks, (labels, variable_of // 62), np.left_shift(np.int64(1), variable_of % 62))
    if words == 1:
        order = np.argsort(masks[:, 0], kind="stable")
        ordered = masks[order]
        change = np.flatnonzero(ordered[1:, 0] != ordered[:-1, 0]) + 1
    else:
        order = np.lexsort(masks.T[::-1])
        ordered = masks[order]
        change = np.flatnonzero((ordered[1:] != ordered[:-1]).any(axis=1)) + 1
    bounds = np.concatenate([[0], change, [count]] if count else [[0]]).astype(np.intp)
    variable_sets = [tuple(int(w * 62 + b) for w in range(words) for b in range(62) if (int(kind[w]) >> b) & 1)
                     for kind in ordered[bounds[:-1]]]
    return order, bounds, variable_sets


def missing_components(network: BayesianNetwork, codes: np.ndarray, families: Sequence = (), *,
                       max_completions: int | None = None, min_rows: int | None = None) -> Components:
    """Enumerate the posterior of every component of missing values: :func:`plan_components`, evaluated.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        ``network.variables`` order; -1 marks a missing value.
    families, max_completions, min_rows
        As in :func:`plan_components`.

    Returns
    -------
    Components
    """
    return plan_components(network, codes, families, max_completions=max_completions,
                           min_rows=min_rows).evaluate(network)
