"""The "auto" label bound's values with labels tied at the centre (linear_model/_auto_scales.py,
``label_deviations``; doc/privacy/quantiles.rst, "Use in the estimators").

Labels exactly at the released centre ``c`` are split between the grid's two ends by position (even
positions 0, odd +inf), so a 0/1 label with most rows at 0 keeps a bound near 1 instead of the grid's
floor. Each value is a function of one row and its position: replacing a row moves one value, so every
cumulative grid count moves by at most 1, in one direction (the quantile release's sensitivity).
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid
from sklearn_dpsco.linear_model import _auto_scales
from sklearn_dpsco.linear_model._auto_scales import finite, label_deviations


def _counts(y, centre, rule=label_deviations):
    values = finite(rule((np.zeros((y.size, 1)), [y], None), {"label_center": centre}))
    return ScaleGrid().counts(np.abs(values))


def test_ties_at_the_centre_split_by_position_and_other_labels_untouched():
    y = np.array([0.0, 0.0, 1.0, 0.0, 0.0, -2.0, 0.0])
    v = label_deviations((None, [y], None), {"label_center": 0.0})
    np.testing.assert_array_equal(v, [0.0, np.inf, 1.0, np.inf, 0.0, 2.0, 0.0])
    # no tie: |y - c| exactly, as before
    np.testing.assert_array_equal(label_deviations((None, [y + 0.5], None), {"label_center": 0.25}),
                                  np.abs(y + 0.25))


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.51, 0.9])
def test_one_replaced_row_moves_each_count_by_at_most_one(fraction, tie_vote_rule):
    """Exact sensitivity with ties: replacing any row (tie <-> non-tie, or far away) moves every cumulative
    count by at most 1 in one direction, and 1 is attained; the data-dependent vote mutant moves ~n/2."""
    rng = np.random.default_rng(3)
    n = 200
    y = np.where(rng.random(n) < fraction, 0.0, rng.choice([1.0, 2.0, 7.5], n))
    base = _counts(y, 0.0)
    worst = 0
    for i in range(n):
        for value in (0.0, 1.0, 1e6):
            y2 = y.copy()
            y2[i] = value
            diff = _counts(y2, 0.0) - base
            assert np.abs(diff).max() <= 1 and (np.all(diff >= 0) or np.all(diff <= 0))
            worst = max(worst, int(np.abs(diff).max()))
    assert worst == 1
    # the mutant, at the vote's edge: one more tie sends every tie to the other end
    y = np.r_[np.zeros(n // 2), np.ones(n // 2)]
    y2 = y.copy()
    y2[-1] = 0.0
    diff = _counts(y2, 0.0, tie_vote_rule) - _counts(y, 0.0, tie_vote_rule)
    assert np.abs(diff).max() > n // 4


@pytest.mark.parametrize("make", [lambda: DPLinearRegressor(epsilon=1.0, solver="adassp", random_state=0),
                                  lambda: DPGrowthAdaptiveRegressor(epsilon=1.0, random_state=0)])
def test_a_zero_one_label_with_most_rows_at_zero_keeps_a_useful_bound(make):
    """Before: 70 % zeros put the median of |y - c| at 0 and the bound at the grid's floor (2.9e-6):
    every label was clipped to it and the model predicted the centre."""
    rng = np.random.default_rng(0)
    n = 8000
    X = rng.standard_normal((n, 3))
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0.5).astype(float)
    est = make().fit(X[:6000], y[:6000])
    assert est.label_center_ == 0.0 and 1.0 <= est.label_bound_ <= 6.0
    assert est.score(X[6000:], y[6000:]) > 0.1


def test_audit_flags_the_vote_mutant_and_passes_the_position_split(tie_vote_rule, vote_edge_audit):
    """The released bound's law moves by at most e^epsilon at the vote's edge; the vote mutant's bound jumps to
    the top."""
    vote_edge_audit(_auto_scales.LABEL_SPREAD, _auto_scales.ScaleTarget("label_bound", 0.5, 3.0, tie_vote_rule))


@pytest.mark.parametrize("stride", [1, 4])
def test_replacing_any_row_moves_the_strided_counts_by_at_most_one(stride):
    """The estimates read rows 0, k, 2k, ... (every_kth_row): a replaced row, read or not, moves at most one
    value (positions are public), so every cumulative count of the label spread moves by at most 1."""
    rng = np.random.default_rng(7)
    n = 120
    y = np.where(rng.random(n) < 0.6, 0.0, rng.choice([1.0, 3.0], n))

    def counts(labels):
        rows = _auto_scales.every_kth_row((np.zeros((n, 1)), [labels], None), stride)
        return ScaleGrid().counts(np.abs(finite(label_deviations(rows, {"label_center": 0.0}))))  # cumulative

    base = counts(y)
    worst = 0
    for i in range(n):
        for value in (0.0, 1.0, 1e9):
            y2 = y.copy()
            y2[i] = value
            diff = counts(y2) - base
            assert np.abs(diff).max() <= 1
            worst = max(worst, int(np.abs(diff).max()))
            if i % stride:
                assert not diff.any()  # a row not read moves nothing
    assert worst == 1


@pytest.mark.parametrize("stride", [4096, 8192])
def test_cluster_counts_number_ties_by_their_place_among_all_rows_read(stride):
    """At a stride equal to the block size each row-chunk holds ONE row read: numbered from 0 in its chunk,
    every tie read 0 (all ties at one end, the collapse the split exists to avoid) and the cluster's counts
    differed from the in-memory ones. The chunk's offset among the rows read now numbers them as in memory."""
    da = pytest.importorskip("dask.array")
    from sklearn_dpsco._solvers._core._cluster import DEFAULT_BLOCK_ROWS
    from sklearn_dpsco.linear_model._auto_scales import LABEL_SPREAD, cluster_grid_counts, every_kth_row

    assert stride <= DEFAULT_BLOCK_ROWS == 8192
    n = 7 * DEFAULT_BLOCK_ROWS
    y = np.zeros(n)
    y[1::3] = 2.0
    X = np.ones((n, 2))
    grid, released = ScaleGrid(), {"label_center": 0.0}
    rows = every_kth_row((X, [y], None), stride)
    memory = grid.counts(np.abs(finite(LABEL_SPREAD.values(rows, released))))
    data = (da.from_array(X, chunks=(DEFAULT_BLOCK_ROWS, 2)), [da.from_array(y, chunks=DEFAULT_BLOCK_ROWS)], None)
    cluster, m = cluster_grid_counts(data, LABEL_SPREAD, released, grid, step=stride)
    assert m == rows[0].shape[0]
    np.testing.assert_array_equal(cluster, memory)
    values = LABEL_SPREAD.values(rows, released)
    read = rows[1][0]
    assert np.isinf(values).sum() == (read[1::2] == 0.0).sum() > 0 and (values == 0.0).sum() == (read[::2] == 0.0).sum()
