"""The 1-D smooth inverse-sensitivity mechanism (ALD-0) on a public grid.

T0 exact: the score equals an independent per-row computation of
``max(0, f'_-(lo), -f'_+(hi))`` and lower-bounds g on its window; the score
moves by at most its claimed sensitivity on adversarial neighbours (and by
exactly 2C/n on worst-case ones); the EXACT output pmf on worst-case
neighbours has max log-ratio <= epsilon — and >= 0.9 epsilon (the check has
power) — while the printed-constant mutant exp(-eps n G / (2C)) exceeds it.
T1: 1e5 draws per side through the real sampler pass the audit; the mutant
sampler is flagged.
"""

import math

import numpy as np
import pytest

from sklearn_dpsco._solvers import GLMData, inverse_sensitivity, inverse_sensitivity_log_pmf, inverse_sensitivity_plan
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._solvers._inverse_sensitivity import (
    _derivatives_absolute,
    _derivatives_general,
    inverse_sensitivity_scores,
    run_inverse_sensitivity,
)
from sklearn_dpsco.accounting import PureDPEvent
from sklearn_dpsco.testing import audit_epsilon

ABS = get_loss("absolute")
LOSSES = [ABS, get_loss("power", power=1.5), get_loss("power", power=2), get_loss("power", power=3)]


def _one_sided(loss, x, y, s, C, w, side):
    """Independent reference: the directional derivative of mean_i s_i psi_i(x_i w - y_i) at w
    in direction ``side`` (+1: right, -1: left), psi_i the C/|x_i|-extension of |r|^p."""
    p = getattr(loss, "p", 1.0)
    total = 0.0
    for xi, yi, si in zip(x, y, s):
        r = xi * w - yi
        if xi == 0 or si == 0:
            continue
        if r == 0:
            # |r| grows whichever way r moves (p = 1); |r|^p is flat at 0 (p > 1)
            total += si * min(abs(xi), C) if p == 1 else 0.0
            continue
        u = side * np.sign(xi)  # the direction r moves in
        total += si * u * np.sign(r) * min(p * abs(xi) * abs(r) ** (p - 1), C)
    return total / len(x)


def _reference_scores(loss, x, y, s, C, plan):
    pts = plan.evaluation_points()
    left = np.array([_one_sided(loss, x, y, s, C, w, -1.0) for w in pts])
    right = np.array([_one_sided(loss, x, y, s, C, w, +1.0) for w in pts])
    # f'_-(w) is the left derivative: -(slope moving left)
    return np.maximum(0.0, np.maximum(-left[:-1], -right[1:])), -left, right


def _data(x, y, s=None):
    return GLMData(np.asarray(x, float).reshape(-1, 1), np.asarray(y, float), None if s is None else np.asarray(s))


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: l.name)
def test_scores_match_independent_reference(loss):
    rng = np.random.default_rng(0)
    n = 40
    x = np.concatenate([rng.normal(0, 2, n - 2), [0.0, 7.0]])
    y = 3 * rng.standard_t(2, n)
    y[:5] = x[:5] * 0.25  # exact kinks on the grid
    s = rng.uniform(0, 1, n)
    C = 0.8
    plan = inverse_sensitivity_plan(n, lipschitz=C, center=0.0, radius=2.0, epsilon=1.0, grid_size=33)
    G = inverse_sensitivity_scores(_data(x, y, s), loss, plan)
    ref, f_left, f_right = _reference_scores(loss, x, y, s, C, plan)
    np.testing.assert_allclose(G, ref, atol=1e-12)
    # G(w_j) is the infimum of dist(0, [f'_-, f'_+]) over the window: a lower bound of it at every point
    fine = np.linspace(plan.grid[0], plan.grid[-1], 513)
    g_fine = []
    for w in fine:
        lo, hi = -_one_sided(loss, x, y, s, C, w, -1.0), _one_sided(loss, x, y, s, C, w, +1.0)
        g_fine.append(max(0.0, lo, -hi))
    g_fine = np.array(g_fine)
    for j, w in enumerate(plan.grid):
        inside = np.abs(fine - w) <= plan.smoothing + 1e-12
        assert G[j] <= g_fine[inside].min() + 1e-12


