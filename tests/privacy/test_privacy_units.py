"""Privacy units: every private step declares one; pipelines, searches and ledgers refuse to mix them.

doc/privacy/accounting.rst ("Privacy units"), doc/privacy/preprocessing.rst
("User-level scaler"), doc/privacy/model_selection.rst ("Privacy unit").

T0: the reproduced defect (a row-level scaler before a user-level model) is
refused with nothing spent; the user-level scaler's sensitivity on
worst-case user neighbours (a user at one bound vs the other, a user above
the cap); the ledger's unit rules and group-privacy conversion.
T1: audit of the user-level scaler's release on user neighbours, with a
2x-sensitivity-underestimate mutant.
"""

import math
from dataclasses import fields

import numpy as np
import pytest

from sklearn_dpsco import (
    DPGridSearchCV,
    DPPipeline,
    DPRandomizedSearchCV,
    DPStandardScaler,
    RowNormClipper,
    UserLevelDPLogistic,
)
from sklearn_dpsco.accounting import (
    ApproxDPEvent,
    BudgetAccountant,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyUnitError,
    PureDPEvent,
    ZCDPEvent,
    group_privacy_event,
    privacy_unit_of,
)
from sklearn_dpsco.linear_model import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, _base
from sklearn_dpsco.preprocessing._scaler import user_clipped_moments
from sklearn_dpsco.testing import audit_epsilon, audit_gaussian_dp
from sklearn_dpsco.testing._estimators import TinyDPClassifier

ALPHA = 1e-6
N_DRAWS = 100_000


@pytest.fixture(scope="module")
def user_data():
    """120 users with 1-6 rows each, and one heavy user with 5000 rows."""
    rng = np.random.default_rng(3)
    counts = np.concatenate([rng.integers(1, 7, size=120), [5000]])
    groups = np.repeat(np.arange(counts.size), counts)
    X = rng.uniform(-3, 3, size=(groups.size, 3))
    X[groups == counts.size - 1] = 3.0  # the heavy user sits at the upper bound
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y, groups


def _user_pipeline(acc, scaler_unit="user"):
    scaler = (
        DPStandardScaler(bounds=(-3, 3), privacy_unit="user", max_items_per_user=5)
        if scaler_unit == "user"
        else DPStandardScaler(bounds=(-3, 3))
    )
    return DPPipeline(
        [("scale", scaler), ("clip", RowNormClipper(1.0)),
         ("clf", UserLevelDPLogistic(max_items_per_user=5, solver="user_clip", random_state=0))],
        epsilon=1.0, delta=1e-6, accountant=acc,
    )


# ------------------------------------------------------------------ units are exposed
def test_every_private_step_exposes_its_unit():
    for est in (DPHingeClassifier(), DPLinearRegressor(), DPGrowthAdaptiveRegressor(), DPStandardScaler()):
        assert est.privacy_unit == "row" == privacy_unit_of(est)
    assert UserLevelDPLogistic().privacy_unit == "user"
    assert DPStandardScaler(privacy_unit="user").privacy_unit == "user"
    assert RowNormClipper().privacy_unit is None  # data-independent, unit-neutral
    assert privacy_unit_of(TinyDPClassifier()) == "row"  # undeclared private estimator: the weaker unit
    # read-only on the models (one source of truth: the class), a parameter of the scaler
    with pytest.raises(ValueError):
        DPHingeClassifier().set_params(privacy_unit="user")
    assert "privacy_unit" not in UserLevelDPLogistic().get_params()
    assert DPStandardScaler().get_params()["privacy_unit"] == "row"
    assert DPGridSearchCV(TinyDPClassifier(), {"clip": [1.0]}).privacy_unit == "row"


# ------------------------------------------------------------------ the reproduced defect
def test_row_scaler_before_user_model_is_refused_nothing_spent(user_data):
    X, y, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3)
    pipe = _user_pipeline(acc, scaler_unit="row")
    with pytest.raises(PrivacyUnitError, match=r"mixes privacy units.*'scale': row.*'clf': user.*privacy_unit='user'"):
        pipe.fit(X, y, groups=groups)
    assert acc.ledger == ()
    assert not hasattr(pipe.named_steps["scale"], "mean_") and not hasattr(pipe.named_steps["clf"], "coef_")
    with pytest.raises(PrivacyUnitError, match="mixes privacy units"):
        _ = pipe.privacy_unit


