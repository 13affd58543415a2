"""Bindings: the ledger an estimator takes with it into another process.

When an estimator with ``accountant=None`` is pickled (joblib sends it to a
loky / multiprocessing / Dask worker), :func:`binding_for_pickle` records
the ledgers in force where it was pickled: those of every open budget block,
innermost first (:mod:`._blocks`), else the session default
(:mod:`._default`), as the portable states of :mod:`._portable` without the
entries (an in-memory block ledger moves to a session file first). An
estimator with an explicit ``accountant`` pickled inside budget blocks
carries the blocks' ledgers the same way (:func:`binding_for_blocks`): the
worker charges them with the parameter, as the pickling thread would have. In the worker,
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
from ._blocks import AmbiguousAccountantError, active_chain
from ._default import default_accountant
from ._nested import EVERY_LEDGER, _accounted, combine, ledger_keys
from ._session import process_alive

__all__ = ["binding_for_blocks", "binding_for_pickle"]


@dataclass(frozen=True)
class _Binding:
    """The ledger in force for ``accountant=None`` where an estimator was pickled."""

    # "ledger" (blocks' ledgers), "default" (the session default) or "refusal", for accountant=None;
    # "blocks" / "blocks-refusal": the blocks enclosing an explicit accountant parameter
    kind: str
    state: dict  # the (innermost) ledger's portable state (None for a refusal)
    reason: str
    origin_pid: int
    origin_host: str
    outer: tuple = ()  # the portable states of the enclosing blocks' ledgers, innermost first

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
        if self.kind in ("refusal", "blocks-refusal"):
            raise RuntimeError(self.reason)
        # one accountant per ledger in each process: every fit a worker runs for
        # it charges the same object (and reuses its connections)
        return combine([_restore_accountant(state) for state in (self.state, *self.outer)])


def _binding_for(accountant, kind):
    return _binding_for_chain((accountant,), kind)


def _binding_for_chain(chain, kind):
    here = dict(origin_pid=os.getpid(), origin_host=socket.gethostname())
    refusal = "blocks-refusal" if kind == "blocks" else "refusal"
    distinct = []
    for accountant in chain:
        if not any(accountant is d for d in distinct):
            distinct.append(accountant)
    states = []
    for accountant in distinct:
        binding = _binding_one(accountant, kind, here)
        if binding.kind == "refusal":
            return _Binding(refusal, None, binding.reason, **here)
        if not any(s["ledger_id"] == binding.state["ledger_id"] for s in states):
            states.append(binding.state)
    return _Binding(kind, states[0], "", outer=tuple(states[1:]), **here)


def _binding_one(accountant, kind, here):
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
        chain = active_chain()
    except AmbiguousAccountantError as exc:
        return _Binding("refusal", None, str(exc), **here)
    if chain:
        return _binding_for_chain(chain, "ledger")
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


def binding_for_blocks(accountant, current=None):
    """The binding of the blocks enclosing an explicit ``accountant`` pickled here, or None (never raises).

    The blocks a meta-estimator charged already for spends through
    ``accountant`` (:func:`._nested.mark_accounted`) are left out; ``current``
    (a binding from an earlier hop) is kept when no block is open here.
    """
    try:
        chain = active_chain()
    except AmbiguousAccountantError:
        chain = ()  # the parameter names the ledger (accounting/_resolve.py)
    covered = ledger_keys(accountant) | _accounted(accountant)
    if EVERY_LEDGER in covered:
        return None
    chain = [b for b in chain if not ledger_keys(b) <= covered]
    if chain:
        return _binding_for_chain(chain, "blocks")
    if current is not None and current.kind.startswith("blocks"):
        return current
    return None
