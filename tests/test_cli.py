import pandas as pd
import pytest

from bnfisher import read_bif
from bnfisher.cli import main
from bnfisher.datasets import load


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    data = load("nursery")
    first, second = folder / "a.csv", folder / "b.csv"
    data.iloc[::7].to_csv(first, index=False)
    data[data["class"] == "priority"].iloc[:800].to_csv(second, index=False)
    return folder, first, second


def test_every_command_has_help(capsys):
    for command in ["demo", "mmd", "learn", "summarize", "compare"]:
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        assert "usage: bnfisher " + command in capsys.readouterr().out


def test_demo_runs(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Chow-Liu network" in out and "MMD (eq. 10) between two random halves" in out


def test_summarize_bundled_and_user_csv(tables, capsys):
    folder, first, _ = tables
    assert main(["summarize", "-k", "20", "--n-init", "20", "--n-random", "20", "--quiet"]) == 0
    assert "MMD of 20 random subsets" in capsys.readouterr().out
    output = folder / "subset.csv"
    plot = folder / "summary.png"
    assert main(["summarize", str(first), "-k", "30", "--structure", "tan", "--n-init", "30", "--n-random", "30",
                 "--quiet", "-o", str(output), "--plot", str(plot)]) == 0
    subset = pd.read_csv(output)
    assert len(subset) == 30 and subset.columns[0] == "row"
    original = pd.read_csv(first)
    for _, row in subset.head(5).iterrows():  # the row numbers point at the very rows written
        assert original.iloc[int(row["row"])].astype(str).tolist() == row.iloc[1:].astype(str).tolist()
    assert plot.stat().st_size > 10_000


def test_learn_writes_bif_and_mmd_compare_use_it(tables, capsys):
    folder, first, second = tables
    model = folder / "model.bif"
    assert main(["learn", str(first), "--structure", "hc", "--quiet", "-o", str(model)]) == 0
    assert len(read_bif(model).variables) == 9
    assert main(["mmd", str(first), str(second), "--network", str(model)]) == 0
    assert "MMD (eq. 10)" in capsys.readouterr().out
    assert main(["compare", str(first), str(second), "--permutations", "50"]) == 0
    out = capsys.readouterr().out
    assert "p-value (50 permutations) = 0.01961" in out  # 1 / 51: the classes differ


def test_errors_exit_2_with_a_message(tables, capsys):
    folder, first, _ = tables
    assert main(["summarize", str(first), "-k", "0", "--quiet"]) == 2
    assert "`k` must satisfy" in capsys.readouterr().err
    assert main(["learn", str(folder / "missing.csv")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert main(["learn", str(first), "--structure", "tan", "--class-variable", "nope"]) == 2
    assert "'nope' is not a column" in capsys.readouterr().err
