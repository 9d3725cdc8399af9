"""Exact and sampled marginals of sets of variables: junction tree, pruned variable elimination, forward sampling."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bnfisher._utils.validation import check_option, check_positive_int, check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.counts import count_family
from bnfisher.exceptions import ResourceError

__all__ = ['INFERENCE_METHODS', 'DEFAULT_MAX_TABLE_SIZE']


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
    adjacency: dict[int, set] = {v: set() for v in nodes}
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
    weights = [float(x) for x in log_cards]

    def fill(v):
        neighbours = adjacency[v]
        degree = len(neighbours)
        # Neighbour a misses (degree - 1 - |adj(a) & N(v)|) edges inside N(v); each is counted twice.
        shared = sum(map(len, map(neighbours.intersection, map(adjacency.__getitem__, neighbours))))
        missing = (degree * (degree - 1) - shared) // 2
        weight = weights[v] + sum(map(weights.__getitem__, neighbours))
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


def _contraction_path(operands: list) -> list:
    """Return einsum's greedy contraction path, found once per labels and shapes and reused for every block."""
    key = (tuple(tuple(o) if isinstance(o, list) else o.shape for o in operands),)
    path = _PATHS.get(key)
    if path is None:
        path = np.einsum_path(*operands, optimize="greedy")[0]
        if len(_PATHS) > 4096:
            _PATHS.clear()
        _PATHS[key] = path
    return path


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
    return np.einsum(*operands, optimize=_contraction_path(operands))


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
    if method in ("auto", "exact") and _shallow_queries(network, queries):
        method = "elimination-first"
    plan, answer = _junction_tree_first(network, queries, method, max_table_size)
    if answer is not None:
        return answer, "junction-tree"
    try:
        return _elimination_marginals(network, queries, max_table_size), "elimination"
    except _TableTooLarge as exc:
        answer = _junction_tree_after(network, queries, method, requested, plan, max_table_size, exc)
        if answer is not None:
            return answer, "junction-tree"
    return _sampling_marginals(network, queries, n_samples, pseudocount, random_state), "sampling"


def _junction_tree_first(network, queries, method, max_table_size) -> tuple:
    """Return (plan, marginals): the junction tree's marginals when ``method`` asks for it, or it fits and is cheap.

    The marginals are None otherwise; the plan is None when the method never uses a junction tree.
    """
    if method not in ("auto", "exact", "junction-tree"):
        return None, None
    plan = _junction_tree_plan(network)
    _, _, sizes = plan
    fits = max(sizes) <= max_table_size and _family_hosts_ok(plan, queries)
    if method == "junction-tree" and not fits:
        raise ResourceError(
            f"The junction tree's largest clique has {max(sizes)} cells (> max_table_size={max_table_size}); "
            "use inference='elimination' or 'sampling', or raise max_table_size."
        )
    if method == "junction-tree" or (fits and sum(sizes) <= _JUNCTION_TREE_COST_LIMIT):
        return plan, _junction_tree_marginals(network, plan, queries)
    return plan, None


def _junction_tree_after(network, queries, method, requested, plan, max_table_size, exc):
    """Return the junction tree's marginals after elimination needed a table beyond the limit.

    The junction tree when it fits (exact, not sampled), a refusal when the method promised exactness, None when
    sampling may answer.
    """
    if method == "elimination-first":
        method = "exact" if requested == "exact" else "auto"
        plan = _junction_tree_plan(network)
        if max(plan[2]) <= max_table_size:
            return _junction_tree_marginals(network, plan, queries)
    if method == "elimination":
        raise ResourceError(
            f"Exact elimination needs a table that is too large ({exc}); use inference='sampling' "
            "or raise max_table_size."
        ) from None
    if plan is not None and max(plan[2]) <= max_table_size and _family_hosts_ok(plan, queries):
        return _junction_tree_marginals(network, plan, queries)
    if method == "exact":
        raise ResourceError(f"Exact inference exceeds max_table_size={max_table_size} ({exc}).") from None
    return None
