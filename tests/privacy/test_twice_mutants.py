"""Factor-2 mutants for the quantile releases whose audits had only gross mutants (doc/privacy/testing.rst).

The former audits of these releases flag a non-private statistic (the max norm, the min/max, every row of a
user): a 1e6-fold jump. They would pass a release that spends twice its charged part, or a user-level value
that moves two ranks when one user changes. Here each release is taken from its estimator as it is built
(the mechanism the fit runs, at the part it charges, on the values it reads, captured by a spy on the real
fit of D and D'), and audited on worst-case neighbours against its charged part:

* the correct release passes;
* the "twice" mutant (the same mechanism at twice the charged part: the selection's factor 1/2 dropped, i.e.
  the utility's sensitivity taken as 1/2) is flagged;
* at user level, the "per row" mutant (the per-user reduction dropped: one user of two rows moves two values,
  the sensitivity 2 of a user taken as 1) is flagged.

Worst-case neighbours (the exact-sensitivity tests' pair, arranged so that one threshold event carries most
of the claim, as in test_centre_weight.py): ``k - 1`` values at the grid's low end, the target rank ``k`` at a
grid point ``v``, the rest in the next cell; one low value moves past the grid's top (every grid point between
them loses one rank). Exact threshold-event losses (``pmf``): 0.72 of the claim for the medians, 0.97 for the
quartile q1; 1.68 and 1.99 at twice the part.

The vectorised draws (``release(values, rng, size=draws)``) keep each audit to about a second (CI); the slow
tier repeats them over seeds for the power table (tests/slow/test_t2_twice_mutants.py).

Session 21 adds the label bounds and the upper quartiles: the growth regressor's label spread (``LABEL_SPREAD``, the
split median of ``|y - c|``) and DPLinearRegressor's upper label spread (``LABEL_UPPER``, its 0.8-quantile), both
taken from fits without an intercept (``c = 0``: the values are ``|y|``, and given a released ``c`` the argument is
the same, ``c`` being public to the release), each at part 1.0 (epsilon 20, public); the q3 of the scaler's auto
bounds (part 1.5) and of the user-level column scaling (part 2.0, with its per-row mutant). The signed bounds grid
makes each draw about 10 times dearer than on the label grid: 10 000 draws per side there. On the worst pair the
0.8-quantile's law is the median's up to the mass of the cells above the target (utility below ``-0.2 n``: at most
``e^-20`` at part 1), so the two label audits certify the same bounds with the same seeds: the upper label spread's
audit checks its part, not a different worst case. Power over 10 seeds (correct / twice [/ per row], against the
part): label spreads 0.50-0.65 / 1.60-1.67 (30 000 draws); scaler q3 0.10-0.44 / 1.98-2.24 against 1.5; user column
q3 0.71-1.04 / 2.93-3.28 / 2.20-2.44 against 2.0 (tests/slow/test_t2_twice_mutants.py).

And the column scaling's median-and-spread mode (DPLinearRegressor in its band, 4 columns, 25 rows, epsilon 48): the
column median (signed grid, part 2.0; the fit's own rows) 0.71-1.04 / 2.93-3.28 (10 000 draws; the same numbers as
the user column q3: on these pairs the laws differ only by the cells ``(1 - q) n`` ranks off, ``e^-10`` or less),
and the column spread (the grid its released median sets, part 1.0; its mechanism from the fit, the pair built on the
deviations given the released median) 0.74-0.82 / 1.42-1.52 (30 000 draws; 0.67-0.78 / 1.66-1.80 on the former fixed
grid). The row-level column q1 and q3 (DPLinearRegressor, one stage, every row, part 1.5): 0.10-0.44 / 1.98-2.24 each
(10 000 draws).

Session 21b: every audit above on both sampling paths (``NOISES``). The former ones ran on ``noise="float"`` only; the
library's default is ``noise="secure"`` (exact rational gaps, exact ``Bernoulli(exp(-gap))`` coins). The secure
versions fit with ``noise="secure"`` (the spies check the captured mechanism's ``noise``) and draw with the sampler a
fit's one release runs (:func:`secure_draws`: the visiting algorithm ``select_rows_u64`` over one table row per
draw; row 0 is the fit's release draw for draw, test_secure_draws_are_the_fits_sampler). It costs about what the
float path's vectorised draws cost (0.25 s per 10 000 on the signed bounds grid, 1 s per 100 000 on the label grid),
so the secure audits keep the float ones' draw counts, except the user data norm's per-row audit at 40 000 draws
(100 000 on the float path; 2.2 s there). The user column q1 runs at part 2.0 (epsilon 16, as the q3) with 10 000
draws on both paths: at part 1.0 and 30 000 draws the twice mutant certified 1.19-1.54 (secure) and 1.21-1.48
(float) over 10 seeds, at the 1.2 margin. Power over 10 seeds on the secure path (correct / twice
[/ per row]): label spreads, growth row bound and user data norm 0.50-0.71 / 1.56-1.73 (per row 1.19-1.31 against
1); scaler and row-level column q1 and q3 0.09-0.42 / 1.87-2.19 against 1.5; user column q1 and q3, column median
0.70-1.12 / 2.85-3.25 (q3 per row 2.27-2.47) against 2; column spread 0.66-0.76 / 1.65-1.76
(tests/slow/test_t2_twice_mutants.py).

And stage 2 of the two-stage column quartiles (quartiles of ``x - centre_1`` on the odd rows, ``centre_1`` stage 1's
released centre; DPLinearRegressor, 4 columns, 128 rows, epsilon 48, part 1.5): a pair fixed before ``centre_1`` is
drawn cannot be worst about it, so :func:`second_stage_pair` first fits once to learn ``centre_1`` at
``random_state=0`` (stage 1 reads only the even rows, kept the same on every fit), then puts the odd rows at
``centre_1 + v``, ``(v, v')`` the worst pair in its cells' interiors, and refits D and D' (one row apart): the same
``centre_1`` on both (asserted), stage 2's mechanisms and the values it reads (``x - centre_1``, with the fit's
counts) from the fits. The audit draws stage 2 anew given that ``centre_1`` (stage 2 must be ``epsilon``-DP for each
released ``centre_1``; the composition's argument). q1 and q3, both paths: 0.09-0.44 / 1.87-2.24 against 1.5.
"""

