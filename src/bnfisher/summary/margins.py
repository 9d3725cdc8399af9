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

from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.jit import compiled

__all__ = ["MAX_PAIRS", "SWEEP_WORK", "MarginCounts", "MarginRefinement", "balance_margins", "margin_pairs",
           "common_labels", "refine_margins", "restore_labels"]

#: Pairs of columns whose joint labels the search keeps, at most (the network's arcs first).
MAX_PAIRS = 300


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
    order = np.random.default_rng(random_state).permutation(len(others))[: max_pairs - len(first)]
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
    target : ndarray of float, optional
        The cells' shares in the data to approach (:meth:`shares`); default the rows' own.

    Attributes
    ----------
    cells : ndarray of int32, shape (n_rows, n_columns + n_pairs)
        Each row's cell in every column and pair (offsets included).
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
    target: np.ndarray | None = None
    cells: np.ndarray = field(init=False, repr=False)
    weights: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        sizes = [int(r) + 1 for r in self.cardinalities]  # state s at s + 1, a missing cell at 0
        widths = sizes + [sizes[a] * sizes[b] for a, b in self.pairs]
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        self.cells = self.cells_of(self.codes)
        groups = np.array([1.0 / max(len(sizes), 1)] * len(sizes) + [1.0 / max(len(self.pairs), 1)] * len(self.pairs))
        self.weights = np.repeat(groups, widths)
        if self.target is None:
            self.target = self.shares(self.codes)

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

    def shares(self, codes: np.ndarray, *, block: int = 1 << 18) -> np.ndarray:
        """Return every cell's share among rows ``codes`` (in blocks of rows: never the whole cell table at once).

        Parameters
        ----------
        codes : ndarray of int, shape (n, n_columns)
        block : int, default=262144
            Rows counted at a time.

        Returns
        -------
        ndarray of float, shape (n_cells,)
        """
        total = np.zeros(int(self.offsets[-1]))
        for start in range(0, codes.shape[0], block):
            total += np.bincount(self.cells_of(codes[start:start + block]).ravel(), minlength=total.size)
        return total / max(codes.shape[0], 1)

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
        k = subset.size
        counts = np.bincount(self.cells[subset].ravel(), minlength=self.weights.size)
        return float(self.weights @ np.abs(counts - k * np.asarray(self.target))) / (2 * k)