def test_user_level_pipeline_routes_groups_and_records_user_entries(user_data):
    X, y, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3)
    pipe = _user_pipeline(acc).fit(X, y, groups=groups)
    assert pipe.privacy_unit == "user"
    assert pipe.named_steps["scale"].n_users_ == np.unique(groups).size
    assert [e.privacy_unit for e in acc.ledger] == ["user", "user"]
    assert acc.unit_of_total == "user"
    # the heavy user (5000 rows at the upper bound) weighs as one user among 121
    exact_mean, _, n_users = user_clipped_moments(X, groups, -3.0, 3.0, 5)
    assert np.all(np.abs(exact_mean - user_clipped_moments(X[groups < 120], groups[groups < 120], -3.0, 3.0, 5)[0])
                  <= 6.0 / n_users + 1e-12)


def test_pipeline_groups_errors_spend_nothing(user_data):
    X, y, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3)
    with pytest.raises(ValueError, match="user-level.*groups=groups"):
        _user_pipeline(acc).fit(X, y)
    with pytest.raises(ValueError, match="pass groups once"):
        _user_pipeline(acc).fit(X, y, groups=groups, clf__groups=groups)
    with pytest.raises(ValueError, match="pass groups once"):
        _user_pipeline(acc).fit(X, y, scale__groups=groups, clf__groups=groups[::-1])
    row_pipe = DPPipeline([("scale", DPStandardScaler(bounds=(-3, 3))), ("clf", TinyDPClassifier())], accountant=acc)
    with pytest.raises(PrivacyUnitError, match="row-level DPPipeline"):
        row_pipe.fit(X, y, groups=groups)
    with pytest.raises(ValueError, match="groups was given to a row-level DPStandardScaler"):
        DPStandardScaler(bounds=(-3, 3), accountant=acc).fit(X, groups=groups)
    with pytest.raises(ValueError, match="requires groups"):
        DPStandardScaler(bounds=(-3, 3), privacy_unit="user", accountant=acc).fit(X)
    assert acc.ledger == ()
    row_pipe.fit(X, y)  # a row-level pipeline without groups still works
    assert [e.privacy_unit for e in acc.ledger] == ["row", "row"] and acc.unit_of_total == "row"


# ------------------------------------------------------------------ the user-level scaler's sensitivity
def test_user_scaler_exact_sensitivity_on_worst_case_user_neighbours():
    lower, upper = np.array([-1.0, 0.0, 5.0]), np.array([3.0, 1.0, 5.0])  # last feature: zero range
    r, centre, m = upper - lower, (lower + upper) / 2, 4
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 2 * m, size=30)
    groups = np.repeat(np.arange(30), counts)
    X = rng.uniform(lower - 1, upper + 1, size=(groups.size, 3))
    U = 30
    mine = groups == 0

    def with_user0(rows):  # replace user 0 by ``rows`` (any number of them)
        return np.vstack([rows, X[~mine]]), np.concatenate([np.zeros(len(rows), int), groups[~mine]])

    stats = lambda rows: user_clipped_moments(*with_user0(rows), lower, upper, m)  # noqa: E731
    mean_lo, _, n_users = stats(np.tile(lower, (m, 1)))
    mean_hi, m2_hi, _ = stats(np.tile(upper, (m, 1)))
    _, m2_c, _ = stats(np.tile(centre, (m, 1)))
    assert n_users == U
    mechs = DPStandardScaler(epsilon=1.0, bounds=(lower, upper), privacy_unit="user", noise="float")._mechanisms(
        U, lower, upper
    )
    np.testing.assert_allclose(np.abs(mean_hi - mean_lo), r / U, atol=1e-12)  # attained
    assert np.abs(mean_hi - mean_lo).sum() == pytest.approx(mechs["mean"].sensitivity)
    assert np.abs(m2_hi - m2_c).sum() == pytest.approx(mechs["second_moment"].sensitivity)
    # a user above the cap: only its first m rows count, whatever follows (5000 far rows)
    capped = np.vstack([np.tile(lower, (m, 1)), np.tile(upper + 1e6, (5000, 1))])
    np.testing.assert_allclose(stats(capped)[0], mean_lo)
    # random user neighbours (1 to 3m rows, values far outside the bounds) never exceed the bound
    for _ in range(50):
        a = rng.uniform(lower - 5, upper + 5, size=(rng.integers(1, 3 * m), 3))
        b = rng.uniform(lower - 5, upper + 5, size=(rng.integers(1, 3 * m), 3))
        (ma, sa, _), (mb, sb, _) = stats(a), stats(b)
        assert np.all(np.abs(ma - mb) <= r / U + 1e-12)
        assert np.all(np.abs(sa - sb) <= (r / 2) ** 2 / U + 1e-12)


