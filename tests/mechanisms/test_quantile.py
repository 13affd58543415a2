"""Private quantiles over a public grid (doc/privacy/quantiles.rst): T0 exact checks, T1 audits.

T0: the grid, the utility's exact sensitivity on every replace-one pair of
small datasets (at most 1, and exactly 1 for some pair), the exact privacy
loss of both selection rules' laws on those pairs (at most epsilon; the
sensitivity-0.5 mutant exceeds it), permute-and-flip's closed-form law
against brute force over permutations, bad inputs, the budget split.
T1: the exact (secure) and float samplers against the laws (chi-square, with
a wrong-epsilon mutant that must be rejected), and statistical audits on
worst-case neighbours with the sensitivity-0.5 mutant and a data-dependent
grid mutant that must be flagged.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_dpsco._budget import Budget, split_scale_share
from sklearn_dpsco._mechanisms import QuantileMechanism, ScaleGrid
from sklearn_dpsco._mechanisms._calibrate import quantile_mechanism_for
from sklearn_dpsco._mechanisms._selection import permute_and_flip_pmf, select_exact, select_float
from sklearn_dpsco._scale_estimation import per_user_reduce, private_column_quantiles, private_quantile
from sklearn_dpsco.accounting import ComposedEvent, PureDPEvent, ZCDPEvent, epsilon_delta
from sklearn_dpsco.testing import audit_release_with_mutants, discrete_pmf_pvalue, epsilon_lower_bound_from_counts

ALPHA = 1e-6
METHODS = ("exponential", "permute_and_flip")
SMALL = ScaleGrid(-1, 2, 1)  # points 0, 0.5, 1, 2, 4
#: Positions that fall below, on, between and above the small grid's points.
POSITIONS = (0.0, 0.3, 0.5, 0.7, 1.5, 3.0, 4.0, 5.0)


def _neighbour_pairs(n, positions=POSITIONS):
    """Every multiset of ``n`` positions and every replace-one neighbour of it (as sorted tuples)."""
    for data in itertools.combinations_with_replacement(positions, n):
        for i in range(n):
            for v in positions:
                if v != data[i]:
                    yield data, tuple(sorted(data[:i] + (v,) + data[i + 1:]))


def _worst_over_pairs(statistic, distance, sizes, positions=POSITIONS):
    """``max distance(statistic(D), statistic(D'))`` over replace-one pairs; each statistic computed once.

    Both statistics are functions of the multiset, so a sorted tuple is a valid cache key.
    """
    cache = {}
    worst = 0
    for n in sizes:
        for d, dp in _neighbour_pairs(n, positions):
            for key in (d, dp):
                if key not in cache:
                    cache[key] = statistic(list(key))
            worst = max(worst, distance(cache[d], cache[dp]))
    return worst


# ------------------------------------------------------------------ T0: the grid
def test_default_grid_is_public_and_log_spaced():
    g = ScaleGrid()
    assert g.points[0] == 0.0 and g.points[1] == 2.0**-20 and g.points[-1] == 2.0**20
    assert len(g) == 1 + 40 * 2 + 1
    assert np.all(np.diff(g.points) > 0)
    ratios = g.points[2:] / g.points[1:-1]
    np.testing.assert_allclose(ratios, math.sqrt(2.0), rtol=1e-12)
    s = ScaleGrid(-3, 3, 1, signed=True)
    np.testing.assert_array_equal(s.points, [-8, -4, -2, -1, -0.5, -0.25, -0.125, 0, 0.125, 0.25, 0.5, 1, 2, 4, 8])
    with pytest.raises(ValueError):
        s.points[0] = 1.0  # read-only


@pytest.mark.parametrize("kwargs, error", [
    (dict(per_octave=0), ValueError), (dict(low_exponent=3, high_exponent=2), ValueError),
    (dict(low_exponent=1.5), TypeError), (dict(signed="yes"), TypeError), (dict(high_exponent=2000), ValueError),
])
def test_grid_rejects_bad_parameters(kwargs, error):
    with pytest.raises(error):
        ScaleGrid(**kwargs)


def test_counts_clamp_values_outside_the_grid():
    g = ScaleGrid(-1, 2, 1)
    # below the first point counts everywhere, above the last point nowhere: as if clamped to the ends
    np.testing.assert_array_equal(g.counts([0.0, 0.5, 0.6, 100.0]), [1, 2, 3, 3, 3])
    s = ScaleGrid(-1, 1, 1, signed=True)
    np.testing.assert_array_equal(s.counts([-50.0, 50.0]), [1, 1, 1, 1, 1, 1, 1])


# ------------------------------------------------------------------ T0: utility and exact sensitivity
def test_utility_is_zero_exactly_at_the_cell_holding_the_order_statistic():
    m = QuantileMechanism(0.5, 1.0, SMALL, noise="float")
    x = [0.3, 0.7, 1.5, 3.0]  # k = 2, x_(2) = 0.7 lies in the cell (0.5, 1]
    assert m.utility(x) == [-2, -1, 0, -1, -2]
    assert m.target_rank(4) == 2 and QuantileMechanism(0.0, 1.0).target_rank(7) == 1
    assert QuantileMechanism(0.9, 1.0).target_rank(10) == 9  # exact: 0.9 * 10 is not rounded up to 10


@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_utility_sensitivity_is_exactly_one(q):
    """|u(t) - u'(t)| <= 1 for every replace-one pair and every grid point, = 1 for some."""
    for grid in (SMALL, ScaleGrid(-1, 1, 1, signed=True)):
        m = QuantileMechanism(q, 1.0, grid, noise="float")
        positions = POSITIONS + ((-3.0, -0.7, -0.2) if grid.signed else ())
        worst = _worst_over_pairs(m.utility, lambda u, v: max(abs(a - b) for a, b in zip(u, v)), (1, 2, 3), positions)
        assert worst == 1


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("q", [0.25, 0.5, 0.9])
def test_exact_privacy_loss_of_the_laws(method, q):
    """max over outputs and replace-one pairs of |log p(r) - log p'(r)| <= epsilon;
    the sensitivity-0.5 mutant (weights exp(epsilon u)) exceeds epsilon."""
    eps = 1.0
    ok = QuantileMechanism(q, eps, SMALL, method, "float")
    mutant = QuantileMechanism(q, 2 * eps, SMALL, method, "float")
    def loss(p, p_other):
        return float(np.abs(np.log(p) - np.log(p_other)).max())

    loss_ok = _worst_over_pairs(ok.pmf, loss, (2, 3))
    loss_mutant = _worst_over_pairs(mutant.pmf, loss, (2, 3))
    assert loss_ok <= eps + 1e-12
    assert loss_ok > 0.5 * eps  # the pairs are not vacuous
    assert loss_mutant > eps * 1.2


def test_permute_and_flip_pmf_matches_brute_force():
    gaps = np.array([0.0, 0.3, 1.1, 0.0, 2.5])
    p = np.exp(-gaps)
    brute = np.zeros(gaps.size)
    perms = list(itertools.permutations(range(gaps.size)))
    for order in perms:
        survive = 1.0
        for r in order:
            brute[r] += survive * p[r] / len(perms)
            survive *= 1.0 - p[r]
    np.testing.assert_allclose(permute_and_flip_pmf(gaps), brute, rtol=1e-12)
    assert abs(brute.sum() - 1.0) < 1e-12


def test_secure_gaps_are_exact_rationals():
    m = QuantileMechanism(0.5, 0.1, SMALL)
    eps = m.exact_epsilon
    assert eps == Fraction(0.1)  # 0.1's float is a 55-bit dyadic: read exactly, not rounded
    gaps = m.gaps([0.3, 0.7, 1.5, 3.0])
    assert [Fraction(a, b) for a, b in gaps] == [eps / 2 * u for u in (2, 1, 0, 1, 2)]
    tiny = QuantileMechanism(0.5, 2.0**-70 * 3, SMALL)  # 3 * 2^-70: longer than 62 bits, rounded DOWN
    assert tiny.exact_epsilon == 0 or tiny.exact_epsilon <= Fraction(tiny.epsilon)
    odd = QuantileMechanism(0.5, 1.0 / 3.0 * 2.0**-20, SMALL)
    assert odd.exact_epsilon <= Fraction(odd.epsilon) < odd.exact_epsilon + Fraction(1, 1 << 62)


# ------------------------------------------------------------------ T0: input checks, events, budget
@pytest.mark.parametrize("values, error, match", [
    ([], ValueError, "empty"),
    ([1.0, np.nan], ValueError, "NaN"),
    ([1.0, np.inf], ValueError, "infinite"),
    ([[1.0, 2.0]], ValueError, "1-D"),
    ([1.0, -2.0], ValueError, "signed=True"),
    (["a", "b"], TypeError, "numeric"),
])
def test_bad_values_raise_before_any_draw(values, error, match):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(error, match=match):
        private_quantile(values, 0.5, Budget(1.0), random_state=rng)
    assert rng.bit_generator.state == state  # nothing was drawn


@pytest.mark.parametrize("kwargs, error", [
    (dict(q=0.5, epsilon=0.0), ValueError), (dict(q=0.5, epsilon=-1.0), ValueError),
    (dict(q=0.5, epsilon=math.nan), ValueError), (dict(q=1.5, epsilon=1.0), ValueError),
    (dict(q=math.nan, epsilon=1.0), ValueError), (dict(q="0.5", epsilon=1.0), TypeError),
    (dict(q=0.5, epsilon=1.0, method="gumbel"), ValueError), (dict(q=0.5, epsilon=1.0, noise="fast"), ValueError),
    (dict(q=0.5, epsilon=1.0, grid=[0, 1]), TypeError),
])
def test_bad_parameters_raise(kwargs, error):
    with pytest.raises(error):
        QuantileMechanism(**kwargs)


def test_budget_epsilon_must_be_positive():
    with pytest.raises(ValueError, match="epsilon"):
        private_quantile([1.0, 2.0], 0.5, Budget(0.0))


def test_event_and_composition_with_the_rest_of_a_fit():
    budget = Budget(1.0, 1e-6)
    scale, rest = split_scale_share(budget, 0.2)
    assert scale.delta == 0 and scale.epsilon + rest.epsilon <= budget.epsilon and rest.delta == budget.delta
    m = quantile_mechanism_for(0.9, scale)
    assert m.event == PureDPEvent(scale.epsilon) and m.noise == budget.noise
    # the rest spent as a zCDP share of its whole (rest.epsilon, delta): the composition fits the budget
    from sklearn_dpsco.accounting import zcdp_rho
    fit = ComposedEvent((m.event, ZCDPEvent(zcdp_rho(rest.epsilon, rest.delta))))
    eps, _ = epsilon_delta(fit, budget.delta)
    assert eps <= budget.epsilon * (1 + 1e-9)
    for bad in (0.0, 1.0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="scale_share"):
            split_scale_share(budget, bad)
    # several estimates share the scale budget equally
    parts = scale.split_equal(3)
    assert parts.epsilon * 3 <= scale.epsilon * (1 + 1e-12)


def test_column_quantiles_compose_one_event_per_release():
    X = np.random.default_rng(1).normal(size=(400, 3))
    out = private_column_quantiles(X, (0.05, 0.95), Budget(30.0, 1e-6, "float"), random_state=2)
    assert out.value.shape == (2, 3)
    assert np.all(out.value[0] < 0) and np.all(out.value[1] > 0)
    assert len(out.event.events) == 6
    assert epsilon_delta(out.event)[0] == pytest.approx(30.0)
    with pytest.raises(ValueError, match="level"):
        private_column_quantiles(X, (0.5, 2.0), Budget(1.0))
    with pytest.raises(ValueError, match="NaN"):
        private_column_quantiles(np.where(X > 2.5, np.nan, X), (0.5,), Budget(1.0))


def test_per_user_reduce_gives_one_value_per_user():
    values = [1.0, 5.0, 2.0, 3.0, 0.5]
    groups = ["b", "b", "a", "a", "c"]
    np.testing.assert_array_equal(per_user_reduce(values, groups), [3.0, 5.0, 0.5])
    np.testing.assert_array_equal(per_user_reduce(values, groups, "min"), [2.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="groups"):
        per_user_reduce(values, groups[:-1])
    with pytest.raises(ValueError, match="reduce"):
        per_user_reduce(values, groups, "mean")


def test_release_is_a_grid_point_and_seeded_releases_repeat():
    x = np.random.default_rng(0).exponential(3.0, size=300)
    for method in METHODS:
        for noise in ("secure", "float"):
            m = QuantileMechanism(0.5, 1.0, method=method, noise=noise)
            a = m.release(x, np.random.default_rng(5), size=50)
            assert np.isin(a, m.grid.points).all()
            np.testing.assert_array_equal(a, m.release(x, np.random.default_rng(5), size=50))
            assert isinstance(m.release(x, np.random.default_rng(5)), float)


def test_high_epsilon_finds_the_grid_cell_of_the_quantile():
    x = np.random.default_rng(0).lognormal(1.0, 1.0, size=2000)
    true = np.quantile(x, 0.9, method="inverted_cdf")
    best = ScaleGrid().points[np.searchsorted(ScaleGrid().points, true)]  # smallest grid point >= x_(k)
    for method in METHODS:
        assert private_quantile(x, 0.9, Budget(50.0), method=method, random_state=0).value == best


# ------------------------------------------------------------------ T1: samplers against the laws
N_GOF = 40_000


@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("method", METHODS)
def test_sampler_matches_the_law(method, noise):
    x = [0.3, 0.7, 0.7, 1.5, 3.0, 3.0]
    m = QuantileMechanism(0.5, 0.8, SMALL, method, noise)
    idx = m.release_index(x, np.random.default_rng(11), size=N_GOF)
    support = np.arange(len(SMALL))
    assert discrete_pmf_pvalue(idx, support, m.pmf(x)) > ALPHA
    wrong = QuantileMechanism(0.5, 1.2, SMALL, method, noise)  # the law at another epsilon must be rejected
    assert discrete_pmf_pvalue(idx, support, wrong.pmf(x)) < ALPHA


@pytest.mark.statistical
def test_exact_selection_with_wide_rationals():
    """Gaps with 100+-bit numerators and denominators go through the big-integer coins exactly."""
    den = 3 * (1 << 120)
    gaps = [(0, 1), (den // 2, den), (den, den), (3 * den, den)]  # 0, 1/2, 1, 3
    law = np.exp(-np.array([0, 0.5, 1.0, 3.0]))
    for method, pmf in (("exponential", law / law.sum()), ("permute_and_flip", permute_and_flip_pmf([0, 0.5, 1, 3]))):
        idx = select_exact(np.random.default_rng(3), gaps, method, size=N_GOF)
        assert discrete_pmf_pvalue(idx, np.arange(4), pmf) > ALPHA
        flt = select_float(np.random.default_rng(3), gaps, method, size=N_GOF)
        assert discrete_pmf_pvalue(flt, np.arange(4), pmf) > ALPHA


# ------------------------------------------------------------------ T1: privacy audits
#: Replace-one neighbours on the small grid with the largest threshold-event loss (found by
#: enumerating every pair of n = 3 values from POSITIONS at q = 0.5, epsilon = 1).
NEIGHBOURS = {
    "exponential": ([1.5, 3.0, 3.0], [1.5, 0.3, 3.0]),
    "permute_and_flip": ([0.3, 1.5, 3.0], [3.0, 1.5, 3.0]),
}
N_AUDIT = 200_000


class _OnNeighbours:
    """Adapter for the audit harness: centre 0 releases on D, centre 1 on D' (scores = released values)."""

    def __init__(self, mechanism, data, data_p):
        self.mechanism, self.data, self.data_p = mechanism, data, data_p

    def release(self, centre, rng, size):
        data = self.data_p if float(np.ravel(centre)[0]) == 1.0 else self.data
        return self.mechanism.release(data, rng, size=size)[:, None]


@pytest.mark.statistical
@pytest.mark.parametrize("method", METHODS)
def test_audit_with_sensitivity_mutant(method):
    eps = 1.0
    d, dp = NEIGHBOURS[method]
    ok, mutants = audit_release_with_mutants(
        lambda f: _OnNeighbours(QuantileMechanism(0.5, eps / f, SMALL, method, "secure"), d, dp),
        [0.0], [1.0], eps, 0.0, statistic="epsilon", n_draws=N_AUDIT, rng=np.random.default_rng(17),
        factors=(0.5,), tails=0,
    )
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]


class _DataDependentGrid(QuantileMechanism):
    """Mutant: the grid's top is the data's maximum rounded up to a power of two."""

    def release(self, values, rng, size=None):
        top = int(np.ceil(np.log2(max(values))))
        grid = ScaleGrid(self.grid.low_exponent, top, self.grid.per_octave)
        return QuantileMechanism(self.q, self.epsilon, grid, self.method, self.noise).release(values, rng, size)


@pytest.mark.statistical
def test_data_dependent_grid_mutant_is_flagged():
    """Fixed event 'output > 4' (beyond D's data-made grid): impossible on D, frequent on D'."""
    eps, n = 1.0, 20_000
    d = [0.3, 1.5, 3.0]
    dp = [0.3, 1.5, 60.0]
    rng = np.random.default_rng(23)
    for mech, flagged in ((QuantileMechanism(0.9, eps, ScaleGrid(-1, 7, 1)), False),
                          (_DataDependentGrid(0.9, eps, ScaleGrid(-1, 7, 1)), True)):
        k_d = int((mech.release(d, rng, size=n) > 4.0).sum())
        k_dp = int((mech.release(dp, rng, size=n) > 4.0).sum())
        lb = epsilon_lower_bound_from_counts(k_dp, n, k_d, n, alpha=ALPHA)
        assert (lb > eps) is flagged, (lb, k_d, k_dp)


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3, 8), Fraction(5), Fraction(7, 1024), Fraction(6, 35)])
def test_reduced_product_is_the_fraction_in_lowest_terms(scale):
    from sklearn_dpsco._mechanisms._quantile import _reduced_product

    for m in range(0, 600):
        f = scale * m
        assert _reduced_product(scale, m) == (f.numerator, f.denominator)


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_column_quantiles_release_what_one_release_per_column_releases(noise):
    """private_column_quantiles reads each column's grid counts once for every level: the same
    releases, draw for draw, as one ``release`` per level and column in the same order."""
    from sklearn_dpsco._budget import Budget
    from sklearn_dpsco._mechanisms._calibrate import quantile_mechanism_for
    from sklearn_dpsco._scale_estimation import private_column_quantiles
    from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID, BOUNDS_LEVELS

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5)) * [1.0, 100.0, 1e-3, 1.0, 1.0]
    X[:, 3] = X[:, 3] > 0
    X[:, 4] += 1990.0
    for eps in (0.3, 1.0 / 3.0, 2.0):
        budget = Budget(eps, 0.0, noise)
        got = private_column_quantiles(X, BOUNDS_LEVELS, budget, grid=BOUNDS_GRID, random_state=7).value
        part = budget.split_equal(len(BOUNDS_LEVELS) * X.shape[1])
        mechanisms = [quantile_mechanism_for(q, part, BOUNDS_GRID) for q in BOUNDS_LEVELS]
        draws = np.random.default_rng(7)
        expected = [[m.release(X[:, j], draws) for j in range(X.shape[1])] for m in mechanisms]
        np.testing.assert_array_equal(got, np.array(expected))
        # the vectorized utility is the module docstring's integer formula
        for m in mechanisms:
            for j in range(X.shape[1]):
                c = [int(v) for v in BOUNDS_GRID.counts(X[:, j])]
                k = m.target_rank(X.shape[0])
                ref = [-max(lo - (k - 1), k - hi, 0) for lo, hi in zip([0] + c[:-1], c)]
                assert m.utility(X[:, j]) == ref and all(type(u) is int for u in m.utility(X[:, j]))


