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
from ._gof import discrete_pmf_pvalue, ks_pvalue, l2_laplace_pvalues
from ._linear_loss import linear_loss_minimizer, worst_case_neighbours
from ._porosity import PorosityResult, porosity_audit, porosity_event
from ._report import AuditRecord, AuditReport, audit_release_with_mutants, release_scores

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
    "extreme_row",
    "GridResidueResult",
    "grid_residue_audit",
    "collect_releases",
    "ks_pvalue",
    "l2_laplace_pvalues",
    "linear_loss_minimizer",
    "mu_max",
    "PorosityResult",
    "porosity_audit",
    "porosity_event",
    "project_on",
    "release_scores",
    "released_values",
    "replace_row",
    "replace_user",
    "worst_case_neighbours",
]
