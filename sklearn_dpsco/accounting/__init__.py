"""Privacy accounting: events, composition, calibration and the budget ledger.

See doc/privacy/composition.rst and doc/privacy/accounting.rst. Modules, each
importing only the ones listed before it (no cycles; tests/integration/test_import_graph.py):

* ``_events``, ``_calibration``, ``_composition``, ``_shares``, ``_units``:
  privacy events, their calibration, composition profiles, budget splits and
  privacy units;
* ``_entries``: the ledger record and the storage interface;
  ``_memory_ledger``, ``_sqlite_ledger``: the two storages; ``_session``:
  session files for process-safe ledgers and their owner processes;
  ``_detached``: the read-only record of a saved ledger that cannot be
  reached; ``_portable``: what a pickled ledger carries and how it is
  reopened (doc/persistence.rst);
* ``_blocks``: the stack of open budget blocks;
* ``_accountant``: ``BudgetAccountant`` (check / spend / ceiling) and
  ``budget()``; ``_allowance``: per-fit caps in front of a ledger;
  ``_nested``: one spend charged to every ledger in force (nested blocks),
  all or nothing;
* ``_default``: the session's default ledger; ``_bindings``: the ledger an
  estimator takes into another process; ``_resolve``: which ledger a fit
  charges (``AccountantMixin``, ``get_accountant``);
* ``_report``: the read-only :class:`PrivacyReport` (spends, running totals,
  the guarantee in words) and the report of a ledger; the reports of
  estimators, pipelines and searches are built by
  :func:`sklearn_dpsco.privacy_report` on top of it.
"""

from ._accountant import BudgetAccountant, BudgetExceededError, budget
from ._allowance import FitAllowance
from ._calibration import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_scale,
    rdp_epsilon,
    zcdp_epsilon,
    zcdp_rho,
)
from ._composition import PrivacyProfile, epsilon_delta, profile_of
from ._blocks import AmbiguousAccountantError, active_accountant
from ._default import default_accountant
from ._detached import DetachedLedgerError
from ._entries import LedgerEntry
from ._events import (
    ApproxDPEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PrivacyEvent,
    PureDPEvent,
    SelfComposedEvent,
    ZCDPEvent,
)
from ._report import PrivacyReport
from ._resolve import get_accountant
from ._units import PrivacyUnitError, group_privacy_event, privacy_unit_of

__all__ = [
    "AmbiguousAccountantError",
    "ApproxDPEvent",
    "BudgetAccountant",
    "BudgetExceededError",
    "ComposedEvent",
    "DetachedLedgerError",
    "FitAllowance",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerEntry",
    "ParallelComposedEvent",
    "PrivacyEvent",
    "PrivacyProfile",
    "PrivacyReport",
    "PrivacyUnitError",
    "PureDPEvent",
    "SelfComposedEvent",
    "ZCDPEvent",
    "active_accountant",
    "budget",
    "default_accountant",
    "epsilon_delta",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classic",
    "get_accountant",
    "group_privacy_event",
    "laplace_scale",
    "privacy_unit_of",
    "profile_of",
    "rdp_epsilon",
    "zcdp_epsilon",
    "zcdp_rho",
]
