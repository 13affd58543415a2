"""Privacy units: what one neighbouring change is (doc/privacy/accounting.rst, "Privacy units").

* ``"row"``: replace one training row (its values; the row's owner, if the
  data has ``groups``, is a public attribute that does not change);
* ``"user"``: replace one whole user (all rows sharing a ``groups`` value),
  the number of users public.

A row-level neighbour is a user-level neighbour (the one changed row is all
that changes about its user), so a user-level guarantee implies the
row-level guarantee with the same parameters. The converse needs group
privacy: a row-level mechanism run on data where every user has at most
``m`` rows is user-level private with the parameters of
:func:`group_privacy_event`. Every private estimator exposes its unit as
``privacy_unit``; data-independent transformers have none (unit-neutral).
"""

import math
from functools import singledispatch

from ._events import (
    ApproxDPEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PureDPEvent,
    SelfComposedEvent,
    ZCDPEvent,
)

__all__ = [
    "PRIVACY_UNITS",
    "PrivacyUnitError",
    "admit_spend",
    "check_privacy_unit",
    "group_privacy_event",
    "privacy_unit_of",
]

PRIVACY_UNITS = ("row", "user")


class PrivacyUnitError(ValueError):
    """A spend, pipeline or search would mix privacy units unsoundly. Nothing was spent."""


def check_privacy_unit(unit, what="privacy_unit", allow_none=False):
    """Return ``unit`` if it is ``"row"`` or ``"user"`` (or None when allowed), else raise."""
    if unit is None and allow_none:
        return None
    if not isinstance(unit, str) or unit not in PRIVACY_UNITS:
        allowed = "'row', 'user'" + (" or None" if allow_none else "")
        raise ValueError(f"{what} must be {allowed}, got {unit!r}.")
    return unit


def privacy_unit_of(estimator):
    """The privacy unit of a private estimator.

    Its ``privacy_unit`` attribute (a read-only property on the library's
    estimators, a parameter of :class:`~sklearn_dpsco.preprocessing.DPStandardScaler`);
    ``"row"`` for a private estimator that does not declare one (the weaker
    unit: never over-claims); None for an object with ``privacy_unit = None``
    (data-independent, unit-neutral).
    """
    unit = getattr(estimator, "privacy_unit", "row")
    return check_privacy_unit(unit, f"{type(estimator).__name__}.privacy_unit", allow_none=True)


# -- group privacy --------------------------------------------------------------------------
@singledispatch
def group_privacy_event(event, m):
    """The event of ``event`` for neighbours differing in ``m`` rows (group privacy).

    Sensitivity-based events scale their sensitivity by ``m`` (triangle
    inequality: m replaced rows move a query by at most m times one row's
    bound), so Laplace / Gaussian conversions are exact. Otherwise: pure
    ``m eps``; zCDP ``m^2 rho`` (Bun and Steinke 2016, Prop. 1.9);
    approximate ``(m eps, m e^{(m-1) eps} delta)`` (Dwork and Roth 2014,
    Lemma 2.2 generalised). Compositions convert part by part; a parallel
    composition stays parallel (m rows may spread over several parts, but
    the changed parts compose to at most the converted maximum: the sums
    ``sum k_i eps_i``, ``sum k_i^2 mu_i^2`` with ``sum k_i <= m`` are bounded
    by ``m max eps_i``, ``m^2 max mu_i^2``).
    """
    raise TypeError(f"no group-privacy rule for {type(event).__name__}")


@group_privacy_event.register
def _(event: PureDPEvent, m):
    return PureDPEvent(m * event.epsilon)


@group_privacy_event.register
def _(event: LaplaceEvent, m):
    return LaplaceEvent(m * event.sensitivity, event.scale, event.norm)


@group_privacy_event.register
def _(event: GaussianEvent, m):
    return GaussianEvent(m * event.sensitivity, event.sigma)


@group_privacy_event.register
def _(event: ZCDPEvent, m):
    return ZCDPEvent(m * m * event.rho)


@group_privacy_event.register
def _(event: ApproxDPEvent, m):
    if event.delta == 0:
        return ApproxDPEvent(m * event.epsilon, 0.0)
    delta = m * math.exp(min((m - 1) * event.epsilon, 700.0)) * event.delta
    if not delta < 1.0:
        raise PrivacyUnitError(
            f"group privacy over m={m} rows turns {event} into a vacuous guarantee (delta >= 1); it cannot be "
            "charged to a user-level ledger. Use a user-level estimator. Nothing was spent."
        )
    return ApproxDPEvent(m * event.epsilon, delta)


@group_privacy_event.register
def _(event: ComposedEvent, m):
    return ComposedEvent(tuple(group_privacy_event(e, m) for e in event.events))


@group_privacy_event.register
def _(event: SelfComposedEvent, m):
    return SelfComposedEvent(group_privacy_event(event.event, m), event.count)


@group_privacy_event.register
def _(event: ParallelComposedEvent, m):
    return ParallelComposedEvent(tuple(group_privacy_event(e, m) for e in event.events))


# -- the ledger's rule ----------------------------------------------------------------------
def admit_spend(ledger_unit, max_items_per_user, event, unit):
    """What a ledger of ``ledger_unit`` records for a spend of ``event`` at ``unit``.

    Returns ``(event, unit, note)``: the event to compose (converted by group
    privacy when needed), the unit stored in the entry, and a label note.

    * undeclared ledger (None): every spend as it is; the total holds for
      the weakest unit among the entries (``BudgetAccountant.unit_of_total``);
    * ``"row"`` ledger: row and user spends as they are (user-level implies
      row-level);
    * ``"user"`` ledger: user spends as they are; a row spend only with a
      declared ``max_items_per_user`` m, converted by group privacy, else
      :class:`PrivacyUnitError`.
    """
    unit = check_privacy_unit(unit, "the spend's privacy_unit")
    if ledger_unit is None or ledger_unit == "row" or unit == ledger_unit:
        return event, unit, ""
    # a user-level ledger and a row-level spend
    if max_items_per_user is None:
        raise PrivacyUnitError(
            "this ledger is declared user-level (privacy_unit='user') and the spend is row-level: a row-level "
            "guarantee says nothing about a user with several rows. Use a user-level estimator (e.g. "
            "UserLevelDPLogistic, DPStandardScaler(privacy_unit='user')), or create the ledger with "
            "max_items_per_user=m to convert row-level spends by group privacy (you then promise that every "
            "user has at most m rows in the data of every row-level fit charged to it, and that a user's change "
            "keeps its number of rows and their positions). Nothing was spent."
        )
    m = int(max_items_per_user)
    return group_privacy_event(event, m), "user", f" [row-level, group privacy m={m}, rows in place]"
