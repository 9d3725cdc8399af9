import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow  # a 2-process LocalCluster per module

from bnfisher import FisherKernel, encode, learn, read_bif  # noqa: E402
from bnfisher.bn.scores import LocalScorer, ProviderScorer  # noqa: E402
from bnfisher.dask import DaskCounts  # noqa: E402
from bnfisher.data.providers import NumpyCounts  # noqa: E402
from bnfisher.datasets import load  # noqa: E402
from bnfisher.sklearn.embedding import FisherEmbedding  # noqa: E402
from bnfisher.summary import select_representatives  # noqa: E402

from _helpers import bif_path  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def alarm():
    network = read_bif(bif_path("alarm"))
    frame = network.sample(6000, random_state=0)
    return network, frame, dd.from_pandas(frame, npartitions=5)


def test_counts_equal_numpy_path(client, alarm, tmp_path):
    _, frame, ddf = alarm
    encoded = encode(frame)
    provider = DaskCounts(ddf)
    assert provider.states == encoded.states and provider.n_rows == len(frame)
    families = [(0,), (3, 5), (10, 2, 7), (36, 1, 2, 3)]
    reference = NumpyCounts.from_encoded(encoded).counts(families)
    for tables in (provider.counts(families), DaskCounts(ddf, persist=True).counts(families)):
        for ours, expected in zip(tables, reference):
            np.testing.assert_array_equal(ours, expected)
    path = tmp_path / "alarm.parquet"
    frame.astype(str).to_parquet(path)  # Parquet with plain string columns: states found in one pass
    from_parquet = DaskCounts(str(path))
    as_text = encode(frame.astype(str))  # sorted text labels on both paths
    assert from_parquet.states == as_text.states
    reference = NumpyCounts.from_encoded(as_text).counts([(3, 5)])[0]
    np.testing.assert_array_equal(from_parquet.counts([(3, 5)])[0], reference)


def test_scores_and_learned_structures_equal_numpy_path(client, alarm):
    _, frame, ddf = alarm
    encoded = encode(frame)
    provider = DaskCounts(ddf)
    for score in ["bic", "bdeu"]:
        ours = ProviderScorer(provider, score).scores_adding(4, (1,), [0, 2, 3])
        reference = LocalScorer(encoded.codes, encoded.cardinalities, score).scores_adding(4, (1,), [0, 2, 3])
        np.testing.assert_allclose(ours, reference, rtol=1e-12)
    for structure in ["chow-liu", "hc"]:
        a, b = learn(encoded, structure), learn(ddf, structure)
        assert a.edges == b.edges
        for v in a.variables:
            np.testing.assert_allclose(a.cpts[v], b.cpts[v], rtol=1e-12)


def test_classifier_structures_equal_numpy_path(client):
    frame = load("nursery").iloc[::3]
    ddf = dd.from_pandas(frame, npartitions=4)
    for structure, options in [("tan", {}), ("kdb", {"k": 2})]:
        a = learn(frame, structure, class_variable="class", **options)
        b = learn(ddf, structure, class_variable="class", **options)
        assert a.edges == b.edges


def test_mmd_embedding_and_selection_on_dask(client, alarm):
    network, frame, ddf = alarm
    kernel = FisherKernel(network)
    first, second = frame.iloc[:2500], frame.iloc[2500:]
    assert kernel.mmd(dd.from_pandas(first, npartitions=2), dd.from_pandas(second, npartitions=3)) == \
        pytest.approx(kernel.mmd(first, second), rel=1e-12)
    assert kernel.set_kernel(ddf, frame) == pytest.approx(kernel.set_kernel(frame, frame), rel=1e-12)
    embedding = FisherEmbedding().fit(frame)
    np.testing.assert_allclose(embedding.transform(ddf).compute().toarray(), embedding.transform(frame).toarray())
    result = select_representatives(kernel, ddf, 30, pool_size=1500, n_init=50, random_state=0)
    assert len(result.pool) == 1500
    assert result.final_value == pytest.approx(kernel.mmd(result.pool.iloc[result.pool_positions], frame), rel=1e-9)
    assert result.final_value == pytest.approx(kernel.mmd(frame.iloc[result.indices], frame), rel=1e-9)  # data rows
    assert result.final_value < result.initial_value