@pytest.mark.parametrize(
    "grid", [ScaleGrid(-1, 2, 1), ScaleGrid(per_octave=8, signed=True), ScaleGrid(), ScaleGrid(-3, 5, 3, signed=True),
             ScaleGrid(-2, 2, 128, signed=True)]
)
def test_column_counts_equal_the_sorted_counts_of_every_column(grid):
    """The one-pass counting kernel gives exactly ``counts`` per column, on the grid points, their
    float neighbours, signed zeros, subnormals, huge values, NaN, infinities and random data, in C and F order and as every k-th row of an array."""
    rng = np.random.default_rng(3)
    p = grid.points
    special = np.concatenate(
        [p, -p, np.nextafter(p, np.inf), np.nextafter(p, -np.inf), [0.0, -0.0, 5e-324, -5e-324, 1e300, -1e300]]
    )
    for trial in range(30):
        # row counts around the kernel's 256-row blocks (its cells are buffered a block at a time)
        n = (400, 1, 255, 256, 257, 1000)[trial % 6]
        d = (4, 4, 12, 12, 5, 6, 7)[trial % 7]  # one interleaved pass below 6 columns, two passes from 6 on
        if trial % 2:
            X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-9, 9, size=d)
        else:
            X = rng.choice(special, size=(n, d))
        if not grid.signed:
            X = np.abs(X)
        if trial % 3 == 0:
            X = np.asfortranarray(X)
        elif trial % 4 == 1:
            X = np.repeat(X, 3, axis=0)[::3]  # rows apart in memory (the kernel requests them ahead)
            assert n == 1 or not X.flags.c_contiguous
        if trial % 5 == 4:
            X[rng.integers(0, n, size=20), rng.integers(0, d, size=20)] = rng.choice([np.nan, -np.nan, np.inf, -np.inf])
        # the former definition: sort, then count the values <= each point
        expected = np.array([np.searchsorted(np.sort(X[:, j]), p, side="right") for j in range(X.shape[1])])
        got = grid.column_counts(X)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)
        for j in range(X.shape[1]):
            np.testing.assert_array_equal(grid.counts(X[:, j]), expected[j])
    np.testing.assert_array_equal(grid.column_counts(np.ones((1, 1))), [grid.counts([1.0])])
    assert grid.column_counts(np.ones((0, 3))).shape == (3, len(p))
    assert (grid.column_counts(np.ones((0, 3))) == 0).all()


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_column_quantiles_equal_one_release_per_column_on_random_inputs(noise):
    """Random shapes, scales, dtypes and grids: draw for draw the releases of one ``release`` per level
    and column (the former path), and the same error as the per-column checks on bad input."""
    rng = np.random.default_rng(11)
    grids = (ScaleGrid(per_octave=8, signed=True), ScaleGrid(-4, 4, 2, signed=True), ScaleGrid())
    for trial in range(12):
        grid = grids[trial % 3]
        n, d = int(rng.integers(1, 300)), int(rng.integers(1, 5))
        X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-5, 5, size=d) + rng.integers(-3, 3, size=d)
        if not grid.signed:
            X = np.abs(X)
        X = X.astype(np.float32) if trial % 4 == 1 else np.round(X).astype(np.int64) if trial % 4 == 2 else X
        levels = (0.25, 0.75) if trial % 2 else (0.1, 0.5, 0.9)
        budget = Budget(float(rng.uniform(0.1, 3.0)), 0.0, noise)
        got = private_column_quantiles(X, levels, budget, grid=grid, random_state=trial).value
        part = budget.split_equal(len(levels) * d)
        draws = np.random.default_rng(trial)
        expected = [[quantile_mechanism_for(q, part, grid).release(X[:, j], draws) for j in range(d)] for q in levels]
        np.testing.assert_array_equal(got, np.array(expected))
    X = np.ones((5, 3))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"X\[:, 1\] must not contain NaN"):
        private_column_quantiles(X, (0.5,), Budget(1.0, 0.0), random_state=0)
    with pytest.raises(ValueError, match=r"X\[:, 0\] must be >= 0"):
        private_column_quantiles(-np.ones((5, 2)), (0.5,), Budget(1.0, 0.0), grid=ScaleGrid(), random_state=0)
    with pytest.raises(TypeError, match=r"X\[:, 0\] must be a numeric array"):
        private_column_quantiles(np.array([["a"]]), (0.5,), Budget(1.0, 0.0), random_state=0)
    with pytest.raises(ValueError, match=r"X\[:, 0\] is empty"):
        private_column_quantiles(np.ones((0, 2)), (0.5,), Budget(1.0, 0.0), random_state=0)


