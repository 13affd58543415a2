"""T0: calibration and conversion functions against independent formulas and pinned numbers."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from sklearn_dpsco.accounting import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_scale,
    rdp_epsilon,
    zcdp_epsilon,
    zcdp_rho,
)


def test_laplace_scale():
    assert laplace_scale(2.0, 0.5) == 4.0
    assert laplace_scale(0.0, 1.0) == 0.0


@pytest.mark.parametrize(
    "eps, delta, expected",
    [(1.0, 1e-5, 3.731), (4.0, 1e-6, 1.194)],  # pinned values (doc/privacy/mechanisms.rst)
)
def test_analytic_gaussian_pinned(eps, delta, expected):
    assert gaussian_sigma_analytic(1.0, eps, delta) == pytest.approx(expected, abs=5e-4)
    # linear in the sensitivity
    assert gaussian_sigma_analytic(3.0, eps, delta) == pytest.approx(3 * gaussian_sigma_analytic(1.0, eps, delta))


def _hockey_stick_numeric(mu, eps):
    """delta(eps) of N(0,1) vs N(mu,1) by numerical integration (independent of the closed form)."""
    f = lambda x: max(stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x), 0.0)
    val, _ = integrate.quad(f, -40, 40 + mu, limit=400, points=[eps / mu + mu / 2])
    return val


@pytest.mark.parametrize("mu, eps", [(0.5, 0.1), (1.0, 1.0), (2.0, 0.5), (0.3, 2.0)])
def test_gaussian_delta_matches_integral(mu, eps):
    assert gaussian_delta(mu, eps) == pytest.approx(_hockey_stick_numeric(mu, eps), rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-6), (3.0, 1e-9), (8.0, 1e-5)])
def test_analytic_gaussian_is_exact_and_tight(eps, delta):
    sigma = gaussian_sigma_analytic(1.0, eps, delta)
    assert gaussian_delta(1.0 / sigma, eps) <= delta
    # 0.1% less noise would violate the target: the calibration is tight
    assert gaussian_delta(1.0 / (0.999 * sigma), eps) > delta
    assert gaussian_epsilon(1.0 / sigma, delta) <= eps * (1 + 1e-9)
    assert gaussian_mu(eps, delta) == pytest.approx(1.0 / sigma, rel=1e-9)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (0.5, 1e-6), (1.0, 1e-5)])
def test_classic_gaussian_formula_and_dominates_analytic(eps, delta):
    expected = math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert gaussian_sigma_classic(1.0, eps, delta) == pytest.approx(expected)
    assert gaussian_sigma_analytic(1.0, eps, delta) <= expected


def test_classic_gaussian_refuses_large_epsilon():
    with pytest.raises(ValueError, match="epsilon <= 1"):
        gaussian_sigma_classic(1.0, 2.0, 1e-5)


def test_zcdp_epsilon_reference():
    rho, delta = 0.5, 1e-5
    standard = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    # independent brute-force minimisation over a fine alpha grid
    alphas = 1 + np.exp(np.linspace(-10, 10, 200001))
    brute = min(
        a * rho + (math.log(1 / delta) + (a - 1) * math.log1p(-1 / a) - math.log(a)) / (a - 1) for a in alphas[::50]
    )
    got = zcdp_epsilon(rho, delta)
    assert got <= standard
    assert got == pytest.approx(brute, rel=1e-4)
    assert got == pytest.approx(4.72839, abs=1e-4)  # pinned


def _zcdp_epsilon_function_calls(rho, delta):
    """The former body of zcdp_epsilon: the grid evaluated through rdp_epsilon, one call per point."""
    from scipy import optimize

    log_inv = math.log(1.0 / delta)
    standard = rho + 2.0 * math.sqrt(rho * log_inv)

    def objective(log_am1):
        alpha = 1.0 + math.exp(log_am1)
        return rdp_epsilon(alpha, alpha * rho, delta)

    centre = 0.5 * math.log(max(log_inv, 1e-300) / rho)
    grid = centre + np.linspace(-8.0, 8.0, 161)
    values = [objective(g) for g in grid]
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best = min(values[i], float(res.fun) if res.success else math.inf)
    return max(0.0, float(min(best, standard)))


def test_zcdp_epsilon_is_the_function_call_form_bit_for_bit():
    """The inlined, memoised grid gives the same float as one rdp_epsilon call per grid point,
    on random rho over 24 decades and delta over 14, twice (the second time from the cache)."""
    from sklearn_dpsco.accounting._calibration import _zcdp_epsilon

    rng = np.random.default_rng(0)
    rhos = np.concatenate([10.0 ** rng.uniform(-12, 12, size=300), [1e-300, 5e-324, 0.5, 1.0, 1e6]])
    deltas = np.concatenate([10.0 ** rng.uniform(-15, -1, size=300), [1e-6, 1e-5, 1e-10, 0.5, 1e-6]])
    def outcome(f, *args):  # the value, or the error (a tiny rho puts the grid at inf: both refuse)
        try:
            return f(*args)
        except (ValueError, OverflowError) as e:
            return type(e), str(e)

    for _ in range(2):
        for rho, delta in zip(rhos.tolist(), deltas.tolist()):
            assert outcome(zcdp_epsilon, rho, delta) == outcome(_zcdp_epsilon_function_calls, rho, delta), (rho, delta)
    assert _zcdp_epsilon.cache_info().hits >= len(rhos) - 1  # a refusal (rho = 5e-324) is not cached
    assert zcdp_epsilon(np.float64(0.5), 1e-5) == zcdp_epsilon(0.5, 1e-5)
    assert zcdp_epsilon(0.0, 1e-5) == 0.0 and zcdp_epsilon(0.5, 0.0) == math.inf


def test_zcdp_rho_inverts_epsilon():
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-5), (4.0, 1e-9)]:
        rho = zcdp_rho(eps, delta)
        assert zcdp_epsilon(rho, delta) <= eps
        assert zcdp_epsilon(rho * 1.001, delta) > eps


def test_rdp_epsilon_never_worse_than_mironov():
    for alpha in [1.5, 2, 8, 32]:
        for delta in [1e-3, 1e-6]:
            assert rdp_epsilon(alpha, 0.3, delta) <= 0.3 + math.log(1 / delta) / (alpha - 1)


@pytest.mark.parametrize("fn, args, name", [
    (laplace_scale, (1.0, 0.0), "epsilon"),
    (laplace_scale, (1.0, -1.0), "epsilon"),
    (laplace_scale, (1.0, math.inf), "epsilon"),
    (laplace_scale, (-1.0, 1.0), "sensitivity"),
    (gaussian_sigma_analytic, (1.0, 1.0, 1.0), "delta"),
    (gaussian_sigma_analytic, (1.0, 1.0, -0.1), "delta"),
    (gaussian_sigma_analytic, (1.0, math.nan, 1e-5), "epsilon"),
])
def test_bad_arguments_name_the_parameter(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


def test_monotonicity():
    sig = [gaussian_sigma_analytic(1.0, e, 1e-5) for e in (0.25, 0.5, 1, 2, 4)]
    assert all(a > b for a, b in zip(sig, sig[1:]))
    sig = [gaussian_sigma_analytic(1.0, 1.0, d) for d in (1e-9, 1e-7, 1e-5, 1e-3)]
    assert all(a > b for a, b in zip(sig, sig[1:]))
    eps = [zcdp_epsilon(r, 1e-6) for r in (0.01, 0.1, 1, 10)]
    assert all(a < b for a, b in zip(eps, eps[1:]))


# ------------------------------------------------------------------ tiny budgets terminate
def test_nudge_until_is_bounded_far_from_the_root():
    """A root finder's tolerance can be large relative to x (tiny epsilon): the safe-side step grows."""
    from sklearn_dpsco.accounting._calibration import _nudge_until

    calls = []

    def holds(x):
        calls.append(x)
        return x <= 0.5

    assert _nudge_until(holds, 1.0, down=True) <= 0.5
    assert len(calls) < 60


