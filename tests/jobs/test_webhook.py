"""The alarm's webhook: http(s) only, one deadline for the whole exchange, no redirect followed, a documented
message.  Every server here is started by the test on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from bnfisher.exceptions import DataWarning, OptionError
from bnfisher.jobs.webhook import ALARM_FIELDS, PAYLOAD_VERSION, check_webhook, post_alarm

MESSAGE = {"kind": "bnfisher-alarm", "version": PAYLOAD_VERSION, "verdict": "v", "store": "h.db", "alarms": []}


def _serve(answer, *, connections: int = 1):
    """A raw TCP server on 127.0.0.1: ``answer(connection)`` speaks for it; returns the URL and what it read."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    received: list = []

    def run():
        for _ in range(connections):
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                try:
                    received.append(_request(connection))
                    answer(connection)
                except OSError:
                    pass
        listener.close()

    threading.Thread(target=run, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/hook", received


def _request(connection) -> bytes:
    """Read one HTTP request whole: its head, then as many bytes of body as Content-Length says."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.mark.parametrize("url", ["file:///etc/passwd", "data:text/plain,hi", "ftp://127.0.0.1/x", "http://",
                                 "http://127.0.0.1:0/x", "http://h/a b", "not a url", "https:///x"])
def test_urls_that_are_not_http_servers_are_refused(url):
    with pytest.raises(OptionError, match="give an http:// or https:// URL"):
        check_webhook(url, 10.0)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan"), float("inf")])
def test_a_deadline_must_be_a_positive_number(timeout):
    with pytest.raises(OptionError, match="--webhook-timeout"):
        check_webhook("http://127.0.0.1/x", timeout)


@pytest.mark.slow
def test_a_server_that_trickles_its_answer_cannot_hold_the_run_past_the_deadline():
    def trickle(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        for _ in range(20):
            time.sleep(0.3)
            connection.sendall(b"x")

    url, _ = _serve(trickle)
    started = time.monotonic()
    with pytest.warns(DataWarning, match="could not be posted"):
        outcome = post_alarm(url, MESSAGE, timeout=1.0)
    assert time.monotonic() - started < 1.8 and outcome.startswith("failed")


def test_a_redirect_is_not_followed_and_is_named():
    other, reached = _serve(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    url, received = _serve(lambda c: c.sendall(f"HTTP/1.1 302 Found\r\nLocation: {other}\r\nContent-Length: 0\r\n\r\n"
                                                .encode()))
    with pytest.warns(DataWarning, match="redirected to .* not followed"):
        outcome = post_alarm(url, MESSAGE, timeout=3.0)
    assert outcome.startswith("failed: HTTP 302") and received and received[0].startswith(b"POST /hook")
    time.sleep(0.2)
    assert reached == []  # nothing went to the other host


@pytest.mark.parametrize("answer", [b"garbage\r\n\r\n", b"", b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
                                    b"HTTP/1.1 301 Moved\r\nLocation: /elsewhere\r\n\r\n"])
def test_a_server_answering_garbage_is_a_warning_not_a_crash(answer):
    url, _ = _serve(lambda c: c.sendall(answer))
    with pytest.warns(DataWarning, match="could not be posted"):
        assert post_alarm(url, MESSAGE, timeout=3.0).startswith("failed")


def test_the_message_is_sent_as_documented():
    url, received = _serve(lambda c: c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"))
    alarm = dict.fromkeys(ALARM_FIELDS, None)
    assert post_alarm(url, dict(MESSAGE, alarms=[alarm]), timeout=3.0) == "sent"
    head, body = received[0].split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /hook HTTP/1.1") and b"application/json" in head
    sent = json.loads(body)
    assert sent["kind"] == "bnfisher-alarm" and sent["version"] == PAYLOAD_VERSION
    assert list(sent["alarms"][0]) == list(ALARM_FIELDS)
