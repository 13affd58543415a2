"""Secure noise path (doc/privacy/secure_noise.rst): T0 exact checks, T1 audits.

* T0: grid helpers, the integer sensitivity bounds on random AND
  adversarial neighbours (and that they are attained, so the inflation is
  needed), events, outputs exactly on the grid, exact scale-back.
* T1: noise laws with mutant power checks; the bit-level porosity audit
  (fails on the float path -- a strict xfail documenting Mironov's attack --
  and passes on the secure path); release audits on worst-case neighbours
  with the half-noise mutant flagged.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from sklearn_dpsco._mechanisms import _grid as sn
from sklearn_dpsco._mechanisms import (
    DEFAULT_NOISE,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    L2LaplaceMechanism,
    LaplaceMechanism,
    TruncatedDiscreteLaplace,
)
from sklearn_dpsco.accounting import LaplaceEvent, ZCDPEvent, epsilon_delta, gaussian_sigma_analytic
from sklearn_dpsco.testing import (
    audit_epsilon,
    audit_gaussian_dp,
    discrete_pmf_pvalue,
    ks_pvalue,
    l2_laplace_pvalues,
    porosity_audit,
    porosity_event,
    project_on,
    linear_neighbour_centres,
)

ALPHA = 1e-6
N_DRAWS = 100_000

MECHANISMS = {
    "laplace": lambda sens, eps, d, noise="secure": LaplaceMechanism(sens, eps, d, noise=noise),
    "l2_laplace": lambda sens, eps, d, noise="secure": L2LaplaceMechanism(sens, eps, d, noise=noise),
    "gaussian": lambda sens, eps, d, noise="secure": GaussianMechanism(sens, eps, 1e-5, d, noise=noise),
}


def _on_grid(y, gamma):
    q = np.asarray(y) / gamma  # exact: division by a power of two
    return bool(np.all(np.isfinite(q)) and np.all(q == np.rint(q)))


# ------------------------------------------------------------------ T0: helpers
def test_default_noise_is_secure_everywhere():
    assert DEFAULT_NOISE == "secure"
    assert LaplaceMechanism(1.0, 1.0).noise == "secure"
    assert L2LaplaceMechanism(1.0, 1.0, 2).noise == "secure"
    assert GaussianMechanism(1.0, 1.0, 1e-5).noise == "secure"
    assert DiscreteLaplaceMechanism(1, 1.0).noise == "secure"
    assert TruncatedDiscreteLaplace(1.0, 3).noise == "secure"


@pytest.mark.parametrize("x", [1.0, 3.0, 0.75, 1e-300, 5e-324, 1.7e308, 2.0**-40, 1 / 3])
def test_power_of_two_at_most(x):
    g = sn.power_of_two_at_most(x)
    m, _ = math.frexp(g)
    assert m == 0.5 and g <= x < 2 * g


def test_sqrt_upper_is_an_upper_bound_and_tight():
    for d in list(range(1, 200)) + [10**6, 10**9 + 7, 2**40 - 1]:
        s = sn.sqrt_upper(d)
        assert s * s >= d
        assert float(s) - math.sqrt(d) < 1e-8 * max(1, math.sqrt(d))
        if math.isqrt(d) ** 2 == d:
            assert s == math.isqrt(d)


def test_rational_at_least():
    assert sn.rational_at_least(0.5) == Fraction(1, 2)
    x = Fraction(10**30 + 1, 3 * 10**20)
    r = sn.rational_at_least(x)
    assert r >= x and r.numerator < 2**62 and r.denominator < 2**62 and float(r) == pytest.approx(float(x), rel=1e-15)


def _rounded(x, gamma):
    return np.rint(np.asarray(x) / gamma)


@pytest.mark.parametrize("d", [1, 2, 5, 40])
def test_grid_sensitivity_bounds_hold_on_random_and_adversarial_neighbours(d):
    rng = np.random.default_rng(d)
    gamma = 2.0**-10
    for sens in (1.0, 0.3, 7 * gamma + gamma / 3):
        s1 = sn.l1_grid_sensitivity(sens, gamma, d)
        s2 = sn.l2_grid_sensitivity_squared(sens, gamma, d)
        # random neighbours at full l1 (resp. l2) distance
        for _ in range(300):
            x = rng.uniform(-5, 5, d)
            v = rng.standard_normal(d)
            k = _rounded(x, gamma)
            k1 = _rounded(x + sens * v / np.abs(v).sum(), gamma)
            k2 = _rounded(x + sens * v / np.linalg.norm(v), gamma)
            assert np.abs(k1 - k).sum() <= s1
            assert ((k2 - k) ** 2).sum() <= s2


@pytest.mark.parametrize("d", [1, 4, 9])
@pytest.mark.parametrize("j", [1, 3, 7])
def test_grid_sensitivity_bounds_are_attained_with_rounding_ties(d, j):
    """Adversarial neighbours: every coordinate of x sits on a rounding tie that
    rint sends down (to an even integer), every coordinate of x' on a tie that
    it sends up. The gaps reach the bounds exactly, so neither the "+ d" (l1)
    nor the "+ sqrt(d)" (l2) inflation can be dropped."""
    gamma = 2.0**-10
    rng = np.random.default_rng(d * j)
    m = 2.0 * rng.integers(-50, 50, d)
    x = (m + 0.5) * gamma  # ties -> rint gives the even m
    # l1: odd shifts 1, ..., 1, j_0 with j_0 = j + 2 odd
    steps = np.ones(d)
    steps[0] = j + 2
    xp = x + steps * gamma  # ties again, now at odd + 0.5 -> rounded up
    sens1 = float(steps.sum()) * gamma
    gap = np.abs(_rounded(xp, gamma) - _rounded(x, gamma)).sum()
    assert np.abs(xp - x).sum() == sens1
    assert gap == sn.l1_grid_sensitivity(sens1, gamma, d) == math.floor(sens1 / gamma) + d
    # l2: equal odd shifts j in every coordinate, D2 = j sqrt(d) gamma (d a square)
    xp2 = x + j * gamma
    sens2 = j * math.isqrt(d) * gamma
    gap2 = ((_rounded(xp2, gamma) - _rounded(x, gamma)) ** 2).sum()
    assert np.linalg.norm(xp2 - x) == pytest.approx(sens2, rel=1e-15)
    assert gap2 == sn.l2_grid_sensitivity_squared(sens2, gamma, d) == d * (j + 1) ** 2


def test_l1_inflation_is_necessary():
    """A mutant bound without the +d term is violated by real neighbours."""
    gamma, d, sens = 2.0**-8, 4, 3 * 2.0**-8
    x = np.full(d, 0.5 * gamma - 1e-6)
    xp = x.copy()
    xp[0] += sens - 3 * 2e-6
    xp[1:] += 2e-6
    gap = np.abs(_rounded(xp, gamma) - _rounded(x, gamma)).sum()
    assert np.abs(xp - x).sum() <= sens + 1e-15
    assert gap > math.floor(sens / gamma)  # uninflated bound broken
    assert gap <= sn.l1_grid_sensitivity(sens, gamma, d)


# ------------------------------------------------------------------ T0: mechanisms
@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("eps, d", [(0.1, 1), (1.0, 3), (4.0, 50), (1.0, 1000)])
def test_secure_events_and_grid(name, eps, d):
    sens = 0.37
    m = MECHANISMS[name](sens, eps, d)
    fl = MECHANISMS[name](sens, eps, d, "float")
    m_, e_ = math.frexp(m.grid)
    assert m_ == 0.5  # a power of two
    if name == "gaussian":
        assert m.grid <= m.sigma * 2.0**-30
        assert isinstance(m.event, ZCDPEvent)
        assert epsilon_delta(m.event, 1e-5)[0] <= eps
        assert epsilon_delta(m.event, 1e-5)[0] == pytest.approx(eps, rel=1e-6)
        # l2 inflation sqrt(d) gamma, rounding to an integer square
        assert sens <= m.noise_sensitivity <= (sens + (math.sqrt(d) + 1e-6) * m.grid) * (1 + 2.0**-50)
        # cost of the proof: zCDP calibration vs the exact analytic Gaussian
        assert 1.0 < m.sigma / gaussian_sigma_analytic(sens, eps, 1e-5) < 1.12
    else:
        assert m.grid <= fl.scale * 2.0 ** -(48 if name == "laplace" else 40)
        assert isinstance(m.event, LaplaceEvent)
        assert m.event.epsilon <= eps
        assert m.event.epsilon == pytest.approx(eps, rel=1e-9)
        infl = d if name == "laplace" else math.sqrt(d)
        assert sens <= m.noise_sensitivity <= (sens + (infl + 1e-9) * m.grid) * (1 + 2.0**-50)
        assert m.scale == pytest.approx(fl.scale, rel=d * 2.0**-38 / eps + 1e-12)


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("d", [1, 3, 50])
@pytest.mark.parametrize("centre", [0.0, -3.3, 1e6, 1e-300, 12345.678901234])
def test_outputs_lie_exactly_on_the_grid(name, d, centre):
    m = MECHANISMS[name](1.0, 1.0, d)
    rng = np.random.default_rng(d)
    value = centre + np.arange(d) * 0.1
    y = m.release(value, rng, size=200)
    assert y.shape == (200, d)
    assert _on_grid(y, m.grid)
    y1 = m.release(value, rng)
    assert y1.shape == (d,) and _on_grid(y1, m.grid)
    assert _on_grid(m.release(0.0, rng, size=10), m.grid)
    # the noise is centred on the rounded centre
    assert np.abs(np.median(y, axis=0) - value).max() < 10 * max(getattr(m, "scale", 0), getattr(m, "sigma", 0))


def test_scale_back_is_exact_for_huge_centres_and_noise():
    gamma = 2.0**-40
    k = np.array([2.0**70, -(2.0**60) - 2.0**9, 3.0, 0.0])
    n = np.array([12345, -(2**55) - 1, 2**53 + 1, -7], dtype=np.int64)
    out = sn.scale_back(k, n, gamma)
    expect = [float(int(a) + int(b)) * gamma for a, b in zip(k, n)]
    assert out.tolist() == expect
    assert _on_grid(out, gamma)


def test_huge_centre_release_is_exact_integer_arithmetic():
    m = LaplaceMechanism(1e-6, 1.0, 2)
    value = np.array([1e9, -1e9])  # ~2^70 grid units
    y = m.release(value, np.random.default_rng(0), size=50)
    assert _on_grid(y, m.grid)


def test_seeded_secure_releases_are_reproducible():
    for name, make in MECHANISMS.items():
        m = make(1.0, 1.0, 3)
        a = m.release(np.ones(3), np.random.default_rng(42), size=5)
        b = m.release(np.ones(3), np.random.default_rng(42), size=5)
        np.testing.assert_array_equal(a, b)


def test_zero_sensitivity_releases_the_value():
    for name, make in MECHANISMS.items():
        m = make(0.0, 1.0, 2)
        np.testing.assert_array_equal(m.release(np.array([0.1, 0.2]), np.random.default_rng(0), size=3), [[0.1, 0.2]] * 3)
        assert epsilon_delta(m.event) == (0.0, 0.0)


@pytest.mark.parametrize("bad", [np.array([np.nan]), np.array([np.inf]), np.array([1.0, 2.0])])
def test_secure_release_rejects_bad_centres(bad):
    m = LaplaceMechanism(1.0, 1.0, 1)
    with pytest.raises(ValueError, match="finite|dimension"):
        m.release(bad, np.random.default_rng(0))


def test_secure_gaussian_calibration_rules():
    with pytest.raises(ValueError, match="calibration"):
        GaussianMechanism(1.0, 1.0, 1e-5, calibration="analytic", noise="secure")
    g = GaussianMechanism(1.0, 1.0, 1e-5, calibration="zcdp", noise="float")
    assert epsilon_delta(g.event, 1e-5)[0] <= 1.0
    assert GaussianMechanism(1.0, 1.0, 1e-5, noise="float").calibration == "analytic"


def test_truncated_discrete_laplace_secure_needs_exact_epsilon():
    TruncatedDiscreteLaplace(0.1, 5)  # 1/0.1 = 2^55 / 3602879701896397 fits
    with pytest.raises(ValueError, match="63 bits"):
        TruncatedDiscreteLaplace(1e-5, 5)
    TruncatedDiscreteLaplace(1e-5, 5, noise="float")


def test_porosity_event_reads_low_bits_exactly():
    y = np.array([0.3, 0.25, 0.5, 2.0**-60, -0.1, 0.75, 1 + 2.0**-52])
    ev = porosity_event(y)
    assert ev.tolist() == [True, False, False, True, True, False, False]


# ------------------------------------------------------------------ T1: noise laws
@pytest.mark.statistical
def test_secure_laplace_noise_law_and_mutant():
    m = LaplaceMechanism(1.0, 0.5, 1)
    x = m.release(0.0, np.random.default_rng(1), size=N_DRAWS).ravel()
    assert ks_pvalue(x, stats.laplace(scale=m.scale).cdf) > ALPHA
    assert ks_pvalue(x, stats.laplace(scale=1.1 * m.scale).cdf) < ALPHA


@pytest.mark.statistical
def test_secure_gaussian_noise_law_and_mutant():
    m = GaussianMechanism(1.0, 1.0, 1e-6, 1)
    x = m.release(0.0, np.random.default_rng(2), size=N_DRAWS).ravel()
    assert ks_pvalue(x, stats.norm(scale=m.sigma).cdf) > ALPHA
    assert ks_pvalue(x, stats.norm(scale=0.93 * m.sigma).cdf) < ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("d", [1, 3, 10])
def test_hardened_l2_laplace_law_and_mutants(d):
    m = L2LaplaceMechanism(0.7, 1.0, d)
    rng = np.random.default_rng(30 + d)
    x = m.release(0.0, rng, size=N_DRAWS)
    p = l2_laplace_pvalues(x, m.scale)
    assert min(p.values()) > ALPHA, p
    for wrong in (0.7 * m.scale, 1.3 * m.scale):
        assert l2_laplace_pvalues(x, wrong)["radius"] < ALPHA
    g = rng.standard_normal((N_DRAWS, d)) * m.scale * math.sqrt(d + 1)
    assert min(l2_laplace_pvalues(g, m.scale).values()) < ALPHA


@pytest.mark.statistical
def test_secure_discrete_laplace_and_truncated_laws():
    m = DiscreteLaplaceMechanism(2, 1.3)
    x = m.sample(np.random.default_rng(6), size=N_DRAWS).ravel()
    support = np.arange(-80, 81)
    t = float(m.exact_scale)
    pmf = math.tanh(0.5 / t) * np.exp(-np.abs(support) / t)
    assert discrete_pmf_pvalue(x, support, pmf) > ALPHA
    pmf_bad = math.tanh(0.5 / (0.85 * t)) * np.exp(-np.abs(support) / (0.85 * t))
    assert discrete_pmf_pvalue(x, support, pmf_bad) < ALPHA

    td = TruncatedDiscreteLaplace(0.5, 6)
    y = td.sample(np.random.default_rng(7), size=N_DRAWS)
    assert y.min() >= 0 and y.max() <= 12
    assert discrete_pmf_pvalue(y, td.support, td.pmf()) > ALPHA
    mutant = TruncatedDiscreteLaplace(0.4, 6, noise="float")
    assert discrete_pmf_pvalue(y, mutant.support, mutant.pmf()) < ALPHA


# ------------------------------------------------------------------ T1: porosity (Mironov 2012)
def _porosity_releases(name, noise, eps, seed, n=N_DRAWS):
    """Coordinate 0 of releases on centres 0 (D) and e_1 (D'), sensitivity 1."""
    d = 2 if name == "l2_laplace" else 1
    m = MECHANISMS[name](1.0, eps, d, noise)
    rng = np.random.default_rng(seed)
    e1 = np.zeros(d)
    e1[0] = 1.0
    a = m.release(np.zeros(d), rng, size=n)[:, 0]
    b = m.release(e1, rng, size=n)[:, 0]
    delta = 1e-5 if name == "gaussian" else 0.0
    return m, a, b, delta


@pytest.mark.statistical
@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.xfail(
    strict=True,
    reason="Mironov 2012: value + float noise is not DP over floats. The event "
    "{|y| < 1/2 and y 2^53 not an integer} has probability 7-27% on centre 0 and "
    "exactly 0 on centre 1 (a pure function of the float format): eps_lb = 6.1 "
    "(Gaussian), 7.2 (l2-Laplace), 7.5 (Laplace) at 1e5 draws against eps = 1, "
    "growing like log(n) without limit.",
)
def test_porosity_audit_float_path(name):
    _, a, b, delta = _porosity_releases(name, "float", 1.0, seed=101)
    res = porosity_audit(a, b, 1.0, delta, alpha=ALPHA)
    assert not res.violation, res


@pytest.mark.statistical
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_porosity_audit_secure_path(name):
    """The float path's event never fires on grid outputs, and bit events at and
    just above the grid resolution (``y / gamma`` odd, not a multiple of 4, ...)
    are ordinary events of the integer release: none certifies more than eps."""
    m, a, b, delta = _porosity_releases(name, "secure", 1.0, seed=101)
    res = porosity_audit(a, b, 1.0, delta, alpha=ALPHA)
    assert not res.violation, res
    assert res.k_d == res.k_dp == 0  # grid outputs never carry bits below the grid
    g = -math.frexp(m.grid)[1] + 1  # grid = 2^-g
    bit_levels = [g - 1, g - 2, g - 3, g - 8]
    for bits in bit_levels:
        res = porosity_audit(a, b, 1.0, delta, bits=bits, alpha=ALPHA / len(bit_levels))
        assert res.k_d > 0.02 * a.size and res.k_dp > 0.02 * b.size  # events with mass on both sides
        assert not res.violation, (bits, res)


# ------------------------------------------------------------------ T1: release audits
def _audit_release(factory, d, eps, delta, seed, gaussian=False):
    c, cp, sens = linear_neighbour_centres(d)
    rng = np.random.default_rng(seed)
    out = []
    for claimed in (sens, sens / 2):  # the second is the half-noise mutant
        mech = factory(claimed)
        a = project_on(mech.release(c, rng, size=N_DRAWS), c, cp)
        b = project_on(mech.release(cp, rng, size=N_DRAWS), c, cp)
        audit = audit_gaussian_dp if gaussian else audit_epsilon
        out.append(audit(a, b, eps, delta, alpha=ALPHA))
    return out


@pytest.mark.statistical
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_secure_laplace_release_audit(eps):
    ok, mutant = _audit_release(lambda s: LaplaceMechanism(s, eps, 1), 1, eps, 0.0, seed=int(10 * eps) + 1)
    assert not ok.violation, ok
    assert mutant.violation, mutant


@pytest.mark.statistical
@pytest.mark.parametrize("eps, d", [(0.5, 1), (1.0, 2), (2.0, 3)])
def test_secure_l2_laplace_release_audit(eps, d):
    ok, mutant = _audit_release(lambda s: L2LaplaceMechanism(s, eps, d), d, eps, 0.0, seed=40 + d)
    assert not ok.violation, ok
    assert mutant.violation, mutant


@pytest.mark.statistical
@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (1.0, 1e-6), (4.0, 1e-6)])
def test_secure_gaussian_release_audit(eps, delta):
    ok, mutant = _audit_release(lambda s: GaussianMechanism(s, eps, delta, 2), 2, eps, delta, seed=8, gaussian=True)
    assert not ok.violation, ok
    assert mutant.violation, mutant


