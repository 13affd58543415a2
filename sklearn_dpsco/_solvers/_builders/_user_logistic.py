"""Plans of the user-level logistic solvers (UserLevelDPLogistic; doc/privacy/user_level.rst).

``n`` counts users (public under replace-one-user). ``params`` (the
estimator's public settings): ``max_items`` (the per-user cap m),
``data_norm``, ``alpha``, ``radius``, ``deletion_test``, ``beta``,
``max_exhaustive_solves``, ``user_clip``, ``sgd_iterations``,
``sgd_clip``, ``sgd_step``, ``sgd_momentum``.
"""

import math

from joblib import Parallel

from .._core._plan import SchedulePlan, SolverSpec
from .._user_level._baselines import (
    clipped_mean_gradient_sum,
    dp_sgd_plan,
    item_group_plan,
    run_dp_sgd,
    run_item_group,
    user_mean_gradient_error,
    user_mean_gradients,
)
from .._user_level._clip import run_user_clip, user_clip_plan
from .._user_level._gkkmmz import GKKMMZ_SOLVERS, run_user_level, user_level_schedule

__all__ = ["SOLVERS"]


def _run_user_level(problem, schedule, rng):
    coef, bottoms = run_user_level(problem.data, schedule, rng, n_jobs=problem.n_jobs)
    return coef, {"n_bottom": bottoms}


def _gkkmmz(solver):
    def build(n, d, budget, params):
        schedule = user_level_schedule(
            solver, n, params["max_items"], d, data_norm=params["data_norm"], alpha=params["alpha"],
            radius=params["radius"], epsilon=budget.epsilon, delta=budget.delta,
            deletion_test=params["deletion_test"], beta=params["beta"],
            max_exhaustive_solves=params["max_exhaustive_solves"], noise=budget.noise,
        )
        return SchedulePlan(schedule, _run_user_level)

    build.__name__ = build.__qualname__ = solver
    build.__doc__ = f"Ghazi et al. 2023 {solver!r} (deletion mechanism)."
    return build


def _gkkmmz_noise_norm(schedule):
    return schedule.info["sigma"] * math.sqrt(schedule.stages[0].phases[0].plan.n_coef)


def _run_user_clip(problem, schedule, rng):
    return run_user_clip(problem.data, schedule, rng, radius=problem.radius)


def user_clip(n, d, budget, params):
    """Output perturbation of the ERM with each user's loss made ``clip``-Lipschitz."""
    schedule = user_clip_plan(n, params["max_items"], d, data_norm=params["data_norm"], lam=params["alpha"],
                              clip=params["user_clip"], epsilon=budget.epsilon, delta=budget.delta,
                              noise=budget.noise)
    info = {"clip": schedule.clip, "sensitivity": schedule.sensitivity, "sigma": schedule.mechanism.sigma}
    return SchedulePlan(schedule, _run_user_clip, info)


def _mechanism_noise_norm(schedule):
    return schedule.mechanism.sigma * math.sqrt(schedule.mechanism.dimension)


def _run_dp_sgd(problem, schedule, rng):
    data = problem.data
    # threads writing into one array: shared memory is required, whatever backend the caller configured
    with Parallel(n_jobs=problem.n_jobs, require="sharedmem") as parallel:
        parallel = parallel if parallel.n_jobs != 1 else None
        return run_dp_sgd(lambda W: user_mean_gradients(data, W), schedule, rng,
                          clipped_sum=lambda W: clipped_mean_gradient_sum(data, W, schedule.clip, parallel))


def user_dp_sgd(n, d, budget, params):
    """User-level DP gradient descent (per-user clipped mean gradients, Gaussian noise)."""
    norm, alpha = params["data_norm"], params["alpha"]
    clip = norm / 2.0 if params["sgd_clip"] is None else params["sgd_clip"]
    step = 1.0 / (0.25 * norm**2 + alpha) if params["sgd_step"] is None else params["sgd_step"]
    # the secure path's sensitivity covers the float64 error of each user's gradient
    error = user_mean_gradient_error(norm, params["max_items"], d, params["radius"])
    schedule = dp_sgd_plan(n, d, epsilon=budget.epsilon, delta=budget.delta, iterations=params["sgd_iterations"],
                           clip=clip, step=step, lam=params["alpha"], radius=params["radius"], gradient_error=error,
                           noise=budget.noise, momentum=params.get("sgd_momentum") or 0.0)
    info = {"iterations": schedule.iterations, "clip": schedule.clip, "step": schedule.step, "sigma": schedule.sigma,
            "momentum": schedule.momentum}
    return SchedulePlan(schedule, _run_dp_sgd, info)


def _dp_sgd_noise_norm(schedule):
    # w_T carries sum_t (1 - step lam)^t step sigma / n of per-step noise (projection ignored)
    contraction = (1.0 - schedule.step * schedule.lam) ** 2
    total = sum(contraction**t for t in range(schedule.iterations))
    return schedule.step * schedule.sigma / schedule.n_users * math.sqrt(total * schedule.n_coef)


def _run_item_group(problem, schedule, rng):
    return run_item_group(problem.data, schedule, rng, radius=problem.radius)


def item_group(n, d, budget, params):
    """Item-level output perturbation made user-level by group privacy."""
    schedule = item_group_plan(n, params["max_items"], d, data_norm=params["data_norm"], lam=params["alpha"],
                               epsilon=budget.epsilon, delta=budget.delta, noise=budget.noise)
    info = {"item_epsilon": schedule.item_epsilon, "item_delta": schedule.item_delta,
            "sigma": schedule.mechanism.sigma}
    return SchedulePlan(schedule, _run_item_group, info)


def _spec(name, build, **kw):
    return SolverSpec(name, build, "logistic", privacy_unit="user", **kw)


# split: how one-vs-rest problems share the budget, the composition rule of the solver's events
SOLVERS = tuple(
    _spec(name, _gkkmmz(name), split="basic", expected_noise_norm=_gkkmmz_noise_norm)  # approximate-DP events
    for name in GKKMMZ_SOLVERS
) + (
    # one Gaussian release on the noise path: the budget's own rule
    _spec("user_clip", user_clip, expected_noise_norm=_mechanism_noise_norm),
    # Gaussian steps: float (exactly Gaussian-DP) or secure (discrete Gaussian, zCDP): the budget's own rule
    _spec("user_dp_sgd", user_dp_sgd, expected_noise_norm=_dp_sgd_noise_norm),
    _spec("item_group", item_group, split="basic", expected_noise_norm=_mechanism_noise_norm),  # group privacy
)
