"""Public rules of DPHingeClassifier: default bounds, regularization, solver table.

Every function here takes public facts only — the number of rows ``n``, the
number of coefficients ``d`` (intercept column included), the per-problem
budget, the declared clip level — and never data. They are the single
place where the estimator's defaults and its ``solver="auto"`` choice are
defined (doc/privacy/hinge.rst; the numbers behind them are in
benchmarks/results/hinge.md).
"""

import math

from .._mechanisms._calibrate import expected_noise_norm
from .._solvers import solver_names, split_two_stages
from ._intercept_refit import GRID_POINTS

__all__ = [
    "ALPHA_CAP",
    "ALPHA_FACTOR",
    "DECLARED_CLIP_SHARE",
    "INTERCEPT_MIN_RANKS",
    "INTERCEPT_RANKS",
    "INTERCEPT_SHARE_CAP",
    "INTERCEPT_SHARE_FLOOR",
    "INTERCEPT_TINY_GRID",
    "INTERCEPT_TINY_MIN_RANKS",
    "INTERCEPT_TINY_RANKS_PER_COEF",
    "INTERCEPT_TINY_SHARE",
    "LOCALIZATION_GROWTH",
    "LOCALIZATION_MIN_BLOCK",
    "LOCALIZATION_PHASES",
    "LOCALIZE_ABOVE",
    "OBJECTIVE_SCALE",
    "PHASE1_ALPHA_FACTOR",
    "RADIUS_FACTOR",
    "SOLVERS",
    "choose_solver",
    "regularization",
    "resolve_solver",
    "default_alpha",
    "declared_clip_level",
    "default_clip",
    "default_intercept_scaling",
    "default_intercept_grid",
    "default_intercept_share",
    "default_radius",
    "noise_norm_per_unit",
]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("hinge")

#: ``alpha = min(ALPHA_FACTOR * clip^2 * noise_norm_per_unit(d, eps, delta) / (n d), clip^2 / d)``
#: (``= min(50 clip^2 / (n eps), clip^2 / d)`` at pure DP). The noise then has expected norm
#: about ``2 d / (ALPHA_FACTOR clip)`` while the regularized solution's norm grows like ``1/alpha``
#: (``∝ n eps``) until it reaches the unregularized one, so the noise-to-signal ratio falls with
#: ``n eps`` in every dimension (the former rule held the noise norm fixed instead). 50 was the best
#: single factor on the
#: real-data and synthetic sweep of benchmarks/study_rules.py (d = 4..101, n eps / d = 5..5000;
#: mean regret to the best alpha of a half-decade grid 0.011 accuracy, the former
#: ``1.5 clip^2 u / n`` rule 0.024, which under-regularized low dimensions: -0.06 to -0.09 at d <= 4;
#: benchmarks/results/rules.md, doc/privacy/hinge.rst).
ALPHA_FACTOR = 50.0

#: Ceiling ``alpha <= ALPHA_CAP * clip^2 / d``: past it the minimizer is the regularized
#: mean of ``y x`` (every hinge active) and more regularization only biases the intercept
#: towards the majority class (the sweep's best alpha never exceeded ``clip^2 / d`` by more
#: than a half-decade step, and exceeding it gave single-class models on imbalanced sets).
ALPHA_CAP = 1.0

#: Default domain radius ``RADIUS_FACTOR / clip``: weight vectors whose margins on rows at the clip
#: level reach 20 hinge units — far past where the hinge loss stops caring (margin 1).
RADIUS_FACTOR = 20.0


def default_clip(n_features):
    """``sqrt(n_features)``: the expected norm of a standardized row (features of unit variance)."""
    return math.sqrt(max(n_features, 1))


#: A declared ``clip`` C is a public bound on the rows' norms; when the problem's noise is small
#: (``n / noise_norm_per_unit(d, epsilon, delta) >= LOCALIZE_ABOVE``, pure DP ``n epsilon / d >= 300``,
#: the regime where ``solver="auto"`` localizes) the loss extension runs at ``c = DECLARED_CLIP_SHARE x C``
#: and every default (alpha, radius, intercept column) follows ``c``. Rows of norm above ``c`` are
#: down-weighted by ``c / ||x||``, the release sensitivity is ``2 c / (alpha n)``. There the error is
#: the regularization bias, not the noise: on baseball seasons (rows scaled by public ranges, median
#: norm 0.68 under C = 1, n eps / d = 477..1907) the noiseless minimizer at the clip-1 alpha scored
#: 0.701 / 0.721 / 0.739 at eps 0.5 / 1 / 2 — what the private fit scored — and LinearSVC's weights
#: are 3x longer. Below the threshold the noise dominates and a smaller ``c`` lost (biopsy n eps / d =
#: 48: 0.951 -> 0.944, wine, breast_cancer), so the bound is used as declared.
#: benchmarks/results/hinge_declared.md has the sweep (shares 0.25, 0.35, 0.5).
DECLARED_CLIP_SHARE = 0.5