@pytest.mark.statistical
def test_secure_discrete_laplace_release_audit():
    eps = 1.0
    rng = np.random.default_rng(22)
    for t_mult, expect_violation in ((1.0, False), (0.5, True)):
        m = DiscreteLaplaceMechanism(1, eps / t_mult)
        a = m.release(np.array([0]), rng, size=N_DRAWS).ravel().astype(float)
        b = m.release(np.array([1]), rng, size=N_DRAWS).ravel().astype(float)
        res = audit_epsilon(a, b, eps, alpha=ALPHA)
        assert res.violation is expect_violation, res


def test_grid_sensitivity_and_gaussian_parameters_in_integers_are_the_fraction_formulas():
    """l2_grid_sensitivity_squared and the secure Gaussian's N and rho, computed in integers, equal the
    Fraction formulas they replaced, on random sensitivities, epsilons, deltas and dimensions."""
    from sklearn_dpsco.accounting import zcdp_rho

    rng = np.random.default_rng(21)
    for _ in range(300):
        sens = float(10.0 ** rng.uniform(-12, 6))
        gamma = sn.power_of_two_at_most(float(10.0 ** rng.uniform(-20, 2)))
        d = int(rng.integers(1, 5000))
        bound = Fraction(sens) / Fraction(gamma) + sn.sqrt_upper(d)
        assert sn.l2_grid_sensitivity_squared(sens, gamma, d) == math.floor(bound * bound)
    assert sn.l2_grid_sensitivity_squared(Fraction(3, 7), 0.25, 4) == math.floor((Fraction(12, 7) + 2) ** 2)
    assert sn.l2_grid_sensitivity_squared(0, 0.5, 9) == 9
    for _ in range(60):
        mech = GaussianMechanism(float(10.0 ** rng.uniform(-6, 3)), float(10.0 ** rng.uniform(-2, 1)),
                                 float(10.0 ** rng.uniform(-12, -3)), int(rng.integers(1, 300)), noise="secure")
        s2 = sn.l2_grid_sensitivity_squared(mech.sensitivity, mech.grid, mech.dimension)
        rho = zcdp_rho(mech.epsilon, mech.delta)
        n_var = math.ceil(Fraction(s2) / (2 * Fraction(rho)))
        assert mech._sigma2 == n_var
        assert mech.rho == float(Fraction(s2, 2 * n_var)) and mech.rho <= rho


