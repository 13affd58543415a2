"""Loss kernels: raw values against NumPy formulas, Lipschitz extensions against
brute-force infimal convolution, conjugates and dual steps against grids."""
import pickle

import numpy as np
import pytest

from sklearn_dpsco._fast._losses import Absolute, Hinge, Logistic, Power, Squared

KS = [0.1, 0.3, 0.7, 1.5, 3.0]


def _phi(loss, s, y):
    """Independent NumPy formulas of the raw losses, in z."""
    if isinstance(loss, Hinge):
        return np.maximum(0.0, 1.0 - y * s)
    if isinstance(loss, Logistic):
        return np.logaddexp(0.0, -y * s)
    if isinstance(loss, Squared):
        return 0.5 * (s - y) ** 2
    if isinstance(loss, Absolute):
        return np.abs(s - y)
    return np.abs(s - y) ** loss.p


def _dphi(loss, s, y):
    if isinstance(loss, Hinge):
        return np.where(y * s < 1.0, -y, 0.0)
    if isinstance(loss, Logistic):
        return -y / (1.0 + np.exp(y * s))
    if isinstance(loss, Squared):
        return s - y
    if isinstance(loss, Absolute):
        return np.sign(s - y)
    r = s - y
    return loss.p * np.abs(r) ** (loss.p - 1.0) * np.sign(r)


LOSSES = [Hinge(), Logistic(), Squared(), Absolute(), Power(1.0), Power(1.5), Power(2.0),
          Power(3.0), Power(4.0)]
IDS = [repr(x) for x in LOSSES]


def _labels(loss):
    return [-1.0, 1.0] if loss.is_classification else [0.5, -1.2]


