"""Certified solves of kinked losses (hinge, absolute) on a working set of rows (speed only, never privacy).

The minimizer of ``(1/n) sum_i s_i psi_i(<x_i, w>) + lam/2 ||w - w0||^2``
with a piecewise-linear ``psi_i`` has only about ``d`` rows exactly at their
kink; every other row sits on one side of it, where its loss is linear and
its dual variable ``beta_i`` is at a bound of its box (hinge: ``beta_i y_i``
in ``{0, c_i}``; absolute: ``beta_i = +-c_i``; ``c_i = min(1, k_i)``). The
cold dual ascent spends most of its passes finding out which side each row
is on. :func:`certified_kinked_erm` finds that out on a small problem:

1. *probe*: a point ``w`` and an estimate ``D`` of its distance to the
   minimizer (the duality gap ``G`` at a dual point ``beta``, ``D = sqrt(2 G / lam)``,
   computed in floats with two products: a screen needs no proof,
   :func:`screening_point`): first at ``beta = 0`` (``w = w0``: often screens
   well when ``lam`` is large); on a block of at least ``SMOOTHED_MIN_ROWS``
   rows of the absolute loss, then at the minimizer of the loss smoothed at a
   small width (a Newton solve with compiled passes, ``_warm_start.smoothed_absolute_start``);
   and while the working set it gives overflows, after 3 more passes of the
   ascent (up to 9 in all, ``PROBE_EPOCHS``: those points come with the
   kernel's certificate);
2. *screen*: the rows whose kink residual ``e_i`` (hinge: ``y_i z_i - 1``,
   absolute: ``z_i - y_i``, ``z_i = <x_i, w>``) exceeds
   ``||x_i|| D / SCREEN_SHRINK`` in magnitude get the bound dual value of
   their side; the others form the working set ``U``;
3. *reduced solve*: with the screened rows fixed, their (linear) losses move
   the centre to ``w_B = w0 + (1/(lam n)) sum_{i not in U} s_i beta_i x_i``,
   and the problem on ``U`` alone, ``(1/|U|) sum_U s_i psi_i +
   (lam n / |U|)/2 ||w - w_B||^2`` (the same problem restricted, scaled by
   ``n / |U|``), goes to the same certified solver, whose rows are few and
   stay in cache (a working set of ``NESTED_MIN_ROWS`` or more rows is
   itself solved this way, one level deep);
4. *check*: a screened row whose residual at the reduced solution has the
   wrong sign for its fixed dual value joins ``U`` and step 3 runs again
   (at most ``MAX_ROUNDS`` times).

The assembled dual point then only *starts* the full certified solve
(``certified_erm(..., dual_start=beta)``): its duality gap is computed from
scratch over every row and compared with the public target exactly as for a
cold start. When the guess is right the full solve certifies without a pass;
when it is wrong (a row screened to the wrong side, rounds exhausted) the
ascent continues from the assembled point until it certifies, or refuses
within its public budget (doc/privacy/output_perturbation.rst, "Warm starts").

Every step is deterministic (compiled row loops, no BLAS), so the released
point does not depend on thread settings.
"""

import numpy as np

from ..._fast._erm import certified_erm
from ..._fast._objective import Objective
from ..._fast._rows import RowData
from ..._fast._smoothed import absolute_gap_terms, screen_centre, screen_check, screen_rows
from .._core._data import GLMData
from ._warm_start import smoothed_absolute_start

__all__ = ["KINKED_LOSSES", "certified_kinked_erm"]

