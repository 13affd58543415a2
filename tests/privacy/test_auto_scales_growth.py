"""Privacy of DPGrowthAdaptiveRegressor's "auto" units (doc/privacy/growth.rst, "Private scales").

``row_bound="auto"`` and ``label_bound="auto"`` release private medians (the
row norms; the label median, then ``|y - c|``) on the fit's own budget before
the solver runs on ``(y - c) / B`` against ``X / R``. Every test here fails if
the estimates were charged wrongly, read the data before the budget check,
were spent more than once, leaked into a declared fit, had a sensitivity
other than one rank, or were computed without privacy (the max-norm mutant).
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco._solvers import safe_row_norms
from sklearn_dpsco.accounting import BudgetAccountant, BudgetExceededError, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.linear_model import _auto_scales
from sklearn_dpsco.linear_model._auto_scales import GROWTH_ROW_MARGIN, ROW_MARGIN, default_scale_share, finite
from sklearn_dpsco.testing import audit_epsilon

UNLIMITED = dict(epsilon=float("inf"), delta=1e-3)


def _data(n=600, d=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = scale * (5.0 + rng.standard_normal((n, d)))
    y = 50.0 + X @ np.linspace(1.0, -0.5, d) + scale * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("fit_intercept,n_estimates", [(True, 3), (False, 2)])
def test_event_is_the_planned_composition_spent_once(delta, fit_intercept, n_estimates):
    X, y = _data()
    acc = BudgetAccountant(**UNLIMITED)
    # column_scaling=False: 600 x 3 at epsilon 1 sits in the median-and-spread band (doc/privacy/column_scaling.rst),
    # not this test's subject (the "auto" scales' plan)
    est = DPGrowthAdaptiveRegressor(epsilon=1.0, delta=delta, fit_intercept=fit_intercept, accountant=acc,
                                    random_state=0, column_scaling=False)
    plan = est._plan(X.shape[0], X.shape[1] + int(fit_intercept), 1)  # public facts only: no data
    names = [t.name for t in plan.scales.targets]
    assert names == (["row_bound", "label_center", "label_bound"] if fit_intercept else ["row_bound", "label_bound"])
    # parts by the targets' public weights (the label centre's is 2, CENTRE_WEIGHT), the share from their total
    # (the growth regressor keeps the split median LABEL_SPREAD, weight 1: linear_model/_growth.py)
    weights = [1.0, 2.0, 1.0] if fit_intercept else [1.0, 1.0]
    assert [t.weight for t in plan.scales.targets] == weights
    share = default_scale_share(X.shape[0], 1.0, sum(weights))
    assert plan.scales.budget.epsilon == pytest.approx(share)
    assert [p.epsilon for p in plan.scales.parts] == pytest.approx([share * w / sum(weights) for w in weights])
    assert plan.scales.event == ComposedEvent(tuple(PureDPEvent(p.epsilon) for p in plan.scales.parts))
    est.fit(X, y)
    assert est.privacy_event_ == ComposedEvent((plan.scales.event, plan.event))
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    assert est.epsilon_spent_ <= 1.0 and est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9)
    assert est.fit_info_["scale_share"] == pytest.approx(share)
    assert set(est.fit_info_["scale_estimates"]) == set(names)
    assert est.row_bound_ == est.fit_info_["scale_estimates"]["row_bound"]
    assert est.label_bound_ == est.fit_info_["scale_estimates"]["label_bound"]
    if not fit_intercept:  # no centre: a label shift could not be undone without an intercept
        assert est.label_center_ == 0.0 and est.intercept_ == 0.0


def test_row_unit_is_the_released_median_and_least_squares_keeps_twice_it():
    # the growth regressor's rows above the unit are down-weighted by the loss's extension (margin 1, as the hinge's
    # clip); AdaSSP clips its rows, so DPLinearRegressor keeps twice the median (linear_model/_auto_scales.py)
    X, y = _data()
    kw = dict(epsilon=1.0, random_state=0, column_scaling=False, accountant=BudgetAccountant(**UNLIMITED))
    growth = DPGrowthAdaptiveRegressor(**kw)
    least_squares = DPLinearRegressor(**{**kw, "accountant": BudgetAccountant(**UNLIMITED)})
    targets = {t.name: t for t in growth._scale_targets()}
    assert targets["row_bound"].margin == GROWTH_ROW_MARGIN == 1.0
    assert {t.name: t for t in least_squares._scale_targets(False)}["row_bound"].margin == ROW_MARGIN == 2.0
    growth.fit(X, y)
    assert growth.fit_info_["scale_rule"]["row_bound"] == "1 x private 0.5-quantile"
    least_squares.fit(X, y)
    assert least_squares.fit_info_["scale_rule"]["row_bound"] == "2 x private 0.5-quantile"


def test_planned_event_and_schedule_do_not_depend_on_the_data():
    (Xa, ya), (Xb, yb) = _data(seed=1), _data(seed=2, scale=1e4)
    a = DPGrowthAdaptiveRegressor(delta=1e-6, random_state=0).fit(Xa, ya)
    b = DPGrowthAdaptiveRegressor(delta=1e-6, random_state=0).fit(Xb, yb)
    assert a.privacy_event_ == b.privacy_event_
    assert a.solver_ == b.solver_ and a.n_epochs_ == b.n_epochs_ and a.radius_ == b.radius_
    np.testing.assert_array_equal(a.radii_, b.radii_)
    assert a.row_bound_ != b.row_bound_  # the releases are outputs: they follow the data's scale


def test_declared_units_spend_nothing_on_estimation_and_are_a_public_map(monkeypatch):
    calls = []
    original = _auto_scales.ScalePlan.release
    monkeypatch.setattr(_auto_scales.ScalePlan, "release", lambda *a, **k: calls.append(1) or original(*a, **k))
    X, y = _data()
    R, B = 8.0, 60.0
    a = DPGrowthAdaptiveRegressor(row_bound=R, label_bound=B, radius=2.0, random_state=3).fit(X, y)
    b = DPGrowthAdaptiveRegressor(row_bound=R, label_bound=B, radius=2.0, scale_share=0.4, random_state=3).fit(X, y)
    # the declared units are exactly the fit on X / R, y / B in no units, mapped back (post-processing)
    c = DPGrowthAdaptiveRegressor(row_bound=None, label_bound=None, radius=2.0, random_state=3).fit(X / R, y / B)
    assert calls == []
    assert a.privacy_event_ == b.privacy_event_ == c.privacy_event_
    assert a.epsilon_spent_ == 1.0 and "scale_estimates" not in a.fit_info_
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.coef_, c.coef_ * B / R, rtol=1e-12)
    assert a.intercept_ == pytest.approx(c.intercept_ * B, rel=1e-12)
    assert (a.row_bound_, a.label_bound_, a.label_center_) == (R, B, 0.0)
    assert c.row_bound_ is None and c.label_bound_ is None and c.radius_ == 2.0


def test_no_units_is_the_former_estimator():
    """``row_bound=None, label_bound=None`` runs the solver on the data as given, radius 10."""
    X, y = _data()
    est = DPGrowthAdaptiveRegressor(row_bound=None, label_bound=None, random_state=0)
    plan = est._plan(X.shape[0], X.shape[1] + 1, 1)
    assert plan.scales is None and plan.radius == 10.0
    assert epsilon_delta(plan.event)[0] == 1.0
    # radius=None on the rescaled problem: min(30, max(1, n epsilon / (50 d))) (linear_model/_growth_rules.py)
    for n, eps, radius in ((600, 1.0, 3.0), (100, 0.5, 1.0), (10**6, 1.0, 30.0), (600, 2.0, 6.0)):
        auto = DPGrowthAdaptiveRegressor(epsilon=eps, random_state=0)._plan(n, X.shape[1] + 1, 1)
        assert auto.radius == pytest.approx(radius)



def test_estimate_never_reads_data_before_the_budget_check(releases):
    X, y = _data()
    acc = BudgetAccountant(epsilon=0.5)
    est = DPGrowthAdaptiveRegressor(epsilon=1.0, accountant=acc)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert releases == [] and acc.ledger == () and not hasattr(est, "coef_")


@pytest.mark.parametrize("bad", ["nan y", "inf row_bound", "scale_share", "weights"])
def test_bad_input_is_refused_before_spending(bad, releases):
    X, y = _data()
    acc = BudgetAccountant(**UNLIMITED)
    kw, fit_kw = {}, {}
    if bad == "nan y":
        y = y.copy()
        y[5] = np.nan
    elif bad == "inf row_bound":
        kw = dict(row_bound=float("inf"))
    elif bad == "scale_share":
        kw = dict(scale_share=1.5)
    else:
        fit_kw = dict(sample_weight=np.full(len(y), 2.0))
    with pytest.raises(ValueError):
        DPGrowthAdaptiveRegressor(accountant=acc, **kw).fit(X, y, **fit_kw)
    assert releases == [] and acc.ledger == ()


def test_failure_after_the_release_spends_nothing_and_keeps_the_previous_fit(monkeypatch):
    X, y = _data()
    acc = BudgetAccountant(**UNLIMITED)
    est = DPGrowthAdaptiveRegressor(accountant=acc, random_state=0).fit(X, y)
    before = (est.coef_.copy(), est.row_bound_, len(acc.ledger))

    def broken(self, inputs, plan, rng):
        raise RuntimeError("solver failed")

    monkeypatch.setattr(DPGrowthAdaptiveRegressor, "_draw_problems", broken)
    with pytest.raises(RuntimeError, match="solver failed"):
        est.fit(X * 3.0, y)
    np.testing.assert_array_equal(est.coef_, before[0])
    assert est.row_bound_ == before[1] and len(acc.ledger) == before[2] == 1


def test_huge_rows_and_labels_fit_with_the_planned_event():
    X, y = _data(n=2000)
    Xe, ye = X.copy(), y.copy()
    Xe[0], ye[0] = 1e300, -1e300
    a = DPGrowthAdaptiveRegressor(epsilon=2.0, random_state=3).fit(X, y)
    b = DPGrowthAdaptiveRegressor(epsilon=2.0, random_state=3).fit(Xe, ye)
    assert a.privacy_event_ == b.privacy_event_
    assert np.all(np.isfinite(b.coef_)) and np.isfinite(b.intercept_)
    assert abs(np.log2(a.row_bound_ / b.row_bound_)) <= 0.5  # a median moves by one rank at most


# --------------------------------------------------------------------------- exact sensitivity
def _targets_and_mechanisms(est, n, d):
    scales = est._plan(n, d + int(est.fit_intercept), 1).scales
    return list(zip(scales.targets, scales.mechanisms()))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("row", [0, 17])
def test_each_estimate_reads_one_value_per_row_exact_sensitivity_one(fit_intercept, row):
    """Replacing one row changes ONE value of every estimate's array (same earlier releases), so each
    grid point's utility moves by at most 1 rank — and by exactly 1 on this worst-case pair — and
    every release's law moves by at most ``e^{epsilon_i}`` (exact pmfs)."""
    n, d = 60, 2
    X, y = _data(n=n, d=d)
    Xp, yp = X.copy(), y.copy()
    Xp[row], yp[row] = 1e6, -1e6  # far past every grid point: crosses all of them
    # n epsilon = 60 is below the estimates' rule (intercept-only model): the default share, declared
    k = 3 if fit_intercept else 2
    est = DPGrowthAdaptiveRegressor(epsilon=1.0, fit_intercept=fit_intercept, scale_share=default_scale_share(n, 1.0, k))
    released = {"label_center": 50.0}  # any public earlier release: the same on both sides
    for target, mech in _targets_and_mechanisms(est, n, d):
        if target.signed:
            v, vp = finite(target.values((X, [y]), released)), finite(target.values((Xp, [yp]), released))
        else:
            v = np.abs(finite(target.values((X, [y]), released)))
            vp = np.abs(finite(target.values((Xp, [yp]), released)))
        assert np.count_nonzero(v != vp) == 1
        du = np.abs(np.subtract(mech.utility(v), mech.utility(vp)))
        assert du.max() == 1
        loss = np.abs(np.log(mech.pmf(v)) - np.log(mech.pmf(vp)))
        assert loss.max() <= mech.epsilon * (1 + 1e-9)


