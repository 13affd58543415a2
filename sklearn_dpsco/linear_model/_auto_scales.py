"""Private "auto" scales of the linear models: what is estimated, on which budget, and how it is used.

A scale parameter set to ``"auto"`` (``clip`` of DPHingeClassifier,
``row_bound`` / ``label_bound`` of DPLinearRegressor and
DPGrowthAdaptiveRegressor, ``data_norm`` of UserLevelDPLogistic) is released
by a private quantile over the public grid (doc/privacy/quantiles.rst, "Use
in the estimators") on the fit's own budget:

1. plan (public facts only): ``split_scale_share(budget, scale_share)``
   gives ``scale_budget`` (pure, ``scale_share * epsilon``), split over the
   estimates by their public weights (equally, except the label centre's
   double part, ``CENTRE_WEIGHT``), and the solver's ``rest``. The solver's plan is built
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

At ``delta > 0`` the solver's budget is then raised until the composed
event certifies exactly the user's epsilon (:func:`fill_budget`): the pure
estimates compose with a Gaussian or zCDP solver more cheaply than the sum
of their epsilons (doc/privacy/quantiles.rst, "Exact epsilon at delta > 0").

A declared number spends nothing here and runs the estimator exactly as
before. Only public quantities (n, the level ``q``, the grid, the share)
decide what runs; the private values enter only the quantile releases.
"""

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Callable

import numpy as np

from .._budget import Budget, split_scale_share
from .._mechanisms._calibrate import quantile_mechanism_for
from .._mechanisms._quantile import DEFAULT_SELECTION
from .._mechanisms._scale_grid import ScaleGrid
from ..accounting._allowance import usage_fits
from .._solvers import PrivateFit, is_dask_collection, map_chunks
from .._solvers._core._data import DeferredRowScale
from ..accounting import ComposedEvent, PureDPEvent, epsilon_delta
from ..accounting._composition import PrivacyProfile, profile_epsilon, profile_of

