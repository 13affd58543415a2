"""Median and spread below the quartiles' rule (doc/privacy/column_scaling.rst, "Median and spread").

Fails if the band's rule read anything but public facts, if the pair were charged other than its plan
(``d`` medians at ``MEDIAN_PART`` of the share, then ``d`` spreads at the exact rest), if the spreads' counts
could move by more than one when a row is replaced, or if step 2 were centred on a data value instead of the
released median (the audit's mutant).
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._scale_estimation import private_column_quantiles
from sklearn_dpsco.accounting import BudgetAccountant, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.linear_model._column_scaling import (
    COLUMN_MAD_CLIP,
    COLUMN_MAD_RANKS,
    COLUMN_RANKS,
    MAD_LOW_EXPONENT,
    MAD_MIN_HIGH_EXPONENT,
    MAD_MISS_FAR_CENTRE,
    MAD_OCTAVES_ABOVE_CENTRE,
    MEDIAN_PART,
    ROW_MAGNITUDE_RANKS,
    ColumnScaling,
    ColumnScalingPlan,
    column_scaling_applies,
    column_scaling_mode,
    default_column_share,
    spread_grid,
)
from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID
from sklearn_dpsco.testing import audit_epsilon, mixed_units

N_BAND = 1000  # mixed_units has d = 4: 1000 x 0.25 / 8 = 31 ranks per quartile release at epsilon 1 (25 <= 31 < 50)


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _cases():
    X, y_cls, y_reg = mixed_units(n=N_BAND)
    return [("hinge", DPHingeClassifier, (X, y_cls)), ("linear", DPLinearRegressor, (X, y_reg)),
            ("growth", DPGrowthAdaptiveRegressor, (X, y_reg))]


CASES = _cases()
IDS = [c[0] for c in CASES]


def test_the_band_is_a_public_rule():
    for n, d, eps in [(1000, 4, 1.0), (2040, 11, 0.5), (2040, 11, 1.0), (3067, 9, 0.5), (15590, 21, 0.5),
                      (15590, 21, 1.0), (427, 6, 2.0), (300, 4, 1.0)]:
        per = n * default_column_share(n, d, eps) * eps / (2 * d)
        mode = column_scaling_mode("auto", n, d, eps, declared=False, dense=True)
        expected = ("quartiles" if per >= COLUMN_RANKS else "median_mad" if per >= COLUMN_MAD_RANKS
                    else "magnitudes" if per >= ROW_MAGNITUDE_RANKS else None)  # below the band: the hinge's histogram
        assert mode == expected, (n, d, eps, per)
        assert (mode == "quartiles") == column_scaling_applies("auto", n, d, eps, declared=False, dense=True)
        if mode == "median_mad":  # every veto is a public fact
            for veto in (dict(declared=True), dict(dense=False), dict(centre=False), dict(positional=False),
                         dict(cluster=True)):
                kw = {**dict(declared=False, dense=True), **veto}
                assert column_scaling_mode("auto", n, d, eps, **kw) is None, veto
            # True keeps the quartiles (as before); False never runs
            assert column_scaling_mode(True, n, d, eps, declared=False, dense=True) == "quartiles"
            assert column_scaling_mode(False, n, d, eps, declared=False, dense=True) is None


def _band_event(d, epsilon=1.0, n=N_BAND):
    share = default_column_share(n, d, epsilon)
    eps_c = share * epsilon
    medians = MEDIAN_PART * eps_c
    return ComposedEvent((ComposedEvent(tuple([PureDPEvent(medians / d)] * d)),
                          ComposedEvent(tuple([PureDPEvent((eps_c - medians) / d)] * d)))), share


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("name,cls,args", CASES, ids=IDS)
def test_event_is_medians_then_spreads_then_the_former_fit_spent_once(name, cls, args, delta, noise):
    X = args[0]
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = cls(epsilon=1.0, delta=delta, noise=noise, random_state=0, accountant=acc).fit(*args)
    expected, share = _band_event(X.shape[1])
    info = (est.fit_info_ if name != "hinge" else est.fit_info_[0])["column_scaling"]
    assert info["mode"] == "median_mad" and info["share"] == share and info["stages"] == 1
    assert est.privacy_event_.events[0] == expected
    # the two parts sum to the share exactly (Sterbenz), so the pure part is epsilon_c
    assert epsilon_delta(expected)[0] == pytest.approx(share, rel=1e-12)
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    assert est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9) and est.epsilon_spent_ <= 1.0 + 1e-12
    if delta == 0:
        rest = cls(**{**est.get_params(), "column_scaling": False, "epsilon": 1.0 - share})
        if name == "growth":
            rest.set_params(radius=est.radius_)
        assert est.privacy_event_.events[1] == rest.set_params(accountant=_ledger()).fit(*args).privacy_event_


@pytest.mark.parametrize("name,cls,args", CASES, ids=IDS)
def test_the_map_is_the_released_pair_and_the_fold_is_exact(name, cls, args):
    X, y = args
    est = cls(epsilon=1.0, random_state=3, accountant=_ledger()).fit(X, y)
    # the same generator state: the plan's releases are private_column_quantiles at level 0.5 on the two grids
    plan = ColumnScalingPlan.build(Budget(1.0), X.shape[0], X.shape[1], True, mode="median_mad")
    from sklearn_dpsco._rng import check_random_state  # the fit's generator from its random_state

    rng = check_random_state(3)
    medians, spreads = plan._median_mad_budgets()
    m = private_column_quantiles(X, (0.5,), medians, grid=BOUNDS_GRID, random_state=rng).value[0]
    a = _spreads(np.abs(X - m), m, spreads, rng)
    expected = ColumnScaling.from_median_mad(m, a)
    np.testing.assert_array_equal(est.column_center_, expected.centre)
    np.testing.assert_array_equal(est.column_scale_, expected.scale)
    # the map is m and max(2 a, 1) (never enlarged), and a column with m = a = 0 passes through
    np.testing.assert_array_equal(expected.scale, np.maximum(2 * a, 1.0))
    both_zero = ColumnScaling.from_median_mad(np.array([0.0, 3.0]), np.array([0.0, 0.25]))
    np.testing.assert_array_equal(both_zero.centre, [0.0, 3.0])
    np.testing.assert_array_equal(both_zero.scale, [1.0, 1.0])
    assert list(both_zero.passthrough) == [True, False]


def _spreads(deviations, m, spreads, rng):
    """Step 2 as the fit runs it: column ``j`` on ``spread_grid(m_j)`` at its part of the spreads' budget, in order."""
    part = spreads.split_equal(deviations.shape[1])
    return np.array([private_column_quantiles(deviations[:, j:j + 1], (0.5,), part, grid=spread_grid(v),
                                              random_state=rng).value[0][0] for j, v in enumerate(m)])


