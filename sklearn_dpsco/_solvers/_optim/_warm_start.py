"""Dual starting points for the certified solver, from a BLAS Newton solve (speed only, never privacy).

The certified solver (``_fast._erm.certified_erm``) runs dual coordinate
ascent from ``beta = 0`` and stops when its duality gap proves the target
distance. Many of its passes only rediscover what a few Newton steps on the
primal find with full-batch BLAS work: this module computes such a guess
``w_s`` and hands the solver the matching dual point ``beta_i = -g_i(<x_i, w_s>)``
(``g_i`` the loss derivative). For the squared loss (extended: Huber at
``k_i``) the guess is a semismooth Newton solve of the exact objective; it
ends when the set of rows in the quadratic part stops changing, at the exact
minimizer, and the solver then certifies without a pass. A large block first
solves the same objective on its first eighth of rows (recursively): from
that point most rows are already in their final piece, so the block's own
solve takes two or three steps instead of six or seven.

Non-smooth losses get no Newton start of the ascent: a Newton continuation on
the loss smoothed at a shrinking width, with an exact polish on the kink
pattern, was measured slower than the ascent it replaced (the kink pattern
settles only at widths near 1e-5). Hinge and absolute solves start from a
working-set solution instead (``_working_set.py``); on large blocks of the
absolute loss the rows are screened at the minimizer of its smoothing at a
few widths (:func:`smoothed_absolute_start`), which is close enough to screen
almost every row.

Privacy is untouched: the start only changes where the ascent begins, and the
solver certifies the released point by the same duality gap whatever the
start (doc/privacy/output_perturbation.rst, "Warm starts"). A poor start
(ball constraint active, ill conditioning) only costs passes; a failed solve
returns None and the ascent starts from zero.
"""

import contextlib
import math
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from ..._fast._smoothed import gram_update, huber_newton_dense, huber_step, huber_value
from .._core._data import GLMData

__all__ = ["MAX_GRAM_FEATURES", "dual_start", "gram_system", "huber_newton", "smoothed_absolute_start"]

#: Largest number of coefficients for which a Gram matrix is formed (d^2 memory, d^3 solve).
MAX_GRAM_FEATURES = 1000
#: Newton iterations (each reads the block twice and the rows that change pieces once more).
MAX_NEWTON = 30
_THREADPOOLS = ThreadpoolController()
#: The BLAS libraries ``_THREADPOOLS.limit(user_api="blas")`` sets (found once, with the controller).
_BLAS_LIBS = tuple(lib for lib in _THREADPOOLS.lib_controllers if lib.user_api == "blas")


def one_blas_thread():
    """``_THREADPOOLS.limit(limits=1, user_api="blas")``, or no change when every BLAS library it would set is
    on one thread already (inside the fit's own limit, or under ``OMP_NUM_THREADS=1``): the same thread counts
    during the block, without threadpoolctl's inventory and restore of every library (about 50 us a call,
    several a fit; speed only)."""
    if all(lib.num_threads == 1 for lib in _BLAS_LIBS):
        return contextlib.nullcontext()
    return _THREADPOOLS.limit(limits=1, user_api="blas")
_POSV = scipy.linalg.lapack.get_lapack_funcs("posv", dtype=np.float64)

#: Blocks of at least SUBSAMPLE_RATIO * SUBSAMPLE_MIN_ROWS rows start their Newton solve at the
#: minimizer on a prefix of 1 / SUBSAMPLE_RATIO of their rows (recursively).
SUBSAMPLE_RATIO = 8
SUBSAMPLE_MIN_ROWS = 4096

#: Dual starts are pulled this far inside the box ``|beta_i| <= c_i`` (the kernel's ``k_i`` is rounded down).
INSIDE = 1.0 - 2.0**-40


