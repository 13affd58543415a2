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
from fractions import Fraction

import numpy as np
from scipy import special

from ..accounting._calibration import gaussian_mu, zcdp_rho
from ..accounting._shares import zcdp_share
from ._additive import GaussianMechanism, L2LaplaceMechanism, LaplaceMechanism, _float_up, gaussian_event
from ._integer import TruncatedDiscreteLaplace
from ._quantile import DEFAULT_SELECTION, QuantileMechanism
from ._scale_grid import ScaleGrid
from ._steps import GaussianSteps

__all__ = [
    "certified_sensitivity",
    "clipped_sum_sensitivity",
    "dp_gd_sigma",
    "dp_gd_step_mechanism",
    "expected_noise_norm",
    "fkt_sigma",
    "gaussian_mechanism_for",
    "gaussian_steps",
    "grid_mean_sensitivity",
    "laplace_mechanism_for",
    "mechanism_for",
    "noise_norm_quantile",
    "noise_operator_norm_bound",
    "one_pass_step_mechanism",
    "quantile_mechanism_for",
    "rate_dimension_term",
    "sensitivity_norms",
    "truncated_level_for",
    "user_grid_terms",
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


#: Unit roundoff of float64.
_U = Fraction(1, 2**53)


#: Smallest clip level whose clipping the float error bound covers (no underflow in the norm).
_MIN_CLIP = 2.0**-300


def _gamma(k):
    """Higham's ``gamma_k = k u / (1 - k u)`` as an exact rational (``k u < 1``)."""
    return k * _U / (1 - k * _U)


def clipped_sum_sensitivity(clip, n_terms, dimension, term_error):
    """l2-sensitivity of the float64 sum of ``n_terms`` clipped vectors when one term is replaced.

    Each term is a ``dimension``-vector computed in float64 (within
    ``term_error`` of its exact value, a public bound) and clipped to norm
    ``clip`` by ``v min(1, C / ||v||)``; the terms are summed in float64 in
    any order. Exactly, replacing one term moves the sum by at most ``2C``;
    the returned bound also covers every rounding of the computation, so it
    holds for the floats the release actually rounds to its grid.

    ``clip`` must be at least ``2^-300``: below that, squares of the
    components underflow and the computed norm (hence the clipping) is no
    longer within ``gamma_{2p+6}`` of the exact one.
    """
    if not clip >= _MIN_CLIP:
        raise ValueError(f"clip must be >= 2^-300 for the secure path's float error bound, got {clip!r}.")
    C, n, p = Fraction(clip), int(n_terms), int(dimension)
    g_clip, g_sum = _gamma(2 * p + 6), _gamma(max(n - 1, 1))
    # why: a computed clipped vector has norm <= C (1 + gamma_{2p+6}) (norm, quotient and products, each
    # rounded); the other n - 1 terms are within C gamma_{2p+6} + term_error of the SAME exact clipped
    # vector on both neighbours (exact clipping is 1-Lipschitz); summation in any order errs by at most
    # gamma_{n-1} sum ||x_i|| on each side (Higham 2002, §4.2). Exactly: 2C
    # (doc/privacy/user_level.rst, "user_dp_sgd on the secure path").
    bound = 2 * C * (1 + g_clip) * (1 + n * g_sum) + 2 * (n - 1) * (C * g_clip + Fraction(term_error))
    return _float_up(bound)


def row_grid_sum_sensitivity(clip, n_terms, dimension, grid):
    """l2-sensitivity of ``grid * float(K)``, ``K`` the exact integer sum of ``n_terms`` rows clipped to ``clip``
    and rounded to ``grid`` (a power of two) coordinate by coordinate (``_fast._rows.clipped_row_grid_sums``),
    when one row is replaced.

    Each rounded row has norm at most ``C (1 + gamma_{2p+6}) + sqrt(p) grid / 2``; the integers add exactly,
    so replacing one row moves ``grid K`` by at most twice that; converting ``K`` to float64 errs by at most
    ``u |K_j|`` per coordinate on each side (``grid`` a power of two: the product is exact), and ``grid ||K||``
    is at most ``n`` times the rounded rows' norm.
    """
    if not clip >= _MIN_CLIP:
        raise ValueError(f"clip must be >= 2^-300 for the secure path's float error bound, got {clip!r}.")
    C, n, p, g = Fraction(clip), int(n_terms), int(dimension), Fraction(grid)
    # why: the rounded row's norm (clip computed within gamma_{2p+6}, then +- grid/2 per coordinate); sqrt(p)
    # bounded above by the rational p/isqrt(p) >= sqrt(p) (doc/privacy/hinge.rst, "Private centring")
    root_p = Fraction(p, math.isqrt(p)) if p > 0 else Fraction(0)
    term = C * (1 + _gamma(2 * p + 6)) + root_p * g / 2
    bound = 2 * term + 2 * Fraction(1, 2**53) * n * term
    return _float_up(bound)


def grid_mean_sensitivity(width, magnitude, grid, n_terms):
    """Sensitivity of ``fl(grid * float(Q) / n_terms)`` when ``Q`` is the exact integer sum of ``n_terms``
    integers, one per privacy unit, each in an interval of ``width`` and of absolute value at most
    ``magnitude`` (public integers), when one unit's integer is replaced. Returns an exact ``Fraction``.

    The integers add exactly, so ``Q`` moves by at most ``width``. ``float(Q)`` errs by at most ``u |Q|``
    (``|Q| <= n magnitude``) on each side; ``grid`` is a power of two (a normal float), so the product is
    exact; the division by ``n`` errs by at most ``u |grid float(Q)| / n`` plus, below the normal range,
    ``2^-1075`` on each side (doc/privacy/preprocessing.rst, "Exact statistics on the secure path").
    """
    W, M, g, n = int(width), int(magnitude), Fraction(grid), int(n_terms)
    if W < 0 or M < 0 or n < 1 or not g > 0:
        raise ValueError("grid_mean_sensitivity needs width, magnitude >= 0, grid > 0 and n_terms >= 1.")
    if W == 0:
        # why: every unit's integer is the same public value, so Q, hence every float computed from it, is the
        # same on both neighbours (a feature with lower == upper): nothing moves
        return Fraction(0)
    # why: |Q - Q'| <= W exactly; |fl(Q) - Q| <= u |Q| <= u n M per side; |fl(y/n) - y/n| <= u |y| / n + 2^-1075
    # with |y| <= g n M (1 + u) (Higham 2002, §2.2, round to nearest)
    return g * (W + 2 * _U * n * M) / n + 2 * _U * g * M * (1 + _U) + Fraction(1, 2**1074)


def user_grid_terms(terms, starts, counts, lo, hi):
    """Each user's integer ``q_u = clip(rint(K_u / k_u), lo, hi)``: ``K_u`` the exact int64 sum of its ``k_u``
    rows' grid terms (rows grouped by user, ``starts`` each user's first row, ``counts`` its rows; along axis 0).

    ``q_u`` is a function of that user's rows only, in ``[lo, hi]``, whatever the others hold or how users
    sort: the one term per unit of the exact user-level sums (DPStandardScaler's statistics, the searches'
    released scores; :func:`grid_mean_sensitivity`). ``K_u`` is exact while a user holds fewer than about
    ``2^30`` rows; a wrap-around beyond would still give an integer of that user's rows only, clipped into
    the range: utility, not privacy.
    """
    return np.clip(np.rint(np.add.reduceat(terms, starts, axis=0) / counts), lo, hi).astype(np.int64)


def sensitivity_norms(per_coordinate):
    """``(l1, l2)``: floats at least the l1 and l2 norms of a vector of exact ``Fraction`` bounds."""
    fr = [Fraction(v) for v in per_coordinate]
    l1 = _float_up(sum(fr, Fraction(0)))
    sq = sum((v * v for v in fr), Fraction(0))
    if sq == 0:
        return l1, 0.0
    # the square is scaled by 4^-e into [1/4, 4) first: for sensitivities near 1e155 and above (or 1e-162 and
    # below) it would overflow (underflow) a float; in between the same float as sqrt(_float_up(sq)) (power-of-two
    # scalings commute with the roundings and the square root)
    e = (sq.numerator.bit_length() - sq.denominator.bit_length()) // 2
    l2 = math.ldexp(math.sqrt(_float_up(sq / Fraction(4) ** e)), e)
    if not math.isfinite(l2):
        raise ValueError(f"an l2-sensitivity above the float range (about {float(max(fr)):.3g} per coordinate).")
    while Fraction(l2) ** 2 < sq:  # an upper bound of the square root, checked exactly
        l2 = math.nextafter(l2, math.inf)
    return l1, l2


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


def mechanism_event_for(sensitivity, budget, dimension):
    """``mechanism_for(sensitivity, budget, dimension).event``: the same checks and the same event, without
    building the Gaussian mechanism (a budget fill reads only the events of its candidate plans)."""
    if budget.delta == 0:
        return mechanism_for(sensitivity, budget, dimension).event
    return gaussian_event(sensitivity, budget.epsilon, budget.delta, dimension, noise=budget.noise)


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


# --------------------------------------------------------------------------- per-step noise
def dp_gd_step_mechanism(sensitivity, iterations, budget, dimension):
    """The secure per-step release of user-level DP-GD: ``iterations`` discrete Gaussian steps within ``budget``.

    Each step rounds its (clipped) gradient sum to the mechanism's grid and
    adds exact discrete Gaussian noise (:class:`GaussianMechanism`,
    ``noise="secure"``). The fit's event is ``SelfComposedEvent(mechanism.event,
    iterations)``.

    Raises
    ------
    ValueError
        If ``budget`` is not on the secure path, or is too small to split
        into ``iterations`` calibratable steps (decided from the public budget).
    """
    if budget.noise != "secure" or budget.delta == 0:
        raise ValueError("dp_gd_step_mechanism is the secure Gaussian path: it needs noise='secure' and delta > 0.")
    T = int(iterations)
    # why: GaussianMechanism rounds the sum to its grid gamma, so neighbouring centres differ by at most
    # S2 = floor((D/gamma + sqrt(d))^2) in squared grid units, and adds N_Z(0, N) with N >= S2 / (2 rho_step):
    # (S2 / 2N)-zCDP for the released integers, hence for the floats (CKS20 Thm 14). T adaptively chosen
    # steps compose additively in zCDP (Bun and Steinke 2016, Lemma 2.3), so a 1/T zCDP share of
    # zcdp_rho(epsilon, delta) per step keeps T S2 / 2N <= rho, which zcdp_epsilon converts back to
    # (epsilon, delta) (doc/privacy/secure_noise.rst "Gaussian"; doc/privacy/user_level.rst).
    share = zcdp_share(zcdp_rho(budget.epsilon, budget.delta) / T, budget.delta)
    if share.epsilon <= 0:
        raise ValueError(
            f"the budget (epsilon={budget.epsilon:g}, delta={budget.delta:g}) is too small to split into "
            f"{T} secure Gaussian steps: at this delta each step's share is already met by any noise, so it "
            "cannot be calibrated. Use fewer iterations or a larger epsilon. Nothing was spent."
        )
    return GaussianMechanism(sensitivity, share.epsilon, budget.delta, dimension, noise="secure")


def one_pass_step_mechanism(sensitivity, budget, dimension):
    """The secure per-step release of one-pass noisy SGD on disjoint batches (secure Snowball-SGD).

    Every step releases its batch's gradient sum through one
    :class:`GaussianMechanism` at the FULL budget (``noise="secure"``: grid-rounded
    sum, exact discrete Gaussian). The fit's event is ``mechanism.event``.

    Raises
    ------
    ValueError
        If ``budget`` is not on the secure path or has ``delta == 0``.
    """
    if budget.noise != "secure" or budget.delta == 0:
        raise ValueError("one_pass_step_mechanism is the secure Gaussian path: it needs noise='secure' and delta > 0.")
    # why: each row is read in exactly one step (disjoint batches in a data-independent order), so for
    # neighbours differing in one row every other step's release has the same conditional law given the
    # earlier releases; the zCDP chain rule (Bun and Steinke 2016, Lemma 2.3) sums to that one step's
    # S2 / 2N <= zcdp_rho(epsilon, delta): every step may use the full budget (parallel composition,
    # doc/privacy/snowball_sgd.rst "Secure path"; doc/privacy/secure_noise.rst "Gaussian").
    return GaussianMechanism(sensitivity, budget.epsilon, budget.delta, dimension, noise="secure")


def dp_gd_sigma(sensitivity, iterations, epsilon, delta):
    """Per-step sigma of ``iterations`` float Gaussian steps on a sum of l2-sensitivity ``sensitivity``."""
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
    """The per-step float Gaussian ``N(0, sigma^2 I)`` of PNSGD, Snowball-SGD and float-path user-level DP-GD.

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