__all__ = [
    "AUTO",
    "CONSTANT_SOLVER",
    "CLIP_LEVEL",
    "ConstantPlan",
    "CLIP_MARGIN",
    "CENTRE_WEIGHT",
    "LABEL_CENTRE",
    "DATA_NORM_LEVEL",
    "DATA_NORM_MARGIN",
    "LABEL_LEVEL",
    "LABEL_MARGIN",
    "LABEL_SPREAD",
    "LABEL_UPPER",
    "GROWTH_ROW_MARGIN",
    "ROW_LEVEL",
    "ROW_MARGIN",
    "ScalePlan",
    "ScaleTarget",
    "SCALE_RANKS",
    "SHARE_CAP",
    "SHARE_FLOOR",
    "check_scale_share",
    "default_scale_share",
    "fit_event",
    "fill_budget",
    "is_auto",
    "lowered_to_allowance",
    "scale_plan",
    "scales_supported",
    "trivial_scale_plan",
    "weighted_parts",
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
#: DPGrowthAdaptiveRegressor's row unit: the median itself, as the hinge's clip. Its rows above the unit keep their
#: direction and are down-weighted by the clip-Lipschitz extension of the loss (nothing is clipped away), while the
#: noise grows with the unit; AdaSSP (DPLinearRegressor) clips the rows it reads, and there the margin 2 stays.
#: Measured (benchmarks/study_row_margin.py, paired seeds, the same releases; results/row_margin.md): margin 1
#: against 2 on the 13 real regression sets x epsilon 0.5 / 1 / 2, growth: mean +0.032 R^2, 16 cells better and 1
#: worse beyond two standard errors (Computers scaled epsilon 0.5 +0.22, PSID +0.14, Wages +0.08; worst -0.024
#: (0.018), Workinghours, R^2 below 0 either way); synthetic Gaussian / Student-t / mixed-unit rows, d = 3 .. 100:
#: +0.030, 40 better, 2 worse. Below 1 (0.71, 0.5) the real sets split (PSID and Workinghours at epsilon 2 lose
#: 0.016-0.07); for DPLinearRegressor margin 1 lost (mean -0.013, 12 cells worse, Wages -0.099).
GROWTH_ROW_MARGIN = 1.0
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
#: Where the estimates' rows keep their positions (row level), each release reads every ``k``-th row
#: (``k`` a public power of two, :func:`scale_sample_stride`) while it keeps ``n epsilon_i /
#: k >= SCALE_SAMPLE_RANKS``: six times :data:`SCALE_RANKS`, the column quartiles' rank budget
#: (``COLUMN_SAMPLE_RANKS``). A median on the unsigned grid (steps of 41 %) then lands on the same
#: point as from every row unless the rows' median sits near a cell boundary (speed only: at
#: 2e5 x 20, epsilon 1, k = 8 and the three releases take 2.6 ms instead of 10-11 ms).
SCALE_SAMPLE_RANKS = 300.0


def scale_sample_stride(n, epsilon_part):
    """``k``: each estimate reads rows ``0, k, 2k, ...`` (public: n and one estimate's epsilon).

    The largest power of two ``k <= DEFAULT_BLOCK_ROWS`` with ``ceil(n / k) epsilon_part >=
    SCALE_SAMPLE_RANKS``, else 1. A power of two dividing the cluster's block size, so every row-chunk of
    a Dask fit starts on a sampled row and ``chunk[::k]`` selects the same rows as ``X[::k]``.
    """
    from .._solvers._core._cluster import DEFAULT_BLOCK_ROWS

    k = 1
    while 2 * k <= DEFAULT_BLOCK_ROWS and -(-int(n) // (2 * k)) * epsilon_part >= SCALE_SAMPLE_RANKS:
        k *= 2
    return k


def every_kth_row(data, k):
    """``(X, targets, sample_weight)`` of rows ``0, k, 2k, ...`` (in memory; ``k = 1``: ``data`` itself)."""
    if k == 1:
        return data
    X, targets, sw = data
    if isinstance(X, DeferredRowScale):
        raw = X.X
        if raw.dtype == np.float64 and raw.ndim == 2 and raw.flags.c_contiguous:
            # np.ascontiguousarray(raw[::k])'s bytes, the rows ahead requested (cold rows: 1.9 -> 1.4 ms at
            # 2e5 x 20, k = 4; speed only)
            from .._fast._rows import every_kth_row_copy

            rows = every_kth_row_copy(raw, k)
        else:
            rows = np.ascontiguousarray(raw[::k])
        X = DeferredRowScale(rows, X.factor, X.centre, X.inv_scale, X.clip)
    else:
        X = X[::k]
    return X, [t[::k] for t in targets], None if sw is None else sw[::k]


def default_scale_share(n, epsilon, k):
    """``min(SHARE_CAP, max(SHARE_FLOOR, k SCALE_RANKS / (n epsilon)))`` (public facts only); ``k`` is the
    estimates' total :attr:`ScaleTarget.weight` (their number when every weight is 1)."""
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
    values = np.asarray(values, dtype=float)
    if np.isfinite(values).all():
        return values  # the common case: one read instead of nan_to_num's copy (read-only downstream)
    big = np.finfo(float).max
    return np.nan_to_num(values, nan=0.0, posinf=big, neginf=-big)


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
    positional : bool, default=False
        The values read each row's position among the rows read (:func:`label_deviations`): called as
        ``values(data, released, first=i)``, ``i`` the position of ``data``'s first row among them (0 in
        memory; a Dask chunk's own offset on a cluster, :func:`cluster_grid_counts`).
    weight : float, default=1.0
        Public: the estimate's part of the scale budget, in units of one
        estimate's part (:attr:`ScalePlan.parts`; :data:`CENTRE_WEIGHT`).
    fallback : ScaleTarget or None, default=None
        The target estimated instead when the weighted share is capped (:func:`scale_plan`; public:
        n, epsilon and the weights). :data:`LABEL_UPPER` falls back to :data:`LABEL_SPREAD`.
    """

    name: str
    q: float
    margin: float
    values: Callable
    signed: bool = False
    positional: bool = False
    weight: float = 1.0
    fallback: object = None


def scales_supported(n, epsilon, k):
    """Public rule: the default share can give each of ``k`` estimates ``n epsilon_i >= SCALE_RANKS``.

    That is ``k SCALE_RANKS <= SHARE_CAP n epsilon``. Below it (``n epsilon < 300`` for the three
    estimates of a regression with an intercept) the share is capped and every estimate runs on
    ``n epsilon_i < 50``: the quantile releases are then close to uniform over the grid (a median
    misses by more than a factor 4 with probability about ``|grid| exp(-n epsilon_i / 4)``: 0.5 for
    the row bound and 0.9 for the 643-point signed centre grid at ``n epsilon_i = 17``), and a row
    bound released far below the row norms inflates ``coef * label_scale / row_scale`` without
    limit (R^2 about -1e11 at n = 2000, epsilon = 1e-3). Public: n, epsilon, the number of estimates.
    """
    return k * SCALE_RANKS <= SHARE_CAP * max(n, 1) * epsilon


def weighted_parts(targets):
    """The estimates' weighted parts for :func:`scales_supported`: each target's ``weight`` (its ``fallback``'s
    when it has one: the part it is sure to get when the share is capped). Public: the targets."""
    return sum((t.fallback if t.fallback is not None else t).weight for t in targets)


#: ``solver_`` of the constant release of :func:`trivial_scale_plan`.
CONSTANT_SOLVER = "intercept_only"


@dataclass(frozen=True)
class ConstantPlan:
    """The plan shape of the zero model (in the fit's units): reads no row, releases nothing, spends 0.

    With the label centre released before it (:func:`trivial_scale_plan`), the fold-back
    ``intercept * label_scale + label_shift`` turns it into the intercept-only model at the centre.
    """

    n_coef: int
    info: dict
    event: object = PureDPEvent(0.0)
    map_reduce: bool = True  # reads no row, so rows on a cluster stay there

    def run(self, problem, rng):
        return PrivateFit(coef=np.zeros(self.n_coef), event=self.event, info=dict(self.info))


def _labels(data, _):
    return data[1][0]


#: The label centre's part of the scale budget, in estimates: twice the others', so ``n epsilon_i >= 2
#: SCALE_RANKS = 100`` wherever the weighted share is not capped (``n epsilon >= 400`` with a row bound and
#: a label bound; below, equal parts as before, see :func:`scale_plan`). Why: its grid (643 signed points, 8 per octave)
#: is eight times the others' (82 points), and a centre released far from the labels is catastrophic (the
#: spread ``|y - c|`` then grows with the miss and the solver's noise with it: Vocab at epsilon 0.1 seed
#: 61 released c ~ 470 for labels 0..10, R^2 -2771; synthetic n 2000, d 3, epsilon 1, seed 6, c -6889
#: for labels near 60, R^2 -4e5). The exact permute-and-flip laws on the study sets' labels put the
#: release beyond 10 standard deviations of the median with probability 2e-5 .. 1.2e-3 at ``n epsilon_i
#: = 50``, 7e-8 .. 2e-6 at 75 and 2e-10 .. 4e-9 at 100, where the row bound and the label spread miss by
#: a factor 8 with probability 2e-5 .. 1e-4 at 50 (benchmarks/study_centre_tail.py,
#: benchmarks/results/centre_tail.md). Public constant.
CENTRE_WEIGHT = 2.0

#: The label centre's grids (signed; a location: one grid step offsets every prediction). 8 points per octave
#: (steps of 9 %) below ``FINE_CENTRE_RANKS`` ranks, 32 (2.2 %) from them. Why: the release is the right end
#: of the cell holding the median, so a 9 % step misses narrow labels by up to 0.09 |median| (Schooling, log
#: wages 6.36 +- 0.41: c = 6.727, 0.9 sd; a synthetic set 45.5 +- 1.1: c = 49.35, 3.6 sd, R^2 -14 for the
#: intercept-only release); four times the points add ``4 log 4 = 5.5`` ranks to the far tail's exponent
#: (beyond 10 sd: 1.7e-8 instead of 4e-9 at 100 ranks), so the fine grid waits for 100 ranks
#: (benchmarks/results/centre_tail.md). Public: n, the centre's epsilon and the constants.
CENTRE_GRID = ScaleGrid(per_octave=8, signed=True)
FINE_CENTRE_GRID = ScaleGrid(per_octave=32, signed=True)
FINE_CENTRE_RANKS = 100.0


def centre_grid(n, epsilon):
    """The label centre's grid for ``n`` values at ``epsilon`` (public facts only)."""
    return FINE_CENTRE_GRID if max(n, 1) * epsilon >= FINE_CENTRE_RANKS * (1.0 - 1e-9) else CENTRE_GRID


def with_centre_grid(plan, n):
    """``plan`` with the signed grid :func:`centre_grid` gives its signed (centre) estimate, if any."""
    signed = [part.epsilon for t, part in zip(plan.targets, plan.parts) if t.signed]
    return plan if not signed else dataclasses.replace(plan, signed_grid=centre_grid(n, min(signed)))


#: The label median ``c`` (signed grid; a location, used as is): the centre of an "auto" label bound, and
#: the intercept of the constant release (:func:`trivial_scale_plan`).
LABEL_CENTRE = ScaleTarget("label_center", 0.5, 1.0, _labels, signed=True, weight=CENTRE_WEIGHT)


def label_deviations(data, released, first=0):
    """``|y - c|`` (``c`` the released label centre, 0 without one), with the labels AT ``c`` split evenly
    between the two ends of the grid by position: those at even positions among the rows read (``first`` the
    position of ``data``'s first row) read 0, those at odd positions +inf.

    Why: with more than half of the labels exactly at the centre (a 0/1 label with 63 % zeros, a count
    with an atom at 0: the centre lands on the atom, 0 and 1 are grid points) the median of ``|y - c|``
    is 0, the bound fell to the grid's floor (2.9e-6), every label was clipped to it and the model
    predicted the centre (R^2 -0.61 for a linear probability model on HI). Split ties leave the median
    of these values at the median of the deviations of the labels NOT at the centre (the atom adds as
    many values below it as above it), and change nothing when no label equals ``c``. Privacy: each
    value is a function of one row and its position (public under replace-one neighbours; the
    estimates read rows ``0, k, 2k, ...``), so replacing a row moves one value: the quantile release's
    argument is unchanged (doc/privacy/quantiles.rst, "Use in the estimators"). ``first``: a Dask
    chunk's rows are numbered from its own offset among the rows read (:func:`cluster_grid_counts`): a
    chunk need not start at an even one (with ``k`` the block size each chunk holds one row read).
    """
    deviations = np.abs(data[1][0] - released.get("label_center", 0.0))
    ties = deviations == 0.0
    if ties.any():
        ties[int(first) % 2::2] = False  # even positions keep 0
        deviations[ties] = np.inf  # the grid's top point (``finite`` reads inf as the largest float)
    return deviations


#: The spread ``B`` of the labels around the centre (the "auto" label bound): ``LABEL_MARGIN`` times a
#: private median of :func:`label_deviations`.
LABEL_SPREAD = ScaleTarget("label_bound", LABEL_LEVEL, LABEL_MARGIN, label_deviations, positional=True)


def centre_deviations(data, released):
    """``|y - c|`` (``c`` the released label centre, 0 without one); the labels at ``c`` read 0 (no split)."""
    return np.abs(data[1][0] - released.get("label_center", 0.0))


#: The upper label spread (the default "auto" label bound where its weighted share is not capped): ``B =
#: UPPER_MARGIN x`` a private ``UPPER_LEVEL``-quantile of ``|y - c|``, on ``UPPER_WEIGHT`` estimates' parts
#: (``n epsilon_B >= 150`` ranks: the cells above the largest deviation then miss by ``0.2 x 150 = 30``
#: ranks, more than the median's ``0.5 x 50 = 25`` at the other estimates' 50). Why (issue 16): on atomic labels the median of the split deviations sits in
#: the atom of the labels NOT at the centre, whose rank gap to the ~80 empty grid cells on each side is
#: only half its mass (0.15 n for a 0/1 label with 70 % zeros), so about half the seeds released a bound
#: far above (R^2 down to -1e9) or far below (the model predicts the centre); and a centre released on the
#: plateau between two balanced atoms (any point of (0, 1] is a median, the log grid favours tiny ones)
#: left the median of ``|y - c|`` at ``c``. At level 0.8 with the ties at 0, every grid cell above the
#: largest deviation misses by ``0.2 n`` ranks whatever the atoms (the catastrophic side), and the target
#: lands on the largest atom's deviation while the labels away from ``c`` hold more than 20 % of the rows
#: (0/1 labels at 20-80 %; more extreme balances release the grid's floor: the model predicts the centre).
#: Margin 1.5: a Gaussian's 0.8-quantile of ``|y - c|`` is 1.28 sd, so B ~ 1.9 sd (the median rule's 2 sd).
#: Measured: benchmarks/results/label_atoms.md. Public constants.
UPPER_LEVEL, UPPER_MARGIN, UPPER_WEIGHT = 0.8, 1.5, 3.0
LABEL_UPPER = ScaleTarget("label_bound", UPPER_LEVEL, UPPER_MARGIN, centre_deviations, weight=UPPER_WEIGHT,
                          fallback=LABEL_SPREAD)


def trivial_scale_plan(fit_intercept, budget, n, usage=None):
    """The scale plan of the constant release when :func:`scales_supported` fails (public facts only).

    With an intercept, only the label centre :data:`LABEL_CENTRE` is estimated, on the whole pure part
    of the budget's epsilon, and only when ``n epsilon >= SCALE_RANKS`` (one estimate at the level the
    default share guarantees every estimate); otherwise ``None`` (the zero model, nothing spent).
    ``usage``: a meta-estimator's allowance (see :func:`fill_budget`); the centre's epsilon is
    lowered until the allowance holds it.
    """
    if not fit_intercept or n * budget.epsilon < SCALE_RANKS:
        return None
    plan = lowered_to_allowance(lambda eps: ScalePlan((LABEL_CENTRE,), Budget(eps, 0.0, budget.noise), 1.0),
                                budget.epsilon, usage)
    return with_centre_grid(plan, n)


def lowered_to_allowance(build, epsilon, usage, event=lambda planned: planned.event):
    """``build(epsilon)``; under a meta-estimator's allowance ``usage`` (see :func:`fill_budget`) rebuilt at an
    epsilon lowered by ``min(0.999, 1 / sqrt(u))`` until the allowance holds ``event(planned)`` (at most 60
    times; public facts only). The constant plans' pure releases (:func:`trivial_scale_plan`,
    ``_constant_mean.mean_constant_plan``)."""
    planned = build(epsilon)
    if usage is None:
        return planned
    for _ in range(60):
        u = usage(event(planned))
        if not math.isfinite(u) or usage_fits(u):
            break
        epsilon *= min(0.999, 1.0 / math.sqrt(u))
        planned = build(epsilon)
    return planned


@dataclass(frozen=True)
class ScalePlan:
    """The scale estimates of one fit: targets, their budget, the event (public before any data).

    Attributes
    ----------
    targets : tuple of ScaleTarget
    budget : Budget
        The pure-DP part of the fit's budget for all targets
        (``split_scale_share``); each target gets its weight's part of it
        (:attr:`parts`: ``budget.split_equal(k)`` when the weights are equal).
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
    #: 256 and R^2 fell to -0.8 (benchmarks/results/defaults.md); 32 from 100 ranks
    #: (:func:`centre_grid`, set by :func:`scale_plan` and :func:`trivial_scale_plan`).
    signed_grid: ScaleGrid = CENTRE_GRID
    method: str = DEFAULT_SELECTION
    #: Every ``stride``-th row is read (:func:`scale_sample_stride`; 1 where rows do not keep their
    #: positions under the privacy unit's neighbours, e.g. user level).
    stride: int = 1

    @property
    def parts(self):
        """The budget of each estimate (basic composition of pure DP): epsilon parts proportional to the
        targets' public weights (equal parts, ``split_equal``, when the weights are equal)."""
        weights = [t.weight for t in self.targets]
        if len(set(weights)) == 1:
            return [self.budget.split_equal(len(self.targets))] * len(self.targets)
        return self.budget.split(weights)

    def mechanisms(self):
        return [quantile_mechanism_for(t.q, part, self.signed_grid if t.signed else self.grid, self.method)
                for t, part in zip(self.targets, self.parts)]

    @cached_property
    def event(self):
        """``PureDPEvent`` of one estimate, or the ``ComposedEvent`` of several (public).

        Built once per plan (a pure function of its frozen fields; the budget fill reads it for every
        candidate solver plan)."""
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
        # rows 0, k, 2k, ...: a public selection; replacing one row changes at most one selected row
        rows = data if is_dask_collection(data[0]) else every_kth_row(data, self.stride)
        for target, mechanism in zip(self.targets, self.mechanisms()):
            if is_dask_collection(data[0]):
                # rows on a cluster: the release reads the values only through counts over the
                # public grid, summed over the row-chunks on the workers (exact integers)
                counts, n = cluster_grid_counts(data, target, dict(out), self.signed_grid if target.signed else self.grid,
                                                self.stride)
                release = mechanism.release_counts(counts, n, rng)
                out[target.name] = release if target.signed else target.margin * max(release, floor)
                events.append(mechanism.event)
                continue
            values = finite(target.values(rows, dict(out)))
            if target.signed:
                out[target.name] = mechanism.release(values, rng)
            else:
                out[target.name] = target.margin * max(mechanism.release(np.abs(values), rng), floor)
            events.append(mechanism.event)
        return out, events[0] if len(events) == 1 else ComposedEvent(tuple(events))

    def info(self, released):
        """Public facts for ``fit_info_``: the estimates and the share they cost."""
        return {"scale_estimates": dict(released), "scale_share": self.share,
                "scale_epsilon": self.budget.epsilon, "scale_row_stride": self.stride,
                "scale_rule": {t.name: f"{t.margin:g} x private {t.q:g}-quantile" for t in self.targets}}


def _chunk_counts(target, released, grid, k, X, *rest, step=1):
    """``(grid.counts(values), number of values)`` of one row-chunk's rows ``0, step, 2 step, ...``
    (runs on its worker). For a positional target ``rest[k + 1]`` holds the chunk's row indices."""
    chunk = (np.ascontiguousarray(X[::step], dtype=np.float64), [t[::step] for t in rest[:k]],
             None if rest[k] is None else rest[k][::step])
    if target.positional:
        # the chunk starts on a row read (step divides the block size): it is the (start / step)-th of them
        first = int(rest[k + 1][0]) // step if len(rest[k + 1]) else 0
        values = finite(target.values(chunk, released, first=first))
    else:
        values = finite(target.values(chunk, released))
    values = values if target.signed else np.abs(values)
    return grid.counts(values), values.size


def cluster_grid_counts(data, target, released, grid, step=1):
    """Counts of ``target``'s values at every grid point, for rows held by a Dask cluster.

    ``data`` is ``(X, targets, sample_weight)`` of dask arrays; each chunk's
    counts are computed on its worker and only the grid-sized count vectors
    reach the client. A positional target (:func:`label_deviations`) also reads the chunk's row indices
    (public), so each value sees the position of its row among all the rows read, as in memory.
    """
    X, targets, w = data
    arrays = (X, *targets, w)
    if target.positional:
        import dask.array as da

        arrays = (*arrays, da.arange(X.shape[0], chunks=(X.chunks[0],)))
    # chunks start at multiples of DEFAULT_BLOCK_ROWS, which the step divides: chunk[::step] are X[::step]'s rows
    parts = map_chunks(partial(_chunk_counts, target, released, grid, len(targets), step=step), arrays)
    counts = np.zeros(len(grid.points), dtype=np.int64)
    for c, _ in parts:
        counts = counts + c
    return counts, sum(m for _, m in parts)


def scale_plan(targets, budget, n, scale_share=None, positional=False):
    """``(ScalePlan or None, solver_budget)``: no targets, no estimate and the whole budget.

    ``scale_share=None`` is :func:`default_scale_share` of the public ``n``
    (rows, or users at user level), the budget's epsilon and the number of
    estimates. ``positional``: the rows keep their positions under the privacy unit's neighbours
    (replace one row in place), so the estimates may read every ``k``-th row (:func:`scale_sample_stride`).
    """
    if not targets:
        return None, budget
    weights = [t.weight for t in targets]
    if any(t.fallback is not None for t in targets):
        # a target with a fallback runs it instead unless its part gives it ``weight x SCALE_RANKS`` ranks (public:
        # n, epsilon, the share and the weights). With the default share: LABEL_UPPER (weight 3) needs n epsilon
        # >= 600 with a row bound and a centre (weights 1, 2, 3 under the cap); below, LABEL_SPREAD's median rule
        share = default_scale_share(n, budget.epsilon, sum(weights)) if scale_share is None else scale_share
        ranks = [max(n, 1) * float(share) * budget.epsilon * w / sum(weights) for w in weights]
        if any(t.fallback is not None and r < t.weight * SCALE_RANKS * (1.0 - 1e-9) for t, r in zip(targets, ranks)):
            targets = [t.fallback if t.fallback is not None else t for t in targets]
            weights = [t.weight for t in targets]
    if scale_share is None:
        scale_share = default_scale_share(n, budget.epsilon, sum(weights))
        if sum(weights) != len(targets) and not scales_supported(n, budget.epsilon, sum(weights)):
            # the weighted share meets the cap (n epsilon < 400 for a row bound, centre and label bound): the
            # equal parts and share as before. Why: splitting a capped share by the weights leaves the other
            # estimates below 50 ranks (a label bound at 37.5 released 5.6e5 for labels 5..7, R^2 -8e8 on
            # Schooling), and a larger share leaves the solver too little for the label mean (Schooling, epsilon
            # 0.25: R^2 -0.06 -> -0.83); benchmarks/results/centre_tail.md
            targets = [dataclasses.replace(t, weight=1.0) for t in targets]
            weights = [1.0] * len(targets)
            scale_share = default_scale_share(n, budget.epsilon, len(targets))
    share = check_scale_share(scale_share)
    scale_budget, rest = split_scale_share(budget, share)
    # the smallest estimate's epsilon (equal weights: scale_budget.epsilon / len(targets), as before)
    smallest = scale_budget.epsilon / len(targets) if len(set(weights)) == 1 else \
        scale_budget.epsilon * min(weights) / sum(weights)
    stride = scale_sample_stride(n, smallest) if positional else 1
    return with_centre_grid(ScalePlan(tuple(targets), scale_budget, share, stride=stride), n), rest


def fit_event(scales, solver_event, n_problems=1, columns=None):
    """The event of a whole fit: ``n_problems`` solver runs, after the estimates when ``scales`` is set,
    after the column quartiles when ``columns`` (a ``ColumnScalingPlan``) is set."""
    event = solver_event if n_problems == 1 else ComposedEvent(tuple([solver_event] * n_problems))
    event = event if scales is None else ComposedEvent((scales.event, event))
    return event if columns is None else ComposedEvent((columns.event, event))


def fit_profile(scales_profile, solver_profile, n_problems=1, columns_profile=None):
    """``profile_of(fit_event(scales, solver_event, n_problems, columns))`` from the parts' profiles (None: no
    such part): the same floats, without walking the estimates' and column quartiles' events again for every
    candidate of a budget fill."""
    # sum() from a zero profile: the additions of the ComposedEvent rule (accounting/_composition.py), in its order
    zero = PrivacyProfile()
    p = solver_profile if n_problems == 1 else sum([solver_profile] * n_problems, zero)
    p = p if scales_profile is None else sum((scales_profile, p), zero)
    return p if columns_profile is None else sum((columns_profile, p), zero)


#: Relative gap to the user's epsilon at which :func:`fill_budget` stops (it never goes above).
FILL_TOLERANCE = 1e-11
#: At most this many solver plans are built (each is public arithmetic, a few milliseconds).
FILL_MAX_PLANS = 60


def fill_budget(build, scales, rest, budget, n_problems=1, composed=False, columns=None, usage=None,
                build_event=None):
    """The solver's plan at the largest budget whose composition with the estimates is within ``budget``.

    Public facts only: ``build(solver_budget)`` plans the solver (no data),
    ``scales`` is the :class:`ScalePlan` (or None), ``rest`` the solver's
    budget from :func:`scale_plan` and ``budget`` the fit's own.

    For pure DP (or no estimate) ``build(rest)`` is returned: basic
    composition of pure parts is exact, ``epsilon_s + epsilon_r = epsilon``.
    At ``delta > 0`` the accountant certifies the composed event by the
    better of two readings (doc/privacy/composition.rst): the pure estimates
    added to the solver's converted curve, or folded into its zCDP parameter
    as ``epsilon_i^2 / 2``. The folded reading of ``rest`` is below the
    user's epsilon, so the solver's epsilon is raised — regula falsi on the
    certified epsilon ``F(e)`` of the whole fit's event, bracketed by ``rest``
    (``F <= epsilon``) and ``budget.epsilon`` — keeping only plans with
    ``F(e) <= epsilon``, until ``F`` is within a relative
    :data:`FILL_TOLERANCE` of it. When the basic reading of ``rest`` lands a
    rounding error above epsilon (a Gaussian solver: ``epsilon_s +
    gaussian_epsilon(mu)`` in floats), the solver's epsilon is stepped down
    (relative 1e-12, 4e-12, ...) until the plan fits, then refined the same
    way. The fit never spends more than its budget. ``composed=True``: the
    solver's own event already composes a pure part with an approximate one
    (DPHingeClassifier's intercept refit), so it is filled the same way
    without estimates. ``columns``: the pure column quartiles
    (``ColumnScalingPlan``) spent before the estimates, composed the same way.
    ``usage``: the fit runs under a meta-estimator's allowance
    (:meth:`~sklearn_dpsco.accounting.FitAllowance.usage`, ``<= 1`` when the
    allowance accepts an event): the fill also stays within it. Why: the
    fit's epsilon is the allowance's reading (a zCDP share ``rho_i`` is
    given as ``zcdp_epsilon(rho_i, delta)``), and certifying that epsilon by
    adding the pure parts to the solver's curve lets the zCDP reading the
    allowance composes exceed ``rho_i`` (a DPHingeClassifier inside a
    DPPipeline or a search at ``delta > 0`` was refused).
    ``build_event``: ``build_event(solver_budget)`` is ``build(solver_budget).event`` without the plan
    (the solver's ``SolverSpec.build_event``): the candidates are then judged by their events and only the
    budget kept is built (the same budgets tried, the same plan returned; speed only).
    """
    plan = build(rest)
    if budget.delta == 0:
        return plan
    if usage is not None and not math.isfinite(usage(fit_event(scales, plan.event, n_problems, columns))):
        usage = None  # a kind of loss the allowance cannot hold at all: its check refuses, with its own message
    if scales is None and columns is None and not composed and usage is None:
        return plan
    target = budget.epsilon

    # the pure parts' profiles once (fit_profile: the same floats as the whole event's)
    fixed = (None if scales is None else profile_of(scales.event),
             None if columns is None else profile_of(columns.event))

    def certified(candidate):
        if usage is None:  # epsilon_delta(fit_event(...), delta)[0], from the parts' profiles
            return profile_epsilon(fit_profile(fixed[0], profile_of(candidate[2]), n_problems, fixed[1]),
                                   budget.delta)
        event = fit_event(scales, candidate[2], n_problems, columns)
        return max(epsilon_delta(event, delta=budget.delta)[0], target * usage(event))

    def trial(solver_budget):
        """``(budget, plan or None, solver event)``: the plan is built later, only if it is kept."""
        if build_event is None:
            p = build(solver_budget)
            return solver_budget, p, p.event
        return solver_budget, None, build_event(solver_budget)

    def built(candidate):
        return candidate[1] if candidate[1] is not None else build(candidate[0])

    f_rest = certified((rest, plan, plan.event))
    if f_rest > target:
        # float rounding of the two readings can land an ulp or so above: step the solver's epsilon down
        hi, f_hi, step = rest.epsilon, f_rest, 1e-12
        while True:
            lo = rest.epsilon * (1.0 - step)
            best = trial(Budget(lo, rest.delta, rest.noise))
            f_lo = certified(best)
            if f_lo <= target:
                break
            if step >= 0.5:
                return plan  # no feasible budget nearby: the template's budget check refuses, before any data
            hi, f_hi, step = lo, f_lo, min(4.0 * step, 0.5)
    else:
        lo, f_lo, best = rest.epsilon, f_rest, (rest, plan, plan.event)
        if target - f_lo <= FILL_TOLERANCE * target:
            return plan  # basic composition (Gaussian or approximate-DP solver parts) is already exact
        # a composed solver event may need a solver budget above the fit's epsilon: bracket at twice it
        hi = budget.epsilon * (2.0 if composed else 1.0)
        top = trial(Budget(hi, rest.delta, rest.noise))
        f_hi = certified(top)
        if f_hi <= target:
            return built(top)
    g_lo, g_hi, side = f_lo - target, f_hi - target, 0  # g: the interpolation's (Illinois-damped) values
    for _ in range(FILL_MAX_PLANS):
        if target - f_lo <= FILL_TOLERANCE * target or hi - lo <= 4 * np.spacing(hi):
            break
        e = lo + (hi - lo) * (-g_lo) / (g_hi - g_lo)
        if not lo < e < hi:
            e = 0.5 * (lo + hi)
        candidate = trial(Budget(e, rest.delta, rest.noise))
        f = certified(candidate)
        if f <= target:
            lo, f_lo, g_lo, best = e, f, f - target, candidate
            g_hi = 0.5 * g_hi if side == -1 else g_hi  # Illinois: a stale end's value is halved
            side = -1
        else:
            hi, g_hi = e, f - target
            g_lo = 0.5 * g_lo if side == 1 else g_lo
            side = 1
    return built(best)
