"""Private feature centring inside a fit: UserLevelDPLogistic (doc/privacy/user_level.rst, "Feature
centring") and DPHingeClassifier (doc/privacy/hinge.rst, "Private centring").

Columns scaled by public ranges onto [-1, 1] are far from centred (on the real
panels of benchmarks/bench_panels.py column means reach 0.86-0.89 of the range's
half-width). DP gradient descent then spends its steps and its noise on the
offset: the noise on the feature coefficients, projected on the rows' mean,
lands in the decision threshold. With ``centering`` on, a fit first releases
the mean of the users' mean feature rows with the Gaussian mechanism on a
public share of its budget, maps every row by ``x -> x - centre`` (a public
per-row map), runs the unchanged solver on the rest, and folds the shift back
into the intercept (post-processing)::

    m_u    = clip_B(mean of clip_B(x_r) over the user's first max_items rows)
    centre = Pi_B((sum_u m_u + N) / n_users)          N Gaussian (secure: discrete, on a grid)
    b      = b' - <w, centre>

Replacing one user replaces one ``m_u`` (each of norm <= B), so the sum moves
by at most 2B (plus, on the secure path, every rounding of its float64
computation: :func:`~sklearn_dpsco._mechanisms._calibrate.clipped_sum_sensitivity`).
The rows read are a public function of the grouping (each user's first
``max_items`` rows in input order), never of values or labels.

``B`` (:func:`feature_bound`) is the norm the features of a row within the
declared bound can have. The share and the tighter row clip of centred fits
(:data:`CENTRED_ROW_SHARE`) come from benchmarks/results/wages_study.md and
benchmarks/results/panels.md; :func:`centering_applies` decides from public
facts only.

Row level (DPHingeClassifier with a declared ``clip``; doc/privacy/hinge.rst,
"Private centring"): every row is its own unit, ``B`` the declared clip, and
the sum of the clipped rows is formed exactly in integers on the grid
:func:`row_grid` (the same value in memory and on a Dask cluster, however the
rows are chunked); pure DP releases it with the l2-Laplace.
"""

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from .._budget import Budget
from .._fast._rows import clipped_row_grid_sums
from .._fast._users import clipped_row_means
from .._mechanisms._calibrate import (
    clipped_sum_sensitivity,
    expected_noise_norm,
    mechanism_for,
    row_grid_sum_sensitivity,
)
from .._solvers import is_dask_collection, map_chunks
from ._column_scaling import ColumnScaling

__all__ = ["CENTERING_SHARE", "CENTRED_ROW_SHARE", "ROW_CENTERING_SHARE", "ROW_CENTRE_MAX_ERROR", "CenteringPlan",
           "centering_applies", "feature_bound", "row_grid", "user_mean_rows"]

#: Share of the fit's budget (of zCDP rho on the secure path, of mu^2 on the float path: the units in
#: which Gaussian releases compose exactly) spent on the centre. About two DP-GD steps' share at the
#: default 15-30 steps. 30 seeds on seven panels, simulated with this share (wages_study.md, "Centring
#: the feature columns"): 0.05 and 0.1 tie on baseball, Males and rwm5yr; 0.1 is ahead on Wages at eps 1.
CENTERING_SHARE = 0.1
#: A centred fit clips its rows ``(x - centre, c intercept_scaling)`` at ``c = CENTRED_ROW_SHARE R``
#: instead of the declared rule's ``R / 4`` (``DECLARED_ROW_SHARE``): the centred rows are short, and
#: the tighter clip (each row's direction, nearly) kept the gain on every panel where centring gained
#: (wages_study.md, "geometry" and "pairing": Wages eps 1 0.724 -> 0.732 at R/8, baseball +0.027).
CENTRED_ROW_SHARE = 0.125
#: Row level (DPHingeClassifier with a declared ``clip``): share of epsilon (pure DP) or of the Gaussian
#: units spent on the centre, and the largest expected error of the released centre, relative to the
#: rows' bound, at which ``centering="auto"`` runs (a public function of n, d and the budget).
ROW_CENTERING_SHARE = 0.1
ROW_CENTRE_MAX_ERROR = 0.1
#: The row-level sum is exact in integers on the grid ``2^-ROW_GRID_BITS B`` (a power of two): the rounding
#: adds at most ``sqrt(d) 2^-33 B`` to a row, and the integers stay within int64 up to about 1e9 rows.
ROW_GRID_BITS = 32


def feature_bound(data_norm, intercept_scaling):
    """``B``: the clip of the features of a row and of a user's mean feature row (public).

    A row ``(x, s)`` within the declared bound ``R`` (intercept column ``s``
    included) has ``||x|| <= sqrt(R^2 - s^2)``; when that leaves the features
    little room (``R`` near ``s``, as with ``data_norm=1`` and
    ``intercept_scaling=1``, which scales every row down), the features of a
    row no longer than its intercept column after the declared clip,
    ``R / sqrt(2)``. The larger of the two: a continuous function of the
    declared settings only.
    """
    R, s = float(data_norm), float(intercept_scaling)
    return max(math.sqrt(max(R * R - s * s, 0.0)), R / math.sqrt(2.0))


