"""The "auto" row bound and label bound selected jointly (issue 16; ``LABEL_UPPER_JOINT``): one permute-and-flip
over the pairs ``(r, t)`` of the unsigned grid, utility ``U(r, t) = min(u_row(r), u_upper(t))``, at ``epsilon_row +
epsilon_t`` (``JointQuantileMechanism``; doc/privacy/quantiles.rst, "Joint selection of two quantiles").

Replacing one row moves one row norm and one label, so each utility by at most one at every grid point, and their
minimum by at most one at every pair: the selection is ``(epsilon_row + epsilon_t)``-DP, one pure event. The
pairing, its weights and its grid are decided from what was passed and n, epsilon, delta only.
"""

import warnings

import numpy as np
import pytest

from sklearn_dpsco import DPLinearRegressor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._quantile import JointQuantileMechanism, QuantileMechanism
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid
from sklearn_dpsco._mechanisms._selection import permute_and_flip_pmf
from sklearn_dpsco.accounting import BudgetAccountant, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.linear_model._auto_scales import (
    JOINT_WEIGHT,
    LABEL_CENTRE,
    LABEL_SPREAD,
    LABEL_UPPER,
    LABEL_UPPER_JOINT,
    ROW_LEVEL,
    ROW_MARGIN,
    SCALE_RANKS,
    ScaleTarget,
    centre_deviations,
    finite,
    scale_plan,
)
from sklearn_dpsco.testing import audit_epsilon

ROW = ScaleTarget("row_bound", ROW_LEVEL, ROW_MARGIN, lambda data, _: np.linalg.norm(data[0], axis=1))


class SumMutant(JointQuantileMechanism):
    """Mutant: the SUM of the two utilities (sensitivity 2: one row moves both) at the same scale ``epsilon / 2``
    (as if its sensitivity were 1): ``2 epsilon``-DP at best, not ``epsilon``."""

    def utility_from_counts(self, counts_a, n_a, counts_b, n_b):
        u_a = self.part(self.q_a)._utility_array(counts_a, n_a)
        u_b = self.part(self.q_b)._utility_array(counts_b, n_b)
        return u_a[:, None] + u_b[None, :]


def test_the_joint_target_is_the_upper_rule_on_its_own_weight():
    assert LABEL_UPPER_JOINT.joint == "row_bound" and LABEL_UPPER_JOINT.weight == JOINT_WEIGHT == 2.5
    assert (LABEL_UPPER_JOINT.q, LABEL_UPPER_JOINT.margin, LABEL_UPPER_JOINT.values) == \
        (LABEL_UPPER.q, LABEL_UPPER.margin, LABEL_UPPER.values)
    assert LABEL_UPPER_JOINT.fallback is LABEL_SPREAD and not LABEL_SPREAD.joint and not LABEL_UPPER.joint


def _pair_utilities(mechanism, X, y, centre):
    grid = mechanism.grid
    norms = np.linalg.norm(X, axis=1)
    deviations = finite(centre_deviations((X, [y], None), {"label_center": centre}))
    return mechanism.utility_from_counts(grid.counts(norms), norms.size, grid.counts(deviations), y.size)


@pytest.mark.parametrize("labels", ["continuous", "binary"])
def test_one_replaced_row_moves_the_joint_utility_by_exactly_one(labels):
    """Exact sensitivity, brute force over neighbours (every row replaced by rows of norm 0, typical or 1e9 and
    labels at the centre, on an atom or far): the minimum moves by at most 1 at every one of the 82 x 82 pairs,
    and 1 is attained; the sum mutant moves by 2 (attained), twice the sensitivity its scale assumes."""
    rng = np.random.default_rng(3)
    n, centre = 40, 0.0
    X = rng.normal(size=(n, 3)) * 2.0
    y = rng.normal(size=n) * 3.0 if labels == "continuous" else (rng.random(n) < 0.4).astype(float)
    real, mutant = JointQuantileMechanism(0.5, 0.8, 1.0), SumMutant(0.5, 0.8, 1.0)
    base_real, base_mutant = _pair_utilities(real, X, y, centre), _pair_utilities(mutant, X, y, centre)
    worst_real = worst_mutant = 0
    for i in range(n):
        for row in (np.zeros(3), np.full(3, 0.7), np.full(3, 1e9)):
            for label in (centre, 1.0, -4.0, 1e9):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = row, label
                worst_real = max(worst_real, int(np.abs(_pair_utilities(real, X2, y2, centre) - base_real).max()))
                worst_mutant = max(worst_mutant,
                                   int(np.abs(_pair_utilities(mutant, X2, y2, centre) - base_mutant).max()))
    assert worst_real == 1
    assert worst_mutant == 2


