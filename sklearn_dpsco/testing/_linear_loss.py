"""A test-only loss that makes sensitivity bounds tight (doc/privacy/testing.rst).

``l(w; x, y) = -y <w, x>`` with ``||x|| <= 1`` and ``y in {-1, +1}`` is
1-Lipschitz and linear. With ``lambda / 2 ||w - w0||^2`` added, the
regularized ERM minimizer over R^d is

    w* = w0 + (1 / (lambda n)) sum_i y_i x_i,

so flipping one label moves it by exactly ``2 ||x|| / (lambda n)``, the
replace-one bound ``2 G / (mu n)`` of doc/algorithms.rst, P4. An audit run on
such a neighbour pair tests the mechanism at its worst case, not at a slack
instance where a factor-2 bug would hide.
"""

import numpy as np

from .._solvers import GLMData

__all__ = ["glm_neighbours", "linear_loss_minimizer", "linear_neighbour_centres", "worst_case_neighbours"]


def linear_loss_minimizer(X, y, lam, w0=None):
    """Exact minimizer of ``mean(-y <w, x>) + lam/2 ||w - w0||^2`` over R^d."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    w0 = np.zeros(X.shape[1]) if w0 is None else np.asarray(w0, dtype=float)
    return w0 + (y @ X) / (lam * X.shape[0])


def worst_case_neighbours(n, d, direction=None):
    """Two datasets differing in one row, for the linear loss, of norm-1 rows.

    All rows equal ``direction`` (default e_1) with label +1; in D' the last
    label is -1. Returns ``(X, y, X_prime, y_prime)``.
    """
    if direction is None:
        direction = np.zeros(d)
        direction[0] = 1.0
    direction = np.asarray(direction, dtype=float)
    direction = direction / np.linalg.norm(direction)
    X = np.tile(direction, (n, 1))
    y = np.ones(n)
    y_prime = y.copy()
    y_prime[-1] = -1.0
    return X, y, X.copy(), y_prime


def linear_neighbour_centres(d, n=50, lam=0.1):
    """The linear-loss minimizers on :func:`worst_case_neighbours` and their exact distance.

    Returns ``(c, c_prime, sensitivity)`` with ``||c - c_prime|| = sensitivity
    = 2 / (lam n)``: the worst case of a ``1``-Lipschitz loss with
    ``lam``-strong convexity (doc/privacy/output_perturbation.rst).
    """
    X, y, Xp, yp = worst_case_neighbours(n, d)
    return linear_loss_minimizer(X, y, lam), linear_loss_minimizer(Xp, yp, lam), 2.0 / (lam * n)


def glm_neighbours(n, d, flip_row=0):
    """Rows ``e_1`` with label +1; the neighbour flips row ``flip_row``'s label. Returns two GLMData."""
    X = np.zeros((n, d))
    X[:, 0] = 1.0
    y = np.ones(n)
    y_prime = y.copy()
    y_prime[flip_row] = -1.0
    return GLMData(X, y), GLMData(X.copy(), y_prime)
