"""The default "auto" label bound (issue 16): ``LABEL_UPPER`` = 1.5 x a private 0.8-quantile of ``|y - c|`` (ties
at the centre read 0), on 3 estimates' parts, with ``LABEL_SPREAD`` (the split median) as its fallback wherever
its part would give it fewer than ``3 x SCALE_RANKS`` ranks (linear_model/_auto_scales.py;
doc/privacy/quantiles.rst, "Use in the estimators").

Each value is a function of one row and the public centre: replacing a row moves one value, so every cumulative
grid count by at most one and the quantile utility by at most one; the weights and the fallback read only n,
epsilon, the share and the constants.
"""

import warnings

import numpy as np
import pytest

from sklearn_dpsco import DPLinearRegressor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._quantile import QuantileMechanism
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model._auto_scales import (
    LABEL_CENTRE,
    LABEL_SPREAD,
    LABEL_UPPER,
    ROW_LEVEL,
    ROW_MARGIN,
    SCALE_RANKS,
    ScaleTarget,
    centre_deviations,
    finite,
    scale_plan,
)

ROW = ScaleTarget("row_bound", ROW_LEVEL, ROW_MARGIN, lambda data, _: np.linalg.norm(data[0], axis=1))


def test_values_are_the_deviations_with_ties_at_zero():
    y = np.array([0.0, 0.0, 1.0, 0.0, -2.0])
    np.testing.assert_array_equal(centre_deviations((None, [y], None), {"label_center": 0.0}), [0, 0, 1, 0, 2])
    np.testing.assert_array_equal(centre_deviations((None, [y], None), {}), np.abs(y))
    assert LABEL_UPPER.q == 0.8 and LABEL_UPPER.margin == 1.5 and LABEL_UPPER.weight == 3.0
    assert LABEL_UPPER.fallback is LABEL_SPREAD and not LABEL_UPPER.positional


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.7, 0.9])
def test_one_replaced_row_moves_the_utility_by_at_most_one(fraction):
    """Exact sensitivity of the release's utility (level 0.8, unsigned grid) on atomic labels: replacing any row
    by a tie, an atom or a far value moves every grid point's utility by at most 1, and 1 is attained."""
    rng = np.random.default_rng(5)
    n = 150
    y = np.where(rng.random(n) < fraction, 0.0, rng.choice([1.0, 2.0, 7.5], n))
    mech = QuantileMechanism(LABEL_UPPER.q, 1.0, ScaleGrid())

    def utility(labels):
        return np.array(mech.utility(finite(centre_deviations((None, [labels], None), {"label_center": 0.0}))))

    base = utility(y)
    worst = 0
    for i in range(n):
        for value in (0.0, 1.0, -3.0, 1e9):
            y2 = y.copy()
            y2[i] = value
            diff = utility(y2) - base
            assert np.abs(diff).max() <= 1
            worst = max(worst, int(np.abs(diff).max()))
    assert worst == 1


def test_audit_passes_the_upper_rule_and_flags_the_vote_mutant(tie_vote_rule, vote_edge_audit):
    """The bound's law moves by at most e^epsilon at the vote's edge; the vote mutant's bound jumps to the grid's
    top."""
    vote_edge_audit(LABEL_UPPER, ScaleTarget("label_bound", LABEL_UPPER.q, LABEL_UPPER.margin, tie_vote_rule))


@pytest.mark.parametrize("n, eps, upper", [(3000, 1.0, True), (600, 1.0, True), (599, 1.0, False),
                                           (400, 1.0, False), (10**5, 0.01, True), (15146, 0.039, False)])
