"""DPStandardScaler: feature means and standard deviations from public bounds, privately.

Privacy argument: doc/privacy/preprocessing.rst.
"""

import functools
from functools import partial
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _fit_context, validate_data
from .._budget import Budget, largest_fitting_fraction, split_scale_share
from .._mechanisms import DEFAULT_NOISE, LaplaceMechanism
from .._mechanisms._calibrate import (
    gaussian_mechanism_for,
    grid_mean_sensitivity,
    laplace_mechanism_for,
    sensitivity_norms,
    user_grid_terms,
)
from .._mechanisms._grid import power_of_two_at_most
from .._mechanisms._scale_grid import GRID_END, ScaleGrid, at_grid_end
from .._param_checks import EPSILON_MIN, check_delta, check_epsilon, check_groups
from .._refusals import refusing_before_any_spend
from .._rng import check_random_state, noise_source
from .._scale_estimation import column_quantiles_event, column_quantiles_from_counts, private_column_quantiles
from .._solvers import is_dask_collection, make_user_data, map_chunks
from ..accounting import BudgetAccountant, ComposedEvent, FitAllowance, epsilon_delta
from ..accounting._allowance import usage_fits
from ..accounting._resolve import AccountantMixin
from ..linear_model._auto_scales import AUTO, SHARE_FLOOR, check_scale_share, is_auto
from ..linear_model._cluster_inputs import cluster_rows, is_cluster_input, record_features
from ._lazy import LazyRowMapMixin, lazy_row_map

__all__ = ["GRID_BITS", "MomentGrid", "BOUNDS_FENCE", "BOUNDS_MIN_RANK_BUDGET", "auto_bounds_feasible", "default_bounds_share", "BOUNDS_GRID", "BOUNDS_LEVELS", "BOUNDS_RANKS", "DPStandardScaler"]

#: ``bounds="auto"``: private quartiles of every feature on the signed grid, widened by Tukey's
#: fences, ``[q1 - 1.5 (q3 - q1), q3 + 1.5 (q3 - q1)]`` (about +-2.7 standard deviations for a
#: Gaussian feature). Quartiles rather than 0.05 / 0.95: the grid points beyond the data's
#: extremes miss a level-q target by only ``n min(q, 1 - q)`` ranks, five times fewer at 0.05, and
#: each of the ``2 d`` releases has ``epsilon_s / (2 d)`` (doc/privacy/quantiles.rst).
#: The grid is 8 points per octave (steps of 9 %): features far from 0 with a small relative spread
#: (-300 +- 50) put both quartiles on one point of the default 2-per-octave grid. The spread used is
#: at least one grid step of the larger end, so a collapsed pair still gives a range.
BOUNDS_LEVELS = (0.25, 0.75)
BOUNDS_FENCE = 1.5
BOUNDS_GRID = ScaleGrid(per_octave=8, signed=True)
#: Default share: each of the ``2 d`` releases gets ``n epsilon_i >= BOUNDS_RANKS`` within [0.05, 0.5]
#: (public). A quartile is a location, not a log-scale: the selection's rank error, about
#: ``2 ln(#grid) / epsilon_i`` (13 / epsilon_i on this grid), must stay a small fraction of ``n``;
#: at 50 ranks (the linear models' rule) it is a quarter of the rows, at 300 about 4 %.
BOUNDS_RANKS = 300.0
#: Cap of the default share (the linear models cap theirs at 0.5): the quartiles carry the whole
#: per-feature information (location, spread, fences) while the statistics after them run on the
#: unit box with a sensitivity of 1 / n per coordinate. On the real sets of
#: benchmarks/bench_defaults.py (raw columns, scaler + model, 3 seeds) a cap of 0.8 ties or beats
#: 0.5: Computers (4.4k rows, d = 9) at epsilon 1 R^2 -0.11 -> 0.27 (the quartiles become
#: affordable), HI and BudgetFood within 0.01, Computers at epsilon 2 -0.01.
BOUNDS_SHARE_CAP = 0.8
#: ``bounds="auto"`` estimates only when every quartile release lands within ``n / 2`` ranks of its
#: target with probability >= 0.95: the selection over ``G`` grid points misses by more than ``t``
#: ranks with probability at most ``G exp(-epsilon_i t / 2)`` (doc/privacy/quantiles.rst; sensitivity
#: 1), so it needs ``n epsilon_i >= 4 (ln G + ln 20)`` (about 38 on this grid). Below that the
#: quartiles are noise and the fences would clip the data anywhere (Wages, 2.9k rows, d = 11, at
#: epsilon 1: means off by thousands); the scaler then releases nothing and leaves every feature as
#: it is (public facts only: n, d, epsilon, the share).
BOUNDS_MIN_RANK_BUDGET = 4.0 * (math.log(len(BOUNDS_GRID.points)) + math.log(20.0))


def default_bounds_share(n, d, epsilon):
    """``scale_share=None``: ``min(0.8, max(0.05, 2 d BOUNDS_RANKS / (n epsilon)))`` (public facts only)."""
    return min(BOUNDS_SHARE_CAP, max(SHARE_FLOOR, len(BOUNDS_LEVELS) * d * BOUNDS_RANKS / (max(n, 1) * epsilon)))


def auto_bounds_feasible(n, d, scale_epsilon):
    """True when ``2 d`` quartile releases sharing ``scale_epsilon`` can each land within ``n`` ranks."""
    return n * scale_epsilon / (len(BOUNDS_LEVELS) * d) >= BOUNDS_MIN_RANK_BUDGET


def _check_bounds(bounds, n_features):
    if bounds is None:
        raise ValueError(
            "bounds is required: a public (lower, upper) range per feature, known without looking at the "
            "private data (a domain range, a sensor's spec, a public dataset), or bounds='auto' for private "
            "quartiles on a share of the budget (row level). Nothing was spent."
        )
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise ValueError("bounds must be a pair (lower, upper) of scalars or arrays of shape (n_features,).") from None
    try:
        lower = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,)).copy()
        upper = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,)).copy()
    except ValueError:
        raise ValueError(
            f"bounds must be scalars or arrays of shape ({n_features},) (one value per feature); got shapes "
            f"{np.shape(lower)} and {np.shape(upper)}. Nothing was spent."
        ) from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError("bounds must be finite. Nothing was spent.")
    if np.any(upper < lower):
        raise ValueError("bounds must satisfy lower <= upper for every feature. Nothing was spent.")
    return lower, upper