@pytest.mark.parametrize("eps", [1.0, 1 / 3, 0.1 / 40, 0.9 / 43, 7.3, 1e-9, 123456.789])
def test_gaps_are_the_reduced_products_of_every_utility(eps):
    """The vectorised gaps equal ``_reduced_product`` per grid point (Python ints), for epsilons whose
    exact form has short and 63-bit denominators and for utilities up to ``-10^17``."""
    from sklearn_dpsco._mechanisms._quantile import _reduced_product

    mechanism = QuantileMechanism(0.5, eps, ScaleGrid())
    scale = mechanism.exact_epsilon / 2
    rng = np.random.default_rng(5)
    for trial in range(30):
        u = [0] + (-rng.integers(0, 10 ** int(rng.integers(1, 18)), size=60)).tolist()
        u = [x - int(trial) for x in u]  # the best utility need not be 0
        expected = [_reduced_product(scale, max(u) - x) for x in u]
        got = mechanism._gaps(u)
        assert got == expected and all(type(a) is int and type(b) is int for a, b in got)


@pytest.mark.parametrize("epsilon", [1.0, 0.37, 1 / 40])
def test_release_counts_array_gaps_are_the_tuple_selection(epsilon):
    # the secure permute-and-flip release from uint64 gap arrays flips, in its visiting order, the coins of
    # _gaps's tuples (McKenna and Sheldon's algorithm: a uniform order, one coin per visited candidate, each
    # from a fresh bit buffer, until the first heads): the same released points, the generator left in the
    # same state
    from sklearn_dpsco._fast._discrete import bernoulli_exp_table

    def visiting(rng, gaps):
        for j in rng.permutation(len(gaps)):
            if gaps[j][0] == 0 or bernoulli_exp_table(rng, [gaps[j]], 1)[0, 0]:
                return int(j)
        raise AssertionError("no heads")

    mech = QuantileMechanism(0.25, epsilon, ScaleGrid(-20, 20, 4), noise="secure")
    values = np.abs(np.random.default_rng(1).standard_cauchy(5000))
    counts, n = mech.grid.counts(values), values.size
    rng, ref_rng = np.random.default_rng(4), np.random.default_rng(4)
    for _ in range(20):
        got = mech.release_counts(counts, n, rng)
        ref = float(mech.grid.points[visiting(ref_rng, mech._gaps(mech.utility_from_counts(counts, n)))])
        assert got == ref
    assert rng.integers(2**62) == ref_rng.integers(2**62)


