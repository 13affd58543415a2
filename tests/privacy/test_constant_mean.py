"""DPLinearRegressor's intercept-only release at the label mean (doc/privacy/quantiles.rst, "The constant at the
label mean"; sklearn_dpsco/linear_model/_constant_mean.py).

T0: the rule reads public facts only and only DPLinearRegressor with an "auto" label bound and an intercept takes
it; the quantized clipped-label sum moves by at most 2 QUANT when one row is replaced, EXACTLY 2 QUANT on the
worst-case pair, through the fit's own block code (clip, weights, quantization); the plan's Laplace release is
calibrated to that sensitivity on MEAN_CONSTANT_SHARE of epsilon and the three releases compose to exactly the
fit's epsilon (no delta); the fitted intercept is ``c + B m`` of the released centre, spread and mean (folded
back, nothing else read); the same event on other data of the same shape. T1: the plan's release on the
worst-case pair of sums, audited (sklearn_dpsco.testing.audit_release_with_mutants), the half-noise mutant
(the sensitivity taken as QUANT) flagged. Utility: on skewed labels the mean is closer to the labels' mean than
the centre-only release.
"""

import math

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._solvers._adassp_selection import QUANT
from sklearn_dpsco.accounting import BudgetAccountant, ComposedEvent, epsilon_delta
from sklearn_dpsco.linear_model import _constant_mean
from sklearn_dpsco.linear_model._auto_scales import SCALE_RANKS
from sklearn_dpsco.linear_model._constant_mean import (MEAN_CONSTANT_SHARE, _block_label_sum, mean_constant_applies,
                                                       mean_constant_plan)


def _ledger():
    return BudgetAccountant(epsilon=math.inf, delta=1.0)


