"""ACCD building blocks: Lipschitzian extension, interpolation epochs, adaptive algorithm.

T0: every phase of every epoch claims sensitivity ``L_i eta + 2 target`` (>=
``1.2 L_i eta``; the facade's float floor may raise the target) and the
certified centre of the test-only linear loss moves by EXACTLY ``L_i eta``
under a label flip in that phase's block (so the extension at ``L_i`` is
really applied — a run that forgot it would move by ``eta``); schedules,
radii and events are identical on unrelated datasets (coupling); outputs lie
in their epoch's domain; the radius recursion is the documented one; the
multi-ball projection is the exact projection.
T1: a canary in a block of the last epoch, released by the real
schedule's mechanism on the real certified centres; the half-noise mutant
and the forgot-the-extension mutant are flagged.
"""

import math

import numpy as np
import pytest
from scipy import optimize

from sklearn_dpsco._solvers import (
    GLMData,
    adaptive_interpolation,
    adaptive_interpolation_schedule,
    ald_growth_schedule,
    extension_plan,
    interpolation_epochs,
    interpolation_schedule,
    run_extension,
    solve_certified,
)
from sklearn_dpsco._solvers._core._balls import project_balls
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._solvers._interpolation._accd import accd_error_rate, growth_excess
from sklearn_dpsco._solvers._output_perturbation import erm_sensitivity, float_floor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import mechanism_for
from sklearn_dpsco.accounting import ParallelComposedEvent, epsilon_delta
from sklearn_dpsco.testing import audit_epsilon, audit_gaussian_dp, project_on

LINEAR = get_loss("linear")
SQUARED = get_loss("squared")


def _phases(schedule):
    """(epoch index, OutputPerturbationPlan) for every phase of an InterpolationSchedule."""
    return [
        (i, phase)
        for i, plan in enumerate(schedule.epochs)
        for epoch in plan.schedule.phases
        for phase in epoch.phases
    ]


def _flip_pair(n_rows, d):
    X = np.zeros((n_rows, d))
    X[:, 0] = 1.0
    y = np.ones(n_rows)
    yp = y.copy()
    yp[0] = -1.0
    return GLMData(X, y), GLMData(X.copy(), yp)


def test_radius_recursion_is_public_and_documented():
    kw = dict(smoothness=2.0, growth=0.5, radius=3.0, epsilon=1.0, delta=0.0, n_epochs=4, c=0.05)
    for kappa in (2.0, 3.0):
        s = interpolation_schedule(20000, 3, kappa=kappa, **kw)
        info = s.info
        rate = accd_error_rate(info["epoch_size"], 3, epsilon=1.0, delta=0.0, beta=1.0 / 20003)
        assert info["error_rate"] == pytest.approx(rate)
        assert info["lipschitz"][0] == pytest.approx(2.0 * 2.0 * 3.0)  # L_0 = 2 H r_0
        for i in range(3):
            rho = growth_excess(info["lipschitz"][i], rate, growth=0.5, kappa=kappa, c=0.05)
            assert info["predicted_excess"][i] == pytest.approx(rho)
            expected = min((kappa * rho / 0.5) ** (1 / kappa), 2 * info["radii"][i])
            assert info["radii"][i + 1] == pytest.approx(expected)  # the float floor does not bind here
            assert info["lipschitz"][i + 1] == pytest.approx(2.0 * 2.0 * info["radii"][i + 1])
        # every epoch is ALD-2 at its own Lipschitz level on its own block
        for i, plan in enumerate(s.epochs):
            assert plan.lipschitz == info["lipschitz"][i] and plan.radius == info["radii"][i]
            assert plan.rows == (i * info["epoch_size"], plan.rows[1])
        assert isinstance(s.event, ParallelComposedEvent)
        assert epsilon_delta(s.event) == pytest.approx((1.0, 0.0))
    # kappa = 2 is A-Alg 2 with ACCD's constant c^2: r_{i+1} = sqrt(8) c (H / lambda) r(n0) r_i
    s = interpolation_schedule(20000, 3, kappa=2.0, **kw)
    q = math.sqrt(8.0) * 0.05 * (2.0 / 0.5) * s.info["error_rate"]
    assert s.info["radii"][1] == pytest.approx(q * s.info["radii"][0])
    # a declared global Lipschitz level caps every L_i
    capped = interpolation_schedule(20000, 3, kappa=2.0, lipschitz=0.5, **kw)
    assert capped.info["lipschitz"] == [min(0.5, 4.0 * r) for r in capped.info["radii"]]


