"""Per-session files for process-safe ledgers that the user did not place.

A *session* is one Python process that uses sklearn_dpsco, together with the
worker processes it starts. Its temporary ledgers (the default ledger, and
:func:`sklearn_dpsco.budget` blocks without a ``path``) are SQLite files in one
private directory, created on first use and removed when the process that
created it exits. Workers reopen the files by path and never remove them.
"""

import atexit
import itertools
import os
import shutil
import tempfile
import threading

__all__ = ["session_file"]

_lock = threading.Lock()
_dir = None
_owner_pid = None
_counter = itertools.count()


def _cleanup(path, owner):
    # Only the creating process removes the directory: a forked child inherits
    # the atexit hook but must not delete the ledgers of a session still running.
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def session_dir():
    """The session's private temporary directory (created on first call)."""
    global _dir, _owner_pid
    with _lock:
        if _dir is None or not os.path.isdir(_dir):
            _dir = tempfile.mkdtemp(prefix="sklearn_dpsco-")
            _owner_pid = os.getpid()
            atexit.register(_cleanup, _dir, _owner_pid)
        return _dir


def session_file(stem):
    """A fresh file name ``<stem>-<k>.sqlite`` in :func:`session_dir` (the file is not created)."""
    return os.path.join(session_dir(), f"{stem}-{os.getpid()}-{next(_counter)}.sqlite")
