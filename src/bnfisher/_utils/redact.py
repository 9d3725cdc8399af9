"""Secrets out of every output: a password in a URL or a connection string is shown as ``***`` (private)."""

from __future__ import annotations

import re

__all__ = ["redact"]

# The password runs to the last "@" before the host (a raw "@" in it included), never past a "/".
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):(?P<secret>[^\s/]*)@")
_PARAMETER_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'[^']*'|[^&\s]*)", re.IGNORECASE)


def redact(text: str) -> str:
    """Return ``text`` with every password of a URL or a connection string replaced by ``***``.

    Parameters
    ----------
    text : str
        Anything: a location, an error message, a page.

    Returns
    -------
    str

    Examples
    --------
    >>> redact("postgresql://ann:s3cret@db.example.org:5432/history")
    'postgresql://ann:***@db.example.org:5432/history'
    >>> redact("postgresql:///history?host=/tmp&password=s3cret&port=5432")
    'postgresql:///history?host=/tmp&password=***&port=5432'
    >>> redact("postgresql://ann:p@ss@host/db")
    'postgresql://ann:***@host/db'
    >>> redact("history.db")
    'history.db'
    """
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:***@", text)
    return _PARAMETER_PASSWORD.sub(lambda m: f"{m['head']}***", text)
