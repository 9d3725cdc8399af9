"""The counts-provider protocol and ``as_provider`` (Dask forms are tested in test_scale.py)."""

import functools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnfisher import EncodedData, FisherKernel, Schema, as_provider, learn, score
from bnfisher.data.counts import configuration_index, count_block, n_configurations
from bnfisher.data.providers import CountsProvider, NumpyCounts, count_family
from bnfisher.exceptions import SchemaError
from bnfisher.summary import select_representatives

from _helpers import random_network


def test_count_family_hand_computed():
    codes = np.array([[0, 1], [1, 1], [0, 0], [0, 1]])
    np.testing.assert_array_equal(count_family(codes, [0, 1], [2, 2]), [[1, 2], [0, 1]])
    np.testing.assert_array_equal(count_family(codes, [1], [2, 2]), [1, 3])
    assert count_family(codes, [], [2, 2]) == 4


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 60), st.integers(0, 2**31 - 1))
def test_counts_sum_to_the_weighted_number_of_rows(n_vars, n_rows, seed):
    rng = np.random.default_rng(seed)
    cards = rng.integers(1, 4, size=n_vars)
    codes = np.column_stack([rng.integers(0, r, size=n_rows) for r in cards]) if n_rows else \
        np.zeros((0, n_vars), dtype=int)
    weights = rng.random(n_rows)
    family = list(range(n_vars))
    assert count_family(codes, family, cards).sum() == n_rows
    assert count_family(codes, family, cards, weights).sum() == pytest.approx(weights.sum())


def test_configuration_count_does_not_overflow():
    assert n_configurations([1000] * 8) == 1000**8  # > 2**63
    assert configuration_index(np.array([[1, 2]]), [0, 1], [2, 3]).tolist() == [5]


def test_every_input_form_gives_the_same_counts_scores_kernel_and_selection():
    network = random_network(np.random.default_rng(3), n_vars=5, max_states=3)
    frame = network.sample(400, random_state=1)
    codes = network.encode(frame).codes  # in network.variables order
    forms = {
        "frame": frame,
        "codes": np.asarray(codes),
        "encoded": network.encode(frame),
        "provider": NumpyCounts(np.asarray(codes), network.schema),
    }
    kernel = FisherKernel(network)
    families = [(0,), (1, 2), (0, 3, 4)]
    reference = None
    for name, data in forms.items():
        provider = as_provider(data, network.schema)
        assert isinstance(provider, CountsProvider)
        outcome = (
            [t.tolist() for t in provider.counts(families)],
            score(network, data, "bic"),
            kernel.mmd(data, frame.iloc[:100]),
            select_representatives(kernel, data, 10, n_init=20, random_state=0).indices.tolist(),
        )
        if reference is None:
            reference = outcome
        else:
            assert outcome[0] == reference[0], name
            assert outcome[1] == pytest.approx(reference[1], rel=1e-12), name
            assert outcome[2] == pytest.approx(reference[2], rel=1e-12), name
            assert outcome[3] == reference[3], name


def test_arrays_of_codes_always_follow_the_declared_order():
    """learn(array) names columns X0.. in array order; every array given back is read in that same order."""
    rng = np.random.default_rng(0)
    x0 = rng.integers(0, 2, 3000)
    x2 = (x0 + (rng.random(3000) < 0.1)) % 2  # X0 -> X2 -> X1: topological order X0, X2, X1
    x1 = (x2 + (rng.random(3000) < 0.1)) % 2 + 2 * (rng.random(3000) < 0.3)
    codes = np.column_stack([x0, x1, x2])
    network = learn(codes, "chow-liu")
    assert network.variables != ("X0", "X1", "X2")  # the case that used to go wrong
    assert network.schema.variables == ("X0", "X1", "X2")
    frame = pd.DataFrame(codes, columns=["X0", "X1", "X2"])
    np.testing.assert_allclose(network.log_likelihood(codes), network.log_likelihood(frame))
    kernel = FisherKernel(network)
    np.testing.assert_allclose(kernel.diag(codes[:50]), kernel.diag(frame.iloc[:50]))
    sampled = network.sample(5, random_state=0, as_frame=False)
    np.testing.assert_array_equal(network.decode(sampled).to_numpy(dtype=int), sampled)
    assert list(network.sample(5, random_state=0).columns) == ["X0", "X1", "X2"]


def test_provider_with_other_states_is_refused():
    network = random_network(np.random.default_rng(1), n_vars=3)
    other = NumpyCounts(np.zeros((5, 3), dtype=int), Schema({v: ("a", "b", "c", "d") for v in network.variables}))
    with pytest.raises(SchemaError, match="build the provider with the model's schema"):
        as_provider(other, network.schema)


