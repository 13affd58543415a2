"""Per-user kernels of the user-level solvers (doc/algorithms.rst, §0.2; doc/privacy/user_level.rst).

Rows are sorted by user; user ``u`` owns rows ``indptr[u]:indptr[u + 1]``
(CSR-like user index, built once by ``make_user_data``). Dense rows are a
C-contiguous float64 array, sparse rows a CSR matrix.

* :func:`group_sums` -- per-user sums ``sum_{r in u} a_r x_r``. Each user's
  sum is accumulated row by row in input order, exactly the recursive sum of
  ``numpy.add.reduceat`` (so it returns the same floats, and the rounding
  bound ``gamma_m sum |a_r| ||x_r||`` used by the certificates holds).
* :func:`user_block_margins` -- ``<x_r, v_u>`` for the rows of chosen users,
  each user with its own point.
* :func:`clipped_users` -- for each user ``u`` whose gradient sum at ``w``
  exceeds ``C``, the inner point ``v_u = argmin_v L_u(v) + C ||w - v||`` of the
  C-Lipschitz extension (root of ``||grad L_u(prox_{s L_u}(w))|| = C`` in
  ``log s`` by Illinois regula falsi, each prox by damped Newton), the value
  and clipped gradient of ``h_u`` and its curvature (a preconditioner only).
  The same algorithm as the NumPy reference in
  ``_solvers/_user_level/_clip.py``, run user by user with each user's own
  stopping test instead of batch-wide ones; every result is checked by the
  certificate (``clipped_objective_gap``), never trusted.

Nothing here sets a noise scale: the kernels only evaluate the objective.
"""
import numpy as np
import scipy.sparse as sp

from libc.math cimport exp, log, log1p, sqrt, fabs, isfinite, NAN

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from ._dot cimport clip_scale, dense_dot

cdef double _LOGE2 = 0.693147180559945309417232121458176568


cdef inline double _logaddexp0(double t) noexcept nogil:
    # log(1 + exp(t)) as numpy.logaddexp(0, t) computes it
    if t == 0.0:
        return _LOGE2
    if t > 0.0:
        return t + log1p(exp(-t))
    return log1p(exp(t))


cdef inline double _expit(double x) noexcept nogil:
    # 1 / (1 + exp(-x)), as scipy.special.expit
    return 1.0 / (1.0 + exp(-x))




# --------------------------------------------------------------------------- row access
cdef struct Rows:
    const double *dense      # n x p row-major, or NULL
    const double *data       # CSR values
    const Py_ssize_t *cols   # CSR column indices
    const Py_ssize_t *rptr   # CSR row pointers
    Py_ssize_t p


cdef object _rows(X, Rows *rows):
    """Fill ``rows`` from X; returns the arrays the pointers point into (keep them alive)."""
    cdef const double[:, ::1] dv
    cdef const double[::1] data_v
    cdef const Py_ssize_t[::1] ind_v, ptr_v
    rows.dense = NULL
    rows.data = NULL
    rows.cols = NULL
    rows.rptr = NULL
    rows.p = X.shape[1]
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        ind = np.ascontiguousarray(X.indices, dtype=np.intp)
        ptr = np.ascontiguousarray(X.indptr, dtype=np.intp)
        if data.size:
            data_v = data
            ind_v = ind
            rows.data = &data_v[0]
            rows.cols = &ind_v[0]
        ptr_v = ptr
        rows.rptr = &ptr_v[0]
        return (data, ind, ptr)
    arr = np.ascontiguousarray(X, dtype=np.float64)
    if arr.size:
        dv = arr
        rows.dense = &dv[0, 0]
    return (arr,)


cdef inline void _axpy_row(const Rows *rows, Py_ssize_t r, double a, double *out) noexcept nogil:
    cdef Py_ssize_t j, p = rows.p
    cdef const double *x
    if rows.dense != NULL:
        x = rows.dense + r * p
        for j in range(p):
            out[j] += a * x[j]
    elif rows.rptr != NULL:
        for j in range(rows.rptr[r], rows.rptr[r + 1]):
            out[rows.cols[j]] += a * rows.data[j]


