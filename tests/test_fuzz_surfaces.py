"""Fuzzing the surfaces added last: model files in every format, profiles, time windows, hostile names and labels.

Every call must answer, or fail with a :class:`bnfisher.BnfisherError` (on the command line:
exit 2 with one line on stderr, and every output file left as it was); no call may take
more than :data:`HANG_SECONDS`; and the metamorphic relations must hold: a profile gives
its table's answer, merging profiles of parts gives the profile of the union (declared
categories included), a NET/XMLBIF/UAI round trip keeps every label, windows lose no row.
``BNFISHER_FUZZ_EXAMPLES`` examples per test (default 60); with ``BNFISHER_FUZZ_REPORT``
the outcome counts are added to that JSON file (``benchmarks/fuzz.py`` prints them).
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bnfisher as bf
from bnfisher.cli import main

from _helpers import fuzz_settings, mutate_bytes, report_fuzz_counts

pytestmark = pytest.mark.slow

#: A call slower than this counts as a hang (the inputs here are at most a few kB).
HANG_SECONDS = 20.0
OUTCOMES: dict = collections.defaultdict(collections.Counter)
FUZZ = fuzz_settings(60)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    report_fuzz_counts(OUTCOMES)


def _call(surface: str, function, *args, **kwargs):
    """One call on a surface: its answer, or None for a library error (counted); anything else fails the test."""
    OUTCOMES[surface]["calls"] += 1
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer = function(*args, **kwargs)
        OUTCOMES[surface]["answered"] += 1
        return answer
    except bf.BnfisherError as exc:
        OUTCOMES[surface][type(exc).__name__] += 1
        return None
    finally:
        elapsed = time.perf_counter() - started
        assert elapsed < HANG_SECONDS, f"{surface}: {getattr(function, '__name__', function)} took {elapsed:.1f} s"


def _cli(surface: str, argv: list, outputs: tuple = ()) -> int:
    """One command: exit 0, or exit 2 with one line on stderr and every output left exactly as it was."""
    before = {str(p): open(p, "rb").read() if os.path.exists(p) else None for p in outputs}
    stderr = io.StringIO()
    OUTCOMES[surface]["calls"] += 1
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
    assert time.perf_counter() - started < HANG_SECONDS, (argv, "hang")
    assert status in (0, 2), (argv, status, stderr.getvalue()[-2000:])
    if status == 2:
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        assert lines and lines[-1].startswith("bnfisher") and "Traceback" not in stderr.getvalue(), lines
        for path, content in before.items():  # no partial output: a failed command leaves every output as it was
            now = open(path, "rb").read() if os.path.exists(path) else None
            assert now == content, f"{path} changed by a failed command"
    OUTCOMES[surface]["exit 0" if status == 0 else "exit 2"] += 1
    return status


# ------------------------------------------------------------------ model files in every format
def _seed_table() -> pd.DataFrame:
    from bnfisher.datasets import load

    return load("nursery").iloc[::400].reset_index(drop=True).astype(str)


_TABLE = _seed_table()
_NETWORK = bf.learn(_TABLE, "chow-liu")
_SEEDS = {".xml": bf.bn.formats.write_xmlbif(_NETWORK).encode(), ".net": bf.bn.formats.write_net(_NETWORK).encode(),
          ".uai": bf.bn.formats.write_uai(_NETWORK).encode(), ".json": bf.write_model(_NETWORK).encode(),
          ".bif": bf.write_bif(_NETWORK).encode()}
_TOKENS = [b"{", b"}", b"(", b")", b";", b"=", b"|", b'"', b"%", b"#", b"<", b">", b"</", b"\x00", b"\n", b"-1",
           b"0", b"1e309", b"nan", b"999999999999", b"banana", b"node a {", b"potential (", b"<VARIABLE>",
           b"<!ENTITY x 'y'>", b"BAYES", b"\xff\xfe", b"\x01"]


def _mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """1-4 mutations, hostile ones included (a token repeated thousands of times)."""
    return mutate_bytes(data, rng, _TOKENS, hostile=True)


@FUZZ
@given(suffix=st.sampled_from(sorted(_SEEDS)), seed=st.integers(0, 2**32 - 1))
def test_mutated_model_files_in_every_format(tmp_path_factory, suffix, seed):
    folder = tmp_path_factory.mktemp("models")
    path = folder / f"m{suffix}"
    path.write_bytes(_mutate(_SEEDS[suffix], np.random.default_rng(seed)))
    network = _call(f"model files {suffix}", bf.read_network, path)
    if network is not None:
        assert len(network.variables) > 0  # never a silently empty network
        _call(f"model files {suffix}", bf.write_network, network, folder / f"again{suffix}")  # or a library error
    table = folder / "t.csv"
    _TABLE.to_csv(table, index=False)
    _cli(f"cli model files {suffix}", ["mmd", str(table), str(table), "--network", str(path)])


# ------------------------------------------------------------------ profiles
_PROFILE = bf.profile(_TABLE)


def _profile_file(rng: np.random.Generator) -> bytes:
    """The seed profile's arrays and header, mutated in their values, types and shapes, or its bytes mutated."""
    header = {"format": "bnfisher-profile", "format_version": 1, "bnfisher": "0", "rows": _PROFILE.n_rows,
              "schema": _PROFILE.schema.to_dict()}
    codes, counts = _PROFILE.codes.copy(), _PROFILE.counts.copy()
    kind = rng.choice(["header", "codes", "counts", "shape", "dtype", "bytes", "none"])
    if kind == "header":
        key = rng.choice(["format", "format_version", "schema", "rows", "checksum"])
        header[str(key)] = [None, True, -1, 3, "x", [1], {"a": 1}, 1.0][int(rng.integers(8))]
        if rng.random() < 0.3:
            del header[str(key)]
    elif kind == "codes":
        codes[int(rng.integers(len(codes))), int(rng.integers(codes.shape[1]))] = int(rng.integers(-4, 12))
    elif kind == "counts":
        counts[int(rng.integers(len(counts)))] = [0, -1, 2**62, 10**9, 3][int(rng.integers(5))]
    elif kind == "shape":
        codes = codes[:, : int(rng.integers(0, codes.shape[1]))] if rng.random() < 0.5 else codes[:-1]
    elif kind == "dtype":
        codes = codes.astype([np.float64, np.int8, np.uint64, np.bool_][int(rng.integers(4))])
    buffer = io.BytesIO()
    np.savez_compressed(buffer, codes=codes, counts=counts,
                        header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
    data = buffer.getvalue()
    return _mutate(data, rng) if kind == "bytes" else data


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_profiles(tmp_path_factory, seed):
    rng = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("profiles")
    path = folder / "p.bnfp"
    path.write_bytes(_profile_file(rng))
    reference = _call("profiles", bf.read_profile, path)
    if reference is not None:
        assert reference.n_rows >= 1 and (reference.counts >= 1).all()
        cards = np.array([len(reference.schema.states[v]) for v in reference.schema.variables])
        assert ((reference.codes >= -1) & (reference.codes < cards)).all()  # every code names a label
        _call("profiles", bf.compare, reference, _TABLE.iloc[:10], n_permutations=5, random_state=0)
    table = folder / "t.csv"
    _TABLE.iloc[:10].to_csv(table, index=False)
    report = folder / "r.json"
    report.write_text("earlier")
    _cli("cli profiles", ["compare", str(path), str(table), "--permutations", "5", "--quiet", "--json",
                          str(report)], outputs=(report,))


# ------------------------------------------------------------------ time windows
_STAMPS = [
    lambda rng, n: pd.date_range("2020-01-01", periods=n, freq=f"{int(rng.integers(1, 90))}min").astype(str),
    lambda rng, n: [f"2020-01-{int(d):02d}T10:00{['+01:00', '-05:00', 'Z', ''][int(rng.integers(4))]}"
                    for d in rng.integers(1, 28, n)],
    lambda rng, n: list(rng.integers(1_500_000_000, 1_600_000_000, n)),
    lambda rng, n: list(rng.choice(["2020-01-01", "yesterday", None, "2020-13-40", "2021-06-01 12:00:00.5"], n)),
    lambda rng, n: [["2010-01-01", "2030-06-01", "1700-01-01", "2200-01-01"][int(k)] for k in rng.integers(0, 4, n)],
    lambda rng, n: pd.to_datetime(rng.integers(0, 10**17, n), unit="ns").astype(str),
]
_WINDOWS = ["1s", "1ns", "0D", "-1D", "1D", "7D", "W", "MS", "QS", "bh", "B", "fortnight", "1h", "", 3, 0, -1]


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), stamps=st.integers(0, len(_STAMPS) - 1),
       window=st.sampled_from(_WINDOWS))
