"""UserLevelDPLogistic: scikit-learn conformance, bad inputs, budget, coupling, user grouping.

``parametrize_with_checks`` calls ``fit(X, y)``; the estimator requires ``groups``. The checks run
on a test-only subclass that makes every row its own user when ``groups`` is omitted (the real
estimator refuses), at a large epsilon so accuracy checks see the model, not the noise. Solvers
with a minimum number of users (phased_sco, phased_erm, two-step) refuse sklearn's 10-30-row
datasets by design and are covered by the other tests.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._solvers._core._user_data import make_user_data
from sklearn_dpsco.accounting import (
    BudgetAccountant,
    BudgetExceededError,
    ComposedEvent,
    SelfComposedEvent,
    ZCDPEvent,
    epsilon_delta,
)
from sklearn_dpsco.linear_model import UserLevelDPLogistic
from sklearn_dpsco.linear_model._user_logistic_rules import default_sgd_iterations, prefers_dp_sgd
from sklearn_dpsco.testing import estimator_for_checks, expected_failed_checks, parametrize_with_checks


# fit needs groups; the checks run on the rows-as-users test subclass (sklearn_dpsco.testing.GROUPS_REQUIRED)
@parametrize_with_checks(
    [
        estimator_for_checks(UserLevelDPLogistic(epsilon=1e4, delta=1e-3, random_state=0)),
        estimator_for_checks(UserLevelDPLogistic(epsilon=1e4, delta=1e-3, random_state=0, solver="sc_output_pert", alpha=0.01)),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


def _grouped(n_users, m, d=4, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n_classes, d))
    X = rng.standard_normal((n_users * m, d)) / np.sqrt(d)
    if n_classes == 2:
        y = (rng.random(n_users * m) < 1 / (1 + np.exp(-3 * X @ W[0]))).astype(int)
    else:
        y = np.argmax(X @ W.T + rng.gumbel(size=(n_users * m, n_classes)), axis=1)
    groups = np.repeat(np.arange(n_users) * 7 + 3, m)  # arbitrary labels
    return X, y, groups


def _neighbour(X, y, groups, seed=1):
    """Replace one user's whole block (rows, labels, even its row count) by adversarial rows."""
    victim = groups[0]
    keep = groups != victim
    k = 7
    Xn = np.tile(50.0 * np.eye(X.shape[1])[0], (k, 1))
    yn = np.full(k, y[0])
    return (np.vstack([X[keep], Xn]), np.concatenate([y[keep], yn]),
            np.concatenate([groups[keep], np.full(k, victim)]))


# --------------------------------------------------------------------------- bad inputs, refusals
def _noise(solver):
    """Every solver, user-level DP-GD included, runs on the default secure path."""
    return "secure"


def _fresh_accountant():
    return BudgetAccountant(10.0, 1e-2)


def test_groups_are_required():
    X, y, _ = _grouped(50, 2)
    acc = _fresh_accountant()
    with pytest.raises(ValueError, match="requires groups"):
        UserLevelDPLogistic(accountant=acc, solver="user_dp_sgd", noise="float").fit(X, y)
    assert len(acc.ledger) == 0


def test_groups_given_to_a_sklearn_search_only_reach_the_splitter_and_the_refusal_says_how_to_route_them():
    # GridSearchCV(...).fit(X, y, groups=g) / cross_validate(..., groups=g) hand g to the splitter, never to
    # fit: the refusal used to say only "requires groups", which the user had just passed
    from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate

    X, y, groups = _grouped(60, 3)
    acc = _fresh_accountant()
    est = UserLevelDPLogistic(accountant=acc, random_state=0)
    with pytest.raises(ValueError, match=r"requires groups.*splitter only.*params=\{'groups': groups\}"):
        GridSearchCV(est, {"alpha": [0.1, 1.0]}, cv=GroupKFold(2), error_score="raise").fit(X, y, groups=groups)
    assert len(acc.ledger) == 0
    # the advice works
    cross_validate(est, X, y, groups=groups, params={"groups": groups}, cv=GroupKFold(2), error_score="raise")
    assert len(acc.ledger) == 2


