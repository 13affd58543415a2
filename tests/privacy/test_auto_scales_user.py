"""Privacy of UserLevelDPLogistic's ``data_norm="auto"`` (linear_model/_auto_scales.py,
doc/privacy/quantiles.rst, "Use in the estimators").

The estimate is a private median of ONE value per user (the user's largest row
norm): every test fails if it were charged wrongly, read the data before the
budget check, were spent more than once, leaked into a declared fit, or were
computed from the rows without privacy.
"""

import numpy as np
import pytest

from sklearn_dpsco import UserLevelDPLogistic
from sklearn_dpsco._scale_estimation import per_user_reduce
from sklearn_dpsco._solvers import safe_row_norms
from sklearn_dpsco.accounting import BudgetAccountant, BudgetExceededError, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.linear_model import _auto_scales
from sklearn_dpsco.linear_model._auto_scales import DATA_NORM_MARGIN, default_scale_share
from sklearn_dpsco.testing import audit_epsilon


def _panel(n_users=300, m=5, d=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = scale * rng.standard_normal((n_users * m, d))
    y = (X[:, 0] + 0.3 * scale * rng.standard_normal(n_users * m) > 0).astype(int)
    groups = np.repeat(np.arange(n_users), m)
    return X, y, groups


CASES = [
    ("binary", dict(), 1),
    ("ovr", dict(solver="user_clip"), 3),
    ("sgd float", dict(solver="user_dp_sgd", noise="float", sgd_iterations=5), 1),
    ("sgd secure", dict(solver="user_dp_sgd", noise="secure", sgd_iterations=5), 1),
    ("no intercept", dict(fit_intercept=False), 1),
]


@pytest.mark.parametrize("name,params,k", CASES, ids=[c[0] for c in CASES])
def test_auto_event_is_the_planned_composition_spent_once(name, params, k):
    X, y, groups = _panel()
    if k == 3:
        y = np.digitize(X[:, 1], [-0.4, 0.4])
    n_users = np.unique(groups).size
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    # column_scaling=False: the estimate alone (with nothing declared and few users the column magnitudes would
    # run first and compose their event: tests/privacy/test_column_magnitudes_user.py)
    est = UserLevelDPLogistic(epsilon=1.0, data_norm="auto", accountant=acc, random_state=0, column_scaling=False,
                              **params)
    n_coef = X.shape[1] + (1 if est.fit_intercept else 0)
    plan = est._plan(n_users, n_coef, k)  # public facts only: no data
    solver_event = plan.event if k == 1 else ComposedEvent(tuple([plan.event] * k))
    assert plan.scales is not None and [t.name for t in plan.scales.targets] == ["data_norm"]
    share = default_scale_share(n_users, 1.0, 1)  # n is the public number of USERS
    assert plan.scales.budget.epsilon == pytest.approx(share)
    assert plan.scales.event == PureDPEvent(share)
    # the solver runs at unit scale: features of norm <= 1 next to the intercept column
    assert plan.attributes["data_norm_"] == pytest.approx(np.hypot(1.0, 1.0 if est.fit_intercept else 0.0))
    est.fit(X, y, groups)
    assert est.privacy_event_ == ComposedEvent((plan.scales.event, solver_event))
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    assert acc.ledger[0].privacy_unit == "user"
    eps, delta = epsilon_delta(est.privacy_event_, delta=est.delta)
    assert eps <= 1.0 and delta <= est.delta * (1 + 1e-9)
    # the solver's share is filled so that the whole fit certifies exactly epsilon, never more
    assert est.epsilon_spent_ <= 1.0 and est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9)
    for info in est.fit_info_:
        assert info["scale_share"] == pytest.approx(share)
        assert info["data_norm"] == est.data_norm_ == info["scale_estimates"]["data_norm"]
    assert est.data_norm_ > 0 and np.isfinite(est.coef_).all()


def test_estimate_reads_one_value_per_user(monkeypatch):
    # the values released are the users' largest row norms (one per user, ordered by user id)
    X, y, groups = _panel(n_users=120, m=4)
    seen = []
    original = _auto_scales.ScalePlan.release

    def spy(self, data, rng):
        seen.append(np.asarray(self.targets[0].values(data, {})))
        return original(self, data, rng)

    monkeypatch.setattr(_auto_scales.ScalePlan, "release", spy)
    UserLevelDPLogistic(data_norm="auto", random_state=0).fit(X, y, groups)
    assert len(seen) == 1 and seen[0].shape == (120,)
    np.testing.assert_array_equal(seen[0], per_user_reduce(safe_row_norms(X), groups, "max"))


