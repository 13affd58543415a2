"""Privacy accounting: events, composition, calibration and the budget ledger.

See doc/privacy/composition.rst and doc/privacy/accounting.rst.
"""

from ._accountant import BudgetAccountant, BudgetExceededError, LedgerEntry
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
from ._context import AmbiguousAccountantError, active_accountant, budget
from ._default import default_accountant, get_accountant
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
from ._units import PrivacyUnitError, group_privacy_event, privacy_unit_of

__all__ = [
    "AmbiguousAccountantError",
    "ApproxDPEvent",
    "BudgetAccountant",
    "BudgetExceededError",
    "ComposedEvent",
    "FitAllowance",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerEntry",
    "ParallelComposedEvent",
    "PrivacyEvent",
    "PrivacyProfile",
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