@pytest.mark.parametrize(
    "params, mutate, match",
    [
        ({}, lambda X, y, g: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y, g), "NaN"),
        ({}, lambda X, y, g: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), y, g), "infinity"),
        ({}, lambda X, y, g: (X, y, g[:-1]), "groups must have shape"),
        ({}, lambda X, y, g: (X, y, np.where(np.arange(g.size) == 2, np.nan, g.astype(float))), "groups must not"),
        ({}, lambda X, y, g: (X, np.zeros_like(y), g), "at least 2 classes"),
        ({"epsilon": 0.0}, None, "epsilon"),
        ({"epsilon": np.inf}, None, "epsilon"),
        ({"delta": 0.0}, None, "delta > 0"),
        ({"delta": 1.0}, None, "delta"),
        ({"max_items_per_user": 0}, None, "max_items_per_user"),
        ({"data_norm": -1.0}, None, "data_norm"),
        ({"solver": "sc_output_pert", "epsilon": 1.0, "delta": 1e-6}, None, "at least .* users"),
        ({"solver": "phased_erm", "epsilon": 1.0, "delta": 1e-6}, None, "at least .* users"),
        ({"solver": "sc_output_pert", "deletion_test": "exhaustive", "epsilon": 8.0, "delta": 1e-2}, None,
         "max_exhaustive_solves"),
    ],
)
def test_bad_input_raises_before_spending(params, mutate, match):
    X, y, g = _grouped(60, 3)
    if mutate is not None:
        X, y, g = mutate(X, y, g)
    acc = _fresh_accountant()
    est = UserLevelDPLogistic(accountant=acc, random_state=0, **{"solver": "user_dp_sgd", "noise": "float", **params})
    with pytest.raises(ValueError, match=match):
        est.fit(X, y, g)
    assert len(acc.ledger) == 0
    assert not hasattr(est, "coef_")


def test_budget_exhausted_spends_nothing_and_keeps_the_fitted_model():
    X, y, g = _grouped(60, 3)
    acc = BudgetAccountant(1.1, 1e-5)
    est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, accountant=acc, random_state=0, solver="user_dp_sgd", noise="float")
    est.fit(X, y, g)
    coef = est.coef_.copy()
    with pytest.raises(BudgetExceededError):
        est.fit(X, y, g)
    assert len(acc.ledger) == 1
    np.testing.assert_array_equal(est.coef_, coef)


def test_error_messages_carry_no_data():
    X, y, g = _grouped(60, 3, seed=4)
    for solver in ("sc_output_pert", "phased_sco", "sc_sco_two_step"):
        with pytest.raises(ValueError) as err:
            UserLevelDPLogistic(solver=solver, accountant=_fresh_accountant()).fit(X, y, g)
        msg = str(err.value)
        # only public numbers: the user count (or a half of it, for the split solver), the budget,
        # the required minimum
        assert "got 60" in msg or "got 30" in msg, msg


# --------------------------------------------------------------------------- budget and outputs
@pytest.mark.parametrize("solver", ["sc_output_pert", "phased_sco", "sc_sco_two_step", "user_dp_sgd", "item_group",
                                    "phased_erm", "sc_erm_two_step", "user_clip"])
def test_fit_spends_the_budget_once(solver):
    X, y, g = _grouped(700, 2, seed=2)
    acc = BudgetAccountant(20.0, 0.1)
    # centering=False: the radius check below reads the solver's own units (a centred fit folds its shift
    # into intercept_; tests/privacy/test_centering_user.py)
    est = UserLevelDPLogistic(epsilon=8.0, delta=1e-2, solver=solver, accountant=acc, random_state=3,
                              noise=_noise(solver), centering=False)
    est.fit(X, y, g)
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    eps, delta = epsilon_delta(est.privacy_event_, delta=1e-2)
    assert eps <= 8.0 * (1 + 1e-9) and delta <= 1e-2
    assert est.solver_ == solver and est.n_users_ == 700
    assert est.coef_.shape == (1, 4) and est.intercept_.shape == (1,)
    # the radius holds in the units the fit ran in: rows X / c (c = a quarter of the declared bound), so the
    # coefficients c * coef_ and the intercept (intercept_scaling = 1) lie in the ball of radius `radius`
    c = est.data_norm_ / 4.0
    assert np.linalg.norm(np.append(c * est.coef_[0], est.intercept_[0])) <= est.radius + 1e-9
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(est.predict(X)) <= {0, 1}
    assert est.decision_function(X).shape == (X.shape[0],)
    assert 0.0 <= est.score(X, y) <= 1.0


