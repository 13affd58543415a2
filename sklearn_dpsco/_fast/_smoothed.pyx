"""Fused passes of the Huber (smoothed absolute) Newton screen (speed only, never privacy).

``_solvers/_optim/_warm_start.smoothed_absolute_start`` minimises

    F(w) = (1/n) sum_{i in [start, stop)} s_i huber_k(<x_i, w> - y_i) + (lam/2) ||w - w0||^2

by damped semismooth Newton to pick a screening point for the absolute loss.
With NumPy and BLAS each step read the block twice (``X p`` and ``X^T g``) and
made a dozen elementwise passes over n-vectors. :func:`huber_step` does one
step's row work in one pass: per row the product with the direction, the
Huber pieces at the full step, the loss sum, the row's contribution to the
gradient (while the row is still in cache) and the rows that change piece.
The passes read rows through :class:`RowData` (dense or CSR, virtual
intercept column); dense rows use the shared four-accumulator dot product
inline. Sums are plain (no compensation): the result only chooses which rows
are screened, the certificate decides every release.

The working-set screen (``_working_set.working_set_dual``) has three passes
here too: :func:`screen_rows` (residuals, the set, the bound dual values),
:func:`screen_centre` (the screened rows at their bound and their shift of
the centre) and :func:`screen_check` (screened rows on the wrong side at the
reduced solution). Unlike the Newton's, they compute exactly the floats of
the NumPy formulas they replaced (the same operations per row, the same row
products added in the same order), so the screen picks the same rows.
"""
import numpy as np

from libc.math cimport fabs, INFINITY
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from ._dot cimport dense_axpy4, dense_dot
from ._rows cimport RowData


cdef inline double _clip(double r, double k) noexcept nogil:
    # min and max as comparisons (minsd / maxsd): libm's fmin / fmax are calls
    r = r if r < k else k
    return r if r > -k else -k


cdef struct Pass:
    const double *y
    const double *sw       # NULL: unit weights
    const double *p        # NULL: dz is given
    const double *z
    const unsigned char *h  # NULL: no change is recorded
    double *dz
    double *z_new
    unsigned char *h_new
    double *grad
    Py_ssize_t *enter
    Py_ssize_t *leave
    Py_ssize_t n_enter
    Py_ssize_t n_leave
    double k
    double t


cdef inline double _piece(Pass *ps, Py_ssize_t li, double dzi) noexcept nogil:
    """Row ``li``'s pieces at ``z + t dz``: stores them, returns ``s g`` (its gradient coefficient)."""
    cdef double zi = ps.z[li] + ps.t * dzi
    cdef double r = zi - ps.y[li]
    cdef double g = _clip(r, ps.k)  # branch-free: neighbouring rows' pieces are unpredictable
    cdef unsigned char hn = g == r
    ps.z_new[li] = zi
    ps.h_new[li] = hn
    if ps.h != NULL and hn != ps.h[li]:
        if hn:
            ps.enter[ps.n_enter] = li
            ps.n_enter += 1
        else:
            ps.leave[ps.n_leave] = li
            ps.n_leave += 1
    return g if ps.sw == NULL else ps.sw[li] * g


cdef inline double _value(Pass *ps, Py_ssize_t li) noexcept nogil:
    """Row ``li``'s weighted loss at its stored ``z_new``."""
    cdef double r = ps.z_new[li] - ps.y[li]
    cdef double g = _clip(r, ps.k)
    cdef double v = g * (r - 0.5 * g)
    return v if ps.sw == NULL else ps.sw[li] * v


