"""AdaSSP's two-candidate guard (doc/privacy/adassp.rst, "Guard at few ranks").

T0: the public rule (where the full choice does not run, ``d >= GUARD_MIN_FEATURES``, ``m < GUARD_BELOW``,
``n epsilon GUARD_SHARE >= GUARD_MIN_RANKS``); the plan carves ``GUARD_SHARE`` of AdaSSP's epsilon (after the
label mean) and composes to exactly the budget; the candidates are AdaSSP's own model and the zero model only;
the utilities read through the guard plan's own clipped blocks move by EXACTLY QUANT on a worst-case pair and
by at most QUANT on random and adversarial neighbours; the estimator runs it in memory (not when streaming) and
spends the user's epsilon.
T1: the secure guard choice on the worst-case pair passes its epsilon audit (1e5 draws per side) and the mutant
with half the sensitivity (twice the epsilon) is flagged.
"""

import math

import numpy as np
import pytest

from sklearn_dpsco._solvers import adassp_plan
from sklearn_dpsco._solvers import _adassp_selection as S
from sklearn_dpsco._solvers._adassp import run_adassp
from sklearn_dpsco._solvers._adassp_selection import (
    GUARD_BELOW,
    GUARD_MIN_FEATURES,
    GUARD_MIN_RANKS,
    GUARD_SHARE,
    LOSS_FRACTION,
    RidgeSelection,
    guard_applies,
    mean_share,
    selection_applies,
)
from sklearn_dpsco._solvers import ArraySource
from sklearn_dpsco.accounting import epsilon_delta
from sklearn_dpsco.linear_model import DPLinearRegressor
from sklearn_dpsco.testing import epsilon_lower_bound_from_counts


def _guard_plan(n=50, d=5, eps=2.0, delta=0.0, R=1.0, B=1.0, s=0.25, recentre=False):
    return adassp_plan(n, d, epsilon=eps, delta=delta, row_bound=R, label_bound=B, intercept_scaling=s,
                       guard=True, recentre=recentre)


def _worst_pair(n=20):
    """Two candidates (theta_a predicts 0, theta_b predicts 1 on x~ = (0, .., 0, s)); a row that costs L to a
    and 0 to b, replaced by one that costs 0 to a and L to b."""
    plan = _guard_plan(n=n, d=5)
    s = plan.intercept_scaling
    thetas = np.array([[0.0] * 5, [0.0] * 4 + [1.0 / s]])
    X = np.zeros((n, 4))
    y = np.zeros(n)
    y[: n // 2] = 1.0
    y2 = y.copy()
    y2[0] = 0.0
    return plan, thetas, X, y, y2


def test_public_rule():
    d = 11
    # never where the full choice runs
    for n, eps in ((1000, 1.0), (10**5, 1.0), (309, 1.0), (150, 2.0), (50, 0.5)):
        assert not (guard_applies(n, d, eps) and selection_applies(n, d, eps))
    # the ranks floor, the m ceiling and the smallest d
    n_small = math.ceil(GUARD_MIN_RANKS / GUARD_SHARE) - 1
    assert not guard_applies(n_small, d, 1.0) and guard_applies(n_small + 2, d, 1.0)
    assert guard_applies(int(GUARD_BELOW * d) - 1, d, 1.0) and not guard_applies(int(GUARD_BELOW * d) + 1, d, 1.0)
    assert guard_applies(100, GUARD_MIN_FEATURES, 1.0) and not guard_applies(100, GUARD_MIN_FEATURES - 1, 1.0)
    assert not guard_applies(10**6, d, math.inf)
    # diabetes (309 rows, 11 coefficients) at AdaSSP's epsilon at 0.5 / 1 / 2 after the scale estimates
    assert guard_applies(309, 11, 0.515) and guard_applies(309, 11, 1.03)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("recentre", [False, True])
def test_event_composes_statistics_and_choice_to_the_budget(delta, recentre):
    n, eps = 600, 0.7
    plan = _guard_plan(n=n, d=6, eps=eps, delta=delta, recentre=recentre)
    assert plan.selection.guard and plan.info["ridge_guard"] is True
    left = 1.0 - (mean_share(n, eps) if recentre else 0.0)
    assert plan.selection.epsilon == pytest.approx(GUARD_SHARE * left * eps, rel=1e-12)
    got, _ = epsilon_delta(plan.event, delta=delta or None)
    assert got <= eps * (1 + 1e-12)
    if not delta:
        assert got == pytest.approx(eps, rel=1e-9)
    # the full choice wins when both are asked for (its rule excludes the guard's anyway)
    both = adassp_plan(n, 6, epsilon=eps, delta=delta, row_bound=1.0, label_bound=1.0, intercept_scaling=0.25,
                       guard=True, select=True)
    assert not both.selection.guard


def test_candidates_are_adassp_and_zero_only(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4)) / 4
    y = X @ np.array([0.3, -0.2, 0.1, 0.0]) + 0.1 * rng.standard_normal(200)
    seen = []
    real = RidgeSelection.utilities

    def spy(self, source, clip_block, thetas):
        seen.append(np.array(thetas))
        return real(self, source, clip_block, thetas)

    monkeypatch.setattr(RidgeSelection, "utilities", spy)
    plan = _guard_plan(n=200, d=5, eps=1.0)
    theta, ridge = run_adassp(ArraySource(X, y, None), plan, np.random.default_rng(1))
    (thetas,) = seen
    assert thetas.shape == (2, 5)
    np.testing.assert_array_equal(thetas[1], np.zeros(5))
    assert any(np.array_equal(theta, t) for t in thetas)


