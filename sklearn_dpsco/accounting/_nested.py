"""Nested budget blocks: one spend checked against every ledger in force, recorded in each of them or in none.

A budget block is a promise about everything run inside it, so a fit inside
nested blocks charges every enclosing block, not only the innermost one
(doc/privacy/accounting.rst, "Budget blocks"); an explicit ``accountant=``
parameter inside blocks is charged together with them. :func:`combine` takes
the ledgers in force, innermost first, and returns what the fit charges:

* the one ledger itself when only one distinct ledger is in force (no
  block, one block, or the same ledger open several times): single-block
  behaviour is unchanged;
* else a :class:`NestedCharge` over the distinct ledgers. Its ``check``
  asks every ledger (any refusal refuses, before data is read); its
  ``spend`` checks every ledger again, then records the spend in each,
  each applying its own privacy-unit rule (``admit_spend``); if recording
  fails in one (a concurrent spend took the room, an I/O error), the entries
  already recorded are retracted, so the spend is recorded everywhere or
  nowhere. Between a record and its retraction another fit may be refused by
  that ledger: a conservative refusal, never an overshoot.

Distinct ledgers are told apart by *keys* (:func:`ledger_keys`): a
:class:`BudgetAccountant` records into its ``ledger_id`` (two objects over
one file are one ledger); a :class:`FitAllowance` is its own cap plus the
ledgers of its parent. A target whose keys are all charged already is
skipped; an allowance block over a ledger charged by another target replaces
that target (its cap is enforced and the ledger is charged once).

A meta-estimator that charged its whole budget up front (a private search)
or that runs fits on synthetic rows (a pipeline's probes) marks the
accountants of those fits as *accounted* for the ledgers it charged
(:func:`mark_accounted`): the enclosing blocks are then not charged again.
"""

import threading

from ._accountant import BudgetAccountant
from ._allowance import FitAllowance

__all__ = ["EVERY_LEDGER", "NestedCharge", "combine", "ledger_keys", "mark_accounted"]

#: :func:`mark_accounted` with this: no enclosing block is charged (fits on synthetic rows).
EVERY_LEDGER = "*"


def _own_key(acc):
    if isinstance(acc, FitAllowance):
        return f"cap:{id(acc)}"
    return f"ledger:{acc.ledger_id}"


def ledger_keys(acc):
    """The ledgers (and allowance caps) a spend through ``acc`` is recorded in or checked by."""
    if isinstance(acc, NestedCharge):
        return frozenset().union(*(ledger_keys(t) for t in acc.targets))
    if isinstance(acc, FitAllowance):
        keys = {_own_key(acc)}
        if acc.parent is not None:
            keys |= ledger_keys(acc.parent)
        return frozenset(keys)
    return frozenset({_own_key(acc)})


def _accounted(acc):
    """The ledgers a meta-estimator charged already for every spend through ``acc``."""
    if isinstance(acc, NestedCharge):
        return frozenset().union(*(_accounted(t) for t in acc.targets))
    keys = frozenset(getattr(acc, "_accounted", ()) or ())
    if isinstance(acc, FitAllowance) and acc.parent is not None:
        keys |= _accounted(acc.parent)
    return keys


def mark_accounted(acc, keys):
    """Declare that every spend through ``acc`` is accounted for in the ledgers ``keys`` already.

    ``keys`` is :func:`ledger_keys` of what the meta-estimator charged, or
    :data:`EVERY_LEDGER`. Returns ``acc``.
    """
    acc._accounted = frozenset({EVERY_LEDGER} if keys == EVERY_LEDGER else keys)
    return acc


def _flatten(targets):
    for t in targets:
        if isinstance(t, NestedCharge):
            yield from t.targets
        else:
            yield t


