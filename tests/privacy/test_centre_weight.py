"""The label centre's double part of the scale budget and its fine grid (linear_model/_auto_scales.py,
``CENTRE_WEIGHT``, ``centre_grid``; doc/privacy/quantiles.rst, "The label centre's double part").

The estimates' epsilon parts are proportional to public weights (the centre 2, the others 1): the parts and
the fit's event are functions of n, epsilon and the constants only; each release is the quantile mechanism
on its own part (utility sensitivity exactly 1); the pure parts add up to at most the scale epsilon.
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco.accounting import BudgetAccountant, ComposedEvent, PureDPEvent
from sklearn_dpsco.linear_model._auto_scales import (
    CENTRE_GRID,
    CENTRE_WEIGHT,
    CLIP_LEVEL,
    FINE_CENTRE_GRID,
    FINE_CENTRE_RANKS,
    LABEL_CENTRE,
    LABEL_SPREAD,
    ROW_LEVEL,
    ROW_MARGIN,
    SCALE_RANKS,
    ScalePlan,
    ScaleTarget,
    centre_grid,
    default_scale_share,
    scale_plan,
    trivial_scale_plan,
)
from sklearn_dpsco.testing import audit_epsilon

ROW = ScaleTarget("row_bound", ROW_LEVEL, ROW_MARGIN, lambda data, _: np.linalg.norm(data[0], axis=1))
REGRESSION = (ROW, LABEL_CENTRE, LABEL_SPREAD)


@pytest.mark.parametrize("n, eps", [(2000, 1.0), (400, 1.0), (350, 1.0), (10**5, 1.0), (15146, 0.1), (309, 1.0)])
def test_parts_follow_the_public_weights(n, eps):
    plan, rest = scale_plan(REGRESSION, Budget(eps, 0.0, "float"), n)
    parts = [p.epsilon for p in plan.parts]
    assert CENTRE_WEIGHT == 2.0
    weighted = 4 * SCALE_RANKS <= 0.5 * n * eps  # the weighted share is not capped
    assert plan.share == (default_scale_share(n, eps, 4.0) if weighted else default_scale_share(n, eps, 3))
    assert sum(parts) <= plan.budget.epsilon and plan.budget.epsilon + rest.epsilon <= eps
    assert parts[1] == pytest.approx((2.0 if weighted else 1.0) * parts[0], rel=1e-12) and parts[0] == parts[2]
    assert plan.event == ComposedEvent(tuple(PureDPEvent(p) for p in parts))
    assert [m.epsilon for m in plan.mechanisms()] == parts
    if weighted:  # twice the ranks of every other estimate, each with at least SCALE_RANKS
        assert n * parts[1] >= 2 * SCALE_RANKS * (1 - 1e-9) and n * parts[0] >= SCALE_RANKS * (1 - 1e-9)


def test_equal_weights_keep_the_equal_split():
    """Plans without the centre (a hinge clip) or with the centre alone are split exactly as before."""
    clip = ScaleTarget("clip", CLIP_LEVEL, 1.0, lambda data, _: np.linalg.norm(data[0], axis=1))
    for targets in ((clip,), (LABEL_CENTRE,), (ROW, LABEL_SPREAD)):
        budget = Budget(0.3, 0.0, "secure")
        plan = ScalePlan(targets, budget, 0.1)
        assert plan.parts == [budget.split_equal(len(targets))] * len(targets)
    assert scale_plan((ROW, LABEL_SPREAD), Budget(1.0, 0.0, "float"), 2000)[0].share == default_scale_share(2000, 1.0, 2)


@pytest.mark.parametrize("make", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_fit_event_depends_on_public_facts_only(make):
    """Two data sets of the same size (labels far apart, different spreads): the same event, the same parts."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((800, 3))
    events = []
    for y in (X @ [1.0, 2.0, 0.5] + 470.0, 1e-3 * rng.standard_normal(800) - 6889.0):
        est = make(epsilon=1.0, column_scaling=False, random_state=0,
                   accountant=BudgetAccountant(epsilon=float("inf"), delta=1e-3)).fit(X, y)
        events.append(est.privacy_event_)
    assert events[0] == events[1]
    scales = events[0].events[0] if isinstance(events[0].events[0], ComposedEvent) else None
    assert scales is not None and [e.epsilon for e in scales.events][1] == pytest.approx(
        2.0 * scales.events[0].epsilon, rel=1e-12)


