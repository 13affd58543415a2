"""Public rules of DPGrowthAdaptiveRegressor: the solver table of ``solver="auto"``.

Every function here takes public facts only (the number of coefficients)
and never data (doc/privacy/growth.rst).
"""

from .._solvers import solver_names

__all__ = ["SOLVERS", "choose_solver", "resolve_solver"]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("growth")


def choose_solver(n_coef):
    """The ``solver="auto"`` table: the exact one-dimensional mechanism when it applies.

    ================================  ===========================
    public facts                      solver
    ================================  ===========================
    exactly one coefficient           ``"inverse_sensitivity"``
    otherwise                         ``"ald_growth"``
    ================================  ===========================
    """
    return "inverse_sensitivity" if n_coef == 1 else "ald_growth"


def resolve_solver(solver, n_coef):
    """``solver`` itself, or the :func:`choose_solver` table's pick for ``"auto"``."""
    return choose_solver(n_coef) if solver == "auto" else solver