def test_multiclass_one_vs_rest_splits_the_budget():
    X, y, g = _grouped(300, 3, n_classes=3, seed=5)
    acc = BudgetAccountant(10.0, 1e-3)
    est = UserLevelDPLogistic(epsilon=3.0, delta=1e-5, solver="item_group", accountant=acc, random_state=0)
    est.fit(X, y, g)
    assert isinstance(est.privacy_event_, ComposedEvent) and len(est.privacy_event_.events) == 3
    part = est.privacy_event_.events[0]
    assert part.epsilon == pytest.approx(1.0) and part.delta <= 1e-5 / 3
    assert est.coef_.shape == (3, 4)
    np.testing.assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)
    sgd = UserLevelDPLogistic(epsilon=3.0, delta=1e-5, solver="user_dp_sgd", noise="float", random_state=0).fit(X, y, g)
    assert epsilon_delta(sgd.privacy_event_, delta=1e-5)[0] == pytest.approx(3.0, rel=1e-6)  # Gaussian split


@pytest.mark.parametrize("solver", ["item_group", "user_dp_sgd", "sc_output_pert", "user_clip"])
def test_results_do_not_depend_on_n_jobs(solver):
    X, y, g = _grouped(400, 2, n_classes=3, seed=6)
    kw = dict(epsilon=30.0, delta=1e-2, solver=solver, random_state=11, noise=_noise(solver))
    a = UserLevelDPLogistic(n_jobs=1, **kw).fit(X, y, g)
    b = UserLevelDPLogistic(n_jobs=2, **kw).fit(X, y, g)
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("solver", ["sc_output_pert", "user_dp_sgd", "item_group", "user_clip"])
def test_sparse_equals_dense(solver):
    X, y, g = _grouped(300, 2, seed=7)
    # centering=False, column_scaling=False: "auto" centres / rescales dense rows only (sparse rows would be
    # densified), and the default data_norm follows the column scaling
    kw = dict(epsilon=30.0, delta=1e-2, solver=solver, random_state=1, noise=_noise(solver), centering=False,
              column_scaling=False)
    a = UserLevelDPLogistic(**kw).fit(X, y, g)
    b = UserLevelDPLogistic(**kw).fit(sp.csr_matrix(X), y, g)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)


def test_pandas_input_and_string_groups():
    pd = pytest.importorskip("pandas")
    X, y, g = _grouped(200, 2, seed=8)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)])
    groups = pd.Series([f"user-{v}" for v in g])
    est = UserLevelDPLogistic(epsilon=5.0, delta=1e-3, solver="user_dp_sgd", noise="float", random_state=0).fit(df, y, groups)
    assert list(est.feature_names_in_) == list(df.columns) and est.n_users_ == 200


# --------------------------------------------------------------------------- coupling
@pytest.mark.parametrize("solver", ["sc_output_pert", "phased_sco", "sc_sco_two_step", "user_dp_sgd", "item_group",
                                    "user_clip"])