def test_user_scaler_fit_uses_users_and_the_cap(user_data):
    X, _, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3)
    sc = DPStandardScaler(epsilon=1.0, delta=1e-6, bounds=(-3, 3), privacy_unit="user", max_items_per_user=5,
                          accountant=acc, noise="float", random_state=0).fit(X, groups=groups)
    U = np.unique(groups).size
    assert sc.n_users_ == U
    # the mean's Gaussian noise is calibrated to 6 sqrt(d) / U, not to rows
    mean_event = sc.privacy_event_.events[0]
    assert mean_event.sensitivity == pytest.approx(6.0 * math.sqrt(3) / U)
    assert acc.ledger[-1].privacy_unit == "user"
    with pytest.raises(ValueError, match="privacy_unit='user' only"):
        DPStandardScaler(bounds=(-3, 3), max_items_per_user=5, accountant=acc).fit(X)


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_user_scaler_mean_release_audit_and_mutant(delta):
    """Releases of the user-level mean query on worst-case user neighbours (m rows at one bound vs the other)."""
    eps, U, m, lower, upper = 1.0, 20, 3, np.array([0.0]), np.array([1.0])
    groups = np.repeat(np.arange(U), m)
    X = np.full((U * m, 1), 0.5)
    D, Dp = X.copy(), X.copy()
    D[:m], Dp[:m] = lower, upper
    rng = np.random.default_rng(11)

    def releases(sensitivity_factor):
        scaler = DPStandardScaler(epsilon=eps, delta=delta, bounds=(lower, upper), with_std=False,
                                  privacy_unit="user", max_items_per_user=m)
        mech = scaler._mechanisms(U, lower, upper)["mean"]
        if sensitivity_factor != 1:  # mutant: the plan underestimates the sensitivity
            kw = {f.name: getattr(mech, f.name) for f in fields(mech) if f.init}
            mech = type(mech)(**{**kw, "sensitivity": mech.sensitivity * sensitivity_factor})
        a = mech.release(user_clipped_moments(D, groups, lower, upper, m)[0], rng, size=N_DRAWS)[:, 0]
        b = mech.release(user_clipped_moments(Dp, groups, lower, upper, m)[0], rng, size=N_DRAWS)[:, 0]
        return a, b

    audit = audit_epsilon if delta == 0 else audit_gaussian_dp
    res = audit(*releases(1), eps, delta, alpha=ALPHA)
    assert not res.violation, str(res)
    mutant = audit(*releases(0.5), eps, delta, alpha=ALPHA)
    assert mutant.violation, f"the 2x sensitivity underestimate was not caught: {mutant}"


# ------------------------------------------------------------------ searches
def test_user_level_search_needs_groups_and_refuses_mixed_units_before_spending(user_data):
    X, y, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3)
    kw = dict(epsilon=1.0, delta=1e-6, accountant=acc)
    with pytest.raises(ValueError, match="DPGridSearchCV.fit requires groups"):
        DPGridSearchCV(UserLevelDPLogistic(), {"alpha": [0.01, 0.1]}, **kw).fit(X, y)
    with pytest.raises(ValueError, match="groups was given to DPGridSearchCV over the row-level DPHingeClassifier"):
        DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.01]}, **kw).fit(X, y, groups=groups)
    with pytest.raises(PrivacyUnitError, match="mixes privacy units"):
        DPGridSearchCV(_user_pipeline(None, scaler_unit="row"), {"clf__alpha": [0.01]}, **kw).fit(X, y, groups=groups)
    # user-level models need delta > 0: every candidate's own check runs before the reservation
    with pytest.raises(ValueError, match="needs delta > 0"):
        DPRandomizedSearchCV(UserLevelDPLogistic(), {"alpha": [0.01, 0.1]}, n_iter=2, epsilon=1.0, delta=0.0,
                             selection="random_stopping", accountant=acc).fit(X, y, groups=groups)
    assert acc.ledger == ()


