"""Fuzzing: random small tables through the API, mutated files through the command line.

Every failure must be a library error (a :class:`bnfisher.BnfisherError`) or, on the
command line, exit status 2 with one line on stderr -- never a raw traceback, never a
silently empty network, never a modified input.  The number of examples is bounded
(``BNFISHER_FUZZ_EXAMPLES``, default 120 per test); with ``BNFISHER_FUZZ_REPORT=path``
the outcome counts are written there as JSON (the closing note's figures).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import gzip
import io
import os
import tempfile
import warnings
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bnfisher as bf
from bnfisher.bn.inference import query
from bnfisher.cli import main
from bnfisher.comparison import mmd_test
from bnfisher.sklearn import BayesianNetworkClassifier, FisherEmbedding
from bnfisher.summary import select_representatives

from _helpers import fuzz_settings, mutate_bytes, report_fuzz_counts

# Hypothesis draws many tables per test: the whole fuzz suite is in the slow tier (CI runs it).
pytestmark = pytest.mark.slow

OUTCOMES: dict = collections.defaultdict(collections.Counter)
FUZZ = fuzz_settings(120)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    report_fuzz_counts(OUTCOMES)


# ------------------------------------------------------------------ tables
# "NA", "None", "null": words pandas reads as missing, labels in a column of text
_LABELS = st.sampled_from(["a", "b", "c", "?", "", " x", "1", "ä", "NA", "None", "null"])


@st.composite
def tables(draw):
    n_rows = draw(st.integers(0, 25))
    n_cols = draw(st.integers(1, 4))
    columns = {}
    for j in range(n_cols):
        kind = draw(st.sampled_from(["str", "int", "bool", "float", "constant", "category", "missing", "mixed",
                                     "objects", "huge"]))
        if kind == "str":
            values = draw(st.lists(_LABELS, min_size=n_rows, max_size=n_rows))
        elif kind == "int":
            values = draw(st.lists(st.integers(-3, 3), min_size=n_rows, max_size=n_rows))
        elif kind == "bool":
            values = draw(st.lists(st.booleans(), min_size=n_rows, max_size=n_rows))
        elif kind == "float":
            values = draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=n_rows, max_size=n_rows))
        elif kind == "constant":
            values = ["k"] * n_rows
        elif kind == "category":
            values = pd.Categorical(draw(st.lists(st.sampled_from("xyz"), min_size=n_rows, max_size=n_rows)),
                                    categories=list("zyxw"))
        elif kind == "missing":
            values = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n_rows, max_size=n_rows))
        elif kind == "mixed":
            values = draw(st.lists(st.sampled_from([1, True, 1.0, "1", 0]), min_size=n_rows, max_size=n_rows))
        elif kind == "objects":  # the types an object column can hold that compare oddly
            values = draw(st.lists(st.sampled_from([Decimal("1.5"), np.int8(3), (1, 2), "x", b"y"]),
                                   min_size=n_rows, max_size=n_rows))
        else:  # "huge": unsigned integers beyond int64
            values = np.array(draw(st.lists(st.sampled_from([2**63, 2**63 + 1, 2**64 - 1]), min_size=n_rows,
                                            max_size=n_rows)), dtype=np.uint64)
        # Mostly ordinary names; sometimes a repeated one, a number, or one pandas cannot select by.
        name = draw(st.sampled_from([f"c{j}"] * 12 + [j, j, True, None, np.nan, "c0"]))
        columns[len(columns)] = (name, pd.Series(values, dtype=object if kind in ("mixed", "objects") else None))
    frame = pd.DataFrame({k: series for k, (_, series) in columns.items()})
    frame.columns = [name for name, _ in columns.values()]  # names may repeat or be True, None, NaN
    return frame


def _call(function, *args, **kwargs):
    """One API call, counted (the closing note reports how many calls the fuzzer made)."""
    OUTCOMES["api"]["calls"] += 1
    return function(*args, **kwargs)


def _run_api(frame: pd.DataFrame, structure: str, bins, choice: str = "") -> None:
    # Which columns bins bins: the rule, or the first column named to bin or to keep as labels.
    binning = {"bin_columns": {"bin_columns": list(frame.columns[:1])},
               "categorical": {"categorical": list(frame.columns[:1])}}.get(choice, {}) if bins else {}
    schema = _call(bf.Schema.from_data, frame, bins=bins,
                   **{"columns" if k == "bin_columns" else k: v for k, v in binning.items()})
    network = _call(bf.learn, frame, structure, schema=schema)
    assert len(network.variables) == frame.shape[1]  # never a silently empty network
    kernel = _call(bf.FisherKernel, network)
    _call(kernel.gram, frame)
    _call(kernel.mmd, frame, frame)
    if len(frame) > 2:
        _call(select_representatives, kernel, frame, 2, n_init=3, max_sweeps=5, random_state=0)
        _call(mmd_test, kernel, frame, frame, n_permutations=5, random_state=0)
    again = _call(bf.parse_bif, _call(bf.write_bif, network))
    assert len(again.variables) == len(network.variables)
    _call(bf.score, network, frame, "bdeu")
    assert _call(bf.Schema.from_json, _call(schema.to_json)) == schema
    if len(frame) > 2:
        _call(bf.mmd_by_family, kernel, frame, frame, n_permutations=5, random_state=0)
        _call(query, network, network.variables[0], frame.iloc[:3].drop(columns=[frame.columns[0]]))
        embedding = _call(FisherEmbedding().fit, frame)
        _call(embedding.transform, frame)
        classifier = _call(BayesianNetworkClassifier(structure="naive-bayes").fit, frame, np.arange(len(frame)) % 2)
        _call(classifier.predict, frame)
        _call(bf.compare, frame, frame, n_permutations=5, random_state=0, bins=bins, **binning)
        _call(bf.drift, frame, frame, window=max(2, len(frame) // 2), n_permutations=5, random_state=0,
              min_effect=0.0, bins=bins, **binning)
        # Early stop: a window stopped at the checkpoint (199) has a p-value above its threshold, else it ran all.
        stopped = _call(bf.drift, frame, frame, window=max(2, len(frame) // 2), n_permutations=250, random_state=0,
                        stopping="checkpoints", bins=bins, **binning)
        for result, p in zip(stopped.comparisons, stopped.windows["p_value"]):
            if result is not None:
                done = len(result.test.null_distribution)
                assert done == 250 or (done == 199 and p > 0.15), (done, p)
        OUTCOMES["metamorphic"]["early stop: stopped above its threshold"] += 1
        # Anytime (the default): a p-value never below its permutations' floor, a stop never past the cap.
        anytime = _call(bf.drift, frame, frame, window=max(2, len(frame) // 2), n_permutations=250, random_state=0,
                        bins=bins, **binning)
        for result, p in zip(anytime.comparisons, anytime.windows["p_value"]):
            if result is not None:
                used = result.test.sequential.permutations
                assert used <= 250 and p >= 1.0 / (used + 1) - 1e-12, (used, p)
        OUTCOMES["metamorphic"]["anytime: p above its floor, stop within the cap"] += 1
        candidates = ("auto", "all", "complete")[len(frame) % 3]
        whole = _call(bf.summarize, frame, 2, n_init=3, n_random=3, random_state=0, candidates=candidates)
        # A pool as large as the table is no pool (the same rows); a smaller one chooses among a pool.
        same = _call(bf.summarize, frame, 2, n_init=3, n_random=3, random_state=0, candidates=candidates,
                     pool_size=len(frame))
        assert np.array_equal(whole.indices, same.indices)
        OUTCOMES["metamorphic"]["pool = table"] += 1
        pooled = _call(bf.summarize, frame, 2, n_init=3, n_random=3, random_state=0, candidates=candidates,
                       pool_size=max(3, len(frame) - 1))
        assert len(set(pooled.indices)) == 2 and pooled.indices.max() < len(frame)
        with tempfile.TemporaryDirectory() as folder:  # a monitoring store, run twice: the second adds nothing
            store = os.path.join(folder, "history.db")
            for _ in range(2):
                _call(bf.monitor, frame, frame, window=max(2, len(frame) // 2), store=store, n_permutations=5,
                      horizon=1, bins=bins, **binning)
            assert len(_call(bf.history, store).windows) == len(range(0, len(frame), max(2, len(frame) // 2)))


@FUZZ
@given(frame=tables(), structure=st.sampled_from(["chow-liu", "hc", "forest"]),
       bins=st.sampled_from([None, 2, 3]), choice=st.sampled_from(["", "bin_columns", "categorical"]))
def test_random_tables_through_the_api(frame, structure, bins, choice):
    before = copy.deepcopy(frame)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bf.ConvergenceWarning)
            _run_api(frame, structure, bins, choice)
        OUTCOMES["api"]["ok"] += 1
    except bf.BnfisherError as exc:
        OUTCOMES["api"][type(exc).__name__] += 1
    # The caller's object is never modified.
    pd.testing.assert_frame_equal(frame, before)
    assert frame.columns.equals(before.columns)


# ------------------------------------------------------------------ files
def _seed_table() -> pd.DataFrame:
    from bnfisher.datasets import load

    return load("nursery").iloc[::400].reset_index(drop=True).astype(str)


def _files() -> dict:
    frame = _seed_table()
    text = frame.to_csv(index=False).encode()
    parquet = io.BytesIO()
    frame.to_parquet(parquet)
    network = bf.learn(frame, "chow-liu")
    return {".csv": text, ".csv.gz": gzip.compress(text), ".parquet": parquet.getvalue(),
            ".bif": bf.write_bif(network).encode()}


_SEEDS = _files()
_TOKENS = [b",", b";", b"\n", b'"', b"?", b"{", b"}", b"\x00", b"NaN", b"1e309", b"\xff\xfe", b"table", b"|",
           b"NA", b"None", b"NULL"]


@st.composite
def mutated(draw, suffix):
    """The seed file with 1-4 byte or token mutations at uniformly random places (numpy RNG, seeded by hypothesis)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return mutate_bytes(_SEEDS[suffix], rng, _TOKENS)


