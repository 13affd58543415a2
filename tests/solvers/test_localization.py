"""Output perturbation and localization (ALD-1, ALD-2, FKT Phased-ERM).

T0: exact sensitivity on worst-case neighbours through the real solver path
(test-only linear loss: the minimizer moves by exactly 2/(lam n)); the
released point equals the certified centre plus the documented mechanism's
noise (seeded); schedules are public; bad inputs raise before anything runs.
T1: audit of the last phase's release (canary in the last block) with the
half-noise mutant.
"""

import functools
import math

import numpy as np
import pytest

from sklearn_dpsco.testing import glm_neighbours
from sklearn_dpsco._solvers import (
    CertificationError,
    GLMData,
    ald_growth_epochs,
    ald_localization,
    erm_sensitivity,
    float_floor,
    output_perturbation,
    phased_erm,
    solve_certified,
)
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import mechanism_for
from sklearn_dpsco.accounting import ParallelComposedEvent, epsilon_delta
from sklearn_dpsco.testing import audit_epsilon, audit_gaussian_dp, project_on

LINEAR = get_loss("linear")


@pytest.mark.parametrize("n, lam", [(10, 1.0), (200, 0.05)])
def test_certified_centre_moves_by_exact_sensitivity(n, lam):
    D, Dp = glm_neighbours(n, 3, flip_row=n - 1)
    w0 = np.zeros(3)
    c = solve_certified(D, LINEAR, lam, w0, clip=1.0, target_distance=1e-4).w
    cp = solve_certified(Dp, LINEAR, lam, w0, clip=1.0, target_distance=1e-4).w
    assert np.linalg.norm(c - cp) == pytest.approx(2.0 / (lam * n), rel=1e-9)
    sens, tau = erm_sensitivity(1.0, lam, n, 0.1, d=3)
    assert sens == pytest.approx(1.2 * 2.0 / (lam * n))
    assert tau == pytest.approx(0.2 / (lam * n))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_output_perturbation_is_centre_plus_documented_noise(delta):
    D, _ = glm_neighbours(50, 2, 0)
    lam, eps = 0.3, 0.7
    fit = output_perturbation(D, LINEAR, lam=lam, clip=1.0, epsilon=eps, delta=delta, rng=np.random.default_rng(5))
    centre = solve_certified(D, LINEAR, lam, np.zeros(2), clip=1.0, target_distance=1e-4).w
    sens, _ = erm_sensitivity(1.0, lam, 50, 0.1, d=2)
    mech = mechanism_for(sens, Budget(eps, delta), 2)
    expected = mech.release(centre, np.random.default_rng(5))
    np.testing.assert_allclose(fit.coef, expected, atol=1e-12)
    assert fit.event == mech.event
    assert epsilon_delta(fit.event, delta=delta if delta else None)[0] == pytest.approx(eps)