def test_planned_event_does_not_depend_on_the_data():
    a, b = _panel(seed=1), _panel(seed=2, scale=1e4)
    # column_scaling=False: the column magnitudes would map both to the same units first
    ea = UserLevelDPLogistic(data_norm="auto", random_state=0, column_scaling=False).fit(*a)
    eb = UserLevelDPLogistic(data_norm="auto", random_state=0, column_scaling=False).fit(*b)
    assert ea.privacy_event_ == eb.privacy_event_ and ea.solver_ == eb.solver_
    assert eb.data_norm_ > 100 * ea.data_norm_  # the scale follows the data, the event does not


def test_declared_data_norm_spends_nothing_on_estimation(monkeypatch):
    calls = []
    monkeypatch.setattr(_auto_scales.ScalePlan, "release", lambda *a, **k: calls.append(1))
    X, y, groups = _panel()
    a = UserLevelDPLogistic(data_norm=2.0, random_state=0).fit(X, y, groups)
    b = UserLevelDPLogistic(data_norm=2.0, scale_share=0.4, random_state=0).fit(X, y, groups)
    assert calls == []
    assert a.privacy_event_ == b.privacy_event_
    assert a._plan(300, X.shape[1] + 1, 1).scales is None
    assert "scale_estimates" not in a.fit_info_[0]
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.data_norm_ == 2.0


def test_declared_default_unchanged():
    # data_norm=None (the default) is the declared 1.0 where the columns are not rescaled (too few users for
    # the quartiles), and runs exactly the former plan (bound 1, whole budget) when the fit does not centre
    # its features (centred fits: tests/privacy/test_centering_user.py) nor its column magnitudes
    # (column_scaling=False; tests/privacy/test_column_magnitudes_user.py)
    X, y, groups = _panel()
    est = UserLevelDPLogistic(random_state=0, centering=False, column_scaling=False)
    assert est.data_norm is None
    est.fit(X, y, groups)
    assert est.column_scale_ is None
    plan = est._plan(300, X.shape[1] + 1, 1)
    assert plan.scales is None and plan.attributes["data_norm_"] == 1.0
    assert est.data_norm_ == 1.0 and est.privacy_event_ == plan.event  # the solver alone, whole budget
    declared = UserLevelDPLogistic(random_state=0, centering=False, column_scaling=False,
                                   data_norm=1.0).fit(X, y, groups)
    np.testing.assert_array_equal(declared.coef_, est.coef_)
    assert declared.privacy_event_ == est.privacy_event_


@pytest.mark.parametrize("setting", [None, "auto"])
def test_default_data_norm_follows_the_column_scaling(setting):
    # data_norm=None: "auto" exactly when the column quartiles run (a public rule: n_users, d, epsilon, the
    # rows' format), the same fit as data_norm="auto" there; a declared number never rescales the columns
    rng = np.random.default_rng(5)
    n_users, m, d = 3000, 3, 4
    X = rng.standard_normal((n_users * m, d)) * np.array([1.0, 100.0, 1.0, 5.0]) + np.array([0, 1980.0, 0, 0])
    y = (X[:, 0] + (X[:, 1] - 1980.0) / 100.0 > 0).astype(int)
    groups = np.repeat(np.arange(n_users), m)
    kw = dict(epsilon=1.0, delta=1e-6, random_state=2, accountant=BudgetAccountant(float("inf"), 1.0))
    default = UserLevelDPLogistic(**kw).fit(X, y, groups)
    auto = UserLevelDPLogistic(data_norm="auto", **kw).fit(X, y, groups)
    assert default.column_scale_ is not None and "scale_estimates" in default.fit_info_[0]
    np.testing.assert_array_equal(default.coef_, auto.coef_)
    assert default.privacy_event_ == auto.privacy_event_ and default.data_norm_ == auto.data_norm_
    # too few users for the quartiles (or column_scaling off): the declared default bound
    small = UserLevelDPLogistic(data_norm=setting, column_scaling=False, **kw).fit(X, y, groups)
    if setting is None:
        assert small.data_norm_ == 1.0 and "scale_estimates" not in small.fit_info_[0]
    declared = UserLevelDPLogistic(data_norm=1.0, **kw).fit(X, y, groups)
    assert declared.data_norm_ == 1.0 and "column_scaling" not in declared.fit_info_[0]



