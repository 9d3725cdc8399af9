"""Outputs that collide with the user's names, text that matplotlib would parse, and the smaller findings."""

import errno
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.cli import main
from bnfisher.exceptions import DataError, DataWarning, OptionError, OptionTypeError, OutputError, SchedulerError

from _helpers import bif_path


def _reserved(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({name: rng.choice(list("ab"), n) for name in ("row", "sample", "witness", "copies", "x")})


# ------------------------------------------------------------------ the result's columns beside the user's
def test_columns_named_like_the_results_own_survive_every_output(tmp_path, capsys):
    _reserved().to_csv(tmp_path / "a.csv", index=False)
    _reserved(seed=1).to_csv(tmp_path / "b.csv", index=False)
    a, b = str(tmp_path / "a.csv"), str(tmp_path / "b.csv")
    assert main(["compare", a, b, "--permutations", "19", "--quiet", "--json", str(tmp_path / "c.json"),
                 "--report", str(tmp_path / "c.html")]) == 0, capsys.readouterr().err
    assert main(["summarize", a, "-k", "5", "--n-random", "5", "--quiet", "-o", str(tmp_path / "s.csv"),
                 "--json", str(tmp_path / "s.json"), "--report", str(tmp_path / "s.html")]) == 0
    assert main(["drift", a, b, "--rows", "100", "--permutations", "19", "--quiet",
                 "--json", str(tmp_path / "d.json"), "--report", str(tmp_path / "d.html")]) == 0
    subset = pd.read_csv(tmp_path / "s.csv")
    assert list(subset.columns) == ["row_", "row", "sample", "witness", "copies", "x"]
    original = pd.read_csv(tmp_path / "a.csv")
    pd.testing.assert_frame_equal(subset.drop(columns="row_"), original.iloc[subset["row_"]].reset_index(drop=True))
    typical = json.loads((tmp_path / "c.json").read_text())["typical_rows"][0]
    assert set(typical["values"]) == {"row", "sample", "witness", "copies", "x"} and isinstance(typical["row"], int)


def test_typical_rows_keep_the_users_columns_and_take_a_free_name():
    result = bf.compare(_reserved(), _reserved(seed=1), n_permutations=19, random_state=0)
    table = result.typical_rows(2)
    assert list(table.columns) == ["sample_", "row_", "witness_", "row", "sample", "witness", "copies", "x"]
    assert list(table["sample_"]) == ["A", "A", "B", "B"]


# ------------------------------------------------------------------ $ is a character
_DOLLARS = {"US$": ["$5", "50$/h", "a$b$c"], "x$\\frac{": ["$\\frac{$", "}$"]}


def test_dollar_signs_in_names_and_labels_draw_as_text(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    from matplotlib.mathtext import MathTextParser

    with pytest.raises(ValueError):  # the oracle: matplotlib's own mathtext cannot parse this label
        MathTextParser("agg").parse("$\\frac{$")
    rng = np.random.default_rng(0)
    a = pd.DataFrame({k: rng.choice(v, 300) for k, v in _DOLLARS.items()})
    b = a.copy()
    b["US$"] = rng.choice(["$5", "50$/h"], 300)
    before = dict(matplotlib.rcParams)
    for result in (bf.summarize(a, 5, n_random=5, random_state=0),
                   bf.compare(a, b, n_permutations=99, random_state=0),
                   bf.drift(a, b, window=150, n_permutations=99, random_state=0)):
        result.plot().savefig(tmp_path / "figure.png")
        result.to_html(tmp_path / "report.html")
    assert dict(matplotlib.rcParams) == before  # the user's settings are left as they were


# ------------------------------------------------------------------ interrupts, cores, types
@pytest.fixture
def ctrl_c_as_in_a_terminal():
    """SIGINT raised as KeyboardInterrupt, in this process and the commands it starts, as in a terminal.

    A job started in the background by a non-interactive shell (``cmd &`` in a script) has SIGINT ignored, its
    children inherit that, and a Ctrl-C delivered to them does nothing: these tests would then fail for a reason
    of their surroundings, not of bnfisher's.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # a child's preexec_fn: Python installs its own
    signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path, ctrl_c_as_in_a_terminal):
    """Interrupts at random moments of the 1-3 s start-up: never a traceback (10 of 28 tries printed one).

    The child says when the interpreter's own start-up (site-packages and their .pth files, before any line of a
    program) is over; an interrupt during that is Python's to report, and nothing in a package can run earlier.
    """
    entry = [sys.executable, "-c", "import sys; sys.stderr.write('started\\n'); sys.stderr.flush(); "
                                   "import _bnfisher_cli; sys.exit(_bnfisher_cli.main())"]
    rng = np.random.default_rng(0)
    interrupted = 0
    for _ in range(8):
        process = subprocess.Popen(entry + ["summarize", "-k", "5", "--quiet"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_as_in_a_terminal)
        assert process.stderr.readline() == "started\n"
        time.sleep(float(rng.uniform(0.05, 0.8)))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
        assert "Traceback" not in err, err
        if process.returncode == 130:
            interrupted += 1
            assert [line for line in err.splitlines() if line.strip()] == ["bnfisher: interrupted"] or \
                err.strip().endswith("interrupted")
        else:
            assert process.returncode == 0, err
    assert interrupted >= 4


def test_an_interrupt_a_callback_swallows_still_ends_the_command_in_one_line(monkeypatch, capsys,
                                                                            ctrl_c_as_in_a_terminal):
    """Ctrl-C landing in a weak reference's callback (the import system's module locks have them) is printed by
    Python as "Exception ignored ... Traceback" and the program went on to exit 0; it now ends the command: 130."""
    import weakref

    from bnfisher.cli import commands

    class Held:
        pass

    def interrupted_in_a_callback(dataset, random_state=None):
        held = Held()
        reference = weakref.ref(held, lambda _: (_ for _ in ()).throw(KeyboardInterrupt()))
        del held  # the callback runs here and raises: Python cannot raise it, it calls the unraisable hook
        time.sleep(5)  # ordinary code: where the interrupt, delivered again, is raised (at once)
        yield f"went on ({reference() is None})"

    monkeypatch.setattr(commands, "demo", interrupted_in_a_callback)
    hook = sys.unraisablehook
    started = time.perf_counter()
    assert commands.main(["demo"]) == 130
    assert time.perf_counter() - started < 4
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip() == "bnfisher demo: interrupted"
    assert sys.unraisablehook is hook  # put back


def test_n_jobs_beyond_the_cores_warns_and_runs_on_one_thread():
    from bnfisher._utils.parallel import resolve_jobs

    with pytest.warns(DataWarning, match="-100"):
        assert resolve_jobs(-100) == 1
    with pytest.raises(OptionError):
        resolve_jobs(0)


def test_a_dask_table_given_to_compare_names_its_module_and_the_fix():
    dd = pytest.importorskip("dask.dataframe")
    table = _reserved(20)
    with pytest.raises(OptionTypeError, match="dask.*compute"):
        bf.compare(table, dd.from_pandas(table, npartitions=2))


def test_a_full_disk_names_the_output_and_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    from bnfisher.data.io import write_text

    target = tmp_path / "out.json"
    target.write_text("old")

    def full(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError, match="out.json.*No space left"):
        write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left behind
    if os.path.exists("/dev/full"):
        monkeypatch.undo()
        with pytest.raises(OutputError, match="/dev/full"):
            write_text("/dev/full", "x" * 100_000)


def test_bytes_labels_are_a_library_error_with_scikit_learns_words():
    from bnfisher.sklearn import BayesianNetworkClassifier

    X = pd.DataFrame({"a": list("xyxyxy")})
    with pytest.raises(DataError, match="bytes"):
        BayesianNetworkClassifier().fit(X, np.array([b"p", b"q"] * 3, dtype=object))


def test_marginal_of_one_name_is_that_variable_not_its_letters():
    network = bf.read_bif(bif_path("asia"))
    np.testing.assert_array_equal(bf.marginal(network, "smoke"), bf.marginal(network, ["smoke"]))
    with pytest.raises(OptionError, match="'klass'"):
        bf.marginal(network, "klass")


def test_explanations_are_finite_even_for_missing_cells():
    from bnfisher.comparison import explain_rows

    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.choice(["x", "y", None], 300), "b": rng.choice(["u", "v"], 300)})
    kernel = bf.FisherKernel(bf.learn(table, missing="em"))
    explained = explain_rows(kernel, table.iloc[:40])
    assert np.isfinite(explained[["kernel_self", "neg_log_p"]].to_numpy()).all()


def test_a_cluster_that_stops_mid_run_is_a_scheduler_error():
    dask = pytest.importorskip("dask")
    from distributed.client import FutureCancelledError

    from bnfisher.dask.counts import _compute

    def stopped():
        raise FutureCancelledError("key", "scheduler-connection-lost")

    with pytest.raises(SchedulerError, match="stopped"):
        _compute("the data", dask.delayed(stopped)())


def test_a_corrupt_parquet_part_is_named_by_its_file(tmp_path):
    pytest.importorskip("pyarrow")
    from bnfisher.dask import DaskCounts

    folder = tmp_path / "DATA"
    folder.mkdir()
    for k in range(3):
        _reserved(50, k).to_parquet(folder / f"part-{k}.parquet")
    data = (folder / "part-1.parquet").read_bytes()
    (folder / "part-1.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="part-1.parquet"):
        DaskCounts(str(folder)).counts([(0,)])


def test_the_csv_formula_caveat_is_documented():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "guide", "cli.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert "formula" in text and "`=`" in text
