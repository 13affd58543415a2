"""DPLinearRegressor.predict on rows clipped as the fit clipped them (row-bound solvers only)."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco import DPLinearRegressor


def _data(n=4000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.array([1.0, 10.0, 0.5, 3.0])[:d] + np.array([0.0, 50.0, 1.0, -2.0])[:d]
    y = X @ np.linspace(1.0, -0.2, d) + rng.standard_normal(n)
    return X, y


def _clipped(est, X):
    if est.column_bounds_ is not None:  # the column map's clip first (doc/privacy/column_scaling.rst, "Clipped columns")
        X = np.clip(X, *est.column_bounds_)
    c = np.zeros(X.shape[1]) if est.column_center_ is None else est.column_center_
    s = np.ones(X.shape[1]) if est.column_scale_ is None else est.column_scale_
    z = (X - c) / s
    f = np.minimum(1.0, est.row_bound_ / np.linalg.norm(z, axis=1))
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