def test_time_windows(seed, stamps, window):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    data = pd.DataFrame({"a": rng.choice(list("xy"), n), "b": rng.choice(list("uvw"), n)})
    data["t"] = list(_STAMPS[stamps](rng, n))
    reference = pd.DataFrame({"a": rng.choice(list("xy"), 30), "b": rng.choice(list("uvw"), 30)})
    result = _call("time windows", bf.drift, reference, data, time="t", window=window, n_permutations=5,
                   random_state=0)
    if result is not None:
        table = result.windows
        assert int(table["rows"].sum()) == n  # no row lost or counted twice
        assert (table["rows"] >= 1).all() and table["start"].is_monotonic_increasing
        tested = table["p_value"].notna()
        assert ((table["rows"] >= 2) == tested).all()
        json.loads(result.to_json())  # serialises strictly (NaN as null)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), window=st.sampled_from(["1D", "1h", "W", "0D", "1s"]))
def test_time_windows_through_the_command_line(tmp_path_factory, seed, window):
    rng = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("windows")
    n = int(rng.integers(1, 30))
    data = pd.DataFrame({"a": rng.choice(list("xy"), n), "t": list(_STAMPS[int(rng.integers(len(_STAMPS)))](rng, n))})
    data.to_csv(folder / "d.csv", index=False)
    pd.DataFrame({"a": rng.choice(list("xy"), 20)}).to_csv(folder / "r.csv", index=False)
    report = folder / "out.json"
    report.write_text("earlier")
    _cli("cli time windows", ["drift", str(folder / "r.csv"), str(folder / "d.csv"), "--time-column", "t",
                              "--window", window, "--permutations", "5", "--quiet", "--json", str(report)],
         outputs=(report,))


