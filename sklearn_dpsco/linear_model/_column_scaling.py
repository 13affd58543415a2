"""Private per-column rescaling inside a linear model's fit (doc/privacy/column_scaling.rst).

Raw columns in mixed units (a year or an income next to 0/1 indicators) make
one global row-norm scale (the "auto" clip or row bound, a median row norm)
follow the dominant column: the others shrink to noise. With
``column_scaling`` on, a fit first releases the quartiles ``q1, q3`` of every
column by :class:`~sklearn_dpsco.preprocessing.DPStandardScaler`'s
``bounds="auto"`` mechanism (the same ``2 d`` pure-DP quantile selections on
its signed grid, :func:`private_column_quantiles`; doc/privacy/preprocessing.rst
and doc/privacy/quantiles.rst) on a public share of the fit's epsilon, maps
every row by the released affine map ``x -> (x - centre) / scale`` (a public
per-row map), runs the unchanged fit on the rest of the budget, and folds the
map back into ``coef_`` and ``intercept_`` (post-processing)::

    centre_j = (q1_j + q3_j) / 2        (0 without an intercept: a shift could not be undone)
    scale_j  = max(q3_j - q1_j, 1)
    w_j = w'_j / scale_j,   b = b' - sum_j w_j centre_j

In one stage columns are shrunk, never enlarged (``MIN_COLUMN_SCALE = 1``, the spread of a
0/1 indicator; two stages may enlarge, "Small spreads" below): the map is folded into a linear model on the raw columns, so
nothing clips a column at prediction time, and a released spread far below a
column's values (a quartile between the two atoms of an indicator, anywhere in
``(0, 1)``) would otherwise multiply its coefficient by the inverse. A column
whose two released quartiles are both 0 (a rare indicator, a mostly zero
count) keeps ``centre 0, scale 1``, as the scaler passes it through.

Two stages (:data:`COLUMN_TWO_STAGE_RANKS`, a public rule): a column with a large offset and a small
spread (a survey year 1975-2015) has both quartiles in ONE grid cell ``(1878, 2048]``, so its scale
floors at one grid step (about 185, true spread about 20). When the rows are plentiful they are then
split in two halves by position (even and odd sampled rows), each at the whole quartile share (parallel
composition): stage 1 releases the quartiles of ``x`` (as above) on one half, stage 2 the quartiles of
``x - centre_1`` (``centre_1`` stage 1's centre, a release) on the other, on the same grid, where the
spread now sits near 0 on the grid's fine points (one counting pass over the rows in all)::

    centre_j = centre_1j + (q1'_j + q3'_j) / 2
    scale_j  = max(q3'_j - q1'_j, one grid step of max(|q1'_j|, |q3'_j|), 1)

Small spreads (issues 16 and 18; doc/privacy/column_scaling.rst, "Small spreads"): with two stages a column
whose spread is below 1 (a rate next to incomes) is enlarged, since at scale 1 it stays tiny in the fitted space
and the noise and AdaSSP's ridge erase it (the mixed-units family: R^2 0.82-0.86 instead of 0.946). Why not in
one stage, and why bounded: an atom-valued column's quartile between its atoms is not identified, and its
released spread can be far below the true one. So, from the releases only (``s_1``, ``s_2`` the stages'
spreads, ``m`` the largest ``min(s_2, 1)`` over the columns)::

    scale_j = max(b_j, min(max(s_2j, 1), SMALL_SPREAD_RATIO * b_j / m)),   b_j = max(s_2j, min(s_1j, 1))

and ``max(s_2j, 1)`` as before when a released quartile of either stage is exactly 0 (an atom at 0 or at
``centre_1``) or stage 2's pair collapsed (an atom off the grid).

Median and spread (issue 16; doc/privacy/column_scaling.rst, "Median and spread"): below the quartiles' rule,
where each of the ``2 d`` quartile releases gets fewer than ``COLUMN_RANKS`` ranks, a quartile on the fine signed
grid often lands far from the data and the map is garbage (a centre 1579 for a 0/1 column). Down to half of the
rule (about ``n epsilon >= 200 d``), a fit with an intercept on rows in memory (row level) then releases per column
the median ``m_j`` (fine signed grid, ``MEDIAN_PART`` of the share) and, given it, the median of ``|x_j - m_j|``
(a public per-row map of the released ``m``) on a coarse unsigned grid that the released ``m`` sets (``spread_grid``:
one point per octave from 1/2 to about 4 |m|, at least to 16, and 0: 7 to 25 candidates instead of 42, and a median's
gap to the far points is ``n / 2`` ranks, a quartile's ``n / 4``)::

    centre_j = m_j,   scale_j = max(2 a_j, 1)       (2 a_j: the interquartile range of a symmetric column)

(``scale_j = |m_j|`` where ``2 a_j < 1`` at ``|m_j| >= 16``: a missed spread, "Clipped columns" below).

Clipped columns (issue 16, PSID; doc/privacy/column_scaling.rst, "Clipped columns"): after the releases every mapped
column not passed through is clipped to ``[-k, k]`` (``COLUMN_CLIP`` for the quartile maps, ``COLUMN_MAD_CLIP`` for the
median and spread; public constants), so a missing-value code 98 / 99 in a column of spread 2 stays ``k`` spreads out
instead of 40. The median and spread map scales a column whose released spread is below the floor at a centre far
from it (a missed release, ``MAD_MISS_FAR_CENTRE``) by that centre's magnitude. A public per-row map of the releases
(post-processing: the event is unchanged); prediction clips the raw columns to ``centre -+ k scale``
(``ColumnScaling.raw_bounds``, the estimators' ``column_bounds_``).

Row magnitudes (issue 16; doc/privacy/column_scaling.rst, "Row magnitudes"): below the median and spread, the hinge
classifier first releases one noisy count (``ROW_MAGNITUDE_COUNT_SHARE`` of epsilon, sensitivity 1) of the rows with
some ``|x_j| > 2^12``; above a public threshold a ``d x K`` histogram of every column's magnitude bins follows (the
column share) and each column is divided by its noisy mode when some mode is above ``2^12``; below it, nothing more is
released and the fit gets the rest. Both branches are planned and checked before any row is read (adaptive
composition: the event records what ran, the user's epsilon in both).

Only public facts decide whether it runs and with what share (n, d, epsilon,
the declared settings, the input's format): see :func:`column_scaling_applies`
and :func:`column_scaling_mode`.
"""

