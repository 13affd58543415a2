"""Mechanisms: T0 exact checks and T1 statistical audits with mutant power checks.

This module pins the textbook formulas of the ``noise="float"`` path; the
secure path (the default) is tested in test_secure_noise.py.

Audits follow doc/privacy/testing.rst: releases on worst-case neighbours built
with the test-only linear loss (its minimizer moves by exactly the claimed
sensitivity), projected on the sensitivity direction, threshold chosen on a
calibration half and certified on a holdout half (alpha = 1e-6). Each audit
also runs a half-noise mutant and asserts it IS flagged.
"""

import math

import numpy as np
import pytest
from scipy import stats

from sklearn_dpsco._mechanisms import (
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    L2LaplaceMechanism,
    LaplaceMechanism,
    TruncatedDiscreteLaplace,
    l2_laplace_noise,
)
from sklearn_dpsco.accounting import GaussianEvent, LaplaceEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.testing import (
    audit_epsilon,
    audit_gaussian_dp,
    discrete_pmf_pvalue,
    ks_pvalue,
    l2_laplace_pvalues,
    project_on,
    linear_neighbour_centres,
)

ALPHA = 1e-6
N_DRAWS = 100_000


# ------------------------------------------------------------------ T0
def test_linear_loss_neighbours_have_exact_sensitivity():
    for d in (1, 3, 10):
        c, cp, sens = linear_neighbour_centres(d)
        assert np.linalg.norm(c - cp) == pytest.approx(sens, rel=1e-12)


def test_scales_and_events():
    m = LaplaceMechanism(2.0, 0.5, dimension=3, noise="float")
    assert m.scale == 4.0 and m.event == LaplaceEvent(2.0, 4.0, "l1")
    m = L2LaplaceMechanism(1.0, 2.0, dimension=5, noise="float")
    assert m.scale == 0.5 and epsilon_delta(m.event) == (2.0, 0.0)
    g = GaussianMechanism(1.0, 1.0, 1e-5, dimension=2, noise="float")
    assert g.sigma == pytest.approx(3.7306, abs=1e-4)
    assert isinstance(g.event, GaussianEvent)
    assert epsilon_delta(g.event, delta=1e-5)[0] == pytest.approx(1.0, rel=1e-8)
    assert GaussianMechanism(1.0, 0.5, 1e-5, calibration="classic", noise="float").sigma == pytest.approx(
        math.sqrt(2 * math.log(1.25e5)) / 0.5
    )
    assert DiscreteLaplaceMechanism(2, 0.5).event == PureDPEvent(0.5)


def test_release_shapes():
    rng = np.random.default_rng(0)
    m = L2LaplaceMechanism(1.0, 1.0, dimension=4)
    assert m.release(np.zeros(4), rng).shape == (4,)
    assert m.release(np.zeros(4), rng, size=7).shape == (7, 4)
    assert GaussianMechanism(1.0, 1.0, 1e-5, 3).release(np.ones(3), rng, size=2).shape == (2, 3)


@pytest.mark.parametrize("make, name", [
    (lambda: LaplaceMechanism(1.0, 0.0), "epsilon"),
    (lambda: LaplaceMechanism(1.0, -2.0), "epsilon"),
    (lambda: LaplaceMechanism(1.0, math.nan), "epsilon"),
    (lambda: LaplaceMechanism(-1.0, 1.0), "sensitivity"),
    (lambda: L2LaplaceMechanism(1.0, 1.0, 0), "dimension"),
    (lambda: GaussianMechanism(1.0, 1.0, 0.0), "delta"),
    (lambda: GaussianMechanism(1.0, 1.0, 1.0), "delta"),
    (lambda: GaussianMechanism(1.0, math.inf, 1e-5), "epsilon"),
    (lambda: GaussianMechanism(1.0, 1.0, 1e-5, calibration="magic"), "calibration"),
    (lambda: DiscreteLaplaceMechanism(0.5, 1.0), "sensitivity"),
    (lambda: TruncatedDiscreteLaplace(1.0, 0), "k"),
    (lambda: LaplaceMechanism(1.0, 1.0, noise="fast"), "noise"),
])
def test_bad_arguments_name_the_parameter(make, name):
    with pytest.raises((ValueError, TypeError), match=name):
        make()


