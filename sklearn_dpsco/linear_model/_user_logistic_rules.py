"""Public rules of UserLevelDPLogistic: the ``solver="auto"`` choice and the default regularization.

The choice reads public facts only — users, the per-user cap, dimension,
budget, parameters — through the plans they give (doc/privacy/user_level.rst):
among the solvers of the ``alpha``-regularised objective, the feasible one
whose planned noise on the coefficients has the smallest expected norm.
"""

import math

import numpy as np

from .._mechanisms._calibrate import expected_noise_norm
from .._solvers import get_solver, solver_names
from .._solvers._user_level._deletion import deletion_plan
from ._centering import CENTRED_ROW_SHARE

__all__ = ["AUTO_CANDIDATES", "DECLARED_ROW_SHARE", "DEFAULT_DATA_NORM", "SGD_ALPHA_SHARE", "SGD_AUTO_MIN_STEPS", "SGD_CLIP_SHARE",
           "MAGNITUDE_SGD_MIN_STEPS", "SGD_HORIZON_POWER", "SGD_MAX_HORIZON", "SGD_MAX_STEPS",
           "SGD_MIN_STEPS", "SGD_ROW_PASSES", "SOLVERS",
           "SC_OUTPUT_PERT_ALPHA_FACTOR", "USER_ALPHA_CAP", "USER_ALPHA_FACTOR", "candidates", "choose_plan", "declared_row_scale", "default_sgd_clip", "default_sgd_iterations",
           "first_row_per_user",
           "default_sc_output_pert_alpha", "default_sgd_momentum", "default_user_alpha", "prefers_dp_sgd", "sgd_horizon", "users_per_noise"]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("user_logistic")
#: solver="auto" chooses among the solvers of the alpha-regularised objective
AUTO_CANDIDATES = ("user_clip", "sc_output_pert", "item_group", "user_dp_sgd")


def candidates(solver, noise, delta):
    """The solvers to plan: ``(solver,)``, or for ``"auto"`` the candidates supporting the noise path."""
    if solver != "auto":
        return (solver,)
    # a solver without a sampler on this noise path (at this delta) is left out
    return tuple(name for name in AUTO_CANDIDATES if get_solver("user_logistic", name).supports_noise(noise, delta))


def choose_plan(solver, build, noise, delta, prefer=None):
    """The plan to run: ``build(name)`` of the requested solver, or for ``"auto"`` the quietest feasible one.

    ``prefer`` (``"auto"`` only): a candidate taken whenever it is feasible,
    before the noise proxy is consulted (a public rule, :func:`prefers_dp_sgd`).

    ``build`` raises ``ValueError`` for a public refusal (too few users, an
    exhaustive test over budget): a named solver re-raises it; ``"auto"``
    skips the candidate and raises the first refusal if none is feasible.
    Candidates are ranked by the expected norm of the noise their plan adds
    to the coefficients (the registry's ``expected_noise_norm``, public).
    """
    best, first_error = None, None
    names = candidates(solver, noise, delta)
    if solver == "auto" and prefer in names:
        try:
            return build(prefer)
        except ValueError:  # public refusal: fall back to the proxy among the others
            pass
    for name in names:
        try:
            plan = build(name)
        except ValueError as err:  # public refusal (too few users, exhaustive over budget)
            if solver != "auto":
                raise
            first_error = first_error or err
            continue
        proxy = get_solver("user_logistic", name).expected_noise_norm(plan.schedule) if solver == "auto" else 0.0
        if best is None or proxy < best[0]:
            best = (proxy, plan)
    if best is None:
        raise first_error
    return best[1]


#: ``alpha = min(USER_ALPHA_FACTOR * R^2 * u / (n_users sqrt(m) d), USER_ALPHA_CAP * R^2 / d)`` with
#: ``u`` the expected noise norm per unit of sensitivity (about ``sqrt(d) / mu(epsilon, delta)``).
#: It is DPHingeClassifier's rule (linear_model/_hinge_rules.py) with ``n sqrt(m)`` in place of
#: ``n``: a user's loss is ``R sqrt(m)``-Lipschitz over ``m`` rows, so the release sensitivity is
#: ``2 R / (alpha n sqrt(m))``. The best alpha of a half-decade grid on the sweep of
#: benchmarks/study_rules.py (``user``: d = 4..101, 500 / 5000 users, m = 5, and two real panels)
#: corresponded to factors 8..50; 20 is their geometric middle (benchmarks/results/rules.md). The
#: former constant ``alpha = 0.01`` was 10x too small for a few hundred users (single-class models)
#: and 5-10x too large for thousands.
USER_ALPHA_FACTOR = 20.0
#: Ceiling ``alpha <= R^2 / d``: past it the minimizer is the regularized mean of ``y x``.
USER_ALPHA_CAP = 1.0


