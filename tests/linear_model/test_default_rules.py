"""Default rules of the estimators: functions of public facts only, monotone where they must be."""

import inspect
import math

import numpy as np
import pytest

from sklearn_dpsco._mechanisms._calibrate import expected_noise_norm
from sklearn_dpsco.linear_model import _hinge_rules as hinge

PUBLIC_NAMES = {"n", "d", "clip", "epsilon", "delta", "factor", "n_users", "m", "data_norm", "n_coef",
                "row_bound", "noise", "n_features", "iterations", "bounds_declared", "centred",
                "magnitudes"}  # magnitudes: whether the column magnitudes and the centre run (public facts)


@pytest.mark.parametrize("rule", [hinge.default_alpha, hinge.declared_clip_level])
def test_rules_take_public_facts_only(rule):
    # no argument that could carry data: every parameter is a named public scalar
    assert set(inspect.signature(rule).parameters) <= PUBLIC_NAMES


def test_hinge_alpha_formula_and_cap():
    # pure DP: min(50 clip^2 / (n eps), clip^2 / d)
    assert hinge.default_alpha(10_000, 11, 1.0, 1.0, 0.0) == pytest.approx(50.0 / 10_000)
    assert hinge.default_alpha(100, 11, 1.0, 0.5, 0.0) == pytest.approx(1.0 / 11)  # capped
    assert hinge.default_alpha(10_000, 11, 3.0, 1.0, 0.0) == pytest.approx(9 * 50.0 / 10_000)
    # the first-phase rule on n/2 rows equals output perturbation's on n rows
    assert hinge.default_alpha(5000, 11, 1.0, 1.0, 0.0, factor=hinge.PHASE1_ALPHA_FACTOR) == pytest.approx(
        hinge.default_alpha(10_000, 11, 1.0, 1.0, 0.0))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_hinge_alpha_monotone(delta):
    ns = np.geomspace(50, 1e7, 30)
    for d in (2, 4, 11, 31, 101):
        a = [hinge.default_alpha(int(n), d, 1.0, 1.0, delta) for n in ns]
        assert all(x >= y for x, y in zip(a, a[1:])), "alpha must not grow with n"
        a = [hinge.default_alpha(5000, d, 1.0, e, delta) for e in np.geomspace(0.05, 20, 30)]
        assert all(x >= y for x, y in zip(a, a[1:])), "alpha must not grow with epsilon"
        a = [hinge.default_alpha(5000, d, c, 1.0, delta) for c in np.geomspace(0.01, 100, 30)]
        assert all(x < y for x, y in zip(a, a[1:])), "alpha grows with the declared scale"
        assert all(0 < hinge.default_alpha(int(n), d, 1.0, 1.0, delta) <= 1.0 / d + 1e-15 for n in ns)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_hinge_declared_clip_level(delta):
    """A share of the declared bound exactly where the noise per row is small (the localization
    threshold), the bound itself below; never above the bound, proportional to it."""
    f = hinge.declared_clip_level
    for d in (2, 11, 31):
        for eps in (0.1, 1.0, 4.0):
            for n in np.geomspace(50, 1e7, 25).astype(int):
                small_noise = n / expected_noise_norm(1.0, d, eps, delta) >= hinge.LOCALIZE_ABOVE
                level = f(2.0, n, d, eps, delta)
                assert level == (2.0 * hinge.DECLARED_CLIP_SHARE if small_noise else 2.0)
                assert f(6.0, n, d, eps, delta) == pytest.approx(3 * level)
    assert f(1.0, 3200, 11, 1.0, 0.0) == 1.0 and f(1.0, 3300, 11, 1.0, 0.0) == hinge.DECLARED_CLIP_SHARE
    # monotone: more rows or more epsilon never raise the level
    levels = [f(1.0, int(n), 11, 1.0, delta) for n in np.geomspace(50, 1e7, 40)]
    assert all(a >= b for a, b in zip(levels, levels[1:]))


