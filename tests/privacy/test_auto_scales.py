"""Privacy of the "auto" scales (linear_model/_auto_scales.py, doc/privacy/quantiles.rst, "Use in the estimators").

Every test here fails if the estimates were charged wrongly, read the data
before the budget check, were spent more than once, leaked into a declared
fit, or were computed without privacy (the max-norm mutant of the audit).
"""

import numpy as np
import pytest

from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco._solvers import safe_row_norms
from sklearn_dpsco.accounting import BudgetAccountant, BudgetExceededError, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.linear_model import _auto_scales
from sklearn_dpsco.linear_model._auto_scales import default_scale_share
from sklearn_dpsco.testing import audit_epsilon


def _data(n=600, d=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = scale * rng.standard_normal((n, d))
    y_cls = (X[:, 0] + 0.3 * scale * rng.standard_normal(n) > 0).astype(int)
    y_reg = 50.0 + X @ np.linspace(1.0, -0.5, d) + 0.1 * scale * rng.standard_normal(n)
    return X, y_cls, y_reg


def _auto_cases():
    X, y_cls, y_reg = _data()
    three = np.digitize(X[:, 1], [-0.4, 0.4])
    return [
        ("hinge binary", DPHingeClassifier(epsilon=1.0, random_state=0), (X, y_cls), 1, 1),
        ("hinge ovr", DPHingeClassifier(epsilon=1.0, solver="output_perturbation", random_state=0), (X, three), 3, 1),
        ("hinge delta", DPHingeClassifier(epsilon=1.0, delta=1e-6, random_state=0), (X, y_cls), 1, 1),
        ("linear", DPLinearRegressor(epsilon=1.0, random_state=0), (X, y_reg), 1, 3),
        ("linear delta", DPLinearRegressor(epsilon=1.0, delta=1e-6, random_state=0), (X, y_reg), 1, 3),
        ("linear rows only", DPLinearRegressor(epsilon=1.0, label_bound=100.0, random_state=0), (X, y_reg), 1, 1),
    ]


CASES = _auto_cases()


@pytest.mark.parametrize("name,est,args,k,n_estimates", CASES, ids=[c[0] for c in CASES])
def test_auto_event_is_the_planned_composition_spent_once(name, est, args, k, n_estimates):
    X = args[0]
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est.set_params(accountant=acc)
    plan = est._plan(X.shape[0], X.shape[1] + 1, k)  # public facts only: no data
    solver_event = plan.event if k == 1 else ComposedEvent(tuple([plan.event] * k))
    assert plan.scales is not None and len(plan.scales.targets) == n_estimates
    share = default_scale_share(X.shape[0], 1.0, n_estimates)
    assert plan.scales.budget.epsilon == pytest.approx(share)
    per = PureDPEvent(plan.scales.budget.epsilon / n_estimates)
    assert plan.scales.event == (per if n_estimates == 1 else ComposedEvent(tuple([per] * n_estimates)))
    est.fit(*args)
    assert est.privacy_event_ == ComposedEvent((plan.scales.event, solver_event))
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    eps, delta = epsilon_delta(est.privacy_event_, delta=est.delta if est.delta > 0 else None)
    assert eps <= 1.0 * (1 + 1e-9) and delta <= est.delta * (1 + 1e-9)
    if est.delta == 0:
        assert est.epsilon_spent_ == pytest.approx(1.0)  # pure parts add up to the user's epsilon
    else:
        assert est.epsilon_spent_ >= 0.95  # the composition of a pure and a zCDP part certifies a bit less
    info = est.fit_info_[0] if isinstance(est.fit_info_, list) else est.fit_info_
    assert info["scale_share"] == pytest.approx(share)
    assert set(info["scale_estimates"]) == {t.name for t in plan.scales.targets}


def test_planned_event_does_not_depend_on_the_data():
    a, b = _data(seed=1), _data(seed=2, scale=1e4)
    for make in (lambda: DPHingeClassifier(epsilon=1.0, random_state=0), lambda: DPLinearRegressor(random_state=0)):
        ea = make().fit(a[0], a[1] if isinstance(make(), DPHingeClassifier) else a[2])
        eb = make().fit(b[0], b[1] if isinstance(make(), DPHingeClassifier) else b[2])
        assert ea.privacy_event_ == eb.privacy_event_
        assert ea.solver_ == eb.solver_


def test_declared_scales_spend_nothing_on_estimation(monkeypatch):
    calls = []
    monkeypatch.setattr(_auto_scales.ScalePlan, "release", lambda *a, **k: calls.append(1))
    X, y_cls, y_reg = _data()
    h1 = DPHingeClassifier(clip=2.0, random_state=0).fit(X, y_cls)
    h2 = DPHingeClassifier(clip=2.0, scale_share=0.4, random_state=0).fit(X, y_cls)
    r1 = DPLinearRegressor(row_bound=3.0, label_bound=60.0, random_state=0).fit(X, y_reg)
    r2 = DPLinearRegressor(row_bound=3.0, label_bound=60.0, scale_share=0.4, random_state=0).fit(X, y_reg)
    assert calls == []
    for a, b in ((h1, h2), (r1, r2)):
        assert a.privacy_event_ == b.privacy_event_
        assert a._plan(X.shape[0], X.shape[1] + 1, 1).scales is None
        info = a.fit_info_[0] if isinstance(a.fit_info_, list) else a.fit_info_
        assert "scale_estimates" not in info
        np.testing.assert_array_equal(a.coef_, b.coef_)
    assert h1.clip_ == 2.0 and r1.row_bound_ == 3.0 and r1.label_bound_ == 60.0


@pytest.fixture
def releases(monkeypatch):
    """Records every scale release (the only place an estimate reads the data)."""
    seen = []
    original = _auto_scales.ScalePlan.release

    def spy(self, data, rng):
        seen.append(len(self.targets))
        return original(self, data, rng)

    monkeypatch.setattr(_auto_scales.ScalePlan, "release", spy)
    return seen


@pytest.mark.parametrize("make", [lambda acc: DPHingeClassifier(epsilon=1.0, accountant=acc),
                                  lambda acc: DPLinearRegressor(epsilon=1.0, accountant=acc)])
def test_estimate_never_reads_data_before_the_budget_check(make, releases):
    X, y_cls, y_reg = _data()
    acc = BudgetAccountant(epsilon=0.5)
    est = make(acc)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y_cls if isinstance(est, DPHingeClassifier) else y_reg)
    assert releases == [] and acc.ledger == ()
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("bad", ["nan", "scale_share", "stream"])
def test_bad_input_errors_before_spending(bad, releases):
    X, y_cls, y_reg = _data()
    acc = BudgetAccountant(epsilon=5.0)
    if bad == "nan":
        X = X.copy()
        X[3, 1] = np.nan
        with pytest.raises(ValueError):
            DPHingeClassifier(accountant=acc).fit(X, y_cls)
    elif bad == "scale_share":
        with pytest.raises(ValueError, match="scale_share"):
            DPLinearRegressor(scale_share=1.5, accountant=acc).fit(X, y_reg)
    else:
        with pytest.raises(ValueError, match="fit_stream reads the rows once"):
            DPLinearRegressor(accountant=acc).fit_stream(X, y_reg)
    assert releases == [] and acc.ledger == ()


