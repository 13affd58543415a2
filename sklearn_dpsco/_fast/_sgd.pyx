"""First-order loops with the GIL released for the whole loop.

* `projected_subgradient` -- full-batch projected subgradient with a constant
  step, average iterate (Lowy L-D.3, Lemma D.5).
* `adagrad_certified` -- Lowy L-Alg 3: AdaGrad-norm steps with the
  deterministic stopping test ``3 D sqrt(S_t) <= alpha t``.
* `pnsgd_chunk` -- FKT F-Alg 1 steps ``[t0, t1)`` with caller-supplied noise.
* `sgd_one_pass` -- one pass of projected SGD, constant step, last and average
  iterates (FKT Phased-SGD), with a lazily scaled weight vector.

No randomness is drawn here: the only random input is the noise array that
the Python driver passes to `pnsgd_chunk`.
"""
import numpy as np

from libc.math cimport sqrt, isfinite, INFINITY

from ._rows cimport RowData
from ._losses cimport Loss
from ._objective cimport Problem, Objective, row_k, loss_gradient
from ._projections cimport (Domain, DomainData, project_domain, proj_ball,
                            domain_diameter, DOMAIN_NONE, DOMAIN_TWO_BALLS)


# --------------------------------------------------------------------------
# full-batch loops
# --------------------------------------------------------------------------

cdef struct FullBatch:
    double step          # constant step (projected_subgradient)
    Py_ssize_t n_iter    # iterations (projected_subgradient) or budget (adagrad)
    double alpha         # target accuracy (adagrad)
    bint exact_proj      # adagrad on two balls: exact instead of xi_t-inexact


cdef inline void _full_gradient(RowData rows, Loss loss, const Problem *pb,
                                const double *w, double *g) noexcept nogil:
    """g = grad P(w) = mean extended loss gradient + lam (w - w0)."""
    cdef Py_ssize_t j
    loss_gradient(rows, loss, pb, w, g)
    if pb.lam != 0.0:
        for j in range(pb.d):
            g[j] += pb.lam * (w[j] - pb.w0[j])


cdef void _projected_subgradient(RowData rows, Loss loss, const Problem *pb,
                                 const Domain *dom, const FullBatch *st,
                                 double *w, double *g, double *avg) noexcept nogil:
    cdef Py_ssize_t t, j, d = pb.d
    for j in range(d):
        avg[j] = 0.0
    for t in range(st.n_iter):
        for j in range(d):
            avg[j] += w[j]
        _full_gradient(rows, loss, pb, w, g)
        for j in range(d):
            w[j] -= st.step * g[j]
        project_domain(dom, w, dom.xi)
    for j in range(d):
        avg[j] /= <double> st.n_iter


cdef Py_ssize_t _adagrad(RowData rows, Loss loss, const Problem *pb,
                         const Domain *dom, const FullBatch *st, double *x,
                         double *g, double *xsum, bint *certified) noexcept nogil:
    """L-Alg 3; returns the iteration count t, leaves the answer in xsum."""
    cdef Py_ssize_t t, j, d = pb.d
    cdef double D = domain_diameter(dom), S = 0.0, gn2, eta, xi
    for j in range(d):
        xsum[j] = 0.0
    certified[0] = False
    for t in range(1, st.n_iter + 1):
        _full_gradient(rows, loss, pb, x, g)
        for j in range(d):
            xsum[j] += x[j]
        gn2 = 0.0
        for j in range(d):
            gn2 += g[j] * g[j]
        if gn2 == 0.0:
            # 0 is a subgradient: x_t is an exact minimiser
            for j in range(d):
                xsum[j] = x[j]
            certified[0] = True
            return t
        S += gn2
        eta = D / sqrt(S)
        xi = D if D < st.alpha * eta / (6.0 * D) else st.alpha * eta / (6.0 * D)
        if st.exact_proj:
            xi = 0.0
        for j in range(d):
            x[j] -= eta * g[j]
        project_domain(dom, x, xi)
        # Why: Lowy Prop 2.9/C.5 -- the regret of AdaGrad-norm with
        # xi_t-inexact projections is <= 3 D sqrt(S_t), so the average
        # iterate is an alpha-minimiser once 3 D sqrt(S_t) <= alpha t.
        if 3.0 * D * sqrt(S) <= st.alpha * <double> t:
            for j in range(d):
                xsum[j] /= <double> t
            certified[0] = True
            return t
    t = st.n_iter
    if t > 0:
        for j in range(d):
            xsum[j] /= <double> t
    return t