cdef inline void _user_mean_logistic_gradient(const Rows *rows, const double *y, Py_ssize_t r0, Py_ssize_t r1,
                                              const double *w, double *aw, double *o) noexcept nogil:
    # o = the mean over rows r0 <= r < r1 of the logistic-loss gradient -y_r expit(-y_r <x_r, w>) x_r;
    # dense: each coordinate summed over the user's rows in order; CSR: the rows added in order
    cdef Py_ssize_t r, j, k = r1 - r0, p = rows.p
    cdef double z, a, cnt
    cdef const double *x
    if rows.dense != NULL:
        for r in range(k):
            aw[r] = -y[r0 + r] * _expit(-y[r0 + r] * dense_dot(rows.dense + (r0 + r) * p, w, p))
        # row by row (contiguous, vectorisable over j); each coordinate is still the sum over the
        # user's rows in order, starting from 0: the same additions as a column-by-column loop
        x = rows.dense + r0 * p
        for j in range(p):
            o[j] = 0.0
        for r in range(k):
            a = aw[r]
            for j in range(p):
                o[j] = o[j] + a * x[r * p + j]
    else:
        for j in range(p):
            o[j] = 0.0
        for r in range(r0, r1):
            z = 0.0
            for j in range(rows.rptr[r], rows.rptr[r + 1]):
                z = z + rows.data[j] * w[rows.cols[j]]
            a = -y[r] * _expit(-y[r] * z)
            _axpy_row(rows, r, a, o)
    cnt = <double> k
    for j in range(p):
        o[j] = o[j] / cnt


cdef inline void _copy_row(const Rows *rows, Py_ssize_t r, double *out) noexcept nogil:
    cdef Py_ssize_t j, p = rows.p
    if rows.dense != NULL:
        memcpy(out, rows.dense + r * p, p * sizeof(double))
    else:
        memset(out, 0, p * sizeof(double))
        if rows.rptr != NULL:
            for j in range(rows.rptr[r], rows.rptr[r + 1]):
                out[rows.cols[j]] += rows.data[j]


def _check_indptr(indptr, Py_ssize_t n_rows):
    ptr = np.ascontiguousarray(indptr, dtype=np.intp)
    if ptr.ndim != 1 or ptr.size < 1 or ptr[0] != 0 or ptr[-1] != n_rows or np.any(np.diff(ptr) < 0):
        raise ValueError("indptr must be non-decreasing from 0 to the number of rows")
    return ptr


# --------------------------------------------------------------------------- per-user sums
def group_sums(X, a, indptr):
    """Per-user sums ``sum_{r in u} a_r x_r``, shape (n_users, p) (recursive sums in row order).

    Parameters
    ----------
    X : ndarray (C-contiguous float64) or csr_matrix of shape (n_rows, p)
    a : ndarray of shape (n_rows,)
    indptr : ndarray of shape (n_users + 1,)

    Returns
    -------
    ndarray of shape (n_users, p)
    """
    cdef Rows rows
    keep = _rows(X, &rows)
    cdef Py_ssize_t n = X.shape[0]
    cdef const double[::1] av = np.ascontiguousarray(a, dtype=np.float64)
    if av.shape[0] != n:
        raise ValueError("a must have one entry per row")
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, n)
    cdef Py_ssize_t n_users = ptr.shape[0] - 1, u, r, j, p = rows.p
    out = np.zeros((n_users, p))
    cdef double[:, ::1] ov = out
    cdef double *o
    cdef const double *x
    if n_users == 0 or p == 0:
        return out
    with nogil:
        for u in range(n_users):
            o = &ov[u, 0]
            if rows.dense != NULL and ptr[u + 1] > ptr[u]:
                # first row copied (a_r x_r), then added: numpy.add.reduceat's order
                r = ptr[u]
                x = rows.dense + r * p
                for j in range(p):
                    o[j] = av[r] * x[j]
                for r in range(ptr[u] + 1, ptr[u + 1]):
                    x = rows.dense + r * p
                    for j in range(p):
                        o[j] += av[r] * x[j]
            else:
                for r in range(ptr[u], ptr[u + 1]):
                    _axpy_row(&rows, r, av[r], o)
    return out


