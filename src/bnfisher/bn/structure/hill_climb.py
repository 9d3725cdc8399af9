"""Greedy hill climbing over DAGs with add / delete / reverse moves (as R bnlearn's ``hc``).

The search keeps, for every ordered pair ``(i, j)``, the score change of adding or
deleting the arc ``i -> j``; a move only rescores the children whose parent sets
changed (one column of the table each), and local scores are cached by family.
Acyclicity is checked against a maintained ancestor matrix, never by enumerating
paths.

Each variable's parents may be restricted to a list of candidates (the sparse
candidate idea of Friedman, Nachman & Pe'er 1999): only those arcs are scored and
scanned, so a step costs O(variables x candidates) instead of O(variables^2) -- the
bound that makes wide tables feasible.  The move scan and the ancestor matrix are
compiled loops (NumPy versions for small jobs, with the same results).

References
----------
.. [1] N. Friedman, I. Nachman and D. Pe'er, "Learning Bayesian network structure
   from massive datasets: the 'sparse candidate' algorithm", UAI 1999.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_random_state
from bnfisher.exceptions import ConvergenceWarning

__all__ = ["hill_climb", "screen_candidates"]

_ADD, _DELETE, _REVERSE = 0, 1, 2
#: Smallest score gain (nats) that counts as an improvement; guards against float noise.
_MIN_GAIN = 1e-9
#: Gains are compared rounded to multiples of 1 / _DECIMALS nats: gains equal up to 1e-6 are ties (score-equivalent
#: moves, such as i -> j and j -> i on the empty graph, differ only by rounding), decided by the (kind, i, j) order.
_DECIMALS = 1e6


def _allowed(candidates: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``allowed[i, j]``: ``i`` is a candidate parent of ``j`` (from the padded candidate lists)."""
    n = lengths.size
    allowed = np.zeros((n, n), dtype=bool)
    valid = np.arange(candidates.shape[1])[None, :] < lengths[:, None]
    allowed[candidates[valid], np.repeat(np.arange(n), lengths)] = True
    return allowed


def _move_tables(allowed, add_gain, delete_gain, arcs, reach, white, black, counts, max_parents) -> np.ndarray:
    """Gains of every legal move, shape (3, n, n) for (add, delete, reverse), -inf where illegal."""
    room = counts < max_parents
    # Adding i -> j: a candidate, not present, no path j ~> i (that includes j -> i), not blacklisted, room in j.
    add = np.where(allowed & ~arcs & ~reach.T & ~black & room[None, :], add_gain, -np.inf)
    delete = np.where(arcs & ~white, delete_gain, -np.inf)
    # Reversing i -> j: delete it from j, add j -> i; the cycle test (a path i ~> j without the arc) comes after.
    reverse = np.where(arcs & ~white & ~black.T & room[:, None], delete_gain + add_gain.T, -np.inf)
    return np.stack([add, delete, reverse])


def _numpy_best_move(candidates, lengths, add_gain, delete_gain, arcs, reach, white, black, counts, max_parents,
                     minimum, skip_neutral, excluded):
    """Return :func:`_best_move`'s move from the full tables of gains (its NumPy version, for small jobs)."""
    n = arcs.shape[0]
    flat = _move_tables(_allowed(candidates, lengths), add_gain, delete_gain, arcs, reach, white, black, counts,
                        max_parents).reshape(-1)
    usable = flat > minimum  # also drops -inf (illegal)
    if skip_neutral:
        usable &= np.abs(flat) > 1e-6
    usable[excluded] = False
    with np.errstate(invalid="ignore"):
        rounded = np.where(usable, np.rint(flat * _DECIMALS) / _DECIMALS, -np.inf)
    while True:
        position = int(np.argmax(rounded))  # the first of the largest: ties go to the (kind, i, j) order
        if not usable[position]:
            return -1, -1, -1, 0.0
        kind, i, j = (int(x) for x in np.unravel_index(position, (3, n, n)))
        if kind == _REVERSE and _reversal_closes_cycle(arcs, reach, i, j):
            usable[position], rounded[position] = False, -np.inf
            continue
        return kind, i, j, float(flat[position])


def _reversal_closes_cycle(arcs, reach, i: int, j: int) -> bool:
    """Return whether reversing ``i -> j`` closes a cycle: a child of ``i`` reaches ``j`` (``j`` itself does not)."""
    return bool(np.any(arcs[i] & reach[:, j]))


def _best_move_cost(candidates, *_args) -> float:
    """Estimated seconds of :func:`_numpy_best_move` (about 10 ns per table entry, 30 µs per call)."""
    return 3e-5 + 3e-8 * candidates.shape[0] ** 2


