"""The choice between AdaSSP and Phased-ERM (doc/privacy/adassp.rst, "Choice between AdaSSP and Phased-ERM").

T0: the public rule; the composite plan's event composes Phased-ERM, AdaSSP's releases and the choice to exactly
the budget (both noise paths) with the documented shares; the choice's utilities over the composite's candidate
set (the ridge candidates plus a fixed Phased-ERM model) move by at most QUANT on random and adversarial
neighbours and by EXACTLY QUANT on a worst-case pair; the Phased-ERM candidate is moved into the recentred
labels' units and back, so a chosen candidate is released as Phased-ERM gave it; the estimator spends the user's
epsilon, and explicit ``solver="adassp"``, ``delta > 0`` and streaming fits keep plain AdaSSP.
T1: the secure choice at the composite's share on the worst-case pair passes its epsilon audit (1e5 draws per
side) and the double-epsilon mutant is flagged.
"""

import math

import numpy as np
import pytest

from sklearn_dpsco._budget import Budget
from sklearn_dpsco._solvers import ArraySource, GLMData, Problem, get_loss
from sklearn_dpsco._solvers import _adassp as AD
from sklearn_dpsco._solvers._adassp import run_adassp
from sklearn_dpsco._solvers._adassp_selection import (
    PHASED_CHOICE_SELECTION_SHARE,
    PHASED_CHOICE_SHARE,
    SELECTION_MIN_RANKS,
    RidgeSelection,
    mean_share,
)
from sklearn_dpsco._solvers._builders import _least_squares as LSB
from sklearn_dpsco._solvers._builders._least_squares import AdaSSPChoicePlan, adassp, phased_erm
from sklearn_dpsco.accounting import epsilon_delta
from sklearn_dpsco.linear_model import DPLinearRegressor
from sklearn_dpsco.linear_model._least_squares_rules import phased_choice_applies
from sklearn_dpsco.testing import epsilon_lower_bound_from_counts


def _params(R=1.0, B=1.0, s=0.25, recentre=False):
    return {"row_bound": R, "label_bound": B, "intercept_scaling": s, "clip": 0.1, "radius": 10.0, "steps": "jnn",
            "smoothness": None, "growth": None, "moment": None, "moment_order": 2.0, "ridge_selection": True,
            "recentre_labels": recentre, "phased_choice": True, "step_radius": 2.5}


def _composite(n=400, d=6, eps=1.0, noise="secure", **kw):
    return adassp(n, d, Budget(eps, 0.0, noise), _params(**kw)).schedule


def test_public_rule():
    n, d, eps = 3000, 10, 1.0  # m = 300 < 500, n eps 0.2 = 600 ranks
    assert phased_choice_applies("auto", "adassp", n, d, eps, 0.0)
    assert not phased_choice_applies("adassp", "adassp", n, d, eps, 0.0)  # an explicit solver is kept
    assert not phased_choice_applies("auto", "phased_erm", n, d, eps, 0.0)
    assert not phased_choice_applies("auto", "adassp", n, d, eps, 1e-6)  # approximate DP: not measured
    assert not phased_choice_applies("auto", "adassp", n, d, eps, 0.0, streaming=True)
    assert not phased_choice_applies("auto", "adassp", 10**6, d, eps, 0.0)  # m >= 1e4: the table's AdaSSP
    assert not phased_choice_applies("auto", "adassp", n, d, math.inf, 0.0)
    # the small-d branch: d <= 4 with "auto" bounds, d <= 5 declared
    n = 1500  # m = 375 / 300 at d = 4 / 5
    assert not phased_choice_applies("auto", "adassp", n, 4, eps, 0.0)
    assert phased_choice_applies("auto", "adassp", n, 5, eps, 0.0)
    # declared bounds: not where it was measured, and it lost there (Wages, Computers, diabetes scaled)
    assert not phased_choice_applies("auto", "adassp", n, 6, eps, 0.0, bounds_auto=False)
    # the choice's ranks
    n_small = math.ceil(SELECTION_MIN_RANKS / PHASED_CHOICE_SELECTION_SHARE) - 1
    assert not phased_choice_applies("auto", "adassp", n_small, d, 1.0, 0.0)
    assert phased_choice_applies("auto", "adassp", n_small + 1, d, 1.0, 0.0)


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("recentre", [False, True])
def test_event_composes_to_the_budget_with_the_documented_shares(noise, recentre):
    eps = 0.8
    plan = _composite(n=3000, d=10, eps=eps, noise=noise, recentre=recentre)
    assert isinstance(plan, AdaSSPChoicePlan) and plan.info["phased_choice"] is True
    assert epsilon_delta(plan.event)[0] == pytest.approx(eps, rel=1e-9)
    assert epsilon_delta(plan.phased.event)[0] == pytest.approx(PHASED_CHOICE_SHARE * eps, rel=1e-9)
    assert epsilon_delta(plan.adassp.event)[0] == pytest.approx((1 - PHASED_CHOICE_SHARE) * eps, rel=1e-9)
    # the choice's share of the solver's epsilon, of what the label mean leaves when it is released first
    left = 1.0 - (mean_share(3000, (1 - PHASED_CHOICE_SHARE) * eps) if recentre else 0.0)
    assert plan.adassp.selection.epsilon == pytest.approx(PHASED_CHOICE_SELECTION_SHARE * eps * left, rel=1e-9)
    assert (plan.adassp.mech_mean is not None) is recentre
    assert plan.adassp.selection.noise == noise


