"""A monitor left to cron: every failure exit status 2 in one line, no secret in any output, nothing written where
it must not be, no alarm stored and never signalled.  Stores: SQLite, and PostgreSQL when BNFISHER_TEST_POSTGRES
names a server (.ci/run starts one)."""

from __future__ import annotations

import http.client
import http.server
import importlib
import json
import os
import sqlite3
import threading
import urllib.error

import numpy as np
import pytest

from bnfisher.cli import main
from bnfisher.datasets import load
from bnfisher.exceptions import StoreError
from bnfisher.jobs.monitor import history, monitor
from bnfisher.store import Store, redact
from bnfisher.store.database import BATCH, SCHEMA_VERSION

from _helpers import POSTGRES, postgres_database

monitor_module = importlib.import_module("bnfisher.jobs.monitor")  # the module (bnfisher.jobs.monitor: the function)
needs_postgres = pytest.mark.skipif(POSTGRES is None, reason="needs a PostgreSQL server (.ci/run starts one)")
SECRET = "Pa55-w0rd-SECRET"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A reference, an unchanged week and a changed one, as CSV files."""
    folder = tmp_path_factory.mktemp("weeks")
    data = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    changed = data.iloc[5000:6000].copy()
    changed["finance"] = "inconv"
    for name, frame in (("ref.csv", data.iloc[:2000]), ("same.csv", data.iloc[4000:5000]), ("new.csv", changed)):
        frame.to_csv(folder / name, index=False)
    return {name: str(folder / name) for name in ("ref.csv", "same.csv", "new.csv")}


@pytest.fixture
def postgres_url():
    """A fresh PostgreSQL database, its URL carrying a password (the server trusts local users: it is ignored)."""
    yield from postgres_database(SECRET)


def _run(capsys, argv) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code)
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code: int, err: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) >= 1 and "Traceback" not in err and lines[-1].startswith("bnfisher "), err
    assert all(" error: " in line or " warning: " in line for line in lines), err


# ---------------------------------------------------------------- the exit contract
def _raising(exc: BaseException):
    def command(args):
        raise exc
    return command


def _driver_errors() -> list:
    import psycopg

    return [sqlite3.OperationalError("database is locked"), sqlite3.DatabaseError("file is not a database"),
            psycopg.OperationalError(f"connection to postgresql://ann:{SECRET}@db.example.org/h failed"),
            psycopg.errors.UndefinedColumn('column "cell" does not exist'),
            http.client.BadStatusLine("garbage"), urllib.error.URLError("refused"), OSError(28, "No space left"),
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), ConnectionResetError("reset"),
            TimeoutError("timed out"), RuntimeError("a bug"), KeyError("result")]


@pytest.mark.parametrize("command", ["monitor", "history", "compare", "drift", "summarize", "profile", "learn"])
def test_every_error_of_every_command_is_exit_status_2_in_one_line(command, monkeypatch, capsys, files):
    """The top-level handler: each driver's, the network's, a file's and an encoding's error classes, and a bug, raised
    from inside each command, give exit status 2 and one line -- never 1 (the alarm code), never a traceback, never
    the password."""
    from bnfisher.cli import commands

    argv = {"monitor": ["monitor", files["ref.csv"], files["same.csv"], "--store", "h.db"],
            "history": ["history", "--store", "h.db"], "compare": ["compare", files["ref.csv"], files["same.csv"]],
            "drift": ["drift", files["ref.csv"], files["same.csv"]], "summarize": ["summarize"],
            "profile": ["profile", files["ref.csv"], "-o", "p.bnfp"], "learn": ["learn", files["ref.csv"]]}[command]
    for exc in _driver_errors():
        monkeypatch.setitem(commands._COMMANDS, command, _raising(exc))  # noqa: SLF001 - the seam under test
        code, _, err = _run(capsys, argv)
        _one_line_error(code, err)
        assert SECRET not in err
        if isinstance(exc, (RuntimeError, KeyError)):
            assert "a bug; please report it" in err


@pytest.mark.parametrize("value", ["2", "0", "1", "nan", "-0.1", "inf"])
def test_levels_outside_0_1_are_refused_in_one_line(value, capsys, files):
    for argv in (["compare", files["ref.csv"], files["same.csv"], "--exit-code"], ["drift", files["ref.csv"],
                 files["same.csv"]], ["monitor", files["ref.csv"], files["same.csv"], "--store", "h.db"]):
        code, _, err = _run(capsys, argv + ["--alpha", value])
        _one_line_error(code, err)
        assert "--alpha" in err


# ---------------------------------------------------------------- secrets
def test_a_password_in_a_store_url_appears_in_no_error(capsys, files):
    """A server that does not answer (a closed port on this machine): the error names the store, never the password."""
    url = f"postgresql://ann:{SECRET}@127.0.0.1:1/history?connect_timeout=2"
    code, out, err = _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", url])
    _one_line_error(code, err)
    assert SECRET not in out + err and "ann:***@127.0.0.1" in err and "cannot connect" in err


def test_a_store_url_given_where_none_is_expected_shows_no_password(capsys, files):
    """argparse echoes an argument it does not recognise: a store's URL given as a positional (``bnfisher history
    URL``) printed its password; the usage error now hides it and says how a store is given."""
    url = f"postgresql://ann:{SECRET}@127.0.0.1:1/history"
    for argv in (["history", "history.db"], ["history", url]):
        code, out, err = _run(capsys, argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("bnfisher: error: "), err
        assert SECRET not in out + err and "a store is given with --store" in err
    assert "ann:***@127.0.0.1" in err
    code, out, err = _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], url])  # read as a third table
    _one_line_error(code, err)
    assert SECRET not in out + err and "No store given: pass --store" in err


@needs_postgres
def test_a_password_in_a_store_url_reaches_no_output(postgres_url, capsys, files, tmp_path):
    """stdout (text, --quiet, --json -), stderr, the JSON file, the dashboard and the webhook's body: no password."""
    server, received = _hook_server(200)
    url = f"http://127.0.0.1:{server.server_port}/hook"
    page, report = tmp_path / "d.html", tmp_path / "run.json"
    seen = []
    for argv in (["monitor", files["ref.csv"], files["same.csv"], "--store", postgres_url],
                 ["monitor", files["ref.csv"], files["new.csv"], "--store", postgres_url, "--webhook", url,
                  "--dashboard", str(page), "--json", str(report)],
                 ["history", "--store", postgres_url, "--json", "-"], ["history", "--store", postgres_url, "--quiet"],
                 ["history", "--store", postgres_url.replace("/bnfisher_", "/no_such_db_")]):
        code, out, err = _run(capsys, argv)
        seen += [out, err]
    assert code == 2  # the missing database: an error, in one line
    server.shutdown()
    texts = seen + [page.read_text(), report.read_text(), json.dumps(received)]
    assert received and all(SECRET not in text for text in texts)
    assert "postgres:***@" in page.read_text() and received[0]["store"].startswith("postgresql://postgres:***@")
    os.environ["BNFISHER_STORE"] = postgres_url  # the password from the environment, not the command line
    try:
        code, out, err = _run(capsys, ["history"])
    finally:
        del os.environ["BNFISHER_STORE"]
    assert code == 0 and "2 windows" in out and SECRET not in out + err


