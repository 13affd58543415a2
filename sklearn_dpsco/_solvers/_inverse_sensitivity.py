"""The 1-D smooth gradient-based inverse-sensitivity mechanism (ALD-0), exact on a public grid.

Asi, Levy, Duchi 2021, eq. (5) and Thm 1 (doc/algorithms.rst, ALD-0;
doc/privacy/inverse_sensitivity.rst). For one coefficient ``w`` and the
empirical loss ``f_S(w) = (1/n) sum_i s_i F_C(w; x_i, y_i)`` of the
C-Lipschitz extension of a GLM loss, the score of a point is

    G(w) = inf { dist(0, ∂f_S(y)) : y in [w - rho, w + rho] ∩ [a, b] },

the smallest subgradient norm within ``rho`` of ``w``. Because ``f_S'`` is
monotone, with ``lo = max(a, w - rho)`` and ``hi = min(b, w + rho)``:

    G(w) = max(0, f'_-(lo), -f'_+(hi)),

computed exactly from two one-sided derivatives (no inner search). The
mechanism is the exponential mechanism over the public grid
``a = w_0 < ... < w_{m-1} = b`` (spacing ``h``, ``rho = h / 2``) with
probabilities proportional to ``exp(-epsilon G / (2 Delta))``, where
``Delta = 2 C / n`` (+ a float64 summation margin) is the replace-one
sensitivity of G: every per-row derivative term lies in ``[-C, C]`` (the
extension, then an explicit clip), so one row moves each one-sided derivative
— and hence G — by at most ``2 C / n``. That is ``exp(-epsilon n G / (4 C))``:
ALD print ``exp(-epsilon n G / (2 L))``, which is only 2 epsilon-DP (the
normaliser moves too); the factor-2 fix is doc/algorithms.rst, §7.2 item 1.

A plan is computed from public inputs only (n, C, the domain, the grid,
epsilon); the scores touch the data; the release is one categorical draw.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._param_checks import check_epsilon, check_positive
from ..accounting import PureDPEvent

__all__ = [
    "InverseSensitivityPlan",
    "inverse_sensitivity",
    "inverse_sensitivity_log_pmf",
    "inverse_sensitivity_plan",
    "inverse_sensitivity_scores",
    "run_inverse_sensitivity",
]

_UNIT_ROUNDOFF = 2.0**-53
#: Default grid sizes: the piecewise-linear fast path costs O((n + m) log n),
#: the general path O(n m).
GRID_SIZE_FAST = 2**16 + 1
GRID_SIZE_GENERAL = 2**12 + 1
# Rows x grid points evaluated at once on the general path (memory bound).
_CHUNK = 2**22


@dataclass(frozen=True)
class InverseSensitivityPlan:
    """Public plan of one release: grid, smoothing, score sensitivity, exponent."""

    n: int
    lipschitz: float
    epsilon: float
    center: float
    radius: float
    grid_size: int
    start: int
    sensitivity: float
    event: object

    @property
    def grid(self):
        return self.center + np.linspace(-self.radius, self.radius, self.grid_size)

    @property
    def spacing(self):
        return 2.0 * self.radius / (self.grid_size - 1)

    @property
    def smoothing(self):
        """ALD's rho: half the grid spacing, so some grid point lies within rho of any minimizer."""
        return 0.5 * self.spacing

    @property
    def exponent(self):
        """The factor t in ``P(w_j) ∝ exp(-t G(w_j))``: ``epsilon / (2 Delta)`` ≈ ``epsilon n / (4 C)``."""
        return self.epsilon / (2.0 * self.sensitivity)

    def evaluation_points(self):
        """``a``, the midpoints between grid points, ``b``: the ends of each point's rho-window."""
        g = self.grid
        return np.concatenate(([g[0]], 0.5 * (g[:-1] + g[1:]), [g[-1]]))


def score_sensitivity(n, lipschitz):
    """Replace-one sensitivity of the computed score G, float64 summation included."""
    # why: each of the n per-row derivative terms lies in [-C, C] (extension +
    # clip), so replacing one row moves the exact mean by <= 2C/n. A computed
    # mean is within (3n + 4) u C of the exact mean of the computed terms (two
    # prefix sums, a subtraction and a division; u = 2^-53), so the computed G
    # of two neighbours differ by at most 2C/n + 2 (3n + 4) u C
    # <= 2C/n + 8 (n + 2) u C — negligible next to 2C/n for n < 1e6
    # (doc/privacy/inverse_sensitivity.rst).
    return 2.0 * lipschitz / n + 8.0 * (n + 2) * _UNIT_ROUNDOFF * lipschitz