def test_sample_returns_labelled_rows_with_positions():
    provider = as_provider(pd.DataFrame({"a": list("xyzxyz"), "b": [1, 2, 1, 2, 1, 2]}))
    sample = provider.sample(4, random_state=0)
    assert len(sample) == 4 and sorted(sample.index) == list(sample.index)
    assert set(sample["a"]) <= {"x", "y", "z"}
    assert provider.sample(4, random_state=0).equals(sample)
    blocks = NumpyCounts(provider.codes, provider.schema, block_size=4).map_rows(len)
    assert blocks == [4, 2]


def test_as_provider_rejects_other_types():
    with pytest.raises(TypeError, match="Cannot use data of type"):
        as_provider({"a": [1, 2]})
    assert isinstance(as_provider(EncodedData(np.zeros((2, 1), dtype=int), ("a",), {"a": (0,)})), NumpyCounts)


def test_a_large_block_counted_on_threads_gives_the_same_tables(monkeypatch):
    """Families split between threads (round robin), tables back in the families' order, equal to one thread's."""
    from bnfisher._utils import parallel as _parallel
    from bnfisher.data import counts

    monkeypatch.setattr(_parallel, "PARALLEL_WORK", 1)
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, size=(1000, 6)).astype(np.int8)
    families = [(0,), (1, 0), (2, 1, 0), (3, 4), (5,), (4, 5, 3), (2,)]
    weights = rng.random(1000)
    for w in (None, weights):
        one = counts.count_block(codes, families, [3] * 6, w, n_jobs=1)
        two = counts.count_block(codes, families, [3] * 6, w, n_jobs=2)
        assert all(np.array_equal(a, b) and a.shape == b.shape for a, b in zip(one, two))
        assert [t.shape for t in two] == [tuple([3] * len(f)) for f in families]


@functools.lru_cache
def _dispatcher(function, patch):
    """The numba dispatcher of one of the package's compiled functions, compiled alone with the compiled helpers it
    calls (put in its module through ``patch``, so they go back after the test): the process's other functions keep
    running their fallbacks (``bnfisher._utils.jit._materialise`` would switch them all)."""
    import sys

    from bnfisher._utils import jit as _jit

    def compiled(value):
        return value.dispatcher or _jit._njit(value.function, value.options)  # noqa: SLF001

    if not hasattr(function, "function"):
        return function
    module = sys.modules[function.function.__module__]
    for name in function.function.__code__.co_names:  # its compiled callees first: numba types calls to them
        value = getattr(module, name, None)
        if isinstance(value, _jit._Deferred) and value is not function:  # noqa: SLF001
            patch.setattr(module, name, compiled(value))
    return compiled(function)


@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(0, 400), seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from(["int8", "int64"]),
       weighted=st.booleans(), threads=st.integers(1, 3), small_runs=st.booleans())
def test_the_row_pass_equals_counting_each_row_by_hand(n_rows, seed, dtype, weighted, threads, small_runs):
    """count_block's one pass over the rows (compiled and its NumPy fallback, runs of rows on threads, several
    runs of families, tables too large for the pass) against a dictionary of each row's cell."""
    from collections import defaultdict

    from bnfisher._utils import parallel as _parallel
    from bnfisher.data import _row_counts, counts

    rng = np.random.default_rng(seed)
    cards = rng.integers(1, 5, size=6)
    cards[5] = 100  # a family holding it and a column of 3 or more states exceeds the pass's table limit below
    codes = np.column_stack([rng.integers(0, r, size=n_rows) for r in cards]).astype(dtype).reshape(n_rows, 6)
    # int8 column by column, as encode keeps codes; int64 row by row (each dtype and layout is compiled apart)
    codes = np.asfortranarray(codes) if dtype == "int8" else np.ascontiguousarray(codes)
    families = [tuple(int(c) for c in rng.choice(6, size=rng.integers(0, 4), replace=False)) for _ in range(8)]
    weights = rng.random(n_rows) if weighted and dtype == "int8" else None  # each case compiles apart: three
    expected = []
    for family in families:
        cells = defaultdict(float)
        for t in range(n_rows):
            cells[tuple(int(codes[t, c]) for c in family)] += 1.0 if weights is None else weights[t]
        table = np.zeros([int(cards[c]) for c in family])
        for cell, value in cells.items():
            table[cell] += value
        expected.append(table)
    with pytest.MonkeyPatch.context() as patch:  # the settings of this example only
        patch.setattr(_parallel, "PARALLEL_WORK", 1)
        patch.setattr(_row_counts, "ROW_PASS_CELLS", 300)
        if small_runs:
            patch.setattr(_row_counts, "RUN_CELLS", 10)
        patch.setattr(_row_counts, "_count", _dispatcher(_row_counts._count, patch))  # noqa: SLF001
        compiled = counts.count_block(codes, families, cards, weights, n_jobs=threads)
        patch.setattr(_row_counts, "_count", _row_counts._numpy_count)  # noqa: SLF001
        fallback = counts.count_block(codes, families, cards, weights, n_jobs=threads)
    for ours in (compiled, fallback):
        for table, reference in zip(ours, expected):
            assert table.shape == reference.shape and table.dtype == (np.int64 if weights is None else np.float64)
            if weights is None:
                np.testing.assert_array_equal(table, reference)
            else:
                np.testing.assert_allclose(table, reference, rtol=1e-12)
    for a, b in zip(compiled, fallback):  # the same additions in the same order: bit for bit
        np.testing.assert_array_equal(a, b)


