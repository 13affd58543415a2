"""Private building blocks: no scikit-learn API here (doc/design.rst, section 2).

Each block takes validated data (:class:`GLMData`), a loss, public parameters
and a random generator, and returns a :class:`PrivateFit` — the released
point and the privacy event it consumed.

This module is the one face the estimators import from. Layout by role:

* ``_core/`` — data views (rows, row sources, rows grouped by user),
  geometry, the NumPy GLM losses, SGD settings, the result type;
* ``_optim/`` — deterministic certified solvers (ERM, user-level ERM) and
  the noisy-SGD loop drivers (compiled kernels, NumPy reference fallback);
* ``_core/_plan.py`` — the :class:`Plan` shape every solver has for the
  fit template, and :class:`SolverSpec`; ``_builders/`` — one module per
  estimator family building plans from public facts and a ``Budget``;
  ``_registry`` — family -> solver name -> spec;
* one module or subpackage per algorithm family, as in doc/privacy/index.rst:
  ``_output_perturbation``, ``_localization/`` (phases + growth schedules),
  ``_lowy``, ``_interpolation/`` (ACCD, ACCD over noisy SGD),
  ``_noisy_sgd/`` (PNSGD / Snowball-SGD, Phased-SGD), ``_adassp``,
  ``_inverse_sensitivity``, ``_user_level/``.
"""

from ._adassp import AdaSSPPlan, adassp_plan, run_adassp
from ._core._cluster import ClusterRows, is_dask_collection, map_chunks
from ._core._data import GLMData, safe_row_norms
from ._core._losses import get_loss
from ._core._plan import Plan, Problem, SchedulePlan, SolverSpec
from ._core._result import PrivateFit
from ._core._row_source import (ArraySource, DaskSource, IterableSource, RowSource, as_row_source, is_dask_array,
                                with_known_chunks)
from ._core._sgd_settings import SGDSettings
from ._core._user_data import make_user_data
from ._interpolation._accd import (
    DEFAULT_UTILITY_CONSTANT,
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
from ._interpolation._accd_sgd import interpolation_sgd_schedule, run_interpolation_sgd
from ._inverse_sensitivity import (
    GRID_SIZE_FAST,
    GRID_SIZE_GENERAL,
    InverseSensitivityPlan,
    inverse_sensitivity,
    inverse_sensitivity_log_pmf,
    inverse_sensitivity_plan,
    run_inverse_sensitivity,
)
from ._localization._growth import CENTRED_OBJECTIVE_SCALE, growth_epochs_schedule, localization_schedule
from ._localization._growth import SCHEDULES as GROWTH_SCHEDULES
from ._localization._phases import (
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
    lowy_clip,
    lowy_lam1,
    output_pert_localize,
    output_pert_localize_plan,
    pop_localize,
    pop_localize_plan,
    run_double_output_perturbation,
    run_output_pert_localize,
    run_pop_localize,
    split_two_stages,
)
from ._noisy_sgd._phased_sgd import PhasedSGDSchedule, phased_sgd_schedule, run_phased_sgd
from ._noisy_sgd._pnsgd import PNSGDSchedule, fkt_rho, jnn_steps, pnsgd_schedule, rho_for_budget, run_pnsgd, snowball_schedule
from ._optim._erm import CertificationError, solve_certified
from ._registry import get_solver, loss_for, solver_names
from ._builders._least_squares import snowball_fits
from ._output_perturbation import (
    erm_sensitivity,
    float_floor,
    output_perturbation,
    output_perturbation_plan,
    run_output_perturbation,
)
from ._user_level._baselines import (
    dp_sgd_plan,
    item_group_plan,
    run_dp_sgd,
    run_item_group,
    user_mean_gradient_error,
    user_mean_gradients,
)
from ._user_level._clip import run_user_clip, user_clip_plan
from ._user_level._deletion import DEFAULT_MAX_EXHAUSTIVE_SOLVES
from ._user_level._gkkmmz import GKKMMZ_SOLVERS, run_user_level, user_level_schedule

__all__ = [
    # _core
    "ArraySource",
    "ClusterRows",
    "DaskSource",
    "GLMData",
    "IterableSource",
    "Plan",
    "PrivateFit",
    "Problem",
    "RowSource",
    "SGDSettings",
    "SchedulePlan",
    "SolverSpec",
    "as_row_source",
    "get_loss",
    "is_dask_array",
    "is_dask_collection",
    "map_chunks",
    "make_user_data",
    "safe_row_norms",
    # the registry
    "get_solver",
    "loss_for",
    "snowball_fits",
    "solver_names",
    # _optim
    "CertificationError",
    "solve_certified",
    # output perturbation
    "erm_sensitivity",
    "float_floor",
    "output_perturbation",
    "output_perturbation_plan",
    "run_output_perturbation",
    # localization (phases, growth schedules)
    "CENTRED_OBJECTIVE_SCALE",
    "GROWTH_SCHEDULES",
    "PhaseSchedule",
    "ald_growth_epochs",
    "ald_growth_schedule",
    "ald_localization",
    "ald_schedule",
    "growth_epochs_schedule",
    "localization_schedule",
    "phased_erm",
    "phased_erm_schedule",
    "run_growth_epochs",
    "run_phases",
    # Lowy
    "DoubleOutputPerturbationPlan",
    "LocalizePlan",
    "PopLocalizePlan",
    "double_output_perturbation",
    "double_output_perturbation_plan",
    "geometric_aggregate",
    "lowy_clip",
    "lowy_lam1",
    "output_pert_localize",
    "output_pert_localize_plan",
    "pop_localize",
    "pop_localize_plan",
    "run_double_output_perturbation",
    "run_output_pert_localize",
    "run_pop_localize",
    "split_two_stages",
    # interpolation (ACCD)
    "DEFAULT_UTILITY_CONSTANT",
    "AdaptiveInterpolationSchedule",
    "ExtensionPlan",
    "InterpolationSchedule",
    "adaptive_interpolation",
    "adaptive_interpolation_schedule",
    "extension_plan",
    "interpolation_epochs",
    "interpolation_schedule",
    "interpolation_sgd_schedule",
    "run_adaptive_interpolation",
    "run_extension",
    "run_interpolation",
    "run_interpolation_sgd",
    # noisy SGD
    "PNSGDSchedule",
    "PhasedSGDSchedule",
    "fkt_rho",
    "jnn_steps",
    "phased_sgd_schedule",
    "pnsgd_schedule",
    "rho_for_budget",
    "run_phased_sgd",
    "run_pnsgd",
    "snowball_schedule",
    # AdaSSP
    "AdaSSPPlan",
    "adassp_plan",
    "run_adassp",
    # inverse sensitivity
    "GRID_SIZE_FAST",
    "GRID_SIZE_GENERAL",
    "InverseSensitivityPlan",
    "inverse_sensitivity",
    "inverse_sensitivity_log_pmf",
    "inverse_sensitivity_plan",
    "run_inverse_sensitivity",
    # user level
    "DEFAULT_MAX_EXHAUSTIVE_SOLVES",
    "GKKMMZ_SOLVERS",
    "dp_sgd_plan",
    "item_group_plan",
    "run_dp_sgd",
    "run_item_group",
    "run_user_clip",
    "run_user_level",
    "user_clip_plan",
    "user_level_schedule",
    "user_mean_gradient_error",
    "user_mean_gradients",
    "with_known_chunks",
]