class _GroupsSpy(UserLevelDPLogistic):
    """Records the groups each fit received (test-only; not the searches' up-front ``check_fit`` of a fit)."""

    seen = []

    def fit(self, X, y, groups=None):
        if _base._CHECKING.get() is not self:
            type(self).seen.append(np.asarray(groups).copy())
        return super().fit(X, y, groups=groups)


@pytest.mark.parametrize("search", ["estimator", "pipeline"])
def test_user_level_search_splits_users_and_charges_a_user_level_spend(user_data, search):
    X, y, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3)
    if search == "estimator":
        _GroupsSpy.seen = []
        est, grid = _GroupsSpy(max_items_per_user=5, solver="user_clip"), {"alpha": [0.01, 0.1]}
    else:
        est, grid = _user_pipeline(None), {"clf__alpha": [0.01, 0.1]}
    s = DPGridSearchCV(est, grid, cv=3, epsilon=2.0, delta=1e-6, accountant=acc, random_state=0)
    s.fit(X, y, groups=groups)
    assert s.privacy_unit == "user"
    (entry,) = acc.ledger
    assert entry.privacy_unit == "user" and entry.event == s.privacy_event_
    assert s.best_estimator_.privacy_unit == "user"
    if search == "estimator":
        # 2 candidates x 3 folds + the refit; every fit saw whole users only
        assert len(_GroupsSpy.seen) == 7
        folds = _GroupsSpy.seen[:3]
        # the users absent from each training fold partition all users: splits are over
        # users (a row split would leave most multi-row users partly in every training fold)
        held_out = [np.setdiff1d(groups, f) for f in folds]
        assert all(users.size for users in held_out)
        assert np.array_equal(np.sort(np.concatenate(held_out)), np.unique(groups))
        assert np.array_equal(np.sort(np.unique(_GroupsSpy.seen[-1])), np.unique(groups))


def test_user_level_score_sensitivity_is_width_over_validation_users():
    """Exact: one replaced user moves the per-user mean score by <= 1/U_val, and a heavy user attains it.

    The mutant (the row-level mean over validation rows) is moved by almost 1
    by the same heavy user: the per-user averaging is what bounds it.
    """
    from sklearn_dpsco.model_selection._scoring import get_scorer
    from sklearn_dpsco.model_selection._units import SearchUnits

    class Constant:
        def predict(self, X):
            return np.ones(X.shape[0], dtype=int)

    U_val, heavy = 10, 1000
    counts = np.r_[np.ones(U_val - 1, dtype=int), heavy]
    groups = np.repeat(np.arange(U_val), counts)
    X = np.zeros((groups.size, 1))
    y = np.ones(groups.size, dtype=int)  # every row right
    y_prime = y.copy()
    y_prime[groups == U_val - 1] = 0  # the heavy user replaced: every row wrong
    scorer = get_scorer("accuracy", True, None)
    units = SearchUnits.users(groups).shuffled(0)
    rows = np.arange(groups.size)
    a = units.score(scorer, Constant(), X, y, rows)
    b = units.score(scorer, Constant(), X, y_prime, rows)
    assert math.isclose(a - b, scorer.width / U_val)
    row_mean = SearchUnits.rows(groups.size)
    mutant = row_mean.score(scorer, Constant(), X, y, rows) - row_mean.score(scorer, Constant(), X, y_prime, rows)
    assert mutant > 0.9 > scorer.width / U_val


# ------------------------------------------------------------------ ledger rules
def test_undeclared_ledger_accepts_both_and_reports_the_weakest_unit():
    acc = BudgetAccountant(2.0)
    assert acc.privacy_unit is None and acc.unit_of_total is None
    acc.spend(PureDPEvent(0.5), label="u", privacy_unit="user")
    assert acc.unit_of_total == "user"
    acc.spend(PureDPEvent(0.5), label="r")  # the default unit is row: backward compatible
    assert acc.unit_of_total == "row"
    assert [e.privacy_unit for e in acc.ledger] == ["user", "row"]
    assert acc.total()[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="privacy_unit"):
        acc.spend(PureDPEvent(0.1), privacy_unit="item")


