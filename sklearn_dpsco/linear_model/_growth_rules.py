"""Public rules of DPGrowthAdaptiveRegressor: the solver table of ``solver="auto"``.

Every function here takes public facts only (the number of coefficients)
and never data (doc/privacy/growth.rst).
"""

from .._solvers import solver_names

__all__ = ["DATA_UNITS_RADIUS", "SOLVERS", "UNIT_SCALE_RADIUS", "choose_solver", "default_radius", "resolve_solver"]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("growth")

#: ``radius=None`` with no row or label unit: the coefficients in the data's own units.
DATA_UNITS_RADIUS = 10.0
#: ``radius=None`` on the rescaled problem ``(y - c) / B`` on ``X / R``: rows of norm about 1/2 at
#: the median (R = 2 x median norm) and labels of spread about 1/3 (B = 3 x median |y - c|) are fit by
#: coefficients of norm about 1; a radius of 3 leaves room for directions not aligned with the
#: rows. Test R^2 of the defaults on raw real sets, epsilon 0.5 / 1 / 2, mean of 3 seeds, radius 10
#: -> 3: diabetes -3.3 / -3.0 / -1.1 -> -0.28 / -0.73 / -0.36, Wages -0.24 / -0.16 / -0.06 -> 0.00 /
#: 0.02 / 0.05, Computers 0.08 / 0.16 / 0.17 -> 0.12 / 0.17 / 0.17, BudgetFood 0.24 / 0.25 / 0.26 ->
#: 0.25 / 0.25 / 0.25 (benchmarks/bench_growth_scales.py, benchmarks/results/growth_scales.md).
UNIT_SCALE_RADIUS = 3.0


def default_radius(rescaled):
    """``radius=None``: :data:`UNIT_SCALE_RADIUS` when the fit runs on rescaled data, else :data:`DATA_UNITS_RADIUS`."""
    return UNIT_SCALE_RADIUS if rescaled else DATA_UNITS_RADIUS


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
