"""Fuzzing what a monitor left to cron meets: store faults, misbehaving webhook servers, hostile names in every
output, option values at and beyond their bounds.

Every command must exit 0, 1 or 2, with exit 2 said in one line and no traceback, no password in any output, and
exit 1 only with a finding (an alarm in the run's JSON); every webhook post must answer within its deadline.
``BNFISHER_FUZZ_EXAMPLES`` examples per test (default 40); with ``BNFISHER_FUZZ_REPORT`` the outcome counts are
added to that JSON file (``benchmarks/fuzz.py`` prints them).  Servers are started here, on 127.0.0.1.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import re
import socket
import sqlite3
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bnfisher.cli import main
from bnfisher.jobs.webhook import post_alarm

from _helpers import fuzz_settings, report_fuzz_counts

pytestmark = pytest.mark.slow

OUTCOMES: dict = collections.defaultdict(collections.Counter)
FUZZ = fuzz_settings(40)
SECRET = "Fuzz-SECRET-7"


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    report_fuzz_counts(OUTCOMES)


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """A small reference and an unchanged week (no alarm is legitimate at the defaults), and a changed week."""
    folder = tmp_path_factory.mktemp("fuzz-weeks")
    rng = np.random.default_rng(0)
    a = rng.choice(["x", "y", "z"], 300)
    b = np.where(rng.random(300) < 0.8, a, rng.choice(["x", "y", "z"], 300))
    table = pd.DataFrame({"a": a, "b": b, "c": rng.choice(["u", "v"], 300)})
    changed = table.iloc[200:].copy()
    changed["c"] = "u"
    paths = {"ref": folder / "ref.csv", "same": folder / "same.csv", "changed": folder / "changed.csv"}
    table.iloc[:200].to_csv(paths["ref"], index=False)
    table.iloc[200:].to_csv(paths["same"], index=False)
    changed.to_csv(paths["changed"], index=False)
    return {k: str(v) for k, v in paths.items()}


def _cli(surface: str, argv: list) -> tuple[int, str, str]:
    """One command: exit 0, 1 or 2; exit 2 in one line, no traceback, no secret; exit 1 only with an alarm."""
    out, err = io.StringIO(), io.StringIO()
    OUTCOMES[surface]["calls"] += 1
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
    out_text, err_text = out.getvalue(), err.getvalue()
    assert status in (0, 1, 2), (argv, status, err_text[-2000:])
    assert "Traceback" not in err_text and SECRET not in out_text + err_text, (argv, err_text[-2000:])
    if status == 2:
        lines = [line for line in err_text.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("bnfisher") and " error: " in lines[-1], (argv, lines)
    if status == 1 and "--json" in argv:
        run = json.loads(out_text)
        assert any(w["alarm"] for w in run["windows"]) or run["pending"], (argv, "exit 1 without an alarm")
    OUTCOMES[surface][f"exit {status}"] += 1
    return status, out_text, err_text


# ---------------------------------------------------------------- store faults
_FAULTS = [sqlite3.OperationalError("database is locked"), sqlite3.OperationalError("disk I/O error"),
           sqlite3.DatabaseError("database disk image is malformed"), sqlite3.IntegrityError("NOT NULL constraint"),
           sqlite3.OperationalError("attempt to write a readonly database"),
           sqlite3.OperationalError("no such column: cell"), sqlite3.ProgrammingError("Cannot operate on a closed db"),
           sqlite3.InterfaceError("bad parameter")]


@FUZZ
@given(fail_at=st.integers(0, 40), fault=st.sampled_from(range(len(_FAULTS))), command=st.sampled_from(
    ["monitor", "monitor-changed", "history", "history-dashboard"]), seed=st.integers(0, 2**16))
def test_store_faults_at_every_call(tmp_path_factory, week, fail_at, fault, command, seed):
    """The driver fails at its n-th statement: exit 2 in one line (or 0/1 when the run ended before), never a
    traceback; a store left by a failed run is whole for the next."""
    folder = tmp_path_factory.mktemp("faults")
    store = str(folder / "h.db")
    assert main(["monitor", week["ref"], week["same"], "--store", store, "--permutations", "19", "--horizon", "1",
                 "--quiet"]) in (0, 1)
    calls = [0]
    real = sqlite3.Connection.execute

    class Failing(sqlite3.Connection):
        def cursor(self, *args, **kwargs):
            return FailingCursor(self)

        def execute(self, sql, *args):
            _count()
            return real(self, sql, *args)

    class FailingCursor(sqlite3.Cursor):
        def execute(self, sql, *args):
            _count()
            return super().execute(sql, *args)

    def _count():
        calls[0] += 1
        if calls[0] == fail_at:
            raise _FAULTS[fault]

    connect = sqlite3.connect
    argv = {"monitor": ["monitor", week["ref"], week["same"], "--store", store, "--json", "-", "--seed", str(seed)],
            "monitor-changed": ["monitor", week["ref"], week["changed"], "--store", store, "--json", "-",
                                "--dashboard", str(folder / "d.html"), "--guarantee", "unbounded"],
            "history": ["history", "--store", store, "--json", "-"],
            "history-dashboard": ["history", "--store", store, "--dashboard", str(folder / "d.html")]}[command]
    sqlite3.connect = lambda *a, **k: connect(*a, **dict(k, factory=Failing))  # type: ignore[assignment]
    try:
        _cli("store faults", argv + ([] if command.startswith("history") else ["--permutations", "19", "--horizon",
                                                                                "1"]))
    finally:
        sqlite3.connect = connect  # type: ignore[assignment]
    status, out, _ = _cli("store faults (the next run)", ["history", "--store", store, "--json", "-"])
    assert status == 0 and json.loads(out)["windows"]  # the store is whole


# ---------------------------------------------------------------- misbehaving webhook servers
_ANSWERS = [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n", b"garbage\r\n\r\n",
            b"", b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno", b"HTTP/1.1 301 Moved\r\nLocation: "
            b"http://127.0.0.1:9/x\r\nContent-Length: 0\r\n\r\n", b"HTTP/1.1 307 Again\r\nLocation: /again\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\nshort", b"HTTP/9.9 200 OK\r\n\r\n", b"\x00\xff" * 100,
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]


class _Server:
    """One TCP server on 127.0.0.1 that answers each connection as told (after a delay, or in a trickle)."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.plan = (b"", 0.0, False)
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"

    def _serve(self):
        while True:
            connection, _ = self.listener.accept()
            threading.Thread(target=self._answer, args=(connection, *self.plan), daemon=True).start()

    @staticmethod
    def _answer(connection, answer: bytes, delay: float, trickle: bool):
        with connection, contextlib.suppress(OSError):
            connection.settimeout(5)
            connection.recv(65536)
            time.sleep(delay)
            for k in range(0, len(answer), 1 if trickle else len(answer) or 1):
                connection.sendall(answer[k:k + (1 if trickle else len(answer))])
                if trickle:
                    time.sleep(0.05)