cdef double _dense_pass(RowData rows, Py_ssize_t start, Py_ssize_t n, Pass *ps) noexcept nogil:
    # four rows at a time: four independent products, and each gradient entry gets the four rows'
    # terms in one update (a row at a time, every entry is a chain of dependent additions across rows)
    cdef Py_ssize_t li = 0, j, m = rows.n_raw
    cdef const double *x0
    cdef const double *x1
    cdef const double *x2
    cdef const double *x3
    cdef double a0, a1, a2, a3, c = rows.intercept_scaling
    cdef double v0 = 0.0, v1 = 0.0, v2 = 0.0, v3 = 0.0, pc = 0.0
    cdef double *g = ps.grad
    if ps.p != NULL and rows.has_intercept:
        pc = c * ps.p[m]
    while li + 4 <= n:
        x0 = rows.dense + (start + li) * m
        x1 = x0 + m
        x2 = x1 + m
        x3 = x2 + m
        if ps.p != NULL:
            ps.dz[li] = dense_dot(x0, ps.p, m) + pc
            ps.dz[li + 1] = dense_dot(x1, ps.p, m) + pc
            ps.dz[li + 2] = dense_dot(x2, ps.p, m) + pc
            ps.dz[li + 3] = dense_dot(x3, ps.p, m) + pc
        a0 = _piece(ps, li, ps.dz[li])
        a1 = _piece(ps, li + 1, ps.dz[li + 1])
        a2 = _piece(ps, li + 2, ps.dz[li + 2])
        a3 = _piece(ps, li + 3, ps.dz[li + 3])
        v0 += _value(ps, li)
        v1 += _value(ps, li + 1)
        v2 += _value(ps, li + 2)
        v3 += _value(ps, li + 3)
        for j in range(m):
            g[j] += (a0 * x0[j] + a1 * x1[j]) + (a2 * x2[j] + a3 * x3[j])
        if rows.has_intercept:
            g[m] += c * ((a0 + a1) + (a2 + a3))
        li += 4
    while li < n:
        x0 = rows.dense + (start + li) * m
        if ps.p != NULL:
            ps.dz[li] = dense_dot(x0, ps.p, m) + pc
        a0 = _piece(ps, li, ps.dz[li])
        v0 += _value(ps, li)
        for j in range(m):
            g[j] += a0 * x0[j]
        if rows.has_intercept:
            g[m] += c * a0
        li += 1
    return (v0 + v1) + (v2 + v3)


cdef double _sparse_pass(RowData rows, Py_ssize_t start, Py_ssize_t n, Pass *ps) noexcept nogil:
    cdef Py_ssize_t li, n4 = n - n % 4
    cdef double a
    cdef double v[4]
    v[0] = v[1] = v[2] = v[3] = 0.0
    for li in range(n):
        if ps.p != NULL:
            ps.dz[li] = rows.dot(start + li, ps.p)
        a = _piece(ps, li, ps.dz[li])
        v[li & 3 if li < n4 else 0] += _value(ps, li)  # the dense pass's four partial sums
        if a != 0.0:
            rows.axpy(start + li, a, ps.grad)
    return (v[0] + v[1]) + (v[2] + v[3])


def huber_step(RowData rows, Py_ssize_t start, Py_ssize_t stop, const double[::1] y, double k, sw,
               p, const double[::1] z, double t, double[::1] dz, double[::1] z_new, const unsigned char[::1] h,
               unsigned char[::1] h_new, double[::1] grad, Py_ssize_t[::1] enter, Py_ssize_t[::1] leave):
    """One pass over rows [start, stop): the Huber pieces at ``z + t dz``, their loss sum and gradient.

    With a direction ``p`` (length ``n_features``) the pass first computes
    ``dz_i = <x_i, p>`` into ``dz``; with ``p=None`` it reads ``dz`` as given
    (a backtracked step). For each row ``r = z_i + t dz_i - y_i``,
    ``g = clip(r, -k, k)``: writes ``z_new_i``, ``h_new_i = (g == r)`` and
    adds ``s_i g x_i`` to ``grad`` (zeroed first). Rows entering the quadratic
    piece (``h_new_i`` set, ``h_i`` not) go to ``enter``, rows leaving it to
    ``leave`` (local indices). ``sw=None`` means unit weights. ``h=None``
    (first evaluation) records no change. Returns
    ``(sum_i s_i g (r - g / 2), n_enter, n_leave)``.
    """
    cdef Py_ssize_t n = stop - start, j
    cdef Py_ssize_t d = rows.n_features
    cdef const double[::1] sw_view
    cdef const double[::1] p_view
    cdef Pass ps
    cdef double total
    if not (0 <= start <= stop <= rows.n_samples):
        raise ValueError("row range out of bounds")
    if y.shape[0] < n or z.shape[0] < n or dz.shape[0] < n or z_new.shape[0] < n or h_new.shape[0] < n \
            or enter.shape[0] < n or leave.shape[0] < n or grad.shape[0] != d:
        raise ValueError("buffer too short")
    for j in range(d):
        grad[j] = 0.0
    if n == 0:
        return 0.0, 0, 0
    ps.sw = NULL
    ps.p = NULL
    ps.h = NULL
    if sw is not None:
        sw_view = sw
        if sw_view.shape[0] < n:
            raise ValueError("buffer too short")
        ps.sw = &sw_view[0]
    if p is not None:
        p_view = p
        if p_view.shape[0] != d or d == 0:
            raise ValueError("direction of the wrong length")
        ps.p = &p_view[0]
    if h is not None:
        if h.shape[0] < n:
            raise ValueError("buffer too short")
        ps.h = &h[0]
    ps.y, ps.z, ps.dz, ps.z_new, ps.h_new = &y[0], &z[0], &dz[0], &z_new[0], &h_new[0]
    ps.grad, ps.enter, ps.leave = &grad[0], &enter[0], &leave[0]
    ps.n_enter = ps.n_leave = 0
    ps.k, ps.t = k, t
    with nogil:
        if rows.is_sparse:
            total = _sparse_pass(rows, start, n, &ps)
        else:
            total = _dense_pass(rows, start, n, &ps)
    return total, ps.n_enter, ps.n_leave


