"""Lowy 2026 building blocks: OutputPert-Localize, Double-OutputPert, Pop-Localize.

T0: every release's sensitivity is ``2C(1 + 2t)/(lam m)`` and the certified
centre of the test-only linear loss moves by exactly ``2/(lam m)`` under a
label flip, for both stages (the second constrained to its ball); the
released points are the documented mechanisms applied to the certified
centres (same seed); the localized radius is the exact noise quantile;
Pop-Localize's blocks are disjoint, its plan public, its result identical
for any ``n_jobs`` and under the Dask backend; geometric aggregation keeps
its 3R promise.
T1: each stage's release audited on worst-case neighbours with the
half-noise mutant flagged; the whole two-stage output audited at the total
budget.
"""

import math

import numpy as np
import pytest
from joblib import parallel_backend
from scipy import stats
from threadpoolctl import threadpool_limits

from sklearn_dpsco.testing import glm_neighbours
from sklearn_dpsco._solvers import (
    GLMData,
    double_output_perturbation,
    double_output_perturbation_plan,
    geometric_aggregate,
    output_pert_localize,
    output_pert_localize_plan,
    pop_localize,
    pop_localize_plan,
    run_double_output_perturbation,
    solve_certified,
)
from sklearn_dpsco._solvers._core._geometry import project_ball
from sklearn_dpsco._solvers import float_floor
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._solvers._lowy import noise_norm_quantile, split_two_stages
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import mechanism_for
from sklearn_dpsco.accounting import ComposedEvent, ParallelComposedEvent, epsilon_delta
from sklearn_dpsco.testing import audit_epsilon, audit_gaussian_dp, project_on

LINEAR = get_loss("linear")
HINGE = get_loss("hinge")


def _centre(data, lam, target, ball=None, w0=None):
    w0 = np.zeros(data.n_features) if w0 is None else w0
    return solve_certified(data, LINEAR, lam, w0, clip=1.0, target_distance=target, ball=ball).w


# --------------------------------------------------------------------------- plans
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_double_plan_sensitivities_budget_and_radius(delta):
    m, d, lam, C, t, eps = 300, 4, 0.2, 0.7, 0.05, 1.3
    plan = double_output_perturbation_plan(m, d, lam=lam, clip=C, epsilon=eps, delta=delta, tolerance=t)
    exact = 2 * C / (lam * m)
    for release in (plan.localize.release, plan.release):
        assert release.sensitivity == pytest.approx(exact * (1 + 2 * t), rel=1e-12)
        assert release.target_distance == pytest.approx(t * exact, rel=1e-12)
        assert release.lam == lam and release.clip == C and (release.start, release.stop) == (0, m)
    assert isinstance(plan.event, ComposedEvent)
    report = delta if delta else None
    spent = epsilon_delta(plan.event, delta=report)[0]
    assert spent == pytest.approx(eps, rel=1e-8) and spent <= eps
    mech = plan.localize.release.mechanism
    if delta == 0:
        assert mech.scale == pytest.approx(exact * (1 + 2 * t) / (eps / 2))
        q = stats.gamma.isf(math.exp(-3.0), a=d, scale=mech.scale)
    else:
        q = mech.sigma * stats.chi.isf(math.exp(-3.0), df=d)
    assert plan.localize.radius == pytest.approx(t * exact + q, rel=1e-9)