def combine(targets):
    """What a fit charges given the ledgers in force, innermost (or the explicit parameter) first.

    Returns the single ledger when one distinct ledger is in force, else a
    :class:`NestedCharge`.
    """
    targets = list(_flatten(targets))
    if len(targets) == 1:
        return targets[0]
    selected, covered = [], set()
    for t in targets:
        if any(t is s for s in selected):
            continue
        if EVERY_LEDGER in covered:
            break
        keys = ledger_keys(t)
        if selected and keys <= covered:
            continue  # already charged (the same ledger open twice, or a meta-estimator charged it)
        overlap = keys & covered
        if overlap:
            # an allowance block over a ledger charged by a plain target: the allowance takes its place
            replaced = [s for s in selected if type(s) is BudgetAccountant and ledger_keys(s) <= overlap]
            rest = frozenset().union(*(ledger_keys(s) | _accounted(s) for s in selected
                                       if not any(s is r for r in replaced)))
            if not isinstance(t, FitAllowance) or keys & rest:
                raise RuntimeError(
                    f"the budget blocks in force charge one ledger through two routes ({t!r} and an enclosing "
                    "or explicit accountant); a fit here cannot be recorded once in each. Open each ledger in "
                    "one block only. Nothing was spent."
                )
            selected = [s for s in selected if not any(s is r for r in replaced)]
            covered = set(rest)
        selected.append(t)
        covered |= keys | _accounted(t)
    if len(selected) == 1:
        return selected[0]
    return NestedCharge(selected)


class NestedCharge(BudgetAccountant):
    """The ledgers one fit charges inside nested budget blocks: checked against all, recorded in each, or in none.

    Made by :func:`combine` (through :func:`~sklearn_dpsco.accounting.get_accountant`),
    never by hand. Reading it reads its first (innermost, or explicit) ledger;
    :meth:`remaining` is the smallest headroom among its ledgers.

    Parameters
    ----------
    targets : sequence of BudgetAccountant
        The distinct ledgers, innermost (or explicit) first.
    """

    def __init__(self, targets):
        self.targets = tuple(targets)
        if len(self.targets) < 2:
            raise ValueError("a NestedCharge charges at least two ledgers.")
        first = self.targets[0]
        self.epsilon, self.delta = first.epsilon, first.delta
        self._recorded = {}  # id(entry returned) -> [(target, entry), ...], for retraction by a parent
        self._lock = threading.Lock()

    def __reduce__(self):
        return (NestedCharge, (self.targets,))

    def __getstate__(self):
        return {"targets": list(self.targets)}

    def __setstate__(self, state):
        self.__init__(state["targets"])

    def _portable_state(self, snapshot=True):
        raise TypeError("nested budget blocks travel as their ledgers, never as one portable ledger.")

    def attach(self, path):
        raise TypeError("attach one ledger of the nested blocks (NestedCharge.targets), not all of them at once.")

    # -- reading: the first ledger; the headroom of all
    @property
    def _store(self):
        return self.targets[0]._store

    @property
    def ledger(self):
        return self.targets[0].ledger

    @property
    def path(self):
        return self.targets[0].path

    @property
    def ledger_id(self):
        return self.targets[0].ledger_id

    @property
    def is_detached(self):
        return any(t.is_detached for t in self.targets)

    @property
    def privacy_unit(self):
        return self.targets[0].privacy_unit

    @property
    def max_items_per_user(self):
        return self.targets[0].max_items_per_user

    @property
    def unit_of_total(self):
        return self.targets[0].unit_of_total

    def total(self, delta=None):
        return self.targets[0].total(delta)

    def remaining(self):
        left = [t.remaining() for t in self.targets]
        return min(e for e, _ in left), min(d for _, d in left)

    # -- spending: all or nothing
    def check(self, event, privacy_unit="row"):
        """Raise unless ``event`` fits every ledger now (each applying its unit rule); nothing is recorded."""
        for t in self.targets:
            t.check(event, privacy_unit=privacy_unit)

    def spend(self, event, label="", privacy_unit="row"):
        """Record ``event`` in every ledger, or in none; return the first ledger's entry.

        Each ledger applies its own unit rule and its own atomic ceiling test.
        If one refuses (or fails), the entries already recorded in the others
        are retracted and the error is raised.
        """
        self.check(event, privacy_unit=privacy_unit)
        done = []
        try:
            for t in self.targets:
                done.append((t, t.spend(event, label=label, privacy_unit=privacy_unit)))
        except BaseException:
            for t, entry in reversed(done):
                t._retract(entry)
            raise
        entry = done[0][1]
        with self._lock:
            self._recorded[id(entry)] = done
        return entry

    def _retract(self, entry):
        with self._lock:
            done = self._recorded.pop(id(entry))
        for t, e in reversed(done):
            t._retract(e)

    def __repr__(self):
        return f"NestedCharge({', '.join(repr(t) for t in self.targets)})"