@pytest.mark.parametrize("eps", [40.0, 200.0, 1e4, 1e9])
@pytest.mark.parametrize("d", [1, 5, 1000])
def test_secure_laplace_at_a_large_epsilon(eps, d):
    # the 2^-48 grid would count 2^53+ steps: the coarser public grid keeps S and t exact and the event within eps
    import math
    from fractions import Fraction

    from sklearn_dpsco._mechanisms import LaplaceMechanism
    from sklearn_dpsco._mechanisms import _grid as sn

    m = LaplaceMechanism(0.75, eps, dimension=d, noise="secure")
    S = sn.l1_grid_sensitivity(0.75, m.grid, d)
    assert S < 2**52 and m._t < 2**53 and Fraction(S, m._t) <= Fraction(eps)
    assert m.event.epsilon <= eps and m.scale <= (0.75 / eps) * (1 + 1e-6) + m.grid
    assert m.grid / (0.75 / eps) <= eps * 2.0**-50  # still far finer than the noise
    x = np.linspace(-1, 1, d)
    out = m.release(x, np.random.default_rng(0))
    assert np.all(np.isfinite(out)) and np.all(np.round(out / m.grid) * m.grid == out)
    # where the 2^-48 grid works, it is still the grid (releases unchanged)
    small = LaplaceMechanism(0.75, 8.0, dimension=d, noise="secure")
    assert small.grid == sn.power_of_two_at_most(math.ldexp(0.75 / 8.0, -sn.LAPLACE_GRID_BITS))


def test_a_large_epsilon_fits_on_the_secure_path():
    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = X.sum(axis=1) + rng.normal(size=2000)
    est = DPLinearRegressor(epsilon=200.0, random_state=0, accountant=BudgetAccountant(1e3)).fit(X, y)
    assert est.epsilon_spent_ <= 200.0 and est.score(X, y) > 0.8
