"""Noise mechanisms (doc/privacy/mechanisms.rst).

Each mechanism is a small frozen object built from *public* inputs
(sensitivity, budget, dimension). It knows its noise scale, the privacy
event it consumes, and how to draw noise. Releases are vectorised
(``size`` independent draws at once) so the statistical audits can draw
1e5 samples in milliseconds.

Noise is drawn from a :class:`numpy.random.Generator` made by
:func:`sklearn_dpsco._rng.check_random_state` (OS entropy by default).
The ``noise`` argument selects the sampling path: ``"float"`` is the
textbook floating-point sampler; the discretised ``"secure"`` path of
doc/privacy/secure_noise.rst plugs in here.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ._param_checks import check_delta, check_dimension, check_epsilon, check_nonnegative
from .accounting import GaussianEvent, LaplaceEvent, PureDPEvent
from .accounting._calibration import gaussian_sigma_analytic, gaussian_sigma_classic, laplace_scale

__all__ = [
    "LaplaceMechanism",
    "L2LaplaceMechanism",
    "GaussianMechanism",
    "DiscreteLaplaceMechanism",
    "TruncatedDiscreteLaplace",
    "laplace_noise",
    "l2_laplace_noise",
    "gaussian_noise",
    "discrete_laplace_noise",
]

_NOISE_PATHS = ("float",)


def _check_noise(noise):
    if noise not in _NOISE_PATHS:
        raise ValueError(f"noise must be one of {_NOISE_PATHS}, got {noise!r}.")
    return noise


def _shape(size, dimension):
    if size is None:
        return (dimension,)
    return (size, dimension)


# --------------------------------------------------------------------------- samplers
def laplace_noise(rng, scale, size):
    """I.i.d. Laplace(0, ``scale``) coordinates (ALGORITHMS.md P1)."""
    return rng.laplace(0.0, scale, size=size)


def l2_laplace_noise(rng, scale, dimension, size=None):
    """Isotropic l2-Laplace: density proportional to ``exp(-||b|| / scale)`` in R^d.

    The norm of such a vector is Gamma(d, scale) and its direction uniform on
    the sphere, independently (ALGORITHMS.md P2): the density in polar form
    is ``r^(d-1) exp(-r / scale)`` times the uniform surface measure.
    """
    shape = _shape(size, dimension)
    direction = rng.standard_normal(shape)
    norms = np.linalg.norm(direction, axis=-1, keepdims=True)
    # A zero Gaussian vector has probability 0; guard the division anyway.
    norms[norms == 0] = 1.0
    radius = rng.gamma(shape=dimension, scale=scale, size=shape[:-1] + (1,))
    return radius * direction / norms


def gaussian_noise(rng, sigma, size):
    """I.i.d. N(0, ``sigma``^2) coordinates."""
    return rng.normal(0.0, sigma, size=size)


def discrete_laplace_noise(rng, t, size):
    """Integers with P(k) proportional to ``exp(-|k| / t)``.

    Drawn as the difference of two i.i.d. geometric variables with success
    probability ``1 - exp(-1/t)`` (Inusah and Kozubowski 2006).
    """
    p = -math.expm1(-1.0 / t)
    return rng.geometric(p, size=size) - rng.geometric(p, size=size)


# --------------------------------------------------------------------------- mechanisms
@dataclass(frozen=True)
class LaplaceMechanism:
    """Coordinate Laplace noise for a query of l1-sensitivity ``sensitivity``.

    ``epsilon``-DP with scale ``b = sensitivity / epsilon`` (ALGORITHMS.md P1).
    An l2-sensitivity ``D2`` in dimension d gives ``sensitivity = sqrt(d) D2``.

    Parameters
    ----------
    sensitivity : float
        l1-sensitivity of the query (public, data-independent).
    epsilon : float
    dimension : int, default=1
    noise : {"float"}, default="float"
    """

    sensitivity: float
    epsilon: float
    dimension: int = 1
    noise: str = "float"
    scale: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        _check_noise(self.noise)
        # why: density ratio of Laplace under an l1 shift v is <= exp(||v||_1 / b).
        object.__setattr__(self, "scale", laplace_scale(self.sensitivity, self.epsilon))

    @property
    def event(self):
        return LaplaceEvent(self.sensitivity, self.scale, "l1") if self.scale > 0 else PureDPEvent(0.0)

    def sample(self, rng, size=None):
        """Noise vectors: shape ``(dimension,)`` or ``(size, dimension)``."""
        return laplace_noise(rng, self.scale, _shape(size, self.dimension))

    def release(self, value, rng, size=None):
        """``value + noise``; with ``size``, that many independent releases stacked."""
        return np.asarray(value, dtype=float) + self.sample(rng, size)


@dataclass(frozen=True)
class L2LaplaceMechanism:
    """Isotropic l2-Laplace noise for a query of l2-sensitivity ``sensitivity``.

    ``epsilon``-DP with ``scale = sensitivity / epsilon``: the density
    ``exp(-||b|| / scale)`` changes by at most ``exp(||v|| / scale)`` under a
    shift v (ALGORITHMS.md P2; Lowy 2026 Lemma C.2). The noise norm is
    Gamma(d, scale): ``P(||b|| > scale (d + t)) <= exp(-t)``.

    Parameters
    ----------
    sensitivity : float
        l2-sensitivity of the query (public, data-independent).
    epsilon : float
    dimension : int
    noise : {"float"}, default="float"
    """

    sensitivity: float
    epsilon: float
    dimension: int
    noise: str = "float"
    scale: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        _check_noise(self.noise)
        # why: exp(-||b||/s) / exp(-||b - v||/s) <= exp(||v||/s) by the triangle inequality.
        object.__setattr__(self, "scale", laplace_scale(self.sensitivity, self.epsilon))

    @property
    def event(self):
        return LaplaceEvent(self.sensitivity, self.scale, "l2") if self.scale > 0 else PureDPEvent(0.0)

    def sample(self, rng, size=None):
        if self.scale == 0:
            return np.zeros(_shape(size, self.dimension))
        return l2_laplace_noise(rng, self.scale, self.dimension, size)

    def release(self, value, rng, size=None):
        return np.asarray(value, dtype=float) + self.sample(rng, size)


@dataclass(frozen=True)
class GaussianMechanism:
    """Gaussian noise for a query of l2-sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        l2-sensitivity (public, data-independent).
    epsilon : float
    delta : float
        In (0, 1).
    dimension : int, default=1
    calibration : {"analytic", "classic"}, default="analytic"
        ``"analytic"``: the smallest sigma that is exactly (epsilon,
        delta)-DP, for any epsilon (Balle and Wang 2018). ``"classic"``:
        ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon``, epsilon <= 1 only.
    noise : {"float"}, default="float"
    """

    sensitivity: float
    epsilon: float
    delta: float
    dimension: int = 1
    calibration: str = "analytic"
    noise: str = "float"
    sigma: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        delta = check_delta(self.delta)
        if delta == 0:
            raise ValueError("delta must be > 0 for the Gaussian mechanism; use a Laplace mechanism for pure DP.")
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        _check_noise(self.noise)
        if self.calibration == "analytic":
            sigma = gaussian_sigma_analytic(self.sensitivity, self.epsilon, delta)
        elif self.calibration == "classic":
            sigma = gaussian_sigma_classic(self.sensitivity, self.epsilon, delta)
        else:
            raise ValueError(f"calibration must be 'analytic' or 'classic', got {self.calibration!r}.")
        object.__setattr__(self, "sigma", sigma)

    @property
    def event(self):
        return GaussianEvent(self.sensitivity, self.sigma) if self.sigma > 0 else PureDPEvent(0.0)

    def sample(self, rng, size=None):
        return gaussian_noise(rng, self.sigma, _shape(size, self.dimension))

    def release(self, value, rng, size=None):
        return np.asarray(value, dtype=float) + self.sample(rng, size)


@dataclass(frozen=True)
class DiscreteLaplaceMechanism:
    """Discrete Laplace noise for an integer-valued query.

    ``epsilon``-DP for l1-sensitivity ``sensitivity`` (an integer) with
    ``t = sensitivity / epsilon``: P(k) is proportional to exp(-|k|/t), so
    the ratio under an integer shift s is at most exp(|s|/t).
    """

    sensitivity: int
    epsilon: float
    dimension: int = 1
    t: float = field(init=False)

    def __post_init__(self):
        if isinstance(self.sensitivity, bool) or int(self.sensitivity) != self.sensitivity or self.sensitivity < 0:
            raise ValueError(f"sensitivity must be a non-negative integer, got {self.sensitivity!r}.")
        object.__setattr__(self, "sensitivity", int(self.sensitivity))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        # why: integer shift s changes exp(-|k|/t) by at most exp(|s|/t).
        object.__setattr__(self, "t", self.sensitivity / self.epsilon)

    @property
    def event(self):
        return PureDPEvent(self.epsilon) if self.sensitivity > 0 else PureDPEvent(0.0)

    def sample(self, rng, size=None):
        if self.t == 0:
            return np.zeros(_shape(size, self.dimension), dtype=np.int64)
        return discrete_laplace_noise(rng, self.t, _shape(size, self.dimension))

    def release(self, value, rng, size=None):
        value = np.asarray(value)
        if not np.issubdtype(value.dtype, np.integer):
            raise TypeError("DiscreteLaplaceMechanism releases integer-valued queries only.")
        return value + self.sample(rng, size)


@dataclass(frozen=True)
class TruncatedDiscreteLaplace:
    """The shifted, truncated discrete Laplace TDLap(epsilon, k) on {0, ..., 2k}.

    ``P(j) = exp(-epsilon |j - k|) / Z``. Adjacent atoms differ by a factor at
    most ``exp(epsilon)``; each end atom has mass ``exp(-epsilon k) / Z``,
    which is the ``delta`` that pairing ``j`` with ``j + 1`` cannot cover
    (Ghazi et al. 2023, Def. 3.4; ALGORITHMS.md G-Def 3.4).

    Parameters
    ----------
    epsilon : float
    k : int
        Half-width; ``k >= 1``.
    """

    epsilon: float
    k: int

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if isinstance(self.k, bool) or int(self.k) != self.k or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}.")
        object.__setattr__(self, "k", int(self.k))

    @classmethod
    def for_delta(cls, epsilon, delta):
        """The smallest k whose end mass ``exp(-eps k) / Z`` is at most ``delta``."""
        epsilon = check_epsilon(epsilon)
        delta = check_delta(delta)
        if delta == 0:
            raise ValueError("delta must be > 0: the truncated discrete Laplace always has an uncovered end atom.")
        # exp(-eps k) / Z(k) decreases in k and k = ceil(ln(1/delta)/eps)
        # suffices (Z >= 1); bisect below it for the smallest k.
        lo, hi = 1, max(1, math.ceil(math.log(1.0 / delta) / epsilon))
        while lo < hi:
            mid = (lo + hi) // 2
            if cls(epsilon, mid).end_mass <= delta:
                hi = mid
            else:
                lo = mid + 1
        return cls(epsilon, lo)

    @property
    def support(self):
        return np.arange(2 * self.k + 1)

    def pmf(self):
        """Probabilities of 0..2k, computed exactly in float64 (normalised)."""
        w = np.exp(-self.epsilon * np.abs(self.support - self.k))
        return w / w.sum()

    @property
    def end_mass(self):
        """P(0) = P(2k)."""
        return float(self.pmf()[0])

    def sample(self, rng, size=None):
        return rng.choice(2 * self.k + 1, size=size, p=self.pmf())