def test_coupling_neighbours_differ_only_in_private_outputs(solver):
    """User-level neighbours (one user's block replaced, with a different row count) fitted with the
    same seed: every public attribute, the event and the (absence of) warnings coincide."""
    X, y, g = _grouped(700, 3, seed=9)
    Xp, yp, gp = _neighbour(X, y, g)
    fits = []
    for data in ((X, y, g), (Xp, yp, gp)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = UserLevelDPLogistic(epsilon=8.0, delta=1e-2, solver=solver, random_state=5,
                                      noise=_noise(solver)).fit(*data)
        fits.append((est, [str(w.message) for w in caught]))
    (a, wa), (b, wb) = fits
    assert wa == wb == []
    for attr in ("solver_", "privacy_event_", "epsilon_spent_", "delta_spent_", "n_users_", "fit_info_",
                 "noise_source_"):
        assert getattr(a, attr) == getattr(b, attr), attr
    np.testing.assert_array_equal(a.classes_, b.classes_)
    assert a.coef_.shape == b.coef_.shape
    assert not np.array_equal(a.coef_, b.coef_)


def test_auto_choice_follows_the_public_rule_then_the_noise_proxy():
    """n_users / u >= 20: user_dp_sgd for every m (the panel rule). Below it the noise proxy: at 200
    users user_clip for m >= 10. The same on both noise paths (both secure Gaussians pay zCDP)."""
    for noise in ("float", "secure"):
        for m in (1, 10, 100):
            kw = dict(epsilon=1.0, delta=1e-6, max_items_per_user=m, data_norm=1.5, noise=noise)
            assert UserLevelDPLogistic(**kw)._plan(1000, 11, 1).solver == "user_dp_sgd"
            if m > 1:
                assert UserLevelDPLogistic(**kw)._plan(200, 11, 1).solver == "user_clip"
    assert prefers_dp_sgd(1000, 11, 1.0, 1e-6) and not prefers_dp_sgd(200, 11, 1.0, 1e-6)


def test_dp_sgd_on_the_secure_path_spends_a_zcdp_event_within_budget():
    X, y, g = _grouped(60, 3)
    acc = _fresh_accountant()
    est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, solver="user_dp_sgd", accountant=acc, random_state=0,
                              centering=False, column_scaling=False)  # the solver's event alone (centred: tests/privacy/test_centering_user.py)
    est.fit(X, y, g)
    event = est.privacy_event_
    assert isinstance(event, SelfComposedEvent) and isinstance(event.event, ZCDPEvent)
    assert event.count == est.sgd_iterations_ == default_sgd_iterations(60, 10, 5, 1.0, 1e-6)
    assert est.epsilon_spent_ <= 1.0 and est.delta_spent_ <= 1e-6
    assert len(acc.ledger) == 1


def test_auto_choice_uses_public_facts_only():
    X, y, g = _grouped(700, 3, seed=10)
    Xp, yp, gp = _neighbour(X, y, g)
    a = UserLevelDPLogistic(epsilon=8.0, delta=1e-2, random_state=0).fit(X, y, g)
    b = UserLevelDPLogistic(epsilon=8.0, delta=1e-2, random_state=0).fit(Xp, yp, gp)
    assert a.solver_ == b.solver_


# --------------------------------------------------------------------------- grouping and the cap
def test_cap_keeps_first_rows_in_input_order_and_scales_rows():
    X = np.arange(24, dtype=float).reshape(12, 2)
    y = np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    groups = np.array([5, 1, 5, 1, 5, 5, 9, 1, 5, 9, 1, 1])
    data = make_user_data(X, y, groups, max_items=3, data_norm=4.0)
    # users sorted by label: 1 -> rows 1, 3, 7 (first three of 1,3,7,10,11); 5 -> 0, 2, 4; 9 -> 6, 9
    np.testing.assert_array_equal(data.source_rows, [1, 3, 7, 0, 2, 4, 6, 9])
    np.testing.assert_array_equal(data.indptr, [0, 3, 6, 8])
    norms = np.linalg.norm(data.X, axis=1)
    assert np.all(norms <= 4.0)
    raw = np.linalg.norm(X[data.source_rows], axis=1)
    np.testing.assert_allclose(data.X, X[data.source_rows] * np.minimum(1, 4.0 / raw)[:, None] * (
        np.where(raw > 4.0, 1 - 4e-16, 1.0)[:, None]))


