# The four-accumulator dense dot product shared by the row kernels (_rows.pyx, _users.pyx), the four-row
# axpy sweep (_rows.pyx RowData.block_rmatvec, _smoothed.pyx's screen passes), and the private centre's row
# clip.

from libc.math cimport isfinite, sqrt


cdef inline double dense_dot(const double *x, const double *w, Py_ssize_t n) noexcept nogil:
    # Four accumulators: independent dependency chains, so the loop runs at several products
    # per cycle without -ffast-math reassociation. A sum of n products in some order, so its
    # error is within gamma_n sum |x_j w_j| like any other order (the rounding bounds rely on it).
    cdef Py_ssize_t j = 0
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    while j + 4 <= n:
        s0 += x[j] * w[j]
        s1 += x[j + 1] * w[j + 1]
        s2 += x[j + 2] * w[j + 2]
        s3 += x[j + 3] * w[j + 3]
        j += 4
    while j < n:
        s0 += x[j] * w[j]
        j += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double clip_scale(const double *x, Py_ssize_t n, double bound) noexcept nogil:
    # min(1, bound / ||x||) with the norm from the plain sum of squares (sequential: within gamma_n of
    # the exact one); a row whose sum of squares overflows gets 0 (still within the bound). The private
    # centre's row clip (_rows.clipped_row_grid_sums, _users.clipped_row_means).
    cdef Py_ssize_t j
    cdef double ss = 0.0, nrm, f
    for j in range(n):
        ss = ss + x[j] * x[j]
    if not isfinite(ss):
        return 0.0
    nrm = sqrt(ss)
    f = bound / (nrm if nrm > 1e-300 else 1e-300)
    return f if f < 1.0 else 1.0


cdef inline void dense_axpy4(const double *dense, Py_ssize_t m, const Py_ssize_t *r, const double *a, double *w,
                             bint has_intercept, double intercept_scaling) noexcept nogil:
    # w += a[0] x_r0 + ... + a[3] x_r3 for the dense rows r[0..3] of ``dense`` (m columns) and, with an
    # intercept, their virtual column: each coordinate gets the four products added one after the other, as
    # four axpy calls in this order add them (the same floats), its running value in a register instead of a
    # store and reload per row
    cdef Py_ssize_t j
    cdef const double *x0 = dense + r[0] * m
    cdef const double *x1 = dense + r[1] * m
    cdef const double *x2 = dense + r[2] * m
    cdef const double *x3 = dense + r[3] * m
    cdef double t
    for j in range(m):
        t = w[j]
        t += a[0] * x0[j]
        t += a[1] * x1[j]
        t += a[2] * x2[j]
        t += a[3] * x3[j]
        w[j] = t
    if has_intercept:
        t = w[m]
        t += a[0] * intercept_scaling
        t += a[1] * intercept_scaling
        t += a[2] * intercept_scaling
        t += a[3] * intercept_scaling
        w[m] = t