# ---------------------------------------------------------------- where the store writes
def test_another_applications_database_is_refused_and_left_unchanged(tmp_path, capsys, files):
    other = tmp_path / "app.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    connection.commit()
    connection.close()
    before = other.read_bytes()
    for argv in (["history", "--store", str(other)], ["monitor", files["ref.csv"], files["same.csv"], "--store",
                                                       str(other)]):
        code, _, err = _run(capsys, argv)
        _one_line_error(code, err)
        assert "holds other tables (customers)" in err
    assert other.read_bytes() == before


@needs_postgres
def test_another_applications_postgresql_database_is_refused(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER)")
    with pytest.raises(StoreError, match=r"holds other tables \(orders\)"):
        Store(postgres_url)
    with psycopg.connect(postgres_url) as connection:
        tables = connection.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                    "current_schema()").fetchall()
    assert tables == [("orders",)]


def test_reading_commands_create_and_change_nothing(tmp_path, capsys, files):
    code, _, err = _run(capsys, ["history", "--store", str(tmp_path / "typo.db")])
    _one_line_error(code, err)
    assert not (tmp_path / "typo.db").exists()
    store = tmp_path / "h.db"
    assert _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", str(store)])[0] == 0
    before = store.read_bytes()
    assert _run(capsys, ["history", "--store", str(store), "--dashboard", str(tmp_path / "d.html")])[0] == 0
    assert store.read_bytes() == before


@pytest.mark.parametrize("flag", ["--dashboard", "--json"])
def test_an_output_on_the_store_or_an_input_is_refused_before_any_work(flag, tmp_path, capsys, files, monkeypatch):
    store = tmp_path / "h.db"
    assert _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", str(store)])[0] == 0
    before = store.read_bytes()
    monkeypatch.setattr(monitor_module, "drift", _raising(AssertionError("tested before refusing")))
    for argv in (["monitor", files["ref.csv"], files["new.csv"], "--store", str(store), flag, str(store)],
                 ["monitor", files["ref.csv"], files["new.csv"], "--store", str(store), flag, files["new.csv"]],
                 ["history", "--store", str(store), flag, str(store)]):
        code, _, err = _run(capsys, argv)
        _one_line_error(code, err)
        assert "tested before refusing" not in err
    assert store.read_bytes() == before
    code, _, err = _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", files["same.csv"]])
    _one_line_error(code, err)


