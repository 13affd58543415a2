"""PNSGD / Snowball-SGD (FKT 2020, Alg 1, Thms 3.1, 3.5, 3.6).

T0: Thm 3.1's rho on the actual schedule is within target for both batch
schedules; the schedules match the theorems' closed forms; steps never
exceed 2/beta; with noise off the kernel equals an independent mini-batch
implementation (dense, CSR, weights, intercept, projection); results do not
depend on how rows are cut into blocks; an adversarial huge-norm row keeps
every step map non-expansive (and the coupled sensitivity within Thm 3.1's
shift) only because rows are clipped to the public bound — the unclipped
mutant expands by ~100x.
T1: a canary in the first batch of the real schedule (the Thm 3.1 term at
t = 1 is then exact), 1e5 vectorised runs: Gaussian-DP audit against rho,
and the sigma/2, noise-once and no-clipping mutants are flagged.
"""

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._solvers import (
    ArraySource,
    SGDSettings,
    fkt_rho,
    jnn_steps,
    pnsgd_schedule,
    rho_for_budget,
    run_pnsgd,
    snowball_schedule,
)
from sklearn_dpsco._solvers._optim import _sgd_reference as ref
from sklearn_dpsco.accounting import ZCDPEvent, gaussian_epsilon
from sklearn_dpsco.linear_model import DPLinearRegressor
from sklearn_dpsco.testing import audit_gaussian_dp, project_on


def _settings(**kw):
    base = dict(clip=1.0, row_bound=1.0, intercept_scaling=0.0, radius=10.0)
    base.update(kw)
    return SGDSettings(**base)


# ----------------------------------------------------------------------------- schedules (T0)
def test_fkt_rho_matches_theorem_3_1_by_loop():
    rng = np.random.default_rng(0)
    T = 40
    B = rng.integers(1, 9, T)
    eta = rng.uniform(0.01, 0.5, T)
    sig = rng.uniform(0.2, 2.0, T)
    L = 0.7
    expected = max(
        2 * L * eta[t] / (B[t] * math.sqrt(sum(eta[s] ** 2 * sig[s] ** 2 for s in range(t, T)))) for t in range(T)
    )
    assert fkt_rho(B, eta, sig, L) == pytest.approx(expected, rel=1e-12)


def test_jnn_steps_halve_on_the_documented_phases():
    # T = 10: k = 4, T_i = 10 - ceil(10 / 2^i) = 0, 5, 7, 8, 9, then 10
    eta = jnn_steps(10, c=math.sqrt(10))
    assert eta.tolist() == [1, 1, 1, 1, 1, 0.5, 0.5, 0.25, 0.125, 0.0625]
    assert jnn_steps(1, c=2.0).tolist() == [2.0]


@pytest.mark.parametrize("steps", ["constant", "jnn"])
def test_paper_batch_rules(steps):
    n, d, rho = 5000, 7, 0.4
    st = _settings(clip=0.5, radius=3.0)
    sch = snowball_schedule(n, d, rho=rho, settings=st, steps=steps, batch_rule="paper")
    T = sch.n_steps
    j = np.arange(T, 0, -1)
    coef = 2 * math.sqrt(d) / rho if steps == "constant" else math.sqrt(48 * d) / rho
    ratio = coef / np.sqrt(j)
    paper = np.ceil(ratio).astype(int)
    # equal, except where the ratio is an integer up to rounding: then one more row (safe side)
    diff = sch.batch_sizes[:-1] - paper[:-1]
    assert set(np.unique(diff)) <= {0, 1}
    assert np.all(np.abs(ratio[:-1][diff == 1] - np.round(ratio[:-1][diff == 1])) < 1e-9)
    assert sch.batch_sizes[-1] >= paper[-1] and sch.n == n  # leftover rows join the last batch
    # T is the largest schedule that fits n rows
    j1 = np.arange(T + 1, 0, -1)
    assert np.ceil(coef / np.sqrt(j1) * (1 + 1e-12)).sum() > n
    L, D = 0.5, 6.0
    if steps == "constant":
        assert np.all(sch.steps == pytest.approx(min(D / (L * math.sqrt(2 * T)), 2.0)))
    else:
        raw = jnn_steps(T, D / (math.sqrt(2) * L))
        np.testing.assert_allclose(sch.steps, raw * min(1.0, 2.0 / raw.max()), rtol=1e-14)
    assert sch.sigma == pytest.approx(L / math.sqrt(d))
    assert sch.rho_actual <= rho and sch.event == ZCDPEvent(rho**2 / 2)


