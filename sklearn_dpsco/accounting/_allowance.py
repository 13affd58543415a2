"""Per-fit allowances: a cap, stated as a privacy event, in front of a ledger.

A meta-estimator that splits one budget between fits it runs (a private
pipeline's steps, a private search's candidate fits) proves its total from
the *allowance* of each fit, and must make sure no fit consumes more. A
:class:`FitAllowance` is passed to the fit as its ``accountant``: the
estimator's own template calls ``check(event)`` before touching data and
``spend(event)`` after success, and the allowance refuses any event whose
composition profile is not dominated, field by field, by the allowance's
(doc/privacy/composition.rst: every reading of a profile is monotone in each
field, so dominance implies every guarantee of the allowance), unless the
allowance is one kind of guarantee that the event's reading meets (a zCDP
cap read in zCDP, an ``(epsilon, delta)`` cap read at its delta:
:func:`dominates`). Accepted spends are forwarded to the ``parent`` ledger, if any.

An allowance is not a ledger of its own: with no parent it only enforces
(the meta-estimator charged its whole budget up front).
"""

import math
import threading
import time
from dataclasses import asdict, fields

from ._accountant import BudgetAccountant, BudgetExceededError
from ._composition import PrivacyProfile, epsilon_delta, profile_epsilon, profile_of
from ._describe import describe_event
from ._entries import LedgerEntry
from ._events import PrivacyEvent, event_from_dict, event_to_dict
from ._units import check_privacy_unit

__all__ = ["FitAllowance", "dominates", "usage"]

# Relative slack of the dominance test: k Gaussian parts of mu / sqrt(k) add up
# to mu^2 up to rounding (the same slack as the ledger's ceiling test).
_REL_TOL = 1e-9


def _le(a, b):
    return a <= b * (1 + _REL_TOL) + 1e-300


def usage_fits(u):
    """True when an allowance usage ``u`` (``FitAllowance.usage``) is what its check accepts: at most 1 up
    to the same relative slack. Why: a pure plan whose parts sum an ulp above the allowance (usage
    1.0000000000000002) fits; testing ``u <= 1.0`` exactly sent such plans into a bisection that left
    2^-10 of epsilon (or a 0.999 step) unused under DPPipeline / DPGridSearchCV."""
    return u <= 1.0 + _REL_TOL


def _approx_only(cap):
    """True for the profile of an ``ApproxDPEvent(eps, delta)`` cap with ``delta > 0`` (a ``"basic"`` share)."""
    return cap.approx_eps > 0 and cap.approx_delta > 0 and cap.pure_eps == cap.pure_rho == cap.rho == cap.gauss_mu2 == 0


def dominates(cap, profile):
    """True when every guarantee of the ``cap`` profile also holds for ``profile``.

    Field-wise ``profile <= cap`` suffices. A cap that is pure zCDP (only its
    ``rho`` field is non-zero) also accepts Gaussian and pure parts through
    their zCDP readings: a mu-GDP mechanism is ``mu^2/2``-zCDP and an eps-DP
    one ``eps^2/2``-zCDP (Bun and Steinke 2016), so the spend is
    ``rho + gauss_mu2/2 + pure_rho``-zCDP and every reading of the cap bounds it.
    A cap that is one ``(eps, delta)`` pair (``ApproxDPEvent``, a ``"basic"``
    share) promises only that: it accepts any profile certified
    ``(eps, delta)``-DP, ``profile_epsilon(profile, delta) <= eps`` (its pure
    parts composed basically with its curve converted at the delta left over,
    or folded into zCDP: doc/privacy/composition.rst), which is what the
    meta-estimator composes for it.
    """
    if all(_le(getattr(profile, f.name), getattr(cap, f.name)) for f in fields(PrivacyProfile)):
        return True
    zcdp_only = cap.rho > 0 and cap.pure_eps == cap.pure_rho == cap.approx_eps == cap.approx_delta == cap.gauss_mu2 == 0
    if zcdp_only and profile.approx_eps == 0 and profile.approx_delta == 0:
        return _le(profile.rho + profile.gauss_mu2 / 2.0 + profile.pure_rho, cap.rho)
    if _approx_only(cap):
        return _le(profile_epsilon(profile, cap.approx_delta), cap.approx_eps)
    return False


