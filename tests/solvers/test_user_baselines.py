"""The user-level baselines: user-level DP-GD and item-level DP converted by group privacy.

T0: the noise calibration (sigma = 2C sqrt(T) / mu(eps, delta)), the event's exact Gaussian
composition, the group-privacy conversion numbers (and their consistency with the exact Gaussian
curve), the item-level sensitivity on adversarial rows.
T1: DP-GD on a tight linear-loss instance (every user's mean gradient has norm 1 > C; the neighbour
flips one user), Gaussian-DP audit of the final iterate over 1e5 vectorised runs; mutants: sigma/2,
clipping skipped, noise added once. Item-level release audited at the item level with its half-noise
mutant.
"""

import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import clipped_sum_sensitivity, dp_gd_step_mechanism
from sklearn_dpsco._mechanisms._grid import l2_grid_sensitivity_squared, round_to_grid
from sklearn_dpsco._solvers._user_level._baselines import (
    _clip_rows,
    clipped_gradient_sum,
    clipped_mean_gradient_sum,
    dp_sgd_plan,
    group_privacy_item_budget,
    item_group_plan,
    run_dp_sgd,
    run_item_group,
    user_mean_gradient_error,
    user_mean_gradients,
)
from sklearn_dpsco._solvers._core._user_data import make_user_data
from sklearn_dpsco._solvers._optim._user_erm import solve_user_logistic
from sklearn_dpsco.accounting import SelfComposedEvent, ZCDPEvent, epsilon_delta, gaussian_mu, zcdp_rho
from sklearn_dpsco.testing import audit_gaussian_dp, audit_release_with_mutants, project_on


# --------------------------------------------------------------------------- DP-GD
def test_dp_sgd_calibration_and_event():
    plan = dp_sgd_plan(100, 3, epsilon=1.0, delta=1e-6, iterations=25, clip=0.5, step=0.1, lam=0.0, radius=5.0,
                       gradient_error=0.0, noise="float")
    # why: T Gaussian steps of sensitivity 2C compose to sqrt(T) 2C / sigma -GDP
    assert plan.sigma == pytest.approx(2 * 0.5 * 5 / gaussian_mu(1.0, 1e-6))
    eps, delta = epsilon_delta(plan.event, delta=1e-6)
    assert eps == pytest.approx(1.0, rel=1e-9) and delta == 1e-6
    with pytest.raises(ValueError, match="delta > 0"):
        dp_sgd_plan(100, 3, epsilon=1.0, delta=0.0, iterations=5, clip=0.5, step=0.1, lam=0.0, radius=5.0,
                    gradient_error=0.0)


def _linear_users(n, p, flip):
    """Mean gradients of the linear loss -y<w, x> with x = e_1: -y e_1 (norm 1), constant in w."""
    G = np.zeros((n, p))
    G[:, 0] = -1.0
    if flip:
        G[0, 0] = 1.0
    return lambda W: np.broadcast_to(G[None], (W.shape[0], n, p))


def _noise_once(user_gradients, plan, rng, size):
    """Mutant: the noise of the first step only."""
    W = np.zeros((size, plan.n_coef))
    for t in range(plan.iterations):
        G = _clip_rows(user_gradients(W), plan.clip).sum(axis=1)
        noise = rng.normal(0.0, plan.sigma, size=W.shape) if t == 0 else 0.0
        W = W - plan.step * ((G + noise) / plan.n_users + plan.lam * W)
    return W


def test_dp_sgd_clipping_makes_the_sum_sensitivity_exactly_2c():
    plan = dp_sgd_plan(10, 1, epsilon=1.0, delta=1e-6, iterations=1, clip=0.5, step=1.0, lam=0.0, radius=1e6,
                       gradient_error=0.0, noise="float")
    a = _clip_rows(_linear_users(10, 1, False)(np.zeros((1, 1))), plan.clip).sum(axis=1)
    b = _clip_rows(_linear_users(10, 1, True)(np.zeros((1, 1))), plan.clip).sum(axis=1)
    assert float(np.abs(a - b).max()) == pytest.approx(2 * plan.clip)