def gram_system(X, h, intercept_scaling=0.0, unit=None):
    """``sum_i h_i x_i x_i^T`` over the rows of dense or CSR ``X``, the virtual intercept column appended.

    ``unit=True`` declares ``h`` all ones (the caller's own array of ones: not checked again), ``unit=False``
    that it is not (no entry is 1); ``None`` checks.
    """
    p = X.shape[1]
    s = float(intercept_scaling)
    d = p + (1 if s > 0 else 0)
    ones = bool(np.all(h == 1.0)) if unit is None else unit
    # unit weights: X^T X is one symmetric rank-k update (numpy calls syrk), no weighted copy
    Xh = X if ones else (sp.diags(h) @ X if sp.issparse(X) else X * h[:, None])
    A = np.empty((d, d))
    G = X.T @ Xh
    A[:p, :p] = G.toarray() if sp.issparse(G) else G
    if s > 0:
        # sum_i h_i x_i as one matrix-vector product (a column sum reads the rows at a stride)
        A[p, :p] = A[:p, p] = s * np.asarray(X.T @ h).ravel()
        # a sum of ones is exact: the row count itself
        A[p, p] = s * s * (float(h.shape[0]) if unit else float(h.sum()))
    return A


def row_matvec(X, s, w):
    """``X w`` for rows with the virtual intercept column of value ``s`` (``w`` holds its coefficient last)."""
    z = np.asarray(X @ w[: X.shape[1]]).ravel()
    return z + s * w[-1] if s > 0 else z


def row_rmatvec(X, s, a):
    """``X^T a`` for rows with the virtual intercept column of value ``s`` (its entry last)."""
    g = np.asarray(X.T @ a).ravel()
    return np.append(g, s * a.sum()) if s > 0 else g


class _Block:
    """Rows [start, stop) of a GLMData with the intercept column: products and weighted Gram matrices."""

    def __init__(self, data, start, stop):
        self.X = data.X[start:stop]
        self.y = data.y[start:stop]
        self.s = data.intercept_scaling
        self.n = stop - start
        self.sw = np.ones(self.n) if data.sample_weight is None else data.sample_weight[start:stop]
        self.unit = data.sample_weight is None
        self.base_sw = self.sw
        self.norms = data.row_norms()[start:stop]

    def matvec(self, w):
        return row_matvec(self.X, self.s, w)

    def rmatvec(self, a):
        return row_rmatvec(self.X, self.s, a)

    def gram(self, h, prev=None):
        """``sum_i h_i x_i x_i^T / n``; with ``prev = (G, h_prev)`` only the rows whose weight changed are read."""
        if prev is None:
            idx = np.flatnonzero(h)
            X = self.X if idx.size == self.n else self.X[idx]
            return gram_system(X, h[idx], self.s) / self.n
        G, h_prev = prev
        change = h - h_prev
        # rows entering and rows leaving the quadratic part as two updates of positive weights: with unit
        # sample weights both are unweighted rank-k updates (syrk), half the work of one signed product
        for idx, sign in ((np.flatnonzero(change > 0), 1.0), (np.flatnonzero(change < 0), -1.0)):
            if idx.size:
                G = G + (sign / self.n) * gram_system(self.X[idx], sign * change[idx], self.s)
        return G


def _solve_pos(A, b):
    """``A^{-1} b`` for a symmetric positive definite ``A`` (LAPACK posv, without scipy.linalg.solve's checks)."""
    # a finite sum has no NaN or infinite term: the elementwise test only when it is not finite
    if not math.isfinite(float(A.sum()) + float(b.sum())) and not (np.isfinite(A).all() and np.isfinite(b).all()):
        raise ValueError("non-finite Newton system")
    _, x, info = _POSV(A, b, lower=True)
    if info != 0:
        raise np.linalg.LinAlgError("Newton system not positive definite")
    return x


def _huber(z, y, k):
    """Value, derivative and curvature (0 or 1) of the extended squared loss at ``z``."""
    r = z - y
    g = np.clip(r, -k, k)
    # r g - g^2 / 2 is r^2 / 2 inside and k |r| - k^2 / 2 beyond
    return g * (r - 0.5 * g), g, (g == r).astype(float)


