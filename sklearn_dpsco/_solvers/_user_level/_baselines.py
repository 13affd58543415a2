"""Two user-level baselines a user would otherwise reach for (doc/privacy/user_level.rst).

``user_dp_sgd`` — user-level DP gradient descent (full batch of users per
step): each user's *average* gradient is clipped to norm C, the clipped
vectors are summed, noise is added to the sum, and a projected step is
taken. Replacing one user moves the sum by at most 2C. T, C, the step, the
ridge and the momentum are public; the number of steps is fixed in advance.
With momentum ``beta > 0`` the gradient is taken at the look-ahead point
``Pi(w_t + beta (w_t - w_{t-1}))`` (Nesterov's form): the iterates and the
look-ahead points are functions of earlier releases only, so momentum is
post-processing and the mechanism (the released sums, their sensitivity and
noise) is the one of plain DP-GD with the same T. Two noise paths:

* ``noise="secure"`` (the default): every step releases its sum through a
  :class:`~sklearn_dpsco._mechanisms.GaussianMechanism` — the sum is rounded
  to the grid and exact discrete Gaussian noise added in grid units
  (``NoiseDraw.release``). The sensitivity covers the float64 computation of
  the sum (:func:`~sklearn_dpsco._mechanisms._calibrate.clipped_sum_sensitivity`),
  the mechanism inflates it by the rounding, each step is zCDP (Canonne,
  Kamath, Steinke 2020) and the T steps compose additively in zCDP; the
  iterates are post-processing of the released sums.
* ``noise="float"``: ``N(0, sigma^2 I)`` in float64; T steps compose exactly
  as a Gaussian of ``mu = sqrt(T) 2C / sigma`` (Dong, Roth, Su 2019), so
  ``sigma = 2C sqrt(T) / mu(epsilon, delta)`` (not DP over the floats).

``item_group`` — item-level DP made user-level by group privacy: certified
output perturbation of the regularised logistic ERM normalised by the public
n m, whose add/remove/replace-one-*row* sensitivity is ``2R / (lam n m)``,
released with a Gaussian calibrated to (eps_i, delta_i). A user of at most m
rows is a path of at most m row changes, so the release is (m eps_i, m
e^((m-1) eps_i) delta_i)-DP for users (group privacy); eps_i = eps/m and
delta_i = delta / (m e^((m-1) eps/m)) meet the user-level target. The event
recorded is an ApproxDPEvent with the converted numbers.
"""

import math
from dataclasses import dataclass

import numpy as np
from joblib import delayed, effective_n_jobs

from ..._budget import Budget
from ..._fast._users import clipped_mean_logistic_gradient_sums, user_mean_logistic_gradients
from ..._mechanisms import DEFAULT_NOISE, GaussianMechanism
from ..._mechanisms._calibrate import (
    certified_sensitivity,
    clipped_sum_sensitivity,
    dp_gd_sigma,
    dp_gd_step_mechanism,
    gaussian_mechanism_for,
    gaussian_steps,
)
from ..._mechanisms._paths import check_noise
from ..._param_checks import check_delta, check_epsilon, check_nonnegative, check_positive
from ...accounting import ApproxDPEvent, GaussianEvent, SelfComposedEvent
from .._core._geometry import project_ball
from .._core._user_data import group_gradient_sums_reference
from .._optim._user_erm import solve_user_logistic

__all__ = [
    "DPSGDPlan",
    "ItemGroupPlan",
    "dp_sgd_plan",
    "group_privacy_item_budget",
    "item_group_plan",
    "clipped_gradient_sum",
    "clipped_mean_gradient_sum",
    "run_dp_sgd",
    "run_item_group",
    "user_mean_gradient_error",
    "user_mean_gradients",
    "user_mean_gradients_reference",
]

_U = 2.0**-53  # unit roundoff of float64
_ROWS_PER_THREAD = 50_000  # below this many rows per thread, the fused sum runs on one thread
_USER_BLOCK = 256  # users per block of the fused clipped sum (fixed: results do not depend on threads)


