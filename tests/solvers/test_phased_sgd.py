"""Phased-SGD (FKT 2020, Section 4; doc/algorithms.rst, F-Alg 2).

T0: the schedule is FKT's (k = ceil(log2 n) phases of floor(2^-i n) rows,
eta_i = 4^-i eta capped at 2/beta) with sensitivity exactly 2 L eta_i per
phase; with noise off the kernel is an independent one-pass SGD average;
a label flip of a canary in a phase moves that phase's average by EXACTLY
2 L eta_i (the bound is tight), and an adversarial huge row never moves it by
more; schedules and events are public.
T1: the phase's real average on worst-case neighbours, released 1e5 times by
the schedule's real mechanism (Gaussian and l2-Laplace); half-noise mutants
are flagged.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._solvers import ArraySource, SGDSettings, phased_sgd_schedule, run_phased_sgd
from sklearn_dpsco._solvers._optim import _sgd_reference as ref
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import mechanism_for
from sklearn_dpsco.accounting import ParallelComposedEvent, epsilon_delta
from sklearn_dpsco.testing import audit_epsilon, audit_gaussian_dp, project_on


def _settings(**kw):
    base = dict(clip=1.0, row_bound=1.0, intercept_scaling=0.0, radius=10.0)
    base.update(kw)
    return SGDSettings(**base)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_schedule_is_fkt_with_sensitivity_2_L_eta(delta):
    n, d, eps = 1000, 3, 0.8
    st = _settings(clip=0.3, row_bound=2.0, intercept_scaling=1.0, radius=4.0)
    sch = phased_sgd_schedule(n, d, epsilon=eps, delta=delta, settings=st)
    k = math.ceil(math.log2(n))
    assert list(sch.phase_rows) == [n // 2**i for i in range(1, k + 1) if n // 2**i >= 1]
    eta = sch.info["step"]
    for i, (eta_i, mech) in enumerate(zip(sch.steps, sch.mechanisms), start=1):
        assert eta_i == pytest.approx(min(4.0**-i * eta, 2.0 / (4.0 + 1.0)))
        assert mech.sensitivity == pytest.approx(2 * 0.3 * eta_i)
        assert mech.epsilon == eps and mech.dimension == d
    assert isinstance(sch.event, ParallelComposedEvent)
    assert epsilon_delta(sch.event, delta=delta or None)[0] == pytest.approx(eps)


def test_step_cap_binds_when_the_formula_is_too_large():
    st = _settings(clip=0.01, radius=100.0)  # D / L = 2e4: the formula's eta is huge
    sch = phased_sgd_schedule(10_000, 2, epsilon=1.0, delta=0.0, settings=st)
    assert max(sch.steps) == 2.0  # 2 / beta with R = 1, no intercept
    assert sch.mechanisms[0].sensitivity == pytest.approx(2 * 0.01 * 2.0)


def _one_pass_reference(X, y, u0, eta, st):
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, st.row_bound / np.maximum(norms, 1e-300))[:, None]
    if st.intercept_scaling > 0:
        Xc = np.hstack([Xc, np.full((len(X), 1), st.intercept_scaling)])
    u, total = u0.copy(), np.zeros_like(u0)
    for x, t in zip(Xc, y):
        k = st.clip / np.linalg.norm(x)
        u = u - eta * np.clip(u @ x - t, -k, k) * x
        nu = np.linalg.norm(u)
        u = u if nu <= st.radius else u * st.radius / nu
        total += u
    return total / len(y)


@pytest.mark.parametrize("sparse", [False, True])
def test_noise_off_one_pass_equals_reference(sparse):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3)) * rng.choice([0.2, 5.0], (50, 1))
    y = 2 * rng.standard_normal(50)
    st = _settings(clip=0.7, row_bound=1.2, intercept_scaling=0.5, radius=0.9)
    u0 = np.array([0.1, -0.2, 0.3, 0.0])
    state = ref.OnePassState.start(u0)
    ref.sgd_one_pass(sp.csr_matrix(X) if sparse else X, y, None, state, 0.4, st)
    np.testing.assert_allclose(state.average, _one_pass_reference(X, y, u0, 0.4, st), atol=1e-13)


def _phase_average(X, y, st, eta):
    state = ref.OnePassState.start(np.zeros(X.shape[1]))
    ref.sgd_one_pass(X, y, None, state, eta, st)
    return state.average


def test_label_flip_moves_the_phase_average_by_exactly_2_L_eta():
    """Canary first, other rows zero: gradients +-C (clipped residual), the gap 2 C eta persists."""
    st = _settings(clip=0.4)
    X = np.zeros((30, 2))
    X[0] = [0.6, 0.8]
    y, yp = np.zeros(30), np.zeros(30)
    y[0], yp[0] = 1e6, -1e6
    eta = 1.5
    gap = np.linalg.norm(_phase_average(X, y, st, eta) - _phase_average(X, yp, st, eta))
    assert gap == pytest.approx(2 * 0.4 * eta, rel=1e-12)


def test_adversarial_huge_row_never_exceeds_2_L_eta():
    rng = np.random.default_rng(4)
    st = _settings(clip=0.5, row_bound=1.0, radius=3.0)
    eta = 2.0  # 2 / beta
    for _ in range(20):
        X = rng.uniform(-1, 1, (40, 3))
        X[rng.integers(40, size=5)] *= 1e4  # huge common rows: clipped to R
        y = rng.standard_normal(40) * 100
        Xp, yp = X.copy(), y.copy()
        j = rng.integers(40)
        Xp[j], yp[j] = rng.standard_normal(3) * 1e9, 1e12
        gap = np.linalg.norm(_phase_average(X, y, st, eta) - _phase_average(Xp, yp, st, eta))
        assert gap <= 2 * 0.5 * eta * (1 + 1e-9)


def test_vectorised_runs_follow_the_single_run_path():
    """``n_runs`` independent runs: each on the ball, and each the single run's path when the noise vanishes."""
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((64, 2)) / 2, rng.standard_normal(64)
    st = _settings(clip=0.5, radius=3.0)
    # vectorised runs (n_runs) are an audit facility of the float path
    sch = phased_sgd_schedule(64, 2, epsilon=1.0, delta=1e-5, settings=st, noise="float")
    single = run_phased_sgd(ArraySource(X, y), sch, np.random.default_rng(3))
    many = run_phased_sgd(ArraySource(X, y), sch, np.random.default_rng(3), n_runs=5)
    assert single.shape == (2,) and many.shape == (5, 2)
    assert np.all(np.linalg.norm(many, axis=1) <= 3.0 + 1e-12)
    assert np.unique(many, axis=0).shape[0] == 5  # independent noise per run
    # epsilon = 1e9: the noise is ~1e-9 of the signal, so every run is the single run's path
    tiny = phased_sgd_schedule(64, 2, epsilon=1e9, delta=1e-5, settings=st, noise="float")
    single = run_phased_sgd(ArraySource(X, y), tiny, np.random.default_rng(3))
    many = run_phased_sgd(ArraySource(X, y), tiny, np.random.default_rng(3), n_runs=5)
    np.testing.assert_allclose(many, np.broadcast_to(single, many.shape), atol=1e-3)


