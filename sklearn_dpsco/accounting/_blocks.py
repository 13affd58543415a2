"""Budget blocks: the stack of ledgers opened with ``with accountant:`` (or :func:`~sklearn_dpsco.budget`).

Each thread / context sees its own stack (a context variable). Every open
block is also kept in a process-wide registry, because joblib worker
threads do not inherit context variables: a thread with no block of its own
sees the innermost block of the process, or refuses
(:class:`AmbiguousAccountantError`) when blocks of *different* ledgers are
open in other threads. Which ledger a fit charges, of which the innermost
block is one step, is decided in :mod:`._resolve`.

This module holds ledgers as opaque objects and imports nothing of the
package: :class:`~sklearn_dpsco.accounting.BudgetAccountant` opens and closes
its blocks through :func:`enter_block` / :func:`exit_block`, and
:func:`~sklearn_dpsco.accounting.budget` (in :mod:`._accountant`) opens one on
a new ledger.
"""

import contextvars
import threading

__all__ = ["AmbiguousAccountantError", "active_accountant", "enter_block", "exit_block"]


class AmbiguousAccountantError(RuntimeError):
    """Blocks of different ledgers are open in other threads; a fit here cannot tell which applies."""


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
