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

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ._validation import check_option, check_positive_int, check_random_state
from .counts import configuration_index, count_block, count_family, n_configurations
from .exceptions import OptionError, ResourceError
from .network import BayesianNetwork

__all__ = ["parent_marginals", "marginal", "ClassPosterior", "INFERENCE_METHODS", "query", "posteriors_given_rows",
           "family_cell_weights", "expected_counts"]

INFERENCE_METHODS = ("auto", "exact", "junction-tree", "elimination", "sampling")
#: Default limit on the cells of any one table built during exact inference (128 MiB of float64).
DEFAULT_MAX_TABLE_SIZE = 2**24
#: Above this many cells in total, "auto" prefers per-query elimination to one junction tree.
_JUNCTION_TREE_COST_LIMIT = 10**6
_MAX_EINSUM_OPERANDS = 16
_PATHS: dict = {}  # einsum contraction paths by operand labels and shapes


class _TableTooLarge(Exception):
    pass


# --------------------------------------------------------------------- graph helpers
def _moral_adjacency(parent_index: Sequence[tuple], nodes: Sequence[int]) -> dict:
    node_set = set(nodes)
    adjacency = {v: set() for v in nodes}
    for v in nodes:
        family = [p for p in parent_index[v] if p in node_set] + [v]
        for a in family:
            for b in family:
                if a != b:
                    adjacency[a].add(b)
    return adjacency


def _elimination_order(adjacency: dict, log_cards: np.ndarray, eliminate: set) -> tuple[list, list]:
    """Greedy min-fill order (ties: smaller clique weight, then smaller index).

    Returns the order and, for each eliminated node, its clique ``{v} | neighbours``
    at elimination time.  ``adjacency`` is modified (fill-in edges, removals).
    """
    log_cards = [float(x) for x in log_cards]

    def fill(v):
        neighbours = adjacency[v]
        degree = len(neighbours)
        # Neighbour a misses (degree - 1 - |adj(a) & N(v)|) edges inside N(v); each is counted twice.
        shared = sum(map(len, map(neighbours.intersection, map(adjacency.__getitem__, neighbours))))
        missing = (degree * (degree - 1) - shared) // 2
        weight = log_cards[v] + sum(map(log_cards.__getitem__, neighbours))
        return (missing, weight, v)

    scores = {v: fill(v) for v in eliminate}
    order, cliques = [], []
    remaining = set(eliminate)
    while remaining:
        v = min(remaining, key=scores.__getitem__)
        neighbours = adjacency[v]
        order.append(v)
        cliques.append(frozenset(neighbours) | {v})
        # Scores change for v's neighbours (they lose v, may gain edges) and for nodes adjacent to
        # both ends of a new fill edge (one missing pair fewer among their neighbours).
        touched = set(neighbours)
        added = []
        for a in neighbours:
            adjacency[a].discard(v)
            for b in neighbours:
                if a < b and b not in adjacency[a]:
                    added.append((a, b))
        for a, b in added:
            adjacency[a].add(b)
            adjacency[b].add(a)
        for a, b in added:
            touched |= adjacency[a] & adjacency[b]
        del adjacency[v]
        remaining.discard(v)
        for u in touched & remaining:
            scores[u] = fill(u)
    return order, cliques


def _size(variables, cards) -> int:
    return math.prod(int(cards[v]) for v in variables)