def centering_applies(setting, *, declared, fit_intercept, dense, n_features):
    """Whether a fit may centre its features privately (public facts only).

    Parameters
    ----------
    setting : {"auto", True, False}
        The estimator's ``centering``.
    declared : bool
        The rows' bound is declared (a number for ``data_norm`` / ``clip``): ``B`` needs it.
    fit_intercept : bool
        The shift is folded into the intercept; without one it could not be undone.
    dense : bool
        Dense rows in memory (centring would densify sparse rows).
    n_features : int

    Returns
    -------
    bool
        ``"auto"`` and ``True``: all of the above (``True`` refuses the others,
        before anything is spent). ``"auto"`` then also requires the
        estimator's own rule, on the budget :class:`CenteringPlan` leaves:
        UserLevelDPLogistic centres the fits that run ``user_dp_sgd`` (forced,
        or chosen by ``solver="auto"``; under ``user_clip`` the simulated
        centring lost on every panel, wages_study.md: -0.007..-0.045),
        DPHingeClassifier those whose centre has a public expected error of at
        most ``ROW_CENTRE_MAX_ERROR`` times the clip. ``False``: never.

    Raises
    ------
    ValueError
        ``setting=True`` without a declared bound, an intercept or dense rows.
    """
    if setting is False:
        return False
    if setting is True:
        missing = [text for ok, text in ((declared, "a declared bound (the norm of the rows it averages)"),
                                         (fit_intercept, "fit_intercept=True (the shift is folded into it)"),
                                         (dense, "dense rows (centring would densify sparse rows)"))
                   if not ok]
        if missing:
            raise ValueError(f"centering=True needs {' and '.join(missing)}. Use centering='auto' or False. "
                             "Nothing was spent.")
    return declared and fit_intercept and dense and n_features > 0


def _clip(V, bound):
    """Each row of ``V`` scaled to norm <= ``bound`` by ``v min(1, B / ||v||)`` (the clip the sensitivity
    bound of :func:`clipped_sum_sensitivity` covers: norm <= B (1 + gamma_{2p+6}) in float64). A row whose
    norm overflows is scaled by 0 (still within B), without a data-dependent warning."""
    with np.errstate(over="ignore"):
        norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


def user_mean_rows(X, users, max_items, bound):
    """``(n_users, d)``: each user's mean of its first ``max_items`` rows (input order), rows and mean clipped.

    A public selection of rows (:func:`~sklearn_dpsco._solvers._core._user_data.index_users`'
    stable sort keeps each user's rows in input order), then, per user, the mean of its
    rows each clipped to ``bound`` (``sum_r min(1, B / ||x_r||) x_r / k_u`` in the rows'
    order, compiled: one pass over the chosen rows, no copy of ``X``; a row whose squared
    norm overflows counts as 0), and that mean clipped to ``bound``. Each user's vector is a
    function of that user's rows only, whatever the other users hold. Rows are clipped
    before they are summed: no sum can overflow.
    """
    counts = np.asarray(users.counts, dtype=np.intp)
    n = int(counts.sum())
    if counts.size and counts.max() <= int(max_items):
        kept = np.arange(n, dtype=np.intp)  # every row is among its user's first max_items
    else:
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
        rank = np.arange(n, dtype=np.intp) - np.repeat(starts, counts)  # a row's place among its user's rows
        kept = np.flatnonzero(rank < int(max_items))  # positions in user order
    rows = kept if users.order is None else np.asarray(users.order)[kept]
    sizes = np.minimum(counts, int(max_items))
    indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.intp)
    return _clip(clipped_row_means(X, rows, indptr, bound), bound)


def row_grid(bound):
    """The grid of the row-level sum: the largest power of two at most ``bound * 2^-32`` (public)."""
    return math.ldexp(1.0, math.frexp(float(bound))[1] - 1 - ROW_GRID_BITS)