import dataclasses
import functools

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor, DPStandardScaler, UserLevelDPLogistic
from sklearn_dpsco._fast._discrete import select_rows_u64
from sklearn_dpsco._mechanisms._quantile import DEFAULT_SELECTION
from sklearn_dpsco._scale_estimation import _check_levels, _column_mechanisms
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model import _auto_scales, _column_scaling
from sklearn_dpsco.linear_model._auto_scales import every_kth_row
from sklearn_dpsco.preprocessing import _scaler
from sklearn_dpsco.testing import audit_epsilon


#: Both sampling paths: "float" (rng weights, the former audits' path) and "secure" (the library's default: exact
#: rational gaps and exact coins), each release taken from a real fit with that ``noise``.
NOISES = ("float", "secure")


def worst_pair(mechanism, n, anchor=1.0):
    """``(D, D')`` values for ``mechanism`` with ``n`` values: ``k - 1`` at the grid's lowest positive point,
    rank ``k`` at the grid point ``anchor``, the rest at the next grid point; D' moves one low value to the
    grid's last finite point."""
    points = mechanism.grid.points
    j = int(np.searchsorted(points, anchor))
    k = mechanism.target_rank(n)
    low, high = points[points > 0][0], points[-2]
    d = np.r_[np.full(k - 1, low), points[j], np.full(n - k, points[j + 1])]
    dp = d.copy()
    dp[0] = high
    return d, dp


def twice(mechanism):
    """The mutant: the same release at twice its charged part (the utility's sensitivity taken as 1/2)."""
    return dataclasses.replace(mechanism, epsilon=2.0 * mechanism.epsilon)


#: Rows per call of the secure sampler (its uint64 gap tables are ``rows x grid size``; the same draws in any chunking).
SECURE_CHUNK = 4096


def secure_draws(mechanism, values, rng, draws, chunk=SECURE_CHUNK):
    """``draws`` independent releases of ``mechanism`` (``noise="secure"``) on ``values``, by the sampler a fit's
    one release runs: the exact gaps (``_gaps_u64``, the integers of ``release``) and McKenna and Sheldon's visiting
    algorithm with exact ``Bernoulli(exp(-gap))`` coins (``select_rows_u64``, what ``select_exact_u64`` and the
    column quantiles' ``release_counts_columns`` call), one table row per draw. Row 0 is draw for draw the release a
    fit makes with the same generator (test_secure_draws_are_the_fits_sampler)."""
    nums, dens, p = mechanism._gaps_u64(np.asarray(mechanism.utility(values), dtype=np.int64))
    out = np.empty(draws, dtype=np.int64)
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        out[start:start + rows] = select_rows_u64(rng, np.broadcast_to(nums, (rows, nums.size)),
                                                  np.broadcast_to(dens, (rows, nums.size)), p)
    return mechanism.grid.points[out]


def draw(mechanism, values, rng, draws):
    """``draws`` releases on ``values``: the float path's vectorised ``release(size=)``, the secure path's exact
    sampler (:func:`secure_draws`)."""
    if mechanism.noise == "secure":
        return secure_draws(mechanism, values, rng, draws)
    return mechanism.release(values, rng, size=draws)


def audit_release(mechanism, d, dp, claimed, draws, seed=0):
    """The audit of ``draws`` releases of ``mechanism`` on the values ``d`` and ``dp`` against ``claimed``."""
    a = draw(mechanism, d, np.random.default_rng(seed), draws)
    b = draw(mechanism, dp, np.random.default_rng(seed + 10_000), draws)
    return audit_epsilon(a, b, claimed)


def check_twice(mechanism, d, dp, draws=30_000, seed=0):
    """The correct release passes at its part; the twice mutant is flagged, well above the part."""
    claimed = mechanism.epsilon
    honest = audit_release(mechanism, d, dp, claimed, draws, seed)
    assert not honest.violation, honest
    doubled = audit_release(twice(mechanism), d, dp, claimed, draws, seed)
    assert doubled.violation and doubled.lower_bound > 1.2 * claimed, doubled
    return honest, doubled


