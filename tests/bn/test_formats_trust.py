"""Hostile model files and profiles: every declared size checked first, every reader linear, every label kept."""

import importlib
import io
import json
import time
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.bn.formats import read_net, read_uai, read_xmlbif, write_net, write_uai, write_xmlbif
from bnfisher.cli import main
from bnfisher.exceptions import DataError, DataWarning, NetworkFileError, OptionError, ResourceError, SchemaError

from _helpers import bif_path


def _seconds(function, *args) -> float:
    started = time.perf_counter()
    try:
        function(*args)
    except bf.BnfisherError:
        pass
    return time.perf_counter() - started


# ------------------------------------------------------------------ readers are linear
@pytest.mark.parametrize("block", ["node a {\n", "potential (a) {\n", 'node a { states = ("x"\n', "net {\n"])
def test_the_net_reader_is_linear_on_unclosed_blocks(tmp_path, block):
    """1x and 4x a hostile input: the time grows at most ~4x (the old regular expressions took 104 s at 20,000)."""
    times = []
    for n in (5_000, 20_000):
        path = tmp_path / f"h{n}.net"
        path.write_text(block * n)
        with pytest.raises(NetworkFileError):
            read_net(path)
        times.append(min(_seconds(read_net, path) for _ in range(3)))
    assert times[1] < 8 * times[0] + 0.05, times  # linear (4x) with room for noise; quadratic would be 16x


