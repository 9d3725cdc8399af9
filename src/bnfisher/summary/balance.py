"""The refinement ``summarize`` runs after Algorithm 1: a descent of the margins' distance, annealing walks, labels.

:func:`balance_margins` puts together :func:`~bnfisher.summary.margins.refine_margins` (the
descent of ``L``), :func:`~bnfisher.summary.anneal.anneal_margins` (the walks along the MMD² cap)
and :func:`~bnfisher.summary.margins.restore_labels` (the common labels brought back), and says
in one sentence what they did.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bnfisher._utils.text import counted
from bnfisher._utils.validation import check_random_state
from bnfisher.summary.anneal import POOL_ROWS, anneal_margins
from bnfisher.summary.margins import (
    RESTARTS,
    MarginCounts,
    MarginRefinement,
    common_labels,
    margin_pairs,
    refine_margins,
    restore_labels,
)

__all__ = ["MAX_WALKED", "SWEEP_WORK", "balance_margins"]

#: Subsets of at most this many rows are also annealed (:func:`~bnfisher.summary.anneal.anneal_margins`): its pool of
#: rows is then at least eight times the subset.
MAX_WALKED = POOL_ROWS // 8

#: Candidate scores a sweep computes at most (rows x cells per row x positions): beyond it the pairs are the network's
#: arcs alone, and then the candidates a uniform sample of the rows (at least four per position).
SWEEP_WORK = 250_000_000


def _walked(kernel, encoded, indices: np.ndarray, found: MarginRefinement, criterion, *, pairs: list,
            target_codes: np.ndarray | None, allowed: np.ndarray, rng) -> tuple:
    """Anneal from Algorithm 1's subset and the descent's; return the subset of the lowest ``L_c L_p`` of the three.

    Also returns its swaps, how it was found (for the note), and the margins (every pair) it was scored by.
    """
    walks = anneal_margins(kernel, encoded, [indices, found.indices], criterion, cap=found.cap, pairs=pairs,
                           target_codes=target_codes, allowed=allowed, random_state=rng)
    tried = [(found.indices, found.swaps, f"{counted(found.swaps, 'swap')} of a descent", walks.starts[1])]
    for rows, swaps, parts, source in zip(walks.subsets, walks.swaps, walks.parts,
                                          ("Algorithm 1's subset", "the descent's")):
        how = (f"an annealing walk from {source} ({counted(swaps, 'swap')} accepted; of the subsets tried, the "
               "lowest product of the column and pair distances)")
        tried.append((rows, swaps, how, parts))
    chosen, swaps, how, _ = min(tried, key=lambda one: one[3][0] * one[3][1])
    return chosen, swaps, how, walks.margins


def balance_margins(kernel, encoded, indices: np.ndarray, criterion, *, target_codes: np.ndarray | None = None,
                    complete_only: bool = False, slack: float = 1.45, random_state=None) -> tuple:
    """Bring Algorithm 1's subset nearer per column and per pair within the MMD² cap; return the result and a note.

    First :func:`~bnfisher.summary.margins.refine_margins`, a descent of ``L`` restarted up to
    :data:`~bnfisher.summary.margins.RESTARTS` times (iterated local search) within
    :data:`~bnfisher.summary.margins.RESTART_WORK` (on tables of a few thousand rows; a larger search keeps
    its first descent).  A subset of at most :data:`MAX_WALKED` rows is then also annealed
    (:func:`~bnfisher.summary.anneal.anneal_margins`), from Algorithm 1's subset and from the
    descent's.  Of the descent's and the two walks' subsets, the one whose column and pair distances
    ``L_c``, ``L_p`` have the lowest product is kept: a relative gain on the pairs counts as much as
    the same relative gain on the columns.  Last, the common labels it lacks are brought back
    (:func:`~bnfisher.summary.margins.restore_labels`).

    Parameters
    ----------
    kernel : FamilyKernel
        Its network's arcs are the first pairs kept (:func:`~bnfisher.summary.margins.margin_pairs`).
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
        Orders the pairs beyond the arcs, samples the candidates of a search too large to score every row
        (:data:`SWEEP_WORK`), draws the restarts' rows and the walks' pools and proposals.

    Returns
    -------
    refinement : MarginRefinement
        ``swaps``: those of the subset kept (the descent's, or a walk's accepted ones).
    note : str

    Examples
    --------
    >>> from bnfisher.summary import MMDCriterion
    >>> kernel = bf.FisherKernel(network)
    >>> encoded = kernel.encode(data)
    >>> found, note = balance_margins(kernel, encoded, np.arange(0, 640, 40), MMDCriterion(kernel, encoded))
    >>> found.distance[1] < found.distance[0], note.startswith("Refined for the columns and pairs")
    (True, True)
    """
    rng = check_random_state(random_state)
    codes = encoded.codes
    arcs = [(parent, family[-1]) for family in kernel.families for parent in family[:-1]]
    pairs = every = margin_pairs(codes.shape[1], arcs, random_state=rng)
    if codes.shape[0] * (codes.shape[1] + len(pairs)) * indices.size > SWEEP_WORK:
        pairs = margin_pairs(codes.shape[1], arcs, max_pairs=len(set(map(frozenset, arcs))), random_state=rng)
    margins = MarginCounts(codes, tuple(encoded.cardinalities), pairs, target_codes)
    allowed = (codes >= 0).all(axis=1) if complete_only else np.ones(codes.shape[0], dtype=bool)
    most = max(SWEEP_WORK // max(margins.cells.shape[1] * indices.size, 1), 4 * indices.size)
    sampled = int(allowed.sum()) > most
    if sampled:
        keep = rng.choice(np.flatnonzero(allowed), size=most, replace=False)
        allowed = np.zeros_like(allowed)
        allowed[keep] = True
    found = refine_margins(margins, indices, criterion, slack=slack, allowed=allowed, max_sweeps=10, tol=0.005,
                           restarts=RESTARTS, random_state=rng)
    labels = common_labels(codes if target_codes is None else target_codes, encoded.cardinalities, indices.size)
    chosen, swaps, how, scored = found.indices, found.swaps, f"{counted(found.swaps, 'swap')} of a descent", margins
    if indices.size <= MAX_WALKED and int(allowed.sum()) > indices.size:
        chosen, swaps, how, scored = _walked(kernel, encoded, indices, found, criterion, pairs=every,
                                             target_codes=target_codes, allowed=allowed, rng=rng)
    chosen, restored, missing = restore_labels(margins, chosen, criterion, labels, ceiling=found.cap, allowed=allowed)
    found = replace(found, indices=chosen, mmd2=(found.mmd2[0], criterion.refresh(criterion.inverse[chosen])),
                    distance=(found.distance[0], margins.distance(chosen)), swaps=swaps)
    before, after = scored.parts_of(codes[np.asarray(indices)]), scored.parts_of(codes[chosen])
    note = (f"Refined for the columns and pairs a user checks (refine='margins'), by {how}: the mean TV distance "
            f"over the {codes.shape[1]} columns went from {before[0]:.4f} to {after[0]:.4f} and over "
            f"{len(scored.pairs)} pairs from {before[1]:.4f} to {after[1]:.4f}, the Fisher MMD² from "
            f"{found.mmd2[0]:.4g} to {found.mmd2[1]:.4g} (at most {slack:g} times Algorithm 1's)"
            + (f"; candidates: a uniform {most:,} of the rows" if sampled else "")
            + (f"; {len(restored)} common label(s) brought back" if restored else "")
            + (f"; {len(missing)} common label(s) could not be within that bound" if missing else "") + ".")
    return found, note
