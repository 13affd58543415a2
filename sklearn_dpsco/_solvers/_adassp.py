"""AdaSSP: sufficient-statistics perturbation with an adaptive ridge (Wang 2018).

Yu-Xiang Wang, "Revisiting differentially private linear regression: optimal
and adaptive prediction & estimation in unbounded domain", UAI 2018,
Algorithm 2. Rows are mapped, one at a time and independently of the other
rows, to ``x~ = (min(1, R/||x||) x, s)`` and labels to ``clip(y, -B, B)``
with PUBLIC bounds R, B (s: intercept scaling), so ``||x~||^2 <= X2 := R^2 +
s^2`` and ``|y| <= B``. Three statistics are released:

====================  ==========================================  ============================
statistic             replace-one l2-sensitivity                  why
====================  ==========================================  ============================
``lambda_min(A)``     ``X2``                                      Weyl: A moves by
                                                                  ``x~x~^T - x~'x~'^T``, whose
                                                                  eigenvalues lie in [-X2, X2]
``A = sum x~ x~^T``   ``sqrt(2) X2`` (isometric vectorisation,     ``||xx^T - x'x'^T||_F^2 =
                      off-diagonals scaled by sqrt(2))             ||x||^4 + ||x'||^4 -
                                                                  2<x,x'>^2 <= 2 X2^2``
``b = sum x~ y``      ``2 sqrt(X2) B``                             triangle inequality
====================  ==========================================  ============================

Approximate DP: three Gaussian mechanisms whose Gaussian-DP parameters
compose exactly, ``mu^2 = mu_1^2 + mu_2^2 + mu_3^2 = gaussian_mu(eps, delta)^2``
(float noise), or whose zCDP parameters add up to ``zcdp_rho(eps, delta)``
(secure noise: the discrete Gaussian is calibrated through zCDP).
Pure DP (our addition; Wang's paper is (epsilon, delta) only): Laplace on
``lambda_min`` and isotropic l2-Laplace on A and b, epsilons adding up. Then
(post-processing of the three releases and public constants only):

    lambda~ = max(0, lambda_min + noise - t_min)          (a lower confidence bound)
    ridge   = max(0, bound_E - lambda~)                    (Wang's adaptive ridge)
    theta   = (A^ + ridge I)^-1 b^

with ``bound_E`` a high-probability bound on the operator norm of the noise
matrix. With ``select=True`` (small ``n epsilon / d``; public rule in
:mod:`._adassp_selection`) a fourth, pure-DP release on a share of the budget
chooses among several ridge levels and the intercept-only model by their
clipped squared loss on the rows. Argument and tests: doc/privacy/adassp.rst.
"""

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

import numpy as np
import scipy.sparse as sp

from .._budget import Budget, split_scale_share
from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._additive import _float_up
from .._mechanisms._calibrate import _MIN_CLIP, _gamma, laplace_mechanism_for, mechanism_for, noise_operator_norm_bound
from .._param_checks import check_delta, check_epsilon, check_positive
from ..accounting import ComposedEvent
from ._adassp_selection import LOSS_FRACTION, SELECTION_SHARE, RidgeSelection, ridge_candidates

__all__ = ["AdaSSPPlan", "adassp_plan", "adassp_statistics", "run_adassp", "sym_from_vec", "vec_from_sym"]

#: Shares of the budget: (lambda_min, A, b). Utility choices (any split is
#: private): lambda_min only steers the ridge, so it gets little; for pure DP
#: the A release (d(d+1)/2 coordinates) needs more than b.
_SHARES_GAUSSIAN = (0.1, 0.5, 0.4)  # shares of mu^2 (float) or rho (secure)
_SHARES_PURE = (0.1, 0.65, 0.25)  # shares of epsilon
#: Failure probability of the ridge's confidence bounds (utility only).
_RIDGE_BETA = 1e-3
#: Secure path: ``lambda_min`` is certified on ``A`` rounded to a power-of-two grid ``eta <= X2 2^-24`` (coarser
#: for very large n, so that ``|lambda / eta| < 2^51``), within ``_LAMBDA_TOL`` grid steps
#: (doc/privacy/adassp.rst, "Rounding on the secure path").
_LAMBDA_GRID_BITS = 24
_LAMBDA_TOL = 4
#: An upper bound of sqrt(2) (1.41421356237309504880...).
_SQRT2_UP = Fraction(1414213562373095049, 10**18)


def _power_of_two_at_most(x):
    return math.ldexp(1.0, math.frexp(float(x))[1] - 1)


def _power_of_two_at_least(x):
    p = _power_of_two_at_most(x)
    return p if p >= x else 2.0 * p


def _sqrt_up(frac):
    """A float at least ``sqrt(frac)`` (checked exactly)."""
    r = math.sqrt(_float_up(frac))
    while Fraction(r) ** 2 < frac:
        r = math.nextafter(r, math.inf)
    return r


