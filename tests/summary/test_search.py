import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bnfisher import ConvergenceWarning, FisherKernel, learn, read_bif
from bnfisher.comparison import mmd_test, split_draws
from bnfisher.comparison.null import permutation_splits
from bnfisher.data.counts import distinct_rows
from bnfisher.summary import chi2_criterion, random_baseline, random_mmd_baseline, select_representatives

from _helpers import bif_path, random_network


def _mmd_from_gram(gram: np.ndarray, subset) -> float:
    """eq. 10 for X_S against X, literally from pairwise kernel values."""
    subset = list(subset)
    return gram[np.ix_(subset, subset)].mean() + gram.mean() - 2 * gram[subset].mean()


def _reference_algorithm1(gram: np.ndarray, start, max_sweeps=100):
    """Algorithm 1 as printed: recompute d(X_{S u {j}}, X) from pairwise kernels for every j."""
    n = gram.shape[0]
    S = list(np.sort(start))
    min_d = _mmd_from_gram(gram, S)
    scale = float(np.diag(gram).mean())  # the documented acceptance rule: tol relative to max(|d|, mean K(x, x))
    for _ in range(max_sweeps):
        changed = False
        for position in range(len(S)):
            others = S[:position] + S[position + 1:]
            values = np.full(n, np.inf)
            for j in range(n):
                if j not in S:
                    values[j] = _mmd_from_gram(gram, others + [j])
            best = values.min()
            if best < min_d - 1e-10 * max(abs(min_d), scale):
                j = int(np.flatnonzero(values <= best + 1e-12 * abs(best) + 1e-300)[0])
                S[position] = j
                min_d = _mmd_from_gram(gram, S)
                changed = True
        if not changed:
            break
    return np.sort(S), min_d


@pytest.fixture(scope="module")
def small_problem():
    network = read_bif(bif_path("asia"))
    data = network.sample(120, random_state=4)
    learned = learn(data, "chow-liu")
    return learned, data, FisherKernel(learned)


@pytest.mark.parametrize("k", [3, 10])
def test_fast_greedy_selects_the_same_rows_as_the_reference(small_problem, k):
    network, data, kernel = small_problem
    rng = np.random.default_rng(k)
    start = np.sort(rng.choice(len(data), size=k, replace=False))
    result = select_representatives(kernel, data, k, init=start)
    gram = kernel.gram(data)
    reference, reference_value = _reference_algorithm1(gram, start)
    np.testing.assert_array_equal(result.indices, reference)
    assert result.final_value == pytest.approx(reference_value, rel=1e-9, abs=1e-12)
    assert result.final_value == pytest.approx(kernel.mmd(data.iloc[result.indices], data), rel=1e-9, abs=1e-12)


def test_greedy_result_is_a_local_optimum_and_objective_never_increases(small_problem):
    network, data, kernel = small_problem
    result = select_representatives(kernel, data, 8, n_init=30, random_state=1)
    assert result.converged
    assert all(b <= a + 1e-12 for a, b in zip(result.objective, result.objective[1:]))
    gram = kernel.gram(data)
    chosen = list(result.indices)
    outside = [j for j in range(len(data)) if j not in chosen]
    for position in range(len(chosen)):
        for j in outside:
            trial = chosen[:position] + [j] + chosen[position + 1:]
            assert _mmd_from_gram(gram, trial) >= result.final_value - 1e-10


def test_chi2_greedy_is_a_local_optimum_of_the_chi2_objective(small_problem):
    network, data, kernel = small_problem
    codes = network.encode(data).codes
    result = select_representatives(kernel, data, 6, criterion="chi2", n_init=20, random_state=2)
    assert result.final_value == pytest.approx(chi2_criterion(codes, result.indices))
    chosen = list(result.indices)
    for position in range(len(chosen)):
        for j in set(range(len(data))) - set(chosen):
            trial = np.array(chosen[:position] + [j] + chosen[position + 1:])
            assert chi2_criterion(codes, trial) >= result.final_value - 1e-9


def test_chi2_criterion_equals_scipy_chisquare():
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, 4, 500), rng.integers(0, 3, 500), np.zeros(500, int)])
    subset = rng.choice(500, 60, replace=False)
    expected = 0.0
    for v in range(codes.shape[1]):
        full = np.bincount(codes[:, v], minlength=codes[:, v].max() + 1)
        used = full > 0
        if used.sum() < 2:
            continue  # one category: p = 1
        observed = np.bincount(codes[subset, v], minlength=full.size)[used]
        p = stats.chisquare(observed, full[used] / 500 * 60).pvalue
        expected -= np.log(p)
    assert chi2_criterion(codes, subset) == pytest.approx(expected, rel=1e-9)


