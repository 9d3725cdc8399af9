"""The monitoring history in a real database: SQLite (a file, embedded) or PostgreSQL (a ``postgresql://`` URL).

One table of runs and one of windows, keyed by a digest of each window's bounds and rows
(and of the reference), so that re-running on the same data adds nothing.  Every write is
one transaction: two monitors writing one store at once lose no window (a window already
stored is skipped, ``ON CONFLICT DO NOTHING``), and a monitor killed mid-write leaves the
store as it was.  The schema carries its version; :data:`MIGRATIONS` brings an older store
up to date when it is opened, and a store of a newer version is refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

from bnfisher._utils.lazy import pandas as pd
from bnfisher.exceptions import DataError, OptionError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "WINDOW_COLUMNS", "Store"]

#: The columns of a stored window, in order (``result`` holds the window's full comparison as JSON).
WINDOW_COLUMNS = ["window_key", "run_id", "label", "start", "end", "rows", "digest", "reference_digest", "p_value",
                  "threshold", "alarm", "mmd2_u", "mmd2_u_low", "mmd2_u_high", "mechanism", "family", "cell",
                  "verdict", "result"]

#: The statements that bring a store from version ``v - 1`` to ``v`` (``{id}``: the dialect's key column).
MIGRATIONS = {
    1: ["CREATE TABLE IF NOT EXISTS bnfisher_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS bnfisher_runs ({id}, started TEXT NOT NULL, reference TEXT, "
        "reference_digest TEXT NOT NULL, alpha DOUBLE PRECISION NOT NULL, horizon INTEGER NOT NULL, "
        "min_effect DOUBLE PRECISION, tested INTEGER NOT NULL, alarms INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS bnfisher_windows ({id}, window_key TEXT NOT NULL UNIQUE, run_id INTEGER NOT NULL, "
        "label TEXT NOT NULL, start TEXT, \"end\" TEXT, rows INTEGER NOT NULL, digest TEXT NOT NULL, "
        "reference_digest TEXT NOT NULL, p_value DOUBLE PRECISION, threshold DOUBLE PRECISION NOT NULL, "
        "alarm INTEGER NOT NULL, mmd2_u DOUBLE PRECISION, mmd2_u_low DOUBLE PRECISION, "
        "mmd2_u_high DOUBLE PRECISION, mechanism TEXT, family TEXT, cell TEXT, verdict TEXT, result TEXT)"],
}
#: The schema version this bnfisher writes.
SCHEMA_VERSION = max(MIGRATIONS)


def _plain(value):
    """Return a value as the database drivers take it: Python numbers (booleans as 0/1), text, or None."""
    if value is None or isinstance(value, str):
        return value
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value != value:  # NaN: no value
        return None
    return value


class Store:
    """A monitoring history: open it with a path (SQLite) or a ``postgresql://`` URL (PostgreSQL, needs psycopg).

    Parameters
    ----------
    location : str or path-like
        A file path (created with its schema when absent; its folder must exist) or a
        ``postgresql://user@host/database`` URL.
    timeout : float, default=30.0
        Seconds to wait for another writer's lock (SQLite).

    Raises
    ------
    OptionError
        For a folder that does not exist, or a URL of another database.
    DataError
        For a file that is not a bnfisher store, or a store of a newer schema version.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> store = Store(pathlib.Path(tempfile.mkdtemp()) / "history.db")
    >>> store.version, len(store.windows())
    (1, 0)
    >>> store.close()
    """

    def __init__(self, location, *, timeout: float = 30.0):
        self._connection: Any
        self.location = os.fspath(location)
        self.postgres = self.location.startswith(("postgresql://", "postgres://"))
        if not self.postgres and "://" in self.location:
            raise OptionError(f"--store {self.location!r}: a store is a file path (SQLite) or a postgresql:// URL.")
        if self.postgres:
            try:
                import psycopg
            except ImportError:  # pragma: no cover - depends on the environment
                raise ImportError("A postgresql:// store needs psycopg: pip install 'bnfisher[postgres]'.") from None
            self._connection = psycopg.connect(self.location, autocommit=False)
        else:
            folder = os.path.dirname(os.path.abspath(self.location))
            if not os.path.isdir(folder):
                raise OptionError(f"--store {self.location!r}: folder {folder!r} does not exist; create it first.")
            self._connection = sqlite3.connect(self.location, timeout=timeout, isolation_level=None)
        self.version = self._migrate()

    # ------------------------------------------------------------ dialect
    def _sql(self, statement: str) -> str:
        """Return the statement in this database's dialect (placeholders and the key column)."""
        key = "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" if self.postgres else \
            "id INTEGER PRIMARY KEY AUTOINCREMENT"
        statement = statement.replace("{id}", key)
        return statement.replace("?", "%s") if self.postgres else statement

    def _begin(self):
        """Start a write transaction (SQLite: take the write lock now, so two writers queue instead of failing)."""
        cursor = self._connection.cursor()
        if not self.postgres:
            cursor.execute("BEGIN IMMEDIATE")
        return cursor

    def _commit(self) -> None:
        self._connection.commit() if self.postgres else self._connection.execute("COMMIT")

    def _rollback(self) -> None:
        self._connection.rollback() if self.postgres else self._connection.execute("ROLLBACK")

    def _migrate(self) -> int:
        """Create the schema, or bring it to :data:`SCHEMA_VERSION`; return the version."""
        try:
            cursor = self._begin()
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{self.location!r} is not a bnfisher store (not an SQLite database: {exc}); give "
                            "another --store path.") from None
        try:
            found = self._stored_version(cursor)
            if found > SCHEMA_VERSION:
                raise DataError(f"Store {self.location!r} has schema version {found}; this bnfisher reads versions up "
                                f"to {SCHEMA_VERSION}: upgrade bnfisher.")
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    cursor.execute(self._sql(statement))
            if found < SCHEMA_VERSION:
                cursor.execute(self._sql("DELETE FROM bnfisher_meta WHERE key = 'schema_version'"))
                cursor.execute(self._sql("INSERT INTO bnfisher_meta (key, value) VALUES (?, ?)"),
                               ("schema_version", str(SCHEMA_VERSION)))
            self._commit()
        except BaseException:
            self._rollback()
            raise
        return SCHEMA_VERSION

    def _stored_version(self, cursor) -> int:
        """Return the store's schema version (0: empty); refuse a file that is not a store."""
        if self.postgres:
            cursor.execute("SELECT to_regclass('bnfisher_meta')")
            exists = cursor.fetchone()[0] is not None
        else:
            try:
                cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'bnfisher_meta'")
            except sqlite3.DatabaseError as exc:
                raise DataError(f"{self.location!r} is not a bnfisher store (not an SQLite database: {exc}); give "
                                "another --store path.") from None
            exists = cursor.fetchone() is not None
        if not exists:
            return 0
        cursor.execute(self._sql("SELECT value FROM bnfisher_meta WHERE key = ?"), ("schema_version",))
        row = cursor.fetchone()
        return int(row[0]) if row else 0

    # ------------------------------------------------------------ reading and writing
    def known(self, keys: Iterable[str]) -> set:
        """Return the window keys among ``keys`` already stored.

        Parameters
        ----------
        keys : iterable of str

        Returns
        -------
        set of str
        """
        keys = list(keys)
        if not keys:
            return set()
        cursor = self._connection.cursor()
        marks = ", ".join("?" * len(keys))
        cursor.execute(self._sql(f"SELECT window_key FROM bnfisher_windows WHERE window_key IN ({marks})"), keys)
        found = {row[0] for row in cursor.fetchall()}
        if self.postgres:
            self._connection.commit()
        return found

    def append(self, run: dict, windows: list) -> int:
        """Store one run and its windows in one transaction; windows already stored are skipped.

        Parameters
        ----------
        run : dict
            ``started``, ``reference``, ``reference_digest``, ``alpha``, ``horizon``, ``min_effect``.
        windows : list of dict
            Each with the keys of :data:`WINDOW_COLUMNS` but ``run_id``.

        Returns
        -------
        int
            The windows added.
        """
        cursor = self._begin()
        try:
            values = tuple(_plain(v) for v in (
                run["started"], run.get("reference"), run["reference_digest"], run["alpha"], run["horizon"],
                run.get("min_effect"), len(windows), sum(int(w["alarm"]) for w in windows)))
            insert = ("INSERT INTO bnfisher_runs (started, reference, reference_digest, alpha, horizon, min_effect, "
                      "tested, alarms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
            if self.postgres:
                cursor.execute(self._sql(insert + " RETURNING id"), values)
                run_id = cursor.fetchone()[0]
            else:
                cursor.execute(insert, values)
                run_id = cursor.lastrowid
            columns = ", ".join(f'"{c}"' for c in WINDOW_COLUMNS)
            statement = self._sql(f"INSERT INTO bnfisher_windows ({columns}) VALUES "
                                  f"({', '.join('?' * len(WINDOW_COLUMNS))}) ON CONFLICT (window_key) DO NOTHING")
            added = 0
            for window in windows:
                cursor.execute(statement, tuple(run_id if c == "run_id" else _plain(window[c]) for c in WINDOW_COLUMNS))
                added += cursor.rowcount
            self._commit()
        except BaseException:
            self._rollback()
            raise
        return int(added)

    def windows(self) -> pd.DataFrame:
        """Return every stored window, oldest first (``result`` parsed from its JSON).

        Returns
        -------
        DataFrame
            :data:`WINDOW_COLUMNS` and ``started`` (the run's time).
        """
        cursor = self._connection.cursor()
        columns = ", ".join(f'w."{c}"' for c in WINDOW_COLUMNS)
        cursor.execute(f"SELECT {columns}, r.started FROM bnfisher_windows w JOIN bnfisher_runs r ON r.id = w.run_id "
                       "ORDER BY w.id")
        rows = cursor.fetchall()
        if self.postgres:
            self._connection.commit()
        table = pd.DataFrame(rows, columns=WINDOW_COLUMNS + ["started"])
        table["alarm"] = table["alarm"].astype(bool)
        table["result"] = [json.loads(r) if isinstance(r, str) else None for r in table["result"]]
        return table

    def last_run(self) -> tuple | None:
        """Return the latest run's ``(alpha, horizon)``, or None for an empty store.

        Returns
        -------
        tuple of (float, int) or None
        """
        cursor = self._connection.cursor()
        cursor.execute("SELECT alpha, horizon FROM bnfisher_runs ORDER BY id DESC LIMIT 1")
        row = cursor.fetchone()
        if self.postgres:
            self._connection.commit()
        return (float(row[0]), int(row[1])) if row else None

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
