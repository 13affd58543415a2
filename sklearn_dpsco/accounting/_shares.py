"""Budget shares: what a meta-estimator gives each fit it runs (doc/privacy/composition.rst).

A :class:`Share` is the pair of parameters a private estimator is fitted
with (``epsilon``, ``delta``) together with the *allowance* event the
meta-estimator composes in its proof; the fit runs under a
:class:`~sklearn_dpsco.accounting.FitAllowance` of that event, so it cannot
consume more. Two kinds:

* ``"pure"`` (``delta == 0``): the estimator is fitted with ``(eps_i, 0)``;
  allowance ``PureDPEvent(eps_i)``; shares compose by adding epsilons.
* ``"gaussian"`` (``delta > 0``): the estimator is fitted with
  ``(gaussian_epsilon(mu_i, delta), delta)``, so its Gaussian noise has
  Gaussian-DP parameter exactly ``mu_i``; allowance ``GaussianEvent(mu_i, 1)``;
  shares compose exactly as ``mu^2 = sum mu_i^2`` (Dong, Roth, Su 2019).
  Estimators whose events under ``delta > 0`` are not Gaussian are refused by
  the allowance (their loss would not compose this way).
"""

import math
from dataclasses import dataclass

from .._param_checks import check_delta, check_epsilon
from ._calibration import gaussian_epsilon, gaussian_mu
from ._events import GaussianEvent, PrivacyEvent, PureDPEvent

__all__ = ["Share", "pure_share", "gaussian_share", "split_by_weights"]

_CALIBRATION_SLACK = 1e-9


@dataclass(frozen=True)
class Share:
    """Parameters of one fit and the allowance its meta-estimator composes."""

    epsilon: float
    delta: float
    allowance: PrivacyEvent

    @property
    def kind(self):
        return "pure" if self.delta == 0 else "gaussian"

    @property
    def mu(self):
        """Gaussian-DP parameter of a ``"gaussian"`` share (0 for pure)."""
        return self.allowance.mu if isinstance(self.allowance, GaussianEvent) else 0.0


def pure_share(epsilon):
    epsilon = check_epsilon(epsilon, "share epsilon")
    return Share(epsilon, 0.0, PureDPEvent(epsilon))


def gaussian_share(mu, delta):
    if not (mu > 0 and math.isfinite(mu)):
        raise ValueError(f"a Gaussian share needs a finite mu > 0, got {mu!r}.")
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("a Gaussian share needs delta > 0.")
    # the estimator calibrates sigma = sensitivity / gaussian_mu(eps, delta); with
    # eps = gaussian_epsilon(mu (1 - slack), delta) its mu is below the allowance's
    # mu despite the ~1e-12 relative rounding of the two calibrations.
    return Share(gaussian_epsilon(mu * (1.0 - _CALIBRATION_SLACK), delta), delta, GaussianEvent(mu, 1.0))


def split_by_weights(epsilon, delta, weights):
    """Shares proportional to ``weights`` whose composition is exactly (epsilon, delta).

    Pure: ``eps_i = epsilon w_i / W``. Gaussian: ``mu_i = mu sqrt(w_i / W)``
    with ``mu = gaussian_mu(epsilon, delta)``, so ``sum mu_i^2 = mu^2``.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    weights = [float(w) for w in weights]
    if not weights or any(not (w > 0 and math.isfinite(w)) for w in weights):
        raise ValueError(f"weights must be finite and > 0, got {weights!r}.")
    total = sum(weights)
    if delta == 0:
        return [pure_share(epsilon * w / total) for w in weights]
    mu = gaussian_mu(epsilon, delta)
    return [gaussian_share(mu * math.sqrt(w / total), delta) for w in weights]