def test_hinge_alpha_finite_at_extremes():
    for args in [(1, 1, 1e-8, 1e-6, 0.0), (10**12, 1000, 1e8, 100.0, 0.0), (10**9, 3, 1.0, 1e-3, 1e-9)]:
        assert math.isfinite(hinge.default_alpha(*args)) and hinge.default_alpha(*args) > 0


# --------------------------------------------------------------------------- user-level logistic
from sklearn_dpsco.linear_model import _least_squares_rules as ls  # noqa: E402
from sklearn_dpsco.linear_model import _user_logistic_rules as user  # noqa: E402


def test_user_alpha_public_and_monotone():
    assert set(inspect.signature(user.default_user_alpha).parameters) <= PUBLIC_NAMES
    f = user.default_user_alpha
    for d in (4, 11, 31, 101):
        a = [f(int(n), 5, d, 1.0, 1.0, 1e-6) for n in np.geomspace(10, 1e7, 25)]
        assert all(x >= y for x, y in zip(a, a[1:]))
        a = [f(1000, m, d, 1.0, 1.0, 1e-6) for m in range(1, 40)]
        assert all(x >= y for x, y in zip(a, a[1:]))
        a = [f(1000, 5, d, 1.0, e, 1e-6) for e in np.geomspace(0.05, 20, 25)]
        assert all(x >= y for x, y in zip(a, a[1:]))
        a = [f(1000, 5, d, r, 1.0, 1e-6) for r in np.geomspace(0.01, 100, 25)]
        assert all(x < y for x, y in zip(a, a[1:]))
        assert 0 < f(10, 1, d, 1.0, 0.01, 1e-9) <= 1.0 / d + 1e-15  # capped at R^2 / d


def test_user_estimator_uses_the_rule():
    from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    g = np.repeat(np.arange(400), 5)
    # column_scaling=False: the whole budget on the solver (with nothing declared the column magnitudes would
    # take their share first; linear_model/_column_magnitudes.py)
    est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, max_items_per_user=5, random_state=0, solver="user_clip",
                              column_scaling=False, accountant=BudgetAccountant(epsilon=10, delta=1e-3)).fit(X, y, g)
    # planned at the row bound the fit clipped to: a quarter of the declared data_norm = 1 (declared_row_scale)
    assert est.data_norm_ == 1.0 and est.row_bound_ == pytest.approx(0.25 * math.sqrt(2.0))
    assert est.alpha_ == pytest.approx(user.default_user_alpha(400, 5, 4, est.row_bound_, 1.0, 1e-6))
    assert est.get_params()["alpha"] is None
    est2 = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, alpha=0.05, random_state=0,
                               accountant=BudgetAccountant(epsilon=10, delta=1e-3)).fit(X, y, g)
    # a given alpha is read in the units of X / c (c = a quarter of the declared bound, an eighth when the
    # fit centres its features, as this DP-GD fit does), as under "auto"
    assert est2.solver_ == "user_dp_sgd" and est2.column_center_ is not None
    assert est2.alpha_ == pytest.approx(0.05 * 0.125**2)