def test_summarize_cli_with_dask_engine(client, alarm, tmp_path, capsys):
    from bnfisher.cli import main

    _, frame, _ = alarm
    path = tmp_path / "alarm.parquet"
    frame.astype(str).to_parquet(path)
    output, report, summary = tmp_path / "subset.csv", tmp_path / "report.html", tmp_path / "summary.json"
    assert main(["summarize", str(path), "--engine", "dask", "--scheduler", client.scheduler.address, "-k", "20",
                 "--pool-size", "1000", "--n-init", "30", "--n-random", "40", "--structure", "chow-liu",
                 "-o", str(output), "--report", str(report), "--json", str(summary),
                 "--plot", str(tmp_path / "summary.png")]) == 0
    out = capsys.readouterr().out
    assert "from distributed counts" in out and "uniform pool of 1000 of the 6000 rows" in out
    import json

    import pandas as pd

    content = json.loads(summary.read_text())  # the pooled summary is a SummaryResult: JSON and report work
    assert content["kind"] == "summary" and content["samples"][0]["rows"] == len(frame)
    assert content["selection"]["random_subsets"] == 40
    assert [p["row"] for p in content["prototypes"]] == pd.read_csv(output)["row"].tolist()
    assert "<html" in report.read_text().lower() and (tmp_path / "summary.png").stat().st_size > 0

    written = pd.read_csv(output, dtype=str, keep_default_na=False)
    assert len(written) == 20
    for _, row in written.iterrows():  # 'row' is the global row number of the very row written
        assert frame.iloc[int(row["row"])].astype(str).tolist() == row.iloc[1:].astype(str).tolist()


def test_mmd_test_on_dask_data_is_drawn_where_the_rows_lie_bit_for_bit(client, alarm, monkeypatch):
    """Hash buckets held by the workers: the in-memory statistic, null and p-value, bit for bit, on any number of
    partitions, with missing cells; the client never gathers the distinct rows."""
    from bnfisher.comparison import mmd_test, null
    from bnfisher.exceptions import DataWarning

    network, frame, _ = alarm
    holed = frame.astype(object).mask(np.random.default_rng(1).random(frame.shape) < 0.05)
    kernel = FisherKernel(network)
    monkeypatch.setattr(null, "ROWS_PER_BUCKET", 211)  # 29 buckets in 2 groups (the client tells the workers)

    def gathered(*args, **kwargs):
        raise AssertionError("the client gathered the distinct rows")

    reference = mmd_test(kernel, holed.iloc[:3000], holed.iloc[3000:], n_permutations=50, random_state=0)
    monkeypatch.setattr(DaskCounts, "distinct", gathered)
    for parts in ((3, 2), (1, 5)):
        first = dd.from_pandas(holed.iloc[:3000], npartitions=parts[0])
        second = dd.from_pandas(holed.iloc[3000:], npartitions=parts[1])
        result = mmd_test(kernel, first, second, n_permutations=50, random_state=0)
        assert result.full_statistic is None
        assert result.statistic == reference.statistic and result.unbiased == reference.unbiased
        np.testing.assert_array_equal(result.null_distribution, reference.null_distribution)
        assert result.p_value == reference.p_value
    with pytest.warns(DataWarning, match="`max_rows=1000` has no effect"):
        mmd_test(kernel, first, second, n_permutations=5, random_state=0, max_rows=1000)


