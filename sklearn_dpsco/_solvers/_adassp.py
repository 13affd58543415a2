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
from functools import partial

import numpy as np
import scipy.sparse as sp

from .._budget import Budget, split_scale_share
from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._calibrate import laplace_mechanism_for, mechanism_for, noise_operator_norm_bound
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
        selection=selection,
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
    lam_min = float(np.linalg.eigvalsh(A)[0])
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
