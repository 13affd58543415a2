"""Budgets too small for the "auto" estimates (doc/privacy/quantiles.rst, "Budgets too small for the estimates").

At ``n epsilon < 300`` (three estimates, default share; with both bounds "auto" and an intercept
DPLinearRegressor, and DPGrowthAdaptiveRegressor from 8 coefficients: 400, the estimates' weighted parts) the
quantile releases were close to uniform
over the grid and the fold-back ``coef' * B / R`` of a row bound released far below the row norms
gave test R^2 about -1e11. The public rule releases the intercept-only model at a private label
median instead (the zero model, nothing spent, below ``n epsilon = 50``).
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco.accounting import BudgetAccountant, ComposedEvent, PureDPEvent
from sklearn_dpsco.linear_model._auto_scales import CONSTANT_SOLVER, scales_supported


def _r2(y, p):
    return 1.0 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2)


def _family(n, d, seed, offset=0.0):
    """Public synthetic family: standard-normal rows, y = <w, x> + offset + noise (test rows alongside)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((2 * n, d))
    y = X @ rng.standard_normal(d) + offset + 0.5 * rng.standard_normal(2 * n)
    return X[:n], y[:n], X[n:], y[n:]


def test_rule_is_public_and_matches_the_default_share():
    assert scales_supported(2000, 0.15, 3) and not scales_supported(2000, 0.149, 3)
    assert scales_supported(1000, 0.2, 2) and not scales_supported(1000, 0.199, 2)


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
@pytest.mark.parametrize("n,d,epsilon", [(2000, 3, 1e-3), (2000, 20, 1e-3), (2000, 3, 0.05), (200, 5, 0.05),
                                         (5000, 10, 0.01)])
def test_tiny_budget_degrades_to_the_trivial_model(cls, n, d, epsilon):
    worst = np.inf
    for seed in range(4):
        X, y, Xt, yt = _family(n, d, seed)
        est = cls(epsilon=epsilon, random_state=seed).fit(X, y)
        worst = min(worst, _r2(yt, est.predict(Xt)))
        assert est.solver_ == CONSTANT_SOLVER
        assert np.all(est.coef_ == 0.0)
    # before the rule: R^2 down to -1e11 (row bound released far below the row norms)
    assert worst > -0.1


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_tiny_budget_centre_on_the_whole_epsilon(cls):
    X, y, Xt, yt = _family(2000, 4, 0, offset=5.0)  # labels off 0 by 2.5 sd: the centre matters
    acc = BudgetAccountant(epsilon=1.0)
    est = cls(epsilon=0.05, accountant=acc, random_state=0).fit(X, y)
    assert est.privacy_event_ == ComposedEvent((PureDPEvent(0.05), PureDPEvent(0.0)))
    assert est.epsilon_spent_ == pytest.approx(0.05) and est.delta_spent_ == 0.0
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    assert est.intercept_ == est.label_center_ and est.row_bound_ is None and est.label_bound_ is None
    assert _r2(yt, est.predict(Xt)) > -0.1
    # at delta > 0 the same pure release (it certifies (0.05, 0))
    est = cls(epsilon=0.05, delta=1e-6, random_state=0).fit(X, y)
    assert est.solver_ == CONSTANT_SOLVER and est.epsilon_spent_ == pytest.approx(0.05)


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_zero_model_below_one_reliable_median(cls):
    X, y, _, _ = _family(2000, 3, 0)
    est = cls(epsilon=1e-3, random_state=0).fit(X, y)  # n epsilon = 2
    assert est.privacy_event_ == PureDPEvent(0.0) and est.epsilon_spent_ == 0.0
    assert est.intercept_ == 0.0 and np.all(est.coef_ == 0.0)
    est = cls(epsilon=0.05, fit_intercept=False, random_state=0).fit(X, y)  # no centre to release
    assert est.privacy_event_ == PureDPEvent(0.0) and est.intercept_ == 0.0


