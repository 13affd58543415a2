"""T0: DPStandardScaler's statistics move by at most the calibrated sensitivity, rounding included.

The released statistics are float64 numbers; the secure path's proof needs the sensitivity of THOSE
numbers (doc/privacy/secure_noise.rst, "The construction", step 3), not of the real-number means.
The neighbours here are built to maximise the float difference: large offsets (values near 2^50 with a
range of 1, where one float sum's rounding step is hundreds of times the range over n), rows on the
grid's rounding ties, the division's rounding at the ends of the range, and at user level a replacing user
with a fresh identifier (it sorts last, so the other users' terms are summed in another order).
The plain float mean the scaler released before (``np.clip(X).mean(0)``, and the mean of user means in
sorted-identifier order) is kept here as the mutant these neighbours must catch.
Argument: doc/privacy/preprocessing.rst, "Exact statistics on the secure path".
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.preprocessing import DPStandardScaler
from sklearn_dpsco.preprocessing._scaler import MomentGrid, clipped_moments, user_clipped_moments

OFFSET = 2.0**50  # float spacing 1/4 at the values; the sums' spacing is 2^8 and more


def _plans(n, lower, upper, privacy_unit="row"):
    """(pure-DP mechanisms, Gaussian mechanisms) of the plan, secure path."""
    kw = dict(bounds=(lower, upper), privacy_unit=privacy_unit)
    pure = DPStandardScaler(epsilon=1.0, **kw)._mechanisms(n, lower, upper)
    gauss = DPStandardScaler(epsilon=1.0, delta=1e-6, **kw)._mechanisms(n, lower, upper)
    return pure, gauss


def _check_within(a, b, pure, gauss):
    """Both statistics of two neighbours move within the l1 (Laplace) and l2 (Gaussian) sensitivities, and
    their secure releases' rounded centres differ by at most the integer sensitivity S of the mechanism."""
    worst = 0.0
    for k, name in enumerate(("mean", "second_moment")):
        diff = np.abs(np.asarray(a[k]) - np.asarray(b[k]))
        assert diff.sum() <= pure[name].sensitivity, (name, diff.sum(), pure[name].sensitivity)
        assert math.hypot(*diff) <= gauss[name].sensitivity, (name, diff, gauss[name].sensitivity)
        # the secure Laplace release rounds the centre to its grid; the proof needs ||k - k'||_1 <= S
        m = pure[name]
        steps = np.abs(np.rint(np.asarray(a[k]) / m.grid) - np.rint(np.asarray(b[k]) / m.grid)).sum()
        assert steps * m.grid <= m.noise_sensitivity
        worst = max(worst, diff.sum() / pure[name].sensitivity)
    return worst


def _old_row_mean(X, lower, upper):
    return np.clip(X, lower, upper).mean(axis=0)


def _old_user_mean(X, groups, lower, upper):
    order = np.argsort(groups, kind="stable")
    Xs, gs = np.clip(X[order], lower, upper), groups[order]
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    counts = np.diff(np.r_[starts, len(gs)])[:, None]
    return (np.add.reduceat(Xs, starts, axis=0) / counts).mean(axis=0)


def _offset_pairs(n, trials, rng):
    """Neighbouring row sets near 2^50 with range 1 (values on the float spacing 1/4), one row replaced."""
    lower, upper = np.array([OFFSET, -1.0]), np.array([OFFSET + 1, 1.0])
    for _ in range(trials):
        X = np.column_stack([OFFSET + rng.integers(0, 5, size=n) * 0.25, rng.uniform(-1, 1, size=n)])
        i = rng.integers(n)
        D, Dp = X.copy(), X.copy()
        D[i], Dp[i] = lower, upper
        yield D, Dp, lower, upper


