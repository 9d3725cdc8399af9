"""Attacks a hostile user tried: each must be refused clearly or answered right, never answered wrongly."""

import json
import os
import time

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.cli import main
from bnfisher.exceptions import DataError, NetworkFileError, OptionError, OutputError, SchemaError

from _helpers import random_network


# ------------------------------------------------------------ silent wrong answers
def test_one_text_cell_does_not_make_identical_tables_differ(tmp_path, capsys):
    """'1' in one file and 1 in the other are one state: one changed cell moves MMD² by about one row's worth."""
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"code": rng.integers(0, 3, 300), "b": rng.choice(list("xy"), 300)})
    b = a.sample(frac=1, random_state=1).reset_index(drop=True)
    b["code"] = b["code"].astype(object)
    b.loc[0, "code"] = "unknown"
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    read = [bf.data.read_table(tmp_path / n) for n in ("a.csv", "b.csv")]
    schema = bf.Schema.from_data(*read)
    assert schema.states["code"] == (0, 1, 2, "unknown")
    network = bf.learn(pd.concat([schema.discretize(r) for r in read]), schema=schema)
    kernel = bf.FisherKernel(network)
    value = kernel.mmd(*(kernel.encode(r) for r in read))
    # Bound: moving one row of n changes the mean embedding by at most (|phi(x)| + |phi(y)|) / n.
    diag = kernel.diag(pd.concat(read))
    assert value <= (2 * np.sqrt(diag.max()) / len(a)) ** 2 + 1e-12
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--permutations", "200"]) == 0
    assert "No significant difference" in capsys.readouterr().out


def _tiny_network(probability: float) -> str:
    return ("network t { }\n"
            "variable A { type discrete [ 2 ] { a0, a1 }; }\n"
            "variable B { type discrete [ 2 ] { b0, b1 }; }\n"
            f"probability ( A ) {{ table {probability!r}, {1 - probability!r}; }}\n"
            "probability ( B | A ) { (a0) 0.5, 0.5; (a1) 0.3, 0.7; }\n")


@pytest.mark.parametrize("probability", [1e-160, 5e-324])
def test_cells_too_improbable_for_finite_features_are_refused_with_the_cell(probability):
    network = bf.parse_bif(_tiny_network(probability))
    with pytest.raises(DataError, match="Variable 'A', state 'a0'.*pseudocount"):
        bf.FisherKernel(network)


def test_small_but_representable_probabilities_still_give_finite_statistics():
    network = bf.parse_bif(_tiny_network(1e-30))
    kernel = bf.FisherKernel(network)
    X = pd.DataFrame({"A": ["a0", "a1", "a1"], "B": ["b0", "b1", "b0"]})
    Y = pd.DataFrame({"A": ["a1"] * 5, "B": ["b0", "b1", "b0", "b1", "b1"]})
    result = bf.mmd_test(kernel, X, Y, n_permutations=50, random_state=0)
    assert np.isfinite(result.statistic) and 0 < result.p_value <= 1


def test_a_bif_round_trip_keeps_the_declared_order_and_the_label_types():
    network = bf.BayesianNetwork({"a": ["z"]}, {"a": [[0.2, 0.8], [0.6, 0.4]], "z": [0.3, 0.7]},
                                 {"a": [0, 1], "z": [True, False]})
    assert network.schema.variables == ("a", "z") and network.variables == ("z", "a")
    again = bf.parse_bif(bf.write_bif(network))
    assert again.schema.variables == network.schema.variables
    assert again.states == network.states and type(again.states["a"][0]) is int
    X = np.array([[0, 1], [1, 0], [1, 1]])  # codes follow the declared order
    assert bf.FisherKernel(again).mmd(X[:2], X[1:]) == pytest.approx(bf.FisherKernel(network).mmd(X[:2], X[1:]))