def inverse_sensitivity_plan(n, *, lipschitz, center, radius, epsilon, grid_size=GRID_SIZE_GENERAL, start=0):
    """Plan ALD-0 on ``n`` rows from ``start`` over the grid ``center ± radius``.

    Parameters
    ----------
    n : int
        Rows used (public).
    lipschitz : float
        Lipschitz level C of the loss extension (public).
    center, radius : float
        The public domain ``[center - radius, center + radius]``.
    epsilon : float
        The mechanism is ``epsilon``-DP (pure) under replace-one.
    grid_size : int, default=GRID_SIZE_GENERAL
        Number of grid points (odd keeps ``center`` on the grid).

    Returns
    -------
    InverseSensitivityPlan
    """
    lipschitz = check_positive(lipschitz, "lipschitz")
    radius = check_positive(radius, "radius")
    epsilon = check_epsilon(epsilon)
    center = float(center)
    if not math.isfinite(center):
        raise ValueError(f"center must be finite, got {center!r}.")
    if int(grid_size) != grid_size or grid_size < 2:
        raise ValueError(f"grid_size must be an integer >= 2, got {grid_size!r}.")
    if n < 1:
        raise ValueError("the inverse-sensitivity mechanism needs at least one row.")
    return InverseSensitivityPlan(
        n=int(n), lipschitz=lipschitz, epsilon=epsilon, center=center, radius=radius, grid_size=int(grid_size),
        start=int(start), sensitivity=score_sensitivity(n, lipschitz), event=PureDPEvent(epsilon),
    )


# ----------------------------------------------------------------------------- one-sided derivatives
def _rows(data, plan):
    stop = plan.start + plan.n
    x = data.matvec(np.ones(1), plan.start, stop)  # the single feature (or the intercept column)
    y = data.y[plan.start:stop]
    s = data.weights(plan.start, stop)
    return x, y, s


def _piecewise_linear(loss):
    return getattr(loss, "name", "") in ("absolute", "power(1)")


def _derivatives_absolute(x, y, s, points, C):
    """One-sided derivatives of the mean extended absolute loss at ``points`` in O((n + m) log n).

    Row i contributes ``c_i sign(w - k_i)`` with kink ``k_i = y_i / x_i`` and
    weight ``c_i = s_i min(|x_i|, C) <= C``; at ``w = k_i`` the
    right derivative takes ``+c_i`` and the left ``-c_i``.
    """
    n = x.size
    active = x != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        kinks = np.where(active, y / np.where(active, x, 1.0), 0.0)
    c = np.where(active, np.minimum(s * np.minimum(np.abs(x), C), C), 0.0)
    order = np.argsort(kinks, kind="stable")
    k_sorted, c_sorted = kinks[order], c[order]
    cum = np.concatenate(([0.0], np.cumsum(c_sorted)))
    total = cum[-1]
    # right derivative: rows with k_i <= w count +, others -
    right = (2.0 * cum[np.searchsorted(k_sorted, points, side="right")] - total) / n
    # left derivative: rows with k_i < w count +
    left = (2.0 * cum[np.searchsorted(k_sorted, points, side="left")] - total) / n
    return left, right


# Losses with kinks: their one-sided derivatives differ there (evaluated just beside z).
_KINKED = ("hinge", "absolute", "power(1)")


def _power_deriv(p):
    """Derivative of |r|^p in r (p > 1), with cheap special cases."""
    if p == 2.0:
        return lambda r: 2.0 * r
    if p == 3.0:
        return lambda r: 3.0 * r * np.abs(r)
    return lambda r: p * np.sign(r) * np.abs(r) ** (p - 1.0)


