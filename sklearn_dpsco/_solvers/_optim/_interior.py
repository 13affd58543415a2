"""Dual starts for kinked losses from an interior-point solve of the dual box QP (speed only, never privacy).

The dual of ``min_w (1/n) sum_i s_i c_i psi(<x_i, w>, y_i) + lam/2 ||w - w0||^2`` for the
hinge (``psi = max(0, 1 - y z)``) and the absolute loss (``psi = |z - y|``), with
``c_i = min(1, k_i)`` the kernel's slopes, is a box-constrained quadratic program in
``a_i = s_i beta_i``::

    min_a  F(a) = -<y, a> + <X^T a, w0> + ||X^T a||^2 / (2 lam n),   l_i <= a_i <= u_i,

(hinge: ``y_i a_i`` in ``[0, s_i c_i]``; absolute: ``|a_i| <= s_i c_i``), whose primal point is
``w(a) = w0 + X^T a / (lam n)`` and whose gradient is ``X w(a) - y``. Dual coordinate ascent
(the certified kernel, ``_fast._erm``) solves it one row at a time; when many rows sit within a
hair of their kink at the minimizer and the rows have directions of tiny spread (columns that are
almost constant next to the intercept column, e.g. after a noisy private column scaling), the
quadratic's small eigenvalues make it crawl: Benefits after ``DPStandardScaler`` at epsilon 2
(3413 rows, 2335 of them within 1e-3 of the kink, singular values of the rows 66 ... 0.001)
needed 2696 passes where the public budget is 2000, and the fit refused.

A primal-dual interior-point method (Mehrotra predictor-corrector) is insensitive to that: each
step solves ``(X X^T / (lam n) + D) da = r`` with ``D`` diagonal by the Woodbury identity, a
``d x d`` system built in one pass over the rows (``O(n d^2)``), and it converges in a few dozen
steps whatever the kink pattern. Its duality gap at ``w(a)`` is at most the complementarity
``mu`` per row (for a row with ``y z < 1``: ``(c - a) (1 - y z) <= (c - a) z_u``, and similarly
on the other side), which is exactly the certificate the kernel computes.

The point found is only a *start* (``certified_erm(..., dual_start=beta)``): the kernel recomputes
the duality gap over every row from scratch, with its rounding margin, and compares it with the
same public target; when it falls short the ascent continues within its public budget. Privacy
is untouched (doc/privacy/output_perturbation.rst, "Warm starts"). Deterministic: NumPy with one
BLAS thread (the released point must not depend on thread settings).
"""

import warnings
from functools import partial

import numpy as np
import scipy.linalg

from ._warm_start import INSIDE, MAX_GRAM_FEATURES, _solve_pos, gram_system, one_blas_thread, row_matvec, row_rmatvec

__all__ = ["MAX_IPM_STEPS", "interior_dual_start"]

#: Public cap on the interior-point steps of one solve (each reads the rows about three times).
MAX_IPM_STEPS = 80
#: The solve stops when its own (float, unproven) duality gap implies a distance below this fraction of
#: the target; the kernel then proves the distance with its rounding margin.
IPM_TARGET = 0.25
#: Fraction of the step to the boundary of the box and of the dual slacks' positive orthant.
STEP_FRACTION = 0.995


def _max_step(x, dx):
    """Largest ``t <= 1`` with ``x + t dx >= 0`` (``x > 0``)."""
    neg = dx < 0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, np.min(-x[neg] / dx[neg])))