def test_old_float_mean_exceeds_the_calibrated_sensitivity():
    """The defect, kept as the mutant: np.mean near 2^50 moves by hundreds of times r / n."""
    rng = np.random.default_rng(0)
    n = 1000
    # one column (numpy sums a contiguous column pairwise; a column of a wider array row by row, where a
    # one-row change can also vanish entirely): the mean moves by one step of the sums' spacing
    ratio = max(abs(_old_row_mean(Dp[:, :1], lo[:1], up[:1]) - _old_row_mean(D[:, :1], lo[:1], up[:1]))[0] * n
                for D, Dp, lo, up in _offset_pairs(n, 300, rng))
    assert ratio > 100  # measured: 250
    # user level: the replacing user has a fresh identifier, so the others' means are summed in another order
    lower, upper = np.array([OFFSET]), np.array([OFFSET + 1])
    U, worst = 1000, 0.0
    for _ in range(100):
        X = OFFSET + rng.integers(0, 5, size=(U, 1)) * 0.25
        g = 2 * np.arange(1, U + 1)
        D, Dp, gp = X.copy(), X.copy(), g.copy()
        D[0], Dp[0], gp[0] = lower, upper, 2 * U + 1
        worst = max(worst, abs(_old_user_mean(Dp, gp, lower, upper) - _old_user_mean(D, g, lower, upper))[0] * U)
    assert worst > 100
    # and the exact-integer statistics on the very same pairs stay within the plan (next tests)


@pytest.mark.parametrize("n", [3, 17, 1000])
def test_row_statistics_within_sensitivity_at_large_offsets(n):
    rng = np.random.default_rng(n)
    lower, upper = np.array([OFFSET, -1.0]), np.array([OFFSET + 1, 1.0])
    pure, gauss = _plans(n, lower, upper)
    worst = 0.0
    for D, Dp, lo, up in _offset_pairs(n, 200, rng):
        worst = max(worst, _check_within(clipped_moments(D, lo, up), clipped_moments(Dp, lo, up), pure, gauss))
    assert worst > 1 - 1e-6  # the worst-case pair (lower -> upper) attains the bound up to its rounding slack