# ------------------------------------------------------------------ hostile names, labels, constant columns
_NAMES = ["row", "sample", "witness", "copies", "US$", "a%b", "{x}", "(y);", "c\x01", "p", "q", "r"]
_LABELS = ["$5", "50$/h", "a$b$c", "x%", "{", "}", "(", ");", "\x01", "tab\t", "ok", "ok2", "=1+1", "é", "NA",
           "None"]


@st.composite
def hostile_tables(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = int(rng.integers(2, 30))
    names = list(rng.choice(_NAMES, int(rng.integers(1, 5)), replace=False))
    columns = {}
    for name in names:
        kind = rng.choice(["labels", "constant", "one-state", "missing"])
        if kind == "labels":
            columns[name] = rng.choice(_LABELS[: int(rng.integers(2, len(_LABELS)))], n)
        elif kind == "constant":
            columns[name] = np.array([str(rng.choice(_LABELS))] * n, dtype=object)
        elif kind == "one-state":  # declared with more labels than it uses
            columns[name] = pd.Categorical(["ok"] * n, categories=["ok", "$5", "{"])
        else:
            values = rng.choice(["ok", "$5", None], n).astype(object)
            columns[name] = values
    return pd.DataFrame(columns)


@FUZZ
@given(frame=hostile_tables(), job=st.sampled_from(["compare", "compare anytime", "compare extra column",
                                                    "compare twice", "summarize", "drift", "drift early stop",
                                                    "drift fixed"]),
       draw=st.booleans(), extra=st.sampled_from(["<b>x</b>", "$5", "row", "{x}", "\x01", "é"]))
def test_hostile_tables_through_the_jobs_and_their_outputs(tmp_path_factory, frame, job, draw, extra):
    """Hostile names and labels through every job and its outputs; a column only the second table has, or one
    table given twice, is named in a warning that reaches the report escaped."""
    folder = tmp_path_factory.mktemp("hostile")
    half = max(1, len(frame) // 2)
    column = extra if extra not in frame.columns else extra + "_"
    call = {"compare": lambda: bf.compare(frame.iloc[:half], frame.iloc[half:], n_permutations=5, random_state=0),
            "compare extra column": lambda: bf.compare(frame.iloc[:half], frame.iloc[half:].assign(**{column: "v"}),
                                                       n_permutations=5, random_state=0),
            "compare twice": lambda: bf.compare(frame, frame.copy(), n_permutations=5, random_state=0),
            "compare anytime": lambda: bf.compare(frame.iloc[:half], frame.iloc[half:], n_permutations=50,
                                                  stopping="anytime", random_state=0),
            "summarize": lambda: bf.summarize(frame, 2, n_init=2, n_random=3, random_state=0,
                                              refine="margins" if draw else None),
            "drift": lambda: bf.drift(frame, frame, window=max(2, half), n_permutations=5, random_state=0),
            "drift early stop": lambda: bf.drift(frame, frame, window=max(2, half), n_permutations=250,
                                                 stopping="checkpoints", random_state=0),
            "drift fixed": lambda: bf.drift(frame, frame, window=max(2, half), n_permutations=5, stopping="fixed",
                                            random_state=0)}[job]
    result = _call(f"hostile tables: {job}", call)
    if result is None:
        return
    said = " ".join(result.advice)  # the warnings emitted, kept on the result (_call silences their display)
    for marker in ("NA", "None"):  # a label spelled like a missing value is named in a warning, read as a label
        if job.startswith("compare") and any((frame[c].astype(object) == marker).any() for c in frame.columns):
            assert f"hold {marker!r}" in said or f"holds {marker!r}" in said, said
    if job == "compare extra column":
        assert f"Column(s) {column!r} of B are not in A" in said, said
    if job == "compare twice":
        assert "hold the same rows in the same order" in said, said
    json.loads(_call(f"hostile tables: {job}", result.to_json), parse_constant=lambda c: pytest.fail(c))
    _call(f"hostile tables: {job}", result.to_html, folder / "r.html")
    if job == "compare extra column" and column == "<b>x</b>":
        assert "<b>x</b>" not in (folder / "r.html").read_text()  # the warning's name, escaped
    str(result)
    if draw:
        figure = _call(f"hostile tables: {job}", result.plot)
        if figure is not None:
            figure.savefig(folder / "f.png")
            import matplotlib.pyplot as plt

            plt.close("all")


@FUZZ
@given(frame=hostile_tables(), suffix=st.sampled_from([".net", ".xml", ".uai", ".bif", ".json"]))
def test_hostile_labels_through_every_model_format(tmp_path_factory, frame, suffix):
    folder = tmp_path_factory.mktemp("labels")
    network = _call("labels through model files", bf.learn, frame, "chow-liu")
    if network is None:
        return
    path = folder / f"m{suffix}"
    written = _call("labels through model files", bf.write_network, network, path)
    if not path.exists():
        assert written is None
        return
    again = _call("labels through model files", bf.read_network, path)
    assert again is not None, f"{suffix}: written but not read back"
    order = list(network.schema.variables)
    for i, v in enumerate(order):
        w = f"X{i}" if suffix == ".uai" else (v if suffix == ".json" else str(v))
        labels = again.states[w]
        if suffix == ".uai":  # UAI keeps no labels: their number, and the tables bit for bit
            assert len(labels) == len(network.states[v])
        elif suffix == ".json":
            assert labels == network.states[v]
        else:  # every label, as text
            assert list(labels) == [str(x) for x in network.states[v]], (suffix, v, labels)
        np.testing.assert_array_equal(again.cpts[w], network.cpts[v])
    OUTCOMES["metamorphic"][f"label round trip {suffix}"] += 1


# ------------------------------------------------------------------ metamorphic relations of profiles
@st.composite
def categorical_samples(draw):
    """Two tables over declared categories (some unused), as the bundled tables are read."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_cols = int(rng.integers(1, 4))
    kinds = [pd.CategoricalDtype(["a", "b", "c", "unused"][: int(rng.integers(2, 5))]) for _ in range(n_cols)]
    sizes = [int(rng.integers(4, 40)) for _ in range(2)]
    tables = [pd.DataFrame({f"v{j}": pd.Series(rng.choice(list(kinds[j].categories)[:2], n), dtype=kinds[j])
                            for j in range(n_cols)}) for n in sizes]
    if rng.random() < 0.3:  # plain text columns too
        tables = [t.astype(object) for t in tables]
    return tables[0], tables[1], rng


@FUZZ
@given(samples=categorical_samples())
def test_a_profile_gives_its_tables_answer(tmp_path_factory, samples):
    A, B, _ = samples
    folder = tmp_path_factory.mktemp("profile")
    table = _call("profile = table", bf.compare, A, B, n_permutations=19, random_state=0)
    bf.profile(A).save(folder / "a.bnfp")
    stored = _call("profile = table", bf.read_profile, folder / "a.bnfp")
    profiled = _call("profile = table", bf.compare, stored, B, n_permutations=19, random_state=0)
    assert (table is None) == (profiled is None)
    if table is not None:
        assert profiled.test.statistic == table.test.statistic and profiled.test.p_value == table.test.p_value
        pd.testing.assert_frame_equal(profiled.families, table.families)
        OUTCOMES["metamorphic"]["profile = table"] += 1


@FUZZ
@given(samples=categorical_samples(), parts=st.integers(2, 4))
def test_merging_profiles_of_parts_is_profiling_the_union(samples, parts):
    A, B, rng = samples
    union = pd.concat([A, B], ignore_index=True)
    cuts = np.sort(rng.choice(np.arange(1, len(union)), size=min(parts - 1, len(union) - 1), replace=False))
    pieces = np.split(np.arange(len(union)), cuts)
    merged = _call("merge = union", bf.merge_profiles, [bf.profile(union.iloc[p]) for p in pieces])
    whole = _call("merge = union", bf.profile, *[union.iloc[p] for p in pieces])
    assert merged is not None and whole is not None
    assert merged.schema == whole.schema  # declared categories included
    np.testing.assert_array_equal(merged.codes, whole.codes)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    OUTCOMES["metamorphic"]["merge = union"] += 1


@FUZZ
@given(samples=categorical_samples())
def test_shuffling_rows_leaves_every_p_value_unchanged(samples):
    A, B, rng = samples
    table = _call("shuffled rows", bf.compare, A, B, n_permutations=19, random_state=0)
    shuffled = _call("shuffled rows", bf.compare, A.iloc[rng.permutation(len(A))], B.iloc[rng.permutation(len(B))],
                     n_permutations=19, random_state=0)
    assert (table is None) == (shuffled is None)
    if table is not None:
        assert shuffled.test.p_value == table.test.p_value
        pd.testing.assert_frame_equal(shuffled.families, table.families)
        OUTCOMES["metamorphic"]["shuffled rows"] += 1


@FUZZ
@given(frame=hostile_tables(), seed=st.integers(0, 2**32 - 1))
def test_hostile_windows_with_a_label_the_reference_lacks(tmp_path_factory, frame, seed):
    """A window whose rows hold a label the reference never shows (hostile text, to reach the HTML's escaping): a
    result or a one-line refusal; and the relation -- its test is the test of its other rows, bit for bit."""
    rng = np.random.default_rng(seed)
    window = frame.astype(object).copy()
    column = window.columns[int(rng.integers(len(window.columns)))]
    new = rng.random(len(window)) < 0.3
    window.loc[new, column] = "<b>new & \"label\"</b>"
    result = _call("windows with a new label", bf.drift, frame, window, n_permutations=9, random_state=0)
    if result is None:
        return
    html = _call("windows with a new label", result.to_html, tmp_path_factory.mktemp("new") / "r.html")
    assert html is None or "<b>new" not in str(html)
    if 0 < new.sum() < len(window):
        without = _call("windows with a new label", bf.drift, frame, window.loc[~new], n_permutations=9,
                        random_state=0)
        if without is not None:
            np.testing.assert_array_equal(result.windows["p_value"], without.windows["p_value"])
