"""Snowball-SGD on the secure path (doc/privacy/snowball_sgd.rst, "Secure path").

T0: the plan (constant batches, the mechanism at the full budget, event = one step's zCDP within
(epsilon, delta), steps within 2/beta); the step sensitivity is exactly 2C plus the float bound:
worst-case neighbouring batches (one row replaced, huge rows and labels) give float sums within it
and rounded sums within S2 grid units, attaining floor((2C / gamma)^2) (half of it would be violated);
the per-row gradients stay within C; results do not depend on the block size (nor the clipped-rows
window) and repeat with the seed; a one-step run is the grid release of the batch sum; the estimator
(snowball, interpolation with delta > 0, fit_stream) runs on noise="secure" with the zCDP event.
T1: a canary row in the real schedule's only batch (n = B), 1e5 vectorised runs of the real loop,
Gaussian-DP audit against mu(epsilon, delta): passes; the half-noise and no-Huber-clipping mutants
are flagged.
"""

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import clipped_sum_sensitivity, one_pass_step_mechanism
from sklearn_dpsco._mechanisms._grid import l2_grid_sensitivity_squared, round_to_grid
from sklearn_dpsco._solvers._core._row_source import ArraySource
from sklearn_dpsco._solvers._core._sgd_settings import SGDSettings
from sklearn_dpsco._solvers._noisy_sgd import _secure_pnsgd
from sklearn_dpsco._solvers._noisy_sgd._secure_pnsgd import (
    clipped_row_gradients,
    row_gradient_error,
    run_snowball,
    secure_snowball_schedule,
)
from sklearn_dpsco.accounting import ZCDPEvent, epsilon_delta, zcdp_rho
from sklearn_dpsco.linear_model import DPLinearRegressor
from sklearn_dpsco.testing import audit_gaussian_dp, project_on

SETTINGS = SGDSettings(clip=1.0, row_bound=1.0, intercept_scaling=0.5, radius=10.0)


def _schedule(n=5000, d=6, eps=1.0, delta=1e-5, settings=SETTINGS, steps="jnn"):
    return secure_snowball_schedule(n, d, epsilon=eps, delta=delta, settings=settings, steps=steps)


# ----------------------------------------------------------------------------- the plan
@pytest.mark.parametrize("steps", ["jnn", "constant"])
def test_plan_is_one_full_budget_step_on_constant_batches(steps):
    n, d, eps, delta = 5003, 6, 1.0, 1e-5
    s = _schedule(n, d, eps, delta, steps=steps)
    mech = s.mechanism
    assert isinstance(s.event, ZCDPEvent) and s.event == mech.event
    # why: disjoint batches, so the run costs one step's zCDP, which must be within the whole budget
    assert mech.rho <= zcdp_rho(eps, delta)
    got_eps, got_delta = epsilon_delta(s.event, delta=delta)
    assert 0.99 * eps <= got_eps <= eps and got_delta == delta
    B = s.info["batch"]
    # mean noise no larger than a clipped gradient: B = ceil(sqrt(d) sigma_sum / C)
    assert B == math.ceil(math.sqrt(d) * one_pass_step_mechanism(2.0, Budget(eps, delta, "secure"), d).sigma)
    assert d * (mech.sigma / B) ** 2 <= SETTINGS.clip**2 * 1.01
    batches = s.batch_sizes
    assert batches.sum() == n and np.all(batches[:-1] == B) and B <= batches[-1] < 2 * B
    assert np.max(s.steps) <= SETTINGS.max_step and np.all(s.steps > 0)
    assert s.noise == "secure"


def test_plan_refuses_pure_dp_and_float_budget():
    with pytest.raises(ValueError):
        one_pass_step_mechanism(2.0, Budget(1.0, 0.0, "secure"), 3)
    with pytest.raises(ValueError):
        one_pass_step_mechanism(2.0, Budget(1.0, 1e-5, "float"), 3)


def test_tiny_n_is_one_batch_of_all_rows():
    s = _schedule(n=3, d=6)
    assert s.n_steps == 1 and s.batch_sizes.tolist() == [3]


