"""Which ledger a fit charges when its ``accountant`` parameter is None.

Resolution order (doc/privacy/accounting.rst, "Which ledger a fit charges"):

1. the estimator's ``accountant`` parameter, if set;
2. the innermost open *budget block* (``with accountant:`` or
   :func:`budget`) — of this thread or context, else of this process: joblib
   worker threads do not inherit context variables, so a block opened by the
   thread that started them is found through a process-wide registry; if
   blocks of *different* ledgers are open in other threads, the fit refuses
   rather than guess;
3. the *binding* an estimator carries when it was pickled into this process
   (a joblib loky / multiprocessing worker): the ledger that was in force
   where it was pickled. A process-safe (SQLite) ledger is reopened here; an
   in-memory one cannot be, and the fit refuses;
4. the session's default ledger (:func:`~sklearn_dpsco.accounting.default_accountant`).

No step ever falls back to a ledger the user does not read: every spend
lands in the ledger that was in force, or the fit refuses before touching
data.
"""

import contextlib
import contextvars
import math
import os
import socket
import sys
import threading
from dataclasses import dataclass

from ._accountant import BudgetAccountant

__all__ = [
    "AccountantMixin",
    "AmbiguousAccountantError",
    "active_accountant",
    "budget",
    "enter_block",
    "exit_block",
    "resolve_accountant",
]


class AmbiguousAccountantError(RuntimeError):
    """Blocks of different ledgers are open in other threads; a fit here cannot tell which applies."""


# -- budget blocks --------------------------------------------------------------------------
class _Block:
    __slots__ = ("accountant", "parent", "token")

    def __init__(self, accountant, parent):
        self.accountant = accountant
        self.parent = parent
        self.token = None


# The blocks open in this thread / context, innermost last.
_blocks = contextvars.ContextVar("sklearn_dpsco_budget_blocks", default=())
# Every open block of the process, for threads that did not open one themselves.
_open = []
_open_lock = threading.Lock()


def enter_block(accountant):
    """Open a block charging ``accountant`` (used by ``BudgetAccountant.__enter__``)."""
    if not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"a budget block needs a BudgetAccountant, got {type(accountant).__name__}.")
    stack = _blocks.get()
    block = _Block(accountant, stack[-1] if stack else None)
    block.token = _blocks.set(stack + (block,))
    with _open_lock:
        _open.append(block)
    return block


def exit_block(accountant):
    """Close the innermost block of this context; it must be ``accountant``'s."""
    stack = _blocks.get()
    if not stack or stack[-1].accountant is not accountant:
        raise RuntimeError(
            "budget blocks must be closed in the thread that opened them, innermost first "
            "(use them as `with` statements)."
        )
    block = stack[-1]
    _blocks.reset(block.token)
    with _open_lock:
        _open.remove(block)


def active_accountant():
    """The ledger of the innermost budget block visible here, or None.

    Raises
    ------
    AmbiguousAccountantError
        No block is open in this thread but blocks of several different
        ledgers are open in others.
    """
    stack = _blocks.get()
    if stack:
        return stack[-1].accountant
    with _open_lock:
        if not _open:
            return None
        parents = {id(b.parent) for b in _open if b.parent is not None}
        innermost = [b.accountant for b in _open if id(b) not in parents]
    distinct = []
    for acc in innermost:
        if not any(acc is d for d in distinct):
            distinct.append(acc)
    if len(distinct) == 1:
        return distinct[0]
    raise AmbiguousAccountantError(
        f"{len(distinct)} budget blocks with different ledgers are open in other threads and none in this "
        "one, so a fit here cannot tell which ledger to charge. Pass accountant= to the estimator, or open "
        "the block in this thread. Nothing was spent."
    )


@contextlib.contextmanager
def budget(epsilon=math.inf, delta=0.0, *, path=None, process_safe=True):
    """A budget block: fits given ``accountant=None`` inside it charge one new ledger.

    Parameters
    ----------
    epsilon : float, default=inf
        Ceiling on the total epsilon of the block's ledger.
    delta : float, default=0.0
        Ceiling on the total delta.
    path : str or os.PathLike, default=None
        Keep the ledger in this SQLite file.
    process_safe : bool, default=True
        Without ``path``: True keeps the ledger in a temporary session file
        (:meth:`BudgetAccountant.temporary`), so fits sent to worker processes
        (joblib's loky backend) charge it too; False keeps it in memory, and
        such fits then refuse.

    Yields
    ------
    accountant : BudgetAccountant
        The block's ledger; read ``total()`` and ``ledger`` after the block.

    Examples
    --------
    >>> import sklearn_dpsco
    >>> from sklearn_dpsco.accounting import PureDPEvent, get_accountant
    >>> with sklearn_dpsco.budget(epsilon=1.0) as acc:
    ...     _ = get_accountant(None).spend(PureDPEvent(0.25))
    >>> acc.total()
    (0.25, 0.0)
    """
    if path is not None:
        accountant = BudgetAccountant(epsilon, delta, path=path)
    elif process_safe:
        accountant = BudgetAccountant.temporary(epsilon, delta)
    else:
        accountant = BudgetAccountant(epsilon, delta)
    with accountant:
        yield accountant


# -- bindings: the ledger an estimator takes into another process ----------------------------
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
    from ._default import default_accountant

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


def resolve_accountant(accountant, binding=None):
    """The ledger a fit charges (see the module docstring for the order)."""
    if accountant is not None:
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant must be a BudgetAccountant or None, got {type(accountant).__name__}.")
        return accountant
    acc = active_accountant()
    if acc is not None:
        return acc
    if binding is not None:
        acc = binding.resolve()
        if acc is not None:
            return acc
    from ._default import default_accountant

    return default_accountant()


class AccountantMixin:
    """For estimators with an ``accountant`` parameter: resolution and process binding.

    ``_get_accountant()`` resolves the ledger to charge. When the estimator
    is pickled with ``accountant=None`` (joblib sends it to a loky worker), the
    ledger in force is stored with it, so the worker charges the same ledger
    or refuses; see :func:`resolve_accountant`.
    """

    _BINDING = "_dpsco_binding"

    def _get_accountant(self):
        return resolve_accountant(self.accountant, getattr(self, self._BINDING, None))

    def __getstate__(self):
        state = super().__getstate__()
        state = dict(state)
        state.pop(self._BINDING, None)
        if getattr(self, "accountant", None) is None:
            state[self._BINDING] = binding_for_pickle(getattr(self, self._BINDING, None))
        return state

    def __setstate__(self, state):
        state = dict(state)
        binding = state.pop(self._BINDING, None)
        super().__setstate__(state)
        if binding is not None and binding.is_foreign():
            setattr(self, self._BINDING, binding)