def default_user_alpha(n_users, m, d, data_norm, epsilon, delta):
    """Default strong convexity of the user-level objective, from public facts only.

    Decreasing in ``n_users``, ``m`` and ``epsilon``; increasing in ``data_norm``.
    """
    d = max(int(d), 1)
    u = expected_noise_norm(1.0, d, epsilon, delta)  # noise norm per unit of sensitivity
    scale = data_norm**2 / d
    return scale * min(USER_ALPHA_FACTOR * u / (max(n_users, 1) * math.sqrt(max(m, 1))), USER_ALPHA_CAP)


#: ``solver="sc_output_pert"`` (named; ``"auto"`` ranks it at :func:`default_user_alpha`): ``alpha =
#: SC_OUTPUT_PERT_ALPHA_FACTOR * R sqrt(R N_1 / d)``, capped at ``USER_ALPHA_CAP R^2 / d`` and never below
#: :func:`default_user_alpha`. ``N_1 = sqrt(d) sigma_1``: the expected norm of the deletion
#: mechanism's release noise at ``lam = 1`` (its sigma scales as ``1 / lam`` within 3 % from 1e-3 to 1,
#: so the noise norm at ``alpha`` is ``N_1 / alpha``); the ridge costs about ``alpha r^2 / 2`` with
#: ``r ~ sqrt(d) / R`` and the noise about ``R N_1 / alpha``, balanced at ``alpha ~ R sqrt(R N_1 / d)``.
#: Why not the user_clip rule: the deletion mechanism's sensitivity per unit ``1 / alpha`` (its
#: thresholds over ``k ~ log(1 / delta) / epsilon`` users) is 100-300x ``2 R / (n sqrt(m))``, so that
#: rule left sigma 3-300 on the coefficients (near random even at epsilon 64 with 6000 users).
#: The factor (10 seeds, delta 1e-6; synthetic: users x 5 rows, d = 5, X ~ N(0, 1) / sqrt(5), logistic
#: labels with w = 3 * ones; panels of benchmarks/bench_panels.py, scaled, data_norm = sqrt(2)): the
#: synthetic grid was best at 1 (6000 users eps 8: 0.759 / 0.797 / 0.818 / 0.826 at 0.2 / 0.3 / 0.5 / 1;
#: 2000 users: 0.652 / 0.682 / 0.707 / 0.740), the panels, whose rows sit far inside the bound, at
#: 0.2-0.5 (PSID eps 64: 0.705 / 0.679 / 0.615 / 0.602; rwm5yr eps 8: 0.681 / 0.671 / 0.696 / 0.687);
#: 0.5 is their geometric middle. Against the user_clip rule (the previous default): synthetic 6000
#: users 0.644 -> 0.838 at eps 64, 0.513 -> 0.818 at eps 8 (500 / 2000 users at eps 64: 0.602 ->
#: 0.830, 0.665 -> 0.833; LogisticRegression 0.838); baseball / rwm5yr / PSID at eps 64: 0.470 /
#: 0.582 / 0.607 -> 0.705 / 0.733 / 0.615, rwm5yr eps 8 0.503 -> 0.696. At eps <= 1 (and 500 users
#: at eps 8) both rules stay near chance: the cap binds and the noise, not alpha, decides.
SC_OUTPUT_PERT_ALPHA_FACTOR = 0.5


def default_sc_output_pert_alpha(n_users, m, d, data_norm, epsilon, delta):
    """Default strong convexity of ``solver="sc_output_pert"``, from public facts only.

    Balances the ridge bias against the output noise of the deletion mechanism
    (planned at ``lam = 1`` with its default test and ``beta``; public inputs
    only). Where that plan refuses (too few users) the fit refuses too; the
    user_clip rule is returned so the refusal comes from the solver's plan.
    """
    d = max(int(d), 1)
    floor = default_user_alpha(n_users, m, d, data_norm, epsilon, delta)
    try:
        plan = deletion_plan(max(int(n_users), 1), max(int(m), 1), d, data_norm=data_norm, lam=1.0,
                             epsilon=epsilon, delta=delta)
    except ValueError:
        return floor
    noise_norm = plan.sigma * math.sqrt(d)  # expected noise norm at lam = 1 (scales as 1 / lam)
    alpha = SC_OUTPUT_PERT_ALPHA_FACTOR * data_norm * math.sqrt(data_norm * noise_norm / d)
    return max(min(alpha, USER_ALPHA_CAP * data_norm**2 / d), floor)