@pytest.mark.parametrize("noise", ["float", "secure"])
@pytest.mark.parametrize("share", [0.5, 0.2])
def test_two_stage_gaussian_split_composes_exactly(share, noise):
    """Float Gaussians compose as Gaussian DP (mu^2 adds), secure ones as zCDP (rho adds): both exact."""
    (e1, d1), (e2, d2) = split_two_stages(1.0, 1e-5, share, noise)
    plan = double_output_perturbation_plan(100, 3, lam=1.0, clip=1.0, epsilon=1.0, delta=1e-5, localize_share=share,
                                           noise=noise)
    spent = epsilon_delta(plan.event, delta=1e-5)[0]
    assert spent == pytest.approx(1.0, rel=1e-6) and spent <= 1.0
    assert (d1, d2) == (1e-5, 1e-5) and e1 < 1.0 and e2 < 1.0
    (p1, _), (p2, _) = split_two_stages(2.0, 0.0, share)
    assert p1 + p2 == pytest.approx(2.0) and p1 == pytest.approx(2.0 * share)


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_noise_quantile_is_exact(delta):
    """Monte Carlo check of P(||b|| > q) = e^-zeta, and the defect in Lowy's tail bound."""
    d, zeta = 21, 3.0
    mech = mechanism_for(0.3, Budget(1.0, delta), d)
    q = noise_norm_quantile(mech, zeta)
    norms = np.linalg.norm(mech.release(0.0, np.random.default_rng(0), size=200_000), axis=1)
    frac = np.mean(norms > q)
    assert abs(frac - math.exp(-zeta)) < 5 * math.sqrt(math.exp(-zeta) / 200_000)
    if delta == 0:
        # Lowy's Lemma C.2 states P(||b|| > s (d + t)) <= e^-t; false for d = 21, t = 3.
        assert np.mean(norms > mech.scale * (d + zeta)) > 4 * math.exp(-zeta)