def clipped_row_means(X, rows, indptr, double bound):
    """Per-user means of chosen dense rows, each row clipped to ``bound``: shape (n_users, p).

    User ``u`` averages the rows ``X[rows[indptr[u]:indptr[u + 1]]]`` (in that
    order), each scaled by ``min(1, bound / ||x_r||)`` (the norm from the sum of
    squares; a row whose sum of squares overflows is scaled by 0), with weights
    ``1 / k_u``: ``sum_r (min(1, B / ||x_r||) / k_u) x_r``, accumulated row by
    row. One pass over the chosen rows; each user's vector depends on its own
    rows only (linear_model/_centering.py, the private feature centre).

    Parameters
    ----------
    X : ndarray (C-contiguous float64) of shape (n_rows, p)
    rows : ndarray of intp, the chosen rows grouped by user
    indptr : ndarray of shape (n_users + 1,), every user with at least one row
    bound : float > 0

    Returns
    -------
    ndarray of shape (n_users, p)
    """
    cdef const double[:, ::1] xv = np.ascontiguousarray(X, dtype=np.float64)
    cdef const Py_ssize_t[::1] rv = np.ascontiguousarray(rows, dtype=np.intp)
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, rv.shape[0])
    cdef Py_ssize_t n_users = ptr.shape[0] - 1, n = xv.shape[0], p = xv.shape[1], u, i, r, j, k
    if np.any(np.diff(ptr) < 1):
        raise ValueError("every user needs at least one row")
    if rv.shape[0] and (np.min(rows) < 0 or np.max(rows) >= n):
        raise ValueError("rows must index X")
    if not bound > 0:
        raise ValueError("bound must be > 0")
    out = np.zeros((n_users, p))
    cdef double[:, ::1] ov = out
    cdef double f
    cdef const double *x
    cdef double *o
    with nogil:
        for u in range(n_users):
            o = &ov[u, 0]
            k = ptr[u + 1] - ptr[u]
            for i in range(ptr[u], ptr[u + 1]):
                r = rv[i]
                x = &xv[r, 0]
                f = clip_scale(x, p, bound) / k
                for j in range(p):
                    o[j] += f * x[j]
    return out


def user_block_margins(X, indptr, users, V):
    """``<x_r, V[k]>`` for every row ``r`` of ``users[k]``, written into a length-n_rows array (others 0)."""
    cdef Rows rows
    keep = _rows(X, &rows)
    cdef Py_ssize_t n = X.shape[0]
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, n)
    cdef const Py_ssize_t[::1] us = np.ascontiguousarray(users, dtype=np.intp)
    cdef const double[:, ::1] Vv = np.ascontiguousarray(V, dtype=np.float64).reshape(-1, rows.p)
    if Vv.shape[0] != us.shape[0]:
        raise ValueError("V must have one row per user")
    out = np.zeros(n)
    cdef double[::1] ov = out
    cdef Py_ssize_t k, u, r, j, p = rows.p
    cdef double s
    cdef const double *x
    for k in range(us.shape[0]):
        if us[k] < 0 or us[k] >= ptr.shape[0] - 1:
            raise ValueError("user index out of range")
    with nogil:
        for k in range(us.shape[0]):
            u = us[k]
            for r in range(ptr[u], ptr[u + 1]):
                s = 0.0
                if rows.dense != NULL:
                    x = rows.dense + r * p
                    for j in range(p):
                        s = s + x[j] * Vv[k, j]
                elif rows.rptr != NULL:
                    for j in range(rows.rptr[r], rows.rptr[r + 1]):
                        s = s + rows.data[j] * Vv[k, rows.cols[j]]
                ov[r] = s
    return out


# --------------------------------------------------------------------------- one user's inner problem
cdef struct User:
    # one user's rows copied dense (k x p), labels, and work space
    double *X
    double *y
    Py_ssize_t k
    Py_ssize_t p
    double *q        # k
    double *grad     # p
    double *H        # p x p
    double *g        # p
    double *step     # p
    double *vt       # p
    double *L        # p x p (Cholesky factor)


cdef double _loss_grad(User *U, const double *v, bint want_grad, bint want_hess) noexcept nogil:
    """L_u(v); fills U.grad (and U.H) when asked."""
    cdef Py_ssize_t r, i, j, p = U.p
    cdef double z, loss = 0.0, qr, h
    cdef const double *x
    if want_grad:
        memset(U.grad, 0, p * sizeof(double))
    if want_hess:
        memset(U.H, 0, p * p * sizeof(double))
    for r in range(U.k):
        x = U.X + r * p
        z = 0.0
        for j in range(p):
            z = z + x[j] * v[j]
        z = z * U.y[r]
        loss += _logaddexp0(-z)
        if want_grad:
            qr = _expit(-z)
            U.q[r] = qr
            for j in range(p):
                U.grad[j] -= U.y[r] * qr * x[j]
            if want_hess:
                h = qr * (1.0 - qr)
                for i in range(p):
                    for j in range(i + 1):
                        U.H[i * p + j] += h * x[i] * x[j]
    if want_hess:
        for i in range(p):
            for j in range(i):
                U.H[j * p + i] = U.H[i * p + j]
    return loss


