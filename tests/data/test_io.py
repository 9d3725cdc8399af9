"""Reading tables and writing outputs: delimiters, corrupt files, atomic writes, refused destinations."""

import gzip
import os

import numpy as np
import pandas as pd
import pytest

from bnfisher.data.io import check_outputs, read_table, read_text, write_table, write_text
from bnfisher.exceptions import DataError, OutputError


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_delimiter_is_detected(tmp_path, sep):
    path = tmp_path / "t.csv"
    pd.DataFrame({"a": list("xyz"), "b": [1, 2, 3]}).to_csv(path, index=False, sep=sep)
    frame = read_table(path)
    assert list(frame.columns) == ["a", "b"] and frame["b"].tolist() == [1, 2, 3]


def test_na_values_and_gzip(tmp_path):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(b"a,b\nx,?\ny,1\n"))
    frame = read_table(path, na_values=["?"])
    assert frame["b"].isna().tolist() == [True, False]


@pytest.mark.parametrize("name, content, message", [
    ("empty.csv", b"", "Cannot read"),
    ("bad.csv.gz", b"\x1f\x8b\x08garbage", "Cannot read"),
    ("bad.parquet", b"PAR1 not really", "Cannot read"),
    ("table.xlsx", b"x", "use a .csv"),
])
def test_corrupt_or_unknown_files_raise_data_errors(tmp_path, name, content, message):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")  # the [dask] extra reads Parquet
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_table(path)


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path):
    path = tmp_path / "out.csv"
    write_table(pd.DataFrame({"a": [1, 2]}), path)
    write_text(tmp_path / "x.txt", "hello")
    assert read_text(tmp_path / "x.txt") == "hello"
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "x.txt"]

    class Boom(Exception):
        pass

    class Frame(pd.DataFrame):
        def to_csv(self, *args, **kwargs):
            raise Boom

    with pytest.raises(Boom):
        write_table(Frame({"a": [1]}), path)
    assert pd.read_csv(path)["a"].tolist() == [1, 2]  # the old file is intact
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "x.txt"]


