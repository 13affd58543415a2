"""Goodness-of-fit checks for noise samplers, with mutant power checks in the tests.

Each function returns p-values; a test rejects at ``alpha`` (1e-6 in CI).
"""

import numpy as np
from scipy import stats

__all__ = ["ks_pvalue", "l2_laplace_pvalues", "discrete_pmf_pvalue"]


def ks_pvalue(samples, cdf):
    """Kolmogorov-Smirnov p-value of ``samples`` against a continuous ``cdf``."""
    return float(stats.kstest(np.asarray(samples, dtype=float).ravel(), cdf).pvalue)


def l2_laplace_pvalues(samples, scale):
    """Checks of isotropic l2-Laplace draws (rows of ``samples``) with ``scale``.

    * radius: KS against Gamma(d, scale);
    * direction: for a fixed unit vector v, ``(1 + <U, v>) / 2`` is
      Beta((d-1)/2, (d-1)/2) for U uniform on the sphere (d >= 2);
      for d = 1 the sign is a fair coin (binomial test);
    * covariance: the trace of the sample second moment is
      ``d (d + 1) scale^2`` in expectation; a z-test on ``||b||^2``.

    Returns
    -------
    pvalues : dict
    """
    x = np.atleast_2d(np.asarray(samples, dtype=float))
    n, d = x.shape
    r = np.linalg.norm(x, axis=1)
    out = {"radius": ks_pvalue(r, stats.gamma(a=d, scale=scale).cdf)}
    if d >= 2:
        v = np.zeros(d)
        v[0] = 1.0
        u = (x @ v) / np.where(r > 0, r, 1.0)
        out["direction"] = ks_pvalue((1 + u) / 2, stats.beta((d - 1) / 2, (d - 1) / 2).cdf)
    else:
        out["direction"] = float(stats.binomtest(int((x[:, 0] > 0).sum()), n).pvalue)
    r2 = r**2
    # E r^2 = d(d+1) s^2, Var r^2 = E r^4 - (E r^2)^2 for Gamma(d, s)
    mean = d * (d + 1) * scale**2
    var = d * (d + 1) * (d + 2) * (d + 3) * scale**4 - mean**2
    z = (r2.mean() - mean) / np.sqrt(var / n)
    out["second_moment"] = float(2 * stats.norm.sf(abs(z)))
    return out


def discrete_pmf_pvalue(samples, support, pmf, min_expected=5.0):
    """Chi-square p-value of integer ``samples`` against ``pmf`` on ``support``.

    Cells with expected count below ``min_expected`` are pooled into the
    tails (and anything outside ``support`` counts there too).
    """
    samples = np.asarray(samples).ravel()
    support = np.asarray(support)
    pmf = np.asarray(pmf, dtype=float)
    n = samples.size
    expected = n * pmf
    keep = expected >= min_expected
    counts = np.array([(samples == s).sum() for s in support[keep]])
    obs = np.append(counts, n - counts.sum())
    exp = np.append(expected[keep], n - expected[keep].sum())
    if exp[-1] < 1e-9:
        if obs[-1] > 0:
            return 0.0
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)