@pytest.mark.parametrize("content, problem", [
    ("x,x,y\n1,2,3\n4,5,6\n", "more than once"),
    ("a,b\n1,x,p\n2,y,q\n", "header has 2 names"),
])
def test_csv_headers_that_pandas_would_misread_are_refused(tmp_path, content, problem):
    path = tmp_path / "t.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=problem):
        bf.data.read_table(path)


def test_an_integer_column_with_an_empty_cell_is_a_category_column_with_missing_values(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("code,b\n1,x\n,y\n2,x\n3,y\n")
    frame = bf.data.read_table(path)
    schema = bf.Schema.from_data(frame, missing="allow")
    assert schema.states["code"] == (1, 2, 3)
    assert schema.encode(frame, missing="allow").codes[:, 0].tolist() == [0, -1, 1, 2]


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(states="ab"), "Not a bnfisher schema"),
    (lambda d: d.update(variables="ab"), "Not a bnfisher schema"),
    (lambda d: d.update(bin_edges={"x": [0.0, float("nan"), 1.0]}), "finite"),
    (lambda d: d.update(bin_edges={"x": [0.0, 0.0, 1.0]}), "strictly increasing"),
    (lambda d: d.update(bin_edges={"x": ["a", "b", "c"]}), "must be numbers"),
    (lambda d: d.update(na_values=["p"]), "both a state"),
])
def test_schema_files_that_do_not_make_sense_are_refused(change, match):
    content = bf.Schema({"x": ["p", "q"]}).to_dict()
    change(content)
    with pytest.raises(SchemaError, match=match):
        bf.Schema.from_json(json.dumps(content))


def test_schema_json_refuses_labels_it_cannot_give_back():
    schema = bf.Schema({"x": [b"a", b"b"]})
    with pytest.raises(SchemaError, match="bytes"):
        schema.to_json()


def test_na_values_given_as_one_value_are_one_marker():
    assert bf.Schema({"x": ["p", "q"]}, na_values="NA").na_values == ("NA",)
    assert bf.Schema({"x": ["p", "q"]}, na_values=5).na_values == (5,)


# ------------------------------------------------------------------ data loss
def test_the_experiment_never_replaces_earlier_results(tmp_path, capsys):
    (tmp_path / "results.csv").write_text("precious\n")
    code = main(["experiment", "summarization", "--dataset", "nursery", "--model", "kdb", "--sizes", "40",
                 "--n-random", "5", "-o", str(tmp_path)])
    assert code == 2 and "already holds results.csv" in capsys.readouterr().err
    assert (tmp_path / "results.csv").read_text() == "precious\n"


# --------------------------------------------------------- BIF files, both ways
def test_the_bif_parser_is_linear_on_hostile_input():
    started = time.perf_counter()
    for text in ("network x { " + "property a = " * 80_000 + "}", "/*" * 400_000, "network x { " + "{" * 200_000):
        with pytest.raises(NetworkFileError):
            bf.parse_bif(text)
    assert time.perf_counter() - started < 10  # 1 MiB inputs; the old parser took minutes on 100 KiB


@pytest.mark.parametrize("prop", ["5", "null", "[" * 5000 + "]" * 5000, '{"a": 1}', '["x", [1]]'])
def test_bad_bif_properties_are_file_errors_with_the_line(prop):
    text = ("network x { property bnfisher_na_values = " + prop + " ; }\n"
            "variable a { type discrete [ 2 ] { y, n }; }\nprobability ( a ) { table 0.5, 0.5; }\n")
    with pytest.raises(NetworkFileError, match="line 1"):
        bf.parse_bif(text)


def test_bin_edges_that_are_not_numbers_are_a_file_error():
    text = ("network x { }\nvariable a { type discrete [ 2 ] { lo, hi };\n"
            '  property bnfisher_bin_edges = ["a", "b", "c"] ; }\nprobability ( a ) { table 0.5, 0.5; }\n')
    with pytest.raises(NetworkFileError, match="bnfisher_bin_edges"):
        bf.parse_bif(text)