def huber_value(const double[::1] y, double k, sw, const double[::1] z, const double[::1] dz, double t):
    """``sum_i s_i huber_k(z_i + t dz_i - y_i)`` (no row is read: a line-search trial), summed as
    :func:`huber_step` sums it (the same float for the same step)."""
    cdef Py_ssize_t n = z.shape[0], li, n4 = z.shape[0] - z.shape[0] % 4
    cdef const double *sp = NULL
    cdef const double[::1] sw_view
    cdef double r, g, s
    cdef double v[4]
    v[0] = v[1] = v[2] = v[3] = 0.0
    if y.shape[0] < n or dz.shape[0] < n:
        raise ValueError("buffer too short")
    if sw is not None:
        sw_view = sw
        if sw_view.shape[0] < n:
            raise ValueError("buffer too short")
        sp = &sw_view[0] if n > 0 else NULL
    with nogil:
        for li in range(n):
            r = (z[li] + t * dz[li]) - y[li]
            g = _clip(r, k)
            s = 1.0 if sp == NULL else sp[li]
            v[li & 3 if li < n4 else 0] += s * (g * (r - 0.5 * g))  # the passes' four partial sums
    return (v[0] + v[1]) + (v[2] + v[3])


# ---- working-set screen passes (``_solvers/_optim/_working_set.working_set_dual``) ----------------------
#
# The screen's elementwise NumPy passes over the block (residuals, the set, the bound dual values, the
# screened rows' shift of the centre, the check of their sides) fused into one pass each. The same
# IEEE operations per row in the same order, and the same row products (``RowData.dot`` / ``axpy`` in
# increasing row order, zero coefficients skipped, as ``matvec`` / ``rmatvec``), so the same floats.


cdef inline double _row_dot(RowData rows, Py_ssize_t i, const double *w) noexcept nogil:
    # RowData.dot, its dense path inline (a call through the class's table per row costs more than the
    # row's products): the same four-accumulator sum, then the intercept term, so the same float
    cdef double z
    if rows.is_sparse:
        return rows.dot(i, w)
    z = dense_dot(rows.dense + i * rows.n_raw, w, rows.n_raw)
    if rows.has_intercept:
        z += rows.intercept_scaling * w[rows.n_raw]
    return z


cdef inline void _row_axpy(RowData rows, Py_ssize_t i, double a, double *w) noexcept nogil:
    # RowData.axpy, its dense path inline: the same products added in the same order
    cdef Py_ssize_t j
    cdef const double *x
    if rows.is_sparse:
        rows.axpy(i, a, w)
        return
    x = rows.dense + i * rows.n_raw
    for j in range(rows.n_raw):
        w[j] += a * x[j]
    if rows.has_intercept:
        w[rows.n_raw] += a * rows.intercept_scaling


