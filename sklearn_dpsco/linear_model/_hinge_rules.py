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

__all__ = [
    "ALPHA_FACTOR",
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
    "default_clip",
    "default_intercept_scaling",
    "default_radius",
    "noise_norm_per_unit",
]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("hinge")

#: ``alpha = ALPHA_FACTOR * clip^2 * noise_norm_per_unit(d, eps, delta) / n``: the privacy noise
#: then has expected norm about ``2 / (ALPHA_FACTOR clip)``, i.e. it moves the margin of a row at
#: the clip level by about ``1/sqrt(d)`` — a fixed fraction of the hinge's unit margin. 1.5 was the
#: best single factor on the benchmark grid where output perturbation is chosen (doc/privacy/hinge.rst).
ALPHA_FACTOR = 1.5

#: Default domain radius ``RADIUS_FACTOR / clip``: weight vectors whose margins on rows at the clip
#: level reach 20 hinge units — far past where the hinge loss stops caring (margin 1).
RADIUS_FACTOR = 20.0


def default_clip(n_features):
    """``sqrt(n_features)``: the expected norm of a standardized row (features of unit variance)."""
    return math.sqrt(max(n_features, 1))


def default_intercept_scaling(clip, n_features):
    """``clip / sqrt(n_features)``: the intercept column weighs as much as one feature.

    With standardized features and the default clip this is 1 (LIBLINEAR's
    convention); with rows declared at norm ``clip`` it is their per-feature share.
    """
    return clip / math.sqrt(max(n_features, 1))


def noise_norm_per_unit(d, epsilon, delta):
    """Expected norm of the release noise per unit of l2-sensitivity.

    Pure DP (l2-Laplace, norm Gamma(d, 1/epsilon)): ``d / epsilon``.
    Approximate DP (analytic Gaussian, ``sigma = 1/mu(epsilon, delta)``):
    about ``sqrt(d) / mu``.
    """
    return expected_noise_norm(1.0, d, epsilon, delta)


#: First-phase factor of the localization solvers (phase 1 sees n/2 rows). Later phases grow alpha
#: by LOCALIZATION_GROWTH on half the rows, so each phase's noise is half the previous one's; with
#: 0.5 the last of 4 phases has about 2.7x less noise than output perturbation on all n rows.
PHASE1_ALPHA_FACTOR = 0.5

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
    """Regularization of output perturbation from public facts (see :data:`ALPHA_FACTOR`)."""
    factor = ALPHA_FACTOR if factor is None else factor
    return factor * clip**2 * noise_norm_per_unit(d, epsilon, delta) / n


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
