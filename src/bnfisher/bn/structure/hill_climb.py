"""Greedy hill climbing over DAGs with add / delete / reverse moves (as R bnlearn's ``hc``).

The search keeps, for every ordered pair ``(i, j)``, the score change of adding or
deleting the arc ``i -> j``; a move only rescores the children whose parent sets
changed (one column of the table each), and local scores are cached by family.
Acyclicity is checked against a maintained ancestor matrix, never by enumerating
paths.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from bnfisher._validation import check_random_state
from bnfisher.exceptions import ConvergenceWarning

__all__ = ["hill_climb"]

_ADD, _DELETE, _REVERSE = 0, 1, 2
#: Smallest score gain (nats) that counts as an improvement; guards against float noise.
_MIN_GAIN = 1e-9


def _closure(parents: list) -> np.ndarray:
    """``reach[a, b]``: a directed path a -> ... -> b exists (Warshall on a boolean matrix)."""
    n = len(parents)
    reach = np.zeros((n, n), dtype=bool)
    for j, ps in enumerate(parents):
        reach[list(ps), j] = True
    for k in range(n):
        reach |= reach[:, k : k + 1] & reach[k : k + 1, :]
    return reach


def _path_avoiding_arc(parents: list, source: int, target: int) -> bool:
    """Return whether a directed path source -> ... -> target exists that does not use the arc itself."""
    n = len(parents)
    children: list = [[] for _ in range(n)]
    for j, ps in enumerate(parents):
        for p in ps:
            if not (p == source and j == target):
                children[p].append(j)
    stack, seen = [source], {source}
    while stack:
        v = stack.pop()
        for c in children[v]:
            if c == target:
                return True
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return False


class _Search:
    def __init__(self, scorer, n, max_parents, whitelist, blacklist):
        self.scorer = scorer
        self.n = n
        self.max_parents = n if max_parents is None else max_parents
        self.whitelist = whitelist  # bool matrix: arc i -> j must stay
        self.blacklist = blacklist  # bool matrix: arc i -> j may never be added
        self.add_gain = np.full((n, n), -np.inf)
        self.delete_gain = np.full((n, n), -np.inf)

    def reset(self, parents: list) -> None:
        self.parents = [set(ps) for ps in parents]
        self.local = np.zeros(self.n)
        self.reach = _closure(self.parents)
        self.rescore_columns(range(self.n))

    @property
    def total(self) -> float:
        return float(self.local.sum())

    def rescore_columns(self, columns) -> None:
        """Rescore the add / delete gains of every arc into ``columns``: one batch of families for all of them."""
        families, layout = [], []
        for j in columns:
            ps = self.parents[j]
            others = [i for i in range(self.n) if i != j and i not in ps]
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

    def moves(self):
        """Gains of every legal move: (kind, gain matrix) with -inf where illegal."""
        n = self.n
        arcs = np.zeros((n, n), dtype=bool)
        for j, ps in enumerate(self.parents):
            arcs[list(ps), j] = True
        counts = arcs.sum(axis=0)
        # Adding i -> j: not present, no path j ~> i (that includes j -> i), not blacklisted, room for a parent.
        legal_add = ~arcs & ~self.reach.T & ~self.blacklist & (counts < self.max_parents)[None, :]
        np.fill_diagonal(legal_add, False)
        add = np.where(legal_add, self.add_gain, -np.inf)
        delete = np.where(arcs & ~self.whitelist, self.delete_gain, -np.inf)
        # Reversing i -> j: delete it from j, add j -> i; a cycle test follows for the chosen one.
        legal_reverse = arcs & ~self.whitelist & ~self.blacklist.T & (counts < self.max_parents)[:, None]
        reverse = np.where(legal_reverse, self.delete_gain + self.add_gain.T, -np.inf)
        return add, delete, reverse

    def best_move(self, tabu_check=None, minimum_gain=_MIN_GAIN, skip_neutral=False):
        """Return the legal move with the largest gain above ``minimum_gain``, or None.

        Equal gains go to the first in (kind, i, j) order (add < delete < reverse):
        a stable sort of the flattened gain table, so results are reproducible.
        """
        flat = np.stack(self.moves()).reshape(-1)
        # Gains equal up to 1e-6 nats are ties (score-equivalent moves, such as i -> j and
        # j -> i on the empty graph, differ only by rounding), so the stable sort's
        # (kind, i, j) order decides them, not floating-point noise.
        for position in np.argsort(-np.round(flat, 6), kind="stable"):
            gain = flat[position]
            if not gain > minimum_gain:  # also stops at -inf (illegal) entries
                break
            if skip_neutral and abs(gain) <= 1e-6:
                continue  # a covered-arc reversal: another member of the same equivalence class
            kind, i, j = (int(x) for x in np.unravel_index(position, (3, self.n, self.n)))
            if kind == _REVERSE and _path_avoiding_arc(self.parents, i, j):
                continue
            if tabu_check is not None and tabu_check(kind, i, j):
                continue
            return float(gain), kind, i, j
        return None

    def apply(self, kind: int, i: int, j: int) -> None:
        if kind == _ADD:
            self.parents[j].add(i)
            sources = np.flatnonzero(self.reach[:, i]).tolist() + [i]
            targets = np.flatnonzero(self.reach[j, :]).tolist() + [j]
            self.reach[np.ix_(sources, targets)] = True
            self.rescore_columns([j])
        elif kind == _DELETE:
            self.parents[j].discard(i)
            self.reach = _closure(self.parents)
            self.rescore_columns([j])
        else:
            self.parents[j].discard(i)
            self.parents[i].add(j)
            self.reach = _closure(self.parents)
            self.rescore_columns([j, i])

    def snapshot(self) -> tuple:
        return tuple(tuple(sorted(ps)) for ps in self.parents)


def _out_of_time(deadline, steps: int) -> bool:
    """Return True once ``deadline`` (monotonic time, and the bound it came from) has passed, warning with the bound."""
    if deadline is None or time.monotonic() < deadline[0]:
        return False
    warnings.warn(f"Hill climbing stopped at max_time={deadline[1]:g} s (after {steps} moves in this climb) with "
                  "improving moves possibly left; raise `max_time` (or pass None) for a better network.",
                  ConvergenceWarning, stacklevel=5)
    return True


def _climb(search: _Search, tabu: int, max_tabu: int, max_iter, progress_bar, deadline=None) -> tuple:
    best_total, best_structure = search.total, search.snapshot()
    if tabu <= 0:
        steps = 0
        while max_iter is None or steps < max_iter:
            if _out_of_time(deadline, steps):
                return search.total, search.snapshot()
            move = search.best_move()
            if move is None:
                break
            search.apply(*move[1:])
            steps += 1
            if progress_bar is not None:
                progress_bar.update(1)
                progress_bar.set_postfix(score=f"{search.total:.6g}")
        else:
            if search.best_move() is not None:
                warnings.warn(f"Hill climbing stopped after max_iter={max_iter} moves with improving moves left; "
                              "raise `max_iter` (or pass None).", ConvergenceWarning, stacklevel=4)
        return search.total, search.snapshot()
    # Tabu search (bnlearn's ``tabu``): take the best move not leading to a recently
    # visited structure even if it lowers the score; stop after `max_tabu` steps
    # without improving on the best structure seen.  Score-neutral moves (covered arc
    # reversals, which stay in the same equivalence class) are skipped, or the
    # tabu steps are spent walking inside one class.
    recent = [search.snapshot()]
    without_improvement = steps = 0
    while without_improvement < max_tabu and (max_iter is None or steps < max_iter):
        if _out_of_time(deadline, steps):
            break

        def leads_to_tabu(kind, i, j, recent=recent):
            structure = [set(ps) for ps in search.parents]
            if kind == _ADD:
                structure[j].add(i)
            elif kind == _DELETE:
                structure[j].discard(i)
            else:
                structure[j].discard(i)
                structure[i].add(j)
            return tuple(tuple(sorted(ps)) for ps in structure) in recent

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
        if progress_bar is not None:
            progress_bar.update(1)
            progress_bar.set_postfix(score=f"{best_total:.6g}")
    return best_total, best_structure


def hill_climb(scorer, n_variables: int, *, start=None, max_parents=None, tabu: int = 0, max_tabu=None,
               restarts: int = 0, perturb: int = 1, whitelist=(), blacklist=(), random_state=None,
               max_iter=None, progress: bool = False, deadline=None) -> list:
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

    Returns
    -------
    list of tuple
        Parent sets (sorted column indices).
    """
    n = n_variables
    white = np.zeros((n, n), dtype=bool)
    black = np.zeros((n, n), dtype=bool)
    for i, j in whitelist:
        white[i, j] = True
    for i, j in blacklist:
        black[i, j] = True
    parents = [set(ps) for ps in (start or [() for _ in range(n)])]
    for i, j in whitelist:
        parents[j].add(i)
    search = _Search(scorer, n, max_parents, white, black)
    search.reset([tuple(ps) for ps in parents])
    progress_bar = None
    if progress:
        from bnfisher._progress import progress_bar as make_bar

        progress_bar = make_bar(desc="hill climbing", unit="move", leave=False)
    try:
        best_total, best = _climb(search, tabu, max_tabu if max_tabu is not None else tabu, max_iter, progress_bar,
                                  deadline)
        rng = check_random_state(random_state)
        for _ in range(restarts):
            search.reset(list(best))
            for _ in range(perturb):
                add, delete, reverse = search.moves()
                legal = np.argwhere(np.isfinite(np.stack([add, delete, reverse])))
                if len(legal) == 0:
                    break
                kind, i, j = legal[rng.integers(len(legal))]
                if kind == _REVERSE and _path_avoiding_arc(search.parents, int(i), int(j)):
                    continue
                search.apply(int(kind), int(i), int(j))
            if deadline is not None and time.monotonic() >= deadline[0]:
                break
            total, structure = _climb(search, tabu, max_tabu if max_tabu is not None else tabu, max_iter,
                                      progress_bar, deadline)
            if total > best_total + _MIN_GAIN:
                best_total, best = total, structure
    finally:
        if progress_bar is not None:
            progress_bar.close()
    return [tuple(ps) for ps in best]