cdef void _hess_from_q(User *U) noexcept nogil:
    """U.H <- sum_r q_r (1 - q_r) x_r x_r^T with the q of the last gradient evaluation."""
    cdef Py_ssize_t r, i, j, p = U.p
    cdef double h
    cdef const double *x
    memset(U.H, 0, p * p * sizeof(double))
    for r in range(U.k):
        x = U.X + r * p
        h = U.q[r] * (1.0 - U.q[r])
        for i in range(p):
            for j in range(i + 1):
                U.H[i * p + j] += h * x[i] * x[j]
    for i in range(p):
        for j in range(i):
            U.H[j * p + i] = U.H[i * p + j]


cdef inline double _norm(const double *v, Py_ssize_t p) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = 0.0
    for j in range(p):
        s += v[j] * v[j]
    return sqrt(s)


cdef inline double _dist2(const double *a, const double *b, Py_ssize_t p) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = 0.0, t
    for j in range(p):
        t = a[j] - b[j]
        s += t * t
    return s


cdef bint _cholesky(const double *A, double *L, Py_ssize_t p) noexcept nogil:
    """Lower Cholesky factor of the SPD matrix A (row-major); False if a pivot is not positive."""
    cdef Py_ssize_t i, j, k
    cdef double s
    for i in range(p):
        for j in range(i + 1):
            s = A[i * p + j]
            for k in range(j):
                s -= L[i * p + k] * L[j * p + k]
            if i == j:
                if not (s > 0.0):
                    return False
                L[i * p + i] = sqrt(s)
            else:
                L[i * p + j] = s / L[j * p + j]
    return True


cdef void _cho_solve(const double *L, double *b, Py_ssize_t p) noexcept nogil:
    """Solve (L L^T) x = b in place."""
    cdef Py_ssize_t i, k
    cdef double s
    for i in range(p):
        s = b[i]
        for k in range(i):
            s -= L[i * p + k] * b[k]
        b[i] = s / L[i * p + i]
    for i in range(p - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, p):
            s -= L[k * p + i] * b[k]
        b[i] = s / L[i * p + i]


cdef void _prox(User *U, const double *w, double s, double *v) noexcept nogil:
    """v <- argmin_v L_u(v) + ||v - w||^2 / (2 s), damped Newton from the v given (25 steps at most)."""
    cdef Py_ssize_t it, bt, j, p = U.p
    cdef double loss, ridge, tr, f0, ft, t, gn
    for it in range(25):
        loss = _loss_grad(U, v, True, False)
        for j in range(p):
            U.g[j] = U.grad[j] + (v[j] - w[j]) / s
        if _norm(U.g, p) <= 1e-13 * (1.0 + _norm(U.grad, p)):
            break  # converged to float precision
        _hess_from_q(U)
        # a relative ridge keeps every system solvable (a user with fewer rows than coefficients
        # has a singular H); backtracking below keeps each step a descent step
        tr = 0.0
        for j in range(p):
            tr += U.H[j * p + j]
        ridge = 1.0 / s + 1e-12 * (1.0 + tr)
        for j in range(p):
            U.H[j * p + j] += ridge
        if _cholesky(U.H, U.L, p):
            for j in range(p):
                U.step[j] = -U.g[j]
            _cho_solve(U.L, U.step, p)
        else:  # not reached for finite data (the ridge dominates rounding); a safe gradient step
            for j in range(p):
                U.step[j] = -U.g[j] / ridge
        f0 = loss + _dist2(v, w, p) / (2 * s)
        t = 1.0
        for bt in range(30):  # halving until the objective does not increase
            for j in range(p):
                U.vt[j] = v[j] + t * U.step[j]
            ft = _loss_grad(U, U.vt, False, False) + _dist2(U.vt, w, p) / (2 * s)
            if not (ft > f0 + 1e-15 * fabs(f0)):
                break
            t = t / 2
        for j in range(p):
            v[j] = v[j] + t * U.step[j]


