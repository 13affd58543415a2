"""User-clipped output perturbation (doc/privacy/user_level.rst, "user_clip").

T0: the certified solver matches a brute-force reference (inner problems by Nelder-Mead) on data
with clipped adversarial users, on both paths (Newton + duality gap; the public-count AGD
fallback); the gap bounds the true suboptimality; on worst-case user-level neighbours (one
adversarial user, all other users' rows zero) the certified minimizer moves by exactly 2C/(lam n m).
T1: Gaussian-DP audit of the release on those neighbours through the real solver; mutants: half the
noise, and user clipping skipped (noise planned for C) are flagged.
"""

import numpy as np
import pytest
from scipy import optimize

from sklearn_dpsco._solvers._user_level import _clip as _user_clip
from sklearn_dpsco._solvers._user_level._clip import (
    _Problem,
    clipped_objective_gap,
    run_user_clip,
    solve_user_clipped,
    user_clip_plan,
)
from sklearn_dpsco._solvers._core._user_data import make_user_data
from sklearn_dpsco.accounting import epsilon_delta
from sklearn_dpsco.testing import audit_gaussian_dp, project_on


def _tiny(seed=0):
    rng = np.random.default_rng(seed)
    n, m, d = 8, 5, 2
    X = rng.standard_normal((n * m, d))
    y = np.where(rng.random(n * m) < 1 / (1 + np.exp(-X @ np.array([2.0, -1.0]))), 1.0, -1.0)
    X[0:5], y[0:5] = [3.0, 0.0], -1.0  # two users whose gradients add up: clipped
    X[5:10], y[5:10] = [0.0, 3.0], 1.0
    return make_user_data(X, y, np.repeat(np.arange(n), m), max_items=m, data_norm=1.0), n, m


def _brute_objective(data, n, m, lam, C):
    rng = np.random.default_rng(1)

    def L(u, v):
        s, e = data.indptr[u], data.indptr[u + 1]
        return np.logaddexp(0, -data.y[s:e] * (data.X[s:e] @ v)).sum()

    def h(u, w):
        best = L(u, w)
        s, e = data.indptr[u], data.indptr[u + 1]
        grad = (-data.y[s:e] / (1 + np.exp(data.y[s:e] * (data.X[s:e] @ w)))) @ data.X[s:e]
        if np.linalg.norm(grad) <= C:
            return best  # the extension equals L_u where its gradient is <= C (doc/algorithms.rst, §0.2)
        for _ in range(2):
            r = optimize.minimize(lambda v: L(u, v) + C * np.linalg.norm(w - v), w + 0.1 * rng.standard_normal(2),
                                  method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000})
            best = min(best, r.fun)
        return best

    return lambda w: sum(h(u, w) for u in range(n)) / (n * m) + lam / 2 * w @ w


@pytest.mark.parametrize("force_agd", [False, True])
def test_certified_solver_matches_brute_force(monkeypatch, force_agd):
    data, n, m = _tiny()
    lam, C, tau = 0.1, 1.5, 1e-4
    if force_agd:
        monkeypatch.setattr(_user_clip, "_MAX_OUTER", 0)
    w, how = solve_user_clipped(data.X, data.y, data.indptr, n, max_items=m, data_norm=1.0, lam=lam, clip=C, tau=tau)
    assert how == ("agd" if force_agd else "newton")
    P = _brute_objective(data, n, m, lam, C)
    ref = optimize.minimize(P, w + 0.05, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-14}).x
    assert np.linalg.norm(w - ref) <= tau
    prob = _Problem(data.X, data.y, data.indptr, n, m, lam, C)
    assert np.sum(np.linalg.norm(prob.user_grads(w)[0], axis=1) > C) >= 2  # clipping is active