def usage(cap, profile):
    """How much of ``cap`` the ``profile`` uses: ``<= 1`` exactly when :func:`dominates` accepts it (up to its
    relative slack), ``inf`` when no amount of the cap's kind covers it (a pure part under a Gaussian cap).

    The larger field ratio ``profile / cap`` of the field-wise test, or for a pure zCDP cap the smaller of
    that and the zCDP reading ``(rho + gauss_mu2 / 2 + pure_rho) / cap.rho``, or for an ``(eps, delta)`` cap
    the smaller of that and ``profile_epsilon(profile, delta) / eps``. Monotone in every field, so a
    plan that grows with its budget crosses 1 once: what a fit's budget fill needs to stay under an allowance.
    """
    ratios = []
    for f in fields(PrivacyProfile):
        value, limit = getattr(profile, f.name), getattr(cap, f.name)
        if value > 0:
            ratios.append(value / limit if limit > 0 else math.inf)
    fieldwise = max(ratios, default=0.0)
    zcdp_only = cap.rho > 0 and cap.pure_eps == cap.pure_rho == cap.approx_eps == cap.approx_delta == cap.gauss_mu2 == 0
    if zcdp_only and profile.approx_eps == 0 and profile.approx_delta == 0:
        return min(fieldwise, (profile.rho + profile.gauss_mu2 / 2.0 + profile.pure_rho) / cap.rho)
    if _approx_only(cap):
        return min(fieldwise, profile_epsilon(profile, cap.approx_delta) / cap.approx_eps)
    return fieldwise