def test_the_selection_is_the_exact_permute_and_flip_over_the_flattened_pairs():
    """The release's law is permute-and-flip's over the pairs with gaps ``epsilon (U* - U) / 2`` (a small grid:
    the exact law is O(m^3)); sampled on both noise paths."""
    grid = ScaleGrid(low_exponent=0, high_exponent=2, per_octave=1)  # 0, 1, 2, 4: 16 pairs
    a, b = np.array([10.0, 3.0, 1.5, 0.5, 3.0]), np.array([10.0, 0.5, 0.5, 1.5, 10.0])
    eps, draws = 1.0, 20000
    for noise in ("secure", "float"):
        mech = JointQuantileMechanism(0.5, 0.8, eps, grid, noise=noise)
        u = mech.utility(a, b)
        law = np.asarray(permute_and_flip_pmf(eps * (u.max() - u).ravel() / 2)).reshape(u.shape)
        np.testing.assert_allclose(mech.pmf(a, b), law, atol=1e-12)
        rng = np.random.default_rng(0)
        points = list(grid.points)
        seen = np.zeros(u.shape)
        assert mech.release(a, b, np.random.default_rng(7)) == mech.release_counts(
            grid.counts(a), a.size, grid.counts(b), b.size, np.random.default_rng(7))
        counts = (grid.counts(a), a.size, grid.counts(b), b.size)  # the values enter only through these
        for _ in range(draws):
            r, t = mech.release_counts(*counts, rng)
            seen[points.index(r), points.index(t)] += 1
        assert np.abs(seen / draws - law).max() < 5 * np.sqrt(law.max() / draws)
    assert mech.event == PureDPEvent(eps)


def _scores(mechanism, a, b, order, draws, seed):
    rng = np.random.default_rng(seed)
    points = list(mechanism.grid.points)
    g = len(points)
    out = np.empty(draws)
    counts = (mechanism.grid.counts(a), a.size, mechanism.grid.counts(b), b.size)
    for k in range(draws):
        r, t = mechanism.release_counts(*counts, rng)
        out[k] = order[points.index(r) * g + points.index(t)]
    return out


def test_audit_passes_the_minimum_and_flags_the_sum_mutant():
    """Neighbours where one row's norm AND label move from 10 to 0.5 (a small grid, epsilon 2): the minimum's law
    moves by at most e^epsilon; the sum mutant's (exact log-ratio 2.64 on the event of probability 0.52 vs 0.037)
    is flagged. Scores: each mechanism's own exact log-likelihood ratio of the released pair (public to the test)."""
    grid = ScaleGrid(low_exponent=0, high_exponent=2, per_octave=1)
    a, b = np.array([10.0, 3.0, 1.5, 0.5, 3.0]), np.array([10.0, 0.5, 0.5, 1.5, 10.0])
    a2, b2 = a.copy(), b.copy()
    a2[0] = b2[0] = 0.5
    eps, draws = 2.0, 20000
    for cls, flagged in ((JointQuantileMechanism, False), (SumMutant, True)):
        mech = cls(0.5, 0.8, eps, grid)
        p, q = mech.pmf(a, b).ravel(), mech.pmf(a2, b2).ravel()
        order = np.log(p) - np.log(q)
        assert (order.max() > eps + 0.5) == flagged and (np.abs(order).max() <= eps + 1e-9) != flagged
        result = audit_epsilon(_scores(mech, a, b, order, draws, 0), _scores(mech, a2, b2, order, draws, 1), eps)
        assert result.violation == flagged, result


@pytest.mark.parametrize("n, eps, joint", [(3000, 1.0, True), (550, 1.0, True), (549, 1.0, False),
                                           (400, 1.0, False), (10**5, 0.01, True), (15146, 0.036, False)])
def test_the_plan_pairs_and_falls_back_on_public_facts_only(n, eps, joint):
    """With the row bound: weights 1, 2, 2.5 (n epsilon >= 550 gives the pair (1 + 2.5) x SCALE_RANKS ranks);
    below, LABEL_SPREAD's median rule with the weights and share of before. The plan's event is the centre's
    pure event then ONE pure event at epsilon_row + epsilon_t, the same total as the separate parts."""
    plan, _ = scale_plan((ROW, LABEL_CENTRE, LABEL_UPPER_JOINT), Budget(eps, 0.0, "float"), n)
    assert (plan.targets[2] is LABEL_UPPER_JOINT) == joint
    if not joint:
        before, _ = scale_plan((ROW, LABEL_CENTRE, LABEL_SPREAD), Budget(eps, 0.0, "float"), n)
        assert plan.joint is None and plan.event == before.event and plan.share == before.share
        return
    parts = [p.epsilon for p in plan.parts]
    assert plan.joint == (0, 2)
    assert parts[2] == pytest.approx(JOINT_WEIGHT * parts[0]) and parts[1] == pytest.approx(2 * parts[0])
    assert n * (parts[0] + parts[2]) >= (1 + JOINT_WEIGHT) * SCALE_RANKS * (1 - 1e-9)
    assert plan.event == ComposedEvent((PureDPEvent(parts[1]), PureDPEvent(parts[0] + parts[2])))
    assert sum(e.epsilon for e in plan.event.events) == pytest.approx(plan.budget.epsilon, rel=1e-12)