def _cli(argv: list, kind: str) -> None:
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's own usage errors
            status = exc.code
    allowed = (0, 1, 2) if argv[0] == "monitor" or "--exit-code" in argv else (0, 2)  # 1: an alarm, a difference
    assert status in allowed, (argv, status)
    if status == 2:
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        assert lines and lines[-1].startswith("bnfisher ") and "Traceback" not in stderr.getvalue()
        reason = lines[-1].split("error: ", 1)[-1]
        OUTCOMES[f"{kind}: reasons"][" ".join(w for w in reason.split()[:4] if "/" not in w and "'" not in w)] += 1
    OUTCOMES[kind]["exit 0" if status == 0 else "exit 2"] += 1


@FUZZ
@given(suffix=st.sampled_from([".csv", ".csv.gz", ".parquet"]), data=st.data())
def test_mutated_tables_through_the_command_line(tmp_path_factory, suffix, data):
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / f"t{suffix}"
    path.write_bytes(data.draw(mutated(suffix)))
    command = data.draw(st.sampled_from(["summarize", "learn", "compare", "drift", "monitor"]))
    store = folder / "history.db"
    if data.draw(st.booleans()):  # a hostile store: a mutated table's bytes where the database should be
        store.write_bytes(data.draw(mutated(suffix)))
    argv = {"summarize": ["summarize", str(path), "-k", "3", "--n-init", "3", "--n-random", "3", "--quiet",
                          "--candidates", data.draw(st.sampled_from(["auto", "all", "complete"])),
                          "--refine", data.draw(st.sampled_from(["margins", "none"])),
                          *data.draw(st.sampled_from([[], ["--pool-size", "3"], ["--pool-size", "4"],
                                                      ["--pool-size", "1000"]]))],
            "learn": ["learn", str(path), "--quiet"],
            "compare": ["compare", str(path), str(path), "--permutations", "5", "--json", "-", "--exit-code"],
            "monitor": ["monitor", str(path), str(path), "--rows", "4", "--permutations", "5", "--horizon", "1",
                        "--store", str(store), "--quiet", "--guarantee",
                        data.draw(st.sampled_from(["horizon", "unbounded"]))],
            "drift": ["drift", str(path), str(path), "--rows", "4", "--permutations",
                      data.draw(st.sampled_from(["5", "250"])),
                      "--min-effect", data.draw(st.sampled_from(["0", "0.01", "-1", "nan"]))]}[command]
    if command in ("drift", "monitor") and data.draw(st.booleans()):
        argv.append("--early-stop")
    if data.draw(st.booleans()):
        argv += ["--bins", "3"] + data.draw(st.sampled_from([[], ["--bin-columns", "a"], ["--categorical", "a"]]))
    _cli(argv, f"cli {suffix}")