def _start_point(DomainData dom, Objective obj, w_init):
    w = np.array(obj.w0 if w_init is None else w_init, dtype=np.float64, copy=True)
    if w.shape != (obj.pb.d,):
        raise ValueError(f"w_init must have shape ({obj.pb.d},), got {w.shape}")
    return dom.project(w, 0.0)


def projected_subgradient(RowData rows not None, y, Loss loss not None, double lam,
                          w0=None, *, double step, Py_ssize_t n_iter, w_init=None,
                          clip=None, sample_weight=None, Py_ssize_t start=0, stop=None,
                          ball_center=None, ball_radius=None, local_center=None,
                          local_radius=None, double xi=0.0):
    """Full-batch projected subgradient method with a constant step.

    ``w_1 = Pi_K(w_init)``, ``w_{t+1} = Pi_K(w_t - step * g_t)`` with
    ``g_t = grad P(w_t)`` (mean extended loss gradient plus
    ``lam (w_t - w0)``); returns ``(1/T) sum_{t=1}^T w_t`` (Lowy Lemma D.5).

    Parameters
    ----------
    rows : RowData
    y : ndarray of shape (n_samples,)
    loss : Loss
    lam : float, >= 0
    w0 : ndarray of shape (n_features,), default=None
        Regularisation centre (zeros when None); also the start when
        ``w_init`` is None.
    step : float, > 0
    n_iter : int, >= 1
    w_init : ndarray of shape (n_features,), default=None
    clip, sample_weight, start, stop
        As in `certified_erm`.
    ball_center, ball_radius : default=None
        The domain ``W = B(ball_center, ball_radius)`` (None: R^d).
    local_center, local_radius : default=None
        Lowy's localisation ball: the domain becomes ``W cap B(local_center,
        local_radius)``.
    xi : float, default=0.0
        Two balls only: > 0 uses the xi-inexact projection (L-Lemma 2.8),
        0 the exact projection.

    Returns
    -------
    w_avg : ndarray of shape (n_features,)
    """
    cdef Objective obj = Objective(rows, y, loss, lam, w0, clip, sample_weight, start, stop)
    cdef DomainData dom = DomainData(rows.n_features, ball_center, ball_radius,
                                     local_center, local_radius, xi)
    cdef FullBatch st
    if not (step > 0.0) or not isfinite(step):
        raise ValueError(f"step must be finite and > 0, got {step!r}")
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    st.step = step
    st.n_iter = n_iter
    w = _start_point(dom, obj, w_init)
    g = np.zeros_like(w)
    avg = np.zeros_like(w)
    cdef double[::1] wv = w, gv = g, av = avg
    if w.shape[0] > 0:
        with nogil:
            _projected_subgradient(rows, loss, &obj.pb, &dom.dom, &st, &wv[0], &gv[0], &av[0])
    return avg