def test_default_epoch_count_minimizes_predicted_excess():
    kw = dict(smoothness=1.0, growth=1.0, radius=1.0, epsilon=1.0, delta=0.0, c=0.01)
    s = interpolation_schedule(50000, 2, **kw)
    best = s.info["predicted_excess"][-1]
    for T in (1, 2, max(1, s.info["epochs"] - 1), s.info["epochs"] + 1):
        other = interpolation_schedule(50000, 2, n_epochs=T, **kw)
        assert other.info["predicted_excess"][-1] >= best * (1 - 1e-9)
    assert s.info["epochs"] > 1  # a contracting instance uses several epochs


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_every_phase_is_exactly_L_i_eta_sensitive(delta):
    """The linear loss extended at L_i < 1 moves by exactly L_i eta under a flip; the claimed
    sensitivity is that plus twice the certified target (output_perturbation.rst)."""
    s = interpolation_schedule(3000, 2, smoothness=0.1, growth=1.0, radius=1.0, epsilon=1.0, delta=delta,
                               n_epochs=3, c=0.05)
    lips = s.info["lipschitz"]
    assert max(lips) < 1.0  # the extension is active for the linear loss in every epoch
    checked = set()
    for i, phase in _phases(s):
        assert phase.clip == lips[i]
        eta = 2.0 / (phase.lam * (phase.stop - phase.start))
        claimed, target = erm_sensitivity(lips[i], phase.lam, phase.stop - phase.start, 0.1, 2)
        assert phase.sensitivity == pytest.approx(claimed, rel=1e-12) and phase.target_distance == target
        assert phase.sensitivity >= 1.2 * lips[i] * eta * (1 - 1e-12)
        if i in checked:
            continue
        checked.add(i)
        D, Dp = _flip_pair(phase.stop - phase.start, 2)
        tol = max(1e-4 * lips[i] * eta, float_floor(phase.lam, 2))  # what the solver can certify
        c = solve_certified(D, LINEAR, phase.lam, np.zeros(2), clip=phase.clip, target_distance=tol).w
        cp = solve_certified(Dp, LINEAR, phase.lam, np.zeros(2), clip=phase.clip, target_distance=tol).w
        assert abs(np.linalg.norm(c - cp) - lips[i] * eta) <= 2 * tol + 1e-15
        assert 2 * tol <= 0.1 * lips[i] * eta or i > 0  # tight enough to tell a factor 2 in the first epoch
    assert checked == set(range(3))
    rows = [(p.start, p.stop) for _, p in _phases(s)]
    assert all(a[1] <= b[0] for a, b in zip(rows, rows[1:]))  # disjoint blocks, in order


def test_adaptive_schedule_halves_and_localizes():
    s = adaptive_interpolation_schedule(4000, 2, smoothness=0.5, growth=1.0, lipschitz=1.0, radius=2.0,
                                        epsilon=0.5, delta=0.0, c=0.05, n_epochs=2)
    assert s.first.rows[0] == 0 and s.first.rows[1] <= 2000
    assert s.second.epochs[0].rows[0] == 2000
    r_loc = s.info["localized_radius"]
    rho1 = growth_excess(1.0, accd_error_rate(2000, 2, epsilon=0.5, delta=0.0, beta=1 / 4002), growth=1.0,
                         kappa=2.0, c=0.05)
    assert r_loc == pytest.approx(min(4.0, math.sqrt(2 * rho1)))
    assert s.second.info["radii"][0] == r_loc
    assert s.second.info["lipschitz"][0] == pytest.approx(min(1.0, 2 * 0.5 * r_loc))
    assert epsilon_delta(s.event) == pytest.approx((0.5, 0.0))