@pytest.fixture(scope="module")
def server():
    return _Server()


@FUZZ
@given(answer=st.one_of(st.sampled_from(_ANSWERS), st.binary(max_size=64), st.builds(
           lambda status, tail: b"HTTP/1.1 %d X\r\n" % status + tail, st.integers(100, 999), st.binary(max_size=40))),
       delay=st.sampled_from([0.0, 0.05, 0.6]), trickle=st.booleans(), deadline=st.sampled_from([0.2, 0.5, 2.0]))
def test_misbehaving_webhook_servers(server, answer, delay, trickle, deadline):
    server.plan = (answer, delay, trickle)
    OUTCOMES["webhook"]["calls"] += 1
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = post_alarm(server.url, {"kind": "bnfisher-alarm", "store": "h.db", "alarms": []}, timeout=deadline)
    assert time.monotonic() - started < deadline + 0.5
    assert outcome == "sent" or outcome.startswith("failed: "), outcome
    if re.match(rb"HTTP/1\.1 3\d\d ", answer):
        assert outcome.startswith("failed")  # a redirect is never followed, never "sent"
    OUTCOMES["webhook"]["sent" if outcome == "sent" else "failed"] += 1


# ---------------------------------------------------------------- hostile names in every output
_HOSTILE = st.one_of(st.text(min_size=1, max_size=30), st.sampled_from([
    "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "--><svg onload=alert(1)>", "a\x00b", "\u202e",
    "é" * 200, " ", "NaN", "None", "0", "{}", "'; DROP TABLE bnfisher_windows; --", "\r\n", "%s", "?"]))