import math
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from .._budget import Budget, split_scale_share
from ..accounting import ComposedEvent, ParallelComposedEvent
from .._fast._rows import column_affine
from .._mechanisms._calibrate import laplace_mechanism_for
from .._mechanisms._scale_grid import ScaleGrid
from .._scale_estimation import column_quantiles_event, column_quantiles_from_counts, private_column_quantiles
from .._solvers import is_dask_collection
from .._solvers._core._cluster import DEFAULT_BLOCK_ROWS
from ..preprocessing._scaler import BOUNDS_GRID, BOUNDS_LEVELS, BOUNDS_RANKS, cluster_column_quantiles
from ._auto_scales import SCALE_RANKS, SHARE_FLOOR

__all__ = ["COLUMN_CLIP", "COLUMN_MAD_CLIP", "COLUMN_MAD_RANKS", "COLUMN_RANKS", "COLUMN_SAMPLE_RANKS", "COLUMN_SHARE_CAP", "COLUMN_TWO_STAGE_RANKS",
           "MAD_LOW_EXPONENT", "MAD_MIN_HIGH_EXPONENT", "MAD_MISS_FAR_CENTRE", "MAD_OCTAVES_ABOVE_CENTRE", "MEDIAN_PART",
           "MIN_COLUMN_SCALE",
           "SMALL_SPREAD_RATIO", "ColumnScalingPlan", "column_sample_stride", "column_scaling_applies", "column_stages",
           "column_scaling_mode", "default_column_share", "spread_grid"]