# --------------------------------------------------------------------------- captured from the real fits
def _spy_scale_plan(monkeypatch):
    """Records ``(plan, values of every target)`` of each ScalePlan release (the values as release reads them)."""
    seen = []
    original = _auto_scales.ScalePlan.release

    def spy(self, data, rng):
        out, event = original(self, data, rng)
        rows = every_kth_row(data, self.stride)
        values, released = [], {}
        for target in self.targets:
            values.append(np.abs(_auto_scales.finite(target.values(rows, dict(released)))))
            released[target.name] = out[target.name]
        seen.append((self, values))
        return out, event

    monkeypatch.setattr(_auto_scales.ScalePlan, "release", spy)
    return seen


def _spy_column_quantiles(monkeypatch, module):
    """Records ``(mechanisms, X)`` of each private_column_quantiles call of ``module`` (as charged)."""
    seen = []
    original = module.private_column_quantiles

    def spy(X, qs, budget, *, grid=None, method=DEFAULT_SELECTION, **kwargs):
        seen.append((_column_mechanisms(_check_levels(qs), budget, np.asarray(X).shape[1], grid, method),
                     np.asarray(X)))
        return original(X, qs, budget, grid=grid, method=method, **kwargs)

    monkeypatch.setattr(module, "private_column_quantiles", spy)
    return seen


def growth_row_bound_release(monkeypatch, n=200, epsilon=40.0, noise="float"):
    """The growth regressor's row-bound release on the worst pair: ``(mechanism, D values, D' values)``.

    One feature without intercept (row norms are ``|x|``), epsilon 40 (public) so that the row bound's part
    is about 1 (the audit's power grows with the part)."""
    seen = _spy_scale_plan(monkeypatch)
    probe = _auto_scales.quantile_mechanism_for(_auto_scales.ROW_LEVEL, _auto_scales.Budget(1.0, 0.0, "float"))
    d, dp = worst_pair(probe, n)
    values = []
    for x in (d, dp):
        X = x[:, None].copy()
        y = np.where(np.arange(n) % 2, 1.0, -1.0)
        DPGrowthAdaptiveRegressor(epsilon=epsilon, fit_intercept=False, grid_size=33, noise=noise, random_state=0,
                                  accountant=BudgetAccountant()).fit(X, y)
        plan, vals = seen[-1]
        i = [t.name for t in plan.targets].index("row_bound")
        values.append(vals[i])
    mechanism = plan.mechanisms()[i]
    assert mechanism.noise == noise
    return mechanism, plan, values[0], values[1]


def test_growth_row_bound_reads_the_worst_pair_at_its_part(monkeypatch):
    mechanism, plan, a, b = growth_row_bound_release(monkeypatch)
    d, dp = worst_pair(mechanism, a.size)
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, dp)
    assert mechanism.q == _auto_scales.ROW_LEVEL and mechanism.grid is plan.grid
    assert mechanism.epsilon == plan.parts[[t.name for t in plan.targets].index("row_bound")].epsilon
    assert 0.5 < mechanism.epsilon < 2.0
    # exact sensitivity on this pair: every utility moves by at most one rank, and one is attained
    diff = np.abs(np.array(mechanism.utility(a)) - np.array(mechanism.utility(b)))
    assert diff.max() == 1


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_a_growth_row_bound_at_twice_its_part(monkeypatch, noise):
    mechanism, _, a, b = growth_row_bound_release(monkeypatch, noise=noise)
    check_twice(mechanism, a, b)


def user_data_norm_release(monkeypatch, n_users=100, m=2, epsilon=None, noise="float"):
    """UserLevelDPLogistic's data_norm="auto" release on the worst user pair: users of ``m`` rows of the same
    norm (a user's largest row norm is that norm), D' replaces every row of one low user."""
    seen = _spy_scale_plan(monkeypatch)
    probe = _auto_scales.quantile_mechanism_for(_auto_scales.DATA_NORM_LEVEL, _auto_scales.Budget(1.0, 0.0, "float"))
    d, dp = worst_pair(probe, n_users)
    groups = np.repeat(np.arange(n_users), m)
    y = (np.arange(n_users * m) % 2).astype(int)
    out = []
    for norms in (d, dp):
        X = np.zeros((n_users * m, 2))
        X[:, 0] = np.repeat(norms, m)
        kwargs = {} if epsilon is None else {"epsilon": epsilon}
        UserLevelDPLogistic(solver="user_clip", noise=noise, data_norm="auto", column_scaling=False,
                            random_state=0, **kwargs).fit(
            X, y, groups)
        plan, vals = seen[-1]
        assert [t.name for t in plan.targets] == ["data_norm"]
        out.append((vals[0], np.abs(X[:, 0])))
    assert plan.mechanisms()[0].noise == noise
    return plan.mechanisms()[0], plan, out


