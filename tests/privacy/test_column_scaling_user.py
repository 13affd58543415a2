"""User-level column scaling of UserLevelDPLogistic (doc/privacy/column_scaling.rst, "User level").

Every test fails if the quartiles read more than one row per user, chose that
row from anything but the grouping, were charged outside the composed event
or at a row-level ``n``, were spent with a declared ``data_norm``, or if the
fold or the budget fill were wrong.
"""

import itertools

import numpy as np
import pytest

from sklearn_dpsco import UserLevelDPLogistic
from sklearn_dpsco._solvers._core._user_data import index_users
from sklearn_dpsco.accounting import BudgetAccountant, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.linear_model import _column_scaling
from sklearn_dpsco.linear_model._column_scaling import ColumnScaling, default_column_share
from sklearn_dpsco.linear_model._user_logistic_rules import first_row_per_user


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _raw_panel(n_users=2000, rows=4, seed=0, shuffle=True):
    """A public synthetic raw panel: a survey year near 2000 (the dominant column), an income in
    thousands, a 0/1 indicator and a standard column; the label depends on all four and a user effect."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_users), rows)
    n = g.size
    year = 1980.0 + rng.integers(0, 30, n).astype(float)
    income = 20.0 + 10.0 * rng.standard_normal(n_users)[g] + 3.0 * rng.standard_normal(n)
    ind = (rng.random(n) < 0.4).astype(float)
    z = rng.standard_normal(n)
    X = np.column_stack([year, income, ind, z])
    signal = (year - 1995.0) / 9.0 + (income - 20.0) / 10.0 + 1.5 * (ind - 0.4) + z + 0.5 * rng.standard_normal(n_users)[g]
    y = (signal + 0.5 * rng.standard_normal(n) > 0.3).astype(int)
    if shuffle:
        perm = rng.permutation(n)
        X, y, g = X[perm], y[perm], g[perm]
    return X, y, g


# -- the selection is a public function of the grouping ---------------------------------------------
def _selected(values, ids):
    """Multiset (sorted list) of the selected rows' values."""
    return sorted(values[first_row_per_user(index_users(ids))].tolist())


def test_first_row_per_user_is_each_users_first_row_in_input_order():
    ids = np.array([3, 1, 3, 2, 1, 0, 2, 0])
    rows = first_row_per_user(index_users(ids))
    assert sorted(rows.tolist()) == [0, 1, 3, 5]
    assert np.array_equal(ids[rows], np.unique(ids))
    # already grouped: the identity order
    assert first_row_per_user(index_users(np.array([0, 0, 1, 2, 2, 2]))).tolist() == [0, 2, 3]
    # a function of the grouping only: the same rows whatever the values
    assert first_row_per_user(index_users(np.array(["b", "a", "b"]))).tolist() == [1, 0]


def test_replacing_one_user_changes_at_most_one_selected_row_by_enumeration():
    # 3 users in an interleaved order; replace each user's block by every block of 1..3 rows, with its own
    # or a fresh identifier (below, between, above the others), inserted at every set of positions
    base_ids = np.array([2, 0, 2, 1, 0, 1])
    base_vals = np.arange(6.0)  # distinct values: the multiset tells which rows were selected
    checked = 0
    for user in np.unique(base_ids):
        keep = base_ids != user
        kept_ids, kept_vals = base_ids[keep], base_vals[keep]
        others = set(np.unique(kept_ids).tolist())
        for new_id in [i for i in (-1, 0, 1, 2, 5, 0.5, 1.5) if i not in others]:
            for k in (1, 2, 3):
                size = kept_ids.size + k
                for positions in itertools.combinations(range(size), k):
                    ids = np.empty(size)
                    vals = np.empty(size)
                    mask = np.zeros(size, bool)
                    mask[list(positions)] = True
                    ids[mask], vals[mask] = new_id, 100.0 + np.arange(k)
                    ids[~mask], vals[~mask] = kept_ids, kept_vals
                    a, b = _selected(base_vals, base_ids), _selected(vals, ids)
                    assert len(a) == len(b) == 3
                    only_a = [v for v in a if v not in b]
                    only_b = [v for v in b if v not in a]
                    assert len(only_a) <= 1 and len(only_b) <= 1
                    checked += 1
    assert checked > 500