cdef inline double _kink(bint hinge, double z, double y) noexcept nogil:
    # signed distance to the kink: hinge y z - 1, absolute z - y (_working_set._kink_residual)
    return y * z - 1.0 if hinge else z - y


cdef const double *_weights(sw, Py_ssize_t n) except? NULL:
    cdef const double[::1] view
    if sw is None:
        return NULL
    view = sw
    if view.shape[0] != n:
        raise ValueError("sample weights of the wrong length")
    return &view[0] if n > 0 else NULL


cdef inline double _negated_unless_below(double c, double ei) noexcept nogil:
    # ``c if ei < 0.0 else -c`` without a branch (the side of a row is a coin flip to the predictor): C's
    # negation flips the sign bit only, so flipping it by the comparison gives the same floats (0, NaN too)
    cdef uint64_t u
    memcpy(&u, &c, 8)
    u ^= (<uint64_t>(not (ei < 0.0))) << 63
    memcpy(&c, &u, 8)
    return c


cdef inline double _kept_if_below(double t, double ei) noexcept nogil:
    # ``t if ei < 0.0 else 0.0`` without a branch: the bits of t, or all cleared (+0.0)
    cdef uint64_t u
    memcpy(&u, &t, 8)
    u &= -(<uint64_t>(ei < 0.0))
    memcpy(&t, &u, 8)
    return t


def screen_rows(RowData rows, Py_ssize_t start, Py_ssize_t stop, const double[::1] z, const double[::1] y, sw,
                double threshold, bint hinge, const double[::1] cap, double[::1] e, unsigned char[::1] in_set,
                double[::1] bound, double limit=INFINITY):
    """The working set at the products ``z`` of rows [start, stop) (local arrays of length ``stop - start``).

    ``e_i`` the kink residual of ``z_i``; ``in_set_i = |e_i| <= ||x_i|| threshold``
    and ``s_i > 0`` (``sw=None``: unit weights); ``bound_i`` the dual value of
    the row's side (hinge: ``c_i y_i`` below the kink, else 0; absolute:
    ``c_i`` below, else ``-c_i``). Returns the size of the set.

    ``limit``: the pass stops as soon as the set holds more than ``limit`` rows and returns that count
    (above ``limit``; the arrays are then filled up to that row only): a caller that drops a set above
    ``limit`` reads nothing else. The same floats, set and count as without it whenever the set is at
    most ``limit`` rows.
    """
    cdef Py_ssize_t n = stop - start, li, count = 0
    cdef const double *s
    cdef const double *nrm
    cdef double ei
    cdef unsigned char inside
    if not (0 <= start <= stop <= rows.n_samples):
        raise ValueError("row range out of bounds")
    if z.shape[0] != n or y.shape[0] != n or cap.shape[0] != n or e.shape[0] != n or in_set.shape[0] != n \
            or bound.shape[0] != n:
        raise ValueError("arrays of the wrong length")
    s = _weights(sw, n)
    nrm = rows.norms + start
    with nogil:
        for li in range(n):
            ei = _kink(hinge, z[li], y[li])
            e[li] = ei
            # without branches (the sides are coin flips to the predictor): the same comparisons and values
            inside = (fabs(ei) <= nrm[li] * threshold) & (s == NULL or s[li] > 0.0)
            in_set[li] = inside
            count += inside
            if hinge:
                bound[li] = _kept_if_below(cap[li] * y[li], ei)
            else:
                bound[li] = _negated_unless_below(cap[li], ei)
            if count > limit:
                break
    return count