def test_chi2_log_p_values_do_not_underflow():
    codes = np.column_stack([np.r_[np.zeros(500, int), np.ones(500, int)]] * 40)
    value = chi2_criterion(codes, np.arange(100))  # all from state 0: p ~ 1e-23 per variable
    assert np.isfinite(value) and value > 40 * 50


def test_callable_criterion_and_random_baseline(small_problem):
    network, data, kernel = small_problem
    codes = network.encode(data).codes

    def first_column_mean(indices):
        return abs(codes[indices, 0].mean() - codes[:, 0].mean())

    result = select_representatives(kernel, data, 5, criterion=first_column_mean, n_init=10, random_state=0)
    assert result.final_value == pytest.approx(first_column_mean(result.indices))
    mean, std, values = random_baseline(first_column_mean, len(data), 5, n=50, random_state=0)
    assert values.shape == (50,) and mean == pytest.approx(values.mean()) and std >= 0
    mean, std, values = random_mmd_baseline(kernel, data, 5, n=40, random_state=0)
    assert values[0] == pytest.approx(kernel.mmd(data.iloc[np.sort(
        np.random.default_rng(0).choice(len(data), 5, replace=False))], data))


def test_selection_is_reproducible_and_progress_runs(small_problem):
    network, data, kernel = small_problem
    a = select_representatives(kernel, data, 7, n_init=25, random_state=3, progress=True)
    b = select_representatives(kernel, data, 7, n_init=25, random_state=3)
    np.testing.assert_array_equal(a.indices, b.indices)
    with pytest.warns(ConvergenceWarning, match="max_sweeps=1"):
        select_representatives(kernel, data, 30, init="random", max_sweeps=1, random_state=0)


@pytest.mark.parametrize("k, match, error", [
    (0, "0 < k < n_rows", ValueError),
    (120, "0 < k < n_rows", ValueError),
    (-3, "0 < k < n_rows", ValueError),
    (2.5, "`k` must be an integer", TypeError),
])
def test_bad_k_raises(small_problem, k, match, error):
    network, data, kernel = small_problem
    with pytest.raises(error, match=match):
        select_representatives(kernel, data, k)


def test_empty_data_and_bad_init_raise(small_problem):
    network, data, kernel = small_problem
    with pytest.raises(ValueError, match="empty data"):
        select_representatives(kernel, data.iloc[:0], 1)
    with pytest.raises(ValueError, match="distinct row positions"):
        select_representatives(kernel, data, 2, init=np.array([1, 1]))
    with pytest.raises(ValueError, match="`criterion` must be"):
        select_representatives(kernel, data, 2, criterion="kl")


def test_permutation_test_uniform_under_null_and_powerful_under_alternative():
    network = random_network(np.random.default_rng(11), n_vars=4, max_parents=2, max_states=3)
    kernel = FisherKernel(network)
    p_values = []
    for seed in range(40):
        sample = network.sample(200, random_state=seed, as_frame=False)
        p_values.append(mmd_test(kernel, sample[:100], sample[100:], n_permutations=99, random_state=seed).p_value)
    p_values = np.array(p_values)
    assert 0.2 < p_values.mean() < 0.8
    assert np.mean(p_values <= 0.1) < 0.3
    assert stats.kstest(p_values, "uniform").pvalue > 0.001
    # A different distribution: rows only where the first variable takes its rarest state.
    sample = network.sample(5000, random_state=99, as_frame=False)
    rare = np.argmin(np.bincount(sample[:, 0]))
    shifted = sample[sample[:, 0] == rare][:150]
    result = mmd_test(kernel, sample[:150], shifted, n_permutations=199, random_state=0)
    assert result.p_value <= 0.01


