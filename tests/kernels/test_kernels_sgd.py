"""SGD / subgradient loops: step-for-step against plain NumPy loops (same noise),
dense == CSR."""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._fast._erm import certified_erm
from sklearn_dpsco._fast._losses import Absolute, Hinge, Logistic, Power, Squared
from sklearn_dpsco._fast._projections import (inexact_project_two_balls, project_ball,
                                              project_two_balls)
from sklearn_dpsco._fast._rows import RowData
from sklearn_dpsco._fast._sgd import (adagrad_certified, pnsgd_chunk, projected_subgradient,
                                      sgd_one_pass)

LOSSES = [Hinge(), Logistic(), Squared(), Absolute(), Power(1.5)]


def _data(loss, seed=0, n=60, d=6, s=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    X[:3] *= 20.0          # rows that get clipped
    X[7] = 0.0
    if loss.is_classification:
        y = np.sign(rng.normal(size=n))
        y[y == 0] = 1.0
    else:
        y = X @ rng.normal(size=d) + rng.normal(size=n)
    Xa = np.hstack([X, np.full((n, 1), s)]) if s > 0 else X
    return X, Xa, y


def _both(X, s=1.0):
    return [RowData(X, s), RowData(sp.csr_matrix(X), s)]


def _k(Xa, clip):
    nrm = np.linalg.norm(Xa, axis=1)
    with np.errstate(divide="ignore"):
        return np.where((nrm > 0) & (clip is not None), (clip or 1.0) / nrm, np.inf)


def _grad(loss, Xa, y, k, w, sw=None, lam=0.0, w0=0.0):
    c = loss.ext_deriv(Xa @ w, y, k)
    if sw is not None:
        c = c * sw
    return Xa.T @ c / Xa.shape[0] + lam * (w - w0)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
@pytest.mark.parametrize("domain", ["none", "ball", "two_exact", "two_inexact"])
def test_projected_subgradient_matches_numpy(loss, domain):
    X, Xa, y = _data(loss)
    d = Xa.shape[1]
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=d) * 0.2
    c1, c2 = rng.normal(size=d) * 0.3, rng.normal(size=d) * 0.3
    sw = rng.uniform(0, 1, size=X.shape[0])
    lam, step, T, clip = 0.3, 0.05, 40, 1.0
    kw, proj = {}, (lambda v: v)
    if domain == "ball":
        kw = dict(ball_center=c1, ball_radius=0.4)
        proj = lambda v: project_ball(v, c1, 0.4)  # noqa: E731
    elif domain == "two_exact":
        kw = dict(ball_center=c1, ball_radius=0.6, local_center=c2, local_radius=0.5)
        proj = lambda v: project_two_balls(v, c1, 0.6, c2, 0.5)  # noqa: E731
    elif domain == "two_inexact":
        kw = dict(ball_center=c1, ball_radius=0.6, local_center=c2, local_radius=0.5, xi=1e-3)
        proj = lambda v: inexact_project_two_balls(v, c1, 0.6, c2, 0.5, 1e-3)  # noqa: E731
    k = _k(Xa[10:50], clip)
    w = proj(w0.copy())
    avg = np.zeros(d)
    for _ in range(T):
        avg += w
        w = proj(w - step * _grad(loss, Xa[10:50], y[10:50], k, w, sw[10:50], lam, w0))
    avg /= T
    # The xi-inexact projection bisects on a threshold: a last-bit difference
    # in the gradient (BLAS vs row loop) can move a bisection decision, i.e.
    # the point by up to ~xi. Exact domains must agree to rounding.
    atol = 1e-2 if domain == "two_inexact" else 1e-12
    for rows in _both(X):
        out = projected_subgradient(rows, y, loss, lam, w0, step=step, n_iter=T, clip=clip,
                                    sample_weight=sw, start=10, stop=50, **kw)
        np.testing.assert_allclose(out, avg, rtol=1e-10, atol=atol)


def _adagrad_numpy(loss, Xa, y, k, lam, w0, alpha, max_iter, proj, D, exact):
    x = proj(w0.copy(), 0.0)
    S, xsum = 0.0, np.zeros_like(x)
    for t in range(1, max_iter + 1):
        g = _grad(loss, Xa, y, k, x, None, lam, w0)
        xsum += x
        if np.all(g == 0):
            return x, t, True
        S += g @ g
        eta = D / np.sqrt(S)
        xi = 0.0 if exact else min(D, alpha * eta / (6 * D))
        x = proj(x - eta * g, xi)
        if 3 * D * np.sqrt(S) <= alpha * t:
            return xsum / t, t, True
    return xsum / max_iter, max_iter, False