@FUZZ
@given(column=_HOSTILE, label=_HOSTILE, window=_HOSTILE, changed=st.booleans())
def test_hostile_names_in_every_output(tmp_path_factory, column, label, window, changed):
    """Column names, labels and window names from hypothesis and a list of attacks: the monitor answers or refuses
    in one line; its JSON parses; no name reaches the dashboard unescaped."""
    folder = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(1)
    values = np.array([label, "plain", "other"], dtype=object)
    table = pd.DataFrame({column: values[rng.integers(0, 3, 240)], "_b": rng.choice(["p", "q"], 240)})
    if changed:
        table.loc[160:, column] = label
    reference, data = folder / "ref.csv", folder / "week.csv"
    table.iloc[:160].to_csv(reference, index=False)
    table.iloc[160:].to_csv(data, index=False)
    page = folder / "d.html"
    status, out, _ = _cli("hostile names", ["monitor", str(reference), str(data), "--store", str(folder / "h.db"),
                                            "--dashboard", str(page), "--json", "-", "--permutations", "19",
                                            "--horizon", "1"])
    if status != 2:
        json.loads(out)
        text = page.read_text()
        page_text = text.split("<svg", 1)[0] + text.rsplit("</svg>", 1)[-1]  # the page outside the drawing
        for name in (column, label):
            if re.search(r"<[A-Za-z/!?]", name):  # what opens markup: a name's tag must reach the page escaped
                assert name not in page_text, name


# ---------------------------------------------------------------- stray arguments
_STRAY = [f"postgresql://ann:{SECRET}@127.0.0.1:1/history", f"postgres://u:{SECRET}@[::1]:1/db", "history.db",
          f"http://u:{SECRET}@127.0.0.1:1/hook", "--nope", f"--store=postgresql://u:{SECRET}@127.0.0.1:1/x", "-",
          "x.sqlite", f"postgresql:///h?password={SECRET}", "", "--"]


@FUZZ
@given(command=st.sampled_from(["history", "monitor", "compare", "drift", "summarize", "profile", "learn", "mmd"]),
       stray=st.lists(st.sampled_from(_STRAY), min_size=1, max_size=3), before=st.booleans())
def test_stray_arguments_with_secrets_anywhere_on_the_command_line(command, stray, before):
    """Arguments where none is expected or in the place of a file (a store's URL given without --store, a
    webhook's, a flag that does not exist): a result or one line with exit 2, never the password (argparse echoes
    what it does not recognise)."""
    argv = [command, *stray] if before else [command, "--quiet", *stray]
    _cli("stray arguments", argv)


# ---------------------------------------------------------------- options at and beyond their bounds
_VALUES = {"--alpha": ["0", "1", "0.5", "1e-300", "0.9999999", "nan", "inf", "-1", "2", "1e-5", "x", ""],
           "--horizon": ["0", "1", "52", "-1", "1e9", "2.5", "x"], "--permutations": ["0", "1", "19", "-3", "x"],
           "--guarantee": ["horizon", "unbounded", "forever", ""],
           "--min-effect": ["0", "-1", "1e300", "nan", "inf", "x"], "--rows": ["0", "1", "50", "100000", "-2"],
           "--webhook-timeout": ["0", "0.001", "nan", "inf", "-1", "x"],
           "--webhook": ["file:///etc/passwd", "data:,x", "http://", "https://127.0.0.1:1/x", "ftp://h/x",
                         f"http://u:{SECRET}@127.0.0.1:1/x", "http://[::1", "http://127.0.0.1:99999/"],
           "--store": ["", "/dev/null", ".", "nope/h.db", "mysql://h/db", f"postgresql://u:{SECRET}@127.0.0.1:1/db",
                       "h.db"],
           "--time-column": ["a", "missing", ""], "--window": ["1W", "0D", "-1W", "banana", "1W-MON", "MS"]}


@FUZZ
@given(chosen=st.dictionaries(st.sampled_from(sorted(_VALUES)), st.integers(0, 11), min_size=1, max_size=4),
       changed=st.booleans())
def test_options_at_and_beyond_their_bounds(tmp_path_factory, week, chosen, changed):
    folder = tmp_path_factory.mktemp("options")
    argv = ["monitor", week["ref"], week["changed" if changed else "same"], "--json", "-"]
    for flag, index in chosen.items():
        value = _VALUES[flag][index % len(_VALUES[flag])]
        argv += [flag, str(folder / value) if flag == "--store" and value == "h.db" else value]
    if "--store" not in chosen:
        argv += ["--store", str(folder / "h.db")]
    if "--permutations" not in chosen:
        argv += ["--permutations", "19"]
    _cli("option bounds", argv)
