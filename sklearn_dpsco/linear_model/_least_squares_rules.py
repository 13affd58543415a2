"""Public rules of DPLinearRegressor: the ``solver="auto"`` table and default intercept column.

Every function here takes public facts only — the number of rows ``n``,
the number of coefficients ``d`` (intercept column included), the budget,
the declared bounds and noise path — and never data
(doc/privacy/linear_regression.rst). ``m = n epsilon / d`` is the number of
rows per unit of privacy per coefficient. The thresholds come from
benchmarks/study_rules.py (``linear``: synthetic rows of norm <= 1 at d =
4..31, n = 2000 / 20000, and the real sets of benchmarks/bench_defaults.py
in encoding (b)) together with benchmarks/results/linear.md (d = 21,
near-interpolating labels); benchmarks/results/rules.md has the regret of
each candidate table.
"""

import math

from .._budget import Budget
from .._mechanisms import DEFAULT_NOISE
from .._solvers import snowball_fits, solver_names
from .._solvers._adassp_selection import PHASED_CHOICE_SELECTION_SHARE, SELECTION_MIN_RANKS
from ._auto_scales import is_auto

__all__ = [
    "ADASSP_ABOVE",
    "ADASSP_BELOW_APPROX",
    "ADASSP_BELOW_PURE",
    "ADASSP_GAP_MAX_FEATURES",
    "ADASSP_MAX_FEATURES",
    "EXTENSION_SOLVERS",
    "LOWY_BELOW",
    "PHASED_ERM_STEP_RADIUS",
    "ONE_PASS_SOLVERS",
    "ROW_BOUND_SOLVERS",
    "SOLVERS",
    "choose_solver",
    "choose_stream_solver",
    "default_intercept_scaling",
    "domain_radius",
    "phased_choice_applies",
    "phased_erm_step_radius",
    "resolve_solver",
    "rows_per_unit",
    "table_solver",
]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("least_squares")
#: Solvers that read the rows once, in order (they can fit from chunks).
ONE_PASS_SOLVERS = solver_names("least_squares", one_pass=True)
#: Solvers that need the public row bound R (smoothness or sensitivity).
ROW_BOUND_SOLVERS = solver_names("least_squares", needs_row_bound=True)
#: Solvers whose privacy rests on the Lipschitz extension alone (any rows, any labels).
EXTENSION_SOLVERS = solver_names("least_squares", needs_row_bound=False)