@FUZZ
@given(data=st.data())
def test_mutated_networks_through_the_command_line(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzzbif")
    table = folder / "t.csv"
    table.write_bytes(_SEEDS[".csv"])
    network = folder / "m.bif"
    network.write_bytes(data.draw(mutated(".bif")))
    _cli(["mmd", str(table), str(table), "--network", str(network)], "cli .bif")
    # Whatever the reader accepted is a real network, never an empty one.
    try:
        assert len(bf.read_bif(network).variables) > 0
    except bf.BnfisherError:
        pass


def test_fuzz_tables_cover_the_degenerate_cases():
    """The generators reach the cases the issue names (a check on the fuzzer itself)."""
    constant = pd.DataFrame({"a": ["k"] * 5, "b": ["k"] * 5})
    kernel = bf.FisherKernel(bf.learn(constant))
    assert kernel.n_features_ == 0 and kernel.mmd(constant, constant) == 0.0
    assert select_representatives(kernel, constant, 2, n_init=2).final_value == 0.0
    with pytest.raises(bf.BnfisherError):
        bf.learn(pd.DataFrame({"a": pd.Series([], dtype=object)}))
    header_only = pd.read_csv(io.StringIO("a,b\n"))
    with pytest.raises(bf.BnfisherError):
        bf.learn(header_only)


# ------------------------------------------------------------- metamorphic
@st.composite
def two_samples(draw):
    """Two tables over the same string-labelled columns (so every file format round-trips them exactly)."""
    n_cols = draw(st.integers(2, 4))
    sizes = draw(st.tuples(st.integers(6, 30), st.integers(6, 30)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # Labels that pandas would read as missing among them: text, so the files must give them back as labels.
    pool = ["a", "b", "c", "NA", "None", "N/A"]
    labels = [list(rng.choice(pool, int(rng.integers(2, 4)), replace=False)) for _ in range(n_cols)]
    tables = []
    for n in sizes:
        tables.append(pd.DataFrame({f"v{j}": rng.choice(labels[j], n) for j in range(n_cols)}))
    for j in range(n_cols):  # every label appears somewhere, so the schema is the same whatever is dropped
        tables[0].loc[: len(labels[j]) - 1, f"v{j}"] = labels[j]
    return tables[0], tables[1], rng


def _statistic(A, B, *, network=None):
    network = network if network is not None else bf.learn(pd.concat([A, B], ignore_index=True))
    return bf.FisherKernel(network).mmd(A, B), network


@FUZZ
@given(samples=two_samples())
def test_shuffling_rows_and_columns_leaves_the_statistic_unchanged(samples):
    A, B, rng = samples
    value, network = _statistic(A, B)
    shuffled = [t.iloc[rng.permutation(len(t))][list(rng.permutation(t.columns))] for t in (A, B)]
    assert _statistic(*shuffled, network=network)[0] == pytest.approx(value, rel=1e-9, abs=1e-12)
    OUTCOMES["metamorphic"]["shuffle"] += 1


@FUZZ
@given(samples=two_samples())
def test_renaming_columns_leaves_the_statistic_unchanged(samples):
    A, B, _ = samples
    value, _ = _statistic(A, B)
    rename = {c: f"renamed {c}" for c in A.columns}
    assert _statistic(A.rename(columns=rename), B.rename(columns=rename))[0] == pytest.approx(value, rel=1e-9,
                                                                                              abs=1e-12)
    OUTCOMES["metamorphic"]["rename"] += 1


@FUZZ
@given(samples=two_samples(), suffix=st.sampled_from([".csv", ".csv.gz", ".parquet"]))
def test_round_trips_through_files_leave_the_statistic_unchanged(tmp_path_factory, samples, suffix):
    A, B, _ = samples
    value, network = _statistic(A, B)
    folder = tmp_path_factory.mktemp("roundtrip")
    read = []
    for name, table in (("a", A), ("b", B)):
        bf.data.write_table(table, folder / f"{name}{suffix}")
        read.append(bf.data.read_table(folder / f"{name}{suffix}"))
    again = bf.parse_bif(bf.write_bif(network))  # the model through BIF
    schema = bf.Schema.from_json(network.schema.to_json())  # the schema through JSON
    assert schema == network.schema
    assert _statistic(*read, network=again)[0] == pytest.approx(value, rel=1e-9, abs=1e-12)
    OUTCOMES["metamorphic"][f"round trip {suffix}"] += 1


@FUZZ
@given(frame=tables(), marker=st.sampled_from(["NA", "None", "NULL", "nan", "N/A", "#N/A"]))
def test_a_marker_among_numbers_reads_as_an_empty_cell(tmp_path_factory, frame, marker):
    """Metamorphic: a table's missing cells written as a word pandas reads as missing (``na_rep``) read as the same
    table as they do written empty, wherever the word lands in a column of numbers (one number at least); in a
    column of text, or a column of the word alone, it is a label, and the table differs only there."""
    folder = tmp_path_factory.mktemp("markers")
    outcomes = []
    for name, rep in (("empty", ""), ("marker", marker)):
        frame.to_csv(folder / f"{name}.csv", index=False, na_rep=rep)
        try:
            outcomes.append(bf.data.read_table(folder / f"{name}.csv"))
        except bf.exceptions.DataError as exc:
            outcomes.append(str(exc))
    if isinstance(outcomes[0], str) or isinstance(outcomes[1], str):
        return  # a refused table (its header, say) is refused whatever marks its missing cells
    empty, marked = outcomes
    assert marked.shape == empty.shape
    for j in range(empty.shape[1]):  # by position: ``na_rep`` also writes a column named None as the marker
        before, after = empty.iloc[:, j], marked.iloc[:, j]
        numbers = pd.api.types.is_numeric_dtype(before.dtype) and not pd.api.types.is_bool_dtype(before.dtype)
        if numbers and before.isna().any() and before.notna().any():  # a column of the marker alone is text
            pd.testing.assert_series_equal(after, before, check_names=False)
        elif not before.isna().any():
            pd.testing.assert_series_equal(after.astype(str), before.astype(str), check_names=False)
    OUTCOMES["metamorphic"]["marker among numbers"] += 1


@FUZZ
@given(samples=two_samples())
def test_one_changed_cell_moves_the_statistic_by_at_most_one_rows_worth(samples):
    A, B, rng = samples
    value, network = _statistic(A, B)
    kernel = bf.FisherKernel(network)
    row, column = int(rng.integers(len(A))), A.columns[int(rng.integers(A.shape[1]))]
    changed = A.copy()
    states = network.states[column]
    changed.loc[row, column] = states[(states.index(A.loc[row, column]) + 1) % len(states)]
    moved = kernel.mmd(changed, B)
    # ||mu_A' - mu_B|| differs from ||mu_A - mu_B|| by at most ||phi(x) - phi(x')|| / n_A (triangle inequality).
    step = (np.sqrt(kernel.diag(A.iloc[[row]])[0]) + np.sqrt(kernel.diag(changed.iloc[[row]])[0])) / len(A)
    assert abs(np.sqrt(moved) - np.sqrt(value)) <= step + 1e-9
    OUTCOMES["metamorphic"]["one cell"] += 1


@FUZZ
@given(frame=tables(), chunk=st.integers(1, 30))
def test_a_csv_read_in_chunks_reads_as_the_file_read_at_once(tmp_path_factory, frame, chunk):
    """Metamorphic: the reader's chunks (any size) give the table one read of the whole file gives, or the same
    refusal; hostile tables (mixed kinds, empty cells, booleans, labels such as "?" and "1") included."""
    from bnfisher.data import io as reader

    path = tmp_path_factory.mktemp("chunks") / "t.csv"
    frame.to_csv(path, index=False)
    outcomes = []
    for rows in (10**9, chunk):
        reader.CSV_CHUNK_ROWS, saved = rows, reader.CSV_CHUNK_ROWS
        try:
            outcomes.append(bf.data.read_table(path))
        except bf.exceptions.DataError as exc:
            outcomes.append(str(exc))
        finally:
            reader.CSV_CHUNK_ROWS = saved
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[0]
    else:
        pd.testing.assert_frame_equal(outcomes[1], outcomes[0])
    OUTCOMES["metamorphic"]["csv chunks"] += 1


@FUZZ
@given(frame=tables(), parts=st.integers(1, 3))
def test_a_profile_is_the_sorted_distinct_rows_in_memory_and_on_dask(frame, parts):
    """Oracle and metamorphic: a profile's rows are NumPy's ``unique`` of the encoded rows, with their copies; a
    Dask table (synchronous scheduler, 1-3 partitions) gives the profile of the table it computes to (Dask turns
    object columns into text), or both refuse it."""
    dd = pytest.importorskip("dask.dataframe")
    import dask

    # Dask itself cannot build or compute a frame whose names repeat or are True, None or NaN: such tables are
    # profiled in memory only (the profile refuses them there, or profiles them).
    named = frame.columns.is_unique and all(isinstance(name, str) for name in frame.columns)
    with dask.config.set(scheduler="synchronous"):
        distributed = dd.from_pandas(frame, npartitions=parts) if named else None
        table = distributed.compute() if named else frame
        outcomes = []
        for data in (table, distributed) if named else (table,):
            try:
                outcomes.append(_call(bf.profile, data, bins=3))
            except bf.exceptions.BnfisherError as exc:
                outcomes.append(type(exc).__name__)
    if isinstance(outcomes[0], str):
        OUTCOMES["metamorphic"]["profile refused"] += 1
        assert not named or isinstance(outcomes[1], str)  # refused on Dask too (a library error, never a traceback)
        return
    memory = outcomes[0]
    encoded = memory.schema.encode(table, missing="allow").codes
    rows, copies = np.unique(encoded, axis=0, return_counts=True)
    np.testing.assert_array_equal(memory.codes, rows)
    np.testing.assert_array_equal(memory.counts, copies)
    OUTCOMES["metamorphic"]["profile = unique rows"] += 1
    if named:
        assert not isinstance(outcomes[1], str), outcomes[1]
        assert outcomes[1].schema == memory.schema
        np.testing.assert_array_equal(outcomes[1].codes, memory.codes)
        np.testing.assert_array_equal(outcomes[1].counts, memory.counts)
        OUTCOMES["metamorphic"]["profile on dask"] += 1
