"""Local search over variable orders with precomputed candidate parent sets (Teyssier & Koller 2005).

For a fixed order of the variables the best DAG consistent with it is every
variable's best parent set among its predecessors, chosen independently, because
the score is decomposable.  So a search over orders needs no acyclicity checks, and
one move -- taking a variable out of the order and inserting it elsewhere -- changes
the parent sets of many variables at once, which escapes local optima of the arc
moves of hill climbing.

Each variable's parent sets are restricted to candidates scored once: every subset
of at most ``max_size`` of its ``n_candidates`` best single parents (and of its
parents in the start DAG), plus that start parent set itself, so the search never
ends below its start.  Sets are stored as bit masks sorted by score; a variable's
best set under a predecessor mask is the first one inside it.

References
----------
.. [1] M. Teyssier and D. Koller, "Ordering-based search: a simple and effective
   algorithm for learning Bayesian networks", UAI 2005.
"""

from __future__ import annotations

from itertools import chain, combinations

import numpy as np

from bnfisher._utils.jit import compiled

__all__ = ["CandidateSets", "candidate_sets", "order_search", "N_CANDIDATES", "MAX_SIZE"]

#: Single parents kept per variable, and the largest candidate set drawn from them (``candidate_sets``' defaults).
N_CANDIDATES, MAX_SIZE = 8, 3

#: Smallest gain (nats) of an accepted move; guards against float noise.
_MIN_GAIN = 1e-7
#: Gains within this many nats are ties: the first position tried keeps them, whatever the rounding (compiled or not).
_TIE = 1e-6