def test_gap_bounds_the_suboptimality():
    data, n, m = _tiny(2)
    lam, C = 0.1, 1.5
    prob = _Problem(data.X, data.y, data.indptr, n, m, lam, C)
    P = _brute_objective(data, n, m, lam, C)
    w_star = solve_user_clipped(data.X, data.y, data.indptr, n, max_items=m, data_norm=1.0, lam=lam, clip=C,
                                tau=1e-6)[0]
    p_star = P(w_star)
    for shift in (0.2, 0.0):
        w = w_star + shift * np.array([1.0, -0.5])
        _, _, clipped, V, _ = prob.evaluate(w)
        w_t, gap = clipped_objective_gap(prob, w, clipped, V)
        assert P(w_t) - p_star <= gap + 1e-12
        assert gap > 0


def _worst_case_users(n, m, label):
    """n - 1 users with zero rows (no gradient, no curvature) and one adversarial user: m rows R e_1."""
    X = np.zeros((n * m, 1))
    y = np.ones(n * m)
    X[:m] = 1.0
    y[:m] = label
    return make_user_data(X, y, np.repeat(np.arange(n), m), max_items=m, data_norm=1.0)


def _centre(data, plan, clip=None):
    return solve_user_clipped(data.X, data.y, data.indptr, data.n_users, max_items=plan.max_items,
                              data_norm=1.0, lam=plan.lam, clip=plan.clip if clip is None else clip,
                              tau=plan.tau)[0]


def test_worst_case_neighbours_move_by_exactly_the_sensitivity():
    n, m, lam = 20, 16, 0.05
    plan = user_clip_plan(n, m, 1, data_norm=1.0, lam=lam, epsilon=1.0, delta=1e-6)
    assert plan.clip == pytest.approx(4.0)  # R sqrt(m)
    c = _centre(_worst_case_users(n, m, -1.0), plan)
    cp = _centre(_worst_case_users(n, m, 1.0), plan)
    exact = 2 * plan.clip / (lam * n * m)
    assert abs(float(np.abs(c - cp)[0]) - exact) <= 2 * plan.tau
    assert float(np.abs(c - cp)[0]) <= plan.sensitivity
    assert plan.sensitivity == pytest.approx(exact * 1.04)
    assert epsilon_delta(plan.event, delta=1e-6)[0] == pytest.approx(1.0, rel=1e-9)


def test_release_is_centre_plus_planned_noise():
    data = _worst_case_users(10, 4, -1.0)
    plan = user_clip_plan(10, 4, 1, data_norm=1.0, lam=0.5, epsilon=1.0, delta=1e-6)
    out = run_user_clip(data, plan, np.random.default_rng(3), radius=1e9)
    np.testing.assert_allclose(out, plan.mechanism.release(_centre(data, plan), np.random.default_rng(3)))


@pytest.mark.statistical
@pytest.mark.parametrize("mutant", [None, "half_noise", "no_user_clip"])
def test_release_audit_on_worst_case_neighbours(mutant):
    n, m, lam, eps, delta = 20, 16, 0.05, 1.0, 1e-5
    plan = user_clip_plan(n, m, 1, data_norm=1.0, lam=lam, epsilon=eps, delta=delta)
    clip = 1e9 if mutant == "no_user_clip" else None  # noise planned for C, centres unclipped
    c = _centre(_worst_case_users(n, m, -1.0), plan, clip)
    cp = _centre(_worst_case_users(n, m, 1.0), plan, clip)
    sigma = plan.mechanism.sigma / (2 if mutant == "half_noise" else 1)
    rng = np.random.default_rng(12)
    a = project_on(c + sigma * rng.standard_normal((100_000, 1)), c, cp)
    b = project_on(cp + sigma * rng.standard_normal((100_000, 1)), c, cp)
    # 20 candidate thresholds: with 200 the calibration half tends to pick tail events whose
    # holdout intervals are too wide to see a mu twice the claim
    res = audit_gaussian_dp(a, b, eps, delta, n_thresholds=20)
    assert res.violation is (mutant is not None), res