@compiled(nogil=True)
def _closes_cycle(arcs, reach, i, j):  # pragma: no cover - compiled
    """Return whether reversing ``i -> j`` closes a cycle: a child of ``i`` other than ``j`` reaches ``j``."""
    for c in range(arcs.shape[0]):
        if arcs[i, c] and reach[c, j]:
            return True
    return False


@compiled(nogil=True, fallback=_numpy_best_move, cost=_best_move_cost)
def _best_move(candidates, lengths, add_gain, delete_gain, arcs, reach, white, black, counts, max_parents,
               minimum, skip_neutral, excluded):  # pragma: no cover - compiled
    """Return the legal move with the largest gain above ``minimum``: ``(kind, i, j, gain)``, kind -1 when none.

    Only candidate arcs are visited (present arcs are always candidates).  Gains are
    compared rounded to 1e-6 nats; equal ones go to the first in (kind, i, j) order
    (add < delete < reverse).  A reversal ``i -> j`` is legal when no other path
    ``i ~> j`` exists (checked only for a reversal that would be the best so far).
    Moves whose flat position ``(kind * n + i) * n + j`` is in ``excluded`` are
    passed over, as are gains within 1e-6 of zero when ``skip_neutral``.  Column
    access: ``add_gain``, ``delete_gain``, ``arcs``, ``white`` and ``black`` are best
    in Fortran order, ``reach`` in C order.
    """
    n = arcs.shape[0]
    best_value, best_position, best_gain = -np.inf, -1, 0.0
    for j in range(n):
        room_j = counts[j] < max_parents
        for k in range(lengths[j]):
            i = candidates[j, k]
            # add i -> j: absent, no path j ~> i, not blacklisted, room in j; delete i -> j: present, not
            # whitelisted; reverse (delete i -> j, add j -> i): deletable, j -> i not blacklisted, room in i.
            # The tests are branch-free (&, ~): the three kinds in one pass, as (legal, gain) pairs.
            deletable = arcs[i, j] & ~white[i, j]
            legal = (~arcs[i, j] & ~reach[j, i] & ~black[i, j] & room_j, deletable,
                     deletable & ~black[j, i] & (counts[i] < max_parents))
            gains = (add_gain[i, j], delete_gain[i, j], delete_gain[i, j] + add_gain[j, i])
            for kind in range(3):
                gain = gains[kind]
                if not (legal[kind] and gain > minimum) or (skip_neutral and abs(gain) <= 1e-6):
                    continue
                position = (kind * n + i) * n + j
                value = np.rint(gain * _DECIMALS) / _DECIMALS
                if value < best_value or (value == best_value and position > best_position):
                    continue
                if np.any(excluded == position) or (kind == 2 and _closes_cycle(arcs, reach, i, j)):
                    continue
                best_value, best_position, best_gain = value, position, gain
    if best_position < 0:
        return -1, -1, -1, 0.0
    return best_position // (n * n), (best_position // n) % n, best_position % n, best_gain


def _numpy_reach(arcs):
    """Return :func:`_reach` by Warshall's algorithm on a boolean matrix (its NumPy version, for small jobs)."""
    reach = arcs.copy()
    for k in range(arcs.shape[0]):
        reach |= reach[:, k:k + 1] & reach[k:k + 1, :]
    return reach


@compiled(nogil=True, fallback=_numpy_reach, cost=lambda arcs: 1e-6 * arcs.shape[0] + 1e-9 * arcs.shape[0] ** 3)
def _reach(arcs):  # pragma: no cover - compiled
    """Return ``reach``: ``reach[a, b]`` when a path a -> ... -> b exists in the DAG ``arcs`` (sinks first)."""
    n = arcs.shape[0]
    waiting = np.zeros(n, np.int64)  # children not yet placed
    for a in range(n):
        for b in range(n):
            if arcs[a, b]:
                waiting[a] += 1
    order = np.empty(n, np.int64)
    placed = 0
    for a in range(n):
        if waiting[a] == 0:
            order[placed] = a
            placed += 1
    reach = np.zeros((n, n), np.bool_)
    for t in range(n):  # sinks first; a node is placed once all its children are
        b = order[t]
        for a in range(n):
            if arcs[a, b]:
                reach[a, b] = True
                for c in range(n):
                    if reach[b, c]:
                        reach[a, c] = True
                waiting[a] -= 1
                if waiting[a] == 0:
                    order[placed] = a
                    placed += 1
    return reach