def rounding_sensitivities(n, d, row_bound, label_bound, intercept_scaling):
    """Secure path: ``(sens_min, sens_A, sens_b, eta)``, sensitivities of the float64 statistics actually released.

    Every computed clipped row has ``||x~||^2 <= X2c = (R (1 + gamma_{2d+6}))^2 + s^2`` (the norm, quotient and
    product of the clipping rounded; the library's clip bound, ``clipped_sum_sensitivity``). Each entry of
    ``A = sum_i w_i x~_i x~_i^T`` and of ``b = sum_i x~_i (w_i y_i)`` is a sum of ``n`` products, each rounded
    (with the weight) twice, added in ANY order (BLAS blocking, the blocks of ``fold_blocks``): its error is at
    most ``gamma_{n+1}`` times the sum of the terms' magnitudes (Higham 2002, §3.1), so ``||fl(A) - A||_F <=
    gamma_{n+1} n X2c`` and ``||fl(b) - b||_2 <= gamma_{n+1} n sqrt(X2c) B`` on each neighbour (plus the rounding
    of :func:`vec_from_sym`'s ``fl(sqrt 2) A_ij``). ``lambda_min``
    is certified on ``A`` rounded to ``eta`` (:func:`certified_lambda_min`): within ``_LAMBDA_TOL eta`` of
    ``lambda_min(eta rint(A / eta))``, itself within ``d eta / 2`` of ``lambda_min(fl(A))`` (Weyl; Frobenius
    bound of the rounding), itself within ``gamma_{n+1} n X2c`` of the exact value (Weyl).
    """
    n, d = int(n), int(d)
    if not row_bound >= _MIN_CLIP:
        raise ValueError(f"row_bound must be >= 2^-300 for the secure path's float error bound, got {row_bound!r}.")
    g_row = _gamma(2 * d + 6)
    x2c = (Fraction(row_bound) * (1 + g_row)) ** 2 + Fraction(intercept_scaling) ** 2
    e = n * _gamma(n + 1)  # relative size of one side's summation error
    eta = max(_power_of_two_at_most(math.ldexp(float(x2c), -_LAMBDA_GRID_BITS)),
              _power_of_two_at_least(float(n * x2c * (1 + e)) * 2.0**-50))
    # why: a product or sum below the normal range errs by up to 2^-1075 absolutely instead of relatively:
    # at most n + 2 such roundings per entry, d^2 entries, both neighbours
    under = 2 * d * (n + 2) * Fraction(1, 2**1074)
    sens_min = x2c * (1 + 2 * e) + Fraction(eta) * (d + 2 * _LAMBDA_TOL) + under
    # vec_from_sym multiplies the off-diagonals by r = fl(sqrt 2) (r / sqrt 2 <= 1 + u) and rounds each product
    # (<= u r |A_ij| <= 2 u |A_ij| per entry; ||fl(A)||_F <= n X2c (1 + e) on each side)
    sens_A = (1 + _gamma(1)) * (_SQRT2_UP * x2c + 2 * e * x2c + 2 * under) + 4 * _gamma(1) * n * x2c * (1 + e)
    root = Fraction(_sqrt_up(x2c))
    sens_b = 2 * root * Fraction(label_bound) * (1 + e) + under
    return _float_up(sens_min), _float_up(sens_A), _float_up(sens_b), eta


def _positive_definite(M, shift):
    """Exactly: is the integer matrix ``M - shift I`` positive definite? (Sylvester: every leading principal
    minor > 0, computed by fraction-free Bareiss elimination in Python integers.)"""
    d = len(M)
    a = [[M[i][j] - (shift if i == j else 0) for j in range(d)] for i in range(d)]
    prev = 1
    for k in range(d):
        pivot = a[k][k]
        if pivot <= 0:  # the k-th leading minor (Bareiss: a[k][k] is that minor exactly)
            return False
        for i in range(k + 1, d):
            ai, ak = a[i], a[k]
            for j in range(k + 1, d):
                ai[j] = (ai[j] * pivot - ai[k] * ak[j]) // prev
        prev = pivot
    return True