def adagrad_certified(RowData rows not None, y, Loss loss not None, double lam, w0=None, *,
                      double alpha, Py_ssize_t max_iter, ball_center, ball_radius,
                      local_center=None, local_radius=None, w_init=None, clip=None,
                      sample_weight=None, Py_ssize_t start=0, stop=None,
                      bint exact_projection=False):
    """Lowy's Adaptive-Inexact-ProjSubgrad (doc/algorithms.rst, L-Alg 3) on ``P``.

    Over ``K = B(ball_center, ball_radius)`` (or ``K = W cap B(local_center,
    local_radius)``), with ``D = 2 * (smallest radius)``: ``x_1 = Pi_K(w_init)``;
    for ``t = 1, 2, ...``: ``g_t = grad P(x_t)`` (return ``x_t`` if 0),
    ``S_t = sum_{s<=t} ||g_s||^2``, ``eta_t = D / sqrt(S_t)``,
    ``xi_t = min(D, alpha eta_t / (6 D))``, ``x_{t+1} = Pi~^{xi_t}_K(x_t - eta_t g_t)``;
    stop with the average ``(1/t) sum_{s<=t} x_s`` once
    ``3 D sqrt(S_t) <= alpha t``.

    Parameters
    ----------
    rows, y, loss, lam, w0
        The objective ``P`` as in `certified_erm`.
    alpha : float, > 0
        Target accuracy ``P(x_bar) - min_K P <= alpha``.
    max_iter : int, >= 1
    ball_center, ball_radius
        The ball ``W`` (required: the method needs a bounded domain).
    local_center, local_radius : default=None
        Localisation ball; the projection is then the xi_t-inexact one of
        L-Lemma 2.8 (or exact with ``exact_projection=True``).
    w_init : default=None
        Start (projected onto K); ``w0`` when None.
    clip, sample_weight, start, stop
        As in `certified_erm`.
    exact_projection : bool, default=False

    Returns
    -------
    w_avg : ndarray of shape (n_features,)
    n_iter : int
        Iterations used.
    certified : bool
        Whether the stopping test (or a zero subgradient) was met within
        ``max_iter``. When False, ``w_avg`` carries NO accuracy guarantee.
    """
    cdef Objective obj = Objective(rows, y, loss, lam, w0, clip, sample_weight, start, stop)
    cdef DomainData dom = DomainData(rows.n_features, ball_center, ball_radius,
                                     local_center, local_radius, 0.0)
    cdef FullBatch st
    cdef bint certified = False
    cdef Py_ssize_t t = 0
    if not (alpha > 0.0) or not isfinite(alpha):
        raise ValueError(f"alpha must be finite and > 0, got {alpha!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    st.alpha = alpha
    st.n_iter = max_iter
    st.exact_proj = exact_projection
    x = _start_point(dom, obj, w_init)
    g = np.zeros_like(x)
    xsum = np.zeros_like(x)
    cdef double[::1] xv = x, gv = g, sv = xsum
    if x.shape[0] > 0:
        with nogil:
            t = _adagrad(rows, loss, &obj.pb, &dom.dom, &st, &xv[0], &gv[0], &sv[0], &certified)
    else:
        t, certified = 1, True
    return xsum, int(t), bool(certified)


# --------------------------------------------------------------------------
# stochastic loops
# --------------------------------------------------------------------------

cdef struct NoisyChunk:
    const double *steps         # eta_t, indexed by the global step t
    const Py_ssize_t *batch     # batch t is rows [batch[t], batch[t + 1])
    const double *noise         # row t - t0 is xi_t (length d)
    Py_ssize_t t0
    Py_ssize_t t1


cdef void _pnsgd(RowData rows, Loss loss, const Problem *pb, const Domain *dom,
                 const NoisyChunk *ch, double *w, double *g) noexcept nogil:
    cdef Py_ssize_t t, i, j, d = pb.d, lo, hi
    cdef double c, eta
    cdef const double *xi_t
    for t in range(ch.t0, ch.t1):
        lo = ch.batch[t]
        hi = ch.batch[t + 1]
        for j in range(d):
            g[j] = 0.0
        for i in range(lo, hi):
            c = loss.cy_ext_deriv(rows.dot(i, w), pb.y[i], row_k(rows, i, pb))
            if c != 0.0:
                rows.axpy(i, c, g)   # every row sees the same w_{t-1}
        c = 1.0 / <double> (hi - lo) if hi > lo else 0.0
        eta = ch.steps[t]
        xi_t = ch.noise + (t - ch.t0) * d
        for j in range(d):
            w[j] -= eta * (c * g[j] + xi_t[j])
        project_domain(dom, w, 0.0)


def pnsgd_chunk(RowData rows not None, y, Loss loss not None, w, steps, batch_starts,
                noise, Py_ssize_t t0, Py_ssize_t t1, *, clip=None, ball_center=None,
                ball_radius=None):
    """FKT projected noisy SGD (doc/algorithms.rst, F-Alg 1), steps ``t in [t0, t1)``.

    ``w <- Pi_K(w - steps[t] (grad F_t(w) + noise[t - t0]))`` where ``F_t`` is
    the mean extended loss over rows ``[batch_starts[t], batch_starts[t+1])``
    and ``K = B(ball_center, ball_radius)`` (R^d when None). The Python
    driver draws the noise in chunks; nothing random happens here.

    Parameters
    ----------
    rows, y, loss
    w : ndarray of shape (n_features,), float64, C-contiguous, writable
        Updated in place.
    steps : ndarray of shape (>= t1,)
        Step sizes indexed by the global step t.
    batch_starts : ndarray of shape (>= t1 + 1,)
        Non-decreasing row offsets within ``[0, n_samples]``.
    noise : ndarray of shape (t1 - t0, n_features)
        Row ``t - t0`` is ``xi_t``.
    t0, t1 : int
    clip : float or None, default=None
    ball_center, ball_radius : default=None

    Returns
    -------
    None
    """
    cdef Objective obj = Objective(rows, y, loss, 0.0, None, clip)
    cdef DomainData dom = DomainData(rows.n_features, ball_center, ball_radius)
    cdef Py_ssize_t d = rows.n_features
    cdef NoisyChunk ch
    if not (isinstance(w, np.ndarray) and w.dtype == np.float64 and w.flags.c_contiguous
            and w.flags.writeable and w.shape == (d,)):
        raise ValueError(f"w must be a writable C-contiguous float64 array of shape ({d},)")
    if not (0 <= t0 <= t1):
        raise ValueError(f"need 0 <= t0 <= t1, got {t0}, {t1}")
    steps_a = np.ascontiguousarray(steps, dtype=np.float64)
    batch_a = np.ascontiguousarray(batch_starts, dtype=np.intp)
    noise_a = np.ascontiguousarray(noise, dtype=np.float64)
    if steps_a.ndim != 1 or steps_a.shape[0] < t1 or not np.all(np.isfinite(steps_a[t0:t1])):
        raise ValueError("steps must be finite with at least t1 entries")
    if batch_a.ndim != 1 or batch_a.shape[0] < t1 + 1:
        raise ValueError("batch_starts needs at least t1 + 1 entries")
    b = batch_a[t0:t1 + 1]
    if np.any(np.diff(b) < 0) or b[0] < 0 or b[b.shape[0] - 1] > rows.n_samples:
        raise ValueError("batch_starts must be non-decreasing within [0, n_samples]")
    if noise_a.shape != (t1 - t0, d):
        raise ValueError(f"noise must have shape ({t1 - t0}, {d}), got {noise_a.shape}")
    if t1 == t0 or d == 0:
        return None
    cdef double[::1] wv = w
    cdef const double[::1] sv = steps_a
    cdef const Py_ssize_t[::1] bv = batch_a
    cdef const double[:, ::1] nv = noise_a
    g = np.zeros(d)
    cdef double[::1] gv = g
    ch.steps = &sv[0]
    ch.batch = &bv[0]
    ch.noise = &nv[0, 0]
    ch.t0 = t0
    ch.t1 = t1
    with nogil:
        _pnsgd(rows, loss, &obj.pb, &dom.dom, &ch, &wv[0], &gv[0])
    return None


cdef struct ScaledVector:
    # Lazily scaled weight vector (doc/design.rst, convention 4): w = c + scale * wv, with
    # the tracked squared norm ||w - c||^2, so L2 shrinkage towards c and the
    # projection onto B(c, R) are O(1). Running sum for the average:
    # sum_t (w_t - c) = aw + avg_b * wv.
    double *wv
    double *aw
    double scale
    double sq_norm
    double avg_b
    Py_ssize_t d


cdef inline void _fold(ScaledVector *v, bint average) noexcept nogil:
    """Materialise the scale (and the running sum) in O(d)."""
    cdef Py_ssize_t j
    cdef double s2 = 0.0
    for j in range(v.d):
        if average:
            v.aw[j] += v.avg_b * v.wv[j]
        v.wv[j] *= v.scale
        s2 += v.wv[j] * v.wv[j]
    v.avg_b = 0.0
    v.scale = 1.0
    v.sq_norm = s2


cdef struct OnePass:
    double step
    double alpha        # L2 shrinkage towards the centre
    bint has_ball
    double R
    const double *c     # centre (ball centre, or NULL for the origin)
    bint average


cdef void _sgd_one_pass(RowData rows, Loss loss, const Problem *pb, const OnePass *st,
                        ScaledVector *v) noexcept nogil:
    cdef Py_ssize_t i, since_fold = 0
    cdef double xwv, z, g, a, f, shrink = 1.0 - st.step * st.alpha
    for i in range(pb.start, pb.stop):
        xwv = rows.dot(i, v.wv)
        z = v.scale * xwv
        if st.c != NULL:
            z += rows.dot(i, st.c)
        g = loss.cy_ext_deriv(z, pb.y[i], row_k(rows, i, pb))
        if st.alpha != 0.0:
            v.scale *= shrink
            v.sq_norm *= shrink * shrink
        if g != 0.0:
            # w - c <- (w - c) + a x_i; <x_i, w - c> = scale * xwv after shrink
            a = -st.step * g
            v.sq_norm += 2.0 * a * v.scale * xwv + a * a * rows.sq_norm(i)
            if v.sq_norm < 0.0:
                v.sq_norm = 0.0
            rows.axpy(i, a / v.scale, v.wv)
            if st.average:
                rows.axpy(i, -v.avg_b * a / v.scale, v.aw)
        if st.has_ball and v.sq_norm > st.R * st.R:
            f = st.R / sqrt(v.sq_norm)
            v.scale *= f
            v.sq_norm = st.R * st.R
        v.avg_b += v.scale
        since_fold += 1
        # Fold every d steps (amortised O(1)) and whenever the scale gets
        # small, so rounding in wv / aw stays at the level of plain SGD.
        if since_fold >= v.d or v.scale < 1e-3:
            _fold(v, st.average)
            since_fold = 0
    _fold(v, st.average)


def sgd_one_pass(RowData rows not None, y, Loss loss not None, w_init, double step, *,
                 clip=None, double alpha=0.0, Py_ssize_t start=0, stop=None,
                 ball_center=None, ball_radius=None, bint average=True):
    """One pass of projected SGD with a constant step (FKT Phased-SGD).

    ``u_0 = Pi_K(w_init)``; for the rows ``i = start, ..., stop - 1`` in order:
    ``u <- Pi_K(u - step (psi_i'(<x_i, u>) x_i + alpha (u - c)))`` with
    ``K = B(c, R)`` (R^d and ``c = 0`` when no ball is given).

    Parameters
    ----------
    rows, y, loss
    w_init : ndarray of shape (n_features,)
    step : float, > 0
    clip : float or None, default=None
    alpha : float, default=0.0
        L2 shrinkage towards the ball centre (origin without a ball);
        ``step * alpha < 1``.
    start, stop : int
    ball_center, ball_radius : default=None
    average : bool, default=True
        Also maintain the average iterate.

    Returns
    -------
    last : ndarray of shape (n_features,)
    average : ndarray of shape (n_features,) or None
        ``(1/m) sum_{t=1}^m u_t`` over the ``m = stop - start`` updates
        (``u_0`` when ``m = 0``); None when ``average=False``.
    """
    cdef Objective obj = Objective(rows, y, loss, 0.0, None, clip, None, start, stop)
    cdef DomainData dom = DomainData(rows.n_features, ball_center, ball_radius)
    cdef Py_ssize_t d = rows.n_features, m = obj.pb.stop - obj.pb.start
    cdef OnePass st
    cdef ScaledVector v
    cdef const double[::1] cv
    if not (step > 0.0) or not isfinite(step):
        raise ValueError(f"step must be finite and > 0, got {step!r}")
    if not (alpha >= 0.0) or not (step * alpha < 1.0):
        raise ValueError(f"need alpha >= 0 and step * alpha < 1, got alpha={alpha!r}")
    w = _start_point(dom, obj, w_init)
    c = np.zeros(d) if ball_center is None else np.ascontiguousarray(ball_center, dtype=np.float64)
    st.step = step
    st.alpha = alpha
    st.has_ball = ball_center is not None
    st.R = dom.dom.r1 if st.has_ball else INFINITY
    st.average = average
    st.c = NULL
    if st.has_ball and d > 0 and np.any(c != 0.0):
        cv = c
        st.c = &cv[0]
    wv = w - c
    aw = np.zeros(d)
    cdef double[::1] wvv = wv, awv = aw
    v.wv = &wvv[0] if d > 0 else NULL
    v.aw = &awv[0] if d > 0 else NULL
    v.scale = 1.0
    v.sq_norm = float(wv @ wv)
    v.avg_b = 0.0
    v.d = d
    if d > 0 and m > 0:
        with nogil:
            _sgd_one_pass(rows, loss, &obj.pb, &st, &v)
    last = c + wv
    if not average:
        return last, None
    if m == 0:
        return last, last.copy()
    return last, c + aw / m
