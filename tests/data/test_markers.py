"""Words that often mean "missing" (NA, None, NULL...): missing among numbers, labels among text, with a warning.

The oracles are pandas itself: ``read_csv(keep_default_na=False)`` gives a text column's cells as the file spells
them, and ``read_csv`` with its defaults gives a column of numbers with its markers missing.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from bnfisher.bn.formats.bif import read_bif
from bnfisher.cli import main
from bnfisher.data.guardrails import check_tables
from bnfisher.data.io import read_table
from bnfisher.data.markers import COMMON_MARKERS
from bnfisher.exceptions import DataWarning

from _helpers import bif_path

CONTENT = "flow,age,ok,code\nLow,31,True,1\nNone,NA,NA,2\nHigh,40,False,NULL\nNone,,True,3\nN/A,52,False,n/a\n"


def test_markers_are_labels_in_text_and_missing_among_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CONTENT)
    frame = read_table(path)
    literal = pd.read_csv(path, keep_default_na=False, dtype=str)
    assert frame["flow"].astype(str).tolist() == literal["flow"].tolist()  # as the file spells them
    defaults = pd.read_csv(path)
    for column in ("age", "code"):  # numbers: as pandas' defaults read them
        assert frame[column].isna().tolist() == defaults[column].isna().tolist()
        assert frame[column].dropna().astype(float).tolist() == defaults[column].dropna().tolist()
    assert frame["ok"].isna().tolist() == [False, True, False, False, False]
    assert sorted(frame["ok"].dropna().astype(str).unique()) == ["False", "True"]


def test_markers_the_user_names_are_missing_and_the_guardrail_names_the_others(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CONTENT)
    frame = read_table(path, na_values=["None"])
    assert frame["flow"].isna().tolist() == [False, True, False, True, False]
    advice = check_tables([frame], na_values=["None"])
    assert len(advice) == 1 and advice[0].startswith("Column 'flow' holds 'N/A' in 1 rows")
    assert "--na-values 'N/A'" in advice[0]


def test_every_marker_pandas_knows_is_a_label_in_a_text_column(tmp_path):
    markers = sorted(COMMON_MARKERS)
    path = tmp_path / "t.tsv"
    path.write_text("x\n" + "\n".join(["a"] + markers) + "\n")
    frame = read_table(path)
    assert not frame["x"].isna().any() and sorted(frame["x"].astype(str)) == sorted(["a"] + markers)
    assert pd.read_csv(path, sep="\t")["x"].isna().sum() == len(markers)  # pandas' defaults would drop them all


def test_a_state_spelled_none_survives_reading_and_dask_agrees(tmp_path):
    """bnlearn's child has the state 'None' (DuctFlow, CardiacMixing): no cell of a sample may read as missing."""
    network = read_bif(bif_path("child"))
    spelled = [v for v in network.variables if "None" in network.states[v]]
    assert spelled, "child's BIF names no state 'None'"
    sample = network.sample(400, random_state=0)
    path = tmp_path / "child.csv"
    sample.to_csv(path, index=False)
    frame = read_table(path)
    assert int(frame.isna().sum().sum()) == 0
    for v in spelled:
        np.testing.assert_array_equal(frame[v].astype(str).to_numpy(), sample[v].astype(str).to_numpy())
    pytest.importorskip("dask.dataframe")
    from bnfisher.dask import read_dask

    with pytest.warns(DataWarning, match="first 400 rows: Columns 'DuctFlow', 'CardiacMixing' hold 'None'"):
        distributed = read_dask(path).compute()
    assert int(distributed.isna().sum().sum()) == 0
    assert (distributed[spelled].to_numpy() == frame[spelled].astype(str).to_numpy()).all()


