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
clipped squared loss on the rows; with ``guard=True`` (fewer ranks; public rule
:func:`._adassp_selection.guard_applies`) the same release chooses between AdaSSP's model and the
zero model only. Argument and tests: doc/privacy/adassp.rst.
"""

import dataclasses
import functools
import math
import operator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._budget import Budget, split_scale_share
from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._additive import _float_up
from .._mechanisms._calibrate import _MIN_CLIP, _gamma, laplace_mechanism_for, mechanism_for, noise_operator_norm_bound
from .._mechanisms._grid import power_of_two_at_least, power_of_two_at_most
from .._param_checks import check_delta, check_epsilon, check_positive
from ..accounting import ComposedEvent
from . import _adassp_selection
from ._adassp_selection import (LOSS_FRACTION, QUANT, RECENTRED_LOSS_FRACTION, RidgeSelection, label_sum_terms, mean_share, ridge_candidates,
                                 selection_share)
from ._verified_pd import _integer_vector, float_pd_proof, not_pd_witness, positive_definite_exact

__all__ = ["AdaSSPPlan", "adassp_plan", "adassp_statistics", "run_adassp", "sym_from_vec", "vec_from_sym"]

#: Shares of the budget: (lambda_min, A, b). Utility choices (any split is
#: private): lambda_min only steers the ridge, so it gets little; for pure DP
#: the A release (d(d+1)/2 coordinates) needs more than b.
_SHARES_GAUSSIAN = (0.1, 0.5, 0.4)  # shares of mu^2 (float) or rho (secure)
_SHARES_PURE = (0.1, 0.65, 0.25)  # shares of epsilon
#: Failure probability of the ridge's confidence bounds (utility only).
_RIDGE_BETA = 1e-3
#: Secure path: ``lambda_min`` is certified on ``A`` rounded to a power-of-two grid ``eta <= X2 2^-24`` (coarser
#: for very large n, so that ``|lambda / eta| < 2^51``), within ``tol >= _LAMBDA_TOL`` grid steps (public:
#: :func:`lambda_tolerance`)
#: (doc/privacy/adassp.rst, "Rounding on the secure path").
_LAMBDA_GRID_BITS = 24
_LAMBDA_TOL = 4
#: An upper bound of sqrt(2) (1.41421356237309504880...).
_SQRT2_UP = Fraction(1414213562373095049, 10**18)


def _sqrt_up(frac):
    """A float at least ``sqrt(frac)`` (checked exactly)."""
    r = math.sqrt(_float_up(frac))
    while Fraction(r) ** 2 < frac:
        r = math.nextafter(r, math.inf)
    return r


def _rounded_row_bounds(n, d, row_bound, intercept_scaling):
    """``(X2c, e, eta)``: the computed rows' squared-norm bound, the relative summation error ``n gamma_{n+1}``
    and the grid of the certified ``lambda_min`` (public)."""
    n, d = int(n), int(d)
    if not row_bound >= _MIN_CLIP:
        raise ValueError(f"row_bound must be >= 2^-300 for the secure path's float error bound, got {row_bound!r}.")
    g_row = _gamma(2 * d + 6)
    x2c = (Fraction(row_bound) * (1 + g_row)) ** 2 + Fraction(intercept_scaling) ** 2
    e = n * _gamma(n + 1)  # relative size of one side's summation error
    eta = max(power_of_two_at_most(math.ldexp(float(x2c), -_LAMBDA_GRID_BITS)),
              power_of_two_at_least(float(n * x2c * (1 + e)) * 2.0**-50))
    return x2c, e, eta


@functools.lru_cache(maxsize=256)  # a pure function of public numbers; every plan of a budget fill asks
def lambda_tolerance(n, d, row_bound, intercept_scaling):
    """``(eta, tol)``: public grid and tolerance (grid steps) of :func:`certified_lambda_min` for ``n x d`` rows.

    ``tol`` is chosen so that the fast floating-point proofs decide both sides of ``c -/+ tol`` whenever
    LAPACK's eigenpair has a backward error ``<= 4 d u ||M||_2`` (utility: the exact fallback is then never
    needed; soundness never depends on it). In grid units, ``T = n X2c (1 + e) / eta + d`` bounds ``tr M``,
    ``||M||_F`` and ``max m_ii``; ``E = e X2c / eta + d`` bounds ``-lambda_min(M)``. With ``c = rint(candidate)``,
    ``|c - lambda| <= 1/2 + err`` (``err = 4 d u T``); the rounded eigenvector's Rayleigh quotient is within
    ``2 err + d T 2^-53`` above ``lambda``. ``H0 = M - (c - tol) I`` is then positive semi-definite with ``tr H0 <=
    tau = T + d (E + tol + 1 + err)`` and ``||H0||_F <= tr H0``, so Rump's shift (:func:`._verified_pd.rump_shift`)
    is at most ``r = 2.001 g tau / ((1 - g) coef) + 1.001``, and the float Cholesky of ``H0 - r I`` succeeds if
    ``lambda_min(H0) - r > succ = 2 d gamma_{d+1} (T + E + tol + 1 + err) / (1 - gamma_{d+1})`` (Demmel's
    condition, Higham 2002 Thm 10.7, doubled for the extra ``g |H|`` of our bound). ``tol`` is the smallest
    integer ``>= 4`` above ``r + succ + 1/2 + err`` and ``1/2 + 3 err + d T 2^-53``.
    """
    x2c, e, eta = _rounded_row_bounds(n, d, row_bound, intercept_scaling)
    n, d = int(n), int(d)
    u = Fraction(1, 2**53)
    g, g1 = _gamma(d + 2), _gamma(d + 1)
    coef = 1 - g - g * g * d / (1 - g)
    T = n * x2c * (1 + e) / Fraction(eta) + d
    E = e * x2c / Fraction(eta) + d
    err = 4 * d * u * T
    tol = _LAMBDA_TOL
    for _ in range(100):  # fixed point: tol enters the bounds with a coefficient O(d^2 u)
        tau = T + d * (E + tol + 1 + err)
        r = Fraction(2001, 1000) * g * tau / ((1 - g) * coef) + Fraction(1001, 1000)
        succ = 2 * d * g1 * (T + E + tol + 1 + err) / (1 - g1)
        need = max(_LAMBDA_TOL, math.floor(r + succ + Fraction(1, 2) + err) + 1,
                   math.floor(Fraction(1, 2) + 3 * err + d * T * u) + 1)
        if need <= tol:
            break
        tol = need
    return eta, int(tol)


@functools.lru_cache(maxsize=256)  # a pure function of public numbers; every plan of a budget fill asks
def rounding_sensitivities(n, d, row_bound, label_bound, intercept_scaling):
    """Secure path: ``(sens_min, sens_A, sens_b, eta)``, sensitivities of the float64 statistics actually released.

    Every computed clipped row has ``||x~||^2 <= X2c = (R (1 + gamma_{2d+6}))^2 + s^2`` (the norm, quotient and
    product of the clipping rounded; the library's clip bound, ``clipped_sum_sensitivity``). Each entry of
    ``A = sum_i w_i x~_i x~_i^T`` and of ``b = sum_i x~_i (w_i y_i)`` is a sum of ``n`` products, each rounded
    (with the weight) twice, added in ANY order (BLAS blocking, the blocks of ``fold_blocks``): its error is at
    most ``gamma_{n+1}`` times the sum of the terms' magnitudes (Higham 2002, §3.1), so ``||fl(A) - A||_F <=
    gamma_{n+1} n X2c`` and ``||fl(b) - b||_2 <= gamma_{n+1} n sqrt(X2c) B`` on each neighbour (plus the rounding
    of :func:`vec_from_sym`'s ``fl(sqrt 2) A_ij``). ``lambda_min``
    is certified on ``A`` rounded to ``eta`` (:func:`certified_lambda_min`): within ``tol eta`` of
    ``lambda_min(eta M)`` (``M = rint(A / eta)`` symmetrised from its upper triangle; ``tol`` public:
    :func:`lambda_tolerance`), itself within ``d eta / 2 + gamma_{n+1} n X2c`` of the exact value (Weyl;
    Frobenius bound of the entrywise errors, ``fl(A)`` itself need not be symmetric).
    """
    x2c, e, eta = _rounded_row_bounds(n, d, row_bound, intercept_scaling)
    _, tol = lambda_tolerance(n, d, row_bound, intercept_scaling)
    n, d = int(n), int(d)
    # why: a product or sum below the normal range errs by up to 2^-1075 absolutely instead of relatively:
    # at most n + 2 such roundings per entry, d^2 entries, both neighbours; an underflowed fl(x_k w) or fl(w y)
    # is then multiplied by x_j (|x_j| <= sqrt(X2c)), so the error is amplified by at most 1 + sqrt(X2c) + B
    root = Fraction(_sqrt_up(x2c))
    under = 2 * d * (n + 2) * Fraction(1, 2**1074) * (1 + root + Fraction(label_bound))
    sens_min = x2c * (1 + 2 * e) + Fraction(eta) * (d + 2 * tol) + under
    # vec_from_sym multiplies the off-diagonals by r = fl(sqrt 2) (r / sqrt 2 <= 1 + u) and rounds each product
    # (<= u r |A_ij| <= 2 u |A_ij| per entry; ||fl(A)||_F <= n X2c (1 + e) on each side)
    sens_A = (1 + _gamma(1)) * (_SQRT2_UP * x2c + 2 * e * x2c + 2 * under) + 4 * _gamma(1) * n * x2c * (1 + e)
    sens_b = 2 * root * Fraction(label_bound) * (1 + e) + under
    return _float_up(sens_min), _float_up(sens_A), _float_up(sens_b), eta


#: Kept for the tests: the exact test (now in :mod:`._verified_pd`).
_positive_definite = positive_definite_exact


def certified_lambda_min(A, eta, candidate=None, tol=_LAMBDA_TOL):
    """``eta c`` with ``|eta c - lambda_min(eta rint(A / eta))| <= tol eta``, ``c`` an integer.

    ``M = rint(A / eta)``, symmetrised from its upper triangle, is an exact symmetric integer matrix (``eta`` a
    power of two). The candidate (LAPACK's
    smallest eigenpair, no rigorous error constant) is rounded to ``c`` and verified: ``M - (c - tol) I``
    positive definite and ``M - (c + tol) I`` not. Each side is decided by a PROOF (:mod:`._verified_pd`):
    a rigorous float Cholesky test (Rump's shift) or an exact integer witness ``v^T (M - s I) v < 0`` (LAPACK's
    eigenvector rounded), and only if neither applies by the exact Bareiss test. If the check fails, ``c``
    comes from a bisection on integer shifts (Gershgorin bracket) with the same three-way decision. Either way
    the result is within the tolerance: the guarantee never rests on LAPACK. Requires ``|lambda / eta| <
    2^51`` (the grid rule of :func:`rounding_sensitivities`); ``tol``: :func:`lambda_tolerance` (public).
    """
    Mf = np.rint(np.asarray(A, dtype=float) / eta)
    # why: fl(A) need not be symmetric (with weights, x_j fl(x_k w) and x_k fl(x_j w) round differently), and
    # the deciders read different parts (eigh: lower triangle; Cholesky: upper; witness: (M + M^T) / 2; Bareiss
    # and the Gershgorin bracket: all of M, where Sylvester's criterion does not apply): all must see ONE
    # symmetric matrix, the upper triangle's (the one vec_from_sym releases), within eta / 2 + the summation
    # bound of the exact A entrywise (doc/privacy/adassp.rst, "Rounding on the secure path")
    Mf = np.triu(Mf) + np.triu(Mf, 1).T
    M = Mf.astype(np.int64)
    d = M.shape[0]
    value, vector = scipy.linalg.eigh(Mf, subset_by_index=[0, 0])
    if candidate is None:
        candidate = float(value[0])
    witness = _integer_vector(vector[:, 0])
    c = int(np.rint(candidate))

    def positive_definite(shift):
        if not_pd_witness(M, shift, witness):  # O(d^2), exact
            return False
        if float_pd_proof(M, shift):  # one float Cholesky, rigorous
            return True
        return positive_definite_exact(M, shift)  # last resort (never reached with lambda_tolerance's tol)

    if not (positive_definite(c - tol) and not positive_definite(c + tol)):
        Ml = M.tolist()
        lo = min(Ml[i][i] - sum(abs(Ml[i][j]) for j in range(d) if j != i) for i in range(d)) - 1  # PD at lo
        hi = min(Ml[i][i] for i in range(d))  # not PD at hi (lambda_min <= min diagonal)
        while hi - lo > tol:  # invariant: lambda_min in (lo, hi]
            mid = (lo + hi) // 2
            if positive_definite(mid):
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
    #: Secure path: the public tolerance (grid steps) of the certified ``lambda_min`` (:func:`lambda_tolerance`).
    lambda_tol: int = _LAMBDA_TOL
    #: ``recentre``: the Laplace release of the quantized clipped-label sum (:func:`label_sum_terms`,
    #: sensitivity ``2 QUANT``); else None.
    mech_mean: object = None
    #: ``recentre``: the clip of the label-mean release (``MEAN_CLIP_MULTIPLE label_bound``; public), else 0.
    mean_bound: float = 0.0
    #: Rows (public), the label mean's denominator.
    n: int = 0
    #: The released label mean (label units; set by :func:`run_adassp` after its release, 0 before):
    #: the statistics read ``clip(y - label_shift, -B, B)``.
    label_shift: float = 0.0

    @property
    def x2(self):
        return self.row_bound**2 + self.intercept_scaling**2


def adassp_plan(n, d, *, epsilon, delta, row_bound, label_bound, intercept_scaling=0.0, noise=DEFAULT_NOISE,
                select=False, recentre=False, selection_fraction=None, guard=False):
    """Plan an AdaSSP release from public inputs (``d`` counts the intercept column).

    ``select=True`` carves ``SELECTION_SHARE`` of epsilon (pure DP) off the
    budget for the private choice of the ridge (:mod:`._adassp_selection`).
    ``recentre=True`` (with an intercept column) first carves
    ``mean_share(n, epsilon)`` (pure DP; public) for the label mean: the labels are shifted by it before the
    statistics (see :func:`run_adassp`).
    ``guard=True`` (ignored with ``select=True``) carves ``GUARD_SHARE`` of epsilon for the two-candidate
    choice between AdaSSP's model and the zero model (doc/privacy/adassp.rst, "Guard at few ranks").
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    row_bound = check_positive(row_bound, "row_bound")
    label_bound = check_positive(label_bound, "label_bound")
    if not (math.isfinite(row_bound) and math.isfinite(label_bound)):
        raise ValueError("AdaSSP needs finite public bounds row_bound and label_bound.")
    x2 = row_bound**2 + intercept_scaling**2
    # why: the statistics must be finite on EVERY dataset: a sum that overflows on one dataset and not on its
    # neighbour makes the release fail (or come out inf) there only, an outcome no noise covers. |A_ij| <= n X2,
    # |b_j| <= n sqrt(X2) B, times 1 + e for the rounding and sqrt(2) in vec_from_sym; 2^1000 leaves room for
    # the noise (public: n, R, B, s; doc/privacy/adassp.rst, "Rounding on the secure path")
    grow = 2.0 * (1.0 + float(int(n) * _gamma(int(n) + 1)))
    if not (int(n) * x2 * grow < 2.0**1000 and int(n) * math.sqrt(x2) * label_bound * grow < 2.0**1000):
        raise ValueError(f"AdaSSP's statistics could overflow float64 for n={n}, row_bound={row_bound!r}, "
                         f"label_bound={label_bound!r}: n X2 and n sqrt(X2) label_bound must stay below 2^998. "
                         "Rescale X or y. Nothing was spent.")
    # why: replace-one sensitivities of lambda_min(A), vec(A) and b (module docstring table)
    sens_min, sens_A, sens_b = x2, math.sqrt(2.0) * x2, 2.0 * math.sqrt(x2) * label_bound
    lambda_grid, lambda_tol = None, _LAMBDA_TOL
    if noise == "secure":
        # why: the secure proof needs the sensitivity of the float64 statistics actually released: every
        # rounding of the clipping and of the sums (any order), and a certified lambda_min
        # (doc/privacy/adassp.rst, "Rounding on the secure path")
        sens_min, sens_A, sens_b, lambda_grid = rounding_sensitivities(n, d, row_bound, label_bound,
                                                                       intercept_scaling)
        lambda_tol = lambda_tolerance(n, d, row_bound, intercept_scaling)[1]
    D = d * (d + 1) // 2
    # the three releases share (epsilon, delta) by the library's one split (epsilon for pure DP,
    # mu^2 for the float Gaussian, rho for the secure one; accounting/_shares.py)
    budget = Budget(epsilon, delta, noise)
    selection = mech_mean = None
    mean_bound = 0.0
    eps_adassp = budget.epsilon  # the shares below read AdaSSP's whole epsilon (public)
    if recentre and intercept_scaling > 0 and int(n) * QUANT < 2**53:
        # why: the labels' mean, released first on its own: each row's term is an integer in
        # [-QUANT, QUANT], so the sum moves by <= 2 QUANT under replace-one (doc/privacy/adassp.rst,
        # "Label mean"); then basic composition with the rest
        mean_budget, budget = split_scale_share(budget, mean_share(n, eps_adassp))
        mech_mean = laplace_mechanism_for(2.0 * QUANT, mean_budget, 1)
        mean_bound = float(_adassp_selection.MEAN_CLIP_MULTIPLE) * label_bound
    if guard and not select:
        # the two-candidate guard (public rule _adassp_selection.guard_applies): AdaSSP's model or the zero model
        select_budget, budget = split_scale_share(budget, _adassp_selection.GUARD_SHARE)
        selection = RidgeSelection(select_budget.epsilon, noise, guard=True)
    if select:
        # basic composition: an eps_sel-DP choice after the (eps - eps_sel, delta) statistics
        # selection_fraction (public, the caller's rule): the choice's share of AdaSSP's epsilon instead of
        # selection_share's (the choice between AdaSSP and Phased-ERM, _builders/_least_squares.py)
        share = selection_share(n, eps_adassp) if selection_fraction is None else float(selection_fraction)
        select_budget, budget = split_scale_share(budget, share)
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
    events = events if selection is None else events + (selection.event,)
    event = ComposedEvent(events if mech_mean is None else (mech_mean.event,) + events)
    return AdaSSPPlan(
        d=d, row_bound=row_bound, label_bound=label_bound, intercept_scaling=intercept_scaling,
        mech_min=mech_min, mech_A=mech_A, mech_b=mech_b, t_min=t_min, bound_E=noise_operator_norm_bound(mech_A, d, _RIDGE_BETA),
        event=event,
        info={"algorithm": "adassp", "sensitivities": (sens_min, sens_A, sens_b),
              "ridge_selection": selection is not None, "label_mean": mech_mean is not None,
              **({"ridge_guard": True} if selection is not None and selection.guard else {})},
        selection=selection, lambda_grid=lambda_grid, lambda_tol=lambda_tol, mech_mean=mech_mean, n=int(n),
        mean_bound=mean_bound,
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
    if plan.label_shift == 0.0:
        yc = np.clip(y, -plan.label_bound, plan.label_bound)
    else:
        wide = max(plan.mean_bound, plan.label_bound)
        yc = np.clip(np.clip(y, -wide, wide) - plan.label_shift, -plan.label_bound, plan.label_bound)
    sw = np.ones(X.shape[0]) if w is None else w
    return Xc, yc, sw


def _selection_block(plan, X, y, w):
    """The clipped block and the loss clip ``L`` of the ridge choice (runs where the block is)."""
    Xc, yc, sw = _clipped_block(X, y, w, plan)
    return Xc, yc, sw, selection_loss_fraction(plan) * plan.label_bound**2


def selection_loss_fraction(plan):
    """Public: ``RECENTRED_LOSS_FRACTION`` when the plan recentres the labels by their released mean, else
    ``LOSS_FRACTION`` (the choice's loss clip ``L`` over ``B^2``)."""
    return RECENTRED_LOSS_FRACTION if plan.mech_mean is not None else LOSS_FRACTION


def _block_label_sum(plan, X, y, w):
    """Integer sum of one block's labels clipped to ``plan.mean_bound``, quantized (runs where the block is)."""
    return label_sum_terms(np.clip(y, -plan.mean_bound, plan.mean_bound), w, plan.mean_bound)



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


def run_adassp(source, plan, rng, *, statistics=None, extra_candidates=()):
    """Release the three statistics with the planned mechanisms and return the ridge solution.

    With ``plan.mech_mean`` the label mean ``m`` (clipped labels, in [-B, B]) is released first; the
    statistics then read ``clip(clip(y, -B, B) - m, -B, B)`` (a per-row map fixed by a release: the
    sensitivities are unchanged) and ``m / s`` is added back to the intercept coordinate, so the ridge
    shrinks towards the label mean, the constant that minimises the squared loss, not towards 0.

    ``extra_candidates``: ``(name, theta)`` pairs offered to the private choice (``plan.selection``) next to
    the ridge candidates, ``theta`` in the units of the rows and labels as given (before the recentring: its
    intercept coordinate is shifted by ``-m / s`` here). They must be fixed before the rows are read for the
    choice: public, or functions of earlier releases only (Phased-ERM's release in the choice between AdaSSP
    and Phased-ERM; doc/privacy/adassp.rst, "Choice between AdaSSP and Phased-ERM").
    """
    shift = 0.0
    if plan.mech_mean is not None:
        if statistics is not None:
            raise ValueError("precomputed statistics cannot be recentred by the label mean.")
        total = source.fold_blocks(partial(_block_label_sum, plan), operator.add, 0)
        # an exact integer (|total| <= n QUANT < 2^53, exact in float64); post-processing from here
        noisy = float(plan.mech_mean.release(np.array([float(total)]), rng)[0])
        shift = plan.mean_bound * min(1.0, max(-1.0, noisy / (QUANT * max(plan.n, 1))))
        plan = dataclasses.replace(plan, label_shift=shift)
    A, b = adassp_statistics(source, plan) if statistics is None else statistics
    d = plan.d
    if plan.lambda_grid is None:
        lam_min = float(np.linalg.eigvalsh(A)[0])
    else:
        lam_min = certified_lambda_min(A, plan.lambda_grid, tol=plan.lambda_tol)
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
        if plan.selection.guard:
            candidates = [("adaptive", theta), ("zero", np.zeros(d))]
        else:
            candidates = ridge_candidates(A_hat, b_hat, theta, plan.bound_E, plan.intercept_scaling > 0,
                                          recentred=plan.mech_mean is not None)
        for name, extra in extra_candidates:  # earlier releases, into the recentred labels' units
            extra = np.array(extra, dtype=float)
            if shift != 0.0:
                extra[-1] -= shift / plan.intercept_scaling
            candidates.append((name, extra))
        utilities = plan.selection.utilities(source, partial(_selection_block, plan), [t for _, t in candidates])
        theta = candidates[plan.selection.select(utilities, rng)][1]
    if shift != 0.0:
        theta = np.array(theta, dtype=float)
        theta[-1] += shift / plan.intercept_scaling  # back to the labels' own centre (post-processing)
    return theta, ridge