# --------------------------------------------------------------------------- user-level DP-GD
@dataclass(frozen=True)
class DPSGDPlan:
    """Public plan of user-level DP-GD.

    ``sigma`` is the per-step noise std (``mechanism.sigma`` on the secure
    path); ``mechanism`` the secure per-step :class:`GaussianMechanism`
    (``None`` on the float path); ``momentum`` the public Nesterov
    coefficient in [0, 1) (0: plain projected DP-GD). The event does not
    read ``momentum``.
    """

    n_users: int
    n_coef: int
    iterations: int
    clip: float
    step: float
    lam: float
    radius: float
    sigma: float
    mechanism: GaussianMechanism = None
    momentum: float = 0.0

    @property
    def noise(self):
        return "float" if self.mechanism is None else "secure"

    @property
    def event(self):
        if self.mechanism is not None:
            # T discrete Gaussian releases, each S2/(2N)-zCDP: rho adds up
            return SelfComposedEvent(self.mechanism.event, self.iterations)
        # T Gaussian releases of a 2C-sensitive sum on the same users
        return SelfComposedEvent(GaussianEvent(2.0 * self.clip, self.sigma), self.iterations)


def dp_sgd_plan(n_users, n_coef, *, epsilon, delta, iterations, clip, step, lam, radius, gradient_error,
                noise=DEFAULT_NOISE, momentum=0.0):
    """Public plan of user-level DP-GD; one noise scale for every step.

    ``momentum`` (public, in [0, 1)) changes only how the iterates are formed
    from the released sums, not the releases: the noise scale does not read it.

    ``gradient_error`` is a public bound on the float64 error of each user's
    computed gradient (:func:`user_mean_gradient_error` for the logistic
    loss; 0 for an exactly computed test loss); the secure path's
    sensitivity covers it.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    check_noise(noise)
    if delta == 0:
        raise ValueError("user-level DP-SGD is a Gaussian mechanism: it needs delta > 0.")
    clip = check_positive(clip, "clip")
    step = check_positive(step, "step")
    radius = check_positive(radius, "radius")
    gradient_error = check_nonnegative(gradient_error, "gradient_error")
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam}.")
    momentum = float(momentum)
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}.")
    T = int(iterations)
    if T < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}.")
    if noise == "secure":
        # why: replacing one user moves the float64 sum of clipped mean gradients by at most this
        # (2C exactly, plus every rounding of its computation); each of the T steps is a discrete Gaussian
        # release of it on a 1/T zCDP share (doc/privacy/user_level.rst, "user_dp_sgd on the secure path").
        sensitivity = clipped_sum_sensitivity(clip, n_users, n_coef, gradient_error)
        mechanism = dp_gd_step_mechanism(sensitivity, T, Budget(epsilon, delta, noise), n_coef)
        return DPSGDPlan(int(n_users), int(n_coef), T, clip, step, float(lam), radius, mechanism.sigma, mechanism,
                         momentum)
    # why: each step adds N(0, sigma^2) to a sum of sensitivity 2C (replace one user); T steps
    # are exactly sqrt(T) 2C / sigma -Gaussian DP, which must not exceed mu(epsilon, delta).
    sigma = dp_gd_sigma(2.0 * clip, T, epsilon, delta)
    return DPSGDPlan(int(n_users), int(n_coef), T, clip, step, float(lam), radius, sigma, None, momentum)


def user_mean_gradient_error(data_norm, max_items, n_coef, radius):
    """Public bound on the float64 error of one user's :func:`user_mean_gradients` vector.

    For rows of norm <= R (``data_norm``, scaled by :func:`make_user_data`)
    and an iterate of norm <= ``radius``: ``<x, w>`` errs by <= gamma_p R
    radius, the logistic weight ``a = -y expit(-y z)`` is 1/4-Lipschitz in z
    and is computed to a few ulps (|a| <= 1), the user's sum of at most m
    terms ``a_r x_r`` errs by <= gamma_m sum |a_r| ||x_r||, and the division
    by the count by one more rounding. The factor 2 covers the rows' and
    the iterate's own rounding (norms within a few ulps of R and radius).
    """
    p, m = int(n_coef), int(max_items)
    R, rad = float(data_norm), float(radius)

    def gamma(k):
        return k * _U / (1.0 - k * _U)

    return 2.0 * R * (gamma(m + 8) + gamma(p + 4) * R * rad)


def user_mean_gradients(data, W):
    """Per-user mean logistic gradients at each row of ``W`` (shape (chains, p)) -> (chains, n_users, p).

    Compiled, one pass over the rows per point (``_fast/_users.pyx``); the float64 error of every
    user's vector is within :func:`user_mean_gradient_error`.
    """
    return user_mean_logistic_gradients(data.X, data.y, data.indptr, W)


def user_mean_gradients_reference(data, W):
    """NumPy version of :func:`user_mean_gradients` (tests compare the two)."""
    from scipy.special import expit

    counts = np.diff(data.indptr).astype(float)
    out = []
    for w in np.atleast_2d(W):
        z = np.asarray(data.X @ w).ravel()
        a = -data.y * expit(-data.y * z)
        out.append(group_gradient_sums_reference(data.X, a, data.indptr) / counts[:, None])
    return np.stack(out)


def clipped_mean_gradient_sum(data, W, clip, parallel=None):
    """``sum_u g_u min(1, C / ||g_u||)`` at each row of ``W`` -> (chains, p), g_u the users' mean gradients.

    Compiled and fused (``_fast/_users.pyx``): no (users, p) array is formed. The users are cut into
    fixed blocks of ``_USER_BLOCK``; each block's sum is formed in user order and the block sums are
    added in block order, so the result does not depend on ``parallel`` (a
    ``joblib.Parallel(require="sharedmem")`` sharing the blocks, or None for one thread). Within
    :func:`~sklearn_dpsco._mechanisms._calibrate.clipped_sum_sensitivity` of the exact clipped sum
    with ``term_error = user_mean_gradient_error(...)`` like :func:`clipped_gradient_sum` (any
    order of the additions).
    """
    W = np.atleast_2d(np.asarray(W, dtype=float))
    n_blocks = max(-(-data.n_users // _USER_BLOCK), 1)
    out = np.zeros((W.shape[0], n_blocks, data.n_features))
    args = (data.X, data.y, data.indptr, W, float(clip), _USER_BLOCK)
    # one part per thread, and only parts worth a dispatch (a few ms of work each)
    n_parts = 1 if parallel is None else min(n_blocks, effective_n_jobs(parallel.n_jobs),
                                             W.shape[0] * data.X.shape[0] // _ROWS_PER_THREAD)
    if n_parts <= 1:
        clipped_mean_logistic_gradient_sums(*args, 0, n_blocks, out)
    else:
        edges = np.linspace(0, n_blocks, n_parts + 1).astype(int)
        parallel(delayed(clipped_mean_logistic_gradient_sums)(*args, int(a), int(b), out)
                 for a, b in zip(edges[:-1], edges[1:]) if b > a)
    return out.sum(axis=1)


def _clip_rows(G, clip):
    norms = np.linalg.norm(G, axis=-1, keepdims=True)
    return G * np.minimum(1.0, clip / np.maximum(norms, 1e-300))


def clipped_gradient_sum(user_gradients, clip):
    """Sum over users (axis -2) of the users' gradients clipped to norm ``clip``: the released centre."""
    return _clip_rows(user_gradients, clip).sum(axis=-2)