def test_the_spread_grid_is_a_function_of_the_released_centre():
    # one point per octave from 2^MAD_LOW_EXPONENT to 2^J and 0, J = max(ceil(log2 max(|m|, 1)) + 2, 4): exact at
    # powers of two, the same for -m, the floor's J below 2^2; grids shared by their J
    assert (MAD_LOW_EXPONENT, MAD_OCTAVES_ABOVE_CENTRE, MAD_MIN_HIGH_EXPONENT) == (-1, 2, 4)
    for centre, top in ((0.0, 4), (0.3, 4), (4.0, 4), (4.5, 5), (-35.0, 8), (32.0, 7), (32.000001, 8),
                        (2.0 ** 20, 22)):
        grid = spread_grid(centre)
        assert (grid.low_exponent, grid.high_exponent, grid.per_octave, grid.signed) == (-1, top, 1, False), centre
        np.testing.assert_array_equal(grid.points, [0.0] + [2.0 ** k for k in range(-1, top + 1)])
    assert spread_grid(-35.0) is spread_grid(35.0)
    # a spread above the top counts at the top (its cell is open above): a signed column centred at 0 with a
    # spread of 1000 is released at most 16 (accuracy only: the counts still move by one per replaced row)
    rng = np.random.default_rng(0)
    wide = rng.normal(0.0, 1500.0, (400, 1))
    a = _spreads(np.abs(wide), np.zeros(1), Budget(50.0), np.random.default_rng(1))
    assert a[0] == 16.0