cdef double _log_slope(User *U, const double *v, double s, double *x) noexcept nogil:
    """d/d(log s) of log ||grad L_u(v(s))|| at v = v(s); x <- (I + s H)^-1 grad (v'(s) = -x).

    From v + s grad L_u(v) = w: v'(s) = -(I + s H)^-1 g, so the slope is
    -s g^T H (I + s H)^-1 g / ||g||^2 (< 0 where H g != 0). Returns 0 when unavailable.
    """
    cdef Py_ssize_t i, j, p = U.p
    cdef double gg = 0.0, val = 0.0, hg
    _loss_grad(U, v, True, True)
    for i in range(p * p):
        U.H[i] = s * U.H[i]
    for j in range(p):
        U.H[j * p + j] += 1.0
    if not _cholesky(U.H, U.L, p):
        return 0.0
    memcpy(x, U.grad, p * sizeof(double))
    _cho_solve(U.L, x, p)
    # g^T H x = (g^T (I + s H) x - g^T x) / s = (||g||^2 - g^T x) / s
    for j in range(p):
        gg += U.grad[j] * U.grad[j]
        val += U.grad[j] * x[j]
    if not (gg > 0.0):
        return 0.0
    return -(gg - val) / gg


cdef double _inner_point(User *U, const double *w, double clip, double guess, double *v,
                         double *v_lo, double *v_hi) noexcept nogil:
    """v <- v_u (the inner point of h_u at w); returns log s of the root.

    Root of f(l) = log ||grad L_u(prox_{e^l L_u}(w))|| - log C on [-30, 30] (f decreasing, f > 0
    as l -> -inf for a clipped user): Newton on l with the exact slope (:func:`_log_slope`), each
    prox warm-started from the first-order prediction of v(s); a step leaving the bracket is
    replaced by bisection. The same root as the reference's Illinois iteration.
    """
    cdef Py_ssize_t step, j, p = U.p
    cdef double lo = -30.0, hi = 30.0, l, l_new, f, slope, s, s_new, gn, rho, hg
    cdef double log_clip = log(clip)
    cdef bint have_hi = False, newton
    cdef double *x = U.vt
    cdef double *xs = U.step
    # starting point: the earlier root, else the first-order root of ||g - s H g|| = C at w
    if isfinite(guess):
        l = guess
    else:
        _loss_grad(U, w, True, True)
        gn = _norm(U.grad, p)
        rho = 0.0
        for j in range(p):
            hg = 0.0
            for step in range(p):
                hg += U.H[j * p + step] * U.grad[step]
            rho += U.grad[j] * hg
        rho = rho / (gn * gn) if gn > 0 else 0.0
        l = log((1.0 - clip / gn) / rho) if (rho > 0 and gn > clip) else 0.0
    l = -29.0 if l < -29.0 else (29.0 if l > 29.0 else l)
    memcpy(v, w, p * sizeof(double))
    memcpy(v_lo, w, p * sizeof(double))
    for step in range(60):
        s = exp(l)
        _prox(U, w, s, v)
        _loss_grad(U, v, True, False)
        gn = _norm(U.grad, p)
        f = log(gn if gn > 1e-300 else 1e-300) - log_clip
        if fabs(f) < 1e-13:
            break
        if f > 0:
            lo = l
            memcpy(v_lo, v, p * sizeof(double))
        else:
            hi = l
            have_hi = True
            memcpy(v_hi, v, p * sizeof(double))
        if hi - lo <= 1e-15 * (1.0 + fabs(l)):
            break
        slope = _log_slope(U, v, s, x)
        newton = slope < 0
        if newton:
            l_new = l - f / slope
            newton = lo < l_new < hi
        if not newton:
            l_new = 0.5 * (lo + hi)
        s_new = exp(l_new)
        if newton:  # v(s_new) ~ v(s) - (s_new - s) x
            for j in range(p):
                v[j] = v[j] - (s_new - s) * x[j]
        else:
            memcpy(v, v_lo if (not have_hi or l_new - lo < hi - l_new) else v_hi, p * sizeof(double))
        l = l_new
    return l