def _step_draw(plan, rng, chains):
    """The noise of one step for ``chains`` runs (drawn before the step's sum is formed)."""
    if plan.mechanism is None:
        return gaussian_steps(plan.sigma).draw(rng, (chains, plan.n_coef))
    return plan.mechanism.draw(rng, chains)


def run_dp_sgd(user_gradients, plan, rng, *, w0=None, size=None, clipped_sum=None):
    """Run the planned DP-GD.

    Parameters
    ----------
    user_gradients : callable
        ``W (chains, p) -> (chains, n_users, p)`` per-user gradients (mean over
        the user's rows) — :func:`user_mean_gradients` on real data; a
        test-only linear loss in the audits.
    plan : DPSGDPlan
    rng : numpy.random.Generator
    w0 : ndarray, optional
    size : int, optional
        Number of independent chains (vectorised audits); ``None`` for one fit.
    clipped_sum : callable, optional
        ``W (chains, p) -> (chains, p)``, the same sum as
        ``clipped_gradient_sum(user_gradients(W), plan.clip)`` computed in one pass
        (:func:`clipped_mean_gradient_sum`); used instead of it when given.

    Returns
    -------
    ndarray of shape (p,) or (size, p)
    """
    p = plan.n_coef
    chains = 1 if size is None else int(size)
    W = np.tile(np.zeros(p) if w0 is None else np.asarray(w0, dtype=float), (chains, 1))
    W_prev = W
    for _ in range(plan.iterations):
        # the point where the gradient is taken: the iterate, or with momentum the projected
        # look-ahead point; either is a function of earlier releases only (post-processing), and
        # of norm <= radius, as the float error bound of the users' gradients assumes
        V = W if plan.momentum == 0.0 else _project(W + plan.momentum * (W - W_prev), plan.radius)
        if clipped_sum is None:
            G = clipped_gradient_sum(user_gradients(V), plan.clip)  # (chains, p), sensitivity 2C (+ rounding)
        else:
            G = clipped_sum(V)  # the same sum, fused
        noisy = _step_draw(plan, rng, chains).release(G)  # secure: G rounded to the grid, integer noise added
        W_prev, W = W, _project(V - plan.step * (noisy / plan.n_users + plan.lam * V), plan.radius)
    return W[0] if size is None else W