def huber_newton(blk, k, lam, w0, tol, start=None):
    """Minimize ``(1/n) sum_i s_i huber_{k_i}(<x_i, w> - y_i) + lam/2 ||w - w0||^2`` by semismooth Newton.

    Damped (Armijo backtracking along ``z + t X p``: one product per step, a
    trial costs elementwise work only). Stops when a full step keeps the set
    of rows in the quadratic part (it then landed on the minimizer of that
    piece, which is the minimizer), when the step is below ``tol``, or after
    :data:`MAX_NEWTON` steps. Starts at ``start`` (default ``w0``). Returns
    ``(w, z)`` with ``z = X w``.
    """
    sw = blk.sw
    w = np.array(w0 if start is None else start, dtype=float)
    z = blk.matvec(w)
    val, g, h = _huber(z, blk.y, k)
    active_prev, prev = None, None
    for _ in range(MAX_NEWTON):
        f = float(sw @ val) / blk.n + 0.5 * lam * float((w - w0) @ (w - w0))
        # unit weights: the products by sw are the factors themselves (skipped, the same floats)
        grad = blk.rmatvec(g if blk.unit else sw * g) / blk.n + lam * (w - w0)
        hw = h if blk.unit else sw * h
        # the curvature changes only on rows entering or leaving the quadratic part: update, not rebuild
        G = blk.gram(hw, prev)
        prev = (G, hw)
        step = -_solve_pos(G + lam * np.eye(G.shape[0]), grad)
        dz = blk.matvec(step)
        slope = float(grad @ step)
        t = 1.0
        while True:
            trial = _huber(z + t * dz, blk.y, k)
            w_t = w + t * step
            fn = float(sw @ trial[0]) / blk.n + 0.5 * lam * float((w_t - w0) @ (w_t - w0))
            if fn <= f + 1e-4 * t * slope:
                break
            t *= 0.5
            if t < 1e-10:
                return w, z
        w, z = w_t, z + t * dz
        active = h > 0
        val, g, h = trial
        if t == 1.0 and active_prev is not None and np.array_equal(active, active_prev):
            break
        active_prev = active
        if t * float(np.linalg.norm(step)) <= tol:
            break
    return w, z


def _subsample_sizes(n, min_rows=None, levels=None):
    """Prefix sizes ``n / 8^j`` of at least ``min_rows`` (default :data:`SUBSAMPLE_MIN_ROWS`, read at call
    time) — the ``levels`` largest, all when None — smallest first (empty for small blocks)."""
    min_rows = SUBSAMPLE_MIN_ROWS if min_rows is None else min_rows
    sizes = []
    m = n // SUBSAMPLE_RATIO
    while m >= min_rows and (levels is None or len(sizes) < levels):
        sizes.append(m)
        m //= SUBSAMPLE_RATIO
    return sizes[::-1]


def dual_start(data, loss_name, lam, w0, clip, target_distance, start=0, stop=None):
    """Dual variables for rows [start, stop) from a Newton solve, or None (start from zero).

    Parameters
    ----------
    data : GLMData
    loss_name : str
        Only ``"squared"`` gets a start; any other loss returns None.
    lam, w0, clip : the problem's regularisation, centre and Lipschitz level.
    target_distance : float
        The certified solver's target; the Newton steps stop below a thousandth of it.
    start, stop : int
    """
    stop = data.n_samples if stop is None else stop
    d = data.n_features
    if loss_name != "squared" or stop - start < 1 or d < 1 or d > MAX_GRAM_FEATURES:
        return None
    blk = _Block(data, start, stop)
    with np.errstate(divide="ignore"):
        k = np.where(blk.norms > 0, clip / blk.norms, np.inf)
    if not np.all(np.isfinite(k)):
        return None  # a zero row: no extension, keep the cold start
    w0 = np.asarray(w0, dtype=float)
    try:
        # one BLAS thread: multi-threaded reductions round differently, and the released point
        # must not depend on the machine's thread settings (the cold ascent never used BLAS)
        with warnings.catch_warnings(), np.errstate(all="ignore"), one_blas_thread():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            w = None
            for m in _subsample_sizes(blk.n):
                # a solve on the block's first m rows (nested prefixes, small first) starts the next one
                # near its minimizer: the full block then takes a few steps whose rows barely change piece
                w, _ = huber_newton(_Block(data, start, start + m), k[:m], lam, w0, 1e-3 * target_distance, start=w)
            _, z = huber_newton(blk, k, lam, w0, 1e-3 * target_distance, start=w)
    except (np.linalg.LinAlgError, ValueError):
        return None
    # beta_i = -psi_i'(z_i), pulled inside |beta_i| <= k_i (the kernel's k_i is rounded down)
    beta = -INSIDE * np.clip(z - blk.y, -k, k)
    return beta if np.all(np.isfinite(beta)) else None