def _regression(n, d, seed, heavy=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if heavy:
        X = 30 * rng.standard_t(1.5, (n, d))
        y = 100 * rng.standard_cauchy(n)
    else:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = X @ np.full(d, 0.3)
    return GLMData(X, y)


def test_schedules_and_info_do_not_depend_on_data():
    """Coupling: epochs, radii, Lipschitz levels and events are identical on unrelated data."""
    n, d = 800, 2
    kw = dict(smoothness=1.0, growth=0.5, center=np.zeros(d), radius=1.0, epsilon=1.0, delta=0.0, c=0.05)
    fa = interpolation_epochs(_regression(n, d, 0), SQUARED, rng=np.random.default_rng(1), n_epochs=2, **kw)
    fb = interpolation_epochs(_regression(n, d, 1, heavy=True), SQUARED, rng=np.random.default_rng(2),
                              n_epochs=2, **kw)
    assert fa.info == fb.info and fa.event == fb.event
    ga = adaptive_interpolation(_regression(n, d, 0), SQUARED, lipschitz=1.0, rng=np.random.default_rng(1),
                                n_epochs=1, **kw)
    gb = adaptive_interpolation(_regression(n, d, 1, heavy=True), SQUARED, lipschitz=1.0,
                                rng=np.random.default_rng(2), n_epochs=1, **kw)
    assert ga.info == gb.info and ga.event == gb.event


def test_outputs_stay_in_their_domains():
    n, d = 800, 2
    data = _regression(n, d, 3, heavy=True)
    centre = np.array([0.5, -0.5])
    fit = interpolation_epochs(data, SQUARED, smoothness=1.0, growth=0.5, center=centre, radius=0.7, epsilon=0.2,
                               delta=0.0, rng=np.random.default_rng(0), n_epochs=2, c=0.05)
    assert np.linalg.norm(fit.coef - centre) <= 0.7 * (1 + 1e-9)
    # one epoch of A-Alg 1 inside a two-ball domain: output in domain ∩ B(centre, r)
    plan = extension_plan(400, d, lipschitz=1.0, radius=0.3, epsilon=0.2, delta=0.0, scale=1.0)
    outer = [(np.zeros(d), 1.0)]
    x = run_extension(data, SQUARED, plan, center=centre, domain=outer, rng=np.random.default_rng(0))
    assert np.linalg.norm(x) <= 1.0 + 1e-9 and np.linalg.norm(x - centre) <= 0.3 * (1 + 1e-9)
    g = adaptive_interpolation(data, SQUARED, smoothness=1.0, growth=0.5, lipschitz=1.0, center=centre, radius=0.7,
                               epsilon=0.2, delta=0.0, rng=np.random.default_rng(0), n_epochs=1, c=0.05)
    assert np.linalg.norm(g.coef - centre) <= 0.7 * (1 + 1e-9)


def test_centre_outside_domain_is_refused():
    plan = extension_plan(200, 2, lipschitz=1.0, radius=0.3, epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="centre"):
        run_extension(_regression(200, 2, 0), SQUARED, plan, center=np.array([3.0, 0.0]),
                      domain=[(np.zeros(2), 1.0)], rng=np.random.default_rng(0))


def test_bad_growth_parameters_raise_before_running():
    kw = dict(radius=1.0, epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="smoothness"):
        interpolation_schedule(1000, 2, smoothness=0.0, growth=1.0, **kw)
    with pytest.raises(ValueError, match="growth"):
        interpolation_schedule(1000, 2, smoothness=1.0, growth=-1.0, **kw)
    with pytest.raises(ValueError, match="kappa"):
        interpolation_schedule(1000, 2, smoothness=1.0, growth=1.0, kappa=1.5, **kw)
    with pytest.raises(ValueError, match="rows"):
        interpolation_schedule(1, 2, smoothness=1.0, growth=1.0, **kw)
    with pytest.raises(ValueError, match="epsilon"):
        interpolation_schedule(1000, 2, smoothness=1.0, growth=1.0, radius=1.0, epsilon=math.inf, delta=0.0)


def test_growth_schedule_caps_unresolvable_epochs():
    """ALD-2's T is capped where phases could not be certified; unchanged elsewhere."""
    s = ald_growth_schedule(600, 3, clip=1.0, radius=5.0, kappa_lower=2.0, epsilon=0.5, delta=0.0)
    assert s.info["epochs"] == math.ceil(2 * math.log(600)) and "epochs_uncapped" not in s.info
    s = ald_growth_schedule(200000, 10, clip=1.0, radius=2.0, kappa_lower=1.1, epsilon=1.0, delta=0.0)
    assert s.info["epochs_uncapped"] == math.ceil(2 * math.log(200000) / 0.1)
    assert s.info["epochs"] < s.info["epochs_uncapped"]
    assert s.info["epoch_size"] == 200000 // s.info["epochs"]
    last = s.phases[-1]
    assert 1.0 * last.info["steps"][0] >= 1e-9 * 2.0  # the deepest epoch still has a resolvable phase


def _exact_projection(v, balls):
    cons = [{"type": "ineq", "fun": (lambda w, c=c, r=r: r**2 - np.sum((w - c) ** 2))} for c, r in balls]
    res = optimize.minimize(lambda w: np.sum((w - v) ** 2), balls[0][0], constraints=cons, method="SLSQP",
                            options={"ftol": 1e-14, "maxiter": 500})
    return res.x


def test_three_ball_projection_is_the_projection():
    rng = np.random.default_rng(4)
    for _ in range(20):
        d = 3
        anchor = rng.standard_normal(d)
        balls = [(anchor + rng.standard_normal(d) * 0.5, 0.0) for _ in range(3)]
        balls = [(c, np.linalg.norm(anchor - c) + rng.uniform(0.1, 1.0)) for c, _ in balls]
        v = anchor + 3 * rng.standard_normal(d)
        p = project_balls(v, balls, anchor)
        assert all(np.linalg.norm(p - c) <= r * (1 + 1e-9) for c, r in balls)
        np.testing.assert_allclose(p, _exact_projection(v, balls), atol=1e-5)


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_late_epoch_release_audit(delta):
    """Canary in the first block of the first epoch (L_0 < 1, where the float floor does not
    inflate the noise): the real schedule's mechanism on the real certified centres, 1e5 draws
    per side, passes; half the noise the exact movement needs and a centre computed without
    the extension are both flagged."""
    eps = 1.0
    s = interpolation_schedule(3000, 1, smoothness=0.1, growth=1.0, radius=1.0, epsilon=eps, delta=delta,
                               n_epochs=3, c=0.05)
    i, phase = _phases(s)[0]
    L_i = s.info["lipschitz"][i]
    assert L_i <= 0.5
    assert phase.target_distance == pytest.approx(0.1 * 2 * L_i / (phase.lam * (phase.stop - phase.start)))
    D, Dp = _flip_pair(phase.stop - phase.start, 1)
    eta = 2.0 / (phase.lam * (phase.stop - phase.start))

    def centres(clip):
        tol = max(1e-4 * clip * eta, float_floor(phase.lam, 1))  # relative to the centre's movement
        c = solve_certified(D, LINEAR, phase.lam, np.zeros(1), clip=clip, target_distance=tol).w
        cp = solve_certified(Dp, LINEAR, phase.lam, np.zeros(1), clip=clip, target_distance=tol).w
        return c, cp

    mech = phase.mechanism
    half = mechanism_for(L_i * eta / 2, Budget(eps, delta), 1)  # half the noise the exact movement needs
    rng = np.random.default_rng(12)
    for name, m, clip, flagged in (("real", mech, phase.clip, False), ("half noise", half, phase.clip, True),
                                   ("no extension", mech, 1.0, True)):
        c, cp = centres(clip)
        a = project_on(m.release(c, rng, size=100_000), c, cp)
        b = project_on(m.release(cp, rng, size=100_000), c, cp)
        res = audit_gaussian_dp(a, b, eps, delta) if delta else audit_epsilon(a, b, eps)
        assert res.violation is flagged, (name, str(res))