# ------------------------------------------------------------------ truncated discrete Laplace (exact)
@pytest.mark.parametrize("eps, k", [(0.5, 3), (1.0, 10), (0.1, 40)])
def test_tdlap_exact_pmf(eps, k):
    t = TruncatedDiscreteLaplace(eps, k)
    j = np.arange(2 * k + 1)
    w = np.exp(-eps * np.abs(j - k))
    np.testing.assert_allclose(t.pmf(), w / w.sum(), rtol=1e-14)
    assert t.pmf().sum() == pytest.approx(1.0, abs=1e-14)
    # adjacent ratio <= e^eps everywhere in the support
    p = t.pmf()
    assert np.all(p[1:] / p[:-1] <= math.exp(eps) * (1 + 1e-12))
    assert np.all(p[:-1] / p[1:] <= math.exp(eps) * (1 + 1e-12))
    assert t.end_mass == pytest.approx(math.exp(-eps * k) / w.sum(), rel=1e-14)


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-6), (1.0, 1e-5), (0.25, 1e-9), (2.0, 0.1)])
def test_tdlap_minimal_k(eps, delta):
    t = TruncatedDiscreteLaplace.for_delta(eps, delta)
    assert t.end_mass <= delta
    if t.k > 1:
        assert TruncatedDiscreteLaplace(eps, t.k - 1).end_mass > delta
    assert t.k <= math.ceil(math.log(1 / delta) / eps)


@pytest.mark.parametrize("eps, k", [(0.5, 5), (1.0, 8)])
def test_tdlap_exact_hockey_stick_of_shift(eps, k):
    """Pairing l with l+1 (the DelOutputPert argument): the exact hockey-stick
    divergence of TDLap vs TDLap shifted by one is exactly the end mass."""
    t = TruncatedDiscreteLaplace(eps, k)
    p = np.append(t.pmf(), 0.0)  # P on 0..2k+1
    q = np.insert(t.pmf(), 0, 0.0)  # shifted by +1
    hs = np.maximum(p - math.exp(eps) * q, 0).sum()
    assert hs == pytest.approx(t.end_mass, rel=1e-12)
    hs_rev = np.maximum(q - math.exp(eps) * p, 0).sum()
    assert hs_rev == pytest.approx(t.end_mass, rel=1e-12)


@pytest.mark.statistical
def test_tdlap_sampler_gof():
    t = TruncatedDiscreteLaplace(0.5, 6, noise="float")
    x = t.sample(np.random.default_rng(11), size=N_DRAWS)
    assert discrete_pmf_pvalue(x, t.support, t.pmf()) > ALPHA
    mutant = TruncatedDiscreteLaplace(0.35, 6, noise="float")
    assert discrete_pmf_pvalue(x, mutant.support, mutant.pmf()) < ALPHA


# ------------------------------------------------------------------ sampler goodness of fit (T1)
@pytest.mark.statistical
@pytest.mark.parametrize("d", [1, 3, 10])
def test_l2_laplace_sampler_gof_and_mutants(d):
    rng = np.random.default_rng(100 + d)
    s = 0.7
    x = l2_laplace_noise(rng, s, d, size=N_DRAWS)
    p = l2_laplace_pvalues(x, s)
    assert min(p.values()) > ALPHA, p
    # scale mutants
    for wrong in (0.7 * s, 1.3 * s):
        assert l2_laplace_pvalues(x, wrong)["radius"] < ALPHA
    # wrong radius law: Gaussian vector with matched mean squared norm
    g = rng.standard_normal((N_DRAWS, d)) * s * math.sqrt(d + 1)
    assert min(l2_laplace_pvalues(g, s).values()) < ALPHA
    if d >= 3:
        # coordinate Laplace (not isotropic) fails the direction law
        lap = rng.laplace(0, s, (N_DRAWS, d))
        assert min(l2_laplace_pvalues(lap, s).values()) < ALPHA


