"""Plans of the ``|r|^p`` regression solvers (DPGrowthAdaptiveRegressor; doc/privacy/growth.rst).

``params`` (the estimator's public settings): ``clip``, ``radius``,
``power``, ``kappa_lower``, ``schedule`` ("practical" or "paper"),
``smoothness``, ``growth``, ``kappa``, ``grid_size``.
"""

from .._core._plan import SchedulePlan, SolverSpec
from .._interpolation._accd import DEFAULT_UTILITY_CONSTANT, interpolation_schedule, run_interpolation
from .._inverse_sensitivity import (
    GRID_SIZE_FAST,
    GRID_SIZE_GENERAL,
    inverse_sensitivity_plan,
    run_inverse_sensitivity,
)
from .._localization._growth import CENTRED_OBJECTIVE_SCALE, growth_epochs_schedule, localization_schedule
from .._localization._phases import run_growth_epochs, run_phases
from .._optim._warm_start import one_blas_thread

__all__ = ["SOLVERS"]


def _run_inverse_sensitivity(problem, schedule, rng):
    return run_inverse_sensitivity(problem.data, problem.loss, schedule, rng)


def inverse_sensitivity(n, d, budget, params):
    """ALD's smooth inverse-sensitivity mechanism on a grid (one coefficient; pure DP)."""
    if d != 1:
        raise ValueError(
            "solver='inverse_sensitivity' is one-dimensional: it needs exactly one coefficient "
            f"(one feature and fit_intercept=False); got {d} coefficients."
        )
    grid = params["grid_size"]
    if grid is None:
        grid = GRID_SIZE_FAST if params["power"] == 1 else GRID_SIZE_GENERAL
    plan = inverse_sensitivity_plan(n, lipschitz=params["clip"], center=0.0, radius=params["radius"],
                                    epsilon=budget.epsilon, grid_size=grid)
    info = {"epochs": 1, "radii": [params["radius"]], "grid_size": plan.grid_size, "spacing": plan.spacing,
            "smoothing": plan.smoothing, "score_sensitivity": plan.sensitivity}
    return SchedulePlan(plan, _run_inverse_sensitivity, info)


def _run_interpolation(problem, schedule, rng):
    center = problem.center
    return run_interpolation(problem.data, problem.loss, schedule, center=center,
                             domain=[(center, problem.radius)], rng=rng)


def interpolation(n, d, budget, params):
    """ACCD Algorithm 6: kappa-growth interpolation epochs (declared smoothness and growth)."""
    if params["smoothness"] is None or params["growth"] is None:
        raise ValueError(
            "solver='interpolation' needs the declared smoothness H and growth lambda of the loss "
            "(public parameters smoothness= and growth=)."
        )
    sched = interpolation_schedule(
        n, d, smoothness=params["smoothness"], growth=params["growth"], radius=params["radius"],
        epsilon=budget.epsilon, delta=budget.delta, kappa=params["kappa"], lipschitz=params["clip"],
        c=DEFAULT_UTILITY_CONSTANT, schedule=params["schedule"], noise=budget.noise,
    )
    info = {k: sched.info[k] for k in ("epochs", "epoch_size", "radii", "lipschitz", "predicted_excess")}
    return SchedulePlan(sched, _run_interpolation, info)


def _centred(budget, params):
    # |r|^p is a loss of the residual: its phases are centred (doc/privacy/output_perturbation.rst)
    return dict(clip=params["clip"], radius=params["radius"], epsilon=budget.epsilon, delta=budget.delta,
                noise=budget.noise, centred=True, objective_scale=CENTRED_OBJECTIVE_SCALE)


def _one_blas_thread():
    """The phases' BLAS products on one thread (speed only; the results are one thread's, as fingerprinted).

    Their products are small (a block of 12.5k rows x 21 at 2e5 x 20): with the machine's BLAS threads
    (OpenBLAS, 2 cores) each call paid more in waking and spinning threads than its arithmetic, and the
    spinning threads took the core the fit ran on (2e5 x 20, default threads, load 4-5: 440 -> 226 ms
    wall, 256 -> 119 ms CPU). The Newton starts already ran on one thread (``_warm_start``)."""
    return one_blas_thread()


def _run_phases(problem, schedule, rng):
    center = problem.center
    with _one_blas_thread():
        return run_phases(problem.data, problem.loss, schedule, center=center, domain=[(center, problem.radius)],
                          rng=rng)


def ald_localization(n, d, budget, params):
    """ALD Algorithm 1 alone, centred phases (the non-adaptive baseline)."""
    sched = localization_schedule(n, d, schedule=params["schedule"], **_centred(budget, params))
    info = {"epochs": sched.info["phases"], "radii": [params["radius"]] * sched.info["phases"],
            "steps": list(sched.info["steps"])}
    return SchedulePlan(sched, _run_phases, info)


def _run_growth_epochs(problem, schedule, rng):
    with _one_blas_thread():
        return run_growth_epochs(problem.data, problem.loss, schedule, center=problem.center, radius=problem.radius,
                                 rng=rng)


def ald_growth(n, d, budget, params):
    """ALD Algorithm 2: epochs of Algorithm 1 with halving radii, adaptive to the growth exponent."""
    sched = growth_epochs_schedule(n, d, kappa_lower=params["kappa_lower"], schedule=params["schedule"],
                                   **_centred(budget, params))
    return SchedulePlan(sched, _run_growth_epochs)


def ald_growth_event(n, d, budget, params):
    """``ald_growth(n, d, budget, params).event`` without the plan: the same schedule's event, no mechanism
    built (the budget fill at ``delta > 0`` builds about 7 candidate plans of 13 phases each for one kept)."""
    return growth_epochs_schedule(n, d, kappa_lower=params["kappa_lower"], schedule=params["schedule"],
                                  events_only=True, **_centred(budget, params))


SOLVERS = (
    SolverSpec("ald_growth", ald_growth, "power", build_event=ald_growth_event),
    SolverSpec("ald_localization", ald_localization, "power"),
    SolverSpec("interpolation", interpolation, "power"),
    # the exponential mechanism is pure DP whatever delta: it releases a grid point, no float noise
    SolverSpec("inverse_sensitivity", inverse_sensitivity, "power"),
)
