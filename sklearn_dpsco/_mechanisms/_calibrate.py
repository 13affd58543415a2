"""The one place where a sensitivity and a budget become noise (doc/privacy/mechanisms.rst, "Calibration").

Every solver, estimator and helper that releases a noisy value gets its
mechanism from a function here, given PUBLIC inputs only: a sensitivity it
computed from declared bounds, a budget (``epsilon``, ``delta`` and the noise
path, a :class:`~sklearn_dpsco._budget.Budget` or any object with those three
attributes) and the dimension of the release. The mechanism classes
(:mod:`._additive`, :mod:`._integer`, :mod:`._steps`) know how to draw and
release; this module decides WHICH mechanism and at WHAT scale, with the
reason written once next to each rule.

It also holds the certified-sensitivity rule and the noise-size proxies the
public rules (regularisation, step sizes, localisation radii) are built on.
Two different quantities are kept apart on purpose:

* :func:`expected_noise_norm` — the typical (expected) l2 norm of a release's
  noise, a smooth public proxy used to choose defaults;
* :func:`noise_norm_quantile` / :func:`noise_operator_norm_bound` — high-
  probability bounds on the noise actually drawn by a given mechanism, used
  where a radius must contain the truth with a stated probability.

:func:`rate_dimension_term` is the third, the dimension factor of the
theoretical rates (``d`` or ``sqrt(d log(1/delta))``) that step-size and
epoch-length rules are written in.
"""

import math

from scipy import special

from ..accounting._calibration import gaussian_mu
from ._additive import GaussianMechanism, L2LaplaceMechanism, LaplaceMechanism
from ._integer import TruncatedDiscreteLaplace
from ._quantile import DEFAULT_SELECTION, QuantileMechanism
from ._scale_grid import ScaleGrid
from ._steps import GaussianSteps

__all__ = [
    "certified_sensitivity",
    "dp_gd_sigma",
    "expected_noise_norm",
    "fkt_sigma",
    "gaussian_mechanism_for",
    "gaussian_steps",
    "laplace_mechanism_for",
    "mechanism_for",
    "noise_norm_quantile",
    "noise_operator_norm_bound",
    "quantile_mechanism_for",
    "rate_dimension_term",
    "truncated_level_for",
]


# --------------------------------------------------------------------------- sensitivities
def certified_sensitivity(exact, tolerance):
    """Sensitivity of a point a certified solver returned: ``exact + 2 tolerance``.

    ``exact`` bounds the distance between the EXACT minimizers on two
    neighbouring data sets; the solver certifies (deterministically, or
    refuses) that its output is within ``tolerance`` of the exact minimizer
    on each of them.
    """
    # why: triangle inequality ||w~ - w~'|| <= ||w~ - w*|| + ||w* - w*'|| + ||w*' - w~'||
    # <= tolerance + exact + tolerance (doc/privacy/output_perturbation.rst, "Argument").
    return exact + 2.0 * tolerance


# --------------------------------------------------------------------------- one-shot releases
def mechanism_for(sensitivity, budget, dimension):
    """The mechanism releasing a ``dimension``-vector of l2-sensitivity ``sensitivity`` at ``budget``.

    ``budget.delta == 0``: :class:`L2LaplaceMechanism` (pure epsilon-DP, scale
    ``sensitivity / epsilon``). ``budget.delta > 0``: :class:`GaussianMechanism`
    (zCDP-calibrated discrete Gaussian on the secure path, analytic Gaussian on
    the float path).
    """
    if budget.delta == 0:
        # why: the l2-Laplace density ratio under a shift v is <= exp(||v|| / scale)
        # (doc/privacy/mechanisms.rst, "Isotropic l2-Laplace"), so scale = D2 / epsilon is epsilon-DP.
        return L2LaplaceMechanism(sensitivity, budget.epsilon, dimension, noise=budget.noise)
    return gaussian_mechanism_for(sensitivity, budget, dimension)


def gaussian_mechanism_for(sensitivity, budget, dimension):
    """Gaussian release of l2-sensitivity ``sensitivity`` (``budget.delta`` must be > 0)."""
    # why: analytic Gaussian (Balle and Wang 2018) on the float path, discrete Gaussian through
    # zCDP on the secure path (doc/privacy/mechanisms.rst "Gaussian", secure_noise.rst).
    return GaussianMechanism(sensitivity, budget.epsilon, budget.delta, dimension, noise=budget.noise)


def laplace_mechanism_for(sensitivity, budget, dimension=1):
    """Coordinate Laplace release of a query of l1-sensitivity ``sensitivity`` (pure DP; ``delta`` unused)."""
    # why: the Laplace density ratio under an l1 shift v is <= exp(||v||_1 / b), so
    # b = D1 / epsilon is epsilon-DP (doc/privacy/mechanisms.rst, "Coordinate Laplace").
    return LaplaceMechanism(sensitivity, budget.epsilon, dimension, noise=budget.noise)


def truncated_level_for(epsilon, k, noise):
    """The truncated discrete Laplace level ``TDLap(epsilon, k)`` of the deletion mechanism."""
    # why: adjacent atoms differ by a factor <= exp(epsilon); the end atoms are the delta
    # (doc/privacy/mechanisms.rst, "Shifted truncated discrete Laplace"; doc/privacy/user_level.rst).
    return TruncatedDiscreteLaplace(epsilon, k, noise=noise)