@pytest.mark.parametrize("loss", [Hinge(), Logistic(), Squared()], ids=repr)
@pytest.mark.parametrize("domain", ["ball", "two_exact", "two_inexact"])
def test_adagrad_certified_matches_numpy_and_is_alpha_optimal(loss, domain):
    two_balls = domain != "ball"
    exact = domain != "two_inexact"
    X, Xa, y = _data(loss, seed=2, n=30)
    d = Xa.shape[1]
    rng = np.random.default_rng(3)
    w0 = rng.normal(size=d) * 0.2
    c1, c2 = np.zeros(d), rng.normal(size=d) * 0.2
    lam, alpha, clip = 0.5, 0.02, 1.0
    if two_balls:
        kw = dict(ball_center=c1, ball_radius=1.0, local_center=c2, local_radius=0.4)

        def proj(v, xi):
            if xi > 0:
                return inexact_project_two_balls(v, c1, 1.0, c2, 0.4, xi)
            return project_two_balls(v, c1, 1.0, c2, 0.4)
        D = 0.8
    else:
        kw = dict(ball_center=c1, ball_radius=1.0)
        proj = lambda v, xi: project_ball(v, c1, 1.0)  # noqa: E731
        D = 2.0
    k = _k(Xa, clip)
    # Step for step over a short budget. (Over long runs the early AdaGrad
    # steps D / sqrt(S_t) exceed 2 / smoothness, the iteration map is locally
    # expansive and last-bit differences between BLAS and the row loop grow
    # geometrically, so long trajectories are compared by their outcome.)
    ref, t_ref, ok_ref = _adagrad_numpy(loss, Xa, y, k, lam, w0, 1e-12, 15, proj, D, exact)
    for rows in _both(X):
        w, t, ok = adagrad_certified(rows, y, loss, lam, w0, alpha=1e-12, max_iter=15,
                                     clip=clip, exact_projection=exact and two_balls, **kw)
        assert not ok and not ok_ref and t == t_ref == 15
        # inexact: a bisection decision can flip on a last-bit difference
        np.testing.assert_allclose(w, ref, rtol=1e-10, atol=1e-12 if exact else 1e-2)
    ref, t_ref, ok_ref = _adagrad_numpy(loss, Xa, y, k, lam, w0, alpha, 50000, proj, D, exact)
    rows = RowData(X, 1.0)
    w, t, ok = adagrad_certified(rows, y, loss, lam, w0, alpha=alpha, max_iter=50000,
                                 clip=clip, exact_projection=exact and two_balls, **kw)
    assert ok and ok_ref and abs(t - t_ref) <= 0.1 * t_ref
    # The certificate holds: P(w) - min_K P <= alpha. On the ball, min_K P is
    # bounded below by a certified dual value; on two balls we compare with a
    # long projected-subgradient run (an upper bound on min_K P: a necessary
    # check).
    from sklearn_dpsco._fast._objective import Objective
    P = Objective(rows, y, loss, lam, w0, clip)
    if two_balls:
        w_ref = projected_subgradient(rows, y, loss, lam, w0, step=1e-3, n_iter=20000,
                                      clip=clip, **kw)
        assert P.value(w) - P.value(w_ref) <= alpha
    else:
        res = certified_erm(rows, y, loss, lam, w0, clip=clip, target_distance=1e-6,
                            max_epochs=2000, ball_center=c1, ball_radius=1.0)
        assert P.value(w) - res.dual <= alpha
    # a tiny budget does not certify
    w, t, ok = adagrad_certified(RowData(X, 1.0), y, loss, lam, w0, alpha=alpha, max_iter=3,
                                 clip=clip, **kw)
    assert not ok and t == 3


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
@pytest.mark.parametrize("ball", [False, True])
def test_pnsgd_chunks_match_numpy(loss, ball):
    X, Xa, y = _data(loss, seed=4, n=80)
    d = Xa.shape[1]
    rng = np.random.default_rng(5)
    T = 12
    batch_starts = np.concatenate([[0], np.cumsum(rng.integers(1, 8, size=T))])
    steps = rng.uniform(0.01, 0.2, size=T)
    noise = rng.normal(size=(T, d)) * 0.1
    clip = 0.8
    c = rng.normal(size=d) * 0.1
    kw = dict(ball_center=c, ball_radius=0.3) if ball else {}
    k = _k(Xa, clip)
    w = np.zeros(d)
    for t in range(T):
        b = slice(batch_starts[t], batch_starts[t + 1])
        g = Xa[b].T @ loss.ext_deriv(Xa[b] @ w, y[b], k[b]) / (b.stop - b.start)
        w = w - steps[t] * (g + noise[t])
        if ball:
            w = project_ball(w, c, 0.3)
    for rows in _both(X):
        out = np.zeros(d)
        pnsgd_chunk(rows, y, loss, out, steps, batch_starts, noise[:5], 0, 5, clip=clip, **kw)
        pnsgd_chunk(rows, y, loss, out, steps, batch_starts, noise[5:], 5, T, clip=clip, **kw)
        np.testing.assert_allclose(out, w, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="noise"):
        pnsgd_chunk(RowData(X, 1.0), y, loss, out, steps, batch_starts, noise, 0, 5)
    with pytest.raises(ValueError, match="writable"):
        pnsgd_chunk(RowData(X, 1.0), y, loss, [0.0] * d, steps, batch_starts, noise, 0, T)