def test_pop_localize_plan_is_public_and_disjoint():
    n, d = 5000, 3
    plan = pop_localize_plan(n, d, clip=1.0, epsilon=0.8, lam1=0.01, repeats=3, lam_growth=4.0, min_block=50)
    rows = [(p.start, p.stop) for phase in plan.phases for p in phase]
    assert all(a[1] <= b[0] for a, b in zip(rows, rows[1:])) and rows[-1][1] <= n
    for t, phase in enumerate(plan.phases, start=1):
        assert len(phase) == 3
        assert all(p.stop - p.start == (n // 2**t) // 3 for p in phase)
        assert all(p.lam == pytest.approx(0.01 * 4.0 ** (t - 1)) for p in phase)
    assert min(plan.info["block_sizes"]) >= 50
    assert (n // 2 ** (plan.info["phases"] + 1)) // 3 < 50  # the next phase was dropped by the public rule
    assert isinstance(plan.event, ParallelComposedEvent)
    assert epsilon_delta(plan.event) == pytest.approx((0.8, 0.0))
    # Lowy's defaults: T = ceil(log2 n), shrink 2, growth 32; every phase is kept, and a phase whose
    # tolerance target float64 cannot prove asks for the plan's float floor instead
    full = pop_localize_plan(1024, d, clip=1.0, epsilon=1.0, lam1=1e-3)
    assert full.info["phases"] == 10 and full.lams == tuple(1e-3 * 32.0 ** (t - 1) for t in range(1, 11))
    for phase, lam in zip(full.phases, full.lams):
        m = phase[0].stop - phase[0].start
        assert phase[0].release.target_distance == max(0.1 * 2.0 / (lam * m), float_floor(lam, d))
    with pytest.raises(ValueError, match="repeats"):
        pop_localize_plan(100, d, clip=1.0, epsilon=1.0, lam1=1.0, repeats=0)
    with pytest.raises(ValueError, match="at least"):
        pop_localize_plan(10, d, clip=1.0, epsilon=1.0, lam1=1.0, repeats=8)
    with pytest.raises(ValueError, match="inner"):
        pop_localize_plan(100, d, clip=1.0, epsilon=1.0, lam1=1.0, inner="triple")


# --------------------------------------------------------------------------- exact sensitivity, real path
@pytest.mark.parametrize("m, lam", [(40, 0.5), (300, 0.05)])
def test_both_stages_move_by_exact_sensitivity(m, lam):
    D, Dp = glm_neighbours(m, 2)
    plan = double_output_perturbation_plan(m, 2, lam=lam, clip=1.0, epsilon=1.0)
    tau = plan.release.target_distance
    exact = 2.0 / (lam * m)
    c, cp = _centre(D, lam, tau), _centre(Dp, lam, tau)
    assert np.linalg.norm(c - cp) == pytest.approx(exact, rel=1e-9)
    # stage 2 over a ball (any public ball containing both minimizers): same exact movement
    ball = (0.5 * (c + cp) + np.array([0.0, 0.1 * exact]), 2 * exact)
    c2, c2p = _centre(D, lam, tau, ball), _centre(Dp, lam, tau, ball)
    assert np.linalg.norm(c2 - c2p) == pytest.approx(exact, rel=1e-9)
    # a ball that cuts both minimizers: movement only shrinks (P4 over any convex set)
    cut = (np.array([0.0, 1.0 / lam]), 1.0 / lam)
    c3, c3p = _centre(D, lam, tau, cut), _centre(Dp, lam, tau, cut)
    assert np.linalg.norm(c3 - c3p) <= exact * (1 + 1e-9)


def test_double_release_is_documented_composition():
    """Same seed: stage 1 = certified centre + its noise; stage 2 = centre over that ball + its noise, projected."""
    m, lam, eps = 200, 0.3, 1.0
    D, _ = glm_neighbours(m, 2)
    plan = double_output_perturbation_plan(m, 2, lam=lam, clip=1.0, epsilon=eps)
    out = run_double_output_perturbation(D, LINEAR, plan, np.random.default_rng(7), w0=np.zeros(2))
    rng = np.random.default_rng(7)
    tau = plan.release.target_distance
    centre = _centre(D, lam, tau)
    loc = plan.localize.release.mechanism.release(centre, rng)
    ball = (loc, plan.localize.radius)
    c2 = _centre(D, lam, tau, ball)
    expected = project_ball(plan.release.mechanism.release(c2, rng), *ball)
    np.testing.assert_allclose(out, expected, atol=1e-9)
    assert np.linalg.norm(out - loc) <= plan.localize.radius * (1 + 1e-12)
    # with a public domain W the outputs stay in W ∩ ball
    W = (np.zeros(2), 1.0)
    fit = double_output_perturbation(D, LINEAR, lam=lam, clip=1.0, epsilon=eps, rng=np.random.default_rng(1), domain=W)
    assert np.linalg.norm(fit.coef) <= 1.0 + 1e-9
    (ctr, r), _ = output_pert_localize(D, LINEAR, lam=lam, clip=1.0, epsilon=eps, rng=np.random.default_rng(1), domain=W)
    assert np.linalg.norm(ctr) <= 1.0 + 1e-12
    assert r == output_pert_localize_plan(m, 2, lam=lam, clip=1.0, epsilon=eps).radius


def test_localized_ball_contains_minimizer_at_documented_rate():
    """Coverage of the exact regularized minimizer by the returned ball: >= 1 - e^-zeta."""
    m, lam, zeta = 100, 0.5, 1.0
    D, _ = glm_neighbours(m, 3)
    plan = output_pert_localize_plan(m, 3, lam=lam, clip=1.0, epsilon=1.0, zeta=zeta)
    centre = _centre(D, lam, plan.release.target_distance)
    exact = np.array([1.0 / lam, 0.0, 0.0])  # linear-loss minimizer: mean(y x) / lam
    draws = plan.release.mechanism.release(centre, np.random.default_rng(3), size=20_000)
    cover = np.mean(np.linalg.norm(draws - exact, axis=1) <= plan.radius)
    assert cover >= 1 - math.exp(-zeta) - 0.01
    assert cover <= 1 - math.exp(-zeta) + 0.02  # and the radius is not wastefully large


# --------------------------------------------------------------------------- aggregation
def test_geometric_aggregate_three_r_guarantee():
    rng = np.random.default_rng(0)
    for _ in range(200):
        J, d, R = int(rng.integers(1, 12)), 3, 0.5
        target = rng.standard_normal(d)
        good = J // 2 + 1
        pts = np.vstack(
            [target + project_ball(rng.standard_normal((good, d)) * R, np.zeros(d), R) if good else np.empty((0, d)),
             target + 50 * rng.standard_normal((J - good, d))]
        )[rng.permutation(J)]
        j = geometric_aggregate(pts)
        assert np.linalg.norm(pts[j] - target) <= 3 * R + 1e-12
    assert geometric_aggregate(np.zeros((1, 2))) == 0
    assert geometric_aggregate(np.array([[0.0], [1.0], [2.0], [3.0]])) == 1  # ties: smallest index


# --------------------------------------------------------------------------- parallel invariance
def _pop_run(n_jobs, seed=3):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1200, 3))
    y = np.sign(X[:, 0] + 0.5 * rng.standard_normal(1200))
    data = GLMData(X, y, None, 1.0)
    return pop_localize(
        data, HINGE, clip=1.0, epsilon=1.0, lam1=0.05, rng=np.random.default_rng(seed), repeats=3, phases=2,
        lam_growth=4.0, n_jobs=n_jobs,
    )


def test_pop_localize_identical_for_any_n_jobs():
    a, b, c = _pop_run(1), _pop_run(2), _pop_run(-1)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.coef, c.coef)
    assert a.event == b.event and a.info == b.info
    assert not np.array_equal(a.coef, _pop_run(1, seed=4).coef)


