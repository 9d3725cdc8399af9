"""The monitor's alarm message: one JSON POST, http or https only, within one deadline, never redirected.

The message (``kind`` ``"bnfisher-alarm"``, schema version :data:`PAYLOAD_VERSION`)::

    {"kind": "bnfisher-alarm", "version": 1,
     "verdict": "<the run's sentence>",
     "store": "<the store, its password hidden>",
     "alarms": [{"label", "start", "end", "rows", "p_value", "threshold", "mmd2_u",
                 "mechanism", "cell", "sentence", "earlier_run"}, ...]}

``sentence`` is the window's verdict as every other output shows it; ``earlier_run`` is true
for an alarm an earlier run stored but could not signal.  No secret is in it: the store is
shown as :func:`~bnfisher._utils.redact.redact` shows it.

What cannot happen: a server that answers slowly (a byte every few seconds) holding the run
past the deadline (the whole exchange runs against one clock, default 10 s); a redirect
turning the POST into a GET without its body (no redirect is followed: it is a failure,
named); a ``file://`` or ``data:`` URL read as if it were a server (refused before any work).
A failed post is a :class:`~bnfisher.exceptions.DataWarning`, and the alarm stands: the exit
status still says 1.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
import urllib.parse
import warnings

from bnfisher._utils.redact import redact
from bnfisher.exceptions import DataWarning, OptionError

__all__ = ["PAYLOAD_VERSION", "check_webhook", "post_alarm"]

#: The version of the message's schema (raised when a field changes meaning or goes).
PAYLOAD_VERSION = 1

#: The fields of each alarm in the message, in order.
ALARM_FIELDS = ("label", "start", "end", "rows", "p_value", "threshold", "mmd2_u", "mechanism", "cell", "sentence",
                "earlier_run")


def check_webhook(url: str | None, timeout: float) -> None:
    """Refuse a webhook URL that is not ``http``/``https`` with a host, or a deadline that is not positive.

    Parameters
    ----------
    url : str or None
    timeout : float

    Raises
    ------
    OptionError

    Examples
    --------
    >>> check_webhook("https://hooks.example.org/alarms", 10.0)
    >>> try:
    ...     check_webhook("file:///etc/passwd", 10.0)
    ... except ValueError as error:
    ...     print(error)
    --webhook 'file:///etc/passwd': give an http:// or https:// URL with a host.
    """
    if not timeout > 0 or timeout == float("inf"):
        raise OptionError(f"--webhook-timeout must be a positive number of seconds; got {timeout!r}.")
    if url is None:
        return
    try:
        parts = urllib.parse.urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok \
            or any(c in url for c in "\r\n\x00 "):
        raise OptionError(f"--webhook {redact(url)!r}: give an http:// or https:// URL with a host.")


def post_alarm(url: str, message: dict, *, timeout: float = 10.0) -> str:
    """POST ``message`` as JSON to ``url`` within ``timeout`` seconds in all; return "sent" or why not.

    Parameters
    ----------
    url : str
        Checked by :func:`check_webhook`.
    message : dict
        The payload (see the module's documentation).
    timeout : float, default=10.0
        The deadline of the whole exchange: connecting, sending and reading the answer.

    Returns
    -------
    str
        ``"sent"``, or ``"failed: <reason>"`` (a :class:`~bnfisher.exceptions.DataWarning` says so too).
    """
    outcome: list = []
    body = json.dumps(message, allow_nan=False).encode()
    worker = threading.Thread(target=_exchange, args=(url, body, time.monotonic() + timeout, outcome), daemon=True)
    worker.start()
    worker.join(timeout)
    reason = outcome[0] if outcome else f"no complete answer within {timeout:g} s"
    if reason == "sent":
        return reason
    warnings.warn(f"the alarm could not be posted to {redact(url)} ({redact(reason)}); the alarm stands (exit status "
                  "1).", DataWarning, stacklevel=3)
    return f"failed: {redact(reason)}"


def _exchange(url: str, body: bytes, deadline: float, outcome: list) -> None:
    """One POST against ``deadline`` (a monotonic time); appends "sent" or the reason to ``outcome``."""
    parts = urllib.parse.urlsplit(url)
    left = max(deadline - time.monotonic(), 0.01)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", parts.port, timeout=left)
    try:
        path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                             "User-Agent": "bnfisher-monitor"})
        response = connection.getresponse()
        while response.read(65536):  # the answer, against the clock (a server trickling bytes runs out of time)
            if time.monotonic() > deadline:
                raise TimeoutError("the server's answer did not end in time")
            if connection.sock is not None:
                connection.sock.settimeout(max(deadline - time.monotonic(), 0.01))
        if 300 <= response.status < 400:
            where = redact(response.getheader("Location") or "nowhere")
            outcome.append(f"HTTP {response.status}: redirected to {where}, not followed (a redirect would drop the "
                           "message); give the final URL")
        elif response.status >= 400:
            outcome.append(f"HTTP {response.status} {response.reason}")
        else:
            outcome.append("sent")
    except (TimeoutError, OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        outcome.append(f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no detail'}")
    finally:
        connection.close()
