"""Additive mechanisms for real-valued queries: Laplace, l2-Laplace, Gaussian.

Each is a frozen object built from *public* inputs (sensitivity, budget,
dimension) that knows its noise scale, the privacy event it consumes and how
to draw noise on either noise path. Solvers do not construct them directly:
:mod:`._calibrate` is the one place where a sensitivity becomes a mechanism.
"""

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .._param_checks import check_delta, check_dimension, check_epsilon, check_nonnegative
from ..accounting import GaussianEvent, LaplaceEvent, PureDPEvent, ZCDPEvent
from ..accounting._calibration import (
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_scale,
    zcdp_rho,
)
from . import _grid as _sn
from ._draw import NoiseDraw
from ._paths import DEFAULT_NOISE, check_noise, release_shape
from ._samplers import gaussian_noise, l2_laplace_noise, laplace_noise

__all__ = ["GaussianMechanism", "L2LaplaceMechanism", "LaplaceMechanism"]


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


#: Grid steps a Laplace release's sensitivity may count (coarser grids above it; floats are exact below 2^53).
_EXACT_STEPS = 2**52


def _check_event_int(value, name):
    # Events record floats; integers below 2^53 make them exact.
    if value >= 2**53:
        raise ValueError(
            f"{name} = {value} in grid units exceeds 2^53: the secure path cannot represent this release exactly "
            "(a dimension far too large for its grid). Nothing was spent."
        )
    return value



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
        shape = release_shape(size, self.dimension)
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

    ``epsilon``-DP with scale ``b = sensitivity / epsilon`` (doc/algorithms.rst, P1).
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
        check_noise(self.noise)
        # why: density ratio of Laplace under an l1 shift v is <= exp(||v||_1 / b).
        base = laplace_scale(self.sensitivity, self.epsilon)
        if self.noise == "float" or base == 0:
            object.__setattr__(self, "scale", base)
            object.__setattr__(self, "grid", 0.0)
            object.__setattr__(self, "noise_sensitivity", self.sensitivity)
            object.__setattr__(self, "_t", 0)
            return
        gamma = _sn.power_of_two_at_most(math.ldexp(base, -_sn.LAPLACE_GRID_BITS))
        if _sn.l1_grid_sensitivity(self.sensitivity, gamma, self.dimension) >= 2**53:
            # why: at a large epsilon (about 2^5 per release and above) that grid counts the sensitivity in more
            # steps than a float holds exactly; the finest power of two that keeps them below 2^52 (public: the
            # sensitivity, d) is still far finer than the noise (gamma / b <= epsilon 2^-51), and the argument
            # below holds for any public grid (doc/privacy/secure_noise.rst, "Laplace")
            gamma = _sn.power_of_two_at_least(self.sensitivity / (_EXACT_STEPS - self.dimension))
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
    shift v (doc/algorithms.rst, P2; Lowy 2026 Lemma C.2). The noise norm is
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
        check_noise(self.noise)
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


def _checked_gaussian(sensitivity, epsilon, delta, dimension, calibration, noise):
    """:class:`GaussianMechanism`'s checks: ``(sensitivity, epsilon, delta, dimension, calibration)`` as used."""
    sensitivity = check_nonnegative(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism; use a Laplace mechanism for pure DP.")
    dimension = check_dimension(dimension)
    check_noise(noise)
    secure = noise == "secure"
    if calibration is None:
        calibration = "zcdp" if secure else "analytic"
    if calibration not in ("analytic", "classic", "zcdp"):
        raise ValueError(f"calibration must be 'analytic', 'classic' or 'zcdp', got {calibration!r}.")
    if secure and calibration != "zcdp":
        raise ValueError(
            f"calibration={calibration!r} is for the float path; noise='secure' (discrete Gaussian) "
            "is calibrated through zCDP: use calibration='zcdp' or None."
        )
    return sensitivity, epsilon, delta, dimension, calibration


def _gaussian_calibration(sensitivity, epsilon, delta, dimension, calibration, secure):
    """``(sigma, grid, noise_sensitivity, rho, n_var)`` of a :class:`GaussianMechanism` with checked arguments."""
    rho = None
    if calibration == "analytic":
        sigma = gaussian_sigma_analytic(sensitivity, epsilon, delta)
    elif calibration == "classic":
        sigma = gaussian_sigma_classic(sensitivity, epsilon, delta)
    else:
        # why: rho-zCDP implies (epsilon, delta)-DP through zcdp_epsilon; a Gaussian of
        # sigma on l2-sensitivity D is (D^2 / 2 sigma^2)-zCDP.
        rho = _zcdp_rho(epsilon, delta)
        sigma = sensitivity / math.sqrt(2.0 * rho)
    if not secure or sigma == 0:
        return sigma, 0.0, sensitivity, rho, 0
    gamma = _sn.power_of_two_at_most(math.ldexp(sigma, -_sn.GAUSSIAN_GRID_BITS))
    # why: rounded neighbouring centres differ by <= D2/gamma + sqrt(d) grid steps in
    # l2, and their squared distance is an integer.
    s2 = _sn.l2_grid_sensitivity_squared(sensitivity, gamma, dimension)
    # why: the discrete Gaussian of parameter N is (S2 / 2N)-zCDP for integer shifts
    # of squared norm <= S2 (CKS20 Thm 14); N >= S2 / (2 rho) gives <= rho.
    # in integers: rho = p / q exactly (a float), so S2 / (2 rho) = S2 q / (2 p) and the ceiling is exact
    p, q = rho.as_integer_ratio()
    n_var = -((-s2 * q) // (2 * p))
    if n_var >= 2**63:
        raise ValueError("the grid sensitivity is too large for the 63-bit discrete Gaussian sampler.")
    # nearest float of a rational <= rho (a float) is <= rho; int / int is correctly rounded, as
    # float(Fraction(s2, 2 n_var)) is (the same division)
    return math.sqrt(n_var) * gamma, gamma, math.sqrt(s2) * gamma, s2 / (2 * n_var), n_var


def gaussian_event(sensitivity, epsilon, delta, dimension=1, noise=DEFAULT_NOISE, calibration=None):
    """``GaussianMechanism(sensitivity, epsilon, delta, dimension, calibration, noise).event`` without the
    mechanism: the same checks and calibration, the same event (a budget fill's candidates need only it)."""
    sensitivity, epsilon, delta, dimension, calibration = _checked_gaussian(
        sensitivity, epsilon, delta, dimension, calibration, noise)
    secure = noise == "secure"
    sigma, _, _, rho, _ = _gaussian_calibration(sensitivity, epsilon, delta, dimension, calibration, secure)
    if sigma == 0:
        return PureDPEvent(0.0)
    if secure:
        return ZCDPEvent(rho)
    return GaussianEvent(sensitivity, sigma)


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
        sensitivity, epsilon, delta, dimension, calibration = _checked_gaussian(
            self.sensitivity, self.epsilon, self.delta, self.dimension, self.calibration, self.noise)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "dimension", dimension)
        object.__setattr__(self, "calibration", calibration)
        sigma, grid, noise_sensitivity, rho, n_var = _gaussian_calibration(
            sensitivity, epsilon, delta, dimension, calibration, self.noise == "secure")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "noise_sensitivity", noise_sensitivity)
        object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "_sigma2", n_var)

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