def test_centre_grid_is_fine_from_100_ranks():
    """The centre's grid: 32 points per octave from ``n epsilon_c >= 100`` (public: n, the centre's part)."""
    assert centre_grid(1000, 0.1) is FINE_CENTRE_GRID and centre_grid(1000, 0.0999) is CENTRE_GRID
    assert FINE_CENTRE_GRID.per_octave == 32 and CENTRE_GRID.per_octave == 8 and FINE_CENTRE_RANKS == 100.0
    for n, eps in ((400, 1.0), (1000, 0.5), (10**5, 1.0), (15146, 0.1)):
        plan, _ = scale_plan(REGRESSION, Budget(eps, 0.0, "secure"), n)
        assert plan.signed_grid is centre_grid(n, plan.parts[1].epsilon)
        assert plan.mechanisms()[1].grid is plan.signed_grid
    assert scale_plan(REGRESSION, Budget(1.0, 0.0, "secure"), 399)[0].signed_grid is CENTRE_GRID  # capped
    assert scale_plan(REGRESSION, Budget(1.0, 0.0, "secure"), 400)[0].signed_grid is FINE_CENTRE_GRID
    for n, grid in ((49, None), (60, CENTRE_GRID), (99, CENTRE_GRID), (100, FINE_CENTRE_GRID), (250, FINE_CENTRE_GRID)):
        plan = trivial_scale_plan(True, Budget(1.0, 0.0, "secure"), n)
        assert (plan is None) if grid is None else plan.signed_grid is grid


@pytest.mark.parametrize("n", [60, 1000])
def test_centre_utility_sensitivity_is_exactly_one_at_its_part(n):
    """Exact sensitivity of the centre's release as the plan builds it (the coarse grid at 60 rows, the fine
    one at 1000): replace one label by values across the grid (inside, beyond both ends, at the median, at a
    grid point); every utility moves by at most 1, and 1 is attained."""
    plan, _ = scale_plan(REGRESSION, Budget(1.0, 0.0, "secure"), n)
    centre = plan.mechanisms()[1]
    assert centre.grid is (CENTRE_GRID if n == 60 else FINE_CENTRE_GRID)
    assert centre.grid == plan.signed_grid and centre.epsilon == plan.parts[1].epsilon
    rng = np.random.default_rng(0)
    y = np.round(rng.normal(50.0, 5.0, n), 1)
    base = np.array(centre.utility(y))
    worst = 0
    for i in range(0, n, 7 * n // 60):
        for v in (-1e9, -3.0, 0.0, float(np.median(y)), 49.35, 1e9):
            y2 = y.copy()
            y2[i] = v
            diff = np.abs(np.array(centre.utility(y2)) - base)
            assert diff.max() <= 1
            worst = max(worst, int(diff.max()))
    assert worst == 1


def _centres(plan, y, draws, seed):
    """``draws`` independent centre releases of ``plan`` (its mechanism, as ``plan.release`` runs it)."""
    (centre,) = plan.mechanisms()
    return centre.release(y, np.random.default_rng(seed), size=draws)


@pytest.mark.statistical
def test_audit_passes_the_centre_at_its_part_and_flags_twice_and_an_unnormalised_weight():
    """The centre claims its part of the scale epsilon 2 (weights 1, 2, 1: 1.0). Two mutants: twice the part
    (the selection's factor 1/2 dropped, weights ``exp(epsilon u)``, or the weight applied twice) and the
    unnormalised weight (``CENTRE_WEIGHT x 2 = 4``).

    Neighbours chosen so that a threshold event carries most of the claim (a quantile release realises only
    the share of its epsilon that the data let it): 6 labels, the median's cell at 1 with the two labels below
    it far down (-1e6: every grid point between them, most of the grid, loses a rank when one of them moves)
    and the three above it in the next cell (1.05: the event ``centre > 1`` is the cells that gain one). One
    -1e6 moves to 5e5. Exact threshold-event losses (from ``pmf``, 3 s each: not recomputed here): 0.87 at the
    claim, 1.87 at twice it; the former neighbours (-5, 1, 1.5, 2, 2.5, 3) 0.71 and 1.51, twice the claim
    certified at 1.16-1.27 against 1 (20 000 draws, 7 seeds), here at 1.45-1.58 (50 000 draws)."""
    y = np.array([-1e6, -1e6, 1.0, 1.05, 1.05, 1.05])
    y2 = y.copy()
    y2[0] = 5e5
    scale = Budget(2.0, 0.0, "float")
    claimed = ScalePlan(REGRESSION, scale, 0.5).parts[1].epsilon
    assert claimed == pytest.approx(1.0)
    # the centre alone (the spread's release comes after it and does not change the centre's law)
    plan = ScalePlan((LABEL_CENTRE,), Budget(claimed, 0.0, "float"), 0.5)
    (centre,) = plan.mechanisms()
    assert centre.grid.points[np.searchsorted(centre.grid.points, 1.0) + 1] >= 1.05  # 1.05: the next cell
    twice = ScalePlan((LABEL_CENTRE,), Budget(2.0 * claimed, 0.0, "float"), 0.5)
    unnormalised = ScalePlan((LABEL_CENTRE,), Budget(CENTRE_WEIGHT * scale.epsilon, 0.0, "float"), 0.5)
    draws = 50_000
    honest = audit_epsilon(_centres(plan, y, draws, 0), _centres(plan, y2, draws, 10_000), claimed)
    assert not honest.violation, honest
    doubled = audit_epsilon(_centres(twice, y, draws, 0), _centres(twice, y2, draws, 10_000), claimed)
    assert doubled.violation and doubled.lower_bound > 1.25 * claimed, doubled
    flagged = audit_epsilon(_centres(unnormalised, y, 20_000, 0), _centres(unnormalised, y2, 20_000, 10_000), claimed)
    assert flagged.violation, flagged