def test_estimate_never_reads_data_before_the_budget_check(releases):
    X, y, groups = _panel()
    acc = BudgetAccountant(epsilon=0.5, delta=1e-3)
    est = UserLevelDPLogistic(epsilon=1.0, data_norm="auto", accountant=acc)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y, groups)
    assert releases == [] and acc.ledger == ()
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("bad", ["nan", "scale_share", "groups", "data_norm", "solver"])
def test_bad_input_errors_before_spending(bad, releases):
    X, y, groups = _panel()
    acc = BudgetAccountant(epsilon=5.0, delta=1e-3)
    est = UserLevelDPLogistic(data_norm="auto", accountant=acc)
    if bad == "nan":
        X = X.copy()
        X[3, 1] = np.nan
        with pytest.raises(ValueError):
            est.fit(X, y, groups)
    elif bad == "scale_share":
        with pytest.raises(ValueError, match="scale_share"):
            est.set_params(scale_share=1.5).fit(X, y, groups)
    elif bad == "groups":
        with pytest.raises(ValueError):
            est.fit(X, y, groups[:-1])
    elif bad == "data_norm":
        with pytest.raises(ValueError, match="data_norm"):
            est.set_params(data_norm="max").fit(X, y, groups)
    else:  # too few users for the deletion mechanism: refused from public facts
        few = groups < 6
        with pytest.raises(ValueError):
            est.set_params(solver="sc_output_pert").fit(X[few], y[few], groups[few])
    assert releases == [] and acc.ledger == ()


def test_a_huge_user_is_clipped_and_coefficients_mapped_back():
    X, y, groups = _panel(n_users=400)
    Xe = X.copy()
    Xe[groups == 0] = 1e12
    # the data-norm estimate alone (column scaling would run at 400 users, epsilon 4, d = 3)
    a = UserLevelDPLogistic(epsilon=4.0, data_norm="auto", column_scaling=False, random_state=3).fit(X, y, groups)
    b = UserLevelDPLogistic(epsilon=4.0, data_norm="auto", column_scaling=False, random_state=3).fit(Xe, y, groups)
    assert np.all(np.isfinite(b.coef_)) and np.all(np.isfinite(b.intercept_))
    assert abs(np.log2(a.data_norm_ / b.data_norm_)) <= 0.5  # a median moves by at most one rank
    # the rows were divided by data_norm_: coefficients are in the data's units
    assert a.score(X, y) > 0.75
    # alpha_ in the data's units: the unit-scale alpha' times data_norm_^2 (w = w' / data_norm_)
    unit_alpha = a._plan(400, X.shape[1] + 1, 1).attributes["alpha_"]
    assert a.alpha_ == pytest.approx(unit_alpha * a.data_norm_**2)


# --------------------------------------------------------------------------- audit with a mutant
def _norm_scores(X, y, groups, draws, seed):
    out = np.empty(draws)
    for i in range(draws):
        est = UserLevelDPLogistic(epsilon=1.0, solver="user_clip", noise="float", data_norm="auto",
                                  random_state=seed + i)
        out[i] = np.log2(est.fit(X, y, groups).data_norm_)
    return out


def _max_norm_release(self, data, rng):
    """The mutant: a non-private data norm, the largest row norm of all users."""
    return {"data_norm": DATA_NORM_MARGIN * float(np.max(safe_row_norms(data[0])))}, self.event


def test_audit_flags_a_max_norm_data_norm_and_passes_the_private_one(monkeypatch):
    """Worst-case user neighbours: every row of D has norm 1; D' replaces ALL rows of one user by rows
    of norm 1e6. The private estimate reads that user's one reduced value: its law moves by at most
    ``e^{epsilon_s}``; the max-norm mutant jumps by a factor 1e6."""
    rng = np.random.default_rng(0)
    n_users, m, d = 100, 3, 2
    X = rng.standard_normal((n_users * m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    groups = np.repeat(np.arange(n_users), m)
    Xp = X.copy()
    Xp[groups == n_users - 1] = [1e6, 0.0]
    eps_s = default_scale_share(n_users, 1.0, 1)
    draws = 200
    private = audit_epsilon(_norm_scores(X, y, groups, draws, 0), _norm_scores(Xp, y, groups, draws, 10_000), eps_s)
    assert not private.violation, private
    monkeypatch.setattr(_auto_scales.ScalePlan, "release", _max_norm_release)
    mutant = audit_epsilon(_norm_scores(X, y, groups, draws, 0), _norm_scores(Xp, y, groups, draws, 10_000), eps_s)
    assert mutant.violation, mutant


def test_per_user_reduce_against_a_dictionary():
    # one value per user, users in increasing identifier order (the estimator reduces with its own user
    # index, per_user_reduce with a fresh one): checked against a plain dictionary of each user's values
    rng = np.random.default_rng(9)
    for groups in (np.repeat(np.arange(50), 3), rng.integers(0, 40, 300), rng.permutation(np.repeat([7, -2, 90], 5)),
                   np.array(["b", "a", "b", "c"] * 10)):
        values = rng.standard_normal(len(groups)) * 10.0
        values[::7] = np.inf
        by_user = {}
        for g, v in zip(groups.tolist(), values.tolist()):
            by_user.setdefault(g, []).append(v)
        for reduce, fn in (("max", max), ("min", min)):
            expected = np.array([fn(by_user[g]) for g in sorted(by_user)])
            np.testing.assert_array_equal(per_user_reduce(values, groups, reduce), expected)