#: Steps of ``user_dp_sgd`` per unit of ``n_users / u`` (``u`` the expected noise norm per unit of
#: sensitivity, about ``sqrt(d) / mu``): with ``T`` steps the noise on each step's mean gradient has
#: norm about ``clip sqrt(T) u / n_users``, so ``T = n_users / u`` makes it ``clip sqrt(u / n_users)``:
#: more users buy both more steps and less noise per step.
#: Chosen on the panel benchmark (benchmarks/bench_panels.py, benchmarks/results/panels.md):
#: factors 0.5, 0.7, 1, 1.5, 2 over seven panels, 221..5000 users; 1 and 1.5 tied, 0.7 lost 0.025
#: on the 2050-user panel and 0.03-0.06 on the 400-user ones, 2 lost 0.02-0.03 on the latter.
SGD_STEPS_PER_USER_NOISE = 1.0
#: Horizon cap of the step rule: plain gradient descent (no momentum) would take ``H = min(n_users /
#: u, SGD_MAX_HORIZON)`` steps; from 100 to 400 plain steps the 5000-user synthetic panel did not move
#: and the 4288-user panel gained 0.013 (benchmarks/results/panels.md).
SGD_MAX_HORIZON = 300
#: Bounds of the steps actually run: below 10 steps gradient descent does not leave the origin's
#: neighbourhood; above 30, with the momentum rule covering the horizon, no panel gained (30, 50,
#: 100 steps at eps = 1: within one std on all seven panels); every step is a pass over all kept rows.
SGD_MIN_STEPS, SGD_MAX_STEPS = 10, 30
#: Compute cap: ``T n_users m <= SGD_ROW_PASSES`` (``n_users m`` bounds the kept rows), so a fit
#: makes at most about 3e6 row passes: 15 steps at 200k rows, where the fit then takes 1.4-2.0x
#: LogisticRegression's time (benchmarks/results/user_level_speed.md); never below SGD_MIN_STEPS.
#: Where it binds the noise is small (n_users m >= 1e5) and the momentum rule still covers the
#: horizon: on 15000 synthetic users (bench_user_speed's model) 10, 20 and 300 steps all reached
#: LogisticRegression's test accuracy.
SGD_ROW_PASSES = 3.0e6
#: ``alpha`` of ``user_dp_sgd`` under the default: this share of :func:`default_user_alpha`. The
#: output-perturbation rule's ridge pulls the iterate towards 0, where panels scaled by public
#: ranges (rows far inside the bound) need large coefficients: 1x lost 0.12 accuracy on the
#: 2050-user panel, 0.1x and 0.03x tied (bench_panels.py).
SGD_ALPHA_SHARE = 0.03
#: ``solver="auto"`` takes ``user_dp_sgd`` when ``n_users / u >= SGD_AUTO_MIN_STEPS`` (its step rule
#: asks for at least this many steps). Below it (about 300 users at d = 10, epsilon = 1) a few noisy
#: steps lose to ``user_clip``'s single release: 221 users (VerbAgg) 0.615 vs 0.643, 200 synthetic
#: users 0.61 vs 0.64; from 380 users on ``user_dp_sgd`` won on every real panel (0.61 vs 0.54 at
#: 381 users, 0.80 vs 0.61 at 2050) and tied on the synthetic grid (benchmarks/results/panels.md).
SGD_AUTO_MIN_STEPS = 20


def users_per_noise(n_users, d, epsilon, delta):
    """``n_users / u``: users per unit of the expected noise norm of one unit-sensitivity release."""
    return max(n_users, 1) / expected_noise_norm(1.0, max(int(d), 1), epsilon, delta)