class _Search:
    """The climb's state: parent sets, arcs, ancestors, and the gain of every candidate add and delete.

    Parameters
    ----------
    scorer : LocalScorer or ProviderScorer
    n : int
    max_parents : int or None
    whitelist, blacklist : ndarray of bool, shape (n, n)
        Arcs ``i -> j`` that must stay / may never be added.
    candidates : sequence of sequence of int, optional
        Each variable's candidate parents (default: every other variable); the arcs
        of the start and the whitelist must be among them.
    """

    def __init__(self, scorer, n, max_parents, whitelist, blacklist, candidates=None):
        self.scorer = scorer
        self.n = n
        self.max_parents = n if max_parents is None else max_parents
        if candidates is None:
            candidates = [[i for i in range(n) if i != j] for j in range(n)]
        self.candidate_lists = [sorted(set(map(int, c)) - {j}) for j, c in enumerate(candidates)]
        self.lengths = np.array([len(c) for c in self.candidate_lists], dtype=np.int64)
        self.candidates = np.zeros((n, max(int(self.lengths.max(initial=0)), 1)), dtype=np.int64)
        for j, c in enumerate(self.candidate_lists):
            self.candidates[j, :len(c)] = c
        # Column j holds the arcs into j: Fortran order keeps a column's entries together for the move scan.
        self.whitelist = np.asfortranarray(whitelist)
        self.blacklist = np.asfortranarray(blacklist)
        self.add_gain = np.full((n, n), -np.inf, order="F")
        self.delete_gain = np.full((n, n), -np.inf, order="F")

    def reset(self, parents: list) -> None:
        self.parents = [set(ps) for ps in parents]
        self.arcs = np.zeros((self.n, self.n), dtype=bool, order="F")
        for j, ps in enumerate(self.parents):
            self.arcs[list(ps), j] = True
        self.counts = self.arcs.sum(axis=0)
        self.local = np.zeros(self.n)
        self.reach = _reach(np.ascontiguousarray(self.arcs))
        self.rescore_columns(range(self.n))

    @property
    def total(self) -> float:
        return float(self.local.sum())

    def rescore_columns(self, columns) -> None:
        """Rescore the add / delete gains of every candidate arc into ``columns``: one batch of families for all."""
        families, layout = [], []
        for j in columns:
            ps = self.parents[j]
            others = [i for i in self.candidate_lists[j] if i not in ps]
            current = tuple(sorted(ps))
            families.append((j, current))
            families.extend((j, current + (i,)) for i in others)
            families.extend((j, tuple(p for p in current if p != i)) for i in current)
            layout.append((j, others, current))
        values = self.scorer.family_scores(families)
        first = 0
        for j, others, current in layout:
            self.local[j] = values[first]
            self.add_gain[:, j] = -np.inf
            self.delete_gain[:, j] = -np.inf
            self.add_gain[others, j] = values[first + 1:first + 1 + len(others)] - self.local[j]
            first += 1 + len(others)
            self.delete_gain[list(current), j] = values[first:first + len(current)] - self.local[j]
            first += len(current)

    def moves(self) -> np.ndarray:
        """Gains of every legal move, shape (3, n, n) for (add, delete, reverse), with -inf where illegal."""
        return _move_tables(_allowed(self.candidates, self.lengths), self.add_gain, self.delete_gain, self.arcs,
                            self.reach, self.whitelist, self.blacklist, self.counts, self.max_parents)

    def creates_cycle(self, i: int, j: int) -> bool:
        """Return whether reversing the arc ``i -> j`` closes a cycle: a path ``i ~> j`` not using the arc."""
        return _reversal_closes_cycle(self.arcs, self.reach, i, j)

    def best_move(self, tabu_check=None, minimum_gain=_MIN_GAIN, skip_neutral=False):
        """Return the legal move with the largest gain above ``minimum_gain``, or None.

        Equal gains (rounded to 1e-6 nats) go to the first in (kind, i, j) order
        (add < delete < reverse), so results are reproducible.  A move
        ``tabu_check(kind, i, j)`` rejects is passed over for the next best.
        """
        excluded: list = []
        while True:
            kind, i, j, gain = _best_move(self.candidates, self.lengths, self.add_gain, self.delete_gain,
                                          self.arcs, self.reach, self.whitelist, self.blacklist, self.counts,
                                          self.max_parents, minimum_gain, skip_neutral,
                                          np.asarray(excluded, dtype=np.int64))
            if kind < 0:
                return None
            if tabu_check is not None and tabu_check(kind, i, j):
                excluded.append((kind * self.n + i) * self.n + j)
                continue
            return float(gain), int(kind), int(i), int(j)

    def apply(self, kind: int, i: int, j: int) -> None:
        if kind == _ADD:
            self.parents[j].add(i)
            self.arcs[i, j] = True
            self.counts[j] += 1
            sources = np.append(np.flatnonzero(self.reach[:, i]), i)
            targets = np.append(np.flatnonzero(self.reach[j, :]), j)
            self.reach[np.ix_(sources, targets)] = True
            self.rescore_columns([j])
            return
        self.parents[j].discard(i)
        self.arcs[i, j] = False
        self.counts[j] -= 1
        if kind == _REVERSE:
            self.parents[i].add(j)
            self.arcs[j, i] = True
            self.counts[i] += 1
        self.reach = _reach(np.ascontiguousarray(self.arcs))
        self.rescore_columns([j] if kind == _DELETE else [j, i])

    def snapshot(self) -> tuple:
        return tuple(tuple(sorted(ps)) for ps in self.parents)