def test_row_statistics_within_sensitivity_on_ties_and_range_ends():
    """Ranges that are not powers of two, rows on the grid's rounding ties, the other rows at one end (the
    largest statistic, hence the largest rounding of the division)."""
    rng = np.random.default_rng(1)
    lower, upper = np.array([0.1, -3e9, 1.6e12]), np.array([0.7, 7e9, 1.6e12 + 3.15e10])
    grid = MomentGrid(lower, upper)
    for n in (5, 4099, 300_001):
        pure, gauss = _plans(n, lower, upper)
        for base in (lower, upper, grid.centre):
            X = np.tile(base, (n, 1))
            ties = grid.centre + (rng.integers(-2**30, 2**30, size=(n, 3)) + 0.5) * grid.g1
            X[: n // 2] = np.clip(ties[: n // 2], lower, upper)
            for a, b in ((lower, upper), (grid.centre, upper), (grid.centre, lower), (ties[-1], upper)):
                D, Dp = X.copy(), X.copy()
                D[-1], Dp[-1] = a, b
                _check_within(clipped_moments(D, lower, upper), clipped_moments(Dp, lower, upper), pure, gauss)


def test_row_statistics_within_sensitivity_when_the_integer_sum_rounds():
    """Five million rows at one end: |Q| > 2^53, so float(Q) rounds on both neighbours, and with the division
    the mean moves by MORE than the integer range over n (1 + 8e-11 times ``W g1 / n`` here): the float terms
    of the bound are needed, not decoration."""
    lower, upper = np.array([0.1]), np.array([0.7])
    grid, n = MomentGrid(lower, upper), 4_999_999
    pure, gauss = _plans(n, lower, upper)
    integer_only = Fraction(int(grid.hi1[0] - grid.lo1[0])) * Fraction(grid.g1[0]) / n
    exceeded = False
    for base, a, b in ((upper, lower, upper), (lower, upper, lower), (upper, grid.centre, upper)):
        D = np.tile(base, (n, 1))
        D[-1] = a
        Dp = D.copy()
        Dp[-1] = b
        assert max(abs(int(q)) for Q in grid.sums(D) for q in Q) > 2**53
        s, t = clipped_moments(D, lower, upper), clipped_moments(Dp, lower, upper)
        exceeded |= abs(Fraction(s[0][0]) - Fraction(t[0][0])) > integer_only
        _check_within(s, t, pure, gauss)
    assert exceeded


def test_row_statistics_within_sensitivity_on_random_neighbours():
    rng = np.random.default_rng(2)
    for _ in range(30):
        d = int(rng.integers(1, 5))
        lower = rng.normal(0, 10.0 ** rng.integers(0, 15), size=d)
        upper = lower + 10.0 ** rng.uniform(-3, 6, size=d)
        n = int(rng.integers(2, 3000))
        pure, gauss = _plans(n, lower, upper)
        X = rng.uniform(lower - 1, upper + 1, size=(n, d))
        i = rng.integers(n)
        D, Dp = X.copy(), X.copy()
        Dp[i] = rng.uniform(lower - 1e3, upper + 1e3)
        _check_within(clipped_moments(D, lower, upper), clipped_moments(Dp, lower, upper), pure, gauss)


def test_user_statistics_within_sensitivity_with_fresh_ids_and_reordering():
    rng = np.random.default_rng(3)
    lower, upper = np.array([OFFSET, 0.1]), np.array([OFFSET + 1, 0.7])
    U, m = 400, 3
    pure, gauss = _plans(U, lower, upper, "user")
    worst = 0.0
    for _ in range(60):
        counts = rng.integers(1, 2 * m, size=U)
        groups = np.repeat(2 * np.arange(1, U + 1), counts)
        X = np.column_stack([OFFSET + rng.integers(0, 5, size=groups.size) * 0.25,
                             rng.uniform(0.1, 0.7, size=groups.size)])
        mine = groups == 2
        rows_a = np.tile(lower, (int(rng.integers(1, 3 * m)), 1))
        rows_b = np.tile(upper, (int(rng.integers(1, 3 * m)), 1))
        fresh = int(rng.choice([2, 2 * U + 1, 3]))  # same id, a fresh id sorted last, one sorted next
        D = np.vstack([rows_a, X[~mine]]), np.concatenate([np.full(len(rows_a), 2), groups[~mine]])
        Dp = np.vstack([X[~mine], rows_b]), np.concatenate([groups[~mine], np.full(len(rows_b), fresh)])
        a = user_clipped_moments(*D, lower, upper, m)
        b = user_clipped_moments(*Dp, lower, upper, m)
        assert a[2] == b[2] == U
        worst = max(worst, _check_within(a[:2], b[:2], pure, gauss))
    assert worst > 1 - 1e-6


def test_statistics_do_not_depend_on_row_order_or_user_ids():
    rng = np.random.default_rng(4)
    lower, upper = np.array([OFFSET, -2.0]), np.array([OFFSET + 1, 5.0])
    X = np.column_stack([OFFSET + rng.integers(0, 5, size=5000) * 0.25, rng.uniform(-3, 6, size=5000)])
    perm = rng.permutation(5000)
    for s, t in zip(clipped_moments(X, lower, upper), clipped_moments(X[perm], lower, upper)):
        np.testing.assert_array_equal(s, t)
    groups = rng.integers(0, 700, size=5000)
    relabel = rng.permutation(700)[groups] * 3 + 11  # same users, other identifiers and order
    a = user_clipped_moments(X, groups, lower, upper, 4)
    b = user_clipped_moments(X, relabel, lower, upper, 4)
    assert a[2] == b[2]
    for s, t in zip(a[:2], b[:2]):
        np.testing.assert_array_equal(s, t)


def test_plan_sensitivity_is_the_range_over_n_up_to_rounding():
    """The calibrated sensitivities are r/n and (r/2)^2/n up to the grid and float slack (relative 2^-31).

    (They may be BELOW the real-number values: the bound is the range of the integer terms actually
    computed, and rounding to the grid can shorten a range by up to one grid step.)"""
    lower, upper = np.array([-1.0, 0.1, 5.0]), np.array([3.0, 0.7, 5.0])
    r, n = upper - lower, 1234
    pure, gauss = _plans(n, lower, upper)
    for got, ref in ((pure["mean"].sensitivity, r.sum() / n),
                     (pure["second_moment"].sensitivity, ((r / 2) ** 2).sum() / n),
                     (gauss["mean"].sensitivity, np.linalg.norm(r) / n),
                     (gauss["second_moment"].sensitivity, np.linalg.norm((r / 2) ** 2) / n)):
        assert ref * (1 - 2.0**-31) <= got <= ref * (1 + 2.0**-31)


@pytest.mark.parametrize("bounds", [(0.0, 2.0**500), (0.0, 2.0**-500), (-1.7e308, 1.7e308)])
def test_ranges_beyond_the_exact_statistics_are_refused_before_spending(bounds):
    acc = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match="exact statistics"):
        DPStandardScaler(bounds=bounds, accountant=acc).fit(np.zeros((10, 2)))
    assert acc.ledger == ()


