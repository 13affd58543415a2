"""T2 (slow tier): (eps, delta) tail audits of every mechanism, float and secure paths.

Run by hand before a release (doc/privacy/testing.rst)::

    pytest --run-slow -m slow tests

1e6 releases per side and per mechanism (more where the audit's resolution
needs it: up to 6e6 for Gaussian-DP audits with mu_max < 0.05, 4e6 for
isotropic l2-Laplace at epsilon = 0.1), on grids over epsilon in {0.1,
0.5, 1, 2, 4}, delta in {1e-3, 1e-5, 1e-8} and d in {1, 2, 3}. Every audit
runs on worst-case neighbours and again on two mutants with 0.8x and 0.5x
the noise; the half-noise mutant MUST be flagged, and both mutants' bounds
go to the Markdown report as the audit's measured power. Thresholds include
geometric tail quantiles down to ~1e-5 (tail audits). alpha = 1e-6 per audit.
"""

import time
import zlib

import numpy as np
import pytest

from sklearn_dpsco._mechanisms import (
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    L2LaplaceMechanism,
    LaplaceMechanism,
    TruncatedDiscreteLaplace,
)
from sklearn_dpsco.accounting import gaussian_epsilon
from sklearn_dpsco.testing import (
    audit_release_with_mutants,
    linear_loss_minimizer,
    mu_max,
    porosity_audit,
    worst_case_neighbours,
)

pytestmark = pytest.mark.slow

N_DRAWS = 1_000_000
ALPHA = 1e-6
EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0]
DELTAS = [1e-3, 1e-5, 1e-8]
DIMS = [1, 2, 3]
NOISES = ["float", "secure"]
FACTORS = (0.8, 0.5)


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _l2_neighbours(d, n=50, lam=0.1):
    """Linear-loss neighbours: the minimizer moves by exactly the sensitivity."""
    X, y, Xp, yp = worst_case_neighbours(n, d)
    return linear_loss_minimizer(X, y, lam), linear_loss_minimizer(Xp, yp, lam), 2.0 / (lam * n)


def _axis_neighbours(d, sens):
    c = np.zeros(d)
    cp = c.copy()
    cp[0] = sens
    return c, cp


def _gaussian_draws(eps, delta):
    """The mu audit's resolution shrinks like 1/sqrt(n): keep 0.5 mu_max visible."""
    ratio = (0.05 / mu_max(eps, delta)) ** 2
    return int(round(N_DRAWS * min(max(ratio, 1.0), 6.0), -5))


def _l2_draws(eps):
    """Projected isotropic audits lose power at small epsilon (and with d)."""
    return N_DRAWS * (4 if eps < 0.5 else 1)


def _record(report, group, name, params, statistic, ok, mutants, true_values, t0, note="", n_draws=N_DRAWS):
    report.record(
        group=group,
        name=name,
        params=params,
        n_draws=n_draws,
        statistic=statistic,
        claimed=ok.claimed,
        lower_bound=ok.lower_bound,
        mutants={lab: (res.lower_bound, true_values[lab]) for lab, res in mutants.items()},
        seconds=time.perf_counter() - t0,
        note=note,
    )


def _check(ok, mutants):
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]


# ------------------------------------------------------------------ pure DP: Laplace, l2-Laplace
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_t2_laplace(eps, d, noise, audit_report):
    t0 = time.perf_counter()
    sens = 1.0
    c, cp = _axis_neighbours(d, sens)  # an l1 shift of exactly `sens`
    ok, mutants = audit_release_with_mutants(
        lambda f: LaplaceMechanism(f * sens, eps, d, noise=noise), c, cp, eps, 0.0,
        statistic="epsilon", n_draws=N_DRAWS, rng=_rng("laplace", eps, d, noise), factors=FACTORS,
    )
    _record(audit_report, "Laplace (coordinate)", f"laplace/{noise}", {"eps": eps, "d": d}, "epsilon",
            ok, mutants, {f"x{f:g}": eps / f for f in FACTORS}, t0)
    _check(ok, mutants)


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_t2_l2_laplace(eps, d, noise, audit_report):
    t0 = time.perf_counter()
    c, cp, sens = _l2_neighbours(d)
    n = _l2_draws(eps)
    ok, mutants = audit_release_with_mutants(
        lambda f: L2LaplaceMechanism(f * sens, eps, d, noise=noise), c, cp, eps, 0.0,
        statistic="epsilon", n_draws=n, rng=_rng("l2", eps, d, noise), factors=FACTORS,
    )
    _record(audit_report, "l2-Laplace (isotropic)", f"l2_laplace/{noise}", {"eps": eps, "d": d}, "epsilon",
            ok, mutants, {f"x{f:g}": eps / f for f in FACTORS}, t0,
            note="secure = hardened continuous sampler rounded to the grid", n_draws=n)
    _check(ok, mutants)