#: Cap of the quartiles' share of the fit's epsilon. The pipeline ``make_dp_pipeline(DPStandardScaler(),
#: model)`` gives its scaler 0.3 of epsilon, of which up to 0.8 buys the same quartiles (0.24); the
#: bare model spends no second statistic (no noisy means or variances: the quartiles are the whole
#: per-column information used), so 0.25 of epsilon buys the same quartile accuracy and leaves the
#: model 0.75 (benchmarks/results/defaults_rawcols.md). A cap of 0.35 (2026-11-27, bench_defaults.py, 3 seeds) lets
#: the quartiles run on HI at epsilon 0.5 (raw 0.736 -> 0.772) but costs the cells already at the cap: BudgetFood
#: eps 0.5 -0.017, Computers eps 2 -0.02..-0.03, Wages eps 2 -0.034 (DPLinearRegressor): not taken.
COLUMN_SHARE_CAP = 0.25
#: Smallest column scale in one stage (see the module docstring): a column is divided by its released spread only
#: when that spread exceeds the 0/1 indicators' one, so the rescaled columns are comparable with them (two stages
#: may go below it: "Small spreads").
MIN_COLUMN_SCALE = 1.0
#: With two stages a column whose spread is below ``MIN_COLUMN_SCALE`` is enlarged until its spread in the fitted
#: space is within this factor of the largest one the floor leaves (module docstring, "Small spreads"). 4: the
#: mixed-units family at 2e5-2e6 rows R^2 0.942-0.946 (unbounded: 0.944-0.946; 8: 0.88-0.94, AdaSSP at 2e6 shrinks a
#: column 8 times smaller); on the real sets' encoding (b) (every column below 1) unbounded equalisation cost HI
#: accuracy 0.786 -> 0.780 at epsilon 2, 4 costs 0.002 (10 seeds; benchmarks/results/colfloor.md).
SMALL_SPREAD_RATIO = 4.0
#: ``column_scaling="auto"`` runs when every quartile release gets ``n epsilon_i >= 50`` at the default
#: share (about ``n epsilon >= 400 d``), the rank budget of the library's median estimates
#: (``SCALE_RANKS``: below 1e-3 failure by a factor 4). Below it a quartile lands beyond the data's
#: range too often: on HI (15.6k rows, d = 21, encoding (b)) at epsilon 0.5 (``n epsilon_i = 46``)
#: accuracy fell from 0.77 to 0.71 on one seed in three; at epsilon 1 (93) it is 0.78 either way,
#: and Computers at epsilon 1 (61) gains R^2 0.14 -> 0.38 (benchmarks/results/defaults_rawcols.md).
COLUMN_RANKS = SCALE_RANKS
#: The quartiles read every ``k``-th row (``k`` a power of two) when the rows hold more than twice the
#: ranks the share rule aims at (``n epsilon_i >= 2 x 300``, only where the share sits at its floor, large
#: ``n``): ``ceil(n / k) epsilon_i >= 300`` still puts a quartile within about 2 % of its level, far
#: inside one step of the grid's 8 points per octave, while the counting pass over every row was the
#: growth regressor's largest single cost at 2e6 rows (benchmarks/results/speed.md).
COLUMN_SAMPLE_RANKS = BOUNDS_RANKS
#: Two stages (module docstring) when each quartile release would get ``n epsilon_i >= 150`` at the
#: default share in one stage (``3 COLUMN_RANKS``; about ``n epsilon >= 1200 d``), so each of the two
#: stages (half of the rows each, at the whole share) keeps ``>= 75``. benchmarks/results/colscale_two_stage.md
#: (2026-11-27, 5 seeds; same total share; measured with both stages on every row at half the share, the
#: same ranks per release as the halves):
#: above it the two stages tie or win in every cell (``_mixed`` at 3e3-1e5: adassp R^2 0.80-0.89 -> 0.93-0.94,
#: hinge 0.82-0.91 -> 0.92; Vocab and BudgetFood raw +0.002..+0.008); below it, where half the ranks no longer
#: place a quartile well, they lose (Computers raw epsilon 1-2, 61-122 ranks: R^2 0.40 -> 0.12, 0.71 -> 0.58;
#: HI epsilon 1, 93 ranks: 0.783 -> 0.751; ``_mixed`` n = 8000 epsilon 0.5, 125 ranks).
COLUMN_TWO_STAGE_RANKS = 3 * COLUMN_RANKS
#: Median and spread (module docstring) when the quartiles' rule fails but each quartile release would still get
#: ``n epsilon_i >= COLUMN_MAD_RANKS`` at the default share (about ``200 d <= n epsilon < 400 d``). 2026-11-27
#: (benchmarks/results/lowcols.md, 10 seeds paired): on raw columns it wins in every cell where it runs (HI epsilon
#: 0.5 +0.027, Participation 2 +0.049, Computers 0.5 R^2 +0.14 / +0.20 (growth), Wages 1 +0.08 / +0.135); on columns
#: already scaled the share costs Wages growth 1 -0.04 and HI 0.5 -0.007; below it (Wages 0.5, 132 d; Participation
#: 1, 102 d) the medians miss too and it loses (-0.03 with a seed at R^2 -0.45; -0.016).
COLUMN_MAD_RANKS = COLUMN_RANKS / 2
#: The medians' part of the share (the spreads get the rest): a location on the fine grid needs more ranks
#: than a factor-2 magnitude on the coarse one.
MEDIAN_PART = 2.0 / 3.0
#: The spreads' candidates (``spread_grid``): unsigned, one point per octave (a factor-2 scale is enough for
#: conditioning), from ``2^MAD_LOW_EXPONENT`` to ``2^J``, ``J = max(ceil(log2 max(|m|, 1)) + MAD_OCTAVES_ABOVE_CENTRE,
#: MAD_MIN_HIGH_EXPONENT)``, and 0: a public function of the column's released centre ``m``. Why (2026-11-29,
#: benchmarks/results/spread_grid.md): with the former fixed grid (``2^-20 .. 2^20``, 42 candidates) the spread's
#: 17-30 ranks at the band's lower edge put much of their mass off the data: below 1/2 (21 candidates that all give
#: the scale 1; where a column has an atom, they rank as well as it) and up to 2^20 (a spread of 10^6 erases the
#: column). HI's hours worked (0-100, 30 % zeros; 60 hinge fits at 210 d): scale 1 (left in the tens among columns
#: of 1) in 20 % of the fits and 256 or more in 7 %; with ``spread_grid`` 7 % and none. Below 1/2 every candidate
#: mapped to the floor scale 1, so 1/2 and 0 stand for them (0 is kept: ``m = a = 0`` passes a column through).
#: Above: a nonnegative column's median deviation is at most its median (the half of the values at or below ``m`` lie
#: within ``m`` of it), so ``4 |m|`` binds only where the released centre sits far below the median or on a signed
#: column centred near 0 with a spread above 16, clipped then at ``COLUMN_MAD_CLIP`` times its capped scale
#: (accuracy, never privacy). Paired against the fixed grid (30 seeds,
#: 17 set x model rows at ``n epsilon / d`` 210-350): mean +0.009, HI hinge +0.022 / +0.017 at 210 / 250 d,
#: Computers +0.05, BudgetFood +0.08 at 350 d; diabetes 300 d -0.040 (0.019), biopsy -0.009 (0.004).
MAD_LOW_EXPONENT = -1
MAD_OCTAVES_ABOVE_CENTRE = 2
MAD_MIN_HIGH_EXPONENT = 4
MEDIAN_LEVELS = (0.5,)
#: Winsorization of the mapped columns (issue 16, PSID; module docstring, "Clipped columns"): a quartile map clips
#: every mapped column that is not passed through to ``[-COLUMN_CLIP, COLUMN_CLIP]`` (``k`` released spreads from the
#: released centre), a public per-row map of the releases, in the fit and at prediction time alike.
#: benchmarks/results/psid_spread.md (2026-11-27, 20 seeds paired, raw columns): PSID (missing-value codes 98 / 99 at
#: 20-45 spreads) linear epsilon 2 R^2 +0.031, growth +0.21; BudgetFood +0.023..+0.024 at every epsilon; Computers
#: epsilon 2 +0.010; elsewhere within +-0.001. 4 gains less everywhere (BudgetFood +0.017, PSID +0.026); 2 loses on
#: Computers epsilon 1 (-0.010) and Vocab (-0.003) (10 seeds).
COLUMN_CLIP = 3.0
#: The same for the median and spread map, whose spread ``2 a`` is the released median of ``|x - m|`` on a grid of one
#: point per octave (a factor 2 either way): 8. PSID growth epsilon 1 R^2 -1.04 -> 0.21 (20 seeds); at 2-4 Computers
#: epsilon 0.5 linear lost 0.04-0.06 (10 seeds: the tails of ``hd`` and ``ram`` carry the price), at 8 +0.002 (0.014).
COLUMN_MAD_CLIP = 8.0
#: A released spread below the floor (``2 a < MIN_COLUMN_SCALE``) at a released centre far from it (``|m| >=
#: MAD_MISS_FAR_CENTRE``) is a miss, not a spread: the median and spread map scales that column by ``|m|`` (the released
#: centre's magnitude) and clips it like every other column (``from_median_mad``). Before (2026-11-29) such a column kept
#: scale 1 and no clip, so in a raw column in the tens or thousands it dominated every row's norm: a missed spread of
#: BudgetFood's age (median 49) or Treatment's 1975 earnings (median 17k, ``a = 0`` on one seed in 20; the clip at ``m
#: +- 8`` had turned it into its sign, R^2 0.435 -> 0.282). At the band's lower edge (``n epsilon`` 210 d - 250 d, 0.1 -
#: 0.3 missed columns a fit) BudgetFood linear / growth +0.01..+0.08, Computers +0.01..+0.07, PSID +0.02..+0.04, HI
#: +0.005..+0.007, never below -0.01 (10 seeds paired; 20 on the fresh sets: Treatment epsilon 2 +0.005, flchain 0.5
#: +0.008, worst seed 0.699 -> 0.740; benchmarks/results/learning_curves.md). A count near 0 (PSID's children, median
#: 2) keeps scale 1 and its clip. None: no miss rule (scale ``max(2 a, 1)`` for every column).
MAD_MISS_FAR_CENTRE = 16.0
#: Row magnitudes (module docstring, "Row magnitudes"): bins ``0 .. K - 1`` of ``|x_rj|``: ``v <= 1``, then
#: ``(16^(k-1), 16^k]`` (four octaves each), the last open above (``16^(K-2)`` is about 1.7e7). Four octaves:
#: Chile epsilon 1 0.916 (two octaves: 0.867) and half the null cells per column (benchmarks/results/row_magnitudes.md).
ROW_MAGNITUDE_BINS = 8
ROW_MAGNITUDE_BIN_OCTAVES = 4
#: The released bin is the top of the run of bins above the noisy mode whose noisy counts are at least this many
#: noise standard deviations (as at user level).
ROW_MAGNITUDE_RUN_SIGMAS = 3.0
#: Below the median and spread's rule the magnitudes are released when each histogram cell gets ``n share epsilon /
#: (2 d) >= ROW_MAGNITUDE_RANKS`` (the counts' signal over the Laplace scale ``2 d / (share epsilon)``; public).
#: 10: below it the gate misfires on null cells (biopsy epsilon 1, 6.6 ranks: 3 of 10 seeds, -0.036 (se 0.022);
#: Schooling 6 ranks: 6 of 10), and Chile epsilon 0.5 (5.3 ranks) fires on 7 of 10 only. None: never.
ROW_MAGNITUDE_RANKS = 10.0
#: The gate (post-processing of the released histogram, nothing spent): the map is applied only when some column's
#: noisy mode is a bin ``>= ROW_MAGNITUDE_GATE_BIN`` (values above ``2^(w (GATE_BIN - 1))`` = 4096) with a noisy count
#: of at least the run's threshold; else every scale is 1 (the columns as they are; the histogram's share is spent all
#: the same). A column in the thousands of units (Chile's population and income, above 2^12 on 99 % / 94 % of rows)
#: buries the others under the "auto" clip; breast_cancer's area and wine's proline (below 2^12), whose large columns
#: are the predictive ones, and the one-unit sets (digits, biopsy) stay as they are. None: no gate.
ROW_MAGNITUDE_GATE_BIN = 4
#: Count first (doc/privacy/column_scaling.rst, "Row magnitudes", "The count first"): before the histogram the fit
#: releases, on this share of epsilon, ONE noisy count: the rows with some ``|x_rj| > 2^(w (GATE_BIN - 1))`` (4096;
#: sensitivity 1 under replace-one-row, discrete Laplace on the secure path). Only above
#: :func:`row_magnitude_count_threshold` is the histogram released (its share) and gated as above; else the fit gets
#: everything but this share. None: no count (the histogram wherever the ranks rule holds).
ROW_MAGNITUDE_COUNT_SHARE = 0.03
#: The count's threshold: ``n / ROW_MAGNITUDE_BINS + ROW_MAGNITUDE_COUNT_SCALES b`` (``b`` its Laplace scale; public).
#: ``n / K``: a column's noisy mode can be a bin above 2^12 (the histogram's gate) only if about ``n / K`` of its rows
#: are there (``K`` bins), each such row counted once; 3 scales: a null count (no row above 2^12) opens with
#: probability ``<= exp(-3) / 2`` (2.5 %) whatever n.
ROW_MAGNITUDE_COUNT_SCALES = 3.0