def test_no_row_stride_at_user_level_where_a_fresh_identifier_shifts_the_users():
    # the users' first rows are in identifier order: user 0 replaced by a user with a fresh, largest id
    # shifts every other user by one place, so every 2nd first row is a different set of users
    ids = np.arange(8)
    vals = np.arange(8.0)
    moved_ids = np.concatenate((ids[1:], [99]))
    moved_vals = np.concatenate((vals[1:], [100.0]))
    every_2nd = [sorted(v[first_row_per_user(index_users(i))][::2].tolist())
                 for v, i in ((vals, ids), (moved_vals, moved_ids))]
    assert len(set(every_2nd[0]) - set(every_2nd[1])) == 4  # a stride would change 4 selected rows, not 1
    # so the user-level plan reads every first row where the row-level rule would stride
    X, y, g = _raw_panel(n_users=2000, rows=2)
    eps, d = 60.0, X.shape[1]
    assert _column_scaling.column_sample_stride(2000, d, eps, default_column_share(2000, d, eps)) >= 2
    seen = {}
    grid_type = type(_column_scaling.BOUNDS_GRID)
    real = grid_type.column_counts

    def spy(self, X_, *args, **kw):  # the quartiles release from the grid counts of the rows they read
        if self is _column_scaling.BOUNDS_GRID:
            seen.setdefault("X", np.array(X_))
        return real(self, X_, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(grid_type, "column_counts", spy)
        est = UserLevelDPLogistic(epsilon=eps, delta=1e-6, data_norm="auto", random_state=0,
                                  accountant=_ledger()).fit(X, y, g)
    np.testing.assert_array_equal(seen["X"], X[first_row_per_user(index_users(g))])
    assert est.fit_info_[0]["column_scaling"]["row_stride"] == 1


# -- the event ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["secure", "float"])
def test_event_is_user_level_quartiles_then_the_former_fit_spent_once(noise):
    X, y, g = _raw_panel()
    n_users, d = 2000, X.shape[1]
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, data_norm="auto", noise=noise, random_state=0,
                              accountant=acc).fit(X, y, g)
    share = default_column_share(n_users, d, 1.0)  # n = the number of users, not of rows
    quartiles = ComposedEvent(tuple([PureDPEvent(share / (2 * d))] * (2 * d)))
    assert isinstance(est.privacy_event_, ComposedEvent)
    assert est.privacy_event_.events[0] == quartiles
    info = est.fit_info_[0]["column_scaling"]
    assert info["share"] == share and info["epsilon"] == pytest.approx(share)
    # the rest is the former "auto" fit: the data-norm estimate, then the solver
    inner = est.privacy_event_.events[1]
    off = UserLevelDPLogistic(**{**est.get_params(), "column_scaling": False, "accountant": _ledger()}).fit(X, y, g)
    assert type(inner) is type(off.privacy_event_) and len(inner.events) == len(off.privacy_event_.events)
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    assert acc.ledger[0].privacy_unit == "user"
    eps, spent_delta = epsilon_delta(est.privacy_event_, delta=1e-6)
    assert eps <= 1.0 + 1e-12 and eps == pytest.approx(1.0, rel=1e-9)
    assert est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9) and est.epsilon_spent_ <= 1.0 + 1e-12
    assert spent_delta <= 1e-6 * (1 + 1e-9)


def test_event_does_not_depend_on_the_data():
    X, y, g = _raw_panel()
    events = [UserLevelDPLogistic(data_norm="auto", random_state=1, accountant=_ledger()).fit(X * s, y, g)
              .privacy_event_ for s in (1.0, 1e-3, 1e6)]
    assert events[0] == events[1] == events[2]