def test_row_bound_values_are_the_row_norms():
    X, y = _data(n=50)
    (target, _), *_ = _targets_and_mechanisms(DPGrowthAdaptiveRegressor(scale_share=0.5), 50, 3)
    np.testing.assert_array_equal(target.values((X, [y]), {}), safe_row_norms(X))


# --------------------------------------------------------------------------- audit with a mutant
def _row_bound_scores(X, y, draws, seed):
    out = np.empty(draws)
    for i in range(draws):
        # n epsilon = 100 is below the estimates' rule (zero model): the default share, declared
        est = DPGrowthAdaptiveRegressor(epsilon=1.0, fit_intercept=False, grid_size=33, noise="float",
                                        scale_share=default_scale_share(len(y), 1.0, 2),
                                        random_state=seed + i, accountant=BudgetAccountant())
        out[i] = np.log2(est.fit(X, y).row_bound_)
    return out


def _max_norm_release(original):
    def release(self, data, rng):
        """The mutant: the row unit is the largest row norm ("scale to the data"), not a private median."""
        out, event = original(self, data, rng)
        out["row_bound"] = float(np.max(safe_row_norms(data[0])))
        return out, event

    return release


def test_audit_flags_a_max_norm_row_bound_and_passes_the_private_one(monkeypatch):
    """Worst-case neighbours: D has rows of norm 1; D' replaces one row by a row of norm 1e6.

    The private row unit (a median release) moves by at most one rank: its law on D and D' differs
    by at most ``e^{epsilon_i}`` per output; the max-norm mutant's unit jumps from 1 to 1e6. One
    feature without intercept: the fit's solver is the one-dimensional inverse-sensitivity
    mechanism (fast), the estimates are the row unit and the label unit.
    """
    n = 100
    rng = np.random.default_rng(0)
    X = np.where(rng.random((n, 1)) < 0.5, -1.0, 1.0)
    y = 2.0 * X[:, 0] + 0.1 * rng.standard_normal(n)
    Xp = X.copy()
    Xp[-1] = 1e6
    eps_i = default_scale_share(n, 1.0, 2) / 2  # each of the two estimates' share of epsilon = 1
    draws = 300
    private = audit_epsilon(_row_bound_scores(X, y, draws, 0), _row_bound_scores(Xp, y, draws, 10_000), eps_i)
    assert not private.violation, private
    monkeypatch.setattr(_auto_scales.ScalePlan, "release", _max_norm_release(_auto_scales.ScalePlan.release))
    mutant = audit_epsilon(_row_bound_scores(X, y, draws, 0), _row_bound_scores(Xp, y, draws, 10_000), eps_i)
    assert mutant.violation, mutant