def test_the_fallback_reads_public_facts_only(n, eps, upper):
    """LABEL_UPPER runs where its part gives it 3 x SCALE_RANKS ranks (weights 1, 2, 3: n epsilon >= 600), else
    LABEL_SPREAD's median rule with the weights and share of before (1:2:1 from n epsilon 400, equal below)."""
    plan, _ = scale_plan((ROW, LABEL_CENTRE, LABEL_UPPER), Budget(eps, 0.0, "float"), n)
    assert (plan.targets[2] is LABEL_UPPER) == upper
    if upper:
        parts = [p.epsilon for p in plan.parts]
        assert parts[2] == pytest.approx(3 * parts[0]) and n * parts[2] >= 3 * SCALE_RANKS * (1 - 1e-9)
    else:
        before, _ = scale_plan((ROW, LABEL_CENTRE, LABEL_SPREAD), Budget(eps, 0.0, "float"), n)
        assert plan.share == before.share and [p.epsilon for p in plan.parts] == [p.epsilon for p in before.parts]
    # an explicit share too small for 150 ranks falls back as well
    small, _ = scale_plan((ROW, LABEL_CENTRE, LABEL_UPPER), Budget(1.0, 0.0, "float"), 3000, scale_share=0.05)
    assert small.targets[2] is LABEL_SPREAD


@pytest.mark.parametrize("zeros", [0.3, 0.5, 0.7])
@pytest.mark.parametrize("make", [lambda s: DPLinearRegressor(epsilon=1.0, random_state=s)])
def test_zero_one_labels_keep_a_bound_near_one(zeros, make):
    """Issue 16: 0/1 labels (a linear probability model) at 30-70 % zeros released bounds of 2.6e-4 .. 2e5 in
    about half the seeds (R^2 down to -7e8); the 0.8-quantile of |y - c| lands on the atom at 1."""
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.normal(size=(n, 4))
    z = X @ np.array([1.0, 0.5, 0.0, 0.0]) + rng.normal(size=n)
    y = (z > np.quantile(z, zeros)).astype(float)
    for s in range(4):
        est = make(s).fit(X, y)
        assert 1.0 <= est.label_bound_ <= 3.0, est.fit_info_["scale_estimates"]
        assert est.score(X, y) > -0.5  # before: down to -7e8 (a bound far above) or about -0.4 (the floor)


@pytest.mark.parametrize("n, rule", [(599, "3 x private 0.5-quantile"), (600, "1.5 x private 0.8-quantile")])
def test_the_rule_at_the_fallback_boundary_is_the_same_on_neighbours(n, rule):
    """At the fallback's edge (n epsilon 599 / 600 with a row bound, centre and label bound), fits on 0/1 labels
    (70 % zeros) and on neighbours with one label at 1e300, one label moved onto the centre's atom, or one row of
    norm 1e300 run the same rule, share, event and solver, warn alike, and that rule is the public plan's: the
    fallback reads n, epsilon, the share and the weights only (a rule decided from the labels, e.g. from their
    atoms, would differ between these neighbours)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = (rng.random(n) > 0.7).astype(float)
    i = int(np.flatnonzero(y == 1.0)[0])
    neighbours = [(X, y)]
    for change in ("huge label", "tie", "huge row"):
        Xm, ym = X.copy(), y.copy()
        if change == "huge label":
            ym[i] = 1e300
        elif change == "tie":
            ym[i] = 0.0
        else:
            Xm[i] *= 1e300 / np.linalg.norm(Xm[i])
        neighbours.append((Xm, ym))
    outcomes = []
    for Xm, ym in neighbours:
        est = DPLinearRegressor(epsilon=1.0, column_scaling=False, random_state=0, accountant=BudgetAccountant())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(Xm, ym)
        outcomes.append((est.privacy_event_, est.solver_, est.fit_info_["scale_rule"], est.fit_info_["scale_share"],
                         [str(w.message) for w in caught]))
        assert np.isfinite(est.label_bound_) and np.all(np.isfinite(est.coef_))
    assert all(o == outcomes[0] for o in outcomes[1:])
    assert outcomes[0][2]["label_bound"] == rule
    planned = DPLinearRegressor(epsilon=1.0, column_scaling=False)._plan(n, 4, 1).scales
    assert planned.info({})["scale_rule"] == outcomes[0][2] and planned.event == outcomes[0][0].events[0]