def declared_clip_level(clip, n, d, epsilon, delta):
    """The Lipschitz level the fit uses for a declared bound ``clip`` (see :data:`DECLARED_CLIP_SHARE`).

    Public facts only: ``n`` rows, ``d`` coefficients (intercept column
    included) and one problem's budget before the intercept refit's share.
    """
    if max(int(n), 1) / noise_norm_per_unit(max(int(d), 1), epsilon, delta) >= LOCALIZE_ABOVE:
        return DECLARED_CLIP_SHARE * float(clip)
    return float(clip)


def default_intercept_scaling(clip, n_features):
    """``clip / sqrt(n_features)``: the intercept column weighs as much as one feature.

    With standardized features and the default clip this is 1 (LIBLINEAR's
    convention); with rows declared at norm ``clip`` it is their per-feature share.
    """
    return clip / math.sqrt(max(n_features, 1))


#: Private intercept refit (linear_model/_intercept_refit.py): each one-vs-rest problem spends
#: ``epsilon_t = share * epsilon`` of its own epsilon, ``n epsilon_t = INTERCEPT_RANKS`` while the share
#: stays in [INTERCEPT_SHARE_FLOOR, INTERCEPT_SHARE_CAP]. A shift whose error rate is worse by ``r``
#: is ``exp(-r n epsilon_t / 2)`` less likely than the best per grid point, and the grid has 101 of
#: them, many on the single-class plateaus: 500 ranks resolve ~2 % in error rate. At 100 ranks HI
#: (n = 15590) lost 0.03 accuracy at eps 0.5 (0.733 -> 0.701, raw rows); at 500 it gained (0.737).
#: Below ``n epsilon = INTERCEPT_MIN_RANKS`` the 101-point grid fails: at the cap ``n epsilon_t`` would be
#: under 45 and the selection close to uniform over the grid, often on a single-class plateau (8 seeds,
#: refit at share 0.3 vs none: wine declared eps 1, n epsilon = 124: 0.727 with 4 single-class seeds
#: vs 0.773 with 1; breast_cancer auto clip eps 0.5, n epsilon_problem = 149: 4 vs 1). Above it the
#: refit won: wine auto clip eps 2 (n epsilon_problem = 198), raw 0.678 (7 single-class) -> 0.796 (3),
#: scaled 0.782 -> 0.875 (benchmarks/results/hinge_intercept.md).
INTERCEPT_RANKS = 500.0
INTERCEPT_SHARE_FLOOR = 0.02
INTERCEPT_SHARE_CAP = 0.3
INTERCEPT_MIN_RANKS = 150.0

#: Tiny budgets (``n epsilon < INTERCEPT_MIN_RANKS``): the refit selects among INTERCEPT_TINY_GRID = 3 public
#: shifts ``{-B, 0, B}`` (every row one class, the model as released, every row the other class), whose
#: errors differ by hundreds of rows where the model is worse than a constant. Without it output-perturbation
#: noise moved every score to one side or left a random direction, and the defaults released models below
#: the majority class (synthetic 80/20 labels, problem n eps = 50, d = 10: accuracy 0.59 vs a majority of
#: 0.74, 7 of 8 seeds below it). By default the 3-point refit runs at INTERCEPT_TINY_SHARE of the problem's
#: epsilon where the release is noise-dominated: ``INTERCEPT_TINY_MIN_RANKS <= n epsilon`` and
#: ``n epsilon / d < INTERCEPT_TINY_RANKS_PER_COEF`` (``d`` coefficients, intercept included). Above that
#: ratio the model carries signal the solver's lost 30 % of budget costs more than the selection recovers
#: (balanced labels, d = 3: 0.68 -> 0.61 with the selection, 0.64 with an oracle one, 16 seeds); below
#: ``n epsilon = 30`` (``n epsilon_t = 9``) the selection is close to uniform over the three and lost where
#: the model was above the majority (d = 5, n epsilon = 20: 0.65 -> 0.58; benchmarks/results/hinge_intercept.md,
#: "Tiny budgets"). An explicit ``intercept_share`` below INTERCEPT_MIN_RANKS uses the 3-point grid too.
#: Same mechanism and argument on a smaller public grid (doc/privacy/hinge.rst, "Private intercept refit").
INTERCEPT_TINY_GRID = 3
INTERCEPT_TINY_SHARE = 0.3
INTERCEPT_TINY_MIN_RANKS = 30.0
INTERCEPT_TINY_RANKS_PER_COEF = 6.0


