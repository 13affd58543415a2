"""A ledger in an SQLite file, shared by threads and processes (a :class:`._entries.LedgerStorage`).

Each spend is one ``BEGIN IMMEDIATE`` transaction: read the running profile,
compose, test against the ceiling, insert the entry and the new profile,
commit. SQLite serialises writers, so the ceiling holds across processes; WAL
journaling with ``synchronous=FULL`` makes a committed spend survive a crash
of the process that made it.

The file records the ledger's identity (``ledger_id``) and, for a session
file, its owner process (:mod:`._session`); a copy of the accountant
unpickled elsewhere reopens the file only if it still holds that ledger
(:mod:`._portable`). Connections after the first never create the file: a
ledger file deleted under a running process raises instead of being
replaced by an empty one (which would reset the budget).
"""

import json
import os
import pathlib
import sqlite3
import threading
from dataclasses import asdict

from ._composition import PrivacyProfile, profile_of
from ._entries import entry_from_row, entry_to_row, new_ledger_id
from ._session import process_is_gone

__all__ = ["LedgerIdentityError", "SQLiteLedger"]


class LedgerIdentityError(ValueError):
    """The file holds another ledger than the one expected (or exists where a new one was to be made)."""

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
    """Entries in an SQLite file (threads and processes); a :class:`._entries.LedgerStorage`.

    Parameters
    ----------
    path : str or os.PathLike
    epsilon, delta : float
        The ceiling; an existing file must have been created with the same.
    unit : tuple, default=(None, None)
        ``(privacy unit, max_items_per_user)``; None adopts the file's.
    ledger_id : str, default=None
        The identity the file must hold (an existing file), or the one a new
        file gets (default: a fresh one).
    owner : list, default=None
        A new session file's owner process (:func:`._session.process_token`).
    seed : tuple of (entries, PrivacyProfile), default=None
        Entries a *new* file starts with (a ledger moving out of memory);
        the file must not exist.
    must_exist : bool, default=False
        Refuse to create the file.
    """

    kind = "sqlite"

    def __init__(self, path, epsilon, delta, unit=(None, None), *, ledger_id=None, owner=None, seed=None,
                 must_exist=False):
        self.path = os.fspath(path)
        self._uri = pathlib.Path(self.path).absolute().as_uri()  # fixed now: later connections ignore chdir
        self.ceiling = (float(epsilon), float(delta))
        self._local = threading.local()
        if seed is not None and os.path.exists(self.path):
            raise LedgerIdentityError(f"{self.path!r} exists already; a ledger can only be moved to a new file.")
        conn = self._conn(create=not must_exist)
        with _transaction(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = 'ceiling'").fetchone()
            if row is None:
                entries, profile = seed if seed is not None else ((), PrivacyProfile())
                conn.execute("INSERT INTO meta VALUES ('ceiling', ?)", (json.dumps(list(self.ceiling)),))
                conn.execute("INSERT INTO meta VALUES ('profile', ?)", (json.dumps(asdict(profile)),))
                conn.execute("INSERT INTO meta VALUES ('unit', ?)", (json.dumps(list(unit)),))
                conn.execute("INSERT INTO meta VALUES ('ledger_id', ?)", (ledger_id or new_ledger_id(),))
                conn.executemany(
                    "INSERT INTO entries (label, timestamp, event, privacy_unit) VALUES (?, ?, ?, ?)",
                    [entry_to_row(e) for e in entries],
                )
                if owner is not None:
                    conn.execute("INSERT INTO meta VALUES ('owner', ?)", (json.dumps(list(owner)),))
            elif tuple(json.loads(row[0])) != self.ceiling:
                raise ValueError(
                    f"the ledger {self.path!r} was created with ceiling {tuple(json.loads(row[0]))}, "
                    f"not {self.ceiling}; open it with the same ceiling or use another file."
                )
            self.unit = self._unit_meta(conn, tuple(unit))
            self.ledger_id = self._id_meta(conn, ledger_id)
            row = conn.execute("SELECT value FROM meta WHERE key = 'owner'").fetchone()
            self.owner = None if row is None else json.loads(row[0])

    def _id_meta(self, conn, expected):
        """The file's ledger identity: stored at creation (a file written before identities gets one now)."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
        if row is None:
            if expected is not None and conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]:
                raise LedgerIdentityError(f"{self.path!r} holds a ledger without identity, not ledger {expected}.")
            stored = expected or new_ledger_id()
            conn.execute("INSERT INTO meta VALUES ('ledger_id', ?)", (stored,))
            return stored
        if expected is not None and row[0] != expected:
            raise LedgerIdentityError(f"{self.path!r} now holds ledger {row[0]}, not ledger {expected}.")
        return row[0]

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

    def _conn(self, create=False):
        # One connection per thread and per process (connections are not
        # shared across fork or threads). Only the constructor may create the file.
        pid = os.getpid()
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != pid:
            try:
                uri = self._uri + ("?mode=rwc" if create else "?mode=rw")
                conn = sqlite3.connect(uri, uri=True, timeout=120.0, isolation_level=None)
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

    def rows(self):
        """The entries as plain rows (:func:`._entries.entry_to_row`), oldest first."""
        return tuple(
            self._conn().execute("SELECT label, timestamp, event, privacy_unit FROM entries ORDER BY id").fetchall()
        )

    def entries(self):
        return tuple(entry_from_row(row) for row in self.rows())

    def profile(self):
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'profile'").fetchone()
        return PrivacyProfile(**json.loads(row[0]))

    def _require_live_owner(self):
        # a session file lives as long as its owner process: a copy in another
        # process must not keep spending into it once the owner has ended
        if self.owner is not None and self.owner[1] != os.getpid() and process_is_gone(self.owner):
            raise OSError(
                f"the ledger {self.path!r} was a temporary file of process {self.owner[1]} on host "
                f"{self.owner[0]}, which has ended, so the ledger is gone with its session. Nothing was spent."
            )

    def append_if_within(self, entry, within):
        self._require_live_owner()
        conn = self._conn()
        with _transaction(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = 'profile'").fetchone()
            current = PrivacyProfile(**json.loads(row[0]))
            new = current + profile_of(entry.event)
            if not within(new):
                return False, current
            conn.execute(
                "INSERT INTO entries (label, timestamp, event, privacy_unit) VALUES (?, ?, ?, ?)", entry_to_row(entry)
            )
            conn.execute("UPDATE meta SET value = ? WHERE key = 'profile'", (json.dumps(asdict(new)),))
            return True, new

    def retract(self, entry):
        """Remove the latest row equal to ``entry``, as if it had never been recorded (one transaction).

        For a spend recorded in several ledgers that failed in another one
        (:mod:`._nested`): the stored profile is recomposed from the remaining
        entries, in order, as their appends composed it.
        """
        conn = self._conn()
        with _transaction(conn):
            row = conn.execute(
                "SELECT MAX(id) FROM entries WHERE label = ? AND timestamp = ? AND event = ? AND privacy_unit = ?",
                entry_to_row(entry),
            ).fetchone()
            if row is None or row[0] is None:
                raise ValueError("the entry to retract is not in this ledger.")
            conn.execute("DELETE FROM entries WHERE id = ?", (row[0],))
            profile = PrivacyProfile()
            for r in conn.execute("SELECT label, timestamp, event, privacy_unit FROM entries ORDER BY id"):
                profile = profile + profile_of(entry_from_row(r).event)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'profile'", (json.dumps(asdict(profile)),))

    def __reduce__(self):
        raise TypeError("an SQLiteLedger is pickled through its BudgetAccountant, never on its own.")


def _reopen(path, ceiling, unit=(None, None)):
    # loads accountants pickled before ledgers carried their identity (by path only)
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