@pytest.mark.statistical
@pytest.mark.parametrize("noise,per_row_draws", [("float", 100_000), ("secure", 40_000)])
def test_audit_flags_user_data_norm_at_twice_its_part_and_per_row(monkeypatch, noise, per_row_draws):
    """The per-user release passes at its part; twice the part, and the per-row values (a user of two rows
    moves two of them: the user's sensitivity 2 taken as 1), are flagged. The secure path's per-row audit at
    40 000 draws (the exact sampler costs 2.2 s per 100 000 here; 30 000 certified 1.21-1.26 on 4 seeds)."""
    mechanism, plan, ((a, rows_a), (b, rows_b)) = user_data_norm_release(monkeypatch, epsilon=20.0, noise=noise)
    d, dp = worst_pair(mechanism, a.size)
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, dp)
    assert mechanism.epsilon == plan.parts[0].epsilon and 0.5 < mechanism.epsilon < 2.0
    check_twice(mechanism, a, b)
    per_row = audit_release(mechanism, rows_a, rows_b, mechanism.epsilon, per_row_draws)
    assert per_row.violation, per_row


def column_quartile_release(monkeypatch, module, fit, n, d_values):
    """``(mechanisms, [column 0 as read on each of d_values])`` of the column quartiles ``fit`` releases."""
    seen = _spy_column_quantiles(monkeypatch, module) if module is _scaler else _spy_column_stage(monkeypatch)
    out = []
    for x in d_values:
        fit(x)
        mechanisms, X = seen[-1]
        out.append(X[:, 0].copy())
    return mechanisms, out


def _spy_column_stage(monkeypatch):
    """Records ``(mechanisms, rows)`` of each quartile stage of the column scaling (the rows it reads, the
    mechanisms of its charged budget)."""
    seen = []
    original = _column_scaling.ColumnScalingPlan._quartiles

    def spy(self, X, offset, step, shift, rng, n_jobs=None):
        assert shift is None
        rows = np.asarray(X[offset::step], dtype=float)
        seen.append((_column_mechanisms(_check_levels(_scaler.BOUNDS_LEVELS), self.budget, rows.shape[1],
                                        _scaler.BOUNDS_GRID, DEFAULT_SELECTION), rows))
        return original(self, X, offset, step, shift, rng, n_jobs)

    monkeypatch.setattr(_column_scaling.ColumnScalingPlan, "_quartiles", spy)
    return seen


def test_scaler_quartile_reads_the_worst_pair_at_its_part(monkeypatch):
    n = 200
    probe = _scaler_probe()
    d, dp = worst_pair(probe, n)
    mechanisms, (a, b) = column_quartile_release(monkeypatch, _scaler, _scaler_fit, n, (d, dp))
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, dp)
    assert mechanisms[0].q == 0.25 and mechanisms[0].grid is _scaler.BOUNDS_GRID
    diff = np.abs(np.array(mechanisms[0].utility(a)) - np.array(mechanisms[0].utility(b)))
    assert diff.max() == 1


def _scaler_probe():
    return _auto_scales.quantile_mechanism_for(0.25, _auto_scales.Budget(1.0, 0.0, "float"), _scaler.BOUNDS_GRID)


def _scaler_fit(x, epsilon=20.0, noise="float"):
    DPStandardScaler(epsilon=epsilon, bounds="auto", with_std=False, noise=noise, random_state=0,
                     accountant=BudgetAccountant()).fit(x[:, None])


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_the_scaler_bounds_quartile_at_twice_its_part(monkeypatch, noise):
    n = 200
    d, dp = worst_pair(_scaler_probe(), n)
    mechanisms, (a, b) = column_quartile_release(monkeypatch, _scaler, functools.partial(_scaler_fit, noise=noise),
                                                 n, (d, dp))
    assert 0.5 < mechanisms[0].epsilon < 2.0 and mechanisms[0].noise == noise
    check_twice(mechanisms[0], a, b, draws=10_000)


def _user_columns_fit(m, epsilon=8.0, noise="float"):
    """The user path's column release as test_column_scaling_user.py runs it: the estimator's row selection
    (one row per user), then the planned release (no solver: too few users for the fit's own rule)."""
    from sklearn_dpsco._budget import Budget

    def fit(x):
        groups = np.repeat(np.arange(x.size), m)
        X = np.repeat(x, m)[:, None]
        y = (np.arange(X.shape[0]) % 2).astype(int)
        est = UserLevelDPLogistic(epsilon=epsilon, noise=noise, column_scaling=True)
        inputs = est._validate_fit_inputs(X, y, groups)
        plan = _column_scaling.ColumnScalingPlan.build(Budget(epsilon, 0.0, noise), inputs.n_samples, 1, True)
        plan.release(est._column_rows(inputs, plan), np.random.default_rng(0))

    return fit


def _user_column_pair(monkeypatch, n_users=40, m=2, noise="float", epsilon=8.0):
    d, dp = worst_pair(_scaler_probe(), n_users)
    mechanisms, (a, b) = column_quartile_release(monkeypatch, _column_scaling, _user_columns_fit(m, epsilon, noise),
                                                 n_users, (d, dp))
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, dp)
    assert mechanisms[0].q == 0.25 and mechanisms[0].noise == noise
    assert mechanisms[0].epsilon == pytest.approx(epsilon / 8.0)  # the share 0.25, 2 quartiles of one column
    return mechanisms[0], a, b, m


