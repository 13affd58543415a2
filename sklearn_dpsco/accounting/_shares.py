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
* ``"zcdp"`` (``delta > 0``, estimators on the secure noise path, whose
  discrete Gaussian is calibrated through zCDP): fitted with
  ``(zcdp_epsilon(rho_i, delta), delta)``, so its zCDP parameter is ``rho_i``;
  allowance ``ZCDPEvent(rho_i)``; shares compose as ``rho = sum rho_i``. A
  Gaussian or pure part also fits such an allowance through its zCDP reading
  (``mu^2/2``, ``eps^2/2``).

* ``"basic"`` (``delta > 0``, approximate-DP parts without a Gaussian or
  zCDP curve): fitted with ``(eps_i, delta_i)``; allowance
  ``ApproxDPEvent(eps_i, delta_i)``; shares compose by adding both.

:func:`split_by_weights` is the library's one budget split (the rules and the
calibration slack are in its docstring). :func:`curve_kind` picks ``"zcdp"`` unless every private step of an estimator
uses the float Gaussian (``noise="float"``).
"""

import math
from dataclasses import dataclass

from sklearn.pipeline import Pipeline

from .._param_checks import check_delta, check_epsilon
from ._calibration import gaussian_epsilon, gaussian_mu, zcdp_epsilon, zcdp_rho
from ._events import ApproxDPEvent, GaussianEvent, PrivacyEvent, PureDPEvent, ZCDPEvent

__all__ = [
    "Share",
    "basic_share",
    "curve_kind",
    "curve_share",
    "gaussian_share",
    "pipeline_steps",
    "pure_share",
    "split_budget",
    "split_by_weights",
    "split_kind",
    "zcdp_share",
]

# Relative shrink of every Gaussian / zCDP share (see split_by_weights): the
# mechanisms' root-finding calibrations round by ~1e-12 relative.
_CALIBRATION_SLACK = 1e-9


@dataclass(frozen=True)
class Share:
    """Parameters of one fit and the allowance its meta-estimator composes."""

    epsilon: float
    delta: float
    allowance: PrivacyEvent

    @property
    def kind(self):
        if self.delta == 0:
            return "pure"
        if isinstance(self.allowance, ApproxDPEvent):
            return "basic"
        return "zcdp" if isinstance(self.allowance, ZCDPEvent) else "gaussian"

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


def zcdp_share(rho, delta):
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"a zCDP share needs a finite rho > 0, got {rho!r}.")
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("a zCDP share needs delta > 0.")
    # the estimator calibrates rho = zcdp_rho(eps, delta): slack as for Gaussian shares
    return Share(zcdp_epsilon(rho * (1.0 - _CALIBRATION_SLACK), delta), delta, ZCDPEvent(rho))


def basic_share(epsilon, delta):
    """An approximate-DP share ``(epsilon, delta)`` (basic composition)."""
    epsilon = check_epsilon(epsilon, "share epsilon")
    delta = check_delta(delta)
    return Share(epsilon, delta, ApproxDPEvent(epsilon, delta) if delta > 0 else PureDPEvent(epsilon))


def curve_share(value, delta, kind):
    """A ``"gaussian"`` share of Gaussian-DP ``value`` or a ``"zcdp"`` share of rho ``value``."""
    return gaussian_share(value, delta) if kind == "gaussian" else zcdp_share(value, delta)


def pipeline_steps(estimator):
    """``[(name, step), ...]`` of a pipeline, else ``[]`` (an estimator's own ``steps`` parameter, such as
    DPLinearRegressor's step-size rule, is not a list of pipeline steps)."""
    return list(estimator.steps) if isinstance(estimator, Pipeline) else []


def curve_kind(estimator):
    """``"gaussian"`` when every ``noise`` parameter of ``estimator`` is ``"float"`` and no step may release a
    pure part at ``delta > 0``, else ``"zcdp"``.

    The library's linear models may compose pure releases (their "auto" scales, column quartiles, the hinge's
    intercept refit) with their Gaussian solvers; a Gaussian-DP allowance cannot hold a pure part, a zCDP one
    holds both (``eps^2 / 2``, ``mu^2 / 2``), and their budget fill plans within it
    (linear_model/_auto_scales.py, ``fill_budget``). A step says so by ``_may_release_pure = True``.
    """
    params = estimator.get_params(deep=True) if hasattr(estimator, "get_params") else {}
    noises = [v for k, v in params.items() if k == "noise" or k.endswith("__noise")]
    steps = [step for _, step in pipeline_steps(estimator)]
    if any(getattr(step, "_may_release_pure", False) for step in [estimator, *steps]):
        return "zcdp"
    return "gaussian" if noises and all(v == "float" for v in noises) else "zcdp"


def split_kind(delta, noise):
    """The split rule of releases on the ``noise`` path at ``delta``: ``"pure"``, ``"gaussian"`` or ``"zcdp"``.

    ``delta == 0``: pure DP (Laplace-type noise). Otherwise the float Gaussian
    (``noise="float"``, analytic calibration, exactly Gaussian-DP) splits
    ``mu``; the secure discrete Gaussian (``noise="secure"``, calibrated
    through zCDP) splits ``rho``.
    """
    if delta == 0:
        return "pure"
    if noise not in ("secure", "float"):
        raise ValueError(f"noise must be 'secure' or 'float', got {noise!r}.")
    return "zcdp" if noise == "secure" else "gaussian"


def split_by_weights(epsilon, delta, weights, kinds=None):
    """Shares proportional to ``weights`` whose composition is within (epsilon, delta).

    THE budget split of the library: estimators (one-vs-rest problems),
    building blocks with several releases (Lowy's two stages, AdaSSP's three
    statistics, the scaler's two moments), pipelines and searches all call
    this function (directly or through :func:`split_budget`). The rules, with
    ``W = sum(weights)``:

    * pure (``delta == 0``, any kind): ``eps_i = epsilon w_i / W``; basic
      composition of pure DP is exact.
    * ``"gaussian"`` (float Gaussian releases, analytic calibration, exactly
      Gaussian-DP): ``mu_i = mu sqrt(w_i / W)`` with ``mu = gaussian_mu(epsilon,
      delta)``, so ``sum mu_i^2 = mu^2`` (Dong, Roth, Su 2019); part i is
      fitted at ``(gaussian_epsilon(mu_i), delta)``; allowance
      ``GaussianEvent(mu_i, 1)``.
    * ``"zcdp"`` (secure discrete Gaussian releases, calibrated through zCDP):
      ``rho_i = rho w_i / W`` with ``rho = zcdp_rho(epsilon, delta)``; zCDP
      parameters add; part i is fitted at ``(zcdp_epsilon(rho_i), delta)``;
      allowance ``ZCDPEvent(rho_i)``. When kinds are mixed and any is
      ``"zcdp"``, the whole budget is read in zCDP and a ``"gaussian"`` part is
      fitted at the epsilon whose Gaussian has ``mu = sqrt(2 rho_i)`` (its
      zCDP reading is ``rho_i``).
    * ``"basic"`` (approximate-DP parts with no curve, e.g. the deletion
      mechanism or group privacy): ``(epsilon w_i / W, delta w_i / W)``;
      allowance ``ApproxDPEvent``. Cannot be mixed with curve kinds.

    Calibration slack: each part's mechanism re-derives its ``mu`` (``rho``)
    from (its epsilon, delta) by root finding, which may land a few ulps above
    the share; every Gaussian / zCDP share is shrunk by a relative 1e-9
    (``_CALIBRATION_SLACK``) so the composition stays at or below
    (epsilon, delta) (the noise grows by a relative 1e-9).
    doc/privacy/composition.rst.

    Parameters
    ----------
    epsilon, delta : float
        The total budget.
    weights : sequence of float > 0
    kinds : sequence of {"gaussian", "zcdp", "basic"}, default=None
        Each part's calibration (ignored when ``delta == 0``; default all
        ``"gaussian"``).

    Returns
    -------
    list of Share
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    weights = [float(w) for w in weights]
    if not weights or any(not (w > 0 and math.isfinite(w)) for w in weights):
        raise ValueError(f"weights must be finite and > 0, got {weights!r}.")
    total = sum(weights)
    if delta == 0:
        return [pure_share(epsilon * w / total) for w in weights]
    kinds = ["gaussian"] * len(weights) if kinds is None else list(kinds)
    if len(kinds) != len(weights) or any(k not in ("gaussian", "zcdp", "basic") for k in kinds):
        raise ValueError(f"kinds must give 'gaussian', 'zcdp' or 'basic' for each weight, got {kinds!r}.")
    if "basic" in kinds:
        if any(k != "basic" for k in kinds):
            raise ValueError("'basic' (approximate-DP) parts cannot share a budget with Gaussian or zCDP parts.")
        return [basic_share(epsilon * w / total, delta * w / total) for w in weights]
    shares = _curve_split(epsilon, delta, weights, kinds)
    if any(s.epsilon <= 0 for s in shares):
        # A part whose curve is (0, delta)-DP already cannot be calibrated back from an
        # (epsilon > 0, delta) pair; refuse from the public budget alone, before any data.
        raise ValueError(
            f"the budget (epsilon={epsilon:g}, delta={delta:g}) is too small to split into {len(weights)} "
            f"private releases: at this delta a part of it is already met by any noise, so it cannot "
            f"be calibrated. Use a larger epsilon (or delta=0). Nothing was spent."
        )
    return shares


def _curve_split(epsilon, delta, weights, kinds):
    """The ``"gaussian"`` / ``"zcdp"`` rules of :func:`split_by_weights` (a share may come out at epsilon 0)."""
    total = sum(weights)
    if "zcdp" in kinds:
        rho = zcdp_rho(epsilon, delta)
        shares = []
        for w, k in zip(weights, kinds):
            rho_i = rho * w / total
            if k == "zcdp":
                shares.append(zcdp_share(rho_i, delta))
            else:
                mu_i = math.sqrt(2.0 * rho_i) * (1.0 - _CALIBRATION_SLACK)
                shares.append(Share(gaussian_epsilon(mu_i, delta), delta, ZCDPEvent(rho_i)))
        return shares
    mu = gaussian_mu(epsilon, delta)
    return [gaussian_share(mu * math.sqrt(w / total), delta) for w in weights]


def split_budget(epsilon, delta, parts, kind):
    """``(epsilon_i, delta_i)`` of each of ``parts`` equal parts (:func:`split_by_weights`).

    ``kind`` is ``"pure"``, ``"gaussian"``, ``"zcdp"`` or ``"basic"`` (see
    :func:`split_by_weights`; :func:`split_kind` gives it for a noise path).
    One part is the whole budget, unchanged (nothing composes).
    """
    parts = int(parts)
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}.")
    if parts == 1:
        return epsilon, delta
    kinds = None if (kind == "pure" or delta == 0) else [kind] * parts
    share = split_by_weights(epsilon, delta, [1.0] * parts, kinds)[0]
    return share.epsilon, share.delta