def test_a_code_outside_its_states_is_refused_before_any_cell_is_written(monkeypatch):
    from bnfisher.data import _row_counts, counts

    codes = np.array([[0, 1], [1, 1], [1, -1], [0, 2]], dtype=np.int8)
    for kernel in (_dispatcher(_row_counts._count, monkeypatch), _row_counts._numpy_count):  # noqa: SLF001
        monkeypatch.setattr(_row_counts, "_count", kernel)
        with pytest.raises(ValueError, match=r"Row 2 holds code -1 in column 1, outside its 2 states"):
            counts.count_block(codes, [(0,), (0, 1)], [2, 2])
        with pytest.raises(ValueError, match=r"Row 3 holds code 2 in column 1"):
            counts.count_block(codes[[0, 1, 0, 3]], [(1,)], [2, 2])


def test_a_pool_inside_a_pool_runs_serially():
    """map_threads called from one of its own threads runs there (no nested pools oversubscribing the cores)."""
    import threading

    from bnfisher._utils.parallel import map_threads

    def inner(_):
        return [name for name in map_threads(lambda x: threading.current_thread().name, range(4), n_jobs=2)]

    outer = list(map_threads(inner, range(2), n_jobs=2))
    assert all(len(set(names)) == 1 for names in outer)  # every inner item on its outer worker's thread
    assert {names[0] for names in outer} != {threading.current_thread().name}


@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(1, 3000), n_columns=st.integers(1, 40), states=st.integers(2, 40),
       block=st.integers(1, 700), threads=st.sampled_from([1, 2]), seed=st.integers(0, 2**32 - 1))
def test_distinct_rows_in_blocks_against_a_dictionary_of_rows(n_rows, n_columns, states, block, threads, seed):
    """distinct_rows (one sort, or blocks sorted on one or two threads and merged; one packed word or several)
    against a dictionary filled row by row in order: the rows numbered by first occurrence, their copies, and
    each row's distinct row."""
    from bnfisher._utils import parallel as _parallel
    from bnfisher.data import counts

    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, states, size=(n_rows, n_columns)).astype(np.int8)
    codes[:, : rng.integers(0, n_columns + 1)] = rng.integers(-1, 2)  # constant columns: many duplicates
    codes[rng.random(n_rows) < 0.3] = codes[0]
    seen: dict = {}
    expected_inverse = [seen.setdefault(row.tobytes(), len(seen)) for row in codes]
    expected_first = [expected_inverse.index(u) for u in range(len(seen))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counts, "BLOCK_ROWS", block)
        patch.setattr(_parallel, "PARALLEL_WORK", 0)
        first, inverse, copies = counts.distinct_rows(codes, [states] * n_columns, n_jobs=threads)
        reduced = counts.distinct_rows(codes, [states] * n_columns, with_inverse=False, n_jobs=threads)
    assert first.tolist() == expected_first and inverse.tolist() == expected_inverse
    assert copies.tolist() == np.bincount(expected_inverse).tolist()
    assert reduced[1] is None and np.array_equal(reduced[0], first) and np.array_equal(reduced[2], copies)


def _hand_counts(codes, weights, family, cards):
    """A count table by a Python loop over the rows (the oracle of the pooled tables)."""
    table = np.zeros([cards[v] for v in family])
    for row, weight in zip(codes, weights):
        table[tuple(row[v] for v in family)] += weight
    return table