def test_quartiles_read_one_row_per_user_and_the_fold_is_exact(monkeypatch):
    X, y, g = _raw_panel()
    seen = {}
    grid_type = type(_column_scaling.BOUNDS_GRID)
    real_counts, real_release = grid_type.column_counts, _column_scaling.column_quantiles_from_counts

    def counts_spy(self, X_, *args, **kw):  # the rows the quartiles read
        if self is _column_scaling.BOUNDS_GRID:
            seen.setdefault("X", np.array(X_))
        return real_counts(self, X_, *args, **kw)

    def release_spy(*args, **kw):  # the released quartiles
        out = real_release(*args, **kw)
        seen["value"] = out.value
        return out

    monkeypatch.setattr(grid_type, "column_counts", counts_spy)
    monkeypatch.setattr(_column_scaling, "column_quantiles_from_counts", release_spy)
    est = UserLevelDPLogistic(data_norm="auto", random_state=3, accountant=_ledger()).fit(X, y, g)
    np.testing.assert_array_equal(seen["X"], X[first_row_per_user(index_users(g))])
    assert seen["X"].shape[0] == 2000
    columns = ColumnScaling.from_quartiles(seen["value"])
    np.testing.assert_array_equal(est.column_center_, columns.centre)
    np.testing.assert_array_equal(est.column_scale_, columns.scale)
    # the folded model on raw rows = the model of the mapped rows on mapped rows
    coef = np.atleast_2d(est.coef_)
    raw = X[:50] @ coef.T + est.intercept_
    mapped = columns.transform(X[:50]) @ (coef * columns.scale).T + (est.intercept_ + coef @ columns.centre)
    np.testing.assert_allclose(raw, mapped, rtol=1e-9, atol=1e-9 * np.abs(raw).max())


@pytest.mark.parametrize("data_norm", [1.0, 3.0])
def test_declared_data_norm_spends_nothing_on_column_scaling(data_norm, monkeypatch):
    X, y, g = _raw_panel()
    calls = []
    monkeypatch.setattr(_column_scaling, "private_column_quantiles", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(_column_scaling, "column_quantiles_from_counts", lambda *a, **k: calls.append(1))
    # centering=False: a declared bound's DP-GD fit centres its features (tests/privacy/test_centering_user.py)
    auto = UserLevelDPLogistic(data_norm=data_norm, random_state=0, accountant=_ledger(),
                               centering=False).fit(X, y, g)
    off = UserLevelDPLogistic(data_norm=data_norm, random_state=0, accountant=_ledger(),
                              column_scaling=False, centering=False).fit(X, y, g)
    assert calls == [] and auto.column_center_ is None and auto.column_scale_ is None
    assert auto.privacy_event_ == off.privacy_event_
    np.testing.assert_array_equal(auto.coef_, off.coef_)
    np.testing.assert_array_equal(auto.intercept_, off.intercept_)


def test_too_few_users_and_sparse_rows_leave_the_fit_as_before():
    import scipy.sparse as sp

    X, y, g = _raw_panel(n_users=300)
    # too few users for the quartiles: "auto" releases the column magnitudes instead
    # (tests/privacy/test_column_magnitudes_user.py), never the quartiles
    auto = UserLevelDPLogistic(data_norm="auto", random_state=0, accountant=_ledger()).fit(X, y, g)
    assert "column_scaling" not in auto.fit_info_[0] and "column_magnitudes" in auto.fit_info_[0]
    off = UserLevelDPLogistic(data_norm="auto", random_state=0, accountant=_ledger(),
                              column_scaling=False).fit(X, y, g)
    assert off.column_scale_ is None and "column_magnitudes" not in off.fit_info_[0]
    X, y, g = _raw_panel()
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match="column_scaling=True needs dense"):
        UserLevelDPLogistic(column_scaling=True, accountant=acc).fit(sp.csr_matrix(X), y, g)
    assert len(acc.ledger) == 0