@dataclass
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
    """

    indices: np.ndarray
    distance: tuple
    mmd2: tuple
    cap: float
    swaps: int


def refine_margins(margins: MarginCounts, start: np.ndarray, criterion, *, slack: float = 1.45,
                   allowed: np.ndarray | None = None, max_sweeps: int = 20, tol: float = 0.0) -> MarginRefinement:
    """Swap rows of ``start`` to lower ``L`` while the MMD² stays within ``slack`` times the start's.

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
    tol : float, default=0.0
        Stop after a sweep that lowers ``L`` by less than this share of its value (0: until a
        sweep makes no swap, or ``max_sweeps``).

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
    >>> found = refine_margins(margins, start, criterion)
    >>> found.distance[1] <= found.distance[0], found.mmd2[1] <= 1.45 * found.mmd2[0]
    (True, True)
    """
    subset = np.array(start, dtype=np.intp)
    k = subset.size
    cells, weights, target = margins.cells, margins.weights, np.asarray(margins.target) * k
    counts = np.bincount(cells[subset].ravel(), minlength=weights.size).astype(np.float64)
    member = np.zeros(cells.shape[0], dtype=bool)
    member[subset] = True
    candidates = np.flatnonzero(allowed) if allowed is not None else np.arange(cells.shape[0])
    candidate_cells = cells[candidates]  # scored at every position: gathered once
    inverse = criterion.inverse
    candidate_units = inverse[candidates]
    first_mmd = current = criterion.start(inverse[subset])
    cap = slack * first_mmd
    first_distance = margins.distance(subset)
    swaps = 0
    for _ in range(max_sweeps):
        swapped, before = 0, margins.distance(subset)
        for position in range(k):
            row = subset[position]
            counts[cells[row]] -= 1.0
            gain = _gains(weights, counts, target)
            stay = gain[cells[row]].sum()
            change = _row_sums(gain, candidate_cells, np.empty(candidates.size))
            change[member[candidates]] = np.inf
            if not change.min() < stay - 1e-12:  # no row would bring the margins nearer: no MMD to compute
                counts[cells[row]] += 1.0
                continue
            mmd_after = criterion.candidates(current, int(inverse[row]))[candidate_units]
            change[mmd_after > cap] = np.inf
            best = int(np.argmin(change))
            if change[best] < stay - 1e-12:
                chosen = int(candidates[best])
                criterion.swap(int(inverse[row]), int(inverse[chosen]))
                current = float(mmd_after[best])
                member[row], member[chosen] = False, True
                subset[position] = chosen
                counts[cells[chosen]] += 1.0
                swapped += 1
            else:
                counts[cells[row]] += 1.0
        current = criterion.refresh(inverse[subset])
        swaps += swapped
        if not swapped or margins.distance(subset) > (1.0 - tol) * before:
            break
    subset.sort()
    return MarginRefinement(indices=subset, distance=(first_distance, margins.distance(subset)),
                            mmd2=(first_mmd, current), cap=cap, swaps=swaps)


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
    from scipy.special import gammaln

    n = codes.shape[0]
    out = []
    for column, size in enumerate(cardinalities):
        counts = np.bincount(codes[:, column][codes[:, column] >= 0], minlength=int(size))
        observed = max(int(counts.sum()), 1)
        for code in np.flatnonzero(counts >= share * observed):
            c = int(counts[code])
            lacked = np.exp(gammaln(n - c + 1) - gammaln(n - c - k + 1) - gammaln(n + 1) + gammaln(n - k + 1)) \
                if n - c >= k else 0.0
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


#: Candidate scores a sweep computes at most (rows x cells per row x positions): beyond it the pairs are the network's
#: arcs alone, and then the candidates a uniform sample of the rows (at least four per position).
SWEEP_WORK = 250_000_000


def balance_margins(kernel, encoded, indices: np.ndarray, criterion, *, target_codes: np.ndarray | None = None,
                    complete_only: bool = False, slack: float = 1.45, random_state=None) -> tuple:
    """Run :func:`refine_margins` from Algorithm 1's subset; return the refinement and a note saying what it did.

    Parameters
    ----------
    kernel : FamilyKernel
        Its network's arcs are the first pairs kept (:func:`margin_pairs`).
    encoded : EncodedData
        The rows searched (``criterion``'s).
    indices : ndarray of int
        Algorithm 1's subset, positions in ``encoded``.
    criterion : MMDCriterion
    target_codes : ndarray of int, optional
        The whole table's codes when ``encoded`` is a pool of it (the shares to approach).
    complete_only : bool, default=False
        Only rows without a missing cell may enter.
    slack : float, default=1.45
    random_state : None, int or Generator
        Orders the pairs beyond the arcs, and samples the candidates of a search too large to score every row
        (:data:`SWEEP_WORK`).

    Returns
    -------
    refinement : MarginRefinement
    note : str

    Examples
    --------
    >>> from bnfisher.summary import MMDCriterion
    >>> kernel = bf.FisherKernel(network)
    >>> encoded = kernel.encode(data)
    >>> found, note = balance_margins(kernel, encoded, np.arange(0, 640, 40), MMDCriterion(kernel, encoded))
    >>> found.distance[1] <= found.distance[0], note.startswith("Refined for the columns and pairs")
    (True, True)
    """
    rng = np.random.default_rng(random_state)
    codes = encoded.codes
    arcs = [(parent, family[-1]) for family in kernel.families for parent in family[:-1]]
    pairs = margin_pairs(codes.shape[1], arcs, random_state=rng)
    if codes.shape[0] * (codes.shape[1] + len(pairs)) * indices.size > SWEEP_WORK:
        pairs = margin_pairs(codes.shape[1], arcs, max_pairs=len(set(map(frozenset, arcs))), random_state=rng)
    margins = MarginCounts(codes, tuple(encoded.cardinalities), pairs)
    if target_codes is not None:
        margins.target = margins.shares(target_codes)
    allowed = (codes >= 0).all(axis=1) if complete_only else np.ones(codes.shape[0], dtype=bool)
    most = max(SWEEP_WORK // max(margins.cells.shape[1] * indices.size, 1), 4 * indices.size)
    sampled = int(allowed.sum()) > most
    if sampled:
        keep = rng.choice(np.flatnonzero(allowed), size=most, replace=False)
        allowed = np.zeros_like(allowed)
        allowed[keep] = True
    found = refine_margins(margins, indices, criterion, slack=slack, allowed=allowed, max_sweeps=10, tol=0.005)
    labels = common_labels(codes if target_codes is None else target_codes, encoded.cardinalities, indices.size)
    found.indices, restored, missing = restore_labels(margins, found.indices, criterion, labels, ceiling=found.cap,
                                                      allowed=allowed)
    found.mmd2 = (found.mmd2[0], criterion.refresh(criterion.inverse[found.indices]))
    found.distance = (found.distance[0], margins.distance(found.indices))
    note = (f"Refined for the columns and pairs a user checks (refine='margins'): {found.swaps} swaps lowered the "
            f"mean TV distance over the {codes.shape[1]} columns plus that over {len(margins.pairs)} pairs from "
            f"{found.distance[0]:.4f} to {found.distance[1]:.4f}, the Fisher MMD² from {found.mmd2[0]:.4g} to "
            f"{found.mmd2[1]:.4g} (at most {slack:g} times Algorithm 1's)"
            + (f"; candidates: a uniform {most:,} of the rows" if sampled else "")
            + (f"; {len(restored)} common label(s) brought back" if restored else "")
            + (f"; {len(missing)} common label(s) could not be within that bound" if missing else "") + ".")
    return found, note
