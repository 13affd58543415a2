"""Private "auto" scales of the linear models: what is estimated, on which budget, and how it is used.

A scale parameter set to ``"auto"`` (``clip`` of DPHingeClassifier,
``row_bound`` / ``label_bound`` of DPLinearRegressor and
DPGrowthAdaptiveRegressor, ``data_norm`` of UserLevelDPLogistic) is released
by a private quantile over the public grid (doc/privacy/quantiles.rst, "Use
in the estimators") on the fit's own budget:

1. plan (public facts only): ``split_scale_share(budget, scale_share)``
   gives ``scale_budget`` (pure, ``scale_share * epsilon``), split equally
   over the estimates, and the solver's ``rest``. The solver's plan is built
   at UNIT scale (clip, row bound, label bound or data norm 1), so its event
   is known before the data is touched; the fit's event is
   ``ComposedEvent((estimates' event, solver's event))``;
2. after the budget checks: release each estimate ``c`` (a grid point,
   ``epsilon_s / k``-DP), then divide the rows (labels) by it — a public
   per-row map — and run the unit-scale plan: rows of norm above ``c`` are
   clipped or down-weighted by the solver's own path, exactly as for a
   declared bound of 1;
3. map the coefficients back (``coef * label_scale / row_scale``;
   post-processing) and report the estimates as fitted attributes.

A declared number spends nothing here and runs the estimator exactly as
before. Only public quantities (n, the level ``q``, the grid, the share)
decide what runs; the private values enter only the quantile releases.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._budget import Budget, split_scale_share
from .._mechanisms._calibrate import quantile_mechanism_for
from .._mechanisms._quantile import DEFAULT_SELECTION
from .._mechanisms._scale_grid import ScaleGrid
from ..accounting import ComposedEvent

__all__ = [
    "AUTO",
    "CLIP_LEVEL",
    "CLIP_MARGIN",
    "DATA_NORM_LEVEL",
    "DATA_NORM_MARGIN",
    "LABEL_LEVEL",
    "LABEL_MARGIN",
    "ROW_LEVEL",
    "ROW_MARGIN",
    "ScalePlan",
    "ScaleTarget",
    "SCALE_RANKS",
    "SHARE_CAP",
    "SHARE_FLOOR",
    "check_scale_share",
    "default_scale_share",
    "is_auto",
    "scale_plan",
]

AUTO = "auto"

#: Quantile levels and public margins of the estimates (doc/privacy/quantiles.rst, "Use in the
#: estimators"); the scale used is ``margin * release``. The median: every grid point above the
#: data's maximum misses the target by ``n (1 - q)`` ranks, so upper levels (0.9, 0.99) are
#: dominated by the many grid points above the maximum once ``n (1 - q) epsilon_s`` is small (a
#: few hundred rows at epsilon_s = 0.05 put a q = 0.9 estimate of norms <= 1 near 90); at
#: ``q = 0.5`` the gap to them is ``n epsilon_s / 4``. The margin then covers the spread above the
#: median: rows above the scale are clipped (regression, user level) or down-weighted by the
#: Lipschitz extension (hinge, where the median row norm is the old ``sqrt(d)`` default on
#: standardized rows, so no margin): utility only. The grid's rounding up adds up to sqrt(2).
CLIP_LEVEL, CLIP_MARGIN = 0.5, 1.0
ROW_LEVEL, ROW_MARGIN = 0.5, 2.0
#: User level (UserLevelDPLogistic): the median of the users' largest row norms, times 1/4. Clipping
#: a row keeps its direction (a down-weight, as the hinge's extension) while the noise grows with the
#: bound, so a bound below the typical norm wins: on Gaussian panels (400 users x 10 rows, d = 5 and
#: 20, features of scale 1 and 10, epsilon 1) test accuracy 0.836 / 0.837 / 0.744 / 0.735 at margin
#: 1/4, 0.825 / 0.824 / 0.716 / 0.711 at 1/2 and 0.76 / 0.75 / 0.63 / 0.61 at 1.
DATA_NORM_LEVEL, DATA_NORM_MARGIN = 0.5, 0.25
#: Labels: a private median ``c`` of ``y`` (signed grid) and ``B = 3 x`` the private median of
#: ``|y - c|`` (about 2 standard deviations for Gaussian noise: AdaSSP clips about 5 % of the
#: labels). The regression runs on ``(y - c) / B``: a ridge that shrinks the model towards 0 then
#: shrinks it towards the median, not towards the label 0 (raw labels far from 0, e.g. diabetes'
#: 25..346, gave R^2 about -4 for a shrunk model before centring).
LABEL_LEVEL, LABEL_MARGIN = 0.5, 3.0


#: Default share: each estimate gets ``epsilon_i`` with ``n epsilon_i >= SCALE_RANKS`` when the
#: share stays within [SHARE_FLOOR, SHARE_CAP]. A median release fails by more than a factor 4
#: with probability 0.1 at ``n epsilon_i = 22``, 0.001-0.004 at 36-44 and below 1e-3 from 50 on
#: (permute-and-flip laws on the default grid, diabetes |y| and row norms, breast-cancer and wine
#: row norms; benchmarks/results/auto_scales.md). Public: n, epsilon and the number of estimates.
SCALE_RANKS = 50.0
SHARE_FLOOR = 0.05
SHARE_CAP = 0.5


def default_scale_share(n, epsilon, k):
    """``min(SHARE_CAP, max(SHARE_FLOOR, k SCALE_RANKS / (n epsilon)))`` (public facts only)."""
    return min(SHARE_CAP, max(SHARE_FLOOR, k * SCALE_RANKS / (max(n, 1) * epsilon)))


def is_auto(value):
    """True for the string ``"auto"``."""
    return isinstance(value, str) and value == AUTO


def check_scale_share(scale_share):
    """``scale_share`` as a float in (0, 1), or a clear error (nothing spent)."""
    if isinstance(scale_share, bool) or not isinstance(scale_share, (int, float, np.integer, np.floating)):
        raise TypeError(f"scale_share must be a number in (0, 1), got {type(scale_share).__name__}.")
    if not 0.0 < float(scale_share) < 1.0:
        raise ValueError(f"scale_share must be in (0, 1), got {scale_share!r}. Nothing was spent.")
    return float(scale_share)


def finite(values):
    """``values`` with +-inf (a row norm or ``|y - c|`` past float64's range) read as +-the largest float.

    The grid's ends are far inside it, so the counts (hence the release)
    are unchanged; a data-dependent refusal after the budget check is avoided.
    """
    big = np.finfo(float).max
    return np.nan_to_num(np.asarray(values, dtype=float), nan=0.0, posinf=big, neginf=-big)


@dataclass(frozen=True)
class ScaleTarget:
    """One scale to estimate: its name, quantile level and the private values it reads.

    Attributes
    ----------
    name : str
        ``"clip"``, ``"row_bound"``, ``"label_bound"`` or ``"data_norm"``.
    q : float
        Public quantile level.
    margin : float
        Public factor applied to the release (the scale used is ``margin * release``).
    values : callable
        ``values(data, released) -> 1-D array`` of private values (row
        norms, ``|y - c|``, one reduced value per user), nonnegative unless
        ``signed``; ``released`` holds the estimates released before this one
        (adaptive sequential composition). Called only after the budget checks.
    signed : bool, default=False
        Signed grid (a location such as the label median); the release is then
        used as is (no floor, no margin).
    """

    name: str
    q: float
    margin: float
    values: Callable
    signed: bool = False


@dataclass(frozen=True)
class ScalePlan:
    """The scale estimates of one fit: targets, their budget, the event (public before any data).

    Attributes
    ----------
    targets : tuple of ScaleTarget
    budget : Budget
        The pure-DP part of the fit's budget for all targets
        (``split_scale_share``); each target gets ``budget.split_equal(k)``.
    share : float
        ``scale_share``: the fraction of the fit's epsilon in ``budget``.
    grid : ScaleGrid
        The public candidates (``ScaleGrid()``).
    """

    targets: tuple
    budget: Budget
    share: float
    grid: ScaleGrid = ScaleGrid()
    #: Signed targets are locations (the label centre), not scales: an error of one grid step is
    #: an offset of every prediction. 8 points per octave (steps of 9 %) rather than 2 (41 %):
    #: on diabetes (labels 25-346, mean 152, sd 77) the 2-per-octave centre landed on 181 or
    #: 256 and R^2 fell to -0.8 (benchmarks/results/defaults.md).
    signed_grid: ScaleGrid = ScaleGrid(per_octave=8, signed=True)
    method: str = DEFAULT_SELECTION

    @property
    def part(self):
        """The budget of each estimate (basic composition of pure DP: equal epsilon parts)."""
        return self.budget.split_equal(len(self.targets))

    def mechanisms(self):
        return [quantile_mechanism_for(t.q, self.part, self.signed_grid if t.signed else self.grid, self.method)
                for t in self.targets]

    @property
    def event(self):
        """``PureDPEvent`` of one estimate, or the ``ComposedEvent`` of several (public)."""
        events = tuple(m.event for m in self.mechanisms())
        return events[0] if len(events) == 1 else ComposedEvent(events)

    def release(self, data, rng):
        """``({name: released scale}, event)``; reads ``data`` (call only after the budget checks).

        A release of 0 (the grid's first point: most values are 0) is read as
        the smallest positive grid point, so dividing by it is defined
        (post-processing of a public value).
        """
        floor = float(self.grid.points[self.grid.points > 0][0])
        out, events = {}, []
        for target, mechanism in zip(self.targets, self.mechanisms()):
            values = finite(target.values(data, dict(out)))
            if target.signed:
                out[target.name] = mechanism.release(values, rng)
            else:
                out[target.name] = target.margin * max(mechanism.release(np.abs(values), rng), floor)
            events.append(mechanism.event)
        return out, events[0] if len(events) == 1 else ComposedEvent(tuple(events))

    def info(self, released):
        """Public facts for ``fit_info_``: the estimates and the share they cost."""
        return {"scale_estimates": dict(released), "scale_share": self.share,
                "scale_epsilon": self.budget.epsilon,
                "scale_rule": {t.name: f"{t.margin:g} x private {t.q:g}-quantile" for t in self.targets}}


def scale_plan(targets, budget, n, scale_share=None):
    """``(ScalePlan or None, solver_budget)``: no targets, no estimate and the whole budget.

    ``scale_share=None`` is :func:`default_scale_share` of the public ``n``
    (rows, or users at user level), the budget's epsilon and the number of
    estimates.
    """
    if not targets:
        return None, budget
    if scale_share is None:
        scale_share = default_scale_share(n, budget.epsilon, len(targets))
    share = check_scale_share(scale_share)
    scale_budget, rest = split_scale_share(budget, share)
    return ScalePlan(tuple(targets), scale_budget, share), rest