def test_bad_parameters_raise_before_solving():
    D, _ = glm_neighbours(20, 2, 0)
    rng = np.random.default_rng(0)
    for kwargs, name in [
        ({"lam": 0.0}, "lam"),
        ({"clip": -1.0}, "clip"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
    ]:
        args = dict(lam=1.0, clip=1.0, epsilon=1.0, delta=0.0, rng=rng)
        args.update(kwargs)
        with pytest.raises(ValueError, match=name):
            output_perturbation(D, LINEAR, **args)


def test_certification_error_carries_no_data():
    D, _ = glm_neighbours(20, 2, 0)
    with pytest.raises(CertificationError) as err:
        # the linear loss is certified up to float rounding only: target 0 cannot be met
        solve_certified(D, get_loss("hinge"), 1e-3, np.zeros(2), clip=1.0, target_distance=0.0)
    assert "0" in str(err.value) and "no budget spent" in str(err.value)


def _phase_blocks(fit):
    return [(s["rows"], s["eta"], s["lam"], s["sensitivity"]) for s in fit.info["schedule"]]


def _runner(algo):
    """The algorithm under test; ``phased_step``: Phased-ERM with its step sized for step_radius < radius."""
    if algo == "ald":
        return ald_localization
    return phased_erm if algo == "phased" else functools.partial(phased_erm, step_radius=2.5)


@pytest.mark.parametrize("algo", ["ald", "phased", "phased_step"])
def test_each_phase_sensitivity_is_exact_bound(algo):
    n, d = 400, 2
    D, _ = glm_neighbours(n, d, 0)
    run = _runner(algo)
    fit = run(D, LINEAR, clip=1.0, center=np.zeros(d), radius=1e3, epsilon=1.0, delta=0.0, rng=np.random.default_rng(0))
    if algo == "phased_step":  # the step is sized for min(radius, step_radius): 2.5 here, the domain stays 1e3
        assert fit.info["step"] == pytest.approx(2.0 * 2.5 * min(4.0 / math.sqrt(n), 1.0 / d))
        assert fit.info["step_radius"] == 2.5
    blocks = _phase_blocks(fit)
    assert len(blocks) >= 2
    for (start, stop), eta, lam, sens in blocks:
        n_i = stop - start
        assert lam == pytest.approx(2.0 / (eta * n_i))
        # flipping a label inside the block moves that phase's exact minimizer by L eta_i
        Xb = np.zeros((n_i, d))
        Xb[:, 0] = 1.0
        yb = np.ones(n_i)
        ybp = yb.copy()
        ybp[0] = -1
        tol = 1e-6 * max(1.0, 1.0 / lam)  # the minimizer has norm ~ 1/lam: float margins scale with it
        c = solve_certified(GLMData(Xb, yb), LINEAR, lam, np.zeros(d), clip=1.0, target_distance=tol).w
        cp = solve_certified(GLMData(Xb, ybp), LINEAR, lam, np.zeros(d), clip=1.0, target_distance=tol).w
        assert np.linalg.norm(c - cp) == pytest.approx(eta, rel=1e-9)  # L eta_i with L = 1
        # claimed = exact + 2 tau, tau = max(0.1 exact, public float floor)
        tau = max(0.1 * eta, float_floor(lam, d))
        assert sens == pytest.approx(eta + 2 * tau, rel=1e-9)
        assert sens >= 1.2 * eta * (1 - 1e-12)
    # disjoint, in order
    rows = [b[0] for b in blocks]
    assert all(a[1] <= b[0] for a, b in zip(rows, rows[1:]))
    assert isinstance(fit.event, ParallelComposedEvent)
    assert epsilon_delta(fit.event) == pytest.approx((1.0, 0.0))


def test_ald_schedules_are_public():
    """Coupling: schedules, phase counts and events do not depend on the data."""
    n, d = 600, 3
    rng = np.random.default_rng(1)
    Xa, Xb = rng.standard_normal((n, d)), 50 * rng.standard_t(2, (n, d))
    ya, yb = np.sign(rng.standard_normal(n)), np.sign(rng.standard_normal(n))
    kw = dict(clip=1.0, center=np.zeros(d), radius=5.0, epsilon=0.5, delta=0.0)
    hinge = get_loss("hinge")
    fa = ald_growth_epochs(GLMData(Xa, ya), hinge, kappa_lower=2.0, rng=np.random.default_rng(2), **kw)
    fb = ald_growth_epochs(GLMData(Xb, yb), hinge, kappa_lower=2.0, rng=np.random.default_rng(3), **kw)
    assert fa.info == fb.info
    assert fa.event == fb.event
    assert fa.info["epochs"] == math.ceil(2 * math.log(n) / 1.0)
    assert fa.info["radii"] == [2.0 ** (-i) * 10.0 for i in range(fa.info["epochs"])]
    pa = phased_erm(GLMData(Xa, ya), hinge, rng=np.random.default_rng(2), **kw)
    pb = phased_erm(GLMData(Xb, yb), hinge, rng=np.random.default_rng(3), **kw)
    assert pa.info == pb.info and pa.event == pb.event


def test_growth_epochs_refuse_too_little_data_with_public_message():
    D, _ = glm_neighbours(30, 2, 0)
    with pytest.raises(ValueError, match="kappa_lower"):
        ald_growth_epochs(D, LINEAR, clip=1.0, center=np.zeros(2), radius=1.0, kappa_lower=1.05, epsilon=1.0,
                          delta=0.0, rng=np.random.default_rng(0))


def test_outputs_stay_in_domain():
    D, _ = glm_neighbours(300, 2, 0)
    for algo in (ald_localization, phased_erm):
        fit = algo(D, LINEAR, clip=1.0, center=np.ones(2), radius=0.5, epsilon=0.1, delta=0.0,
                   rng=np.random.default_rng(0))
        assert np.linalg.norm(fit.coef - np.ones(2)) <= 0.5 + 1e-12


@pytest.mark.statistical
@pytest.mark.parametrize("algo, delta", [("ald", 0.0), ("phased", 1e-5), ("phased_step", 0.0)])
def test_last_phase_release_audit(algo, delta):
    """Canary in a late block: D and D' differ in its first row; the phase's
    centre is computed by the real solver, the release by the real schedule's
    mechanism; 1e5 draws per side; the half-noise mutant must be flagged
    (``phased_step``: the step sized for step_radius, each phase calibrated to its own step)."""
    n, d, eps = 400, 1, 1.0
    D, _ = glm_neighbours(n, d, 0)
    run = _runner(algo)
    fit = run(D, LINEAR, clip=1.0, center=np.zeros(d), radius=1e3, epsilon=eps, delta=delta,
              rng=np.random.default_rng(0))
    # the last phase whose tolerance is not raised to the float floor (the audit stays tight)
    (start, stop), eta, lam, sens = [b for b in _phase_blocks(fit) if b[3] == pytest.approx(1.2 * b[1])][-1]
    n_i = stop - start
    Xb = np.ones((n_i, d))
    yb = np.ones(n_i)
    ybp = yb.copy()
    ybp[0] = -1
    c = solve_certified(GLMData(Xb, yb), LINEAR, lam, np.zeros(d), clip=1.0, target_distance=1e-4).w
    cp = solve_certified(GLMData(Xb, ybp), LINEAR, lam, np.zeros(d), clip=1.0, target_distance=1e-4).w
    rng = np.random.default_rng(11)
    for mult, flagged in ((1.0, False), (0.5, True)):
        mech = mechanism_for(sens * mult / 1.2, Budget(eps, delta), d)  # mult=0.5: half the needed noise
        a = project_on(mech.release(c, rng, size=100_000), c, cp)
        b = project_on(mech.release(cp, rng, size=100_000), c, cp)
        res = audit_gaussian_dp(a, b, eps, delta) if delta else audit_epsilon(a, b, eps)
        assert res.violation is flagged, res