def _worst_pair(n=20, eps=1.0):
    """The ridge candidate predicting 0 and a Phased-ERM candidate predicting 1 on x~ = (0, 0, s): a row that
    costs L to the first and 0 to the second, replaced by the swapped row."""
    plan = _composite(n=n, d=3, eps=eps).adassp
    s = plan.intercept_scaling
    thetas = [np.zeros(3), np.array([0.0, 0.0, 1.0 / s])]
    X = np.zeros((n, 2))
    y = np.zeros(n)
    y[: n // 2] = 1.0
    y2 = y.copy()
    y2[0] = 0.0
    return plan, thetas, X, y, y2


def test_worst_case_pair_attains_the_sensitivity_exactly(check_worst_pair):
    plan, thetas, X, y, y2 = _worst_pair()
    check_worst_pair(plan, thetas, X, y, y2)


def test_random_and_adversarial_neighbours_stay_within_the_sensitivity(check_random_neighbours):
    def candidates(rng):
        # ridge-like candidates and a Phased-ERM model of any size (a release: fixed before the scores)
        thetas = list(rng.standard_normal((4, 4)) * rng.choice([0.1, 1.0, 1e8]))
        thetas.append(rng.standard_normal(4) * rng.choice([1.0, 1e3, 1e12]))
        return thetas

    check_random_neighbours(_composite(n=40, d=4, eps=4.0, R=1.5, B=2.0, s=0.4).adassp, np.random.default_rng(7),
                            candidates)


def test_the_phased_candidate_is_scored_in_the_recentred_units_and_released_as_given(monkeypatch):
    rng = np.random.default_rng(3)
    n, p = 2000, 5
    X = rng.uniform(-1, 1, (n, p)) / math.sqrt(p)
    y = X @ rng.standard_normal(p) * 0.3 + 0.4 + 0.05 * rng.standard_normal(n)
    plan = _composite(n=n, d=p + 1, eps=2.0, noise="float", recentre=True).adassp
    assert plan.mech_mean is not None
    s = plan.intercept_scaling
    Xs = np.hstack([X, np.full((n, 1), s)])
    theta_pe = np.append(rng.standard_normal(p) * 0.1, 0.4 / s)
    seen = {}
    orig_utilities = RidgeSelection.utilities

    def spy(self, source, clip_block, thetas):
        seen["shift"] = clip_block.args[0].label_shift
        seen["last"] = np.array(thetas[-1])
        return orig_utilities(self, source, clip_block, thetas)

    monkeypatch.setattr(RidgeSelection, "utilities", spy)
    monkeypatch.setattr(RidgeSelection, "select", lambda self, u, rng, size=None: len(u) - 1)
    src = ArraySource(X, y, None)
    theta, _ = run_adassp(src, plan, np.random.default_rng(0), extra_candidates=(("phased_erm", theta_pe),))
    assert seen["shift"] != 0.0
    np.testing.assert_allclose(seen["last"][:-1], theta_pe[:-1], rtol=0, atol=0)
    assert seen["last"][-1] == pytest.approx(theta_pe[-1] - seen["shift"] / s, rel=1e-15)
    np.testing.assert_allclose(theta, theta_pe, rtol=1e-14, atol=1e-14)  # chosen: released as Phased-ERM gave it
    assert Xs.shape[1] == plan.d


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_the_offered_candidate_is_the_phased_erm_release_on_its_share(monkeypatch, noise):
    """The composite's candidate is exactly what Phased-ERM releases on ``PHASED_CHOICE_SHARE`` of the budget
    (draw for draw: the same generator state, a plan built independently on that share), read before AdaSSP
    reads the rows. The event tests above check the plan's arithmetic only (``SchedulePlan.run`` reports the
    plan's event whatever ran); this catches a run that offers another point under that event: a Phased-ERM run
    on the whole budget, its noise-free centre, or a candidate fitted on the rows without noise."""
    rng = np.random.default_rng(4)
    n, p, eps = 1500, 5, 1.0
    X = rng.uniform(-1, 1, (n, p)) / math.sqrt(p)
    y = X @ rng.standard_normal(p) * 0.5 + 0.2 + 0.1 * rng.standard_normal(n)
    params = _params()
    problem = Problem(GLMData(X, y, None, params["intercept_scaling"]), get_loss("squared"), params["radius"])
    seen = []
    original = LSB.run_adassp

    def spy(source, plan, rng, *, statistics=None, extra_candidates=()):
        seen.append([(name, np.array(theta)) for name, theta in extra_candidates])
        return original(source, plan, rng, statistics=statistics, extra_candidates=extra_candidates)

    monkeypatch.setattr(LSB, "run_adassp", spy)
    composite = adassp(n, p + 1, Budget(eps, 0.0, noise), params)
    assert isinstance(composite.schedule, AdaSSPChoicePlan)
    composite.run(problem, np.random.default_rng(11))
    reference = phased_erm(n, p + 1, Budget(PHASED_CHOICE_SHARE * eps, 0.0, noise), params)
    assert reference.event == composite.schedule.phased.event
    released = reference.run(problem, np.random.default_rng(11)).coef
    assert len(seen) == 1 and [name for name, _ in seen[0]] == ["phased_erm"]
    np.testing.assert_array_equal(seen[0][0][1], released)
    # the release is noisy: another draw gives another candidate (not a deterministic function of the rows)
    other = reference.run(problem, np.random.default_rng(12)).coef
    assert not np.array_equal(other, released)


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_estimator_spends_the_users_epsilon(noise):
    rng = np.random.default_rng(1)
    n, p = 3000, 9
    X = rng.uniform(-1, 1, (n, p)) * np.array([1.0] * (p - 1) + [100.0])
    y = X[:, 0] - 0.5 * X[:, 1] + 0.01 * X[:, -1] + 0.3 * rng.standard_normal(n) + 5.0
    est = DPLinearRegressor(epsilon=1.0, noise=noise, random_state=0).fit(X, y)
    assert est.solver_ == "adassp" and est.fit_info_["phased_choice"] is True
    assert est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9)
    assert np.all(np.isfinite(est.coef_)) and np.isfinite(est.intercept_)
    other = DPLinearRegressor(epsilon=1.0, noise=noise, random_state=0, solver="adassp").fit(X, y)
    assert not other.fit_info_.get("phased_choice", False)
    # at delta > 0 the fit takes the pure plan where it runs the choice (DPLinearRegressor._pure_choice_plan)
    other = DPLinearRegressor(epsilon=1.0, delta=1e-6, noise=noise, random_state=0).fit(X, y)
    assert other.fit_info_.get("phased_choice") is True
    np.testing.assert_array_equal(other.coef_, est.coef_)


