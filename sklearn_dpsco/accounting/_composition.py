"""Composition of privacy events (doc/privacy/composition.rst).

Every event maps to a :class:`PrivacyProfile`, five numbers that each bound
one kind of privacy loss:

``pure_eps``      sum of epsilons of pure-DP parts (basic composition)
``pure_rho``      sum of ``eps_i^2 / 2``: the same parts read as zCDP
                  (eps-DP implies eps^2/2-zCDP, Bun and Steinke 2016 Prop 1.4)
``approx_eps``,   sums over (epsilon, delta)-DP parts (basic composition)
``approx_delta``
``gauss_mu2``     sum of squared Gaussian-DP mus of Gaussian parts: the
                  composition of Gaussians is exactly Gaussian with
                  ``mu^2 = sum mu_i^2`` (Dong, Roth, Su 2019)
``rho``           sum of rhos of other zCDP parts

Sequential composition adds profiles field by field; parallel composition
(disjoint data) takes the field-wise maximum, which every part satisfies;
self-composition multiplies. :func:`profile_epsilon` turns a profile into
the smallest epsilon it certifies at a total delta, taking the better of
two valid readings of the pure parts.
"""

import math
from dataclasses import dataclass
from functools import singledispatch

from ._calibration import gaussian_epsilon, zcdp_epsilon
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

__all__ = ["PrivacyProfile", "profile_of", "profile_epsilon", "epsilon_delta"]


@dataclass(frozen=True)
class PrivacyProfile:
    pure_eps: float = 0.0
    pure_rho: float = 0.0
    approx_eps: float = 0.0
    approx_delta: float = 0.0
    gauss_mu2: float = 0.0
    rho: float = 0.0

    # field by field, spelled out (the budget fill adds hundreds of profiles per fit; fields() was most of it)
    def __add__(self, other):
        return PrivacyProfile(
            self.pure_eps + other.pure_eps, self.pure_rho + other.pure_rho, self.approx_eps + other.approx_eps,
            self.approx_delta + other.approx_delta, self.gauss_mu2 + other.gauss_mu2, self.rho + other.rho,
        )

    def scaled(self, k):
        return PrivacyProfile(
            k * self.pure_eps, k * self.pure_rho, k * self.approx_eps, k * self.approx_delta, k * self.gauss_mu2,
            k * self.rho,
        )

    def maximum(self, other):
        return PrivacyProfile(
            max(self.pure_eps, other.pure_eps), max(self.pure_rho, other.pure_rho),
            max(self.approx_eps, other.approx_eps), max(self.approx_delta, other.approx_delta),
            max(self.gauss_mu2, other.gauss_mu2), max(self.rho, other.rho),
        )

    @property
    def needs_delta(self):
        """True when the profile has Gaussian or zCDP parts (epsilon depends on delta)."""
        return self.gauss_mu2 > 0 or self.rho > 0


@singledispatch
def profile_of(event):
    """The :class:`PrivacyProfile` of ``event``."""
    raise TypeError(f"no composition rule for {type(event).__name__}")


def _pure_parts(eps):
    """``(pure_eps, pure_rho)`` of an eps-DP part: eps-DP implies (eps^2 / 2)-zCDP (Bun and Steinke 2016)."""
    return eps, eps * eps / 2.0


def _pure(eps):
    return PrivacyProfile(*_pure_parts(eps))


@profile_of.register
def _(event: PureDPEvent):
    return _pure(event.epsilon)


@profile_of.register
def _(event: LaplaceEvent):
    return _pure(event.epsilon)


@profile_of.register
def _(event: ApproxDPEvent):
    if event.delta == 0:
        return _pure(event.epsilon)
    return PrivacyProfile(approx_eps=event.epsilon, approx_delta=event.delta)


@profile_of.register
def _(event: GaussianEvent):
    return PrivacyProfile(gauss_mu2=event.mu**2)


@profile_of.register
def _(event: ZCDPEvent):
    return PrivacyProfile(rho=event.rho)


@profile_of.register
def _(event: ComposedEvent):
    # total = total + profile_of(e) for each part, with the pure parts' sum done on six local floats:
    # the same additions in the same order as PrivacyProfile.__add__ of _pure(e.epsilon) (its other
    # fields are 0.0), without building two profiles per part (a fit's 40 column quartiles)
    a, b, c, d, g, r = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for e in event.events:
        if type(e) is PureDPEvent:
            eps, eps_rho = _pure_parts(e.epsilon)
            a, b, c, d, g, r = a + eps, b + eps_rho, c + 0.0, d + 0.0, g + 0.0, r + 0.0
        else:
            p = profile_of(e)
            a, b, c, d, g, r = (a + p.pure_eps, b + p.pure_rho, c + p.approx_eps, d + p.approx_delta,
                                g + p.gauss_mu2, r + p.rho)
    return PrivacyProfile(a, b, c, d, g, r)


@profile_of.register
def _(event: SelfComposedEvent):
    return profile_of(event.event).scaled(event.count)


@profile_of.register
def _(event: ParallelComposedEvent):
    total = PrivacyProfile()
    for e in event.events:
        total = total.maximum(profile_of(e))
    return total


def profile_epsilon(profile, delta):
    """Smallest epsilon certified for ``profile`` at total ``delta`` (``inf`` if none).

    ``delta`` must cover the (epsilon, delta) parts; what is left over,
    ``delta - approx_delta``, is spent converting the Gaussian / zCDP parts.
    """
    slack = delta - profile.approx_delta
    if slack < -1e-15 * max(1.0, delta):
        return math.inf
    slack = max(slack, 0.0)
    if not profile.needs_delta:
        return profile.pure_eps + profile.approx_eps
    if slack <= 0:
        return math.inf
    # Reading 1: pure parts composed basically, Gaussian/zCDP parts converted
    # at the leftover delta (exactly, when they are all Gaussian).
    if profile.rho == 0:
        curved = gaussian_epsilon(math.sqrt(profile.gauss_mu2), slack)
    else:
        curved = zcdp_epsilon(profile.rho + profile.gauss_mu2 / 2.0, slack)
    basic = profile.pure_eps + profile.approx_eps + curved
    # Reading 2: pure parts folded into zCDP as eps^2/2 each.
    folded = profile.approx_eps + zcdp_epsilon(profile.rho + profile.gauss_mu2 / 2.0 + profile.pure_rho, slack)
    return min(basic, folded)


def epsilon_delta(event, delta=None):
    """The (epsilon, delta) guarantee of ``event``.

    Parameters
    ----------
    event : PrivacyEvent
    delta : float, optional
        Total delta at which to report epsilon. Required when the event has
        Gaussian or zCDP parts; otherwise defaults to the event's own delta.

    Returns
    -------
    (epsilon, delta) : tuple of float
    """
    profile = profile_of(event)
    if delta is None:
        if profile.needs_delta:
            raise ValueError("this event has Gaussian or zCDP parts: pass the delta at which to report epsilon.")
        delta = profile.approx_delta
    return profile_epsilon(profile, delta), float(delta)
