"""Privacy-testing harness: statistical audits, sampler goodness of fit, tight test losses.

Used by the test-suite (fast tiers in CI) and by the slow audit tier
(doc/privacy/testing.rst). Installed with the package so audits can be run
against an installed build.
"""

from ._audit import (
    AuditResult,
    audit_epsilon,
    audit_gaussian_dp,
    clopper_pearson,
    epsilon_lower_bound_from_counts,
    mu_max,
    project_on,
)
from ._grid_residue import (
    GridResidueResult,
    collect_releases,
    extreme_row,
    grid_residue_audit,
    released_values,
    replace_row,
    replace_user,
)
from ._estimator_checks import (
    GROUPS_REQUIRED,
    deliberate_tags,
    estimator_for_checks,
    expected_failed_checks,
    parametrize_with_checks,
)
from ._families import mixed_units
from ._gof import discrete_pmf_pvalue, ks_pvalue, l2_laplace_pvalues
from ._linear_loss import glm_neighbours, linear_loss_minimizer, linear_neighbour_centres, worst_case_neighbours
from ._porosity import PorosityResult, porosity_audit, porosity_event
from ._report import AuditRecord, AuditReport, audit_release_with_mutants, release_scores

# Test hooks of the solvers. Each stays in the module that reads it at run time
# (a switch, a sink); tests and benchmarks reach it here rather than through a
# private solver module:
# - the compiled/reference switch of the noisy-SGD loop drivers
#   (sklearn_dpsco/_solvers/_optim/_sgd_kernels.py), to compare both paths;
# - the diagnostics sink of the deletion mechanism
#   (sklearn_dpsco/_solvers/_user_level/_deletion.py): data-dependent values,
#   NOT covered by the privacy guarantee, recorded only while the context is open.
from .._solvers._optim._sgd_kernels import HAVE_COMPILED_KERNELS as HAVE_COMPILED_SGD_KERNELS
from .._solvers._optim._sgd_kernels import use_compiled as use_compiled_sgd_kernels
from .._solvers._user_level._deletion import record_diagnostics as record_deletion_diagnostics

__all__ = [
    "AuditRecord",
    "AuditReport",
    "AuditResult",
    "audit_release_with_mutants",
    "audit_epsilon",
    "audit_gaussian_dp",
    "clopper_pearson",
    "discrete_pmf_pvalue",
    "epsilon_lower_bound_from_counts",
    "deliberate_tags",
    "estimator_for_checks",
    "expected_failed_checks",
    "parametrize_with_checks",
    "extreme_row",
    "GROUPS_REQUIRED",
    "GridResidueResult",
    "glm_neighbours",
    "linear_neighbour_centres",
    "HAVE_COMPILED_SGD_KERNELS",
    "grid_residue_audit",
    "collect_releases",
    "ks_pvalue",
    "l2_laplace_pvalues",
    "linear_loss_minimizer",
    "mixed_units",
    "mu_max",
    "PorosityResult",
    "porosity_audit",
    "porosity_event",
    "project_on",
    "record_deletion_diagnostics",
    "release_scores",
    "released_values",
    "replace_row",
    "replace_user",
    "use_compiled_sgd_kernels",
    "worst_case_neighbours",
]
