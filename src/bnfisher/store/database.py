"""The monitoring history in a real database: SQLite (a file, embedded) or PostgreSQL (a ``postgresql://`` URL).

One table of runs and one of windows, keyed by a digest of each window's bounds and rows
(and of the reference), so that re-running on the same data adds nothing.  Every write is
one transaction: two monitors writing one store at once lose no window (a window already
stored is skipped, ``ON CONFLICT DO NOTHING``), and a monitor killed mid-write leaves the
store as it was.  The schema carries its version; :data:`MIGRATIONS` brings an older store
up to date when a writer opens it, and a store of a newer version is refused.

**Where it writes.**  A store opened to read (``writable=False``: ``history``) never creates,
migrates or writes anything.  A store opened to write refuses a database that holds other
tables but no bnfisher metadata (another application's), and proves it can write (a write
of its metadata, committed) before the caller does any work.  The first use of an empty
PostgreSQL database is serialised by an advisory lock, so two monitors cannot race to
create the schema.

**Errors.**  Every error of the driver (``sqlite3.Error``, ``psycopg.Error``) leaves this
module as a :class:`~bnfisher.exceptions.StoreError` that names the store without its
password (:func:`~bnfisher.store.location.redact`), says what failed and what to do.

Written over the DB-API drivers rather than SQLAlchemy: the store runs a dozen statements in
two dialects, and the three things SQLAlchemy would bring (URL parsing, redaction, one error
hierarchy) are the forty lines of :mod:`bnfisher.store.location` and :meth:`Store._failure`,
without a dependency of 3 MB for every user of a core command.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sqlite3
import urllib.parse
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from bnfisher._utils.lazy import pandas as pd
from bnfisher.exceptions import BnfisherError, DataWarning, StoreError
from bnfisher.store.location import StoreLocation, redact, resolve_store

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "WINDOW_COLUMNS", "Store"]

#: The columns of a stored window, in order (``result`` holds the window's full comparison as JSON; ``signalled``
#: is 0 for an alarm no run has signalled yet, see :meth:`Store.unsignalled`).
WINDOW_COLUMNS = ["window_key", "run_id", "label", "start", "end", "rows", "digest", "reference_digest", "p_value",
                  "threshold", "alarm", "mmd2_u", "mmd2_u_low", "mmd2_u_high", "mechanism", "family", "cell",
                  "verdict", "result", "permutations", "signalled"]

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
    # 2: the permutations a window's test ran (read without parsing its result), and alarms not yet signalled.
    2: ["ALTER TABLE bnfisher_windows ADD COLUMN permutations INTEGER",
        "ALTER TABLE bnfisher_windows ADD COLUMN signalled INTEGER NOT NULL DEFAULT 1"],
    # 3: the run's guarantee (``horizon``: alpha over ``horizon`` windows; ``unbounded``: over every window).
    3: ["ALTER TABLE bnfisher_runs ADD COLUMN guarantee TEXT NOT NULL DEFAULT 'horizon'"],
}
#: The schema version this bnfisher writes.
SCHEMA_VERSION = max(MIGRATIONS)

#: Keys sent in one statement (PostgreSQL takes at most 65,535 parameters, SQLite 32,766).
BATCH = 500


def _plain(value):
    """Return a value as the database drivers take it: Python numbers (booleans as 0/1), text, or None.

    A NUL character, which PostgreSQL's text cannot hold, is stored as U+FFFD (in either database, alike).
    """
    if value is None:
        return value
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value != value:  # NaN: no value
        return None
    return value


class Store:
    """A monitoring history: an SQLite file, or a PostgreSQL database by ``postgresql://`` URL (needs psycopg).

    Parameters
    ----------
    location : str, path-like or StoreLocation, optional
        A file path (created with its schema when absent and ``writable``; its folder must
        exist) or a ``postgresql://user@host/database`` URL; None reads ``$BNFISHER_STORE``
        (:func:`~bnfisher.store.location.resolve_store`).
    writable : bool, default=True
        False opens the store to read only: nothing is created, migrated or written, and a
        location that holds no store is an error.
    timeout : float, default=30.0
        Seconds to wait for another writer's lock (SQLite) or for the server to answer.

    Attributes
    ----------
    location : StoreLocation
        Shown without its password (``str(store.location)``).
    version : int

    Raises
    ------
    OptionError
        For a location that cannot be a store (:func:`~bnfisher.store.location.resolve_store`).
    StoreError
        For a store that cannot be opened, read or written (the server, a lock, the file's
        permissions), a database holding another application's tables, a store of a newer
        schema version, or (``writable=False``) an older one.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> store = Store(pathlib.Path(tempfile.mkdtemp()) / "history.db")
    >>> store.version == SCHEMA_VERSION, store.totals()
    (True, (0, 0))
    >>> store.close()
    """

    def __init__(self, location=None, *, writable: bool = True, timeout: float = 30.0):
        self._connection: Any = None
        self.location: StoreLocation = resolve_store(location, must_exist=not writable)
        self.postgres = self.location.postgres
        self.writable = writable
        self.timeout = float(timeout)
        with self._driver("connecting to it"):
            self._connection = self._connect()
        try:
            self.version = self._open()
        except BaseException:
            self.close()
            raise

    def _connect(self):
        if self.postgres:
            try:
                import psycopg
            except ImportError:  # pragma: no cover - depends on the environment
                raise ImportError("A postgresql:// store needs psycopg: pip install 'bnfisher[postgres]'.") from None
            connection = psycopg.connect(self.location.target, autocommit=False,
                                         connect_timeout=max(1, int(self.timeout)))
            connection.read_only = not self.writable
            return connection
        if self.writable:
            return sqlite3.connect(self.location.target, timeout=self.timeout, isolation_level=None)
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.location.target)) + "?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)

    # ------------------------------------------------------------ errors
    def _errors(self) -> tuple:
        """Return the driver's error classes (``sqlite3.Error``, or psycopg's ``Error``)."""
        if self.postgres:
            import psycopg

            return (psycopg.Error,)
        return (sqlite3.Error,)

    @contextlib.contextmanager
    def _driver(self, doing: str) -> Iterator[None]:
        """Turn the driver's errors into one :class:`StoreError` that says what failed and what to do."""
        try:
            yield
        except BnfisherError:
            raise
        except self._errors() as exc:
            raise StoreError(self._failure(exc, doing)) from None

    def _failure(self, exc: BaseException, doing: str) -> str:
        """Return the one line that explains a driver's error (the store shown without its password)."""
        text = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
        where, low = f"store {self.location.shown!r}", text.lower()
        if _mentions(low, "locked", "could not obtain lock"):
            return (f"{where} is locked by another process for more than {self.timeout:g} s (another monitor "
                    "writing?); run again when it has finished.")
        if _mentions(low, "readonly", "read-only", "permission denied", "privilege"):
            return f"{where} cannot be written ({redact(text)}); give a store this user can write, or grant access."
        if _mentions(low, "no such table", "no such column", "has no column") or _mentions(low, "does not exist") \
                and _mentions(low, "column"):
            return (f"{where}: its tables were changed outside bnfisher ({redact(text)}); restore it from a backup "
                    "or give a new --store.")
        if _mentions(low, "not a database", "file is encrypted"):
            return f"{where} is not a bnfisher store (not an SQLite database); give another --store path."
        if doing == "connecting to it":
            return (f"cannot connect to {where}: {redact(text)}; check the host, port, database, user and password "
                    "(PGPASSWORD, ~/.pgpass or BNFISHER_STORE keep it off the command line).")
        return f"{where}: {doing} failed: {redact(text)}."

    # ------------------------------------------------------------ dialect and transactions
    def _sql(self, statement: str) -> str:
        """Return the statement in this database's dialect (placeholders and the key column)."""
        key = "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" if self.postgres else \
            "id INTEGER PRIMARY KEY AUTOINCREMENT"
        statement = statement.replace("{id}", key)
        return statement.replace("?", "%s") if self.postgres else statement

    @contextlib.contextmanager
    def _transaction(self, doing: str, *, write: bool) -> Iterator[Any]:
        """One transaction: SQLite takes the write lock at once (two writers queue); rolled back on any error."""
        with self._driver(doing):
            cursor = self._connection.cursor()
            if not self.postgres:
                cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cursor
            except BaseException:
                with contextlib.suppress(*self._errors()):
                    self._connection.rollback() if self.postgres else self._connection.execute("ROLLBACK")
                raise
            self._connection.commit() if self.postgres else self._connection.execute("COMMIT")

    # ------------------------------------------------------------ opening
    def _open(self) -> int:
        """Check the schema (and, writing, create or migrate it and prove the store writable); return the version."""
        doing = "opening it to write" if self.writable else "reading it"
        with self._transaction(doing, write=self.writable) as cursor:
            if self.postgres and self.writable:  # the first use of an empty database: one creator at a time
                cursor.execute("SELECT pg_advisory_xact_lock(4172020301)")
            found = self._stored_version(cursor)
            if found > SCHEMA_VERSION:
                raise StoreError(f"Store {self.location.shown!r} has schema version {found}; this bnfisher reads "
                                 f"versions up to {SCHEMA_VERSION}: upgrade bnfisher.")
            if not self.writable:
                if found < SCHEMA_VERSION:
                    raise StoreError(f"Store {self.location.shown!r} has schema version {found}, written by an older "
                                     "bnfisher; reading commands change nothing: run bnfisher monitor on it once to "
                                     "bring it up to date.")
                return found
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    cursor.execute(self._sql(statement))
            now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            for key, value in (("schema_version", str(SCHEMA_VERSION)), ("opened_to_write", now)):
                cursor.execute(self._sql("INSERT INTO bnfisher_meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                                         "DO UPDATE SET value = excluded.value"), (key, value))
        return SCHEMA_VERSION

    def _tables(self, cursor) -> list:
        if self.postgres:
            cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                           "ORDER BY table_name")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                           "ORDER BY name")
        return [row[0] for row in cursor.fetchall()]

    def _stored_version(self, cursor) -> int:
        """Return the store's schema version (0: empty); refuse a database that holds other tables."""
        tables = self._tables(cursor)
        if "bnfisher_meta" not in tables:
            if tables:
                shown = ", ".join(tables[:6]) + (", ..." if len(tables) > 6 else "")
                raise StoreError(f"{self.location.shown!r} holds other tables ({shown}) and no bnfisher store: "
                                 "bnfisher writes nothing there; give another --store.")
            if not self.writable:
                raise StoreError(f"{self.location.shown!r} holds no bnfisher store (no window stored yet): run "
                                 "bnfisher monitor with it first.")
            return 0
        cursor.execute(self._sql("SELECT value FROM bnfisher_meta WHERE key = ?"), ("schema_version",))
        row = cursor.fetchone()
        try:
            return int(row[0]) if row else 0
        except ValueError:
            raise StoreError(f"Store {self.location.shown!r} has an unreadable schema version {row[0]!r}; restore it "
                             "from a backup or give a new --store.") from None

    # ------------------------------------------------------------ reading
    def _select(self, statement: str, parameters=(), *, doing: str = "reading it") -> list:
        with self._transaction(doing, write=False) as cursor:
            cursor.execute(self._sql(statement), tuple(_plain(p) for p in parameters))
            return cursor.fetchall()

    def _in_batches(self, statement: str, values: list) -> list:
        """Run ``statement`` (with ``{marks}``) over ``values`` a :data:`BATCH` at a time; return all rows."""
        rows: list = []
        for first in range(0, len(values), BATCH):
            part = values[first:first + BATCH]
            rows += self._select(statement.format(marks=", ".join("?" * len(part))), part)
        return rows

    def known(self, keys: Iterable[str]) -> set:
        """Return the window keys among ``keys`` already stored (sent in batches, however many).

        Parameters
        ----------
        keys : iterable of str

        Returns
        -------
        set of str
        """
        rows = self._in_batches("SELECT window_key FROM bnfisher_windows WHERE window_key IN ({marks})", list(keys))
        return {row[0] for row in rows}

    def labels(self, labels: Iterable[str]) -> set:
        """Return the window labels among ``labels`` already stored (by any window).

        Parameters
        ----------
        labels : iterable of str

        Returns
        -------
        set of str
        """
        rows = self._in_batches("SELECT DISTINCT label FROM bnfisher_windows WHERE label IN ({marks})",
                                sorted(set(labels)))
        return {row[0] for row in rows}

    def windows(self, *, results: bool = False, last: int | None = None, where: str = "") -> pd.DataFrame:
        """Return stored windows, oldest first.

        Parameters
        ----------
        results : bool, default=False
            Also each window's full comparison (column ``result``, parsed from its JSON:
            the costliest part of a large store; a result that is not JSON is None, with a
            warning).
        last : int, optional
            Only the newest ``last`` windows.
        where : str, default=""
            An SQL condition on the windows' columns (inner use).

        Returns
        -------
        DataFrame
            :data:`WINDOW_COLUMNS` (``result`` only with ``results``) and ``started`` (the run's time).
        """
        names = [c for c in WINDOW_COLUMNS if results or c != "result"]
        columns = ", ".join(f'w."{c}"' for c in names)
        condition = f" WHERE {where}" if where else ""
        limit = f" ORDER BY w.id DESC LIMIT {int(last)}" if last is not None else " ORDER BY w.id"
        rows = self._select(f"SELECT {columns}, r.started FROM bnfisher_windows w JOIN bnfisher_runs r ON "
                            f"r.id = w.run_id{condition}{limit}")
        table = pd.DataFrame(rows[::-1] if last is not None else rows, columns=names + ["started"])
        table["alarm"] = table["alarm"].astype(bool)
        for column in ("p_value", "threshold", "mmd2_u", "mmd2_u_low", "mmd2_u_high"):
            table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)  # NULL: NaN
        if results:
            table["result"] = self._parse_results(table["result"])
        return table

    def _parse_results(self, texts) -> list:
        parsed, broken = [], 0
        for text in texts:
            try:
                parsed.append(json.loads(text) if isinstance(text, str) else None)
            except ValueError:
                parsed.append(None)
                broken += 1
        if broken:
            warnings.warn(f"Store {self.location.shown!r}: {broken} stored results are not JSON (changed outside "
                          "bnfisher?); they are shown as missing.", DataWarning, stacklevel=3)
        return parsed

    def unsignalled(self) -> pd.DataFrame:
        """Return the stored alarms that no run has signalled yet (its exit status, its webhook), oldest first.

        A run stores its windows, then signals its alarms, then marks them signalled; a run
        that fails in between (its dashboard, a disk) leaves them here, and the next run
        signals them.

        Returns
        -------
        DataFrame
        """
        return self.windows(where="w.alarm = 1 AND w.signalled = 0")

    def totals(self) -> tuple[int, int]:
        """Return the windows and the alarms the store holds.

        Returns
        -------
        tuple of (int, int)
        """
        ((windows, alarms),) = self._select("SELECT COUNT(*), COALESCE(SUM(alarm), 0) FROM bnfisher_windows")
        return int(windows), int(alarms)

    def last_run(self) -> tuple | None:
        """Return the latest run's ``(alpha, horizon, guarantee)``, or None for an empty store.

        Returns
        -------
        tuple of (float, int, str) or None
        """
        rows = self._select("SELECT alpha, horizon, guarantee FROM bnfisher_runs ORDER BY id DESC LIMIT 1")
        return (float(rows[0][0]), int(rows[0][1]), str(rows[0][2])) if rows else None

    # ------------------------------------------------------------ writing
    def append(self, run: dict, windows: list) -> int:
        """Store one run and its windows in one transaction; windows already stored are skipped.

        Parameters
        ----------
        run : dict
            ``started``, ``reference``, ``reference_digest``, ``alpha``, ``horizon``, ``min_effect``
            and ``guarantee`` (default ``"horizon"``).
        windows : list of dict
            Each with the keys of :data:`WINDOW_COLUMNS` but ``run_id`` (``permutations`` and
            ``signalled`` may be left out: unknown, and 0 for an alarm).

        Returns
        -------
        int
            The windows added.
        """
        values = tuple(_plain(v) for v in (
            run["started"], run.get("reference"), run["reference_digest"], run["alpha"], run["horizon"],
            run.get("min_effect"), len(windows), sum(int(w["alarm"]) for w in windows),
            run.get("guarantee", "horizon")))
        insert = ("INSERT INTO bnfisher_runs (started, reference, reference_digest, alpha, horizon, min_effect, "
                  "tested, alarms, guarantee) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        columns = ", ".join(f'"{c}"' for c in WINDOW_COLUMNS)
        statement = self._sql(f"INSERT INTO bnfisher_windows ({columns}) VALUES "
                              f"({', '.join('?' * len(WINDOW_COLUMNS))}) ON CONFLICT (window_key) DO NOTHING")
        added = 0
        with self._transaction("storing the run", write=True) as cursor:
            if self.postgres:
                cursor.execute(self._sql(insert + " RETURNING id"), values)
                run_id = cursor.fetchone()[0]
            else:
                cursor.execute(insert, values)
                run_id = cursor.lastrowid
            for window in windows:
                given = {"permutations": None, "signalled": int(not window["alarm"]), **window, "run_id": run_id}
                cursor.execute(statement, tuple(_plain(given[c]) for c in WINDOW_COLUMNS))
                added += cursor.rowcount
        return int(added)

    def mark_signalled(self, keys: Iterable[str]) -> None:
        """Record that the alarms of these windows were signalled (see :meth:`unsignalled`).

        Parameters
        ----------
        keys : iterable of str
        """
        keys = list(keys)
        with self._transaction("recording the alarms as signalled", write=True) as cursor:
            for first in range(0, len(keys), BATCH):
                part = keys[first:first + BATCH]
                cursor.execute(self._sql(f"UPDATE bnfisher_windows SET signalled = 1 WHERE window_key IN "
                                         f"({', '.join('?' * len(part))})"), tuple(part))

    def close(self) -> None:
        """Close the connection."""
        if self._connection is not None:
            with contextlib.suppress(*self._errors()):
                self._connection.close()
            self._connection = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _mentions(text: str, *words: str) -> bool:
    """Return whether ``text`` holds one of ``words``."""
    return any(word in text for word in words)