@pytest.mark.parametrize("markers", [["//"], [";"], ["}"], [-1], ["/*", 2.5, True], ["a b"]])
def test_what_write_bif_accepts_read_bif_gives_back(markers):
    network = random_network(np.random.default_rng(1), n_vars=3)
    network = bf.BayesianNetwork(network.parents, network.cpts, network.states,
                                 schema=bf.Schema(network.states, na_values=markers))
    again = bf.parse_bif(bf.write_bif(network))
    assert again.schema.na_values == network.schema.na_values
    assert [type(m) for m in again.schema.na_values] == [type(m) for m in network.schema.na_values]


@pytest.mark.parametrize("label", ["http://x.org", "a/*b", "my net", ""])
def test_write_bif_refuses_names_and_labels_bif_cannot_hold(label):
    network = bf.BayesianNetwork({}, {"v": [0.5, 0.5]}, {"v": [label, "other"]}) if label else None
    if network is not None:
        with pytest.raises(SchemaError, match="Cannot write"):
            bf.write_bif(network)
    plain = bf.BayesianNetwork({}, {"v": [0.5, 0.5]}, {"v": ["p", "q"]})
    with pytest.raises(bf.BnfisherError, match="`name`"):
        bf.write_bif(plain, name=label or " ")


# ------------------------------------------------------------------ Dask edges
@pytest.fixture
def parquet_folder(tmp_path):
    pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.choice(list("xy"), 400), "b": rng.choice(list("pq"), 400)})
    folder = tmp_path / "Parquet"  # an upper-case folder name must be read as a folder
    folder.mkdir()
    frame.iloc[:200].to_parquet(folder / "part-0.parquet", index=False)
    frame.iloc[200:].to_parquet(folder / "part-1.parquet", index=False)
    return folder, frame


def test_a_parquet_folder_with_an_upper_case_name_is_read(parquet_folder):
    from bnfisher.dask import DaskCounts

    folder, frame = parquet_folder
    provider = DaskCounts(str(folder))
    assert provider.n_rows == len(frame)