def screen_centre(RowData rows, Py_ssize_t start, Py_ssize_t stop, const unsigned char[::1] in_set,
                  double[::1] beta, const double[::1] bound, sw, double lam_n, double[::1] out):
    """The screened rows at their bound: ``beta_i = bound_i`` outside the set, and
    ``out += sum_{i not in set} (s_i beta_i / lam_n) x_i`` (``rmatvec`` of those coefficients)."""
    cdef Py_ssize_t n = stop - start, li
    cdef const double *s
    cdef double b, a
    if not (0 <= start <= stop <= rows.n_samples):
        raise ValueError("row range out of bounds")
    if in_set.shape[0] != n or beta.shape[0] != n or bound.shape[0] != n or out.shape[0] != rows.n_features:
        raise ValueError("arrays of the wrong length")
    cdef double *o = &out[0] if rows.n_features > 0 else NULL
    s = _weights(sw, n)
    cdef Py_ssize_t q = 0
    cdef Py_ssize_t rq[4]
    cdef double aq[4]
    with nogil:
        for li in range(n):
            if in_set[li]:
                continue
            b = bound[li]
            beta[li] = b
            a = (b if s == NULL else s[li] * b) / lam_n
            if a != 0.0 and o != NULL:
                if rows.is_sparse:
                    rows.axpy(start + li, a, o)
                    continue
                rq[q] = start + li
                aq[q] = a
                q += 1
                if q == 4:
                    dense_axpy4(rows.dense, rows.n_raw, rq, aq, o, rows.has_intercept, rows.intercept_scaling)
                    q = 0
        for li in range(q):
            _row_axpy(rows, rq[li], aq[li], o)


def screen_check(RowData rows, Py_ssize_t start, Py_ssize_t stop, const double[::1] w, const double[::1] y, sw,
                 bint hinge, const double[::1] e, unsigned char[::1] in_set):
    """Screened rows (outside the set, ``s_i > 0``) whose kink residual at ``w`` has the other sign than
    ``e_i``: they join the set. Returns how many joined."""
    cdef Py_ssize_t n = stop - start, li, count = 0
    cdef const double *s
    cdef double ei, e2
    cdef unsigned char wrong
    if not (0 <= start <= stop <= rows.n_samples):
        raise ValueError("row range out of bounds")
    if y.shape[0] != n or e.shape[0] != n or in_set.shape[0] != n or w.shape[0] != rows.n_features:
        raise ValueError("arrays of the wrong length")
    cdef const double *wp = &w[0] if rows.n_features > 0 else NULL
    s = _weights(sw, n)
    with nogil:
        for li in range(n):
            if in_set[li] or not (s == NULL or s[li] > 0.0):
                continue
            ei = e[li]
            e2 = _kink(hinge, _row_dot(rows, start + li, wp) if wp != NULL else 0.0, y[li])
            # without a branch: the side of a row's residual is a coin flip to the predictor
            wrong = ((ei > 0.0) & (e2 < 0.0)) | ((ei < 0.0) & (e2 > 0.0))
            in_set[li] = wrong
            count += wrong
    return count