# ----------------------------------------------------------------------------- exact sensitivity
def _gradient_error_vs_extended(X, y, W, settings):
    """Largest distance of the computed clipped row gradients from the same formulas in 80-bit extended
    precision (the exact value up to ~1e-19 relative)."""
    G = clipped_row_gradients(X, y, None, W, settings)
    R, s, C = settings.row_bound, settings.intercept_scaling, settings.clip
    Xl, yl, Wl = X.astype(np.longdouble), y.astype(np.longdouble), W.astype(np.longdouble)
    norms = np.sqrt(np.sum(Xl * Xl, axis=1))
    Xc = Xl * np.where(norms > R, R / norms, 1.0)[:, None]
    Xc = np.concatenate([Xc, np.full((X.shape[0], 1), s, dtype=np.longdouble)], axis=1)
    K = C / np.sqrt(np.sum(Xc * Xc, axis=1))
    Gl = np.clip(Wl @ Xc.T - yl, -K, K)[..., None] * Xc
    return float(np.max(np.sqrt(np.sum((G.astype(np.longdouble) - Gl) ** 2, axis=-1))))


def test_row_gradients_are_huber_clipped_to_c_on_extreme_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5)) * 10.0 ** rng.uniform(-100, 150, (2000, 1))
    y = rng.standard_normal(2000) * 10.0 ** rng.uniform(-5, 200, 2000)
    W = rng.standard_normal((3, 6)) * 1e3
    G = clipped_row_gradients(X, y, None, W, SETTINGS)
    assert G.shape == (3, 2000, 6)
    assert np.linalg.norm(G, axis=-1).max() <= SETTINGS.clip * (1 + 20 * 2.0**-53)
    # an ordinary row inside the Huber region: the plain squared-loss gradient (r x~)
    x, w = np.array([[0.1, 0.2, 0.0, 0.0, 0.1]]), np.full(6, 0.1)
    xt = np.append(x[0], 0.5)
    np.testing.assert_allclose(clipped_row_gradients(x, np.array([0.3]), None, w, SETTINGS)[0],
                               (w @ xt - 0.3) * xt)


def test_row_gradient_error_covers_the_float_computation():
    """Computed per-row gradients against an extended-precision reference, on rows, labels and
    iterates of every scale: within the public row_gradient_error (which the sensitivity adds)."""
    settings = SGDSettings(clip=0.7, row_bound=2.0, intercept_scaling=0.5, radius=30.0)
    p = 8
    rng = np.random.default_rng(7)
    X = rng.standard_normal((3000, p)) * 10.0 ** rng.uniform(-3, 3, (3000, 1))
    y = rng.standard_normal(3000) * 10.0 ** rng.uniform(-3, 3, 3000)
    W = rng.standard_normal((5, p + 1))
    W *= 30.0 / np.linalg.norm(W, axis=1, keepdims=True)
    err = _gradient_error_vs_extended(X, y, W, settings)
    assert 0 < err <= row_gradient_error(settings, p + 1, 30.0)


def test_row_gradient_error_covers_rows_whose_squared_norm_overflows():
    """Rows of norm above ~1.3e154 (their sum of squares overflows float64) are scaled to the bound like
    every other row, not zeroed: the sensitivity adds row_gradient_error for EVERY other row of a batch
    without assuming the two neighbours compute it bit for bit (doc/privacy/snowball_sgd.rst), so the
    bound must hold for them too. Mutant (the plain sqrt of the overflowing sum): such a row's gradient
    becomes that of (0, s), about C away from the exact one."""
    settings = SGDSettings(clip=0.7, row_bound=2.0, intercept_scaling=0.5, radius=30.0)
    p = 8
    rng = np.random.default_rng(11)
    X = rng.standard_normal((500, p)) * 10.0 ** rng.uniform(153, 307, (500, 1))
    X[:3] = [[1e200] + [0.0] * (p - 1), [-1.7e308] * p, [1.5e154] * 2 + [0.0] * (p - 2)]
    X /= np.maximum(1.0, np.abs(X).max(axis=1, keepdims=True) / 1.7e308)  # finite entries
    y = rng.standard_normal(500)
    W = rng.standard_normal((5, p + 1))
    W *= 30.0 / np.linalg.norm(W, axis=1, keepdims=True)
    # 80-bit extended precision: its exponent range holds these squares
    assert _gradient_error_vs_extended(X, y, W, settings) <= row_gradient_error(settings, p + 1, 30.0)


