"""Statistical privacy audits (doc/privacy/testing.rst).

An audit looks at releases of a mechanism on two neighbouring datasets D and
D', reduced to scalar scores (e.g. the projection on the sensitivity
direction). It searches for a threshold event E on a *calibration* half and
certifies on a disjoint *holdout* half, with Clopper-Pearson intervals:

* pure / approximate DP: ``eps_lb = log((P_D(E)_lcb - delta) / P_D'(E)_ucb)``.
  An (eps, delta)-DP mechanism has ``eps_lb <= eps`` except with
  probability ``alpha``.
* Gaussian DP: ``mu_lb = Phi^-1(1 - FPR_ucb) - Phi^-1(FNR_ucb)`` with
  ``FPR = P_D'(E)`` and ``FNR = 1 - P_D(E)``; a mechanism that is
  (eps, delta)-DP *through a Gaussian of mu <= mu_max(eps, delta)* has
  ``mu_lb <= mu_max`` except with probability ``alpha``.

A passed audit means "no violation larger than the power of the mutant
checks"; every test pairs the audit with mutants that must be flagged.
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..accounting import gaussian_mu

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "audit_epsilon",
    "audit_gaussian_dp",
    "epsilon_lower_bound_from_counts",
    "project_on",
    "mu_max",
]


def clopper_pearson(k, n, alpha):
    """Two-sided ``1 - alpha`` Clopper-Pearson interval for a binomial proportion.

    Returns ``(lower, upper)``; each side fails with probability at most
    ``alpha / 2``.
    """
    k = np.asarray(k, dtype=float)
    lo = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return lo, hi


def mu_max(epsilon, delta):
    """The largest Gaussian-DP mu consistent with (epsilon, delta)-DP."""
    return gaussian_mu(epsilon, delta)


def project_on(draws, start, end):
    """Scalar scores: coordinates of ``draws`` along the unit vector from ``start`` to ``end``."""
    draws = np.atleast_2d(np.asarray(draws, dtype=float))
    start = np.asarray(start, dtype=float).ravel()
    direction = np.asarray(end, dtype=float).ravel() - start
    norm = np.linalg.norm(direction)
    if norm == 0:
        raise ValueError("start and end coincide: no sensitivity direction to project on.")
    return (draws - start) @ (direction / norm)


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit on a held-out half."""

    statistic: str  # "epsilon" or "mu"
    lower_bound: float
    claimed: float
    threshold: float
    side: str  # event is {score > t} ("upper") or {score < t} ("lower")
    swapped: bool  # True when the event favours D' over D
    p_hat: float
    q_hat: float

    @property
    def violation(self):
        """True when the certified lower bound exceeds the claim."""
        return self.lower_bound > self.claimed

    def __str__(self):
        return (
            f"{self.statistic}_lb={self.lower_bound:.4g} vs claimed {self.claimed:.4g} "
            f"(event {self.side} {self.threshold:.4g}, swapped={self.swapped}, "
            f"P_D={self.p_hat:.3g}, P_D'={self.q_hat:.3g})"
        )


def _event_counts(sorted_scores, thresholds):
    """Counts of {s > t} and {s < t} for each t."""
    n = sorted_scores.size
    above = n - np.searchsorted(sorted_scores, thresholds, side="right")
    below = np.searchsorted(sorted_scores, thresholds, side="left")
    return above, below


def _bound(statistic, p_lo, q_hi, delta):
    if statistic == "epsilon":
        num = p_lo - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where((num > 0) & (q_hi > 0), np.log(num / q_hi), 0.0)
        return np.maximum(out, 0.0)
    # Gaussian DP trade-off: mu >= Phi^-1(1 - FPR) - Phi^-1(FNR)
    fnr = 1.0 - p_lo
    with np.errstate(divide="ignore", invalid="ignore"):
        out = stats.norm.isf(q_hi) - stats.norm.ppf(fnr)
    return np.maximum(np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0), 0.0)


