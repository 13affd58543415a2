"""Budget: the (epsilon, delta, noise path) of one release or one fit, validated once.

Solvers take a ``budget`` instead of three loose arguments; the calibration
module (:mod:`sklearn_dpsco._mechanisms._calibrate`) turns a sensitivity and
a budget into a mechanism. Splitting goes through the library's ONE split
rule, :func:`sklearn_dpsco.accounting._shares.split_by_weights`
(doc/privacy/composition.rst): epsilon for pure DP, ``mu^2`` for the float
Gaussian, ``rho`` for the secure discrete Gaussian.

:func:`split_scale_share` carves the pure-DP part a fit spends on private
scale estimates ("auto" clip levels and bounds; doc/privacy/quantiles.rst)
off the budget before the rest is split.
"""

import math

from dataclasses import dataclass

from ._mechanisms._paths import DEFAULT_NOISE, check_noise
from ._param_checks import check_delta, check_epsilon
from .accounting._shares import split_budget, split_by_weights, split_kind

__all__ = ["DEFAULT_SCALE_SHARE", "Budget", "as_budget", "largest_fitting_fraction", "split_scale_share"]

#: Suggested fraction of a fit's epsilon for its private scale estimates. A
#: public constant, never tuned on the data (doc/privacy/quantiles.rst, "Budget").
DEFAULT_SCALE_SHARE = 0.1


@dataclass(frozen=True)
class Budget:
    """A validated privacy budget and the noise path its releases use.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float, default=0.0
        In [0, 1); 0 means pure DP.
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        Noise path of the releases (doc/privacy/secure_noise.rst).
    """

    epsilon: float
    delta: float = 0.0
    noise: str = DEFAULT_NOISE

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_noise(self.noise)

    @property
    def pure(self):
        """True for pure DP (``delta == 0``)."""
        return self.delta == 0

    @property
    def split_kind(self):
        """The split rule of this budget's releases: ``"pure"``, ``"gaussian"`` or ``"zcdp"``."""
        return split_kind(self.delta, self.noise)

    def split(self, weights, kinds=None):
        """Budgets proportional to ``weights`` whose composition is within this one.

        ``kinds`` (one per weight) defaults to this budget's :attr:`split_kind`
        for every part; see :func:`~sklearn_dpsco.accounting._shares.split_by_weights`.
        """
        weights = list(weights)
        if kinds is None:
            kind = self.split_kind
            kinds = None if kind == "pure" else [kind] * len(weights)
        shares = split_by_weights(self.epsilon, self.delta, weights, kinds)
        return [Budget(s.epsilon, s.delta, self.noise) for s in shares]

    def split_equal(self, parts, kind=None):
        """The budget of each of ``parts`` equal parts (the whole budget, unchanged, for one part)."""
        epsilon, delta = split_budget(self.epsilon, self.delta, parts, self.split_kind if kind is None else kind)
        return Budget(epsilon, delta, self.noise)

    def with_noise(self, noise):
        """The same (epsilon, delta) on another noise path."""
        return Budget(self.epsilon, self.delta, noise)


def as_budget(budget=None, *, epsilon=None, delta=0.0, noise=DEFAULT_NOISE):
    """``budget`` if given, else ``Budget(epsilon, delta, noise)``."""
    if budget is not None:
        if not isinstance(budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(budget).__name__}.")
        return budget
    return Budget(epsilon, delta, noise)


def split_scale_share(budget, scale_share=DEFAULT_SCALE_SHARE):
    """Split a fit's budget into ``(scale_budget, rest_budget)`` for private scale estimates.

    ``scale_budget = Budget(scale_share * epsilon, 0, noise)`` pays for the
    pure-DP quantile releases (split it further with
    ``scale_budget.split_equal(k)`` for ``k`` estimates);
    ``rest_budget = Budget(epsilon - scale_budget.epsilon, delta, noise)``
    pays for everything else. Basic composition of an ``eps_s``-DP part and
    an ``(eps_r, delta)``-DP part is ``(eps_s + eps_r, delta)``-DP
    (doc/privacy/quantiles.rst, "Budget"), and the accountant's composition
    (doc/privacy/composition.rst, reading 1 of a profile) certifies exactly
    that for the composed events.

    Parameters
    ----------
    budget : Budget
        The fit's whole budget.
    scale_share : float, default=DEFAULT_SCALE_SHARE
        Fraction of ``budget.epsilon`` for the scale estimates, in (0, 1).
        Public: fixed before the data is seen.

    Returns
    -------
    scale_budget, rest_budget : Budget
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}.")
    if isinstance(scale_share, bool) or not isinstance(scale_share, (int, float)) or not 0.0 < scale_share < 1.0:
        raise ValueError(f"scale_share must be a number in (0, 1), got {scale_share!r}.")
    scale_eps = budget.epsilon * float(scale_share)
    rest_eps = budget.epsilon - scale_eps
    while scale_eps + rest_eps > budget.epsilon:  # a rounding ulp must not overspend
        rest_eps = math.nextafter(rest_eps, 0.0)
    return Budget(scale_eps, 0.0, budget.noise), Budget(rest_eps, budget.delta, budget.noise)


def largest_fitting_fraction(plan, fits, steps):
    """``plan(t)`` at the largest fraction ``t`` in ``(0, 1)`` that ``steps`` bisection steps find with
    ``fits(plan(t))``, or None when no step fits (public arithmetic: ``plan`` and ``fits`` read public facts).

    ``plan`` raising ValueError reads as "too small to calibrate at this fraction": look higher. The shared
    search of a fit planned within a meta-estimator's allowance (linear_model/_base.py,
    ``_plan_within_allowance``; preprocessing/_scaler.py, ``_within_allowance``).
    """
    lo, hi, best = 0.0, 1.0, None
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        try:
            trial = plan(mid)
        except ValueError:
            lo = mid
            continue
        if fits(trial):
            lo, best = mid, trial
        else:
            hi = mid
    return best
