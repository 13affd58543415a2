"""Plans of the hinge-loss solvers (DPHingeClassifier; doc/privacy/hinge.rst).

``params`` (resolved by the estimator from public facts): ``clip``,
``alpha`` (None for the ALD solvers), ``tolerance``, ``radius``,
``repeats``, ``kappa_lower``, and the localization schedule ``phases``,
``lam_growth``, ``min_block``.
"""

from .._core._plan import SchedulePlan, SolverSpec
from .._localization._phases import ald_growth_schedule, ald_schedule, run_growth_epochs, run_phases
from .._lowy import pop_localize_plan, run_pop_localize
from .._output_perturbation import output_perturbation_plan, run_output_perturbation

__all__ = ["SOLVERS"]


def _common(budget, params):
    # the certificate's float floor at the hinge's declared term size (params["objective_scale"])
    return dict(clip=params["clip"], epsilon=budget.epsilon, delta=budget.delta, tolerance=params["tolerance"],
                noise=budget.noise, objective_scale=params["objective_scale"])


def _run_output_perturbation(problem, schedule, rng):
    return run_output_perturbation(problem.data, problem.loss, schedule, rng)


def output_perturbation(n, d, budget, params):
    """Certified regularized ERM plus noise (Chaudhuri, Monteleoni, Sarwate 2011)."""
    schedule = output_perturbation_plan(n, d, lam=params["alpha"], **_common(budget, params))
    info = {"alpha": params["alpha"], "sensitivity": schedule.sensitivity, "rows": n}
    return SchedulePlan(schedule, _run_output_perturbation, info)


def _run_pop_localize(problem, schedule, rng):
    center = problem.center
    return run_pop_localize(problem.data, problem.loss, schedule, center=center, rng=rng,
                            domain=(center, problem.radius), n_jobs=problem.n_jobs)


def _localized(inner):
    def build(n, d, budget, params):
        schedule = pop_localize_plan(
            n, d, lam1=params["alpha"], phases=params["phases"], repeats=params["repeats"],
            lam_growth=params["lam_growth"], min_block=params["min_block"], inner=inner, **_common(budget, params),
        )
        info = dict(schedule.info)
        info["blocks"] = [[(p.start, p.stop) for p in phase] for phase in schedule.phases]
        return SchedulePlan(schedule, _run_pop_localize, info)

    build.__name__ = build.__qualname__ = f"localized_{inner}"
    build.__doc__ = f"Population localization with {inner} output perturbation per phase (Lowy 2026, Alg. 1)."
    return build


def _run_phases(problem, schedule, rng):
    center = problem.center
    return run_phases(problem.data, problem.loss, schedule, center=center, domain=[(center, problem.radius)], rng=rng)


def ald_localization(n, d, budget, params):
    """Asi, Levy, Duchi 2021, Algorithm 1 with the paper's step size."""
    schedule = ald_schedule(n, d, radius=params["radius"], **_common(budget, params))
    info = {"phases": schedule.info["phases"], "steps": schedule.info["steps"],
            "blocks": [(p.start, p.stop) for p in schedule.phases]}
    return SchedulePlan(schedule, _run_phases, info)


def _run_growth_epochs(problem, schedule, rng):
    return run_growth_epochs(problem.data, problem.loss, schedule, center=problem.center, radius=problem.radius,
                             rng=rng)


def ald_growth(n, d, budget, params):
    """ALD Algorithm 2: epochs adapting to an unknown growth exponent."""
    schedule = ald_growth_schedule(n, d, radius=params["radius"], kappa_lower=params["kappa_lower"],
                                   **_common(budget, params))
    info = {"epochs": schedule.info["epochs"], "epoch_size": schedule.info["epoch_size"]}
    return SchedulePlan(schedule, _run_growth_epochs, info)


SOLVERS = (
    SolverSpec("output_perturbation", output_perturbation, "hinge", traits={"regularization": "erm"}),
    SolverSpec("localized_output_perturbation", _localized("single"), "hinge",
               traits={"regularization": "localized", "inner": "single"}),
    SolverSpec("lowy", _localized("double"), "hinge", traits={"regularization": "localized", "inner": "double"}),
    SolverSpec("ald_localization", ald_localization, "hinge"),
    SolverSpec("ald_growth", ald_growth, "hinge"),
)
