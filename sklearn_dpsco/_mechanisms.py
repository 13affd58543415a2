"""Noise mechanisms (doc/privacy/mechanisms.rst).

Each mechanism is a small frozen object built from *public* inputs
(sensitivity, budget, dimension). It knows its noise scale, the privacy
event it consumes, and how to draw noise. Releases are vectorised
(``size`` independent draws at once) so the statistical audits can draw
1e5 samples in milliseconds.

Noise is drawn from a :class:`numpy.random.Generator` made by
:func:`sklearn_dpsco._rng.check_random_state` (OS entropy by default).
The ``noise`` argument selects the sampling path (doc/privacy/secure_noise.rst):

``"secure"`` (the default, :data:`DEFAULT_NOISE`)
    Round the centre to a power-of-two grid, inflate the sensitivity by the
    rounding, add *exact* integer noise (discrete Laplace / discrete
    Gaussian, Canonne-Kamath-Steinke 2020), scale back. Outputs lie exactly
    on the grid and the privacy proof covers the floats actually released.
    The isotropic l2-Laplace has no proven lattice version: its secure path
    is a *hardened* continuous sampler rounded to the grid.
``"float"``
    The textbook ``value + rng.laplace(...)`` in float64. Not differentially
    private as a distribution over floats (Mironov 2012); kept for
    comparison, tests and benchmarks.
"""

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import _secure_noise as _sn
from ._param_checks import check_delta, check_dimension, check_epsilon, check_nonnegative
from .accounting import GaussianEvent, LaplaceEvent, PureDPEvent, ZCDPEvent
from .accounting._calibration import (
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_scale,
    zcdp_rho,
)

__all__ = [
    "LaplaceMechanism",
    "L2LaplaceMechanism",
    "GaussianMechanism",
    "DiscreteLaplaceMechanism",
    "TruncatedDiscreteLaplace",
    "NoiseDraw",
    "laplace_noise",
    "l2_laplace_noise",
    "gaussian_noise",
    "discrete_laplace_noise",
    "DEFAULT_NOISE",
]

_NOISE_PATHS = ("secure", "float")

#: The noise path every mechanism (and, through them, every estimator) uses
#: unless told otherwise. Measured cost (doc/privacy/secure_noise.rst,
#: benchmarks/bench_noise.py): one release takes 30-55 us at d <= 100 and
#: 0.1-0.4 ms at d = 1000 (float: 2-20 us), negligible next to a fit; the
#: Laplace and
#: l2-Laplace noise scales grow by a relative ``(d / epsilon + 1) 2^-48``
#: (resp. ``sqrt(d) 2^-40 / epsilon``) at most;
#: the Gaussian's sigma grows by 4-11% (zCDP calibration, see
#: GaussianMechanism) -- the price of a proof that covers the released floats.
DEFAULT_NOISE = "secure"


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


# --------------------------------------------------------------------------- secure-path helpers
# zcdp_rho is a pure function of public (epsilon, delta) costing a few ms (a
# root search over an optimised conversion); mechanisms are rebuilt per fit.
_zcdp_rho = functools.lru_cache(maxsize=1024)(zcdp_rho)


def _float_up(frac):
    """The smallest float ``>= frac`` (a Fraction)."""
    f = float(frac)
    if Fraction(f) < frac:
        f = math.nextafter(f, math.inf)
    return f


def _check_event_int(value, name):
    # Events record floats; integers below 2^53 make them exact.
    if value >= 2**53:
        raise ValueError(
            f"{name} = {value} in grid units exceeds 2^53: dimension / epsilon is too large for the secure path."
        )
    return value


