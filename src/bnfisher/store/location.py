"""Where a monitoring store lives, and how it is shown: resolved once, its password never printed.

A store is named by an SQLite file path or a ``postgresql://`` URL, given as an argument or
in the ``BNFISHER_STORE`` environment variable (so that a password need not be typed on a
command line, where ``ps`` and shell histories see it; libpq's ``PGPASSWORD``, ``~/.pgpass``
and service files work too, as psycopg reads them).  Every output that names a store --
the printed verdict, the JSON, the dashboard, the webhook's message and every error --
shows it through :func:`redact`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from bnfisher._utils.redact import redact
from bnfisher.exceptions import OptionError

__all__ = ["ENVIRONMENT", "StoreLocation", "redact", "resolve_store"]

#: The environment variable that names the store when no location is given.
ENVIRONMENT = "BNFISHER_STORE"

@dataclass(frozen=True)
class StoreLocation:
    """A resolved store location: the string to connect with, and how to show it.

    Attributes
    ----------
    target : str
        What the driver is given (the password included, when there is one).
    postgres : bool
        A PostgreSQL URL (else an SQLite file path).

    Examples
    --------
    >>> location = StoreLocation("postgresql://ann:s3cret@host/db", True)
    >>> str(location), location.target.endswith("s3cret@host/db")
    ('postgresql://ann:***@host/db', True)
    """

    target: str
    postgres: bool

    @property
    def shown(self) -> str:
        """The location as every output shows it (:func:`redact`)."""
        return redact(self.target)

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"StoreLocation({self.shown!r})"


def resolve_store(location=None, *, must_exist: bool = False) -> StoreLocation:
    """Resolve a store's location: the argument, else ``$BNFISHER_STORE``; refuse what cannot be a store.

    Parameters
    ----------
    location : str, path-like or StoreLocation, optional
        An SQLite file path or a ``postgresql://`` URL; None reads :data:`ENVIRONMENT`.
    must_exist : bool, default=False
        For commands that only read: an SQLite file that does not exist is an error, not a
        new store.

    Returns
    -------
    StoreLocation

    Raises
    ------
    OptionError
        For no location, an empty one, a URL of another database, a folder, a device, a
        missing parent folder, or (``must_exist``) a missing file; the message says what to give.

    Examples
    --------
    >>> resolve_store("postgresql://ann:pw@host/db")
    StoreLocation('postgresql://ann:***@host/db')
    >>> try:
    ...     resolve_store("")
    ... except ValueError as error:
    ...     print(error)
    --store is empty: give an SQLite file path (e.g. history.db) or a postgresql:// URL.
    """
    if isinstance(location, StoreLocation):
        return location
    if location is None:
        location = os.environ.get(ENVIRONMENT)
        if location is None:
            raise OptionError(f"No store given: pass --store (an SQLite file or a postgresql:// URL), or set "
                              f"{ENVIRONMENT}.")
    target = os.fspath(location)
    if not target.strip():
        raise OptionError("--store is empty: give an SQLite file path (e.g. history.db) or a postgresql:// URL.")
    if target.startswith(("postgresql://", "postgres://")):
        return StoreLocation(target, True)
    if "://" in target:
        raise OptionError(f"--store {redact(target)!r}: a store is a file path (SQLite) or a postgresql:// URL.")
    _check_file(target, must_exist=must_exist)
    return StoreLocation(target, False)


def _check_file(path: str, *, must_exist: bool) -> None:
    """Refuse a path that is not a regular file (or an absent one in an existing folder)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if must_exist:
            raise OptionError(f"--store {path!r}: no such store (nothing is created by a command that reads); check "
                              "the path, or run bnfisher monitor first.") from None
        if not os.path.isdir(folder):
            raise OptionError(f"--store {path!r}: folder {folder!r} does not exist; create it first.") from None
        return
    if stat.S_ISDIR(mode):
        raise OptionError(f"--store {path!r} is a folder; give a file inside it, e.g. "
                          f"{os.path.join(path, 'history.db')}.")
    if not stat.S_ISREG(mode):
        raise OptionError(f"--store {path!r} is not a regular file (a device or a pipe); give an SQLite file path.")