@pytest.mark.parametrize("steps", ["constant", "jnn"])
@pytest.mark.parametrize("batch_rule", ["exact", "paper"])
def test_rho_within_target_on_a_grid(steps, batch_rule):
    for n in (60, 1000, 30000):
        for d in (1, 5, 50):
            for rho in (0.05, 0.5, 3.0):
                for st in (_settings(), _settings(row_bound=3.0, intercept_scaling=3.0, clip=0.1, radius=100.0)):
                    try:
                        sch = snowball_schedule(n, d, rho=rho, settings=st, steps=steps, batch_rule=batch_rule)
                    except ValueError as err:
                        assert "needs at least" in str(err)
                        continue
                    assert sch.n == n and sch.batch_sizes.min() >= 1
                    assert sch.steps.max() <= st.max_step
                    assert sch.rho_actual <= rho
                    assert fkt_rho(sch.batch_sizes, sch.steps, sch.sigma, st.clip) == pytest.approx(
                        sch.rho_actual, rel=1e-12)


@pytest.mark.parametrize("steps", ["constant", "jnn"])
def test_run_length_schedule_equals_the_per_step_rule(steps):
    """The closed-form run counting reproduces B_t = ceil(2 L eta_t / (rho sigma sqrt(sum_{s>=t} eta_s^2)))."""
    st = _settings(clip=0.3, radius=2.0)
    for n, d, rho in [(3000, 3, 0.3), (50_000, 21, 0.2), (777, 1, 2.0)]:
        sch = snowball_schedule(n, d, rho=rho, settings=st, steps=steps)
        eta = sch.steps
        tail = np.sqrt(np.cumsum((eta**2)[::-1])[::-1])
        rule = np.maximum(1, np.ceil(2 * st.clip * eta / (rho * sch.sigma * tail) * (1 + 1e-12))).astype(int)
        np.testing.assert_array_equal(sch.batch_sizes[:-1], rule[:-1])
        assert sch.batch_sizes[-1] >= rule[-1] and sch.n == n
        assert sch.run_lengths.size < 60 * math.log2(n) * 50  # compact: not one entry per step


def test_windows_and_step_counts_follow_the_schedule():
    sch = snowball_schedule(5000, 4, rho=0.5, settings=_settings(radius=2.0))
    B, eta = sch.batch_sizes, sch.steps
    ends = np.cumsum(B)
    for rows in (0, 1, 17, 2500, int(ends[-2]), 4999, 5000):
        assert sch.steps_completed(rows) == int(np.searchsorted(ends, rows, side="right"))
    for t0, t1 in [(0, 5), (100, 400), (sch.n_steps - 3, sch.n_steps + 10)]:
        wb, we = sch.window(t0, t1)
        np.testing.assert_array_equal(wb, B[t0:t1])
        np.testing.assert_array_equal(we, eta[t0:t1])


def test_exact_rule_uses_fewer_rows_per_step_than_thm_3_6():
    st = _settings(radius=5.0)
    exact = snowball_schedule(20000, 21, rho=0.2, settings=st, steps="jnn", batch_rule="exact")
    paper = snowball_schedule(20000, 21, rho=0.2, settings=st, steps="jnn", batch_rule="paper")
    assert exact.n_steps > paper.n_steps
    assert paper.rho_actual < 0.8 * 0.2  # Thm 3.6's closed form is loose (doc/algorithms.rst, F-Thm 3.6: ~0.76)