def certified_lambda_min(A, eta, candidate=None):
    """``eta c`` with ``|eta c - lambda_min(eta rint(A / eta))| <= _LAMBDA_TOL eta``, ``c`` an integer.

    ``M = rint(A / eta)`` is an exact integer matrix (``eta`` a power of two). The candidate (LAPACK's
    ``eigvalsh``, no rigorous error constant) is rounded to ``c`` and verified exactly: ``M - (c - tol) I``
    positive definite and ``M - (c + tol) I`` not. If the check fails, ``c`` comes from an exact bisection on
    integer shifts (Gershgorin bracket). Either way the result is within the tolerance: the guarantee never
    rests on LAPACK. Requires ``|lambda / eta| < 2^51`` (the grid rule of :func:`rounding_sensitivities`).
    """
    Mf = np.rint(np.asarray(A, dtype=float) / eta)
    M = [[int(v) for v in row] for row in Mf]
    tol = _LAMBDA_TOL
    if candidate is None:
        candidate = float(np.linalg.eigvalsh(Mf)[0])
    c = int(np.rint(candidate))
    if not (_positive_definite(M, c - tol) and not _positive_definite(M, c + tol)):
        d = len(M)
        lo = min(M[i][i] - sum(abs(M[i][j]) for j in range(d) if j != i) for i in range(d)) - 1  # PD at lo
        hi = min(M[i][i] for i in range(d))  # not PD at hi (lambda_min <= min diagonal)
        while hi - lo > tol:  # invariant: lambda_min in (lo, hi]
            mid = (lo + hi) // 2
            if _positive_definite(M, mid):
                lo = mid
            else:
                hi = mid
        c = hi
    return float(c) * eta


def vec_from_sym(M):
    """Isometric vectorisation of a symmetric matrix: diagonal, then sqrt(2) x upper off-diagonals.

    ``||vec_from_sym(M)||_2 = ||M||_F``.
    """
    d = M.shape[0]
    iu = np.triu_indices(d, k=1)
    return np.concatenate([np.diag(M), math.sqrt(2.0) * M[iu]])


def sym_from_vec(v, d):
    """Inverse of :func:`vec_from_sym`."""
    M = np.zeros((d, d))
    iu = np.triu_indices(d, k=1)
    M[np.diag_indices(d)] = v[:d]
    M[iu] = v[d:] / math.sqrt(2.0)
    M.T[iu] = M[iu]
    return M


@dataclass(frozen=True)
class AdaSSPPlan:
    """Public plan of an AdaSSP release: bounds, the three mechanisms, ridge constants."""

    d: int
    row_bound: float
    label_bound: float
    intercept_scaling: float
    mech_min: object
    mech_A: object
    mech_b: object
    t_min: float
    bound_E: float
    event: object
    info: dict = field(default_factory=dict)
    #: The private choice among ridge levels (:class:`RidgeSelection`), or None.
    selection: object = None
    #: Secure path: the grid ``eta`` of the certified ``lambda_min`` (:func:`certified_lambda_min`); None: eigvalsh.
    lambda_grid: float = None

    @property
    def x2(self):
        return self.row_bound**2 + self.intercept_scaling**2