def test_random_cap_does_not_look_at_values():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = rng.choice([-1.0, 1.0], 40)
    groups = np.repeat(np.arange(5), 8)
    a = make_user_data(X, y, groups, max_items=3, data_norm=1.0, item_selection="random", random_state=7)
    b = make_user_data(1e3 * rng.standard_normal((40, 3)), -y, groups, max_items=3, data_norm=1.0,
                       item_selection="random", random_state=7)
    np.testing.assert_array_equal(a.source_rows, b.source_rows)
    for u in range(5):  # kept rows belong to the user and stay in input order
        rows = a.source_rows[a.indptr[u]:a.indptr[u + 1]]
        assert np.all(groups[rows] == u) and np.all(np.diff(rows) > 0) and len(rows) == 3


def test_replacing_a_user_changes_only_that_users_rows():
    X, y, g = _grouped(30, 4, seed=3)
    Xp, yp, gp = _neighbour(X, y, g)
    a = make_user_data(X, np.where(y == 1, 1.0, -1.0), g, max_items=3, data_norm=1.0)
    b = make_user_data(Xp, np.where(yp == 1, 1.0, -1.0), gp, max_items=3, data_norm=1.0)
    np.testing.assert_array_equal(a.indptr, b.indptr)  # the victim keeps 3 rows (cap)
    victim = 0  # label g[0] is the smallest, first user
    other = slice(a.indptr[victim + 1], None)
    np.testing.assert_array_equal(a.X[other], b.X[other])


# --------------------------------------------------------------------------- adversarial data
def _adversarial(seed=0):
    """Rows of norm up to 1e6, zero rows, duplicated rows, perfectly separable users, one user with
    many rows: privacy does not care; the fit must neither warn nor raise (a data-dependent warning
    or error would leak)."""
    X, y, g = _grouped(700, 3, seed=seed)
    X = X.copy()
    X[:30] *= 1e6
    X[30:60] = 0.0
    X[60:90] = X[90]
    y = y.copy()
    y[120:300] = (X[120:300, 0] > 0).astype(int)  # separable block
    g = g.copy()
    g[300:400] = g[300]  # one user with 100 rows (capped)
    return X, y, g


@pytest.mark.parametrize("solver", ["user_clip", "sc_output_pert", "phased_sco", "sc_sco_two_step", "user_dp_sgd",
                                    "item_group", "phased_erm"])
def test_adversarial_data_neither_warns_nor_raises(solver):
    X, y, g = _adversarial()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = UserLevelDPLogistic(epsilon=8.0, delta=1e-2, solver=solver, random_state=0, data_norm=2.0,
                                  user_clip=0.5, noise=_noise(solver)).fit(X, y, g)
    assert np.all(np.isfinite(est.coef_))


def test_sc_output_pert_default_alpha_balances_its_own_noise():
    """A named sc_output_pert fits at its own public alpha rule (above the user_clip rule, at most the cap)."""
    from sklearn_dpsco.linear_model._user_logistic_rules import (
        USER_ALPHA_CAP, default_sc_output_pert_alpha, default_user_alpha)

    for n, eps in ((500, 64.0), (6000, 8.0), (6000, 1.0)):
        a_new = default_sc_output_pert_alpha(n, 5, 6, 1.5, eps, 1e-6)
        a_old = default_user_alpha(n, 5, 6, 1.5, eps, 1e-6)
        assert a_old <= a_new <= USER_ALPHA_CAP * 1.5**2 / 6
    assert default_sc_output_pert_alpha(6000, 5, 6, 1.5, 8.0, 1e-6) > 10 * default_user_alpha(6000, 5, 6, 1.5, 8.0, 1e-6)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5)) / np.sqrt(5)
    y = (X.sum(axis=1) > 0).astype(int)
    g = np.repeat(np.arange(600), 5)
    est = UserLevelDPLogistic(epsilon=8.0, solver="sc_output_pert", max_items_per_user=5, data_norm=1.0,
                              column_scaling=False, random_state=0).fit(X, y, g)
    c = 0.25  # declared_row_scale: the fit's alpha_ is in the data's units
    expected = default_sc_output_pert_alpha(600, 5, 6, c * np.hypot(1.0, 1.0), 8.0, 1e-6)
    assert est.alpha_ == pytest.approx(expected)
