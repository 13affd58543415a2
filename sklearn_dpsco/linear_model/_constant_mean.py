"""DPLinearRegressor's intercept-only release at the label mean (doc/privacy/quantiles.rst, "The constant at the
label mean").

Below the budget its "auto" estimates need (``n epsilon < 400`` with a row bound, a centre and a label bound) the
fit releases the intercept-only model (:meth:`~._base.DPRegressorMixin._constant_plan`). That model was the label
centre: a private median on a grid of 8 points per octave. Squared loss and R^2 are minimised by the label MEAN,
and a median on a 9 % grid misses it by a large part of a standard deviation on narrow labels (log wages) and on
skewed ones (counts, hours with an atom at 0). Where the spread gets its ranks (:func:`mean_constant_applies`,
``n epsilon >= 250``) the plan is:

1. the label centre ``c`` and spread ``B`` (:data:`~._auto_scales.LABEL_CENTRE`,
   :data:`~._auto_scales.LABEL_SPREAD`: the library's private quantiles, weights 2 : 1) on ``1 -
   MEAN_CONSTANT_SHARE`` of epsilon; the fit's labels are then ``(y - c) / B`` (a public per-row map of the
   releases);
2. the Laplace release (discrete on the secure path) of the integer sum ``sum_i floor(QUANT w_i clip((y_i - c) /
   B, -1, 1))`` (``w_i`` clipped to [0, 1]; AdaSSP's label mean, :func:`~.._solvers._adassp_selection.
   label_sum_terms`): replacing one row moves it by at most ``2 QUANT``, so the release on ``epsilon_m``
   (``MEAN_CONSTANT_SHARE`` of epsilon) is ``epsilon_m``-DP;
3. ``m = clip(noisy / (QUANT n), -1, 1)`` (``n`` public) and the intercept ``c + B m`` (post-processing).

The three releases compose to the fit's epsilon (basic composition of pure parts; ``delta`` is not spent). Only
public facts (n, epsilon, the estimator's settings) decide which constant runs.
"""

import operator
from dataclasses import dataclass, field

import numpy as np

from .._budget import Budget
from .._mechanisms._calibrate import laplace_mechanism_for
from .._solvers import PrivateFit
from .._solvers._adassp_selection import QUANT, label_sum_terms
from .._solvers._core._cluster import ClusterRows
from ..accounting import ComposedEvent
from ._auto_scales import LABEL_CENTRE, LABEL_SPREAD, SCALE_RANKS, lowered_to_allowance, scale_plan

__all__ = ["MEAN_CONSTANT_SHARE", "LabelMeanPlan", "mean_constant_applies", "mean_constant_plan"]

#: The label mean's share of the constant release's epsilon (the centre and the spread share the rest 2 : 1).
MEAN_CONSTANT_SHARE = 0.4


def mean_constant_applies(n, epsilon):
    """Public rule: the constant release is the label mean where the spread's part of the estimates gets
    ``n epsilon_B >= SCALE_RANKS`` (``1/3`` of ``1 - MEAN_CONSTANT_SHARE``: ``n epsilon >= 250``).

    Why: the mean's noise is a multiple of the released spread ``B``, so a spread released far above the labels
    makes it catastrophic (a quantile at ``n epsilon_i`` ranks misses by a factor 4 with probability about ``|grid|
    exp(-n epsilon_i / 4)``). With the mean forced at every ``n epsilon`` (19 sets, 20 seeds,
    benchmarks/results/constant_mean.md), seeds at R^2 -1e6 .. -1e12 appeared on 14-18 of the sets at 60 and 100
    and on one set at 150-200 (20-35 ranks for the spread); from 50 ranks on none did. Below it the centre-only
    constant stays.
    """
    weights = LABEL_CENTRE.weight + LABEL_SPREAD.weight
    spread_ranks = n * epsilon * (1.0 - MEAN_CONSTANT_SHARE) * LABEL_SPREAD.weight / weights
    return spread_ranks >= SCALE_RANKS * (1.0 - 1e-9) and n * QUANT < 2**53


def _block_label_sum(X, y, w):
    """The quantized sum of one block's labels (the fit's units: ``(y - c) / B``) clipped to [-1, 1]."""
    return label_sum_terms(y, w, 1.0)


@dataclass(frozen=True)
class LabelMeanPlan:
    """The intercept-only model at the released label mean, in the fit's label units (module docstring).

    ``run`` releases the mean of the labels clipped to [-1, 1] and returns the zero slopes with that mean as the
    intercept coordinate (the fit's intercept scaling is 1); the fold-back ``intercept * B + c`` gives the data's
    units.
    """

    n_coef: int
    n: int
    mechanism: object
    info: dict = field(default_factory=dict)
    map_reduce: bool = True  # the sum is folded over the blocks on the workers holding them

    @property
    def event(self):
        return self.mechanism.event

    def run(self, problem, rng):
        data = problem.data
        if isinstance(data, ClusterRows):
            total = data.fold_blocks(_block_label_sum, operator.add, 0)
        else:
            total = _block_label_sum(None, data.y, data.sample_weight)
        # an exact integer (|total| <= n QUANT < 2^53, exact in float64); post-processing from here
        noisy = float(self.mechanism.release(np.array([float(total)]), rng)[0])
        coef = np.zeros(self.n_coef)
        coef[-1] = min(1.0, max(-1.0, noisy / (QUANT * max(self.n, 1))))
        return PrivateFit(coef=coef, event=self.event, info=dict(self.info))


def mean_constant_plan(n_coef, n, budget, info, usage=None):
    """``(ScalePlan, LabelMeanPlan)`` on ``budget`` (pure; public facts only), or None where the rule fails.

    ``usage``: a meta-estimator's allowance (``_auto_scales.fill_budget``); both parts' epsilons are lowered
    together until it holds them.
    """
    if not mean_constant_applies(n, budget.epsilon):
        return None

    def build(epsilon):
        scales, rest = scale_plan([LABEL_CENTRE, LABEL_SPREAD], Budget(epsilon, 0.0, budget.noise), n,
                                  1.0 - MEAN_CONSTANT_SHARE)
        # why: one row moves each quantized term by at most 2 QUANT (an integer in [-QUANT, QUANT]): the
        # sum's sensitivity (doc/privacy/quantiles.rst, "The constant at the label mean"; doc/privacy/adassp.rst)
        mechanism = laplace_mechanism_for(2.0 * QUANT, rest, 1)
        return scales, LabelMeanPlan(n_coef, int(n), mechanism,
                                     dict(info, label_mean=True, label_mean_epsilon=rest.epsilon))

    return lowered_to_allowance(build, budget.epsilon, usage,
                                event=lambda planned: ComposedEvent((planned[0].event, planned[1].event)))