#: Losses solved on a working set (piecewise linear with one kink).
KINKED_LOSSES = ("hinge", "absolute")
#: Passes of the cold ascent before the rows are screened: first none (the certificate at
#: ``beta = 0`` often screens well when ``lam`` is large), then 3 more each time the working set
#: overflows. A weakly regularised first phase of 133k rows overflows after 3 passes (D = 6) and
#: then took 53 passes of the full ascent (1.7 s); after 6 it screens (0.85 s for the phase).
PROBE_EPOCHS = (0, 3, 3, 3)
#: Rows within ``||x_i|| D / SCREEN_SHRINK`` of their kink form the working set: the proven bound
#: ``D`` after the probe is typically 20-40x the true distance, and a row screened wrongly only
#: costs a check round.
SCREEN_SHRINK = 64.0
#: The reduced problem is solved to this fraction of the full problem's target distance (0.8 took
#: fewer passes in all than 0.5 on the growth regressor's phases; the full certificate decides).
REDUCED_TARGET = 0.8
#: Budget of one reduced solve, in its own passes (its rows are few and stay in cache). Its result
#: is only a start: a reduced solve that does not certify (e.g. its own rounding floor is above
#: the target while screened rows sit on the wrong side) hands on its dual point all the same.
REDUCED_EPOCHS = 300
#: Rounds of reduced solve and check before the full ascent takes over.
MAX_ROUNDS = 6
#: Working sets of at least this many rows are solved on a working set of their own.
NESTED_MIN_ROWS = 1000
#: A working set above this fraction of the rows is not worth extracting: the full ascent continues.
MAX_WORKING_FRACTION = 0.5
#: Blocks of at least this many rows solved with the absolute loss screen at the minimizer of its
#: smoothing (``_warm_start.smoothed_absolute_start``) when the certificate at the start does not
#: screen, before any pass of the ascent. With its Newton steps' row work in one compiled pass
#: (``_fast._smoothed``) it costs about one 3-pass probe on 12.5k rows x 21 and leaves far smaller
#: working sets. Growth regressor, one thread, CPU, best of 7-9 (2**15 -> 2**12): 4e5 x 20 (27k-row
#: phases) 0.25 s -> 0.15 s, 2e5 x 20 (12.5k) 0.11-0.12 s -> 0.09 s, 1e5 x 20 (6.7k) 0.064-0.072 s ->
#: 0.055-0.058 s; 5e4 x 20 (3.3k-row phases, below it) unchanged; 2**10 and 2**11 no better. (With the
#: NumPy/BLAS Newton it was 2**15: its 20-30 Python-bound steps cost 8-12 ms on 12.5k rows.)
SMOOTHED_MIN_ROWS = 2**12
#: Before the smoothed screen, a working set above this fraction of such a block is not solved: the
#: smoothed minimizer screens far better, at about the cost of a 35k-row nested solve (2e6 x 20, one
#: thread: the phases at lam = 0.005 and 0.01 left 65k and 48k of 133k rows in the start's working set,
#: whose nested solves took 190 and 150 ms; smoothed, about 100 ms each with 200-2000 rows left; a
#: 35k-row set (lam = 0.02) is cheaper nested. Phases in all 1.31 s -> 1.20 s; 1/16: 1.44 s). With the
#: cheaper smoothed start (``_warm_start.SMOOTH_WIDTHS``, 2026-11-27, seventh session) 0.3 -> 0.15: at 2e5
#: the 15k-row phases at lam = 0.02-0.08 left 19-25 % of their rows at the start, whose nested solves then
#: grew past 0.3 in a check round (about 0.9 ms each, wasted) before the smoothed screen ran anyway (one
#: thread, CPU, best of 9, with the new start: 2e5 75.5 / 75.2 / 76.4 ms at 0.2 / 0.15 / 0.1; 2e6, best of 3,
#: 544 ms against 616 before the new start and fraction).
SMOOTHED_MAX_FRACTION = 0.15
#: Blocks of rows above this many bytes (a last-level cache) are visited in a blocked random order
#: (``certified_erm(blocked_order=True)``): a shuffled pass over a phase of 133k rows x 21 misses the
#: cache at every step (47 ms a pass), a blocked one reads each block of rows from cache (about
#: 20 ms). Below it the uniform shuffle's passes, which screen a little better, are as cheap.
#: Measured on the growth regressor at 2e6 x 20, one thread (2**24 and 2**22 within the noise).
BLOCKED_ORDER_BYTES = 2**23


def _blocked_order(rows, start, stop):
    """Whether the ascent on rows [start, stop) visits them in blocked order (public: sizes only)."""
    return (stop - start) * rows.n_features * 8 >= BLOCKED_ORDER_BYTES


def _reduced_X(data, index):
    """The rows ``index`` of ``data`` (dense C-contiguous or CSR), for a RowData and a GLMData."""
    X = data.X[index]
    return X if hasattr(X, "tocsr") else np.ascontiguousarray(X)