def _audit(scores_d, scores_dp, statistic, claimed, delta, alpha, n_thresholds, selection_alpha, tails=0):
    a = np.asarray(scores_d, dtype=float).ravel()
    b = np.asarray(scores_dp, dtype=float).ravel()
    if a.size < 20 or b.size < 20:
        raise ValueError("need at least 20 scores per side.")
    half_a, half_b = a.size // 2, b.size // 2
    cal_a, hold_a = np.sort(a[:half_a]), np.sort(a[half_a:])
    cal_b, hold_b = np.sort(b[:half_b]), np.sort(b[half_b:])

    pooled = np.concatenate([cal_a, cal_b])
    levels = np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1]
    if tails:
        # (eps, delta) tail audits: geometric quantile levels down to ~10 expected
        # events per side, where a violation of the tail law shows first.
        q = np.geomspace(min(10.0 / pooled.size, 0.01), 0.05, int(tails))
        levels = np.concatenate([levels, q, 1.0 - q])
    thresholds = np.unique(np.quantile(pooled, np.sort(levels)))

    best = None
    for swapped, (x, y) in enumerate(((cal_a, cal_b), (cal_b, cal_a))):
        x_above, x_below = _event_counts(x, thresholds)
        y_above, y_below = _event_counts(y, thresholds)
        for side, kx, ky in (("upper", x_above, y_above), ("lower", x_below, y_below)):
            p_lo, _ = clopper_pearson(kx, x.size, selection_alpha)
            _, q_hi = clopper_pearson(ky, y.size, selection_alpha)
            values = _bound(statistic, p_lo, q_hi, delta)
            i = int(np.argmax(values))
            if best is None or values[i] > best[0]:
                best = (values[i], thresholds[i], side, bool(swapped))

    _, t, side, swapped = best
    x, y = (hold_b, hold_a) if swapped else (hold_a, hold_b)
    x_above, x_below = _event_counts(x, np.array([t]))
    y_above, y_below = _event_counts(y, np.array([t]))
    kx, ky = (x_above, y_above) if side == "upper" else (x_below, y_below)
    # Bonferroni: each of the two one-sided bounds fails w.p. <= alpha / 2.
    p_lo, _ = clopper_pearson(kx, x.size, alpha)
    _, q_hi = clopper_pearson(ky, y.size, alpha)
    lb = float(_bound(statistic, p_lo, q_hi, delta)[0])
    return AuditResult(
        statistic=statistic,
        lower_bound=lb,
        claimed=float(claimed),
        threshold=float(t),
        side=side,
        swapped=swapped,
        p_hat=float(kx[0] / x.size),
        q_hat=float(ky[0] / y.size),
    )


def audit_epsilon(
    scores_d, scores_dp, epsilon, delta=0.0, *, alpha=1e-6, n_thresholds=200, selection_alpha=0.05, tails=0
):
    """Certified lower bound on epsilon from scalar release scores on D and D'.

    Parameters
    ----------
    scores_d, scores_dp : array-like of shape (n_draws,)
        I.i.d. scores of releases on D and on its neighbour D'.
    epsilon, delta : float
        The claimed guarantee.
    alpha : float, default=1e-6
        Probability that a correct mechanism is flagged.
    tails : int, default=0
        Extra candidate thresholds per tail at geometrically spaced quantile
        levels (from ~10 / n_draws to 0.05): the (eps, delta) *tail* audit
        of the slow tier. 0 keeps the uniform quantile grid only.

    Returns
    -------
    AuditResult
        ``result.violation`` is True when the lower bound exceeds ``epsilon``.
    """
    return _audit(scores_d, scores_dp, "epsilon", epsilon, delta, alpha, n_thresholds, selection_alpha, tails)


def audit_gaussian_dp(
    scores_d, scores_dp, epsilon, delta, *, alpha=1e-6, n_thresholds=200, selection_alpha=0.05, tails=0
):
    """Certified lower bound on the Gaussian-DP mu, against ``mu_max(epsilon, delta)``.

    Use for Gaussian releases, where a pure-epsilon event test has little
    power at small delta. ``tails`` as in :func:`audit_epsilon`.
    """
    return _audit(
        scores_d, scores_dp, "mu", mu_max(epsilon, delta), delta, alpha, n_thresholds, selection_alpha, tails
    )


def epsilon_lower_bound_from_counts(k_d, n_d, k_dp, n_dp, delta=0.0, alpha=1e-6):
    """Certified epsilon lower bound for one *pre-chosen* event.

    ``k_d`` of ``n_d`` releases on D and ``k_dp`` of ``n_dp`` on D' fell in
    the event. Use when the event is fixed in advance (e.g. "the output is
    the refusal symbol", or a bit-level porosity event), so no calibration
    half is needed.
    """
    p_lo, _ = clopper_pearson(k_d, n_d, alpha)
    _, q_hi = clopper_pearson(k_dp, n_dp, alpha)
    return float(_bound("epsilon", np.atleast_1d(p_lo), np.atleast_1d(q_hi), delta)[0])