def test_power_of_two_gcd_is_numpys_gcd():
    """The dyadic shortcut of the gap reduction equals np.gcd on random and edge uint64 values."""
    from sklearn_dpsco._mechanisms._quantile import _gcd_u64

    rng = np.random.default_rng(11)
    edge = [0, 1, 2, 3, 4, 6, 2**31, 2**62, 2**63, 2**63 + 2**10, 2**64 - 1, 2**64 - 2, 3 * 2**40]
    m = np.concatenate([np.array(edge, dtype=np.uint64), rng.integers(0, 2**63, size=2000, dtype=np.uint64) << (
        rng.integers(0, 30, size=2000).astype(np.uint64))])
    for den in [1, 2, 2**10, 2**52, 2**63, 3, 10, 2**63 - 1]:
        got = _gcd_u64(m, den)
        np.testing.assert_array_equal(got, np.gcd(m, np.uint64(den)))
        assert got.dtype == np.uint64


def test_one_secure_selection_from_utility_arrays_repeats_the_generic_path():
    """release_counts (utilities as an int64 array, one-row permute-and-flip) gives the same points and leaves
    the generator where the list utilities and the (n, m) table path leave it."""
    from sklearn_dpsco._mechanisms._selection import _first_heads_in_random_order

    rng = np.random.default_rng(8)
    for trial in range(40):
        coins = rng.random((1, 50)) < 0.1
        coins[0, rng.integers(50)] = True
        a, b = np.random.default_rng(trial), np.random.default_rng(trial)
        got = _first_heads_in_random_order(a, coins)
        # the (n, m) table path written out: permuted rows, take_along_axis, first heads
        order = b.permuted(np.broadcast_to(np.arange(50), (1, 50)), axis=1)
        visited = np.take_along_axis(coins, order, axis=1)
        assert got.tolist() == [order[0, np.argmax(visited[0])]]
        assert a.integers(2**62) == b.integers(2**62)
    mech = QuantileMechanism(0.75, 0.05, ScaleGrid(per_octave=8, signed=True), noise="secure")
    values = np.random.default_rng(2).standard_normal(3000)
    counts = mech.grid.counts(values)
    assert mech._utility_array(counts, values.size).tolist() == mech.utility_from_counts(counts, values.size)
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(10):
        assert mech.release_counts(counts, values.size, r1) == mech.release(values, r2)
    assert r1.integers(2**62) == r2.integers(2**62)


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_a_quantile_beyond_the_grid_saturates_at_its_end(q):
    """Values above the last point count at it (its cell is open above): the release is the grid's end, not a
    uniform draw (labels near 5e6 on the default grid, whose top is 2^20, got a random scale)."""
    grid = ScaleGrid()
    m = QuantileMechanism(q, 1.0, grid=grid, noise="float")
    values = 5e6 * (1.0 + np.random.default_rng(0).random(400))
    u = m.utility(values)
    assert u[-1] == 0 and max(u[:-1]) == -m.target_rank(400)
    out = private_quantile(values, q, Budget(1.0), grid=grid, random_state=0).value
    assert out == grid.points[-1]
    # the sensitivity stays 1 with values beyond the end: replace one value by anything
    for new in (0.0, 1.0, 2.0**20, 1e300):
        other = values.copy()
        other[7] = new
        assert max(abs(a - b) for a, b in zip(u, m.utility(other))) <= 1
    # values below the smallest positive point saturate at it, as before (the unsigned grid starts at 0)
    low = QuantileMechanism(q, 1.0, grid=grid, noise="float").utility(np.full(50, 1e-9))
    assert grid.points[1] == 2.0**-20 and low[1] == 0 and max(low[2:]) < 0