def certified_kinked_erm(data, rows, loss, lam, w0, *, clip, start, stop, target_distance, max_epochs,
                         ball_center=None, ball_radius=None, dual_start=None, nested=True):
    """``certified_erm`` for a hinge or absolute loss, started from a working-set solution.

    Parameters
    ----------
    data : GLMData
        The rows (``rows`` is its RowData).
    rows : RowData
    loss : Loss
        Compiled ``Hinge`` or ``Absolute``.
    lam, w0, clip : the problem's regularisation, centre and Lipschitz level.
    start, stop : int
        Block of rows.
    target_distance : float
        Public accuracy target of the certificate.
    max_epochs : int
        Public budget of the certified ascent, in passes (the probe's included).
    ball_center, ball_radius : optional public constraint set.
    dual_start : ndarray of shape (stop - start,), optional
        Where the ascent starts (zeros when None).
    nested : bool, default=True
        Whether a large working set is itself solved on a working set (one level).

    Returns
    -------
    ERMResult
        The result of the final ``certified_erm`` call: its ``distance_bound``
        is the same deterministic certificate as for a cold start.
    """
    y, sw = data.y, data.sample_weight
    stop = data.n_samples if stop is None else stop
    ball = dict(ball_center=ball_center, ball_radius=ball_radius)
    fit = dict(clip=clip, sample_weight=sw, start=start, stop=stop, target_distance=target_distance,
               blocked_order=_blocked_order(rows, start, stop))
    # the kernel's own extension levels (rounded down, _objective.row_k): the rows' slopes, bound dual values
    cap = np.minimum(Objective(rows, y, loss, lam, w0, clip, sw, start, stop).k_values(), 1.0)
    # screen at the start (beta = 0: w = w0), then for a large absolute-loss block at the minimizer of
    # the loss's smoothing (compiled Newton passes), then after a few passes of the ascent: at the first that allows it
    smoothed = (stop - start >= SMOOTHED_MIN_ROWS and dual_start is None and not loss.is_classification
                and ball_center is None)
    point = np.zeros(stop - start) if dual_start is None else dual_start
    res, used, beta = None, 0, None
    for probe in PROBE_EPOCHS:
        probe = min(probe, max_epochs - used)
        if probe > 0 and smoothed:
            smoothed = False
            guess = smoothed_absolute_start(data, lam, w0, cap, target_distance, start, stop, rows)
            if guess is not None:
                point, probe, res = guess, 0, None
        if probe == 0 and ball_center is None:
            # a screening point needs no proof: its distance estimate is computed with BLAS-speed products
            probe_res = screening_point(data, rows, loss, lam, w0, cap, start, stop, point)
            if probe_res.distance_bound <= target_distance:
                break  # the start may certify as it is: the final solve checks it
        else:
            # a start that is the previous probe's uncertified point is not checked again before the passes
            res = probe_res = certified_erm(rows, y, loss, lam, w0, max_epochs=probe, dual_start=point,
                                            check_start=res is None, **fit, **ball)
            used += res.n_epochs
            if res.certified or used >= max_epochs:
                return res
            point = res.dual_coef
        # while the smoothed screen is still to come, only a small working set is worth solving
        beta = working_set_dual(data, rows, loss, lam, w0, clip, cap, start, stop, target_distance, probe_res,
                                ball, nested, SMOOTHED_MAX_FRACTION if smoothed else None)
        if beta is not None:
            break
    # the certificate: the same duality gap over every row, whatever the start
    return certified_erm(rows, y, loss, lam, w0, max_epochs=max_epochs - used,
                         dual_start=point if beta is None else beta,
                         check_start=beta is not None or res is None, **fit, **ball)


class ScreeningPoint:
    """A point to screen rows at (no pass of the ascent): ``w``, an estimate of its distance, its dual point,
    and the products ``z_i = <x_i, w>`` over the block (read again by the screen, not recomputed)."""

    n_epochs = 0

    def __init__(self, w, distance_bound, dual_coef, z=None):
        self.w, self.distance_bound, self.dual_coef, self.z = w, distance_bound, dual_coef, z


def screening_point(data, rows, loss, lam, w0, cap, start, stop, beta):
    """The primal point of the dual point ``beta`` (no ball) and its duality-gap distance, in floats.

    ``w = w0 + (1/(lam n)) sum_i s_i beta_i x_i`` and ``sqrt(2 G / lam)`` with
    ``G = (1/n) sum_i s_i (psi_i(z_i) + psi_i^*(-beta_i) + beta_i z_i)``,
    ``psi_i^*(-beta_i) = -beta_i y_i`` for both kinked losses: the kernel's
    certificate without its rounding margin and compensated sums, for a
    screen (speed only), never for a release.
    """
    n = stop - start
    y = data.y[start:stop]
    sw = np.ones(n) if data.sample_weight is None else data.sample_weight[start:stop]
    w0 = np.asarray(w0, dtype=float)
    # no data-dependent warning (a non-finite estimate only means no screen), as in the compiled kernel
    with np.errstate(all="ignore"):
        # unit weights: s_i beta_i is beta_i itself (a product by 1.0 is exact)
        coef = beta if data.sample_weight is None else sw * beta
        w = w0 + rows.rmatvec(coef, start, stop) / (lam * n) if np.any(beta) else w0.copy()
        z = rows.matvec(w, start, stop) if np.any(w) else np.zeros(n)
        if loss.is_classification:
            terms = cap * np.maximum(1.0 - y * z, 0.0) + beta * (z - y)
        else:  # NumPy's cap * |z - y| + beta * (z - y), entry by entry in one compiled pass (the same floats)
            terms = absolute_gap_terms(z, y, cap, beta, np.empty(n))
        gap = float(sw @ terms) / n
    distance = np.sqrt(2.0 * max(gap, 0.0) / lam) if np.isfinite(gap) else np.inf
    return ScreeningPoint(w, float(distance), beta, z)


