"""Clipped columns (doc/privacy/column_scaling.rst, "Clipped columns"; issue 16, PSID).

The column map's mapped columns are clipped at ``k`` released spreads (``COLUMN_CLIP`` for the quartile maps,
``COLUMN_MAD_CLIP`` for the median and spread), a public constant applied per row to the released map:
post-processing of the releases. Fails if the clip changed what is released or charged (the fit's privacy event,
the released centres and scales), if it read anything but the released map and a constant, if one replaced row
could move another mapped row, if the deferred (block by block) rows differed from the eager ones, or if
prediction did not clip the raw columns as the fit clipped the mapped ones.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from sklearn_dpsco._solvers._core._data import DeferredRowScale, row_norms_of
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model import _column_scaling
from sklearn_dpsco.linear_model._column_scaling import COLUMN_CLIP, COLUMN_MAD_CLIP, ColumnScaling
from sklearn_dpsco.testing import mixed_units


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _with_codes(n, seed=0):
    """mixed_units plus a small-spread count with missing-value codes 98 / 99 on 5 % of the rows."""
    X, y_cls, y_reg = mixed_units(n=n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    kids = rng.poisson(1.5, n).astype(float)
    kids[rng.random(n) < 0.05] = 99.0
    return np.column_stack([X, kids]), y_cls, y_reg


# 6000 x 5 at epsilon 1: the quartiles (two stages); 1200 x 5: the median and spread band
CASES = [(cls, n) for cls in (DPHingeClassifier, DPLinearRegressor, DPGrowthAdaptiveRegressor) for n in (6000, 1200)]
IDS = [f"{cls.__name__}-{n}" for cls, n in CASES]


def _fit(cls, n, **kw):
    X, y_cls, y_reg = _with_codes(n)
    y = y_cls if cls is DPHingeClassifier else y_reg
    return cls(epsilon=1.0, random_state=2, accountant=_ledger(), **kw).fit(X, y), X


def _mode(est):
    info = est.fit_info_[0] if isinstance(est.fit_info_, list) else est.fit_info_
    return info["column_scaling"]["mode"]


@pytest.mark.parametrize("cls,n", CASES, ids=IDS)
def test_the_clip_changes_neither_the_event_nor_the_released_map(cls, n, monkeypatch):
    clipped, X = _fit(cls, n)
    monkeypatch.setattr(_column_scaling, "COLUMN_CLIP", None)
    monkeypatch.setattr(_column_scaling, "COLUMN_MAD_CLIP", None)
    plain, _ = _fit(cls, n)
    assert _mode(clipped) == ("quartiles" if n == 6000 else "median_mad")
    assert clipped.privacy_event_ == plain.privacy_event_  # post-processing: nothing more is charged
    assert clipped.epsilon_spent_ == plain.epsilon_spent_ and clipped.delta_spent_ == plain.delta_spent_
    np.testing.assert_array_equal(clipped.column_center_, plain.column_center_)  # the same releases, draw for draw
    np.testing.assert_array_equal(clipped.column_scale_, plain.column_scale_)
    assert plain.column_bounds_ is None
    k = COLUMN_CLIP if n == 6000 else COLUMN_MAD_CLIP
    lo, hi = clipped.column_bounds_
    passthrough = np.isinf(hi)
    np.testing.assert_allclose(hi[~passthrough], (clipped.column_center_ + k * clipped.column_scale_)[~passthrough])
    np.testing.assert_allclose(lo[~passthrough], (clipped.column_center_ - k * clipped.column_scale_)[~passthrough])
    assert np.all(np.isneginf(lo[passthrough]))
    # the codes sit beyond k spreads of the count column: the clip is what changed the fit
    assert X[:, -1].max() > hi[-1]


def test_the_map_clips_every_column_but_the_passed_through_ones():
    X, _, _ = _with_codes(500)
    X = np.column_stack([X, np.where(np.arange(500) % 40 == 0, 7.0, 0.0)])  # mostly 0: passed through
    q = np.array([np.quantile(X, 0.25, axis=0), np.quantile(X, 0.75, axis=0)])
    plain = ColumnScaling.from_quartiles(q)
    assert plain.passthrough[-1] and not plain.passthrough[:-1].any()
    clipped = plain.with_clip(3.0)
    z, z_plain = clipped.transform(X), plain.transform(X)
    np.testing.assert_array_equal(z[:, :-1], np.clip(z_plain[:, :-1], -3.0, 3.0))
    np.testing.assert_array_equal(z[:, -1], z_plain[:, -1])  # 7.0 stays: no released spread to count in
    assert np.abs(z_plain[:, -2]).max() > 3.0 and np.abs(z[:, :-1]).max() == 3.0
    # the same map on the other path (not a float64 ndarray: a list here, a dask array in a cluster fit)
    np.testing.assert_allclose(clipped.transform(X.tolist()), z, rtol=1e-12, atol=1e-12)


def test_one_replaced_row_moves_one_mapped_row():
    # the clip is applied row by row with a constant and the released map: a neighbour's mapped rows differ from
    # the original's in the replaced row only, so every later count (row bound, solver) keeps its sensitivity
    X, _, _ = _with_codes(300)
    q = np.array([np.quantile(X, 0.25, axis=0), np.quantile(X, 0.75, axis=0)])
    columns = ColumnScaling.from_quartiles(q).with_clip(COLUMN_CLIP)
    base = columns.transform(X)
    for i in (0, 17, 299):
        for value in (-1e300, 0.0, 99.0, 1e300):
            Xn = X.copy()
            Xn[i] = value
            changed = np.flatnonzero(np.any(columns.transform(Xn) != base, axis=1))
            assert set(changed) <= {i}
            assert np.abs(columns.transform(Xn)[i]).max() <= COLUMN_CLIP


def test_deferred_rows_are_the_eager_rows():
    X, _, _ = _with_codes(5000)
    q = np.array([np.quantile(X, 0.25, axis=0), np.quantile(X, 0.75, axis=0)])
    columns = ColumnScaling.from_quartiles(q).with_clip(COLUMN_CLIP)
    for factor in (1.0, 1.0 / 3.7):
        deferred = DeferredRowScale(np.ascontiguousarray(X), factor, *columns.affine(), columns.clip_bounds())
        eager = columns.transform(X) * factor
        np.testing.assert_array_equal(deferred.rows(), eager)
        np.testing.assert_array_equal(deferred.rows(100, 250), eager[100:250])
        np.testing.assert_allclose(row_norms_of(deferred), np.linalg.norm(eager, axis=1), rtol=1e-13)


@pytest.mark.parametrize("cls,n", CASES, ids=IDS)
def test_prediction_clips_the_raw_columns_as_the_fit_clipped_the_mapped_ones(cls, n):
    est, X = _fit(cls, n)
    lo, hi = est.column_bounds_
    Xt = X[:200].copy()
    Xt[:20, -1] = 99.0  # codes
    Xt[20:40, 0] = -1e6
    at_bound = np.clip(Xt, lo, hi)
    predict = est.decision_function if cls is DPHingeClassifier else est.predict
    np.testing.assert_allclose(predict(Xt), predict(at_bound), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(predict(sp.csr_matrix(Xt)), predict(Xt), rtol=1e-12, atol=1e-9)
    if cls is not DPLinearRegressor:  # no row clip at prediction: the clipped columns' linear function
        np.testing.assert_allclose(predict(Xt), np.ravel(at_bound @ np.atleast_2d(est.coef_).T) + est.intercept_,
                                   rtol=1e-12, atol=1e-9)


def test_without_a_column_map_nothing_is_clipped():
    X, _, y = _with_codes(1200)
    est = DPLinearRegressor(epsilon=1.0, column_scaling=False, random_state=0, accountant=_ledger()).fit(X, y)
    assert est.column_bounds_ is None and est.column_center_ is None
    # user level keeps the plain affine map (not measured there)
    assert UserLevelDPLogistic._CLIPS_COLUMNS is False and DPLinearRegressor._CLIPS_COLUMNS is True


def test_median_and_spread_size_a_missed_spread_by_its_released_centre():
    # a spread released below the floor (2 a < 1) on a column far from 0/1 is a miss, not a spread to count in: at
    # scale 1 the clip would turn the column into its sign, and unclipped it would dominate every row's norm. It is
    # scaled by |m| and clipped like the others; the rule reads the released m and a only (public)
    from sklearn_dpsco._budget import Budget
    from sklearn_dpsco.linear_model._column_scaling import ColumnScalingPlan

    rng = np.random.default_rng(0)
    n = 4000
    atom = np.where(rng.random(n) < 0.7, 16384.0, 16384.0 + 5000.0 * rng.standard_normal(n))  # on the grid: MAD 0
    wide = 1000.0 * rng.standard_normal(n)
    X = np.column_stack([atom, wide])
    plan = ColumnScalingPlan.build(Budget(200.0), n, 2, True, mode="median_mad")
    columns, _ = plan.release(X, np.random.default_rng(1))
    assert columns.centre[0] == 16384.0 and columns.scale[0] == 16384.0 and columns.scale[1] > 100.0
    np.testing.assert_array_equal(columns.clip_bounds(), [COLUMN_MAD_CLIP, COLUMN_MAD_CLIP])
    z = columns.transform(X)
    np.testing.assert_array_equal(z[:, 0], np.clip((X[:, 0] - 16384.0) / 16384.0, -COLUMN_MAD_CLIP, COLUMN_MAD_CLIP))
    assert np.unique(z[:, 0]).size > 100 and np.abs(z[:, 0]).max() < 2.0  # not its sign, not dominant
    assert np.abs(columns.transform(X)[:, 1]).max() <= COLUMN_MAD_CLIP
