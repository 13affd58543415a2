"""A ledger kept in a list of this process (the default storage of a :class:`~sklearn_dpsco.accounting.BudgetAccountant`).

It is guarded by a lock, so threads of one process share it safely. It
never forks a budget:

* it can *move* (:meth:`MemoryLedger.move_to`): under its lock, its entries
  are copied into a file storage, and every later call, from any thread
  still holding this object, goes to that storage. The accountant moves it
  to a private session file the first time it is pickled (for a worker
  process, or to save a model), so copies in other processes charge the
  same file (doc/persistence.rst);
* only the process that created it may spend into it or move it: a child
  that inherited it through ``fork`` would otherwise spend into a copy that
  nobody reads, with the full remaining budget. It raises instead.
"""

import os
import threading

from ._composition import PrivacyProfile, profile_of

__all__ = ["MemoryLedger"]

_FORKED = (
    "this in-memory ledger belongs to process {owner}; process {pid} holds a copy of it (inherited through "
    "fork, without pickling). Spending into that copy would fork the budget: the ceiling would hold twice. "
    "Send the estimator to worker processes by pickling (joblib does) or use a file ledger, "
    "BudgetAccountant(..., path='ledger.sqlite'). Nothing was spent."
)


class MemoryLedger:
    """Entries in a list, guarded by a lock (threads of one process); a :class:`._entries.LedgerStorage`."""

    kind = "memory"

    def __init__(self, epsilon, delta, unit=(None, None), ledger_id=None):
        self.ceiling = (epsilon, delta)
        self.unit = tuple(unit)  # (declared privacy unit or None, max_items_per_user or None)
        self.ledger_id = ledger_id
        self.owner_pid = os.getpid()
        self._entries = []
        self._profile = PrivacyProfile()
        self._lock = threading.RLock()
        self._moved_to = None  # the storage the entries moved to, once they have

    def _require_owner(self):
        if os.getpid() != self.owner_pid:
            raise RuntimeError(_FORKED.format(owner=self.owner_pid, pid=os.getpid()))

    @property
    def moved_to(self):
        """The storage this ledger's entries moved to, or None."""
        return self._moved_to

    def entries(self):
        with self._lock:
            if self._moved_to is not None:
                return self._moved_to.entries()
            return tuple(self._entries)

    def profile(self):
        with self._lock:
            if self._moved_to is not None:
                return self._moved_to.profile()
            return self._profile

    def append_if_within(self, entry, within):
        """Append ``entry`` iff ``within(new_profile)``; return (ok, profile)."""
        with self._lock:
            if self._moved_to is not None:
                return self._moved_to.append_if_within(entry, within)
            self._require_owner()
            new = self._profile + profile_of(entry.event)
            if not within(new):
                return False, self._profile
            self._entries.append(entry)
            self._profile = new
            return True, new

    def retract(self, entry):
        """Remove ``entry`` (appended by this process), as if it had never been recorded.

        For a spend recorded in several ledgers that failed in another one
        (:mod:`._nested`): the profile is recomposed from the remaining
        entries, in order, as their appends composed it.
        """
        with self._lock:
            if self._moved_to is not None:
                return self._moved_to.retract(entry)
            for i in range(len(self._entries) - 1, -1, -1):
                if self._entries[i] is entry:
                    del self._entries[i]
                    break
            else:
                raise ValueError("the entry to retract is not in this ledger.")
            profile = PrivacyProfile()
            for e in self._entries:
                profile = profile + profile_of(e.event)
            self._profile = profile

    def move_to(self, make_storage):
        """Move the entries to ``make_storage(entries, profile)`` atomically; return the new storage.

        No spend can land between the copy and the switch: both happen under
        the lock every spend takes. Moving twice returns the first storage.
        """
        with self._lock:
            if self._moved_to is None:
                self._require_owner()
                self._moved_to = make_storage(tuple(self._entries), self._profile)
            return self._moved_to

    def __reduce__(self):
        raise TypeError("a MemoryLedger is pickled through its BudgetAccountant, never on its own.")