def test_summed_counts_equal_the_pooled_rows_counted_by_hand():
    from bnfisher.data.summed import KeptCounts, SummedCounts

    rng = np.random.default_rng(4)
    cards = [2, 3, 4]
    schema = Schema({f"v{i}": tuple(range(r)) for i, r in enumerate(cards)})
    parts = [np.column_stack([rng.integers(0, r, size=n) for r in cards]) for n in (40, 7, 1)]
    weights = [rng.integers(1, 5, size=len(p)).astype(float) for p in parts]
    providers = [NumpyCounts(p, schema, weights=w) for p, w in zip(parts, weights)]
    pooled = SummedCounts(KeptCounts(providers[0]), *providers[1:])
    families = [(0,), (1, 2), (0, 1, 2), (2, 0)]
    every, all_weights = np.vstack(parts), np.concatenate(weights)
    for family, table in zip(families, pooled.counts(families)):
        np.testing.assert_array_equal(table, _hand_counts(every, all_weights, family, cards))
    assert pooled.n_rows == 48 and isinstance(pooled, CountsProvider)
    # A structure learned on the sum is the one learned on the rows themselves.
    learned = learn(pooled, "chow-liu", schema=schema)
    direct = learn(NumpyCounts(every, schema, weights=all_weights), "chow-liu", schema=schema)
    assert learned.parents == direct.parents
    for v in schema.variables:
        np.testing.assert_array_equal(learned.cpts[v], direct.cpts[v])


def test_kept_counts_count_each_family_once_and_hand_out_read_only_tables():
    from concurrent.futures import ThreadPoolExecutor

    from bnfisher.data.summed import KeptCounts

    schema = Schema({"a": (0, 1), "b": (0, 1, 2)})
    asked = []

    class Counting(NumpyCounts):
        def counts(self, families):
            asked.append([tuple(f) for f in families])
            return super().counts(families)

    codes = np.array([[0, 1], [1, 2], [0, 1], [1, 0]])
    kept = KeptCounts(Counting(codes, schema))
    with ThreadPoolExecutor(4) as pool:
        tables = list(pool.map(lambda _: kept.counts([(0, 1), (1,)]), range(16)))
    assert sorted(f for call in asked for f in call) == [(0, 1), (1,)]  # counted once, whatever the threads
    assert all(np.array_equal(t[0], [[0, 2, 0], [1, 0, 1]]) for t in tables)
    kept.counts([(1,), (0,)])
    assert asked[-1] == [(0,)] and kept.n_kept == 3
    with pytest.raises(ValueError, match="read-only"):
        tables[0][0][0, 0] = 5


def test_summed_counts_refuse_parts_of_other_schemas_and_sample_positions_of_the_pool():
    from bnfisher.data.summed import SummedCounts
    from bnfisher.exceptions import OptionError

    a = NumpyCounts(np.array([[0, 1], [1, 1]]), Schema({"a": (0, 1), "b": (0, 1)}))
    b = NumpyCounts(np.array([[0, 2]]), Schema({"a": (0, 1), "b": (0, 1, 2)}))
    with pytest.raises(OptionError, match="Part 1 of SummedCounts has other variables or states"):
        SummedCounts(a, b)
    with pytest.raises(OptionError, match="at least one"):
        SummedCounts()
    pooled = SummedCounts(a, NumpyCounts(np.array([[1, 0], [0, 0], [1, 1]]), a.schema))
    rows = pooled.sample(5, random_state=0)
    assert sorted(rows.index) == [0, 1, 2, 3, 4]
    labels = [tuple(r) for r in rows.sort_index().to_numpy().tolist()]
    assert labels == [(0, 1), (1, 1), (1, 0), (0, 0), (1, 1)]


@pytest.mark.parametrize("seed", range(4))
def test_the_numpy_counting_stops_at_the_first_row_outside_its_states(seed):
    """The compiler's fallback (``_numpy_count``) returns the first row whose code in a counted column is -1 or at
    least its states (found by looking at every cell), -1 when there is none; columns no family counts may hold
    anything."""
    from bnfisher.data import _row_counts

    rng = np.random.default_rng(seed)
    cards = [3, 4, 2, 5, 3]
    codes = np.column_stack([rng.integers(0, r, 40) for r in cards]).astype(np.int8)
    families = [(0, 2), (1, 3, 2)]  # column 4 is counted by no family
    codes[rng.integers(40), 4] = 9
    members, offsets, strides, states, table_offsets = _row_counts.packed_families(families, cards)
    out = np.zeros(int(table_offsets[-1]))
    args = (members, offsets, strides, states, table_offsets, np.zeros(0), out)
    count = _row_counts._numpy_count  # noqa: SLF001 - the fallback itself
    assert count(codes, 5, 40, *args) == -1
    bad = sorted(rng.choice(np.arange(5, 40), size=2, replace=False))
    codes[bad[0], [0, 1, 2, 3][seed]] = [-1, 4, 2, 5][seed]  # below, or at the column's number of states
    codes[bad[1], 0] = -1
    counted = [0, 1, 2, 3]
    first = min(i for i in range(5, 40) if any(not 0 <= codes[i, c] < cards[c] for c in counted))
    assert first == bad[0]
    assert count(codes, 5, 40, *args) == first