#: Widths of the smoothed absolute loss solved in turn for a kinked start (continuation: each solve
#: starts at the previous one's minimizer), in units of the block's mean absolute residual at the centre.
#: Speed only (the screen's start; the certificate decides). Growth regressor 2e5 x 20, one thread, CPU,
#: best of 9-11 in one process with SMOOTH_TOL and the block-only narrowest solve below (2026-11-27,
#: seventh session): (0.5, 0.05, 0.005) 76.6 ms, (0.05, 0.005) 72.9, (0.05, 0.01) 71.8, (0.1, 0.01) 71.2,
#: (0.05, 0.02) 71.3 (all within the noise of each other); at 2e6 (0.05, 0.01) 544 ms, (0.05, 0.02) 578.
#: A narrower last width screens tighter but takes more Newton steps on the whole block.
SMOOTH_WIDTHS = (0.05, 0.01)
#: The wider widths are solved on a prefix of the block's rows (1 / SUBSAMPLE_RATIO^j of them: the
#: smallest of at most SMOOTH_PREFIXES levels with at least SMOOTH_MIN_ROWS rows), the narrowest on the
#: whole block, started at the prefix's minimizer. (It was solved on every larger prefix in turn too:
#: 2e5, 1.9k-row prefix and 15k-row block, about 1 ms more a phase for no fewer steps on the block.)
SMOOTH_MIN_ROWS = 1000
SMOOTH_PREFIXES = 2
#: The Newton solves stop when a step moves the point by at most this fraction of the certified
#: target distance (or when a full step changes no piece after one that changed none). The screen only
#: needs the point within a small fraction of the distance its gap implies (``mu / 4`` per row near
#: the kink dominates that gap): 1e-3 took one or two more passes over the block per phase (2e5: 1e-3
#: 75.2 -> 1e-1 72.9 ms a fit; 3e-2 77.6; 3e-1 82.2 and 1.0 90.8, where the looser point screens worse).
SMOOTH_TOL = 1e-1