def test_user_sgd_rules_public_monotone_and_bounded():
    for f in (user.default_sgd_iterations, user.default_sgd_momentum, user.sgd_horizon, user.prefers_dp_sgd,
              user.users_per_noise, user.default_sgd_clip):
        assert set(inspect.signature(f).parameters) <= PUBLIC_NAMES
    T = user.default_sgd_iterations
    for d in (4, 11, 31):
        steps = [T(int(n), 1, d, 1.0, 1e-6) for n in np.geomspace(1, 1e5, 30)]
        assert all(x <= y for x, y in zip(steps, steps[1:])), "more users, never fewer steps (below the compute cap)"
        assert steps[0] == user.SGD_MIN_STEPS and steps[-1] == user.SGD_MAX_STEPS
        steps = [T(2000, 5, d, e, 1e-6) for e in np.geomspace(0.05, 20, 25)]
        assert all(x <= y for x, y in zip(steps, steps[1:])), "more budget, never fewer steps"
        # the compute cap: T n m <= SGD_ROW_PASSES, never below the floor
        for n, m in ((20000, 10), (4288, 5), (10**6, 10)):
            t = T(n, m, d, 8.0, 1e-6)
            assert t == max(min(user.SGD_MAX_STEPS, int(user.SGD_ROW_PASSES // (n * m))), user.SGD_MIN_STEPS)
    assert T(20000, 10, 21, 1.0, 1e-6) == 15  # benchmarks/bench_user_speed.py: 200k rows
    # below the caps the rule is n_users / u rounded: 221 users at d = 10, epsilon = 1 take 17 steps
    u = expected_noise_norm(1.0, 10, 1.0, 1e-6)
    assert T(221, 24, 10, 1.0, 1e-6) == round(221 / u) == 17
    u = expected_noise_norm(1.0, 11, 1.0, 1e-6)
    # the horizon: r = n / u up to the step cap, faster past it, at most SGD_MAX_HORIZON
    k = user.SGD_HORIZON_POWER
    for n in (221, 416, 782, 1200, 2050, 10**7):
        r = n / u
        assert user.sgd_horizon(n, 11, 1.0, 1e-6) == pytest.approx(
            min(r * max(1.0, r / user.SGD_MAX_STEPS) ** k, user.SGD_MAX_HORIZON))
    assert user.sgd_horizon(416, 11, 1.0, 1e-6) == pytest.approx(416 / u)  # r <= 30: plain steps, as before
    assert user.sgd_horizon(10**7, 11, 1.0, 1e-6) == user.SGD_MAX_HORIZON
    horizons = [user.sgd_horizon(int(n), 11, e, 1e-6) for e in (0.5, 1.0, 2.0) for n in np.geomspace(10, 1e6, 20)]
    assert all(x <= y for x, y in zip(horizons[:20], horizons[1:20])), "more users, never a shorter horizon"
    # the momentum covers the horizon: T / (1 - beta) = H, and 0 once T >= H
    H = user.sgd_horizon(782, 11, 1.0, 1e-6)
    assert H == pytest.approx(782 / u * (782 / u / user.SGD_MAX_STEPS) ** k) and 30 < H < user.SGD_MAX_HORIZON
    beta = user.default_sgd_momentum(782, 11, 1.0, 1e-6, 30)
    assert 30 / (1 - beta) == pytest.approx(H)
    assert user.default_sgd_momentum(2050, 11, 1.0, 1e-6, 300) == 0.0
    betas = [user.default_sgd_momentum(int(n), 11, 1.0, 1e-6, 20) for n in np.geomspace(10, 1e6, 20)]
    assert all(0.0 <= x <= y < 1.0 for x, y in zip(betas, betas[1:])), "more users, never less momentum"
    assert user.prefers_dp_sgd(4288, 11, 1.0, 1e-6) and not user.prefers_dp_sgd(200, 11, 1.0, 1e-6)
    n_star = math.ceil(user.SGD_AUTO_MIN_STEPS * u)  # the first user count the rule prefers DP-GD at
    assert user.prefers_dp_sgd(n_star, 11, 1.0, 1e-6) and not user.prefers_dp_sgd(n_star - 1, 11, 1.0, 1e-6)
    # under the column magnitudes with the centre the threshold is MAGNITUDE_SGD_MIN_STEPS (0: DP-GD at any r)
    assert user.MAGNITUDE_SGD_MIN_STEPS <= user.SGD_AUTO_MIN_STEPS
    assert all(user.prefers_dp_sgd(n, 11, e, 1e-6, magnitudes=True) for n in (2, 50, n_star - 1) for e in (0.5, 1.0))


def test_user_default_dp_sgd_event_and_spend():
    """Defaults on a 400-user panel: auto takes user_dp_sgd with the rules' steps and alpha share; the
    event is T zCDP steps fixed by the public facts, spent once, within (epsilon, delta)."""
    from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic
    from sklearn_dpsco.accounting import SelfComposedEvent, ZCDPEvent

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    g = np.repeat(np.arange(400), 5)
    acc = BudgetAccountant(epsilon=10, delta=1e-3)
    # centering=False: the solver on the whole budget (a centred fit's rules read the budget the centre
    # leaves, its event composes the centre's: tests/privacy/test_centering_user.py)
    # column_scaling=False likewise: nothing declared would release the column magnitudes first
    est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, max_items_per_user=5, random_state=0, accountant=acc,
                              centering=False, column_scaling=False)
    est.fit(X, y, g)
    steps = user.default_sgd_iterations(400, 5, 4, 1.0, 1e-6)
    assert est.solver_ == "user_dp_sgd" and est.sgd_iterations_ == steps
    assert est.sgd_momentum_ == user.default_sgd_momentum(400, 4, 1.0, 1e-6, steps)
    assert est.row_bound_ == pytest.approx(user.DECLARED_ROW_SHARE * math.sqrt(2.0))  # declared 1.0, is = 1
    assert est.alpha_ == pytest.approx(user.SGD_ALPHA_SHARE * user.default_user_alpha(400, 5, 4, est.row_bound_,
                                                                                        1.0, 1e-6))
    # the users' mean gradients are clipped at the public share of the fit's row bound
    assert est.fit_info_[0]["clip"] == pytest.approx(user.SGD_CLIP_SHARE * est.row_bound_)
    event = est.privacy_event_
    assert isinstance(event, SelfComposedEvent) and isinstance(event.event, ZCDPEvent) and event.count == steps
    assert 0.99 <= est.epsilon_spent_ <= 1.0 + 1e-9 and est.delta_spent_ <= 1e-6
    assert len(acc.ledger) == 1
    # the same public facts with other data: the same event
    est2 = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, max_items_per_user=5, random_state=1, centering=False,
                               column_scaling=False,
                               accountant=BudgetAccountant(epsilon=10, delta=1e-3)).fit(-X, 1 - y, g)
    assert est2.privacy_event_ == event
    centred = [UserLevelDPLogistic(epsilon=1.0, delta=1e-6, max_items_per_user=5, random_state=s,
                                   accountant=BudgetAccountant(epsilon=10, delta=1e-3)).fit(X_, y_, g).privacy_event_
               for s, X_, y_ in ((0, X, y), (1, -X, 1 - y))]
    assert centred[0] == centred[1] != event


# --------------------------------------------------------------------------- linear regression table
def test_least_squares_table_public_and_monotone_in_m():
    assert set(inspect.signature(ls.table_solver).parameters) <= PUBLIC_NAMES
    order = {"adassp": 0, "lowy": 1, "phased_erm": 2}
    for delta in (0.0, 1e-5):
        for d in (4, 6, 21, 101):
            ns = [int(n) for n in np.geomspace(10, 1e8, 40)]
            below = [n for n in ns if ls.rows_per_unit(n, d, 1.0) < ls.ADASSP_ABOVE]
            picks = [order[ls.table_solver(n, d, 1.0, delta, 1.0)] for n in below]
            assert picks == sorted(picks), "below ADASSP_ABOVE more rows never move back to a lower-m solver"
            # from m = ADASSP_ABOVE on AdaSSP ties Phased-ERM at a fraction of the time (scaling_n.md)
            assert all(ls.table_solver(n, d, 1.0, delta, 1.0) == "adassp" for n in ns if n not in below)
    assert ls.table_solver(10**4, 6, 1.0, 0.0, 1.0) == "phased_erm"  # m = 1667, d = 6: Phased-ERM
    # small d: AdaSSP over the whole pure-DP gap (its d(d+1)/2 release is cheap), with a row bound only
    for n in (3000, 10**4, 39999):  # m = 750 .. 1e4 at d = 4, 500 .. 6667 at d = 6
        assert ls.table_solver(n, 4, 1.0, 0.0, 1.0, bounds_declared=True) == "adassp"
        assert ls.table_solver(n, ls.ADASSP_GAP_MAX_FEATURES, 1.0, 0.0, 1.0, bounds_declared=True) == "adassp"
        assert ls.table_solver(n, ls.ADASSP_GAP_MAX_FEATURES + 1, 1.0, 0.0, 1.0, bounds_declared=True) == "phased_erm"
        assert ls.table_solver(n, 4, 1.0, 0.0, None, bounds_declared=True) == "phased_erm"
        # "auto" bounds: the branch up to 4 coefficients (the estimated bounds cost AdaSSP more at d + 1 = 5)
        assert ls.table_solver(n, ls.ADASSP_GAP_MAX_FEATURES_AUTO, 1.0, 0.0, 1.0) == "adassp"
        assert ls.table_solver(n, ls.ADASSP_GAP_MAX_FEATURES_AUTO + 1, 1.0, 0.0, 1.0) == "phased_erm"
    assert ls.ADASSP_GAP_MAX_FEATURES_AUTO == 4 < ls.ADASSP_GAP_MAX_FEATURES
    assert ls.table_solver(10**6, 4, 1.0, 0.0, 1.0) == "adassp"  # m = 2.5e5
    assert ls.table_solver(10**6, 4, 1.0, 0.0, None) == "phased_erm"  # AdaSSP needs the row bound
    assert ls.table_solver(1000, 4, 1.0, 0.0, None) == "lowy"  # no row bound: extension solvers only
    assert ls.table_solver(1000, 2000, 1.0, 0.0, 1.0) == "lowy"  # no d x d release above 1000 coefficients


def test_least_squares_small_d_branch_follows_the_declaration():
    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (6000, 4))  # d = 5 with the intercept, m = 1200 at epsilon 1 (before shares)
    y = X @ np.array([0.5, -0.3, 0.2, 0.1]) + 0.1 * rng.standard_normal(6000)

    def fit(columns, **kw):
        return DPLinearRegressor(epsilon=1.0, random_state=0, accountant=BudgetAccountant(epsilon=10),
                                 **kw).fit(X[:, :columns], y).solver_

    assert fit(4, row_bound=1.0, label_bound=1.0) == "adassp"
    assert fit(4, row_bound=1.0) == "phased_erm"  # label bound "auto": the branch stops at 4 coefficients
    assert fit(4) == "phased_erm"
    assert fit(3, row_bound=1.0) == fit(3) == "adassp"  # d = 4 with the intercept


