"""Compiled row loops that replace a per-row method call or a NumPy copy: the same floats, the same bytes (speed only)."""

import numpy as np
import pytest

from sklearn_dpsco._fast._losses import Absolute
from sklearn_dpsco._fast._objective import Objective
from sklearn_dpsco._fast._rows import RowData


@pytest.mark.parametrize("intercept_scaling", [0.0, 1.0])
@pytest.mark.parametrize("clip", [1.0, 3e-7, 1e300, np.inf])
def test_k_values_are_row_k(intercept_scaling, clip):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 7)) * 10.0 ** rng.uniform(-200, 200, size=(3000, 1))
    X[5], X[7] = 0.0, 1e-320
    rows = RowData(np.ascontiguousarray(X), intercept_scaling=intercept_scaling)
    d = 7 + (intercept_scaling > 0)
    obj = Objective(rows, rng.standard_normal(3000), Absolute(), 0.1, np.zeros(d), clip, None, 3, 2990)
    norms = rows.row_norms()[3:2990]
    # row_k (_objective.pxd): inf for a zero row or an infinite clip, else C / ||x_i|| * (1 - (d + 8) 2^-53)
    # capped at the largest double
    with np.errstate(all="ignore"):
        k = clip / norms * (1.0 - (d + 8) * 2.0**-53)
    top = np.finfo(np.float64).max
    expected = np.where(norms == 0.0, np.inf, np.where(k <= top, k, top))
    if clip == np.inf:
        expected[:] = np.inf
    assert np.array_equal(obj.k_values().view(np.int64), expected.view(np.int64))
    assert Objective(rows, np.zeros(3000), Absolute(), 0.1, np.zeros(d), clip, None, 4, 4).k_values().shape == (0,)


@pytest.mark.parametrize("shape", [(0, 3), (5, 0), (1, 4), (17, 3), (1000, 20), (1001, 9)])
@pytest.mark.parametrize("k", [1, 2, 4, 7, 16, 2000])
def test_every_kth_row_copy_is_numpy_copy(shape, k):
    from sklearn_dpsco._fast._rows import every_kth_row_copy

    X = np.random.default_rng(1).standard_normal(shape)
    out = every_kth_row_copy(X, k)
    expected = np.ascontiguousarray(X[::k])
    assert out.shape == expected.shape and out.flags.c_contiguous and out.tobytes() == expected.tobytes()
    assert not np.may_share_memory(out, X)