@pytest.mark.parametrize("epsilon", [1e-6, 1e-9])
@pytest.mark.parametrize("delta", [1e-5, 1e-10])
def test_tiny_epsilon_calibrations_hold_exactly(epsilon, delta):
    from sklearn_dpsco.accounting._calibration import gaussian_delta, gaussian_epsilon, gaussian_mu, zcdp_epsilon, zcdp_rho

    rho = zcdp_rho(epsilon, delta)
    assert 0 < rho and zcdp_epsilon(rho, delta) <= epsilon
    mu = gaussian_mu(epsilon, delta)
    assert 0 < mu and gaussian_delta(mu, epsilon) <= delta
    assert gaussian_delta(mu, gaussian_epsilon(mu, delta)) <= delta


def test_estimators_fit_at_tiny_epsilon_with_delta():
    """Used to spend minutes in the zCDP conversion before touching data (regression test: tiny epsilon hang)."""
    import numpy as np

    from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    DPHingeClassifier(epsilon=1e-6, delta=1e-6, random_state=0).fit(X, y)
    # AdaSSP splits its budget three ways: at this budget each part would be (0, delta)-DP already,
    # which no (epsilon > 0, delta) calibration can express -- refused from the public budget.
    with pytest.raises(ValueError, match="too small to split"):
        DPLinearRegressor(epsilon=1e-6, delta=1e-6, row_bound=1.0, label_bound=1.0, random_state=0).fit(X, X[:, 0])
    DPLinearRegressor(epsilon=1e-4, delta=1e-6, row_bound=1.0, label_bound=1.0, random_state=0).fit(X, X[:, 0])