def test_schedule_refusals_are_public_and_early():
    st = _settings()
    with pytest.raises(ValueError, match="2/beta"):
        pnsgd_schedule([1, 1], [0.5, 2.5], 1.0, rho=10.0, settings=st)
    with pytest.raises(AssertionError, match="above the target"):
        pnsgd_schedule([1, 1], [0.5, 0.5], 1.0, rho=0.1, settings=st)
    with pytest.raises(ValueError, match="needs at least"):
        snowball_schedule(10, 20, rho=0.1, settings=st)
    with pytest.raises(ValueError, match="delta > 0"):
        rho_for_budget(1.0, 0.0)
    with pytest.raises(ValueError, match="finite domain radius"):
        snowball_schedule(100, 2, rho=1.0, settings=_settings(radius=math.inf))


def test_rho_for_budget_converts_exactly():
    from sklearn_dpsco.accounting import epsilon_delta

    rho = rho_for_budget(1.0, 1e-5)
    eps, _ = epsilon_delta(ZCDPEvent(rho**2 / 2), delta=1e-5)
    assert eps == pytest.approx(1.0, rel=1e-9) and eps <= 1.0


# ----------------------------------------------------------------------------- kernel = reference (T0)
def _minibatch_reference(X, y, w, B, eta, noise, st, sw=None):
    """Independent vectorised implementation of FKT Alg 1 on the clipped Huber loss."""
    X = X.toarray() if sp.issparse(X) else X
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, st.row_bound / np.maximum(norms, 1e-300))[:, None]
    if st.intercept_scaling > 0:
        Xc = np.hstack([Xc, np.full((len(X), 1), st.intercept_scaling)])
    with np.errstate(divide="ignore"):
        k = st.clip / np.linalg.norm(Xc, axis=1)  # inf for an all-zero row: its gradient is 0
    sw = np.ones(len(X)) if sw is None else sw
    start = 0
    for t in range(len(B)):
        rows = slice(start, start + B[t])
        r = Xc[rows] @ w - y[rows]
        g = (sw[rows] * np.clip(r, -k[rows], k[rows])) @ Xc[rows] / B[t]
        v = w - eta[t] * (g + noise[t])
        nv = np.linalg.norm(v)
        w = v if nv <= st.radius else v * st.radius / nv
        start += B[t]
    return w


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 0.7])
def test_noise_off_kernel_equals_minibatch_reference(sparse, intercept):
    rng = np.random.default_rng(3)
    n, p = 90, 4
    X = rng.standard_normal((n, p)) * rng.choice([0.1, 1.0, 30.0], (n, 1))  # some rows far above R
    X[rng.random((n, p)) < 0.3] = 0.0
    y = 3 * rng.standard_normal(n)
    sw = rng.uniform(0, 1, n)
    st = _settings(clip=0.4, row_bound=1.5, intercept_scaling=intercept, radius=0.8)
    B = np.array([5] * 10 + [8] * 5)
    eta = np.linspace(0.6, 0.05, B.size)
    d = p + (intercept > 0)
    noise = np.zeros((B.size, d))
    expected = _minibatch_reference(X, y, np.zeros(d), B, eta, noise, st, sw)
    Xk = sp.csr_matrix(X) if sparse else X
    state = ref.PNSGDState.start(np.zeros(d))
    ref.pnsgd_chunk(Xk, y, sw, state, B, eta, noise, st)
    np.testing.assert_allclose(state.w, expected, atol=1e-12)
    assert state.step == B.size and np.linalg.norm(state.w) <= st.radius + 1e-12