def test_declared_row_scale_public():
    assert set(inspect.signature(user.declared_row_scale).parameters) <= PUBLIC_NAMES
    for R in (0.1, 1.0, math.sqrt(2.0), 30.0):
        assert user.declared_row_scale(R) == pytest.approx(user.DECLARED_ROW_SHARE * R)
        assert user.declared_row_scale(R, centred=True) == pytest.approx(user.CENTRED_ROW_SHARE * R)


@pytest.mark.parametrize("solver", ["user_clip", "user_dp_sgd", "item_group"])
def test_declared_rows_are_clipped_at_the_rule_bound(solver):
    """The solver sees rows (x, c is) of norm <= c sqrt(1 + is^2), c = R/4, whatever the data."""
    from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic
    from sklearn_dpsco.linear_model import _user_logistic as mod

    seen = {}
    real = mod.make_user_data

    def spy(*args, **kwargs):
        seen.update(data_norm=kwargs["data_norm"], intercept=kwargs["intercept_scaling"])
        return real(*args, **kwargs)

    rng = np.random.default_rng(1)
    X = rng.standard_normal((1500, 3)) * 50.0  # far outside the declared bound
    y = (X[:, 0] > 0).astype(int)
    g = np.repeat(np.arange(500), 3)
    R, is_ = 2.0, 0.5
    est = UserLevelDPLogistic(epsilon=2.0, delta=1e-6, max_items_per_user=3, data_norm=R, intercept_scaling=is_,
                              solver=solver, random_state=0, accountant=BudgetAccountant(epsilon=10, delta=1e-3))
    import unittest.mock as um
    with um.patch.object(mod, "make_user_data", spy):
        est.fit(X, y, g)
    c = user.declared_row_scale(R, centred=est.column_center_ is not None)  # "auto" centres DP-GD fits
    assert (est.column_center_ is not None) == (solver == "user_dp_sgd")
    bound = c * math.hypot(1.0, is_)
    assert seen["data_norm"] == pytest.approx(bound) and est.row_bound_ == pytest.approx(bound)
    assert seen["intercept"] == pytest.approx(c * is_)  # the intercept column scaled alike: inside the bound
    assert est.data_norm_ == R  # the declaration, reported as given
    from sklearn_dpsco.linear_model._auto_scales import fit_event

    columns = est._column_plan(est._validate_fit_inputs(X, y, g))  # the centre's plan (DP-GD) or None
    plan = est._plan(500, 4, 1, columns=columns)
    assert est.privacy_event_ == fit_event(None, plan.event, 1, columns)  # the event is the public plan's
    # the radius is read in the units of X / c (as under "auto"): ||w|| <= radius / c in the data's units
    assert plan.radius == pytest.approx(est.radius / c)


