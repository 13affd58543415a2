"""Bindings: the ledger an estimator takes with it into another process.

When an estimator with ``accountant=None`` is pickled (joblib sends it to a
loky / multiprocessing / Dask worker), :func:`binding_for_pickle` records
the ledger in force where it was pickled: the innermost budget block's
(:mod:`._blocks`), else the session default (:mod:`._default`), as the
portable state of :mod:`._portable` without the entries (an in-memory
block ledger moves to a session file first). In the worker,
:meth:`_Binding.resolve` reopens that ledger; one that cannot be reached
there is a detached record whose budget check refuses, and a per-fit
allowance in force as a block refuses outright, so spends land in the
ledger that was in force or nowhere.

A binding is step 3 of the resolution in :mod:`._resolve`. The estimator
stores it as plain values (:meth:`_Binding.to_state`), so saved models need
no extra trusted type.
"""

import os
import socket
import sqlite3
from dataclasses import asdict, dataclass

from ._accountant import BudgetAccountant, _restore_accountant
from ._blocks import AmbiguousAccountantError, active_accountant
from ._default import default_accountant
from ._session import process_alive

__all__ = ["binding_for_pickle"]


@dataclass(frozen=True)
class _Binding:
    """The ledger in force for ``accountant=None`` where an estimator was pickled."""

    kind: str  # "ledger" (a block's ledger), "default" (the session default) or "refusal"
    state: dict  # the ledger's portable state (None for a refusal)
    reason: str
    origin_pid: int
    origin_host: str

    def to_state(self):
        return asdict(self)

    @classmethod
    def from_state(cls, state):
        return cls(**state)

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
        if self.origin_host == socket.gethostname() and not process_alive(self.origin_pid):
            return None
        if self.kind == "refusal":
            raise RuntimeError(self.reason)
        # one accountant per ledger in each process: every fit a worker runs for
        # it charges the same object (and reuses its connections)
        return _restore_accountant(self.state)


def _binding_for(accountant, kind):
    here = dict(origin_pid=os.getpid(), origin_host=socket.gethostname())
    if type(accountant) is not BudgetAccountant:
        # a per-fit allowance (or another view) over a ledger: reopening the
        # file alone would drop its cap, so it must travel as a parameter.
        reason = (
            f"a {type(accountant).__name__} was in force for accountant=None when this estimator was sent "
            "to another process; it cannot be reopened there. Pass it as the estimator's accountant "
            "parameter instead. Nothing was spent."
        )
        return _Binding("refusal", None, reason, **here)
    try:
        state = accountant._portable_state(snapshot=False)  # an in-memory ledger moves to a session file
    except (OSError, sqlite3.Error) as exc:
        return _Binding("refusal", None, f"the ledger in force cannot be read ({exc}). Nothing was spent.", **here)
    return _Binding(kind, state, "", **here)


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
        return _Binding("refusal", None, str(exc), **here)
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
        return _Binding("refusal", None, str(exc), **here)