def test_result_does_not_depend_on_block_size():
    rng = np.random.default_rng(1)
    n, p = 700, 3
    X = rng.standard_normal((n, p)) / 2
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)
    st = _settings(clip=0.5, intercept_scaling=1.0, radius=5.0)
    sch = snowball_schedule(n, p + 1, rho=0.5, settings=st)
    outs = [run_pnsgd(ArraySource(X, y, block_rows=b), sch, np.random.default_rng(9)) for b in (7, 64, 10_000)]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_run_pickled_between_blocks_is_the_same_run():
    # the cluster path sends the run from worker to worker between chunks (solvers/_core/_cluster.py)
    import pickle

    from sklearn_dpsco._solvers._noisy_sgd._pnsgd import PNSGDRun

    rng = np.random.default_rng(1)
    n, p = 700, 3
    X = rng.standard_normal((n, p)) / 2
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)
    sch = snowball_schedule(n, p + 1, rho=0.5, settings=_settings(clip=0.5, intercept_scaling=1.0, radius=5.0))
    expected = run_pnsgd(ArraySource(X, y, block_rows=64), sch, np.random.default_rng(9))
    run = PNSGDRun.from_origin(sch, np.random.default_rng(9), p + 1)
    for Xb, yb, wb in ArraySource(X, y, block_rows=64).blocks():
        run = pickle.loads(pickle.dumps(run))
        run.feed(Xb, yb, wb)
    np.testing.assert_array_equal(run.result(), expected)
    with pytest.raises(ValueError, match="more rows than the declared"):
        run.feed(X[:1], y[:1], None)


def test_stream_with_wrong_row_count_raises():
    st = _settings(radius=5.0)
    sch = snowball_schedule(500, 2, rho=1.0, settings=st)
    X, y = np.zeros((499, 2)), np.zeros(499)
    with pytest.raises(ValueError, match="planned for 500 rows"):
        run_pnsgd(ArraySource(X, y), sch, np.random.default_rng(0))


# ----------------------------------------------------------------------------- adversarial rows (T0)
def _step_map(w, x, y, eta, clip, row_bound):
    st = _settings(clip=clip, row_bound=row_bound)
    xt = ref.clipped_row(x, st)
    return w - eta * ref._clipped_gradient(w, xt, y, 1.0, clip)


def test_huge_norm_row_step_is_nonexpansive_only_with_row_clipping():
    """beta = R^2 is the smoothness of every CLIPPED row; an unclipped row of norm 1e3 is not 2/eta-smooth."""
    rng = np.random.default_rng(0)
    d, R, eta, clip = 3, 1.0, 2.0 / 1.0**2, 1.0  # eta = 2/beta, the largest step allowed
    x = rng.standard_normal(d)
    x *= 1e3 / np.linalg.norm(x)
    worst_clipped, worst_mutant = 0.0, 0.0
    for _ in range(2000):
        w = rng.standard_normal(d)
        # put the residual inside the Huber region, where the Hessian x x^T acts
        y = float(w @ (x / 1e3)) + rng.uniform(-0.5, 0.5) * clip
        v = w + 1e-3 * rng.standard_normal(d)
        dist = np.linalg.norm(w - v)
        gap = np.linalg.norm(_step_map(w, x, y, eta, clip, R) - _step_map(v, x, y, eta, clip, R))
        worst_clipped = max(worst_clipped, gap / dist)
        y_raw = float(w @ x) + rng.uniform(-0.5, 0.5) * clip / 1e3
        mut = np.linalg.norm(_step_map(w, x, y_raw, eta, clip, 1e12) - _step_map(v, x, y_raw, eta, clip, 1e12)) / dist
        worst_mutant = max(worst_mutant, mut)
    assert worst_clipped <= 1.0 + 1e-9
    assert worst_mutant > 10.0


def _coupled_run(X, y, st, eta, noise, upto=None):
    upto = len(y) if upto is None else upto
    state = ref.PNSGDState.start(np.zeros(X.shape[1]))
    B = np.ones(len(y), dtype=int)
    ref.pnsgd_chunk(X[:upto], y[:upto], None, state, B, eta, noise[:upto], st)
    return state.w


def test_coupled_sensitivity_with_a_huge_differing_row():
    """Same noise on D and D': the outputs differ by at most Thm 3.1's shift 2 eta_t L / B_t."""
    n, d, k = 40, 2, 3
    st = _settings(clip=1.0, row_bound=1.0, radius=1e6)
    eta = np.full(n, 2.0)  # = 2/beta for R = 1, the largest allowed step
    noise = np.random.default_rng(5).standard_normal((n, d))
    X = np.random.default_rng(6).uniform(-0.5, 0.5, (n, d))
    y = np.random.default_rng(7).standard_normal(n)
    Xp, yp = X.copy(), y.copy()
    Xp[k], yp[k] = [1e6, -3e7], 1e9
    gap = np.linalg.norm(_coupled_run(X, y, st, eta, noise) - _coupled_run(Xp, yp, st, eta, noise))
    assert 0 < gap <= 2 * eta[k] * st.clip * (1 + 1e-9)