def test_a_missed_spread_is_sized_by_its_released_centre_and_clipped():
    # released pairs (m, a): a spread below the floor at a far centre is a miss (Treatment's earnings, median 17k,
    # a = 0), at a centre near 0 a small spread (PSID's children, median 2); the map reads the released pair only
    m = np.array([17000.0, -49.0, 2.0, 49.0, MAD_MISS_FAR_CENTRE, 0.0])
    a = np.array([0.0, 0.25, 0.25, 16.0, 0.0, 0.0])
    columns = ColumnScaling.from_median_mad(m, a)
    np.testing.assert_array_equal(columns.centre, [17000.0, -49.0, 2.0, 49.0, MAD_MISS_FAR_CENTRE, 0.0])
    np.testing.assert_array_equal(columns.scale, [17000.0, 49.0, 1.0, 32.0, MAD_MISS_FAR_CENTRE, 1.0])
    assert list(columns.passthrough) == [False] * 5 + [True]
    # every column but the passed-through one is clipped at COLUMN_MAD_CLIP of its scale
    lo, hi = columns.with_clip(COLUMN_MAD_CLIP).raw_bounds()
    np.testing.assert_array_equal(hi[:5], columns.centre[:5] + COLUMN_MAD_CLIP * columns.scale[:5])
    np.testing.assert_array_equal(lo[:5], columns.centre[:5] - COLUMN_MAD_CLIP * columns.scale[:5])
    assert np.isinf(hi[5]) and np.isinf(lo[5])
    # a raw column in the thousands no longer dominates the mapped rows
    X = np.array([[20000.0, -40.0, 3.0, 60.0, 20.0, 1.0], [15000.0, -60.0, 1.0, 30.0, 12.0, 0.0]])
    assert np.abs(columns.with_clip(COLUMN_MAD_CLIP).transform(X)[:, :5]).max() <= 1.0


def test_user_level_and_declared_settings_keep_the_fit_as_before():
    X, y, _ = mixed_units(n=N_BAND)
    declared = DPHingeClassifier(epsilon=1.0, clip=1.0, random_state=0, accountant=_ledger()).fit(X, y)
    off = DPHingeClassifier(epsilon=1.0, clip=1.0, column_scaling=False, random_state=0,
                            accountant=_ledger()).fit(X, y)
    assert declared.privacy_event_ == off.privacy_event_
    np.testing.assert_array_equal(declared.coef_, off.coef_)
    # user level (rows not positional) never takes the band
    assert column_scaling_mode("auto", N_BAND, 4, 1.0, declared=False, dense=True, positional=False) is None
    assert UserLevelDPLogistic._COLUMN_ROWS_POSITIONAL is False


@pytest.mark.parametrize("which", ["medians", "spreads"])
def test_median_mad_counts_keep_the_sensitivity(which):
    # exact sensitivity of what the two steps read: replacing any one row (by an extreme one or 0) moves every
    # column's grid count by at most 1, and 1 is attained. Step 2 reads |x - m| with m a release, fixed (public)
    # before the rows are read: the same per-row map on D and D'
    X, _, _ = mixed_units(n=97)
    m = np.array([1994.0, 37.5, 0.0, -0.125])  # released medians of a year, an income, an indicator, a standard

    def counts(rows):
        if which == "medians":
            return BOUNDS_GRID.column_counts(rows)
        # each column on the grid its released centre sets (public before the deviations are read)
        return np.concatenate([spread_grid(v).column_counts(np.abs(rows[:, j:j + 1] - v))[0] for j, v in enumerate(m)])

    base = counts(X)
    worst = 0
    for i in range(X.shape[0]):
        for value in (-1e300, 0.0, 1994.0, 1e300):
            Xn = X.copy()
            Xn[i] = value
            diff = np.abs(counts(Xn) - base)
            assert diff.max() <= 1
            worst = max(worst, int(diff.max()))
    assert worst == 1