def interior_dual_start(data, hinge, lam, w0, cap, target_distance, start=0, stop=None):
    """Dual variables ``beta`` for rows [start, stop) of a hinge or absolute-loss problem, or None.

    Parameters
    ----------
    data : GLMData
    hinge : bool
        True for the hinge loss (labels +-1), False for the absolute loss.
    lam, w0 : the problem's regularisation and centre (no ball).
    cap : ndarray of shape (stop - start,)
        The kernel's slopes ``c_i = min(1, k_i)`` (``Objective.k_values``).
    target_distance : float
        The certified solver's public target.
    start, stop : int

    Returns
    -------
    ndarray of shape (stop - start,) or None
        The iterate with the smallest gap: a point of the dual box (pulled inside it by ``INSIDE``), or
        None when the rows are too wide for a Gram matrix or no iterate is finite (the caller keeps its
        own start).
    """
    stop = data.n_samples if stop is None else stop
    d = data.n_features
    n = stop - start
    if n < 1 or d < 1 or d > MAX_GRAM_FEATURES:
        return None
    X = data.X[start:stop]
    y = np.asarray(data.y[start:stop], dtype=float)
    sw = np.ones(n) if data.sample_weight is None else np.asarray(data.sample_weight[start:stop], dtype=float)
    s = float(data.intercept_scaling)
    w0 = np.asarray(w0, dtype=float)
    sc = sw * np.asarray(cap, dtype=float)  # each row's slope s_i c_i: its loss term and its box's width
    live = sc > 0
    if not np.all(np.isfinite(sc)) or not np.any(live):
        return None
    if not np.all(live):
        X, y, sc = X[np.flatnonzero(live)], y[live], sc[live]
    width = INSIDE * sc
    if hinge:
        lo, hi = np.where(y > 0, 0.0, -width), np.where(y > 0, width, 0.0)
    else:
        lo, hi = -width, width
    m = y.shape[0]
    matvec, rmatvec = partial(row_matvec, X, s), partial(row_rmatvec, X, s)
    c = lam * n
    tol_gap = 0.5 * lam * (IPM_TARGET * target_distance) ** 2
    best, best_gap = None, np.inf
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), one_blas_thread():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            a = 0.5 * (lo + hi)
            zl, zu = np.ones(m), np.ones(m)
            for _ in range(MAX_IPM_STEPS):
                w = w0 + rmatvec(a) / c
                z = matvec(w)
                g = z - y
                # the certificate's gap at w(a), per row: s c psi(z) + a (z - y) (a = s beta)
                psi = np.maximum(1.0 - y * z, 0.0) if hinge else np.abs(g)
                gap = float(np.sum(sc * psi + a * g)) / n
                if not np.isfinite(gap):
                    break
                if gap < best_gap:
                    best, best_gap = a, gap
                if gap <= tol_gap:
                    break
                sl, su = a - lo, hi - a
                r = g - zl + zu
                mu = float(sl @ zl + su @ zu) / (2 * m)
                D = zl / sl + zu / su
                Dinv = 1.0 / D
                # (X X^T / c + D)^{-1} by Woodbury: D^-1 - D^-1 X (c I + X^T D^-1 X)^-1 X^T D^-1
                K = gram_system(X, Dinv, s, unit=False) + c * np.eye(d)

                def solve(rhs):
                    q = Dinv * rhs
                    return q - Dinv * matvec(_solve_pos(K, rmatvec(q)))

                # predictor (sigma = 0)
                da = solve(-g)
                dzl = -zl - zl * da / sl
                dzu = -zu + zu * da / su
                t = STEP_FRACTION * min(_max_step(sl, da), _max_step(su, -da), _max_step(zl, dzl), _max_step(zu, dzu))
                mu_aff = float((sl + t * da) @ (zl + t * dzl) + (su - t * da) @ (zu + t * dzu)) / (2 * m)
                sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
                # corrector: complementarity targets sigma mu with the predictor's second-order terms
                cl = sigma * mu - sl * zl - da * dzl
                cu = sigma * mu - su * zu + da * dzu
                da = solve(-r + cl / sl - cu / su)
                dzl = (cl - zl * da) / sl
                dzu = (cu + zu * da) / su
                t = STEP_FRACTION * min(_max_step(sl, da), _max_step(su, -da), _max_step(zl, dzl), _max_step(zu, dzu))
                a = np.clip(a + t * da, lo, hi)
                zl, zu = zl + t * dzl, zu + t * dzu
                # a step that leaves the interior (rounding, far past the gap the certificate can use) ends it
                if not (np.all(np.isfinite(a)) and np.all(zl > 0) and np.all(zu > 0) and np.all(a > lo)
                        and np.all(a < hi)):
                    break
    except (np.linalg.LinAlgError, ValueError):
        pass
    if best is None:
        return None
    a = best
    beta = np.zeros(n)
    # beta_i = a_i / s_i (rows of weight 0 keep 0)
    beta[live] = a / sw[live]
    return beta if np.all(np.isfinite(beta)) else None
