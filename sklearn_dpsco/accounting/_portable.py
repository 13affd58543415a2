"""How a ledger leaves its process: the portable state a pickled accountant carries, and its restoration.

A pickled :class:`~sklearn_dpsco.accounting.BudgetAccountant` (sent to a
joblib / Dask worker, or saved with a model) carries :func:`export_state`: a
dict of plain values (so ``skops`` can save it without trusting extra
types) holding the ledger's identity, ceiling, privacy unit, where it is
kept (a file path, and the owner process of a session file), and a snapshot
of its entries. An in-memory ledger is first *moved* to a private session
file (:func:`move_to_file`), so that the copy can charge the same ledger.

:func:`restore_storage` reopens the ledger where that is the same ledger —
the file exists here, still holds that ledger, and, for a session file, its
owner process is alive — and otherwise returns a read-only
:class:`._detached.DetachedLedger` of the snapshot, with the reason. It
never refuses: loading a saved model always works; only spending through a
ledger that could not be reopened refuses. doc/persistence.rst.
"""

import os
import socket
import sqlite3
from dataclasses import asdict

from ._composition import PrivacyProfile
from ._detached import DetachedLedger
from ._entries import entry_to_row
from ._session import process_is_gone
from ._sqlite_ledger import SQLiteLedger

__all__ = ["FORMAT", "export_state", "move_to_file", "restore_storage"]

FORMAT = 1

_SHARED_FS = (
    "Worker processes must share a filesystem with the process that holds the ledger (true for joblib's "
    "loky backend and a Dask LocalCluster, not for Dask workers on other machines: pass them "
    "BudgetAccountant(..., path=FILE) on a filesystem they all reach)."
)


def move_to_file(memory, path, owner=None):
    """Move an in-memory ledger's entries into a new SQLite file (atomically); return the file storage."""
    return memory.move_to(
        lambda entries, profile: SQLiteLedger(
            path, *memory.ceiling, memory.unit, ledger_id=memory.ledger_id, owner=owner, seed=(entries, profile)
        )
    )


def export_state(storage, *, snapshot=True, reason=None):
    """The portable state of a storage (plain values only).

    Parameters
    ----------
    storage : LedgerStorage
        An SQLite ledger (reopened by path where it can be), an in-memory
        one that could not move to a file, or a detached record; the last
        two restore detached everywhere but in this process.
    snapshot : bool, default=True
        Carry the entries (a saved model's record); a binding to a worker
        that only needs the path skips them.
    reason : str, default=None
        Why an in-memory ledger could not move to a file.
    """
    state = {
        "format": FORMAT,
        "ledger_id": storage.ledger_id,
        "ceiling": [float(c) for c in storage.ceiling],
        "unit": list(storage.unit),
        "path": None if storage.kind != "sqlite" else os.path.abspath(storage.path),
        "owner": getattr(storage, "owner", None),
        "source_path": getattr(storage, "source_path", None),
        "profile": asdict(storage.profile()),
        "rows": None,
        "reason": None,
    }
    if storage.kind == "detached":
        state["reason"] = storage.reason
    elif storage.kind == "memory":
        state["reason"] = reason or (
            f"it was kept in memory by process {os.getpid()} on host {socket.gethostname()}, which is not this one."
        )
    if snapshot:
        rows = storage.rows if storage.kind == "detached" else (
            storage.rows() if storage.kind == "sqlite" else tuple(entry_to_row(e) for e in storage.entries())
        )
        state["rows"] = [list(r) for r in rows]
    return state


def _detached(state, reason):
    return DetachedLedger(
        state["ceiling"],
        state["unit"],
        state["ledger_id"],
        state["rows"] or (),
        PrivacyProfile(**state["profile"]),
        reason,
        source_path=state["path"] or state["source_path"],
    )


def restore_storage(state):
    """The ledger ``state`` describes, reopened if it is reachable here, else its detached record.

    Raises only for a state of an unknown format (saved by another version).
    """
    if state.get("format") != FORMAT:
        raise ValueError(f"unknown ledger state format {state.get('format')!r}; saved by a newer sklearn_dpsco?")
    path = state["path"]
    if path is None:
        return _detached(state, state["reason"])
    owner = state["owner"]
    if owner is not None and process_is_gone(owner):
        host, pid, _ = owner
        return _detached(
            state,
            f"it was kept in a temporary file of the session of process {pid} on host {host}, which has ended.",
        )
    if not os.path.exists(path):
        return _detached(
            state, f"its file {path!r} does not exist on host {socket.gethostname()} (process {os.getpid()}). {_SHARED_FS}"
        )
    try:
        return SQLiteLedger(path, *state["ceiling"], tuple(state["unit"]), ledger_id=state["ledger_id"], must_exist=True)
    except (OSError, ValueError, sqlite3.Error) as exc:
        return _detached(state, f"its file {path!r} cannot be reopened here ({exc}).")
