"""Private centring of DPHingeClassifier with a declared clip (doc/privacy/hinge.rst, "Private centring").

Every test fails if the centre were not the released mean of the rows clipped to the declared clip
(sensitivity 2C under replace-one-row), were charged outside the composed event or on failure, if
the fold were wrong, or if "auto" centred a fit its public rule leaves alone. The audit (T1)
certifies the pure-DP release of the centre on worst-case neighbouring rows and flags the
half-noise mutant.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco import BudgetAccountant, DPHingeClassifier
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import mechanism_for, row_grid_sum_sensitivity
from sklearn_dpsco.accounting import ComposedEvent, epsilon_delta
from sklearn_dpsco.linear_model._centering import (
    ROW_CENTERING_SHARE,
    ROW_CENTRE_MAX_ERROR,
    CenteringPlan,
    row_grid,
)
from sklearn_dpsco.testing import audit_epsilon, project_on


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _offset_rows(n=8000, d=6, seed=0, offset=0.7):
    """Rows of norm <= 1 far from the origin (as columns mapped onto [-1, 1] by public ranges are)."""
    rng = np.random.default_rng(seed)
    X = (offset + (1 - offset) * rng.uniform(-1, 1, (n, d))) / math.sqrt(d)
    w = rng.standard_normal(d)
    y = ((X - offset / math.sqrt(d)) @ w + 0.05 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _row_plan(n, d, C, budget=None):
    return CenteringPlan.build(budget or Budget(1.0), n, d, C, None, share=ROW_CENTERING_SHARE)


def test_row_sensitivity_is_2c_on_adversarial_neighbours():
    n, d, C = 40, 3, 0.8
    plan = _row_plan(n, d, C)
    sens = row_grid_sum_sensitivity(C, n, d, row_grid(C))
    assert plan.mechanism.sensitivity == sens and 2 * C < sens < 2 * C * (1 + 1e-8)
    rng = np.random.default_rng(2)
    worst = 0.0
    for trial in range(300):
        X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-3, 3, (n, 1))
        Xp = X.copy()
        if trial % 2:
            e = rng.standard_normal(d)
            e /= np.linalg.norm(e)
            X[7], Xp[7] = 5.0 * e, -5.0 * e
        else:
            Xp[7] = rng.standard_normal(d) * 10.0 ** rng.uniform(-5, 300)
        dist = float(np.linalg.norm(plan.total(X) - plan.total(Xp)))
        assert dist <= sens
        worst = max(worst, dist)
    assert worst == pytest.approx(2 * C, rel=1e-8)


@pytest.mark.filterwarnings("error")
def test_grid_sum_is_exact_and_does_not_depend_on_the_order_or_the_chunks():
    from sklearn_dpsco._fast._rows import clipped_row_grid_sums

    rng = np.random.default_rng(3)
    X = rng.standard_normal((5000, 4)) * 10.0 ** rng.uniform(-8, 8, (5000, 1))
    X[10] = 1e300  # squared norm overflows: counts as 0
    C = 1.5
    g = row_grid(C)
    assert g == 2.0 ** -32 and g <= C * 2.0**-32 < 2 * g  # the largest power of two at most C 2^-32
    K = clipped_row_grid_sums(X, C, g)
    perm = rng.permutation(5000)
    np.testing.assert_array_equal(K, clipped_row_grid_sums(X[perm], C, g))
    np.testing.assert_array_equal(K, clipped_row_grid_sums(X[:1234], C, g) + clipped_row_grid_sums(X[1234:], C, g))
    # against the rows clipped and rounded one by one in NumPy (exact integers)
    with np.errstate(over="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    f = np.where(np.isfinite(norms), np.minimum(1.0, C / np.maximum(norms, 1e-300)), 0.0)
    np.testing.assert_array_equal(K, np.rint(f[:, None] * X / g).astype(np.int64).sum(axis=0))


def test_pure_event_and_budget_exact():
    X, y = _offset_rows()
    acc = BudgetAccountant(epsilon=5.0)
    est = DPHingeClassifier(epsilon=1.0, clip=1.0, random_state=0, accountant=acc).fit(X, y)
    event = est.privacy_event_
    assert isinstance(event, ComposedEvent) and len(event.events) == 2
    assert epsilon_delta(event.events[0]) == pytest.approx((ROW_CENTERING_SHARE, 0.0), rel=1e-12)  # l2-Laplace
    eps, delta = epsilon_delta(event)
    assert eps == pytest.approx(1.0, rel=1e-12) and eps <= 1.0 + 1e-12 and delta == 0.0
    assert len(acc.ledger) == 1 and acc.ledger[0].event == event
    info = est.fit_info_[0]["centering"]
    assert info["share"] == ROW_CENTERING_SHARE and info["bound"] == 1.0
    assert info["expected_error"] <= ROW_CENTRE_MAX_ERROR


def test_approximate_dp_event_fills_the_budget():
    X, y = _offset_rows()
    est = DPHingeClassifier(epsilon=1.0, delta=1e-6, clip=1.0, random_state=0, accountant=_ledger()).fit(X, y)
    assert est.column_center_ is not None
    eps, delta = epsilon_delta(est.privacy_event_, delta=1e-6)
    assert eps <= 1.0 + 1e-12 and eps == pytest.approx(1.0, rel=1e-6) and delta <= 1e-6 * (1 + 1e-9)


def test_centre_is_the_clipped_row_mean_and_the_fold_is_exact(monkeypatch):
    X, y = _offset_rows()
    seen = {}
    real = CenteringPlan.total

    def spy(self, rows):
        out = real(self, rows)
        seen.update(total=out.copy(), rows=rows, plan=self)
        return out

    monkeypatch.setattr(CenteringPlan, "total", spy)
    est = DPHingeClassifier(epsilon=1.0, clip=1.0, random_state=1, accountant=_ledger()).fit(X, y)
    assert seen["rows"] is X or np.array_equal(seen["rows"], X)  # every row (one row is the privacy unit)
    assert seen["plan"].max_items is None and seen["plan"].bound == 1.0 and seen["plan"].n_users == X.shape[0]
    np.testing.assert_allclose(seen["total"], X.sum(axis=0), rtol=1e-9)  # rows within the clip: their sum
    error = est.fit_info_[0]["centering"]["expected_error"]
    assert np.linalg.norm(est.column_center_ - X.mean(axis=0)) < 5 * error
    coef = np.atleast_2d(est.coef_)
    raw = X[:40] @ coef.T + est.intercept_
    shifted = (X[:40] - est.column_center_) @ coef.T + (est.intercept_ + coef @ est.column_center_)
    np.testing.assert_allclose(raw, shifted, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("params, data", [
    ({"clip": "auto", "column_scaling": False}, "dense"),  # nothing declared: no bound to average under
    ({"clip": None}, "dense"),
    ({"clip": 1.0, "fit_intercept": False}, "dense"),
    ({"clip": 1.0, "centering": False}, "dense"),
    ({"clip": 1.0}, "sparse"),
    ({"clip": 1.0}, "small"),  # the released centre's expected error above the rule's bound
])
def test_auto_leaves_other_fits_as_before(params, data, monkeypatch):
    X, y = _offset_rows(n=300 if data == "small" else 8000)
    calls = []
    monkeypatch.setattr(CenteringPlan, "total", lambda *a, **k: calls.append(1))
    est = DPHingeClassifier(**params, random_state=0, accountant=_ledger())
    est.fit(sp.csr_matrix(X) if data == "sparse" else X, y)
    assert calls == [] and "centering" not in est.fit_info_[0]


def test_rule_reads_public_facts_only():
    # the gate is the plan's public expected error: n, d, the budget, the share
    small, big = _row_plan(300, 6, 1.0), _row_plan(8000, 6, 1.0)
    assert small.relative_error > ROW_CENTRE_MAX_ERROR >= big.relative_error
    assert big.relative_error == pytest.approx(2 * 6 / (8000 * ROW_CENTERING_SHARE), rel=1e-6)


def test_forced_centering_and_refusals_before_spending():
    X, y = _offset_rows(n=300)
    est = DPHingeClassifier(clip=1.0, centering=True, random_state=0, accountant=_ledger()).fit(X, y)
    assert est.column_center_ is not None
    acc = BudgetAccountant(epsilon=10.0)
    for params, X_ in [({"clip": "auto", "column_scaling": False}, X), ({"clip": 1.0, "fit_intercept": False}, X),
                       ({"clip": 1.0}, sp.csr_matrix(X))]:
        with pytest.raises(ValueError, match="centering=True needs"):
            DPHingeClassifier(**params, centering=True, accountant=acc).fit(X_, y)
    with pytest.raises(ValueError, match="centering=True and column scaling"):
        DPHingeClassifier(clip=1.0, column_scaling=True, centering=True, accountant=acc).fit(X, y)
    assert len(acc.ledger) == 0


def test_budget_check_happens_before_the_centre(monkeypatch):
    X, y = _offset_rows()
    calls = []
    monkeypatch.setattr(CenteringPlan, "total", lambda *a, **k: calls.append(1))
    acc = BudgetAccountant(epsilon=0.5)
    with pytest.raises(Exception, match="[Bb]udget"):
        DPHingeClassifier(epsilon=1.0, clip=1.0, accountant=acc).fit(X, y)
    assert calls == [] and len(acc.ledger) == 0


@pytest.mark.statistical
def test_centre_release_audit_with_half_noise_mutant():
    """Worst-case neighbouring rows (row 0 at +C e, then at -C e); the released sum projected on e."""
    n, d, C, eps_c = 50, 1, 1.0, 1.0
    X = np.full((n, d), 0.3)
    Xp = X.copy()
    X[0], Xp[0] = 4.0, -4.0
    plan = _row_plan(n, d, C, Budget(eps_c / ROW_CENTERING_SHARE, 0.0, "float"))
    centre, centre_p = plan.total(X), plan.total(Xp)
    assert float(np.linalg.norm(centre - centre_p)) == pytest.approx(2 * C)
    assert plan.mechanism.epsilon == pytest.approx(eps_c)
    rng = np.random.default_rng(41)
    results = []
    for f in (1.0, 0.5):  # 0.5: the mechanism told half the sensitivity (half the noise)
        mech = mechanism_for(f * plan.mechanism.sensitivity, Budget(eps_c, 0.0, "float"), d)
        a = project_on(mech.release(centre, rng, size=100_000), centre, centre_p)
        b = project_on(mech.release(centre_p, rng, size=100_000), centre, centre_p)
        results.append(audit_epsilon(a, b, eps_c, alpha=1e-6))
    assert not results[0].violation, results[0]
    assert results[1].violation, results[1]


def test_pipeline_after_a_scaler_turns_centering_off_and_restores_it():
    from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

    X, y = _offset_rows()
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(clip=1.0, random_state=0),
                            epsilon=1.0, accountant=_ledger()).fit(X, y)
    assert "centering" not in pipe[-1].fit_info_[0]  # the scaler already centred the columns
    assert pipe[-1].get_params()["centering"] == "auto"
    alone = make_dp_pipeline(DPHingeClassifier(clip=1.0, random_state=0), epsilon=1.0, accountant=_ledger()).fit(X, y)
    assert "centering" in alone[-1].fit_info_[0]