def test_phased_erm_step_radius_public_and_used_only_with_auto_bounds():
    """Phased-ERM's step scale: a public constant when both bounds are "auto" (what was passed), the radius else;
    the schedule facts it sets are the same on unrelated data of one shape (doc/privacy/localization.rst)."""
    from sklearn_dpsco.linear_model import DPLinearRegressor
    from sklearn_dpsco.linear_model import _least_squares_rules as rules

    assert rules.phased_erm_step_radius(True, True) == rules.PHASED_ERM_STEP_RADIUS == 2.5
    assert rules.phased_erm_step_radius(True, False) is None
    assert rules.phased_erm_step_radius(False, True) is None
    rng = np.random.default_rng(0)
    n, p = 3000, 5
    Xa, ya = rng.standard_normal((n, p)), (rng.uniform(size=n) < 0.3).astype(float)
    Xb, yb = 100 * rng.standard_t(2, (n, p)), 1e3 * rng.standard_normal(n)
    kw = dict(epsilon=1.0, solver="phased_erm", random_state=0)
    fa = DPLinearRegressor(**kw).fit(Xa, ya).fit_info_
    fb = DPLinearRegressor(**kw).fit(Xb, yb).fit_info_
    assert fa["step_radius"] == fb["step_radius"] == 2.5
    assert fa["steps"] == fb["steps"] and fa["step"] == fb["step"]
    # declared bounds: the step is sized for the radius as before (no step_radius)
    fd = DPLinearRegressor(row_bound=1.0, label_bound=1.0, **kw).fit(Xa, ya).fit_info_
    assert "step_radius" not in fd
    assert fd["step"] == pytest.approx(2.0 * 10.0 / 0.1 * min(4.0 / math.sqrt(n), 1.0 / (p + 1)))


