"""Budget blocks: the stack of ledgers opened with ``with accountant:`` (or :func:`~sklearn_dpsco.budget`).

Each thread / context sees its own stack (a context variable). Every open
block is also kept in a process-wide registry, because joblib worker
threads do not inherit context variables: a thread with no block of its own
sees the blocks of the process (the innermost one and the blocks enclosing
it), or refuses (:class:`AmbiguousAccountantError`) when blocks of
*different* ledgers, or one ledger inside different enclosing blocks, are
open in other threads. A fit charges every enclosing block, not only the
innermost (:func:`active_chain`); which ledgers a fit charges is decided in
:mod:`._resolve` and :mod:`._nested`.

This module holds ledgers as opaque objects and imports nothing of the
package: :class:`~sklearn_dpsco.accounting.BudgetAccountant` opens and closes
its blocks through :func:`enter_block` / :func:`exit_block`, and
:func:`~sklearn_dpsco.accounting.budget` (in :mod:`._accountant`) opens one on
a new ledger.
"""

import contextvars
import threading

__all__ = ["AmbiguousAccountantError", "active_accountant", "active_chain", "enter_block", "exit_block"]


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


def _chain(block):
    out = []
    while block is not None:
        out.append(block.accountant)
        block = block.parent
    return tuple(out)


def _same(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def active_chain():
    """The ledgers of the budget blocks visible here, innermost first; () when none is open.

    In a thread or context with blocks of its own: its stack. Otherwise the
    process-wide registry: the blocks enclosing the innermost open block, if
    every innermost open block belongs to one ledger inside the same
    enclosing blocks.

    Raises
    ------
    AmbiguousAccountantError
        No block is open in this thread, and the innermost blocks open in
        other threads belong to different ledgers or sit in different
        enclosing blocks.
    """
    stack = _blocks.get()
    if stack:
        return tuple(b.accountant for b in reversed(stack))
    with _open_lock:
        if not _open:
            return ()
        parents = {id(b.parent) for b in _open if b.parent is not None}
        chains = [_chain(b) for b in _open if id(b) not in parents]
    distinct = []
    for chain in chains:
        if not any(_same(chain, d) for d in distinct):
            distinct.append(chain)
    if len(distinct) == 1:
        return distinct[0]
    leaves = []
    for chain in distinct:
        if not any(chain[0] is d for d in leaves):
            leaves.append(chain[0])
    if len(leaves) > 1:
        raise AmbiguousAccountantError(
            f"{len(leaves)} budget blocks with different ledgers are open in other threads and none in this "
            "one, so a fit here cannot tell which ledger to charge. Pass accountant= to the estimator, or open "
            "the block in this thread. Nothing was spent."
        )
    raise AmbiguousAccountantError(
        "blocks of one ledger are open in other threads inside different enclosing budget blocks, and none "
        "in this one, so a fit here cannot tell which enclosing blocks to charge. Pass accountant= to the "
        "estimator, or open the blocks in this thread. Nothing was spent."
    )


def active_accountant():
    """The ledger of the innermost budget block visible here, or None.

    A fit charges that ledger and those of the blocks enclosing it
    (:func:`active_chain`).

    Raises
    ------
    AmbiguousAccountantError
        No block is open in this thread but blocks of several different
        ledgers (or of one ledger inside different enclosing blocks) are open
        in others.
    """
    chain = active_chain()
    return chain[0] if chain else None
