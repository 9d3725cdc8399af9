"""Monitoring: a history in a real database (SQLite, and PostgreSQL when BNFISHER_TEST_POSTGRES names a server).

Each store test runs against both databases when the server is there (CI starts one: see .ci/run).
"""

from __future__ import annotations

import http.server
import json
import multiprocessing
import re
import shutil
import sqlite3
import subprocess
import threading

import numpy as np
import pytest

from bnfisher.cli import main
from bnfisher.comparison.spending import WindowLevels
from bnfisher.datasets import load
from bnfisher.exceptions import DataWarning, StoreError
from bnfisher.jobs.monitor import frame_digest, history, monitor
from bnfisher.store import SCHEMA_VERSION, Store
from bnfisher.store.database import MIGRATIONS, WINDOW_COLUMNS
from bnfisher.viz.dashboard import dashboard_html

from _helpers import POSTGRES, postgres_database


@pytest.fixture(params=["sqlite"] + (["postgresql"] if POSTGRES else []))
def store(request, tmp_path):
    """A fresh, empty store location of each database."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.db")
        return
    yield from postgres_database()


@pytest.fixture(scope="module")
def tables():
    data = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    return data.iloc[:2000], data.iloc[4000:7000]


def _record(key: str, **values) -> dict:
    record = {c: None for c in WINDOW_COLUMNS if c not in ("run_id", "signalled")}
    record.update(window_key=key, label=key, rows=10, digest="d", reference_digest="r", threshold=0.001, alarm=False)
    record.update(values)
    return record


_RUN = {"started": "2026-11-27T00:00:00", "reference": "r", "reference_digest": "r", "alpha": 0.05, "horizon": 52}


def test_a_rerun_adds_nothing_and_the_answer_is_stored(store, tables):
    reference, data = tables
    first = monitor(reference, data, window=1000, store=store, horizon=1)
    again = monitor(reference, data, window=1000, store=store, horizon=1)
    assert len(first.windows) == 3 and len(again.windows) == 0 and again.skipped == 3
    stored = history(store, results=True).windows
    assert list(stored["label"]) == list(first.windows["label"])
    np.testing.assert_array_equal(stored["p_value"].to_numpy(), first.windows["p_value"].to_numpy())
    assert stored["result"].iloc[0]["kind"] == "comparison"  # each window's full comparison


def test_a_changed_window_alarms_with_its_mechanism_and_the_dashboard_shows_it(store, tables, tmp_path):
    reference, data = tables
    changed = data.iloc[:1000].copy()
    flip = np.random.default_rng(0).random(1000) < 0.6
    changed.loc[flip, "finance"] = "inconv"  # finance's prior moved
    page = tmp_path / "dashboard.html"
    result = monitor(reference, [data.iloc[1000:2000], changed], store=store, dashboard=page)
    assert list(result.windows["alarm"]) == [False, True]
    assert result.alarms["mechanism"].iloc[0] == "finance" and "finance" in result.alarms["cell"].iloc[0]
    assert result.verdict().startswith("ALARM: 1 of 2 new windows")
    text = page.read_text()
    assert "1 alarm" in text and "<script" not in text
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:|//)", text)  # nothing fetched (SVG namespaces aside)


def test_early_stop_alarms_as_the_full_test_does_with_far_fewer_permutations(store, tables, tmp_path):
    """At the level alpha / 52 an unchanged window stops after 199 permutations (its p-value above 0.05), a
    changed one runs all of them and alarms; the command line takes --early-stop."""
    reference, data = tables
    changed = data.iloc[:1000].copy()
    changed.loc[np.random.default_rng(0).random(1000) < 0.6, "finance"] = "inconv"
    result = monitor(reference, [data.iloc[1000:2000], changed], store=store, stopping="checkpoints")
    assert list(result.windows["alarm"]) == [False, True]
    done = [record["test"]["permutations"] for record in history(store, results=True).windows["result"]]
    assert done[0] == 199 and done[1] == 4159, done
    assert list(result.windows["permutations"]) == done  # stored beside the result, read without parsing it
    page = dashboard_html(history(store).windows, levels=WindowLevels(0.05, 52), store=store)
    assert page.count("(stopped after 199 permutations)") == 1  # the quiet week's p-value says what it rests on
    for name, frame in (("ref.csv", reference), ("same.csv", data.iloc[1000:2000])):
        frame.to_csv(tmp_path / name, index=False)
    assert main(["monitor", str(tmp_path / "ref.csv"), str(tmp_path / "same.csv"), "--rows", "1000", "--store",
                 str(tmp_path / "cli.db"), "--early-stop", "--quiet"]) == 0


def test_two_monitors_writing_one_store_at_once_lose_no_window(store):
    Store(store).close()  # the schema, once
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        added = pool.starmap(_append_many, [(store, "a"), (store, "b")])
    assert added == [40, 40]
    with Store(store) as opened:
        assert len(opened.windows()) == 80


def _append_many(location: str, prefix: str) -> int:
    total = 0
    with Store(location) as opened:
        for k in range(20):
            total += opened.append(_RUN, [_record(f"{prefix}{k}-{j}") for j in range(2)])
    return total


def test_a_write_that_fails_midway_leaves_the_store_as_it_was(store):
    with Store(store) as opened:
        opened.append(_RUN, [_record("kept")])
        with pytest.raises(Exception, match="(?i)null"):  # sqlite3 or psycopg IntegrityError: rows is NOT NULL
            opened.append(_RUN, [_record("lost"), _record("bad", rows=None)])
        assert list(opened.windows()["label"]) == ["kept"]


def test_the_schema_is_versioned_and_other_files_are_refused(tmp_path):
    path = tmp_path / "h.db"
    with Store(path) as opened:
        assert opened.version == SCHEMA_VERSION
    connection = sqlite3.connect(path)
    connection.execute("UPDATE bnfisher_meta SET value = '99' WHERE key = 'schema_version'")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="schema version 99"):
        Store(path)
    junk = tmp_path / "junk.db"
    junk.write_text("not a database " * 100)
    with pytest.raises(StoreError, match="not a bnfisher store"):
        Store(junk)


def test_a_store_created_empty_is_migrated_to_the_current_schema(tmp_path):
    path = tmp_path / "h.db"
    sqlite3.connect(path).close()  # an empty SQLite file: version 0
    with Store(path) as opened:
        assert opened.version == SCHEMA_VERSION and opened.windows().empty


def test_a_version_1_store_is_migrated_by_a_writer_and_refused_unchanged_by_a_reader(tmp_path):
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path)
    for statement in MIGRATIONS[1]:
        connection.execute(statement.replace("{id}", "id INTEGER PRIMARY KEY AUTOINCREMENT"))
    connection.execute("INSERT INTO bnfisher_meta VALUES ('schema_version', '1')")
    connection.execute("INSERT INTO bnfisher_runs (started, reference_digest, alpha, horizon, tested, alarms) "
                       "VALUES ('2026-01-01', 'r', 0.05, 52, 1, 1)")
    connection.execute("INSERT INTO bnfisher_windows (window_key, run_id, label, rows, digest, reference_digest, "
                       "threshold, alarm) VALUES ('k', 1, 'week 1', 10, 'd', 'r', 0.001, 1)")
    connection.commit()
    connection.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="schema version 1.*run bnfisher monitor on it once"):
        history(path)
    assert path.read_bytes() == before  # a reader changed nothing
    with Store(path) as opened:
        assert opened.version == SCHEMA_VERSION
        assert opened.unsignalled().empty  # alarms stored before version 2 count as signalled
        assert opened.last_run() == (0.05, 52, "horizon")  # runs before version 3 kept a horizon
        assert list(opened.windows()["label"]) == ["week 1"]


def test_digests_depend_on_rows_as_a_multiset():
    frame = load("nursery").iloc[:50]
    assert frame_digest(frame) == frame_digest(frame.sample(frac=1.0, random_state=1))
    assert frame_digest(frame) != frame_digest(frame.iloc[:49])


class _Hook(http.server.BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):
        self.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_command_line_exits_1_on_an_alarm_posts_the_webhook_and_warns_when_it_fails(tmp_path, tables, capsys):
    reference, data = tables
    changed = data.iloc[:1000].copy()
    changed["finance"] = "inconv"
    for name, frame in (("ref.csv", reference), ("same.csv", data.iloc[1000:2000]), ("new.csv", changed)):
        frame.to_csv(tmp_path / name, index=False)
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/hook"
    store = str(tmp_path / "h.db")
    base = ["monitor", str(tmp_path / "ref.csv"), "--store", store]
    assert main(base + [str(tmp_path / "same.csv"), "--rows", "1000", "--webhook", url, "--quiet"]) == 0
    assert not _Hook.received
    capsys.readouterr()
    assert main(base + [str(tmp_path / "new.csv"), "--rows", "1000", "--webhook", url, "--json", "-"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "monitor" and out["webhook"] == "sent"
    assert _Hook.received[0]["alarms"][0]["mechanism"] == "finance"
    server.shutdown()
    server.server_close()
    other = str(tmp_path / "other.db")
    assert main(["monitor", str(tmp_path / "ref.csv"), str(tmp_path / "new.csv"), "--rows", "1000", "--store", other,
                 "--webhook", url, "--quiet"]) == 1  # the server is gone: a warning, and still an alarm
    assert "could not be posted" in capsys.readouterr().err
    assert main(["history", "--store", store, "--json", "-"]) == 0
    assert len(json.loads(capsys.readouterr().out)["windows"]) == 2


def test_an_unbounded_guarantee_tests_each_window_at_its_place_in_the_store(store, tables, tmp_path, capsys):
    """The store's k-th window at alpha h / ((k + h - 1)(k + h)), counted across runs; the run and the page say so."""
    reference, data = tables
    changed = data.iloc[:1000].copy()
    changed.loc[np.random.default_rng(0).random(1000) < 0.6, "finance"] = "inconv"
    first = monitor(reference, data, window=1000, store=store, guarantee="unbounded")
    second = monitor(reference, [data.iloc[:500], changed], store=store, guarantee="unbounded",
                     dashboard=None if store.startswith("postgresql") else tmp_path / "d.html")
    stored = history(store).windows
    expected = [0.05 * 52 / ((k + 51) * (k + 52)) for k in range(1, 6)]  # by hand, from the definition
    np.testing.assert_allclose(stored["threshold"], expected, rtol=1e-12)
    assert list(second.windows["alarm"]) == [False, True] and not first.windows["alarm"].any()
    assert "over every window" in second.verdict() and "its own level" in second.verdict()
    assert second.to_dict()["guarantee"] == "unbounded" and second.to_dict()["threshold"] is None
    with Store(store) as opened:
        assert opened.last_run() == (0.05, 52, "unbounded")
    if not store.startswith("postgresql"):
        page = (tmp_path / "d.html").read_text()
        assert "however many" in page and "alpha 0.05 over every window" not in page  # an alarm leads the page
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["monitor", "x.csv", "y.csv", "--store", str(tmp_path / "c.db"), "--guarantee", "forever"])
    assert exited.value.code == 2
    assert "forever" in capsys.readouterr().err


