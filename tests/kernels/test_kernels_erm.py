"""Certified ERM: the reported distance bound must hold against independent
high-accuracy references (NumPy/SciPy, with their own accuracy certificates),
on random and adversarial instances; dense == CSR; subsets; gradients."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from sklearn_dpsco._fast._erm import (_gradient_blas, certified_erm, gradient,
                                      group_gradient_sums)
from sklearn_dpsco._fast._losses import Absolute, Hinge, Logistic, Power, Squared
from sklearn_dpsco._fast._objective import Objective
from sklearn_dpsco._fast._rows import RowData


# ---------------------------------------------------------------------------
# Independent NumPy model of the problem
# ---------------------------------------------------------------------------

def _ext(loss, z, y, k):
    """Value and derivative of the k-extended loss, NumPy closed forms."""
    with np.errstate(all="ignore"):
        return _ext_formulas(loss, z, y, k)


def _ext_formulas(loss, z, y, k):
    c = np.minimum(1.0, k)
    if isinstance(loss, Hinge):
        m = y * z
        return c * np.maximum(0.0, 1 - m), np.where(m < 1, -y * c, 0.0)
    if isinstance(loss, Logistic):
        m = y * z
        sig = 1.0 / (1.0 + np.exp(m))
        kk = np.where(np.isfinite(k), np.minimum(k, 1.0), 1.0)
        mk = np.log((1 - np.minimum(kk, 1 - 1e-300)) / kk)
        below = (kk < 1) & (m < mk)
        val = np.where(below, -np.log1p(-np.where(kk < 1, kk, 0.0)) + kk * (mk - m),
                       np.logaddexp(0, -m))
        return val, -y * np.minimum(sig, k)
    r = z - y
    if isinstance(loss, Squared):
        a = np.abs(r)
        return np.where(a <= k, 0.5 * r * r, k * a - 0.5 * k * k), np.clip(r, -k, k)
    if isinstance(loss, Absolute):
        return c * np.abs(r), c * np.sign(r)
    p = loss.p
    a = np.abs(r)
    with np.errstate(over="ignore", invalid="ignore"):
        rk = np.where(np.isfinite(k), (k / p) ** (1 / (p - 1)), np.inf)
        val = np.where(a <= rk, a ** p, k * a - (p - 1) * rk ** p)
    return val, np.clip(p * a ** (p - 1) * np.sign(r), -k, k)


class NumpyProblem:
    def __init__(self, X, y, loss, lam, w0, clip, sw):
        self.X, self.y, self.loss, self.lam, self.w0 = X, y, loss, lam, w0
        self.n = X.shape[0]
        self.sw = np.ones(self.n) if sw is None else sw
        nrm = np.linalg.norm(X, axis=1)
        with np.errstate(divide="ignore"):
            self.k = np.where((nrm > 0) & (clip is not None),
                              (clip if clip is not None else 1.0) / nrm, np.inf)

    def value_grad(self, w):
        v, g = _ext(self.loss, self.X @ w, self.y, self.k)
        val = (self.sw * v).sum() / self.n + 0.5 * self.lam * np.sum((w - self.w0) ** 2)
        grad = self.X.T @ (self.sw * g) / self.n + self.lam * (w - self.w0)
        return val, grad


def _ball(v, c, R):
    u = v - c
    n = np.linalg.norm(u)
    return v.copy() if n <= R else c + u * (R / n)


def reference_lbfgs(pb):
    """Unconstrained smooth case; ||w - w*|| <= ||grad P(w)|| / lam."""
    res = minimize(pb.value_grad, pb.w0.copy(), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=20000, maxcor=30, ftol=0, gtol=1e-13))
    w = res.x
    return w, np.linalg.norm(pb.value_grad(w)[1]) / pb.lam


def reference_projected_gradient(pb, c, R, L):
    """Smooth case over B(c, R); ||w - w*|| <= 2 ||G_L(w)|| / lam
    (gradient mapping, L-smooth and lam-strongly convex)."""
    w = _ball(pb.w0, c, R)
    wprev, t = w.copy(), 1.0
    def mapping(w):
        return L * (w - _ball(w - pb.value_grad(w)[1] / L, c, R))

    for it in range(20000):          # FISTA
        tn = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        yk = w + (t - 1) / tn * (w - wprev)
        wprev, t = w, tn
        w = _ball(yk - pb.value_grad(yk)[1] / L, c, R)
        if it % 200 == 199 and np.linalg.norm(mapping(w)) < 1e-12 * pb.lam:
            break
    return w, 2 * np.linalg.norm(mapping(w)) / pb.lam


def reference_dual(pb, c=None, R=None):
    """Hinge / absolute / Huber: maximise the (smooth, box-constrained) dual
    with L-BFGS-B, then certify with a NumPy duality gap."""
    X, y, lam, w0, sw, n = pb.X, pb.y, pb.lam, pb.w0, pb.sw, pb.n
    cap = np.minimum(1.0, pb.k)
    if isinstance(pb.loss, Hinge):        # b = beta y in [0, cap]; -psi*(-beta) = b
        bounds = list(zip(np.zeros(n), cap))
        lin, quad, sgn = np.ones(n), 0.0, y
    elif isinstance(pb.loss, Absolute):   # beta in [-cap, cap]; -psi*(-beta) = beta y
        bounds = list(zip(-cap, cap))
        lin, quad, sgn = y, 0.0, np.ones(n)
    else:                                  # Squared: -psi*(-beta) = beta y - beta^2/2
        kk = np.where(np.isfinite(pb.k), pb.k, 1e6)
        bounds = list(zip(-kk, kk))
        lin, quad, sgn = y, 1.0, np.ones(n)

    # diagonal preconditioning: optimise b' = b * ||x_i|| (uniform curvature)
    scale = 1.0 / np.maximum(np.linalg.norm(X, axis=1), 1e-3)
    bounds = [(lo / sc, hi / sc) for (lo, hi), sc in zip(bounds, scale)]

    def neg_dual_scaled(bp):
        f, g = neg_dual(bp * scale)
        return f, g * scale

    def neg_dual(b):
        v = X.T @ (sw * sgn * b) / n
        u = w0 + v / lam
        if c is None:
            dist, wv = 0.0, u
        else:
            dist = max(0.0, np.linalg.norm(u - c) - R)
            wv = _ball(u, c, R)
        hstar = v @ w0 + v @ v / (2 * lam) - 0.5 * lam * dist ** 2
        D = (sw * (lin * b - 0.5 * quad * b * b)).sum() / n - hstar
        gD = sw * (lin - quad * b) / n - sw * sgn * (X @ wv) / n
        return -D, -gD

    res = minimize(neg_dual_scaled, np.zeros(n), jac=True, method="L-BFGS-B", bounds=bounds,
                   options=dict(maxiter=50000, maxcor=50, ftol=0, gtol=1e-15))
    b = res.x * scale
    lo = np.array([lo for lo, _ in bounds]) * scale
    hi = np.array([hi for _, hi in bounds]) * scale
    b = np.clip(b, lo, hi)

    def primal_point(b):
        u = w0 + X.T @ (sw * sgn * b) / n / lam
        if c is None or np.linalg.norm(u - c) <= R:
            return u
        return c + (u - c) * (R / np.linalg.norm(u - c) * (1 - 1e-15))

    def gap(b):
        return pb.value_grad(primal_point(b))[0] + neg_dual(b)[0]

    # polish with exact dual coordinate steps (NumPy), checking the gap
    sq = np.sum(X ** 2, axis=1)
    a = sw * sgn / n
    for epoch in range(3000):
        if epoch % 25 == 0 and gap(b) < 1e-17:
            break
        for i in range(n):
            if sw[i] == 0.0:
                continue
            z = X[i] @ primal_point(b)
            g = sw[i] / n * (lin[i] - quad * b[i]) - a[i] * z
            q = sw[i] / n * quad + a[i] ** 2 * sq[i] / lam
            b[i] = np.clip(b[i] + g / q, lo[i], hi[i]) if q > 0 else (hi[i] if g > 0 else lo[i])
    w = primal_point(b)
    return w, np.sqrt(2 * max(gap(b), 0.0) / lam) + 1e-9


# ---------------------------------------------------------------------------
# Instances
# ---------------------------------------------------------------------------

KINDS = ["random", "huge_rows", "duplicates", "same_label", "zero_rows", "zero_weights",
         "intercept", "no_clip"]
LOSSES = [Hinge(), Logistic(), Squared(), Absolute(), Power(1.5), Power(3.0)]


def numpy_dual(pb, beta, c=None, R=None):
    """D(beta) of the module docstring of _erm, in NumPy."""
    y, loss = pb.y, pb.loss
    if isinstance(loss, Hinge):
        neg_conj = beta * y
    elif isinstance(loss, Logistic):
        b = beta * y
        with np.errstate(divide="ignore", invalid="ignore"):
            xl = np.where(b > 0, b * np.log(b), 0.0) + np.where(b < 1, (1 - b) * np.log1p(-b), 0.0)
        neg_conj = -xl
    elif isinstance(loss, Squared):
        neg_conj = beta * y - 0.5 * beta ** 2
    elif isinstance(loss, Absolute) or loss.p == 1.0:
        neg_conj = beta * y
    else:
        p = loss.p
        neg_conj = beta * y - (p - 1) * (np.abs(beta) / p) ** (p / (p - 1))
    v = pb.X.T @ (pb.sw * beta) / pb.n
    u = pb.w0 + v / pb.lam
    dist = 0.0 if c is None else max(0.0, np.linalg.norm(u - c) - R)
    hstar = v @ pb.w0 + v @ v / (2 * pb.lam) - 0.5 * pb.lam * dist ** 2
    return (pb.sw * neg_conj).sum() / pb.n - hstar


def make_instance(kind, loss, seed):
    rng = np.random.default_rng(seed)
    n, d = 40, 5
    X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d)
    sw, clip, s = None, 1.0, 0.0
    if kind == "huge_rows":
        X[:4] *= 1e5
    elif kind == "duplicates":
        X[20:] = X[:20]
    elif kind == "zero_rows":
        X[::5] = 0.0
    elif kind == "zero_weights":
        sw = rng.uniform(0, 1, size=n)
        sw[::3] = 0.0
    elif kind == "intercept":
        s = 2.0
    elif kind == "no_clip":
        clip = None
        if isinstance(loss, Power) and loss.p > 2:
            X *= 0.3
    if loss.is_classification:
        y = np.sign(X @ w_true + 0.5 * rng.normal(size=n))
        y[y == 0] = 1.0
        if kind == "same_label":
            y[:] = 1.0
    else:
        y = X @ w_true + rng.normal(size=n)
        if kind == "same_label":
            y[:] = 3.0
    lam = float(10 ** rng.uniform(-2, 0))
    w0 = rng.normal(size=d + (1 if s > 0 else 0)) * 0.3
    return X, y, sw, clip, lam, w0, s


def _np_problem(X, y, loss, lam, w0, clip, sw, s):
    Xa = np.hstack([X, np.full((X.shape[0], 1), s)]) if s > 0 else X
    return NumpyProblem(Xa, y, loss, lam, w0, clip, sw)


def _reference(pb, c=None, R=None):
    if isinstance(pb.loss, (Hinge, Absolute)) or (isinstance(pb.loss, Squared) and c is not None):
        return reference_dual(pb, c, R)
    if c is None:
        return reference_lbfgs(pb)
    L = pb.loss.smoothness * np.max(np.sum(pb.X ** 2, 1)) + pb.lam
    return reference_projected_gradient(pb, c, R, L)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
@pytest.mark.parametrize("kind", KINDS)
def test_distance_bound_is_valid(loss, kind):
    X, y, sw, clip, lam, w0, s = make_instance(kind, loss, seed=KINDS.index(kind))
    pb = _np_problem(X, y, loss, lam, w0, clip, sw, s)
    w_ref, r_ref = _reference(pb)
    assert r_ref < 1e-5, "reference not accurate enough to test anything"
    rows = RowData(X, s)
    for max_epochs in (0, 1, 3, 20, 400):
        res = certified_erm(rows, y, loss, lam, w0, clip=clip, sample_weight=sw,
                            target_distance=1e-4, max_epochs=max_epochs)
        err = np.linalg.norm(res.w - w_ref)
        assert err <= res.distance_bound + r_ref + 1e-12, (max_epochs, err, res)
        assert res.certified == (res.distance_bound <= 1e-4)
        # never smaller than what the gap proves
        assert res.distance_bound >= np.sqrt(2 * max(res.gap, 0.0) / lam)
        # the reported primal and dual values are P(w) and D(beta)
        np.testing.assert_allclose(res.primal, pb.value_grad(res.w)[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(res.dual, numpy_dual(pb, res.dual_coef), rtol=1e-10,
                                   atol=1e-12)
        assert res.dual <= res.primal + res.float_margin
    assert res.certified, res


@pytest.mark.parametrize("seed", range(12))
def test_distance_bound_random_sweep(seed):
    rng = np.random.default_rng(100 + seed)
    loss = [Logistic(), Squared(), Power(3.0)][seed % 3]
    n, d = int(rng.integers(5, 80)), int(rng.integers(1, 12))
    X = rng.standard_t(2, size=(n, d))          # heavy tails: many rows get clipped
    y = (np.sign(rng.normal(size=n)) if loss.is_classification
         else X @ rng.normal(size=d) + rng.standard_t(2, size=n))
    y[y == 0] = 1.0
    if isinstance(loss, Power):
        X, y = 0.3 * X, np.clip(0.3 * y, -3, 3)
    s = [0.0, 1.0][seed % 2]
    lam = float(10 ** rng.uniform(-2.5, 0.5))
    clip = [None, float(rng.uniform(0.1, 3.0))][seed % 4 != 0]
    w0 = rng.normal(size=d + (s > 0))
    pb = _np_problem(X, y, loss, lam, w0, clip, None, s)
    w_ref, r_ref = _reference(pb)
    assert r_ref < 1e-6
    for max_epochs in (1, 2, 8, 500):
        res = certified_erm(RowData(X, s), y, loss, lam, w0, clip=clip, target_distance=1e-5,
                            max_epochs=max_epochs)
        assert np.linalg.norm(res.w - w_ref) <= res.distance_bound + r_ref + 1e-12


BALL_LOSSES = [Hinge(), Logistic(), Squared(), Absolute()]


@pytest.mark.parametrize("loss", BALL_LOSSES, ids=repr)
@pytest.mark.parametrize("radius", [0.05, 0.5, 50.0])
def test_distance_bound_with_ball(loss, radius):
    X, y, sw, clip, lam, w0, s = make_instance("random", loss, seed=11)
    rng = np.random.default_rng(3)
    c = rng.normal(size=w0.shape[0]) * 0.5
    pb = _np_problem(X, y, loss, lam, w0, clip, sw, s)
    w_ref, r_ref = _reference(pb, c, radius)
    assert r_ref < 1e-5
    for max_epochs in (1, 5, 400):
        res = certified_erm(RowData(X), y, loss, lam, w0, clip=clip, target_distance=1e-4,
                            max_epochs=max_epochs, ball_center=c, ball_radius=radius)
        assert np.linalg.norm(res.w - c) <= radius
        assert np.linalg.norm(res.w - w_ref) <= res.distance_bound + r_ref + 1e-12
        np.testing.assert_allclose(res.dual, numpy_dual(pb, res.dual_coef, c, radius),
                                   rtol=1e-10, atol=1e-12)
    assert res.certified


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_dense_equals_csr_and_deterministic(loss):
    X, y, sw, clip, lam, w0, s = make_instance("zero_weights", loss, seed=5)
    X[np.abs(X) < 0.5] = 0.0
    kw = dict(clip=clip, sample_weight=sw, target_distance=1e-6, max_epochs=60)
    a = certified_erm(RowData(X, 1.0), y, loss, lam, np.append(w0, 0.1), **kw)
    b = certified_erm(RowData(sp.csr_matrix(X), 1.0), y, loss, lam, np.append(w0, 0.1), **kw)
    c = certified_erm(RowData(X, 1.0), y, loss, lam, np.append(w0, 0.1), **kw)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(a.w, c.w)
    assert a.n_epochs == c.n_epochs and a.distance_bound == c.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Logistic(), Squared()], ids=repr)
def test_subset_without_copy(loss):
    X, y, sw, clip, lam, w0, s = make_instance("random", loss, seed=8)
    sw = np.random.default_rng(0).uniform(0.2, 1.0, size=X.shape[0])
    kw = dict(clip=clip, target_distance=1e-5, max_epochs=100)
    sub = certified_erm(RowData(X, 1.0), y, loss, lam, np.append(w0, 0.0), start=10, stop=30,
                        sample_weight=sw, **kw)
    copy = certified_erm(RowData(X[10:30].copy(), 1.0), y[10:30].copy(), loss, lam,
                         np.append(w0, 0.0), sample_weight=sw[10:30].copy(), **kw)
    np.testing.assert_allclose(sub.w, copy.w, rtol=1e-13, atol=1e-14)
    assert sub.dual_coef.shape == (20,)
    pb = _np_problem(X[10:30], y[10:30], loss, lam, np.append(w0, 0.0), clip, sw[10:30], 1.0)
    w_ref, r_ref = _reference(pb)
    assert np.linalg.norm(sub.w - w_ref) <= sub.distance_bound + r_ref


def test_empty_range_and_all_zero_weights():
    X, y, *_ = make_instance("random", Hinge(), seed=1)
    w0 = np.ones(5)
    res = certified_erm(RowData(X), y, Hinge(), 0.5, w0, start=7, stop=7,
                        target_distance=1e-8, max_epochs=5)
    np.testing.assert_array_equal(res.w, w0)
    assert res.certified
    res = certified_erm(RowData(X), y, Hinge(), 0.5, w0, sample_weight=np.zeros(40),
                        target_distance=1e-6, max_epochs=5, ball_center=np.zeros(5),
                        ball_radius=1.0)
    np.testing.assert_allclose(res.w, w0 / np.sqrt(5), rtol=1e-12)
    assert res.certified and np.linalg.norm(res.w) <= 1.0


@pytest.mark.parametrize("loss", [Logistic(), Squared(), Hinge()], ids=repr)
def test_bound_at_the_rounding_floor(loss):
    # target 0: the solver runs its whole budget and reports the tightest bound
    # the gap plus the rounding margin allow; it must still hold.
    X, y, sw, clip, lam, w0, s = make_instance("huge_rows", loss, seed=21)
    pb = _np_problem(X, y, loss, lam, w0, clip, sw, s)
    w_ref, r_ref = _reference(pb)
    res = certified_erm(RowData(X, s), y, loss, lam, w0, clip=clip, target_distance=0.0,
                        max_epochs=300)
    assert not res.certified and res.float_margin > 0
    assert res.distance_bound < 1e-4
    assert np.linalg.norm(res.w - w_ref) <= res.distance_bound + r_ref


def test_unreachable_target_is_not_certified():
    X, y, sw, clip, lam, w0, s = make_instance("random", Absolute(), seed=2)
    res = certified_erm(RowData(X), y, Absolute(), lam, w0, clip=clip, target_distance=0.0,
                        max_epochs=30)
    assert not res.certified and res.n_epochs <= 30
    assert res.distance_bound > 0 and np.isfinite(res.distance_bound)


def test_parameter_validation():
    X, y, *_ = make_instance("random", Hinge(), seed=1)
    rows = RowData(X)
    kw = dict(target_distance=1e-3, max_epochs=3)
    with pytest.raises(ValueError, match="lam"):
        certified_erm(rows, y, Hinge(), 0.0, **kw)
    with pytest.raises(ValueError, match="-1, \\+1"):
        certified_erm(rows, y * 2, Hinge(), 1.0, **kw)
    with pytest.raises(ValueError, match="sample_weight"):
        certified_erm(rows, y, Hinge(), 1.0, sample_weight=np.full(40, 2.0), **kw)
    with pytest.raises(ValueError, match="clip"):
        certified_erm(rows, y, Hinge(), 1.0, clip=0.0, **kw)
    with pytest.raises(ValueError, match="ball"):
        certified_erm(rows, y, Hinge(), 1.0, ball_center=np.zeros(5), **kw)
    with pytest.raises(ValueError, match="start"):
        certified_erm(rows, y, Hinge(), 1.0, start=5, stop=2, **kw)


# ---------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_gradient_matches_numpy(loss):
    X, y, sw, clip, lam, w0, s = make_instance("zero_weights", loss, seed=4)
    X[np.abs(X) < 0.3] = 0.0
    w = np.random.default_rng(1).normal(size=6)
    pb = _np_problem(X[5:35], y[5:35], loss, 0.0, np.zeros(6), clip, sw[5:35], 1.5)
    ref = pb.value_grad(w)[1]
    for rows in (RowData(X, 1.5), RowData(sp.csr_matrix(X), 1.5)):
        g = gradient(rows, y, loss, w, clip=clip, sample_weight=sw, start=5, stop=35)
        np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-13)
    # the BLAS variant kept for the benchmark agrees (dense)
    obj = Objective(RowData(X, 1.5), y, loss, 0.0, None, clip, sw, 5, 35)
    np.testing.assert_allclose(_gradient_blas(obj, w), ref, rtol=1e-10, atol=1e-13)


def test_group_gradient_sums():
    X, y, sw, clip, lam, w0, s = make_instance("random", Logistic(), seed=6)
    w = np.random.default_rng(2).normal(size=6)
    ptr = np.array([0, 3, 3, 17, 40])
    pb = _np_problem(X, y, Logistic(), 0.0, np.zeros(6), 0.7, None, 1.0)
    _, coef = _ext(Logistic(), pb.X @ w, y, pb.k)
    per_row = coef[:, None] * pb.X
    ref = np.array([per_row[a:b].sum(0) for a, b in zip(ptr[:-1], ptr[1:])])
    for rows in (RowData(X, 1.0), RowData(sp.csr_matrix(X), 1.0)):
        out = group_gradient_sums(rows, y, Logistic(), w, ptr, clip=0.7)
        assert out.shape == (4, 6)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="group_indptr"):
        group_gradient_sums(RowData(X), y, Logistic(), w[:5], np.array([0, 5, 3]))


def test_threads_give_identical_results():
    # the kernels release the GIL and share read-only rows: the threading
    # backend must reproduce the sequential results exactly
    from concurrent.futures import ThreadPoolExecutor
    X, y, sw, clip, lam, w0, s = make_instance("random", Logistic(), seed=9)
    rows = RowData(np.repeat(X, 50, axis=0), 1.0)
    yy = np.repeat(y, 50)

    def solve(lam_):
        return certified_erm(rows, yy, Logistic(), lam_, clip=1.0, target_distance=1e-6,
                             max_epochs=200).w

    lams = [0.01, 0.02, 0.05, 0.1]
    seq = [solve(v) for v in lams]
    with ThreadPoolExecutor(max_workers=2) as ex:
        par = list(ex.map(solve, lams))
    for a, b in zip(seq, par):
        np.testing.assert_array_equal(a, b)


def _neumaier_branch_form(terms):
    """Neumaier's compensated sum with the magnitude-ordered error term, one coordinate at a time."""
    s = np.zeros(terms.shape[1])
    c = np.zeros(terms.shape[1])
    for row in terms:
        for j, x in enumerate(row):
            t = s[j] + x
            c[j] += (s[j] - t) + x if abs(s[j]) >= abs(x) else (x - t) + s[j]
            s[j] = t
    return s, c