def test_fast_absolute_path_equals_general_path():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 3, 200), np.zeros(3)])
    y = rng.normal(0, 2, 203)
    y[:20] = x[:20] * 0.5  # kinks exactly at evaluation points
    s = rng.uniform(0, 1, 203)
    pts = np.linspace(-2, 2, 9)
    fast = _derivatives_absolute(x, y, s, pts, 0.7)
    general = _derivatives_general(ABS, x, y, s, pts, 0.7)
    np.testing.assert_allclose(fast, general, atol=1e-14)


def _move_one_row(n, seed, loss_p):
    """Neighbours differing in one (possibly unbounded) row."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, n)
    y = rng.standard_t(2, n)
    xp, yp = x.copy(), y.copy()
    xp[3], yp[3] = rng.choice([-1, 1]) * 10.0 ** rng.uniform(-3, 6), rng.choice([-1, 1]) * 10.0 ** rng.uniform(-3, 8)
    return _data(x, y), _data(xp, yp)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: l.name)
def test_score_sensitivity_holds_on_adversarial_neighbours(loss):
    n, C = 30, 1.3
    plan = inverse_sensitivity_plan(n, lipschitz=C, center=0.5, radius=3.0, epsilon=1.0, grid_size=101)
    assert plan.sensitivity == pytest.approx(2 * C / n, rel=1e-12)
    assert plan.sensitivity >= 2 * C / n
    worst = 0.0
    for seed in range(30):
        D, Dp = _move_one_row(n, seed, loss)
        diff = np.abs(inverse_sensitivity_scores(D, loss, plan) - inverse_sensitivity_scores(Dp, loss, plan))
        worst = max(worst, diff.max())
        assert diff.max() <= plan.sensitivity
    assert worst >= 0.5 * 2 * C / n  # the random pairs come near the bound


def _worst_case_pair(n=4, left_kink=-0.8):
    """n - 1 kinks at ``left_kink``; the moved row's kink goes from far left to far right.

    f' drops by exactly 2/n everywhere on the grid: G rises by 2/n left of the
    kink and falls by 2/n right of it, where most of the grid's mass is.
    """
    x = np.ones(n)
    y = np.full(n, left_kink)
    y[-1] = -100.0
    yp = y.copy()
    yp[-1] = 100.0
    return _data(x, y), _data(x, yp)


def _mutant_log_pmf(data, loss, plan):
    """ALD's printed exponent epsilon n G / (2 L): twice the correct one."""
    logits = -2.0 * plan.exponent * inverse_sensitivity_scores(data, loss, plan)
    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_exact_pmf_log_ratio_is_at_most_epsilon(eps):
    n = 4
    plan = inverse_sensitivity_plan(n, lipschitz=1.0, center=0.0, radius=1.0, epsilon=eps, grid_size=401)
    D, Dp = _worst_case_pair(n, left_kink=-0.97)
    score_shift = np.abs(inverse_sensitivity_scores(D, ABS, plan) - inverse_sensitivity_scores(Dp, ABS, plan))
    assert score_shift.max() == pytest.approx(2.0 / n)  # the pair is worst case for the score
    ratio = np.abs(inverse_sensitivity_log_pmf(D, ABS, plan) - inverse_sensitivity_log_pmf(Dp, ABS, plan)).max()
    assert ratio <= eps + 1e-9
    assert ratio >= 0.9 * eps  # the check is tight: a factor-2 error would show
    mutant = np.abs(_mutant_log_pmf(D, ABS, plan) - _mutant_log_pmf(Dp, ABS, plan)).max()
    assert mutant > 1.5 * eps
    # and random neighbour pairs of every loss stay within epsilon too
    for loss in LOSSES:
        big = inverse_sensitivity_plan(30, lipschitz=1.3, center=0.5, radius=3.0, epsilon=eps, grid_size=101)
        for seed in range(10):
            A, B = _move_one_row(30, seed, loss)
            r = np.abs(inverse_sensitivity_log_pmf(A, loss, big) - inverse_sensitivity_log_pmf(B, loss, big)).max()
            assert r <= eps + 1e-9


