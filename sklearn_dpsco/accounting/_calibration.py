"""Calibration and conversion as pure functions (doc/privacy/composition.rst).

Target budget -> noise scale, and privacy curve -> (epsilon, delta). Nothing
here touches data or randomness. Conventions:

* Gaussian mechanism on l2-sensitivity ``D`` with noise ``sigma``:
  ``mu = D / sigma`` (Gaussian DP). Its exact (epsilon, delta) curve is
  ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``
  (Balle and Wang 2018, Thm 8; Dong, Roth, Su 2019, Cor 2.13).
* zCDP ``rho``: Renyi divergence ``D_alpha <= alpha * rho`` for all alpha > 1
  (Bun and Steinke 2016).
"""

import functools
import math

import numpy as np
from scipy import optimize, special

from .._param_checks import check_delta, check_epsilon, check_nonnegative

__all__ = [
    "laplace_scale",
    "gaussian_sigma_classic",
    "gaussian_sigma_analytic",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "zcdp_epsilon",
    "zcdp_rho",
    "rdp_epsilon",
]


def laplace_scale(sensitivity, epsilon):
    """Scale ``b = sensitivity / epsilon`` of Laplace noise for epsilon-DP.

    Works for the coordinate Laplace (l1-sensitivity) and the isotropic
    l2-Laplace (l2-sensitivity) alike: both have density ratio at most
    ``exp(||shift|| / b)`` under a shift (doc/algorithms.rst, P1 and P2).
    """
    sensitivity = check_nonnegative(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    return sensitivity / epsilon


def gaussian_sigma_classic(sensitivity, epsilon, delta):
    """Classical Gaussian calibration ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon``.

    Valid for ``epsilon <= 1`` only (Dwork and Roth 2014, Thm A.1); raises
    otherwise. Prefer :func:`gaussian_sigma_analytic`, which is exact and
    never larger.
    """
    sensitivity = check_nonnegative(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism.")
    if epsilon > 1:
        raise ValueError(
            f"the classical Gaussian calibration needs epsilon <= 1, got {epsilon}; "
            "use gaussian_sigma_analytic."
        )
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def _log_gaussian_delta_terms(mu, epsilon):
    a = special.log_ndtr(mu / 2.0 - epsilon / mu)
    b = epsilon + special.log_ndtr(-mu / 2.0 - epsilon / mu)
    return a, b


def gaussian_delta(mu, epsilon):
    """Exact delta of ``mu``-Gaussian DP at ``epsilon`` (0 <= delta < 1)."""
    mu = check_nonnegative(mu, "mu")
    epsilon = check_nonnegative(epsilon, "epsilon")
    if mu == 0:
        return 0.0
    a, b = _log_gaussian_delta_terms(mu, epsilon)
    if b >= a:
        return 0.0
    # exp(a) - exp(b) = exp(a) * (1 - exp(b - a)), stable for tiny deltas.
    return float(math.exp(a) * -math.expm1(b - a))


def _nudge_until(holds, x, *, down, ulp=True):
    """Step ``x`` towards the safe side until ``holds(x)``, in a bounded number of steps.

    Root finders return a point within their tolerance on either side of the
    root; the guarantee must hold exactly as computed, so the point is moved
    by relative steps 1e-12, 2e-12, 4e-12, ... (each after one ulp when
    ``ulp``). The first step is the tiny one that almost always suffices; the
    doubling bounds the loop at about 40 evaluations even when the root
    finder's tolerance is large relative to ``x`` (tiny epsilon), where a
    fixed step of 1e-12 took minutes.
    """
    step = 1e-12
    while not holds(x):
        if ulp:
            x = np.nextafter(x, 0.0 if down else math.inf)
        x = x * (1 - step) if down else x * (1 + step)
        step = min(2.0 * step, 0.5)
    return x


def gaussian_mu(epsilon, delta):
    """The largest ``mu`` whose Gaussian-DP curve satisfies (epsilon, delta).

    A Gaussian mechanism is (epsilon, delta)-DP iff ``sensitivity / sigma <=
    gaussian_mu(epsilon, delta)``. Used for calibration and, in the audits,
    as the ``mu_max`` a Gaussian release may not exceed.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    delta = check_delta(delta)
    if delta == 0:
        return 0.0

    def excess(log_mu):
        return gaussian_delta(math.exp(log_mu), epsilon) - delta

    lo, hi = -30.0, 1.0
    while excess(hi) < 0:
        hi += 1.0
        if hi > 10:  # mu > e^10: delta(eps) -> 1 long before
            return math.exp(hi)
    log_mu = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    mu = math.exp(log_mu)
    # brentq returns a point within tolerance on either side: step down until
    # the guarantee holds exactly as computed.
    mu = _nudge_until(lambda m: gaussian_delta(m, epsilon) <= delta, mu, down=True)
    return float(mu)


def gaussian_sigma_analytic(sensitivity, epsilon, delta):
    """Smallest Gaussian ``sigma`` that is exactly (epsilon, delta)-DP (Balle and Wang 2018).

    Valid for every ``epsilon > 0`` and ``0 < delta < 1``.
    """
    sensitivity = check_nonnegative(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism.")
    if sensitivity == 0:
        return 0.0
    return sensitivity / gaussian_mu(epsilon, delta)


def gaussian_epsilon(mu, delta):
    """Smallest epsilon with ``gaussian_delta(mu, epsilon) <= delta``."""
    mu = check_nonnegative(mu, "mu")
    delta = check_delta(delta)
    if mu == 0:
        return 0.0
    if delta == 0:
        return math.inf
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while gaussian_delta(mu, hi) > delta:
        hi *= 2.0
    eps = optimize.brentq(
        lambda e: gaussian_delta(mu, e) - delta, 0.0, hi, xtol=1e-13, rtol=1e-14, maxiter=500
    )
    eps = _nudge_until(lambda e: gaussian_delta(mu, e) <= delta, eps, down=False)
    return float(eps)


def rdp_epsilon(alpha, rdp, delta):
    """(epsilon, delta) from one Renyi-DP point ``(alpha, rdp)``.

    Uses the conversion of Canonne, Kamath, Steinke 2020 (Prop. 12) /
    Asoodeh et al. 2021: ``eps = rdp + (log(1/delta) + (alpha-1) log(1-1/alpha)
    - log(alpha)) / (alpha - 1)``, which is never worse than Mironov's
    ``rdp + log(1/delta) / (alpha - 1)``.
    """
    return _rdp_conversion(alpha, rdp, math.log(1.0 / delta))


def _rdp_conversion(alpha, rdp, log_inv):
    """:func:`rdp_epsilon`'s formula with ``log_inv = log(1/delta)`` computed by the caller (once per grid)."""
    if alpha <= 1:
        raise ValueError(f"alpha must be > 1, got {alpha}.")
    return rdp + (log_inv + (alpha - 1) * math.log1p(-1.0 / alpha) - math.log(alpha)) / (alpha - 1)


def zcdp_epsilon(rho, delta):
    """Smallest epsilon this module can certify for ``rho``-zCDP at ``delta``.

    The minimum over alpha > 1 of :func:`rdp_epsilon` with ``rdp = alpha *
    rho``, and never more than the standard ``rho + 2 sqrt(rho log(1/delta))``
    (Bun and Steinke 2016, Prop 1.3).

    A pure function of two public floats, memoised (:func:`_zcdp_epsilon`):
    a fit's budget fill and its final accounting ask for the same ``rho``.
    """
    rho = check_nonnegative(rho, "rho")
    delta = check_delta(delta)
    if rho == 0:
        return 0.0
    if delta == 0:
        return math.inf
    return _zcdp_epsilon(rho, delta)


#: Memo sizes of the conversions: a budget fill inside a meta-estimator's allowance (a bisection of whole fills,
#: linear_model/_base.py, ``_plan_within_allowance``) asks for ~10^4 distinct points, and the next fold's fill for
#: the same ones (its budgets are read off the same public epsilon); 4096 entries were overwritten before reuse.
_MEMO_SIZE = 1 << 15


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _zcdp_epsilon(rho, delta):
    """:func:`zcdp_epsilon` for checked ``rho > 0`` and ``0 < delta < 1`` (Python floats)."""
    log_inv = math.log(1.0 / delta)
    standard = rho + 2.0 * math.sqrt(rho * log_inv)

    def objective(log_am1):
        alpha = 1.0 + math.exp(log_am1)
        return _rdp_conversion(alpha, alpha * rho, log_inv)

    # The optimum is near alpha = 1 + sqrt(log(1/delta) / rho); search around it.
    centre = 0.5 * math.log(max(log_inv, 1e-300) / rho)
    grid = centre + np.linspace(-8.0, 8.0, 161)
    # log(1/delta) once for the whole grid (the same floats as rdp_epsilon per point; tests/accounting
    # compare with the function-call form)
    i, value_i = _grid_argmin(objective, grid.tolist(), rho, log_inv)
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best = min(value_i, float(res.fun) if res.success else math.inf)
    # a tiny rho is (0, delta)-DP already, where the conversion's formula dips below 0
    return max(0.0, float(min(best, standard)))


#: Relative half-width of the interval around each vectorised grid value that surely holds the exact one
#: (:func:`_grid_argmin`); NumPy's exp / log / log1p are within a few ulps (~1e-15) of the math module's.
_GRID_TOLERANCE = 1e-10


def _grid_argmin(objective, points, rho, log_inv):
    """``(i, objective(points[i]))`` for the first ``i`` minimising ``objective`` over ``points``: exactly the
    values and index of ``[objective(g) for g in points]`` and ``np.argmin`` (speed only: the same floats).

    All points are evaluated at once with NumPy, whose floats may differ from the math module's by a few ulps;
    each vectorised value ``v_j`` is given an interval of relative half-width :data:`_GRID_TOLERANCE` of the
    magnitudes it was computed from, which holds the exact value. Every index that may attain the exact
    minimum (``v_j - tol_j <= min_k(v_k + tol_k)``) is then evaluated exactly (usually one or two), and the
    first index of the smallest exact value among them is the list form's argmin. Outside the well-scaled
    range (an ``alpha`` within 1e-12 of 1, a huge ``alpha``, any non-finite value) the list form itself runs,
    with its exceptions and NaN handling.
    """
    g = np.asarray(points)
    am1 = np.exp(g)
    if not (am1.min() > 1e-12 and am1.max() < 1e250):
        values = [objective(x) for x in points]
        i = int(np.argmin(values))
        return i, values[i]
    alpha = 1.0 + am1
    rdp = alpha * rho
    log_alpha = np.log(alpha)
    tail = (alpha - 1.0) * np.log1p(-1.0 / alpha)
    approx = rdp + (log_inv + tail - log_alpha) / (alpha - 1.0)
    if not np.all(np.isfinite(approx)):
        values = [objective(x) for x in points]
        i = int(np.argmin(values))
        return i, values[i]
    tol = _GRID_TOLERANCE * (np.abs(approx) + rdp + (log_inv + np.abs(tail) + np.abs(log_alpha)) / (alpha - 1.0))
    bound = float((approx + tol).min())
    best_i, best_v = -1, math.inf
    for j in np.flatnonzero(approx - tol <= bound).tolist():  # increasing j: the first minimiser wins ties
        v = objective(points[j])
        if not math.isfinite(v):  # cannot happen within the range above; the list form decides if it does
            values = [objective(x) for x in points]
            i = int(np.argmin(values))
            return i, values[i]
        if best_i < 0 or v < best_v:
            best_i, best_v = j, v
    return best_i, best_v


def zcdp_rho(epsilon, delta):
    """Largest ``rho`` such that rho-zCDP implies (epsilon, delta)-DP by :func:`zcdp_epsilon`."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be > 0 to convert zCDP to (epsilon, delta)-DP.")
    return _zcdp_rho(float(epsilon), float(delta))


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _zcdp_rho(epsilon, delta):
    """:func:`zcdp_rho` for checked ``epsilon > 0`` and ``0 < delta < 1`` (memoised: a pure function of two public
    floats, asked for by every split and every Gaussian mechanism of a budget fill)."""
    # rho + 2 sqrt(rho L) <= eps at rho_std = (sqrt(L + eps) - sqrt(L))^2; the
    # optimal conversion allows at least that much.
    log_inv = math.log(1.0 / delta)
    lo = (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2
    hi = max(2.0 * lo, epsilon)
    while zcdp_epsilon(hi, delta) <= epsilon:
        hi *= 2.0
    # an absolute xtol of 1e-15 is coarse when rho itself is tiny (epsilon ~ 1e-6 gives rho ~ 1e-10)
    xtol = min(1e-15, lo * 1e-13)
    rho = optimize.brentq(lambda r: zcdp_epsilon(r, delta) - epsilon, lo * (1 - 1e-9), hi, xtol=xtol, rtol=1e-13)
    rho = _nudge_until(lambda r: zcdp_epsilon(r, delta) <= epsilon, rho, down=True, ulp=False)
    return float(rho)