@pytest.mark.statistical
@pytest.mark.parametrize("mutant", [None, "momentum", "half_noise", "no_clip", "noise_once"])
def test_dp_sgd_final_iterate_audit(mutant):
    # "momentum" is not a mutant: Nesterov momentum post-processes the same releases
    eps, delta, n, T = 1.0, 1e-5, 20, 10
    plan = dp_sgd_plan(n, 1, epsilon=eps, delta=delta, iterations=T, clip=0.5, step=0.5, lam=0.0, radius=1e6,
                       gradient_error=0.0, noise="float", momentum=0.9 if mutant == "momentum" else 0.0)
    if mutant == "half_noise":
        plan = dataclasses.replace(plan, sigma=plan.sigma / 2)
    if mutant == "no_clip":  # noise planned for C = 0.5, gradients of norm 1 not clipped
        plan = dataclasses.replace(plan, clip=1e9)
    rng = np.random.default_rng(17)
    runs = []
    for flip in (False, True):
        grads = _linear_users(n, 1, flip)
        if mutant == "noise_once":
            runs.append(_noise_once(grads, plan, rng, 100_000))
        else:
            runs.append(run_dp_sgd(grads, plan, rng, size=100_000))
    centre_a, centre_b = runs[0].mean(axis=0), runs[1].mean(axis=0)
    a, b = project_on(runs[0], centre_a, centre_b), project_on(runs[1], centre_a, centre_b)
    res = audit_gaussian_dp(a, b, eps, delta)
    assert res.violation is (mutant not in (None, "momentum")), res


@pytest.mark.parametrize("noise", ["float", "secure"])
def test_dp_sgd_momentum_does_not_change_the_releases(noise):
    """Momentum is post-processing: same sigma, mechanism and event as plain DP-GD with the same T."""
    kw = dict(epsilon=1.0, delta=1e-6, iterations=20, clip=0.5, step=0.5, lam=0.01, radius=5.0, gradient_error=1e-12,
              noise=noise)
    plain, fast = dp_sgd_plan(100, 3, **kw), dp_sgd_plan(100, 3, momentum=0.9, **kw)
    assert fast.momentum == 0.9 and plain.momentum == 0.0
    assert fast.sigma == plain.sigma and fast.mechanism == plain.mechanism and fast.event == plain.event
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="momentum"):
            dp_sgd_plan(100, 3, momentum=bad, **kw)


def test_dp_sgd_momentum_takes_gradients_inside_the_radius():
    """The look-ahead point is projected: every point a gradient is taken at has norm <= radius, the
    assumption of the float error bound of the users' gradients (user_mean_gradient_error)."""
    n, p, radius = 20, 2, 0.3
    plan = dp_sgd_plan(n, p, epsilon=1.0, delta=1e-6, iterations=15, clip=0.5, step=0.5, lam=0.0, radius=radius,
                       gradient_error=0.0, noise="secure", momentum=0.95)
    grads = _linear_users(n, p, False)
    seen = []

    def clipped_sum(W):
        seen.append(np.linalg.norm(W, axis=1).max())
        return clipped_gradient_sum(grads(W), plan.clip)

    w = run_dp_sgd(grads, plan, np.random.default_rng(0), clipped_sum=clipped_sum)
    assert len(seen) == 15 and max(seen) <= radius * (1 + 1e-12) and np.linalg.norm(w) <= radius * (1 + 1e-12)
    # without the projection of the look-ahead point the iterates at the boundary would overshoot it
    assert max(seen) > 0.99 * radius
    # momentum 0 is plain projected DP-GD: the same iterates as the loop without look-ahead
    plain = dataclasses.replace(plan, momentum=0.0)
    a = run_dp_sgd(grads, plain, np.random.default_rng(1))
    W, rng = np.zeros((1, p)), np.random.default_rng(1)
    for _ in range(plain.iterations):
        noisy = plain.mechanism.draw(rng, 1).release(clipped_gradient_sum(grads(W), plain.clip))
        W = W - plain.step * (noisy / n + plain.lam * W)
        W = W * np.minimum(1.0, radius / np.maximum(np.linalg.norm(W, axis=1, keepdims=True), 1e-300))
    np.testing.assert_array_equal(a, W[0])


# --------------------------------------------------------------------------- item level + group privacy
@pytest.mark.parametrize("m", [1, 2, 10, 100])
def test_group_privacy_conversion(m):
    eps_i, delta_i = group_privacy_item_budget(1.0, 1e-6, m)
    assert eps_i == pytest.approx(1.0 / m)
    assert m * math.exp((m - 1) * eps_i) * delta_i <= 1e-6
    plan = item_group_plan(50, m, 3, data_norm=1.0, lam=0.1, epsilon=1.0, delta=1e-6)
    e = plan.event
    assert e.epsilon == pytest.approx(1.0) and e.delta <= 1e-6
    # the release is Gaussian: a user moves the centre by <= m item sensitivities, so the user-level
    # mechanism is exactly (m Delta_i / sigma)-GDP; group privacy claims (eps, delta), which for a
    # Gaussian holds iff that mu is <= mu(eps, delta) — an independent consistency check.
    mu_user = m * plan.mechanism.sensitivity / plan.mechanism.sigma
    assert mu_user <= gaussian_mu(1.0, 1e-6) * (1 + 1e-9)