def test_compare_cli_on_the_dask_engine_gives_the_in_memory_answer(client, tmp_path, capsys, monkeypatch):
    """``compare A B --engine dask --scheduler``: the test, p-value, interval, family tests, mechanism search and
    verdict of the in-memory job on the same rows, network and seed; the typical rows are the most typical distinct
    rows; JSON and report.  Beyond ``MECHANISM_ROWS`` distinct rows the search is not run, and a note says so."""
    import json

    from bnfisher.cli import main
    from bnfisher.datasets import load

    data = load("nursery").astype(str).sample(frac=1.0, random_state=0)
    first, second = data.iloc[:3000].copy(), data.iloc[3000:6000].copy()
    second.loc[second.index[:800], "health"] = "priority"
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    first.to_parquet(paths[0])
    second.to_parquet(paths[1])
    network = tmp_path / "net.bif"
    data.iloc[:6000].to_parquet(tmp_path / "both.parquet")
    assert main(["learn", str(tmp_path / "both.parquet"), "-o", str(network), "--quiet"]) == 0
    outputs = {}
    for engine in ("numpy", "dask"):
        outputs[engine] = tmp_path / f"{engine}.json"
        extra = ["--engine", "dask", "--scheduler", client.scheduler.address] if engine == "dask" else []
        assert main(["compare", str(paths[0]), str(paths[1]), "--network", str(network), "--permutations", "200",
                     "--json", str(outputs[engine]), "--report", str(tmp_path / f"{engine}.html"), "--quiet",
                     *extra]) == 0
    numpy, dask = (json.loads(outputs[engine].read_text()) for engine in ("numpy", "dask"))
    assert dask["test"] == numpy["test"]
    assert [f["p_value"] for f in dask["families"]] == [f["p_value"] for f in numpy["families"]]
    assert [s["rows"] for s in dask["samples"]] == [3000, 3000]
    typical = {(r["sample"], r["witness"]) for r in dask["typical_rows"]}
    assert typical == {(r["sample"], r["witness"]) for r in numpy["typical_rows"]}
    for key in ("mechanisms", "mechanisms_searched", "unoriented", "mechanism_cell", "verdict"):
        assert dask[key] == numpy[key], key
    assert any(row["changed"] for row in dask["mechanisms"]) and "mechanism that changed is health's" in dask["verdict"]
    distinct = [len(frame.drop_duplicates()) for frame in (first, second)]
    assert f"distinct rows ({distinct[0]} and {distinct[1]}), brought to the client" in " ".join(dask["notes"])
    import importlib

    distributed_job = importlib.import_module("bnfisher.jobs.compare_distributed")  # the module, not its function
    monkeypatch.setattr(distributed_job, "MECHANISM_ROWS", max(distinct) - 1)
    assert main(["compare", str(paths[0]), str(paths[1]), "--network", str(network), "--permutations", "200",
                 "--json", str(outputs["dask"]), "--quiet", "--engine", "dask", "--scheduler",
                 client.scheduler.address]) == 0
    beyond = json.loads(outputs["dask"].read_text())
    assert beyond["test"] == numpy["test"] and not beyond["mechanisms"]
    assert f"Mechanism search: not run on {max(distinct)} distinct rows (more than {max(distinct) - 1}" in \
        " ".join(beyond["notes"])


def test_every_input_form_gives_identical_results_through_as_provider(client, alarm, tmp_path):
    """DataFrame, codes, Dask DataFrame and Parquet path: same counts, scores, kernel and selection."""
    from bnfisher import as_provider, score

    network, frame, ddf = alarm
    path = tmp_path / "alarm.parquet"
    frame.to_parquet(path, row_group_size=1000)
    kernel = FisherKernel(network)
    families = [(0,), (3, 5), (10, 2, 7)]
    results = {}
    for name, data in {"frame": frame, "codes": network.sample(6000, random_state=0, as_frame=False),
                       "dask": ddf, "parquet": str(path)}.items():
        provider = as_provider(data, network.schema, engine="dask" if name == "parquet" else "auto")
        results[name] = ([t.tolist() for t in provider.counts(families)], score(network, provider, "bic"),
                         kernel.mmd(provider, frame.iloc[:500]))
    for name, outcome in results.items():
        assert outcome[0] == results["frame"][0], name
        assert outcome[1] == pytest.approx(results["frame"][1], rel=1e-12), name
        assert outcome[2] == pytest.approx(results["frame"][2], rel=1e-12), name


def test_sampled_rows_carry_global_row_numbers(client, alarm):
    _, frame, ddf = alarm
    sample = DaskCounts(ddf).sample(300, random_state=1)
    assert sample.index.max() >= 2000  # rows from later partitions keep their global numbers
    for row in sample.index[:25]:
        assert sample.loc[row].astype(str).tolist() == frame.iloc[row].astype(str).tolist()