def clipped_users(X, y, indptr, users, w, double clip, log_s_guess):
    """Inner points and the pieces of ``h_u`` for ``users`` (those with ``||grad L_u(w)|| > clip``).

    Parameters
    ----------
    X : ndarray (C-contiguous float64) or csr_matrix of shape (n_rows, p)
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1}.
    indptr : ndarray of shape (n_users + 1,)
    users : ndarray of int
    w : ndarray of shape (p,)
    clip : float
        C > 0.
    log_s_guess : ndarray of shape (len(users),)
        Earlier roots (NaN: none), tried first.

    Returns
    -------
    V : ndarray (len(users), p)
        Inner points v_u.
    log_s : ndarray (len(users),)
    value : ndarray (len(users),)
        ``h_u(w) = L_u(v_u) + C ||w - v_u||``.
    grad : ndarray (len(users), p)
        ``grad L_u(v_u)`` scaled to norm C where it exceeds C: the gradient of h_u at w.
    curvature : ndarray (p, p)
        Sum over the users of ``P (H_u^-1 + (t/C) I)^-1 P`` (P projects out ``w - v_u``, t its
        norm): a preconditioner only.
    """
    cdef Rows rows
    keep = _rows(X, &rows)
    cdef Py_ssize_t n = X.shape[0], p = rows.p
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, n)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef const Py_ssize_t[::1] us = np.ascontiguousarray(users, dtype=np.intp)
    cdef const double[::1] wv = np.ascontiguousarray(w, dtype=np.float64)
    cdef const double[::1] gv = np.ascontiguousarray(log_s_guess, dtype=np.float64)
    cdef Py_ssize_t n_u = us.shape[0], k, u, r, i, j, m_max = 0
    if yv.shape[0] != n or wv.shape[0] != p or gv.shape[0] != n_u:
        raise ValueError("shapes of y, w or log_s_guess do not match X and users")
    if not clip > 0:
        raise ValueError("clip must be > 0")
    for k in range(n_u):
        u = us[k]
        if u < 0 or u >= ptr.shape[0] - 1:
            raise ValueError("user index out of range")
        m_max = max(m_max, ptr[u + 1] - ptr[u])
    V = np.zeros((n_u, p))
    log_s = np.zeros(n_u)
    value = np.zeros(n_u)
    grad = np.zeros((n_u, p))
    curv = np.zeros((p, p))
    cdef double[:, ::1] Vv = V, Gv = grad, Cv = curv
    cdef double[::1] lsv = log_s, valv = value
    cdef User U
    cdef double *work
    cdef double *v_lo
    cdef double *v_hi
    cdef double *K
    cdef double *z
    cdef double *Kz
    cdef double t, gn, scale, tr, ridge, c, zKz
    if n_u == 0 or p == 0:
        return V, log_s, value, grad, curv
    work = <double *> malloc((m_max * p + 2 * m_max + 8 * p + 3 * p * p) * sizeof(double))
    if work == NULL:
        raise MemoryError()
    U.p = p
    U.X = work
    U.y = U.X + m_max * p
    U.q = U.y + m_max
    U.grad = U.q + m_max
    U.g = U.grad + p
    U.step = U.g + p
    U.vt = U.step + p
    v_lo = U.vt + p
    v_hi = v_lo + p
    z = v_hi + p
    Kz = z + p
    U.H = Kz + p
    U.L = U.H + p * p
    K = U.L + p * p
    try:
        with nogil:
            for k in range(n_u):
                u = us[k]
                U.k = ptr[u + 1] - ptr[u]
                for r in range(U.k):
                    _copy_row(&rows, ptr[u] + r, U.X + r * p)
                    U.y[r] = yv[ptr[u] + r]
                lsv[k] = _inner_point(&U, &wv[0], clip, gv[k], &Vv[k, 0], v_lo, v_hi)
                valv[k] = _loss_grad(&U, &Vv[k, 0], True, True)
                for j in range(p):
                    z[j] = wv[j] - Vv[k, j]
                t = _norm(z, p)
                valv[k] += clip * t
                gn = _norm(U.grad, p)
                scale = clip / gn if gn > clip else 1.0
                for j in range(p):
                    Gv[k, j] = U.grad[j] * scale
                # curvature of h_u across z: (H_r^-1 + (t/C) I)^-1 = (I + (t/C) H_r)^-1 H_r,
                # H_r = H + ridge I (conjugates add; doc/algorithms.rst, §0.2)
                tr = 0.0
                for j in range(p):
                    tr += U.H[j * p + j]
                ridge = 1e-12 * (1.0 + tr)
                for j in range(p):
                    U.H[j * p + j] += ridge
                c = t / clip
                for i in range(p * p):
                    K[i] = c * U.H[i]
                for j in range(p):
                    K[j * p + j] += 1.0
                if not _cholesky(K, U.L, p):
                    continue  # a preconditioner only: skip this user's term
                for j in range(p):  # K <- (I + c H_r)^-1 H_r, column by column (H_r symmetric)
                    for i in range(p):
                        U.step[i] = U.H[i * p + j]
                    _cho_solve(U.L, U.step, p)
                    for i in range(p):
                        K[i * p + j] = U.step[i]
                # P K P with P = I - zh zh^T: K - zh (K zh)^T - (K zh) zh^T + (zh^T K zh) zh zh^T
                t = t if t > 1e-300 else 1e-300
                for j in range(p):
                    z[j] = z[j] / t
                zKz = 0.0
                for i in range(p):
                    Kz[i] = 0.0
                    for j in range(p):
                        Kz[i] += K[i * p + j] * z[j]
                    zKz += z[i] * Kz[i]
                for i in range(p):
                    for j in range(p):
                        Cv[i, j] += K[i * p + j] - z[i] * Kz[j] - Kz[i] * z[j] + zKz * z[i] * z[j]
    finally:
        free(work)
    return V, log_s, value, grad, curv