def test_one_comparison_cells_only_for_grids_with_one_point_per_bucket():
    """The kernel's one-comparison path (each lookup bucket holds at most one point) covers the library's
    grids; a grid finer than the table's buckets keeps the two searches, with the same counts."""
    from sklearn_dpsco._fast._grid_counts import grid_cell_tallies

    assert ScaleGrid()._one_step and ScaleGrid(per_octave=8, signed=True)._one_step
    fine = ScaleGrid(-2, 2, 128, signed=True)  # 2^(1/128) apart: two points share a bucket of 1/64 octave
    assert not fine._one_step
    grid = ScaleGrid(per_octave=8, signed=True)
    p = np.ascontiguousarray(grid.points)
    X = np.random.default_rng(0).standard_normal((999, 7)) * 10.0 ** np.arange(-3, 4)
    X[5, 2], X[6, 3], X[7, 4] = np.nan, -np.nan, -0.0
    np.testing.assert_array_equal(grid_cell_tallies(X, p, grid._cell_starts, True),
                                  grid_cell_tallies(X, p, grid._cell_starts, False))


@pytest.mark.parametrize("noise,method", [("secure", "permute_and_flip"), ("secure", "exponential"),
                                          ("float", "permute_and_flip")])
def test_release_counts_columns_is_one_release_per_column(noise, method):
    """Every column's utilities and gaps at once: the same draws in the same order as one call per column."""
    from sklearn_dpsco._mechanisms._calibrate import quantile_mechanism_for

    grid = ScaleGrid(per_octave=8, signed=True)
    rng = np.random.default_rng(12)
    X = rng.standard_normal((3001, 9)) * 10.0 ** rng.integers(-3, 4, size=9)
    X[:, 4] = 0.0  # a constant column: every point above it ties
    counts = grid.column_counts(X)
    for eps in (1e-3, 0.05, 2.0, 50.0):
        for q in (0.25, 0.5, 0.75):
            m = quantile_mechanism_for(q, Budget(eps, 0.0, noise), grid, method)
            seed = int(eps * 1000) + int(q * 4)
            a, b = np.random.default_rng(seed), np.random.default_rng(seed)
            assert m.release_counts_columns(counts, X.shape[0], a) == [m.release_counts(c, X.shape[0], b) for c in counts]
            assert a.integers(1 << 62) == b.integers(1 << 62)  # the generators are left in the same state