@dataclass(frozen=True)
class CenteringPlan:
    """The centre's release in one fit: its mechanism, event and the rest of the budget, fixed before data.

    Attributes
    ----------
    n_users, n_features : int
        Users (rows, at row level) and features.
    bound : float
        ``B``: the clip of each user's mean row (:func:`feature_bound`) or of each row (the declared clip).
    max_items : int or None
        Rows per user averaged (the estimator's ``max_items_per_user``); ``None`` at row level.
    share : float
    mechanism : GaussianMechanism or L2LaplaceMechanism
        Releases the sum (l2-sensitivity 2B plus its float64 rounding): Gaussian at ``delta > 0``,
        l2-Laplace for pure DP.
    rest : Budget
        What the solver gets (the budget fill then raises it until the fit certifies its epsilon).
    """

    n_users: int
    n_features: int
    bound: float
    max_items: object
    share: float
    mechanism: object
    rest: Budget

    @classmethod
    def build(cls, budget, n_users, n_features, bound, max_items, share=CENTERING_SHARE):
        """Split ``budget`` (the fit's whole budget) by ``share``: of epsilon for pure DP, in Gaussian units
        (zCDP rho or mu^2, the budget's own split rule) at ``delta > 0``. ``max_items=None``: row level
        (every row its own unit; the sum of the clipped rows on a grid, exact in integers)."""
        centre_budget, rest = budget.split([share, 1.0 - share])
        if max_items is None:
            if n_users * (2.0**ROW_GRID_BITS * 2 + 1) >= 9.2e18:
                raise ValueError(f"{n_users} rows are too many for the exact integer sum of the private centre; "
                                 "use centering=False. Nothing was spent.")
            # why: replacing one row replaces one clipped row (norm <= B) rounded to the grid; the integers add
            # exactly; the bound adds the rounding, the clip's float error and the float conversion of the sum
            # (doc/privacy/hinge.rst, "Private centring").
            sensitivity = row_grid_sum_sensitivity(bound, n_users, n_features, row_grid(bound))
        else:
            # why: replacing one user replaces one clipped mean (norm <= B): the exact sum moves by <= 2B; the
            # bound also covers the float64 clipping and summation (the other users' vectors are the same floats
            # on both neighbours: term error 0), so it holds for the floats the secure path rounds to its grid
            # (doc/privacy/user_level.rst, "Feature centring").
            sensitivity = clipped_sum_sensitivity(bound, n_users, n_features, 0.0)
        mechanism = mechanism_for(sensitivity, centre_budget, n_features)
        return cls(int(n_users), int(n_features), float(bound), None if max_items is None else int(max_items),
                   float(share), mechanism, rest)

    @property
    def event(self):
        return self.mechanism.event

    @property
    def relative_error(self):
        """Expected norm of the released centre's error over the bound B (public: n, d, the budget).

        ``E||Z|| / (n B)``: about ``2 d / (n epsilon_c)`` for the l2-Laplace and ``2 sqrt(d) / (n mu_c)``
        for the Gaussian (:func:`expected_noise_norm`; the secure path's scale is a few percent larger).
        """
        m = self.mechanism
        delta = getattr(m, "delta", 0.0)
        return expected_noise_norm(m.sensitivity, self.n_features, m.epsilon, delta) / (self.n_users * self.bound)

    def total(self, rows):
        """The (noise-free) sum the mechanism releases; reads the data.

        User level: ``rows`` is ``(X, users)``, the float64 sum of :func:`user_mean_rows`. Row level: ``rows``
        is ``X`` (in memory, or a dask array of NumPy chunks summed on the workers): ``grid K``, ``K`` the
        exact integer sum of the clipped rows on :func:`row_grid` (the same integers however ``X`` is chunked).
        """
        if self.max_items is not None:
            X, users = rows
            return user_mean_rows(X, users, self.max_items, self.bound).sum(axis=0)
        grid = row_grid(self.bound)
        if is_dask_collection(rows):
            parts = map_chunks(partial(_chunk_grid_sums, bound=self.bound, grid=grid), (rows,))
            K = sum(parts, np.zeros(self.n_features, dtype=np.int64))  # exact: integers
        else:
            K = clipped_row_grid_sums(np.ascontiguousarray(rows, dtype=np.float64), self.bound, grid)
        return K.astype(np.float64) * grid

    def release(self, rows, rng, n_jobs=None):
        """``(ColumnScaling, event)``: the released centre as a shift-only column map (call only after the
        budget checks; ``rows`` as for :meth:`total`). ``n_jobs`` is accepted as by ``ColumnScalingPlan``
        (one pass here)."""
        noisy = self.mechanism.release(self.total(rows), rng)
        centre = noisy / self.n_users
        norm = float(np.linalg.norm(centre))
        if norm > self.bound:  # post-processing: a centre inside the rows' ball keeps centred rows within 2B
            centre = centre * (self.bound / norm)
        d = self.n_features
        return ColumnScaling(None, centre, np.ones(d), np.zeros(d, dtype=bool)), self.event

    def info(self, columns):
        """Public facts for ``fit_info_``."""
        return {"centering": {"share": self.share, "bound": self.bound,
                              "expected_error": self.relative_error * self.bound}}


def _chunk_grid_sums(X, *rest, bound, grid):
    """The exact integer sum of one row-chunk's clipped rows on the grid (runs on its worker)."""
    return clipped_row_grid_sums(np.ascontiguousarray(X, dtype=np.float64), bound, grid)