def test_step_sensitivity_is_exactly_2c_plus_rounding_in_grid_units():
    """Worst-case neighbouring batches: the released (rounded) sums differ by at most S2 grid steps."""
    d, C = 3, 0.5
    settings = SGDSettings(clip=C, row_bound=2.0, intercept_scaling=0.0, radius=10.0)
    s = _schedule(n=400, d=d, eps=2.0, delta=1e-6, settings=settings)
    mech, B = s.mechanism, int(s.batch_sizes.max())
    assert clipped_sum_sensitivity(C, B, d, row_gradient_error(settings, d, settings.radius)) == mech.sensitivity
    assert 2 * C < mech.sensitivity < 2 * C * (1 + 1e-9)
    gamma = mech.grid
    S2 = l2_grid_sensitivity_squared(mech.sensitivity, gamma, d)
    assert mech.noise_sensitivity == pytest.approx(math.sqrt(S2) * gamma)
    rng = np.random.default_rng(1)
    worst, worst_float = 0, 0.0
    for _ in range(200):
        w = rng.standard_normal(d)
        X = rng.standard_normal((B, d)) * rng.uniform(0.01, 50.0, (B, 1))
        y = rng.standard_normal(B) * 3.0
        u = rng.standard_normal(d)
        X[0], y[0] = 1e3 * u, 1e9  # residual far below -K: gradient -C x~/||x~||
        Xp, yp = X.copy(), y.copy()
        yp[0] = -1e9  # replaced row: gradient +C x~/||x~||, the sums move by exactly 2C
        g = clipped_row_gradients(X, y, None, w, settings).sum(axis=0)
        gp = clipped_row_gradients(Xp, yp, None, w, settings).sum(axis=0)
        worst_float = max(worst_float, np.linalg.norm(g - gp))
        k, kp = round_to_grid(g, gamma, d), round_to_grid(gp, gamma, d)
        worst = max(worst, int(np.sum((k - kp) ** 2)))
    assert worst_float <= mech.sensitivity
    assert worst_float >= 2 * C * (1 - 1e-12)
    assert worst <= S2
    # the neighbours attain the exact part of the bound: calibrating to C (half) would be violated
    assert worst >= math.floor((2 * C / gamma) ** 2) > l2_grid_sensitivity_squared(C, gamma, d)


# ----------------------------------------------------------------------------- the run
def _data(n, p, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p)) / math.sqrt(p)
    y = X @ rng.standard_normal(p) + 0.05 * rng.standard_normal(n)
    return X, y


def test_run_does_not_depend_on_blocks_and_repeats_with_the_seed():
    n, p = 1500, 5
    X, y = _data(n, p)
    s = _schedule(n, p + 1)
    runs = [run_snowball(ArraySource(X, y, block_rows=b), s, np.random.default_rng(3)) for b in (7, 64, 5000)]
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])
    Xs = sp.csr_matrix(np.where(np.abs(X) < 0.1, 0.0, X))
    dense = run_snowball(ArraySource(Xs.toarray(), y, block_rows=33), s, np.random.default_rng(3))
    np.testing.assert_array_equal(dense, run_snowball(ArraySource(Xs, y, block_rows=50), s, np.random.default_rng(3)))
    assert not np.array_equal(runs[0], run_snowball(ArraySource(X, y), s, np.random.default_rng(4)))


@pytest.mark.parametrize("window_rows", [1, 13, 700])
def test_run_does_not_depend_on_the_clipped_rows_window(monkeypatch, window_rows):
    """The w-free part of the gradients is computed a window of rows at a time (sparse blocks are
    densified a window at a time): a window of one row and windows across batch boundaries give the
    floats of the whole block."""
    n, p = 1500, 5
    X, y = _data(n, p, seed=4)
    s = _schedule(n, p + 1)
    Xs = sp.csr_matrix(np.where(np.abs(X) < 0.1, 0.0, X))
    ref = run_snowball(ArraySource(Xs, y, block_rows=400), s, np.random.default_rng(3))
    monkeypatch.setattr(_secure_pnsgd, "_WINDOW_FLOATS", window_rows * (p + 1))
    for data in (Xs, Xs.toarray()):
        np.testing.assert_array_equal(ref, run_snowball(ArraySource(data, y, block_rows=400), s,
                                                        np.random.default_rng(3)))