def screen_candidates(scorer, n_variables: int, limit: int, *, blacklist=()) -> list:
    """Each variable's ``limit`` best single parents by score gain: the candidates of a sparse climb ([1]_).

    Parameters
    ----------
    scorer : LocalScorer or ProviderScorer
    n_variables : int
    limit : int
        Candidates kept per variable (all others when fewer remain).
    blacklist : iterable of (i, j)
        Arcs that may never appear: never candidates.

    Returns
    -------
    list of list of int
        Sorted candidate parents of each variable.  Equal gains go to the lower index.
    """
    pairs = scorer.pair_scores()
    gains = pairs - np.diag(pairs)[None, :]  # [u, v]: the gain of u as v's only parent
    np.fill_diagonal(gains, -np.inf)
    for i, j in blacklist:
        gains[i, j] = -np.inf
    out = []
    for v in range(n_variables):
        ranked = np.argsort(-gains[:, v], kind="stable")[:limit]
        out.append(sorted(int(u) for u in ranked if np.isfinite(gains[u, v])))
    return out


def _out_of_time(deadline, steps: int) -> bool:
    """Return True once ``deadline`` (monotonic time, and the bound it came from) has passed, warning with the bound."""
    if deadline is None or time.monotonic() < deadline[0]:
        return False
    warnings.warn(f"Hill climbing stopped at max_time={deadline[1]:g} s (after {steps} moves in this climb) with "
                  "improving moves possibly left; raise `max_time` (or pass None) for a better network.",
                  ConvergenceWarning, stacklevel=5)
    return True


def _climb(search: _Search, tabu: int, max_tabu: int, max_iter, progress_bar, deadline=None) -> tuple:
    """Climb from the search's structure; return the best total and structure (plain, or tabu with ``tabu > 0``)."""
    if tabu > 0:
        return _tabu_climb(search, tabu, max_tabu, max_iter, progress_bar, deadline)
    steps = 0
    while max_iter is None or steps < max_iter:
        if _out_of_time(deadline, steps):
            return search.total, search.snapshot()
        move = search.best_move()
        if move is None:
            break
        search.apply(*move[1:])
        steps += 1
        _show(progress_bar, search.total)
    else:
        if search.best_move() is not None:
            warnings.warn(f"Hill climbing stopped after max_iter={max_iter} moves with improving moves left; "
                          "raise `max_iter` (or pass None).", ConvergenceWarning, stacklevel=4)
    return search.total, search.snapshot()


def _show(progress_bar, score: float) -> None:
    """Count one move on the progress bar (if any), showing the score."""
    if progress_bar is not None:
        progress_bar.update(1)
        progress_bar.set_postfix(score=f"{score:.6g}")


def _moved(parents, kind: int, i: int, j: int) -> tuple:
    """Return the structure (sorted parent tuples) after the move ``(kind, i, j)``."""
    structure = [set(ps) for ps in parents]
    if kind == _ADD:
        structure[j].add(i)
    elif kind == _DELETE:
        structure[j].discard(i)
    else:
        structure[j].discard(i)
        structure[i].add(j)
    return tuple(tuple(sorted(ps)) for ps in structure)