def _derivatives_general(loss, x, y, s, points, C):
    """One-sided derivatives of ``(1/n) sum_i s_i psi_i(x_i w)`` at ``points`` (O(n m), chunked).

    Row i contributes ``s_i x_i clip(phi'(x_i w), -C/|x_i|, C/|x_i|)``, computed
    as ``clip(s_i x_i phi'(x_i w), -s_i C, s_i C)`` (the same number), so every
    computed term lies in ``[-C, C]`` exactly.
    """
    n = x.size
    keep = (x != 0) & (s != 0)  # rows that contribute exactly 0
    x, y, s = x[keep], y[keep], s[keep]
    a, b = (s * x)[:, None], (s * C)[:, None]
    with np.errstate(divide="ignore"):
        k = (C / np.abs(x))[:, None]
    p = getattr(loss, "p", None)
    power = _power_deriv(p) if (p is not None and p > 1 and not loss.classification) else None
    kinked = getattr(loss, "name", "") in _KINKED
    left = np.zeros(points.size)
    right = np.zeros(points.size)
    rows = max(1, _CHUNK // max(points.size, 1))
    for lo in range(0, x.size, rows):
        sl = slice(lo, lo + rows)
        xb, yb, ab, bb, kb = x[sl, None], y[sl, None], a[sl], b[sl], k[sl]
        z = xb * points[None, :]
        # right derivative in w: the z-derivative just above z if x > 0, just below if x < 0
        directions = ((right, 1.0), (left, -1.0)) if kinked else ((right, 0.0),)
        for out, direction in directions:
            zz = np.nextafter(z, direction * np.where(xb > 0, 1.0, -1.0) * np.inf) if direction else z
            with np.errstate(over="ignore", invalid="ignore"):
                # r, phi'(r) may overflow to +-inf (never NaN: x, y finite, a != 0); the clip bounds them
                deriv = power(zz - yb) if power is not None else loss.ext_deriv(zz, yb, kb)
                term = np.clip(ab * deriv, -bb, bb)
            out += term.sum(axis=0)
    if not kinked:
        left[:] = right
    return left / n, right / n


def inverse_sensitivity_scores(data, loss, plan):
    """The score G at every grid point (touches the data; not a release)."""
    if data.n_features != 1:
        raise ValueError(f"the inverse-sensitivity mechanism is one-dimensional; got {data.n_features} coefficients.")
    x, y, s = _rows(data, plan)
    points = plan.evaluation_points()
    C = plan.lipschitz
    if _piecewise_linear(loss):
        left, right = _derivatives_absolute(x, y, s, points, C)
    else:
        left, right = _derivatives_general(loss, x, y, s, points, C)
    # G(w_j) = max(0, f'_-(lo_j), -f'_+(hi_j)) with lo_j = points[j], hi_j = points[j + 1]
    return np.maximum(0.0, np.maximum(left[:-1], -right[1:]))


def inverse_sensitivity_log_pmf(data, loss, plan):
    """Log-probabilities of the grid points under the mechanism (for audits and diagnostics)."""
    logits = -plan.exponent * inverse_sensitivity_scores(data, loss, plan)
    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


def run_inverse_sensitivity(data, loss, plan, rng):
    """Release one grid point, drawn with probability ``∝ exp(-epsilon n G / (4 C))``.

    Returns an array of shape (1,).
    """
    logp = inverse_sensitivity_log_pmf(data, loss, plan)
    cdf = np.cumsum(np.exp(logp))
    j = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return np.array([plan.grid[min(j, plan.grid_size - 1)]])


def inverse_sensitivity(data, loss, *, lipschitz, center, radius, epsilon, rng, grid_size=None, start=0, stop=None):
    """ALD-0 on rows [start, stop): plan from public inputs, then release. Returns a PrivateFit."""
    from ._core._result import PrivateFit

    stop = data.n_samples if stop is None else stop
    if grid_size is None:
        grid_size = GRID_SIZE_FAST if _piecewise_linear(loss) else GRID_SIZE_GENERAL
    plan = inverse_sensitivity_plan(
        stop - start, lipschitz=lipschitz, center=center, radius=radius, epsilon=epsilon, grid_size=grid_size,
        start=start,
    )
    w = run_inverse_sensitivity(data, loss, plan, rng)
    return PrivateFit(
        coef=w, event=plan.event,
        info={"grid_size": plan.grid_size, "spacing": plan.spacing, "smoothing": plan.smoothing,
              "score_sensitivity": plan.sensitivity},
    )
