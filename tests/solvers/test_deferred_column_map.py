"""Deferred column map of the growth regressor's rows (speed only): the same floats as the eager map.

With ``column_scaling`` on, DPGrowthAdaptiveRegressor leaves the released column map and the row scale
to the solver's blocks (``DeferredRowScale`` with ``centre`` / ``inv_scale``, ``RowScaledData``): every
block, the materialised rows and the row norms the "auto" row bound reads must equal those of the eager
``column_affine`` copy, bit for bit, so the release is the one the eager path gave.
"""

import numpy as np
import pytest

from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor
from sklearn_dpsco._fast._rows import column_affine
from sklearn_dpsco._solvers._core._data import DeferredRowScale, GLMData, RowScaledData, row_norms_of, safe_row_norms
from sklearn_dpsco.linear_model import _base


def _rows(n=20000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.array([1.0, 1e3, 1e-3, 5.0, 1.0, 2e5])[:d] + np.array([0, 2000.0, 0, 1, 0, 0])[:d]
    return X, rng.standard_normal(n)


@pytest.mark.parametrize("factor", [1.0, 0.37, 3.0e-6])
def test_deferred_map_equals_the_eager_map(factor):
    X, y = _rows()
    centre = np.linspace(-3.0, 2000.0, X.shape[1])
    inv = 1.0 / np.array([1.0, 750.0, 1.0, 3.5, 1.0, 1.3e5])
    eager = column_affine(X, centre, inv) * factor
    lazy = DeferredRowScale(X, factor, centre, inv)
    np.testing.assert_array_equal(lazy.rows(), eager)
    np.testing.assert_array_equal(lazy.rows(8191, 12345), eager[8191:12345])
    # the norms of the mapped rows in one pass: the mapped entries' own roundings, the squares summed in
    # another order than einsum's (a few ulps at most)
    np.testing.assert_allclose(row_norms_of(lazy), safe_row_norms(eager), rtol=4e-16 * X.shape[1], atol=0)
    data = RowScaledData(lazy, y, None, 1.0)
    ref = GLMData(eager, y, None, 1.0)
    centre_w = np.full(X.shape[1] + 1, 0.1)
    for start, stop in [(0, 5000), (5000, 20000), (123, 124)]:
        a, b = data.centred_block(centre_w, start, stop), ref.centred_block(centre_w, start, stop)
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(data.materialized().X, eager)
    assert row_norms_of(X) is not None and np.array_equal(row_norms_of(X), safe_row_norms(X))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_growth_fit_with_the_map_deferred_is_the_eager_fit(delta, monkeypatch):
    # the same fit with the template's eager path forced (the estimator declines to defer): the same release
    X, y = _rows(n=12000, d=4, seed=1)
    y = X[:, 0] + 0.001 * X[:, 1] + 0.1 * y

    def fit():
        est = DPGrowthAdaptiveRegressor(epsilon=1.0, delta=delta, random_state=3,
                                        accountant=BudgetAccountant(float("inf"), 1.0))
        return est.fit(X, y)

    lazy = fit()
    assert lazy.column_scale_ is not None
    monkeypatch.setattr(DPGrowthAdaptiveRegressor, "_defers_row_scaling", lambda self, inputs, X: False)
    eager = fit()
    np.testing.assert_array_equal(lazy.coef_, eager.coef_)
    assert lazy.intercept_ == eager.intercept_
    assert lazy.privacy_event_ == eager.privacy_event_ and lazy.row_bound_ == eager.row_bound_
    assert _base.DeferredRowScale is DeferredRowScale


def test_mapped_row_norms_take_the_safe_fallback_on_extreme_rows():
    X, _ = _rows(n=40, d=6)
    X[3] = 1e200  # squares overflow
    X[5] = 1e-300  # squares underflow (after the map: the centre below makes the row tiny)
    X[7, 2] = np.inf
    X[9, 4] = np.nan
    centre = np.zeros(6)
    centre_tiny = X[5].copy()
    inv = np.full(6, 0.5)
    for c in (centre, centre_tiny):
        eager = column_affine(X, c, inv) * 2.0
        with np.errstate(invalid="ignore"):  # the inf row's fallback divides inf by inf (NaN), as before
            got, want = row_norms_of(DeferredRowScale(X, 2.0, c, inv)), safe_row_norms(eager)
        np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True)
        assert np.isfinite(got[3]) and got[3] > 1e199 and np.isnan(got[9])