#: Pure DP with a row bound: AdaSSP below this m. Its adaptive ridge never went below
#: R^2 ~ 0 on the sweep, while Lowy and Phased-ERM went negative at m up to ~400 (d = 11, 31, real
#: Wages, Computers); mean regret to the best solver 0.053 (the former threshold 75: 0.201, six
#: negative-R^2 picks in 32 cells).
ADASSP_BELOW_PURE = 500.0
#: Approximate DP (secure noise: secure Snowball measured and not chosen) with a row bound: AdaSSP's Gaussian
#: statistics stayed within 0.05 of the best solver in every cell up to m = 5000 (mean regret 0.007).
ADASSP_BELOW_APPROX = 5000.0
#: With a row bound, from this m on AdaSSP ties or beats Phased-ERM (pure and approximate DP) at
#: 5-10x less fit time, and both are flat in n (benchmarks/results/scaling_n.md).
ADASSP_ABOVE = 1e4
#: Without the AdaSSP branch (no row bound, or d too large): Lowy below this m, Phased-ERM above.
LOWY_BELOW = 500.0
#: Pure DP between ADASSP_BELOW_PURE and ADASSP_ABOVE, row AND label bound declared: AdaSSP up to this
#: many coefficients (intercept column included), Phased-ERM above. AdaSSP's l2-Laplace on A has d(d+1)/2 coordinates, so its
#: noise grows like d^2 against Phased-ERM's ~d: with the smaller ridges of its private choice it
#: tied or beat Phased-ERM in every gap cell at d = 4, 5 (Vocab, d = 4, epsilon 0.5: 0.244 -> 0.259;
#: synthetic n = 5000 / 20000; 10 seeds), while at d = 6 BudgetFood lost at epsilon 2 (m = 5593,
#: no private choice above m = 5000: 0.320 vs 0.351) and at d = 10 Computers lost at epsilon 2
#: (m = 876: 0.56 vs 0.73) (benchmarks/results/rules.md, "Small d in the pure-DP gap").
ADASSP_GAP_MAX_FEATURES = 5
#: The same branch with "auto" bounds, up to this many coefficients (intercept column included). Since the
#: column quartiles run in two stages (an offset column is scaled by its spread, not one grid step),
#: AdaSSP on the estimated bounds ties or beats Phased-ERM in the gap at d + 1 <= 4 (Vocab raw / scaled
#: at epsilon 0.5: 0.245 -> 0.261 / 0.241 -> 0.251; synthetic d + 1 = 4, n = 3000, epsilon 0.5 / 1:
#: 0.03 -> 0.32, 0.59 -> 0.64; one loss, year + indicator at n = 3000, epsilon 0.5, m = 500, where the
#: quartiles run in one stage), while at d + 1 = 5 it lost on the mixed-unit family (n = 8000, epsilon
#: 0.5: 0.83 -> 0.77) and on synthetic n = 5000, epsilon 1 (0.67 -> 0.62) (benchmarks/results/rules.md,
#: "Small d in the pure-DP gap with auto bounds"; benchmarks/study_small_d_gap_auto.py).
ADASSP_GAP_MAX_FEATURES_AUTO = 4
#: AdaSSP releases a d x d matrix; above this many coefficients auto avoids it.
ADASSP_MAX_FEATURES = 1000
#: With both bounds "auto" (rows scaled to norm <= 1, labels to (y - c) / B), Phased-ERM sizes its step
#: for a distance min(radius, 2.5) instead of the domain radius (default 10; the domain is unchanged).
#: Phase 1's noise has norm ~ 0.6 D whatever n, and the later phases (lam x 8 per phase) do not remove
#: it in directions of curvature near their lam: at D = 2 x 10 HI as a linear probability model (d + 1 = 22,
#: 0/1 labels scaled by B = 3) fell to R^2 -0.79 / -0.65 (raw / scaled, epsilon 1, m = 709) and -0.33 at
#: n = 8000, epsilon 2; with 2.5: +0.16 / +0.17 / +0.24, every seed positive. No measured cell lost beyond
#: 0.001 (BudgetFood, Computers, Wages, synthetic 0/1; 6 seeds, paired): benchmarks/results/phased_gap_step.md,
#: benchmarks/study_phased_gap.py. 1.0 won more on HI but lost 0.01 on BudgetFood (b).
PHASED_ERM_STEP_RADIUS = 2.5


def rows_per_unit(n, d, epsilon):
    """``m = n epsilon / d``: rows per unit of privacy per coefficient."""
    return n * epsilon / max(d, 1)


def table_solver(n, d, epsilon, delta, row_bound, bounds_declared=False):
    """The extension / sufficient-statistics part of the ``solver="auto"`` table (public facts only).

    ==============================================================  ============
    condition (``m = n epsilon / d``)                                solver
    ==============================================================  ============
    a row bound (declared or "auto"), ``d <= 1000``, ``m < 500``    adassp
    (pure DP) or ``m < 5000`` (``delta > 0``), or ``m >= 1e4``,
    or ``d <= 5`` with both bounds declared, ``d <= 4`` else
    ``m < 500``                                                     lowy
    otherwise                                                       phased_erm
    ==============================================================  ============
    """
    m = rows_per_unit(n, d, epsilon)
    below = ADASSP_BELOW_APPROX if delta > 0 else ADASSP_BELOW_PURE
    # the small-d branch: up to 5 coefficients with both bounds declared, 4 with "auto" bounds (public: what
    # the user passed)
    small = d <= (ADASSP_GAP_MAX_FEATURES if bounds_declared else ADASSP_GAP_MAX_FEATURES_AUTO)
    if row_bound is not None and d <= ADASSP_MAX_FEATURES and (m < below or m >= ADASSP_ABOVE or small):
        return "adassp"
    return "lowy" if m < LOWY_BELOW else "phased_erm"


def choose_solver(n_samples, n_features, epsilon, delta, row_bound, noise=DEFAULT_NOISE, bounds_declared=False):
    """The ``solver="auto"`` table (public facts only).

    Snowball-SGD when ``delta > 0``, ``noise="float"``, a row bound is
    given and its schedule fits in n rows (best R^2 whenever it runs,
    linear time); otherwise :func:`table_solver`. Snowball's secure path
    (constant batches, no amplification by iteration) beat the table's pick
    only in scattered cells next to larger losses, so under the default
    ``noise="secure"`` auto does not pick it (benchmarks/results/rules.md,
    "Secure Snowball"). Without a row bound only the extension solvers
    qualify (lowy, phased_erm).
    """
    if row_bound is not None and delta > 0 and noise == "float" and snowball_fits(
            n_samples, n_features, Budget(epsilon, delta, noise), row_bound):
        return "snowball"
    return table_solver(n_samples, n_features, epsilon, delta, row_bound, bounds_declared)