class NoiseDraw:
    """Noise drawn for a release, held back until the centre is known.

    Made by a mechanism's :meth:`draw` (before a solver touches the data, so
    the random stream never depends on the data); :meth:`release` is the only
    way to turn it into floats next to a centre. On the secure path it holds
    *integer* noise in grid units and :meth:`release` rounds the centre to
    the same grid before adding, so the output is ``fl(k + n) * gamma`` with
    ``k + n`` an exactly private integer (doc/privacy/secure_noise.rst,
    "The release contract"). There is deliberately no accessor for the noise
    as floats: ``centre + noise`` in floats with an unrounded centre leaks
    ``centre mod gamma`` in every release.

    Parameters
    ----------
    units : ndarray of shape (dimension,) or (size, dimension)
        Integer-valued noise in grid units (secure path) or float noise
        (float path, ``grid == 0``).
    grid : float
        The grid ``gamma``; ``0.0`` on the float path and for noiseless
        mechanisms.
    """

    __slots__ = ("_units", "_grid")

    def __init__(self, units, grid):
        self._units = units
        self._grid = float(grid)

    @property
    def shape(self):
        return self._units.shape

    def release(self, value):
        """``value + noise``: grid-rounded and exact on the secure path.

        ``value`` broadcasts to :attr:`shape` (one centre for every stacked
        draw, or one centre per draw).
        """
        if self._grid == 0.0:
            value = np.asarray(value, dtype=float)
            return np.broadcast_to(value, np.broadcast_shapes(value.shape, self.shape)) + self._units
        k = _sn.round_to_grid(value, self._grid, self.shape)
        return _sn.scale_back(k, self._units, self._grid)

    def __repr__(self):
        return f"NoiseDraw(shape={self.shape}, grid={self._grid!r})"


# --------------------------------------------------------------------------- mechanisms
class _AdditiveNoise:
    """The one release idiom of the additive mechanisms (doc/privacy/secure_noise.rst).

    Subclasses say how to draw float noise (``_float_noise``), integer noise
    in grid units (``_grid_units``) and whether they add any noise at all;
    :meth:`draw` and :meth:`release` are shared, so every solver releases
    the same way. There is no public ``sample``: noise becomes floats only
    through :meth:`NoiseDraw.release`, next to a grid-rounded centre.
    """

    def draw(self, rng, size=None):
        """Draw the noise of one release (or ``size`` stacked releases) now, add it later.

        Lets a solver consume its random stream before it touches the data.

        Returns
        -------
        NoiseDraw
        """
        shape = _shape(size, self.dimension)
        if self._noise_free():
            return NoiseDraw(np.zeros(shape), 0.0)
        if self.noise == "float":
            return NoiseDraw(self._float_noise(rng, shape), 0.0)
        return NoiseDraw(self._grid_units(rng, shape), self.grid)

    def release(self, value, rng, size=None):
        """``value + noise``; with ``size``, that many independent releases stacked.

        On the secure path the centre is rounded to the grid and exact integer
        noise added in grid units, so every output is an integer multiple of
        :attr:`grid`. ``value`` broadcasts to ``(dimension,)``, or with
        ``size`` to ``(size, dimension)`` (one centre per release).
        """
        return self.draw(rng, size).release(value)


