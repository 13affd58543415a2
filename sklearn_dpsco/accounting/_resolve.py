"""Which ledger a fit charges: the one resolution every estimator, pipeline and search uses.

Resolution order (doc/privacy/accounting.rst, "Which ledger a fit charges"):

1. the estimator's ``accountant`` parameter, if set — *and* every open
   budget block (step 2, or the blocks bound in step 3), so that nothing run
   inside a block escapes its ceiling;
2. the open *budget blocks* (``with accountant:`` or
   :func:`~sklearn_dpsco.budget`), every one of them: the innermost and all
   blocks enclosing it — of this thread or context, else of this process:
   joblib worker threads do not inherit context variables, so blocks opened
   by the thread that started them are found through a process-wide
   registry; if blocks of *different* ledgers are open in other threads, the
   fit refuses rather than guess (:mod:`._blocks`);
3. the *binding* an estimator carries when it was pickled into this process
   (a joblib loky / multiprocessing / Dask worker): the ledgers that were in
   force where it was pickled, reopened here (an in-memory one moved to a
   session file when the estimator was pickled); one that cannot be reached
   here is a detached record and the fit refuses (:mod:`._bindings`);
4. the session's default ledger (:func:`~sklearn_dpsco.accounting.default_accountant`,
   :mod:`._default`).

When several distinct ledgers are in force (nested blocks, or a parameter
inside a block), the fit charges all of them through one
:class:`~._nested.NestedCharge`: checked against each before data is read,
recorded in each or in none (:mod:`._nested`). With one ledger in force, that
ledger itself is returned.

No step ever falls back to a ledger the user does not read: every spend
lands in the ledgers that were in force, or the fit refuses before touching
data. :func:`resolve_accountant` is that order; estimators reach it through
:meth:`AccountantMixin._get_accountant`, users through :func:`get_accountant`.
"""

from ._accountant import BudgetAccountant
from ._bindings import _Binding, binding_for_blocks, binding_for_pickle
from ._blocks import AmbiguousAccountantError, active_chain
from ._default import default_accountant
from ._nested import combine

__all__ = ["AccountantMixin", "get_accountant", "named_accountants", "resolve_accountant"]

# The attribute under which an unpickled estimator keeps its binding.
_BINDING = "_dpsco_binding"


def named_accountants(estimator, own=True):
    """The ``accountant`` parameters set (not None) on ``estimator``'s nested steps (and its own with ``own``).

    A meta-estimator that gives its sub-fits their own allowances (a search's candidates, a pipeline's
    steps) refuses these before spending: an accountant named there would not be charged, and a named
    ledger must never be escaped (doc/privacy/accounting.rst, "Budget blocks").
    """
    params = estimator.get_params(deep=True)
    return sorted(k for k, v in params.items()
                  if v is not None and (k.endswith("__accountant") or (own and k == "accountant")))


def resolve_accountant(accountant, binding=None):
    """What a fit charges (see the module docstring for the order): a ledger, or a NestedCharge of several."""
    if accountant is not None:
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant must be a BudgetAccountant or None, got {type(accountant).__name__}.")
        try:
            blocks = active_chain()
        except AmbiguousAccountantError:
            # blocks of different ledgers in other threads: the parameter names the ledger (the remedy the
            # refusal of accountant=None suggests); no block of this thread is escaped
            blocks = ()
        if not blocks and binding is not None and binding.kind == "blocks":
            acc = binding.resolve()
            blocks = () if acc is None else (acc,)
        return combine((accountant, *blocks))
    blocks = active_chain()
    if blocks:
        return combine(blocks)
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
        The parameter (with every open budget block); else the open budget
        blocks; else the estimator's binding; else :func:`default_accountant`.
        When several distinct ledgers are in force this is a ``NestedCharge``
        over them: its ``check`` asks every one, its ``spend`` records in each
        or in none, and reading it (``ledger``, ``total``) reads the first.
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
        accountant = getattr(self, "accountant", None)
        if accountant is None:
            # plain values, so state-based savers (skops) need no extra trusted type
            state[self._BINDING] = binding_for_pickle(getattr(self, self._BINDING, None)).to_state()
        else:
            # an explicit parameter inside budget blocks: the blocks travel too (charged with it)
            binding = binding_for_blocks(accountant, getattr(self, self._BINDING, None))
            if binding is not None:
                state[self._BINDING] = binding.to_state()
        return state

    def __setstate__(self, state):
        state = dict(state)
        binding = state.pop(self._BINDING, None)
        super().__setstate__(state)
        if isinstance(binding, dict):
            binding = _Binding.from_state(binding)
        if binding is not None and binding.is_foreign():
            setattr(self, self._BINDING, binding)
