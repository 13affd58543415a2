"""A deterministic, always-successful certified solver for user-level logistic ERM.

For a set V of users (rows sorted by user, every row norm <= R) it minimizes

    F_V(w) = (1 / (|V| m)) sum_{u in V} sum_{r in u} log(1 + exp(-y_r <x_r, w>)) + (lam / 2) ||w - c||^2

(m the public per-user cap, c a public or earlier-private centre) and returns
a point within the public distance ``tau`` of the exact minimizer. The
guarantee is deterministic and the function never raises on data:

1. damped Newton from c, stopped as soon as the strong-convexity certificate
   ``||grad F_V(w)|| + rounding margin <= lam * tau`` holds
   (``||w - w*|| <= ||grad F_V(w)|| / lam``);
2. if that has not happened within a fixed number of Newton steps, Nesterov's
   accelerated gradient method from c for a number of steps computed from
   PUBLIC quantities only (R, lam, tau), after which the convergence theorem
   guarantees ``||w - w*|| <= tau`` (Bubeck 2015, Thm 3.18, with
   ``||c - w*|| <= R / lam``).

Why not ``solve_certified``: the deletion-sensitivity mechanisms evaluate the
solver on data they do not control, and ``solve_certified`` may raise
:class:`CertificationError` — an error that depends on the private data
(doc/privacy/user_level.rst). This solver cannot fail: the fallback's
guarantee is a theorem, not a measurement. The same deterministic function is
used on every subset of users, as G-Alg 1 requires.
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from scipy.special import expit

from .._core._user_data import group_gradient_sums

__all__ = ["UserERMResult", "agd_iterations", "augmented_user_sums", "solve_user_logistic", "user_objective"]

_U = 2.0**-53  # unit roundoff of float64
_MAX_NEWTON = 50  # a fixed cap; Newton on these problems converges in well under 20 steps
_DENSE_NEWTON_MAX_DIM = 2000  # above this, skip Newton (d x d systems) and use the AGD path


class UserERMResult:
    """The point and how it was certified (diagnostic only; never released)."""

    __slots__ = ("w", "method")

    def __init__(self, w, method):
        self.w = w
        self.method = method


def _margins(X, y, w):
    z = X @ w
    return np.asarray(z).ravel() * y


def user_objective(X, y, w, *, scale, lam, center):
    """``F_V(w)`` with ``scale = 1 / (|V| m)``."""
    diff = w - center
    return scale * float(np.logaddexp(0.0, -_margins(X, y, w)).sum()) + 0.5 * lam * float(diff @ diff)


def _gradient(X, y, w, *, scale, lam, center):
    p = expit(-_margins(X, y, w))  # sigma(-margin) in (0, 1)
    a = -y * p
    g = scale * np.asarray(X.T @ a).ravel() + lam * (w - center)
    return g, p


def _rounding_margin(n_rows, n_coef, scale, R, lam, w, center):
    """An upper bound on the float64 error of the computed gradient norm."""
    gamma_rows = 1.01 * (n_rows + 2) * _U
    gamma_coef = 1.01 * (n_coef + 2) * _U
    # sum of n_rows terms |a_r| ||x_r|| <= R each; margins z_r with error <= gamma_coef ||x_r|| ||w||,
    # which moves sigma by at most a quarter of that; the regulariser term.
    return (
        scale * n_rows * R * (gamma_rows + 0.25 * gamma_coef * R * float(np.linalg.norm(w)))
        + 4 * _U * lam * float(np.linalg.norm(w - center))
        + 4 * _U * scale * n_rows * R
    )


def agd_iterations(R, lam, tau):
    """Public number of accelerated-gradient steps that guarantee ``||w - w*|| <= tau`` from c.

    F_V is lam-strongly convex and beta = R^2/4 + lam smooth (row norms <= R,
    at most m rows per user, normalisation |V| m). From ``x_1 = c`` with
    ``||c - w*|| <= R / lam``: ``F(y_t) - F* <= (lam + beta)/2 ||c - w*||^2
    exp(-(t - 1) / sqrt(kappa))`` and ``||y_t - w*||^2 <= 2 (F(y_t) - F*) / lam``.
    """
    beta = 0.25 * R * R + lam
    kappa = beta / lam
    b0 = R / lam
    return 1 + math.ceil(math.sqrt(kappa) * max(0.0, math.log((lam + beta) * b0 * b0 / (lam * tau * tau))))


def _agd(X, y, *, scale, lam, center, R, tau):
    beta = 0.25 * R * R + lam
    sk = math.sqrt(beta / lam)
    momentum = (sk - 1.0) / (sk + 1.0)
    x = center.astype(float).copy()
    y_prev = x.copy()
    for _ in range(agd_iterations(R, lam, tau)):
        g, _ = _gradient(X, y, x, scale=scale, lam=lam, center=center)
        y_next = x - g / beta
        x = y_next + momentum * (y_next - y_prev)
        y_prev = y_next
    return y_prev


def _hessian(X, p, *, scale, lam):
    h = p * (1.0 - p)
    if sp.issparse(X):
        H = np.asarray((X.T @ sp.diags(h) @ X).toarray())
    else:
        H = X.T @ (X * h[:, None])
    H = scale * H
    H[np.diag_indices_from(H)] += lam
    return H


def solve_user_logistic(X, y, n_users, *, max_items, data_norm, lam, center, tau):
    """Point within ``tau`` of ``argmin F_V`` (deterministic; never raises on finite data).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_rows, p)
        Rows of the users of V (norms <= ``data_norm``).
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1}.
    n_users : int
        |V| (public normalisation ``|V| m``).
    max_items : int
        The public cap m.
    data_norm : float
        R.
    lam : float
        Strong convexity of the regulariser.
    center : ndarray of shape (p,)
        Regularisation centre.
    tau : float
        Public accuracy target.

    Returns
    -------
    UserERMResult
    """
    center = np.asarray(center, dtype=float)
    scale = 1.0 / (n_users * max_items)
    n_rows, p_dim = X.shape
    w = center.copy()
    if p_dim <= _DENSE_NEWTON_MAX_DIM:
        for _ in range(_MAX_NEWTON):
            g, p = _gradient(X, y, w, scale=scale, lam=lam, center=center)
            margin = _rounding_margin(n_rows, p_dim, scale, data_norm, lam, w, center)
            # why: lam-strong convexity gives ||w - w*|| <= ||grad F(w)|| / lam
            if float(np.linalg.norm(g)) + margin <= lam * tau:
                return UserERMResult(w, "newton")
            H = _hessian(X, p, scale=scale, lam=lam)
            try:
                step = -linalg.solve(H, g, assume_a="pos")
            except (linalg.LinAlgError, ValueError):
                break
            f0 = user_objective(X, y, w, scale=scale, lam=lam, center=center)
            slope = float(g @ step)
            t = 1.0
            for _ in range(60):  # Armijo backtracking, bounded
                w_try = w + t * step
                if user_objective(X, y, w_try, scale=scale, lam=lam, center=center) <= f0 + 1e-4 * t * slope:
                    break
                t *= 0.5
            else:
                break
            w = w_try
    return UserERMResult(_agd(X, y, scale=scale, lam=lam, center=center, R=data_norm, tau=tau), "agd")


def augmented_user_sums(X, y, indptr, w, *, lam, center, max_items):
    """Per-user sums ``s_u(w) = sum_{r in u} grad loss_r(w) + m lam (w - c)``.

    With the regulariser shared as ``m lam (w - c)`` per user, ``|V| m grad
    F_V(w) = sum_{u in V} s_u(w)`` for every set V (Ghazi et al. 2023,
    App. C; doc/algorithms.rst, G-App C).
    """
    p = expit(-_margins(X, y, w))
    sums = group_gradient_sums(X, -y * p, indptr)
    return sums + max_items * lam * (np.asarray(w) - np.asarray(center))[None, :]
