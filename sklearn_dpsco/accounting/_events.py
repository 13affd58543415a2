"""Immutable records of what a private computation ran.

An event describes a mechanism (its noise and sensitivity, or the guarantee
it was proven to have) and nothing else: no data, no random generator. The
accountant composes events; calibration (target budget -> noise scale) lives
in :mod:`sklearn_dpsco.accounting._calibration`. The composition rules are
argued in doc/privacy/composition.rst.
"""

from dataclasses import dataclass, field, fields

from .._param_checks import check_delta, check_epsilon, check_nonnegative, check_positive

__all__ = [
    "PrivacyEvent",
    "PureDPEvent",
    "ApproxDPEvent",
    "ZCDPEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "ComposedEvent",
    "SelfComposedEvent",
    "ParallelComposedEvent",
    "event_to_dict",
    "event_from_dict",
]


class PrivacyEvent:
    """Base class of privacy events (frozen dataclasses)."""

    __slots__ = ()


@dataclass(frozen=True)
class PureDPEvent(PrivacyEvent):
    """A mechanism proven ``epsilon``-DP (pure)."""

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, allow_zero=True))


@dataclass(frozen=True)
class ApproxDPEvent(PrivacyEvent):
    """A mechanism proven ``(epsilon, delta)``-DP."""

    epsilon: float
    delta: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, allow_zero=True))
        object.__setattr__(self, "delta", check_delta(self.delta))


@dataclass(frozen=True)
class ZCDPEvent(PrivacyEvent):
    """A mechanism proven ``rho``-zCDP: Renyi divergence ``<= alpha * rho`` for all alpha > 1.

    FKT (Feldman, Koren, Talwar 2020) state "(alpha, alpha rho_FKT^2 / 2)-RDP";
    that is ``ZCDPEvent(rho=rho_FKT**2 / 2)``.
    """

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", check_nonnegative(self.rho, "rho"))


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """Gaussian noise ``N(0, sigma^2 I)`` added to a query of l2-sensitivity ``sensitivity``.

    Its exact privacy curve is that of ``mu``-Gaussian DP with
    ``mu = sensitivity / sigma`` (Dong, Roth, Su 2019); it is also
    ``mu^2 / 2``-zCDP.
    """

    sensitivity: float
    sigma: float

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "sigma", check_positive(self.sigma, "sigma"))

    @property
    def mu(self):
        """The Gaussian-DP parameter ``sensitivity / sigma``."""
        return self.sensitivity / self.sigma


@dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """Laplace-type noise of ``scale`` on a query of the given ``sensitivity``.

    ``norm="l1"``: coordinate Laplace, ``sensitivity`` is the l1-sensitivity.
    ``norm="l2"``: isotropic l2-Laplace (density ~ exp(-||b|| / scale)),
    ``sensitivity`` is the l2-sensitivity. Either way the mechanism is
    ``sensitivity / scale``-DP.
    """

    sensitivity: float
    scale: float
    norm: str = "l1"

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))
        if self.norm not in ("l1", "l2"):
            raise ValueError(f"norm must be 'l1' or 'l2', got {self.norm!r}.")

    @property
    def epsilon(self):
        return self.sensitivity / self.scale


def _check_events(events):
    events = tuple(events)
    for e in events:
        if not isinstance(e, PrivacyEvent):
            raise TypeError(f"expected PrivacyEvent instances, got {type(e).__name__}.")
    return events


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Events run one after another on the same data (adaptive sequential composition)."""

    events: tuple = field(default_factory=tuple)

    def __post_init__(self):
        object.__setattr__(self, "events", _check_events(self.events))


@dataclass(frozen=True)
class SelfComposedEvent(PrivacyEvent):
    """``event`` run ``count`` times on the same data."""

    event: PrivacyEvent
    count: int

    def __post_init__(self):
        _check_events([self.event])
        if isinstance(self.count, bool) or int(self.count) != self.count or self.count < 0:
            raise ValueError(f"count must be a non-negative integer, got {self.count!r}.")
        object.__setattr__(self, "count", int(self.count))


@dataclass(frozen=True)
class ParallelComposedEvent(PrivacyEvent):
    """Events run on *disjoint* parts of the data (parallel composition).

    Under replace-one neighbouring (rows or users), a neighbour changes one
    part only; earlier outputs may steer later parts (adaptive choice of
    centres, radii from public schedules). The whole is as private as the
    least private part (doc/privacy/composition.rst).
    """

    events: tuple = field(default_factory=tuple)

    def __post_init__(self):
        object.__setattr__(self, "events", _check_events(self.events))


_EVENT_TYPES = {
    cls.__name__: cls
    for cls in (
        PureDPEvent,
        ApproxDPEvent,
        ZCDPEvent,
        GaussianEvent,
        LaplaceEvent,
        ComposedEvent,
        SelfComposedEvent,
        ParallelComposedEvent,
    )
}


def event_to_dict(event):
    """A JSON-serialisable description of ``event`` (used by persistent ledgers)."""
    out = {"type": type(event).__name__}
    for f in fields(event):
        value = getattr(event, f.name)
        if isinstance(value, PrivacyEvent):
            value = event_to_dict(value)
        elif isinstance(value, tuple):
            value = [event_to_dict(v) for v in value]
        out[f.name] = value
    return out


def event_from_dict(data):
    """Inverse of :func:`event_to_dict`."""
    data = dict(data)
    cls = _EVENT_TYPES[data.pop("type")]
    kwargs = {}
    for name, value in data.items():
        if isinstance(value, dict):
            value = event_from_dict(value)
        elif isinstance(value, list):
            value = tuple(event_from_dict(v) for v in value)
        kwargs[name] = value
    return cls(**kwargs)
