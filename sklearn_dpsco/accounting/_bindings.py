"""Bindings: the ledger an estimator takes with it into another process.

When an estimator with ``accountant=None`` is pickled (joblib sends it to a
loky / multiprocessing worker), :func:`binding_for_pickle` records the
ledger in force where it was pickled: the innermost budget block's
(:mod:`._blocks`), else the session default (:mod:`._default`). In the
worker, :meth:`_Binding.resolve` reopens that ledger if it is process-safe
(an SQLite file) and refuses if it is not (an in-memory ledger, a per-fit
allowance), so spends land in the ledger that was in force or nowhere.

A binding is step 3 of the resolution in :mod:`._resolve`. ``_Binding`` is
pickled with the estimator, so it must stay importable at this path.
"""

import os
import socket
import sys
import threading
from dataclasses import dataclass

from ._accountant import BudgetAccountant
from ._blocks import AmbiguousAccountantError, active_accountant
from ._default import default_accountant

__all__ = ["binding_for_pickle"]

_IN_MEMORY = (
    "this estimator was sent to another process (a joblib loky or multiprocessing worker) while an "
    "in-memory ledger was in force for accountant=None; that ledger cannot follow it there and spends "
    "made there would be lost. Use a process-safe ledger (sklearn_dpsco.budget(...) without "
    "process_safe=False, BudgetAccountant.temporary(...), or BudgetAccountant(..., path='ledger.sqlite')), "
    "a thread-based joblib backend, or n_jobs=1. Nothing was spent."
)


def _process_alive(pid):
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class _Binding:
    """The ledger in force for ``accountant=None`` where an estimator was pickled."""

    kind: str  # "ledger" (a block's SQLite ledger), "default" (the session default) or "refusal"
    path: str
    ceiling: tuple
    reason: str
    origin_pid: int
    origin_host: str

    def is_foreign(self):
        return self.origin_pid != os.getpid() or self.origin_host != socket.gethostname()

    def resolve(self):
        """The bound ledger, or None if the binding no longer applies.

        A binding is honoured while the process that pickled the estimator is
        alive (this process is then a worker serving it); an estimator
        unpickled after that process ended (a model saved to disk) resolves
        its ledger afresh.
        """
        if not self.is_foreign():
            return None
        if self.origin_host == socket.gethostname() and not _process_alive(self.origin_pid):
            return None
        if self.kind == "refusal":
            raise RuntimeError(self.reason)
        return _reopen(self.path, self.ceiling)


# Reopened ledgers, one per (file, ceiling) in each process: every fit a worker
# runs for the same binding charges the same accountant (and reuses its connections).
_reopened = {}
_reopened_lock = threading.Lock()


def _reopen(path, ceiling):
    with _reopened_lock:
        acc = _reopened.get((path, ceiling, os.getpid()))
        if acc is None:
            acc = BudgetAccountant(*ceiling, path=path)
            _reopened[(path, ceiling, os.getpid())] = acc
        return acc


def _binding_for(accountant, kind):
    here = dict(origin_pid=os.getpid(), origin_host=socket.gethostname())
    if accountant.path is None:
        return _Binding("refusal", "", (), _IN_MEMORY, **here)
    if type(accountant) is not BudgetAccountant:
        # a per-fit allowance (or another view) over a ledger: reopening the
        # file alone would drop its cap, so it must travel as a parameter.
        reason = (
            f"a {type(accountant).__name__} was in force for accountant=None when this estimator was sent "
            "to another process; it cannot be reopened there. Pass it as the estimator's accountant "
            "parameter instead. Nothing was spent."
        )
        return _Binding("refusal", "", (), reason, **here)
    return _Binding(kind, accountant.path, (accountant.epsilon, accountant.delta), "", **here)


def binding_for_pickle(current=None):
    """The binding to store with an estimator pickled here (never raises).

    ``current`` is the binding the estimator already carries (from an earlier
    hop); it is kept when no block is open here, so nested workers reach the
    original ledger.
    """
    here = dict(origin_pid=os.getpid(), origin_host=socket.gethostname())
    try:
        acc = active_accountant()
    except AmbiguousAccountantError as exc:
        return _Binding("refusal", "", (), str(exc), **here)
    if acc is not None:
        return _binding_for(acc, "ledger")
    if current is not None:
        try:
            if current.resolve() is not None:
                return current
        except RuntimeError:
            return current
    try:
        return _binding_for(default_accountant(), "default")
    except RuntimeError as exc:
        return _Binding("refusal", "", (), str(exc), **here)