@pytest.mark.parametrize("clip_rows", [True, False])
def test_huge_common_rows_cannot_expand_the_gap(clip_rows):
    """Later rows of norm 10 placed so that both runs sit in their Huber region: with rows clipped to
    R = 1 the gap never grows (non-expansive steps); the unclipped mutant multiplies it by
    |1 - eta ||x||^2| = 99 per row."""
    n, d, k = 30, 1, 2
    st = _settings(clip=1.0, row_bound=1.0, radius=1e6)
    kernel_st = st if clip_rows else replace(st, row_bound=1e12)
    eta = np.full(n, 1.0)
    noise = np.random.default_rng(5).standard_normal((n, d))
    X, y = np.full((n, d), 0.5), np.zeros(n)
    Xp, yp = X.copy(), y.copy()
    yp[k] = 1e-6  # a tiny difference: the realised shift is ~ eta * 0.5 * 1e-6
    shift = np.linalg.norm(_coupled_run(X, y, kernel_st, eta, noise, k + 1)
                           - _coupled_run(Xp, yp, kernel_st, eta, noise, k + 1))
    for j in (k + 3, k + 4, k + 5):  # common huge rows, labels put D's iterate at residual 0
        X[j] = Xp[j] = 10.0
        w_before = _coupled_run(X, y, kernel_st, eta, noise, j)
        y[j] = yp[j] = float(w_before @ ref.clipped_row(X[j], kernel_st))
    gap = np.linalg.norm(_coupled_run(X, y, kernel_st, eta, noise) - _coupled_run(Xp, yp, kernel_st, eta, noise))
    assert shift > 0
    if clip_rows:
        assert gap <= shift * (1 + 1e-9)
    else:
        assert gap > 100 * shift


def test_coupled_sensitivity_through_the_estimator():
    """Same random_state on D and D' couples the permutation and all noise."""
    rng = np.random.default_rng(2)
    n, p = 400, 2
    X = rng.standard_normal((n, p))
    y = X @ np.array([0.3, -0.2]) + rng.standard_normal(n)
    Xp, yp = X.copy(), y.copy()
    Xp[17], yp[17] = [1e8, -1e8], 1e12
    # epsilon 1.5: at n epsilon = 400 the column map's share leaves the "auto" estimates under their weighted
    # parts and the fit releases the intercept-only model (doc/privacy/quantiles.rst), which runs no solver
    kw = dict(epsilon=1.5, delta=1e-5, solver="snowball", clip=0.5, random_state=11, radius=3.0, noise="float")
    a = DPLinearRegressor(**kw).fit(X, y)
    assert a.solver_ == "snowball"
    b = DPLinearRegressor(**kw).fit(Xp, yp)
    sch = a._plan(n, p + 1, 1).schedule
    s = 1.0  # intercept_scaling=None resolves to row_bound = 1 for the SGD solvers
    w_a = np.append(a.coef_, a.intercept_ / s)
    w_b = np.append(b.coef_, b.intercept_ / s)
    bound = np.max(2 * sch.steps * 0.5 / sch.batch_sizes)
    assert 0 < np.linalg.norm(w_a - w_b) <= bound * (1 + 1e-9)


# ----------------------------------------------------------------------------- statistical audit (T1)
def _canary_data(n, label):
    """d = 1, no intercept: every row x = 0 except the first (the canary, x = 1, huge label)."""
    X = np.zeros((n, 1))
    X[0, 0] = 1.0
    y = np.zeros(n)
    y[0] = label
    return X, y


def _audit_runs(schedule, label, n_runs, seed, kernel=None):
    X, y = _canary_data(schedule.n, label)
    return run_pnsgd(ArraySource(X, y), schedule, np.random.default_rng(seed), n_runs=n_runs, kernel=kernel)


