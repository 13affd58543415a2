"""A release at the end of the library's quantile grids (|value| >= 2^20) is reported, read from the releases."""

import warnings

import numpy as np
import pytest

from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco._mechanisms._scale_grid import GRID_END, ScaleGrid


def test_grid_end_is_the_last_point_of_every_default_grid():
    from sklearn_dpsco.linear_model._auto_scales import CENTRE_GRID, FINE_CENTRE_GRID
    from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID

    for grid in (ScaleGrid(), BOUNDS_GRID, CENTRE_GRID, FINE_CENTRE_GRID):
        assert grid.points.max() == GRID_END == 2.0**20


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, X @ [1.0, -1.0, 0.5] + 0.1 * rng.standard_normal(n)


def _grid_warnings(record):
    return [str(w.message) for w in record if "end of the library's grid" in str(w.message)]


@pytest.mark.parametrize("est", [DPLinearRegressor, DPGrowthAdaptiveRegressor, DPHingeClassifier])
def test_a_column_beyond_the_grid_is_named(est):
    X, y = _data()
    X[:, 1] = X[:, 1] * 1e6 + 3e6  # column 1 around 3e6: its quartiles sit at the grid's end
    y = (y > 0).astype(int) if est is DPHingeClassifier else y
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        m = est(epsilon=1.0, random_state=0, accountant=BudgetAccountant(float("inf"), 1.0)).fit(X, y)
    found = _grid_warnings(record)
    assert len(found) == 1 and "column(s) [1]" in found[0] and "2^20" in found[0]
    info = m.fit_info_[0] if isinstance(m.fit_info_, list) else m.fit_info_
    assert info["warnings"] == found
    assert np.abs(m.column_center_[1]) >= GRID_END


def test_labels_beyond_the_grid_are_reported():
    X, y = _data()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        DPGrowthAdaptiveRegressor(epsilon=1.0, random_state=0,
                                  accountant=BudgetAccountant(float("inf"), 1.0)).fit(X, y * 1e8 + 5e8)
    found = _grid_warnings(record)
    assert any("label" in m for m in found)


@pytest.mark.parametrize("est", [DPLinearRegressor, DPGrowthAdaptiveRegressor, DPHingeClassifier])
def test_ordinary_magnitudes_do_not_warn(est):
    X, y = _data()
    X[:, 1] = X[:, 1] * 1e4 + 3e4  # large, but well inside the grid
    y = (y > 0).astype(int) if est is DPHingeClassifier else y * 1e3
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        m = est(epsilon=1.0, random_state=0, accountant=BudgetAccountant(float("inf"), 1.0)).fit(X, y)
    assert _grid_warnings(record) == []
    info = m.fit_info_[0] if isinstance(m.fit_info_, list) else m.fit_info_
    assert "warnings" not in info


def test_as_an_error_the_paid_model_is_kept():
    """Read after the spend: with warnings as errors the fit raises, and the estimator keeps the model it paid for
    (one ledger entry, the fitted attributes set)."""
    X, y = _data()
    X[:, 0] = X[:, 0] * 1e6 + 3e6
    ledger = BudgetAccountant(10.0)
    est = DPLinearRegressor(epsilon=1.0, random_state=0, accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match="end of the library's grid"):
            est.fit(X, y)
    assert ledger.total()[0] == pytest.approx(1.0) and len(ledger.ledger) == 1
    assert hasattr(est, "coef_") and est.epsilon_spent_ == pytest.approx(1.0)
    assert np.all(np.isfinite(est.predict(X)))


def test_the_scaler_names_a_feature_beyond_the_grid():
    from sklearn_dpsco.preprocessing import DPStandardScaler

    X, _ = _data()
    X[:, 2] = X[:, 2] * 1e6 + 3e6
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        s = DPStandardScaler(epsilon=1.0, random_state=0, accountant=BudgetAccountant(float("inf"), 1.0)).fit(X)
    found = _grid_warnings(record)
    assert len(found) == 1 and "feature(s) [2]" in found[0] and s.fit_info_["warnings"] == found
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        DPStandardScaler(epsilon=1.0, random_state=0, accountant=BudgetAccountant(float("inf"), 1.0)).fit(X[:, :2])
    assert _grid_warnings(record) == []