def test_dask_bins_with_edges_from_the_whole_data_and_parquet_splits_by_row_group(client, tmp_path):
    import pandas as pd

    from bnfisher import Schema

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=4000), "c": rng.choice(["a", "b"], 4000)})
    path = tmp_path / "one.parquet"
    frame.to_parquet(path, row_group_size=500)
    provider = DaskCounts(str(path), bins=4)
    assert len(provider.frame.to_delayed()) == 8  # one partition per row group, not one per file
    expected = Schema.from_data(frame, bins=4)
    np.testing.assert_allclose(provider.schema.bin_edges["x"], expected.bin_edges["x"])
    np.testing.assert_array_equal(provider.counts([(0, 1)])[0],
                                  NumpyCounts.from_encoded(expected.encode(frame)).counts([(0, 1)])[0])


def test_missing_values_on_dask_equal_the_in_memory_path(client, alarm):
    """Available-case counts, expected counts (EM) and the marginalized MMD, partition by partition."""
    from bnfisher.bn.em import fit_em, fit_em_distributed

    network, frame, _ = alarm
    holed = frame.astype(object).mask(np.random.default_rng(0).random(frame.shape) < 0.15)
    ddf = dd.from_pandas(holed, npartitions=4)
    kernel = FisherKernel(network)
    assert kernel.mmd(ddf, holed.iloc[:1000]) == pytest.approx(kernel.mmd(holed, holed.iloc[:1000]), rel=1e-10)
    local = learn(holed, "chow-liu", missing="available-case")
    distributed = learn(ddf, "chow-liu", missing="available-case")
    assert local.edges == distributed.edges
    parents = dict(local.parents)
    # Two iterations: both are plain EM steps in fit_em too (its SQUAREM extrapolation comes third), so the
    # distributed E-steps must give the in-memory CPTs exactly.
    ours = fit_em_distributed(DaskCounts(ddf, local.schema, missing="allow"), parents, max_iter=2, tol=0)
    reference = fit_em(holed, parents, schema=local.schema, max_iter=2, tol=0)
    for v in local.variables:
        np.testing.assert_allclose(ours.network.cpts[v], reference.network.cpts[v], atol=1e-10)
    em = learn(ddf, "chow-liu", missing="em")
    assert em.learning_["em_converged"]


def test_dask_engine_gives_the_in_memory_rows_when_they_fit_and_handles_missing_cells(client, tmp_path, capsys):
    import numpy as np
    import pandas as pd

    from bnfisher.cli import main
    from bnfisher.datasets import load

    data = load("nursery").iloc[::3].astype(str).reset_index(drop=True)
    data = data.mask(np.random.default_rng(0).random(data.shape) < 0.03, "?")
    path = tmp_path / "n.parquet"
    data.to_parquet(path)
    outputs = {}
    for engine in ("numpy", "dask"):
        outputs[engine] = tmp_path / f"{engine}.csv"
        extra = ["--engine", "dask", "--scheduler", client.scheduler.address] if engine == "dask" else []
        assert main(["summarize", str(path), "-k", "20", "--n-init", "30", "--na-values", "?", "--quiet",
                     "-o", str(outputs[engine]), *extra]) == 0
    assert outputs["numpy"].read_text() == outputs["dask"].read_text()  # the same rows, in the same order
    capsys.readouterr()
    # More rows than the pool: distributed learning with EM over the missing cells, and a search on a pool.
    assert main(["summarize", str(path), "-k", "20", "--n-init", "30", "--na-values", "?", "--quiet",
                 "--engine", "dask", "--scheduler", client.scheduler.address, "--pool-size", "1000",
                 "-o", str(tmp_path / "pool.csv")]) == 0
    assert "drawn from a uniform pool of 1000" in capsys.readouterr().out  # --quiet: the verdict says so
    assert len(pd.read_csv(tmp_path / "pool.csv")) == 20


