"""Private building blocks: no scikit-learn API here (DESIGN.md section 3).

Each block takes validated data (:class:`GLMData`), a loss, public parameters
and a random generator, and returns a :class:`PrivateFit` — the released
point and the privacy event it consumed.
"""

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
from ._output_perturbation import (
    erm_sensitivity,
    float_floor,
    output_perturbation,
    output_perturbation_plan,
    run_output_perturbation,
)
from ._result import PrivateFit

__all__ = [
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