def _one_pass_numpy(loss, Xa, y, k, w_init, step, alpha, c, R):
    cc = np.zeros_like(w_init) if c is None else c

    def proj(v):
        return v if R is None else project_ball(v, cc, R)
    w = proj(w_init.copy())
    ws = []
    for i in range(Xa.shape[0]):
        g = loss.ext_deriv(Xa[i] @ w, y[i], k[i]) * Xa[i]
        w = proj(w - step * (g + alpha * (w - cc)))
        ws.append(w)
    return w, np.mean(ws, axis=0)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
@pytest.mark.parametrize("setting", ["plain", "ball", "ball_alpha", "tight_ball", "alpha"])
def test_sgd_one_pass_matches_numpy(loss, setting):
    X, Xa, y = _data(loss, seed=6, n=150)
    d = Xa.shape[1]
    rng = np.random.default_rng(7)
    c, R, alpha = None, None, 0.0
    if setting in ("ball", "ball_alpha", "tight_ball"):
        c, R = rng.normal(size=d) * 0.2, (0.01 if setting == "tight_ball" else 0.5)
    if setting in ("ball_alpha", "alpha"):
        alpha = 2.0          # strong shrinkage: the lazy scale folds often
    w_init = rng.normal(size=d)
    step, clip = 0.1, 1.2
    k = _k(Xa[20:140], clip)
    last_ref, avg_ref = _one_pass_numpy(loss, Xa[20:140], y[20:140], k, w_init, step, alpha,
                                        c, R)
    kw = {} if c is None else dict(ball_center=c, ball_radius=R)
    for rows in _both(X):
        last, avg = sgd_one_pass(rows, y, loss, w_init, step, clip=clip, alpha=alpha, start=20,
                                 stop=140, **kw)
        np.testing.assert_allclose(last, last_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(avg, avg_ref, rtol=1e-10, atol=1e-12)
        last2, none = sgd_one_pass(rows, y, loss, w_init, step, clip=clip, alpha=alpha,
                                   start=20, stop=140, average=False, **kw)
        assert none is None
        np.testing.assert_allclose(last2, last, rtol=1e-13, atol=1e-14)


def test_sgd_one_pass_empty_range_and_validation():
    X, Xa, y = _data(Logistic())
    w_init = np.ones(Xa.shape[1])
    last, avg = sgd_one_pass(RowData(X, 1.0), y, Logistic(), w_init, 0.1, start=5, stop=5)
    np.testing.assert_array_equal(last, w_init)
    np.testing.assert_array_equal(avg, w_init)
    with pytest.raises(ValueError, match="alpha"):
        sgd_one_pass(RowData(X, 1.0), y, Logistic(), w_init, 0.5, alpha=2.0)
    with pytest.raises(ValueError, match="step"):
        sgd_one_pass(RowData(X, 1.0), y, Logistic(), w_init, 0.0)
