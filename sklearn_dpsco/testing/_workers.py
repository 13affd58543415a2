"""Functions run in other processes by the budget tests (importable by spawned workers)."""

from ..accounting import BudgetAccountant, BudgetExceededError, PureDPEvent

__all__ = ["spend_repeatedly"]


def spend_repeatedly(path, epsilon_ceiling, n_spends, epsilon_each, queue=None):
    """Open the SQLite ledger at ``path`` and try ``n_spends`` pure spends; return (or put) the count that fit."""
    acc = BudgetAccountant(epsilon_ceiling, 0.0, path=path)
    ok = 0
    for _ in range(n_spends):
        try:
            acc.spend(PureDPEvent(epsilon_each), label="worker")
            ok += 1
        except BudgetExceededError:
            pass
    if queue is not None:
        queue.put(ok)
    return ok
