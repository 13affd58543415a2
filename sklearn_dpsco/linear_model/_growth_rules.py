"""Public rules of DPGrowthAdaptiveRegressor: the solver table of ``solver="auto"`` and ``radius=None``.

Every function here takes public facts only (n, the number of
coefficients, epsilon, whether the data are rescaled) and never data
(doc/privacy/growth.rst).
"""

from .._solvers import solver_names

__all__ = [
    "DATA_UNITS_RADIUS",
    "DEFAULT_KAPPA_LOWER",
    "PREDICT_ROW_UNITS",
    "RADIUS_PER_M",
    "SOLVERS",
    "UNIT_RADIUS_MAX",
    "UNIT_RADIUS_MIN",
    "WEIGHTED_PARTS_MIN_COEF",
    "choose_solver",
    "default_radius",
    "resolve_solver",
]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("growth")

#: ``kappa_lower`` by default: ALD-2's ``T = ceil(2 log n / (kappa_lower - 1)) = ceil(log n)`` epochs. The
#: paper's T is a safe over-estimate; 1.25 (T = 8 log n, capped by float64 at 15-20) split 2000 rows into
#: blocks of about 100, where a rare indicator's coefficient rested on a few rows per block (Treatment:
#: R^2 fell from 0.53 to 0.38 as epsilon rose from 2 to 8). 3 gained on every small and mid-size real cell
#: (Computers raw eps 1 0.51 -> 0.64, Wages scaled eps 1 0.05 -> 0.17) and lost at most 0.001 on the large
#: ones (benchmarks/results/growth_kappa.md); utility only (T is public, the blocks stay disjoint).
DEFAULT_KAPPA_LOWER = 3.0

#: ``predict`` maps a row whose norm in the fit's column units exceeds this many row units (``row_bound_``) to
#: that norm first (``DPRegressorMixin.predict``; DPLinearRegressor does the same at 1, where its solvers
#: clipped the rows). Why: the fit's loss weighs a row at ``t`` units by ``1 / t``, so a slope on a column that
#: is rarely far from its centre (a count that is almost always 0, a heavy tail) rests on few rows and much noise;
#: applied to a far row it extrapolates without bound (VietNamI, 0.0 .. 30 day counts: R^2 -9.3; MedExp at epsilon
#: 0.5, expenses up to 39182: -6.2). 4: 18 cells better by 0.005 and none worse on 91 real regression sets x 3
#: epsilons (2 costs Treatment 0.04; 8 and 16 keep less: VietNamI epsilon 1 -1.85 -> -0.20 / -0.78 / -1.85), with no
#: map where an "auto" unit sits at the grid's end (2^20: not the rows' median; movies' budgets in dollars lost
#: 0.03-0.27 to the map), benchmarks/results/growth_predict_clip.md. Post-processing of the releases.
PREDICT_ROW_UNITS = 4.0

#: ``radius=None`` with no row or label unit: the coefficients in the data's own units.
DATA_UNITS_RADIUS = 10.0
#: ``radius=None`` on the rescaled problem ``(y - c) / B`` on ``X / R`` (rows of norm about 1/2 at
#: the median, labels of spread about 1/3): ``m / RADIUS_PER_M`` with ``m = n epsilon / d`` (d with the
#: intercept column), within [UNIT_RADIUS_MIN, UNIT_RADIUS_MAX]. The noise of the first epochs grows
#: with the radius over ``m`` while a radius below the minimizer's norm biases the fit, so the best
#: radius grows with ``m``. Test R^2 of the "auto" defaults, mean of 3 seeds at epsilon 0.5 / 1 / 2,
#: best fixed radius among 1, 3, 10, 30: diabetes (m = 14..56) 1; Wages (m = 121..486) 3, 3, 10;
#: Computers (m = 219..876) 3-10 raw, 10-30 scaled; BudgetFood (m = 1398..5593) 30 scaled (0.30 /
#: 0.34 / 0.35 against 0.16 / 0.22 / 0.27 at 3), Vocab (m = 1893..7573) 10-30 (benchmarks/results/
#: growth_scales.md, benchmarks/bench_growth_scales.py).
RADIUS_PER_M = 50.0
UNIT_RADIUS_MIN = 1.0
UNIT_RADIUS_MAX = 30.0


#: From this many coefficients (the intercept's included), with both units "auto" and an intercept, the "auto"
#: estimates count their weighted parts (row unit 1, centre 2, label unit 1), as DPLinearRegressor's do: the fit
#: releases the intercept-only model below ``n epsilon = 400`` instead of 300 (``_scale_parts``; doc/privacy/
#: quantiles.rst, "Budgets too small for the estimates"). Why: between 300 and 400 the capped share leaves each
#: estimate under 67 ranks and the centre on its coarse grid. On the real study sets subsampled to n epsilon 300
#: and 350 (10 seeds, epsilon 0.5 / 1 / 2) the fit scored below the intercept-only release wherever the model had
#: 10 or more coefficients except PSID (Computers -0.00..-0.04, Wages -0.02..-0.24, diabetes -0.04..-0.12,
#: Workinghours -0.07..-0.12, Schooling -0.29..-0.46), and on synthetic rows with 16-51 coefficients and labels off
#: their spread it lost 0.35..1.9 R^2 to it at 300; from 400 on it wins there. With fewer coefficients the fit
#: wins on strong signals (synthetic d = 2 and 5, population R^2 0.7-0.99: +0.1..+1.0 at 300, e.g. 0.77 against
#: -0.01) and loses little on the real ones (Vocab, BudgetFood: -0.05..+0.05), so the count rule (300) stays
#: there. Public: n, epsilon, the number of coefficients (benchmarks/results/growth_small_budget.md).
WEIGHTED_PARTS_MIN_COEF = 8


def default_radius(rescaled, n_samples, n_coef, epsilon):
    """``radius=None`` from public facts: ``min(30, max(1, n epsilon / (50 d)))`` on rescaled data, else 10."""
    if not rescaled:
        return DATA_UNITS_RADIUS
    m = n_samples * epsilon / max(n_coef, 1)
    return min(UNIT_RADIUS_MAX, max(UNIT_RADIUS_MIN, m / RADIUS_PER_M))


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