def absolute_gap_terms(const double[:] z, const double[:] y, const double[:] cap, const double[:] beta,
                       double[::1] out):
    """``out_i = cap_i |z_i - y_i| + beta_i (z_i - y_i)``: the absolute loss's duality-gap terms of the
    screen (``_working_set.screening_point``), NumPy's ``cap * np.abs(z - y) + beta * (z - y)`` entry by
    entry (the same operations in the same order: the same floats), in one pass."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double r
    if y.shape[0] != n or cap.shape[0] != n or beta.shape[0] != n or out.shape[0] != n:
        raise ValueError("arrays of the wrong length")
    with nogil:
        for i in range(n):
            r = z[i] - y[i]
            out[i] = cap[i] * fabs(r) + beta[i] * r
    return out


def gram_update(double[:, ::1] G, const double[:, ::1] M, v, double s, double corner, double n, bint subtract):
    """``G += A`` (``G -= A`` when ``subtract``) for the Newton's dense Gram matrix ``A`` of a set of rows, in
    one call: ``A[:p, :p] = M / n`` (``M = Xi^T (h Xi)``, BLAS), with the intercept column (``v = Xi^T h``,
    BLAS; ``s > 0``) ``A[p, :p] = A[:p, p] = (v s) / n`` and ``A[p, p] = corner / n``.

    Entry by entry the roundings of ``_warm_start._dense_gram``'s ``v *= s``, ``A /= n`` and then ``G += A``
    (a product, a division, an addition or subtraction), so the same floats, without its temporary matrix
    and the five NumPy calls around the products (speed only: the Newton picks a screening point).
    """
    cdef Py_ssize_t p = M.shape[0], d = G.shape[0], i, j
    cdef const double[::1] vv
    cdef double a
    if M.shape[1] != p or G.shape[1] != d or d != p + (1 if s > 0 else 0):
        raise ValueError("matrices of the wrong shape")
    if s > 0:
        vv = v
        if vv.shape[0] != p:
            raise ValueError("vector of the wrong length")
    with nogil:
        for i in range(p):
            for j in range(p):
                a = M[i, j] / n
                G[i, j] = G[i, j] - a if subtract else G[i, j] + a
        if s > 0:
            for j in range(p):
                a = (vv[j] * s) / n
                G[p, j] = G[p, j] - a if subtract else G[p, j] + a
                G[j, p] = G[j, p] - a if subtract else G[j, p] + a
            a = corner / n
            G[p, p] = G[p, p] - a if subtract else G[p, p] + a


# ---- compiled Newton driver of the smoothed start (``_warm_start._fused_huber_newton``, dense rows) --------
#
# The whole damped semismooth Newton of F in C: the Gram matrix (lower triangle) updated by rank-k BLAS
# products (dsyrk) of the rows that change piece, gathered with the intercept column and sqrt(s_i), the
# system solved by LAPACK posv, the line search and the row passes above. The Python driver spent 40-50 us
# a step in NumPy glue around its BLAS and LAPACK calls. Other roundings than the Python reference (a
# different BLAS product and summation order): the result only picks a screening point, the certificate
# decides every release. LAPACK and BLAS come from SciPy's cython_lapack / cython_blas capsules, looked
# up at the first call (no build-time dependency on SciPy).

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from libc.math cimport isfinite, sqrt

ctypedef void (*_dposv_t)(char *uplo, int *n, int *nrhs, double *a, int *lda, double *b, int *ldb,
                          int *info) noexcept nogil
ctypedef void (*_dsyrk_t)(char *uplo, char *trans, int *n, int *k, double *alpha, double *a, int *lda,
                          double *beta, double *c, int *ldc) noexcept nogil

cdef _dposv_t _dposv = NULL
cdef _dsyrk_t _dsyrk = NULL
#: rows gathered per dsyrk call (a small buffer that stays in cache)
cdef Py_ssize_t _GATHER = 256


cdef void *_capsule(module, name) except NULL:
    cap = module.__pyx_capi__[name]
    return PyCapsule_GetPointer(cap, PyCapsule_GetName(cap))


cdef int _load_lapack() except -1:
    global _dposv, _dsyrk
    if _dposv == NULL:
        import scipy.linalg.cython_blas as blas
        import scipy.linalg.cython_lapack as lapack
        _dsyrk = <_dsyrk_t>_capsule(blas, "dsyrk")
        _dposv = <_dposv_t>_capsule(lapack, "dposv")
    return 0


cdef void _gram_add(RowData rows, Py_ssize_t start, const Py_ssize_t *idx, Py_ssize_t cnt, const double *sw,
                    double alpha, double *G, double *buf, int d) noexcept nogil:
    """``G += alpha sum_i s_i x_i x_i^T`` (lower triangle, column-major ``d x d``) over the local rows
    ``idx[:cnt]`` (every row ``0 .. cnt - 1`` when ``idx`` is NULL), in chunks of :data:`_GATHER` rows."""
    cdef Py_ssize_t m = rows.n_raw, c0 = 0, r, i, j
    cdef int kk
    cdef double one = 1.0, a, c = rows.intercept_scaling
    cdef const double *x
    cdef double *b
    cdef char uplo = b'L', trans = b'N'
    while c0 < cnt:
        kk = <int>(cnt - c0 if cnt - c0 < _GATHER else _GATHER)
        for r in range(kk):
            i = c0 + r if idx == NULL else idx[c0 + r]
            x = rows.dense + (start + i) * m
            b = buf + r * d
            if sw == NULL:
                for j in range(m):
                    b[j] = x[j]
                if rows.has_intercept:
                    b[m] = c
            else:
                a = sqrt(sw[i])
                for j in range(m):
                    b[j] = a * x[j]
                if rows.has_intercept:
                    b[m] = a * c
        _dsyrk(&uplo, &trans, &d, &kk, &alpha, buf, &d, &one, G, &d)
        c0 += kk


def huber_newton_dense(RowData rows, Py_ssize_t start, Py_ssize_t stop, const double[::1] y, double k, sw,
                       double lam, const double[::1] w0, double tol, double[::1] w, double[::1] z_out,
                       int max_newton):
    """Damped semismooth Newton on ``F(w) = (1/n) sum_i s_i huber_k(<x_i, w> - y_i) + lam/2 ||w - w0||^2``
    over dense rows [start, stop), compiled (``_warm_start._fused_huber_newton``'s algorithm and stopping
    rules: Armijo backtracking along ``z + t X p``, Gram matrix updated on the rows that change piece, stop
    when a step moves ``w`` by at most ``tol`` or when a full step follows one that changed no piece).

    ``w`` holds the start on entry and the result on return; ``z_out`` receives ``X w``. Returns 0, or
    1 when a Newton system is not positive definite, 2 when it is not finite (the caller raises).
    """
    cdef Py_ssize_t n = stop - start, j, it, it2
    cdef int d = <int>rows.n_features, info = 0, one_i = 1, status = 0
    cdef const double *swp = NULL
    cdef const double[::1] sw_view
    cdef char uplo = b'L'
    cdef double f, fn, fl, slope, t, acc, nn = <double>n, gsum, s2
    cdef Py_ssize_t ne = 0, nl = 0, na
    cdef bint has_prev = False, changed_prev = False
    if rows.is_sparse:
        raise ValueError("dense rows only")
    if not (0 <= start <= stop <= rows.n_samples) or n == 0 or d == 0:
        raise ValueError("row range out of bounds")
    if y.shape[0] < n or z_out.shape[0] < n or w.shape[0] != d or w0.shape[0] != d:
        raise ValueError("buffer too short")
    if sw is not None:
        sw_view = sw
        if sw_view.shape[0] < n:
            raise ValueError("buffer too short")
        swp = &sw_view[0]
    _load_lapack()
    zb = np.zeros((2, n))
    hb = np.zeros((2, n), dtype=np.uint8)
    dzb = np.empty(n)
    el = np.empty((2, n), dtype=np.intp)
    vec = np.zeros((7, d))
    mat = np.zeros((2, d * d))
    gbuf = np.empty(_GATHER * d)
    cdef double[:, ::1] zv = zb
    cdef unsigned char[:, ::1] hv = hb
    cdef double[::1] dzv = dzb
    cdef Py_ssize_t[:, ::1] elv = el
    cdef double[:, ::1] vv = vec
    cdef double[:, ::1] mv = mat
    cdef double[::1] gb = gbuf
    cdef double *z = &zv[0, 0]
    cdef double *z_new = &zv[1, 0]
    cdef unsigned char *h = &hv[0, 0]
    cdef unsigned char *h_new = &hv[1, 0]
    cdef double *grad_loss = &vv[0, 0]
    cdef double *grad_new = &vv[1, 0]
    cdef double *grad = &vv[2, 0]
    cdef double *step = &vv[3, 0]
    cdef double *w_t = &vv[4, 0]
    cdef double *dw = &vv[5, 0]
    cdef double *dw_t = &vv[6, 0]
    cdef double *G = &mv[0, 0]
    cdef double *A = &mv[1, 0]
    cdef double *tmp
    cdef unsigned char *htmp
    cdef Pass ps
    ps.y, ps.sw, ps.dz, ps.enter, ps.leave, ps.k = &y[0], swp, &dzv[0], &elv[0, 0], &elv[1, 0], k
    with nogil:
        # the pieces, loss and gradient at w: z = 0 + 1 X w
        ps.p, ps.z, ps.h, ps.z_new, ps.h_new, ps.grad, ps.t = &w[0], z, NULL, z_new, h, grad_loss, 1.0
        ps.n_enter = ps.n_leave = 0
        fl = _dense_pass(rows, start, n, &ps)
        tmp = z; z = z_new; z_new = tmp
        # the Gram matrix of the rows in the quadratic piece (the first active rows' indices in enter)
        na = 0
        for j in range(n):
            if h[j]:
                ps.enter[na] = j
                na += 1
        if na:
            _gram_add(rows, start, NULL if na == n else ps.enter, na, swp, 1.0 / nn, G, &gb[0], d)
        acc = 0.0
        for j in range(d):
            dw[j] = w[j] - w0[j]
            acc += dw[j] * dw[j]
        f = fl / nn + 0.5 * lam * acc
        for it in range(max_newton):
            gsum = 0.0
            for j in range(d):
                grad[j] = grad_loss[j] / nn + lam * dw[j]
                step[j] = grad[j]
                gsum += grad[j]
            for j in range(d * d):
                A[j] = G[j]
            for j in range(d):
                A[j * d + j] += lam
            s2 = 0.0
            for it2 in range(d):
                for j in range(it2, d):  # the lower triangle: rows j >= it2 of column it2
                    s2 += A[it2 * d + j]
            if not isfinite(s2 + gsum):
                status = 2
                break
            _dposv(&uplo, &d, &one_i, A, &d, step, &d, &info)
            if info != 0:
                status = 1
                break
            slope = 0.0
            for j in range(d):
                step[j] = -step[j]
                slope += grad[j] * step[j]
            t = 1.0
            # the full step's pass: dz = X step, the pieces, loss and gradient at z + dz
            ps.p, ps.z, ps.h, ps.z_new, ps.h_new, ps.grad, ps.t = step, z, h, z_new, h_new, grad_new, 1.0
            ps.n_enter = ps.n_leave = 0
            for j in range(d):
                grad_new[j] = 0.0
            fl = _dense_pass(rows, start, n, &ps)
            while True:
                acc = 0.0
                for j in range(d):
                    w_t[j] = w[j] + t * step[j]
                    dw_t[j] = w_t[j] - w0[j]
                    acc += dw_t[j] * dw_t[j]
                fn = fl / nn + 0.5 * lam * acc
                if fn <= f + 1e-4 * t * slope:
                    break
                t *= 0.5
                if t < 1e-10:
                    break
                fl = _trial_value(&ps, n, t)
            if t < 1e-10:
                break
            if t != 1.0:  # a backtracked step: its pieces and gradient (dz is kept)
                ps.p, ps.t = NULL, t
                ps.n_enter = ps.n_leave = 0
                for j in range(d):
                    grad_new[j] = 0.0
                fl = _dense_pass(rows, start, n, &ps)
            ne, nl = ps.n_enter, ps.n_leave
            for j in range(d):
                w[j] = w_t[j]
                dw[j] = dw_t[j]
            # a backtracked step's loss was recomputed by its pass
            f = fn if t == 1.0 else fl / nn + 0.5 * lam * acc
            tmp = z; z = z_new; z_new = tmp
            htmp = h; h = h_new; h_new = htmp
            tmp = grad_loss; grad_loss = grad_new; grad_new = tmp
            # the curvature changes only on rows entering or leaving the quadratic part
            if ne:
                _gram_add(rows, start, ps.enter, ne, swp, 1.0 / nn, G, &gb[0], d)
            if nl:
                _gram_add(rows, start, ps.leave, nl, swp, -1.0 / nn, G, &gb[0], d)
            # a full step after a step that changed no piece: it solved the minimizer's own piece
            if t == 1.0 and has_prev and not changed_prev:
                break
            has_prev = True
            changed_prev = ne + nl > 0
            acc = 0.0
            for j in range(d):
                acc += step[j] * step[j]
            if t * sqrt(acc) <= tol:
                break
        for j in range(n):
            z_out[j] = z[j]
    return status


cdef double _trial_value(Pass *ps, Py_ssize_t n, double t) noexcept nogil:
    """``sum_i s_i huber_k(z_i + t dz_i - y_i)`` (a line-search trial, no row read)."""
    cdef Py_ssize_t li, n4 = n - n % 4
    cdef double r, g
    cdef double v[4]
    v[0] = v[1] = v[2] = v[3] = 0.0
    for li in range(n):
        r = (ps.z[li] + t * ps.dz[li]) - ps.y[li]
        g = _clip(r, ps.k)
        v[li & 3 if li < n4 else 0] += (1.0 if ps.sw == NULL else ps.sw[li]) * (g * (r - 0.5 * g))
    return (v[0] + v[1]) + (v[2] + v[3])