@pytest.mark.parametrize("sparse", [False, True])
def test_the_compensated_dual_sum_is_neumaiers_to_the_bit(sparse):
    # the certificate's v = (1/n) sum_i beta_i x_i uses a branch-free TwoSum for the error term: the
    # same exact rounding error as the magnitude-ordered form, so u = w0 + (v + v_comp) / lam agrees
    # to the last bit, with terms of wildly different sizes (both branches taken)
    rng = np.random.default_rng(3)
    n, d = 400, 6
    X = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-8, 9, size=(n, d))
    X[rng.uniform(size=X.shape) < 0.2] = 0.0
    rows = RowData(sp.csr_matrix(X) if sparse else X)
    y = rng.normal(size=n)
    beta = rng.uniform(-1, 1, size=n)
    lam, w0 = 0.3, rng.normal(size=d)
    res = certified_erm(rows, y, Absolute(), lam, w0, target_distance=0.0, max_epochs=0, dual_start=beta)
    s, c = _neumaier_branch_form(beta[:, None] * (1.0 / n) * X)
    np.testing.assert_array_equal(res.w, w0 + (s + c) / lam)


@pytest.mark.parametrize("loss", [Absolute(), Hinge(), Squared()], ids=repr)
@pytest.mark.parametrize("start_dual", [False, True])
def test_unit_weights_are_weights_of_one_to_the_bit(loss, start_dual):
    # no weights (the set-up's shortcut: every row active, 1 * ||x||^2 as is) against explicit weights of one,
    # on a row range, with and without a dual start: the same path, the same floats
    X, y, sw, clip, lam, w0, s = make_instance("random", loss, seed=11)
    w0 = np.append(w0, 0.05)
    rng = np.random.default_rng(2)
    start, stop = 7, X.shape[0] - 5
    beta = rng.uniform(-0.5, 0.5, size=stop - start) if start_dual else None
    kw = dict(clip=clip, start=start, stop=stop, target_distance=1e-7, max_epochs=40, dual_start=beta)
    a = certified_erm(RowData(X, 1.0), y, loss, lam, w0, **kw)
    b = certified_erm(RowData(X, 1.0), y, loss, lam, w0, sample_weight=np.ones(X.shape[0]), **kw)
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.dual_coef, b.dual_coef)
    assert a.n_epochs == b.n_epochs and a.distance_bound == b.distance_bound