class FitAllowance(BudgetAccountant):
    """A cap on what one fit may consume, optionally forwarding to a ledger.

    Parameters
    ----------
    allowance : PrivacyEvent
        The most the fit may consume, as an event (e.g. ``PureDPEvent(0.2)``,
        or ``GaussianEvent(mu, 1.0)`` for a Gaussian-DP allowance of ``mu``).
    parent : BudgetAccountant, default=None
        Ledger to which accepted spends are forwarded (with ``label_prefix``).
        None: enforce only.
    label_prefix : str, default=""
    delta : float, default=0.0
        The delta at which ``epsilon`` (for display) is read from the allowance.
    """

    def __init__(self, allowance, parent=None, label_prefix="", delta=0.0):
        if not isinstance(allowance, PrivacyEvent):
            raise TypeError(f"allowance must be a PrivacyEvent, got {type(allowance).__name__}.")
        if parent is not None and not isinstance(parent, BudgetAccountant):
            raise TypeError(f"parent must be a BudgetAccountant or None, got {type(parent).__name__}.")
        self.allowance = allowance
        self.parent = parent
        self.label_prefix = str(label_prefix)
        self._cap = profile_of(allowance)
        self.delta = float(delta)
        self.epsilon = profile_epsilon(self._cap, self.delta) if (self.delta > 0 or not self._cap.needs_delta) else math.inf
        self._spent = PrivacyProfile()
        self._base = PrivacyProfile()  # what was spent before this object (restored from a pickle)
        self._entries = []
        self._added = []  # the profile each entry added, for retraction
        self._lock = threading.RLock()
        # the ledgers (keys of accounting/_nested.py) a meta-estimator charged for every spend through this
        # allowance: enclosing budget blocks among them are not charged again
        self._accounted = frozenset()

    # -- pickling: the cap and what was spent so far travel; the parent pickles itself
    def __reduce__(self):
        return (_restore, (self.allowance, self.parent, self.label_prefix, self.delta, self._spent, self._accounted))

    # skops (state-based savers): plain values, and the parent's own state
    def __getstate__(self):
        return {
            "allowance": event_to_dict(self.allowance),
            "parent": self.parent,
            "label_prefix": self.label_prefix,
            "delta": self.delta,
            "spent": asdict(self.spent_profile),
            "accounted": sorted(self._accounted),
        }

    def __setstate__(self, state):
        self.__init__(event_from_dict(state["allowance"]), state["parent"], state["label_prefix"], state["delta"])
        self._spent = self._base = PrivacyProfile(**state["spent"])
        self._accounted = frozenset(state.get("accounted", ()))

    @property
    def is_detached(self):
        """True when the parent ledger is a detached record (the allowance then refuses every spend)."""
        return self.parent is not None and self.parent.is_detached

    @property
    def ledger_id(self):
        return None if self.parent is None else self.parent.ledger_id

    @property
    def ledger(self):
        with self._lock:
            return tuple(self._entries)

    @property
    def path(self):
        return None if self.parent is None else self.parent.path

    @property
    def privacy_unit(self):
        """The parent's declared unit (None without a parent: the allowance only enforces its cap)."""
        return None if self.parent is None else self.parent.privacy_unit

    @property
    def max_items_per_user(self):
        return None if self.parent is None else self.parent.max_items_per_user

    @property
    def spent_profile(self):
        """The composition profile of the spends accepted so far."""
        with self._lock:
            return self._spent

    def total(self, delta=None):
        delta = self.delta if delta is None else delta
        return profile_epsilon(self._spent, delta), delta

    def remaining(self):
        return max(self.epsilon - self.total()[0], 0.0), self.delta

    def covers(self, epsilon, delta):
        """True when the cap, read at ``delta``, allows at least ``epsilon``: the fit was given its share of
        this allowance (a meta-estimator's ``(epsilon_i, delta)`` is the cap's reading), so planning within
        the cap is what was meant; an allowance below a fit's own epsilon stays a plain refusal."""
        return epsilon_delta(self.allowance, delta=delta if delta > 0 else None)[0] >= epsilon * (1 - _REL_TOL)

    def usage(self, event):
        """:func:`usage` of the cap by what was spent so far plus ``event`` (``<= 1``: :meth:`check` accepts it).

        Public arithmetic on events: a fit's budget fill reads it to plan within the allowance."""
        with self._lock:
            return usage(self._cap, self._spent + profile_of(event))

    def _refuse(self, event):
        if self._entries or self._base != PrivacyProfile():
            # a second fit through a used allowance: an estimator taken out of a search or pipeline (its
            # best_estimator_, a fitted step) keeps the one-fit allowance it was configured with

            return BudgetExceededError(
                f"this estimator's accountant is the one-fit allowance ({describe_event(self.allowance)}, epsilon="
                f"{self.epsilon:.4g}, delta={self.delta:.3g}) that a "
                "private search or pipeline gave it, already used by the fit it was configured for, so it cannot "
                "fit again. To fit it again as a new release, give it a ledger of its own: "
                "est.set_params(accountant=None) (or accountant=<your BudgetAccountant>, with the epsilon and delta "
                "you mean to spend). Nothing was spent.",
                requested=event,
                ceiling=(self.epsilon, self.delta),
            )
        return BudgetExceededError(
            f"this fit's allowance ({describe_event(self.allowance)}, epsilon={self.epsilon:.4g}, "
            f"delta={self.delta:.3g}) does not hold its event ({describe_event(event)}): a meta-estimator composes "
            "its fits from their allowances, so no fit may consume more, or a different kind of privacy loss (a "
            "pure-DP part under a zCDP share counts as rho = epsilon^2 / 2). Nothing was spent.",
            requested=event,
            ceiling=(self.epsilon, self.delta),
        )

    def check(self, event, privacy_unit="row"):
        # the cap bounds the event as the fit states it; the parent applies its unit rule
        check_privacy_unit(privacy_unit, "the spend's privacy_unit")
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"expected a PrivacyEvent, got {type(event).__name__}.")
        with self._lock:
            if not dominates(self._cap, self._spent + profile_of(event)):
                raise self._refuse(event)
        if self.parent is not None:
            self.parent.check(event, privacy_unit=privacy_unit)

    def spend(self, event, label="", privacy_unit="row"):
        check_privacy_unit(privacy_unit, "the spend's privacy_unit")
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"expected a PrivacyEvent, got {type(event).__name__}.")
        label = f"{self.label_prefix}{label}"
        with self._lock:
            new = self._spent + profile_of(event)
            if not dominates(self._cap, new):
                raise self._refuse(event)
            entry = None
            if self.parent is not None:
                entry = self.parent.spend(event, label=label, privacy_unit=privacy_unit)
            if entry is None:
                entry = LedgerEntry(event=event, label=label, timestamp=time.time(), privacy_unit=privacy_unit)
            self._spent = new
            self._entries.append(entry)
            self._added.append(profile_of(event))
            return entry

    def _retract(self, entry):
        """Undo :meth:`spend` of ``entry``, here and in the parent (accounting/_nested.py)."""
        with self._lock:
            for i in range(len(self._entries) - 1, -1, -1):
                if self._entries[i] is entry:
                    del self._entries[i], self._added[i]
                    break
            else:
                raise ValueError("the entry to retract was not spent through this allowance.")
            spent = self._base
            for added in self._added:
                spent = spent + added
            self._spent = spent
            if self.parent is not None:
                self.parent._retract(entry)

    def __repr__(self):
        return f"FitAllowance({self.allowance!r}, parent={self.parent!r})"


def _restore(allowance, parent, label_prefix, delta, spent, accounted=frozenset()):
    out = FitAllowance(allowance, parent, label_prefix, delta)
    out._spent = out._base = spent
    out._accounted = frozenset(accounted)
    return out