# --------------------------------------------------------------------------- audit with a mutant
def _rows(n=400):
    """An income-like column: 30 +- 10."""
    return (20.0 + 20.0 * np.random.default_rng(7).random(n))[:, None]


def _scale_scores(plan, X, draws, seed):
    out = np.empty(draws)
    for i in range(draws):
        columns, _ = plan.release(X, np.random.default_rng(seed + i))
        out[i] = np.log2(columns.scale[0])
    return out


def _spread_about_the_first_row(self, X, rng, n_jobs=None):
    """The mutant: step 2 measures ``|x - X[0]|`` (a data value) instead of ``|x - m|`` (the release)."""
    medians, spreads = self._median_mad_budgets()
    first = private_column_quantiles(X, (0.5,), medians, grid=BOUNDS_GRID, random_state=rng)
    m = first.value[0]
    second = private_column_quantiles(np.abs(X - X[0]), (0.5,), spreads, grid=spread_grid(m[0]), random_state=rng)
    return ColumnScaling.from_median_mad(m, second.value[0]), ComposedEvent((first.event, second.event))


@pytest.mark.statistical
def test_audit_of_median_mad_flags_a_spread_about_a_data_value(monkeypatch):
    """Worst-case neighbours (doc/privacy/column_scaling.rst, "Median and spread"): D' moves row 0 of an
    income-like column to 1e6 (or 0). The released median's law moves by at most ``e^{epsilon_m}`` and, given
    it, the spread's counts by one row, so the released scale stays within ``e^{epsilon_c}``; the mutant
    measures the spread about row 0 itself: about 10 on D (scale about 16), about 1e6 on D' (the top of the grid
    the released median of about 30 sets, 2^7: scale 256)."""
    X = _rows()
    plan = ColumnScalingPlan(1, Budget(1.0), Budget(1.0), 0.5, True, 1, 1, "median_mad")
    eps = plan.budget.epsilon  # the scale is post-processing of both steps: epsilon_c in all
    draws = 800
    base = _scale_scores(plan, X, draws, 0)
    for value in (1e6, 0.0):
        Xp = X.copy()
        Xp[0] = value
        honest = audit_epsilon(base, _scale_scores(plan, Xp, draws, 10_000), eps)
        assert not honest.violation, (value, honest)
    Xp = X.copy()
    Xp[0] = 1e6
    monkeypatch.setattr(ColumnScalingPlan, "release", _spread_about_the_first_row)
    mutant = audit_epsilon(_scale_scores(plan, X, draws, 0), _scale_scores(plan, Xp, draws, 10_000), eps)
    assert mutant.violation, mutant


@pytest.mark.parametrize("name,cls,args", CASES, ids=IDS)
def test_a_failure_after_the_pair_was_released_spends_nothing(name, cls, args, monkeypatch):
    """The median and spread read the rows before the solver: a failure after them (here the solver's problems)
    leaves the ledger and the previous fit as they were (spent once, after success)."""
    acc = _ledger()
    est = cls(epsilon=1.0, random_state=0, accountant=acc).fit(*args)
    info = est.fit_info_ if isinstance(est.fit_info_, dict) else est.fit_info_[0]
    assert info["column_scaling"]["mode"] == "median_mad"
    before = (est.coef_.copy(), est.column_center_.copy(), len(acc.ledger))
    released = []
    real = ColumnScalingPlan.release

    def spy(self, *a, **k):
        released.append(self.mode)
        return real(self, *a, **k)

    def broken(self, inputs, plan, rng):
        raise RuntimeError("solver failed")

    monkeypatch.setattr(ColumnScalingPlan, "release", spy)
    monkeypatch.setattr(cls, "_draw_problems", broken)
    with pytest.raises(RuntimeError, match="solver failed"):
        est.fit(args[0] * 3.0, args[1])
    assert released == ["median_mad"]  # the pair was released from the rows, then the fit failed
    np.testing.assert_array_equal(est.coef_, before[0])
    np.testing.assert_array_equal(est.column_center_, before[1])
    assert len(acc.ledger) == before[2] == 1