# ------------------------------------------------------------------ (eps, delta): Gaussian
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_t2_gaussian(eps, delta, d, noise, audit_report):
    t0 = time.perf_counter()
    c, cp, sens = _l2_neighbours(d)
    rng = _rng("gauss", eps, delta, d, noise)
    n = _gaussian_draws(eps, delta)
    out = audit_release_with_mutants(
        lambda f: GaussianMechanism(f * sens, eps, delta, d, noise=noise), c, cp, eps, delta,
        statistic=("mu", "epsilon"), n_draws=n, rng=rng, factors=FACTORS,
    )
    mech = GaussianMechanism(sens, eps, delta, d, noise=noise)
    mu = sens / mech.sigma  # <= mu_max(eps, delta); smaller on the zCDP-calibrated secure path
    params = {"eps": eps, "delta": delta, "d": d}
    ok_mu, mut_mu = out["mu"]
    _record(audit_report, "Gaussian: Gaussian-DP audit", f"gaussian/{noise}", params, "mu",
            ok_mu, mut_mu, {f"x{f:g}": mu / f for f in FACTORS}, t0,
            note=f"mu = {mu:.4g}, mu_max = {mu_max(eps, delta):.4g}", n_draws=n)
    ok_eps, mut_eps = out["epsilon"]
    _record(audit_report, "Gaussian: (eps, delta) tail audit", f"gaussian/{noise}", params, "epsilon",
            ok_eps, mut_eps, {f"x{f:g}": gaussian_epsilon(mu / f, delta) for f in FACTORS}, t0, n_draws=n)
    _check(ok_mu, mut_mu)
    assert not ok_eps.violation, ok_eps


# ------------------------------------------------------------------ integer mechanisms
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("eps", EPSILONS)
def test_t2_discrete_laplace(eps, noise, audit_report):
    t0 = time.perf_counter()
    ok, mutants = audit_release_with_mutants(
        lambda f: DiscreteLaplaceMechanism(1, eps / f, noise=noise), np.array([0]), np.array([1]), eps, 0.0,
        statistic="epsilon", n_draws=N_DRAWS, rng=_rng("dlap", eps, noise), factors=FACTORS,
    )
    _record(audit_report, "Discrete Laplace", f"discrete_laplace/{noise}", {"eps": eps}, "epsilon",
            ok, mutants, {f"x{f:g}": eps / f for f in FACTORS}, t0)
    _check(ok, mutants)


class _ShiftedTDLap:
    """Release ``value + TDLap(eps, k)``: neighbours at 0 and 1 are the j vs j + 1 pairing."""

    def __init__(self, eps, k, noise):
        self.mech = TruncatedDiscreteLaplace(eps, k, noise)

    def release(self, value, rng, size):
        return np.asarray(value)[None, :] + self.mech.sample(rng, size)[:, None]


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_t2_truncated_discrete_laplace(eps, delta, noise, audit_report):
    t0 = time.perf_counter()
    k = TruncatedDiscreteLaplace.for_delta(eps, delta).k
    end_mass = TruncatedDiscreteLaplace(eps, k, "float").end_mass
    ok, mutants = audit_release_with_mutants(
        lambda f: _ShiftedTDLap(eps / f, k, noise), np.array([0]), np.array([1]), eps, end_mass,
        statistic="epsilon", n_draws=N_DRAWS, rng=_rng("tdlap", eps, delta, noise), factors=FACTORS,
    )
    _record(audit_report, "Truncated discrete Laplace (shift by one)", f"tdlap/{noise}",
            {"eps": eps, "delta": delta, "k": k}, "epsilon", ok, mutants,
            {f"x{f:g}": eps / f for f in FACTORS}, t0, note=f"claimed delta = end mass {end_mass:.3g}")
    _check(ok, mutants)


# ------------------------------------------------------------------ porosity at 1e6 draws
_POROSITY_MECHS = {
    "laplace": lambda eps, noise: LaplaceMechanism(1.0, eps, 1, noise=noise),
    "l2_laplace": lambda eps, noise: L2LaplaceMechanism(1.0, eps, 2, noise=noise),
    "gaussian": lambda eps, noise: GaussianMechanism(1.0, eps, 1e-5, 1, noise=noise),
}


def _porosity(name, eps, noise, report):
    t0 = time.perf_counter()
    m = _POROSITY_MECHS[name](eps, noise)
    rng = _rng("porosity", name, eps, noise)
    e1 = np.zeros(m.dimension)
    e1[0] = 1.0
    a = m.release(np.zeros(m.dimension), rng, size=N_DRAWS)[:, 0]
    b = m.release(e1, rng, size=N_DRAWS)[:, 0]
    delta = 1e-5 if name == "gaussian" else 0.0
    res = porosity_audit(a, b, eps, delta, alpha=ALPHA)
    report.record(
        group="Bit-level porosity (Mironov 2012): {|y| < 1/2, y 2^53 not an integer}",
        name=f"{name}/{noise}", params={"eps": eps}, n_draws=N_DRAWS, statistic="epsilon",
        claimed=eps, lower_bound=res.lower_bound, expected_violation=(noise == "float"),
        seconds=time.perf_counter() - t0, note=f"event counts {res.k_d} vs {res.k_dp}",
    )
    return res


@pytest.mark.parametrize("name", list(_POROSITY_MECHS))
@pytest.mark.parametrize("eps", EPSILONS)
def test_t2_porosity_secure(name, eps, audit_report):
    res = _porosity(name, eps, "secure", audit_report)
    assert not res.violation, res


@pytest.mark.parametrize("name", list(_POROSITY_MECHS))
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.xfail(strict=True, reason="Mironov 2012: the float path is porous (documented weakness)")
def test_t2_porosity_float(name, eps, audit_report):
    res = _porosity(name, eps, "float", audit_report)
    assert not res.violation, res
