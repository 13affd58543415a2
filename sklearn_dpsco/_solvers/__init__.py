"""Private building blocks: no scikit-learn API here (DESIGN.md section 3).

Each block takes validated data (:class:`GLMData`), a loss, public parameters
and a random generator, and returns a :class:`PrivateFit` — the released
point and the privacy event it consumed.
"""

from ._data import GLMData
from ._erm import CertificationError, solve_certified
from ._localization import (
    PhaseSchedule,
    ald_growth_epochs,
    ald_growth_schedule,
    ald_localization,
    ald_schedule,
    phased_erm,
    phased_erm_schedule,
    run_growth_epochs,
    run_phases,
)
from ._lowy import (
    DoubleOutputPerturbationPlan,
    LocalizePlan,
    PopLocalizePlan,
    double_output_perturbation,
    double_output_perturbation_plan,
    geometric_aggregate,
    output_pert_localize,
    output_pert_localize_plan,
    pop_localize,
    pop_localize_plan,
    run_double_output_perturbation,
    run_output_pert_localize,
    run_pop_localize,
)
from ._output_perturbation import (
    erm_sensitivity,
    output_perturbation,
    output_perturbation_plan,
    run_output_perturbation,
)
from ._result import PrivateFit

__all__ = [
    "DoubleOutputPerturbationPlan",
    "LocalizePlan",
    "PopLocalizePlan",
    "double_output_perturbation",
    "double_output_perturbation_plan",
    "geometric_aggregate",
    "output_pert_localize",
    "output_pert_localize_plan",
    "pop_localize",
    "pop_localize_plan",
    "run_double_output_perturbation",
    "run_output_pert_localize",
    "run_pop_localize",
    "PhaseSchedule",
    "ald_growth_schedule",
    "ald_schedule",
    "output_perturbation_plan",
    "phased_erm_schedule",
    "run_growth_epochs",
    "run_output_perturbation",
    "run_phases",
    "CertificationError",
    "GLMData",
    "PrivateFit",
    "ald_growth_epochs",
    "ald_localization",
    "erm_sensitivity",
    "output_perturbation",
    "phased_erm",
    "solve_certified",
]