def test_item_sensitivity_on_adversarial_rows():
    """Changing one row (replace, or add/remove: n m is the public normaliser) moves the exact
    minimizer by <= 2R / (lam n m)."""
    rng = np.random.default_rng(3)
    n, m, d, lam = 12, 3, 2, 0.2
    X = rng.standard_normal((n * m, d))
    y = rng.choice([-1.0, 1.0], n * m)
    groups = np.repeat(np.arange(n), m)
    base = make_user_data(X, y, groups, max_items=m, data_norm=1.0)
    bound = 2.0 / (lam * n * m)
    w = solve_user_logistic(base.X, base.y, n, max_items=m, data_norm=1.0, lam=lam, center=np.zeros(d), tau=1e-10).w
    for trial in range(10):
        X2, y2 = base.X.copy(), base.y.copy()
        r = int(rng.integers(n * m))
        X2[r] = np.array([1.0, 0.0]) if trial % 2 else rng.standard_normal(d) / 3
        y2[r] = -y2[r]
        w2 = solve_user_logistic(X2, y2, n, max_items=m, data_norm=1.0, lam=lam, center=np.zeros(d), tau=1e-10).w
        assert np.linalg.norm(w - w2) <= bound
        keep = np.arange(n * m) != r  # removal of the row, same public normaliser
        w3 = solve_user_logistic(base.X[keep], base.y[keep], n, max_items=m, data_norm=1.0, lam=lam,
                                 center=np.zeros(d), tau=1e-10).w
        assert np.linalg.norm(w - w3) <= bound / 2