def test_worst_case_pair_attains_the_sensitivity_exactly(check_worst_pair):
    plan, thetas, X, y, y2 = _worst_pair()
    assert LOSS_FRACTION * plan.label_bound**2 == 0.25
    check_worst_pair(plan, thetas, X, y, y2)


def test_random_and_adversarial_neighbours_stay_within_the_sensitivity(check_random_neighbours):
    def candidates(rng):
        thetas = np.zeros((2, 4))
        thetas[0] = rng.standard_normal(4) * rng.choice([0.1, 1.0, 1e8])
        return thetas

    check_random_neighbours(_guard_plan(n=40, d=4, R=1.5, B=2.0, s=0.4), np.random.default_rng(5), candidates)


def test_estimator_runs_the_guard_in_memory_not_when_streaming():
    rng = np.random.default_rng(2)
    n, p = 309, 10
    X = 50.0 + 10.0 * rng.standard_normal((n, p))  # raw columns far from 0, below the column map's gate
    y = 150.0 + X @ rng.standard_normal(p) + 40.0 * rng.standard_normal(n)
    est = DPLinearRegressor(epsilon=2.0, random_state=0).fit(X, y)  # n epsilon 618 (below 400: intercept-only)
    assert est.solver_ == "adassp" and est.fit_info_.get("ridge_guard") is True
    assert est.fit_info_["ridge_selection"] is True and est.epsilon_spent_ == pytest.approx(2.0)
    auto_label = DPLinearRegressor(epsilon=1.0, solver="adassp", row_bound=1.0)
    assert auto_label._plan(n, p + 1, 1).schedule.selection.guard
    # a declared label bound: no label centre, the zero model would predict 0: no guard
    decl = DPLinearRegressor(epsilon=1.0, solver="adassp", row_bound=1.0, label_bound=1.0)
    assert decl._plan(n, p + 1, 1).schedule.selection is None
    assert decl._plan(n, p + 1, 1, streaming=True).schedule.selection is None


def test_guard_constants_are_the_documented_ones():
    assert (S.GUARD_SHARE, S.GUARD_MIN_RANKS, S.GUARD_BELOW, S.GUARD_MIN_FEATURES) == (0.2, 10.0, 50.0, 5)


@pytest.mark.statistical
def test_secure_guard_passes_its_audit_and_the_double_epsilon_mutant_is_flagged(selection_utilities):
    """Worst-case pair through the guard plan's blocks; events fixed in advance (each candidate chosen)."""
    plan, thetas, X, y, y2 = _worst_pair(n=20)
    u1, u2 = selection_utilities(plan, X, y, None, thetas), selection_utilities(plan, X, y2, None, thetas)
    rng = np.random.default_rng(12)
    draws = 100_000
    for mult, flagged in ((1.0, False), (0.5, True)):
        eps = 2.0
        sel = RidgeSelection(eps / mult, "secure", guard=True)
        a1 = np.asarray(sel.select(u1, rng, size=draws))
        a2 = np.asarray(sel.select(u2, rng, size=draws))
        lb = max(epsilon_lower_bound_from_counts(int((a2 == 0).sum()), draws, int((a1 == 0).sum()), draws),
                 epsilon_lower_bound_from_counts(int((a1 == 1).sum()), draws, int((a2 == 1).sum()), draws))
        assert (lb > eps) is flagged, (mult, lb)