def working_set_dual(data, rows, loss, lam, w0, clip, cap, start, stop, target_distance, probe, ball, nested=False,
                     max_fraction=None):
    """Dual point for rows [start, stop): screened rows at their side's bound, the working set solved.

    ``probe`` is a ``certified_erm`` result or a :class:`ScreeningPoint` on
    the full block (its ``w``, ``distance_bound`` and ``dual_coef``); ``cap``
    the rows' slopes ``min(1, k_i)``. Returns None when screening does not
    apply (non-finite bound, working set above ``max_fraction`` of the rows,
    default ``MAX_WORKING_FRACTION``, at the start or after a check).
    """
    hinge = bool(loss.is_classification)
    n = stop - start
    y = data.y[start:stop]
    sw = None if data.sample_weight is None else data.sample_weight[start:stop]
    D = probe.distance_bound
    if not np.isfinite(D):
        return None
    # a screening point brings its products (the same call on the same w: the same floats)
    z = getattr(probe, "z", None)
    z = rows.matvec(probe.w, start, stop) if z is None else z
    # one compiled pass each (_fast/_smoothed.pyx: the same floats as the NumPy formulas they replaced):
    # residuals e, the set |e_i| <= ||x_i|| D / SCREEN_SHRINK (rows of positive weight), bound duals
    e, in_set, bound = np.empty(n), np.empty(n, dtype=np.uint8), np.empty(n)
    limit = (MAX_WORKING_FRACTION if max_fraction is None else max_fraction) * n
    count = screen_rows(rows, start, stop, z, y, sw, D / SCREEN_SHRINK, hinge, cap, e, in_set, bound, limit)
    if count > limit:
        return None  # too many rows near their kink (the pass stopped there: the check below, sooner)
    if count == 0:
        norms = rows.row_norms()[start:stop]
        positive = np.ones(n, dtype=bool) if sw is None else sw > 0
        in_set[np.argmin(np.where(positive, np.abs(e) / np.maximum(norms, 1e-300), np.inf))] = True
    beta = probe.dual_coef.copy()
    w0 = np.asarray(w0, dtype=float)
    for _ in range(MAX_ROUNDS):
        index = np.flatnonzero(in_set.view(bool))
        if index.size > limit:
            return None  # too many rows near (or on the wrong side of) their kink
        # the screened rows at their bound; their linear losses shift the centre (their terms of
        # v = (1/n) sum s_i beta_i x_i)
        shift = np.zeros(rows.n_features)
        screen_centre(rows, start, stop, in_set, beta, bound, sw, lam * n, shift)
        w_b = w0 + shift
        sub_sw = None if sw is None else np.ascontiguousarray(sw[index])
        if rows.is_sparse:
            sub_X = _reduced_X(data, start + index)
            sub_rows = RowData(sub_X, intercept_scaling=data.intercept_scaling)
        else:  # the same rows, their norms read from the block's cache (the same floats, not recomputed)
            sub_X, sub_rows = rows.take(start + index)
        sub_y = np.ascontiguousarray(y[index])
        sub_fit = dict(clip=clip, target_distance=REDUCED_TARGET * target_distance, max_epochs=REDUCED_EPOCHS,
                       dual_start=beta[index], ball_center=ball.get("ball_center"),
                       ball_radius=ball.get("ball_radius"))
        if nested and index.size >= NESTED_MIN_ROWS:
            # a large working set is itself solved on a working set (one level deep)
            sub = certified_kinked_erm(
                GLMData(sub_X, sub_y, sub_sw, data.intercept_scaling), sub_rows, loss,
                lam * n / index.size, w_b, start=0, stop=index.size, nested=False, **sub_fit,
            )
        else:
            sub = certified_erm(sub_rows, sub_y, loss, lam * n / index.size, w_b, sample_weight=sub_sw, **sub_fit)
        beta[index] = sub.dual_coef
        # a screened row on the wrong side of its kink at the reduced solution joins the working set
        if screen_check(rows, start, stop, np.ascontiguousarray(sub.w, dtype=float), y, sw, hinge, e, in_set) == 0:
            break
    return beta