def test_permutation_statistics_match_pairwise_definitions():
    network = random_network(np.random.default_rng(12), n_vars=3, max_parents=2, max_states=3)
    kernel = FisherKernel(network)
    X = network.sample(30, random_state=1, as_frame=False)
    Y = network.sample(25, random_state=2, as_frame=False)
    result = mmd_test(kernel, X, Y, n_permutations=20, random_state=0)
    assert result.statistic == pytest.approx(kernel.mmd(X, Y), rel=1e-9)
    gxx, gyy, gxy = kernel.gram(X), kernel.gram(Y), kernel.gram(X, Y)
    unbiased = ((gxx.sum() - np.trace(gxx)) / (30 * 29) + (gyy.sum() - np.trace(gyy)) / (25 * 24) - 2 * gxy.mean())
    assert result.unbiased == pytest.approx(unbiased, rel=1e-9, abs=1e-12)
    # Every null value is the MMD of a real split: reproduce the draws (copies of each distinct row sent to
    # the first sample) from the same seed and compute that split's MMD from the Gram matrix.
    pooled = np.vstack([X, Y])
    first, inverse, multiplicity = distinct_rows(pooled)
    draws = permutation_splits(pooled[first], multiplicity, 30, 20, random_state=np.random.default_rng(0))
    gram = kernel.gram(pooled)
    for value, draw in zip(result.null_distribution, draws):
        first = np.concatenate([np.flatnonzero(inverse == d)[:count] for d, count in enumerate(draw)])
        rest = np.setdiff1d(np.arange(55), first)
        by_gram = gram[np.ix_(first, first)].mean() + gram[np.ix_(rest, rest)].mean() - 2 * gram[
            np.ix_(first, rest)].mean()
        assert value == pytest.approx(by_gram, rel=1e-9, abs=1e-12)
    with pytest.raises(ValueError, match="at least 2 rows"):
        mmd_test(kernel, X[:1], Y)


def test_permutations_on_one_or_two_cores_give_the_same_statistics(monkeypatch):
    """Hash buckets are drawn on every core, each from its own stream, and summed in one order: the same null
    statistics, bit for bit, on one core and on two (small buckets and batches here: 13 buckets, 7 splits a batch)."""
    from bnfisher._utils import parallel as _parallel
    from bnfisher.comparison import null, permutation

    network = random_network(np.random.default_rng(12), n_vars=5, max_parents=2, max_states=3)
    X = network.sample(300, random_state=1, as_frame=False)
    Y = network.sample(250, random_state=2, as_frame=False)
    kernel = FisherKernel(network)
    monkeypatch.setattr(null, "ROWS_PER_BUCKET", 43)
    monkeypatch.setattr(null, "BATCH_CELLS", 7 * 40)
    outcomes, threads = {}, []
    real = _parallel.ThreadPoolExecutor

    def recording(*args, **kwargs):
        threads.append(kwargs.get("max_workers"))
        return real(*args, **kwargs)

    monkeypatch.setattr(_parallel, "ThreadPoolExecutor", recording)
    for cores in (1, 2):
        monkeypatch.setattr(_parallel, "resolve_jobs", lambda n_jobs, cores=cores: n_jobs if n_jobs and n_jobs > 0
                            else cores)  # this machine with `cores` cores
        outcomes[cores] = permutation.permutation_statistics(kernel, X, Y, n_permutations=40, random_state=3)
    assert threads and set(threads) == {2}  # pools only in the two-core run
    for name in ("null", "columns_null", "overlap_null"):
        np.testing.assert_array_equal(getattr(outcomes[1], name), getattr(outcomes[2], name))

