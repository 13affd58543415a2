"""User-level solvers of Ghazi et al. (ICML 2023) on top of the deletion mechanism.

doc/algorithms.rst, §2, proofs in doc/privacy/user_level.rst. Every solver is a
PURE schedule function (public inputs only: users n, cap m, dimension, R,
regularisation, domain radius, budget) returning the exact privacy event, and
a run function consuming exactly that schedule:

* ``sc_output_pert`` — G-Alg 2: one deletion-mechanism call on the
  ``alpha``-regularised logistic ERM;
* ``phased_erm`` — G-Alg 3: T = 1 + ceil(log4(n sqrt m)) phases on ALL users,
  each a deletion-mechanism call at (eps/T, delta/T) with regulariser
  ``lam_i/2 ||w - w_{i-1}||^2``, ``lam_i = lam_1 4^(i-1)``; basic composition;
* ``phased_sco`` — G-Alg 4: phases on disjoint user batches of sizes
  floor(n / 2^i) at the full (eps, delta), ``lam_i = lam_1 8^(i-1)``;
  parallel composition;
* ``sc_erm_two_step`` — G-Alg 5: SCOutputPert at (eps/2, delta/2), then
  Phased-ERM at (eps/2, delta/2) inside a ball around its output;
* ``sc_sco_two_step`` — G-Alg 6: users split in halves; SCOutputPert on the
  first half, Phased-SCO on the second inside a ball; parallel composition.

A phase that returns ⊥ keeps the previous iterate (post-processing of ⊥).
Released points are projected onto the public domain ball (post-processing).
Batches and halves are formed by a uniformly random permutation of the users
drawn from the fit's random state up front: a uniformly random assignment of
users to slots, so the parallel-composition argument holds whatever the group
labels are (doc/privacy/user_level.rst, "batches").
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..._mechanisms import DEFAULT_NOISE
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ComposedEvent, ParallelComposedEvent
from ...accounting._shares import split_budget
from ._deletion import DEFAULT_MAX_EXHAUSTIVE_SOLVES, deletion_budget, deletion_plan, run_deletion_mechanism
from .._core._geometry import project_ball, project_two_balls

__all__ = [
    "GKKMMZ_SOLVERS",
    "UserLevelSchedule",
    "run_user_level",
    "user_level_schedule",
]

GKKMMZ_SOLVERS = ("sc_output_pert", "phased_erm", "phased_sco", "sc_erm_two_step", "sc_sco_two_step")


@dataclass(frozen=True)
class _Phase:
    plan: object  # DeletionPlan
    lam_phase: float  # lam_i (0 for a plain strongly convex call)
    batch: int  # index of the user batch (-1: all users of the stage)


@dataclass(frozen=True)
class _Stage:
    """Phases run in sequence on one group of users (all users, or one half)."""

    kind: str  # "output_pert" or "phased"
    phases: tuple
    batches: tuple  # batch sizes (phased_sco) or () for all users of the stage


@dataclass(frozen=True)
class UserLevelSchedule:
    """Public plan of a user-level GKKMMZ fit."""

    solver: str
    stages: tuple
    halves: tuple  # user counts per stage (sc_sco_two_step: two halves), () = all users for every stage
    mu: float
    radius: float
    event: object
    info: dict = field(default_factory=dict)


def _check(epsilon, delta, radius, data_norm):
    return check_epsilon(epsilon), check_delta(delta), check_positive(radius, "radius"), check_positive(
        data_norm, "data_norm"
    )


def _plan(n, m, p, lam, epsilon, delta, common):
    return deletion_plan(n, m, p, lam=lam, epsilon=epsilon, delta=delta, **common)


def _lambda_for_sigma(n, m, p, mu, epsilon, delta, target_sigma, common):
    """Smallest phase lambda whose planned noise sigma is <= target_sigma (bisection in log lambda).

    sigma decreases in lambda (every bound scales like 1/lambda times a factor
    that decreases in lambda), so the set of admissible lambdas is an interval
    [lambda*, inf). Public computation.
    """
    lo, hi = -30.0, 30.0
    if _plan(n, m, p, math.exp(hi) + mu, epsilon, delta, common).sigma > target_sigma:
        return math.exp(hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _plan(n, m, p, math.exp(mid) + mu, epsilon, delta, common).sigma <= target_sigma:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _phased_erm_phases(n, m, p, *, mu, diameter, epsilon, delta, common):
    """G-Alg 3: T phases on all users at (eps/T, delta/T); lam_i = lam_1 4^(i-1)."""
    T = 1 + math.ceil(math.log(n * math.sqrt(m), 4))
    # T deletion calls (approximate DP) on the same users: basic composition
    eps_t, delta_t = split_budget(epsilon, delta, T, "basic")
    # lam_1 = sqrt(16/3) sqrt(d) A / D with A = lam sigma(lam): the phase-1 noise
    # has sigma_1 = D / (sqrt(16/3) sqrt(d)) (doc/algorithms.rst, G-Alg 3, OUR RECONSTRUCTION).
    target = diameter / (math.sqrt(16.0 / 3.0) * math.sqrt(p))
    lam1 = _lambda_for_sigma(n, m, p, mu, eps_t, delta_t, target, common)
    phases = tuple(
        _Phase(_plan(n, m, p, lam1 * 4.0**i + mu, eps_t, delta_t, common), lam1 * 4.0**i, -1) for i in range(T)
    )
    return phases, T


def _phased_sco_phases(n, m, p, *, mu, diameter, epsilon, delta, data_norm, common):
    """G-Alg 4: disjoint batches of floor(n / 2^i) users at the full budget; lam_i = lam_1 8^(i-1)."""
    n_min = deletion_budget(epsilon, delta, 0.75).min_users  # most permissive split the plan may choose
    if n < 2 * n_min:
        raise ValueError(
            f"Phased-SCO needs at least {2 * n_min} users at epsilon={epsilon:g}, delta={delta:g} "
            f"(batches of >= {n_min} users); got {n}. Nothing was spent."
        )
    T = max(1, int(math.floor(math.log2(n / n_min))))
    sizes = [n // 2**i for i in range(1, T + 1)]
    # lam_1 = (1/D) (4R / sqrt(n m) + sqrt(d) A_1), A_1 = lam sigma(lam) on the first batch: solve
    # lam = (1/D)(4R/sqrt(nm)) + sqrt(d) lam sigma(lam) / D by bisection (public).
    base = 4.0 * data_norm / (math.sqrt(n * m) * diameter)

    def excess(log_lam):
        lam = math.exp(log_lam)
        sigma = _plan(sizes[0], m, p, lam + mu, epsilon, delta, common).sigma
        return lam - base - math.sqrt(p) * lam * sigma / diameter

    lo, hi = -30.0, 30.0
    if excess(hi) < 0:
        lam1 = math.exp(hi)
    else:
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if excess(mid) >= 0:
                hi = mid
            else:
                lo = mid
        lam1 = math.exp(hi)
    phases = tuple(
        _Phase(_plan(sizes[i], m, p, lam1 * 8.0**i + mu, epsilon, delta, common), lam1 * 8.0**i, i) for i in range(T)
    )
    return phases, tuple(sizes)


def user_level_schedule(solver, n_users, max_items, n_coef, *, data_norm, alpha, radius, epsilon, delta,
                        deletion_test="graded", beta=0.05, max_exhaustive_solves=DEFAULT_MAX_EXHAUSTIVE_SOLVES,
                        noise=DEFAULT_NOISE):
    """Public schedule of a GKKMMZ solver (no data).

    Parameters
    ----------
    solver : {"sc_output_pert", "phased_erm", "phased_sco", "sc_erm_two_step", "sc_sco_two_step"}
    n_users, max_items, n_coef : int
        Public facts: users, per-user cap m, coefficient dimension.
    data_norm : float
        Row-norm bound R.
    alpha : float
        Strong convexity mu of the objective (strongly convex solvers; the
        convex phased solvers use it as an extra ridge, 0 allowed).
    radius : float
        Radius of the public domain ball B(0, radius) (diameter D = 2 radius).
    epsilon, delta : float
    deletion_test : {"graded", "exhaustive"}
    beta : float
        Utility failure probability of the thresholds and radii.
    max_exhaustive_solves : int
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        Sampling path of every deletion call (its Gaussian release and its
        truncated discrete Laplace level).

    Returns
    -------
    UserLevelSchedule
    """
    if solver not in GKKMMZ_SOLVERS:
        raise ValueError(f"unknown user-level solver {solver!r}; expected one of {GKKMMZ_SOLVERS}.")
    epsilon, delta, radius, data_norm = _check(epsilon, delta, radius, data_norm)
    n, m, p = int(n_users), int(max_items), int(n_coef)
    mu = float(alpha)
    common = dict(data_norm=data_norm, test=deletion_test, beta=beta, max_exhaustive_solves=max_exhaustive_solves,
                  noise=noise)
    D = 2.0 * radius
    info = {"solver": solver, "n_users": n, "max_items": m}
    if solver == "sc_output_pert":
        mu = check_positive(alpha, "alpha")
        plan = _plan(n, m, p, mu, epsilon, delta, common)
        stages = (_Stage("output_pert", (_Phase(plan, 0.0, -1),), ()),)
        return UserLevelSchedule(solver, stages, (), mu, radius, plan.event, dict(info, **plan.public_info()))
    if solver == "phased_erm":
        phases, T = _phased_erm_phases(n, m, p, mu=mu, diameter=D, epsilon=epsilon, delta=delta, common=common)
        event = ComposedEvent(tuple(ph.plan.event for ph in phases))
        stages = (_Stage("phased", phases, ()),)
        return UserLevelSchedule(solver, stages, (), mu, radius, event,
                                 dict(info, phases=T, lambdas=[ph.lam_phase for ph in phases]))
    if solver == "phased_sco":
        phases, sizes = _phased_sco_phases(n, m, p, mu=mu, diameter=D, epsilon=epsilon, delta=delta,
                                           data_norm=data_norm, common=common)
        event = ParallelComposedEvent(tuple(ph.plan.event for ph in phases))
        stages = (_Stage("phased", phases, sizes),)
        return UserLevelSchedule(solver, stages, (), mu, radius, event,
                                 dict(info, phases=len(phases), batches=list(sizes),
                                      lambdas=[ph.lam_phase for ph in phases]))

    mu = check_positive(alpha, "alpha")
    if solver == "sc_erm_two_step":
        # G-Alg 5: SCOutputPert at (eps/2, delta/2), then Phased-ERM at (eps/2, delta/2) in a ball.
        half_eps, half_delta = split_budget(epsilon, delta, 2, "basic")  # two stages on the same users
        first = _plan(n, m, p, mu, half_eps, half_delta, common)
        beta_r = min(delta, data_norm * p / (mu * n * n * m * epsilon**2 * D))
        ball = first.sigma * (math.sqrt(p) + math.sqrt(2.0 * math.log(1.0 / beta_r))) + 2.0 * first.tau
        inner_d = 2.0 * min(ball, radius)
        phases, T = _phased_erm_phases(n, m, p, mu=mu, diameter=inner_d, epsilon=half_eps, delta=half_delta,
                                       common=common)
        stages = (_Stage("output_pert", (_Phase(first, 0.0, -1),), ()), _Stage("phased", phases, ()))
        event = ComposedEvent((first.event, ComposedEvent(tuple(ph.plan.event for ph in phases))))
        return UserLevelSchedule(solver, stages, (), mu, radius, event,
                                 dict(info, ball_radius=ball, phases=T, lambdas=[ph.lam_phase for ph in phases]))

    # sc_sco_two_step — G-Alg 6 with the user split (OUR RECONSTRUCTION): halves are disjoint.
    n1, n2 = n // 2, n - n // 2
    first = _plan(n1, m, p, mu, epsilon, delta, common)
    beta_r = min(delta, 0.05)
    r_pop = math.sqrt(16.0 / beta_r) * data_norm / (mu * math.sqrt(n1 * m))
    ball = first.sigma * (math.sqrt(p) + math.sqrt(2.0 * math.log(2.0 / beta_r))) + r_pop + 2.0 * first.tau
    phases, sizes = _phased_sco_phases(n2, m, p, mu=mu, diameter=2.0 * min(ball, radius), epsilon=epsilon,
                                       delta=delta, data_norm=data_norm, common=common)
    stages = (_Stage("output_pert", (_Phase(first, 0.0, -1),), ()), _Stage("phased", phases, sizes))
    event = ParallelComposedEvent((first.event, ParallelComposedEvent(tuple(ph.plan.event for ph in phases))))
    return UserLevelSchedule(solver, stages, (n1, n2), mu, radius, event,
                             dict(info, ball_radius=ball, halves=[n1, n2], batches=list(sizes),
                                  lambdas=[ph.lam_phase for ph in phases]))


def _project(v, domain):
    if len(domain) == 1:
        return project_ball(v, *domain[0])
    (c1, r1), (c2, r2) = domain
    return project_two_balls(v, c1, r1, c2, r2)


def run_user_level(data, schedule, rng, *, n_jobs=None):
    """Run a :class:`UserLevelSchedule` on ``data`` (a :class:`UserData`).

    Returns ``(coef, n_bottom)``: the released coefficient vector and how many
    deletion-mechanism calls returned ⊥ (a function of the released outputs).
    """
    p = data.n_features
    outer = (np.zeros(p), schedule.radius)
    # one uniformly random order of the users, drawn before any data-dependent step
    perm = rng.permutation(data.n_users)
    if schedule.halves:
        n1 = schedule.halves[0]
        groups = [np.sort(perm[:n1]), np.sort(perm[n1:])]
        stage_order = [perm[:n1], perm[n1:]]
    else:
        groups = [np.arange(data.n_users)] * len(schedule.stages)
        stage_order = [perm] * len(schedule.stages)
    w = np.zeros(p)
    domain = [outer]
    bottoms = 0
    for s_idx, stage in enumerate(schedule.stages):
        users = groups[s_idx]
        if stage.kind == "output_pert":
            ph = stage.phases[0]
            out = run_deletion_mechanism(data, ph.plan, rng, lam=ph.plan.lam, center=np.zeros(p), users=users,
                                         n_jobs=n_jobs)
            if out is None:
                bottoms += 1
            else:
                w = _project(out, domain)
                if s_idx + 1 < len(schedule.stages):
                    ball = schedule.info["ball_radius"]
                    if ball < schedule.radius:
                        domain = [outer, (w.copy(), ball)]
            continue
        order = stage_order[s_idx]
        offsets = np.concatenate(([0], np.cumsum(stage.batches))) if stage.batches else None
        for ph in stage.phases:
            if offsets is not None:
                batch_users = np.sort(order[offsets[ph.batch]:offsets[ph.batch + 1]])
            else:
                batch_users = users
            lam_tot = ph.plan.lam
            # regulariser mu/2 ||w||^2 + lam_i/2 ||w - w_prev||^2 = lam_tot/2 ||w - c||^2 + const
            center = (ph.lam_phase / lam_tot) * w
            out = run_deletion_mechanism(data, ph.plan, rng, lam=lam_tot, center=center, users=batch_users,
                                         n_jobs=n_jobs)
            if out is None:
                bottoms += 1
            else:
                w = _project(out, domain)
    return w, bottoms
