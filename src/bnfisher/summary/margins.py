r"""Representative by what a user checks: each column's labels and each pair's, kept near the table's by a swap search.

Algorithm 1 minimises the Fisher-kernel MMD (eq. 10), which weighs a family's cell by
``1 / theta``: rare cells dominate it, and a small subset buys them at the expense of common
labels, so per column and per pair of columns it can be farther from the table than MMD-critic's
prototypes.  :func:`refine_margins` starts from Algorithm 1's subset and swaps rows to lower

.. math:: L(S) = \frac{1}{2k} \Big( \frac{1}{d} \sum_{j} \sum_v |n_{jv}(S) - k\,p_{jv}|
          + \frac{1}{P} \sum_{(a, b)} \sum_{u, v} |n_{ab,uv}(S) - k\,p_{ab,uv}| \Big),

the mean total-variation distance of the subset's label counts ``n`` to ``k`` times the table's
shares ``p`` over the ``d`` columns and ``P`` pairs of columns (a missing cell counts as a label
of its own, so the subset keeps each column's share of them), while the Fisher MMD² stays
within ``slack`` times Algorithm 1's: every swap it makes keeps both, so the result is at least
as close as Algorithm 1's per column and per pair by ``L`` and at most ``slack`` times farther by
the MMD.  A swap is scored for every candidate row at once from the count tables (``O(N (d + P))``
per position); the pairs are the network's arcs, then others in a seeded order up to
:data:`MAX_PAIRS`.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.numeric import hypergeometric_log_pmf
from bnfisher._utils.validation import check_random_state

__all__ = ["MAX_PAIRS", "SHARE_BLOCK_CELLS", "RESTARTS", "RESTART_SHARE", "RESTART_WORK", "MarginCounts",
           "MarginRefinement", "margin_pairs", "common_labels", "refine_margins", "restore_labels"]

#: Pairs of columns whose joint labels the search keeps, at most (the network's arcs first).
MAX_PAIRS = 300

#: Cells counted at a time by :meth:`MarginCounts.shares` (2^22: tens of MB of int64 tables, whatever the width).
SHARE_BLOCK_CELLS = 1 << 22


def margin_pairs(n_columns: int, arcs, *, max_pairs: int = MAX_PAIRS, random_state=None) -> list:
    """Return the pairs of columns to keep: every pair when there are at most ``max_pairs``, else the arcs first.

    Parameters
    ----------
    n_columns : int
    arcs : iterable of (int, int)
        Pairs that come first (the network's parent-child arcs).
    max_pairs : int, default=MAX_PAIRS
    random_state : None, int or Generator
        Orders the other pairs when not all fit.

    Returns
    -------
    list of (int, int)
        Each with ``a < b``.

    Examples
    --------
    >>> margin_pairs(3, [(2, 0)])
    [(0, 1), (0, 2), (1, 2)]
    >>> margin_pairs(40, [(5, 1)], max_pairs=3, random_state=0)[0]
    (1, 5)
    """
    every = [(a, b) for a in range(n_columns) for b in range(a + 1, n_columns)]
    if len(every) <= max_pairs:
        return every
    first = list(dict.fromkeys(tuple(sorted(arc)) for arc in arcs))[:max_pairs]
    taken = set(first)
    others = [pair for pair in every if pair not in taken]
    order = check_random_state(random_state).permutation(len(others))[: max_pairs - len(first)]
    return first + [others[i] for i in np.sort(order)]


def _numpy_row_sums(gain: np.ndarray, cells: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[i] = sum_j gain[cells[i, j]]`` with NumPy (an (m, g) temporary)."""
    np.sum(gain[cells], axis=1, out=out)
    return out


def _row_sums_cost(gain: np.ndarray, cells: np.ndarray, out: np.ndarray) -> float:
    """Return the NumPy version's estimated seconds (about 5 ns a gathered cell)."""
    return 5e-9 * cells.size


@compiled(nogil=True, fallback=_numpy_row_sums, cost=_row_sums_cost)
def _row_sums(gain, cells, out):  # pragma: no cover - compiled
    """Set ``out[i] = sum_j gain[cells[i, j]]`` in one pass, without the (m, g) temporary.

    3.8-7.5 times NumPy's on 4,000-20,000 rows of 45-153 cells (``benchmarks/selection.py --only margins``,
    2026-11-29).
    """
    for i in range(cells.shape[0]):
        total = 0.0
        for j in range(cells.shape[1]):
            total += gain[cells[i, j]]
        out[i] = total
    return out


def _gains(weights: np.ndarray, counts: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Return what adding one row to each cell changes ``2 k L``: ``|n + 1 - t| - |n - t|``, weighted."""
    return weights * (np.abs(counts + 1.0 - target) - np.abs(counts - target))


@dataclass
class MarginCounts:
    """The label counts of every column and chosen pair of columns, as one flat table of *cells*.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
        The rows a subset is chosen among; -1 is a missing cell (counted as a label of its own).
    cardinalities : sequence of int
        States per column.
    pairs : list of (int, int)
    target_codes : ndarray of int, optional
        The rows whose cells' shares the subset approaches (the whole table when ``codes`` is a pool of it);
        default ``codes``.

    Attributes
    ----------
    cells : ndarray of int32, shape (n_rows, n_columns + n_pairs)
        Each row's cell in every column and pair (offsets included).
    target : ndarray of float, shape (n_cells,)
        The cells' shares among ``target_codes`` (:meth:`shares`).
    weights : ndarray of float, shape (n_cells,)
        ``1 / d`` for a column's cell, ``1 / P`` for a pair's.

    Examples
    --------
    >>> import numpy as np
    >>> margins = MarginCounts(np.array([[0, 1], [1, 1], [1, 0], [0, 0]]), (2, 2), [(0, 1)])
    >>> margins.distance(np.array([0, 2])), margins.distance(np.array([0, 1]))  # mean column TV + pair TV
    (0.5, 0.75)
    """

    codes: np.ndarray
    cardinalities: tuple
    pairs: list
    target_codes: InitVar[np.ndarray | None] = None
    target: np.ndarray = field(init=False, repr=False)
    cells: np.ndarray = field(init=False, repr=False)
    weights: np.ndarray = field(init=False, repr=False)

    def __post_init__(self, target_codes: np.ndarray | None) -> None:
        sizes = [int(r) + 1 for r in self.cardinalities]  # state s at s + 1, a missing cell at 0
        widths = sizes + [sizes[a] * sizes[b] for a, b in self.pairs]
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        self.cells = self.cells_of(self.codes)
        groups = np.array([1.0 / max(len(sizes), 1)] * len(sizes) + [1.0 / max(len(self.pairs), 1)] * len(self.pairs))
        self.weights = np.repeat(groups, widths)
        self.target = self.shares(self.codes if target_codes is None else target_codes)

    def cells_of(self, codes: np.ndarray) -> np.ndarray:
        """Return the cells of rows ``codes`` in every column and pair.

        Parameters
        ----------
        codes : ndarray of int, shape (n, n_columns)

        Returns
        -------
        ndarray of int32, shape (n, n_columns + n_pairs)
        """
        shifted = codes.astype(np.int64) + 1
        sizes = np.asarray(self.cardinalities, dtype=np.int64) + 1
        parts = [shifted] + ([np.column_stack([shifted[:, a] * sizes[b] + shifted[:, b] for a, b in self.pairs])]
                             if self.pairs else [])
        return (np.hstack(parts) + self.offsets[:-1]).astype(np.int32)

    def shares(self, codes: np.ndarray, *, block: int | None = None) -> np.ndarray:
        """Return every cell's share among rows ``codes`` (in blocks of rows: never the whole cell table at once).

        Parameters
        ----------
        codes : ndarray of int, shape (n, n_columns)
        block : int, optional
            Rows counted at a time. Default: as many as hold :data:`SHARE_BLOCK_CELLS` cells (each row has one
            per column and per pair; their int64 table and its copies are a few times 8 bytes a cell).

        Returns
        -------
        ndarray of float, shape (n_cells,)
        """
        width = len(self.cardinalities) + len(self.pairs)
        block = max(1024, SHARE_BLOCK_CELLS // max(width, 1)) if block is None else block
        total = np.zeros(int(self.offsets[-1]))
        for start in range(0, codes.shape[0], block):
            total += np.bincount(self.cells_of(codes[start:start + block]).ravel(), minlength=total.size)
        return total / max(codes.shape[0], 1)

    def parts(self, subset: np.ndarray) -> tuple:
        """Return ``L_c`` and ``L_p``: the mean TV distance over the columns and over the pairs (missing: a label).

        Parameters
        ----------
        subset : ndarray of int
            Row positions.

        Returns
        -------
        tuple of (float, float)
            Their sum is :meth:`distance`.
        """
        return self._parts(self.cells[subset])

    def parts_of(self, codes: np.ndarray) -> tuple:
        """Return :meth:`parts` for rows given by their codes (rows that need not be among ``self.codes``).

        Parameters
        ----------
        codes : ndarray of int, shape (k, n_columns)

        Returns
        -------
        tuple of (float, float)
        """
        return self._parts(self.cells_of(codes))

    def _parts(self, cells: np.ndarray) -> tuple:
        k = cells.shape[0]
        counts = np.bincount(cells.ravel(), minlength=self.weights.size)
        terms = self.weights * np.abs(counts - k * np.asarray(self.target)) / (2 * k)
        split = int(self.offsets[len(self.cardinalities)])
        return float(terms[:split].sum()), float(terms[split:].sum())

    def distance(self, subset: np.ndarray) -> float:
        """Return ``L(S)``: the mean TV distance over columns plus that over pairs (missing cells as labels).

        Parameters
        ----------
        subset : ndarray of int
            Row positions.

        Returns
        -------
        float
        """
        return sum(self.parts(subset))


@dataclass(frozen=True)
class MarginRefinement:
    """What :func:`refine_margins` did.

    Attributes
    ----------
    indices : ndarray of int
        The subset after the search (row positions, sorted).
    distance : tuple of (float, float)
        ``L`` of the start and of the result.
    mmd2 : tuple of (float, float)
        The Fisher MMD² of the start and of the result.
    cap : float
        The most MMD² the search allowed.
    swaps : int
        The swaps on the way from the start to the result (a restart's count only when its subset is kept).
    """

    indices: np.ndarray
    distance: tuple
    mmd2: tuple
    cap: float
    swaps: int


class _SwapSearch:
    """A swap search's state: the subset, its cells' counts, its Fisher MMD², and the rows that may enter."""

    def __init__(self, margins: MarginCounts, start: np.ndarray, criterion, allowed: np.ndarray | None):
        self.margins, self.criterion, self.inverse = margins, criterion, criterion.inverse
        self.target = np.asarray(margins.target) * start.size
        self.candidates = np.flatnonzero(allowed) if allowed is not None else np.arange(margins.cells.shape[0])
        self.candidate_cells = margins.cells[self.candidates]  # scored at every position: gathered once
        self.candidate_units = self.inverse[self.candidates]
        self.subset = np.array(start, dtype=np.intp)
        self.current = criterion.start(self.inverse[self.subset])
        self.cap = np.inf
        self._count()

    def _count(self) -> None:
        cells = self.margins.cells
        self.counts = np.bincount(cells[self.subset].ravel(), minlength=self.margins.weights.size).astype(np.float64)
        self.member = np.zeros(cells.shape[0], dtype=bool)
        self.member[self.subset] = True

    def reset(self, subset: np.ndarray) -> None:
        """Return to ``subset`` (the criterion's state recomputed)."""
        self.subset = np.array(subset, dtype=np.intp)
        self.current = self.criterion.refresh(self.inverse[self.subset])
        self._count()

    def _swap(self, position: int, best: int, mmd_after: np.ndarray) -> None:
        """Put candidate ``best`` in the subset at ``position`` (the row there already taken out of the counts)."""
        row, chosen = self.subset[position], int(self.candidates[best])
        self.criterion.swap(int(self.inverse[row]), int(self.inverse[chosen]))
        self.current = float(mmd_after[best])
        self.member[row], self.member[chosen] = False, True
        self.subset[position] = chosen
        self.counts[self.margins.cells[chosen]] += 1.0

    def _scores(self, position: int) -> tuple:
        """Take ``position``'s row out of the counts, return each candidate's change of ``2 k L``, and the stay's."""
        cells = self.margins.cells
        row = self.subset[position]
        self.counts[cells[row]] -= 1.0
        gain = _gains(self.margins.weights, self.counts, self.target)
        change = _row_sums(gain, self.candidate_cells, np.empty(self.candidates.size))
        change[self.member[self.candidates]] = np.inf
        return change, gain[cells[row]].sum()

    def _mmd_after(self, position: int) -> np.ndarray:
        """Return each candidate's Fisher MMD² after it replaces the row at ``position``."""
        return self.criterion.candidates(self.current, int(self.inverse[self.subset[position]]))[self.candidate_units]

    def sweep(self) -> int:
        """Try every position once: the swap that lowers ``L`` most within the cap; return the swaps made."""
        swapped = 0
        for position in range(self.subset.size):
            change, stay = self._scores(position)
            if change.min() < stay - 1e-12:  # else no row would bring the margins nearer: no MMD to compute
                mmd_after = self._mmd_after(position)
                change[mmd_after > self.cap] = np.inf
                best = int(np.argmin(change))
                if change[best] < stay - 1e-12:
                    self._swap(position, best, mmd_after)
                    swapped += 1
                    continue
            self.counts[self.margins.cells[self.subset[position]]] += 1.0
        self.current = self.criterion.refresh(self.inverse[self.subset])
        return swapped

    def descend(self, max_sweeps: int, tol: float) -> tuple:
        """Sweep until a sweep swaps nothing, lowers ``L`` by less than ``tol`` of it, or ``max_sweeps``.

        Returns the swaps made and the sweeps run.
        """
        swaps = sweeps = 0
        while sweeps < max_sweeps:
            before = self.margins.distance(self.subset)
            swapped = self.sweep()
            swaps, sweeps = swaps + swapped, sweeps + 1
            if not swapped or self.margins.distance(self.subset) > (1.0 - tol) * before:
                break
        return swaps, sweeps

    def perturb(self, positions: np.ndarray, rng: np.random.Generator) -> int:
        """Replace the rows at ``positions``, each by a uniformly random row that keeps the MMD² within the cap.

        Returns the rows replaced (a position with no such row keeps its own).
        """
        replaced = 0
        for position in positions:
            self._scores(position)
            mmd_after = self._mmd_after(position)
            feasible = np.flatnonzero((mmd_after <= self.cap) & ~self.member[self.candidates])
            if feasible.size:
                self._swap(position, int(rng.choice(feasible)), mmd_after)
                replaced += 1
            else:
                self.counts[self.margins.cells[self.subset[position]]] += 1.0
        self.current = self.criterion.refresh(self.inverse[self.subset])
        return replaced


#: Restarts of the swap search after its first descent (a share of the subset's rows replaced at random within the
#: cap, then another descent; the lowest ``L`` kept): one-row swaps stop at a local optimum of ``L``.
RESTARTS = 8

#: The share of the subset's rows a restart replaces (at least two rows).
RESTART_SHARE = 0.25

#: The restarts' sweeps, together, gather at most this many cells (a sweep gathers the candidates' cells once per
#: position): all :data:`RESTARTS` on tables of a few thousand rows, none where one sweep gathers more.
RESTART_WORK = 25_000_000


def refine_margins(margins: MarginCounts, start: np.ndarray, criterion, *, slack: float = 1.45,
                   allowed: np.ndarray | None = None, max_sweeps: int = 20, tol: float = 0.0,
                   restarts: int = 0, random_state=None) -> MarginRefinement:
    """Swap rows of ``start`` to lower ``L`` while the MMD² stays within ``slack`` times the start's.

    The search sweeps the subset's positions, each time making the one-row swap that lowers ``L``
    most while the MMD² stays within the cap, until a sweep makes none. One-row swaps stop at a
    local optimum: each of ``restarts`` then replaces a random :data:`RESTART_SHARE` of the rows, each
    by a random row within the cap, and descends again (iterated local search, Lourenço, Martin &
    Stützle 2003); the subset of lowest ``L`` is kept, so the result is never farther than the
    first descent's.

    Parameters
    ----------
    margins : MarginCounts
        On the same rows as ``criterion``.
    start : ndarray of int
        Row positions (Algorithm 1's subset).
    criterion : MMDCriterion
        The Fisher MMD² of a subset (on units: ``criterion.inverse`` maps rows to them).
    slack : float, default=1.45
    allowed : ndarray of bool, optional
        Rows that may enter (default: every row).
    max_sweeps : int, default=20
        Sweeps of one descent, at most.
    tol : float, default=0.0
        Stop a descent after a sweep that lowers ``L`` by less than this share of its value (0: until a
        sweep makes no swap, or ``max_sweeps``).
    restarts : int, default=0
        At most; their sweeps, together, gather at most :data:`RESTART_WORK` cells.
    random_state : None, int or Generator
        Draws the restarts' rows.

    Returns
    -------
    MarginRefinement

    Examples
    --------
    >>> from bnfisher.summary import MMDCriterion
    >>> kernel = bf.FisherKernel(network)
    >>> encoded = kernel.encode(data)
    >>> criterion = MMDCriterion(kernel, encoded)
    >>> margins = MarginCounts(encoded.codes, encoded.cardinalities, margin_pairs(encoded.codes.shape[1], []))
    >>> start = np.arange(0, 640, 40)
    >>> found = refine_margins(margins, start, criterion, restarts=2, random_state=0)
    >>> found.distance[1] <= found.distance[0], found.mmd2[1] <= 1.45 * found.mmd2[0]
    (True, True)
    """
    rng = check_random_state(random_state)
    search = _SwapSearch(margins, np.asarray(start), criterion, allowed)
    first_mmd, first_distance = search.current, margins.distance(search.subset)
    search.cap = slack * first_mmd
    swaps, _ = search.descend(max_sweeps, tol)
    budget = RESTART_WORK // max(search.candidate_cells.size * search.subset.size, 1)  # the restarts' sweeps
    best, best_distance = search.subset.copy(), margins.distance(search.subset)
    replaced = max(2, int(round(RESTART_SHARE * best.size)))
    for _ in range(restarts if best.size > replaced else 0):
        if budget <= 0:
            break
        moved = search.perturb(rng.choice(best.size, size=replaced, replace=False), rng)
        swapped, sweeps = search.descend(min(max_sweeps, budget), tol)
        budget -= sweeps
        distance = margins.distance(search.subset)
        if distance < best_distance - 1e-12:  # kept: its swaps lead to the result
            best, best_distance, swaps = search.subset.copy(), distance, swaps + moved + swapped
        else:
            search.reset(best)  # so the search (and the criterion's state) ends at ``best``
    return MarginRefinement(indices=np.sort(best), distance=(first_distance, best_distance),
                            mmd2=(first_mmd, search.current), cap=search.cap, swaps=swaps)


def common_labels(codes: np.ndarray, cardinalities, k: int, *, share: float = 0.05, chance: float = 0.1) -> list:
    """Return the labels a subset of ``k`` rows should hold: common, and rarely missed by random subsets of its size.

    A label is listed when it holds at least ``share`` of its column's observed cells and a
    uniform random subset of ``k`` rows lacks it with probability below ``chance``
    (hypergeometric: ``C(N - c, k) / C(N, k)`` for ``c`` of the ``N`` rows holding it).

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
    cardinalities : sequence of int
    k : int
    share, chance : float

    Returns
    -------
    list of (int, int)
        ``(column, code)``.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0]] * 90 + [[1]] * 6 + [[2]] * 4)
    >>> common_labels(codes, [3], 50)  # label 2 holds 4% of the column: not common
    [(0, 0), (0, 1)]
    """
    n = codes.shape[0]
    out = []
    for column, size in enumerate(cardinalities):
        counts = np.bincount(codes[:, column][codes[:, column] >= 0], minlength=int(size))
        observed = max(int(counts.sum()), 1)
        for code in np.flatnonzero(counts >= share * observed):
            c = int(counts[code])
            lacked = float(np.exp(hypergeometric_log_pmf(0.0, n, c, k))) if n - c >= k else 0.0
            if lacked < chance:
                out.append((column, int(code)))
    return out


def restore_labels(margins: MarginCounts, subset: np.ndarray, criterion, labels: list, *, ceiling: float,
                   allowed: np.ndarray | None = None) -> tuple:
    """Bring back each label of ``labels`` the subset lacks, by the swap that keeps ``L`` lowest within ``ceiling``.

    A swap never takes out the last row holding another of ``labels``, and keeps the MMD² at
    most ``ceiling``; a label no such swap brings back stays missing.

    Parameters
    ----------
    margins : MarginCounts
    subset : ndarray of int
        Row positions.
    criterion : MMDCriterion
    labels : list of (int, int)
        ``(column, code)`` of the labels the subset should hold.
    ceiling : float
        The most MMD² a swap may leave.
    allowed : ndarray of bool, optional
        Rows that may enter.

    Returns
    -------
    subset : ndarray of int
        Sorted.
    restored, missing : list of (int, int)
    """
    codes, cells, weights, inverse = margins.codes, margins.cells, margins.weights, criterion.inverse
    subset = np.array(subset, dtype=np.intp)
    target = np.asarray(margins.target) * subset.size
    current = criterion.start(inverse[subset])
    restored, missing = [], []
    for column, code in labels:
        if (codes[subset, column] == code).any():
            continue
        holders = np.flatnonzero((codes[:, column] == code) & (True if allowed is None else allowed))
        holders = holders[~np.isin(holders, subset)]
        best = (np.inf, -1, -1, 0.0)  # (L change, position, holder, MMD² after)
        counts = np.bincount(cells[subset].ravel(), minlength=weights.size).astype(np.float64)
        for position, row in enumerate(subset):
            if holders.size == 0 or any(codes[row, c] == v and (codes[subset, c] == v).sum() == 1 for c, v in labels):
                continue  # the last row of another label stays
            after = criterion.candidates(current, int(inverse[row]))[inverse[holders]]
            counts[cells[row]] -= 1.0
            gain = _gains(weights, counts, target)
            change = _row_sums(gain, cells[holders], np.empty(holders.size)) - gain[cells[row]].sum()
            counts[cells[row]] += 1.0
            change[after > ceiling] = np.inf
            pick = int(np.argmin(change))
            if change[pick] < best[0]:
                best = (float(change[pick]), position, int(holders[pick]), float(after[pick]))
        if best[1] < 0:
            missing.append((column, code))
            continue
        _, position, holder, after_swap = best
        criterion.candidates(current, int(inverse[subset[position]]))  # the state the swap updates: this position's
        criterion.swap(int(inverse[subset[position]]), int(inverse[holder]))
        subset[position], current = holder, after_swap
        restored.append((column, code))
    return np.sort(subset), restored, missing
