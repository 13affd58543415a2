"""AdaSSP (Wang 2018): sufficient-statistics perturbation with adaptive ridge.

T0: the three sensitivities are attained EXACTLY on worst-case neighbours
through the real statistics code (clipping included) and never exceeded on
random or adversarial (huge rows, huge labels) neighbours; the
vectorisation is an isometry; the events compose to exactly (epsilon,
delta); with noise off the solver is ridge regression on the clipped rows.
T1: each release (lambda_min, A, b), on its worst-case neighbours with the
plan the estimator makes, 1e5 draws per side, passes its audit; the
half-noise mutant of each is flagged.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from sklearn_dpsco._mechanisms import LaplaceMechanism
from sklearn_dpsco._solvers import ArraySource, adassp_plan, run_adassp
from sklearn_dpsco._solvers._adassp import adassp_statistics, sym_from_vec, vec_from_sym
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import mechanism_for
from sklearn_dpsco.accounting import epsilon_delta, gaussian_mu
from sklearn_dpsco.linear_model import DPLinearRegressor
from sklearn_dpsco.testing import audit_epsilon, audit_gaussian_dp, project_on


def _stats(X, y, plan):
    A, b = adassp_statistics(ArraySource(np.asarray(X, float), np.asarray(y, float)), plan)
    return float(np.linalg.eigvalsh(A)[0]), vec_from_sym(A), b


def test_vectorisation_is_an_isometry():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((5, 5))
    M = M + M.T
    v = vec_from_sym(M)
    assert np.linalg.norm(v) == pytest.approx(np.linalg.norm(M, "fro"))
    np.testing.assert_allclose(sym_from_vec(v, 5), M)


@pytest.mark.parametrize("s", [0.0, 0.5])
def test_sensitivities_are_attained_exactly(s):
    R, B = 2.0, 3.0
    d = 2 + (s > 0)
    plan = adassp_plan(10, d, epsilon=1.0, delta=0.0, row_bound=R, label_bound=B, intercept_scaling=s)
    x2 = R**2 + s**2
    exact = (x2, math.sqrt(2) * x2, 2 * math.sqrt(x2) * B)
    float_plan = adassp_plan(10, d, epsilon=1.0, delta=0.0, row_bound=R, label_bound=B, intercept_scaling=s,
                             noise="float")
    assert float_plan.info["sensitivities"] == pytest.approx(exact, rel=1e-15)
    # secure: inflated by every rounding of the computation (doc/privacy/adassp.rst, "Rounding on the secure path")
    assert all(e <= v <= e * (1 + 1e-5) for e, v in zip(exact, plan.info["sensitivities"]))
    rows = np.tile([R, 0.0], (10, 1))
    # lambda_min, in 1-D: one row R -> 0 moves A = lambda_min by exactly R^2
    plan1 = adassp_plan(10, 1, epsilon=1.0, delta=0.0, row_bound=R, label_bound=B)
    X1p = rows[:, :1].copy()
    X1p[0] = 0.0
    assert _stats(rows[:, :1], np.zeros(10), plan1)[0] - _stats(X1p, np.zeros(10), plan1)[0] == pytest.approx(
        R**2, rel=1e-12)
    # A: row (u, s) -> (u', s) with cos(u, u') = -s^2 / R^2 attains sqrt(2) (R^2 + s^2)
    c = -(s**2) / R**2
    Xa, Xap = rows.copy(), rows.copy()
    Xap[0] = [R * c, R * math.sqrt(1 - c**2)]
    _, va, _ = _stats(Xa, np.zeros(10), plan)
    _, vap, _ = _stats(Xap, np.zeros(10), plan)
    assert np.linalg.norm(va - vap) == pytest.approx(math.sqrt(2) * x2, rel=1e-12)
    # b: label B -> -B on a row of norm R
    y, yp = np.full(10, B), np.full(10, B)
    yp[0] = -B
    _, _, b1 = _stats(rows, y, plan)
    _, _, b2 = _stats(rows, yp, plan)
    assert np.linalg.norm(b1 - b2) == pytest.approx(2 * math.sqrt(x2) * B, rel=1e-12)


def test_random_and_adversarial_neighbours_stay_within_the_sensitivities():
    rng = np.random.default_rng(1)
    R, B, s, d = 1.0, 1.0, 0.25, 3
    plan = adassp_plan(30, d + 1, epsilon=1.0, delta=0.0, row_bound=R, label_bound=B, intercept_scaling=s)
    sens = plan.info["sensitivities"]
    for trial in range(200):
        X = rng.standard_normal((30, d)) * rng.choice([0.1, 1.0, 1e6], (30, 1))
        y = rng.standard_normal(30) * rng.choice([0.5, 1e9], 30)
        Xp, yp = X.copy(), y.copy()
        j = rng.integers(30)
        Xp[j] = rng.standard_normal(d) * rng.choice([0.3, 1e8])
        yp[j] = rng.standard_normal() * 1e12
        l1, v1, b1 = _stats(X, y, plan)
        l2, v2, b2 = _stats(Xp, yp, plan)
        assert abs(l1 - l2) <= sens[0] * (1 + 1e-9)
        assert np.linalg.norm(v1 - v2) <= sens[1] * (1 + 1e-9)
        assert np.linalg.norm(b1 - b2) <= sens[2] * (1 + 1e-9)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_event_composes_to_the_budget(delta):
    plan = adassp_plan(100, 4, epsilon=0.7, delta=delta, row_bound=1.0, label_bound=1.0)
    eps, _ = epsilon_delta(plan.event, delta=delta or None)
    assert eps == pytest.approx(0.7, rel=1e-8) and eps <= 0.7
    if delta:
        mus = [m.sensitivity / m.sigma for m in (plan.mech_min, plan.mech_A, plan.mech_b)]
        assert math.sqrt(sum(m**2 for m in mus)) <= gaussian_mu(0.7, delta) * (1 + 1e-12)


def _noise_off(plan):
    zero = dict(mech_min=LaplaceMechanism(0.0, 1.0, 1),
                mech_A=mechanism_for(0.0, Budget(1.0, 0.0), plan.d * (plan.d + 1) // 2),
                mech_b=mechanism_for(0.0, Budget(1.0, 0.0), plan.d))
    return replace(plan, **zero)


@pytest.mark.parametrize("pure", [True, False])
def test_noise_off_equals_ridge_on_clipped_rows(pure):
    rng = np.random.default_rng(2)
    n, p, R, B, s = 200, 3, 1.5, 2.0, 0.4
    X = rng.standard_normal((n, p)) * rng.choice([0.3, 10.0], (n, 1))
    y = rng.standard_normal(n) * 3
    plan = _noise_off(adassp_plan(n, p + 1, epsilon=0.5, delta=0.0 if pure else 1e-6, row_bound=R,
                                  label_bound=B, intercept_scaling=s))
    theta, ridge = run_adassp(ArraySource(X, y), plan, np.random.default_rng(0))
    norms = np.linalg.norm(X, axis=1)
    Xc = np.hstack([X * np.minimum(1, R / norms)[:, None], np.full((n, 1), s)])
    yc = np.clip(y, -B, B)
    lam_min = np.linalg.eigvalsh(Xc.T @ Xc)[0]
    assert ridge == pytest.approx(max(0.0, plan.bound_E - max(0.0, lam_min - plan.t_min)))
    expected = np.linalg.solve(Xc.T @ Xc + ridge * np.eye(p + 1), Xc.T @ yc)
    np.testing.assert_allclose(theta, expected, rtol=1e-9, atol=1e-12)


def test_bounds_must_be_finite_and_positive():
    with pytest.raises(ValueError, match="row_bound"):
        adassp_plan(10, 2, epsilon=1.0, delta=0.0, row_bound=0.0, label_bound=1.0)
    with pytest.raises(ValueError, match="label_bound"):
        adassp_plan(10, 2, epsilon=1.0, delta=0.0, row_bound=1.0, label_bound=math.inf)


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_each_release_passes_its_audit_and_half_noise_is_flagged(delta):
    """Plan from the estimator; statistics from the real code on worst-case neighbours (fit_intercept=False)."""
    eps, n = 5.0, 20  # per-part budgets within the audit's power range (doc/privacy/testing.rst)
    est = DPLinearRegressor(epsilon=eps, delta=delta, solver="adassp", fit_intercept=False,
                            row_bound=1.0, label_bound=1.0)
    plan2 = est._plan(n, 2, 1).schedule
    plan1 = est._plan(n, 1, 1).schedule
    X = np.tile([1.0, 0.0], (n, 1))
    # lambda_min in 1-D: a row 1 -> 0
    X1p = X[:, :1].copy()
    X1p[0] = 0.0
    cases = [
        (plan1.mech_min, _stats(X[:, :1], np.zeros(n), plan1)[0], _stats(X1p, np.zeros(n), plan1)[0]),
    ]
    Xa = X.copy()
    Xa[0] = [0.0, 1.0]  # e1 -> e2: ||A - A'||_F = sqrt(2)
    cases.append((plan2.mech_A, _stats(X, np.zeros(n), plan2)[1], _stats(Xa, np.zeros(n), plan2)[1]))
    y, yp = np.ones(n), np.ones(n)
    yp[0] = -1.0
    cases.append((plan2.mech_b, _stats(X, y, plan2)[2], _stats(X, yp, plan2)[2]))
    rng = np.random.default_rng(31)
    for mech, c, cp in cases:
        c, cp = np.atleast_1d(c), np.atleast_1d(cp)
        # attained up to the secure path's rounding inflation (a relative 1e-6 here)
        assert mech.sensitivity * (1 - 1e-5) <= np.linalg.norm(c - cp) <= mech.sensitivity
        for mult, flagged in ((1.0, False), (0.5, True)):
            mutant = replace(mech, sensitivity=mech.sensitivity * mult)  # recalibrates to half the noise
            a = project_on(mutant.release(c, rng, size=100_000), c, cp)
            b = project_on(mutant.release(cp, rng, size=100_000), c, cp)
            res = audit_gaussian_dp(a, b, mech.epsilon, delta) if delta else audit_epsilon(a, b, mech.epsilon)
            assert res.violation is flagged, (type(mech).__name__, mult, res)