@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(0, 300), n_vars=st.integers(2, 9), block=st.sampled_from([1, 7, 8192]),
       missing=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_the_one_hot_gram_gives_every_pair_table_as_counting_rows_by_hand(n_rows, n_vars, block, missing, seed):
    """Every pair's table from the Gram matrix of the one-hot rows (blocks of 1, 7 or all rows) against a count of
    each row by hand over the rows observed on both columns."""
    from unittest import mock

    from bnfisher.data import _pair_gram

    rng = np.random.default_rng(seed)
    cards = rng.integers(1, 5, size=n_vars)
    codes = np.column_stack([rng.integers(0, r, size=n_rows) for r in cards]).astype(np.int8)
    if missing:
        codes[rng.random(codes.shape) < 0.2] = -1
    pairs = [(a, b) for a in range(n_vars) for b in range(n_vars) if a != b]  # both orientations
    with mock.patch.object(_pair_gram, "MAX_BLOCK_ROWS", block):
        tables = _pair_gram.pair_tables(codes, pairs, cards, missing=missing)
    assert tables is not None
    for (a, b), table in zip(pairs, tables):
        expected = np.zeros((cards[a], cards[b]), dtype=np.int64)
        for x, y in codes[:, [a, b]].tolist():
            if x >= 0 and y >= 0:
                expected[x, y] += 1
        assert table.dtype == np.int64 and table.flags.c_contiguous
        np.testing.assert_array_equal(table, expected)


def test_the_provider_counts_many_pairs_by_the_gram_and_anything_else_row_by_row(monkeypatch):
    """All pairs of a table go to the Gram matrix (the same tables as the row pass), with missing cells or rows with
    whole numbers of copies too; single columns, triples, a few pairs, fractional weights and a code outside its
    states take the row pass, which names it."""
    from bnfisher.data import _pair_gram
    from bnfisher.data import providers as providers_module

    used = []

    def spy(*args, **kwargs):
        tables = _pair_gram.pair_tables(*args, **kwargs)
        used.append(tables is not None)
        return tables

    monkeypatch.setattr(providers_module, "pair_tables", spy)
    network = random_network(np.random.default_rng(2), n_vars=12, max_parents=2, max_states=4)
    codes = network.encode(network.sample(500, random_state=0)).codes
    pairs = [(a, b) for a in range(12) for b in range(a + 1, 12)]
    for holes in (False, True):
        if holes:
            codes = codes.copy()
            codes[np.random.default_rng(3).random(codes.shape) < 0.1] = -1
        provider = NumpyCounts(codes, network.schema, missing="available-case" if holes else "error")
        ours = provider.counts(pairs)
        for (a, b), table in zip(pairs, ours):
            observed = (codes[:, [a, b]] >= 0).all(axis=1)
            np.testing.assert_array_equal(table, count_family(codes[observed], [a, b], network.cardinalities))
    assert used == [True, True]
    used.clear()
    provider = NumpyCounts(codes, network.schema, missing="available-case")
    provider.counts([(0,), (1, 2, 3)])
    provider.counts(pairs[:1])
    fractional = np.full(500, 0.5)
    NumpyCounts(np.abs(codes), network.schema, weights=fractional).counts(pairs)  # sums in row order, as ever
    assert used == [False, False, False]
    copies = np.random.default_rng(4).integers(0, 9, 500).astype(np.float64)  # distinct rows and their copies
    weighted = NumpyCounts(np.abs(codes), network.schema, weights=copies).counts(pairs)
    assert used[-1] is True
    for table, expected in zip(weighted, count_block(np.abs(codes), pairs, network.cardinalities, copies)):
        assert table.dtype == expected.dtype == np.float64
        np.testing.assert_array_equal(table, expected)
    bad = np.abs(codes)
    bad[7, 4] = network.cardinalities[4]
    with pytest.raises(ValueError, match=rf"Row 7 holds code {network.cardinalities[4]} in column 4"):
        NumpyCounts(bad, network.schema).counts(pairs)
