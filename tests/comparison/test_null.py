"""The permutation null drawn by hash buckets: exact against full enumeration, and independent of how it is run."""

import itertools

import numpy as np
import pytest
from scipy import stats

from bnfisher import FisherKernel
from bnfisher.comparison import null, permutation_pvalue, permutation_statistics, splits
from bnfisher.comparison.null import n_buckets, permutation_splits, row_buckets
from bnfisher.exceptions import OptionError

from _helpers import random_network


def _biased_mmd(gram: np.ndarray, first: np.ndarray) -> float:
    second = np.setdiff1d(np.arange(gram.shape[0]), first)
    return gram[np.ix_(first, first)].mean() + gram[np.ix_(second, second)].mean() \
        - 2 * gram[np.ix_(first, second)].mean()


@pytest.mark.parametrize("by_subsets", [False, True])  # both ways of drawing a bucket's splits
def test_the_bucketed_null_is_the_law_of_a_uniform_split_by_full_enumeration(monkeypatch, by_subsets):
    """A pool of 11 rows cut into 4 buckets: the engine's 20,000 permutations against all 462 splits.

    The law of the statistic over every 6-subset of the rows (enumerated, from the Gram matrix) is what a uniform
    permutation gives; the per-bucket draws must reproduce it (chi-square over its distinct values, a false alarm
    once in 1,000 runs) and the p-value must be the exact one within 4 Monte-Carlo standard errors.
    """
    monkeypatch.setattr(null, "ROWS_PER_BUCKET", 3)
    monkeypatch.setattr(splits, "draws_by_subsets", lambda multiplicity, first: by_subsets)
    network = random_network(np.random.default_rng(3), n_vars=3, max_parents=2, max_states=3)
    kernel = FisherKernel(network)
    X = network.sample(6, random_state=4, as_frame=False)
    Y = network.sample(5, random_state=5, as_frame=False)
    pooled = np.vstack([X, Y])
    assert np.unique(row_buckets(pooled, n_buckets(11))).size > 1  # the pool is split across buckets
    gram = kernel.gram(pooled)
    exact = np.array([_biased_mmd(gram, np.array(first)) for first in itertools.combinations(range(11), 6)])
    observed = _biased_mmd(gram, np.arange(6))
    values, probability = np.unique(np.round(exact, 9), return_counts=True)
    probability = probability / exact.size

    B = 20_000
    outcome = permutation_statistics(kernel, X, Y, n_permutations=B, random_state=7)
    drawn = np.round(outcome.null.sum(axis=1), 9)
    position = np.searchsorted(values, drawn)
    assert np.all(values[np.minimum(position, values.size - 1)] == drawn)  # every null value is a real split's
    frequency = np.bincount(position, minlength=values.size)
    expected = probability * B
    keep = expected >= 5  # (rare values, if any, pooled into one class)
    if not keep.all():
        frequency, expected = np.append(frequency[keep], frequency[~keep].sum()), np.append(
            expected[keep], expected[~keep].sum())
    assert stats.chisquare(frequency, expected).pvalue > 1e-3
    exact_p = float(np.mean(exact >= observed - 1e-12))
    ours = float(permutation_pvalue(outcome.observed.sum(), outcome.null.sum(axis=1)))
    assert abs(ours - exact_p) < 4 * np.sqrt(exact_p * (1 - exact_p) / B) + 1 / B


def test_the_draws_depend_on_the_rows_as_a_multiset_and_their_values_only(monkeypatch):
    monkeypatch.setattr(null, "ROWS_PER_BUCKET", 5)
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, 3, size=(40, 4))
    codes = np.unique(codes, axis=0)
    multiplicity = rng.integers(1, 4, size=codes.shape[0])
    n_first = int(multiplicity.sum()) // 2
    splits = permutation_splits(codes, multiplicity, n_first, 30, random_state=1)
    assert (splits.sum(axis=1) == n_first).all() and (splits <= multiplicity).all()
    order = rng.permutation(codes.shape[0])  # the same rows in another order, in another integer type
    shuffled = permutation_splits(codes[order].astype(np.int8), multiplicity[order], n_first, 30, random_state=1)
    np.testing.assert_array_equal(shuffled, splits[:, order])
    np.testing.assert_array_equal(row_buckets(codes.astype(np.int8), 7), row_buckets(codes, 7))


def test_rounds_of_permutations_are_each_from_their_own_streams(monkeypatch):
    """Many rounds (a round of 64 permutations here) give the same law: each split is a uniform subset."""
    monkeypatch.setattr(null, "ROUND_CELLS", 1)
    monkeypatch.setattr(null, "ROWS_PER_BUCKET", 4)
    multiplicity = np.array([1, 2, 1, 3, 1, 1, 2, 1])
    codes = np.arange(8)[:, None]
    splits = permutation_splits(codes, multiplicity, 5, 6400, random_state=2)
    for u in range(8):
        m = int(multiplicity[u])
        expected = stats.hypergeom(12, m, 5).pmf(np.arange(m + 1)) * 6400
        assert stats.chisquare(np.bincount(splits[:, u], minlength=m + 1), expected).pvalue > 1e-3


@pytest.mark.parametrize("method", ["bernoulli", "subsets", "auto"])
def test_split_draws_take_a_size_per_split_and_refuse_nothing_legal(method):
    draws = null.split_draws(np.array([2, 0, 3]), np.array([0, 5, 2]), 3, random_state=0, method=method)
    np.testing.assert_array_equal(draws.sum(axis=0), [0, 5, 2])
    assert draws[1].sum() == 0
    assert null.split_draws(np.zeros(0, dtype=int), 0, 2, random_state=0, method=method).shape == (0, 2)
    with pytest.raises(OptionError, match="`method` must be"):
        null.split_draws(np.array([2]), 1, 1, method="shuffle")


def test_the_cheaper_way_is_chosen_from_the_inputs():
    """Nearly distinct rows and a small sample: subsets; few distinct rows with many copies: Bernoulli/binomials."""
    distinct = np.ones(110_000, dtype=np.int64)
    assert splits.draws_by_subsets(distinct, np.array([10_000]))
    assert not splits.draws_by_subsets(np.full(1000, 1000), np.array([500_000]))


@pytest.mark.parametrize("n_rows, expected", [(1, 1), (null.ROWS_PER_BUCKET, 1), (null.ROWS_PER_BUCKET + 1, 2)])
def test_bucket_count_follows_the_pool_size(n_rows, expected):
    assert n_buckets(n_rows) == expected