def test_without_a_centre_the_pair_is_the_plan_event():
    plan, _ = scale_plan((ROW, LABEL_UPPER_JOINT), Budget(1.0, 0.0, "float"), 3000)
    assert plan.joint == (0, 1) and plan.event == PureDPEvent(plan.parts[0].epsilon + plan.parts[1].epsilon)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, 3)), rng.normal(size=3000) * 5
    released, event = plan.release((X, [y], None), np.random.default_rng(1))
    assert event == plan.event and list(released) == ["row_bound", "label_bound"]


def _data(n=3000, atoms=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    z = X @ np.array([1.0, 0.5, 0.0, 0.0]) + rng.normal(size=n)
    return X, ((z > np.quantile(z, 0.7)).astype(float) if atoms else 3 * z + 40)


def test_only_where_both_bounds_are_auto():
    """A declared row bound: the label bound alone, LABEL_UPPER on weight 3 (unchanged); both "auto": the pair."""
    X, y = _data()
    declared = DPLinearRegressor(epsilon=1.0, row_bound=4.0, random_state=0).fit(X, y)
    assert declared.fit_info_["scale_rule"]["label_bound"] == "1.5 x private 0.8-quantile"
    plan = DPLinearRegressor(epsilon=1.0, row_bound=4.0)._plan(3000, 5, 1).scales
    assert plan.joint is None and [t.weight for t in plan.targets] == [2.0, 3.0]
    auto = DPLinearRegressor(epsilon=1.0, random_state=0).fit(X, y)
    assert auto.fit_info_["scale_rule"]["label_bound"] == "1.5 x private 0.8-quantile, selected jointly with row_bound"
    assert list(auto.fit_info_["scale_estimates"]) == ["row_bound", "label_center", "label_bound"]


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_delta_positive_fills_the_budget_with_the_joint_event(noise):
    """At delta > 0 the fit's event (the pair as ONE pure event) certifies the user's epsilon to within the fill's
    tolerance and never above it; the ledger holds that event."""
    X, y = _data()
    acc = BudgetAccountant(float("inf"), 1e-3)
    est = DPLinearRegressor(epsilon=1.0, delta=1e-6, noise=noise, random_state=0, accountant=acc).fit(X, y)
    certified = epsilon_delta(est.privacy_event_, delta=1e-6)[0]
    assert certified <= 1.0 and certified == pytest.approx(1.0, rel=1e-9)
    planned = DPLinearRegressor(epsilon=1.0, delta=1e-6, noise=noise)._plan(3000, 5, 1).scales
    assert planned.joint == (0, 2) and len(planned.event.events) == 2
    assert acc.ledger[-1].event == est.privacy_event_


@pytest.mark.parametrize("n, rule", [(549, "3 x private 0.5-quantile"),
                                     (550, "1.5 x private 0.8-quantile, selected jointly with row_bound")])
def test_the_rule_at_the_fallback_boundary_is_the_same_on_neighbours(n, rule):
    """At the fallback's edge (n epsilon 549 / 550), fits on 0/1 labels and on neighbours with one label at 1e300,
    one label on the centre's atom, or one row of norm 1e300 run the same rule, share, event and solver: whether
    the pair runs reads n, epsilon, the share and the weights only."""
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
        assert np.isfinite(est.label_bound_) and np.isfinite(est.row_bound_) and np.all(np.isfinite(est.coef_))
    assert all(o == outcomes[0] for o in outcomes[1:])
    assert outcomes[0][2]["label_bound"] == rule


def test_joint_quantile_checks_like_the_quantile():
    with pytest.raises(ValueError):
        JointQuantileMechanism(1.5, 0.8, 1.0)
    with pytest.raises(ValueError):
        JointQuantileMechanism(0.5, 0.8, -1.0)
    with pytest.raises(ValueError):
        JointQuantileMechanism(0.5, 0.8, 1.0).release(np.array([1.0, -1.0]), np.array([1.0, 1.0]),
                                                       np.random.default_rng(0))
    mech = JointQuantileMechanism(0.5, 0.8, 1.0)
    assert mech.part(0.8) == QuantileMechanism(0.8, 1.0)