def default_intercept_share(n, d, epsilon):
    """The refit's share of one problem's epsilon (public facts only: ``n`` rows, ``d`` coefficients
    with the intercept, the problem's epsilon).

    From ``n epsilon = INTERCEPT_MIN_RANKS`` on: ``min(CAP, max(FLOOR, INTERCEPT_RANKS / (n epsilon)))``,
    non-increasing in ``n`` and ``epsilon``. Below: ``INTERCEPT_TINY_SHARE`` (the 3-point refit) where
    ``n epsilon >= INTERCEPT_TINY_MIN_RANKS`` and ``n epsilon / d < INTERCEPT_TINY_RANKS_PER_COEF``, else 0.
    """
    ranks = max(int(n), 1) * float(epsilon)
    if ranks < INTERCEPT_MIN_RANKS:
        if ranks >= INTERCEPT_TINY_MIN_RANKS and ranks / max(int(d), 1) < INTERCEPT_TINY_RANKS_PER_COEF:
            return INTERCEPT_TINY_SHARE
        return 0.0
    return min(INTERCEPT_SHARE_CAP, max(INTERCEPT_SHARE_FLOOR, INTERCEPT_RANKS / ranks))


def default_intercept_grid(n, epsilon):
    """The refit's number of public grid points: ``INTERCEPT_TINY_GRID`` (``{-B, 0, B}``) below ``n epsilon =
    INTERCEPT_MIN_RANKS``, else :data:`~sklearn_dpsco.linear_model._intercept_refit.GRID_POINTS`.

    Public facts only (rows and one problem's epsilon, before the refit's share).
    """
    if max(int(n), 1) * float(epsilon) < INTERCEPT_MIN_RANKS:
        return INTERCEPT_TINY_GRID
    return GRID_POINTS


def noise_norm_per_unit(d, epsilon, delta):
    """Expected norm of the release noise per unit of l2-sensitivity.

    Pure DP (l2-Laplace, norm Gamma(d, 1/epsilon)): ``d / epsilon``.
    Approximate DP (analytic Gaussian, ``sigma = 1/mu(epsilon, delta)``):
    about ``sqrt(d) / mu``.
    """
    return expected_noise_norm(1.0, d, epsilon, delta)


#: First-phase factor of the localization solvers. Phase 1 sees ``n/2`` rows, so half of
#: :data:`ALPHA_FACTOR` gives it the alpha output perturbation would use on all ``n`` rows (the
#: sweep's best first-phase alpha matched output perturbation's within a grid step). Later phases
#: grow alpha by LOCALIZATION_GROWTH on half the rows, so each phase's noise is half the previous one's.
PHASE1_ALPHA_FACTOR = ALPHA_FACTOR / 2.0

#: Localization schedule (Pop-Localize with J = 1): phases on n/2, n/4, n/8, n/16 fresh rows.
LOCALIZATION_PHASES = 4
LOCALIZATION_GROWTH = 4.0
#: Phases whose blocks would hold fewer rows than this are dropped (public rule).
LOCALIZATION_MIN_BLOCK = 50

#: ``solver="auto"`` localizes when ``n / noise_norm_per_unit(d, eps, delta)`` (``n eps / d`` for
#: pure DP) reaches this: below it the first phase's output is too noisy to localize around.
LOCALIZE_ABOVE = 300.0


#: Declared size of the mean term of a hinge problem's duality-gap certificate (public; its float floor,
#: doc/privacy/output_perturbation.rst, "Float floor"). The hinge's dual variables lie in [0, min(1, C/||x||)],
#: so a row's terms are about 2 + 3 C ||w||: ~60 at the default domain radius 20/C, 5-8 measured on
#: standardized rows. At the generic 1e6 the floor grew like sqrt(n) and set the release noise from
#: ~1e6 rows on (accuracy fell from 1e6 to 1e7 rows, benchmarks/results/scaling_n.md). Only problems whose
#: mean term exceeds ~4e3 (margins of ~1e3 at the clip level) can fail to certify; the fit then refuses.
OBJECTIVE_SCALE = 1e3