def _einsum(factors: list, output: tuple) -> np.ndarray:
    """Multiply factors ``(variables, table)`` and sum out everything not in ``output``."""
    if len(factors) > _MAX_EINSUM_OPERANDS:
        # numpy's einsum takes a bounded number of operands: fold in groups, summing
        # out early whatever neither the output nor a later factor mentions.
        head, rest = factors[:_MAX_EINSUM_OPERANDS], factors[_MAX_EINSUM_OPERANDS:]
        needed = set(output).union(*(f[0] for f in rest))
        scope = tuple(dict.fromkeys(v for f in head for v in f[0] if v in needed))
        return _einsum([(scope, _einsum(head, scope))] + rest, output)
    labels: dict = {}
    operands = []
    for variables, table in factors:
        operands.append(table)
        operands.append([labels.setdefault(v, len(labels)) for v in variables])
    for v in output:
        labels.setdefault(v, len(labels))
    if len(labels) > 52:
        raise _TableTooLarge(f"{len(labels)} variables in one einsum")
    operands.append([labels[v] for v in output])
    if len(factors) <= 2:
        return np.einsum(*operands)
    # The contraction path depends only on the labels and shapes: find it once, reuse it for every block.
    key = (tuple(tuple(o) if isinstance(o, list) else o.shape for o in operands),)
    path = _PATHS.get(key)
    if path is None:
        path = np.einsum_path(*operands, optimize="greedy")[0]
        if len(_PATHS) > 4096:
            _PATHS.clear()
        _PATHS[key] = path
    return np.einsum(*operands, optimize=path)


def _cpt_factors(network: BayesianNetwork) -> list:
    parent_index = network.parent_indices()
    return [
        (parent_index[i] + (i,), np.asarray(network.cpts[v])) for i, v in enumerate(network.variables)
    ]


# ------------------------------------------------------------------- junction tree
def _junction_tree_plan(network: BayesianNetwork):
    cards = network.cardinalities
    n = len(cards)
    adjacency = _moral_adjacency(network.parent_indices(), range(n))
    order, cliques = _elimination_order(adjacency, np.log(cards.astype(float)), set(range(n)))
    sizes = [_size(c, cards) for c in cliques]
    return order, cliques, sizes


def _elimination_tree(network: BayesianNetwork, plan) -> tuple:
    """Return the cliques of an elimination order as a tree, each CPT assigned to a clique holding its family.

    Returns ``(position, clique_vars, parent, children, assigned)``: each clique's members in
    elimination order, its parent clique (the clique of its earliest-eliminated other member;
    -1 for a root), its children, and the CPT factors it hosts.
    """
    order, cliques, _ = plan
    position = {v: k for k, v in enumerate(order)}
    clique_vars = [tuple(sorted(c, key=position.__getitem__)) for c in cliques]
    parent = [position[members[1]] if len(members) > 1 else -1 for members in clique_vars]
    children: list = [[] for _ in order]
    for k, p in enumerate(parent):
        if p >= 0:
            children[p].append(k)
    assigned: list = [[] for _ in order]
    for family, table in _cpt_factors(network):
        assigned[min(position[v] for v in family)].append((family, table))
    return position, clique_vars, parent, children, assigned


def _junction_tree_marginals(network: BayesianNetwork, plan, queries: list) -> list:
    cards = network.cardinalities
    order = plan[0]
    position, clique_vars, parent, children, assigned = _elimination_tree(network, plan)
    # Upward pass (children are eliminated before their parents).
    partial: list = [None] * len(order)
    up: list = [None] * len(order)
    for k, members in enumerate(clique_vars):
        factors = assigned[k] + [(clique_vars[c][1:], up[c]) for c in children[k]]
        covered = {v for f in factors for v in f[0]}
        # Members no factor mentions get a vector of ones so the table spans the clique.
        factors += [((v,), np.ones(int(cards[v]))) for v in members if v not in covered]
        table = _einsum(factors, members)
        partial[k] = table
        up[k] = table.sum(axis=0)  # separator = members[1:]
    # Downward pass (Hugin): belief_child = partial_child * sum(belief_parent) / up_child.
    belief: list = [None] * len(order)
    for k in reversed(range(len(order))):
        if parent[k] < 0:
            belief[k] = partial[k]
            continue
        p = parent[k]
        separator = clique_vars[k][1:]
        projected = _einsum([(clique_vars[p], belief[p])], separator)
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0: both are zero there, the ratio is 0
            ratio = np.where(up[k] > 0, projected / up[k], 0.0)
        belief[k] = partial[k] * ratio[None, ...]
    results = []
    for query in queries:
        if not query:
            results.append(np.float64(1.0))
            continue
        host = min(position[v] for v in query)
        # The clique of the earliest-eliminated member of a family holds the whole family;
        # a parent set is a subset of its child's family, so look in that child's host.
        results.append(_einsum([(clique_vars[host], belief[host])], tuple(query)))
    return results


