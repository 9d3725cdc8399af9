"""bnfisher's own model file keeps everything, bit for bit; the command line uses it by its suffix."""

import json

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.bn.formats.native import VERSION
from bnfisher.cli import main
from bnfisher.exceptions import NetworkFileError

from _helpers import bif_path, random_network


def _networks_equal(a, b):
    assert a.schema == b.schema and a.schema.variables == b.schema.variables
    assert a.variables == b.variables and a.parents == b.parents
    for v in a.variables:
        np.testing.assert_array_equal(a.cpts[v], b.cpts[v])  # bit-exact, not approximately
        assert [type(x) for x in a.states[v]] == [type(x) for x in b.states[v]]


@pytest.mark.parametrize("name", ["asia", "alarm", "insurance"])
def test_bundled_networks_round_trip_exactly(name, tmp_path):
    network = bf.read_bif(bif_path(name))
    bf.write_model(network, tmp_path / "m.json")
    _networks_equal(network, bf.read_model(tmp_path / "m.json"))


def test_everything_bif_cannot_hold_survives(tmp_path):
    states = {"native-country": ["United States", "Outlying-US(Guam-USVI-etc)", "a, b; {c}"], "age": [17, 30, 65],
              "flag": [True, False]}
    network = bf.BayesianNetwork({"age": ["native-country"], "flag": ["age"]},
                                 {"native-country": [0.2, 0.3, 0.5], "age": np.full((3, 3), 1 / 3),
                                  "flag": [[0.1, 0.9], [0.5, 0.5], [0.7, 0.3]]}, states,
                                 schema=bf.Schema(states, bin_edges={"age": [0, 25, 50, 99]}, na_values=["?", -1],
                                                  hidden=["flag"]))
    network.learning_ = {"missing": "em", "em_iterations": np.int64(7)}
    with pytest.raises(bf.BnfisherError):
        bf.write_bif(network)  # BIF cannot
    bf.write_model(network, tmp_path / "m.json")
    again = bf.read_model(tmp_path / "m.json")
    _networks_equal(network, again)
    assert again.schema.na_values == ("?", -1) and again.schema.hidden == ("flag",)
    assert again.learning_ == {"missing": "em", "em_iterations": 7}


def test_random_networks_round_trip_exactly():
    rng = np.random.default_rng(0)
    for _ in range(20):
        network = random_network(rng, n_vars=int(rng.integers(1, 7)), max_parents=3)
        _networks_equal(network, bf.bn.formats.native.model_from_dict(
            json.loads(bf.write_model(network))))


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(format="other"), "Not a bnfisher model"),
    (lambda d: d.update(version=VERSION + 1), "version"),
    (lambda d: d["cpts"].pop(), "Not a valid"),
    (lambda d: d["cpts"][0].append(0.5), "entries"),
    (lambda d: d.update(parents=[[5]] * len(d["parents"])), "Not a valid"),
])
def test_broken_or_newer_model_files_are_refused_with_the_reason(tmp_path, change, match):
    content = json.loads(bf.write_model(bf.read_bif(bif_path("asia"))))
    change(content)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(content))
    with pytest.raises(NetworkFileError, match=match):
        bf.read_model(path)


def test_the_command_line_writes_and_reads_the_native_format_by_suffix(tmp_path, capsys):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"country": rng.choice(["United States", "Outlying-US(Guam-USVI-etc)"], 300),
                          "x": rng.choice(["a b", "c"], 300)})
    table.to_csv(tmp_path / "t.csv", index=False)
    assert main(["learn", str(tmp_path / "t.csv"), "--quiet", "-o", str(tmp_path / "m.bif")]) == 2
    assert "Cannot write" in capsys.readouterr().err
    assert main(["learn", str(tmp_path / "t.csv"), "--quiet", "-o", str(tmp_path / "m.json")]) == 0
    assert main(["compare", str(tmp_path / "t.csv"), str(tmp_path / "t.csv"), "--network", str(tmp_path / "m.json"),
                 "--permutations", "20", "--quiet"]) == 0
    assert "No significant difference" in capsys.readouterr().out
    assert bf.read_network(tmp_path / "m.json").states["country"] == ("Outlying-US(Guam-USVI-etc)", "United States")