def test_one_step_is_the_grid_release_of_the_batch_sum():
    settings = SGDSettings(clip=1.0, row_bound=1.0, intercept_scaling=0.0, radius=1e9)
    s = _schedule(n=5, d=2, settings=settings)
    assert s.n_steps == 1
    X, y = _data(5, 2, seed=2)
    W = run_snowball(ArraySource(X, y), s, np.random.default_rng(5), n_runs=50)
    released = -W * 5 / s.steps[0]  # w_1 = 0 - eta (release / B)
    gamma = s.mechanism.grid
    np.testing.assert_allclose(released / gamma, np.rint(released / gamma), rtol=0, atol=1e-6)
    centre = clipped_row_gradients(X, y, None, np.zeros(2), settings).sum(axis=0)
    assert np.all(np.abs(released.mean(axis=0) - centre) < 5 * s.mechanism.sigma / math.sqrt(50))


@pytest.mark.parametrize("solver", ["snowball", "interpolation"])
def test_estimator_fits_on_the_secure_path(solver):
    X, y = _data(4000, 4)
    est = DPLinearRegressor(epsilon=1.0, delta=1e-5, solver=solver, row_bound=1.0, label_bound=2.0,
                            random_state=0).fit(X, y)
    assert est.noise == "secure"
    assert est.score(X, y) > 0.5
    eps, delta = epsilon_delta(est.privacy_event_, delta=1e-5)
    assert eps <= 1.0 + 1e-9
    if solver == "snowball":
        assert est.fit_info_["noise"] == "secure" and isinstance(est.privacy_event_, ZCDPEvent)
    stream = DPLinearRegressor(epsilon=1.0, delta=1e-5, solver=solver, row_bound=1.0, label_bound=2.0,
                               random_state=0)
    stream.fit_stream(((X[a:a + 500], y[a:a + 500]) for a in range(0, 4000, 500)), n_samples=4000)
    assert stream.score(X, y) > 0.5


# ----------------------------------------------------------------------------- statistical audit (T1)
def _canary_runs(schedule, label, n_runs, seed):
    """d = 1, no intercept: every row x = 0 except the first (the canary, x = 1, huge label)."""
    X = np.zeros((schedule.n, 1))
    X[0, 0] = 1.0
    y = np.zeros(schedule.n)
    y[0] = label
    return run_snowball(ArraySource(X, y), schedule, np.random.default_rng(seed), n_runs=n_runs)


@pytest.mark.statistical
def test_secure_snowball_canary_audit_with_mutants():
    eps, delta, n_draws = 1.0, 1e-5, 100_000
    settings = SGDSettings(clip=1.0, row_bound=1.0, intercept_scaling=0.0, radius=1e6)
    B = _schedule(n=10_000, d=1, eps=eps, delta=delta, settings=settings).info["batch"]
    schedule = _schedule(n=B, d=1, eps=eps, delta=delta, settings=settings)  # the real schedule's only step
    assert schedule.n_steps == 1
    # the canary's gradient is -C or +C (residual always Huber-clipped): the centres are eta (+-C) / B
    eta = schedule.steps[0]
    centre_a, centre_b = np.array([eta / B]), np.array([-eta / B])

    def audit(sched, seed):
        a = _canary_runs(sched, 1e6, n_draws, seed)
        b = _canary_runs(sched, -1e6, n_draws, seed + 1)
        return audit_gaussian_dp(project_on(a, centre_a, centre_b), project_on(b, centre_a, centre_b), eps, delta)

    res = audit(schedule, 0)
    assert not res.violation, res
    # mutant: the step calibrated to half the sensitivity (half the noise)
    half = one_pass_step_mechanism(0.5 * schedule.mechanism.sensitivity, Budget(eps, delta, "secure"), 1)
    assert audit(replace(schedule, mechanism=half), 2).violation
    # mutant: no Huber clipping (the row's gradient r x, planned for C = 1): use a clip level far above
    # the plan's; the label then moves the released sum by 2e6 instead of 2C
    unclipped = replace(schedule, settings=replace(settings, clip=1e300))
    assert audit(unclipped, 4).violation