def test_user_level_warns_when_too_few_users_for_the_noise():
    """Public facts only (users, d, epsilon, delta): 3 users at epsilon 1 fitted silently a near-constant model;
    200 users do not warn."""
    import warnings

    from sklearn_dpsco import UserLevelDPLogistic
    from sklearn_dpsco.accounting import BudgetAccountant

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    acc = BudgetAccountant(10.0, delta=1e-5)
    with pytest.warns(UserWarning, match="3 users are too few"):
        UserLevelDPLogistic(accountant=acc, delta=1e-6, random_state=0).fit(X, y, groups=np.arange(600) % 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        UserLevelDPLogistic(accountant=acc, delta=1e-6, random_state=0).fit(X, y, groups=np.arange(600) % 200)
    # the warning is a fact of the public plan: turned into an error it refuses before any spend (it was raised
    # after the spend, so the ledger was charged and the model discarded)
    ledger_before = acc.ledger
    est = UserLevelDPLogistic(accountant=acc, delta=1e-6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="3 users are too few"):
            est.fit(X, y, groups=np.arange(600) % 3)
    assert acc.ledger == ledger_before and not hasattr(est, "coef_")


def test_auto_clip_of_tiny_rows_sits_at_the_grid_floor():
    # doc/fitting_raw_data.rst, "Tiny magnitudes": rows far below 2^-20 get the grid's smallest scale
    from sklearn_dpsco import BudgetAccountant, DPHingeClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = DPHingeClassifier(random_state=0, accountant=BudgetAccountant()).fit(X * 1e-9, y)
    assert clf.clip_ == 2.0**-20


def test_delta_never_loses_the_pure_phased_choice():
    """At delta > 0 DPLinearRegressor plans at delta = 0 where that plan runs the AdaSSP / Phased-ERM choice
    (_pure_choice_plan; benchmarks/results/delta_choice.md: the Gaussian AdaSSP alone lost there, Computers
    scaled epsilon 0.5 0.53 -> 0.31). The same release as the pure fit, a pure event within (epsilon, delta);
    where the choice does not apply (many rows per coefficient) the fit keeps its Gaussian plan; under a zCDP
    share, which reads pure parts as epsilon^2 / 2, the pure plan is not taken when the share cannot hold it."""
    from sklearn.datasets import make_regression

    from sklearn_dpsco import DPLinearRegressor
    from sklearn_dpsco.accounting import BudgetAccountant, FitAllowance, ZCDPEvent
    from sklearn_dpsco.accounting._calibration import zcdp_epsilon, zcdp_rho
    from sklearn_dpsco.accounting._composition import profile_of

    X, y = make_regression(2000, 9, noise=10.0, random_state=0)
    pure = DPLinearRegressor(epsilon=1.0, random_state=3).fit(X, y)
    assert pure.fit_info_.get("phased_choice")  # the setting: m = 2000 / 9 < 500, d > 4, "auto" bounds
    acc = BudgetAccountant(10.0, 1e-5)
    approx = DPLinearRegressor(epsilon=1.0, delta=1e-6, random_state=3, accountant=acc).fit(X, y)
    np.testing.assert_array_equal(approx.coef_, pure.coef_)
    assert not profile_of(approx.privacy_event_).needs_delta and acc.total(delta=1e-6)[0] <= 1.0 + 1e-9
    # many rows per coefficient: no choice at delta 0, so the fit at delta > 0 keeps its curve
    Xb, yb = make_regression(60_000, 9, noise=10.0, random_state=0)
    big = DPLinearRegressor(epsilon=1.0, delta=1e-6, random_state=3).fit(Xb, yb)
    assert profile_of(big.privacy_event_).rho > 0 or profile_of(big.privacy_event_).gauss_mu2 > 0
    # a zCDP share worth (1, 1e-6): the pure plan's parts read as epsilon^2 / 2 exceed it, the curve plan is kept
    rho = zcdp_rho(1.0, 1e-6)
    share = DPLinearRegressor(epsilon=zcdp_epsilon(rho * (1 - 1e-9), 1e-6), delta=1e-6, random_state=3,
                              accountant=FitAllowance(ZCDPEvent(rho), delta=1e-6)).fit(X, y)
    assert profile_of(share.privacy_event_).rho > 0