def _family_hosts_ok(plan, queries) -> bool:
    order, cliques, _ = plan
    position = {v: k for k, v in enumerate(order)}
    return all(not q or set(q) <= cliques[min(position[v] for v in q)] for q in queries)


# --------------------------------------------------------------------- elimination
def _ancestors(parent_index: Sequence[tuple], query) -> list:
    seen = set(query)
    stack = list(query)
    while stack:
        v = stack.pop()
        for p in parent_index[v]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return sorted(seen)


def _eliminate_query(network: BayesianNetwork, factors: list, query: tuple, max_table_size: int) -> np.ndarray:
    cards = network.cardinalities
    parent_index = network.parent_indices()
    nodes = _ancestors(parent_index, query)
    adjacency = _moral_adjacency(parent_index, nodes)
    order, cliques = _elimination_order(adjacency, np.log(cards.astype(float)), set(nodes) - set(query))
    for clique in cliques:
        if _size(clique, cards) > max_table_size:
            raise _TableTooLarge(f"clique of {_size(clique, cards)} cells")
    pool = [factors[v] for v in nodes]
    for v in order:
        involved = [f for f in pool if v in f[0]]
        pool = [f for f in pool if v not in f[0]]
        scope = tuple(sorted({u for f in involved for u in f[0]} - {v}))
        pool.append((scope, _einsum(involved, scope)))
    result = _einsum(pool, tuple(query))
    return result / result.sum()


def _elimination_marginals(network: BayesianNetwork, queries: list, max_table_size: int) -> list:
    factors = _cpt_factors(network)
    cache: dict = {}
    results = []
    for query in queries:
        if not query:
            results.append(np.float64(1.0))
            continue
        key = frozenset(query)
        if key not in cache:
            cache[key] = (tuple(query), _eliminate_query(network, factors, tuple(query), max_table_size))
        stored_order, table = cache[key]
        axes = [stored_order.index(v) for v in query]
        results.append(np.transpose(table, axes))
    return results