def _project(W, radius):
    """Each row of ``W`` projected onto the ball B(0, radius)."""
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    return W * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


# --------------------------------------------------------------------------- item-level + group privacy
def group_privacy_item_budget(epsilon, delta, max_items):
    """Item-level (eps_i, delta_i) whose group-privacy conversion over m rows is (epsilon, delta).

    (eps_i, delta_i)-DP for rows implies (m eps_i, m e^((m-1) eps_i) delta_i)-DP
    for groups of m rows (Dwork and Roth 2014, Thm 2.2 and its approximate-DP form).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    m = int(max_items)
    # any eps_i <= eps/m works; past (m - 1) eps_i = 30 the conversion's e^((m-1) eps_i) would make
    # delta_i underflow for no gain, so very large budgets are capped there.
    eps_i = min(epsilon / m, 30.0 / max(m - 1, 1))
    delta_i = delta / m * math.exp(-(m - 1) * eps_i) * (1.0 - 1e-12)
    return eps_i, delta_i


@dataclass(frozen=True)
class ItemGroupPlan:
    n_users: int
    max_items: int
    lam: float
    tau: float
    item_epsilon: float
    item_delta: float
    mechanism: GaussianMechanism

    @property
    def event(self):
        m = self.max_items
        return ApproxDPEvent(m * self.item_epsilon, m * math.exp((m - 1) * self.item_epsilon) * self.item_delta)


def item_group_plan(n_users, max_items, n_coef, *, data_norm, lam, epsilon, delta, tolerance=0.02, noise=DEFAULT_NOISE):
    """Public plan of item-level output perturbation converted to users by group privacy."""
    lam = check_positive(lam, "lam")
    data_norm = check_positive(data_norm, "data_norm")
    if delta == 0:
        raise ValueError("the item-level baseline uses the Gaussian mechanism: it needs delta > 0.")
    eps_i, delta_i = group_privacy_item_budget(epsilon, delta, max_items)
    # why: the objective is normalised by the public n m; one row (added, removed or replaced) is
    # R-Lipschitz, so the exact minimizer moves by <= 2R / (lam n m) (doc/algorithms.rst, P4); the
    # certified solver adds 2 tau.
    exact = 2.0 * data_norm / (lam * n_users * max_items)
    tau = tolerance * exact
    mechanism = gaussian_mechanism_for(certified_sensitivity(exact, tau), Budget(eps_i, delta_i, noise), n_coef)
    return ItemGroupPlan(int(n_users), int(max_items), lam, tau, eps_i, delta_i, mechanism)


def run_item_group(data, plan, rng, *, radius):
    noise = plan.mechanism.draw(rng)  # drawn before the data is touched
    w = solve_user_logistic(
        data.X, data.y, data.n_users, max_items=plan.max_items, data_norm=data.data_norm, lam=plan.lam,
        center=np.zeros(data.n_features), tau=plan.tau,
    ).w
    # the release rounds w to the noise grid (doc/privacy/secure_noise.rst, "The release contract")
    return project_ball(noise.release(w), np.zeros(data.n_features), radius)