def test_a_corrupt_parquet_part_is_a_data_error_naming_the_data(parquet_folder):
    from bnfisher.dask import DaskCounts

    folder, _ = parquet_folder
    data = (folder / "part-1.parquet").read_bytes()
    (folder / "part-1.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="Parquet"):
        DaskCounts(str(folder)).counts([(0,)])


def test_a_column_the_model_needs_absent_from_parquet_is_a_data_error(parquet_folder):
    from bnfisher.dask import DaskCounts

    folder, _ = parquet_folder
    schema = bf.Schema({"a": ["x", "y"], "c": ["u", "v"]})
    with pytest.raises(DataError, match="c"):
        DaskCounts(str(folder), schema).counts([(0,)])


@pytest.mark.slow
def test_a_scheduler_that_is_not_an_address_or_does_not_answer_is_refused_in_time():
    import socket

    pytest.importorskip("distributed")
    from bnfisher.dask import dask_client
    from bnfisher.exceptions import SchedulerError

    with pytest.raises(OptionError, match="address"):
        dask_client("not a url")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    started = time.perf_counter()
    try:
        with pytest.raises(SchedulerError, match="within 1 s"):
            dask_client(f"tcp://127.0.0.1:{listener.getsockname()[1]}", timeout=1)
    finally:
        listener.close()
    assert time.perf_counter() - started < 30


@pytest.mark.slow
def test_standard_input_is_read_as_a_table(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "t.csv"
    path.write_text("a,b\nx,p\ny,q\nx,q\n")
    done = subprocess.run([sys.executable, "-m", "bnfisher.cli", "mmd", "-", str(path)], input=path.read_bytes(),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert b"MMD\xc2\xb2 (eq. 10, biased) between - (3 rows)" in done.stdout
    assert b": 0\n" in done.stdout


def test_outputs_are_checked_before_any_work(tmp_path):
    with pytest.raises(OutputError):
        bf.data.check_outputs([tmp_path / "missing" / "x.csv"])
    assert not os.path.exists(tmp_path / "missing")


# ------------------------------------------------------------------- resources
def test_a_tiny_bif_declaring_a_huge_table_is_refused_before_allocating():
    text = ("network x { }\n"
            + "".join(f"variable p{i} {{ type discrete [ 8 ] {{ a, b, c, d, e, f, g, h }}; }}\n" for i in range(11))
            + "probability ( p10 | " + ", ".join(f"p{i}" for i in range(10)) + " ) { table 0.1; }\n")
    with pytest.raises(NetworkFileError, match="needs 8589934592 numbers"):
        bf.parse_bif(text)


@pytest.mark.parametrize("call", ["mmd_test", "select_representatives", "random_mmd_baseline"])
def test_requests_beyond_memory_are_refused_with_the_option_to_change(call):
    from bnfisher.exceptions import ResourceError
    from bnfisher.summary import random_mmd_baseline

    rng = np.random.default_rng(0)
    data = pd.DataFrame({"a": rng.choice(list("xy"), 200), "b": rng.choice(list("pq"), 200)})
    kernel = bf.FisherKernel(bf.learn(data))
    calls = {"mmd_test": lambda: bf.mmd_test(kernel, data.iloc[:100], data.iloc[100:], n_permutations=10**11),
             "select_representatives": lambda: bf.select_representatives(kernel, data, 10, n_init=10**11),
             "random_mmd_baseline": lambda: random_mmd_baseline(kernel, data, 10, n=10**11)}
    with pytest.raises(ResourceError, match="n_permutations|n_init"):
        calls[call]()


def test_the_memory_check_sees_an_address_space_limit():
    import subprocess
    import sys

    code = ("import resource; from bnfisher._utils import memory as _memory; "
            "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY)); "
            "print(_memory._read_available())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 4 << 30


# ------------------------------------------------------- raw errors from API fuzzing
def test_the_fuzzers_raw_error_signatures_are_library_errors(tmp_path, capsys):
    from bnfisher.bn.inference import query
    from bnfisher.sklearn import BayesianNetworkClassifier, FisherEmbedding

    rng = np.random.default_rng(0)
    duplicated = pd.DataFrame(rng.choice(list("ab"), (30, 3)), columns=["a", "a", "b"])
    for fit in (lambda: FisherEmbedding().fit(duplicated),
                lambda: BayesianNetworkClassifier().fit(duplicated, rng.integers(0, 2, 30))):
        with pytest.raises(DataError, match="duplicate column names"):
            fit()
    numbered = pd.DataFrame(rng.choice(list("ab"), (30, 3)), columns=[0, 1, 2])
    assert query(bf.learn(numbered), 0, numbered.drop(columns=[0]).iloc[:2]).shape == (2, 2)  # a name that is 0
    with pytest.raises(DataError, match="boolean"):
        bf.learn(pd.DataFrame({True: ["a", "b"]}))
    with pytest.raises(DataError, match="more than 1000000 states"):
        bf.learn(np.array([[2**63, 1], [2**63 + 1, 0]], dtype=np.uint64))
    huge = pd.DataFrame({"a": np.array([2**63, 2**64 - 1, 2**63], dtype=np.uint64), "b": ["x", "y", "x"]})
    assert bf.learn(huge).states["a"] == (2**63, 2**64 - 1)
    with pytest.raises(DataError, match="`y`"):
        BayesianNetworkClassifier().fit(numbered, np.full(30, np.nan))
    np.save(tmp_path / "seq.npy", rng.normal(size=(20, 2)))
    assert main(["hmm-kernel", str(tmp_path / "seq.npy"), "-o", str(tmp_path / "k.npy")]) == 2
    assert "is one array (.npy)" in capsys.readouterr().err