def _fused_huber_newton(rows, X, start, stop, y, k, sw, lam, w0, tol, w):
    """:func:`huber_newton` of ``(1/n) sum_i s_i huber_k(<x_i, w> - y_i) + lam/2 ||w - w0||^2`` on rows
    [start, stop) of ``rows`` (``X`` the same rows, for the Gram matrices), with one compiled pass per step.

    The same damped semismooth Newton (Armijo backtracking along ``z + t X p``, Gram matrix updated on
    the rows that change piece, the same stopping rules), with each step's row work fused by
    ``_fast._smoothed.huber_step``: the product with the direction, the pieces at the full step, the
    loss sum and the next gradient in one read of the rows (NumPy and BLAS read them twice and made a
    dozen elementwise passes). A scalar width ``k``; ``sw`` None for unit weights. Returns ``(w, z)``.
    """
    n = stop - start
    d = rows.n_features
    w = np.array(w0 if w is None else w, dtype=float)
    z, z_new, dz = np.zeros(n), np.empty(n), np.empty(n)
    h, h_new = np.empty(n, dtype=np.uint8), np.empty(n, dtype=np.uint8)
    enter, leave = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    grad_loss, grad_new = np.empty(d), np.empty(d)
    s = rows.intercept_scaling

    ones = np.ones(n) if sw is None else None
    # weights none of which is 1: no subset of them is all ones (gram_system's check would say False)
    never_one = sw is not None and not np.any(sw == 1.0)

    dense = isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] + (1 if s > 0 else 0) == d
    p = X.shape[1]

    def gram(idx):
        # idx None: every row of the block
        Xi = X if idx is None else X[idx]
        if sw is None:  # unit weights: a slice of one array of ones (the same gemv for the intercept column)
            hi = ones if idx is None else ones[: idx.size]
            return _dense_gram(Xi, hi, s, p, d, n, True) if dense else gram_system(Xi, hi, s, unit=True) / n
        hi = sw if idx is None else sw[idx]
        if dense:
            return _dense_gram(Xi, hi, s, p, d, n, False if never_one else bool(np.all(hi == 1.0)))
        return gram_system(Xi, hi, s, unit=False if never_one else None) / n

    def update(idx, subtract):
        # G += gram(idx) (G -= when subtract); dense rows: the same products and roundings in one compiled call
        if not dense:
            if subtract:
                G[...] -= gram(idx)
            else:
                G[...] += gram(idx)
            return
        Xi = X[idx]
        if sw is None:
            hi, ones_i = ones[: idx.size], True
        else:
            hi = sw[idx]
            ones_i = False if never_one else bool(np.all(hi == 1.0))
        _dense_gram_update(G, Xi, hi, s, p, n, ones_i, subtract)

    # the pieces, loss and gradient at w: z = 0 + 1 X w
    f_loss = huber_step(rows, start, stop, y, k, sw, w, z, 1.0, dz, z_new, None, h, grad_loss, enter, leave)[0]
    z, z_new = z_new, z
    active = np.flatnonzero(h)
    # every row in the quadratic piece: the block itself (a C-contiguous block is the rows' copy X[idx] would
    # make, the same product call), no copy
    every = active.size == n and isinstance(X, np.ndarray) and X.flags.c_contiguous
    G = gram(None if every else active) if active.size else np.zeros((d, d))
    eye = lam * np.eye(d)
    changed_prev = None
    dw = w - w0
    f = f_loss / n + 0.5 * lam * float(dw @ dw)
    for _ in range(MAX_NEWTON):
        grad = grad_loss / n + lam * dw
        step = _solve_pos(G + eye, grad)
        np.negative(step, out=step)  # posv's solution is a fresh array: negated in place, the same floats
        slope = float(grad @ step)
        t = 1.0
        # the full step's pass: dz = X step, the pieces, loss and gradient at z + dz
        fl, ne, nl = huber_step(rows, start, stop, y, k, sw, step, z, 1.0, dz, z_new, h, h_new, grad_new, enter,
                                leave)
        while True:
            w_t = w + step if t == 1.0 else w + t * step  # 1.0 * step is step itself
            dw_t = w_t - w0
            fn = fl / n + 0.5 * lam * float(dw_t @ dw_t)
            if fn <= f + 1e-4 * t * slope:
                break
            t *= 0.5
            if t < 1e-10:
                return w, z
            fl = huber_value(y, k, sw, z, dz, t)
        if t != 1.0:  # a backtracked step: its pieces and gradient (dz is kept)
            fl, ne, nl = huber_step(rows, start, stop, y, k, sw, None, z, t, dz, z_new, h, h_new, grad_new, enter,
                                    leave)
        w, dw, f_loss = w_t, dw_t, fl  # the next step's w - w0 is this trial's
        # a full step's objective is the trial's fn: the same expression of the same floats (a backtracked
        # step's loss was recomputed by its pass: evaluated again)
        f = fn if t == 1.0 else f_loss / n + 0.5 * lam * float(dw @ dw)
        z, z_new, h, h_new, grad_loss, grad_new = z_new, z, h_new, h, grad_new, grad_loss
        # the curvature changes only on rows entering or leaving the quadratic part
        # (G is this function's own array: updated in place, the same sums)
        if ne:
            update(enter[:ne], False)
        if nl:
            update(leave[:nl], True)
        # a full step after a step that changed no piece: it solved the minimizer's own piece
        if t == 1.0 and changed_prev is not None and not changed_prev:
            break
        changed_prev = ne + nl > 0
        # np.linalg.norm of a vector is the square root of its dot with itself: the same float
        if t * math.sqrt(float(step @ step)) <= tol:
            break
    return w, z


