"""The data layer under dask fits, without a cluster: chunk alignment, counts-based quantile releases,
and the ordered fold of the row sources (the in-memory AdaSSP statistics unchanged)."""

import numpy as np
import pytest

from sklearn_dpsco._mechanisms._calibrate import quantile_mechanism_for
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._solvers import ArraySource
from sklearn_dpsco._solvers._adassp import _clipped_block, adassp_plan, adassp_statistics
from sklearn_dpsco._solvers._core._cluster import aligned_chunks


@pytest.mark.parametrize("chunks, block", [
    ((3000,) * 7, 8192), ((20000, 1, 5, 30000), 8192), ((100,), 8192), ((8192, 8192, 5), 8192), ((7, 7, 7), 2),
])
def test_aligned_chunks_cover_the_rows_on_block_boundaries(chunks, block):
    sizes = aligned_chunks(chunks, block)
    assert sum(sizes) == sum(chunks) and all(s > 0 for s in sizes)
    assert all(b % block == 0 for b in np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("signed", [False, True])
def test_release_from_summed_counts_is_the_release_from_values(noise, signed):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(5000) * 3
    values = values if signed else np.abs(values)
    grid = ScaleGrid(signed=signed)
    mech = quantile_mechanism_for(0.5, Budget(0.5, 0.0, noise), grid)
    parts = np.array_split(values, 7)
    counts = sum(grid.counts(p) for p in parts)
    assert np.array_equal(counts, grid.counts(values))
    assert mech.utility_from_counts(counts, values.size) == mech.utility(values)
    for seed in range(5):
        assert mech.release_counts(counts, values.size, np.random.default_rng(seed)) == mech.release(
            values, np.random.default_rng(seed))


def test_adassp_fold_is_the_plain_block_sum():
    # the fold primitive must reproduce the former loop ``A += Xc^T Xc; b += Xc^T y`` exactly
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((20000, 6)), rng.standard_normal(20000)
    plan = adassp_plan(20000, 7, epsilon=1.0, delta=0.0, row_bound=1.5, label_bound=1.0, intercept_scaling=0.3)
    A, b = np.zeros((7, 7)), np.zeros(7)
    for Xb, yb, wb in ArraySource(X, y).blocks():
        Xc, yc, sw = _clipped_block(Xb, yb, wb, plan)
        A += Xc.T @ (Xc * sw[:, None])
        b += Xc.T @ (sw * yc)
    A2, b2 = adassp_statistics(ArraySource(X, y), plan)
    assert np.array_equal(A, A2) and np.array_equal(b, b2)
