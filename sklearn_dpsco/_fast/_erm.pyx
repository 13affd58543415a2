"""Certified regularised ERM: dual coordinate ascent with a duality-gap certificate.

Problem (doc/algorithms.rst, P4; doc/design.rst, contract rule 3)::

    P(w) = (1/n) sum_{i in [start, stop)} s_i psi_i(<x_i, w>) + (lam/2) ||w - w0||^2 [+ indicator_B(w)]

with ``psi_i`` the loss extended at ``k_i = C / ||x_i||`` and ``B = B(c, R)``
optional. The solver is (proximal) SDCA (Shalev-Shwartz & Zhang): one dual
variable ``beta_i`` per row, ``h(w) = lam/2 ||w - w0||^2 + indicator_B`` is
``lam``-strongly convex, so ``h^*`` is ``1/lam``-smooth with
``grad h^*(v) = Pi_B(w0 + v / lam)`` and the dual

    D(beta) = (1/n) sum_i -s_i psi_i^*(-beta_i) - h^*(v),  v = (1/n) sum_i s_i beta_i x_i

is a lower bound on ``min P`` for every feasible ``beta``. Coordinate steps are
exact 1-D maximisations of the quadratic lower bound (closed form for hinge,
absolute, Huber; safeguarded Newton for logistic and power). The coordinate
order is a permutation from a FIXED internal seed, so the output is a
deterministic function of the data. Rows whose dual variable sits at a bound
are shrunk from the sweeps (as in LIBLINEAR) until the next exact check; the
certificate always covers every row.

Certificate
-----------
At an (exactly recomputed) dual point the solver evaluates ``P(w)`` at the
primal point ``w = Pi_B(w0 + v/lam)`` (pulled slightly inside ``B`` so that it
is feasible despite rounding) and ``D(beta)``, both from scratch. Weak duality
and ``lam``-strong convexity of ``P`` give

    G = P(w) - D(beta) >= P(w) - P* >= (lam/2) ||w - w*||^2,

so ``||w - w*|| <= sqrt(2 G / lam)``. Rounding: the sums over rows (the loss
and conjugate terms, and every coordinate of ``v``) are compensated
(Neumaier), so their error is at most ``2u |sum| + O(n u^2) sum |terms|``
(``u = 2^-53``), independent of ``n`` to first order; the dot products
``<x_i, w>`` and the sums over coordinates have error at most ``d u`` times
the sum of the absolute values of their terms. The solver adds the margin
``M = ((d + 16) 2^-50 + n 2^-100) * S`` to ``G``, with ``S`` the sum of the
absolute values of every term of ``P`` and ``D`` including the first-order
effect of rounding in ``<x_i, w>``, in ``r = z - y``, in ``v`` and in
``u = w0 + v / lam`` inside ``dist(u, B)``; every loss and conjugate term is
evaluated to a few ulps *relative to itself* (e.g. ``(1 - b) log1p(-b)`` in the
logistic conjugate), and ``w`` is pulled inside ``B`` so that it is feasible
in exact arithmetic. The factor
``2^-50 = 8u`` covers the few roundings per term (exp/log/pow, products, the
division by ``n``). The reported bound is
``sqrt(2 (max(G, 0) + M) / lam) * (1 + 2^-50)``; a non-finite value yields
``inf``. It is never smaller than what the gap proves. The rounding analysis
is first order in ``u``; second-order terms are far inside the 8x headroom
for any n, d below 2^40. The minimiser ``w*`` is that of the problem with the
kernel's ``k_i`` (rounded down so that every extended loss is exactly
C-Lipschitz in ``w``, see ``_objective.row_k``).
"""
from collections import namedtuple

import numpy as np

from libc.math cimport sqrt, fabs, INFINITY, isfinite

from ._dot cimport dense_dot
from ._rows cimport RowData, _neumaier
from ._losses cimport Absolute, Loss
from ._objective cimport Problem, Objective, row_k, row_weight, loss_gradient


ERMResult = namedtuple(
    "ERMResult",
    ["w", "distance_bound", "certified", "gap", "primal", "dual", "float_margin",
     "n_epochs", "dual_coef"],
)
ERMResult.__doc__ = """Result of `certified_erm`.

w : ndarray of shape (n_features,)
    The returned primal point (feasible for the ball when one is given).
distance_bound : float
    Proven upper bound on ``||w - w*||`` (``w*`` the exact minimiser).
certified : bool
    ``distance_bound <= target_distance``.
gap : float
    ``primal - dual`` as computed (before the rounding margin).
primal, dual : float
    ``P(w)`` and ``D(dual_coef)``.
float_margin : float
    Rounding margin added to the gap.
n_epochs : int
    Work done, in passes over the rows (coordinate steps / rows, rounded
    up; shrinking makes later sweeps shorter than a pass).
dual_coef : ndarray of shape (stop - start,)
    Dual variables ``beta_i``.
"""

# An exact check runs at least every CHECK_EVERY passes' worth of coordinate
# steps even when the cheap running estimate of the gap says it cannot pass
# yet. A row leaves the visiting set after SHRINK_AFTER visits without a
# change (until the next exact check).
cdef enum:
    CHECK_EVERY = 10
    SHRINK_AFTER = 2
    ORDER_BLOCK = 256


cdef struct Ball:
    bint active
    const double *c
    double R
    double R_safe      # radius used to pull w inside B despite rounding