@dataclass(frozen=True)
class LaplaceMechanism(_AdditiveNoise):
    """Coordinate Laplace noise for a query of l1-sensitivity ``sensitivity``.

    ``epsilon``-DP with scale ``b = sensitivity / epsilon`` (ALGORITHMS.md P1).
    An l2-sensitivity ``D2`` in dimension d gives ``sensitivity = sqrt(d) D2``.

    Parameters
    ----------
    sensitivity : float
        l1-sensitivity of the query (public, data-independent).
    epsilon : float
    dimension : int, default=1
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"``: the centre is rounded to the grid ``gamma`` (the
        largest power of two ``<= b 2^-48``), exact discrete Laplace noise
        of integer scale ``t = ceil(S / epsilon)`` is added in grid units,
        where ``S = floor(sensitivity / gamma) + d`` bounds the l1 distance
        of rounded neighbouring centres, and the sum is scaled back.
        ``"float"``: ``value + rng.laplace(0, b)`` (not DP over floats).

    Attributes
    ----------
    scale : float
        Noise scale actually used (``t * gamma`` on the secure path).
    grid : float
        The grid ``gamma`` (0.0 on the float path); secure outputs are
        integer multiples of it.
    noise_sensitivity : float
        The sensitivity the noise is calibrated to: ``S * gamma =
        sensitivity + d gamma`` at most (secure) or ``sensitivity`` (float).

    Notes
    -----
    Secure path: ``epsilon``-DP for the released floats (doc/privacy/secure_noise.rst);
    the event records the inflated sensitivity and the real scale, with
    ``event.epsilon = S / t <= epsilon``.
    """

    sensitivity: float
    epsilon: float
    dimension: int = 1
    noise: str = DEFAULT_NOISE
    scale: float = field(init=False)
    grid: float = field(init=False)
    noise_sensitivity: float = field(init=False)
    _t: int = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        _check_noise(self.noise)
        # why: density ratio of Laplace under an l1 shift v is <= exp(||v||_1 / b).
        base = laplace_scale(self.sensitivity, self.epsilon)
        if self.noise == "float" or base == 0:
            object.__setattr__(self, "scale", base)
            object.__setattr__(self, "grid", 0.0)
            object.__setattr__(self, "noise_sensitivity", self.sensitivity)
            object.__setattr__(self, "_t", 0)
            return
        gamma = _sn.power_of_two_at_most(math.ldexp(base, -_sn.LAPLACE_GRID_BITS))
        # why: rounding moves each coordinate of each neighbour by <= gamma/2, so the
        # rounded centres differ by at most floor(D1/gamma) + d grid steps in l1.
        s_int = _check_event_int(_sn.l1_grid_sensitivity(self.sensitivity, gamma, self.dimension), "sensitivity")
        # why: discrete Laplace of integer scale t is (S/t)-DP for integer l1 shifts <= S.
        t = _check_event_int(math.ceil(Fraction(s_int) / Fraction(self.epsilon)), "scale")
        object.__setattr__(self, "scale", t * gamma)
        object.__setattr__(self, "grid", gamma)
        object.__setattr__(self, "noise_sensitivity", s_int * gamma)
        object.__setattr__(self, "_t", t)

    @property
    def event(self):
        if self.scale == 0:
            return PureDPEvent(0.0)
        return LaplaceEvent(self.noise_sensitivity, self.scale, "l1")

    def _noise_free(self):
        return self.scale == 0

    def _float_noise(self, rng, shape):
        return laplace_noise(rng, self.scale, shape)

    def _grid_units(self, rng, shape):
        return _sn.discrete_laplace(rng, (self._t, 1), shape)