def test_declared_share_or_bounds_keep_the_solver():
    X, y, _, _ = _family(2000, 3, 0)
    assert DPLinearRegressor(epsilon=0.05, scale_share=0.5, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER
    est = DPLinearRegressor(epsilon=0.05, row_bound=4.0, label_bound=6.0, random_state=0).fit(X, y)
    assert est.solver_ != CONSTANT_SOLVER  # nothing "auto": no estimate, no rule
    # enough budget: the solver runs as before (DPLinearRegressor's weighted rule: from n epsilon = 400)
    assert DPLinearRegressor(epsilon=0.2, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER
    assert DPGrowthAdaptiveRegressor(epsilon=0.15, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER  # 4 coefs


def test_linear_regressor_weighted_parts_below_400():
    """DPLinearRegressor with both bounds "auto" and an intercept counts the estimates' weighted parts (row bound
    1, centre 2, the label bound's median fallback 1): intercept-only below n epsilon = 400 (the centre then on
    the whole epsilon, on its fine grid), the solver from 400; a declared bound or no intercept keep the count of
    estimates (300 / 200)."""
    X, y, Xt, yt = _family(2000, 3, 0, offset=50.0)  # labels narrow against their level
    est = DPLinearRegressor(epsilon=0.15, random_state=0)
    assert est._scale_parts(est._scale_targets(False)) == 4
    for eps in (0.15, 0.199):
        fit = DPLinearRegressor(epsilon=eps, random_state=0).fit(X, y)
        assert fit.solver_ == CONSTANT_SOLVER and fit.epsilon_spent_ == pytest.approx(eps)
        assert "4 x 50 / 0.5" in fit.fit_info_["constant_rule"]
        # the fine grid's steps (2.2 % of the level) bound the centre's miss: R^2 >= -(0.022 x 50 / sd(y))^2
        assert _r2(yt, fit.predict(Xt)) > -((0.022 * 50.0 / yt.std()) ** 2) - 0.02
    assert DPLinearRegressor(epsilon=0.2, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER
    assert DPLinearRegressor(epsilon=0.15, label_bound=60.0, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER
    assert DPLinearRegressor(epsilon=0.15, fit_intercept=False, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER


def test_growth_regressor_weighted_parts_from_eight_coefficients():
    """DPGrowthAdaptiveRegressor counts the weighted parts (intercept-only below n epsilon = 400) from
    WEIGHTED_PARTS_MIN_COEF = 8 coefficients (the intercept's included), with both units "auto" and an intercept;
    with fewer coefficients, a declared unit or no intercept it keeps the count of estimates (300 / 200).
    The rule reads public facts only: the same plan on any rows of the same shape."""
    from sklearn_dpsco.linear_model._growth_rules import WEIGHTED_PARTS_MIN_COEF

    assert WEIGHTED_PARTS_MIN_COEF == 8
    est = DPGrowthAdaptiveRegressor(epsilon=0.15)
    targets = est._scale_targets()
    assert [est._scale_parts(targets, k) for k in (None, 7, 8, 31)] == [3, 3, 4, 4]
    X, y, Xt, yt = _family(2000, 7, 0, offset=50.0)  # 8 coefficients, labels narrow against their level
    for eps in (0.15, 0.199):
        fit = DPGrowthAdaptiveRegressor(epsilon=eps, random_state=0).fit(X, y)
        assert fit.solver_ == CONSTANT_SOLVER and fit.epsilon_spent_ == pytest.approx(eps)
        assert "4 x 50 / 0.5" in fit.fit_info_["constant_rule"]
        assert _r2(yt, fit.predict(Xt)) > -((0.022 * 50.0 / yt.std()) ** 2) - 0.02
        # other rows of the same shape: the same public decision
        assert DPGrowthAdaptiveRegressor(epsilon=eps, random_state=1).fit(-3 * X, y[::-1]).solver_ == CONSTANT_SOLVER
    assert DPGrowthAdaptiveRegressor(epsilon=0.2, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER
    assert DPGrowthAdaptiveRegressor(epsilon=0.15, random_state=0).fit(X[:, :6], y).solver_ != CONSTANT_SOLVER
    for kw in ({"label_bound": 60.0}, {"row_bound": 4.0}, {"fit_intercept": False}):
        assert DPGrowthAdaptiveRegressor(epsilon=0.15, random_state=0, **kw).fit(X, y).solver_ != CONSTANT_SOLVER


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_auto_row_bound_alone_declared_label_bound(cls):
    """One "auto" estimate (the row bound): below n epsilon = 100 the intercept-only model, its centre
    released on the whole epsilon even though the label bound is declared."""
    X, y, Xt, yt = _family(1000, 3, 1, offset=5.0)
    est = cls(epsilon=0.08, label_bound=10.0, random_state=0).fit(X, y)  # n epsilon = 80
    assert est.solver_ == CONSTANT_SOLVER and np.all(est.coef_ == 0.0)
    assert est.privacy_event_ == ComposedEvent((PureDPEvent(0.08), PureDPEvent(0.0)))
    assert est.label_bound_ == 10.0 and est.intercept_ == est.label_center_
    assert _r2(yt, est.predict(Xt)) > -0.1
    assert cls(epsilon=0.1, label_bound=10.0, random_state=0).fit(X, y).solver_ != CONSTANT_SOLVER


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_the_intercept_only_release_is_visible_as_a_warning(cls):
    X, y, _, _ = _family(200, 3, 0)
    with pytest.warns(UserWarning, match="intercept-only model"):
        est = cls(epsilon=0.5, random_state=0, accountant=BudgetAccountant(epsilon=10.0)).fit(X, y)
    assert est.solver_ == CONSTANT_SOLVER
    if cls is DPLinearRegressor:  # an explicit solver is named in the warning
        with pytest.warns(UserWarning, match="not the requested solver='adassp'"):
            cls(epsilon=0.5, solver="adassp", random_state=0, accountant=BudgetAccountant(epsilon=10.0)).fit(X, y)


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_the_warning_turned_into_an_error_spends_nothing(cls):
    """Under warnings-as-errors (pytest -W error, a user's filterwarnings) the intercept-only warning used to be
    raised after the spend: the ledger was charged and the model discarded. It is a fact of the public plan, so it
    is raised before any row is read: refused, nothing spent, nothing fitted."""
    import warnings

    X, y, _, _ = _family(200, 3, 0)
    acc = BudgetAccountant(epsilon=10.0)
    est = cls(epsilon=0.5, random_state=0, accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="intercept-only model"):
            est.fit(X, y)
    assert acc.ledger == () and acc.total() == (0.0, 0.0)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_the_report_of_a_constant_release_lists_only_what_it_rests_on(cls):
    """The intercept-only model reads no bound, clip or radius: the report must not claim it rests on them."""
    from sklearn_dpsco import privacy_report

    X, y, _, _ = _family(200, 3, 0)
    with pytest.warns(UserWarning, match="intercept-only model"):
        est = cls(epsilon=0.5, random_state=0, accountant=BudgetAccountant(epsilon=10.0)).fit(X, y)
    text = str(privacy_report(est))
    line = next(row for row in text.splitlines() if row.strip().startswith(f"{cls.__name__}:"))
    assert "solver=intercept_only" in line and "noise=" in line
    for unused in ("clip=", "radius=", "row_bound=", "label_bound=", "alpha="):
        assert unused not in line, line
