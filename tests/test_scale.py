import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from bnfisher import FisherKernel, encode, learn, read_bif  # noqa: E402
from bnfisher.counts import NumpyCounts  # noqa: E402
from bnfisher.datasets import load  # noqa: E402
from bnfisher.embedding import FisherEmbedding  # noqa: E402
from bnfisher.scale import DaskCounts  # noqa: E402
from bnfisher.scores import LocalScorer, ProviderScorer  # noqa: E402
from bnfisher.selection import select_representatives  # noqa: E402

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
    assert result.final_value == pytest.approx(kernel.mmd(result.pool.iloc[result.indices], frame), rel=1e-9)
    assert result.final_value < result.initial_value


def test_summarize_cli_with_dask_engine(client, alarm, tmp_path, capsys):
    from bnfisher.cli import main

    _, frame, _ = alarm
    path = tmp_path / "alarm.parquet"
    frame.astype(str).to_parquet(path)
    output = tmp_path / "subset.csv"
    assert main(["summarize", str(path), "--engine", "dask", "--scheduler", client.scheduler.address, "-k", "20",
                 "--pool-size", "1000", "--n-init", "30", "--structure", "chow-liu", "--quiet",
                 "-o", str(output)]) == 0
    assert "from distributed counts" in capsys.readouterr().out
    assert len(output.read_text().splitlines()) == 21


def test_mmd_test_on_dask_data_uses_in_memory_subsamples(client, alarm):
    from bnfisher.selection import mmd_test

    network, frame, _ = alarm
    kernel = FisherKernel(network)
    first = dd.from_pandas(frame.iloc[:3000], npartitions=3)
    second = dd.from_pandas(frame.iloc[3000:], npartitions=3)
    result = mmd_test(kernel, first, second, n_permutations=50, random_state=0, max_rows=1000)
    assert result.full_statistic == pytest.approx(kernel.mmd(frame.iloc[:3000], frame.iloc[3000:]), rel=1e-12)
    assert 0 < result.p_value <= 1 and len(result.null_distribution) == 50