def test_streaming_keeps_plain_adassp():
    est = DPLinearRegressor(epsilon=1.0, row_bound=1.0, label_bound=1.0, random_state=0)
    plan = est._plan(3000, 10, 1, streaming=True)
    assert not isinstance(plan.schedule, AdaSSPChoicePlan)


def test_plain_adassp_plan_is_unchanged_without_the_rule():
    params = {**_params(), "phased_choice": False}
    plan = adassp(3000, 10, Budget(1.0, 0.0, "secure"), params).schedule
    assert isinstance(plan, AD.AdaSSPPlan)


@pytest.mark.statistical
def test_secure_choice_at_the_composite_share_passes_its_audit_and_the_mutant_is_flagged(selection_utilities):
    """Worst-case pair over a ridge candidate and a Phased-ERM candidate; the composite's own selection (epsilon
    0.2 x 10 = 2, within the audit's power range) and its double-epsilon mutant."""
    plan, thetas, X, y, y2 = _worst_pair(n=20, eps=10.0)
    eps = plan.selection.epsilon
    assert eps == pytest.approx(2.0, rel=1e-9)
    u1, u2 = selection_utilities(plan, X, y, None, thetas), selection_utilities(plan, X, y2, None, thetas)
    rng = np.random.default_rng(13)
    draws = 100_000
    for sel, flagged in ((plan.selection, False), (RidgeSelection(2.0 * eps, "secure"), True)):
        a1 = np.asarray(sel.select(u1, rng, size=draws))
        a2 = np.asarray(sel.select(u2, rng, size=draws))
        lb = max(epsilon_lower_bound_from_counts(int((a2 == 0).sum()), draws, int((a1 == 0).sum()), draws),
                 epsilon_lower_bound_from_counts(int((a1 == 1).sum()), draws, int((a2 == 1).sum()), draws))
        assert (lb > eps) is flagged, (flagged, lb)