def _dense_gram(Xi, h, s, p, d, n, ones):
    """``gram_system(Xi, h, s, unit=...) / n`` for dense rows ``Xi`` (``p`` columns, ``d`` with the intercept's),
    ``ones`` telling whether every weight is 1: the same products (``Xi.T @ Xi`` or ``Xi.T @ (Xi * h)``,
    ``Xi.T @ h``) and roundings, without its checks and copies (speed only)."""
    A = np.empty((d, d))
    A[:p, :p] = Xi.T @ (Xi if ones else Xi * h[:, None])
    if s > 0:
        v = Xi.T @ h
        v *= s
        A[p, :p] = v
        A[:p, p] = v
        # a sum of ones is exact: the row count itself
        A[p, p] = s * s * (float(h.shape[0]) if ones else float(h.sum()))
    A /= n
    return A


def _dense_gram_update(G, Xi, h, s, p, n, ones, subtract):
    """``G += _dense_gram(Xi, h, s, p, d, n, ones)`` (``-=`` when ``subtract``), ``G`` updated in place: the same
    BLAS products (``Xi.T @ Xi`` or ``Xi.T @ (Xi * h)``, ``Xi.T @ h``) and, entry by entry, the same roundings
    (``_fast._smoothed.gram_update``), without the temporary matrix (speed only)."""
    M = Xi.T @ (Xi if ones else Xi * h[:, None])
    if s > 0:
        # a sum of ones is exact: the row count itself
        gram_update(G, M, Xi.T @ h, s, s * s * (float(h.shape[0]) if ones else float(h.sum())), n, subtract)
    else:
        gram_update(G, M, None, 0.0, 0.0, n, subtract)


def _compiled_huber_newton(rows, start, stop, y, k, sw, lam, w0, tol, w):
    """:func:`_fused_huber_newton` on dense rows, the whole Newton in one compiled call
    (``_fast._smoothed.huber_newton_dense``: BLAS dsyrk Gram updates, LAPACK posv, other roundings than
    the NumPy reference; speed only, the certificate decides). Returns ``(w, z)``."""
    w = np.array(w0 if w is None else w, dtype=float)
    z = np.empty(stop - start)
    status = huber_newton_dense(rows, start, stop, y, float(k), sw, float(lam), np.ascontiguousarray(w0, dtype=float),
                                float(tol), w, z, MAX_NEWTON)
    if status == 1:
        raise np.linalg.LinAlgError("Newton system not positive definite")
    if status == 2:
        raise ValueError("non-finite Newton system")
    return w, z


#: Run the smoothed start's Newton solves on dense rows in one compiled call (False: the NumPy reference).
COMPILED_NEWTON = True


def _smoothed_newton(rows, X, start, m, y, cap, mu, unit, lam, w0, tol, w, base_sw):
    """The Newton solve of ``(1/m) sum_i s_i c_i h_mu(r_i) + lam/2 ||w - w0||^2`` on rows [start, start + m)."""
    solve = _fused_huber_newton
    if COMPILED_NEWTON and not rows.is_sparse:
        def solve(rows, X, start, stop, y, k, sw, lam, w0, tol, w):
            return _compiled_huber_newton(rows, start, stop, y, k, sw, lam, w0, tol, w)
    if unit:
        # c h_mu(r) = (c / mu) huber_mu(r): divide the objective by c / mu
        return solve(rows, X[:m], start, start + m, y[:m], mu, None, lam * mu / cap[0], w0, tol, w)
    sw = (np.ones(m) if base_sw is None else base_sw[:m]) * cap[:m] / mu
    return solve(rows, X[:m], start, start + m, y[:m], mu, sw, lam, w0, tol, w)


