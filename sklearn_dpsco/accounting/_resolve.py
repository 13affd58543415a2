"""Which ledger a fit charges: the one resolution every estimator, pipeline and search uses.

Resolution order (doc/privacy/accounting.rst, "Which ledger a fit charges"):

1. the estimator's ``accountant`` parameter, if set;
2. the innermost open *budget block* (``with accountant:`` or
   :func:`~sklearn_dpsco.budget`) — of this thread or context, else of this
   process: joblib worker threads do not inherit context variables, so a
   block opened by the thread that started them is found through a
   process-wide registry; if blocks of *different* ledgers are open in other
   threads, the fit refuses rather than guess (:mod:`._blocks`);
3. the *binding* an estimator carries when it was pickled into this process
   (a joblib loky / multiprocessing / Dask worker): the ledger that was in
   force where it was pickled, reopened here (an in-memory one moved to a
   session file when the estimator was pickled); one that cannot be reached
   here is a detached record and the fit refuses (:mod:`._bindings`);
4. the session's default ledger (:func:`~sklearn_dpsco.accounting.default_accountant`,
   :mod:`._default`).

No step ever falls back to a ledger the user does not read: every spend
lands in the ledger that was in force, or the fit refuses before touching
data. :func:`resolve_accountant` is that order; estimators reach it through
:meth:`AccountantMixin._get_accountant`, users through :func:`get_accountant`.
"""

from ._accountant import BudgetAccountant
from ._bindings import _Binding, binding_for_pickle
from ._blocks import active_accountant
from ._default import default_accountant

__all__ = ["AccountantMixin", "get_accountant", "resolve_accountant"]

# The attribute under which an unpickled estimator keeps its binding.
_BINDING = "_dpsco_binding"


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
    return default_accountant()


def get_accountant(accountant, estimator=None):
    """The ledger a fit charges: ``accountant`` if given, else the one in force.

    Parameters
    ----------
    accountant : BudgetAccountant or None
        The estimator's ``accountant`` parameter.
    estimator : object, optional
        The estimator being fitted; a ledger binding it carries from the
        process that sent it here is honoured (doc/privacy/accounting.rst).

    Returns
    -------
    BudgetAccountant
        The parameter; else the innermost open budget block; else the
        estimator's binding; else :func:`default_accountant`.
    """
    return resolve_accountant(accountant, getattr(estimator, _BINDING, None))


class AccountantMixin:
    """For estimators with an ``accountant`` parameter: resolution and process binding.

    ``_get_accountant()`` resolves the ledger to charge. When the estimator
    is pickled with ``accountant=None`` (joblib sends it to a loky worker), the
    ledger in force is stored with it, so the worker charges the same ledger
    or refuses; see :func:`resolve_accountant`.
    """

    _BINDING = _BINDING

    def _get_accountant(self):
        return resolve_accountant(self.accountant, getattr(self, self._BINDING, None))

    def __getstate__(self):
        state = super().__getstate__()
        state = dict(state)
        state.pop(self._BINDING, None)
        if getattr(self, "accountant", None) is None:
            # plain values, so state-based savers (skops) need no extra trusted type
            state[self._BINDING] = binding_for_pickle(getattr(self, self._BINDING, None)).to_state()
        return state

    def __setstate__(self, state):
        state = dict(state)
        binding = state.pop(self._BINDING, None)
        super().__setstate__(state)
        if isinstance(binding, dict):
            binding = _Binding.from_state(binding)
        if binding is not None and binding.is_foreign():
            setattr(self, self._BINDING, binding)
