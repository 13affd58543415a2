"""What a ledger stores: the record of one spend, and the storage interface.

:class:`LedgerEntry` is one recorded spend. :class:`LedgerStorage` is what
:class:`~sklearn_dpsco.accounting.BudgetAccountant` needs from where entries
are kept; two storages implement it, each in its own module:
:mod:`._memory_ledger` (a list in this process) and :mod:`._sqlite_ledger`
(an SQLite file shared by threads and processes). Both compose through
:mod:`._composition`; neither knows about ceilings beyond the ``within`` test
the accountant hands them.
"""

from dataclasses import dataclass
from typing import Callable, Protocol

from ._composition import PrivacyProfile
from ._events import PrivacyEvent

__all__ = ["LedgerEntry", "LedgerStorage"]


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend."""

    event: PrivacyEvent
    label: str
    timestamp: float
    #: ``"row"`` or ``"user"``: the neighbouring relation ``event`` holds for
    #: (after group-privacy conversion on a user-level ledger).
    privacy_unit: str = "row"


class LedgerStorage(Protocol):
    """Where a :class:`~sklearn_dpsco.accounting.BudgetAccountant` keeps its entries.

    Attributes
    ----------
    kind : str
        ``"memory"`` or ``"sqlite"``.
    ceiling : tuple of float
        ``(epsilon, delta)``, as given to the accountant.
    unit : tuple
        ``(declared privacy unit or None, max_items_per_user or None)``.
    """

    kind: str
    ceiling: tuple
    unit: tuple

    def entries(self) -> tuple:
        """The :class:`LedgerEntry` records, oldest first."""

    def profile(self) -> PrivacyProfile:
        """The composition profile of every entry."""

    def append_if_within(self, entry: LedgerEntry, within: Callable[[PrivacyProfile], bool]) -> tuple:
        """Atomically append ``entry`` iff ``within(new profile)``; return ``(ok, profile)``."""