cdef struct Work:
    double *beta       # n_sub: dual variables
    double *dterm      # n_sub: -psi_i^*(-beta_i) for the running dual estimate
    double *pterm      # n_sub: s_i psi_i(z_i) at the last visit (primal estimate)
    int *stuck         # n_sub: consecutive visits without a change (shrinking)
    double *k          # n_sub: extension levels
    double *q          # n_sub: s_i ||x_i||^2 / (lam n), curvature of the 1-D step
    double *xc         # n_sub: <x_i, c> (ball only)
    Py_ssize_t *order  # n_active: rows with s_i > 0 (relative indices)
    Py_ssize_t n_active
    double *u          # d: w0 + v / lam, maintained incrementally
    double *w          # d: the certified primal point
    double *v          # d: v recomputed from beta
    double *vcomp      # d: compensation terms of v
    double *vabs       # d: sum of |terms| of v, for the rounding margin
    double nrm2        # ||u - c||^2 (ball only), tracked
    signed char *mark  # n_sub, blocked order only: rows of the visiting set
    Py_ssize_t *blocks # ceil(n_sub / ORDER_BLOCK), blocked order only
    bint absolute      # the loss is Absolute: the certificate's loss terms inline (_abs_*), the same floats


cdef struct Certificate:
    double primal
    double dual
    double gap
    double margin
    double distance
    double dual_sum    # sum_i s_i (-psi_i^*(-beta_i)), exact recomputation


cdef inline void _acc(double *s, double *c, double x) noexcept nogil:
    # Neumaier compensated summation step, its error by branch-free TwoSum (see _rows.pxd, _neumaier).
    cdef double t = s[0] + x
    cdef double b = t - s[0]
    c[0] += (s[0] - (t - b)) + (x - b)
    s[0] = t


# Absolute's extended loss, derivative and conjugate (_losses.pyx: Absolute.cy_ext_value, Loss.cy_ext_deriv
# of Absolute.cy_deriv, Absolute.cy_conj): the same operations, inline in the certificate's passes instead of
# a call through the class's table per row and term (the same floats).
cdef inline double _abs_ext_value(double z, double y, double k) noexcept nogil:
    return (k if k < 1.0 else 1.0) * fabs(z - y)


cdef inline double _abs_ext_deriv(double z, double y, double k) noexcept nogil:
    cdef double r = z - y
    cdef double v = 1.0 if r > 0.0 else (-1.0 if r < 0.0 else 0.0)
    return -k if v < -k else (k if v > k else v)


cdef inline double _abs_conj(double u, double y, double k) noexcept nogil:
    cdef double c = k if k < 1.0 else 1.0
    if fabs(u) <= c:
        return u * y
    return INFINITY


cdef inline double _abs_dual_update(double beta, double z, double y, double k, double q) noexcept nogil:
    # Loss.cy_dual_update of Absolute (its cy_dual_step, or -cy_ext_deriv for a zero row): the same operations
    cdef double c, v
    if q <= 0.0:
        return -_abs_ext_deriv(z, y, k)
    c = k if k < 1.0 else 1.0
    v = beta + (y - z) / q
    return -c if v < -c else (c if v > c else v)


cdef inline double _dense_row_dot(RowData rows, Py_ssize_t i, const double *w) noexcept nogil:
    # RowData.dot's dense path inline: the same four-accumulator sum, then the intercept term
    cdef double z = dense_dot(rows.dense + i * rows.n_raw, w, rows.n_raw)
    if rows.has_intercept:
        z += rows.intercept_scaling * w[rows.n_raw]
    return z


cdef inline void _dense_row_axpy(RowData rows, Py_ssize_t i, double a, double *w) noexcept nogil:
    # RowData.axpy's dense path inline: the same products added in the same order
    cdef Py_ssize_t j
    cdef const double *x = rows.dense + i * rows.n_raw
    for j in range(rows.n_raw):
        w[j] += a * x[j]
    if rows.has_intercept:
        w[rows.n_raw] += a * rows.intercept_scaling


#: Rows whose coefficients are gathered before their compensated products are added (``_flush_comp``).
cdef enum:
    COMP_BLOCK = 64


cdef void _flush_comp(RowData rows, const Py_ssize_t *r, const double *coef, Py_ssize_t m, double *v,
                      double *vc, double *va) noexcept nogil:
    """``rows.axpy_comp(r[q], coef[q], v, vc, va)`` for q = 0 .. m - 1 (dense rows), in that order for every
    coordinate: each coordinate's compensated sum sees the same terms in the same order, so the same floats.
    Four coordinates at a time over the m rows, their sums held in registers (axpy_comp stores every
    coordinate's three sums back after each row: store bound)."""
    cdef Py_ssize_t q, j, j0, p = rows.n_raw
    cdef const double *x
    cdef double a, t
    cdef double s0, s1, s2, s3, c0, c1, c2, c3, a0, a1, a2, a3
    j0 = 0
    while j0 + 4 <= p:
        s0, s1, s2, s3 = v[j0], v[j0 + 1], v[j0 + 2], v[j0 + 3]
        c0, c1, c2, c3 = vc[j0], vc[j0 + 1], vc[j0 + 2], vc[j0 + 3]
        a0, a1, a2, a3 = va[j0], va[j0 + 1], va[j0 + 2], va[j0 + 3]
        for q in range(m):
            x = rows.dense + r[q] * p + j0
            a = coef[q]
            _neumaier(&s0, &c0, &a0, a * x[0])
            _neumaier(&s1, &c1, &a1, a * x[1])
            _neumaier(&s2, &c2, &a2, a * x[2])
            _neumaier(&s3, &c3, &a3, a * x[3])
        v[j0], v[j0 + 1], v[j0 + 2], v[j0 + 3] = s0, s1, s2, s3
        vc[j0], vc[j0 + 1], vc[j0 + 2], vc[j0 + 3] = c0, c1, c2, c3
        va[j0], va[j0 + 1], va[j0 + 2], va[j0 + 3] = a0, a1, a2, a3
        j0 += 4
    for j in range(j0, p):
        s0, c0, a0 = v[j], vc[j], va[j]
        for q in range(m):
            _neumaier(&s0, &c0, &a0, coef[q] * rows.dense[r[q] * p + j])
        v[j], vc[j], va[j] = s0, c0, a0
    if rows.has_intercept:
        s0, c0, a0 = v[p], vc[p], va[p]
        t = rows.intercept_scaling
        for q in range(m):
            _neumaier(&s0, &c0, &a0, coef[q] * t)
        v[p], vc[p], va[p] = s0, c0, a0