def test_dask_reads_markers_among_numbers_as_missing(tmp_path):
    pytest.importorskip("dask.dataframe")
    from bnfisher.dask import read_dask

    path = tmp_path / "t.csv"
    path.write_text(CONTENT)
    with pytest.warns(DataWarning):
        frame = read_dask(path).compute()
    assert frame["age"].isna().tolist() == pd.read_csv(path)["age"].isna().tolist()
    assert frame["flow"].tolist() == pd.read_csv(path, keep_default_na=False)["flow"].tolist()


def test_the_command_line_counts_no_missing_cell_for_a_label_none(tmp_path, capsys):
    network = read_bif(bif_path("child"))
    for name, seed in (("a", 0), ("b", 1)):
        network.sample(300, random_state=seed).to_csv(tmp_path / f"{name}.csv", index=False)
    status = main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--permutations", "99"])
    assert status in (0, 1)
    captured = capsys.readouterr()
    assert "missing" not in captured.out, captured.out
    assert "Columns 'DuctFlow', 'CardiacMixing' hold 'None'" in captured.err, captured.err  # one warning, two columns
    assert "--na-values 'None'" in captured.err


@pytest.mark.parametrize("late, expected_missing", [("abc", 0), ("NA", 1)])
def test_a_value_far_down_a_column_of_numbers(tmp_path, late, expected_missing):
    """Past pandas' internal block (2**18 rows) its parser returns numbers above and text below: one column, two
    spellings of each label (0 and '0') unless read again.  Oracle: ``read_csv(low_memory=False)``, one block."""
    path = tmp_path / "t.csv"
    n = 2**18 + 10
    path.write_text("a,b\n" + "".join(f"{i % 7},{'xy'[i % 2]}\n" for i in range(n)) + f"{late},z\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no DtypeWarning reaches the user
        frame = read_table(path)
    oracle = pd.read_csv(path, low_memory=False, keep_default_na=False, dtype=str)["a"]
    assert int(frame["a"].isna().sum()) == expected_missing
    if expected_missing:  # numbers with a marker: numbers, the marker missing
        assert frame["a"].dropna().astype(int).tolist() == oracle.iloc[:-1].astype(int).tolist()
    else:  # text: every cell as the file spells it, each label once
        assert frame["a"].astype(str).tolist() == oracle.tolist()
        assert sorted(frame["a"].cat.categories) == sorted(set(oracle))


def test_dask_reads_a_marker_past_its_sample_in_a_column_of_numbers_as_missing(tmp_path):
    """The Dask reader decides from the first 10,000 rows; an ``NA`` first seen after them, in a column of numbers,
    is missing as the pandas reader (which sees the whole file) has it."""
    pytest.importorskip("dask.dataframe")
    from bnfisher.dask import read_dask

    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "".join(f"{i % 5},{'xy'[i % 2]}\n" for i in range(10_050)) + "NA,x\n")
    expected = read_table(path)["a"].isna()
    assert int(expected.sum()) == 1
    assert read_dask(path).compute()["a"].isna().tolist() == expected.tolist()


def test_one_warning_per_marker_however_many_columns_hold_it(tmp_path):
    """bnlearn's pathfinder has a state 'NA' in 35 variables: one warning names three and counts the others."""
    network = read_bif(bif_path("pathfinder"))
    path = tmp_path / "pathfinder.csv"
    network.sample(500, random_state=0).to_csv(path, index=False)
    literal = pd.read_csv(path, keep_default_na=False, dtype=str)
    holding = [c for c in literal.columns if (literal[c] == "NA").any()]
    assert len(holding) > 3
    frame = read_table(path)
    assert int(frame.isna().sum().sum()) == 0
    about_na = [m for m in check_tables([frame]) if "'NA'" in m]
    assert len(about_na) == 1
    rows = [int((literal[c] == "NA").sum()) for c in holding]  # the sentence's counts, from the file's own cells
    assert about_na[0].startswith(f"Columns {holding[0]!r}, {holding[1]!r}, {holding[2]!r} and {len(holding) - 3} more "
                                  f"hold 'NA' (in {min(rows)}-{max(rows)} rows each): if it marks a missing value")
