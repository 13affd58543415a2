"""Two user-level baselines a user would otherwise reach for (doc/privacy/user_level.rst).

``user_dp_sgd`` — user-level DP gradient descent (full batch of users per
step): each user's *average* gradient is clipped to norm C, the clipped
vectors are summed, Gaussian noise N(0, sigma^2 I) is added, and a projected
step is taken. Replacing one user moves the sum by at most 2C, so each step
is a Gaussian mechanism with sensitivity 2C; T steps compose exactly as a
Gaussian of ``mu = sqrt(T) 2C / sigma`` (Dong, Roth, Su 2019), so
``sigma = 2C sqrt(T) / mu(epsilon, delta)``. T, C, the step and the ridge
are public; the number of steps is fixed in advance. Its noise is
``rng.normal`` (float only): there is NO secure (discrete) path, so
:class:`~sklearn_dpsco.UserLevelDPLogistic` refuses it under
``noise="secure"``.

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

from ..._budget import Budget
from ..._mechanisms import DEFAULT_NOISE, GaussianMechanism
from ..._mechanisms._calibrate import certified_sensitivity, dp_gd_sigma, gaussian_mechanism_for, gaussian_steps
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ApproxDPEvent, GaussianEvent, SelfComposedEvent
from .._core._geometry import project_ball
from .._core._user_data import group_gradient_sums
from .._optim._user_erm import solve_user_logistic

__all__ = [
    "DPSGDPlan",
    "ItemGroupPlan",
    "dp_sgd_plan",
    "group_privacy_item_budget",
    "item_group_plan",
    "run_dp_sgd",
    "run_item_group",
    "user_mean_gradients",
]


# --------------------------------------------------------------------------- user-level DP-GD
@dataclass(frozen=True)
class DPSGDPlan:
    n_users: int
    n_coef: int
    iterations: int
    clip: float
    step: float
    lam: float
    radius: float
    sigma: float

    @property
    def event(self):
        # T Gaussian releases of a 2C-sensitive sum on the same users
        return SelfComposedEvent(GaussianEvent(2.0 * self.clip, self.sigma), self.iterations)


def dp_sgd_plan(n_users, n_coef, *, epsilon, delta, iterations, clip, step, lam, radius):
    """Public plan of user-level DP-GD; ``sigma`` is the one noise scale of every step."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("user-level DP-SGD is a Gaussian mechanism: it needs delta > 0.")
    clip = check_positive(clip, "clip")
    step = check_positive(step, "step")
    radius = check_positive(radius, "radius")
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam}.")
    T = int(iterations)
    if T < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}.")
    # why: each step adds N(0, sigma^2) to a sum of sensitivity 2C (replace one user); T steps
    # are exactly sqrt(T) 2C / sigma -Gaussian DP, which must not exceed mu(epsilon, delta).
    sigma = dp_gd_sigma(2.0 * clip, T, epsilon, delta)
    return DPSGDPlan(int(n_users), int(n_coef), T, clip, step, float(lam), radius, sigma)


def user_mean_gradients(data, W):
    """Per-user mean logistic gradients at each row of ``W`` (shape (chains, p)) -> (chains, n_users, p)."""
    from scipy.special import expit

    counts = np.diff(data.indptr).astype(float)
    out = []
    for w in np.atleast_2d(W):
        z = np.asarray(data.X @ w).ravel()
        a = -data.y * expit(-data.y * z)
        out.append(group_gradient_sums(data.X, a, data.indptr) / counts[:, None])
    return np.stack(out)


def _clip_rows(G, clip):
    norms = np.linalg.norm(G, axis=-1, keepdims=True)
    return G * np.minimum(1.0, clip / np.maximum(norms, 1e-300))


def run_dp_sgd(user_gradients, plan, rng, *, w0=None, size=None):
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

    Returns
    -------
    ndarray of shape (p,) or (size, p)
    """
    p = plan.n_coef
    chains = 1 if size is None else int(size)
    step_noise = gaussian_steps(plan.sigma)
    W = np.tile(np.zeros(p) if w0 is None else np.asarray(w0, dtype=float), (chains, 1))
    for _ in range(plan.iterations):
        G = _clip_rows(user_gradients(W), plan.clip).sum(axis=1)  # (chains, p), sensitivity 2C
        noisy = step_noise.draw(rng, (chains, p)).release(G)
        W = W - plan.step * (noisy / plan.n_users + plan.lam * W)
        norms = np.linalg.norm(W, axis=1, keepdims=True)
        W = W * np.minimum(1.0, plan.radius / np.maximum(norms, 1e-300))  # projection onto B(0, radius)
    return W[0] if size is None else W


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