def test_parquet_files_are_read_by_row_group_in_the_tasks_with_the_same_results(client, alarm, tmp_path):
    """Parquet paths: each pass reads row groups with pyarrow in the tasks (row counts from the footers), and
    gives what dask-dataframe's reader gives -- counts, rows, distinct rows and learned states -- for two
    files, categorical and text columns, with and without a schema."""
    import pandas as pd

    from bnfisher.dask.client import _read_row_group

    network, frame, _ = alarm
    mixed = frame.astype(str)
    for v in mixed.columns[:5]:
        mixed[v] = mixed[v].astype("category")
    paths = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    mixed.iloc[:3500].to_parquet(paths[0], row_group_size=1000)
    mixed.iloc[3500:].to_parquet(paths[1], row_group_size=700)
    reader = dd.read_parquet(paths, split_row_groups=True)
    for schema in (None, network.schema):
        direct, through_dask = DaskCounts(paths, schema), DaskCounts(reader, schema)
        assert all(part.key.startswith(_read_row_group.__name__) for part in direct._parts)  # noqa: SLF001
        assert direct._lengths is not None and direct.n_rows == len(frame)  # noqa: SLF001 - no pass
        np.testing.assert_array_equal(direct.partition_offsets, through_dask.partition_offsets)
        assert direct.states == through_dask.states
        families = [(0,), (1, 7), (36, 2, 4)]
        for ours, theirs in zip(direct.counts(families), through_dask.counts(families)):
            np.testing.assert_array_equal(ours, theirs)
        sample = direct.sample(50, random_state=3)
        pd.testing.assert_frame_equal(sample.astype(str), through_dask.sample(50, random_state=3).astype(str))
        np.testing.assert_array_equal(direct.distinct()[1], through_dask.distinct()[1])


def test_the_local_cluster_takes_temporaries_from_the_heap_unless_configured_otherwise():
    """dask_client's workers get MALLOC_MMAP_THRESHOLD_ (64 MiB) beside Dask's trim threshold, and this process's
    environment is left without it (Dask's nanny writes its workers' variables there too); a value set in Dask's
    configuration is kept."""
    import os

    import dask

    from bnfisher.dask import dask_client

    def environment():
        return os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_TRIM_THRESHOLD_")

    assert "MALLOC_MMAP_THRESHOLD_" not in os.environ
    with dask_client(n_workers=1) as client:
        assert list(client.run(environment).values()) == [(str(64 * 2**20), "65536")]
        assert "MALLOC_MMAP_THRESHOLD_" not in os.environ
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 1 << 20}), \
                dask_client(n_workers=1) as client:
            assert list(client.run(environment).values()) == [(str(1 << 20), "65536")]
    finally:  # Dask's nanny wrote the configured value here
        os.environ.pop("MALLOC_MMAP_THRESHOLD_", None)


@pytest.mark.parametrize("case", ["constant", "one row", "reserved names"])
def test_compare_on_the_dask_engine_gives_a_result_or_a_one_line_refusal_on_edge_tables(client, tmp_path, capsys,
                                                                                         case):
    import pandas as pd

    from bnfisher.cli import main

    rng = np.random.default_rng(0)
    if case == "constant":
        a, b = pd.DataFrame({"a": ["x"] * 50, "b": ["y"] * 50}), pd.DataFrame({"a": ["x"] * 40, "b": ["y"] * 40})
    elif case == "one row":
        a, b = pd.DataFrame({"a": ["x"], "b": ["y"]}), pd.DataFrame({"a": ["x", "z"] * 20, "b": ["y", "w"] * 20})
    else:
        names = ["row", "sample", "witness", "copies"]
        a, b = (pd.DataFrame({n: rng.choice(["p", "q"], 60) for n in names}) for _ in range(2))
    a.to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")
    code = main(["compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--engine", "dask",
                 "--scheduler", client.scheduler.address, "--permutations", "99", "--quiet",
                 "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    if case == "one row":
        assert code == 2 and "at least 2 rows" in err and len(err.strip().splitlines()) == 1
    else:
        import json

        assert code == 0
        content = json.loads((tmp_path / "r.json").read_text())
        assert 0 < content["test"]["p_value"] <= 1