def test_release_is_a_grid_point_with_pure_event():
    D, _ = _worst_case_pair()
    fit = inverse_sensitivity(D, ABS, lipschitz=1.0, center=0.0, radius=1.0, epsilon=0.5,
                              rng=np.random.default_rng(0), grid_size=11)
    assert fit.coef.shape == (1,) and np.isclose(fit.coef[0], np.linspace(-1, 1, 11)).any()
    assert fit.event == PureDPEvent(0.5)
    again = inverse_sensitivity(D, ABS, lipschitz=1.0, center=0.0, radius=1.0, epsilon=0.5,
                                rng=np.random.default_rng(0), grid_size=11)
    assert again.coef[0] == fit.coef[0]


def test_private_median_is_accurate():
    rng = np.random.default_rng(2)
    y = rng.standard_t(2, 5000) + 0.7
    fit = inverse_sensitivity(_data(np.ones(5000), y), ABS, lipschitz=1.0, center=0.0, radius=10.0, epsilon=1.0,
                              rng=np.random.default_rng(3))
    assert abs(fit.coef[0] - np.median(y)) < 0.02


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="epsilon"):
        inverse_sensitivity_plan(10, lipschitz=1.0, center=0.0, radius=1.0, epsilon=0.0)
    with pytest.raises(ValueError, match="radius"):
        inverse_sensitivity_plan(10, lipschitz=1.0, center=0.0, radius=-1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="grid_size"):
        inverse_sensitivity_plan(10, lipschitz=1.0, center=0.0, radius=1.0, epsilon=1.0, grid_size=1)
    with pytest.raises(ValueError, match="center"):
        inverse_sensitivity_plan(10, lipschitz=1.0, center=math.nan, radius=1.0, epsilon=1.0)
    plan = inverse_sensitivity_plan(10, lipschitz=1.0, center=0.0, radius=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="one-dimensional"):
        inverse_sensitivity_scores(GLMData(np.ones((10, 2)), np.ones(10)), ABS, plan)


@pytest.mark.statistical
def test_sampled_release_audit_and_mutant():
    """1e5 draws per side through the real sampler on the worst-case pair; the
    mutant sampler (ALD's printed exponent) must be flagged."""
    eps, n = 1.0, 4
    plan = inverse_sensitivity_plan(n, lipschitz=1.0, center=0.0, radius=1.0, epsilon=eps, grid_size=201)
    D, Dp = _worst_case_pair(n)
    rng = np.random.default_rng(7)
    draws = 100_000

    def sample(data, mutant):
        if not mutant:
            return np.array([run_inverse_sensitivity(data, ABS, plan, rng)[0] for _ in range(200)] +
                            list(_vector_draws(data, plan, rng, draws - 200, mutant=False)))
        return _vector_draws(data, plan, rng, draws, mutant=True)

    real = audit_epsilon(sample(D, False), sample(Dp, False), eps)
    assert not real.violation, str(real)
    mut = audit_epsilon(sample(D, True), sample(Dp, True), eps)
    assert mut.violation, str(mut)


def _vector_draws(data, plan, rng, size, mutant):
    """Vectorised copies of run_inverse_sensitivity's draw (same pmf, same inverse-CDF rule)."""
    logp = _mutant_log_pmf(data, ABS, plan) if mutant else inverse_sensitivity_log_pmf(data, ABS, plan)
    cdf = np.cumsum(np.exp(logp))
    j = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
    return plan.grid[np.minimum(j, plan.grid_size - 1)]
