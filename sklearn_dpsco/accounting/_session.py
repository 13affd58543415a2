"""Per-session files for process-safe ledgers that the user did not place.

A *session* is one Python process that uses sklearn_dpsco, together with the
worker processes it starts. Its temporary ledgers (the default ledger, and
:func:`sklearn_dpsco.budget` blocks without a ``path``) are SQLite files in one
private directory, created on first use and removed when the process that
created it exits. Workers reopen the files by path and never remove them.

A session file records its *owner*, the process that created it
(:func:`process_token`: host, pid and, where the system tells it, the
process start time, so a recycled pid is not mistaken for the owner). A
copy of a ledger unpickled after its owner ended (:func:`process_is_gone`)
is a detached record, not a live ledger (doc/persistence.rst).
"""

import atexit
import itertools
import os
import shutil
import socket
import sys
import tempfile
import threading

__all__ = ["process_alive", "process_is_gone", "process_token", "session_file"]

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


def process_alive(pid):
    """Whether a process with this pid exists on this host (always True where it cannot be told)."""
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid):
    """The process start time in clock ticks since boot (Linux ``/proc``), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after its last ')'
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of proc(5): starttime
    except (IndexError, ValueError):
        return None


def process_token(pid=None):
    """``[host, pid, start time or None]``: this process (or ``pid`` on this host), as JSON-friendly values."""
    pid = os.getpid() if pid is None else int(pid)
    return [socket.gethostname(), pid, _start_time(pid)]


def process_is_gone(token):
    """True when the process ``token`` names has certainly ended (False when this host cannot tell)."""
    host, pid, start = token
    if host != socket.gethostname():
        return False
    if not process_alive(pid):
        return True
    return start is not None and _start_time(pid) not in (None, start)
