"""A ledger in an SQLite file, shared by threads and processes (a :class:`._entries.LedgerStorage`).

Each spend is one ``BEGIN IMMEDIATE`` transaction: read the running profile,
compose, test against the ceiling, insert the entry and the new profile,
commit. SQLite serialises writers, so the ceiling holds across processes; WAL
journaling with ``synchronous=FULL`` makes a committed spend survive a crash
of the process that made it. Pickling it sends the path, ceiling and unit,
and the receiving process reopens the file (:func:`_reopen`, looked up by
this module's path).
"""

import json
import os
import sqlite3
import threading
from dataclasses import asdict

from ._composition import PrivacyProfile, profile_of
from ._entries import LedgerEntry
from ._events import event_from_dict, event_to_dict

__all__ = ["SQLiteLedger"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL,
    timestamp REAL NOT NULL,
    event TEXT NOT NULL,
    privacy_unit TEXT NOT NULL DEFAULT 'row'
);
"""


class SQLiteLedger:
    kind = "sqlite"

    def __init__(self, path, epsilon, delta, unit=(None, None)):
        self.path = os.fspath(path)
        self.ceiling = (float(epsilon), float(delta))
        self._local = threading.local()
        conn = self._conn()
        with _transaction(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = 'ceiling'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta VALUES ('ceiling', ?)", (json.dumps(list(self.ceiling)),))
                conn.execute("INSERT INTO meta VALUES ('profile', ?)", (json.dumps(asdict(PrivacyProfile())),))
            elif tuple(json.loads(row[0])) != self.ceiling:
                raise ValueError(
                    f"the ledger {self.path!r} was created with ceiling {tuple(json.loads(row[0]))}, "
                    f"not {self.ceiling}; open it with the same ceiling or use another file."
                )
            self.unit = self._unit_meta(conn, tuple(unit))

    def _unit_meta(self, conn, unit):
        """The file's declared (unit, m): stored at creation; reopening with None adopts it."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'unit'").fetchone()
        if row is None:  # a new file, or one written before units were recorded (undeclared)
            stored = unit if conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 0 else (None, None)
            conn.execute("INSERT INTO meta VALUES ('unit', ?)", (json.dumps(list(stored)),))
        else:
            stored = tuple(json.loads(row[0]))
        if unit != (None, None) and unit != stored:
            raise ValueError(
                f"the ledger {self.path!r} was created with (privacy_unit, max_items_per_user) = {stored}, not "
                f"{unit}; open it with the same unit (or privacy_unit=None to adopt it) or use another file."
            )
        return stored

    def _conn(self):
        # One connection per thread and per process (connections are not
        # shared across fork or threads).
        pid = os.getpid()
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != pid:
            try:
                conn = sqlite3.connect(self.path, timeout=120.0, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.executescript(_SCHEMA)
                columns = {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
                if "privacy_unit" not in columns:  # a file written before units were recorded
                    conn.execute("ALTER TABLE entries ADD COLUMN privacy_unit TEXT NOT NULL DEFAULT 'row'")
            except sqlite3.OperationalError as exc:
                raise OSError(
                    f"cannot open the privacy ledger {self.path!r} from process {pid} ({exc}). A "
                    "process-safe ledger must be a file every worker process can reach (same machine, "
                    "existing directory); nothing was spent."
                ) from exc
            self._local.conn, self._local.pid = conn, pid
        return conn

    def entries(self):
        rows = self._conn().execute("SELECT label, timestamp, event, privacy_unit FROM entries ORDER BY id").fetchall()
        return tuple(
            LedgerEntry(event=event_from_dict(json.loads(ev)), label=label, timestamp=ts, privacy_unit=unit)
            for label, ts, ev, unit in rows
        )

    def profile(self):
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'profile'").fetchone()
        return PrivacyProfile(**json.loads(row[0]))

    def append_if_within(self, entry, within):
        conn = self._conn()
        with _transaction(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = 'profile'").fetchone()
            current = PrivacyProfile(**json.loads(row[0]))
            new = current + profile_of(entry.event)
            if not within(new):
                return False, current
            conn.execute(
                "INSERT INTO entries (label, timestamp, event, privacy_unit) VALUES (?, ?, ?, ?)",
                (entry.label, entry.timestamp, json.dumps(event_to_dict(entry.event)), entry.privacy_unit),
            )
            conn.execute("UPDATE meta SET value = ? WHERE key = 'profile'", (json.dumps(asdict(new)),))
            return True, new

    def __reduce__(self):
        return (_reopen, (self.path, self.ceiling, self.unit))


def _reopen(path, ceiling, unit=(None, None)):
    return SQLiteLedger(path, *ceiling, unit)


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error)."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        return False