def adassp_plan(n, d, *, epsilon, delta, row_bound, label_bound, intercept_scaling=0.0, noise=DEFAULT_NOISE,
                select=False):
    """Plan an AdaSSP release from public inputs (``d`` counts the intercept column).

    ``select=True`` carves ``SELECTION_SHARE`` of epsilon (pure DP) off the
    budget for the private choice of the ridge (:mod:`._adassp_selection`).
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    row_bound = check_positive(row_bound, "row_bound")
    label_bound = check_positive(label_bound, "label_bound")
    if not (math.isfinite(row_bound) and math.isfinite(label_bound)):
        raise ValueError("AdaSSP needs finite public bounds row_bound and label_bound.")
    x2 = row_bound**2 + intercept_scaling**2
    # why: replace-one sensitivities of lambda_min(A), vec(A) and b (module docstring table)
    sens_min, sens_A, sens_b = x2, math.sqrt(2.0) * x2, 2.0 * math.sqrt(x2) * label_bound
    lambda_grid = None
    if noise == "secure":
        # why: the secure proof needs the sensitivity of the float64 statistics actually released: every
        # rounding of the clipping and of the sums (any order), and a certified lambda_min
        # (doc/privacy/adassp.rst, "Rounding on the secure path")
        sens_min, sens_A, sens_b, lambda_grid = rounding_sensitivities(n, d, row_bound, label_bound,
                                                                       intercept_scaling)
    D = d * (d + 1) // 2
    # the three releases share (epsilon, delta) by the library's one split (epsilon for pure DP,
    # mu^2 for the float Gaussian, rho for the secure one; accounting/_shares.py)
    budget = Budget(epsilon, delta, noise)
    selection = None
    if select:
        # basic composition: an eps_sel-DP choice after the (eps - eps_sel, delta) statistics
        select_budget, budget = split_scale_share(budget, SELECTION_SHARE)
        selection = RidgeSelection(select_budget.epsilon, noise)
    b_min, b_A, b_b = budget.split(_SHARES_PURE if budget.pure else _SHARES_GAUSSIAN)
    mech_A = mechanism_for(sens_A, b_A, D)
    mech_b = mechanism_for(sens_b, b_b, d)
    if delta == 0:
        mech_min = laplace_mechanism_for(sens_min, b_min, 1)
        t_min = mech_min.scale * math.log(1.0 / _RIDGE_BETA)  # P(Laplace > b log(1/beta)) = beta / 2
    else:
        mech_min = mechanism_for(sens_min, b_min, 1)
        t_min = mech_min.sigma * math.sqrt(2.0 * math.log(1.0 / _RIDGE_BETA))
    events = (mech_min.event, mech_A.event, mech_b.event)
    event = ComposedEvent(events if selection is None else events + (selection.event,))
    return AdaSSPPlan(
        d=d, row_bound=row_bound, label_bound=label_bound, intercept_scaling=intercept_scaling,
        mech_min=mech_min, mech_A=mech_A, mech_b=mech_b, t_min=t_min, bound_E=noise_operator_norm_bound(mech_A, d, _RIDGE_BETA),
        event=event,
        info={"algorithm": "adassp", "sensitivities": (sens_min, sens_A, sens_b),
              "ridge_selection": selection is not None},
        selection=selection, lambda_grid=lambda_grid,
    )


def _clipped_block(X, y, w, plan):
    """Rows scaled to ``row_bound``, intercept column appended, labels clipped, weights applied."""
    if sp.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    with np.errstate(divide="ignore"):
        scale = np.where(norms > plan.row_bound, plan.row_bound / np.where(norms > 0, norms, 1.0), 1.0)
    Xc = sp.diags(scale) @ X if sp.issparse(X) else X * scale[:, None]
    if sp.issparse(Xc):
        Xc = Xc.toarray()  # d is small for AdaSSP (it releases a d x d matrix)
    if plan.intercept_scaling > 0:
        Xc = np.hstack([Xc, np.full((Xc.shape[0], 1), plan.intercept_scaling)])
    yc = np.clip(y, -plan.label_bound, plan.label_bound)
    sw = np.ones(X.shape[0]) if w is None else w
    return Xc, yc, sw


def _selection_block(plan, X, y, w):
    """The clipped block and the loss clip ``L = B^2`` of the ridge choice (runs where the block is)."""
    Xc, yc, sw = _clipped_block(X, y, w, plan)
    return Xc, yc, sw, LOSS_FRACTION * plan.label_bound**2


def _block_statistics(X, y, w, plan):
    """``(Xc^T diag(w) Xc, Xc^T (w * yc))`` of one block of clipped rows (runs where the block is)."""
    Xc, yc, sw = _clipped_block(X, y, w, plan)
    return Xc.T @ (Xc * sw[:, None]), Xc.T @ (sw * yc)


def _add_statistics(acc, block):
    return acc[0] + block[0], acc[1] + block[1]


def adassp_statistics(source, plan):
    """The exact (non-private) statistics ``A``, ``b`` of the clipped rows, accumulated block by block.

    ``source.fold_blocks`` adds the blocks' statistics in block order: on
    the client for an in-memory or streamed source, on the workers for rows
    held by a Dask cluster (``_core/_cluster.py``; the same blocks in the
    same order, so the same floats).
    """
    init = (np.zeros((plan.d, plan.d)), np.zeros(plan.d))
    return source.fold_blocks(partial(_block_statistics, plan=plan), _add_statistics, init)


def run_adassp(source, plan, rng, *, statistics=None):
    """Release the three statistics with the planned mechanisms and return the ridge solution."""
    A, b = adassp_statistics(source, plan) if statistics is None else statistics
    d = plan.d
    if plan.lambda_grid is None:
        lam_min = float(np.linalg.eigvalsh(A)[0])
    else:
        lam_min = certified_lambda_min(A, plan.lambda_grid)
    lam_tilde = max(0.0, float(plan.mech_min.release(lam_min, rng)[0]) - plan.t_min)
    A_hat = sym_from_vec(plan.mech_A.release(vec_from_sym(A), rng), d)
    b_hat = plan.mech_b.release(b, rng)
    # -- post-processing only from here: released values and public constants --
    ridge = max(0.0, plan.bound_E - lam_tilde)
    evals, evecs = np.linalg.eigh(A_hat + ridge * np.eye(d))
    # w.h.p. A^ + ridge I is positive definite; on the rare failure, floor the
    # spectrum at the noise bound (acts as extra ridge in those directions).
    floor = max(plan.bound_E, 1e-12)
    evals = np.where(evals < floor * 1e-3, floor, evals)
    theta = evecs @ ((evecs.T @ b_hat) / evals)
    if plan.selection is not None:
        # the candidates are post-processing of the releases; only the choice reads the rows again
        candidates = ridge_candidates(A_hat, b_hat, theta, plan.bound_E, plan.intercept_scaling > 0)
        utilities = plan.selection.utilities(source, partial(_selection_block, plan), [t for _, t in candidates])
        theta = candidates[plan.selection.select(utilities, rng)][1]
    return theta, ridge
