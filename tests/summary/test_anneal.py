"""The annealing walk: random subsets' distances by enumeration, the MMD² cap against the Gram matrix, determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnfisher import FisherKernel, learn
from bnfisher.datasets import load
from bnfisher.summary import MMDCriterion
from bnfisher.summary.anneal import anneal_margins, random_distances
from bnfisher.summary.balance import balance_margins
from bnfisher.summary.margins import MarginCounts, margin_pairs


@pytest.fixture(scope="module")
def small():
    frame = load("nursery").sample(400, random_state=4).reset_index(drop=True)
    frame.loc[frame.index % 13 == 0, "housing"] = None  # missing cells: the marginalized kernel, a label of their own
    kernel = FisherKernel(learn(frame))
    encoded = kernel.encode(frame)
    margins = MarginCounts(encoded.codes, tuple(encoded.cardinalities), margin_pairs(encoded.codes.shape[1], []))
    return kernel, encoded, margins


def _mmd2_by_gram(kernel, encoded, rows) -> float:
    """eq. 10 from the definition: mean K(S, S) - 2 mean K(S, X) + mean K(X, X), on the full Gram matrix."""
    gram = kernel.gram(encoded)
    return float(gram[np.ix_(rows, rows)].mean() - 2 * gram[rows].mean() + gram.mean())


def test_random_subsets_distances_are_the_mean_over_every_subset():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, size=(10, 3))
    codes[rng.random(codes.shape) < 0.15] = -1
    margins = MarginCounts(codes, (3, 3, 3), [(0, 1), (0, 2), (1, 2)])
    for k in (1, 4, 9):
        every = np.array([margins.parts(np.array(rows)) for rows in itertools.combinations(range(10), k)])
        np.testing.assert_allclose(random_distances(margins, k, 10), every.mean(axis=0), rtol=1e-12)


def test_the_walk_stays_within_the_cap_and_lowers_the_product_of_the_distances(small):
    kernel, encoded, margins = small
    criterion = MMDCriterion(kernel, encoded)
    start = np.arange(3, 400, 25)
    cap = 1.3 * criterion.start(criterion.inverse[start])
    walks = anneal_margins(kernel, encoded, [start], criterion, cap=cap, pairs=margins.pairs, proposals=4_000,
                           random_state=1)
    found = walks.subsets[0]
    assert walks.swaps[0] > 0 and found.size == start.size == np.unique(found).size
    mmd2 = _mmd2_by_gram(kernel, encoded, found)
    assert mmd2 <= cap * (1 + 1e-9)
    assert criterion.refresh(criterion.inverse[found]) == pytest.approx(mmd2, rel=1e-9, abs=1e-12)
    assert walks.parts[0] == pytest.approx(margins.parts(found), rel=1e-12)  # the pool's margins: the table's
    assert walks.starts[0] == pytest.approx(margins.parts(start), rel=1e-12)
    assert np.prod(margins.parts(found)) < np.prod(margins.parts(start))
    again = anneal_margins(kernel, encoded, [start], criterion, cap=cap, pairs=margins.pairs, proposals=4_000,
                           random_state=1)
    np.testing.assert_array_equal(found, again.subsets[0])


def test_a_cap_no_swap_can_keep_leaves_the_start(small):
    kernel, encoded, margins = small
    criterion = MMDCriterion(kernel, encoded)
    start = np.arange(0, 400, 40)
    cap = 0.5 * criterion.start(criterion.inverse[start])  # below the start's own MMD²: every swap refused
    walks = anneal_margins(kernel, encoded, [start], criterion, cap=cap, pairs=margins.pairs, proposals=5_000,
                           random_state=0)
    assert walks.swaps == [0]
    np.testing.assert_array_equal(walks.subsets[0], np.sort(start))


def test_the_walk_compiled_and_as_python_is_the_same_walk(small):
    """The same proposals give the same subset, compiled or as plain Python (the draws come in as arrays)."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.summary import anneal

    kernel, encoded, margins = small
    pool = np.arange(120)
    features = kernel.embed(encoded.take(pool))
    gram = (features @ features.T).toarray()
    criterion = MMDCriterion(kernel, encoded)
    subset = np.arange(0, 120, 12)
    mmd2 = criterion.start(criterion.inverse[subset])
    is_pair = (np.arange(margins.weights.size) >= margins.offsets[encoded.codes.shape[1]]).astype(np.int64)
    rng = np.random.default_rng(3)
    draws = (rng.integers(120, size=4000), rng.integers(subset.size, size=4000), rng.random(4000))

    def walk(function):
        counts = np.bincount(margins.cells[subset].ravel(), minlength=margins.weights.size).astype(np.float64)
        inside = np.zeros(pool.size, dtype=bool)
        inside[subset] = True
        target = np.asarray(margins.target) * subset.size
        terms = margins.weights * np.abs(counts - target)
        parts = np.array([terms[is_pair == 0].sum(), terms[is_pair == 1].sum()])
        return function(gram, criterion.inner[criterion.inverse[pool]].copy(), subset.copy(), inside,
                        margins.cells[pool].astype(np.int64), margins.weights, is_pair, counts, target, parts,
                        np.array([1.0, 1.0]), 1.4 * mmd2, mmd2, *draws)

    _materialise()
    compiled = walk(anneal._walk)  # noqa: SLF001 - the compiled walk
    python = walk(anneal._walk.py_func)  # noqa: SLF001 - and the same function as Python
    np.testing.assert_array_equal(compiled[0], python[0])
    assert compiled[1] == python[1] > 0