def default_alpha(n, d, clip, epsilon, delta, factor=None):
    """Regularization of output perturbation from public facts (see :data:`ALPHA_FACTOR`).

    ``min(factor * clip^2 * u / (n d), ALPHA_CAP * clip^2 / d)`` with ``u`` the expected noise
    norm per unit of sensitivity (:func:`noise_norm_per_unit`); ``n`` rows, ``d`` coefficients
    (intercept column included), ``clip`` the declared (or default) row scale. Increasing in
    ``clip``, decreasing in ``n`` and ``epsilon``.
    """
    factor = ALPHA_FACTOR if factor is None else factor
    d = max(int(d), 1)
    scale = clip**2 / d
    # u / n is the noise norm per unit of sensitivity per row; the cap keeps alpha below the regime
    # where the minimizer is the mean of y x (doc/privacy/hinge.rst, "Defaults")
    return scale * min(factor * noise_norm_per_unit(d, epsilon, delta) / n, ALPHA_CAP)


def default_radius(clip):
    """Domain radius of the localization solvers (see :data:`RADIUS_FACTOR`)."""
    return RADIUS_FACTOR / clip


def choose_solver(n, d, epsilon, delta):
    """The ``solver="auto"`` table (doc/privacy/hinge.rst, "Choosing a solver").

    =====================================================  ====================================
    public facts                                           solver
    =====================================================  ====================================
    ``n / noise_norm_per_unit(d, eps, delta) >= 300``      ``"localized_output_perturbation"``
    and every phase block ``>= LOCALIZATION_MIN_BLOCK``
    otherwise                                              ``"output_perturbation"``
    =====================================================  ====================================

    On the benchmark grid (doc/privacy/hinge.rst, benchmarks/results/hinge.md)
    localization won or tied every cell with ``n eps / d >= 476`` and lost at
    ``n eps / d <= 190`` (by 0.001 at 190, 0.011 at 95); the threshold sits
    between. Lowy's double output perturbation and the ALD solvers never won
    a cell: Lowy's localization stage spends half the budget without reducing
    the R^d extension's bias, and ALD's phases use ln(n) equal blocks with 16x
    growing regularization.
    """
    smallest_block = n // 2**LOCALIZATION_PHASES
    if n / noise_norm_per_unit(d, epsilon, delta) >= LOCALIZE_ABOVE and smallest_block >= LOCALIZATION_MIN_BLOCK:
        return "localized_output_perturbation"
    return "output_perturbation"


def resolve_solver(solver, n, d, epsilon, delta):
    """``solver`` itself, or the :func:`choose_solver` table's pick for ``"auto"``."""
    return choose_solver(n, d, epsilon, delta) if solver == "auto" else solver


def regularization(spec, n, d, clip, budget, alpha, tolerance, repeats):
    """``(alpha, tolerance)`` of the solver ``spec`` from public facts (per one-vs-rest problem).

    Output perturbation regularizes all ``n`` rows (:func:`default_alpha`);
    the localization solvers' first phase sees ``n/2`` rows in ``repeats``
    blocks (:data:`PHASE1_ALPHA_FACTOR`), and Lowy's double output
    perturbation runs it on half the budget. The tolerance is the declared
    one: the certificate's float floor is set by :data:`OBJECTIVE_SCALE`. The
    ALD solvers' regularization follows their schedule: ``alpha`` is None.
    """
    kind = spec.traits.get("regularization")
    if kind == "erm":
        alpha = default_alpha(n, d, clip, budget.epsilon, budget.delta) if alpha is None else alpha
        return alpha, tolerance
    if kind == "localized":
        # phase 1 sees n/2 rows (split in J blocks); Lowy's stage 2 spends half the budget
        first = max(n // 2 // repeats, 1)
        if spec.traits["inner"] == "single":
            stage = (budget.epsilon, budget.delta)
        else:
            stage = split_two_stages(budget.epsilon, budget.delta, 0.5, budget.noise)[1]
        if alpha is None:
            alpha = default_alpha(first, d, clip, *stage, factor=PHASE1_ALPHA_FACTOR)
        return alpha, tolerance
    return None, tolerance