@pytest.mark.statistical
@pytest.mark.parametrize("noise,epsilon,draws", [("float", 16.0, 10_000), ("secure", 16.0, 10_000)])
def test_audit_flags_user_column_quartile_at_twice_its_part(monkeypatch, noise, epsilon, draws):
    """The user path's q1 (one row per user): passes at its part; twice the part is flagged. Part 2.0 (epsilon 16,
    as the q3's audit) at 10 000 draws on both paths (about 1 s each). At part 1.0 and 30 000 draws the twice
    mutant certified 1.21-1.48 (float) and 1.19-1.54 (secure) over 10 seeds, at the 1.2 margin
    (tests/slow/test_t2_twice_mutants.py keeps that measurement)."""
    mechanism, a, b, _ = _user_column_pair(monkeypatch, noise=noise, epsilon=epsilon)
    check_twice(mechanism, a, b, draws=draws)


@pytest.mark.slow
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_user_column_quartile_on_every_row(monkeypatch, noise):
    """Every row (two rows per user: the row-level selection, a user's sensitivity 2 taken as 1) is flagged;
    exact threshold-event loss 1.44 of the claim: 100 000 draws (30 s; 30 000 were not enough)."""
    mechanism, a, b, m = _user_column_pair(monkeypatch, noise=noise)
    per_row = audit_release(mechanism, np.repeat(a, m), np.repeat(b, m), mechanism.epsilon, 100_000)
    assert per_row.violation, per_row


# --------------------------------------------------------------------------- label bounds (session 21)
def label_bound_release(monkeypatch, cls, target, n=200, epsilon=20.0, noise="float"):
    """``(mechanism, plan, D values, D' values)`` of the "auto" label bound of ``cls`` fitted without an intercept
    (no label centre: the values read are ``|y|``) on the worst pair of labels; X is public (rows +-0.5, row_bound
    declared), so the label bound is the plan's only estimate."""
    seen = _spy_scale_plan(monkeypatch)
    probe = _auto_scales.quantile_mechanism_for(target.q, _auto_scales.Budget(1.0, 0.0, "float"))
    d, dp = worst_pair(probe, n)
    values = []
    for y in (d, dp):
        X = np.tile([[0.5], [-0.5]], (n // 2, 1))
        cls(epsilon=epsilon, fit_intercept=False, row_bound=1.0, label_bound="auto", noise=noise, random_state=0,
            accountant=BudgetAccountant()).fit(X, y)
        plan, vals = seen[-1]
        assert plan.targets == (target,) and plan.stride == 1
        values.append(vals[0])
    np.testing.assert_array_equal(values[0], d)
    np.testing.assert_array_equal(values[1], dp)
    mechanism = plan.mechanisms()[0]
    assert mechanism.q == target.q and mechanism.epsilon == plan.parts[0].epsilon and mechanism.noise == noise
    diff = np.abs(np.array(mechanism.utility(values[0])) - np.array(mechanism.utility(values[1])))
    assert diff.max() == 1  # exact sensitivity on this pair, attained
    return mechanism, plan, values[0], values[1]


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_the_growth_label_spread_at_twice_its_part(monkeypatch, noise):
    """The split median of ``|y|`` (LABEL_SPREAD, part 1.0): passes; twice the part is flagged."""
    mechanism, _, a, b = label_bound_release(monkeypatch, DPGrowthAdaptiveRegressor, _auto_scales.LABEL_SPREAD,
                                             noise=noise)
    assert mechanism.epsilon == pytest.approx(1.0)
    check_twice(mechanism, a, b)


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_the_upper_label_spread_at_twice_its_part(monkeypatch, noise):
    """DPLinearRegressor's 0.8-quantile of ``|y|`` (LABEL_UPPER, weight 3: 200 ranks, no fallback; part 1.0):
    passes; twice the part is flagged."""
    mechanism, _, a, b = label_bound_release(monkeypatch, DPLinearRegressor, _auto_scales.LABEL_UPPER, noise=noise)
    assert mechanism.epsilon == pytest.approx(1.0)
    check_twice(mechanism, a, b)


# --------------------------------------------------------------------------- upper quartiles (session 21)
def _q3_probe():
    return _auto_scales.quantile_mechanism_for(0.75, _auto_scales.Budget(1.0, 0.0, "float"), _scaler.BOUNDS_GRID)


def scaler_q3_pair(monkeypatch, n=200, noise="float"):
    d, dp = worst_pair(_q3_probe(), n)
    mechanisms, (a, b) = column_quartile_release(monkeypatch, _scaler, functools.partial(_scaler_fit, noise=noise), n,
                                                 (d, dp))
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, dp)
    mechanism = mechanisms[1]
    assert mechanism.q == 0.75 and mechanism.grid is _scaler.BOUNDS_GRID and 0.5 < mechanism.epsilon < 2.0
    assert mechanism.noise == noise
    diff = np.abs(np.array(mechanism.utility(a)) - np.array(mechanism.utility(b)))
    assert diff.max() == 1
    return mechanism, a, b


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_the_scaler_bounds_q3_at_twice_its_part(monkeypatch, noise):
    """The scaler's upper quartile (part 1.5): passes; twice the part is flagged (10 000 draws, about 1.3 s)."""
    mechanism, a, b = scaler_q3_pair(monkeypatch, noise=noise)
    check_twice(mechanism, a, b, draws=10_000)


def user_column_q3_pair(monkeypatch, n_users=40, m=2, epsilon=16.0, noise="float"):
    """The user path's q3 (one row per user) at epsilon 16 (public): part 2.0. At part 1.0 (epsilon 8) 10 000
    draws certified the twice mutant at 0.91 against 1 and 30 000 (4.5 s) at 1.30; at 2.0 10 000 suffice."""
    d, dp = worst_pair(_q3_probe(), n_users)
    mechanisms, (a, b) = column_quartile_release(monkeypatch, _column_scaling, _user_columns_fit(m, epsilon, noise),
                                                 n_users, (d, dp))
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, dp)
    mechanism = mechanisms[1]
    assert mechanism.q == 0.75 and mechanism.epsilon == pytest.approx(2.0) and mechanism.noise == noise
    return mechanism, a, b, m


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_user_column_q3_at_twice_its_part_and_per_row(monkeypatch, noise):
    """The user path's q3: passes at its part; twice the part, and every row (two per user: the user's
    sensitivity 2 taken as 1), are flagged (10 000 draws per side, about 2 s)."""
    mechanism, a, b, m = user_column_q3_pair(monkeypatch, noise=noise)
    check_twice(mechanism, a, b, draws=10_000)
    per_row = audit_release(mechanism, np.repeat(a, m), np.repeat(b, m), mechanism.epsilon, 10_000)
    assert per_row.violation, per_row


