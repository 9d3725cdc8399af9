"""The margins refinement: its distance against pandas' counts, its swaps against a brute-force search."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher import FisherKernel, learn
from bnfisher.datasets import load
from bnfisher.exceptions import OptionError
from bnfisher.summary import MarginCounts, MMDCriterion, refine_margins
from bnfisher.summary.margins import margin_pairs


def _tv_by_pandas(frame: pd.DataFrame, rows, pairs) -> float:
    """Mean TV over columns plus mean TV over pairs, from value_counts (a missing cell a label of its own)."""
    labels = frame.astype(object).where(frame.notna(), "<missing>").astype(str)
    part = labels.iloc[list(rows)]

    def tv(whole: pd.Series, sub: pd.Series) -> float:
        p = whole.value_counts(normalize=True)
        q = sub.value_counts(normalize=True).reindex(p.index, fill_value=0.0)
        return 0.5 * float(np.abs(p - q).sum())

    columns = np.mean([tv(labels[c], part[c]) for c in labels.columns])
    joint = [tv(labels.iloc[:, a] + "|" + labels.iloc[:, b], part.iloc[:, a] + "|" + part.iloc[:, b])
             for a, b in pairs]
    return float(columns + (np.mean(joint) if joint else 0.0))


@pytest.fixture(scope="module")
def small():
    frame = load("nursery").sample(300, random_state=3).reset_index(drop=True)
    frame.loc[frame.index % 17 == 0, "finance"] = None  # missing cells, counted as a label
    kernel = FisherKernel(learn(frame))
    return frame, kernel, kernel.encode(frame)


def test_the_distance_is_the_mean_tv_over_columns_and_pairs(small):
    frame, kernel, encoded = small
    pairs = margin_pairs(encoded.codes.shape[1], [])
    margins = MarginCounts(encoded.codes, tuple(encoded.cardinalities), pairs)
    ordered = frame[list(kernel.network.variables)]
    for seed in range(5):
        rows = np.random.default_rng(seed).choice(len(frame), 20, replace=False)
        assert margins.distance(rows) == pytest.approx(_tv_by_pandas(ordered, rows, pairs), rel=1e-12)


def _brute_force_step(margins, criterion, subset, cap):
    """One sweep as the docstring states it, every swap scored from scratch (distance and MMD² recomputed)."""
    subset = list(subset)
    for position in range(len(subset)):
        now = margins.distance(np.array(subset))
        best, choice = now - 1e-12, None
        for j in range(margins.cells.shape[0]):
            if j in subset:
                continue
            trial = np.array(subset[:position] + [j] + subset[position + 1:])
            value = margins.distance(trial)
            if value < best and criterion.evaluate_many(np.sort(trial)[None, :])[0] <= cap + 1e-12:
                best, choice = value, j
        if choice is not None:
            subset[position] = choice
    return np.sort(subset)


def test_one_sweep_matches_a_brute_force_search_and_keeps_the_cap(small):
    frame, kernel, encoded = small
    rows = np.arange(0, 300, 25)[:12]
    margins = MarginCounts(encoded.codes[:120], tuple(encoded.cardinalities),
                           margin_pairs(encoded.codes.shape[1], [], max_pairs=10, random_state=0))
    part = encoded.take(np.arange(120))
    start = rows[rows < 120]
    cap_slack = 1.3
    found = refine_margins(margins, start, MMDCriterion(kernel, part), slack=cap_slack, max_sweeps=1)
    criterion = MMDCriterion(kernel, part)
    cap = cap_slack * float(criterion.evaluate_many(np.sort(start)[None, :])[0])
    np.testing.assert_array_equal(found.indices, _brute_force_step(margins, criterion, start, cap))
    assert found.distance[1] < found.distance[0] and found.mmd2[1] <= cap * (1 + 1e-9)
    assert found.mmd2[1] == pytest.approx(float(criterion.evaluate_many(found.indices[None, :])[0]), rel=1e-9)


def test_summarize_refines_the_columns_and_pairs_within_the_mmd_slack():
    frame = load("nursery").sample(3000, random_state=0).reset_index(drop=True)
    ours = bf.summarize(frame, 32, n_init=50, n_random=50, random_state=0)
    paper = bf.summarize(frame, 32, n_init=50, n_random=50, random_state=0, refine=None)
    ordered = frame[list(ours.kernel.network.variables)]
    pairs = list(itertools.combinations(range(frame.shape[1]), 2))
    assert _tv_by_pandas(ordered, ours.indices, pairs) < _tv_by_pandas(ordered, paper.indices, pairs)
    assert ours.mmd2 <= 1.45 * paper.mmd2 * (1 + 1e-9)
    assert any("refine='margins'" in note for note in ours.notes) and not any(
        "refine='margins'" in note for note in paper.notes)
    with pytest.raises(OptionError, match="refine"):
        bf.summarize(frame, 32, refine="columns")


def test_the_pairs_are_every_pair_when_few_else_the_arcs_first():
    assert margin_pairs(4, [(3, 0)]) == list(itertools.combinations(range(4), 2))
    chosen = margin_pairs(30, [(7, 2), (2, 7), (9, 1)], max_pairs=12, random_state=1)
    assert chosen[:2] == [(2, 7), (1, 9)] and len(chosen) == 12 and len(set(chosen)) == 12
    assert chosen == margin_pairs(30, [(7, 2), (2, 7), (9, 1)], max_pairs=12, random_state=1)


def test_a_common_label_the_subset_lacks_is_brought_back_without_losing_another(small):
    from bnfisher.summary.margins import common_labels, restore_labels

    frame, kernel, encoded = small
    codes = encoded.codes
    margins = MarginCounts(codes, tuple(encoded.cardinalities), margin_pairs(codes.shape[1], []))
    labels = common_labels(codes, encoded.cardinalities, 40)
    (column, code) = labels[0]
    other_column, other_code = next(label for label in labels if label[0] != column)
    lacking = np.flatnonzero(codes[:, column] != code)
    holder = lacking[codes[lacking, other_column] == other_code][:1]  # the one row of the other label
    start = np.sort(np.concatenate([lacking[codes[lacking, other_column] != other_code][:39], holder]))
    assert not (codes[start, column] == code).any()
    criterion = MMDCriterion(kernel, encoded)
    subset, restored, missing = restore_labels(margins, start, criterion, [(column, code), (other_column, other_code)],
                                               ceiling=np.inf)
    assert (codes[subset, column] == code).any() and (codes[subset, other_column] == other_code).any()
    assert restored == [(column, code)] and missing == [] and subset.size == start.size
    assert criterion.refresh(criterion.inverse[subset]) == pytest.approx(
        float(MMDCriterion(kernel, encoded).evaluate_many(subset[None, :])[0]), rel=1e-9)  # the state followed
    nothing, _, unreachable = restore_labels(margins, start, MMDCriterion(kernel, encoded), [(column, code)],
                                             ceiling=0.0)
    assert unreachable == [(column, code)] and np.array_equal(nothing, np.sort(start))


def test_common_labels_follow_the_hypergeometric_chance_of_being_missed():
    from scipy.stats import hypergeom

    from bnfisher.summary.margins import common_labels

    codes = np.array([[0]] * 880 + [[1]] * 60 + [[2]] * 60).reshape(-1, 1)
    for k in (10, 30, 60):
        lacked = hypergeom(1000, 60, k).pmf(0)  # scipy's hypergeometric: the chance a random subset lacks label 1
        assert ((0, 1) in common_labels(codes, [3], k)) == (lacked < 0.1), (k, lacked)


def test_restarts_keep_the_cap_never_end_farther_and_leave_the_first_descents_local_optimum(small):
    """Iterated local search: each restart replaces a quarter of the rows within the cap and descends again; the
    lowest ``L`` is kept. Checked from scratch: the reported distance and MMD² are the subset's own (recomputed by a
    fresh criterion), the MMD² is within the cap, the result is at most the first descent's ``L`` and, on this table,
    below it (one-row swaps stop at a local optimum that restarts leave), and a seed gives the same subset."""
    frame, kernel, encoded = small
    margins = MarginCounts(encoded.codes, tuple(encoded.cardinalities), margin_pairs(encoded.codes.shape[1], []))
    start = np.arange(0, 300, 15)
    plain = refine_margins(margins, start, MMDCriterion(kernel, encoded), restarts=0)
    found = refine_margins(margins, start, MMDCriterion(kernel, encoded), restarts=8, random_state=1)
    fresh = MMDCriterion(kernel, encoded)
    assert found.distance[1] == pytest.approx(margins.distance(found.indices), rel=1e-12)
    assert found.mmd2[1] == pytest.approx(fresh.evaluate_many(found.indices[None, :])[0], rel=1e-9)
    assert found.mmd2[1] <= found.cap * (1 + 1e-9) and found.cap == pytest.approx(1.45 * plain.mmd2[0])
    assert len(set(found.indices.tolist())) == start.size
    assert found.distance[1] < plain.distance[1]
    again = refine_margins(margins, start, MMDCriterion(kernel, encoded), restarts=8, random_state=1)
    assert np.array_equal(again.indices, found.indices)