def user_mean_logistic_gradients(X, y, indptr, W):
    """Per-user mean logistic gradients ``(1/|u|) sum_{r in u} -y_r expit(-y_r <x_r, w>) x_r``.

    One pass over the rows per point: the margin (a recursive dot product of p terms), the
    logistic weight ``-y / (1 + exp(y z))`` and the user's recursive sum of at most m terms,
    then one division by the count -- the computation whose float64 error
    ``user_mean_gradient_error`` bounds (doc/privacy/user_level.rst).

    Parameters
    ----------
    X : ndarray (C-contiguous float64) or csr_matrix of shape (n_rows, p)
    y : ndarray of shape (n_rows,)
    indptr : ndarray of shape (n_users + 1,)
        Every user owns at least one row.
    W : ndarray of shape (chains, p)

    Returns
    -------
    ndarray of shape (chains, n_users, p)
    """
    cdef Rows rows
    keep = _rows(X, &rows)
    cdef Py_ssize_t n = X.shape[0], p = rows.p
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, n)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef const double[:, ::1] Wv = np.ascontiguousarray(np.atleast_2d(W), dtype=np.float64)
    if yv.shape[0] != n or Wv.shape[1] != p:
        raise ValueError("shapes of y or W do not match X")
    cdef Py_ssize_t chains = Wv.shape[0], n_users = ptr.shape[0] - 1, c, u
    if np.any(np.diff(np.asarray(ptr)) < 1):
        raise ValueError("every user must own at least one row")
    out = np.zeros((chains, n_users, p))
    cdef double[:, :, ::1] ov = out
    weights = np.zeros(max(int(np.max(np.diff(np.asarray(ptr)), initial=0)), 1))
    cdef double[::1] awv = weights
    cdef double *aw = &awv[0]
    cdef const double *w
    if n_users == 0 or p == 0:
        return out
    with nogil:
        for c in range(chains):
            w = &Wv[c, 0]
            for u in range(n_users):
                _user_mean_logistic_gradient(&rows, &yv[0], ptr[u], ptr[u + 1], w, aw, &ov[c, u, 0])
    return out