def smoothed_absolute_start(data, lam, w0, cap, target_distance, start=0, stop=None, rows=None):
    """Dual start for the absolute loss from Newton solves of its smoothing (speed only).

    Minimizes ``(1/n) sum_i s_i c_i h_mu(<x_i, w> - y_i) + lam/2 ||w - w0||^2``
    with ``h_mu`` the absolute value smoothed at width ``mu`` (``r^2 / (2 mu)``
    inside ``|r| <= mu``, ``|r| - mu / 2`` beyond: a Huber loss scaled by
    ``1 / mu``) for the widths :data:`SMOOTH_WIDTHS`, and returns
    ``beta_i = c_i clip((y_i - z_i) / mu, -1, 1)`` at the last minimizer: a
    point of the absolute loss's dual box whose duality gap is at most
    ``mu / 4`` per row within ``mu`` of its kink (and 0 for the others), so
    the distance its gap implies screens the rows tightly
    (``_working_set.certified_kinked_erm``). None when a solve fails or the
    point is not finite. The Newton steps' row work runs in compiled passes
    (:func:`_fused_huber_newton`).

    Parameters
    ----------
    data : GLMData
    lam, w0 : the problem's regularisation and centre.
    cap : ndarray of shape (stop - start,)
        The rows' slopes ``c_i`` (the kernel's ``min(1, k_i)``).
    target_distance : float
        The certified solver's target (the Newton steps stop below :data:`SMOOTH_TOL` of it).
    start, stop : int
    rows : RowData, optional
        The compiled rows of ``data`` (built when not given).
    """
    stop = data.n_samples if stop is None else stop
    if stop - start < 1 or data.n_features < 1 or data.n_features > MAX_GRAM_FEATURES:
        return None
    rows = data.row_data() if rows is None else rows
    n = stop - start
    X = data.X[start:stop]
    y = np.ascontiguousarray(data.y[start:stop])
    base_sw = None if data.sample_weight is None else data.sample_weight[start:stop]
    w0 = np.asarray(w0, dtype=float)
    with np.errstate(all="ignore"):  # no data-dependent warning: a non-finite scale just gives no start
        # at a zero centre the residuals are the targets (X 0 = 0: no pass over the rows)
        r0 = GLMData(X, y, None, data.intercept_scaling).matvec(w0) - y if np.any(w0) else -y
        scale = float(np.mean(np.abs(r0)))
    if not (np.isfinite(scale) and scale > 0):
        return None
    # equal slopes and unit weights (the common case): the loss's 1/mu moves to the regulariser
    unit = base_sw is None and bool(np.all(cap == cap[0]))
    # the smallest of the nested prefixes of the block (n / 8 or n / 64 rows, at least SMOOTH_MIN_ROWS), if any
    prefix = (_subsample_sizes(n, SMOOTH_MIN_ROWS, SMOOTH_PREFIXES) + [n])[0]
    tol, w = SMOOTH_TOL * target_distance, None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), one_blas_thread():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            # the wider widths on the smallest prefix, then the narrowest on the block
            for share in SMOOTH_WIDTHS[:-1]:
                w, _ = _smoothed_newton(rows, X, start, prefix, y, cap, share * scale, unit, lam, w0, tol, w,
                                        base_sw)
            mu = SMOOTH_WIDTHS[-1] * scale
            w, z = _smoothed_newton(rows, X, start, n, y, cap, mu, unit, lam, w0, tol, w, base_sw)
            beta = INSIDE * cap * np.clip((y - z) / mu, -1.0, 1.0)
    except (np.linalg.LinAlgError, ValueError):
        return None
    return beta if np.all(np.isfinite(beta)) else None