def phased_choice_applies(solver, chosen, n, d, epsilon, delta, *, streaming=False, bounds_auto=True):
    """Public rule: AdaSSP's private choice also offers a Phased-ERM release (``params["phased_choice"]``).

    Only where ``solver="auto"`` picked AdaSSP below ``ADASSP_BELOW_PURE`` (pure DP, ``m < 500``) outside the
    small-d branch (``d`` above ``ADASSP_GAP_MAX_FEATURES(_AUTO)``), on rows in memory (the choice reads them
    again), and where the choice's share buys ``n epsilon PHASED_CHOICE_SELECTION_SHARE >= SELECTION_MIN_RANKS``
    ranks (``epsilon``: the solver's). Why: AdaSSP's ridge (its noise bound on A, ~ d^2 / epsilon) is above the
    clipped rows' signal eigenvalues on most real sets there, so it shrinks to the intercept; Phased-ERM's noise
    grows like d but has negative tails the choice avoids (benchmarks/results/solver_choice.md).
    ``bounds_auto``: both the row and the label bound are "auto" (the setting it was measured in). With declared
    bounds it lost (10 seeds, bench_defaults' scaled encoding, row_bound = label_bound = 1: Wages epsilon 1
    0.016 -> -0.254, Computers 0.5 0.191 -> -0.119, diabetes 2 -0.061 -> -0.727), so it stays off there.
    """
    small = d <= ADASSP_GAP_MAX_FEATURES_AUTO
    return (bounds_auto and solver == "auto" and chosen == "adassp" and not streaming and delta == 0
            and math.isfinite(epsilon)
            and rows_per_unit(n, d, epsilon) < ADASSP_BELOW_PURE and not small
            and n * epsilon * PHASED_CHOICE_SELECTION_SHARE >= SELECTION_MIN_RANKS)


def choose_stream_solver(delta, noise):
    """``solver="auto"`` for ``fit_stream``: Snowball-SGD for approximate DP on float noise, else AdaSSP."""
    return "snowball" if delta > 0 and noise == "float" else "adassp"


def resolve_solver(solver, n_samples, n_features, epsilon, delta, row_bound, noise, streaming=False,
                   bounds_declared=False):
    """``solver`` itself, or the auto table's pick (:func:`choose_stream_solver` when streaming)."""
    if solver != "auto":
        return solver
    if streaming:
        return choose_stream_solver(delta, noise)
    return choose_solver(n_samples, n_features, epsilon, delta, row_bound, noise, bounds_declared)


def default_intercept_scaling(spec, row_bound):
    """The intercept column's value s when none is declared (the solver's fraction of R, else 1)."""
    fraction = spec.traits.get("intercept_fraction")
    if fraction is not None and row_bound is not None:
        return fraction * row_bound
    return 1.0


def domain_radius(radius, row_bound, label_bound):
    """The domain's radius in the units the solver runs in (public: the parameters as passed).

    ``radius`` is read where rows and labels are in their bounds' units, as an "auto" fit runs (rows divided
    by ``row_bound_``, labels by ``label_bound_``). A declared number leaves its side in the data's units, so
    the ball there is ``radius x label_bound / row_bound`` (a coefficient of norm ``B / R`` maps a row of norm
    ``R`` to a label of size ``B``). Before, the declared fit's ball was ``radius`` in the data's units: rows of
    norm <= 3 and labels near 500 declared as ``row_bound=3, label_bound=600`` had the intercept stop at 10 (R^2
    -3e4) and slopes of norm 19 stop at 10 (R^2 0.77 against 0.996 "auto"). ``"auto"`` or None: that side is
    already in unit (or, for ``row_bound=None``, the data's) units.
    """
    r = float(radius)
    if label_bound is not None and not is_auto(label_bound):
        r *= float(label_bound)
    if row_bound is not None and not is_auto(row_bound):
        r /= float(row_bound)
    return r


def phased_erm_step_radius(row_bound_auto, label_bound_auto):
    """Phased-ERM's step scale: :data:`PHASED_ERM_STEP_RADIUS` when both bounds are "auto", else None (the radius).

    Public: what the user passed. With both bounds "auto" the solver runs on rows of norm <= 1 and labels
    ``(y - c) / B``, units in which the step's distance scale is fixed; declared bounds are the user's units.
    """
    return PHASED_ERM_STEP_RADIUS if row_bound_auto and label_bound_auto else None
