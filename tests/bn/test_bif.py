"""BIF files: round trips, the dialects pgmpy, pyAgrum and bnlearn write, and everything that is not BIF."""

import numpy as np
import pandas as pd
import pytest

from bnfisher import BayesianNetwork, Schema, learn, parse_bif, read_bif, write_bif
from bnfisher.exceptions import NetworkFileError, SchemaError

from _helpers import BIF_DIR, bif_path

_LARGE = {"munin", "pathfinder", "link", "pigs", "water"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name.split(".")[0] in _LARGE else p
                                  for p in sorted(BIF_DIR.glob("*.bif.gz"))], ids=lambda p: p.name.split(".")[0])
def test_bif_round_trip(path, tmp_path):
    network = read_bif(path)
    target = tmp_path / "copy.bif"
    write_bif(network, target)
    again = read_bif(target)
    assert again.variables == network.variables
    for v in network.variables:
        assert again.states[v] == network.states[v]
        assert again.parents[v] == network.parents[v]
        np.testing.assert_allclose(again.cpts[v], network.cpts[v], rtol=0, atol=1e-15)


def test_bif_round_trip_keeps_label_types():
    data = pd.DataFrame({"n": [1, 2, 2, 3], "flag": [True, False, True, True], "s": ["x", "y", "x", "x"]})
    network = BayesianNetwork.from_data(data, {"n": [], "flag": ["n"], "s": ["flag"]})
    again = parse_bif(write_bif(network))
    assert again.states == network.states
    assert type(again.states["n"][0]) is int and type(again.states["flag"][0]) is bool


def test_write_bif_rejects_labels_bif_cannot_hold():
    network = BayesianNetwork({}, {"A": [0.5, 0.5]}, {"A": ["a b", "c"]})
    with pytest.raises(SchemaError, match="'a b'"):
        write_bif(network)


def test_schema_travels_inside_the_bif_file(tmp_path):
    frame = pd.DataFrame({"x": np.linspace(0, 1, 40), "c": list("ab") * 20})
    schema = Schema.from_data(frame, bins=3, na_values=["?"])
    network = learn(schema.encode(frame), "chow-liu")
    path = tmp_path / "m.bif"
    write_bif(network, path)
    again = read_bif(path)
    assert again.schema == network.schema and again.schema.bin_edges["x"] == schema.bin_edges["x"]
    # New numeric data is binned with the training edges, as the network expects.
    np.testing.assert_array_equal(again.encode(frame).codes, network.encode(frame).codes)


def test_files_written_by_pgmpy_and_pyagrum_read(tmp_path):
    network = read_bif(bif_path("asia"))
    pyagrum = pytest.importorskip("pyagrum")
    from bnfisher.bn.formats.interop import to_pgmpy, to_pyagrum

    pa_path = tmp_path / "pyagrum.bif"
    pyagrum.saveBN(to_pyagrum(network), str(pa_path))
    assert "table" in pa_path.read_text() or "(" in pa_path.read_text()
    from pgmpy.readwrite import BIFWriter

    pg_path = tmp_path / "pgmpy.bif"
    BIFWriter(to_pgmpy(network)).write(str(pg_path))
    for path in (pa_path, pg_path):
        again = read_bif(path)
        assert set(again.variables) == set(network.variables)
        for v in network.variables:
            assert again.parents[v] == network.parents[v] or set(again.parents[v]) == set(network.parents[v])
            order = [again.parents[v].index(p) for p in network.parents[v]] + [len(network.parents[v])]
            expected = np.asarray(network.cpts[v])
            got = np.transpose(np.asarray(again.cpts[v]), np.argsort(order)) if network.parents[v] else again.cpts[v]
            state_order = [again.states[v].index(str(s)) for s in network.states[v]]
            np.testing.assert_allclose(np.take(got, state_order, axis=-1), expected, atol=1e-9)


def test_bnlearn_style_file_reads():
    """bnlearn's repository files (as shipped) have ``network unknown {}`` and comma-separated tables."""
    text = bif_path("cancer").read_bytes()
    import gzip

    assert b"network" in gzip.decompress(text)
    assert len(read_bif(bif_path("cancer")).variables) == 5


@pytest.mark.parametrize("text, message", [
    ("a,b\n1,2\n", "line 1: expected 'network', 'variable' or 'probability'"),
    ("", "no 'variable' block"),
    ("{}", "line 1: expected"),
    ("network x {\n}\nvariable a {\n  type discrete [ 2 ] { y, n };\n", "line 3: cannot parse this variable"),
    ("variable a { type discrete [ 2 ] { y, n }; }\n", "have no probability block"),
    ("variable a { type discrete [ 2 ] { y, n }; }\nvariable a { type discrete [ 2 ] { y, n }; }\n",
     "line 2: variable 'a' is declared twice"),
    ("variable a { type discrete [ 2 ] { y, n }; }\nprobability ( a ) { table 0.5, 0.5; }\n"
     "probability ( a ) { table 0.1, 0.9; }", "line 3: a second probability block"),
    ("variable a { type discrete [ 2 ] { y, n }; }\nvariable b { type discrete [ 2 ] { y, n }; }\n"
     "probability ( a ) { table 0.5, 0.5; }\nprobability ( b | a ) { (y) 0.5, 0.5; (y) 0.1, 0.9; (n) 1, 0; }",
     "a second row for parent configuration"),
    ("variable a { type discrete [ 2 ] { y, n }; }\nprobability ( a ) { table 0.5, x; }", "not numbers"),
    ("variable a { type discrete [ 2 ] { y, n }; }\nprobability ( a ) { table 0.5; }", "has 1 entries; expected 2"),
])
def test_what_is_not_bif_is_refused_with_the_line(text, message):
    with pytest.raises(NetworkFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_bif(text, source="f.bif")


def test_read_bif_names_the_file(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(NetworkFileError, match="data.csv, line 1"):
        read_bif(path)
    with pytest.raises(FileNotFoundError):
        read_bif(tmp_path / "absent.bif")
    with pytest.raises(NetworkFileError, match="folder"):
        read_bif(tmp_path)


def test_one_state_variables_round_trip():
    network = BayesianNetwork({"b": ["a"]}, {"a": [1.0], "b": [[0.3, 0.7]]}, {"a": ["only"], "b": ["u", "v"]})
    again = parse_bif(write_bif(network))
    assert again.states["a"] == ("only",) and np.allclose(again.cpts["b"], [[0.3, 0.7]])


def test_states_that_bif_would_write_alike_are_refused():
    network = BayesianNetwork({}, {"a": [0.2, 0.3, 0.5]}, {"a": [0, 1, "1"]})
    with pytest.raises(SchemaError, match="write alike"):
        write_bif(network)