def _data(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = 50.0 + 20.0 * rng.exponential(size=n)  # skewed labels far from 0: the median is not the mean
    return X, y


def _fit(n, eps, seed=0, cls=DPLinearRegressor, **kw):
    X, y = _data(n, seed)
    return cls(epsilon=eps, random_state=seed, accountant=_ledger(), **kw).fit(X, y), X, y


def _info(est):
    return est.fit_info_ if isinstance(est.fit_info_, dict) else est.fit_info_[0]


# ------------------------------------------------------------------ T0: the rule
def test_the_rule_is_public_and_gives_the_spread_its_ranks():
    # the spread's part: n eps (1 - share) / 3 >= SCALE_RANKS, i.e. n eps >= 250 at share 0.4
    threshold = 3.0 * SCALE_RANKS / (1.0 - MEAN_CONSTANT_SHARE)
    assert threshold == pytest.approx(250.0)
    for n, eps in [(250, 1.0), (125, 2.0), (500, 0.5), (399, 1.0), (2500, 0.1)]:
        assert mean_constant_applies(n, eps)
    for n, eps in [(249, 1.0), (124, 2.0), (100, 1.0), (60, 1.0)]:
        assert not mean_constant_applies(n, eps)


@pytest.mark.parametrize("n,eps,expected", [(300, 1.0, True), (390, 1.0, True), (200, 1.0, False), (150, 2.0, True)])
def test_only_the_least_squares_constant_takes_the_mean(n, eps, expected):
    est, _, _ = _fit(n, eps)
    assert est.solver_ == "intercept_only"
    assert bool(_info(est).get("label_mean", False)) is expected
    assert set(_info(est)["scale_estimates"]) == ({"label_center", "label_bound"} if expected else {"label_center"})
    # absolute loss: the growth regressor's constant stays the median (its rule: n epsilon < 300 at 4 coefficients)
    growth, _, _ = _fit(min(n, int(290 / eps)), eps, cls=DPGrowthAdaptiveRegressor)
    assert growth.solver_ == "intercept_only" and "label_mean" not in _info(growth)
    declared, _, _ = _fit(n, eps, label_bound=100.0)  # a declared label bound: as before (here AdaSSP)
    assert not (declared.solver_ == "intercept_only" and _info(declared).get("label_mean"))
    no_intercept, _, _ = _fit(n, eps, fit_intercept=False)  # no centre: the zero model, as before
    assert not _info(no_intercept).get("label_mean") and no_intercept.intercept_ == 0.0


# ------------------------------------------------------------------ T0: sensitivity of the sum
def test_worst_case_pair_attains_the_sensitivity_exactly():
    y = np.zeros(20)
    y[0] = 5.0  # clipped to +1 (the fit's units (y - c) / B): term +QUANT
    y2 = y.copy()
    y2[0] = -7.0  # clipped to -1: term -QUANT
    assert _block_label_sum(None, y, None) - _block_label_sum(None, y2, None) == 2 * QUANT
    w = np.ones(20)
    assert _block_label_sum(None, y, w) - _block_label_sum(None, y2, w) == 2 * QUANT


def test_random_and_adversarial_neighbours_stay_within_the_sensitivity():
    rng = np.random.default_rng(5)
    for trial in range(400):
        y = rng.standard_normal(40) * rng.choice([0.3, 1.0, 1e12])
        w = rng.uniform(0, 1, 40) if trial % 2 else None
        y2, w2 = y.copy(), None if w is None else w.copy()
        i = rng.integers(40)
        y2[i] = rng.standard_normal() * rng.choice([1.0, 1e15, np.inf])
        if w2 is not None:
            w2[i] = rng.choice([0.0, 1.0, 7.0, rng.uniform()])  # weights above 1 are clipped to 1
        assert abs(_block_label_sum(None, y, w) - _block_label_sum(None, y2, w2)) <= 2 * QUANT


# ------------------------------------------------------------------ T0: calibration and composition
@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_plan_release_is_calibrated_and_composes_to_the_budget(noise, delta):
    eps = 1.3
    scales, plan = mean_constant_plan(4, 300, Budget(eps, delta, noise), {"algorithm": "intercept_only"})
    m = plan.mechanism
    assert m.sensitivity == 2 * QUANT and m.epsilon == pytest.approx(MEAN_CONSTANT_SHARE * eps, rel=1e-12)
    assert [t.name for t in scales.targets] == ["label_center", "label_bound"]
    assert scales.budget.epsilon == pytest.approx((1 - MEAN_CONSTANT_SHARE) * eps, rel=1e-12)
    spent = epsilon_delta(ComposedEvent((scales.event, plan.event)), delta=0.0)
    assert spent[0] <= eps and spent[0] == pytest.approx(eps, rel=1e-12) and spent[1] == 0.0
    assert mean_constant_plan(4, 200, Budget(1.0), {}) is None  # below the rule: the centre-only plan


def test_the_fit_spends_its_epsilon_once_and_the_event_is_public():
    a, _, _ = _fit(300, 1.0, seed=0)
    X, y = _data(300, seed=9)
    b = DPLinearRegressor(epsilon=1.0, random_state=4, accountant=_ledger()).fit(X * 1e3, -y)
    assert a.privacy_event_ == b.privacy_event_
    assert a.epsilon_spent_ == pytest.approx(1.0, rel=1e-12) and a.epsilon_spent_ <= 1.0 and a.delta_spent_ == 0.0


class _Exact:
    """A mutant 'mechanism' without noise: the fit's intercept must then be the exact clipped mean, folded back."""

    def __init__(self, real):
        self.real = real
        self.event = real.event

    def release(self, value, rng):
        return np.asarray(value, dtype=float)


def test_the_intercept_is_the_folded_release_of_the_clipped_mean(monkeypatch):
    real = _constant_mean.laplace_mechanism_for
    monkeypatch.setattr(_constant_mean, "laplace_mechanism_for", lambda *a: _Exact(real(*a)))
    est, X, y = _fit(300, 1.0, seed=2)
    c, B = est.label_center_, est.label_bound_
    assert c == _info(est)["scale_estimates"]["label_center"] and B == _info(est)["scale_estimates"]["label_bound"]
    terms = np.floor(np.clip((y - c) / B, -1.0, 1.0) * QUANT)
    m = float(np.clip(terms.sum() / (QUANT * len(y)), -1.0, 1.0))
    assert est.intercept_ == pytest.approx(c + B * m, rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(est.coef_, np.zeros(X.shape[1]))
    np.testing.assert_allclose(est.predict(X), np.full(len(y), est.intercept_))


# ------------------------------------------------------------------ T1: the release, audited
@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["secure", "float"])
def test_label_mean_release_audit_with_mutants(noise):
    """The plan's own mechanism on the worst-case pair of sums (``S`` and ``S + 2 QUANT``), 1e5 releases a side
    through its release path: the certified epsilon stays below the mean's part; the half-noise mutant (the
    sensitivity taken as QUANT) is flagged."""
    from sklearn_dpsco._mechanisms._calibrate import laplace_mechanism_for
    from sklearn_dpsco.testing import audit_release_with_mutants

    _, plan = mean_constant_plan(4, 1000, Budget(2.5, 0.0, noise), {})
    eps_mean = MEAN_CONSTANT_SHARE * 2.5
    assert plan.mechanism.epsilon == pytest.approx(eps_mean, rel=1e-12)

    def make(f):  # f times the plan's noise, by claiming f times its sensitivity; f = 1: the plan's mechanism
        m = laplace_mechanism_for(2.0 * QUANT * f, Budget(plan.mechanism.epsilon, 0.0, noise), 1)
        assert f != 1 or (m.sensitivity, m.scale) == (plan.mechanism.sensitivity, plan.mechanism.scale)
        return m

    S = float(-41 * QUANT)
    ok, mutants = audit_release_with_mutants(make, [S], [S + 2 * QUANT], eps_mean, 0.0, statistic="epsilon",
                                             n_draws=100_000, rng=np.random.default_rng(23), factors=(0.5,))
    assert not ok.violation, str(ok)
    assert mutants["x0.5"].violation, str(mutants["x0.5"])


# ------------------------------------------------------------------ utility
def test_on_skewed_labels_the_mean_is_closer_to_the_labels_mean_than_the_centre(monkeypatch):
    mean_gap, centre_gap = [], []
    for seed in range(12):
        est, _, y = _fit(300, 1.0, seed=seed)
        mean_gap.append(abs(est.intercept_ - y.mean()))
    monkeypatch.setattr(_constant_mean, "mean_constant_applies", lambda n, eps: False)
    for seed in range(12):
        est, _, y = _fit(300, 1.0, seed=seed)
        assert "label_mean" not in _info(est)
        centre_gap.append(abs(est.intercept_ - y.mean()))
    # exponential labels (sd 20): the median sits 0.31 sd below the mean; the released mean within ~0.1 sd
    assert np.mean(mean_gap) < 0.5 * np.mean(centre_gap), (np.mean(mean_gap), np.mean(centre_gap))