class _TableAbsolute(Absolute):
    """Absolute through the class's table: certified_erm's inline path is for ``type(loss) is Absolute`` only."""


@pytest.mark.parametrize("d", [1, 4, 5, 21])
@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("ball", [False, True])
def test_inline_absolute_and_gathered_rows_are_the_table_path_to_the_bit(d, intercept, weights, ball):
    # the ascent's and the certificate's inline Absolute terms and dense row products, and the certificate's v
    # gathered 64 rows at a time (_flush_comp), against the loss's own methods: the same path, the same floats
    # (n not a multiple of 64; uncertified and certified ends); at a dual start without passes, v (hence w and
    # the dual value) as CSR rows add it row by row (RowData.axpy_comp; their products <x_i, w> sum in another
    # order than dense rows', so the ascent's path and the primal value may differ in the last bits)
    rng = np.random.default_rng(d + 10 * weights)
    n = 1000 + 37 * d
    X = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-3, 4, size=(n, 1))
    y = X @ rng.normal(size=d) + rng.standard_t(2, size=n)
    sw = rng.uniform(0, 1, size=n) if weights else None
    w0 = rng.normal(size=d + (intercept > 0)) * 0.1
    for lam, epochs, start in [(1e-3, 3, None), (1e-2, 300, None), (1e-2, 0, rng.uniform(-1, 1, size=n - 11))]:
        kw = dict(clip=0.8, sample_weight=sw, start=5, stop=n - 6, target_distance=1e-6, max_epochs=epochs,
                  dual_start=start)
        if ball:
            kw.update(ball_center=w0 + 0.01, ball_radius=0.5)
        a = certified_erm(RowData(X, intercept), y, Absolute(), lam, w0, **kw)
        b = certified_erm(RowData(X, intercept), y, _TableAbsolute(), lam, w0, **kw)
        assert a.w.tobytes() == b.w.tobytes() and a.dual_coef.tobytes() == b.dual_coef.tobytes()
        assert (a.n_epochs, a.distance_bound, a.gap, a.primal, a.dual) == (b.n_epochs, b.distance_bound, b.gap,
                                                                            b.primal, b.dual)
        if epochs == 0:
            c = certified_erm(RowData(sp.csr_matrix(X), intercept), y, Absolute(), lam, w0, **kw)
            assert a.w.tobytes() == c.w.tobytes() and a.dual == c.dual