@pytest.mark.parametrize("location", ["", "/dev/null", ".", "missing-folder/h.db", "mysql://u@h/db"])
def test_locations_that_cannot_be_a_store_are_refused_in_one_line(location, capsys, files):
    code, _, err = _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", location])
    _one_line_error(code, err)
    assert "--store" in err


def test_a_store_that_cannot_be_written_fails_before_any_window_is_tested(tmp_path, monkeypatch, capsys, files):
    """As root a read-only file is writable, so the driver is made to refuse the first write of the run."""
    real = sqlite3.connect

    class ReadOnly(sqlite3.Connection):
        def cursor(self, *args, **kwargs):
            return ReadOnlyCursor(self)

    class ReadOnlyCursor(sqlite3.Cursor):
        def execute(self, sql, *args):
            if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "CREATE", "ALTER", "DELETE")):
                raise sqlite3.OperationalError("attempt to write a readonly database")
            return super().execute(sql, *args)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real(*a, **dict(k, factory=ReadOnly)))
    monkeypatch.setattr(monitor_module, "drift", _raising(AssertionError("tested before the store was checked")))
    code, _, err = _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", str(tmp_path / "h.db")])
    _one_line_error(code, err)
    assert "cannot be written" in err


def test_a_lock_that_outlasts_the_timeout_is_named_as_a_lock(tmp_path):
    path = tmp_path / "h.db"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="is locked by another process for more than 0.2 s"):
            Store(path, timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _stores(tmp_path) -> list:
    return [str(tmp_path / "h.db")] + ([POSTGRES] if POSTGRES else [])


def test_keys_are_sent_in_batches_however_many(tmp_path):
    keys = [f"k{i}" for i in range(3 * 65_536 // 2)]  # more than either database takes in one statement
    for location in _stores(tmp_path):
        with Store(location) as opened:
            assert opened.known(keys) == set() and opened.labels(keys) == set()
    assert BATCH < 32_766


def test_an_alarm_stored_by_a_run_that_failed_is_signalled_by_the_next(tmp_path, capsys, files, monkeypatch):
    """The dashboard cannot be written after the alarm is stored: exit 2; the next run, with no new window, signals
    the stored alarm (exit 1, its label named, the webhook told), and the run after that is quiet."""
    store = str(tmp_path / "h.db")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(monitor_module, "write_dashboard", broken)
    code, _, err = _run(capsys, ["monitor", files["ref.csv"], files["new.csv"], "--store", store, "--dashboard",
                                 str(tmp_path / "d.html")])
    _one_line_error(code, err)
    monkeypatch.undo()
    server, received = _hook_server(200)
    url = f"http://127.0.0.1:{server.server_port}/"
    code, out, err = _run(capsys, ["monitor", files["ref.csv"], files["new.csv"], "--store", store, "--webhook", url])
    assert code == 1 and "1 alarm stored by an earlier run" in out and "new.csv" in out, out + err
    assert received and received[0]["alarms"][0]["earlier_run"] is True
    code, out, _ = _run(capsys, ["monitor", files["ref.csv"], files["new.csv"], "--store", store])
    server.shutdown()
    assert code == 0 and out.startswith(("Network", "ref.csv", "No alarm")) or "No alarm" in out


# ---------------------------------------------------------------- windows
def test_one_file_is_one_window_and_an_empty_one_is_an_error(tmp_path, capsys, files):
    store = str(tmp_path / "h.db")
    code, out, _ = _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", store, "--json", "-"])
    run = json.loads(out)
    assert code == 0 and [w["label"] for w in run["windows"]] == [files["same.csv"]]
    empty = tmp_path / "empty.csv"
    load("nursery").iloc[:0].to_csv(empty, index=False)
    code, _, err = _run(capsys, ["monitor", files["ref.csv"], str(empty), "--store", store])
    _one_line_error(code, err)
    assert "no rows" in err


def test_a_week_is_monday_to_sunday_and_a_file_with_times_is_labelled_by_its_span(tmp_path, capsys, files):
    data = load("nursery").sample(n=1400, random_state=1).reset_index(drop=True)
    data.insert(0, "date", np.repeat(np.datetime64("2026-11-16") + np.arange(14), 100))  # two ISO weeks, Mon-Sun
    first, second = tmp_path / "2026-W47.csv", tmp_path / "2026-W48.csv"
    data.iloc[:700].to_csv(first, index=False)
    data.iloc[700:].to_csv(second, index=False)
    store = str(tmp_path / "h.db")
    code, out, err = _run(capsys, ["monitor", files["ref.csv"], str(first), "--store", store, "--time-column", "date",
                                   "--window", "1W", "--json", "-"])
    assert code == 0, err
    assert [w["label"] for w in json.loads(out)["windows"]] == ["2026-11-16"]  # one week, whole
    code, out, err = _run(capsys, ["monitor", files["ref.csv"], str(second), "--store", store, "--time-column", "date",
                                   "--json", "-"])
    assert code == 0 and "warning" not in err, err
    assert [w["label"] for w in json.loads(out)["windows"]] == ["2026-11-23 to 2026-11-29"]


def test_a_window_label_stored_already_with_other_rows_is_named(tmp_path, files):
    data = load("nursery").sample(n=1000, random_state=2).reset_index(drop=True)
    reference = load("nursery").iloc[:3000]
    store = tmp_path / "h.db"
    monitor(reference, {"week 47": data.iloc[:500]}, store=store, n_permutations=99, horizon=1)
    with pytest.warns(UserWarning, match="label the store holds already"):
        monitor(reference, {"week 47": data.iloc[500:]}, store=store, n_permutations=99, horizon=1)
    assert len(history(store).windows) == 2


# ---------------------------------------------------------------- helpers
def _hook_server(status: int):
    received: list = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received


def test_redact_hides_every_form_of_password():
    for text in (f"postgresql://u:{SECRET}@h/db", f"postgres://u:{SECRET}@h:5432/db?sslmode=require",
                 f"postgresql:///db?host=/tmp&password={SECRET}", f"host=h password={SECRET} dbname=db",
                 f"postgresql://u:{SECRET}@@h/db"):
        assert SECRET not in redact(text) and "***" in redact(text), text


def test_a_store_with_null_p_values_and_broken_results_is_still_shown(tmp_path, capsys, files):
    store = tmp_path / "h.db"
    assert _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", str(store)])[0] == 0
    connection = sqlite3.connect(store)
    connection.execute("UPDATE bnfisher_windows SET p_value = NULL, mmd2_u = NULL, result = 'not json {'")
    connection.commit()
    connection.close()
    code, out, err = _run(capsys, ["history", "--store", str(store), "--dashboard", str(tmp_path / "d.html")])
    assert code == 0 and "Traceback" not in err and "nan" not in (tmp_path / "d.html").read_text().lower()
    with pytest.warns(UserWarning, match="1 stored results are not JSON"):
        assert history(store, results=True).windows["result"].tolist() == [None]


def test_a_store_whose_tables_were_altered_is_named_so(tmp_path, capsys, files):
    store = tmp_path / "h.db"
    assert _run(capsys, ["monitor", files["ref.csv"], files["same.csv"], "--store", str(store)])[0] == 0
    connection = sqlite3.connect(store)
    connection.execute("ALTER TABLE bnfisher_windows DROP COLUMN cell")
    connection.commit()
    connection.close()
    for argv in (["history", "--store", str(store)], ["monitor", files["ref.csv"], files["new.csv"], "--store",
                                                       str(store)]):
        code, _, err = _run(capsys, argv)
        _one_line_error(code, err)
        assert "changed outside bnfisher" in err


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_nul_in_a_label_is_stored_as_a_replacement_character(database, tmp_path):
    if database == "postgresql" and POSTGRES is None:
        pytest.skip("needs a PostgreSQL server (.ci/run starts one)")
    data = load("nursery").sample(n=1200, random_state=3).reset_index(drop=True)
    locations = postgres_database() if database == "postgresql" else iter([str(tmp_path / "h.db")])
    location = next(locations)
    try:
        run = monitor(data.iloc[:800], {"week\x00 47": data.iloc[800:]}, store=location, n_permutations=99,
                      horizon=1)
        assert history(location).windows["label"].tolist() == ["week\ufffd 47"] and len(run.windows) == 1
    finally:
        next(locations, None)


@pytest.mark.slow
@needs_postgres
def test_two_monitors_creating_a_postgresql_store_at_once_both_succeed():
    """The first use of an empty database: an advisory lock makes one create the schema, the other wait."""
    import multiprocessing

    locations = postgres_database()
    location = next(locations)
    context = multiprocessing.get_context("spawn")
    try:
        for _ in range(3):  # a race: three tries at it, each on a fresh database
            with context.Manager() as manager, context.Pool(4) as pool:
                barrier = manager.Barrier(4)  # the four open the store at the same moment
                versions = pool.starmap(_open_version, [(location, barrier)] * 4)
            assert versions == [SCHEMA_VERSION] * 4
            next(locations, None)
            locations = postgres_database()
            location = next(locations)
    finally:
        next(locations, None)


def _open_version(location: str, barrier) -> int:
    barrier.wait()
    with Store(location) as opened:
        return opened.version