@dataclass(frozen=True)
class L2LaplaceMechanism(_AdditiveNoise):
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
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"`` is *hardening*, not a proof: the centre is rounded to
        the grid ``gamma <= (sensitivity / epsilon) 2^-40``, continuous
        l2-Laplace noise (radius a sum of Gamma(d/4) draws, direction from
        summed normals) is rounded to the same grid and added in grid units,
        with the sensitivity inflated to ``sensitivity + sqrt(d) gamma``. In
        exact arithmetic this is epsilon-DP (rounding the noise to the
        lattice preserves the density-ratio bound cell by cell); in floats
        the grid is far coarser than float spacing for ``d < 2^24``, which
        removes the holes of Mironov's attack. For a proven (epsilon,
        delta) guarantee use ``GaussianMechanism(noise="secure")``.

    Attributes
    ----------
    scale, grid, noise_sensitivity : float
        As for :class:`LaplaceMechanism`.
    """

    sensitivity: float
    epsilon: float
    dimension: int
    noise: str = DEFAULT_NOISE
    scale: float = field(init=False)
    grid: float = field(init=False)
    noise_sensitivity: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        _check_noise(self.noise)
        # why: exp(-||b||/s) / exp(-||b - v||/s) <= exp(||v||/s) by the triangle inequality.
        base = laplace_scale(self.sensitivity, self.epsilon)
        if self.noise == "float" or base == 0:
            object.__setattr__(self, "scale", base)
            object.__setattr__(self, "grid", 0.0)
            object.__setattr__(self, "noise_sensitivity", self.sensitivity)
            return
        gamma = _sn.power_of_two_at_most(math.ldexp(base, -_sn.L2_LAPLACE_GRID_BITS))
        # why: rounded neighbouring centres differ by <= D2 + sqrt(d) gamma in l2.
        inflated = _float_up(Fraction(self.sensitivity) + _sn.sqrt_upper(self.dimension) * Fraction(gamma))
        object.__setattr__(self, "scale", _float_up(Fraction(inflated) / Fraction(self.epsilon)))
        object.__setattr__(self, "grid", gamma)
        object.__setattr__(self, "noise_sensitivity", inflated)

    @property
    def event(self):
        if self.scale == 0:
            return PureDPEvent(0.0)
        return LaplaceEvent(self.noise_sensitivity, self.scale, "l2")

    def _noise_free(self):
        return self.scale == 0

    def _float_noise(self, rng, shape):
        return l2_laplace_noise(rng, self.scale, self.dimension, None if len(shape) == 1 else shape[0])

    def _grid_units(self, rng, shape):
        size = None if len(shape) == 1 else shape[0]
        z = _sn.hardened_l2_laplace_noise(rng, self.scale, self.dimension, size)
        return np.rint(z / self.grid)


@dataclass(frozen=True)
class GaussianMechanism(_AdditiveNoise):
    """Gaussian noise for a query of l2-sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        l2-sensitivity (public, data-independent).
    epsilon : float
    delta : float
        In (0, 1).
    dimension : int, default=1
    calibration : {"analytic", "classic", "zcdp"} or None, default=None
        ``"analytic"``: the smallest sigma that is exactly (epsilon,
        delta)-DP, for any epsilon (Balle and Wang 2018). ``"classic"``:
        ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon``, epsilon <= 1 only.
        ``"zcdp"``: ``sigma = D / sqrt(2 rho)`` with ``rho`` the largest
        zCDP parameter converting to (epsilon, delta) by
        :func:`~sklearn_dpsco.accounting.zcdp_epsilon`. ``None`` means
        ``"zcdp"`` on the secure path (the only calibration it supports)
        and ``"analytic"`` on the float path.
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"``: the centre is rounded to the grid ``gamma`` (largest
        power of two ``<= sigma_0 2^-30``), exact discrete Gaussian noise
        with integer variance parameter ``N = ceil(S2 / (2 rho))`` is added
        in grid units, where ``S2 = floor((sensitivity / gamma +
        sqrt(d))^2)`` bounds the squared l2 distance of rounded neighbouring
        centres, and the sum is scaled back. The product of independent
        discrete Gaussians is exactly ``S2 / (2 N)``-zCDP (Canonne, Kamath,
        Steinke 2020, Thm 14; Renyi divergences of independent coordinates
        add), which converts to (epsilon, delta)-DP. Costs 4-11% more sigma
        than ``"analytic"`` for epsilon in [0.1, 8] and delta in [1e-10, 1e-5].
        ``"float"``: ``value + rng.normal(0, sigma)`` (not DP over floats).

    Attributes
    ----------
    sigma : float
        Noise standard-deviation parameter actually used (``sqrt(N) gamma``
        on the secure path).
    grid : float
        The grid ``gamma`` (0.0 on the float path).
    noise_sensitivity : float
        The l2-sensitivity the noise covers (``sqrt(S2) gamma`` on the
        secure path).
    rho : float or None
        zCDP parameter of the release (secure path, or ``calibration="zcdp"``).
    """

    sensitivity: float
    epsilon: float
    delta: float
    dimension: int = 1
    calibration: str = None
    noise: str = DEFAULT_NOISE
    sigma: float = field(init=False)
    grid: float = field(init=False)
    noise_sensitivity: float = field(init=False)
    rho: float = field(init=False)
    _sigma2: int = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", check_nonnegative(self.sensitivity, "sensitivity"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        delta = check_delta(self.delta)
        if delta == 0:
            raise ValueError("delta must be > 0 for the Gaussian mechanism; use a Laplace mechanism for pure DP.")
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "dimension", check_dimension(self.dimension))
        _check_noise(self.noise)
        secure = self.noise == "secure"
        calibration = self.calibration
        if calibration is None:
            calibration = "zcdp" if secure else "analytic"
        if calibration not in ("analytic", "classic", "zcdp"):
            raise ValueError(f"calibration must be 'analytic', 'classic' or 'zcdp', got {calibration!r}.")
        if secure and calibration != "zcdp":
            raise ValueError(
                f"calibration={calibration!r} is for the float path; noise='secure' (discrete Gaussian) "
                "is calibrated through zCDP: use calibration='zcdp' or None."
            )
        object.__setattr__(self, "calibration", calibration)
        object.__setattr__(self, "grid", 0.0)
        object.__setattr__(self, "noise_sensitivity", self.sensitivity)
        object.__setattr__(self, "_sigma2", 0)
        rho = None
        if calibration == "analytic":
            sigma = gaussian_sigma_analytic(self.sensitivity, self.epsilon, delta)
        elif calibration == "classic":
            sigma = gaussian_sigma_classic(self.sensitivity, self.epsilon, delta)
        else:
            # why: rho-zCDP implies (epsilon, delta)-DP through zcdp_epsilon; a Gaussian of
            # sigma on l2-sensitivity D is (D^2 / 2 sigma^2)-zCDP.
            rho = _zcdp_rho(self.epsilon, delta)
            sigma = self.sensitivity / math.sqrt(2.0 * rho)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "rho", rho)
        if not secure or sigma == 0:
            return
        gamma = _sn.power_of_two_at_most(math.ldexp(sigma, -_sn.GAUSSIAN_GRID_BITS))
        # why: rounded neighbouring centres differ by <= D2/gamma + sqrt(d) grid steps in
        # l2, and their squared distance is an integer.
        s2 = _sn.l2_grid_sensitivity_squared(self.sensitivity, gamma, self.dimension)
        # why: the discrete Gaussian of parameter N is (S2 / 2N)-zCDP for integer shifts
        # of squared norm <= S2 (CKS20 Thm 14); N >= S2 / (2 rho) gives <= rho.
        n_var = math.ceil(Fraction(s2) / (2 * Fraction(rho)))
        if n_var >= 2**63:
            raise ValueError("the grid sensitivity is too large for the 63-bit discrete Gaussian sampler.")
        object.__setattr__(self, "_sigma2", n_var)
        object.__setattr__(self, "grid", gamma)
        object.__setattr__(self, "sigma", math.sqrt(n_var) * gamma)
        object.__setattr__(self, "noise_sensitivity", math.sqrt(s2) * gamma)
        # nearest float of a rational <= rho (a float) is <= rho
        object.__setattr__(self, "rho", float(Fraction(s2, 2 * n_var)))

    @property
    def event(self):
        if self.sigma == 0:
            return PureDPEvent(0.0)
        if self.noise == "secure":
            return ZCDPEvent(self.rho)
        return GaussianEvent(self.sensitivity, self.sigma)

    def _noise_free(self):
        return self.sigma == 0

    def _float_noise(self, rng, shape):
        return gaussian_noise(rng, self.sigma, shape)

    def _grid_units(self, rng, shape):
        return _sn.discrete_gaussian(rng, (self._sigma2, 1), shape)


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
        _check_noise(self.noise)
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
        shape = _shape(size, self.dimension)
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
    (Ghazi et al. 2023, Def. 3.4; ALGORITHMS.md G-Def 3.4).

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
        _check_noise(self.noise)
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