@pytest.mark.statistical
def test_l2_laplace_covariance():
    d, s = 4, 0.5
    x = l2_laplace_noise(np.random.default_rng(5), s, d, size=N_DRAWS)
    cov = x.T @ x / N_DRAWS
    np.testing.assert_allclose(cov, (d + 1) * s**2 * np.eye(d), atol=0.05 * (d + 1) * s**2)


@pytest.mark.statistical
def test_discrete_laplace_gof_and_mutant():
    m = DiscreteLaplaceMechanism(1, 0.7, noise="float")
    x = m.sample(np.random.default_rng(3), size=N_DRAWS).ravel()
    support = np.arange(-60, 61)
    pmf = np.exp(-np.abs(support) * 0.7)
    pmf /= pmf.sum()
    assert discrete_pmf_pvalue(x, support, pmf) > ALPHA
    pmf_bad = np.exp(-np.abs(support) * 0.5)
    pmf_bad /= pmf_bad.sum()
    assert discrete_pmf_pvalue(x, support, pmf_bad) < ALPHA


@pytest.mark.statistical
def test_gaussian_sampler_gof():
    g = GaussianMechanism(1.0, 1.0, 1e-5, dimension=1, noise="float")
    x = g.release(0.0, np.random.default_rng(9), size=N_DRAWS).ravel()
    assert ks_pvalue(x, stats.norm(scale=g.sigma).cdf) > ALPHA
    assert ks_pvalue(x, stats.norm(scale=0.9 * g.sigma).cdf) < ALPHA


# ------------------------------------------------------------------ release audits (T1)
def _audit_release(mech_factory, d, eps, delta, seed, gaussian=False):
    """Audit the mechanism and its half-noise mutant on worst-case neighbours."""
    c, cp, sens = linear_neighbour_centres(d)
    rng = np.random.default_rng(seed)
    results = []
    for claimed_sens in (sens, sens / 2):  # the second is the 2x-underestimate (half-noise) mutant
        mech = mech_factory(claimed_sens)
        a = project_on(mech.release(c, rng, size=N_DRAWS), c, cp)
        b = project_on(mech.release(cp, rng, size=N_DRAWS), c, cp)
        if gaussian:
            results.append(audit_gaussian_dp(a, b, eps, delta, alpha=ALPHA))
        else:
            results.append(audit_epsilon(a, b, eps, delta, alpha=ALPHA))
    return results


@pytest.mark.statistical
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_laplace_audit(eps):
    ok, mutant = _audit_release(lambda s: LaplaceMechanism(s, eps, dimension=1, noise="float"), 1, eps, 0.0, seed=int(10 * eps))
    assert not ok.violation, ok
    assert mutant.violation, mutant


@pytest.mark.statistical
@pytest.mark.parametrize("eps, d", [(0.5, 1), (1.0, 2), (2.0, 3)])
def test_l2_laplace_audit(eps, d):
    ok, mutant = _audit_release(lambda s: L2LaplaceMechanism(s, eps, dimension=d, noise="float"), d, eps, 0.0, seed=d)
    assert not ok.violation, ok
    assert mutant.violation, mutant


@pytest.mark.statistical
@pytest.mark.parametrize("eps, delta, calibration", [(0.5, 1e-5, "analytic"), (1.0, 1e-6, "classic"), (4.0, 1e-6, "analytic")])
def test_gaussian_audit(eps, delta, calibration):
    ok, mutant = _audit_release(
        lambda s: GaussianMechanism(s, eps, delta, dimension=2, calibration=calibration, noise="float"), 2, eps, delta, seed=7, gaussian=True
    )
    assert not ok.violation, ok
    assert mutant.violation, mutant


@pytest.mark.statistical
def test_discrete_laplace_audit():
    eps = 1.0
    rng = np.random.default_rng(21)
    for t_mult, expect_violation in ((1.0, False), (0.5, True)):
        m = DiscreteLaplaceMechanism(1, eps / t_mult, noise="float")  # t_mult=0.5: calibrated for 2 eps (half noise)
        a = m.release(np.array([0]), rng, size=N_DRAWS).ravel().astype(float)
        b = m.release(np.array([1]), rng, size=N_DRAWS).ravel().astype(float)
        res = audit_epsilon(a, b, eps, alpha=ALPHA)
        assert res.violation is expect_violation, res