def test_check_outputs_refuses_inputs_folders_and_repeats(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    with pytest.raises(OutputError, match="refusing to overwrite an input"):
        check_outputs([str(tmp_path / "." / "in.csv")], inputs=[source])
    with pytest.raises(OutputError, match="is a folder"):
        check_outputs([tmp_path])
    with pytest.raises(OutputError, match="does not exist"):
        check_outputs([tmp_path / "no" / "x.csv"])
    with pytest.raises(OutputError, match="given twice"):
        check_outputs([tmp_path / "a.csv", tmp_path / "a.csv"])
    link = tmp_path / "link.csv"
    link.symlink_to(source)
    with pytest.raises(OutputError, match="refusing"):
        check_outputs([link], inputs=[source])
    check_outputs([None, tmp_path / "fine.csv"], inputs=[source, None])


def test_writing_to_a_fifo_streams_into_it_and_never_replaces_it(tmp_path):
    """`-o /dev/null` (or a named pipe) must be written into, as every Unix tool does, not replaced by a file."""
    import stat

    from bnfisher.data.io import write_text

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the write does not block
    try:
        write_text(fifo, "row,a\n0,x\n")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert os.read(reader, 100) == b"row,a\n0,x\n"
    finally:
        os.close(reader)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bnfisher-")]  # no temporary left behind


def test_compiled_functions_fall_back_to_no_cache_where_none_can_be_kept(monkeypatch):
    """A read-only install without a writable home: numba cannot cache; the function must still compile and run."""
    import numba

    from bnfisher._utils import jit as _jit

    real = numba.njit

    def refusing(*args, **options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file '<test>'")
        return real(*args, **options)

    monkeypatch.setattr(numba, "njit", refusing)

    @_jit.compiled(nogil=True)
    def double(x):
        return 2 * x

    assert double(21) == 42


@pytest.mark.slow
def test_a_compiled_function_is_replaced_in_every_module_that_imported_it():
    """A compiled loop calling one imported from another module (the pair scores call the family kernel) finds the
    numba dispatcher under the imported name, and runs compiled (fresh process)."""
    import subprocess
    import sys

    code = ("import numpy as np; from bnfisher.bn.scores import _pair as p; "
            "from bnfisher._utils.jit import _materialise; "
            "_materialise(); print(type(p._family_score).__name__, type(p._dense_value).__name__); "
            "codes = np.array([[0, 1, 1], [1, 0, 1]], dtype=np.int8); "
            "print(p.pair_scores(codes, np.array([2, 2]), score='ll', ess=1.0).round(4).tolist())")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split("\n")
    assert out[0] == "CPUDispatcher CPUDispatcher"
    # ll of a column alone: 1 log(1/3) + 2 log(2/3); of one given the other: 2 log(1/2) (one pair of rows split)
    alone = round(float(np.log(1 / 3) + 2 * np.log(2 / 3)), 4)
    given = round(float(2 * np.log(1 / 2)), 4)
    assert out[1] == str([[alone, given], [given, alone]])


def test_forgetting_puts_the_stand_ins_back_keeps_the_budget_spent_and_the_dispatchers():
    """After ``_forget`` every module holds the stand-in again and a small job runs its fallback; the next switch
    hands back the very dispatchers made before (nothing compiled twice) and the budget spent stays spent (fresh
    process: the suite's own fixture calls ``_forget`` after every test)."""
    import subprocess
    import sys

    code = ("import bnfisher._utils.jit as J; from bnfisher.bn.scores import _pair as p, _family as f\n"
            "J._state['spent'] = 1.5\n"
            "J._materialise(); made = p._family_score; kinds = [type(made).__name__]\n"
            "J._forget(); kinds += [type(p._family_score).__name__, type(f._family_score).__name__]\n"
            "J._materialise(); print(*kinds, p._family_score is made, f._family_score is made, J._state['spent'])")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out == ["CPUDispatcher", "_Deferred", "_Deferred", "True", "True", "1.5"]


@pytest.mark.slow
def test_a_loop_compiled_alone_leaves_the_other_functions_to_the_budget():
    """A function declared ``alone`` (the annealing walk, which has no fallback) runs compiled by itself: every
    module keeps its stand-ins and the budget stays unspent, so a small job after it still runs its NumPy fallback
    (fresh process)."""
    import subprocess
    import sys

    code = ("import numpy as np, bnfisher._utils.jit as J; from bnfisher.summary import anneal as a\n"
            "from bnfisher.bn.scores import _pair as p\n"
            "n = 4; g = np.eye(n); cells = np.array([[0, 2], [1, 3], [0, 3], [1, 2]])\n"
            "inside = np.array([True, True, False, False]); t = 10\n"
            "best, swaps = a._walk(g, np.zeros(n), np.array([0, 1]), inside, cells, np.ones(4), np.array([0, 0, 1, 1]),"
            " np.array([1.0, 1, 1, 1]), np.full(4, 0.5), np.array([2.0, 2.0]), np.ones(2), 10.0, 0.0,"
            " np.full(t, 2), np.zeros(t, dtype=np.int64), np.full(t, 0.5))\n"
            "codes = np.array([[0, 1, 1], [1, 0, 1]], dtype=np.int8)\n"
            "p.pair_scores(codes, np.array([2, 2]), score='ll', ess=1.0)\n"
            "print(type(a._walk).__name__, type(p._family_score).__name__, a._walk.compiled is not None,"
            " J._state['spent'] < J.FALLBACK_BUDGET, len(best) == 2)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out == ["_Deferred", "_Deferred", "True", "True", "True"]


@pytest.mark.slow
def test_a_terminal_is_told_once_that_the_kernels_compile_and_a_log_is_not(tmp_path):
    """The first compile of a process (a cache miss) prints one line on a terminal's stderr; with the kernel in
    numba's cache nothing is compiled and nothing printed; a pipe (a log file, cron) never gets it (fresh
    processes, an empty cache, stderr a pseudo-terminal)."""
    import subprocess
    import sys

    pty = pytest.importorskip("pty")
    from bnfisher._utils.jit import COMPILING_NOTICE

    code = ("import bnfisher._utils.jit as J; J.FALLBACK_BUDGET = 0; "
            "from bnfisher.bn.scores._family import _xlogx_values; print(_xlogx_values(5)[4])")

    def run(cache, terminal: bool) -> tuple:
        environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
        if not terminal:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)
            return done.stdout, done.stderr
        main, side = pty.openpty()
        process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=side, env=environment)
        os.close(side)
        out, _ = process.communicate(timeout=120)
        err = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            err += chunk
        os.close(main)
        return out.decode(), err.decode()

    first, again = run(tmp_path / "cache", True), run(tmp_path / "cache", True)
    assert float(first[0]) == float(again[0]) == pytest.approx(4 * np.log(4))
    assert first[1].strip() == COMPILING_NOTICE and again[1] == ""
    assert run(tmp_path / "other", False)[1] == ""  # a pipe: compiled, and not a word


@pytest.mark.slow
def test_no_thread_can_compile_against_a_stand_in_while_the_modules_are_updated():
    """While ``_materialise`` replaces the stand-ins in the package's modules, no stand-in shows its dispatcher yet
    and numba's compiler lock is held, so a thread that reaches a new dispatcher waits to compile it (it compiled
    against a stand-in once, when two threads scored candidate sets as the process switched to compiled code).
    Each replacement is observed through the module's ``setattr`` (fresh process)."""
    import subprocess
    import sys

    code = ("import builtins, threading; import bnfisher._utils.jit as J; "
            "from bnfisher.bn.scores import _projected as _projected_scores; "
            "from numba.core.compiler_lock import global_compiler_lock as lock\n"
            "seen = []\n"
            "def free():\n"
            "    got = lock._lock.acquire(blocking=False)\n"
            "    got and lock._lock.release()\n"
            "    return got\n"
            "def spy(module, name, value):\n"
            "    published = any(d.dispatcher is not None for d in J._pending)\n"
            "    other = []; thread = threading.Thread(target=lambda: other.append(free()))\n"
            "    thread.start(); thread.join()\n"
            "    seen.append((published, other[0]))\n"
            "    builtins.setattr(module, name, value)\n"
            "J.setattr = spy; J._materialise()\n"
            "print(len(seen) > 10, any(p for p, _ in seen), any(f for _, f in seen), "
            "all(d.dispatcher is not None for d in J._pending))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out == ["True", "False", "False", "True"]


@pytest.mark.slow
def test_import_leaves_the_heavy_dependencies_for_first_use():
    """``import bnfisher`` imports neither pandas, SciPy, numba, networkx nor Dask; using them imports them."""
    import subprocess
    import sys

    code = ("import sys, bnfisher; heavy = ('pandas', 'scipy', 'numba', 'networkx', 'dask', 'matplotlib'); "
            "print(sorted(m for m in heavy if m in sys.modules)); "
            "from bnfisher._utils.lazy import pandas as pd; pd.DataFrame; print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True"


@pytest.mark.slow
def test_a_comparison_and_a_selection_leave_scipy_stats_unimported():
    """``scipy.stats`` costs about a second to import: the tests and the selection take their tails from
    ``scipy.special`` (``bnfisher._utils.tails``), so a command never pays for it."""
    import subprocess
    import sys

    code = ("import sys, warnings; warnings.simplefilter('ignore'); import bnfisher as bf; "
            "from bnfisher.datasets import load; data = load('nursery').iloc[::8]; "
            "bf.compare(data.iloc[::2], data.iloc[1::2], n_permutations=19, random_state=0); "
            "bf.summarize(data, 10, n_init=5, n_random=10, criterion='chi2', random_state=0); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False"]


def test_the_tails_are_scipy_stats_tails():
    """The chi-square log tail and the normal quantile equal ``scipy.stats``' (the oracle) on a grid (to rounding:
    older SciPy takes the log of the upper tail everywhere)."""
    from scipy.stats import chi2, norm

    from bnfisher._utils.tails import chi2_logsf, normal_quantile

    x = np.concatenate([np.geomspace(1e-8, 5e3, 400), [0.0, 1.0, 2.0]])
    for df in (1, 2, 3, 7, 30, 200):
        np.testing.assert_allclose(chi2_logsf(x, df), chi2.logsf(x, df), rtol=1e-9, atol=1e-15)
    q = np.linspace(0.001, 0.999, 99)
    np.testing.assert_allclose(normal_quantile(q), norm.ppf(q), rtol=1e-14)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_write_killed_by_a_signal_leaves_no_temporary_file_and_no_target(tmp_path, name):
    """The signal arrives mid-write (from inside fsync); the process still dies of it, and leaves nothing behind."""
    import signal
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import os, signal
        import bnfisher.data.io as io
        signal.signal(signal.{name}, signal.SIG_DFL)  # whatever the runner ignores (nohup ignores SIGHUP)
        real = os.fsync
        def fsync(fd):
            os.kill(os.getpid(), signal.{name})
            return real(fd)
        io.os.fsync = fsync
        io.write_text({str(tmp_path / "out.csv")!r}, "a\\n" * 1000)
        print("survived")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == -getattr(signal, name), done.stderr
    assert "survived" not in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_write_under_nohup_survives_the_hangup_it_ignores(tmp_path):
    """Found when the suite ran under nohup: SIGHUP was caught during a write although the process ignored it, so
    the write was abandoned and the ignored signal did not end the process -- no file and no error.  An ignored
    signal now stays ignored and the file is written."""
    import signal
    import subprocess
    import sys
    import textwrap

    if not hasattr(signal, "SIGHUP"):
        pytest.skip("no SIGHUP on this platform")
    target = tmp_path / "out.csv"
    script = textwrap.dedent(f"""
        import os, signal
        import bnfisher.data.io as io
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts a process
        real = os.fsync
        def fsync(fd):
            os.kill(os.getpid(), signal.SIGHUP)
            return real(fd)
        io.os.fsync = fsync
        io.write_text({str(target)!r}, "a\\n" * 1000)
        print("survived")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "survived" in done.stdout, done.stderr
    assert list(tmp_path.iterdir()) == [target] and target.read_text() == "a\n" * 1000


def test_a_csv_read_in_chunks_is_the_file_read_at_once(tmp_path, monkeypatch):
    """Oracle: one pandas read_csv of the whole file (text as object), against the reader's chunks of 7 rows:
    text joined as categories with every label, numbers upcast when a later chunk has an empty cell, and a column
    whose later chunk holds text read as the whole file reads it."""
    import pandas as pd

    from bnfisher.data import io as reader

    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame({"word": rng.choice(["ant", "bee", "cat", "dog"], n), "count": rng.integers(0, 9, n),
                          "late": np.arange(n).astype(object), "gap": rng.integers(0, 3, n).astype(float)})
    frame.loc[n - 2, "word"] = "eel"  # a label only the last chunk holds
    frame.loc[n - 3, "late"] = "text"  # a number column that turns to text after the first chunks
    frame.loc[n - 1, "gap"] = np.nan  # an integer column with an empty cell in the last chunk
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    whole = reader.read_table(path)
    monkeypatch.setattr(reader, "CSV_CHUNK_ROWS", 7)
    chunked = reader.read_table(path)
    pd.testing.assert_frame_equal(chunked, whole)
    assert list(chunked["word"].cat.categories) == ["ant", "bee", "cat", "dog", "eel"]
    expected = pd.read_csv(path)
    assert (chunked["late"].astype(str).tolist() == expected["late"].astype(str).tolist())
    assert chunked["gap"].isna().sum() == 1 and chunked["count"].tolist() == expected["count"].tolist()