def test_budget_check_happens_before_the_quartiles(monkeypatch):
    X, y, g = _raw_panel()
    calls = []
    monkeypatch.setattr(_column_scaling, "private_column_quantiles", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(_column_scaling, "column_quantiles_from_counts", lambda *a, **k: calls.append(1))
    acc = BudgetAccountant(epsilon=0.5, delta=1e-3)
    with pytest.raises(Exception, match="[Bb]udget"):
        UserLevelDPLogistic(epsilon=1.0, data_norm="auto", accountant=acc).fit(X, y, g)
    assert calls == [] and len(acc.ledger) == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_raw_panel_with_auto_data_norm_no_longer_predicts_one_class(seed):
    # 2000 users x 4 rows; non-private (standardized LogisticRegression) about 0.89, majority 0.56-0.58;
    # data_norm="auto" without column scaling (and the declared default 1.0) predict the majority class:
    # the year's offset swamps the row scale. With the user-level quartiles about 0.74-0.82.
    X, y, g = _raw_panel(seed=seed)
    Xt, yt, _ = _raw_panel(n_users=1000, seed=100 + seed)
    est = UserLevelDPLogistic(epsilon=1.0, data_norm="auto", random_state=seed, accountant=_ledger()).fit(X, y, g)
    off = UserLevelDPLogistic(epsilon=1.0, data_norm="auto", column_scaling=False, random_state=seed,
                              accountant=_ledger()).fit(X, y, g)
    assert est.column_scale_ is not None
    pred = est.predict(Xt)
    assert len(np.unique(pred)) == 2 and np.mean(pred == yt) >= 0.7
    assert np.mean(pred == yt) > np.mean(off.predict(Xt) == yt) + 0.1


def test_verbose_reports_the_share(capsys):
    X, y, g = _raw_panel()
    UserLevelDPLogistic(data_norm="auto", random_state=0, accountant=_ledger(), verbose=1).fit(X, y, g)
    assert "private column scaling" in capsys.readouterr().out


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_forced_with_a_declared_bound_fills_the_budget_exactly(noise):
    # column_scaling=True with a declared data_norm: the quartiles' pure part and the solver's event only
    X, y, g = _raw_panel(n_users=600)
    est = UserLevelDPLogistic(epsilon=1.0, data_norm=1.0, column_scaling=True, noise=noise, random_state=0,
                              accountant=_ledger()).fit(X, y, g)
    d = X.shape[1]
    share = default_column_share(600, d, 1.0)
    assert est.privacy_event_.events[0] == ComposedEvent(tuple([PureDPEvent(share / (2 * d))] * (2 * d)))
    assert est.column_scale_ is not None and est.data_norm_ == 1.0
    assert est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9) and est.epsilon_spent_ <= 1.0 + 1e-12


# -- statistical audit with a mutant ----------------------------------------------------------------------
def _q1_scores(X, y, g, draws, seed):
    """Released q1 of the one column: the estimator's row selection, then the planned release (no solver)."""
    from sklearn_dpsco._budget import Budget

    est = UserLevelDPLogistic(epsilon=8.0, noise="float", column_scaling=True)
    inputs = est._validate_fit_inputs(X, y, g)
    plan = _column_scaling.ColumnScalingPlan.build(Budget(8.0, 0.0, "float"), inputs.n_samples, 1, True)
    rows = est._column_rows(inputs, plan)
    out = np.empty(draws)
    for i in range(draws):
        columns, _ = plan.release(rows, np.random.default_rng(seed + i))
        out[i] = columns.quartiles[0, 0]
    return out, plan


def test_audit_flags_all_rows_quartiles_and_passes_one_row_per_user(monkeypatch):
    """Worst-case user neighbours: 40 users x 10 rows, 9 users at 0 and 31 at 64; D' moves one whole
    user from 64 to 0. One row per user: one value of the 40 moves, the q1 release's law moves by at
    most ``e^{epsilon_i}``. The mutant (every row, the row-level selection) moves 10 values at once."""
    from sklearn_dpsco.linear_model._base import DPLinearModelMixin
    from sklearn_dpsco.testing import audit_epsilon

    g = np.repeat(np.arange(40), 10)
    X = np.where(g < 9, 0.0, 64.0)[:, None]
    Xp = np.where(g < 10, 0.0, 64.0)[:, None]
    y = (np.arange(400) % 2).astype(int)
    draws = 400
    d_scores, plan = _q1_scores(X, y, g, draws, 0)
    dp_scores, _ = _q1_scores(Xp, y, g, draws, 10_000)
    eps_i = plan.budget.epsilon / 2  # the q1 release's share (2 d = 2 releases)
    assert eps_i == pytest.approx(1.0)
    private = audit_epsilon(d_scores, dp_scores, eps_i)
    assert not private.violation, private
    monkeypatch.setattr(UserLevelDPLogistic, "_column_rows", lambda self, inputs, columns: (
        DPLinearModelMixin._column_rows(self, inputs, columns)))
    d_scores, _ = _q1_scores(X, y, g, draws, 0)
    dp_scores, _ = _q1_scores(Xp, y, g, draws, 10_000)
    mutant = audit_epsilon(d_scores, dp_scores, eps_i)
    assert mutant.violation, mutant
