"""Integer-valued mechanisms: discrete Laplace and the truncated discrete Laplace."""

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .._param_checks import check_delta, check_dimension, check_epsilon
from ..accounting import PureDPEvent
from . import _grid as _sn
from ._paths import DEFAULT_NOISE, check_noise, release_shape
from ._samplers import discrete_laplace_noise

__all__ = ["DiscreteLaplaceMechanism", "TruncatedDiscreteLaplace"]


@dataclass(frozen=True)
class DiscreteLaplaceMechanism:
    """Discrete Laplace noise for an integer-valued query.

    ``epsilon``-DP for l1-sensitivity ``sensitivity`` (an integer) with
    ``t = sensitivity / epsilon``: P(k) is proportional to exp(-|k|/t), so
    the ratio under an integer shift s is at most exp(|s|/t).

    Parameters
    ----------
    sensitivity : int
    epsilon : float
    dimension : int, default=1
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"``: the exact CKS20 sampler with scale ``t`` as an exact
        rational (rounded *up* to a 62-bit dyadic if it does not fit, which
        only adds noise). ``"float"``: a difference of two geometric
        variables with a floating-point success probability.
    """

    sensitivity: int
    epsilon: float
    dimension: int = 1
    noise: str = DEFAULT_NOISE
    t: float = field(init=False)

    def __post_init__(self):
        if isinstance(self.sensitivity, bool) or int(self.sensitivity) != self.sensitivity or self.sensitivity < 0:
            raise ValueError(f"sensitivity must be a non-negative integer, got {self.sensitivity!r}.")
        object.__setattr__(self, "sensitivity", int(self.sensitivity))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        check_noise(self.noise)
        # why: integer shift s changes exp(-|k|/t) by at most exp(|s|/t).
        object.__setattr__(self, "t", self.sensitivity / self.epsilon)

    @property
    def event(self):
        return PureDPEvent(self.epsilon) if self.sensitivity > 0 else PureDPEvent(0.0)

    @property
    def exact_scale(self):
        """The rational scale the secure sampler uses (``>= sensitivity / epsilon``)."""
        return _sn.rational_at_least(Fraction(self.sensitivity) / Fraction(self.epsilon))

    def sample(self, rng, size=None):
        shape = release_shape(size, self.dimension)
        if self.t == 0:
            return np.zeros(shape, dtype=np.int64)
        if self.noise == "float":
            return discrete_laplace_noise(rng, self.t, shape)
        scale = self.exact_scale
        return _sn.discrete_laplace(rng, (scale.numerator, scale.denominator), shape)

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
    (Ghazi et al. 2023, Def. 3.4; doc/algorithms.rst, G-Def 3.4).

    Parameters
    ----------
    epsilon : float
    k : int
        Half-width; ``k >= 1``.
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"``: exact discrete Laplace of scale exactly ``1/epsilon``
        (epsilon's float value read as a dyadic rational), conditioned on
        ``|Y| <= k`` by rejection, then shifted by k. Needs ``1/epsilon`` to
        fit a 63-bit rational (epsilon >~ 2^-10 for a generic float).
        ``"float"``: ``rng.choice`` with the float pmf.
    """

    epsilon: float
    k: int
    noise: str = DEFAULT_NOISE

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if isinstance(self.k, bool) or int(self.k) != self.k or self.k < 1:
            raise ValueError(f"k must be an integer >= 1, got {self.k!r}.")
        object.__setattr__(self, "k", int(self.k))
        check_noise(self.noise)
        if self.noise == "secure":
            # The truncation delta depends on epsilon exactly: no rounding allowed here.
            _sn.check_int_scale(1 / Fraction(self.epsilon), "1/epsilon")

    @classmethod
    def for_delta(cls, epsilon, delta, noise=DEFAULT_NOISE):
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
            if cls(epsilon, mid, "float").end_mass <= delta:
                hi = mid
            else:
                lo = mid + 1
        return cls(epsilon, lo, noise)

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
        if self.noise == "float":
            return rng.choice(2 * self.k + 1, size=size, p=self.pmf())
        scale = _sn.check_int_scale(1 / Fraction(self.epsilon), "1/epsilon")
        n = 1 if size is None else int(np.prod(size, dtype=np.int64))
        out = np.empty(n, dtype=np.int64)
        filled = 0
        # Rejection: DLap(1/eps) conditioned on |Y| <= k is exactly TDLap - k.
        # The loop length depends on the noise only, never on data.
        p_keep = max(1.0 - 2.0 * math.exp(-self.epsilon * (self.k + 1)) / (1.0 + math.exp(-self.epsilon)), 1e-3)
        while filled < n:
            batch = _sn.discrete_laplace(rng, scale, int((n - filled) / p_keep) + 16)
            batch = batch[np.abs(batch) <= self.k][: n - filled]
            out[filled:filled + batch.size] = batch + self.k
            filled += batch.size
        return int(out[0]) if size is None else out.reshape(size)