@pytest.mark.parametrize("r", [2.0**479, 2.0**300, 2.0**-300, 2.0**-479])
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_every_accepted_range_fits_with_its_sensitivity(r, delta):
    """Ranges within the documented [2^-480, 2^480] fit (the l2 norm of the second moment's bound, about
    (r/2)^2 / n, overflowed a float above about 1e77 (OverflowError, pure DP too) and underflowed to the
    smallest subnormal below about 1e-75 (the Gaussian second moment then carried noise for a range 1e100
    times larger: scale_ at the range's half, whatever the data)."""
    X = np.random.default_rng(0).uniform(-1.0, 1.0, size=(4000, 2)) * (r / 2)
    sc = DPStandardScaler(epsilon=1.0, delta=delta, bounds=(-r / 2, r / 2), random_state=0).fit(X)
    assert np.all(np.isfinite(sc.transform(X)))
    # uniform on the range: sd r / sqrt(12); 4000 rows, epsilon 1: within a few percent
    np.testing.assert_allclose(sc.scale_ / r, 1 / math.sqrt(12), rtol=0.1)
    lower, upper = np.full(2, -r / 2), np.full(2, r / 2)
    mech = DPStandardScaler(epsilon=1.0, delta=delta, bounds=(-r / 2, r / 2))._mechanisms(4000, lower, upper)
    exact = Fraction(r / 2) ** 2 / 4000  # (r/2)^2 / n per coordinate, exactly
    l2 = mech["second_moment"].sensitivity if delta else None
    if l2 is not None:
        ratio = Fraction(l2) ** 2 / (2 * exact**2)  # two coordinates; the bound's slack is relative 2^-31
        assert 1 - Fraction(1, 2**29) <= ratio <= 1 + Fraction(1, 2**29)


def test_l2_norm_is_the_former_float_where_the_square_is_normal():
    """The scaled l2 computation gives the float sqrt(_float_up(sq)) gave wherever sq is a normal float."""
    from sklearn_dpsco._mechanisms._additive import _float_up
    from sklearn_dpsco._mechanisms._calibrate import sensitivity_norms

    rng = np.random.default_rng(1)
    for _ in range(300):
        v = [Fraction(float(x)) / int(n) for x, n in zip(rng.lognormal(0, 30, 3), rng.integers(1, 10**6, 3))]
        sq = sum((a * a for a in v), Fraction(0))
        old = math.sqrt(_float_up(sq))
        while Fraction(old) ** 2 < sq:
            old = math.nextafter(old, math.inf)
        assert sensitivity_norms(v)[1] == old


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_equal_bounds_release_the_bound_and_spend_nothing_on_it(delta):
    """lower == upper: every term is the same integer, so the statistics do not move (sensitivity 0). Pure DP
    raised 'need a positive finite number' (a 2^-1074 slack on a zero range underflowed the secure grid)."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    acc = BudgetAccountant(10.0)
    sc = DPStandardScaler(epsilon=1.0, delta=delta, bounds=(-5.0, -5.0), accountant=acc, random_state=0).fit(X)
    np.testing.assert_array_equal(sc.mean_, [-5.0, -5.0, -5.0])
    np.testing.assert_array_equal(sc.scale_, [1.0, 1.0, 1.0])
    assert sc.epsilon_spent_ == 0.0 and acc.total()[0] == 0.0
    # a float midpoint that rounds the range to 0 (1e17 +- 3 are the same float)
    DPStandardScaler(epsilon=1.0, delta=delta, bounds=(1e17 - 3, 1e17 + 3), random_state=0).fit(X + 1e17)
    # user level
    sc = DPStandardScaler(epsilon=1.0, delta=delta, bounds=(1.0, 1.0), privacy_unit="user",
                          random_state=0).fit(X, groups=np.arange(100) // 4)
    np.testing.assert_array_equal(sc.mean_, [1.0, 1.0, 1.0])
