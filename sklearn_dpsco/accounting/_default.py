"""Which accountant an estimator charges when its ``accountant`` parameter is None."""

import math
import threading

from ._accountant import BudgetAccountant

__all__ = ["default_accountant", "get_accountant"]

_lock = threading.Lock()
_default = None


def default_accountant():
    """The process-wide accountant that records fits given no accountant.

    It has no ceiling (epsilon=inf, delta=1): it only records. Pass your own
    :class:`BudgetAccountant` to an estimator to enforce a budget.
    """
    global _default
    with _lock:
        if _default is None:
            _default = BudgetAccountant(math.inf, 1.0)
        return _default


def get_accountant(accountant):
    """``accountant`` if given, else :func:`default_accountant`."""
    if accountant is None:
        return default_accountant()
    if not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant must be a BudgetAccountant or None, got {type(accountant).__name__}.")
    return accountant
