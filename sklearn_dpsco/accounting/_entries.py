"""What a ledger stores: the record of one spend, and the storage interface.

:class:`LedgerEntry` is one recorded spend. :class:`LedgerStorage` is what
:class:`~sklearn_dpsco.accounting.BudgetAccountant` needs from where entries
are kept; storages implement it, each in its own module:
:mod:`._memory_ledger` (a list in this process) and :mod:`._sqlite_ledger`
(an SQLite file shared by threads and processes); a third,
:mod:`._detached`, is the read-only record a saved ledger becomes where it
cannot be reached (doc/persistence.rst). They compose through
:mod:`._composition`; none knows about ceilings beyond the ``within`` test
the accountant hands them.
"""

import json
import uuid
from dataclasses import dataclass
from typing import Callable, Protocol

from ._composition import PrivacyProfile
from ._events import PrivacyEvent, event_from_dict, event_to_dict

__all__ = ["LedgerEntry", "LedgerStorage", "entry_from_row", "entry_to_row", "new_ledger_id"]


def new_ledger_id():
    """A fresh ledger identity (random, so two ledgers never share one by chance)."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend."""

    event: PrivacyEvent
    label: str
    timestamp: float
    #: ``"row"`` or ``"user"``: the neighbouring relation ``event`` holds for
    #: (after group-privacy conversion on a user-level ledger).
    privacy_unit: str = "row"


def entry_to_row(entry):
    """``(label, timestamp, event as JSON, privacy unit)``: an entry as plain values (SQLite rows, saved models)."""
    return (entry.label, entry.timestamp, json.dumps(event_to_dict(entry.event)), entry.privacy_unit)


def entry_from_row(row):
    """Inverse of :func:`entry_to_row`."""
    label, timestamp, event, unit = row
    return LedgerEntry(event=event_from_dict(json.loads(event)), label=label, timestamp=timestamp, privacy_unit=unit)


class LedgerStorage(Protocol):
    """Where a :class:`~sklearn_dpsco.accounting.BudgetAccountant` keeps its entries.

    Attributes
    ----------
    kind : str
        ``"memory"``, ``"sqlite"`` or ``"detached"`` (a read-only record).
    ceiling : tuple of float
        ``(epsilon, delta)``, as given to the accountant.
    unit : tuple
        ``(declared privacy unit or None, max_items_per_user or None)``.
    ledger_id : str
        The ledger's identity: kept when its entries move to a file, and
        when it is pickled and loaded elsewhere.
    """

    kind: str
    ceiling: tuple
    unit: tuple
    ledger_id: str

    def entries(self) -> tuple:
        """The :class:`LedgerEntry` records, oldest first."""

    def profile(self) -> PrivacyProfile:
        """The composition profile of every entry."""

    def append_if_within(self, entry: LedgerEntry, within: Callable[[PrivacyProfile], bool]) -> tuple:
        """Atomically append ``entry`` iff ``within(new profile)``; return ``(ok, profile)``."""

    def retract(self, entry: LedgerEntry) -> None:
        """Remove ``entry``, appended here by this process, as if it had never been recorded (the undo of a
        spend recorded in several ledgers that failed in another one)."""