#: The statistics are exact integer sums on a power-of-two grid per feature: ``2^-GRID_BITS`` of the
#: range (mean) or of ``(r/2)^2`` (second moment), so a term moves by at most ``2^-GRID_BITS`` of its range
#: through the rounding, and the integer sums stay within int64 up to about 1e9 privacy units.
GRID_BITS = 32
#: Ranges ``r_j = upper_j - lower_j`` the exact statistics accept (0, or within these powers of two): the
#: grids and the squares then stay normal floats (doc/privacy/preprocessing.rst, "Exact statistics").
_MIN_RANGE, _MAX_RANGE = 2.0**-480, 2.0**480
_INT64_SUM_LIMIT = 2**63 - 1


def _grid_step(x, bits):
    """The largest power of two at most ``x 2^-bits`` (1.0 for ``x == 0``; public)."""
    return math.ldexp(power_of_two_at_most(x), -bits) if x > 0 else 1.0


class MomentGrid:
    """The public plan of the scaler's two statistics: grids and integer ranges of every term, per feature.

    Each clipped value ``x~`` (in ``[lower, upper]``) is mapped to two integers,
    ``t1 = rint(fl(x~ - c) / g1)`` and ``t2 = rint(fl(fl(x~ - c)^2) / g2)``, ``c = fl((lower + upper) / 2)``,
    ``g1, g2`` powers of two. Every step is a monotone rounding of a monotone function, so the terms lie in
    ``[lo1, hi1]`` (the maps of ``lower`` and ``upper``, computed here with the same float operations) and
    ``[0, hi2]``: exact integer ranges of the computation actually run, from the bounds only.
    """

    def __init__(self, lower, upper):
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            r, c = upper - lower, (lower + upper) / 2.0
        bad = ~np.isfinite(r) | ~np.isfinite(c) | (r > _MAX_RANGE) | ((r > 0) & (r < _MIN_RANGE))
        if np.any(bad):
            raise ValueError(
                f"bounds must have ranges upper - lower of 0 or within [2^-480, 2^480] (and a finite midpoint) for "
                f"the scaler's exact statistics; got {r[bad][:3]}. Nothing was spent.")
        self.lower, self.upper, self.centre = lower, upper, c
        self.g1 = np.array([_grid_step(v, GRID_BITS) for v in r])
        self.g2 = np.array([_grid_step(v, GRID_BITS) for v in (r / 2.0) ** 2])
        ends = np.vstack([lower, upper])
        t1, t2 = self.terms(ends)
        self.lo1, self.hi1 = t1[0], t1[1]
        self.hi2 = np.maximum(t2[0], t2[1])

    def terms(self, X):
        """``(t1, t2)`` int64 arrays of the shape of ``X``: the grid terms of the clipped values."""
        v = np.clip(X, self.lower, self.upper) - self.centre
        t1 = np.rint(v / self.g1).astype(np.int64)
        t2 = np.rint((v * v) / self.g2).astype(np.int64)
        return t1, t2

    def sums(self, X, block=65536):
        """``(Q1, Q2)``: the exact integer sums over the rows of ``X`` of both terms (Python ints per feature).

        Blocks of rows are summed in float64: every partial sum is an integer of absolute value below
        ``2^53`` (``block (M + 1) < 2^53``, ``M`` the terms' largest magnitude), hence exact in any order;
        the blocks' sums are then added as integers.
        """
        M = self._magnitude()
        block = max(1, min(int(block), (2**53 - 1) // (M + 1)))
        d = X.shape[1]
        Q1, Q2 = [0] * d, [0] * d
        buf = np.empty((min(block, X.shape[0]), d))
        for start in range(0, X.shape[0], block):
            rows = X[start:start + block]
            v = np.clip(rows, self.lower, self.upper, out=buf[: rows.shape[0]])
            v -= self.centre
            t = np.rint(v / self.g1)
            Q1 = [a + int(b) for a, b in zip(Q1, t.sum(axis=0))]
            np.multiply(v, v, out=t)
            t /= self.g2
            np.rint(t, out=t)
            Q2 = [a + int(b) for a, b in zip(Q2, t.sum(axis=0))]
        return np.array(Q1, dtype=np.int64), np.array(Q2, dtype=np.int64)

    def _magnitude(self):
        return int(max(np.max(np.abs(self.lo1), initial=0), np.max(np.abs(self.hi1), initial=0),
                       np.max(self.hi2, initial=0)))

    def check_units(self, n_units):
        """Refuse (public: the number of units and the bounds) sums that could leave int64."""
        M = self._magnitude()
        if int(n_units) * (M + 1) > _INT64_SUM_LIMIT:
            raise ValueError(f"{n_units} privacy units are too many for the scaler's exact integer sums. "
                             "Nothing was spent.")

    def sensitivities(self, n_units):
        """``(mean, second_moment)``: per-feature exact bounds (Fractions) on how far the released statistics
        move when one unit is replaced (:func:`grid_mean_sensitivity`)."""
        self.check_units(n_units)
        mean = [grid_mean_sensitivity(int(h) - int(lo), max(abs(int(lo)), abs(int(h))), g, n_units)
                for lo, h, g in zip(self.lo1, self.hi1, self.g1)]
        second = [grid_mean_sensitivity(int(h), int(h), g, n_units) for h, g in zip(self.hi2, self.g2)]
        return mean, second

    def statistics(self, Q1, Q2, n_units):
        """The released statistics from the exact integer sums: ``fl(g float(Q) / n)`` per feature."""
        return (self.g1 * Q1.astype(np.float64)) / n_units, (self.g2 * Q2.astype(np.float64)) / n_units


@functools.lru_cache(maxsize=64)
def _sensitivity_norms(lower_bytes, upper_bytes, n_units):
    """``((l1, l2) of the mean, (l1, l2) of the second moment)``: the plan's sensitivities (public; cached, since
    a meta-estimator's allowance may plan the same statistics many times)."""
    grid = MomentGrid(np.frombuffer(lower_bytes), np.frombuffer(upper_bytes))
    mean, second = grid.sensitivities(n_units)
    return sensitivity_norms(mean), sensitivity_norms(second)


def clipped_moments(X, lower, upper):
    """The two row-level statistics the scaler releases (the centre ``c`` is added back after the noise).

    ``m1 = g1 sum_i t1(x_i) / n`` and ``m2 = g2 sum_i t2(x_i) / n`` (:class:`MomentGrid`): the mean of
    the clipped values' offsets from the centre and of their squares, each term rounded to a power-of-two
    grid (``2^-32`` of its range) and summed exactly in int64, so the result does not depend on the order of
    the rows and moves by at most :meth:`MomentGrid.sensitivities` when one row is replaced.
    """
    grid = MomentGrid(*_broadcast_bounds(lower, upper, X.shape[1]))
    n = X.shape[0]
    grid.check_units(n)
    return grid.statistics(*grid.sums(X), n)


def _broadcast_bounds(lower, upper, d):
    return (np.broadcast_to(np.asarray(lower, dtype=float), (d,)),
            np.broadcast_to(np.asarray(upper, dtype=float), (d,)))


def user_clipped_moments(X, groups, lower, upper, max_items_per_user=None):
    """The user-level statistics: averages over users of each user's clipped moments, exactly on a grid.

    Every user keeps at most ``max_items_per_user`` rows (its first ones in
    input order: the rule of UserLevelDPLogistic's ``item_selection="first"``,
    shared through :func:`make_user_data`). User ``u`` with kept rows ``k_u``
    contributes ``q_u = clip(rint(K_u / k_u), lo, hi)``, ``K_u`` the exact int64 sum of its rows' grid terms
    (:class:`MomentGrid`): an integer in the terms' range that depends on that user's rows only, whatever
    the other users hold or how they sort. The statistics are ``g sum_u q_u / U`` (exact integer sum).

    Returns
    -------
    mean, second_moment : ndarray of shape (n_features,)
        The centred mean (offset from the centre ``c``) and the second moment about ``c``.
    n_users : int
    """
    n = X.shape[0]
    m = n if max_items_per_user is None else int(max_items_per_user)
    # the values are neither scaled (data_norm=inf) nor augmented: only grouped and capped
    data = make_user_data(X, np.zeros(n), groups, max_items=m, data_norm=math.inf)
    grid = MomentGrid(*_broadcast_bounds(lower, upper, X.shape[1]))
    U = data.n_users
    grid.check_units(U)
    counts = np.diff(data.indptr)[:, None]
    starts = data.indptr[:-1]
    t1, t2 = grid.terms(data.X)
    q1 = user_grid_terms(t1, starts, counts, grid.lo1, grid.hi1)
    q2 = user_grid_terms(t2, starts, counts, 0, grid.hi2)
    mean, m2 = grid.statistics(q1.sum(axis=0), q2.sum(axis=0), U)
    return mean, m2, U


def _to_unit(X, lower, upper, width):
    """The released bounds' public map of the rows into [0, 1] (in memory, and on each dask chunk)."""
    return (np.clip(X, lower, upper) - lower) / np.where(width > 0, width, 1.0)


def _chunk_grid_counts(X, offset=0, step=1, shift=None):
    """``(grid counts of every column, rows)`` of one row-chunk's sampled rows ``offset, offset + step, ...``,
    minus ``shift`` (a released centre) when given (on its worker): exact integers."""
    X = np.asarray(X, dtype=np.float64)[offset::step]
    return BOUNDS_GRID.column_counts(X, shift), X.shape[0]


def cluster_column_quantiles(X, budget, rng, offset=0, step=1, shift=None):
    """:func:`private_column_quantiles` of rows on a Dask cluster: the quartiles' release, draw for draw.

    Every release reads its column through its grid counts only; the counts of the row-chunks are
    integers summed exactly (in any order), so they are the counts of the whole array and
    :func:`column_quantiles_from_counts` releases what the in-memory call releases from the same ``rng``.
    ``offset``, ``step``: each chunk's rows ``offset::step`` (the column scaling's public sample; the chunks
    must start at multiples of ``step``); ``shift``: a released centre subtracted first (its stage 2).
    """
    parts = map_chunks(partial(_chunk_grid_counts, offset=offset, step=step, shift=shift), (X,))
    counts = sum(c for c, _ in parts)
    n = sum(m for _, m in parts)
    return column_quantiles_from_counts(counts, n, BOUNDS_LEVELS, budget, grid=BOUNDS_GRID, random_state=rng)


def _chunk_moment_sums(X, grid, unit_map):
    """One row-chunk's exact integer sums ``(Q1, Q2)`` (Python ints per feature; on its worker)."""
    X = np.asarray(X, dtype=np.float64)
    if unit_map is not None:
        X = _to_unit(X, *unit_map)
    Q1, Q2 = grid.sums(X)
    return [int(v) for v in Q1], [int(v) for v in Q2]


def cluster_clipped_moments(X, lower, upper, unit_map=None):
    """:func:`clipped_moments` of rows on a Dask cluster (after the public ``unit_map``, if given).

    Each chunk returns its exact integer sums of the grid terms (:meth:`MomentGrid.sums`); integers add
    exactly in any order, so their totals are the whole array's sums and the statistics are the in-memory
    ones bit for bit (``check_units`` keeps every partial and total sum within int64).
    """
    grid = MomentGrid(*_broadcast_bounds(lower, upper, X.shape[1]))
    n = int(X.shape[0])
    grid.check_units(n)
    parts = map_chunks(partial(_chunk_moment_sums, grid=grid, unit_map=unit_map), (X,))
    Q1 = np.array([sum(col) for col in zip(*(q1 for q1, _ in parts))], dtype=np.int64)
    Q2 = np.array([sum(col) for col in zip(*(q2 for _, q2 in parts))], dtype=np.int64)
    return grid.statistics(Q1, Q2, n)


class DPStandardScaler(AccountantMixin, LazyRowMapMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardize features with differentially private means and standard deviations.

    Each feature j is clipped to its public range ``[lower_j, upper_j]``;
    the mean of the clipped values' offsets from the range's centre and the
    mean of their squares are released with noise calibrated to the
    replace-one sensitivity of the float64 statistics actually computed
    (``r_j / n`` and ``(r_j / 2)^2 / n`` up to a relative ``2^-31``, with
    ``r_j = upper_j - lower_j``): both are exact integer sums of values
    rounded to a power-of-two grid (:class:`MomentGrid`), so no rounding of
    the computation escapes the bound. The variance is post-processed from
    the two.

    With ``privacy_unit="user"`` the privacy unit is one user (all rows
    sharing a ``groups`` value): each user keeps at most
    ``max_items_per_user`` rows, contributes the mean of its kept clipped
    rows, and the statistics average the users (sensitivities ``r_j / U``
    and ``(r_j / 2)^2 / U`` for ``U`` users).

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=0.0
        0: Laplace noise (pure DP). > 0: Gaussian noise, (epsilon, delta)-DP.
    bounds : tuple (lower, upper) or "auto", default="auto"
        Public range of every feature: scalars or arrays of shape
        (n_features,), known without looking at the data; costs nothing.
        ``"auto"`` (the default; ``privacy_unit="row"`` only, a user-level
        scaler refuses it before spending): private quartiles ``q1, q3`` of
        every feature on a signed grid (8 points per octave),
        released inside this fit's budget (``scale_share`` of epsilon, pure
        DP; doc/privacy/quantiles.rst, "Use in the estimators"), widened to
        ``[q1 - 1.5 s, q3 + 1.5 s]``, ``s = q3 - q1`` (at least one grid step
        of the larger end); the statistics are then
        computed on the rest of the budget within these bounds (``bounds_``).
        A feature whose two released quartiles are both 0 (a rare
        indicator, a mostly-zero count) has no released spread: it is left
        as it is (``passthrough_``; not clipped, centred or scaled); counts
        with another atom (grades mostly 1) get fences one grid step around
        it: declare their bounds. With too few rows for ``2 d`` quartiles at
        this budget (``n epsilon scale_share / (2 d)`` below about 38,
        :func:`auto_bounds_feasible`; public facts) the fit releases nothing,
        spends nothing and leaves every feature as it is (``fit_info_``).
    scale_share : float or None, default=None
        Fraction of epsilon spent on ``bounds="auto"``, in (0, 1); ignored
        with declared bounds. ``None``: ``min(0.8, max(0.05, 600 n_features
        / (n epsilon)))`` (``default_bounds_share``). Features with atoms (binary, small counts) can
        put a quartile anywhere between two atoms (every grid point there
        misses the target by the same number of ranks): declare their
        bounds.
    privacy_unit : {"row", "user"}, default="row"
        ``"row"``: replace-one-row neighbours, ``fit(X)``. ``"user"``:
        replace-one-user neighbours, ``fit(X, groups=groups)``; the
        estimator to pair with :class:`~sklearn_dpsco.UserLevelDPLogistic`
        in a :class:`DPPipeline`.
    max_items_per_user : int, default=None
        Only with ``privacy_unit="user"``: a user keeps its first
        ``max_items_per_user`` rows in input order (the rule of
        ``UserLevelDPLogistic(item_selection="first")``; use the model's value
        so both describe the same rows). None keeps every row. The
        sensitivity does not depend on it: each user contributes one mean.
    with_mean : bool, default=True
        Centre the data (costs nothing extra when ``with_std`` is True: the
        mean is needed for the variance anyway).
    with_std : bool, default=True
        Scale to unit variance.
    clip : bool, default=True
        Clip features to ``bounds`` in :meth:`transform` too (recommended:
        the statistics describe the clipped data).
    accountant : BudgetAccountant, default=None
    random_state : int, RandomState instance or None, default=None
        None draws noise from the OS CSPRNG.
    noise : {"secure", "float"}, default="secure"
        Noise sampling path of both releases (doc/privacy/secure_noise.rst):
        ``"secure"`` exact integer noise on a grid (the Gaussian calibrated
        through zCDP), ``"float"`` the textbook floating-point samplers.

    Attributes
    ----------
    bounds_ : tuple (lower, upper) of ndarray of shape (n_features,)
        The bounds used: the declared ones, or with ``bounds="auto"`` the
        differentially private release (also ``lower_`` and ``upper_``;
        ``-inf, inf`` for a passed-through feature).
    passthrough_ : ndarray of bool of shape (n_features,)
        Features left unchanged by :meth:`transform` (``bounds="auto"``, both
        released quartiles at 0, or nothing released; ``mean_`` 0,
        ``scale_`` 1, bounds infinite); all False with declared bounds.
    fit_info_ : dict
        ``bounds``: ``"declared"`` or ``"auto"``; with ``"auto"`` also
        ``estimated`` (False: too few rows, nothing released, ``reason``),
        ``quartiles`` (the released ``q1, q3``), ``scale_share`` and
        ``scale_epsilon`` (the epsilon spent on them) and ``n_passthrough``.
    mean_ : ndarray of shape (n_features,)
        Private estimate of the clipped means (within the bounds).
    var_ : ndarray of shape (n_features,)
        Private estimate of the clipped variances, clamped to
        ``[noise floor, (r_j / 2)^2]``.
    scale_ : ndarray of shape (n_features,)
        ``sqrt(var_)``, or 1 where ``with_std`` is False or ``r_j == 0``.
    privacy_event_ : PrivacyEvent
    epsilon_spent_, delta_spent_ : float
    noise_source_ : str
    n_features_in_ : int
    n_users_ : int
        Number of users (``privacy_unit="user"`` only; public under
        replace-one-user neighbouring).

    See Also
    --------
    RowNormClipper : stateless row clipping, no budget.
    DPPipeline : splits one budget across private steps.

    Notes
    -----
    Privacy unit ``privacy_unit`` (a parameter; recorded in the ledger
    entry). Row: replace-one neighbouring rows, ``n`` public. User:
    replace-one-user neighbours, the number of users ``U`` public, ``U``
    replacing ``n`` below: a user contributes one mean of values in
    ``[lower, upper]`` whatever its number of rows, so replacing it moves the
    average of the ``U`` user means by at most ``r_j / U`` (and the second
    moment by ``(r_j / 2)^2 / U``; each user's term is an integer on the grid,
    a function of its own rows, and the terms add exactly). A row-level scaler's guarantee says nothing
    about a user with many rows; :class:`DPPipeline` refuses to mix units.
    Pure DP: l1-sensitivities
    ``||r||_1 / n`` (mean) and ``||(r / 2)^2||_1 / n`` (second moment), each
    released with Laplace noise at ``epsilon / 2``. Gaussian: l2
    sensitivities and Gaussian-DP parameter ``mu / sqrt(2)`` each, ``mu =
    gaussian_mu(epsilon, delta)`` (float noise), or zCDP ``rho / 2`` each,
    ``rho = zcdp_rho(epsilon, delta)`` (secure noise). With ``with_std=False`` only the mean is
    released, at the full budget. With ``bounds="auto"`` the event is
    ``ComposedEvent((quartiles' pure-DP event, statistics' event))``, fixed
    from public facts (n, d, epsilon, delta, ``scale_share``) before the data
    is read; the statistics use the released bounds as public ones
    (sequential composition). Full argument: doc/privacy/preprocessing.rst.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco.accounting import BudgetAccountant
    >>> from sklearn_dpsco.preprocessing import DPStandardScaler
    >>> X = np.random.default_rng(0).uniform(0, 10, size=(1000, 2))
    >>> sc = DPStandardScaler(epsilon=1.0, bounds=(0, 10), random_state=0,
    ...                       accountant=BudgetAccountant()).fit(X)
    >>> np.round(sc.mean_)
    array([5., 5.])
    """

    _parameter_constraints = {
        "epsilon": [Interval(numbers.Real, EPSILON_MIN, None, closed="left")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "bounds": [tuple, list, StrOptions({AUTO}), None],
        "scale_share": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "privacy_unit": [StrOptions({"row", "user"})],
        "max_items_per_user": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "clip": ["boolean"],
        "accountant": [BudgetAccountant, None],
        "random_state": ["random_state"],
        "noise": [StrOptions({"secure", "float"})],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        bounds=AUTO,
        scale_share=None,
        privacy_unit="row",
        max_items_per_user=None,
        with_mean=True,
        with_std=True,
        clip=True,
        accountant=None,
        random_state=None,
        noise=DEFAULT_NOISE,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.scale_share = scale_share
        self.privacy_unit = privacy_unit
        self.max_items_per_user = max_items_per_user
        self.with_mean = with_mean
        self.with_std = with_std
        self.clip = clip
        self.accountant = accountant
        self.random_state = random_state
        self.noise = noise

    # -- plan: public facts only --------------------------------------------------------
    def _mechanisms(self, n, lower, upper, budget=None):
        """The mechanisms the fit runs, from n, the bounds and the budget (never from data).

        ``budget`` (default: the whole ``(epsilon, delta)``) is what the
        statistics get: the rest after ``bounds="auto"``.

        ``n`` is the number of privacy units: rows, or users for
        ``privacy_unit="user"`` (each user contributes one mean of clipped
        values, so the same sensitivities hold with users in place of rows).
        """
        mean_sens, m2_sens = _sensitivity_norms(np.asarray(lower, dtype=float).tobytes(),
                                                np.asarray(upper, dtype=float).tobytes(), int(n))
        queries = []
        if self.with_mean or self.with_std:
            # why: a unit's term t1 lies in [lo1, hi1] (clipped values, monotone roundings), the int64 sum is
            # exact, and the bound covers the conversion and the division by n actually computed: about
            # r_j / n (1 + 2^-32) (doc/privacy/preprocessing.rst, "Exact statistics on the secure path")
            queries.append(("mean", mean_sens))
        if self.with_std:
            # why: t2 lies in [0, hi2], hi2 g2 ~ (r_j / 2)^2: about (r_j / 2)^2 / n (same argument)
            queries.append(("second_moment", m2_sens))
        mechanisms = {}
        if not queries:  # with_mean=False and with_std=False: nothing is released (transform only clips)
            return mechanisms
        # k releases share the budget by the library's one split (epsilon / k for pure DP,
        # mu / sqrt(k) for the float Gaussian, rho / k for the secure one; composition.rst)
        budget = Budget(self.epsilon, self.delta, self.noise) if budget is None else budget
        part = budget.split_equal(len(queries))
        d = lower.size
        for name, (l1, l2) in queries:
            if part.pure:
                mechanisms[name] = laplace_mechanism_for(l1, part, d)
            else:
                mechanisms[name] = gaussian_mechanism_for(l2, part, d)
        return mechanisms

    def _auto_share(self, n, d, epsilon):
        """The fraction of ``epsilon`` spent on the quartiles (public facts only)."""
        if self.scale_share is None:
            return default_bounds_share(n, d, epsilon)
        return check_scale_share(self.scale_share)

    @property
    def _may_release_pure(self):
        """``bounds="auto"`` releases pure quartiles before the Gaussian statistics at ``delta > 0``: a
        meta-estimator gives such a scaler a zCDP allowance (accounting/_shares.py, ``curve_kind``), which
        holds both, and it plans within it (:meth:`_within_allowance`)."""
        return is_auto(self.bounds)

    def would_estimate_bounds(self, n, d, epsilon=None):
        """Whether a fit on ``n`` rows of ``d`` features at ``epsilon`` releases anything (public facts).

        False for ``bounds="auto"`` when the quartiles could not land within
        ``n`` ranks (:func:`auto_bounds_feasible`): such a fit releases
        nothing, spends nothing and leaves the features unchanged.
        :class:`DPPipeline` asks it to give that share to the model instead.
        """
        if not is_auto(self.bounds) or self.privacy_unit != "row":
            return True
        epsilon = self.epsilon if epsilon is None else epsilon
        return auto_bounds_feasible(n, d, self._auto_share(n, d, epsilon) * epsilon)

    def _bounds_plan(self, n, d):
        """``(scale_budget or None, statistics budget, planned event of the quartiles or None)``; public.

        The event is built exactly as :func:`private_column_quantiles` builds
        it (``2 d`` pure-DP releases of equal epsilon), so the fit's event is
        known before any data is read. ``(None, None, None)`` for an auto fit
        that releases nothing (:meth:`would_estimate_bounds`).
        """
        budget = Budget(self.epsilon, self.delta, self.noise)
        if not is_auto(self.bounds):
            return None, budget, None
        share = self._auto_share(n, d, self.epsilon)
        if not self.would_estimate_bounds(n, d):
            return None, None, None
        scale_budget, rest = split_scale_share(budget, share)
        return scale_budget, rest, column_quantiles_event(BOUNDS_LEVELS, scale_budget, d, grid=BOUNDS_GRID)

    def _planned(self, units, lower, upper, budget, bounds_event):
        """``(mechanisms, event)`` of the statistics on ``budget`` after the quartiles (public)."""
        mechs = self._mechanisms(units, lower, upper, budget)
        event = ComposedEvent(tuple(m.event for m in mechs.values())) if mechs else ComposedEvent(())
        return mechs, event if bounds_event is None else ComposedEvent((bounds_event, event))

    def _within_allowance(self, allowance, units, lower, upper, scale_budget, budget, d):
        """``(scale_budget, budget, bounds_event, mechanisms, event)`` with both parts' epsilon scaled down by
        one factor (bisection) until a meta-estimator's allowance holds the whole fit; public arithmetic.

        Why: the scaler is given ``(epsilon, delta)`` read off its allowance (a zCDP share ``rho_i`` as
        ``zcdp_epsilon(rho_i, delta)``); the pure quartiles plus the Gaussian statistics on the rest certify
        that epsilon by basic composition, but their zCDP reading (``sum eps_j^2 / 2`` plus the statistics'
        rho), which the allowance composes, can exceed ``rho_i`` (a DPPipeline at ``delta > 0`` was refused).
        """

        def plan(t):
            sb = Budget(scale_budget.epsilon * t, 0.0, scale_budget.noise)
            rest = Budget(budget.epsilon * t, budget.delta, budget.noise)
            bounds_event = column_quantiles_event(BOUNDS_LEVELS, sb, d, grid=BOUNDS_GRID)
            return (sb, rest, bounds_event, *self._planned(units, lower, upper, rest, bounds_event))

        planned = plan(1.0)
        u = allowance.usage(planned[4])
        if usage_fits(u) or not math.isfinite(u):
            return planned  # within it, or a kind it cannot hold (its check refuses with its own message)
        # 30 halvings: the factor to within 2^-30 (< 1e-9)
        best = largest_fitting_fraction(plan, lambda trial: usage_fits(allowance.usage(trial[4])), 30)
        return planned if best is None else best

    @staticmethod
    def _released_bounds(quartiles):
        """Tukey's fences around the released quartiles (post-processing of public values)."""
        q1, q3 = np.minimum(quartiles[0], quartiles[1]), np.maximum(quartiles[0], quartiles[1])
        step = 2.0 ** (1.0 / BOUNDS_GRID.per_octave) - 1.0
        spread = np.maximum(q3 - q1, step * np.maximum(np.abs(q1), np.abs(q3)))
        return q1 - BOUNDS_FENCE * spread, q3 + BOUNDS_FENCE * spread

    @staticmethod
    def _noise_sd(mech):
        return mech.scale * math.sqrt(2.0) if isinstance(mech, LaplaceMechanism) else mech.sigma

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, groups=None):
        """Compute the private statistics; check the budget first, spend once after.

        Parameters
        ----------
        X : array-like, dask array or DataFrame of shape (n_samples, n_features)
            Dense only. A dask collection (row level) stays on its cluster:
            validation, the auto quartiles' grid counts and the statistics'
            integer sums run on the workers (doc/large_data.rst, "Dask").
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            User identifier of each row: required with
            ``privacy_unit="user"``, refused otherwise.

        Returns
        -------
        self
        """
        with refusing_before_any_spend():
            self._check_fit_params(groups)
        saved = dict(self.__dict__)
        try:
            self._fit(X, groups)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        # read from the released quartiles after the spend, with the fit stored (as the linear models do): a
        # feature whose quartile sits at the grid's end (|q| >= 2^20) lies at or beyond it and is fenced to a point
        quartiles = self.fit_info_.get("quartiles") if isinstance(self.fit_info_, dict) else None
        if quartiles is not None:
            at_end = at_grid_end(*quartiles)
            if at_end.size:
                self.fit_info_["warnings"] = [
                    f"DPStandardScaler: the private quartiles of feature(s) {at_end.tolist()} reached the end of the "
                    f"library's grid (2^20 = {GRID_END:g}): their values are at or beyond it and the "
                    "fences clip them to a point. Divide such features by a public unit (thousands, millions) or "
                    "declare their bounds (doc/fitting_raw_data.rst, 'Tiny magnitudes')."]
                warnings.warn(self.fit_info_["warnings"][0], UserWarning, stacklevel=2)
        return self

    def _validate_params(self):
        """scikit-learn's validation of the parameter constraints (``_fit_context`` runs it before ``fit``), whose
        refusal (an ``InvalidParameterError``, still one) says that nothing was spent."""
        with refusing_before_any_spend():
            super()._validate_params()

    def _check_fit_params(self, groups):
        """The checks of the parameters with each other and with ``groups`` (public), before anything runs."""
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        if self.privacy_unit == "row" and groups is not None:
            raise ValueError(
                "groups was given to a row-level DPStandardScaler: its guarantee protects one row, not one user. "
                "Use DPStandardScaler(privacy_unit='user', max_items_per_user=m) for a user-level guarantee, or "
                "drop groups. Nothing was spent."
            )
        if self.privacy_unit == "user" and is_auto(self.bounds):
            raise ValueError(
                "bounds='auto' (the default) is row-level only: DPStandardScaler(privacy_unit='user') needs "
                "public bounds, e.g. bounds=(lower, upper) from the data dictionary, since a quantile of rows "
                "is not protected when one user holds many rows. Nothing was spent."
            )
        if self.privacy_unit == "row" and self.max_items_per_user is not None:
            raise ValueError("max_items_per_user applies to privacy_unit='user' only. Nothing was spent.")

    def _fit(self, X, groups):
        # every refusal before the first release says that nothing was spent, with its type unchanged
        # (sklearn_dpsco/_refusals.py); nothing that releases is wrapped
        with refusing_before_any_spend():
            cluster = is_dask_collection(X)
            if cluster or is_cluster_input(groups):
                X = self._cluster_rows(X, groups)
            elif sp.issparse(X):
                why = ("centring would densify it" if self.with_mean else
                       "its private statistics are computed on dense rows, also with with_mean=False")
                raise TypeError(
                    f"DPStandardScaler does not accept sparse input ({why}); densify X (X.toarray()) if it fits in "
                    "memory, or use RowNormClipper, which maps sparse rows with public parameters. Nothing was spent."
                )
            else:
                X = validate_data(self, X, dtype=np.float64, ensure_all_finite=True)
            n, d = X.shape
            model = self.__dict__.get("_handed_over_to")
            if model is not None:  # a DPPipeline gave this scaler's work to its model (public: the configuration)
                return self._fit_identity(n, d, handed_over_to=model)
            scale_budget, budget, bounds_event = self._bounds_plan(n, d)
            if budget is None:  # bounds="auto" on too few rows for its budget: nothing is released
                return self._fit_identity(n, d)
            if bounds_event is None:
                lower, upper = _check_bounds(self.bounds, d)
            else:  # unit scale: the statistics run on features mapped into [0, 1] by the released bounds
                lower, upper = np.zeros(d), np.ones(d)
            n_users = None
            if self.privacy_unit == "user":
                groups = check_groups(groups, n, "DPStandardScaler(privacy_unit='user').fit")
                n_users = int(np.unique(groups).size)  # public under replace-one-user
            # the number of privacy units: rows, or users (each contributes one mean)
            units = n if n_users is None else n_users
            accountant = self._get_accountant()
            mechs, event = self._planned(units, lower, upper, budget, bounds_event)
            if (bounds_event is not None and self.delta > 0 and isinstance(accountant, FitAllowance)
                    and accountant.covers(self.epsilon, self.delta)):
                scale_budget, budget, bounds_event, mechs, event = self._within_allowance(
                    accountant, units, lower, upper, scale_budget, budget, d)
            accountant.check(event, privacy_unit=self.privacy_unit)

        rng = check_random_state(self.random_state)
        unit_map = None
        if bounds_event is not None:  # after the check: the quartiles, then the statistics within them
            if cluster:
                quartiles = cluster_column_quantiles(X, scale_budget, rng)
            else:
                quartiles = private_column_quantiles(X, BOUNDS_LEVELS, scale_budget, grid=BOUNDS_GRID,
                                                     random_state=rng)
            if quartiles.event != bounds_event:
                raise AssertionError(f"bounds consumed {quartiles.event}, planned {bounds_event}")
            released = self._released_bounds(quartiles.value)
            width = released[1] - released[0]
            # a public per-column map (the bounds are released): clipped features land in [0, 1],
            # the unit range the mechanisms were planned for, so their event is unchanged
            unit_map = (released[0], released[1], width)
            if not cluster:
                X = _to_unit(X, *unit_map)
        centre = (lower + upper) / 2.0
        half = (upper - lower) / 2.0
        if cluster:  # row level (a user-level scaler refused dask rows): the same integer sums, chunk by chunk
            exact_mean, exact_m2 = cluster_clipped_moments(X, lower, upper, unit_map)
        elif n_users is None:
            exact_mean, exact_m2 = clipped_moments(X, lower, upper)
        else:
            exact_mean, exact_m2, _ = user_clipped_moments(X, groups, lower, upper, self.max_items_per_user)
        mean = centre
        var = np.zeros(d)
        if "mean" in mechs:
            # the released statistic is the offset from the public centre; adding the centre back after the
            # noise is post-processing (added before, its rounding would depend on the data)
            mean = np.clip(centre + mechs["mean"].release(exact_mean, rng), lower, upper)
        if "second_moment" in mechs:
            m2 = mechs["second_moment"].release(exact_m2, rng)
            # post-processing: Var = E[(x - c)^2] - (E[x] - c)^2; a variance below
            # the noise level of its own estimate is not trusted (floor), and no
            # variance exceeds (r/2)^2 on [lower, upper] (ceiling).
            floor = np.minimum(self._noise_sd(mechs["second_moment"]), half**2)
            var = np.clip(m2 - (mean - centre) ** 2, floor, half**2)

        passthrough = np.zeros(d, dtype=bool)
        info = {"bounds": "declared"}
        if bounds_event is not None:  # back to the data's units (post-processing)
            lower, upper = released
            mean, var = lower + width * mean, width**2 * var
            # both quartiles released at 0 (a rare indicator, a mostly-zero count): no spread was
            # released, and fences around 0 would clip every other value to 0. Such a feature is left
            # as it is (a function of the released values only, i.e. post-processing). A pair at one
            # nonzero point keeps its one-grid-step fences: far from 0 that is a small relative
            # spread (survey years 1974-2016 fall between two points near 2000).
            passthrough = (quartiles.value[0] == 0) & (quartiles.value[1] == 0)
            lower, upper = np.where(passthrough, -np.inf, lower), np.where(passthrough, np.inf, upper)
            mean, var = np.where(passthrough, 0.0, mean), np.where(passthrough, 1.0, var)
            info = {"bounds": "auto", "estimated": True, "quartiles": (quartiles.value[0].copy(), quartiles.value[1].copy()),
                    "scale_share": scale_budget.epsilon / self.epsilon, "scale_epsilon": scale_budget.epsilon,
                    "n_passthrough": int(passthrough.sum())}

        accountant.spend(event, label=type(self).__name__, privacy_unit=self.privacy_unit)
        self.lower_, self.upper_ = lower, upper
        self.bounds_ = (lower, upper)
        self.passthrough_ = passthrough
        self.fit_info_ = info
        if n_users is not None:
            self.n_users_ = n_users
        else:
            self.__dict__.pop("n_users_", None)
        self.mean_ = mean
        self.var_ = var if self.with_std else None
        scale = np.sqrt(var) if self.with_std else np.ones(d)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        self.privacy_event_ = event
        self.epsilon_spent_, self.delta_spent_ = epsilon_delta(event, delta=self.delta if self.delta > 0 else None)
        self.noise_source_ = noise_source(rng)

    def _cluster_rows(self, X, groups):
        """Rows held by a Dask cluster, validated on the workers (dask arrays and DataFrames; row level only)."""
        if self.privacy_unit == "user":
            raise TypeError(
                "DPStandardScaler(privacy_unit='user') cannot fit rows held by a Dask cluster: each user's first "
                "max_items_per_user rows must be gathered and averaged together, which a row-chunked dask "
                "collection does not provide (the per-user terms would have to travel, not d-sized sums). "
                "Compute the collection (X.compute()) or group the rows by user first. Nothing was spent."
            )
        if not is_dask_collection(X):
            raise TypeError("with dask groups, X must be a dask array or DataFrame as well. Nothing was spent.")
        X, names = cluster_rows(X)
        record_features(self, X.shape[1], names)
        return X

    def _fit_identity(self, n, d, handed_over_to=None):
        """``bounds="auto"`` below :func:`auto_bounds_feasible`: every feature as it is, nothing spent.

        Decided from ``n``, ``d``, epsilon and the share only; the empty event
        is still checked and recorded once, so the ledger shows the fit.
        ``handed_over_to``: the name of the model a :class:`DPPipeline` gave
        this scaler's work to (its configuration decides, ``_hands_over``): the
        same identity, without a warning (the pipeline's documented default).
        """
        event = ComposedEvent(())
        if handed_over_to is not None:
            reason = (f"the pipeline gave the columns' map to {handed_over_to} (column_scaling='auto'), which maps "
                      "them itself on the whole budget: every feature is left as it is (declare bounds to scale here)")
        else:
            reason = (f"{n} rows are too few for {2 * d} private quartiles at epsilon {self.epsilon:g}: every feature "
                      "is left as it is (declare bounds)")
            # visible, as the regressors' constant release is: a scaler that scales nothing is rarely what was meant;
            # before the ledger records the fit, so a warning turned into an error leaves no entry behind
            warnings.warn(f"DPStandardScaler: {reason}; nothing was spent.", UserWarning, stacklevel=3)
        accountant = self._get_accountant()
        accountant.check(event, privacy_unit=self.privacy_unit)
        accountant.spend(event, label=type(self).__name__, privacy_unit=self.privacy_unit)
        self.lower_, self.upper_ = np.full(d, -np.inf), np.full(d, np.inf)
        self.bounds_ = (self.lower_, self.upper_)
        self.passthrough_ = np.ones(d, dtype=bool)
        self.fit_info_ = {"bounds": "auto", "estimated": False, "scale_share": 0.0, "scale_epsilon": 0.0,
                          "n_passthrough": d, "reason": reason}
        if handed_over_to is not None:
            self.fit_info_["handed_over"] = handed_over_to
        self.__dict__.pop("n_users_", None)
        self.mean_, self.var_ = np.zeros(d), (np.ones(d) if self.with_std else None)
        self.scale_ = np.ones(d)
        self.privacy_event_ = event
        self.epsilon_spent_, self.delta_spent_ = 0.0, 0.0
        self.noise_source_ = noise_source(check_random_state(self.random_state))

    def _row_map(self):
        """The fitted map of float64 rows (picklable: the workers of a dask transform run it)."""
        check_is_fitted(self)
        return partial(_standardize, lower=self.lower_, upper=self.upper_, mean=self.mean_, scale=self.scale_,
                       clip=self.clip, with_mean=self.with_mean, with_std=self.with_std)

    def _transform_in_memory(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=True, reset=False)
        return self._row_map()(X)

    # transform (LazyRowMapMixin): clip (if ``clip``), centre (if ``with_mean``) and scale (if ``with_std``);
    # a dask collection is mapped chunk by chunk on its workers, lazily

    def inverse_transform(self, X):
        """Undo the centring and scaling (not the clipping); a dask array stays lazy."""
        check_is_fitted(self)
        fn = partial(_unstandardize, mean=self.mean_, scale=self.scale_, with_mean=self.with_mean,
                     with_std=self.with_std)
        if is_dask_collection(X):
            return lazy_row_map(self, X, fn, validate=False)
        return fn(np.asarray(X, dtype=np.float64))


def _standardize(X, lower, upper, mean, scale, clip, with_mean, with_std):
    """The scaler's map of validated float64 rows (in memory, and on each dask chunk: the same floats)."""
    if clip:
        X = np.clip(X, lower, upper)
    if with_mean:
        X = X - mean
    if with_std:
        X = X / scale
    return X


def _unstandardize(X, mean, scale, with_mean, with_std):
    if with_std:
        X = X * scale
    if with_mean:
        X = X + mean
    return X
