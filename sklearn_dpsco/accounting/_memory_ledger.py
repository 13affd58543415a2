"""A ledger kept in a list of this process (the default storage of a :class:`~sklearn_dpsco.accounting.BudgetAccountant`).

It is guarded by a lock, so threads of one process share it safely. It
cannot follow a fit into another process: pickling it raises with the
remedy (a process-safe SQLite ledger, :mod:`._sqlite_ledger`), instead of
letting a worker spend into a copy that is then thrown away.
"""

import threading

from ._composition import PrivacyProfile, profile_of

__all__ = ["MemoryLedger"]


class MemoryLedger:
    """Entries in a list, guarded by a lock (threads of one process); a :class:`._entries.LedgerStorage`."""

    kind = "memory"

    def __init__(self, epsilon, delta, unit=(None, None)):
        self.ceiling = (epsilon, delta)
        self.unit = tuple(unit)  # (declared privacy unit or None, max_items_per_user or None)
        self._entries = []
        self._profile = PrivacyProfile()
        self._lock = threading.RLock()

    def entries(self):
        with self._lock:
            return tuple(self._entries)

    def profile(self):
        with self._lock:
            return self._profile

    def append_if_within(self, entry, within):
        """Append ``entry`` iff ``within(new_profile)``; return (ok, profile)."""
        with self._lock:
            new = self._profile + profile_of(entry.event)
            if not within(new):
                return False, self._profile
            self._entries.append(entry)
            self._profile = new
            return True, new

    def __reduce__(self):
        raise TypeError(
            "An in-memory BudgetAccountant cannot follow a fit into another process: "
            "spends made there would be lost. Use a process-safe ledger, e.g. "
            "BudgetAccountant(epsilon, delta, path='ledger.sqlite'), or a thread-based "
            "joblib backend (joblib.parallel_backend('threading'))."
        )