def test_item_group_release_is_centre_plus_planned_noise():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = rng.choice([-1.0, 1.0], 40)
    data = make_user_data(X, y, np.repeat(np.arange(10), 4), max_items=4, data_norm=1.0)
    plan = item_group_plan(10, 4, 2, data_norm=1.0, lam=0.5, epsilon=1.0, delta=1e-6)
    out = run_item_group(data, plan, np.random.default_rng(4), radius=1e9)
    w = solve_user_logistic(data.X, data.y, 10, max_items=4, data_norm=1.0, lam=0.5, center=np.zeros(2),
                            tau=plan.tau).w
    np.testing.assert_allclose(out, plan.mechanism.release(w, np.random.default_rng(4)), atol=1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize("mult, flagged", [(1.0, False), (0.5, True)])
def test_item_level_release_audit(mult, flagged):
    plan = item_group_plan(30, 5, 1, data_norm=1.0, lam=0.5, epsilon=4.0, delta=1e-3)
    mech = plan.mechanism
    c, cp = np.zeros(1), np.full(1, mech.sensitivity)  # one row's worst-case move
    rng = np.random.default_rng(8)
    sigma = mech.sigma * mult
    a = project_on(c + sigma * rng.standard_normal((100_000, 1)), c, cp)
    b = project_on(cp + sigma * rng.standard_normal((100_000, 1)), c, cp)
    res = audit_gaussian_dp(a, b, plan.item_epsilon, plan.item_delta)
    assert res.violation is flagged, res


# --------------------------------------------------------------------------- DP-GD on the secure path
def _secure_plan(n, p, T, *, eps=1.0, delta=1e-5, clip=0.5, gradient_error=0.0, **kw):
    kw = {"step": 0.5, "lam": 0.0, "radius": 1e6, **kw}
    return dp_sgd_plan(n, p, epsilon=eps, delta=delta, iterations=T, clip=clip, gradient_error=gradient_error,
                       noise="secure", **kw)


def test_secure_dp_sgd_event_is_t_zcdp_steps_within_budget():
    plan = _secure_plan(100, 3, 25, eps=1.0, delta=1e-6)
    assert plan.noise == "secure" and isinstance(plan.mechanism.event, ZCDPEvent)
    assert plan.event == SelfComposedEvent(plan.mechanism.event, 25)
    # why: T steps of S2/(2N)-zCDP add up to <= zcdp_rho(eps, delta) (Bun and Steinke 2016)
    assert 25 * plan.mechanism.rho <= zcdp_rho(1.0, 1e-6)
    eps, delta = epsilon_delta(plan.event, delta=1e-6)
    assert eps <= 1.0 and eps >= 0.999 and delta == 1e-6
    # the secure sigma pays the zCDP calibration (a few percent) over the float path's exact GDP
    float_sigma = dp_sgd_plan(100, 3, epsilon=1.0, delta=1e-6, iterations=25, clip=0.5, step=0.5, lam=0.0,
                              radius=1e6, gradient_error=0.0, noise="float").sigma
    assert float_sigma < plan.sigma < 1.15 * float_sigma


def test_secure_dp_sgd_refuses_an_uncalibratable_split_before_data():
    with pytest.raises(ValueError, match="too small to split into 1000 secure Gaussian steps"):
        _secure_plan(100, 3, 1000, eps=1e-6, delta=1e-5)


def test_secure_step_sensitivity_covers_the_float_sum():
    n, p, C = 1000, 4, 0.5
    plan = _secure_plan(n, p, 5, clip=C, gradient_error=1e-15)
    mech = plan.mechanism
    # exactly 2C, plus the float64 computation's rounding: a relative ~n^2 u here
    assert 2 * C < mech.sensitivity < 2 * C * (1 + 1e-9)
    assert clipped_sum_sensitivity(C, n, p, 0.0) <= mech.sensitivity
    # computed clipped vectors of huge, tiny and ordinary norms stay within C (1 + gamma_{2p+6})
    rng = np.random.default_rng(0)
    G = rng.standard_normal((1, 3000, p)) * 10.0 ** rng.uniform(-80, 150, (1, 3000, 1))
    norms = np.linalg.norm(_clip_rows(G, C)[0], axis=1)
    assert norms.max() <= C * (1 + (2 * p + 7) * 2.0**-53)


def _mean_gradients_extended(data, W):
    """The users' mean logistic gradients in 80-bit extended precision (the exact value up to ~1e-19 relative)."""
    X = data.X.toarray() if sp.issparse(data.X) else data.X
    Xl, yl = X.astype(np.longdouble), data.y.astype(np.longdouble)
    counts = np.diff(data.indptr).astype(np.longdouble)[:, None]
    with np.errstate(over="ignore"):
        return np.stack([np.add.reduceat((-yl / (1 + np.exp(yl * (Xl @ w))))[:, None] * Xl, data.indptr[:-1], axis=0)
                         / counts for w in W.astype(np.longdouble)])


def test_user_mean_gradient_error_covers_the_compiled_kernel():
    """The secure step sensitivity adds ``e_g = user_mean_gradient_error`` per user: the compiled users' mean
    gradients (dense and CSR, rows and iterates of every scale) and the fused clipped sum are within it of an
    extended-precision reference. Mutant: ``e_g`` without its ``<x, w>`` term, violated ~100x when ``<x, w>``
    cancels at ``R radius = 1e4``."""
    u = 2.0**-53

    def gam(k):
        return k * u / (1 - k * u)

    rng = np.random.default_rng(3)
    worst = worst_sum = 0.0
    for _ in range(60):
        n_users, m, p = int(rng.integers(5, 300)), int(rng.integers(1, 30)), int(rng.integers(1, 30))
        R, radius = 10.0 ** rng.uniform(-4, 4), 10.0 ** rng.uniform(-4, 4)
        groups = rng.permutation(np.repeat(np.arange(n_users) * 7919 % 100003, rng.integers(1, m + 1, n_users)))
        X = rng.standard_normal((groups.size, p)) * 10.0 ** rng.uniform(-3, 3, (groups.size, 1))
        y = np.where(rng.random(groups.size) < 0.5, 1.0, -1.0)
        data = make_user_data(sp.csr_matrix(X) if rng.random() < 0.3 else X, y, groups, max_items=m, data_norm=R,
                              intercept_scaling=R * rng.uniform(0, 1))
        d = data.X.shape[1]
        W = rng.standard_normal((2, d))
        W *= radius / np.linalg.norm(W, axis=1, keepdims=True)
        ref = _mean_gradients_extended(data, W)
        e_g = user_mean_gradient_error(R, m, d, radius)
        err = np.sqrt(np.sum((user_mean_gradients(data, W).astype(np.longdouble) - ref) ** 2, axis=-1))
        worst = max(worst, float(err.max()) / e_g)
        # the fused clipped sum: within n (C gamma_{2p+6} + e_g) + gamma_{n-1} n C (1 + gamma_{2p+6}) of the exact
        # one on each side (half of the sensitivity's rounding terms)
        C = R * 10.0 ** rng.uniform(-2, 0.5)
        norms = np.sqrt(np.sum(ref * ref, axis=-1, keepdims=True))
        exact = (ref * np.minimum(1, C / np.maximum(norms, 1e-300))).sum(axis=1)
        n = data.n_users
        side = n * (C * gam(2 * d + 6) + e_g) + gam(max(n - 1, 1)) * n * C * (1 + gam(2 * d + 6))
        got = clipped_mean_gradient_sum(data, W, C).astype(np.longdouble)
        worst_sum = max(worst_sum, float(np.sqrt(np.sum((got - exact) ** 2, axis=-1)).max()) / side)
    assert worst <= 1.0 and worst_sum <= 1.0
    # power: rows of norm ~R against iterates of norm radius nearly orthogonal to them
    R = radius = 100.0
    W = rng.standard_normal((1, 4))
    W *= radius / np.linalg.norm(W)
    X = rng.standard_normal((200, 4))
    X -= (X @ W[0])[:, None] * W / radius**2  # <x, w> ~ 0 up to the roundings of R radius-sized products
    X *= 0.99 * R / np.linalg.norm(X, axis=1, keepdims=True)
    data = make_user_data(X, np.ones(200), np.arange(200), max_items=1, data_norm=R)
    err = np.sqrt(np.sum((user_mean_gradients(data, W).astype(np.longdouble) - _mean_gradients_extended(data, W)) ** 2,
                         axis=-1))
    assert float(err.max()) <= user_mean_gradient_error(R, 1, 4, radius)
    assert float(err.max()) > 10 * 2 * R * gam(1 + 8)  # the mutant's bound


@pytest.mark.parametrize("sparse", [False, True])
def test_secure_step_sensitivity_through_the_real_pipeline_with_a_reordering_neighbour(sparse, monkeypatch):
    """The plan's sensitivity on the sums the fit releases: make_user_data (rows scaled, intercept column written)
    and the fused compiled kernel (fixed blocks of 256 users, with and without threads). The replaced user leaves
    from the front of the user order and returns, with another row count, at its end: every other user moves one
    place and changes block, so the sum is formed in another order. At w = 0 the replaced user's clipped mean
    gradient flips from -C v to +C v (2C exactly); at iterates inside the radius the bound still holds."""
    from joblib import Parallel

    from sklearn_dpsco._solvers._user_level import _baselines

    monkeypatch.setattr(_baselines, "_ROWS_PER_THREAD", 1)  # several parts even on these few rows
    n, m, p, R, radius = 700, 5, 6, 2.0, 3.0
    C = R / (2 * math.sqrt(2))
    rng = np.random.default_rng(8)
    counts = rng.integers(1, m + 1, n - 1)
    groups = np.repeat(np.arange(1, n) * 10, counts)
    X = rng.standard_normal((groups.size, p - 1)) * 10.0 ** rng.uniform(-2, 2, (groups.size, 1))
    y = np.where(rng.random(groups.size) < 0.5, 1.0, -1.0)
    v = rng.standard_normal(p - 1)
    v /= np.linalg.norm(v)
    # D: user 0 (first in the order), one row 100 v with label +1; D': user 10^9 (last), m rows 100 v, label -1
    XD, yD, gD = np.vstack([100 * v[None], X]), np.append(1.0, y), np.append(0, groups)
    XE, yE, gE = np.vstack([X, np.tile(100 * v, (m, 1))]), np.append(y, -np.ones(m)), np.append(groups, [10**9] * m)
    plan = _secure_plan(n, p, 10, clip=C, gradient_error=user_mean_gradient_error(R, m, p, radius))
    datas = [make_user_data(sp.csr_matrix(A) if sparse else A, b, g, max_items=m, data_norm=R, intercept_scaling=1.0)
             for A, b, g in ((XD, yD, gD), (XE, yE, gE))]
    W = rng.standard_normal((6, p))
    W *= radius * rng.uniform(0, 1, (6, 1)) / np.linalg.norm(W, axis=1, keepdims=True)
    W[0] = 0.0
    with Parallel(n_jobs=2, require="sharedmem") as parallel:
        for par in (None, parallel):
            S, S2_ = (clipped_mean_gradient_sum(data, W, C, par) for data in datas)
            diff = np.linalg.norm(S - S2_, axis=1)
            assert diff.max() <= plan.mechanism.sensitivity
            assert diff[0] >= 2 * C * (1 - 1e-12)  # attained at w = 0: half the sensitivity would not do
            gamma = plan.mechanism.grid
            k, k2 = round_to_grid(S, gamma, S.shape), round_to_grid(S2_, gamma, S.shape)
            assert np.sum((k - k2) ** 2, axis=1).max() <= l2_grid_sensitivity_squared(
                plan.mechanism.sensitivity, gamma, p)


def test_secure_step_sensitivity_in_grid_units_after_rounding():
    """Worst-case neighbours (one user flips its clipped gradient): rounded sums differ by <= S2 grid steps."""
    n, p, C = 20, 3, 0.5
    plan = _secure_plan(n, p, 10, clip=C)
    mech = plan.mechanism
    gamma = mech.grid
    S2 = l2_grid_sensitivity_squared(mech.sensitivity, gamma, p)
    assert mech.noise_sensitivity == pytest.approx(math.sqrt(S2) * gamma)
    rng = np.random.default_rng(1)
    worst = 0
    for _ in range(200):
        u = rng.standard_normal(p)
        u /= np.linalg.norm(u)
        base = rng.standard_normal((n, p)) * rng.uniform(0.1, 3.0, (n, 1))
        flipped = base.copy()
        base[0], flipped[0] = 3.0 * u, -3.0 * u  # clipped to +C u and -C u: the sums move by 2C
        k = round_to_grid(clipped_gradient_sum(base[None], C)[0], gamma, p)
        k2 = round_to_grid(clipped_gradient_sum(flipped[None], C)[0], gamma, p)
        worst = max(worst, int(np.sum((k - k2) ** 2)))
    assert worst <= S2
    # the neighbours attain the exact part of the bound: calibrating to C (half) would be violated
    assert worst >= math.floor((2 * C / gamma) ** 2)
    assert worst > l2_grid_sensitivity_squared(C, gamma, p)


def test_secure_dp_sgd_releases_lie_on_the_grid_and_repeat_with_the_seed():
    plan = _secure_plan(20, 2, 4, step=1.0)
    grads = _linear_users(20, 2, False)
    a = run_dp_sgd(grads, plan, np.random.default_rng(3), size=5)
    np.testing.assert_array_equal(a, run_dp_sgd(grads, plan, np.random.default_rng(3), size=5))
    assert not np.array_equal(a, run_dp_sgd(grads, plan, np.random.default_rng(4), size=5))
    # one step from w0 = 0 with step n: w_1 = -release(G) exactly, a multiple of the grid
    one = _secure_plan(20, 2, 1, step=20.0)
    w1 = run_dp_sgd(grads, one, np.random.default_rng(5), size=50)
    assert np.all(np.mod(w1 / one.mechanism.grid, 1.0) == 0.0)


class _DPGDRun:
    """``release(centre, rng, size)``: the mean noisy step sum of ``size`` DP-GD runs on D (centre) or D'."""

    def __init__(self, plan, centre):
        self.plan, self.centre = plan, centre

    def release(self, value, rng, size):
        grads = _linear_users(self.plan.n_users, 1, flip=not np.array_equal(value, self.centre))
        W = run_dp_sgd(grads, self.plan, rng, size=size)
        # lam = 0, no projection: w_T = -(step / n) * sum of the T released sums (post-processing)
        return -W * self.plan.n_users / (self.plan.step * self.plan.iterations)


N_AUDIT = 40_000  # runs per side and mechanism: the half-noise mutant is flagged with a wide margin


@pytest.mark.statistical
def test_secure_dp_sgd_final_iterate_audit_with_half_noise_mutant():
    eps, delta, n, T = 1.0, 1e-5, 20, 10
    plan = _secure_plan(n, 1, T, eps=eps, delta=delta)
    centre, centre_p = np.array([-n * plan.clip]), np.array([-(n - 2) * plan.clip])

    def make(f):
        # mutant: the steps calibrated to f times the true sensitivity (f = 0.5: half the noise)
        mech = dp_gd_step_mechanism(f * plan.mechanism.sensitivity, T, Budget(eps, delta, "secure"), 1)
        return _DPGDRun(dataclasses.replace(plan, mechanism=mech, sigma=mech.sigma), centre)

    ok, mutants = audit_release_with_mutants(make, centre, centre_p, eps, delta, statistic="mu", n_draws=N_AUDIT,
                                             rng=np.random.default_rng(21), factors=(0.5,))
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]
