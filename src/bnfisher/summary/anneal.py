r"""Simulated annealing over one-row swaps along the MMD² cap: columns and pairs each against random subsets'.

The descent of :func:`~bnfisher.summary.margins.refine_margins` lowers ``L = L_c + L_p``, the
mean column TV plus the mean pairwise TV, and stops where no single swap lowers it within the
Fisher MMD² cap.  Where the table's rare cells pin the cap (adult), that point is still farther
by pairs than MMD-critic's prototypes, though subsets closer both ways exist within the cap
(``benchmarks/subset_frontier.py``).  :func:`anneal_margins` walks along the cap instead
(Kirkpatrick, Gelatt & Vecchi 1983): a swap that raises

.. math:: f(S) = \max\Big(\frac{L_c(S)}{\bar L_c}, \frac{L_p(S)}{\bar L_p}\Big)
          + \frac{1}{20}\Big(\frac{L_c(S)}{\bar L_c} + \frac{L_p(S)}{\bar L_p}\Big)

by ``\Delta`` is accepted with probability ``exp(-\Delta / T)``, the temperature ``T`` falling
geometrically from :data:`HOT` to :data:`COLD`, where ``\bar L_c`` and ``\bar L_p`` are the
parts' means over uniform random subsets of the same size (exact, hypergeometric:
:func:`random_distances`), so ``f`` follows the part that is worse against chance.  Of the subsets
it visits it keeps the one of lowest ``L_c L_p``: the same relative gain counts as much on the
pairs as on the columns, so pairs are not bought with columns at a worse rate (the rule by which
``summarize`` also picks between this walk and the descent).

Every swap keeps the Fisher MMD² (eq. 10) within the cap, exactly: it changes by
``2/k (g_j - g_i) + (K_jj - 2 K_ij + K_ii) / k^2``, ``g`` the witness of the subset's mean
embedding against the table's, maintained over a pool of at most :data:`POOL_ROWS` rows (the
subset's and a uniform sample of the others, 32 for each of the subset's rows) whose Gram matrix is held.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.numeric import hypergeometric_log_pmf
from bnfisher._utils.validation import check_random_state
from bnfisher.summary.margins import MarginCounts

__all__ = ["COLD", "HOT", "PER_PAIR", "POOL_PER_ROW", "POOL_ROWS", "PROPOSALS", "Walks", "anneal_margins",
           "random_distances"]

#: Rows a walk proposes from, at most (the subset's and a uniform sample of the others): their Gram matrix is held,
#: 8 bytes a pair (32 MiB).
POOL_ROWS = 2048

#: Rows of the pool for each row of the subset (up to :data:`POOL_ROWS`): a small subset walks a small pool.
POOL_PER_ROW = 32

#: Proposals of one walk, at most: else ten for every pair of a subset's position and a pool row.
PROPOSALS = 1_200_000

#: Proposals of one walk for every pair of a position and a pool row (below :data:`PROPOSALS`).
PER_PAIR = 10

#: The walk's first and last temperature, in units of ``f`` (falling geometrically with the proposals).
HOT, COLD = 0.1, 1e-4


def random_distances(margins, k: int, n_rows: int) -> tuple:
    """Return ``L_c`` and ``L_p``, the column and pair parts of ``L``, averaged over random subsets of ``k`` rows.

    Exact: a cell held by ``c`` of the ``n_rows`` rows appears ``X ~ Hypergeometric(n_rows, c, k)``
    times in a random subset, and adds ``w E|X - k c / n_rows| / (2 k)`` to its part.

    Parameters
    ----------
    margins : MarginCounts
        Its ``target``: the cells' shares among the ``n_rows`` rows.
    k, n_rows : int

    Returns
    -------
    tuple of (float, float)

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.summary.margins import MarginCounts
    >>> margins = MarginCounts(np.array([[0], [1], [0], [1]]), (2,), [])
    >>> [round(part, 4) for part in random_distances(margins, 2, 4)]  # a third of the 2-row subsets: TV 0.5
    [0.1667, 0.0]
    """
    held = np.rint(np.asarray(margins.target, dtype=np.float64) * n_rows)
    values, where = np.unique(held, return_inverse=True)
    x = np.arange(k + 1, dtype=np.float64)[None, :]
    c = values[:, None]
    low, high = np.maximum(0.0, k - (n_rows - c)), np.minimum(float(k), c)
    inside = (x >= low) & (x <= high)
    pmf = np.where(inside, np.exp(hypergeometric_log_pmf(np.clip(x, low, high), n_rows, c, k)), 0.0)
    expected = (pmf * np.abs(x - k * c / n_rows)).sum(axis=1)[where.ravel()]
    terms = margins.weights * expected / (2 * k)
    split = int(margins.offsets[len(margins.cardinalities)])
    return float(terms[:split].sum()), float(terms[split:].sum())


@compiled(alone=True, nogil=True)
def _walk(gram, witness, positions, inside, cells, weights, is_pair, counts, target, parts, scales, cap, mmd2, rows,
          slots, uniforms):  # pragma: no cover - compiled
    """Anneal ``positions`` (pool rows); return the positions of lowest ``L_c L_p`` visited and the swaps accepted.

    Proposal ``t`` puts pool row ``rows[t]`` at ``slots[t]``, uphill when ``uniforms[t]`` is below the
    acceptance probability.  ``witness`` (``g`` over the pool), ``inside`` (the pool rows in the subset),
    ``counts`` (the subset's cell counts) and ``parts`` (``2 k L_c`` and ``2 k L_p``) are updated in place;
    ``scales`` are the random subsets' parts times ``2 k``.  Always compiled, by itself (``alone``): as Python it
    takes 171 times as long (``benchmarks/selection.py --only walk``), and it calls no other compiled function.
    """
    k, n_pool, proposals = positions.shape[0], gram.shape[0], rows.shape[0]
    a, b = parts[0] / scales[0], parts[1] / scales[1]
    value = max(a, b) + 0.05 * (a + b)
    best_product, best = parts[0] * parts[1], positions.copy()
    swaps = 0
    fall = np.log(COLD / HOT)
    moved = np.zeros(2)
    for step in range(proposals):
        j, slot = rows[step], slots[step]
        if inside[j]:
            continue
        i = positions[slot]
        after = mmd2 + 2.0 / k * (witness[j] - witness[i]) + (gram[j, j] - 2.0 * gram[i, j] + gram[i, i]) / k ** 2
        if after > cap:
            continue
        moved[0], moved[1] = parts[0], parts[1]
        for c in cells[i]:  # the row leaving, then the row coming in: each cell's change of |n - k p|
            before = abs(counts[c] - target[c])
            counts[c] -= 1.0
            moved[is_pair[c]] += weights[c] * (abs(counts[c] - target[c]) - before)
        for c in cells[j]:
            before = abs(counts[c] - target[c])
            counts[c] += 1.0
            moved[is_pair[c]] += weights[c] * (abs(counts[c] - target[c]) - before)
        a, b = moved[0] / scales[0], moved[1] / scales[1]
        trial = max(a, b) + 0.05 * (a + b)
        if trial <= value or uniforms[step] < np.exp((value - trial) / (HOT * np.exp(fall * step / proposals))):
            for u in range(n_pool):  # the Gram matrix is symmetric: read its rows, which are contiguous
                witness[u] += (gram[j, u] - gram[i, u]) / k
            inside[i], inside[j] = False, True
            positions[slot] = j
            parts[0], parts[1], value, mmd2 = moved[0], moved[1], trial, after
            swaps += 1
            if parts[0] * parts[1] < best_product * (1.0 - 1e-12):
                best_product = parts[0] * parts[1]
                best[:] = positions
        else:
            counts[cells[j]] -= 1.0
            counts[cells[i]] += 1.0
    return best, swaps


@dataclass(frozen=True)
class Walks:
    """What :func:`anneal_margins` found, scored over its pool's :class:`~bnfisher.summary.margins.MarginCounts`.

    Attributes
    ----------
    margins : MarginCounts
        The pool's rows, every pair kept (its ``parts_of`` scores any rows against the same table).
    starts : list of (float, float)
        ``L_c`` and ``L_p`` of each start.
    subsets : list of ndarray of int
        Each walk's subset of lowest ``L_c L_p`` (sorted row positions; the start's own when none visited was
        lower).
    parts : list of (float, float)
        ``L_c`` and ``L_p`` of each walk's subset.
    swaps : list of int
        Swaps each walk accepted, uphill ones included.
    """

    margins: MarginCounts
    starts: list
    subsets: list
    parts: list
    swaps: list


def anneal_margins(kernel, encoded, starts: list, criterion, *, cap: float, pairs: list,
                   target_codes: np.ndarray | None = None, allowed: np.ndarray | None = None,
                   proposals: int | None = None, random_state=None) -> Walks:
    """Walk from each of ``starts`` by one-row swaps within the MMD² cap, keeping the subset of lowest ``L_c L_p``.

    The walks share one pool of rows: every start's, and a uniform sample of the other ``allowed``
    rows up to :data:`POOL_PER_ROW` times the subset's size, at most :data:`POOL_ROWS`.  A proposal
    costs one pass over a row's cells, whatever the table's length, so the walks keep every pair of
    ``pairs`` even where the descent keeps only the network's arcs.

    Parameters
    ----------
    kernel : FamilyKernel
        ``criterion``'s kernel.
    encoded : EncodedData
        The rows a subset is drawn from (``criterion``'s).
    starts : list of ndarray of int
        Row positions to start from, each subset of the same size and within the cap.
    criterion : MMDCriterion
        Gives the witness ``g``; it is left at the last walk's result.
    cap : float
        The most Fisher MMD² a swap may leave.
    pairs : list of (int, int)
        The pairs of columns whose joint labels count (:func:`~bnfisher.summary.margins.margin_pairs`).
    target_codes : ndarray of int, optional
        The table whose shares the subset approaches when ``encoded`` is a pool of it (default: ``encoded``'s
        codes).
    allowed : ndarray of bool, optional
        Rows that may enter (default: every row).
    proposals : int, optional
        Of each walk. Default: :data:`PER_PAIR` times the subset's size times the pool's, at most
        :data:`PROPOSALS`.
    random_state : None, int or Generator
        Draws the pool and the proposals.

    Returns
    -------
    Walks

    Examples
    --------
    >>> from bnfisher.summary import MMDCriterion
    >>> from bnfisher.summary.margins import margin_pairs
    >>> kernel = bf.FisherKernel(network)
    >>> encoded = kernel.encode(data)
    >>> criterion = MMDCriterion(kernel, encoded)
    >>> start = np.arange(0, 640, 40)
    >>> cap = 1.45 * criterion.start(criterion.inverse[start])
    >>> walks = anneal_margins(kernel, encoded, [start], criterion, cap=cap,
    ...                        pairs=margin_pairs(encoded.codes.shape[1], []), proposals=5_000, random_state=0)
    >>> bool(criterion.refresh(criterion.inverse[walks.subsets[0]]) <= cap)
    True
    >>> bool(np.prod(walks.parts[0]) <= np.prod(walks.starts[0]))
    True
    """
    rng = check_random_state(random_state)
    starts = [np.asarray(start, dtype=np.intp) for start in starts]
    k = starts[0].size
    chosen = np.unique(np.concatenate(starts))
    others = np.setdiff1d(np.flatnonzero(allowed) if allowed is not None else np.arange(encoded.n_rows), chosen)
    size = min(POOL_ROWS, POOL_PER_ROW * k)
    if others.size > size - chosen.size:
        others = rng.choice(others, size=max(size - chosen.size, 0), replace=False)
    pool = np.concatenate([chosen, np.sort(others)])
    table = encoded.codes if target_codes is None else target_codes
    margins = MarginCounts(encoded.codes[pool], tuple(encoded.cardinalities), pairs, table)
    proposals = min(PROPOSALS, PER_PAIR * k * pool.size) if proposals is None else proposals
    features = kernel.embed(encoded.take(pool))
    gram = np.asarray(features @ features.T.toarray())
    cells = margins.cells.astype(np.int64)
    is_pair = (np.arange(margins.weights.size) >= margins.offsets[len(margins.cardinalities)]).astype(np.int64)
    scales = np.maximum(np.array(random_distances(margins, k, table.shape[0])) * 2 * k, 1e-12)
    target = np.asarray(margins.target) * k
    walks = Walks(margins=margins, starts=[], subsets=[], parts=[], swaps=[])
    for start in starts:
        positions = np.searchsorted(chosen, start)
        mmd2 = criterion.start(criterion.inverse[start])
        witness = np.array(criterion.inner[criterion.inverse[pool]], dtype=np.float64)
        counts = np.bincount(cells[positions].ravel(), minlength=margins.weights.size).astype(np.float64)
        inside = np.zeros(pool.size, dtype=bool)
        inside[positions] = True
        terms = margins.weights * np.abs(counts - target)
        parts = np.array([sum(terms[is_pair == 0].tolist()), sum(terms[is_pair == 1].tolist())])  # in order
        best, swaps = _walk(gram, witness, positions.copy(), inside, cells, margins.weights, is_pair, counts, target,
                            parts, scales, float(cap), float(mmd2), rng.integers(pool.size, size=proposals),
                            rng.integers(k, size=proposals), rng.random(proposals))
        walks.starts.append(margins.parts(positions))
        walks.subsets.append(np.sort(pool[best]))
        walks.parts.append(margins.parts(best))
        walks.swaps.append(int(swaps))
    criterion.refresh(criterion.inverse[walks.subsets[-1]])
    return walks