def test_rows_above_the_estimate_are_clipped_and_coefficients_mapped_back():
    # one huge row cannot move the fit more than a row at the estimated bound: the estimate is a
    # median, the rescaled huge row is clipped by the solver's own path (AdaSSP's row bound 1)
    X, _, y = _data(n=2000)
    Xe, ye = X.copy(), y.copy()
    Xe[0], ye[0] = 1e12, -1e12
    a = DPLinearRegressor(epsilon=4.0, random_state=3).fit(X, y)
    b = DPLinearRegressor(epsilon=4.0, random_state=3).fit(Xe, ye)
    assert np.all(np.isfinite(b.coef_)) and np.isfinite(b.intercept_)
    assert a.row_bound_ == b.row_bound_ or abs(np.log2(a.row_bound_ / b.row_bound_)) <= 0.5
    # predictions are in the labels' units (the map back multiplies by label_bound_ / row_bound_)
    assert abs(np.mean(a.predict(X)) - np.mean(y)) < 0.2 * np.std(y) + 1.0


# --------------------------------------------------------------------------- audit with a mutant
def _clip_scores(X, y, draws, seed):
    out = np.empty(draws)
    for i in range(draws):
        est = DPHingeClassifier(epsilon=1.0, solver="output_perturbation", noise="float", random_state=seed + i)
        out[i] = np.log2(est.fit(X, y).clip_)
    return out


def _max_norm_release(self, data, rng):
    """The mutant: a non-private clip level, the largest row norm (what "clip to the data" would do)."""
    return {"clip": float(np.max(safe_row_norms(data[0])))}, self.event


def test_audit_flags_a_max_norm_clip_and_passes_the_private_one(monkeypatch):
    """Worst-case neighbours: D has rows of norm 1; D' replaces one row by a row of norm 1e6.

    The private clip (a median release) moves by at most one rank: its law on D and D' differs by
    at most ``e^{epsilon_s}`` per output; the max-norm mutant's clip jumps from 1 to 1e6.
    """
    rng = np.random.default_rng(0)
    n, d = 100, 2
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    Xp = X.copy()
    Xp[-1] = [1e6, 0.0]
    eps_s = default_scale_share(n, 1.0, 1) * 1.0  # the scale estimate's share of epsilon = 1
    draws = 300
    private = audit_epsilon(_clip_scores(X, y, draws, 0), _clip_scores(Xp, y, draws, 10_000), eps_s)
    assert not private.violation, private
    monkeypatch.setattr(_auto_scales.ScalePlan, "release", _max_norm_release)
    mutant = audit_epsilon(_clip_scores(X, y, draws, 0), _clip_scores(Xp, y, draws, 10_000), eps_s)
    assert mutant.violation, mutant