cdef inline unsigned long long _next(unsigned long long *s) noexcept nogil:
    # xorshift64*: a fixed-seed permutation source, not a privacy RNG.
    s[0] ^= s[0] >> 12
    s[0] ^= s[0] << 25
    s[0] ^= s[0] >> 27
    return s[0] * 2685821657736338717ULL


cdef void _shuffle(Py_ssize_t *a, Py_ssize_t n, unsigned long long *s) noexcept nogil:
    cdef Py_ssize_t i, j, t
    for i in range(n - 1, 0, -1):
        j = <Py_ssize_t> (_next(s) % <unsigned long long> (i + 1))
        t = a[i]
        a[i] = a[j]
        a[j] = t


cdef void _shuffle_blocked(Work *wk, Py_ssize_t n, Py_ssize_t n_sub, unsigned long long *s) noexcept nogil:
    # The visiting set order[0:n] in a random order of blocks of ORDER_BLOCK consecutive rows,
    # shuffled within each block: the rows of a block are read while they are in cache.
    cdef Py_ssize_t i, b, base, top, first, pos = 0
    cdef Py_ssize_t n_blocks = (n_sub + ORDER_BLOCK - 1) // ORDER_BLOCK
    for i in range(n):
        wk.mark[wk.order[i]] = 1
    for b in range(n_blocks):
        wk.blocks[b] = b
    _shuffle(wk.blocks, n_blocks, s)
    for b in range(n_blocks):
        base = wk.blocks[b] * ORDER_BLOCK
        top = base + ORDER_BLOCK if base + ORDER_BLOCK < n_sub else n_sub
        first = pos
        for i in range(base, top):
            if wk.mark[i]:
                wk.mark[i] = 0
                wk.order[pos] = i
                pos += 1
        _shuffle(wk.order + first, pos - first, s)


cdef double _h_conj(const Problem *pb, const Ball *ball, const double *v,
                    const double *u, double *h_abs) noexcept nogil:
    """h^*(v) in closed form, with u = w0 + v / lam.

    h^*(v) = <v, w0> + ||v||^2 / (2 lam) - (lam/2) dist(u, B)^2: the sup of
    the concave quadratic <v, w> - lam/2 ||w - w0||^2 over B is attained at
    Pi_B(u). Evaluating it by formula (not at a rounded projection) keeps the
    dual a true lower bound up to arithmetic rounding only.

    h_abs receives the magnitudes that bound its rounding error: the absolute
    values of its terms, and lam * dist * (||w0||_1 + ||v||_1 / lam +
    ||u - c|| + R) for the rounding of u and of ||u - c|| inside dist (the
    derivative of (lam/2) dist^2 in u has norm lam * dist).
    """
    cdef Py_ssize_t j
    cdef double vw0 = 0.0, va = 0.0, vv = 0.0, t, dist = 0.0, pc2 = 0.0
    cdef double w0_l1 = 0.0, v_l1 = 0.0, lam = pb.lam
    for j in range(pb.d):
        t = v[j] * pb.w0[j]
        vw0 += t
        va += fabs(t)
        vv += v[j] * v[j]
        w0_l1 += fabs(pb.w0[j])
        v_l1 += fabs(v[j])
    if ball.active:
        for j in range(pb.d):
            t = u[j] - ball.c[j]
            pc2 += t * t
        dist = sqrt(pc2) - ball.R
        if dist < 0.0:
            dist = 0.0
    h_abs[0] = (va + vv / (2.0 * lam) + 0.5 * lam * dist * dist
                + lam * dist * (w0_l1 + v_l1 / lam + sqrt(pc2) + ball.R))
    return vw0 + vv / (2.0 * lam) - 0.5 * lam * dist * dist


cdef void _primal_point(const Problem *pb, const Ball *ball, const double *u,
                        double *w) noexcept nogil:
    """w = Pi_B(u), pulled inside B by the rounding guard R_safe."""
    cdef Py_ssize_t j
    cdef double pc2 = 0.0, t, f
    if not ball.active:
        for j in range(pb.d):
            w[j] = u[j]
        return
    for j in range(pb.d):
        t = u[j] - ball.c[j]
        pc2 += t * t
    if pc2 <= ball.R_safe * ball.R_safe:
        for j in range(pb.d):
            w[j] = u[j]
        return
    f = ball.R_safe / sqrt(pc2) if ball.R_safe > 0.0 else 0.0
    for j in range(pb.d):
        w[j] = ball.c[j] + f * (u[j] - ball.c[j])