# --------------------------------------------------------------------------- column median and spread (session 21)
def _spy_column_counts(monkeypatch):
    """Records ``(mechanisms, counts, n, released)`` of each column_quantiles_from_counts call of the column
    scaling (the mechanisms of its charged budget, the grid counts it reads, the released values)."""
    seen = []
    original = _column_scaling.column_quantiles_from_counts

    def spy(counts, n, qs, budget, *, grid=None, method=DEFAULT_SELECTION, random_state=None):
        out = original(counts, n, qs, budget, grid=grid, method=method, random_state=random_state)
        seen.append((_column_mechanisms(_check_levels(qs), budget, np.asarray(counts).shape[0], grid, method),
                     np.array(counts), n, np.array(out.value[0])))
        return out

    monkeypatch.setattr(_column_scaling, "column_quantiles_from_counts", spy)
    return seen


def median_mad_release(monkeypatch, n=25, epsilon=48.0, noise="float"):
    """The median-and-spread releases of DPLinearRegressor (column scaling "auto" in its median-and-spread band:
    4 columns, ``n epsilon = 1200``; epsilon 48, public, gives the medians part 2.0 and the spreads 1.0) on rows
    whose column 0 is the worst pair of the median's mechanism (the others public constants):
    ``(median mechanism, spread mechanism, D column 0, D' column 0, [(counts, released median)] per fit)``."""
    seen = _spy_column_counts(monkeypatch)
    probe = _auto_scales.quantile_mechanism_for(0.5, _auto_scales.Budget(1.0, 0.0, "float"), _scaler.BOUNDS_GRID)
    d, dp = worst_pair(probe, n)
    y = np.where(np.arange(n) % 2, 1.0, -1.0)
    others = np.tile([[0.5, -0.5, 0.25], [-0.5, 0.5, -0.25]], (n // 2 + 1, 1))[:n]
    fits = []
    for x in (d, dp):
        X = np.column_stack([x, others])
        est = DPLinearRegressor(epsilon=epsilon, noise=noise, random_state=0, accountant=BudgetAccountant()).fit(X, y)
        assert est.fit_info_["column_scaling"]["mode"] == "median_mad"
        (medians, counts, n_1, m), *columns = seen[-1 - X.shape[1]:]
        assert n_1 == n and all(c[2] == n for c in columns)  # every row, in memory
        np.testing.assert_array_equal(counts, _scaler.BOUNDS_GRID.column_counts(X))  # the medians read the rows
        # the spreads read |x_j - m_j|, m the released medians (public to them), column j on the grid m_j sets
        for j, (_, spread_counts, _, _) in enumerate(columns):
            grid = _column_scaling.spread_grid(m[j])
            np.testing.assert_array_equal(spread_counts, grid.column_counts(np.abs(X[:, j:j + 1] - m[j])))
        assert columns[0][0][0].grid is _column_scaling.spread_grid(m[0])
        fits.append((medians, columns[0][0]))
    (median,), (spread,) = fits[0]
    # the same mechanisms on D and D', up to the spread's grid, which column 0's released median sets
    assert fits[1][0] == fits[0][0] and fits[1][1][0].epsilon == spread.epsilon
    assert median.q == spread.q == 0.5 and median.grid is _scaler.BOUNDS_GRID
    assert median.epsilon == pytest.approx(2.0) and spread.epsilon == pytest.approx(1.0)
    assert median.noise == spread.noise == noise
    return median, spread, d, dp


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_the_column_median_at_twice_its_part(monkeypatch, noise):
    """The median-and-spread mode's column median (signed grid, part 2.0): passes; twice the part is flagged."""
    median, _, a, b = median_mad_release(monkeypatch, noise=noise)
    check_twice(median, a, b, draws=10_000)


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
def test_audit_flags_the_column_spread_at_twice_its_part(monkeypatch, noise):
    """The column spread (median of ``|x - m|`` on ``spread_grid(m)``, part 1.0), its mechanism as the fit charges it, on the
    worst pair of deviations: given the released median ``m`` (public to this release) a replaced row moves one
    deviation (the exact-sensitivity test: test_column_scaling_median.py), so the pair is built on the deviations
    themselves (a pair of rows ``m +- v`` cannot be fixed before ``m`` is drawn). Passes; twice the part is flagged."""
    _, spread, _, _ = median_mad_release(monkeypatch, noise=noise)
    d, dp = worst_pair(spread, 25)
    diff = np.abs(np.array(spread.utility(d)) - np.array(spread.utility(dp)))
    assert diff.max() == 1
    check_twice(spread, d, dp)


# --------------------------------------------------------------------------- row-level column quartiles (session 21)
def row_column_quartile_pair(monkeypatch, q, n=64, epsilon=48.0, noise="float"):
    """The row-level column quartiles of DPLinearRegressor (column scaling "auto", 4 columns, one stage, every row:
    ``n epsilon = 3072`` keeps the share at its cap 0.25 and each release at 96 ranks, below the two stages' 150;
    epsilon 48, public, gives each quartile part 1.5) on rows whose column 0 is the worst pair for level ``q``:
    ``(mechanism, D column 0, D' column 0)``."""
    seen = _spy_column_stage(monkeypatch)
    d, dp = worst_pair(_auto_scales.quantile_mechanism_for(q, _auto_scales.Budget(1.0, 0.0, "float"),
                                                           _scaler.BOUNDS_GRID), n)
    y = np.where(np.arange(n) % 2, 1.0, -1.0)
    others = np.tile([[0.5, -0.5, 0.25], [-0.5, 0.5, -0.25]], (n // 2, 1))
    out = []
    for x in (d, dp):
        est = DPLinearRegressor(epsilon=epsilon, noise=noise, random_state=0, accountant=BudgetAccountant()).fit(
            np.column_stack([x, others]), y)
        info = est.fit_info_["column_scaling"]
        assert info["mode"] == "quartiles" and info["stages"] == 1 and info["row_stride"] == 1
        mechanisms, rows = seen[-1]
        out.append(rows[:, 0].copy())
    np.testing.assert_array_equal(out[0], d)
    np.testing.assert_array_equal(out[1], dp)
    mechanism = mechanisms[list(_scaler.BOUNDS_LEVELS).index(q)]
    assert mechanism.q == q and mechanism.epsilon == pytest.approx(1.5) and mechanism.noise == noise
    return mechanism, out[0], out[1]


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("q", [0.25, 0.75])
def test_audit_flags_the_row_column_quartiles_at_twice_their_part(monkeypatch, q, noise):
    """The row-level column q1 and q3 (part 1.5): pass; twice the part is flagged (10 000 draws, about 1.3 s each)."""
    mechanism, a, b = row_column_quartile_pair(monkeypatch, q, noise=noise)
    check_twice(mechanism, a, b, draws=10_000)


def test_secure_draws_are_the_fits_sampler():
    """:func:`secure_draws` row 0 is the release a fit makes with the same generator (``release`` with
    ``size=None`` on the secure path: ``select_exact_u64``, the visiting algorithm), draw for draw, and the
    later rows continue the same generator (chunks change nothing)."""
    mechanism = _auto_scales.quantile_mechanism_for(0.75, _auto_scales.Budget(1.5, 0.0, "secure"), _scaler.BOUNDS_GRID)
    d, _ = worst_pair(mechanism, 200)
    for seed in range(5):
        assert secure_draws(mechanism, d, np.random.default_rng(seed), 1)[0] == mechanism.release(
            d, np.random.default_rng(seed))
    rng = np.random.default_rng(7)
    ones = [mechanism.release(d, rng) for _ in range(40)]
    np.testing.assert_array_equal(secure_draws(mechanism, d, np.random.default_rng(7), 40, chunk=7), ones)


# --------------------------------------------------------------------------- two-stage column quartiles: stage 2
def _spy_quartile_stages(monkeypatch):
    """Records ``(offset, step, shift, rows)`` of each quartile stage of the column scaling (``shift`` the released
    ``centre_1`` on stage 2, None on stage 1; ``rows`` the rows it reads, before the shift)."""
    seen = []
    original = _column_scaling.ColumnScalingPlan._quartiles

    def spy(self, X, offset, step, shift, rng, n_jobs=None):
        seen.append((offset, step, None if shift is None else np.array(shift), np.asarray(X[offset::step], dtype=float)))
        return original(self, X, offset, step, shift, rng, n_jobs)

    monkeypatch.setattr(_column_scaling.ColumnScalingPlan, "_quartiles", spy)
    return seen


def cell_interior(grid, values):
    """Each value, a point of ``grid``, moved to the middle of its cell ``(t_{i-1}, t_i]``: the same counts, and a
    shift by a float ``c`` and back (``(c + v) - c``) stays in the cell."""
    i = np.searchsorted(grid.points, values)
    np.testing.assert_array_equal(grid.points[i], values)
    return (grid.points[i - 1] + grid.points[i]) / 2.0


def second_stage_pair(monkeypatch, q, n=128, epsilon=48.0, noise="secure"):
    """Stage 2 of the two-stage column quartiles of DPLinearRegressor (4 columns, ``n epsilon = 6144``: each release
    of one stage would get 192 ranks, above the two stages' 150; stride 1: stage 1 reads the even rows, stage 2 the
    odd ones shifted by ``centre_1``, each quartile at part 1.5), on the worst pair of stage 2's values given
    ``centre_1``: ``(mechanism, D values, D' values, centre_1)``.

    Taken from the real fit: stage 2's mechanisms (from the budget the fit passes to its selection), ``centre_1``
    (stage 1's release at ``random_state=0``) and the values stage 2 reads (``x - centre_1`` on the odd rows, as
    the fit computes them). Built by the test: the odd rows, ``centre_1 + v`` with ``(v, v')`` the worst pair of
    level ``q`` moved into its cells' interiors (the same counts), once ``centre_1`` is known from a first fit with
    the same even rows (stage 1 reads only those, so D and D' see the same ``centre_1``: asserted). D and D'
    differ in one row (row 1). Not from the fit: the releases' randomness given ``centre_1`` (the audit draws
    stage 2 anew, conditionally on this one value of ``centre_1``: what the stages' composition needs, stage 2
    ``epsilon``-DP for each released ``centre_1``)."""
    stages = _spy_quartile_stages(monkeypatch)
    selections = _spy_column_counts(monkeypatch)
    y = np.where(np.arange(n) % 2, 1.0, -1.0)
    others = np.tile([[0.5, -0.5, 0.25], [-0.5, 0.5, -0.25]], (n // 2, 1))
    even = 5.0 + np.linspace(-1.0, 1.0, n // 2)  # column 0 of stage 1's rows: the same on every fit

    def fit(odd):
        x = np.empty(n)
        x[0::2], x[1::2] = even, odd
        X = np.column_stack([x, others])
        est = DPLinearRegressor(epsilon=epsilon, noise=noise, random_state=0, accountant=BudgetAccountant()).fit(X, y)
        info = est.fit_info_["column_scaling"]
        assert info["mode"] == "quartiles" and info["stages"] == 2 and info["row_stride"] == 1
        (o1, s1, shift_1, _), (o2, s2, centre_1, rows) = stages[-2:]
        assert (o1, s1, shift_1, o2, s2) == (0, 2, None, 1, 2)
        mechanisms, counts, n_2, _ = selections[-1]  # stage 2's selections: its mechanisms, the counts it reads
        assert n_2 == n // 2
        return X, centre_1[0], rows[:, 0], mechanisms, counts[0]

    _, centre_1, *_ = fit(even)  # a first fit: centre_1, stage 1's release at this seed
    probe = _auto_scales.quantile_mechanism_for(q, _auto_scales.Budget(1.0, 0.0, "float"), _scaler.BOUNDS_GRID)
    pair = worst_pair(probe, n // 2)
    out, rows = [], []
    for v in pair:
        X, c, column, mechanisms, counts = fit(centre_1 + cell_interior(_scaler.BOUNDS_GRID, v))
        assert c == centre_1  # the same stage-1 release on D and D'
        read = column - c  # what stage 2 reads, as the fit computes it (the counts below are the fit's)
        np.testing.assert_array_equal(counts, _scaler.BOUNDS_GRID.counts(read))
        np.testing.assert_array_equal(counts, _scaler.BOUNDS_GRID.counts(v))  # the worst pair's counts
        out.append(read)
        rows.append(X)
    assert np.flatnonzero((rows[0] != rows[1]).any(axis=1)).tolist() == [1]  # neighbours: one row replaced
    mechanism = mechanisms[list(_scaler.BOUNDS_LEVELS).index(q)]
    assert mechanism.q == q and mechanism.grid is _scaler.BOUNDS_GRID and mechanism.noise == noise
    assert mechanism.epsilon == pytest.approx(1.5)
    diff = np.abs(np.array(mechanism.utility(out[0])) - np.array(mechanism.utility(out[1])))
    assert diff.max() == 1  # exact sensitivity on this pair, attained
    return mechanism, out[0], out[1], centre_1


@pytest.mark.statistical
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("q", [0.25, 0.75])
def test_audit_flags_the_second_stage_quartiles_at_twice_their_part(monkeypatch, q, noise):
    """Stage 2's q1 and q3 (quartiles of ``x - centre_1``, part 1.5) on the worst pair given ``centre_1``: pass;
    twice the part is flagged (10 000 draws)."""
    mechanism, a, b, centre_1 = second_stage_pair(monkeypatch, q, noise=noise)
    assert 4.0 < centre_1 < 6.0  # a real shift (stage 1's rows lie in [4, 6])
    check_twice(mechanism, a, b, draws=10_000)
