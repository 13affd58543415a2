"""The session's default ledger: what a fit charges when no ledger is in force.

It has no ceiling (epsilon=inf, delta=1): it only records. It is
process-safe: an SQLite file in the session's temporary directory
(:mod:`._session`), so that

* fits sent to joblib loky / multiprocessing workers reach it: an estimator
  pickled with ``accountant=None`` carries the file's path (a *binding*,
  :mod:`._bindings`), and the path is also exported in the environment
  variable ``SKLEARN_DPSCO_DEFAULT_LEDGER`` for workers started afterwards;
* a forked child inherits the same ledger object and writes to the same file.

A worker process that finds no default ledger of its parent (it was started
before the parent created one, and received no binding) refuses to charge a
ledger of its own, which nobody would read: its fits raise with a remedy.

It is the last step of the resolution in :mod:`._resolve`.
"""

import math
import multiprocessing
import os
import threading
import warnings

from ._accountant import BudgetAccountant

__all__ = ["ENV_VAR", "default_accountant"]

ENV_VAR = "SKLEARN_DPSCO_DEFAULT_LEDGER"

_lock = threading.Lock()
_default = None

_ORPHAN_WORKER = (
    "this is a worker process (started by process {ppid}) and the fit was given no accountant, but no "
    "default ledger of the parent session is known here (the worker was started before the parent "
    "created it), so its spends would be recorded where nobody reads them. Pass "
    "accountant=BudgetAccountant(..., path='ledger.sqlite') (or BudgetAccountant.temporary(...) created "
    "in the parent), or create the estimator in the parent process. Nothing was spent."
)


def _inherited_path():
    path = os.environ.get(ENV_VAR)
    if path and os.path.exists(path):
        return path
    return None


def _create():
    path = _inherited_path()
    if path is not None:
        return BudgetAccountant(math.inf, 1.0, path=path)
    if multiprocessing.parent_process() is not None:
        raise RuntimeError(_ORPHAN_WORKER.format(ppid=os.getppid()))
    try:
        acc = BudgetAccountant.temporary(math.inf, 1.0)
    except OSError as exc:  # no writable temporary directory: record in memory, refuse cross-process
        warnings.warn(
            f"sklearn_dpsco could not create its default ledger file ({exc}); the default ledger is kept "
            "in memory and fits sent to worker processes with accountant=None will refuse.",
            RuntimeWarning,
            stacklevel=3,
        )
        return BudgetAccountant(math.inf, 1.0)
    os.environ[ENV_VAR] = acc.path
    return acc


def default_accountant():
    """The session's default ledger, which records fits given no accountant.

    It has no ceiling (epsilon=inf, delta=1): it only records. It is shared
    by this process, its threads and the worker processes it starts (an
    SQLite file in a temporary directory removed when this process exits).
    Pass your own :class:`BudgetAccountant`, or open a budget block
    (``with accountant:`` / :func:`sklearn_dpsco.budget`), to enforce a budget.

    Raises
    ------
    RuntimeError
        In a worker process that knows no default ledger of its parent
        (see doc/privacy/accounting.rst).
    """
    global _default
    with _lock:
        if _default is None:
            _default = _create()
        return _default