def _tabu_climb(search: _Search, tabu: int, max_tabu: int, max_iter, progress_bar, deadline) -> tuple:
    """Climb by tabu search (bnlearn's ``tabu``); return the best total and structure seen.

    Each step takes the best move not leading to a recently visited structure, even if it lowers the score; the
    search stops after ``max_tabu`` steps without improving on the best structure seen.  Score-neutral moves
    (covered arc reversals, which stay in the same equivalence class) are skipped, or the tabu steps are spent
    walking inside one class.
    """
    best_total, best_structure = search.total, search.snapshot()
    recent = [search.snapshot()]
    without_improvement = steps = 0
    while without_improvement < max_tabu and (max_iter is None or steps < max_iter):
        if _out_of_time(deadline, steps):
            break
        def leads_to_tabu(kind, i, j, recent=recent):
            return _moved(search.parents, kind, i, j) in recent

        move = search.best_move(tabu_check=leads_to_tabu, minimum_gain=-np.inf, skip_neutral=True)
        if move is None:
            break
        search.apply(*move[1:])
        steps += 1
        recent = (recent + [search.snapshot()])[-tabu:]
        if search.total > best_total + _MIN_GAIN:
            best_total, best_structure = search.total, search.snapshot()
            without_improvement = 0
        else:
            without_improvement += 1
        _show(progress_bar, best_total)
    return best_total, best_structure


def _perturb(search: _Search, best, perturb: int, rng) -> None:
    """Reset the search to ``best`` and make ``perturb`` random legal moves (a random restart's start)."""
    search.reset(list(best))
    for _ in range(perturb):
        legal = np.argwhere(np.isfinite(search.moves()))
        if len(legal) == 0:
            break
        kind, i, j = legal[rng.integers(len(legal))]
        if kind == _REVERSE and search.creates_cycle(int(i), int(j)):
            continue
        search.apply(int(kind), int(i), int(j))


def _arc_masks(n: int, arcs) -> np.ndarray:
    """Return the ``(n, n)`` mask of the arcs ``(i, j)``."""
    mask = np.zeros((n, n), dtype=bool)
    for i, j in arcs:
        mask[i, j] = True
    return mask


def _climbs(search, climb: tuple, *, restarts: int, perturb: int, rng) -> list:
    """Return the best structure of a climb and of ``restarts`` climbs from perturbations of the best so far.

    ``climb`` holds ``_climb``'s arguments after the search: tabu, max_tabu, max_iter, bar, deadline.
    """
    deadline = climb[-1]
    best_total, best = _climb(search, *climb)
    for _ in range(restarts):
        _perturb(search, best, perturb, rng)
        if deadline is not None and time.monotonic() >= deadline[0]:
            break
        total, structure = _climb(search, *climb)
        if total > best_total + _MIN_GAIN:
            best_total, best = total, structure
    return best


def hill_climb(scorer, n_variables: int, *, start=None, max_parents=None, tabu: int = 0, max_tabu=None,
               restarts: int = 0, perturb: int = 1, whitelist=(), blacklist=(), random_state=None,
               max_iter=None, progress: bool = False, deadline=None, candidates=None) -> list:
    """Hill climbing on a decomposable score (private engine of ``learn(structure="hc")``).

    Parameters
    ----------
    scorer : LocalScorer
    n_variables : int
    start : list of tuple, optional
        Initial parent sets (column indices); default the empty graph.
    max_parents : int, optional
    tabu, max_tabu : int
        Tabu list length and the number of non-improving steps allowed (bnlearn's
        ``tabu`` and ``max.tabu``); ``tabu=0`` is plain hill climbing.
    restarts, perturb : int
        Random restarts, each perturbing the best structure by ``perturb`` random
        legal moves before climbing again.
    whitelist, blacklist : iterable of (i, j)
        Arcs that must stay / may never appear.
    random_state : None, int or Generator
    max_iter : int, optional
    progress : bool
        Show a tqdm bar of the moves.
    deadline : tuple of (float, float), optional
        ``(time.monotonic() to stop at, max_time it came from)``: the climb stops there,
        with a ConvergenceWarning naming ``max_time``.
    candidates : sequence of sequence of int, optional
        Each variable's candidate parents (default: every other variable); the
        parents of ``start`` and the whitelist are added to them.

    Returns
    -------
    list of tuple
        Parent sets (sorted column indices).
    """
    n = n_variables
    white, black = _arc_masks(n, whitelist), _arc_masks(n, blacklist)
    parents = [set(ps) for ps in (start or [() for _ in range(n)])]
    for i, j in whitelist:
        parents[j].add(i)
    if candidates is not None:
        candidates = [set(c) | parents[j] for j, c in enumerate(candidates)]
    search = _Search(scorer, n, max_parents, white, black, candidates)
    search.reset([tuple(ps) for ps in parents])
    bar = progress_bar(desc="hill climbing", unit="move", leave=False) if progress else None
    max_tabu = max_tabu if max_tabu is not None else tabu
    try:
        best = _climbs(search, (tabu, max_tabu, max_iter, bar, deadline), restarts=restarts, perturb=perturb,
                       rng=check_random_state(random_state))
    finally:
        if bar is not None:
            bar.close()
    return [tuple(ps) for ps in best]