#: Past the step cap the horizon grows as ``r (r / SGD_MAX_STEPS)^SGD_HORIZON_POWER`` (``r = n_users /
#: u``). At r = 56 (782 users, eps = 1) the noise-free run at the horizon r stops at 0.725 test
#: accuracy against 0.754 at 300 (eps = 1000), and powers 0, 1, 2 (with the clip SGD_CLIP_SHARE) gave
#: 0.719 / 0.727 / 0.733 there (10 seeds); the other panels with 30 < r < 300 (eps = 0.5 and 2) moved
#: by less than their std between powers 1 and 2 (benchmarks/results/panels.md, "Horizon and clip").
SGD_HORIZON_POWER = 2.0


def sgd_horizon(n_users, d, epsilon, delta):
    """``H = min(r max(1, r / SGD_MAX_STEPS)^SGD_HORIZON_POWER, SGD_MAX_HORIZON)``, ``r = n_users / u``:
    the steps of plain gradient descent under the rule.

    Public facts only. Up to ``r = SGD_MAX_STEPS`` the horizon is ``r`` itself, run as ``r`` plain
    steps; past it, where the step cap binds and momentum covers the horizon, it grows faster than
    ``r``: with more users per unit of noise the noise-free run, not the noise, is what stops
    short. Non-decreasing in ``r``.
    """
    r = SGD_STEPS_PER_USER_NOISE * users_per_noise(n_users, d, epsilon, delta)
    return min(r * max(1.0, r / SGD_MAX_STEPS) ** SGD_HORIZON_POWER, SGD_MAX_HORIZON)


