"""The regressors' predict on rows brought within a bound: DPLinearRegressor's row-bound solvers at the bound their
fit clipped the rows to, DPGrowthAdaptiveRegressor at PREDICT_ROW_UNITS times its row unit."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco.linear_model._growth_rules import PREDICT_ROW_UNITS


def _data(n=4000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.array([1.0, 10.0, 0.5, 3.0])[:d] + np.array([0.0, 50.0, 1.0, -2.0])[:d]
    y = X @ np.linspace(1.0, -0.2, d) + rng.standard_normal(n)
    return X, y


def _clipped(est, X, units=1.0):
    if est.column_bounds_ is not None:  # the column map's clip first (doc/privacy/column_scaling.rst, "Clipped columns")
        X = np.clip(X, *est.column_bounds_)
    c = np.zeros(X.shape[1]) if est.column_center_ is None else est.column_center_
    s = np.ones(X.shape[1]) if est.column_scale_ is None else est.column_scale_
    z = (X - c) / s
    f = np.minimum(1.0, units * est.row_bound_ / np.linalg.norm(z, axis=1))
    return c + s * z * f[:, None]


@pytest.mark.parametrize("params", [dict(solver="adassp"), dict(solver="adassp", column_scaling=False),
                                    dict(solver="phased_sgd", row_bound=60.0, label_bound=80.0)])
def test_rows_beyond_the_bound_are_predicted_from_their_clipped_version(params):
    X, y = _data()
    est = DPLinearRegressor(epsilon=2.0, random_state=0, **params).fit(X, y)
    Xt = np.vstack([X[:50], X[:50] * 40.0])  # the second half far outside the bound
    expected = _clipped(est, Xt) @ est.coef_ + est.intercept_
    np.testing.assert_allclose(est.predict(Xt), expected, rtol=1e-10, atol=1e-8)
    inside = np.linalg.norm((Xt - (est.column_center_ if est.column_center_ is not None else 0.0))
                            / (est.column_scale_ if est.column_scale_ is not None else 1.0), axis=1) <= est.row_bound_
    if est.column_bounds_ is not None:
        inside &= np.all((Xt >= est.column_bounds_[0]) & (Xt <= est.column_bounds_[1]), axis=1)
    assert inside.any() and (~inside).any()
    np.testing.assert_allclose(est.predict(Xt[inside]), Xt[inside] @ est.coef_ + est.intercept_, rtol=1e-12)


def test_solvers_that_bound_the_loss_predict_the_plain_linear_function():
    X, y = _data()
    est = DPLinearRegressor(epsilon=2.0, solver="phased_erm", random_state=0).fit(X, y)
    Xt = X[:50] * 40.0
    # no row clip; the column map's clip (its raw bounds) still applies: the linear function of the clipped columns
    assert est.column_bounds_ is not None
    np.testing.assert_allclose(est.predict(Xt), np.clip(Xt, *est.column_bounds_) @ est.coef_ + est.intercept_,
                               rtol=1e-12)
    off = DPLinearRegressor(epsilon=2.0, solver="phased_erm", column_scaling=False, random_state=0).fit(X, y)
    np.testing.assert_allclose(off.predict(Xt), Xt @ off.coef_ + off.intercept_, rtol=1e-12)


def test_sparse_rows_are_clipped_like_dense_ones():
    X, y = _data(d=3)
    est = DPLinearRegressor(epsilon=2.0, solver="adassp", row_bound=30.0, label_bound=60.0, random_state=0).fit(X, y)
    Xt = np.vstack([X[:20], X[:20] * 10.0])
    np.testing.assert_allclose(est.predict(sp.csr_matrix(Xt)), est.predict(Xt), rtol=1e-12)
    assert not np.allclose(est.predict(Xt), Xt @ est.coef_ + est.intercept_)


def test_score_uses_the_clipped_prediction():
    X, y = _data()
    est = DPLinearRegressor(epsilon=2.0, solver="adassp", random_state=0).fit(X, y)
    from sklearn.metrics import r2_score
    assert est.score(X, y) == pytest.approx(r2_score(y, est.predict(X)))


#: What predict may read: the released model, the released scales and column map, and public facts.
RELEASED = ("coef_", "intercept_", "row_bound_", "column_center_", "column_scale_", "column_bounds_", "solver_", "n_features_in_")


@pytest.mark.parametrize("params,n", [(dict(), 4000), (dict(), 1000), (dict(solver="adassp", column_scaling=False), 4000),
                                      (dict(solver="snowball", noise="float", delta=1e-6), 4000),
                                      (dict(row_bound=60.0, label_bound=80.0, solver="phased_sgd"), 4000),
                                      (dict(solver="phased_erm"), 4000)])
def test_predict_reads_only_the_releases(params, n):
    """Post-processing: an estimator holding only the released attributes predicts the same values (no
    statistic of the training rows is read at prediction time)."""
    X, y = _data(n=n)
    est = DPLinearRegressor(epsilon=2.0, random_state=0, **params).fit(X, y)
    bare = DPLinearRegressor(**est.get_params())
    for name in RELEASED:
        setattr(bare, name, getattr(est, name))
    Xt = np.vstack([X[:50], X[:50] * 40.0])
    np.testing.assert_array_equal(bare.predict(Xt), est.predict(Xt))


@pytest.mark.parametrize("params", [dict(), dict(column_scaling=False), dict(row_bound=60.0, label_bound=80.0),
                                    dict(epsilon=0.5)])
def test_growth_rows_beyond_four_units_are_predicted_from_their_version_at_four(params):
    """DPGrowthAdaptiveRegressor: a row beyond PREDICT_ROW_UNITS row units (the fit's column units) is predicted
    from its version at that norm; every other row from the plain linear function (of the clipped columns)."""
    assert PREDICT_ROW_UNITS == 4.0
    X, y = _data()
    est = DPGrowthAdaptiveRegressor(**{"epsilon": 2.0, "random_state": 0, **params}).fit(X, y)
    Xt = np.vstack([X[:50], X[:50] * 40.0, X[:50] * 1e6])
    expected = _clipped(est, Xt, PREDICT_ROW_UNITS) @ est.coef_ + est.intercept_
    np.testing.assert_allclose(est.predict(Xt), expected, rtol=1e-10, atol=1e-8)
    c = est.column_center_ if est.column_center_ is not None else 0.0
    s = est.column_scale_ if est.column_scale_ is not None else 1.0
    Xc = Xt if est.column_bounds_ is None else np.clip(Xt, *est.column_bounds_)
    inside = np.linalg.norm((Xc - c) / s, axis=1) <= PREDICT_ROW_UNITS * est.row_bound_
    assert inside.any() and (~inside).any()
    np.testing.assert_allclose(est.predict(Xt[inside]), Xc[inside] @ est.coef_ + est.intercept_, rtol=1e-12)
    # far rows keep a bounded prediction: the score at PREDICT_ROW_UNITS units, whatever the row's size
    far = est.predict(X[:50] * 1e6)
    assert np.all(np.isfinite(far)) and np.abs(far).max() < 1e3 * (np.abs(y).max() + 1)


def test_growth_without_a_row_unit_predicts_the_plain_linear_function():
    X, y = _data()
    est = DPGrowthAdaptiveRegressor(epsilon=2.0, row_bound=None, label_bound=None, column_scaling=False,
                                    random_state=0).fit(X, y)
    assert est.row_bound_ is None
    Xt = X[:50] * 40.0
    np.testing.assert_allclose(est.predict(Xt), Xt @ est.coef_ + est.intercept_, rtol=1e-12)


def test_growth_sparse_rows_like_dense_ones_and_score_uses_predict():
    X, y = _data(d=3)
    est = DPGrowthAdaptiveRegressor(epsilon=2.0, row_bound=30.0, label_bound=60.0, random_state=0).fit(X, y)
    Xt = np.vstack([X[:20], X[:20] * 10.0])
    np.testing.assert_allclose(est.predict(sp.csr_matrix(Xt)), est.predict(Xt), rtol=1e-12)
    assert not np.allclose(est.predict(Xt), Xt @ est.coef_ + est.intercept_)
    from sklearn.metrics import r2_score
    assert est.score(Xt, Xt @ [1.0, 0.5, -0.2]) == pytest.approx(r2_score(Xt @ [1.0, 0.5, -0.2], est.predict(Xt)))


@pytest.mark.parametrize("params", [dict(), dict(column_scaling=False), dict(row_bound=60.0, label_bound=80.0)])
def test_growth_predict_reads_only_the_releases(params):
    X, y = _data()
    est = DPGrowthAdaptiveRegressor(epsilon=2.0, random_state=0, **params).fit(X, y)
    bare = DPGrowthAdaptiveRegressor(**est.get_params())
    for name in ("coef_", "intercept_", "row_bound_", "column_center_", "column_scale_", "column_bounds_",
                 "n_features_in_"):
        setattr(bare, name, getattr(est, name))
    Xt = np.vstack([X[:50], X[:50] * 40.0])
    np.testing.assert_array_equal(bare.predict(Xt), est.predict(Xt))


def test_growth_unit_at_the_grid_end_maps_no_row():
    """An "auto" row unit at the quantile grid's last point (rows beyond 2^20) is not the rows' median: predict
    then reads every row as it is (the fit warns about the grid's end)."""
    X, y = _data(d=3)
    X = X * 1e8
    with pytest.warns(UserWarning, match="end of the library's grid"):
        est = DPGrowthAdaptiveRegressor(epsilon=2.0, column_scaling=False, random_state=0).fit(X, y)
    assert est.row_bound_ == 2.0**20
    Xt = np.vstack([X[:20], X[:20] * 40.0])
    np.testing.assert_allclose(est.predict(Xt), Xt @ est.coef_ + est.intercept_, rtol=1e-12)