# ------------------------------------------------------------------------ sampling
def _sampling_marginals(network, queries, n_samples, pseudocount, random_state) -> list:
    rng = check_random_state(random_state)
    cards = network.cardinalities
    chunk = max(1000, 20_000_000 // max(1, len(cards)))
    totals = [np.zeros(tuple(int(cards[v]) for v in q)) if q else None for q in queries]
    done = 0
    while done < n_samples:
        size = min(chunk, n_samples - done)
        codes = network.encode(network.sample(size, random_state=rng, as_frame=False)).codes  # topological
        for k, query in enumerate(queries):
            if query:
                totals[k] += count_family(codes, query, cards)
        done += size
    results = []
    for query, total in zip(queries, totals):
        if not query:
            results.append(np.float64(1.0))
        else:
            smoothed = total + pseudocount  # pseudocount keeps unseen configurations away from 0
            results.append(smoothed / smoothed.sum())
    return results


def _shallow_queries(network: BayesianNetwork, queries: list) -> bool:
    """Return True when the queries' ancestral sets are small in total (<= 3 nodes per variable).

    Then pruned elimination touches little of the network and beats a full junction tree.
    """
    parent_index = network.parent_indices()
    distinct = {tuple(sorted(q)) for q in queries if q}
    budget = 3 * len(parent_index)
    total = 0
    for query in distinct:
        total += len(_ancestors(parent_index, query))
        if total > budget:
            return False
    return True


# ------------------------------------------------------------------------- public
def _resolve(network, queries, method, max_table_size, n_samples, pseudocount, random_state):
    check_option(method, "inference", INFERENCE_METHODS)
    requested = method
    max_table_size = check_positive_int(max_table_size, "max_table_size")
    if method == "sampling":
        return _sampling_marginals(network, queries, n_samples, pseudocount, random_state), "sampling"
    plan = None
    if method in ("auto", "exact") and _shallow_queries(network, queries):
        method = "elimination-first"
    if method in ("auto", "exact", "junction-tree"):
        plan = _junction_tree_plan(network)
        _, _, sizes = plan
        fits = max(sizes) <= max_table_size and _family_hosts_ok(plan, queries)
        cheap = sum(sizes) <= _JUNCTION_TREE_COST_LIMIT
        if method == "junction-tree" and not fits:
            raise ResourceError(
                f"The junction tree's largest clique has {max(sizes)} cells (> max_table_size={max_table_size}); "
                "use inference='elimination' or 'sampling', or raise max_table_size."
            )
        if method == "junction-tree" or (fits and cheap):
            return _junction_tree_marginals(network, plan, queries), "junction-tree"
    try:
        return _elimination_marginals(network, queries, max_table_size), "elimination"
    except _TableTooLarge as exc:
        if method == "elimination-first":
            method = "exact" if requested == "exact" else "auto"
            plan = _junction_tree_plan(network)
            if max(plan[2]) <= max_table_size:
                return _junction_tree_marginals(network, plan, queries), "junction-tree"
        if method == "elimination":
            raise ResourceError(
                f"Exact elimination needs a table that is too large ({exc}); use inference='sampling' "
                "or raise max_table_size."
            ) from None
        if plan is not None and max(plan[2]) <= max_table_size and _family_hosts_ok(plan, queries):
            # Elimination needed a table beyond the limit but the junction tree fits: exact, not sampled.
            return _junction_tree_marginals(network, plan, queries), "junction-tree"
        if method == "exact":
            raise ResourceError(f"Exact inference exceeds max_table_size={max_table_size} ({exc}).") from None
    return _sampling_marginals(network, queries, n_samples, pseudocount, random_state), "sampling"


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


def marginal(network: BayesianNetwork, variables: Sequence[str], method: str = "exact", **kwargs) -> np.ndarray:
    """Joint marginal ``P(variables)`` as an array with axes in the given order.

    Parameters
    ----------
    network : BayesianNetwork
    variables : sequence of str
        Distinct variable names.
    method : str, default="exact"
        As in :func:`parent_marginals`.
    **kwargs
        ``max_table_size``, ``n_samples``, ``pseudocount``, ``random_state``.

    Returns
    -------
    ndarray
        Shaped by the variables' cardinalities, in the order given.
    """
    index = {v: i for i, v in enumerate(network.variables)}
    unknown = [v for v in variables if v not in index]
    if unknown:
        raise OptionError(f"Unknown variable(s) {unknown}.")
    if len(set(variables)) != len(variables):
        raise OptionError(f"`variables` has duplicates: {list(variables)}.")
    query = tuple(index[v] for v in variables)
    options = dict(max_table_size=DEFAULT_MAX_TABLE_SIZE, n_samples=10**6, pseudocount=1.0, random_state=0)
    options.update(kwargs)
    results, _ = _resolve(network, [query], method, **options)
    return np.asarray(results[0])


class ClassPosterior:
    """Exact class posteriors ``log P(C = c | x)`` of one set of rows under changing CPTs.

    Only the families that contain the class depend on it (the others add the same
    term to every class and cancel).  Their CPTs are read with the class axis moved
    last, so one row gather per family gives ``log theta`` for every class value at
    once.  The configuration indices of the rows are computed once, in the
    constructor; :meth:`log_posterior` then costs one gather per class family.

    Parameters
    ----------
    families : list of tuple
        Column indices ``parents + (child,)`` of every variable.
    cardinalities : sequence of int
    codes : ndarray of shape (n_rows, n_variables)
        The rows; the class column is ignored.
    class_position : int

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 0], [1, 0]])          # columns: class, feature
    >>> posterior = ClassPosterior([(0,), (0, 1)], [2, 2], codes, class_position=0)
    >>> log_tables = [np.log([0.5, 0.5]), np.log([0.9, 0.1, 0.2, 0.8])]
    >>> np.round(np.exp(posterior.log_posterior(log_tables)), 3).tolist()
    [[0.818, 0.182], [0.818, 0.182]]
    """

    def __init__(self, families: list, cardinalities, codes: np.ndarray, class_position: int):
        self.cardinalities = np.asarray(cardinalities)
        self.n_classes = int(self.cardinalities[class_position])
        n_rows = codes.shape[0]
        # A design matrix with a row per (row, class value) and a 1 in the cell each class family reads there:
        # the joint log-probabilities of every row and class under m models are one sparse x dense product.
        self.class_families, columns, offset = [], [], 0
        completed = np.array(codes, dtype=np.intp, copy=True)
        for i, family in enumerate(families):
            if class_position not in family:
                continue
            size = n_configurations(self.cardinalities, family)
            per_class = []
            for c in range(self.n_classes):
                completed[:, class_position] = c
                per_class.append(offset + configuration_index(completed, family, self.cardinalities))
            columns.append(np.stack(per_class, axis=1))  # (n_rows, n_classes)
            self.class_families.append((i, offset, size))
            offset += size
        indices = np.stack(columns, axis=2).reshape(-1) if columns else np.zeros(0, dtype=np.intp)
        width = len(columns)
        self._design = sp.csr_matrix((np.ones(indices.size), indices, np.arange(0, indices.size + 1, max(width, 1))
                                      if width else np.zeros(n_rows * self.n_classes + 1, dtype=np.intp)),
                                     shape=(n_rows * self.n_classes, offset))
        self.n_rows = n_rows

    def log_posterior(self, log_tables: list) -> np.ndarray:
        """``(n_rows, n_classes)`` log posteriors from flat log CPTs (one per family).

        Parameters
        ----------
        log_tables : list of ndarray
            ``log theta`` of every family, flat (mixed radix over the family).

        Returns
        -------
        ndarray of shape (n_rows, n_classes)
            ``log P(C = c | x)``; rows impossible under every class are ``nan``
            (the caller decides what that means).
        """
        return self.log_posterior_many([np.asarray(t)[None] for t in log_tables])[:, :, 0]

    def log_posterior_many(self, log_tables: list) -> np.ndarray:
        """Log posteriors under many models at once: one sparse x dense product.

        Parameters
        ----------
        log_tables : list of ndarray
            Per family, ``(n_models, cells)``: the flat log CPT of every model.

        Returns
        -------
        ndarray of shape (n_rows, n_classes, n_models)
        """
        joint = self.log_joint_many(log_tables)
        with np.errstate(invalid="ignore"):  # -inf - -inf where every class is ruled out: nan, as documented
            return joint - self.log_normaliser(joint)[:, None, :]

    @staticmethod
    def log_normaliser(joint: np.ndarray) -> np.ndarray:
        """Return ``log sum_c exp(joint[:, c, :])`` (stable; ``nan`` where every class is ``-inf``).

        Parameters
        ----------
        joint : ndarray of shape (n_rows, n_classes, n_models)
            From :meth:`log_joint_many`.

        Returns
        -------
        ndarray of shape (n_rows, n_models)
        """
        top = joint.max(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return top + np.log(np.exp(joint - top[:, None, :]).sum(axis=1))

    def log_joint_many(self, log_tables: list) -> np.ndarray:
        """Unnormalised ``log P(C = c, x)`` (class families only) under many models: one sparse x dense product.

        Parameters
        ----------
        log_tables : list of ndarray
            Per family, ``(n_models, cells)``.

        Returns
        -------
        ndarray of shape (n_rows, n_classes, n_models)
        """
        n_models = np.asarray(log_tables[0]).shape[0] if log_tables else 1
        if not self.class_families:
            return np.zeros((self.n_rows, self.n_classes, n_models))
        stacked = np.concatenate([np.asarray(log_tables[i], dtype=np.float64).T for i, _, _ in self.class_families])
        return (self._design @ stacked).reshape(self.n_rows, self.n_classes, n_models)



# ------------------------------------------------------------- evidence, batched
_BATCH = "batch"  # the einsum label of the row axis


def _evidence_blocks(network: BayesianNetwork, n_rows: int, plan) -> int:
    """Rows per block: keep the batched clique tables (partial, belief, up) near 256 MiB."""
    cells = sum(plan[2]) + 1
    return int(max(1, min(n_rows, (256 << 20) // (8 * 3 * cells))))


def _batched_junction_tree(network: BayesianNetwork, plan, codes: np.ndarray, queries: list):
    """Posteriors of ``queries`` given each row's observed values, and each row's log P(observed).

    ``codes`` (rows x variables, ``network.variables`` order) holds -1 where a value is
    missing.  One Hugin calibration runs for the whole block: every clique table carries a
    leading row axis, an observed value enters as an indicator factor on its variable, and
    every table of the upward pass is rescaled per row (its log scale carried upwards), so
    long rows do not underflow.

    Returns
    -------
    posteriors : list of ndarray
        ``(rows, *query cardinalities)``, each row summing to 1 (NaN where the evidence is impossible).
    log_likelihood : ndarray of shape (rows,)
        ``log P(x_obs)``; ``-inf`` for impossible evidence.
    """
    cards = network.cardinalities
    order = plan[0]
    n_rows = codes.shape[0]
    position, clique_vars, parent, children, assigned = _elimination_tree(network, plan)
    for v in range(codes.shape[1]):
        column = codes[:, v]
        observed = column >= 0
        if observed.any():
            indicator = np.ones((n_rows, int(cards[v])))
            indicator[observed] = 0.0
            indicator[np.flatnonzero(observed), column[observed]] = 1.0
            assigned[position[v]].append(((_BATCH, v), indicator))
    partial: list = [None] * len(order)
    up: list = [None] * len(order)
    log_scale: list = [None] * len(order)
    for k, members in enumerate(clique_vars):
        scope = (_BATCH,) + members
        factors = assigned[k] + [((_BATCH,) + clique_vars[c][1:], up[c]) for c in children[k]]
        covered = {v for f in factors for v in f[0]}
        factors += [((v,), np.ones(int(cards[v]))) for v in members if v not in covered]
        if _BATCH not in covered:
            factors.append(((_BATCH,), np.ones(n_rows)))
        table = _einsum(factors, scope)
        # Rescale per row; the scale travels up with the message.
        peak = table.reshape(n_rows, -1).max(axis=1)
        peak = np.where(peak > 0, peak, 1.0)
        table = table / peak.reshape((-1,) + (1,) * len(members))
        log_scale[k] = np.log(peak) + sum((log_scale[c] for c in children[k]), np.zeros(n_rows))
        partial[k] = table
        up[k] = table.sum(axis=1)
    belief: list = [None] * len(order)
    log_likelihood = np.zeros(n_rows)
    for k in reversed(range(len(order))):
        if parent[k] < 0:
            belief[k] = partial[k]
            with np.errstate(divide="ignore"):  # impossible evidence: log 0 = -inf
                log_likelihood += np.log(partial[k].reshape(n_rows, -1).sum(axis=1)) + log_scale[k]
            continue
        p = parent[k]
        separator = (_BATCH,) + clique_vars[k][1:]
        projected = _einsum([((_BATCH,) + clique_vars[p], belief[p])], separator)
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0: both are zero there, the ratio is 0
            ratio = np.where(up[k] > 0, projected / up[k], 0.0)
        belief[k] = partial[k] * ratio[:, None, ...]
    posteriors = []
    for query in queries:
        host = min(position[v] for v in query)
        table = _einsum([((_BATCH,) + clique_vars[host], belief[host])], (_BATCH,) + tuple(query))
        total = table.reshape(n_rows, -1).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):  # impossible evidence gives NaN rows
            posteriors.append(table / total.reshape((-1,) + (1,) * len(query)))
    return posteriors, log_likelihood


def posteriors_given_rows(network: BayesianNetwork, codes: np.ndarray, queries: list):
    """Exact posteriors of variable sets given each row's observed values, batched and deduplicated.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        In ``network.variables`` order; -1 marks a missing value.
    queries : list of tuple of int
        Variable sets (column indices); each must lie in one junction-tree clique
        (a single variable, or a family, always does).

    Returns
    -------
    posteriors : list of ndarray
        ``posteriors[q][row]`` is ``P(query q | row's observed values)``, shaped by the
        query's cardinalities.
    log_likelihood : ndarray of shape (n_rows,)
        ``log P(observed values)`` of each row (``-inf`` when impossible).

    Raises
    ------
    ResourceError
        When a clique of the junction tree is too large for memory.

    Notes
    -----
    Distinct rows are computed once; blocks of rows share one calibration, so the cost
    is a few batched ``einsum`` calls per clique and block, never a Python loop over rows.
    """
    from ._memory import check_allocation

    plan = _junction_tree_plan(network)
    check_allocation(8.0 * 3 * max(plan[2]), "The junction tree's largest clique",
                     "use a network with fewer parents per variable.")
    codes = np.asarray(codes)
    if codes.shape[0] == 0:
        cards = network.cardinalities
        return [np.zeros((0,) + tuple(int(cards[v]) for v in q)) for q in queries], np.zeros(0)
    distinct, inverse = np.unique(codes, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    block = _evidence_blocks(network, distinct.shape[0], plan)
    parts, likelihoods = [], []
    for start in range(0, distinct.shape[0], block):
        posts, ll = _batched_junction_tree(network, plan, distinct[start:start + block], queries)
        parts.append(posts)
        likelihoods.append(ll)
    posteriors = [np.concatenate([p[q] for p in parts])[inverse] for q in range(len(queries))]
    return posteriors, np.concatenate(likelihoods)[inverse]


def query(network: BayesianNetwork, targets, evidence):
    """Posterior distributions of target variables given evidence, labelled.

    Parameters
    ----------
    network : BayesianNetwork
    targets : str or sequence of str
        Variables whose posterior marginals are wanted.
    evidence : mapping or DataFrame
        One ``{variable: label}`` dict, or a DataFrame with one row of evidence per row
        (extra columns ignored; a missing column or a missing cell means "not
        observed").  Rows are deduplicated and computed in batches: one junction-tree
        calibration per block of rows.

    Returns
    -------
    DataFrame or dict of DataFrame
        For one target: a DataFrame with one column per state (one row per evidence
        row).  For several: ``{target: DataFrame}``.

    Raises
    ------
    SchemaError
        An unknown variable or label.
    DataError
        Evidence that has probability 0 under the network (naming the row).

    Examples
    --------
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({"rain": [], "wet": ["rain"]},
    ...                       {"rain": [0.2, 0.8], "wet": [[0.9, 0.1], [0.1, 0.9]]},
    ...                       {"rain": ["yes", "no"], "wet": ["yes", "no"]})
    >>> query(net, "rain", {"wet": "yes"}).round(4)
          yes      no
    0  0.6923  0.3077
    """
    import pandas as pd

    from .exceptions import DataError, SchemaError

    single = isinstance(targets, str)
    targets = [targets] if single else list(targets)
    unknown = [t for t in targets if t not in network.states]
    if unknown:
        raise SchemaError(f"`targets` names {unknown}, which are not variables of the network.")
    if isinstance(evidence, pd.DataFrame):
        frame = evidence
    elif isinstance(evidence, dict):
        frame = pd.DataFrame({k: [v] for k, v in evidence.items()})
    else:
        raise OptionError(f"`evidence` must be a dict or a DataFrame; got {type(evidence).__name__}.")
    absent = [c for c in frame.columns if c not in network.states]
    frame = frame[[c for c in frame.columns if c in network.states]]
    if absent and isinstance(evidence, dict):
        raise SchemaError(f"`evidence` names {absent}, which are not variables of the network.")
    full = frame.reindex(columns=list(network.schema.variables))
    codes = network.schema.encode(full, missing="allow").select(network.variables).codes
    index = {v: i for i, v in enumerate(network.variables)}
    posteriors, log_likelihood = posteriors_given_rows(network, codes, [(index[t],) for t in targets])
    impossible = ~np.isfinite(log_likelihood)
    if impossible.any():
        raise DataError(f"The evidence of row {int(np.argmax(impossible))} has probability 0 under the network.")
    out = {t: pd.DataFrame(p, index=frame.index, columns=list(network.states[t])) for t, p in zip(targets, posteriors)}
    return out[targets[0]] if single else out


def family_cell_weights(network: BayesianNetwork, codes: np.ndarray, families: list, *,
                        return_log_likelihood: bool = False):
    """Each row's distribution over the cells of each family, given its observed values.

    A family whose variables are all observed in a row puts weight 1 on one cell; for
    the others the weights are the exact posterior ``P(family cell | observed values)``
    (:func:`posteriors_given_rows`, computed once for all such rows and families).

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        ``network.variables`` order; -1 marks a missing value.
    families : list of tuple of int
        Column indices, parents first and the child last (as a kernel's ``families``).

    return_log_likelihood : bool, default=False
        Also return ``log P(observed values)`` of the rows that needed inference
        (NaN for the others).

    Returns
    -------
    list of (rows, cells, weights)
        Per family, three arrays of equal length: row position, cell (mixed radix over
        the family), and weight; the weights of each row sum to 1.
    log_likelihood : ndarray of shape (n_rows,)
        Only with ``return_log_likelihood``.

    Raises
    ------
    DataError
        When a row's observed values have probability 0 under the network.
    """
    from .exceptions import DataError

    codes = np.asarray(codes)
    cards = network.cardinalities
    missing = codes < 0
    need = [missing[:, list(f)].any(axis=1) for f in families]
    touched = np.flatnonzero(np.any(need, axis=0)) if need else np.zeros(0, dtype=np.intp)
    asked = [k for k, flags in enumerate(need) if flags.any()]
    posteriors = {}
    row_log_likelihood = np.full(codes.shape[0], np.nan)
    if asked:
        found, log_likelihood = posteriors_given_rows(network, codes[touched], [tuple(families[k]) for k in asked])
        row_log_likelihood[touched] = log_likelihood
        impossible = ~np.isfinite(log_likelihood)
        if impossible.any():
            raise DataError(f"Row {int(touched[np.argmax(impossible)])} has observed values with probability 0 "
                            "under the network; nothing can be inferred for its missing values.")
        posteriors = dict(zip(asked, found))
    slot = np.full(codes.shape[0], -1, dtype=np.intp)
    slot[touched] = np.arange(touched.size)
    out = []
    for k, family in enumerate(families):
        complete = np.flatnonzero(~need[k])
        rows = [complete]
        cells = [configuration_index(codes[complete], family, cards)]
        weights = [np.ones(complete.size)]
        if k in posteriors:
            partial = np.flatnonzero(need[k])
            table = posteriors[k][slot[partial]].reshape(partial.size, -1)
            row, cell = np.nonzero(table > 0)
            rows.append(partial[row])
            cells.append(cell.astype(np.intp))
            weights.append(table[row, cell])
        out.append((np.concatenate(rows), np.concatenate(cells), np.concatenate(weights)))
    return (out, row_log_likelihood) if return_log_likelihood else out


def expected_counts(network: BayesianNetwork, codes: np.ndarray, families: list) -> list:
    """Return the expected count tables of families: complete rows count once, the others by their posterior.

    ``E[N_f(cell) | observed data] = sum over rows of P(cell | row's observed values)``: the
    sufficient statistics of the EM algorithm and of the marginalized kernel's mean embedding.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        ``network.variables`` order; -1 marks a missing value.
    families : list of tuple of int

    Returns
    -------
    list of ndarray
        Float tables shaped by each family's cardinalities.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({"b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
    ...                       {"a": [0, 1], "b": [0, 1]})
    >>> expected_counts(net, np.array([[0, 0], [-1, 1]]), [(0, 1)])[0].round(3).tolist()
    [[1.0, 0.111], [0.0, 0.889]]
    """
    cards = network.cardinalities
    if codes.shape[0] == 0 or codes.min() >= 0:  # complete rows: plain counts, one pass
        return [table.astype(np.float64) for table in count_block(codes, families, cards)]
    out = []
    for family, (_, cells, weights) in zip(families, family_cell_weights(network, codes, families)):
        shape = tuple(int(cards[c]) for c in family)
        out.append(np.bincount(cells, weights=weights, minlength=math.prod(shape)).reshape(shape))
    return out
