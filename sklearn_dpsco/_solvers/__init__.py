"""Private building blocks: no scikit-learn API here (doc/design.rst, section 2).

Each block takes validated data (:class:`GLMData`), a loss, public parameters
and a random generator, and returns a :class:`PrivateFit` — the released
point and the privacy event it consumed.
"""

from ._adassp import AdaSSPPlan, adassp_plan, run_adassp
from ._data import GLMData
from ._erm import CertificationError, solve_certified
from ._interpolation import (
    AdaptiveInterpolationSchedule,
    ExtensionPlan,
    InterpolationSchedule,
    adaptive_interpolation,
    adaptive_interpolation_schedule,
    extension_plan,
    interpolation_epochs,
    interpolation_schedule,
    run_adaptive_interpolation,
    run_extension,
    run_interpolation,
)
from ._inverse_sensitivity import (
    InverseSensitivityPlan,
    inverse_sensitivity,
    inverse_sensitivity_log_pmf,
    inverse_sensitivity_plan,
    run_inverse_sensitivity,
)
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
    float_floor,
    output_perturbation,
    output_perturbation_plan,
    run_output_perturbation,
)
from ._phased_sgd import PhasedSGDSchedule, phased_sgd_schedule, run_phased_sgd
from ._pnsgd import PNSGDSchedule, fkt_rho, jnn_steps, pnsgd_schedule, rho_for_budget, run_pnsgd, snowball_schedule
from ._result import PrivateFit
from ._row_source import ArraySource, DaskSource, IterableSource, as_row_source
from ._sgd_settings import SGDSettings

__all__ = [
    "AdaSSPPlan",
    "ArraySource",
    "DaskSource",
    "IterableSource",
    "PNSGDSchedule",
    "PhasedSGDSchedule",
    "SGDSettings",
    "adassp_plan",
    "as_row_source",
    "fkt_rho",
    "jnn_steps",
    "phased_sgd_schedule",
    "pnsgd_schedule",
    "rho_for_budget",
    "run_adassp",
    "run_phased_sgd",
    "run_pnsgd",
    "snowball_schedule",
    "InverseSensitivityPlan",
    "inverse_sensitivity",
    "inverse_sensitivity_log_pmf",
    "inverse_sensitivity_plan",
    "run_inverse_sensitivity",
    "AdaptiveInterpolationSchedule",
    "ExtensionPlan",
    "InterpolationSchedule",
    "adaptive_interpolation",
    "adaptive_interpolation_schedule",
    "extension_plan",
    "interpolation_epochs",
    "interpolation_schedule",
    "run_adaptive_interpolation",
    "run_extension",
    "run_interpolation",
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
    "float_floor",
    "output_perturbation",
    "phased_erm",
    "solve_certified",
]
