"""Warm-started certified ERM: a dual start changes where the ascent begins, never what is certified.

The Newton start (``_solvers/_optim/_warm_start.py``) is checked against an
independent SciPy minimizer; the kernel's ``dual_start`` against its
reference behaviour (feasible entries kept, the others at 0) and against the
distance bound of a cold solve.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from sklearn_dpsco._fast._erm import certified_erm
from sklearn_dpsco._fast._losses import Absolute, Hinge, Logistic, Squared
from sklearn_dpsco._fast._rows import RowData
from sklearn_dpsco._solvers._core._data import GLMData
from sklearn_dpsco._solvers._optim._erm import solve_certified
from sklearn_dpsco._solvers._optim._warm_start import dual_start, gram_system


def _instance(seed, n=300, d=6, classification=False, intercept=0.0, weights=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    w = rng.normal(size=d)
    if classification:
        y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    else:
        y = X @ w + 0.3 * rng.standard_t(2, size=n)  # heavy tails: rows in the linear part
    sw = rng.uniform(0, 1, size=n) if weights else None
    return GLMData(X, y, sw, intercept)


def _huber_minimizer(data, lam, w0, clip):
    """Independent reference: L-BFGS on the extended squared loss (intercept column appended)."""
    X = data.X
    if data.intercept_scaling > 0:
        X = np.hstack([X, np.full((X.shape[0], 1), data.intercept_scaling)])
    sw = np.ones(X.shape[0]) if data.sample_weight is None else data.sample_weight
    k = clip / np.linalg.norm(X, axis=1)
    n = X.shape[0]

    def fg(w):
        r = X @ w - data.y
        g = np.clip(r, -k, k)
        val = np.where(np.abs(r) <= k, 0.5 * r * r, k * np.abs(r) - 0.5 * k * k)
        return (sw @ val) / n + 0.5 * lam * np.sum((w - w0) ** 2), X.T @ (sw * g) / n + lam * (w - w0)

    res = minimize(fg, w0.copy(), jac=True, method="L-BFGS-B", options=dict(maxiter=20000, ftol=0, gtol=1e-13))
    return res.x, np.linalg.norm(fg(res.x)[1]) / lam


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("weights", [False, True])
def test_gram_system_matches_numpy(sparse, intercept, weights):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    X[X < 0.3] = 0.0
    h = rng.uniform(0, 2, size=50) if weights else np.ones(50)
    Xa = np.hstack([X, np.full((50, 1), intercept)]) if intercept > 0 else X
    expected = Xa.T @ (h[:, None] * Xa)
    got = gram_system(sp.csr_matrix(X) if sparse else X, h, intercept)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("intercept", [0.0, 1.0])
@pytest.mark.parametrize("weights", [False, True])
def test_newton_start_is_the_huber_minimizer(seed, intercept, weights):
    data = _instance(seed, intercept=intercept, weights=weights)
    d = data.n_features
    lam, clip, w0 = 10.0 ** -(1 + seed % 3), 0.5, np.random.default_rng(seed).normal(size=d) * 0.1
    w_ref, r_ref = _huber_minimizer(data, lam, w0, clip)
    assert r_ref < 1e-5, "reference not accurate enough to test anything"
    beta = dual_start(data, "squared", lam, w0, clip, 1e-4)
    assert beta is not None
    # the primal point of the dual start (w0 + X^T S beta / (lam n)) is the minimizer
    Xa = data.X if intercept == 0 else np.hstack([data.X, np.full((data.n_samples, 1), intercept)])
    sw = np.ones(data.n_samples) if data.sample_weight is None else data.sample_weight
    w_start = w0 + Xa.T @ (sw * beta) / (lam * data.n_samples)
    assert np.linalg.norm(w_start - w_ref) <= 1e-7 + r_ref
    # so the kernel certifies the target without a single pass
    res = certified_erm(RowData(data.X, intercept), data.y, Squared(), lam, w0, clip=clip, sample_weight=data.sample_weight,
                        target_distance=1e-4, max_epochs=0, dual_start=beta)
    assert res.certified and res.n_epochs == 0
    assert np.linalg.norm(res.w - w_ref) <= res.distance_bound + r_ref


@pytest.mark.parametrize("loss", [Squared(), Absolute(), Hinge(), Logistic()], ids=repr)
def test_dual_start_keeps_feasible_entries_and_zeroes_the_rest(loss):
    data = _instance(1, n=40, classification=loss.is_classification)
    rows = RowData(data.X)
    rng = np.random.default_rng(5)
    k = 0.5 / np.linalg.norm(data.X, axis=1) * (1 - 1e-12)
    cap = k if isinstance(loss, Squared) else np.minimum(k, 1.0)
    guess = rng.uniform(-1, 1, size=40) * cap * 0.9
    if loss.is_classification:
        guess = np.abs(guess) * data.y  # beta y in [0, c]
    bad = np.zeros(40, dtype=bool)
    bad[::4] = True
    guess[bad] = 10.0 * np.sign(guess[bad] + 1e-3) * (cap[bad] + 1.0)  # outside every domain
    guess[1] = np.nan
    bad[1] = True
    res = certified_erm(rows, data.y, loss, 0.1, None, clip=0.5, target_distance=0.0, max_epochs=0, dual_start=guess)
    np.testing.assert_array_equal(res.dual_coef[~bad], guess[~bad])
    np.testing.assert_array_equal(res.dual_coef[bad], 0.0)
    assert np.isfinite(res.dual)


@pytest.mark.parametrize("clip", [0.05, 0.5, 50.0])
def test_warm_and_cold_solves_certify_the_same_minimizer(clip):
    loss = Squared()
    data = _instance(2, n=200, intercept=1.0)
    lam, target = 0.05, 1e-5
    rows, w0 = RowData(data.X, 1.0), np.zeros(data.n_features)
    cold = certified_erm(rows, data.y, loss, lam, w0, clip=clip, target_distance=target, max_epochs=2000)
    beta = dual_start(data, "squared", lam, w0, clip, target)
    assert beta is not None
    warm = certified_erm(rows, data.y, loss, lam, w0, clip=clip, target_distance=target, max_epochs=2000,
                         dual_start=beta)
    assert cold.certified and warm.certified
    # both within their proven bounds of the same exact minimizer
    assert np.linalg.norm(warm.w - cold.w) <= warm.distance_bound + cold.distance_bound


@pytest.mark.parametrize("name", ["absolute", "hinge", "logistic"])
def test_non_smooth_losses_start_cold(name):
    assert dual_start(_instance(0, classification=name != "absolute"), name, 0.1, np.zeros(6), 1.0, 1e-4) is None


def test_solve_certified_with_ball_and_weights_stays_certified():
    data = _instance(3, n=400, weights=True, intercept=1.0)
    w0 = np.zeros(data.n_features)
    res = solve_certified(data, _squared_reference_loss(), 0.01, w0, clip=0.3, target_distance=1e-4,
                          ball=(w0, 0.05))
    assert res.distance_bound <= 1e-4
    assert np.linalg.norm(res.w) <= 0.05


def _squared_reference_loss():
    from sklearn_dpsco._solvers._core._losses import get_loss

    return get_loss("squared")


@pytest.mark.parametrize("intercept", [0.0, 1.0])
def test_prefix_started_newton_is_the_plain_newton_minimizer(intercept, monkeypatch):
    # a block large enough for the nested-prefix start (40000 rows: prefixes of 5000 rows) ends at the same
    # minimizer as the Newton solve from the centre, and the kernel certifies it without a pass
    from sklearn_dpsco._solvers._optim import _warm_start

    data = _instance(3, n=40000, d=5, intercept=intercept)
    lam, clip, w0, target = 1e-3, 0.5, np.full(data.n_features, 0.05), 1e-4
    assert _warm_start._subsample_sizes(40000) == [5000]
    prefixed = dual_start(data, "squared", lam, w0, clip, target)
    monkeypatch.setattr(_warm_start, "SUBSAMPLE_MIN_ROWS", 10**9)
    assert _warm_start._subsample_sizes(40000) == []
    plain = dual_start(data, "squared", lam, w0, clip, target)
    assert prefixed is not None and plain is not None
    rows = RowData(data.X, intercept)
    res = [certified_erm(rows, data.y, Squared(), lam, w0, clip=clip, target_distance=target, max_epochs=0,
                         dual_start=beta) for beta in (prefixed, plain)]
    assert all(r.certified and r.n_epochs == 0 for r in res)
    assert np.linalg.norm(res[0].w - res[1].w) <= res[0].distance_bound + res[1].distance_bound
