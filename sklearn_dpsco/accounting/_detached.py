"""A detached ledger: the read-only record a saved ledger becomes where it cannot be reached.

A :class:`~sklearn_dpsco.accounting.BudgetAccountant` pickled with a model
carries a snapshot of its entries, its ceiling, its privacy unit and its
identity (:mod:`._portable`). Where the ledger itself cannot be reopened —
the session that held it in memory or in a temporary file has ended, its
file is missing on this host or now holds another ledger — the unpickled
accountant keeps that snapshot as a :class:`DetachedLedger`: ``ledger``,
``total()`` and ``remaining()`` read it, and every ``check`` or ``spend``
raises :class:`DetachedLedgerError` before a fit touches data. A detached
copy never spends: spending there would start a second copy of the budget,
each allowing the full remaining ceiling. ``BudgetAccountant.attach(path)``
continues the ledger in a file (doc/persistence.rst).
"""

from ._entries import entry_from_row

__all__ = ["DetachedLedger", "DetachedLedgerError"]


class DetachedLedgerError(RuntimeError):
    """A spend (or a fit's budget check) through a detached, read-only ledger. Nothing was spent."""


class DetachedLedger:
    """A snapshot of a ledger's entries; a read-only :class:`._entries.LedgerStorage`.

    Parameters
    ----------
    ceiling, unit, ledger_id
        As the ledger had them.
    rows : tuple
        The entries as plain rows (:func:`._entries.entry_to_row`).
    profile : PrivacyProfile
        Their composition profile.
    reason : str
        Why the ledger could not be reopened here (shown by every refusal).
    source_path : str or None
        The file the ledger was kept in, if any.
    """

    kind = "detached"

    def __init__(self, ceiling, unit, ledger_id, rows, profile, reason, source_path=None):
        self.ceiling = tuple(ceiling)
        self.unit = tuple(unit)
        self.ledger_id = ledger_id
        self.rows = tuple(tuple(r) for r in rows)
        self._profile = profile
        self.reason = reason
        self.source_path = source_path

    def entries(self):
        return tuple(entry_from_row(row) for row in self.rows)

    def profile(self):
        return self._profile

    def error(self):
        return DetachedLedgerError(
            f"this ledger is a detached, read-only record ({len(self.rows)} entries, ledger {self.ledger_id}): "
            f"{self.reason} A detached copy never spends, or the budget would exist twice. To spend, continue it "
            "in a file with accountant.attach('ledger.sqlite') (once; later sessions open that file), or give "
            "the estimator another accountant. Nothing was spent."
        )

    def append_if_within(self, entry, within):
        raise self.error()