cdef inline void _dense_dot_abs4(RowData rows, Py_ssize_t start, const Py_ssize_t *idx, const double *w,
                                 double *z, double *za) noexcept nogil:
    """``RowData.dot_abs`` of the dense rows ``start + idx[0..3]``, in lockstep.

    Each row's two sums take its terms in the same order as ``dot_abs`` (the same
    floats); the four rows' chains of dependent additions are independent, so
    they overlap instead of running one after the other (the certificate's
    primal pass was bound by the latency of one row's chain).
    """
    cdef Py_ssize_t j, m = rows.n_raw
    cdef const double *x0 = rows.dense + (start + idx[0]) * m
    cdef const double *x1 = rows.dense + (start + idx[1]) * m
    cdef const double *x2 = rows.dense + (start + idx[2]) * m
    cdef const double *x3 = rows.dense + (start + idx[3]) * m
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    cdef double t0, t1, t2, t3
    for j in range(m):
        t0 = x0[j] * w[j]
        t1 = x1[j] * w[j]
        t2 = x2[j] * w[j]
        t3 = x3[j] * w[j]
        s0 += t0
        s1 += t1
        s2 += t2
        s3 += t3
        a0 += fabs(t0)
        a1 += fabs(t1)
        a2 += fabs(t2)
        a3 += fabs(t3)
    if rows.has_intercept:
        t0 = rows.intercept_scaling * w[m]
        s0 += t0
        s1 += t0
        s2 += t0
        s3 += t0
        a0 += fabs(t0)
        a1 += fabs(t0)
        a2 += fabs(t0)
        a3 += fabs(t0)
    z[0], z[1], z[2], z[3] = s0, s1, s2, s3
    za[0], za[1], za[2], za[3] = a0, a1, a2, a3


cdef void _certify(RowData rows, Loss loss, const Problem *pb, const Ball *ball,
                   Work *wk, Certificate *ct, bint dual_only=False) noexcept nogil:
    """Exact gap at the current dual point; also resets u (drift) from beta.

    ``dual_only``: reset u and the dual terms only (the start of an ascent whose
    start point the caller already knows does not certify); no distance is proven.
    """
    cdef Py_ssize_t a, idx, i, j, d = pb.d
    cdef double n = <double> (pb.stop - pb.start)
    cdef double inv_n = 1.0 / n if n > 0 else 0.0
    cdef double lam = pb.lam, s, b, t, yi, z, za, val, der
    cdef double dual_sum = 0.0, dual_c = 0.0, dual_abs = 0.0
    cdef double loss_sum = 0.0, loss_c = 0.0, loss_abs = 0.0
    cdef double hstar, h_abs, reg = 0.0, wv = 0.0, gamma, S
    cdef double zq[4]
    cdef double zaq[4]
    cdef bint dense = not rows.is_sparse
    cdef Py_ssize_t n4 = wk.n_active - wk.n_active % 4
    cdef Py_ssize_t m = 0
    cdef Py_ssize_t rq[COMP_BLOCK]
    cdef double cq[COMP_BLOCK]
    for j in range(d):
        wk.v[j] = 0.0
        wk.vcomp[j] = 0.0
        wk.vabs[j] = 0.0
    # dual terms and v = (1/n) sum_i s_i beta_i x_i, from scratch, compensated (dense rows: gathered
    # COMP_BLOCK at a time and added by _flush_comp, the same terms in the same order per coordinate)
    for a in range(wk.n_active):
        idx = wk.order[a]
        i = pb.start + idx
        s = row_weight(pb, i)
        b = wk.beta[idx]
        yi = pb.y[i]
        if b != 0.0:
            if dense:
                rq[m] = i
                cq[m] = s * b * inv_n
                m += 1
                if m == COMP_BLOCK:
                    _flush_comp(rows, rq, cq, m, wk.v, wk.vcomp, wk.vabs)
                    m = 0
            else:
                rows.axpy_comp(i, s * b * inv_n, wk.v, wk.vcomp, wk.vabs)
        t = _abs_conj(-b, yi, wk.k[idx]) if wk.absolute else loss.cy_conj(-b, yi, wk.k[idx])
        wk.dterm[idx] = -t
        _acc(&dual_sum, &dual_c, s * (-t))
        dual_abs += s * (fabs(t) + fabs(b * yi))
    if m > 0:
        _flush_comp(rows, rq, cq, m, wk.v, wk.vcomp, wk.vabs)
    dual_sum += dual_c
    for j in range(d):
        wk.v[j] += wk.vcomp[j]
        wk.u[j] = pb.w0[j] + wk.v[j] / lam
    hstar = _h_conj(pb, ball, wk.v, wk.u, &h_abs)
    ct.dual = dual_sum * inv_n - hstar
    ct.dual_sum = dual_sum
    if dual_only:
        ct.distance = INFINITY
        if ball.active:
            wk.nrm2 = 0.0
            for j in range(d):
                t = wk.u[j] - ball.c[j]
                wk.nrm2 += t * t
        return
    # primal value at the feasible point w
    _primal_point(pb, ball, wk.u, wk.w)
    for a in range(wk.n_active):
        idx = wk.order[a]
        i = pb.start + idx
        s = row_weight(pb, i)
        yi = pb.y[i]
        if dense and a % 4 == 0 and a + 4 <= wk.n_active:
            # the products of this row and the next three (lockstep chains, each row's sums in its own order)
            _dense_dot_abs4(rows, pb.start, wk.order + a, wk.w, zq, zaq)
        if dense and a < n4:
            z, za = zq[a % 4], zaq[a % 4]
        else:
            z = rows.dot_abs(i, wk.w, &za)
        if wk.absolute:
            val = _abs_ext_value(z, yi, wk.k[idx])
            der = _abs_ext_deriv(z, yi, wk.k[idx])
        else:
            val = loss.cy_ext_value(z, yi, wk.k[idx])
            der = loss.cy_ext_deriv(z, yi, wk.k[idx])
        _acc(&loss_sum, &loss_c, s * val)
        # |val| for the sum; |psi'| (|<x,w>|_abs + |z| + |y|) for the rounding
        # of z = <x_i, w> and of r = z - y inside the loss
        loss_abs += s * (fabs(val) + fabs(der) * (za + fabs(z) + fabs(yi)))
    loss_sum += loss_c
    for j in range(d):
        t = wk.w[j] - pb.w0[j]
        reg += t * t
        wv += fabs(wk.w[j]) * wk.vabs[j]  # first-order effect of rounding in v
    reg *= 0.5 * lam
    ct.primal = loss_sum * inv_n + reg
    ct.gap = ct.primal - ct.dual
    # Why: rounding margin, see the module docstring. Row sums are
    # compensated (error 2u|sum| + O(n u^2) sum|terms|); dot products and
    # coordinate sums have length <= d; 2^-50 = 8u is headroom per term.
    gamma = (d + 16.0) * 2.0 ** -50 + n * 2.0 ** -100
    S = loss_abs * inv_n + reg + dual_abs * inv_n + h_abs + wv
    ct.margin = gamma * S
    if not (isfinite(ct.gap) and isfinite(ct.margin)):
        ct.distance = INFINITY
        return
    t = ct.gap if ct.gap > 0.0 else 0.0
    # Why: strong convexity, (lam/2) ||w - w*||^2 <= P(w) - P* <= G + M.
    ct.distance = sqrt(2.0 * (t + ct.margin) / lam) * (1.0 + 2.0 ** -50)
    if ball.active:
        wk.nrm2 = 0.0
        for j in range(d):
            t = wk.u[j] - ball.c[j]
            wk.nrm2 += t * t