def _brute_infconv(loss, t, y, k):
    """min_s phi(s) + k |t - s| by a two-level grid (coarse, then fine)."""
    out = np.empty_like(t)
    for j, tj in enumerate(t):
        s = np.linspace(tj - 30.0, tj + 30.0, 20001)
        f = _phi(loss, s, y) + k * np.abs(tj - s)
        s0 = s[np.argmin(f)]
        h = s[1] - s[0]
        s = np.concatenate([np.linspace(s0 - 2 * h, s0 + 2 * h, 40001), [tj]])
        out[j] = np.min(_phi(loss, s, y) + k * np.abs(tj - s))
    return out


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_value_and_deriv_match_numpy(loss):
    z = np.linspace(-6.0, 6.0, 241)
    for y in _labels(loss):
        np.testing.assert_allclose(loss.value(z, y), _phi(loss, z, y), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(loss.deriv(z, y), _dphi(loss, z, y), rtol=1e-13, atol=1e-14)
    # documented subgradients at the kinks: 0
    if isinstance(loss, Hinge):
        assert loss.deriv(1.0, 1.0) == 0.0 and loss.deriv(-1.0, -1.0) == 0.0
    if isinstance(loss, Absolute) or (isinstance(loss, Power) and loss.p == 1.0):
        assert loss.deriv(0.5, 0.5) == 0.0


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@pytest.mark.parametrize("k", KS)
def test_extension_matches_brute_force_infconv(loss, k):
    t = np.linspace(-5.0, 7.0, 25)
    for y in _labels(loss)[:1]:
        brute = _brute_infconv(loss, t, y, k)
        np.testing.assert_allclose(loss.ext_value(t, y, k), brute, atol=1e-6, rtol=0)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@pytest.mark.parametrize("k", KS)
def test_extension_properties(loss, k):
    t = np.linspace(-6.0, 8.0, 2801)
    for y in _labels(loss):
        psi = loss.ext_value(t, y, k)
        dpsi = loss.ext_deriv(t, y, k)
        phi = _phi(loss, t, y)
        dphi = _dphi(loss, t, y)
        # derivative is the clipped derivative (per-example clipping)
        np.testing.assert_allclose(dpsi, np.clip(dphi, -k, k), rtol=1e-13, atol=1e-14)
        # k-Lipschitz and convex, numerically
        slopes = np.diff(psi) / np.diff(t)
        assert np.all(np.abs(slopes) <= k * (1 + 1e-9) + 1e-12)
        assert np.all(np.diff(slopes) >= -1e-8)
        # below the loss, and equal to it where |phi'| <= k
        assert np.all(psi <= phi + 1e-12)
        inside = np.abs(dphi) <= k
        np.testing.assert_allclose(psi[inside], phi[inside], rtol=1e-13, atol=1e-14)
        # ext_deriv = finite differences of ext_value away from kinks
        h = 1e-6
        fd = (loss.ext_value(t + h, y, k) - loss.ext_value(t - h, y, k)) / (2 * h)
        kinks = []
        if isinstance(loss, Hinge):
            kinks = [y]  # m = 1
        elif isinstance(loss, Absolute) or (isinstance(loss, Power) and loss.p == 1.0):
            kinks = [y]  # r = 0
        away = np.ones_like(t, dtype=bool)
        for kk in kinks:
            away &= np.abs(t - kk) > 1e-3
        np.testing.assert_allclose(fd[away], dpsi[away], atol=2e-5)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_no_extension_at_infinite_k(loss):
    z = np.linspace(-4, 4, 81)
    y = _labels(loss)[0]
    np.testing.assert_array_equal(loss.ext_value(z, y, np.inf), loss.value(z, y))
    np.testing.assert_array_equal(loss.ext_deriv(z, y, np.inf), loss.deriv(z, y))


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@pytest.mark.parametrize("k", [0.3, 1.5, np.inf])
def test_conjugate_matches_grid_sup(loss, k):
    y = _labels(loss)[0]
    z = np.linspace(-60.0, 60.0, 240001)
    psi = loss.ext_value(z, y, k)
    bound = min(k, loss.lipschitz)
    us = np.linspace(-0.95, 0.95, 9) * (bound if np.isfinite(bound) else 2.0)
    for u in us:
        conj = loss.conj(u, y, k)
        if not np.isfinite(conj):
            # off the domain: the sup keeps growing with the grid's extent
            half = np.abs(z) <= 30.0
            assert np.max(u * z - psi) > np.max((u * z - psi)[half]) + 1e-3
            continue
        grid = np.max(u * z - psi)
        assert grid <= conj + 1e-9  # Fenchel-Young: never above the conjugate
        assert conj - grid < 1e-5
    if np.isfinite(bound):
        assert loss.conj(1.01 * bound, 1.0, k) == np.inf
        assert loss.conj(-1.01 * bound, 1.0, k) == np.inf


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@pytest.mark.parametrize("k", [0.2, 0.9, np.inf])
def test_dual_step_maximises_the_1d_problem(loss, k):
    rng = np.random.default_rng(7)
    y = _labels(loss)[1]
    bound = min(k, loss.lipschitz)
    for _ in range(12):
        z = rng.normal() * 3
        q = 10 ** rng.uniform(-3, 3)
        lo, hi = (-bound, bound) if np.isfinite(bound) else (-40.0, 40.0)
        if loss.is_classification:
            lo, hi = (0.0, bound) if y > 0 else (-bound, 0.0)
        beta = rng.uniform(lo, hi)
        b = float(loss.dual_step(beta, z, y, k, q))
        assert np.isfinite(loss.conj(-b, y, k))

        def obj(bb):
            return -loss.conj(-bb, y, k) - bb * z - 0.5 * q * (bb - beta) ** 2

        grid = np.linspace(lo, hi, 200001)
        vals = obj(grid)
        assert obj(b) >= np.max(vals[np.isfinite(vals)]) - 1e-9


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_dual_step_with_zero_curvature(loss):
    y = _labels(loss)[0]
    for z in (-2.0, 0.0, 0.7):
        np.testing.assert_allclose(loss.dual_step(0.0, z, y, 0.5, 0.0),
                                   -loss.ext_deriv(z, y, 0.5))


def test_power_special_cases():
    r = np.linspace(-3, 3, 61)
    np.testing.assert_allclose(Power(1.0).ext_value(r, 0.0, 0.4), Absolute().ext_value(r, 0.0, 0.4))
    np.testing.assert_allclose(Power(2.0).value(r, 0.0), r ** 2)
    k = 1.2  # r^2 extends to k|r| - k^2/4 beyond k/2
    ref = np.where(np.abs(r) <= k / 2, r ** 2, k * np.abs(r) - k ** 2 / 4)
    np.testing.assert_allclose(Power(2.0).ext_value(r, 0.0, k), ref, rtol=1e-14)
    # Squared is r^2 / 2 with Huber extension
    ref = np.where(np.abs(r) <= k, 0.5 * r ** 2, k * np.abs(r) - k ** 2 / 2)
    np.testing.assert_allclose(Squared().ext_value(r, 0.0, k), ref, rtol=1e-14)
    with pytest.raises(ValueError):
        Power(0.5)
    with pytest.raises(ValueError):
        Power(np.inf)


def test_logistic_closed_form_below_one():
    k = 0.3
    mk = np.log((1 - k) / k)
    m = np.linspace(-5, 5, 101)
    ref = np.where(m >= mk, np.logaddexp(0, -m), -np.log(1 - k) + k * (mk - m))
    np.testing.assert_allclose(Logistic().ext_value(m, 1.0, k), ref, rtol=1e-13)
    # extreme margins stay finite
    assert np.isfinite(Logistic().value(-800.0, 1.0)) and Logistic().value(800.0, 1.0) == 0.0


def test_constants_and_pickle():
    expected = {Hinge(): (1.0, np.inf), Logistic(): (1.0, 0.25), Squared(): (np.inf, 1.0),
                Absolute(): (1.0, np.inf), Power(1.0): (1.0, np.inf), Power(2.0): (np.inf, 2.0),
                Power(3.0): (np.inf, np.inf)}
    for loss, (lip, smooth) in expected.items():
        assert loss.lipschitz == lip and loss.smoothness == smooth
        clone = pickle.loads(pickle.dumps(loss))
        assert type(clone) is type(loss) and repr(clone) == repr(loss)
        z = np.linspace(-2, 2, 5)
        np.testing.assert_array_equal(clone.ext_value(z, 1.0, 0.5), loss.ext_value(z, 1.0, 0.5))


def test_broadcasting():
    loss = Logistic()
    z = np.linspace(-1, 1, 6).reshape(2, 3)
    out = loss.ext_deriv(z, np.array([1.0, -1.0, 1.0]), 0.2)
    assert out.shape == (2, 3)
    assert np.all(np.abs(out) <= 0.2)