def test_cells_exact_at_both_ends_of_every_lookup_bucket():
    """The lookup table is read at a float's own top bits (its buckets: runs of consecutive floats of one
    sign): the first and the last float of every bucket, both signs, NaN patterns included, get the exact
    sorted counts on the one-comparison path and on the two searches."""
    from sklearn_dpsco._fast._grid_counts import TABLE_BITS, grid_cell_tallies

    buckets = np.arange(1 << TABLE_BITS, dtype=np.uint64) << np.uint64(64 - TABLE_BITS)
    ends = np.concatenate([buckets, buckets + np.uint64((1 << (64 - TABLE_BITS)) - 1)]).view(np.float64)
    for grid in (ScaleGrid(per_octave=8, signed=True), ScaleGrid(), ScaleGrid(-2, 2, 128, signed=True)):
        values = ends if grid.signed else np.abs(ends)
        p = np.ascontiguousarray(grid.points)
        expected = np.searchsorted(np.sort(values), p, side="right")
        X = np.ascontiguousarray(np.stack([values] * 6, axis=1))  # the two-pass path (6 columns)
        for one_step in {False, grid._one_step}:  # one comparison only where the table allows it
            tallies = grid_cell_tallies(X, p, grid._cell_starts, one_step)
            for column in tallies:
                np.testing.assert_array_equal(np.cumsum(column[:-1]), expected)
        np.testing.assert_array_equal(grid.counts(values), expected)  # one column: the interleaved pass