def test_interpolation_stages_are_secure_runs_at_the_full_budget():
    from sklearn_dpsco._solvers._interpolation._accd_sgd import interpolation_sgd_schedule
    from sklearn_dpsco.accounting import ParallelComposedEvent

    eps, delta = 1.0, 1e-5
    s = interpolation_sgd_schedule(20000, 6, epsilon=eps, delta=delta, settings=SETTINGS, noise="secure")
    assert s.info["epochs"] >= 2 and isinstance(s.event, ParallelComposedEvent)
    for stage, L in zip(s.stages, s.lipschitz):
        assert stage.noise == "secure" and stage.mechanism.rho <= zcdp_rho(eps, delta)
        # each stage's sensitivity is 2 L_i (its own Lipschitz level), plus rounding
        assert 2 * L < stage.mechanism.sensitivity < 2 * L * (1 + 1e-6)
    got_eps, got_delta = epsilon_delta(s.event, delta=delta)
    assert got_eps <= eps and got_delta <= delta
    assert all(st.noise == "float" for st in interpolation_sgd_schedule(
        20000, 6, epsilon=eps, delta=delta, settings=SETTINGS, noise="float").stages)


def test_noise_draw_split_keeps_the_release_contract():
    mech = one_pass_step_mechanism(2.0, Budget(1.0, 1e-5, "secure"), 3)
    whole = mech.draw(np.random.default_rng(0), 4 * 5)
    parts = whole.split(4, (5, 3))
    assert len(parts) == 4 and all(p.shape == (5, 3) for p in parts)
    centre = np.array([0.1234567, -7.5, 3.0])
    out = np.stack([p.release(centre) for p in parts])  # each part: centre rounded to the grid + integer noise
    units = out / mech.grid
    np.testing.assert_array_equal(units, np.rint(units))
    assert np.unique(out.reshape(-1, 3), axis=0).shape[0] == 20  # fresh noise in every part and row
    with pytest.raises(ValueError):
        whole.split(3, (5, 3))


@pytest.mark.statistical
def test_interpolation_last_epoch_canary_audit_with_level_mutant():
    """The last epoch of a real secure interpolation plan (Lipschitz level C 2^-(T-1)), one step:
    passes; the stage with its rows extended at the previous level 2 L_T (the level not applied) and
    the half-noise stage are flagged."""
    from sklearn_dpsco._solvers._interpolation._accd_sgd import interpolation_sgd_schedule

    eps, delta, n_draws = 1.0, 1e-5, 100_000
    # radius 10: the float error of the gradients (~ u radius) stays far below the last level's 2 L_T
    settings = SGDSettings(clip=1.0, row_bound=1.0, intercept_scaling=0.0, radius=10.0)
    B = _schedule(n=10_000, d=1, eps=eps, delta=delta, settings=settings).info["batch"]
    plan = interpolation_sgd_schedule(40 * B, 1, epsilon=eps, delta=delta, settings=settings, n_epoch_rows=B,
                                      smoothness=1e-9, noise="secure")
    stage, level = plan.stages[-1], plan.lipschitz[-1]
    assert plan.info["epochs"] >= 10 and stage.n_steps == 1 and stage.n == B
    assert stage.settings.clip == level == 2.0 ** -(plan.info["epochs"] - 1)
    eta = stage.steps[0]
    centre_a, centre_b = np.array([eta * level / B]), np.array([-eta * level / B])

    def audit(sched, seed):
        a = _canary_runs(sched, 1e6, n_draws, seed)
        b = _canary_runs(sched, -1e6, n_draws, seed + 1)
        return audit_gaussian_dp(project_on(a, centre_a, centre_b), project_on(b, centre_a, centre_b), eps, delta)

    assert not audit(stage, 10).violation
    assert audit(replace(stage, settings=replace(stage.settings, clip=2 * level)), 12).violation
    half = one_pass_step_mechanism(0.5 * stage.mechanism.sensitivity, Budget(eps, delta, "secure"), 1)
    assert audit(replace(stage, mechanism=half), 14).violation