def _noise_once_kernel(T):
    """Mutant: noise only at the very last step."""

    def kernel(X, y, sw, state, B, eta, noise, st):
        noise = noise.copy()
        first = state.step
        for i in range(len(noise)):
            if first + i != T - 1:
                noise[i] = 0.0
        return ref.pnsgd_chunk(X, y, sw, state, B, eta, noise, st)

    return kernel


def _no_clip_kernel(X, y, sw, state, B, eta, noise, st):
    """Mutant: the Huber clipping skipped (gradient r x)."""
    return ref.pnsgd_chunk(X, y, sw, state, B, eta, noise, replace(st, clip=1e300))


@pytest.mark.statistical
def test_snowball_first_batch_canary_audit():
    eps, delta, n_draws = 1.0, 1e-5, 100_000
    est = DPLinearRegressor(epsilon=eps, delta=delta, solver="snowball", fit_intercept=False, clip=1.0,
                            radius=1e6, noise="float", row_bound=1.0, label_bound=1.0)
    schedule = est._plan(82, 1, 1).schedule  # n = 82: the t = 1 term is 0.96 rho
    # the t = 1 term of Thm 3.1 is what this canary realises: make sure it is (nearly) the max
    t1 = 2 * schedule.steps[0] / (schedule.batch_sizes[0] * schedule.sigma * np.sqrt(np.sum(schedule.steps**2)))
    assert 0.95 * schedule.rho < t1 <= schedule.rho
    eps_gdp = gaussian_epsilon(schedule.rho, delta)  # audit against mu = rho exactly
    label = 1e6  # residual always clipped: the canary's gradient is -C or +C

    def audit(sched, kernel=None, seed=0):
        a = _audit_runs(sched, label, n_draws, seed, kernel)
        b = _audit_runs(sched, -label, n_draws, seed + 1, kernel)
        centre_a = _audit_runs(replace(sched, sigma=1e-300), label, 1, 0, kernel)[0]
        centre_b = _audit_runs(replace(sched, sigma=1e-300), -label, 1, 0, kernel)[0]
        return audit_gaussian_dp(project_on(a, centre_a, centre_b), project_on(b, centre_a, centre_b), eps_gdp, delta)

    res = audit(schedule)
    assert not res.violation, res
    assert audit(replace(schedule, sigma=schedule.sigma / 2)).violation
    assert audit(schedule, kernel=_noise_once_kernel(schedule.n_steps)).violation
    assert audit(schedule, kernel=_no_clip_kernel).violation


# ----------------------------------------------------------------------------- compiled kernel = reference
def _compiled_or_skip():
    from sklearn_dpsco.testing import HAVE_COMPILED_SGD_KERNELS, use_compiled_sgd_kernels

    if not HAVE_COMPILED_SGD_KERNELS:
        pytest.skip("the compiled SGD kernels are not built")
    return use_compiled_sgd_kernels


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 0.6])
def test_compiled_pnsgd_equals_reference_step_for_step(sparse, intercept):
    """Same schedule, same noise, blocks cut mid-batch: the adapter (row scaling, carried batches)
    and the compiled loop reproduce the NumPy reference."""
    use_compiled = _compiled_or_skip()
    rng = np.random.default_rng(8)
    n, p = 900, 4
    X = rng.standard_normal((n, p)) * rng.choice([0.2, 1.0, 50.0], (n, 1))
    X[rng.random((n, p)) < 0.3] = 0.0
    y = 2 * rng.standard_normal(n)
    st = _settings(clip=0.3, row_bound=1.3, intercept_scaling=intercept, radius=0.7)
    sch = snowball_schedule(n, p + (intercept > 0), rho=0.8, settings=st)
    Xk = sp.csr_matrix(X) if sparse else X
    center = np.full(p + (intercept > 0), 0.1)
    outs = []
    for compiled in (True, False):
        old = use_compiled(compiled)
        try:
            outs.append(run_pnsgd(ArraySource(Xk, y, block_rows=97), sch, np.random.default_rng(3), center=center))
        finally:
            use_compiled(old)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(outs[0] - center) <= st.radius * (1 + 1e-12)