def test_pop_localize_identical_under_dask_backend():
    pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    # Dask's workers run BLAS single-threaded; pin the reference run to the same setting so the
    # comparison is about seeds and scheduling, not about BLAS summation order.
    with threadpool_limits(limits=1):
        reference = _pop_run(1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        with parallel_backend("dask"):
            out = _pop_run(2)
    np.testing.assert_array_equal(reference.coef, out.coef)


# --------------------------------------------------------------------------- statistical audits
def _stage_audit(mech_of, c, cp, eps, delta, rng):
    """Audit the release on the two centres; returns violation flags for (true, half-noise)."""
    flags = []
    for mult in (1.0, 0.5):
        mech = mech_of(mult)
        a = project_on(mech.release(c, rng, size=100_000), c, cp)
        b = project_on(mech.release(cp, rng, size=100_000), c, cp)
        res = audit_gaussian_dp(a, b, eps, delta) if delta else audit_epsilon(a, b, eps)
        flags.append(res.violation)
    return flags


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_each_stage_release_audit(delta):
    """Worst-case neighbours through the real certified solver; each stage at its share of the budget."""
    m, lam, eps = 200, 0.5, 2.0
    D, Dp = glm_neighbours(m, 1)
    plan = double_output_perturbation_plan(m, 1, lam=lam, clip=1.0, epsilon=eps, delta=delta)
    tau = plan.release.target_distance
    c, cp = _centre(D, lam, tau), _centre(Dp, lam, tau)
    ball = (0.5 * (c + cp), 3 * plan.release.sensitivity)
    c2, c2p = _centre(D, lam, tau, ball), _centre(Dp, lam, tau, ball)
    (e1, d1), (e2, d2) = split_two_stages(eps, delta, 0.5)
    rng = np.random.default_rng(11)
    for stage, (x, xp, e, dd) in (
        (plan.localize.release, (c, cp, e1, d1)),
        (plan.release, (c2, c2p, e2, d2)),
    ):
        assert stage.mechanism.epsilon == pytest.approx(e)
        mech_of = lambda mult, s=stage, e=e, dd=dd: mechanism_for(s.sensitivity * mult, Budget(e, dd), 1)  # noqa: E731
        assert _stage_audit(mech_of, x, xp, e, dd, rng) == [False, True]


@pytest.mark.statistical
def test_two_stage_output_audit_at_total_budget():
    """The whole Double-OutputPert output (vectorised exactly for the linear loss in 1-D: the constrained
    minimizer is the projection of the unconstrained one) passes at the total epsilon."""
    m, lam, eps = 200, 0.5, 2.0
    D, Dp = glm_neighbours(m, 1)
    plan = double_output_perturbation_plan(m, 1, lam=lam, clip=1.0, epsilon=eps)
    tau = plan.release.target_distance
    c, cp = _centre(D, lam, tau), _centre(Dp, lam, tau)
    rng = np.random.default_rng(5)

    def outputs(centre, size=100_000):
        loc = plan.localize.release.mechanism.release(centre, rng, size=size)[:, 0]
        r = plan.localize.radius
        c2 = np.clip(centre[0], loc - r, loc + r)
        out = plan.release.mechanism.release(c2[:, None], rng, size=size)[:, 0]
        return np.clip(out, loc - r, loc + r)

    a = project_on(outputs(c)[:, None], c, cp)
    b = project_on(outputs(cp)[:, None], c, cp)
    assert not audit_epsilon(a, b, eps).violation