@pytest.mark.parametrize("reader, suffix, make", [
    (read_uai, ".uai", lambda n: "BAYES\n" + "1 " * n),
    (read_xmlbif, ".xml", lambda n: "<BIF VERSION='0.3'><NETWORK>" + "<VARIABLE><NAME>a</NAME></VARIABLE>" * (n // 8)),
])
def test_the_other_readers_are_linear_too(tmp_path, reader, suffix, make):
    times = []
    for n in (20_000, 80_000):
        path = tmp_path / f"h{n}{suffix}"
        path.write_text(make(n))
        times.append(min(_seconds(reader, path) for _ in range(3)))
    assert times[1] < 8 * times[0] + 0.05, times


# ------------------------------------------------------------------ NET
def test_a_label_cannot_inject_a_node_into_a_net_file(tmp_path):
    hostile = 'zz); } node Evil { states = ("x" "y"); } potential (Evil) { data = (0.5 0.5); } %'
    network = bf.BayesianNetwork({}, {"a": [0.5, 0.5]}, {"a": [hostile, "y"]})
    with pytest.raises(SchemaError, match="model.json"):
        write_net(network)
    with pytest.raises(SchemaError, match="model.json"):  # and through the one entry point, before anything is written
        bf.write_network(network, tmp_path / "m.net")
    assert not (tmp_path / "m.net").exists()


def test_a_percent_sign_inside_quotes_is_a_label_not_a_comment(tmp_path):
    path = tmp_path / "m.net"
    path.write_text('net\n{\n}\nnode a\n{\n  states = ("50%" "y"); % a real comment\n}\n'
                    "potential (a)\n{\n  data = (0.25 0.75);\n}\n")
    assert read_net(path).states["a"] == ("50%", "y")


@pytest.mark.parametrize("text, match", [
    ('node a { states = ("x" "y"); }\npotential (a) { data = (0.5 banana 0.5); }', "banana"),
    ('node a { states = ("x" "y"); }\nnode a { states = ("x" "y"); }\npotential (a) { data = (0.5 0.5); }',
     "declared twice"),
    ('node a { states = ("x" "y"); }\npotential (a) { data = (0.5 0.5); }\npotential (a) { data = (0.5 0.5); }',
     "two potentials"),
    ('node a { states = ("x" "y"); states = ("x" "y"); }', "twice"),
    ('node a { states = ("x" "y); }', "unclosed string"),
    ('node a { states = ("x" "y"); }\nstray', "expected 'net'"),
    ('node a { states = ("x" "y"); }\npotential (a | b) { data = ((0.5 0.5)); }', "does not declare"),
])
def test_net_files_that_do_not_make_sense_are_refused_with_the_line(tmp_path, text, match):
    path = tmp_path / "m.net"
    path.write_text(text)
    with pytest.raises(NetworkFileError, match=match):
        read_net(path)


# ------------------------------------------------------------------ UAI
@pytest.mark.parametrize("text, match", [
    ("BAYES\n1\n1000000000\n1\n1 0\n2\n0.5 0.5\n", "cardinality"),  # 36 bytes declaring 10^9 states
    ("BAYES\n-1\n", "whole number"),
    ("BAYES\n2\n2 2\n2\n1 -1\n1 1\n2\n.5 .5\n2\n.5 .5\n", "whole number"),  # a negative scope index
    ("BAYES\n2\n2 2\n2\n1 5\n1 1\n2\n.5 .5\n2\n.5 .5\n", "between 0 and 1"),
    ("BAYES\n1\n2\n1\n1 0\n2\n0.5 banana\n", "banana"),
    ("BAYES\n1\n2\n1\n1 0\n2\n0.5 0.5 0.25\n", "after the last table"),
    ("BAYES\n2\n2 2\n2\n1 0\n1 0\n2\n.5 .5\n2\n.5 .5\n", "two tables"),
    ("BAYES\n2\n2 2\n1\n1 0\n2\n.5 .5\n", "number of tables"),
    ("BAYES\n1\n2\n1\n1 0\n9\n0.5 0.5\n", "size of table"),
    ("BAYES\n1\n2\n1\n1 0\n2\n0.5\n", "tokens more"),  # found by the fuzzer: a table cut short
])
def test_uai_counts_are_checked_before_anything_is_made(tmp_path, text, match):
    path = tmp_path / "m.uai"
    path.write_text(text)
    with pytest.raises(NetworkFileError, match=match):
        read_uai(path)


def test_uai_round_trips_bit_for_bit(tmp_path):
    network = bf.read_bif(bif_path("insurance"))
    write_uai(network, tmp_path / "m.uai")
    again = read_uai(tmp_path / "m.uai")
    for i, v in enumerate(network.schema.variables):
        np.testing.assert_array_equal(again.cpts[f"X{i}"], network.cpts[v])


# ------------------------------------------------------------------ XMLBIF
def test_xmlbif_keeps_every_label_as_written(tmp_path):
    labels = [" padded ", "two  spaces", "a & <b>", "50%", "x;y{z}"]
    network = bf.BayesianNetwork({}, {"a": np.full(5, 0.2)}, {"a": labels})
    write_xmlbif(network, tmp_path / "m.xml")
    assert read_xmlbif(tmp_path / "m.xml").states["a"] == tuple(labels)


def test_xmlbif_refuses_control_characters_naming_the_native_format():
    network = bf.BayesianNetwork({}, {"a": [0.5, 0.5]}, {"a": ["x\x01", "y"]})
    with pytest.raises(SchemaError, match="model.json"):
        write_xmlbif(network)


def test_xmlbif_laid_out_on_lines_of_its_own_is_read_as_the_labels(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text("<BIF VERSION='0.3'><NETWORK><VARIABLE><NAME>\n  a\n</NAME><OUTCOME>\n  x\n</OUTCOME>"
                    "<OUTCOME>y</OUTCOME></VARIABLE><DEFINITION><FOR>a</FOR><TABLE>0.5 0.5</TABLE></DEFINITION>"
                    "</NETWORK></BIF>")
    assert read_xmlbif(path).states == {"a": ("x", "y")}


@pytest.mark.parametrize("body, match", [
    ("<VARIABLE><NAME>a</NAME><OUTCOME>x</OUTCOME><OUTCOME>y</OUTCOME></VARIABLE>" * 2, "declared twice"),
    ("<VARIABLE><NAME>a</NAME><OUTCOME>x</OUTCOME><OUTCOME>y</OUTCOME></VARIABLE>"
     "<DEFINITION><FOR>a</FOR><TABLE>0.5 banana 0.5</TABLE></DEFINITION>", "banana"),
    ("<VARIABLE><NAME>a</NAME><OUTCOME>x</OUTCOME><OUTCOME>y</OUTCOME></VARIABLE>"
     + "<DEFINITION><FOR>a</FOR><TABLE>0.5 0.5</TABLE></DEFINITION>" * 2, "two tables"),
    ("<VARIABLE><NAME>a</NAME><OUTCOME>x</OUTCOME><OUTCOME>y</OUTCOME></VARIABLE>"
     "<DEFINITION><FOR>b</FOR><TABLE>0.5 0.5</TABLE></DEFINITION>", "does not declare"),
])
def test_xmlbif_duplicates_and_stray_tokens_are_refused(tmp_path, body, match):
    path = tmp_path / "m.xml"
    path.write_text(f"<BIF VERSION='0.3'><NETWORK>{body}</NETWORK></BIF>")
    with pytest.raises(NetworkFileError, match=match):
        read_xmlbif(path)


# ------------------------------------------------------------------ names, endings, order of checks
@pytest.mark.parametrize("suffix", [".bif", ".xml", ".net"])
def test_a_name_that_is_not_text_comes_back_as_text_with_a_warning(tmp_path, suffix):
    network = bf.BayesianNetwork({}, {"v": [0.5, 0.5]}, {"v": ["x", "y"]})
    network = bf.BayesianNetwork({}, {"v0": [0.5, 0.5]}, {"v0": ["x", "y"]})
    numbered = bf.BayesianNetwork({}, {7: [0.5, 0.5]}, {7: ["x", "y"]})
    if suffix == ".net":  # NET names are identifiers: a number is refused, not converted
        with pytest.raises(SchemaError, match="NET"):
            bf.write_network(numbered, tmp_path / f"m{suffix}")
        return
    with pytest.warns(DataWarning, match="'7'"):
        bf.write_network(numbered, tmp_path / f"m{suffix}")
    assert bf.read_network(tmp_path / f"m{suffix}").variables == ("7",)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # text names: no warning
        bf.write_network(network, tmp_path / f"n{suffix}")


@pytest.mark.parametrize("name", ["model.pkl", "model", "model.txt"])
def test_a_model_file_ending_that_names_no_format_is_refused(tmp_path, name):
    network = bf.BayesianNetwork({}, {"a": [0.5, 0.5]}, {"a": ["x", "y"]})
    with pytest.raises(OptionError, match=".json"):
        bf.write_network(network, tmp_path / name)
    assert not (tmp_path / name).exists()


def test_learn_refuses_a_net_label_before_learning(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.choice(["x (1)", "y"], 200), "b": rng.choice(["u", "v"], 200)}).to_csv(
        tmp_path / "t.csv", index=False)
    learning = importlib.import_module("bnfisher.bn.structure.learn")  # the module (the package's name is the function)

    def no_learning(*args, **kwargs):  # pragma: no cover - reached only if the check came too late
        raise AssertionError("learned before checking the output's labels")

    monkeypatch.setattr(learning, "learn", no_learning)
    for name, match in (("m.net", "NET"), ("m.pkl", "ending")):
        assert main(["learn", str(tmp_path / "t.csv"), "--quiet", "-o", str(tmp_path / name)]) == 2
        assert match in capsys.readouterr().err


# ------------------------------------------------------------------ profiles
def _profile_bytes(header=None, codes=None, counts=None, raw_header=None):
    table = pd.DataFrame({"a": list("xyxz"), "b": list("uuvv")})
    reference = bf.profile(table)
    content = {"format": "bnfisher-profile", "format_version": 1, "bnfisher": "0", "rows": 4,
               "schema": reference.schema.to_dict()}
    content.update(header or {})
    raw = raw_header if raw_header is not None else json.dumps(content).encode()
    buffer = io.BytesIO()
    np.savez_compressed(buffer, codes=reference.codes if codes is None else codes,
                        counts=reference.counts if counts is None else counts,
                        header=np.frombuffer(raw, dtype=np.uint8))
    return buffer.getvalue()


_CODES = bf.profile(pd.DataFrame({"a": list("xyxz"), "b": list("uuvv")})).codes


@pytest.mark.parametrize("arguments, match", [
    ({"raw_header": b"[1, 2]"}, "not a JSON object"),
    ({"raw_header": json.dumps({"format": "bnfisher-profile", "format_version": 1}).encode()}, "no schema"),
    ({"header": {"schema": None}}, "schema"),
    ({"header": {"format_version": True}}, "version"),
    ({"header": {"format_version": 3}}, "version"),
    ({"counts": np.array([-1, 1, 1, 1])}, "count -1"),
    ({"counts": np.array([0, 1, 1, 1])}, "count 0"),
    ({"counts": np.array([1.5, 1, 1, 1])}, "whole numbers"),
    ({"counts": np.array([np.nan, 1, 1, 1])}, "whole numbers"),
    ({"counts": np.array([2**62, 2**62, 1, 1])}, "2\\^63"),
    ({"codes": _CODES - 3}, "code -3"),  # -2 would have been read as the last label
    ({"codes": np.where(_CODES == 2, 3, _CODES)}, "code 3"),  # the number of states would have been read as missing
    ({"codes": _CODES.astype(float)}, "whole numbers"),
    ({"codes": np.zeros((4, 2), dtype=np.int64)}, "distinct"),
])
def test_profile_values_are_checked_naming_the_file(tmp_path, arguments, match):
    path = tmp_path / "p.bnfp"
    path.write_bytes(_profile_bytes(**arguments))
    with pytest.raises(DataError, match=match) as error:
        bf.read_profile(path)
    assert str(path) in str(error.value)


def test_a_renamed_npy_or_text_file_is_not_a_profile(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(3))
    (tmp_path / "x.bnfp").write_bytes((tmp_path / "x.npy").read_bytes())
    (tmp_path / "y.bnfp").write_text("a,b\n1,2\n")
    for name in ("x.bnfp", "y.bnfp"):
        with pytest.raises(DataError, match="not a bnfisher profile"):
            bf.read_profile(tmp_path / name)


def test_a_hand_edited_order_of_labels_is_caught_by_the_checksum(tmp_path):
    reference = bf.profile(pd.DataFrame({"a": list("xyxz"), "b": list("uuvv")}))
    reference.save(tmp_path / "p.bnfp")
    with zipfile.ZipFile(tmp_path / "p.bnfp") as archive:
        arrays = {name[:-4]: np.load(archive.open(name)) for name in archive.namelist()}
    header = json.loads(arrays["header"].tobytes())
    assert header["format_version"] == 2 and len(header["checksum"]) == 64
    text = json.dumps(header["schema"])
    header["schema"] = json.loads(text.replace('"x", "y", "z"', '"z", "y", "x"'))  # relabel the rows
    assert header["schema"] != json.loads(text)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, codes=arrays["codes"], counts=arrays["counts"],
                        header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
    (tmp_path / "edited.bnfp").write_bytes(buffer.getvalue())
    with pytest.raises(DataError, match="checksum"):
        bf.read_profile(tmp_path / "edited.bnfp")


def test_a_tiny_profile_declaring_huge_arrays_is_refused_before_reading_them(tmp_path, monkeypatch):
    """125 million zero rows compress to a few hundred kB; the declared size is checked before decompressing."""
    import bnfisher._utils.memory as memory

    buffer = io.BytesIO()
    content = json.dumps({"format": "bnfisher-profile", "format_version": 1,
                          "schema": bf.Schema({"a": ["x"]}).to_dict()}).encode()
    np.savez_compressed(buffer, codes=np.zeros((20_000_000, 1), dtype=np.int8),
                        counts=np.ones(20_000_000, dtype=np.int8), header=np.frombuffer(content, dtype=np.uint8))
    (tmp_path / "bomb.bnfp").write_bytes(buffer.getvalue())
    assert len(buffer.getvalue()) < 200_000
    monkeypatch.setattr(memory, "available_memory", lambda: 100_000_000)  # 100 MB left: 20 M codes need 180 MB
    with pytest.raises(ResourceError, match="bomb.bnfp"):
        bf.read_profile(tmp_path / "bomb.bnfp")


def test_a_profile_whose_counts_would_not_fit_as_a_table_is_refused_naming_it(tmp_path, monkeypatch):
    import bnfisher._utils.memory as memory

    path = tmp_path / "many.bnfp"
    path.write_bytes(_profile_bytes(counts=np.array([300_000_000, 1, 1, 1])))
    reference = bf.read_profile(path)  # 743 bytes: read, but never expanded blindly
    monkeypatch.setattr(memory, "available_memory", lambda: 4 * 2**30)
    with pytest.raises(ResourceError, match="many.bnfp"):
        bf.compare(reference, pd.DataFrame({"a": list("xy"), "b": list("uv")}), n_permutations=9)


def test_merging_profiles_keeps_declared_categories_as_profiling_the_union_does():
    kind = pd.CategoricalDtype(["a", "b", "c", "unused"])
    parts = [pd.DataFrame({"x": pd.Series(list(v), dtype=kind), "y": list(w)})
             for v, w in (("ab", "uv"), ("bc", "vv"), ("ca", "uu"))]
    merged = bf.merge_profiles([bf.profile(p) for p in parts])
    union = bf.profile(*parts)
    assert merged.schema.states == union.schema.states and "unused" in merged.schema.states["x"]
    np.testing.assert_array_equal(merged.codes, union.codes)
    np.testing.assert_array_equal(merged.counts, union.counts)


@pytest.mark.parametrize("flag", [0x20, 0x01])  # compressed patched data (unsupported); encrypted
def test_an_archive_with_features_zipfile_cannot_read_is_a_damaged_profile(tmp_path, flag):
    """Found by the fuzzer: zipfile raises NotImplementedError / RuntimeError for these."""
    bf.profile(pd.DataFrame({"a": list("xyxz")})).save(tmp_path / "p.bnfp")
    data = bytearray((tmp_path / "p.bnfp").read_bytes())
    central = data.index(b"PK\x01\x02")
    data[central + 8] |= flag  # the general-purpose flags of the first member in the central directory
    local = data.index(b"PK\x03\x04")
    data[local + 6] |= flag
    (tmp_path / "p.bnfp").write_bytes(bytes(data))
    with pytest.raises(DataError, match="p.bnfp"):
        bf.read_profile(tmp_path / "p.bnfp")