def test_schedule_and_event_are_public():
    st = _settings(radius=2.0)
    a = phased_sgd_schedule(500, 4, epsilon=1.0, delta=1e-6, settings=st)
    b = phased_sgd_schedule(500, 4, epsilon=1.0, delta=1e-6, settings=st)
    assert a.info == b.info and a.event == b.event
    with pytest.raises(ValueError, match="at least 2 rows"):
        phased_sgd_schedule(1, 4, epsilon=1.0, delta=0.0, settings=st)


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_phase_release_audit(delta):
    """Real phase average (kernel) on worst-case neighbours, real mechanism, 1e5 draws; half noise flagged."""
    eps, d = 1.0, 1
    st = _settings(clip=1.0, radius=1e6)
    sch = phased_sgd_schedule(256, d, epsilon=eps, delta=delta, settings=st)
    i = 2  # third phase
    n_i, eta_i, mech = sch.phase_rows[i], sch.steps[i], sch.mechanisms[i]
    X = np.zeros((n_i, d))
    X[0] = 1.0
    y, yp = np.zeros(n_i), np.zeros(n_i)
    y[0], yp[0] = 1e6, -1e6
    c, cp = _phase_average(X, y, st, eta_i), _phase_average(X, yp, st, eta_i)
    assert np.linalg.norm(c - cp) == pytest.approx(mech.sensitivity, rel=1e-12)
    rng = np.random.default_rng(21)
    for mult, flagged in ((1.0, False), (0.5, True)):
        m = mechanism_for(mech.sensitivity * mult, Budget(eps, delta), d)
        a = project_on(m.release(c, rng, size=100_000), c, cp)
        b = project_on(m.release(cp, rng, size=100_000), c, cp)
        res = audit_gaussian_dp(a, b, eps, delta) if delta else audit_epsilon(a, b, eps)
        assert res.violation is flagged, res


@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_one_pass_equals_reference(sparse):
    from sklearn_dpsco.testing import HAVE_COMPILED_SGD_KERNELS, use_compiled_sgd_kernels

    if not HAVE_COMPILED_SGD_KERNELS:
        pytest.skip("the compiled SGD kernels are not built")
    rng = np.random.default_rng(5)
    X = rng.standard_normal((700, 3)) * rng.choice([0.3, 20.0], (700, 1))
    y = rng.standard_normal(700)
    st = _settings(clip=0.5, row_bound=1.1, intercept_scaling=0.8, radius=0.9)
    sch = phased_sgd_schedule(700, 4, epsilon=1.0, delta=1e-6, settings=st)
    Xk = sp.csr_matrix(X) if sparse else X
    outs = []
    for compiled in (True, False):
        old = use_compiled_sgd_kernels(compiled)
        try:
            outs.append(run_phased_sgd(ArraySource(Xk, y, block_rows=61), sch, np.random.default_rng(2),
                                       center=np.full(4, -0.2)))
        finally:
            use_compiled_sgd_kernels(old)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10, atol=1e-12)


def test_run_pickled_between_blocks_is_the_same_run():
    # the cluster path sends the run from worker to worker between chunks (solvers/_core/_cluster.py)
    import pickle

    from sklearn_dpsco._solvers._noisy_sgd._phased_sgd import PhasedSGDRun

    rng = np.random.default_rng(2)
    n, p = 900, 3
    X = rng.standard_normal((n, p)) / 2
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)
    sch = phased_sgd_schedule(n, p + 1, epsilon=1.0, delta=0.0, settings=_settings(intercept_scaling=1.0))
    expected = run_phased_sgd(ArraySource(X, y, block_rows=100), sch, np.random.default_rng(5))
    run = PhasedSGDRun(sch, np.random.default_rng(5), p)
    for Xb, yb, wb in ArraySource(X, y, block_rows=100).blocks():
        run = pickle.loads(pickle.dumps(run))
        run.feed(Xb, yb, wb)
    np.testing.assert_array_equal(run.result(), expected)
    short = PhasedSGDRun(sch, np.random.default_rng(5), p)
    short.feed(X[:10], y[:10], None)
    with pytest.raises(ValueError, match="fewer rows than the planned"):
        short.result()