def test_one_rule_serves_windows_of_several_levels():
    """Futility stops only where an alarm at the largest level is implausible; an anytime test rejects early only
    below the smallest, where every window alarms."""
    from bnfisher.jobs.monitor import _rule

    levels = np.array([0.001, 0.0005])
    assert _rule(levels, "futility").alpha == 0.001 and not _rule(levels, "futility").reject_early
    assert _rule(levels, "anytime").alpha == 0.0005 and _rule(levels, "anytime").reject_early
    assert _rule(levels, "fixed") == "fixed"


def test_too_few_permutations_to_reach_the_level_are_named(tables, tmp_path):
    reference, data = tables
    with pytest.warns(DataWarning, match="no window can alarm"):
        monitor(reference, data.iloc[:500], window=500, store=tmp_path / "h.db", n_permutations=99)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Chromium (.ci/run installs it)")
def test_the_dashboard_opens_in_a_headless_browser_at_1280_pixels(tables, tmp_path):
    """The page fits 1,280 px (no horizontal scroll of the page) and the verdict is at the top of its text."""
    reference, data = tables
    changed = data.iloc[:1000].copy()
    changed["finance"] = "inconv"
    page = tmp_path / "dashboard.html"
    monitor(reference, [data.iloc[1000:2000], changed], store=tmp_path / "h.db", dashboard=page)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "dashboard.png"
    subprocess.run(["chromium", *flags, "--window-size=1280,900", f"--screenshot={shot}", page.resolve().as_uri()],
                   capture_output=True, text=True, timeout=120)
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape[1] == 1280 and pixels.std() > 10  # drawn, at the window's width
    dom = subprocess.run(["chromium", *flags, "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    headline = dom.split("class=\"headline alarm\">")[1].split("</p>")[0]
    assert "1 alarm" in headline and dom.index("headline") < dom.index("<svg")  # the verdict comes first
