"""The "auto" scale estimates read every k-th row at large ``n epsilon`` (row level only).

``k`` is a public power of two (n and one estimate's epsilon, ``scale_sample_stride``); replacing one
row changes at most one selected row, so each release keeps its epsilon and the fit's event does not
depend on ``k``. At user level (rows not at public positions) every row is read.
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid
from sklearn_dpsco._solvers import safe_row_norms
from sklearn_dpsco._solvers._core._cluster import DEFAULT_BLOCK_ROWS
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model import _auto_scales
from sklearn_dpsco.linear_model._auto_scales import (
    LABEL_CENTRE,
    SCALE_SAMPLE_RANKS,
    _chunk_counts,
    finite,
    scale_sample_stride,
)


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1e-3)


def _info(est):
    return est.fit_info_[0] if isinstance(est.fit_info_, list) else est.fit_info_


def _data(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = 3.0 * rng.standard_normal((n, d)) + 1.0
    y = 20.0 + X @ np.linspace(1.0, -0.5, d) + rng.standard_normal(n)
    return X, y


def test_stride_rule_is_public_and_keeps_the_rank_budget():
    assert scale_sample_stride(1000, 0.01) == 1
    assert scale_sample_stride(200_000, 0.047 / 3) == 8  # bench_speed's 2e5 x 20 at epsilon 1
    for n, e in ((200_000, 0.047 / 3), (10**6, 0.02), (5000, 1.0), (10**9, 1.0)):
        k = scale_sample_stride(n, e)
        assert k & (k - 1) == 0 and k <= DEFAULT_BLOCK_ROWS and DEFAULT_BLOCK_ROWS % k == 0
        assert k == 1 or -(-n // k) * e >= SCALE_SAMPLE_RANKS
        assert k == DEFAULT_BLOCK_ROWS or -(-n // (2 * k)) * e < SCALE_SAMPLE_RANKS


@pytest.mark.parametrize("make", [DPLinearRegressor, DPGrowthAdaptiveRegressor,
                                  lambda **kw: DPHingeClassifier(**kw)])
def test_estimates_read_every_kth_row_and_spend_the_same_event(make, monkeypatch):
    X, y = _data(4000)
    if make is not DPLinearRegressor and make is not DPGrowthAdaptiveRegressor:
        y = np.where(y > np.median(y), 1, -1)
    seen = []
    monkeypatch.setattr(_auto_scales, "finite", lambda v: seen.append(np.array(v)) or finite(v))
    full = make(epsilon=1.0, column_scaling=False, random_state=0, accountant=_ledger()).fit(X, y)
    assert _info(full)["scale_row_stride"] == 1
    seen.clear()
    monkeypatch.setattr(_auto_scales, "SCALE_SAMPLE_RANKS", 5.0)
    est = make(epsilon=1.0, column_scaling=False, random_state=0, accountant=_ledger()).fit(X, y)
    k = _info(est)["scale_row_stride"]
    assert k > 1
    # the first estimate reads the row norms (the row bound, or the hinge's clip) of rows 0, k, 2k, ...
    np.testing.assert_array_equal(seen[0], safe_row_norms(X[::k]))
    if make is not DPLinearRegressor and make is not DPGrowthAdaptiveRegressor:
        return
    np.testing.assert_array_equal(seen[1], y[::k])  # the label centre's values
    assert est.privacy_event_ == full.privacy_event_


def test_user_level_reads_every_user(monkeypatch):
    rng = np.random.default_rng(2)
    n = 3000
    X = rng.standard_normal((n, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    users = np.repeat(np.arange(n // 3), 3)
    monkeypatch.setattr(_auto_scales, "SCALE_SAMPLE_RANKS", 1.0)
    est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, data_norm="auto", random_state=0,
                              accountant=_ledger()).fit(X, y, groups=users)
    assert _info(est)["scale_row_stride"] == 1


def test_cluster_chunks_count_the_same_rows():
    """Row-chunks aligned to DEFAULT_BLOCK_ROWS (as map_chunks makes them), each read at the step: their
    summed counts are those of every k-th row of the whole array."""
    X, y = _data(3 * DEFAULT_BLOCK_ROWS + 517)
    grid = ScaleGrid(per_octave=8, signed=True)
    for k in (1, 4, 64):
        total, m = 0, 0
        for a in range(0, X.shape[0], DEFAULT_BLOCK_ROWS):
            b = min(a + DEFAULT_BLOCK_ROWS, X.shape[0])
            c, size = _chunk_counts(LABEL_CENTRE, {}, grid, 1, X[a:b], y[a:b], None, step=k)
            total, m = total + c, m + size
        np.testing.assert_array_equal(total, grid.counts(y[::k]))
        assert m == y[::k].size


def _sampled_counts(y, k, offset_rule=None):
    """The label estimates' grid counts over the rows the stride selects (``offset_rule``: a mutant that picks
    the first selected row from the data instead of the public position 0)."""
    X = np.zeros((y.size, 1))
    start = 0 if offset_rule is None else offset_rule(y[:k])
    _, (t,), _ = _auto_scales.every_kth_row((X[start:], [y[start:]], None), k)
    return ScaleGrid(signed=True).counts(t)


@pytest.mark.parametrize("k", [2, 8])
def test_one_replaced_row_moves_each_sampled_count_by_at_most_one(k):
    """Exact sensitivity of the strided estimates: the selection is by position, so replacing row i (selected
    or not) changes at most one selected value, every grid count by at most 1, in one direction; a mutant whose
    first row depends on the data moves counts by far more (it re-selects every row)."""
    rng = np.random.default_rng(5)
    y = rng.standard_normal(64 * k) * 10.0
    base = _sampled_counts(y, k)
    worst = 0
    for i in range(0, 64 * k, max(1, k // 2)):
        y2 = y.copy()
        y2[i] = rng.choice([-1e6, 1e6, 0.0])
        diff = _sampled_counts(y2, k) - base
        assert np.abs(diff).max() <= 1 and (np.all(diff >= 0) or np.all(diff <= 0))
        worst = max(worst, int(np.abs(diff).max()))
    assert worst == 1  # attained: a selected row moved across the grid
    # mutant: the offset read off the data (argmax of the first k values)
    y2 = y.copy()
    y2[int(np.argmax(y[:k]))] = -1e6
    diff = _sampled_counts(y2, k, np.argmax) - _sampled_counts(y, k, np.argmax)
    assert np.abs(diff).max() > 1