def test_row_ledger_accepts_user_spends_user_ledger_refuses_row_spends():
    row = BudgetAccountant(2.0, privacy_unit="row")
    row.spend(PureDPEvent(0.5), privacy_unit="user")  # user-level DP implies row-level DP
    assert row.unit_of_total == "row" and row.ledger[0].privacy_unit == "user"

    user = BudgetAccountant(2.0, privacy_unit="user")
    for call in (user.check, user.spend):
        with pytest.raises(PrivacyUnitError, match="declared user-level.*max_items_per_user=m"):
            call(PureDPEvent(0.1))
    assert user.ledger == ()
    user.spend(PureDPEvent(0.5), privacy_unit="user")
    assert user.unit_of_total == "user"
    with pytest.raises(ValueError, match="needs privacy_unit='user'"):
        BudgetAccountant(1.0, privacy_unit="row", max_items_per_user=3)


def test_user_ledger_refuses_row_estimators_before_touching_data(user_data):
    X, y, groups = user_data
    acc = BudgetAccountant(10.0, 1e-3, privacy_unit="user")
    clf = DPHingeClassifier(epsilon=1.0, accountant=acc)
    with pytest.raises(PrivacyUnitError, match="declared user-level"):
        clf.fit(X, y)
    pipe = DPPipeline([("scale", DPStandardScaler(bounds=(-3, 3))), ("clf", TinyDPClassifier())], accountant=acc)
    with pytest.raises(PrivacyUnitError, match="declared user-level"):
        pipe.fit(X, y)
    assert acc.ledger == () and not hasattr(clf, "coef_") and not hasattr(pipe.named_steps["scale"], "mean_")
    _user_pipeline(acc).fit(X, y, groups=groups)
    assert len(acc.ledger) == 2


def test_group_privacy_conversion_with_declared_m():
    m = 4
    acc = BudgetAccountant(10.0, 1e-3, privacy_unit="user", max_items_per_user=m)
    entry = acc.spend(PureDPEvent(0.25), label="row fit")
    assert entry.event == PureDPEvent(1.0) and entry.privacy_unit == "user"
    assert entry.label == "row fit [row-level, group privacy m=4, rows in place]"
    assert acc.total()[0] == pytest.approx(1.0)
    # sensitivity-based events: m rows move the query by at most m sensitivities (exact)
    assert group_privacy_event(GaussianEvent(0.5, 2.0), m) == GaussianEvent(2.0, 2.0)
    assert group_privacy_event(LaplaceEvent(1.0, 3.0, "l2"), m) == LaplaceEvent(4.0, 3.0, "l2")
    assert group_privacy_event(ZCDPEvent(0.01), m) == ZCDPEvent(0.16)
    approx = group_privacy_event(ApproxDPEvent(0.1, 1e-6), m)
    assert approx.epsilon == pytest.approx(0.4) and approx.delta == pytest.approx(m * math.exp(0.3) * 1e-6)
    composed = group_privacy_event(ComposedEvent((PureDPEvent(0.1), GaussianEvent(1.0, 4.0))), m)
    assert composed == ComposedEvent((PureDPEvent(0.4), GaussianEvent(4.0, 4.0)))
    with pytest.raises(PrivacyUnitError, match="vacuous"):
        group_privacy_event(ApproxDPEvent(5.0, 0.01), 10)


def test_sqlite_ledger_keeps_units(tmp_path):
    path = tmp_path / "ledger.sqlite"
    acc = BudgetAccountant(2.0, privacy_unit="user", max_items_per_user=3, path=path)
    acc.spend(PureDPEvent(0.1))  # converted: 0.3, user
    acc.spend(PureDPEvent(0.2), privacy_unit="user")
    again = BudgetAccountant(2.0, path=path)  # None adopts the file's unit (how workers reopen it)
    assert (again.privacy_unit, again.max_items_per_user) == ("user", 3)
    assert [e.privacy_unit for e in again.ledger] == ["user", "user"]
    assert again.total()[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="created with"):
        BudgetAccountant(2.0, privacy_unit="row", path=path)