def test_column_counts_do_not_depend_on_n_jobs(monkeypatch):
    """Threads count disjoint row-chunks (integer tallies summed): the same counts for every ``n_jobs``,
    chunk sizes and shift, also on a strided view; and inside a joblib context for ``n_jobs=None``."""
    import joblib

    from sklearn_dpsco._mechanisms import _threads

    rng = np.random.default_rng(5)
    grid = ScaleGrid(per_octave=8, signed=True)
    X = rng.standard_normal((2001, 7)) * 10.0 ** rng.integers(-3, 4, size=7)
    shift = rng.standard_normal(7)
    expected = grid.column_counts(X)
    expected_shift = grid.column_counts(X[1::3], shift)
    for min_values in (1, 50, 5000):
        monkeypatch.setattr(_threads, "MIN_CHUNK_VALUES", min_values)
        for n_jobs in (1, 2, 3, -1):
            np.testing.assert_array_equal(grid.column_counts(X, n_jobs=n_jobs), expected)
            np.testing.assert_array_equal(grid.column_counts(X[1::3], shift, n_jobs=n_jobs), expected_shift)
        with joblib.parallel_config(n_jobs=2):
            np.testing.assert_array_equal(grid.column_counts(X), expected)
    for n_rows, n_jobs in ((0, 2), (1, 4), (5, 3), (2001, 2)):
        chunks = _threads.row_chunks(n_rows, 7 * n_rows, n_jobs, min_values=1)
        assert chunks[0][0] == 0 and chunks[-1][1] == n_rows
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