def default_sgd_iterations(n_users, m, d, epsilon, delta):
    """Default number of ``user_dp_sgd`` steps from public facts.

    ``round(H)`` within [10, 30] (``H`` from :func:`sgd_horizon`), and at most
    ``max(10, SGD_ROW_PASSES / (n_users m))``. Increasing in ``n_users`` up to
    the caps, non-increasing in ``m``.
    """
    steps = min(max(round(sgd_horizon(n_users, d, epsilon, delta)), SGD_MIN_STEPS), SGD_MAX_STEPS)
    compute_cap = max(int(SGD_ROW_PASSES // (max(n_users, 1) * max(m, 1))), SGD_MIN_STEPS)
    return int(min(steps, compute_cap))


def default_sgd_momentum(n_users, d, epsilon, delta, iterations):
    """Default Nesterov momentum of ``user_dp_sgd`` for ``iterations`` steps: ``max(0, 1 - T / H)``.

    Public facts only. With momentum ``beta`` a run of steps moves about ``1 /
    (1 - beta)`` times as far as plain steps (and its noise, a sum of the same
    releases, grows alike), so ``T`` steps at ``beta = 1 - T / H`` travel the
    horizon ``H`` of plain gradient descent (:func:`sgd_horizon`) with
    ``H / T`` times fewer passes over the rows and less noise per step (the
    zCDP share of each of ``T`` releases is ``1 / T``).
    """
    horizon = sgd_horizon(n_users, d, epsilon, delta)
    return float(max(0.0, 1.0 - int(iterations) / horizon))


#: ``sgd_clip=None`` clips each user's mean gradient at this share of the bound ``B`` the rows are
#: fitted at (``row_bound_``): ``B / (2 sqrt(2))``. A user's mean logistic gradient has norm at most
#: ``B`` and ``B / 2`` at the origin; the noise of every step scales with the clip while the step
#: does not. On the seven panels of benchmarks/bench_panels.py (10 seeds) ``B / (2 sqrt(2))``
#: instead of ``B / 2`` gained 0.012 on the 416-user panel at eps = 1 and tied elsewhere; ``B / 4``
#: lost there (benchmarks/results/panels.md, "Horizon and clip").
SGD_CLIP_SHARE = 0.5 / math.sqrt(2.0)


def default_sgd_clip(row_bound):
    """Default clip of the users' mean gradients under ``user_dp_sgd``: ``SGD_CLIP_SHARE x`` the row
    bound of the fit (public: the bound only)."""
    return SGD_CLIP_SHARE * float(row_bound)


#: With the column magnitudes (nothing declared, linear_model/_column_magnitudes.py) ``solver="auto"`` takes
#: ``user_dp_sgd`` from ``n_users / u >= MAGNITUDE_SGD_MIN_STEPS`` instead of SGD_AUTO_MIN_STEPS. The
#: magnitudes map raw columns onto about [0, 1], one-sided (counts, years, ages), where the public-range
#: encoding maps them onto [-1, 1]: ``user_clip`` (no centre) then fits an intercept against columns that all
#: carry a large mean. DP-GD runs with the private centre. On the raw panels (10 seeds, bench_panels' split;
#: benchmarks/results/panels.md, "Raw columns: DP-GD under the magnitudes") the switch gained where r < 20:
#: Males / Wages / VerbAgg at eps 0.5 (r = 12 / 14 / 8) and VerbAgg at eps 1 (r = 15).
MAGNITUDE_SGD_MIN_STEPS = 0


def prefers_dp_sgd(n_users, d, epsilon, delta, magnitudes=False):
    """Whether ``solver="auto"`` takes ``user_dp_sgd`` (public facts only; see SGD_AUTO_MIN_STEPS).

    ``magnitudes``: the fit maps its columns by the released column magnitudes (a public fact: nothing
    declared, the quartiles off); the threshold is then MAGNITUDE_SGD_MIN_STEPS."""
    threshold = MAGNITUDE_SGD_MIN_STEPS if magnitudes else SGD_AUTO_MIN_STEPS
    return users_per_noise(n_users, d, epsilon, delta) >= threshold


#: A declared ``data_norm`` R: the fit runs on the rows ``(x, intercept_scaling)`` mapped to
#: ``(x, c intercept_scaling)`` and clipped to norm ``c sqrt(1 + intercept_scaling^2)``, with
#: ``c = DECLARED_ROW_SHARE x R`` — what ``data_norm="auto"`` does with its released scale
#: (linear_model/_auto_scales.py, DATA_NORM_MARGIN), with the declared bound in place of the
#: private median, for every solver (as under "auto": the candidates of ``solver="auto"`` are then
#: compared in the same units). A row is clipped in its direction while the noise scales with the
#: bound, so a bound below the typical norm wins. On the seven panels of benchmarks/bench_panels.py
#: (rows scaled by public ranges, R = sqrt(2)), 10 seeds, eps in {0.5, 1, 2}: at or above the
#: previous default (rows clipped at R itself) in all 21 cells, by more than one standard error in
#: 14 (baseball 0.704 -> 0.718 at eps = 1, Wages 0.709 -> 0.728, PSID 0.735 -> 0.782 at eps = 0.5);
#: c = 0.25 and c = 0.5 (shares 0.18 and 0.35) within 0.012 of it everywhere
#: (benchmarks/results/panels.md).
DECLARED_ROW_SHARE = 0.25
#: ``data_norm=None`` (the default) is this declared bound unless the fit rescales its columns (then
#: ``"auto"``). Where the column quartiles run (about ``n_users epsilon >= 400 d``), "auto" on raw columns
#: against 1.0: rwm5yr 0.757 / 0.765 vs 0.657 / 0.657 (the majority class) at eps 1 / 2, synthetic 0.777 /
#: 0.784 vs 0.776 / 0.776; on rows scaled by public ranges within -0.004..+0.002 of 1.0. Where they do not
#: run (fewer users), 1.0 (with the private centre) beats "auto" on every scaled panel by 0.001-0.028 and
#: both fail on raw columns (10 seeds; benchmarks/results/panels.md, "The default data_norm").
DEFAULT_DATA_NORM = 1.0


def declared_row_scale(data_norm, centred=False):
    """``c``: a declared bound's rows are fitted as ``(x, c intercept_scaling)`` clipped to ``c sqrt(1 +
    intercept_scaling^2)``, settings read in the units of ``X / c``. Public: the declared bound, and
    whether the fit centres its features (``CENTRED_ROW_SHARE``, linear_model/_centering.py)."""
    return (CENTRED_ROW_SHARE if centred else DECLARED_ROW_SHARE) * float(data_norm)


def first_row_per_user(users):
    """Index of each user's first row in input order: the rows user-level column scaling reads.

    A public function of the grouping only (``users``, the stable sort of
    :func:`~sklearn_dpsco._solvers._core._user_data.index_users`): never of
    the rows' values or labels. Replacing one user's block (any size, any
    identifier) changes one user of the multiset of users, hence at most one
    of the selected rows (doc/privacy/column_scaling.rst, "User level").
    """
    counts = np.asarray(users.counts, dtype=np.intp)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp) if counts.size else counts
    return starts if users.order is None else np.asarray(users.order)[starts]