def quantile_mechanism_for(q, budget, grid=None, method=DEFAULT_SELECTION):
    """The pure-DP release of a grid point near the ``q``-quantile (a private scale estimate).

    Only ``budget.epsilon`` and ``budget.noise`` are used: the release is
    ``epsilon``-DP, which is within any ``(epsilon, delta)``. ``grid``
    defaults to ``ScaleGrid()`` (unsigned); pass ``ScaleGrid(signed=True)``
    for signed values.
    """
    # why: the utility -|#{x_i <= t} - q n| has sensitivity 1 under replace-one, and the
    # selection weights exp(epsilon u / 2) make it epsilon-DP (doc/privacy/quantiles.rst).
    return QuantileMechanism(q, budget.epsilon, ScaleGrid() if grid is None else grid, method, budget.noise)


# --------------------------------------------------------------------------- per-step noise (float only)
def dp_gd_sigma(sensitivity, iterations, epsilon, delta):
    """Per-step sigma of ``iterations`` Gaussian steps on a sum of l2-sensitivity ``sensitivity``."""
    # why: T Gaussian steps of sensitivity D and std sigma compose exactly to sqrt(T) D / sigma
    # -Gaussian DP (Dong, Roth, Su 2019), which must not exceed mu(epsilon, delta)
    # (doc/privacy/user_level.rst, "user_dp_sgd").
    return sensitivity * math.sqrt(iterations) / gaussian_mu(epsilon, delta)


def fkt_sigma(lipschitz, dimension):
    """PNSGD / Snowball-SGD gradient noise std per coordinate: ``L / sqrt(d)``."""
    # why: FKT 2020 fix d sigma^2 = L^2; the budget then sets the batch sizes through
    # Thm 3.1 (doc/privacy/snowball_sgd.rst).
    return lipschitz / math.sqrt(dimension)


def gaussian_steps(sigma):
    """The per-step float Gaussian ``N(0, sigma^2 I)`` of PNSGD, Snowball-SGD and user-level DP-GD.

    ``GaussianSteps(sigma).sample(rng, shape)`` is ``rng.normal(0.0, sigma,
    shape)``, which is ``sigma * rng.standard_normal(shape)`` bit for bit
    (NumPy computes ``loc + scale * z``) except for the sign of a zero.
    """
    return GaussianSteps(sigma)


# --------------------------------------------------------------------------- noise-size proxies
def expected_noise_norm(sensitivity, dimension, epsilon, delta):
    """Expected l2 norm of a :func:`mechanism_for` release's noise (float-path calibration).

    Pure DP (l2-Laplace, norm Gamma(d, D / epsilon)): ``D d / epsilon``.
    Approximate DP (analytic Gaussian, ``sigma = D / mu(epsilon, delta)``):
    about ``D sqrt(d) / mu``. A smooth public proxy for choosing defaults;
    the secure path's scale is at most a few percent larger.
    """
    if delta == 0:
        return sensitivity * (dimension / epsilon)
    return sensitivity * (math.sqrt(dimension) / gaussian_mu(epsilon, delta))


def noise_norm_quantile(mechanism, zeta):
    """``r`` with ``P(||noise|| > r) = exp(-zeta)`` for an l2-Laplace or Gaussian mechanism.

    l2-Laplace of scale s in dimension d: ``||b|| ~ Gamma(d, s)``. Gaussian:
    ``||b|| / sigma ~ chi(d)``. Both quantiles are exact (public: d, scale).
    """
    tail = math.exp(-zeta)
    d = mechanism.dimension
    if hasattr(mechanism, "sigma"):
        return mechanism.sigma * math.sqrt(special.gammainccinv(d / 2.0, tail) * 2.0)
    return mechanism.scale * special.gammainccinv(d, tail)


def noise_operator_norm_bound(mechanism, d, beta):
    """High-probability bound on ``||E||_op`` of a symmetric d x d noise matrix (utility only).

    ``mechanism`` releases the ``D = d (d + 1) / 2`` entries of the isometric
    vectorisation. Gaussian with per-coordinate std s: ``E = (s / sqrt(2)) W``,
    W a GOE matrix, ``||W|| <= 2 sqrt(d) + 2 sqrt(log(1/beta))`` w.h.p.
    l2-Laplace: radius Gamma(D, s) (``<= s (D + log(1/beta))`` w.p. 1 - beta)
    times a uniformly random unit-Frobenius symmetric matrix, of operator norm
    about ``sqrt(2) (sqrt(d) + sqrt(log(1/beta))) / sqrt(D)``.
    """
    log_b = math.log(1.0 / beta)
    if isinstance(mechanism, GaussianMechanism):
        return mechanism.sigma / math.sqrt(2.0) * (2.0 * math.sqrt(d) + 2.0 * math.sqrt(log_b))
    D = d * (d + 1) // 2
    radius = mechanism.scale * (D + log_b)
    return radius * math.sqrt(2.0) * (math.sqrt(d) + math.sqrt(log_b)) / math.sqrt(D)


def rate_dimension_term(d, delta):
    """``d`` for pure DP, ``sqrt(d log(1/delta))`` for approximate DP: the theory rates' noise factor.

    The noise of a release of sensitivity D has norm of order ``D d / epsilon``
    (l2-Laplace) or ``D sqrt(d log(1/delta)) / epsilon`` (Gaussian); the
    step-size and epoch rules of ALD (Props 1-2) and ACCD are written in it.
    """
    return d if delta == 0 else math.sqrt(d * math.log(1.0 / delta))
