"""Compiled per-user kernels (_fast/_users.pyx) against their NumPy references."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import Parallel

from sklearn_dpsco._fast._users import clipped_users, group_sums, user_block_margins, user_mean_logistic_gradients
from sklearn_dpsco._solvers._core._user_data import group_gradient_sums_reference, make_user_data
from sklearn_dpsco._solvers._user_level import _baselines, _clip

_U = 2.0**-53


def _users(seed=0, n_rows=3000, d=6, n_users=400, m=10, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, d))
    if sparse:
        X = sp.csr_matrix(X * (rng.random(X.shape) < 0.4))
    y = np.where(rng.random(n_rows) < 0.5, 1.0, -1.0)
    groups = rng.integers(0, n_users, n_rows)
    return make_user_data(X, y, groups, max_items=m, data_norm=1.0, intercept_scaling=1.0)


@pytest.mark.parametrize("sparse", [False, True])
def test_group_sums_match_reference(sparse):
    data = _users(sparse=sparse)
    a = np.random.default_rng(1).standard_normal(data.X.shape[0])
    got = group_sums(data.X, a, data.indptr)
    ref = group_gradient_sums_reference(data.X, a, data.indptr)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-14 * np.abs(ref).max())


def test_group_sums_are_recursive_sums_in_row_order_within_the_rounding_bound():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((7, 3)) * np.array([1e8, 1.0, 1e-8])
    a = rng.standard_normal(7)
    indptr = np.array([0, 1, 7])
    got = group_sums(X, a, indptr)
    expected = np.zeros((2, 3))
    for u in range(2):
        for r in range(indptr[u], indptr[u + 1]):
            expected[u] = a[r] * X[r] if r == indptr[u] else expected[u] + a[r] * X[r]
    assert np.array_equal(got, expected)
    # the bound the certificates use: ||computed - exact|| <= gamma_m sum |a_r| ||x_r||
    m = 6
    exact = [sum(Fraction(a[r]) * Fraction(X[r, k]) for r in range(1, 7)) for k in range(3)]
    err = np.sqrt(sum(float(Fraction(got[1, k]) - exact[k]) ** 2 for k in range(3)))
    bound = m * _U / (1 - m * _U) * float(np.sum(np.abs(a[1:]) * np.linalg.norm(X[1:], axis=1)))
    assert err <= bound


@pytest.mark.parametrize("sparse", [False, True])
def test_user_mean_gradients_match_reference(sparse):
    data = _users(sparse=sparse)
    W = np.random.default_rng(3).standard_normal((3, data.n_features))
    got = user_mean_logistic_gradients(data.X, data.y, data.indptr, W)
    ref = _baselines.user_mean_gradients_reference(data, W)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15)


@pytest.mark.parametrize("sparse", [False, True])
def test_fused_clipped_sum_matches_reference_and_ignores_threads(sparse):
    data = _users(seed=4, n_rows=20000, n_users=3000, sparse=sparse)
    W = np.random.default_rng(5).standard_normal((2, data.n_features))
    ref = _baselines.clipped_gradient_sum(_baselines.user_mean_gradients_reference(data, W), 0.05)
    one = _baselines.clipped_mean_gradient_sum(data, W, 0.05)
    np.testing.assert_allclose(one, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    for n_jobs in (2, 3, -1):
        with Parallel(n_jobs=n_jobs, require="sharedmem") as parallel:
            assert np.array_equal(_baselines.clipped_mean_gradient_sum(data, W, 0.05, parallel), one)


def test_fused_clipped_sum_on_threads_is_the_one_thread_sum(monkeypatch):
    monkeypatch.setattr(_baselines, "_ROWS_PER_THREAD", 100)  # force several parts on small data
    data = _users(seed=11, n_rows=20000, n_users=3000)
    W = np.random.default_rng(12).standard_normal((2, data.n_features))
    one = _baselines.clipped_mean_gradient_sum(data, W, 0.05)
    for n_jobs in (2, 3):
        with Parallel(n_jobs=n_jobs, require="sharedmem") as parallel:
            assert np.array_equal(_baselines.clipped_mean_gradient_sum(data, W, 0.05, parallel), one)


def test_user_block_margins():
    data = _users()
    users = np.array([0, 5, 17])
    V = np.random.default_rng(6).standard_normal((3, data.n_features))
    got = user_block_margins(data.X, data.indptr, users, V)
    for k, u in enumerate(users):
        s, e = data.indptr[u], data.indptr[u + 1]
        np.testing.assert_allclose(got[s:e], data.X[s:e] @ V[k], rtol=1e-14, atol=1e-15)
    others = np.ones(data.X.shape[0], dtype=bool)
    for u in users:
        others[data.indptr[u]:data.indptr[u + 1]] = False
    assert np.all(got[others] == 0)


@pytest.mark.parametrize("sparse", [False, True])
def test_clipped_users_match_the_numpy_inner_points(sparse):
    data = _users(seed=7, sparse=sparse)
    clip = 0.5
    w = 2.0 * np.random.default_rng(8).standard_normal(data.n_features)
    prob = _clip._Problem(data.X, data.y, data.indptr, data.n_users, data.max_items, 0.01, clip, kernel="numpy")
    G, _ = prob.user_grads(w)
    users = np.flatnonzero(np.linalg.norm(G, axis=1) > clip)
    assert users.size > 20
    batch = _clip._Batch(data.X, data.y, data.indptr, users, data.max_items)
    W = np.tile(w, (users.size, 1))
    V_ref, log_s_ref = _clip._inner_points(batch, W, clip, np.full(users.size, np.nan))
    V, log_s, value, grad, curv = clipped_users(data.X, data.y, data.indptr, users, w, clip,
                                                np.full(users.size, np.nan))
    np.testing.assert_allclose(V, V_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(log_s, log_s_ref, rtol=0, atol=1e-8)
    lv, gv, HL = batch.loss_grad_hess(V)
    t = np.linalg.norm(W - V, axis=1)
    np.testing.assert_allclose(value, lv + clip * t, rtol=1e-14)
    # the inner point's optimality: ||grad L_u(v_u)|| = C, parallel to w - v_u
    np.testing.assert_allclose(np.linalg.norm(gv, axis=1), clip, rtol=1e-10)
    np.testing.assert_allclose(grad, gv * (clip / np.linalg.norm(gv, axis=1))[:, None], atol=1e-10)
    np.testing.assert_allclose(gv / clip, (W - V) / t[:, None], atol=1e-7)
    ref_curv = prob._clipped_curvature(HL, W - V, t)
    np.testing.assert_allclose(curv, ref_curv, rtol=0, atol=1e-5 * np.abs(ref_curv).max())
    # warm start from the earlier roots: the same points
    V2, *_ = clipped_users(data.X, data.y, data.indptr, users, w, clip, log_s)
    np.testing.assert_allclose(V2, V, rtol=0, atol=1e-10)


def test_solver_kernels_agree_and_both_certify():
    data = _users(seed=9, n_rows=4000, n_users=500)
    kw = {"max_items": data.max_items, "data_norm": 1.5, "lam": 0.01, "clip": 0.5}
    exact = 2 * 0.5 / (0.01 * data.n_users * data.max_items)
    tau = 0.02 * exact
    w_c, how_c = _clip.solve_user_clipped(data.X, data.y, data.indptr, data.n_users, tau=tau, **kw)
    w_n, how_n = _clip.solve_user_clipped(data.X, data.y, data.indptr, data.n_users, tau=tau, kernel="numpy",
                                          **kw)
    assert how_c == how_n == "newton"
    assert np.linalg.norm(w_c - w_n) <= 2 * tau
    np.testing.assert_allclose(w_c, w_n, rtol=0, atol=1e-8)


def test_kernels_refuse_bad_inputs():
    data = _users()
    with pytest.raises(ValueError, match="indptr"):
        group_sums(data.X, np.ones(data.X.shape[0]), np.array([0, 5]))
    with pytest.raises(ValueError, match="one entry per row"):
        group_sums(data.X, np.ones(3), data.indptr)
    with pytest.raises(ValueError, match="out of range"):
        clipped_users(data.X, data.y, data.indptr, np.array([data.n_users]), np.zeros(data.n_features), 1.0,
                      np.array([np.nan]))
    with pytest.raises(ValueError, match="kernel"):
        _clip._Problem(data.X, data.y, data.indptr, data.n_users, 10, 0.1, 1.0, kernel="fortran")


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_user_dp_sgd_release_does_not_depend_on_n_jobs(noise, monkeypatch):
    from sklearn_dpsco import UserLevelDPLogistic

    rng = np.random.default_rng(10)
    X = rng.standard_normal((3000, 4)) / 2
    y = (X[:, 0] + 0.3 * rng.standard_normal(3000) > 0).astype(int)
    groups = np.repeat(np.arange(1500), 2)
    monkeypatch.setattr(_baselines, "_ROWS_PER_THREAD", 100)  # several threads on this small problem
    coefs = [UserLevelDPLogistic(solver="user_dp_sgd", noise=noise, random_state=0, n_jobs=n_jobs)
             .fit(X, y, groups).coef_ for n_jobs in (None, 2)]
    assert np.array_equal(coefs[0], coefs[1])


# --------------------------------------------------------------------------- clipped_row_means
def test_clipped_row_means_against_numpy_and_its_edge_rows():
    from sklearn_dpsco._fast._users import clipped_row_means

    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 4)) * 10.0 ** rng.uniform(-3, 3, (60, 1))
    X[5] = 1e300  # squared norm overflows: the row counts as 0
    X[6] = 0.0
    rows = rng.permutation(60)[:45]
    indptr = np.array([0, 1, 10, 10 + 17, 45])
    got = clipped_row_means(X, rows, indptr, 0.8)
    for u in range(4):
        R = X[rows[indptr[u]:indptr[u + 1]]]
        with np.errstate(over="ignore"):
            norms = np.sqrt(np.sum(R * R, axis=1))
        f = np.where(np.isfinite(norms), np.minimum(1.0, 0.8 / np.maximum(norms, 1e-300)), 0.0)
        np.testing.assert_allclose(got[u], (f[:, None] * R).sum(axis=0) / R.shape[0], rtol=1e-13, atol=1e-300)
        assert np.linalg.norm(got[u]) <= 0.8 * (1 + 1e-14)
    # each user's vector depends on its own rows only: changing user 0's row leaves the others
    X2 = X.copy()
    X2[rows[0]] = -X2[rows[0]] * 1e5
    other = clipped_row_means(X2, rows, indptr, 0.8)
    np.testing.assert_array_equal(other[1:], got[1:])
    with pytest.raises(ValueError, match="at least one row"):
        clipped_row_means(X, rows, np.array([0, 0, 45]), 0.8)
    with pytest.raises(ValueError, match="rows must index X"):
        clipped_row_means(X, np.array([60]), np.array([0, 1]), 0.8)
