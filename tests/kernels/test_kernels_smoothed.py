"""The smoothed absolute screen's compiled Newton passes (``_fast/_smoothed.pyx``) and the growth fit's deferred rows.

``huber_step`` is checked against the NumPy formulas it fuses (dense, CSR,
intercept column, weights, row ranges, backtracked steps); the fused Newton
against the NumPy/BLAS ``huber_newton`` it replaced (the same minimizer);
``RowScaledData`` against the eager scaled ``GLMData`` (the same floats); a
screening point's products against a fresh pass.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._fast._losses import Absolute
from sklearn_dpsco._fast._rows import RowData
from sklearn_dpsco._fast import _smoothed
from sklearn_dpsco._fast._smoothed import huber_step, huber_value
from sklearn_dpsco._solvers._core._data import DeferredRowScale, GLMData, RowScaledData
from sklearn_dpsco._solvers._optim import _warm_start
from sklearn_dpsco._solvers._optim._working_set import screening_point


def _data(seed, n=700, d=5, sparse=False, intercept=0.0, weights=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    if sparse:
        X[rng.uniform(size=X.shape) < 0.4] = 0.0
    y = X @ rng.normal(size=d) + 0.3 * rng.standard_t(2, size=n)
    sw = rng.uniform(0, 1, size=n) if weights else None
    return GLMData(sp.csr_matrix(X) if sparse else X, y, sw, intercept), X


def _augmented(X, intercept):
    return np.hstack([X, np.full((X.shape[0], 1), intercept)]) if intercept > 0 else X


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("t", [1.0, 0.25])
def test_huber_step_is_the_numpy_pass(sparse, intercept, weights, t):
    data, X = _data(0, sparse=sparse, intercept=intercept, weights=weights)
    rows = RowData(data.X, intercept)
    start, stop, k = 37, 650, 0.2
    n, d = stop - start, rows.n_features
    rng = np.random.default_rng(1)
    Xa = _augmented(X, intercept)[start:stop]
    y = np.ascontiguousarray(data.y[start:stop])
    sw = None if data.sample_weight is None else np.ascontiguousarray(data.sample_weight[start:stop])
    s = np.ones(n) if sw is None else sw
    z, p = rng.normal(size=n), rng.normal(size=d)
    h = (rng.uniform(size=n) < 0.5).astype(np.uint8)
    dz, z_new, h_new = np.empty(n), np.empty(n), np.empty(n, dtype=np.uint8)
    grad, enter, leave = np.full(d, 7.0), np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    total, ne, nl = huber_step(rows, start, stop, y, k, sw, p, z, t, dz, z_new, h, h_new, grad, enter, leave)
    # the NumPy formulas of the step
    ref_dz = Xa @ p
    r = z + t * ref_dz - y
    g = np.clip(r, -k, k)
    np.testing.assert_allclose(dz, ref_dz, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(z_new, z + t * ref_dz, rtol=1e-13, atol=1e-13)
    assert np.array_equal(h_new.astype(bool), np.abs(r) <= k)
    np.testing.assert_allclose(total, s @ (g * (r - 0.5 * g)), rtol=1e-12)
    np.testing.assert_allclose(grad, Xa.T @ (s * g), rtol=1e-11, atol=1e-12)
    assert np.array_equal(enter[:ne], np.flatnonzero((h_new == 1) & (h == 0)))
    assert np.array_equal(leave[:nl], np.flatnonzero((h_new == 0) & (h == 1)))
    # a backtracked step reads the stored dz: the same pass; the trial value is the same sum
    again = huber_step(rows, start, stop, y, k, sw, None, z, t, dz, z_new, h, h_new, grad, enter, leave)
    assert again == (total, ne, nl)
    assert huber_value(y, k, sw, z, dz, t) == total


def test_huber_step_checks_its_buffers():
    data, _ = _data(2)
    rows = RowData(data.X)
    n = data.n_samples
    args = dict(dz=np.empty(n), z_new=np.empty(n), h=None, h_new=np.empty(n, dtype=np.uint8),
                grad=np.empty(rows.n_features), enter=np.empty(n, dtype=np.intp), leave=np.empty(n, dtype=np.intp))
    with pytest.raises(ValueError):
        huber_step(rows, 0, n + 1, data.y, 0.1, None, np.zeros(rows.n_features), np.zeros(n), 1.0, **args)
    with pytest.raises(ValueError):
        huber_step(rows, 0, n, data.y, 0.1, None, np.zeros(rows.n_features + 1), np.zeros(n), 1.0, **args)
    with pytest.raises(ValueError):
        huber_step(rows, 0, n, data.y[:-1], 0.1, None, np.zeros(rows.n_features), np.zeros(n), 1.0, **args)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 1.0])
@pytest.mark.parametrize("weights", [False, True])
def test_fused_newton_finds_the_numpy_newton_minimizer(sparse, intercept, weights):
    data, _ = _data(3, n=3000, sparse=sparse, intercept=intercept, weights=weights)
    rows = RowData(data.X, intercept)
    start, stop, lam, k = 100, 2900, 1e-3, 0.05
    w0 = np.full(rows.n_features, 0.1)
    sw = None if data.sample_weight is None else np.ascontiguousarray(data.sample_weight[start:stop])
    y = np.ascontiguousarray(data.y[start:stop])
    w, z = _warm_start._fused_huber_newton(rows, data.X[start:stop], start, stop, y, k, sw, lam, w0, 1e-12, None)
    blk = _warm_start._Block(data, start, stop)
    w_ref, z_ref = _warm_start.huber_newton(blk, np.full(stop - start, k), lam, w0, 1e-12)
    np.testing.assert_allclose(w, w_ref, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(z, rows.matvec(w, start, stop), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(z, z_ref, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 1.0])
def test_row_scaled_data_is_the_eager_scaled_data(weights, intercept):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 7))
    y, sw = rng.normal(size=5000), (rng.uniform(size=5000) if weights else None)
    factor = 1.0 / 3.7
    eager = GLMData(X * factor, y, sw, intercept)
    lazy = RowScaledData(DeferredRowScale(X, factor), y, sw, intercept)
    assert (lazy.n_samples, lazy.n_features) == (eager.n_samples, eager.n_features)
    for start, stop in ((0, 1234), (1234, 4999), (3001, None)):
        center = rng.normal(size=eager.n_features)
        a, b = lazy.centred_block(center, start, stop), eager.centred_block(center, start, stop)
        assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and np.array_equal(a.row_norms(), b.row_norms())
        assert (a.sample_weight is None) == (b.sample_weight is None)
        if weights:
            assert np.array_equal(a.sample_weight, b.sample_weight)
    assert lazy._data is None  # the blocks never built the whole copy
    # any other read materialises the eager rows once
    assert np.array_equal(lazy.X, eager.X) and np.array_equal(lazy.row_norms(), eager.row_norms())
    assert lazy.materialized() is lazy.materialized()
    center = rng.normal(size=eager.n_features)
    assert np.array_equal(lazy.centred_block(center, 10, 20).y, eager.centred_block(center, 10, 20).y)
    assert not np.shares_memory(lazy.X, X)  # the caller's rows are never written


@pytest.mark.parametrize("at_zero", [True, False])
def test_a_screening_point_carries_its_products(at_zero):
    data, _ = _data(5, n=2000, intercept=1.0)
    rows = RowData(data.X, 1.0)
    beta = np.zeros(1800) if at_zero else np.random.default_rng(6).uniform(-0.5, 0.5, size=1800)
    cap = np.minimum(0.5 / rows.row_norms()[100:1900], 1.0)
    point = screening_point(data, rows, Absolute(), 1e-2, np.zeros(rows.n_features), cap, 100, 1900, beta)
    assert np.array_equal(point.z, rows.matvec(point.w, 100, 1900))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("hinge", [False, True])
def test_the_screen_passes_are_the_numpy_formulas(sparse, intercept, weights, hinge):
    # screen_rows / screen_centre / screen_check (working_set_dual) against the NumPy passes they fused:
    # the same floats, bit for bit
    data, X = _data(7, n=1003, sparse=sparse, intercept=intercept, weights=weights)
    rng = np.random.default_rng(8)
    if hinge:
        data.y = np.where(data.y > 0, 1.0, -1.0)
    if weights:
        data.sample_weight[rng.uniform(size=data.sample_weight.size) < 0.1] = 0.0
    rows = RowData(data.X, intercept)
    start, stop = 101, 1003
    n = stop - start
    y = data.y[start:stop]
    sw = None if data.sample_weight is None else data.sample_weight[start:stop]
    s1 = np.ones(n) if sw is None else sw
    w = rng.normal(size=rows.n_features)
    z = rows.matvec(w, start, stop)
    z[:3] = y[:3] if not hinge else 1.0 / y[:3]  # rows exactly at their kink
    cap = np.minimum(rng.uniform(0.2, 2.0, size=n), 1.0)
    norms = rows.row_norms()[start:stop]
    threshold = 0.05
    e, in_set, bound = np.empty(n), np.empty(n, dtype=np.uint8), np.empty(n)
    count = _smoothed.screen_rows(rows, start, stop, z, y, sw, threshold, hinge, cap, e, in_set, bound)
    e_ref = y * z - 1.0 if hinge else z - y
    side = np.sign(e_ref)
    in_ref = (np.abs(e_ref) <= norms * threshold) & (s1 > 0)
    bound_ref = np.where(side < 0, cap * y, 0.0) if hinge else np.where(side < 0, cap, -cap)
    assert np.array_equal(e, e_ref) and np.array_equal(in_set.astype(bool), in_ref)
    assert np.array_equal(bound, bound_ref) and count == in_ref.sum() and 0 < count < n
    # a limit at or above the set's size changes nothing; below it the pass stops once the set exceeds it
    for limit in (count, count + 0.5, 1e300):
        e2, in2, bound2 = np.empty(n), np.empty(n, dtype=np.uint8), np.empty(n)
        assert _smoothed.screen_rows(rows, start, stop, z, y, sw, threshold, hinge, cap, e2, in2, bound2, limit) == count
        assert e2.tobytes() == e.tobytes() and in2.tobytes() == in_set.tobytes() and bound2.tobytes() == bound.tobytes()
    for limit in (0.0, count - 1.0, count - 0.5):
        stopped = _smoothed.screen_rows(rows, start, stop, z, y, sw, threshold, hinge, cap, np.empty(n),
                                        np.empty(n, dtype=np.uint8), np.empty(n), limit)
        assert limit < stopped <= count
    beta = rng.uniform(-1, 1, size=n)
    beta_ref = np.where(in_ref, beta, bound_ref)
    shift = np.zeros(rows.n_features)
    _smoothed.screen_centre(rows, start, stop, in_set, beta, bound, sw, 0.3 * n, shift)
    assert np.array_equal(beta, beta_ref)
    assert np.array_equal(shift, rows.rmatvec(np.where(in_ref, 0.0, s1 * beta_ref) / (0.3 * n), start, stop))
    w2 = w + 0.3 * rng.normal(size=w.size)
    z2 = rows.matvec(w2, start, stop)
    wrong = ~in_ref & (s1 > 0) & (side * (y * z2 - 1.0 if hinge else z2 - y) < 0)
    assert _smoothed.screen_check(rows, start, stop, w2, y, sw, hinge, e, in_set) == wrong.sum() > 0
    assert np.array_equal(in_set.astype(bool), in_ref | wrong)


@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("n", [1001, 1002, 1003, 1004])
def test_the_certificate_of_dense_rows_is_that_of_csr_rows(intercept, weights, n):
    # the certificate's primal pass takes dense rows four at a time in lockstep (_erm._dense_dot_abs4) and
    # CSR rows one at a time (dot_abs): rows without a zero entry give the same sums, so the same floats
    from sklearn_dpsco._fast._erm import certified_erm

    data, X = _data(9, n=n, intercept=intercept, weights=weights)
    # entries on a coarse dyadic grid, none zero: every squared norm is exact on both paths (the same k_i)
    X = np.where(X > 0, 1.0, -1.0) * np.maximum(np.round(np.abs(X) * 64), 1.0) / 64
    beta = np.random.default_rng(10).uniform(-0.5, 0.5, size=n - 7)
    fit = dict(clip=0.7, sample_weight=data.sample_weight, start=7, stop=None, target_distance=0.0, max_epochs=0,
               dual_start=beta)
    w0 = np.full(X.shape[1] + (intercept > 0), 0.1)
    dense = certified_erm(RowData(X, intercept), data.y, Absolute(), 0.05, w0, **fit)
    csr = certified_erm(RowData(sp.csr_matrix(X), intercept), data.y, Absolute(), 0.05, w0, **fit)
    for name in ("w", "distance_bound", "gap", "primal", "dual", "float_margin"):
        assert np.array_equal(getattr(dense, name), getattr(csr, name)), name


@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("ones", [True, False])
@pytest.mark.parametrize("subtract", [False, True])
def test_gram_update_is_the_dense_gram_sum(intercept, ones, subtract):
    # the Newton's in-place update G +-= _dense_gram(...) in one compiled call: the same floats, bit for bit
    rng = np.random.default_rng(3)
    n, p = 400, 6
    d = p + (1 if intercept > 0 else 0)
    X = rng.normal(size=(n, p)) * np.logspace(-3, 3, p)
    idx = np.flatnonzero(rng.uniform(size=n) < 0.3)
    h = np.ones(idx.size) if ones else rng.uniform(0.1, 2.0, size=idx.size)
    G0 = rng.normal(size=(d, d))
    ref = G0 - _warm_start._dense_gram(X[idx], h, intercept, p, d, n, ones) if subtract \
        else G0 + _warm_start._dense_gram(X[idx], h, intercept, p, d, n, ones)
    G = G0.copy()
    _warm_start._dense_gram_update(G, X[idx], h, intercept, p, n, ones, subtract)
    assert np.array_equal(G, ref)
    with pytest.raises(ValueError, match="shape"):
        _smoothed.gram_update(np.zeros((d + 1, d + 1)), np.zeros((p, p)), np.zeros(p), intercept, 0.0, n, subtract)


@pytest.mark.parametrize("intercept", [0.0, 1.0])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_compiled_newton_is_the_python_newton(intercept, weights, seed):
    # the whole Newton in one compiled call (dsyrk Gram updates, posv) against the NumPy driver: other
    # roundings, the same steps and stopping rules, so the same point to a tight tolerance
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(300, 4000)), int(rng.integers(1, 25))
    data, _ = _data(10 + seed, n=n, d=d, intercept=intercept, weights=weights)
    rows = RowData(data.X, intercept)
    start, stop = int(rng.integers(0, n // 4)), n - int(rng.integers(0, n // 4))
    lam, k = 10 ** rng.uniform(-4, -1), rng.uniform(0.02, 1.0)
    w0 = 0.1 * rng.normal(size=rows.n_features)
    sw = None if data.sample_weight is None else np.ascontiguousarray(data.sample_weight[start:stop])
    y = np.ascontiguousarray(data.y[start:stop])
    for tol, w_start in ((1e-12, None), (1e-3, 0.5 * rng.normal(size=rows.n_features))):
        w_ref, z_ref = _warm_start._fused_huber_newton(rows, data.X[start:stop], start, stop, y, k, sw, lam, w0, tol,
                                                       w_start)
        w, z = _warm_start._compiled_huber_newton(rows, start, stop, y, k, sw, lam, w0, tol, w_start)
        np.testing.assert_allclose(w, w_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(z, z_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(z, rows.matvec(w, start, stop), rtol=1e-9, atol=1e-10)


def test_compiled_newton_refuses_what_it_cannot_solve():
    data, _ = _data(5, n=200, intercept=1.0)
    rows = RowData(data.X, 1.0)
    y = np.ascontiguousarray(data.y)
    with pytest.raises(ValueError, match="dense rows only"):
        _warm_start._compiled_huber_newton(RowData(sp.csr_matrix(data.X), 1.0), 0, 200, y, 0.1, None, 1e-3,
                                           np.zeros(rows.n_features), 1e-6, None)
    with pytest.raises(ValueError, match="non-finite"):
        _warm_start._compiled_huber_newton(rows, 0, 200, y, 0.1, None, np.inf, np.zeros(rows.n_features), 1e-6,
                                           None)
    bad = y.copy()
    bad[3] = np.nan
    w, z = _warm_start._compiled_huber_newton(rows, 0, 200, bad, 0.1, None, 1e-3, np.zeros(rows.n_features), 1e-6,
                                              None)
    assert w.shape == (rows.n_features,) and z.shape == (200,)