def clipped_mean_logistic_gradient_sums(X, y, indptr, W, double clip, Py_ssize_t block_size,
                                        Py_ssize_t first_block, Py_ssize_t last_block, out):
    """Per block of users, the sum of the users' mean logistic gradients clipped to norm ``clip``.

    Users ``[b * block_size, (b + 1) * block_size)`` form block ``b``; for blocks
    ``first_block <= b < last_block`` this writes ``out[c, b] = sum_u g_u min(1, C / max(||g_u||,
    1e-300))`` for every point ``W[c]`` (g_u as in :func:`user_mean_logistic_gradients`, the users
    of a block summed in order). The blocks are fixed by ``block_size``, not by how many threads
    share them, so the caller's sum over blocks does not depend on the threads. Runs without the
    GIL.

    Parameters
    ----------
    X, y, indptr, W
        As in :func:`user_mean_logistic_gradients`.
    clip : float
        C > 0.
    block_size, first_block, last_block : int
    out : ndarray of shape (chains, n_blocks, p)
        Written in place (the blocks in range only).
    """
    cdef Rows rows
    keep = _rows(X, &rows)
    cdef Py_ssize_t n = X.shape[0], p = rows.p
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, n)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef const double[:, ::1] Wv = np.ascontiguousarray(np.atleast_2d(W), dtype=np.float64)
    cdef double[:, :, ::1] ov = out
    cdef Py_ssize_t chains = Wv.shape[0], n_users = ptr.shape[0] - 1, c, b, u, u1, j
    if yv.shape[0] != n or Wv.shape[1] != p or ov.shape[0] != chains or ov.shape[2] != p:
        raise ValueError("shapes of y, W or out do not match X")
    if block_size < 1 or first_block < 0 or last_block > ov.shape[1] or (ov.shape[1] - 1) * block_size >= max(
            n_users, 1):
        raise ValueError("blocks do not match the users")
    if not clip > 0:
        raise ValueError("clip must be > 0")
    if np.any(np.diff(np.asarray(ptr)) < 1):
        raise ValueError("every user must own at least one row")
    cdef double nrm, f
    weights = np.zeros(max(int(np.max(np.diff(np.asarray(ptr)), initial=0)), 1))
    buf = np.zeros(max(p, 1))
    cdef double[::1] awv = weights, bv = buf
    cdef double *aw = &awv[0]
    cdef double *o = &bv[0]
    cdef double *acc
    cdef const double *w
    if p == 0:
        return
    with nogil:
        for c in range(chains):
            w = &Wv[c, 0]
            for b in range(first_block, last_block):
                acc = &ov[c, b, 0]
                for j in range(p):
                    acc[j] = 0.0
                u1 = min((b + 1) * block_size, n_users)
                for u in range(b * block_size, u1):
                    _user_mean_logistic_gradient(&rows, &yv[0], ptr[u], ptr[u + 1], w, aw, o)
                    nrm = 0.0
                    for j in range(p):
                        nrm += o[j] * o[j]
                    nrm = sqrt(nrm)
                    # v min(1, C / ||v||): the clipping the sensitivity bound assumes
                    f = clip / (nrm if nrm > 1e-300 else 1e-300)
                    f = f if f < 1.0 else 1.0
                    for j in range(p):
                        acc[j] += o[j] * f


def logistic_user_terms(X, y, indptr, w):
    """One pass at ``w``: per-user gradient sums, per-row ``q = expit(-y <x, w>)``, per-user losses.

    Returns ``(G, q, loss)`` with ``G[u] = sum_{r in u} -y_r q_r x_r`` (the user's rows in order)
    and ``loss[u] = sum_{r in u} log(1 + exp(-y_r <x_r, w>))``; the objective and gradient of
    ``solve_user_clipped`` (a solver's evaluation: the certificate recomputes what it needs).
    """
    cdef Rows rows
    keep = _rows(X, &rows)
    cdef Py_ssize_t n = X.shape[0], p = rows.p
    cdef const Py_ssize_t[::1] ptr = _check_indptr(indptr, n)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef const double[::1] wv = np.ascontiguousarray(w, dtype=np.float64)
    if yv.shape[0] != n or wv.shape[0] != p:
        raise ValueError("shapes of y or w do not match X")
    cdef Py_ssize_t n_users = ptr.shape[0] - 1, u, r, j
    G = np.zeros((n_users, p))
    q = np.zeros(n)
    loss = np.zeros(n_users)
    cdef double[:, ::1] Gv = G
    cdef double[::1] qv = q, lv = loss
    cdef double z, a, acc
    cdef const double *x
    if p == 0:
        return G, q, loss
    with nogil:
        for u in range(n_users):
            acc = 0.0
            for r in range(ptr[u], ptr[u + 1]):
                if rows.dense != NULL:
                    z = dense_dot(rows.dense + r * p, &wv[0], p)
                else:
                    z = 0.0
                    for j in range(rows.rptr[r], rows.rptr[r + 1]):
                        z = z + rows.data[j] * wv[rows.cols[j]]
                z = z * yv[r]
                acc += _logaddexp0(-z)
                qv[r] = _expit(-z)
                a = -yv[r] * qv[r]
                _axpy_row(&rows, r, a, &Gv[u, 0])
            lv[u] = acc
    return G, q, loss