class CandidateSets:
    """Each variable's candidate parent sets as bit masks, sorted by local score (best first).

    Parameters
    ----------
    sets : list of list of tuple of int
        Each variable's candidate parent sets.
    scores : list of array-like of float
        Their local scores.
    n_variables : int

    Attributes
    ----------
    masks : ndarray of shape (n_sets, n_words), dtype uint64
        Bit ``u`` of a mask (word ``u // 64``) is set when ``u`` is a parent.
    scores : ndarray of shape (n_sets,)
    offsets : ndarray of shape (n_variables + 1,)
        Variable ``v`` owns the sets ``offsets[v]:offsets[v + 1]``.
    """

    def __init__(self, sets: list, scores: list, n_variables: int):
        self.n_variables = n_variables
        self.n_words = (n_variables + 63) // 64
        sizes = np.array([len(sets[v]) for v in range(n_variables)], dtype=np.int64)
        owner = np.repeat(np.arange(n_variables), sizes)
        value = np.concatenate([np.zeros(0)] + [np.asarray(scores[v], dtype=np.float64) for v in range(n_variables)])
        # Each variable's sets by score, best first (ties in the given order: lexsort is stable).
        order = np.lexsort((-value, owner))
        mask = _masks([ps for v in range(n_variables) for ps in sets[v]], self.n_words)[order]
        value = value[order]
        keep = _undominated(mask, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
        self.masks = mask[keep]
        self.scores = value[keep]
        self.offsets = np.concatenate([[0], np.cumsum(np.bincount(owner[keep], minlength=n_variables))])
        self.offsets = self.offsets.astype(np.int64)

    def parents(self, index: int) -> tuple:
        """Return the parent set (sorted column indices) of set number ``index``.

        Parameters
        ----------
        index : int

        Returns
        -------
        tuple of int
        """
        bits = np.unpackbits(self.masks[index].view(np.uint8), bitorder="little")
        return tuple(int(u) for u in np.flatnonzero(bits))


def _numpy_undominated(masks, bounds):
    """Return :func:`_undominated` with NumPy (its fallback): every pair of a variable's sets at once."""
    keep = np.ones(masks.shape[0], dtype=bool)
    for v in range(bounds.size - 1):
        own = masks[bounds[v]:bounds[v + 1]]
        inside = np.all((own[:, None, :] & ~own[None, :, :]) == 0, axis=2)  # inside[a, b]: a within b
        keep[bounds[v]:bounds[v + 1]] = ~np.triu(inside, k=1).any(axis=0)
    return keep


@compiled(nogil=True, fallback=_numpy_undominated, cost=lambda masks, bounds: 5e-5 * bounds.size)
def _undominated(masks, bounds):  # pragma: no cover - compiled
    """Flag the sets no earlier set of the same variable lies inside (variable ``v`` owns ``bounds[v]:bounds[v+1]``).

    Sets come best first: a set with a better-scoring subset earlier in the list can never
    be chosen, so the order search need not look at it.
    """
    keep = np.ones(masks.shape[0], np.bool_)
    for v in range(bounds.size - 1):
        for b in range(bounds[v], bounds[v + 1]):
            for a in range(bounds[v], b):
                inside = True
                for w in range(masks.shape[1]):
                    if masks[a, w] & ~masks[b, w]:
                        inside = False
                        break
                if inside:
                    keep[b] = False
                    break
    return keep


def _masks(sets: list, n_words: int) -> np.ndarray:
    """Bit masks of parent sets: (len(sets), n_words) words of 64 bits."""
    rows = np.repeat(np.arange(len(sets)), np.fromiter(map(len, sets), dtype=np.int64, count=len(sets)))
    members = np.fromiter(chain.from_iterable(sets), dtype=np.int64, count=rows.size)
    bits = np.zeros((len(sets), n_words * 64), dtype=np.uint8)
    bits[rows, members] = 1
    return np.packbits(bits, axis=1, bitorder="little").view(np.uint64).reshape(len(sets), n_words)


def candidate_sets(scorer, n_variables: int, *, starts=(), n_candidates: int = N_CANDIDATES,
                   max_size: int = MAX_SIZE, max_parents=None, whitelist=(), blacklist=(),
                   allowed=None) -> CandidateSets:
    """Score each variable's candidate parent sets in one batch.

    Parameters
    ----------
    scorer : LocalScorer or ProviderScorer
    n_variables : int
    starts : sequence of list of tuple
        DAGs (parent sets by column index) whose parent sets must be candidates (with the
        whitelisted parents added and the blacklisted ones removed).
    n_candidates : int, default=8
        Single parents kept per variable, by local score.
    max_size : int, default=3
        Largest candidate set drawn from them (``max_parents`` bounds it too).
    max_parents : int, optional
    whitelist, blacklist : iterable of (i, j)
    allowed : sequence of sequence of int, optional
        Each variable's possible parents (default: every other variable); the single
        parents are ranked among these only (a screened wide table).

    Returns
    -------
    CandidateSets
    """
    n = n_variables
    required = [sorted({i for i, c in whitelist if c == v}) for v in range(n)]
    allowed, banned = _possible_parents(n, allowed, blacklist)
    singles = scorer.family_scores([(v, (u,)) for v in range(n) for u in allowed[v]])
    size = max_size if max_parents is None else min(max_size, max_parents)
    sets, columns, first = [], [], 0
    for v in range(n):
        gains = singles[first:first + len(allowed[v])]
        first += len(allowed[v])
        ranked = [allowed[v][k] for k in np.argsort(-gains, kind="stable")[:n_candidates]]
        pool = sorted(set(ranked).union(*(start[v] for start in starts)) - set(required[v]) - banned[v])
        columns.append([v, *pool, *required[v]])  # every set lies among these
        sets.append(_sets_of(v, pool, required[v], banned[v], starts, size))
    # Each variable's sets lie among a few columns: counted on their distinct rows (the same scores).
    values = scorer.grouped_scores([([(v, s) for s in sets[v]], columns[v]) for v in range(n)])
    return CandidateSets(sets, values, n)


def _possible_parents(n: int, allowed, blacklist) -> tuple:
    """Return each variable's possible parents and its blacklisted ones.

    The possible parents are ``allowed`` (default: every other variable), less the blacklisted ones.
    """
    black = set(map(tuple, blacklist))
    banned = [{u for u in range(n) if (u, v) in black} for v in range(n)]
    every = [range(n) if allowed is None else sorted(allowed[v]) for v in range(n)]
    return [[u for u in every[v] if u != v and u not in banned[v]] for v in range(n)], banned


def _sets_of(v: int, pool: list, required: list, banned: set, starts, size: int) -> list:
    """Return ``v``'s candidate sets: the required parents with up to ``size`` of ``pool``, and the starts' sets."""
    extras = chain.from_iterable(combinations(pool, k) for k in range(max(size - len(required), 0) + 1))
    # Combinations of the sorted pool are sorted; with whitelisted parents, each set is sorted anew.
    chosen = {tuple(sorted(required + list(extra))) for extra in extras} if required else set(extras)
    chosen.update(tuple(sorted((set(start[v]) | set(required)) - banned)) for start in starts)
    return sorted(chosen)


def _search_cost(order, masks, scores, offsets, max_passes) -> float:
    """Estimated seconds of one pure-Python pass of :func:`_insertion_search` (a few passes usually suffice)."""
    n = order.size
    return 3e-6 * n * n * (offsets[-1] / max(n, 1)) * masks.shape[1] * 3


@compiled(nogil=True, fallback="python", cost=lambda *_: 1e-6)
def _best(v, predecessors, masks, offsets):  # pragma: no cover - compiled
    """Index of ``v``'s best candidate set inside ``predecessors`` (a mask), or -1."""
    for k in range(offsets[v], offsets[v + 1]):
        inside = True
        for w in range(masks.shape[1]):
            if masks[k, w] & ~predecessors[w]:
                inside = False
                break
        if inside:
            return k
    return -1


@compiled(nogil=True, fallback="python", cost=lambda *_: 1e-6)
def _value(k, scores):  # pragma: no cover - compiled
    return -np.inf if k < 0 else scores[k]


@compiled(nogil=True, fallback="python", cost=lambda *_: 1e-6)
def _prefixes(order, n_words):  # pragma: no cover - compiled
    """Return ``prefix[k]``: the mask of the variables before position ``k`` of ``order``."""
    n = order.size
    one = np.uint64(1)
    prefix = np.zeros((n + 1, n_words), np.uint64)
    for k in range(n):  # element loops, not slice assignments: those compile a slow error path
        for w in range(n_words):
            prefix[k + 1, w] = prefix[k, w]
        u = order[k]
        prefix[k + 1, u // 64] |= one << np.uint64(u % 64)
    return prefix


@compiled(nogil=True, fallback="python", cost=lambda *_: 1e-6)
def _best_insertion(order, i, v, prefix, current, masks, scores, offsets):  # pragma: no cover - compiled
    """Return the position that raises the order's score most when ``v`` (at ``i``) moves there, or -1."""
    n = order.size
    one = np.uint64(1)
    bit_word, bit = v // 64, one << np.uint64(v % 64)
    best_gain, best_position = _MIN_GAIN, -1
    # Later positions: v's predecessors grow by order[i+1..p]; each of those loses v.
    others = 0.0
    for p in range(i + 1, n):
        without = prefix[p].copy()
        without[bit_word] &= ~bit
        others += _value(_best(order[p], without, masks, offsets), scores) - current[p]
        mine = prefix[p + 1].copy()
        mine[bit_word] &= ~bit
        gain = others + _value(_best(v, mine, masks, offsets), scores) - current[i]
        if gain > best_gain + _TIE:  # ties (equal up to rounding) go to the first position
            best_gain, best_position = gain, p
    # Earlier positions: v's predecessors shrink to prefix[p]; order[p..i-1] gain v.
    others = 0.0
    for p in range(i - 1, -1, -1):
        with_v = prefix[p].copy()
        with_v[bit_word] |= bit
        others += _value(_best(order[p], with_v, masks, offsets), scores) - current[p]
        gain = others + _value(_best(v, prefix[p], masks, offsets), scores) - current[i]
        if gain > best_gain + _TIE:  # ties (equal up to rounding) go to the first position
            best_gain, best_position = gain, p
    return best_position


@compiled(nogil=True, fallback="python", cost=_search_cost)
def _insertion_search(order, masks, scores, offsets, max_passes):  # pragma: no cover - compiled
    """Move one variable at a time to the position that raises the order's score most, until none does."""
    n = order.size
    n_words = masks.shape[1]
    passes = 0
    improved = True
    while improved and passes < max_passes:
        improved = False
        passes += 1
        for v in range(n):
            i = 0
            while order[i] != v:
                i += 1
            prefix = _prefixes(order, n_words)
            current = np.empty(n)
            for k in range(n):
                current[k] = _value(_best(order[k], prefix[k], masks, offsets), scores)
            best_position = _best_insertion(order, i, v, prefix, current, masks, scores, offsets)
            if best_position >= 0:
                if best_position > i:
                    for k in range(i, best_position):
                        order[k] = order[k + 1]
                else:
                    for k in range(i, best_position, -1):
                        order[k] = order[k - 1]
                order[best_position] = v
                improved = True
    return passes


def order_search(candidates: CandidateSets, order, *, max_passes: int = 50) -> tuple:
    """Improve a variable order by insertion moves; return it with the best DAG consistent with it.

    Parameters
    ----------
    candidates : CandidateSets
    order : sequence of int
        A start order (e.g. a topological order of a DAG whose parent sets are among the candidates).
    max_passes : int, default=50
        Passes over all variables at most (each pass tries every variable at every position).

    Returns
    -------
    order : list of int
    parents : list of tuple of int
        Each variable's best candidate set among its predecessors in ``order``.
    """
    order = np.asarray(order, dtype=np.int64).copy()
    _insertion_search(order, candidates.masks, candidates.scores, candidates.offsets, max_passes)
    n = candidates.n_variables
    predecessors = np.zeros(candidates.n_words, dtype=np.uint64)
    parents: list = [()] * n
    for v in order:
        k = _best(int(v), predecessors, candidates.masks, candidates.offsets)
        parents[v] = candidates.parents(k) if k >= 0 else ()
        predecessors[v // 64] |= np.uint64(1) << np.uint64(v % 64)
    return order.tolist(), parents