def test_the_refinement_keeps_the_lowest_product_of_the_three_and_says_how(small, monkeypatch):
    """balance_margins keeps, of the descent's and the two walks' subsets, the lowest L_c L_p (over every pair)."""
    from bnfisher.summary import balance

    kernel, encoded, margins = small
    seen = {}

    def spy(*args, **kwargs):
        seen["walks"] = anneal_margins(*args, **kwargs)
        return seen["walks"]

    monkeypatch.setattr(balance, "anneal_margins", spy)
    criterion = MMDCriterion(kernel, encoded)
    start = np.arange(5, 400, 20)
    found, note = balance_margins(kernel, encoded, start, criterion, random_state=0)
    walks = seen["walks"]
    products = [np.prod(parts) for parts in [walks.starts[1], *walks.parts]]
    best = int(np.argmin(products))
    how = ["swaps of a descent", "walk from Algorithm 1's subset", "walk from the descent's"][best]
    assert note.startswith("Refined for the columns and pairs a user checks (refine='margins'), by ") and how in note
    if "brought back" not in note:  # else a common label's swap moved it after the choice
        assert np.prod(margins.parts(found.indices)) == pytest.approx(min(products), rel=1e-12)
    assert found.mmd2[1] <= found.cap * (1 + 1e-9)


def test_shares_counted_in_blocks_are_the_shares_counted_at_once():
    """MarginCounts.shares counts a wide table in blocks of rows (its default block holds a bounded number of cells):
    the same shares as one pass, and as counting each label by hand."""
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, 3, size=(5000, 6))
    margins = MarginCounts(codes, (3,) * 6, [(0, 1), (2, 5)])
    np.testing.assert_array_equal(margins.shares(codes), margins.shares(codes, block=codes.shape[0]))
    np.testing.assert_array_equal(margins.shares(codes), margins.shares(codes, block=7))
    by_hand = np.mean((codes[:, 2] == 1) & (codes[:, 5] == -1))
    cell = margins.offsets[6 + 1] + (1 + 1) * 4 + (-1 + 1)  # the pair (2, 5), labels 1 and missing
    assert margins.shares(codes)[cell] == by_hand


def test_the_hypergeometric_law_is_scipys_over_its_whole_support():
    """The one hypergeometric log pmf the bounds, the common labels and the random distances share, against SciPy."""
    from scipy.stats import hypergeom

    from bnfisher._utils.numeric import hypergeometric_log_pmf

    for total, marked, drawn in ((10, 3, 4), (60, 20, 59), (1000, 1, 64), (48842, 5000, 64)):
        x = np.arange(max(0, drawn - (total - marked)), min(drawn, marked) + 1, dtype=np.float64)
        np.testing.assert_allclose(hypergeometric_log_pmf(x, total, marked, drawn),
                                   hypergeom.logpmf(x, total, marked, drawn), rtol=1e-9, atol=1e-9)


def test_the_refinements_sentence_gives_the_distances_of_the_subset_it_returns(small):
    """The note's 'went from a to b' figures are Algorithm 1's subset's and the returned subset's L_c and L_p."""
    import re

    kernel, encoded, margins = small
    start = np.arange(5, 400, 20)
    found, note = balance_margins(kernel, encoded, start, MMDCriterion(kernel, encoded), random_state=0)
    figures = re.search(r"over the 9 columns went from ([\d.]+) to ([\d.]+) and over 36 pairs from ([\d.]+) to "
                        r"([\d.]+)", note).groups()
    before, after = margins.parts(start), margins.parts(found.indices)
    assert figures == tuple(f"{value:.4f}" for value in (before[0], after[0], before[1], after[1]))
