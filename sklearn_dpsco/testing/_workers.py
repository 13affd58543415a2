"""Functions run in other processes by the budget tests (importable by spawned workers)."""

from ..accounting import BudgetAccountant, BudgetExceededError, PureDPEvent

__all__ = ["fit_with_default_ledger", "spend_repeatedly"]


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


def fit_with_default_ledger(queue):
    """In a child process: fit a TinyDPClassifier with ``accountant=None``; report the ledger or the refusal."""
    import numpy as np

    from ._estimators import TinyDPClassifier

    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    y = np.array([1, 1, 0, 0])
    try:
        est = TinyDPClassifier(0.5, random_state=0).fit(X, y)
        queue.put(("ok", est._get_accountant().path))
    except RuntimeError as exc:
        queue.put(("error", str(exc)))