def test_grid_argmin_is_the_list_form_bit_for_bit():
    """zcdp_epsilon's grid is evaluated with NumPy and only the possible minimisers exactly (speed only): the
    index and value equal the list form's ``[objective(g) ...]`` and ``np.argmin``, on rho over 40 decades and
    delta over 300 (the fallback ranges included) and on the rho a budget fill asks for."""
    from sklearn_dpsco.accounting._calibration import _grid_argmin, _rdp_conversion

    rng = np.random.default_rng(1)
    rhos = np.concatenate([10.0 ** rng.uniform(-20, 20, size=1500), rng.uniform(1e-4, 0.2, size=1500),
                           [1e-300, 1e300, 1e-30, 1e30]])
    deltas = np.concatenate([10.0 ** rng.uniform(-300, -0.5, size=1500), 10.0 ** rng.uniform(-12, -3, size=1500),
                             [1e-6, 1e-6, 0.5, 1e-300]])
    for rho, delta in zip(rhos.tolist(), deltas.tolist()):
        log_inv = math.log(1.0 / delta)

        def objective(log_am1):
            alpha = 1.0 + math.exp(log_am1)
            return _rdp_conversion(alpha, alpha * rho, log_inv)

        points = (0.5 * math.log(max(log_inv, 1e-300) / rho) + np.linspace(-8.0, 8.0, 161)).tolist()
        try:
            values = [objective(g) for g in points]
        except (ValueError, OverflowError) as e:
            with pytest.raises(type(e)):
                _grid_argmin(objective, points, rho, log_inv)
            continue
        i = int(np.argmin(values))
        j, v = _grid_argmin(objective, points, rho, log_inv)
        assert (j, v) == (i, values[i]) and math.copysign(1.0, v) == math.copysign(1.0, values[i]), (rho, delta)


def test_zcdp_rho_memo_is_the_uncached_function():
    from sklearn_dpsco.accounting._calibration import _zcdp_rho

    for eps, delta in [(0.5, 1e-6), (1e-3, 1e-9), (7.0, 1e-5), (0.5, 1e-6)]:
        assert zcdp_rho(eps, delta) == _zcdp_rho.__wrapped__(eps, delta)
    assert zcdp_rho(np.float64(0.5), 1e-6) == zcdp_rho(0.5, 1e-6)
    with pytest.raises(ValueError, match="delta must be > 0"):
        zcdp_rho(0.5, 0.0)