def spread_grid(centre):
    """The spread's candidate grid of a column whose released centre is ``centre`` (public: a function of a release).

    One point per octave from ``2^MAD_LOW_EXPONENT`` to ``2^J`` and 0, ``J = max(ceil(log2 max(|centre|, 1)) +
    MAD_OCTAVES_ABOVE_CENTRE, MAD_MIN_HIGH_EXPONENT)`` (exact: from the float's exponent). Grids are shared by their
    ``J`` (each builds its count table once).
    """
    fraction, exponent = math.frexp(max(abs(float(centre)), 1.0))  # |centre| = fraction 2^exponent, fraction in [1/2, 1)
    ceil_log2 = exponent - 1 if fraction == 0.5 else exponent
    return _spread_grid(max(ceil_log2 + MAD_OCTAVES_ABOVE_CENTRE, MAD_MIN_HIGH_EXPONENT))


@lru_cache(maxsize=None)
def _spread_grid(high_exponent):
    return ScaleGrid(low_exponent=MAD_LOW_EXPONENT, high_exponent=high_exponent, per_octave=1)


def column_sample_stride(n, d, epsilon, share, parts=1):
    """``k``: the quartiles read rows ``0, k, 2k, ...`` (a public rule of n, d, epsilon and the share).

    The largest power of two ``k <= DEFAULT_BLOCK_ROWS / parts`` with ``ceil(n / k) epsilon_i >=
    COLUMN_SAMPLE_RANKS``, ``epsilon_i = share epsilon / (2 d)`` (each quartile's part), else 1. ``parts``
    (1 or 2) interleaved parts read every ``parts k``-th row: a power of two dividing the cluster's block
    size, so every row-chunk of a Dask fit starts on a sampled row and ``chunk[o::parts k]`` selects the
    same rows as ``X[o::parts k]``.
    """
    per_row = share * epsilon / (len(BOUNDS_LEVELS) * max(int(d), 1))
    k = 1
    while 2 * k * parts <= DEFAULT_BLOCK_ROWS and -(-int(n) // (2 * k)) * per_row >= COLUMN_SAMPLE_RANKS:
        k *= 2
    return k


def default_column_share(n, d, epsilon):
    """``min(0.25, max(0.05, 2 d BOUNDS_RANKS / (n epsilon)))``: the scaler's rank rule, a lower cap."""
    return min(COLUMN_SHARE_CAP, max(SHARE_FLOOR, len(BOUNDS_LEVELS) * d * BOUNDS_RANKS / (max(n, 1) * epsilon)))


def column_stages(n, d, epsilon, share, centre=True):
    """``2`` (centre, then quartiles of ``x - centre_1``) or ``1``: a public rule of n, d, epsilon, the share.

    Two stages only with centring (without an intercept ``centre_1 = 0`` and stage 2 would repeat stage 1;
    the caller also passes ``centre=False`` where rows cannot be split by position) and when each release of
    one stage would get ``n share epsilon / (2 d) >= COLUMN_TWO_STAGE_RANKS``.
    """
    per_release = n * share * epsilon / (len(BOUNDS_LEVELS) * max(int(d), 1))
    return 2 if centre and per_release >= COLUMN_TWO_STAGE_RANKS else 1


def column_scaling_applies(setting, n, d, epsilon, *, declared, dense):
    """Whether a fit rescales its columns privately (public facts only).

    Parameters
    ----------
    setting : {"auto", True, False}
        The estimator's ``column_scaling``.
    n, d : int
        Rows and features (without the intercept column).
    epsilon : float
        The fit's epsilon.
    declared : bool
        True when a scale setting of the estimator is declared (a number
        for ``clip`` / ``row_bound``, a declared ``intercept_scaling``):
        "auto" then leaves the fit exactly as before.
    dense : bool
        True for dense rows in memory or on a cluster (NumPy chunks); sparse
        rows would be densified by the centring, rows in a stream are read
        once.

    Returns
    -------
    bool
        ``"auto"``: dense rows, nothing declared, and ``n epsilon_i >=
        COLUMN_RANKS`` for each of the ``2 d`` quartile releases at the
        default share (about ``n epsilon >= 400 d``). ``True``: dense rows
        (``fit`` refuses other inputs before spending). ``False``: never.
    """
    if setting is False or not dense or d == 0:
        return False
    if setting is True:
        return True
    per_release = n * default_column_share(n, d, epsilon) * epsilon / (len(BOUNDS_LEVELS) * d)
    return not declared and per_release >= COLUMN_RANKS


def column_scaling_mode(setting, n, d, epsilon, *, declared, dense, centre=True, positional=True, cluster=False,
                        magnitudes=True):
    """``"quartiles"``, ``"median_mad"`` or None: which column map a fit releases (public facts only).

    ``"quartiles"`` where :func:`column_scaling_applies`; else ``"median_mad"`` for ``setting="auto"`` with
    nothing declared, dense rows in memory (not on a cluster), an intercept (``centre``), row-level rows
    (``positional``) and ``n share epsilon / (2 d) >= COLUMN_MAD_RANKS`` at the default share; else
    ``"magnitudes"`` under the same conditions, for an estimator that takes them (``magnitudes``: the hinge
    classifier) when ``n share epsilon / (2 d) >= ROW_MAGNITUDE_RANKS``; else None.
    """
    if column_scaling_applies(setting, n, d, epsilon, declared=declared, dense=dense):
        return "quartiles"
    if setting != "auto" or declared or not dense or cluster or not centre or not positional or d == 0:
        return None
    per_release = n * default_column_share(n, d, epsilon) * epsilon / (len(BOUNDS_LEVELS) * d)
    if per_release >= COLUMN_MAD_RANKS:
        return "median_mad"
    # the same per-release ranks are the histogram cells' n share epsilon / (2 d) (l1-sensitivity 2 d)
    on = magnitudes and ROW_MAGNITUDE_RANKS is not None and per_release >= ROW_MAGNITUDE_RANKS
    return "magnitudes" if on else None


@dataclass(frozen=True)
class ColumnScalingPlan:
    """The column quartiles of one fit: their budget and event, fixed before any data is read.

    Attributes
    ----------
    n_features : int
    budget : Budget
        Pure-DP part of the fit's budget (``share * epsilon``), split equally
        over each stage's ``2 n_features`` quartile releases.
    rest : Budget
        What the fit's own plan (scale estimates and solver) gets.
    share : float
    centre : bool
        Centre the columns (only with an intercept).
    stride : int
        The quartiles read every ``stride``-th row (:func:`column_sample_stride`; 1: every row).
    stages : {1, 2}
        :func:`column_stages`. With 2, the stride's rows are split in two disjoint halves by position:
        stage 1 releases the quartiles of the rows ``0, 2 stride, 4 stride, ...``, stage 2 those of the rows
        ``stride, 3 stride, ...`` minus stage 1's released centre, each stage on all of ``budget``
        (parallel composition: one replaced row is in one half only).
    """

    n_features: int
    budget: Budget
    rest: Budget
    share: float
    centre: bool = True
    stride: int = 1
    stages: int = 1
    mode: str = "quartiles"
    #: Count first (mode "magnitudes", ``ROW_MAGNITUDE_COUNT_SHARE``): the count's budget, else None
    count_budget: Budget = None
    #: With a count: True for the plan that releases the histogram (:meth:`opened`), False for the one that does not
    opened: bool = True

    @property
    def count_first(self):
        """True when the plan releases the count first (and its event depends on the count's branch)."""
        return self.count_budget is not None

    def opened_plan(self):
        """The plan of the open branch: the histogram on ``budget``, the fit on what count and histogram leave."""
        rest = Budget(self.rest.epsilon - self.budget.epsilon, self.rest.delta, self.rest.noise)
        return replace(self, rest=rest, opened=True)

    @cached_property
    def _count_mechanism(self):
        """Laplace (discrete on the secure path) on one count, on ``count_budget``."""
        # why: replacing one row changes the number of rows with some |x_j| > 2^12 by at most 1 (the row's own
        # indicator; doc/privacy/column_scaling.rst, "The count first")
        return laplace_mechanism_for(1.0, self.count_budget, 1)

    @property
    def count_event(self):
        return self._count_mechanism.event

    def count_threshold(self, n):
        """The public threshold of the noisy count (:func:`row_magnitude_count_threshold`)."""
        return row_magnitude_count_threshold(n, self._count_mechanism.scale)

    def release_count(self, X, rng):
        """``(noisy count, event)``: the rows of ``X`` with some ``|x_rj| > 2^12``, with Laplace noise."""
        mechanism = self._count_mechanism
        noisy = mechanism.release(np.array([float(row_magnitude_count(X))]), rng)
        return float(np.asarray(noisy).ravel()[0]), mechanism.event

    @classmethod
    def build(cls, budget, n, d, centre, positional=True, mode="quartiles"):
        """Split ``budget`` (the fit's whole budget) at :func:`default_column_share`; the stages and the
        stride (public facts).

        ``positional``: a neighbour keeps every other row at its position (replace-one-row), so the
        quartiles may read every ``k``-th row (:func:`column_sample_stride`) and split the rows in halves by
        position (two stages). False when the rows' positions depend on the data (user level: the users'
        first rows sorted by identifier, where a replaced user with a fresh identifier shifts every user
        between its old and new place, and ``[::k]`` would then select other users): every row is read
        (stride 1), in one stage.
        """
        share = default_column_share(n, d, budget.epsilon)
        scale_budget, rest = split_scale_share(budget, share)
        if mode == "magnitudes" and ROW_MAGNITUDE_COUNT_SHARE is not None:
            # count first: the count's share, then (if it opens) the histogram's share of the whole epsilon; the closed
            # plan's solver gets the rest of the count (the open one, opened(), what the histogram leaves)
            count, after = split_scale_share(budget, ROW_MAGNITUDE_COUNT_SHARE)
            return cls(int(d), Budget(share * budget.epsilon, 0.0, count.noise), after, share, True, 1, 1, mode,
                       Budget(count.epsilon, 0.0, count.noise), False)
        if mode in ("median_mad", "magnitudes"):  # every row, one stage (far below the stride's and two stages' rules)
            return cls(int(d), Budget(scale_budget.epsilon, 0.0, scale_budget.noise), rest, share, True, 1, 1, mode)
        stages = column_stages(n, d, budget.epsilon, share, bool(centre) and positional)
        # two halves of n / k rows at the whole share: each release gets the ranks of n / k rows at half of
        # it, the rule's stage share; the halves' period 2k divides the cluster's blocks
        stride = column_sample_stride(n, d, budget.epsilon, share / stages, parts=stages) if positional else 1
        return cls(int(d), Budget(scale_budget.epsilon, 0.0, scale_budget.noise), rest, share, bool(centre),
                   stride, stages)

    @cached_property
    def event(self):
        """The quartiles' event: one stage's ``ComposedEvent`` of ``2 d`` pure releases, as
        :func:`private_column_quantiles` returns it; with two stages ``ParallelComposedEvent`` of two of
        them (disjoint rows, the second steered by the first's release).

        Built once per plan (a pure function of its frozen fields; the budget fill reads it for every
        candidate solver plan)."""
        if self.mode == "magnitudes":
            if self.count_first:  # the count, then the histogram if the count opened it
                return ComposedEvent((self.count_event, self._magnitude_mechanism.event) if self.opened
                                     else (self.count_event,))
            return self._magnitude_mechanism.event
        if self.mode == "median_mad":
            medians, spreads = self._median_mad_budgets()
            return ComposedEvent((column_quantiles_event(MEDIAN_LEVELS, medians, self.n_features, grid=BOUNDS_GRID),
                                  # a spread's event is its epsilon whatever grid its released centre sets
                                  column_quantiles_event(MEDIAN_LEVELS, spreads, self.n_features,
                                                         grid=spread_grid(0.0))))
        one = column_quantiles_event(BOUNDS_LEVELS, self.budget, self.n_features, grid=BOUNDS_GRID)
        return one if self.stages == 1 else ParallelComposedEvent((one, one))

    def release(self, X, rng, n_jobs=None, count=None):
        """``(ColumnScaling, event)``: the released quartiles and the public map they define.

        Reads the rows ``0, stride, 2 stride, ...`` of ``X`` (dense, finite; in memory or a dask
        array of NumPy chunks): a public selection, so replacing one row changes at most one
        selected row and each release keeps its epsilon (doc/privacy/column_scaling.rst). With two
        stages, stage 1 reads the even ones of them, stage 2 the odd ones shifted by stage 1's released
        centre. Call only after the budget checks. ``n_jobs``: threads for the grid counts (joblib's
        meaning; the counts, hence the releases, are the same for every value).
        """
        if self.mode == "magnitudes":
            if not self.count_first:
                return self._magnitudes(X, rng)
            # count first: ``count`` is the count's (noisy value, event) the template released and read to choose
            # this branch; the event records it, then the histogram if this branch releases it
            count_event = count[1]
            if not self.opened:
                d = self.n_features
                one = np.ones(d)
                return (ColumnScaling(np.array([np.zeros(d), one]), np.zeros(d), one, np.zeros(d, dtype=bool)),
                        ComposedEvent((count_event,)))
            columns, event = self._magnitudes(X, rng)
            return columns, ComposedEvent((count_event, event))
        if self.mode == "median_mad":
            return self._median_mad(X, rng, n_jobs)
        if self.stages == 1:
            first = self._quartiles(X, 0, self.stride, None, rng, n_jobs)
            return ColumnScaling.from_quartiles(first.value, self.centre).with_clip(COLUMN_CLIP), first.event
        period = 2 * self.stride
        first = self._quartiles(X, 0, period, None, rng, n_jobs)
        centre_1 = ColumnScaling.from_quartiles(first.value, True).centre
        # stage 2: the quartiles of x - centre_1 on the other half of the rows; centre_1 is a release (public),
        # a per-row map fixed before stage 2 reads its rows (doc/privacy/column_scaling.rst, "Two stages")
        second = self._quartiles(X, self.stride, period, centre_1, rng, n_jobs)
        return (ColumnScaling.from_two_stages(centre_1, second.value, first.value).with_clip(COLUMN_CLIP),
                ParallelComposedEvent((first.event, second.event)))

    @cached_property
    def _magnitude_mechanism(self):
        """Coordinate Laplace (discrete on the secure path) on the ``d x K`` histogram, on all of ``budget``."""
        d = self.n_features
        # why: replacing one row moves, in each column, one count from one bin to another (integers): the
        # histogram's l1 distance is <= 2 d (doc/privacy/column_scaling.rst, "Row magnitudes")
        return laplace_mechanism_for(2.0 * d, self.budget, d * ROW_MAGNITUDE_BINS)

    def _magnitudes(self, X, rng):
        """Row magnitudes (doc/privacy/column_scaling.rst): the noisy histogram of every column's bins of
        ``|x_rj|``, then (post-processing) each column's scale, no centre."""
        H = row_magnitude_histogram(X)
        mechanism = self._magnitude_mechanism
        noisy = mechanism.release(H.ravel().astype(np.float64), rng)
        # the Laplace's standard deviation sqrt(2) b (public: the calibration)
        scale = row_magnitude_scales(noisy.reshape(H.shape), ROW_MAGNITUDE_RUN_SIGMAS * np.sqrt(2.0) * mechanism.scale,
                                     ROW_MAGNITUDE_GATE_BIN)
        d = self.n_features
        return ColumnScaling(np.array([np.zeros(d), scale]), np.zeros(d), scale, np.zeros(d, dtype=bool)), mechanism.event

    def _median_mad_budgets(self):
        """``(medians, spreads)``: ``MEDIAN_PART`` of the budget and the exact rest (Sterbenz: the difference of
        two floats within a factor 2 is exact, so the two parts sum to ``budget.epsilon``)."""
        eps = self.budget.epsilon
        medians = MEDIAN_PART * eps
        return Budget(medians, 0.0, self.budget.noise), Budget(eps - medians, 0.0, self.budget.noise)

    def _median_mad(self, X, rng, n_jobs=None):
        """Median and spread (doc/privacy/column_scaling.rst, "Median and spread"): ``d`` medians on the signed
        grid, then, given them (released: a public per-row map), ``d`` medians of ``|x - m|``, column ``j`` on
        ``spread_grid(m_j)`` (candidates set by the release); every row, in memory. Adaptive sequential composition:
        the event is the two sets' ``ComposedEvent``."""
        medians, spreads = self._median_mad_budgets()
        rows = np.asarray(X, dtype=np.float64)
        first = column_quantiles_from_counts(BOUNDS_GRID.column_counts(rows, None, n_jobs), rows.shape[0],
                                             MEDIAN_LEVELS, medians, grid=BOUNDS_GRID, random_state=rng)
        m = first.value[0]
        deviations = np.abs(rows - m)  # m is a release: the same public map of each row on D and D'
        # column j's candidates are a function of its released centre m_j (public before the deviations are read); each
        # column is released in turn on its own part of the spreads' budget, as one call over the d columns would
        part = spreads.split_equal(self.n_features)
        grids = [spread_grid(v) for v in m]
        counts = {}
        for grid in dict.fromkeys(grids):  # one counting pass per distinct grid, over the columns that use it
            cols = [j for j, g in enumerate(grids) if g is grid]
            counts.update(zip(cols, grid.column_counts(deviations[:, cols], None, n_jobs)))
        seconds = [column_quantiles_from_counts(counts[j][None, :], rows.shape[0], MEDIAN_LEVELS, part, grid=grid,
                                                random_state=rng) for j, grid in enumerate(grids)]
        a = np.array([r.value[0][0] for r in seconds])
        second = ComposedEvent(tuple(e for r in seconds for e in r.event.events))
        return ColumnScaling.from_median_mad(m, a).with_clip(COLUMN_MAD_CLIP), ComposedEvent((first.event, second))

    def _quartiles(self, X, offset, step, shift, rng, n_jobs=None):
        """One stage's ``2 d`` releases on ``budget``: the quartiles of ``X[offset::step] - shift``."""
        if is_dask_collection(X):
            # rows on a cluster: each release reads its column only through the grid counts, summed
            # over the row-chunks on the workers (exact integers): the in-memory release, draw for draw
            # (chunks start at multiples of DEFAULT_BLOCK_ROWS, which the step divides)
            return cluster_column_quantiles(X, self.budget, rng, offset=offset, step=step, shift=shift)
        rows = X[offset::step]
        if shift is None and not (isinstance(rows, np.ndarray) and rows.dtype == np.float64):
            return private_column_quantiles(rows, BOUNDS_LEVELS, self.budget, grid=BOUNDS_GRID, random_state=rng,
                                           n_jobs=n_jobs)
        # the counts (of rows - centre_1 with a shift) in one pass, without a shifted copy (the same floats as
        # the subtraction; from the counts, as the cluster path, the same release as from the rows). Float64
        # rows are finite here (the estimators' validation, ensure_all_finite): private_column_quantiles'
        # check would return them as they are, after a strided sum of every value (2 ms at 2e5 x 20)
        rows = np.asarray(rows, dtype=np.float64)
        return column_quantiles_from_counts(BOUNDS_GRID.column_counts(rows, shift, n_jobs), rows.shape[0], BOUNDS_LEVELS,
                                            self.budget, grid=BOUNDS_GRID, random_state=rng)

    def info(self, columns):
        """Public facts for ``fit_info_``."""
        spent = self.budget.epsilon
        if self.count_first:  # what ran: the count, and the histogram only in the open branch
            spent = self.count_budget.epsilon + (self.budget.epsilon if self.opened else 0.0)
        return {"column_scaling": {"share": self.share, "epsilon": spent,
                                   "n_passthrough": int(columns.passthrough.sum()), "row_stride": self.stride,
                                   "stages": self.stages, "mode": self.mode,
                                   **({"applied": bool(np.any(columns.scale != 1.0))} if self.mode == "magnitudes"
                                      else {}),
                                   **({"count_epsilon": self.count_budget.epsilon, "opened": bool(self.opened)}
                                      if self.count_first else {})}}


def row_magnitude_count(X):
    """The rows of ``X`` with some ``|x_rj| > 2^(w (ROW_MAGNITUDE_GATE_BIN - 1))`` (4096): the gate's bins and above.
    Each row adds 0 or 1."""
    A = np.abs(np.asarray(X, dtype=np.float64))
    return int(np.count_nonzero(np.any(A > np.ldexp(1.0, ROW_MAGNITUDE_BIN_OCTAVES * (ROW_MAGNITUDE_GATE_BIN - 1)),
                                       axis=1)))


def row_magnitude_count_threshold(n, scale):
    """``n / ROW_MAGNITUDE_BINS + ROW_MAGNITUDE_COUNT_SCALES scale``: the noisy count opens the histogram above it
    (public: n and the count's Laplace scale)."""
    return n / ROW_MAGNITUDE_BINS + ROW_MAGNITUDE_COUNT_SCALES * scale


def row_magnitude_histogram(X, bins=None):
    """``(d, bins)`` integer counts: for every column, the rows per bin of ``|x_rj|`` (bin 0: ``<= 1``; bin ``k``:
    ``(2^(w (k-1)), 2^(w k)]``, ``w = ROW_MAGNITUDE_BIN_OCTAVES``; the last open above). Each row adds exactly one
    count per column."""
    bins = ROW_MAGNITUDE_BINS if bins is None else bins
    A = np.abs(np.asarray(X, dtype=np.float64))
    n, d = A.shape
    with np.errstate(divide="ignore"):
        # log2 is exact at powers of two and the division by 2 exact: the bin edges are the powers of 4 exactly
        k = np.ceil(np.log2(np.maximum(A, 1.0)) / ROW_MAGNITUDE_BIN_OCTAVES)
    k = np.clip(k, 0, int(bins) - 1).astype(np.intp)
    H = np.zeros((d, int(bins)), dtype=np.int64)
    for j in range(d):
        H[j] = np.bincount(k[:, j], minlength=int(bins))
    return H


def row_magnitude_scales(noisy, tau, gate=None):
    """Each column's scale from the noisy histogram (post-processing): the noisy mode, raised through the run of
    bins above it with noisy counts ``>= tau``; ``2^(w k - w / 2)`` for that bin ``k >= 2`` (``w`` octaves per bin:
    the bin's values land within ``2^(w / 2)`` of 1), else 1 (bins 0-1: left as they are).

    ``gate`` (``ROW_MAGNITUDE_GATE_BIN``; None: none): unless some column's noisy mode is a bin ``>= gate`` with a
    noisy count ``>= tau``, every scale is 1 (the map is not applied). A function of the released counts only."""
    noisy = np.asarray(noisy, dtype=float)
    top = np.argmax(noisy, axis=1)
    if gate is not None:
        # the gate (post-processing): some column's noisy mode at a bin >= gate with a noisy count >= tau
        if not np.any((top >= gate) & (noisy[np.arange(noisy.shape[0]), top] >= tau)):
            return np.ones(noisy.shape[0])
    for j in range(noisy.shape[0]):
        while top[j] + 1 < noisy.shape[1] and noisy[j, top[j] + 1] >= tau:
            top[j] += 1
    w = ROW_MAGNITUDE_BIN_OCTAVES
    return np.where(top > 1, np.ldexp(1.0, top * w - w // 2), 1.0)


def _spread(lo, hi):
    """``max(hi - lo, one grid step of max(|lo|, |hi|))``: a released pair's spread, with the scaler's floor of one
    grid step of the larger end (preprocessing/_scaler.py, _released_bounds): a collapsed pair far from 0 still
    gives a range."""
    step = 2.0 ** (1.0 / BOUNDS_GRID.per_octave) - 1.0
    return np.maximum(hi - lo, step * np.maximum(np.abs(lo), np.abs(hi)))


@dataclass(frozen=True)
class ColumnScaling:
    """The released per-column affine map (a function of the released quartiles only)."""

    quartiles: np.ndarray
    centre: np.ndarray
    scale: np.ndarray
    passthrough: np.ndarray
    #: ``k`` (a float, or one per column): the mapped columns not passed through are clipped to ``[-k, k]`` (None: no
    #: clip; "Clipped columns")
    clip: object = None

    def with_clip(self, k):
        """The same map, its mapped columns clipped at ``k`` released spreads (a public constant, or one per column
        from the releases, ``inf``: that column unclipped; None: none)."""
        return replace(self, clip=None if k is None else np.asarray(k, dtype=np.float64))

    def clip_bounds(self):
        """``k`` for every column the clip reads (``inf`` for the columns passed through), or None: the mapped
        units' bound, ``-b <= z <= b``."""
        if self.clip is None:
            return None
        return np.where(self.passthrough, np.inf, self.clip).astype(np.float64)

    def raw_bounds(self):
        """``(lower, upper)`` in the data's units, ``centre -+ k scale`` (``-+inf`` for the columns passed through),
        or None: what prediction clips the raw rows to (the same per-row map up to the roundings)."""
        bound = self.clip_bounds()
        if bound is None:
            return None
        return self.centre - bound * self.scale, self.centre + bound * self.scale

    @classmethod
    def from_quartiles(cls, quartiles, centre=True):
        q1 = np.minimum(quartiles[0], quartiles[1])
        q3 = np.maximum(quartiles[0], quartiles[1])
        # why: one stage shrinks, never enlarges (MIN_COLUMN_SCALE; enlarging needs both stages, from_two_stages)
        spread = np.maximum(_spread(q1, q3), MIN_COLUMN_SCALE)
        passthrough = (q1 == 0) & (q3 == 0)
        mid = (q1 + q3) / 2.0 if centre else np.zeros_like(q1)
        return cls(np.array([q1, q3]), np.where(passthrough, 0.0, mid), np.where(passthrough, 1.0, spread),
                   passthrough)

    @classmethod
    def from_median_mad(cls, median, spread):
        """The map of the median and spread releases (post-processing): ``centre = m``, ``scale = max(2 a, 1)``
        (one stage's floor ``MIN_COLUMN_SCALE``: never enlarged), except a missed spread (``2 a`` below the floor at
        ``|m| >= MAD_MISS_FAR_CENTRE``), whose column is scaled by ``|m|``; a column with ``m = a = 0`` (a rare
        indicator) keeps ``centre 0, scale 1``. ``quartiles`` reports ``m -+ a``."""
        m = np.asarray(median, dtype=float)
        a = np.asarray(spread, dtype=float)
        passthrough = (m == 0) & (a == 0)
        scale = np.maximum(2.0 * a, MIN_COLUMN_SCALE)
        if MAD_MISS_FAR_CENTRE is not None:
            # why: a spread below the floor at a centre this far from 0 is a missed release, not the column's spread;
            # the centre's magnitude is the released value that sizes such a column (released values only)
            missed = (2.0 * a < MIN_COLUMN_SCALE) & (np.abs(m) >= MAD_MISS_FAR_CENTRE)
            scale = np.where(missed, np.maximum(np.abs(m), MIN_COLUMN_SCALE), scale)
        return cls(np.array([m - a, m + a]), np.where(passthrough, 0.0, m), np.where(passthrough, 1.0, scale),
                   passthrough)

    @classmethod
    def from_two_stages(cls, centre_1, quartiles, first):
        """The map of two stages: ``centre_1`` (stage 1's released centre), the released quartiles of
        ``x - centre_1`` and ``first``, stage 1's released quartiles (post-processing of the three).
        ``quartiles`` keeps the pair in the data's units.

        The scale may go below ``MIN_COLUMN_SCALE`` (module docstring, "Small spreads"), never below either
        stage's spread nor further than ``SMALL_SPREAD_RATIO`` from the largest spread the floor leaves, unless a
        released quartile of either stage is exactly 0 or stage 2's pair collapsed."""
        shifted = cls.from_quartiles(quartiles, True)
        lo, hi = shifted.quartiles
        # a column whose stage 1 passed it through (centre_1 = 0) and whose stage 2 quartiles are both 0 again
        passthrough = (centre_1 == 0) & shifted.passthrough
        centre = np.where(passthrough, 0.0, centre_1 + (lo + hi) / 2.0)
        lo_1, hi_1 = np.minimum(first[0], first[1]), np.maximum(first[0], first[1])
        # no enlargement (module docstring, "Small spreads"): a quartile at exactly 0 in either stage (an atom at 0
        # or at centre_1) or a collapsed stage-2 pair (an atom off the grid: a rare indicator coded -0.2 / 0.2)
        atom = (lo_1 == 0) | (hi_1 == 0) | (lo == 0) | (hi == 0) | (lo == hi)
        spread_2 = _spread(lo, hi)
        small = np.maximum(spread_2, np.minimum(_spread(lo_1, hi_1), MIN_COLUMN_SCALE))
        if SMALL_SPREAD_RATIO is not None:
            # the largest spread the floor leaves in the fitted space (min(spread_2, 1) over the columns not passed
            # through): a column is enlarged only until it is within SMALL_SPREAD_RATIO of it
            top = np.max(np.minimum(spread_2, MIN_COLUMN_SCALE)[~passthrough], initial=0.0)
            if top > 0:
                small = np.maximum(small, np.minimum(shifted.scale, SMALL_SPREAD_RATIO * small / top))
        scale = np.where(passthrough, 1.0, np.where(atom, shifted.scale, small))
        return cls(np.array([centre_1 + lo, centre_1 + hi]), centre, scale, passthrough)

    def affine(self):
        """``(centre, 1 / scale)`` as the float64 arrays :meth:`transform`'s compiled pass reads."""
        return (np.ascontiguousarray(self.centre, dtype=np.float64),
                np.ascontiguousarray(1.0 / self.scale, dtype=np.float64))

    def transform(self, X):
        """``(X - centre) / scale``, clipped to ``[-k, k]`` with a clip (a public per-row map)."""
        bound = self.clip_bounds()
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float64:
            # the same two roundings per entry as below, in one compiled pass into a fresh array
            # (the clip in the same pass, as np.clip(out, -bound, bound) clips: the same floats)
            if bound is None:
                return column_affine(X, *self.affine())
            return column_affine(X, *self.affine(), 1.0, np.broadcast_to(np.asarray(bound, dtype=np.float64),
                                                                          (X.shape[1],)))
        out = X - self.centre
        if isinstance(out, np.ndarray):
            np.multiply(out, 1.0 / self.scale, out=out)
            return out if bound is None else np.clip(out, -bound, bound, out=out)
        out = out * (1.0 / self.scale)
        return out if bound is None else out.clip(-bound, bound)

    def fold(self, coef, intercept):
        """``(coef, intercept)`` of the scaled rows' model in the data's units (post-processing).

        ``<w', (x - c) / s> + b' = <w' / s, x> + b' - <w' / s, c>``.
        """
        coef = np.asarray(coef, dtype=float) / self.scale
        return coef, intercept - coef @ self.centre