def test_cores_are_bounded_by_a_containers_cpu_quota(tmp_path, monkeypatch):
    """cgroup v2 (``cpu.max``) and v1 (``cfs_quota_us`` / ``cfs_period_us``) quotas read in cores, none when
    unlimited or absent; ``n_jobs=-1`` then asks for the quota's cores (rounded up), not the machine's."""
    from bnfisher._utils import parallel as _parallel
    from bnfisher._utils.parallel import _cgroup_cpus

    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cpu.max").write_text("150000 100000\n")
    (tmp_path / "unlimited").mkdir()
    (tmp_path / "unlimited" / "cpu.max").write_text("max 100000\n")
    (tmp_path / "v1" / "cpu").mkdir(parents=True)
    (tmp_path / "v1" / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "v1" / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "v1none" / "cpu").mkdir(parents=True)
    (tmp_path / "v1none" / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "v1none" / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert _cgroup_cpus(tmp_path / "v2") == 1.5
    assert _cgroup_cpus(tmp_path / "unlimited") is None
    assert _cgroup_cpus(tmp_path / "v1") == 3.0
    assert _cgroup_cpus(tmp_path / "v1none") is None
    assert _cgroup_cpus(tmp_path / "absent") is None
    monkeypatch.setattr(_parallel.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    for quota, expected in ((1.5, 2), (None, 64), (0.2, 1), (100.0, 64)):
        monkeypatch.setattr(_parallel, "_cgroup_cpus", lambda quota=quota: quota)
        _parallel.available_cores.cache_clear()
        assert _parallel.available_cores() == expected
        assert _parallel.resolve_jobs(-1) == expected and _parallel.resolve_jobs(-2) == max(1, expected - 1)
    _parallel.available_cores.cache_clear()


def test_prefetch_yields_in_order_and_reraises():
    from bnfisher._utils.parallel import prefetch

    assert list(prefetch(lambda x: x * x, range(6))) == [0, 1, 4, 9, 16, 25]

    def failing(x):
        if x == 3:
            raise KeyError(x)
        return x

    seen = []
    with pytest.raises(KeyError):
        for value in prefetch(failing, range(6)):
            seen.append(value)
    assert seen == [0, 1, 2]


@pytest.mark.slow
def test_the_null_distribution_is_that_of_row_permutations():
    """Drawing copies of distinct rows is the same null as permuting rows (two-sample KS, 2,000 draws each)."""
    network = random_network(np.random.default_rng(5), n_vars=4, max_parents=2, max_states=3)
    kernel = FisherKernel(network)
    X = network.sample(60, random_state=1, as_frame=False)
    Y = network.sample(40, random_state=2, as_frame=False)
    ours = mmd_test(kernel, X, Y, n_permutations=2000, random_state=0).null_distribution
    pooled = np.vstack([X, Y])
    rng = np.random.default_rng(1)
    rows = [rng.permutation(100) for _ in range(2000)]
    reference = np.array([kernel.mmd(pooled[r[:60]], pooled[r[60:]]) for r in rows])
    assert stats.ks_2samp(ours, reference).pvalue > 0.01


def test_works_on_dataframes_with_labels():
    df = pd.DataFrame({"a": list("xyxyxxyy") * 5, "b": list("uuvvuvuv") * 5})
    kernel = FisherKernel(learn(df))
    result = select_representatives(kernel, df, 4, n_init=10, random_state=0)
    assert len(result.indices) == 4 and result.indices.max() < len(df)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(2, 5), st.integers(0, 2**31 - 1))
def test_greedy_search_ends_on_duplicate_heavy_tables(n_distinct, copies, seed):
    """Once the MMD is ~0 the search used to swap forever on rounding noise; now every run converges."""
    rng = np.random.default_rng(seed)
    distinct = pd.DataFrame({"a": rng.choice(list("xyz"), n_distinct), "b": rng.choice(list("uv"), n_distinct),
                             "c": rng.choice(list("pq"), n_distinct)})
    frame = pd.concat([distinct] * copies, ignore_index=True)
    kernel = FisherKernel(learn(frame, "chow-liu"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # converging, not stopped by the cap
        result = select_representatives(kernel, frame, n_distinct, n_init=10, random_state=seed)
    assert result.converged and result.n_sweeps < 20


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("missing", [False, True])
def test_search_from_codes_picks_the_rows_of_the_embedding_search(normalize, missing):
    """The O(N n) search on distinct rows (gathers of per-family tables) against the sparse mat-vec search."""
    from _helpers import embedding_greedy

    network = random_network(np.random.default_rng(11), 6, max_parents=2, max_states=4, floor=0.05)
    data = network.sample(400, random_state=2)
    data = pd.concat([data, data.iloc[:150]], ignore_index=True)  # many duplicate rows
    if missing:
        rng = np.random.default_rng(0)
        data = data.mask(rng.random(data.shape) < 0.05)
    kernel = FisherKernel(network, normalize=normalize)
    start = np.sort(np.random.default_rng(1).choice(len(data), size=25, replace=False))
    result = select_representatives(kernel, data, 25, init=start, candidates="all")
    reference, value, sweeps = embedding_greedy(kernel.embed(data), start)
    np.testing.assert_array_equal(result.indices, reference)
    assert result.n_sweeps == sweeps
    assert result.final_value == pytest.approx(value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_columns_are_the_gram_columns_compiled_in_numpy_and_on_two_threads(normalize, threads, monkeypatch):
    """K(., u) by gathers (compiled, on one thread or split between two; and NumPy's one take per family) against
    the Gram matrix of the embedding, on rows with missing cells (the marginalized kernel) and duplicates."""
    from bnfisher._utils import parallel as _parallel
    from bnfisher._utils.jit import _materialise
    from bnfisher.kernels.columns import _gather_rows, _numpy_gather

    network = random_network(np.random.default_rng(5), 7, max_parents=2, max_states=4, floor=0.05)
    data = network.sample(300, random_state=1)
    data = pd.concat([data, data.iloc[:60]], ignore_index=True)
    data = data.mask(np.random.default_rng(2).random(data.shape) < 0.03)
    kernel = FisherKernel(network, normalize=normalize)
    monkeypatch.setattr(_parallel, "PARALLEL_WORK", 1 if threads == 2 else 10**12)
    monkeypatch.setattr(_parallel, "resolve_jobs", lambda n_jobs: threads if n_jobs == -1 else n_jobs)
    columns = kernel.columns(data)
    assert columns.cells.dtype == np.uint16 and columns.cells.flags.c_contiguous
    gram = kernel.gram(data)
    _materialise()
    for unit in (0, 7, int(columns.incomplete[0]), columns.n_units - 1):
        row = int(columns.first[unit])
        np.testing.assert_allclose(columns.column(unit)[columns.inverse], gram[:, row], rtol=1e-10, atol=1e-12)
    lookup = np.random.default_rng(3).random(columns.n_cells + 1)
    lookup[-1] = 0.0
    compiled, numpy = np.empty(columns.n_units), np.empty(columns.n_units)
    _gather_rows(columns.cells, lookup, compiled, 0, columns.n_units)
    _numpy_gather(columns.cells, lookup, numpy, 0, columns.n_units)
    np.testing.assert_array_equal(compiled, numpy)  # the same sums in the same order: the same bits
    np.testing.assert_array_equal(columns._gather(lookup), compiled)  # noqa: SLF001 - split between threads


@pytest.mark.parametrize("normalize", [False, True])
def test_cell_sums_add_every_units_cell_weights_times_its_draws(normalize):
    """cell_sums (a pass over the cell index, compiled and in NumPy, plus the incomplete units' posterior weights)
    against each unit's weights placed one by one in a dense (cells x units) matrix (complete units: their cells;
    incomplete ones: their posterior cell weights), times the draws, in unit order and renumbered."""
    from bnfisher._utils.jit import _materialise
    from bnfisher.kernels.columns import _numpy_scatter, _scatter_rows

    network = random_network(np.random.default_rng(5), 6, max_parents=2, max_states=3, floor=0.05)
    data = network.sample(2000, random_state=1)
    data = data.mask(np.random.default_rng(2).random(data.shape) < 0.05)
    columns = FisherKernel(network, normalize=normalize).columns(data)
    assert columns.incomplete.size and columns.n_units > 256  # compiled: more than one block of 256 units
    expected = np.zeros((columns.n_cells, columns.n_units))
    for unit in range(columns.n_units):
        cells, weights = columns.unit_weights(unit)
        np.add.at(expected[:, unit], cells, weights)
    rng = np.random.default_rng(3)
    order = rng.permutation(columns.n_units)
    draws = rng.integers(0, 4, size=(7, columns.n_units)).astype(np.int32)
    renumbered = FisherKernel(network, normalize=normalize).columns(data)
    renumbered.renumber(order)
    for dtype in (np.float64, np.float32):
        np.testing.assert_allclose(columns.cell_sums(draws, dtype=dtype), expected @ draws.T, rtol=1e-6)
        np.testing.assert_allclose(renumbered.cell_sums(draws, dtype=dtype), expected[:, order] @ draws.T, rtol=1e-6)
        compiled, numpy = (np.empty((columns.n_cells + 1, 7), dtype=dtype) for _ in range(2))
        _materialise()
        _scatter_rows(columns.cells, draws, compiled)
        _numpy_scatter(columns.cells, draws, numpy)
        np.testing.assert_array_equal(compiled, numpy)  # integer sums: exact either way
    # Renumbered, every unit-indexed attribute follows: the same kernel columns, rows and weights.
    np.testing.assert_array_equal(renumbered.inverse, np.argsort(order)[columns.inverse])
    np.testing.assert_allclose(renumbered.column(0), columns.column(int(order[0]))[order], rtol=1e-12)
    for unit in (0, int(renumbered.incomplete[0]), columns.n_units - 1):
        for new_part, old_part in zip(renumbered.unit_weights(unit), columns.unit_weights(int(order[unit]))):
            np.testing.assert_array_equal(new_part, old_part)


def test_the_column_cache_keeps_the_first_columns_when_the_subset_outgrows_it(monkeypatch):
    """Columns are asked for in the same order every sweep: with room for 4 of 10, those 4 are reused (a cache
    that evicted the least recently used would reuse none: as many columns computed as with no room) and the
    search picks the same rows whatever the room."""
    from bnfisher.kernels.columns import KernelColumns
    from bnfisher.summary import criteria

    network = random_network(np.random.default_rng(5), 7, max_parents=2, max_states=4, floor=0.05)
    data = network.sample(400, random_state=1)
    kernel = FisherKernel(network)
    n_units = kernel.columns(data).n_units
    computed = []
    original = KernelColumns.column

    def counting(self, unit):
        computed.append(unit)
        return original(self, unit)

    monkeypatch.setattr(KernelColumns, "column", counting)
    results, counts = {}, {}
    for room in (0, 4, 10**6):
        computed.clear()
        monkeypatch.setattr(criteria, "COLUMN_CACHE_BYTES", room * 8 * n_units)
        results[room] = select_representatives(kernel, data, 10, n_init=5, random_state=0)
        counts[room] = len(computed)
    assert results[0].n_sweeps >= 3
    for room in (4, 10**6):
        np.testing.assert_array_equal(results[room].indices, results[0].indices)
    assert counts[10**6] < counts[4] < counts[0]


@pytest.mark.parametrize("method", ["bernoulli", "subsets"])
def test_split_draws_are_multivariate_hypergeometric(method):
    """Each split is a uniform subset of the rows: compare with numpy's multivariate hypergeometric sampler."""
    multiplicity = np.array([1, 1, 1, 5, 2, 1, 7, 1, 3, 1])
    n_first = 11
    ours = split_draws(multiplicity, n_first, 20000, random_state=3, method=method).T
    reference = np.random.default_rng(4).multivariate_hypergeometric(multiplicity, n_first, size=20000)
    assert (ours.sum(axis=1) == n_first).all() and (ours <= multiplicity).all() and (ours >= 0).all()
    for u, m in enumerate(multiplicity):  # every marginal is hypergeometric(N, m, n_first)
        expected = stats.hypergeom(multiplicity.sum(), m, n_first).pmf(np.arange(m + 1)) * len(ours)
        observed = np.bincount(ours[:, u], minlength=m + 1)
        keep = expected > 5
        assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()
                               ).pvalue > 1e-3
    # and the joint law: covariances between distinct rows agree with the exact sampler's
    np.testing.assert_allclose(np.cov(ours.T), np.cov(reference.T), atol=0.05)
    # One first-sample size per split (a bucket's share of each permutation): each split is uniform given its size.
    sizes = np.random.default_rng(6).integers(0, multiplicity.sum() + 1, size=20000)
    varied = split_draws(multiplicity, sizes, 20000, random_state=7, method=method).T
    np.testing.assert_array_equal(varied.sum(axis=1), sizes)
    assert (varied <= multiplicity).all() and (varied >= 0).all()
    for size in (3, 11, 20):  # given its size, a split's marginal is hypergeometric
        chosen = varied[sizes == size]
        for u in (0, 6):
            m = multiplicity[u]
            expected = stats.hypergeom(multiplicity.sum(), m, size).pmf(np.arange(m + 1)) * len(chosen)
            observed = np.bincount(chosen[:, u], minlength=m + 1)
            keep = expected > 5
            assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()
                                   ).pvalue > 1e-3


def test_selection_on_dask_data_that_fits_is_the_in_memory_selection():
    dd = pytest.importorskip("dask.dataframe")
    network = random_network(np.random.default_rng(5), 5, max_parents=2)
    data = network.sample(600, random_state=1).astype(object)
    data = data.mask(np.random.default_rng(2).random(data.shape) < 0.03)
    kernel = FisherKernel(network)
    memory = select_representatives(kernel, data, 25, n_init=40, random_state=3)
    distributed = select_representatives(kernel, dd.from_pandas(data, npartitions=3), 25, n_init=40,
                                         random_state=3)
    np.testing.assert_array_equal(memory.indices, distributed.indices)
    assert distributed.final_value == memory.final_value and distributed.pool is None