cdef Py_ssize_t _sdca(RowData rows, Loss loss, const Problem *pb, const Ball *ball,
                      double target, Py_ssize_t max_epochs, Work *wk,
                      Certificate *ct, bint blocked_order, bint check_start) noexcept nogil:
    """Run SDCA until the certified distance is <= target.

    Returns the work done in epochs (coordinate steps / rows, rounded up).

    Shrinking (as in LIBLINEAR): a row whose dual variable did not move on
    SHRINK_AFTER consecutive visits (it sits at a bound of its domain) leaves
    the visiting set until the next exact check (or until every row has
    left). Shrinking only changes which coordinates are updated; every
    certificate is computed over all rows.
    """
    cdef Py_ssize_t a, idx, i, j, d = pb.d, n_visit, tmp
    cdef double n = <double> (pb.stop - pb.start)
    cdef double lam = pb.lam, s, yi, k, q, xu, z, tau, b_old, b_new, step, t, val
    cdef double p_est = 0.0, d_est, hstar, h_abs, reg, g_est
    cdef double work = 0.0, since_check = 0.0, budget, spacing = 1.0
    cdef double tol_gap = 0.5 * lam * target * target
    cdef unsigned long long rng = 0x9E3779B97F4A7C15ULL  # fixed seed
    cdef bint check, blocked = False
    cdef bint dense = not rows.is_sparse
    _certify(rows, loss, pb, ball, wk, ct, not check_start and max_epochs > 0 and wk.n_active > 0)
    if max_epochs == 0 or ct.distance <= target or wk.n_active == 0:
        return 0
    budget = <double> max_epochs * wk.n_active
    d_est = ct.dual_sum
    n_visit = wk.n_active
    while True:
        if blocked_order and 4 * n_visit >= pb.stop - pb.start:
            # (a blocked sweep costs O(n_sub); once shrinking leaves few rows, they fit in cache)
            _shuffle_blocked(wk, n_visit, pb.stop - pb.start, &rng)
        else:
            _shuffle(wk.order, n_visit, &rng)
        work += n_visit
        since_check += n_visit
        a = 0
        while a < n_visit:
            idx = wk.order[a]
            i = pb.start + idx
            s = row_weight(pb, i)
            yi = pb.y[i]
            k = wk.k[idx]
            q = wk.q[idx]
            xu = _dense_row_dot(rows, i, wk.u) if dense else rows.dot(i, wk.u)
            if ball.active:
                # z = <x_i, Pi_B(u)> = <x_i, c> + tau (<x_i, u> - <x_i, c>)
                tau = 1.0 if wk.nrm2 <= ball.R * ball.R else ball.R / sqrt(wk.nrm2)
                z = wk.xc[idx] + tau * (xu - wk.xc[idx])
            else:
                z = xu
            if wk.absolute:
                val = s * _abs_ext_value(z, yi, k)
            else:
                val = s * loss.cy_ext_value(z, yi, k)
            p_est += val - wk.pterm[idx]
            wk.pterm[idx] = val
            b_old = wk.beta[idx]
            b_new = _abs_dual_update(b_old, z, yi, k, q) if wk.absolute else loss.cy_dual_update(b_old, z, yi, k, q)
            if b_new == b_old:
                wk.stuck[idx] += 1
                if wk.stuck[idx] >= SHRINK_AFTER:
                    n_visit -= 1
                    tmp = wk.order[a]
                    wk.order[a] = wk.order[n_visit]
                    wk.order[n_visit] = tmp
                    continue
                a += 1
                continue
            wk.stuck[idx] = 0
            a += 1
            wk.beta[idx] = b_new
            step = s * (b_new - b_old) / (lam * n)
            if ball.active:
                wk.nrm2 += 2.0 * step * (xu - wk.xc[idx]) + step * step * rows.sq_norm(i)
                if wk.nrm2 < 0.0:
                    wk.nrm2 = 0.0
            if dense:
                _dense_row_axpy(rows, i, step, wk.u)
            else:
                rows.axpy(i, step, wk.u)
            t = -(_abs_conj(-b_new, yi, k) if wk.absolute else loss.cy_conj(-b_new, yi, k))
            d_est += s * (t - wk.dterm[idx])
            wk.dterm[idx] = t
        # cheap running estimate of the gap (a trigger only, never reported):
        # cached loss terms of the rows at their last visit
        for j in range(d):
            wk.v[j] = lam * (wk.u[j] - pb.w0[j])
        hstar = _h_conj(pb, ball, wk.v, wk.u, &h_abs)
        _primal_point(pb, ball, wk.u, wk.w)
        reg = 0.0
        for j in range(d):
            t = wk.w[j] - pb.w0[j]
            reg += t * t
        g_est = p_est / n + 0.5 * lam * reg - (d_est / n - hstar)
        # Exact check when the estimate says it may pass (unless rounding
        # alone was seen to forbid the target; the estimate can be stale, so
        # after each failed check the minimum spacing between checks doubles,
        # from one pass' worth of steps up to CHECK_EVERY), after CHECK_EVERY
        # passes' worth of steps, and when the budget is spent.
        check = ((g_est <= tol_gap and not blocked and since_check >= spacing * wk.n_active)
                 or work >= budget or since_check >= CHECK_EVERY * wk.n_active)
        if check:
            _certify(rows, loss, pb, ball, wk, ct)
            d_est = ct.dual_sum
            if ct.distance <= target or work >= budget:
                break
            blocked = sqrt(2.0 * ct.margin / lam) > target
            since_check = 0.0
            # the estimate was too optimistic: trust it less next time
            spacing = spacing * 2.0 if spacing < CHECK_EVERY else <double> CHECK_EVERY
        if check or n_visit == 0:
            # unshrink: after every exact check, or when every row is shrunk.
            # A returning row that still does not move leaves again at once.
            n_visit = wk.n_active
            for a in range(wk.n_active):
                if wk.stuck[wk.order[a]] >= SHRINK_AFTER:
                    wk.stuck[wk.order[a]] = SHRINK_AFTER - 1
    return <Py_ssize_t> ((work + wk.n_active - 1) // wk.n_active)


def certified_erm(RowData rows not None, y, Loss loss not None, double lam, w0=None, *,
                  clip=None, sample_weight=None, Py_ssize_t start=0, stop=None,
                  double target_distance, Py_ssize_t max_epochs,
                  ball_center=None, ball_radius=None, dual_start=None, bint blocked_order=False,
                  bint check_start=True):
    """Solve regularised ERM with a certified distance to the exact minimiser.

    Minimises ``P(w) = (1/n) sum_{i in [start, stop)} s_i psi_i(<x_i, w>) +
    (lam/2) ||w - w0||^2`` over R^d (or over ``B(ball_center, ball_radius)``),
    ``psi_i`` the loss extended at ``k_i = clip / ||x_i||``, by dual coordinate
    ascent, and stops when the duality gap proves
    ``||w - w*|| <= target_distance`` or after ``max_epochs`` passes.

    Parameters
    ----------
    rows : RowData
    y : ndarray of shape (n_samples,)
    loss : Loss
    lam : float, > 0
        Strong-convexity (regularisation) parameter.
    w0 : ndarray of shape (n_features,), default=None
        Regularisation centre (zeros when None).
    clip : float or None, default=None
        Lipschitz level C of the extension; None: the raw loss.
    sample_weight : ndarray of shape (n_samples,), default=None
        Weights in [0, 1]; the objective divides by ``n = stop - start``.
    start, stop : int
        Row range (a view, no copy).
    target_distance : float, >= 0
        Certified accuracy to reach (public).
    max_epochs : int, >= 0
        Budget in passes' worth of coordinate steps (public). The solver
        stops after the first sweep that reaches it.
    ball_center, ball_radius : ndarray of shape (n_features,), float, default=None
        Optional constraint set ``B(c, R)``.
    dual_start : ndarray of shape (stop - start,), default=None
        Dual variables to start the ascent from (None: zeros), e.g.
        ``-psi_i'(<x_i, w_s>)`` at a closed-form or Newton guess ``w_s``. An
        entry outside the conjugate's domain (or not finite) starts at 0.
        It only changes where the ascent starts: the certificate is computed
        from the dual variables exactly as without it.
    blocked_order : bool, default=False
        Visit the rows of each pass in a random order of blocks of
        ``ORDER_BLOCK`` consecutive rows, shuffled within each block, instead
        of a uniformly shuffled order (while at least a quarter of the rows
        are visited; shrinking leaves fewer): a block's rows are read while they are
        in cache (about 2x fewer seconds per pass on a block of rows several
        times the size of the cache). Only the ascent's path changes; the
        certificate is the same duality gap over every row.
    check_start : bool, default=True
        Whether to check the certificate at the start point before the first
        pass. ``False`` (with ``max_epochs > 0``) is for a start point the
        caller has just seen fail the same check, e.g. the ``dual_coef`` of an
        uncertified result on the same problem: the ascent then starts without
        that pass over the rows and takes the same path. The returned
        certificate is always computed after the last pass.

    Returns
    -------
    result : ERMResult
        ``w``, ``distance_bound``, ``certified``, ``gap``, ``primal``,
        ``dual``, ``float_margin``, ``n_epochs``, ``dual_coef``.

    Notes
    -----
    ``distance_bound = sqrt(2 (max(gap, 0) + float_margin) / lam)``, rounded
    up, is proven for the returned ``w`` whether or not it is ``certified``
    (module docstring). A caller doing output perturbation must use
    ``distance_bound`` -- or refuse -- when ``certified`` is False.
    """
    cdef Objective obj = Objective(rows, y, loss, lam, w0, clip, sample_weight, start, stop)
    cdef Problem *pb = &obj.pb
    cdef Py_ssize_t n_sub = pb.stop - pb.start, d = pb.d, idx, i
    cdef Ball ball
    cdef Work wk
    cdef Certificate ct
    cdef double s, cnorm
    cdef const double[::1] cview
    if not (lam > 0.0) or not isfinite(lam):
        raise ValueError(f"lam must be finite and > 0, got {lam!r}")
    if not (target_distance >= 0.0):
        raise ValueError(f"target_distance must be >= 0, got {target_distance!r}")
    if max_epochs < 0:
        raise ValueError(f"max_epochs must be >= 0, got {max_epochs}")
    ball.active = False
    ball.c = NULL
    ball.R = ball.R_safe = 0.0
    if (ball_center is None) != (ball_radius is None):
        raise ValueError("ball_center and ball_radius go together")
    c_arr = None
    if ball_center is not None:
        c_arr = np.ascontiguousarray(ball_center, dtype=np.float64)
        if c_arr.shape != (d,) or not np.all(np.isfinite(c_arr)):
            raise ValueError(f"ball_center must be a finite array of shape ({d},)")
        ball.R = float(ball_radius)
        if not (ball.R > 0.0) or not isfinite(ball.R):
            raise ValueError(f"ball_radius must be finite and > 0, got {ball_radius!r}")
        ball.active = True
        cview = c_arr
        ball.c = &cview[0] if d > 0 else NULL
        cnorm = float(np.linalg.norm(c_arr))
        # Why: the computed w = c + f (u - c) must satisfy ||w - c|| <= R in
        # exact arithmetic; rounding in the norm (relative (d/2 + 2) 2^-53)
        # and in the coordinates (2^-53 (||c|| + R) absolute) is absorbed by
        # shrinking the radius.
        ball.R_safe = (ball.R - 2.0 ** -52 * (cnorm + ball.R)) / (1.0 + (d + 10) * 2.0 ** -53)

    # a dual start fills every entry of beta (_feasible_dual below)
    beta = np.zeros(n_sub) if dual_start is None else np.empty(n_sub)
    dterm = np.zeros(n_sub)
    pterm = np.zeros(n_sub)
    stuck = np.zeros(n_sub, dtype=np.intc)
    kk = obj.k_values()
    # the cached squared norms of the range (a view: RowData.row_norms would copy every row's)
    sq = rows._sq_array[pb.start:pb.stop]
    if pb.sw == NULL:
        # unit weights: 1 * sq is sq exactly, and every row is active
        qq = sq / (lam * n_sub) if n_sub > 0 else np.zeros(0)
        order = np.arange(n_sub, dtype=np.intp)
    else:
        sw = np.asarray(obj._keep[2])[pb.start:pb.stop]
        qq = np.ascontiguousarray(sw * sq / (lam * n_sub)) if n_sub > 0 else np.zeros(0)
        order = np.ascontiguousarray(np.flatnonzero(sw > 0.0), dtype=np.intp)
    w0_arr = np.asarray(obj._keep[1])
    u = w0_arr.copy()
    w = np.zeros(d)
    v = np.zeros(d)
    vcomp = np.zeros(d)
    vabs = np.zeros(d)
    # <x_i, c> is read with a ball only
    xc = np.zeros(n_sub if ball.active else 1)
    if ball.active and n_sub > 0:
        xc = np.ascontiguousarray(rows.matvec(c_arr)[pb.start:pb.stop])
    if dual_start is not None:
        start_arr = np.asarray(dual_start, dtype=np.float64)
        if start_arr.shape != (n_sub,):
            raise ValueError(f"dual_start must have shape ({n_sub},), got {start_arr.shape}")
        _feasible_dual(loss, pb, start_arr, kk, beta)
    cdef double[::1] beta_v = beta, dterm_v = dterm, pterm_v = pterm, k_v = kk, q_v = qq
    cdef double[::1] xc_v = xc
    cdef int[::1] stuck_v = stuck
    cdef int dummy_int = 0
    cdef double[::1] u_v = u, w_v = w, v_v = v, vcomp_v = vcomp, vabs_v = vabs
    cdef Py_ssize_t[::1] order_v = order
    cdef double dummy = 0.0
    cdef Py_ssize_t dummy_i = 0
    wk.beta = &beta_v[0] if n_sub > 0 else &dummy
    wk.dterm = &dterm_v[0] if n_sub > 0 else &dummy
    wk.pterm = &pterm_v[0] if n_sub > 0 else &dummy
    wk.stuck = &stuck_v[0] if n_sub > 0 else &dummy_int
    wk.k = &k_v[0] if n_sub > 0 else &dummy
    wk.q = &q_v[0] if n_sub > 0 else &dummy
    wk.xc = &xc_v[0] if n_sub > 0 else &dummy
    wk.order = &order_v[0] if order.shape[0] > 0 else &dummy_i
    wk.n_active = order.shape[0]
    wk.u = &u_v[0] if d > 0 else &dummy
    wk.w = &w_v[0] if d > 0 else &dummy
    wk.v = &v_v[0] if d > 0 else &dummy
    wk.vcomp = &vcomp_v[0] if d > 0 else &dummy
    wk.vabs = &vabs_v[0] if d > 0 else &dummy
    wk.nrm2 = 0.0
    wk.absolute = type(loss) is Absolute
    # blocked order: the visiting set's membership marks and the block permutation
    mark = np.zeros(n_sub if blocked_order else 0, dtype=np.int8)
    blocks = np.zeros((n_sub + ORDER_BLOCK - 1) // ORDER_BLOCK if blocked_order else 0, dtype=np.intp)
    cdef signed char[::1] mark_v = mark
    cdef Py_ssize_t[::1] blocks_v = blocks
    cdef signed char dummy_c = 0
    wk.mark = &mark_v[0] if mark.shape[0] > 0 else &dummy_c
    wk.blocks = &blocks_v[0] if blocks.shape[0] > 0 else &dummy_i
    cdef Py_ssize_t n_epochs
    with nogil:
        n_epochs = _sdca(rows, loss, pb, &ball, target_distance, max_epochs, &wk, &ct, blocked_order,
                         check_start)
    return ERMResult(
        w=w, distance_bound=float(ct.distance),
        certified=bool(ct.distance <= target_distance),
        gap=float(ct.gap), primal=float(ct.primal), dual=float(ct.dual),
        float_margin=float(ct.margin), n_epochs=int(n_epochs), dual_coef=beta,
    )


cdef void _feasible_dual(Loss loss, const Problem *pb, const double[:] guess, const double[::1] k,
                         double[::1] beta):
    # beta_i = guess_i where -psi_i^*(-guess_i) is finite (the dual objective's domain), else 0
    cdef Py_ssize_t idx
    cdef double b
    cdef bint absolute = type(loss) is Absolute
    with nogil:
        for idx in range(pb.stop - pb.start):
            b = guess[idx]
            if isfinite(b) and isfinite(_abs_conj(-b, pb.y[pb.start + idx], k[idx]) if absolute
                                        else loss.cy_conj(-b, pb.y[pb.start + idx], k[idx])):
                beta[idx] = b
            else:
                beta[idx] = 0.0


def gradient(RowData rows not None, y, Loss loss not None, w, *, clip=None,
             sample_weight=None, Py_ssize_t start=0, stop=None):
    """Mean extended loss gradient ``(1/n) sum_i s_i psi_i'(<x_i, w>) x_i``.

    Parameters
    ----------
    rows : RowData
    y : ndarray of shape (n_samples,)
    loss : Loss
    w : ndarray of shape (n_features,)
    clip : float or None, default=None
    sample_weight : ndarray of shape (n_samples,), default=None
    start, stop : int
        Row range ``[start, stop)``; ``n = stop - start``.

    Returns
    -------
    g : ndarray of shape (n_features,)

    Notes
    -----
    Computed by the nogil row loop (``<x_i, w>`` then ``w += c_i x_i`` while
    the row is still in cache). It beat the two-BLAS-call alternative
    ``X.T @ coef(X @ w)`` (`_gradient_blas`) on dense and CSR data in
    benchmarks/bench_kernels.py: the row loop reads X once, BLAS twice.
    """
    cdef Objective obj = Objective(rows, y, loss, 0.0, None, clip, sample_weight, start, stop)
    return obj.loss_gradient(obj._w(w))


def _gradient_blas(Objective obj, w):
    """`gradient` through two matrix-vector products (``X @ w``, ``X.T @ c``).

    Kept for the benchmark that chose the row loop.
    """
    cdef RowData rows = obj.rows
    start, stop = obj.pb.start, obj.pb.stop
    X = rows._X[start:stop]
    n_raw = rows.n_raw
    w = np.asarray(w)
    z = X @ w[:n_raw]
    if rows.has_intercept:
        z += rows.intercept_scaling * w[n_raw]
    y = obj._keep[0][start:stop]
    coef = obj.loss.ext_deriv(z, y, obj.k_values())
    if obj.pb.sw != NULL:
        coef *= obj._keep[2][start:stop]
    coef /= obj.n
    g = np.empty(rows.n_features)
    g[:n_raw] = X.T @ coef
    if rows.has_intercept:
        g[n_raw] = rows.intercept_scaling * coef.sum()
    return g


def group_gradient_sums(RowData rows not None, y, Loss loss not None, w, group_indptr, *,
                        clip=None):
    """Per-group sums of extended per-row gradients.

    Rows are pre-sorted so that group ``g`` is rows
    ``[group_indptr[g], group_indptr[g + 1])``.

    Parameters
    ----------
    rows : RowData
    y : ndarray of shape (n_samples,)
    loss : Loss
    w : ndarray of shape (n_features,)
    group_indptr : ndarray of shape (n_groups + 1,)
        Non-decreasing, from 0 to at most n_samples.
    clip : float or None, default=None

    Returns
    -------
    sums : ndarray of shape (n_groups, n_features)
        ``sums[g] = sum_{i in group g} psi_i'(<x_i, w>) x_i``.
    """
    cdef Objective obj = Objective(rows, y, loss, 0.0, None, clip)
    cdef const double[::1] wv = obj._w(w)
    ptr = np.ascontiguousarray(group_indptr, dtype=np.intp)
    if ptr.ndim != 1 or ptr.shape[0] < 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0) \
            or ptr[ptr.shape[0] - 1] > rows.n_samples:
        raise ValueError("group_indptr must be non-decreasing from 0 to <= n_samples")
    cdef const Py_ssize_t[::1] pv = ptr
    cdef Py_ssize_t G = ptr.shape[0] - 1, d = rows.n_features, g, i
    out = np.zeros((G, d))
    cdef double[:, ::1] ov = out
    cdef double c
    cdef Problem *pb = &obj.pb
    if G > 0 and d > 0:
        with nogil:
            for g in range(G):
                for i in range(pv[g], pv[g + 1]):
                    c = loss.cy_ext_deriv(rows.dot(i, &wv[0]), pb.y[i], row_k(rows, i, pb))
                    if c != 0.0:
                        rows.axpy(i, c, &ov[g, 0])
    return out
