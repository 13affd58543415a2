"""Euclidean projections: ball, intersection of two balls (exact, closed
form), and Lowy's xi-inexact projection onto W cap B(c, r) (L-Lemma 2.8).

The ``cdef nogil`` versions work in place on a ``double*`` and return an
error code (0 = success, -1 = empty set); the Python wrappers copy their input
and raise on an empty set.
"""
import numpy as np

from libc.math cimport sqrt, ceil, log2, fabs, INFINITY, isfinite


cdef double sq_dist(const double *a, const double *b, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = 0.0, t
    for j in range(d):
        t = a[j] - b[j]
        s += t * t
    return s


cdef void proj_ball(double *v, const double *c, double r, Py_ssize_t d) noexcept nogil:
    """v <- Pi_{B(c, r)}(v)."""
    cdef double n2 = sq_dist(v, c, d), f
    cdef Py_ssize_t j
    if n2 <= r * r:
        return
    f = r / sqrt(n2)
    for j in range(d):
        v[j] = c[j] + f * (v[j] - c[j])


cdef int proj_two_balls(double *v, const double *c1, double r1, const double *c2,
                        double r2, Py_ssize_t d) noexcept nogil:
    """v <- exact projection onto B(c1, r1) cap B(c2, r2).

    If projecting on one ball lands in the other, that is the answer (only
    that constraint is active). Otherwise both constraints are active and the
    projection is the point of the sphere S1 cap S2 -- a (d-2)-sphere of
    centre ``c1 + a e`` and radius ``rho`` in the hyperplane orthogonal to
    ``e = (c2 - c1) / D`` -- nearest to v: drop v's component along e and
    move radially to distance rho. All in O(d) with scalars only.
    """
    cdef Py_ssize_t j, jmin
    cdef double A = 0.0, B = 0.0, DD = 0.0, D, t, f, a, rho2, rho, s, h2, h
    cdef double emin, e_j, n2v2, tau
    # A = ||v - c1||^2, B = <v - c1, c2 - c1>, DD = ||c2 - c1||^2
    for j in range(d):
        t = v[j] - c1[j]
        f = c2[j] - c1[j]
        A += t * t
        B += t * f
        DD += f * f
    D = sqrt(DD)
    if D > r1 + r2:
        return -1
    # candidate 1: projection on B1 = c1 + tau (v - c1)
    tau = 1.0 if A <= r1 * r1 else r1 / sqrt(A)
    # ||c1 + tau (v - c1) - c2||^2 = DD - 2 tau B + tau^2 A
    if DD - 2.0 * tau * B + tau * tau * A <= r2 * r2:
        if tau < 1.0:
            for j in range(d):
                v[j] = c1[j] + tau * (v[j] - c1[j])
        return 0
    # candidate 2: projection on B2
    n2v2 = A - 2.0 * B + DD  # ||v - c2||^2
    tau = 1.0 if n2v2 <= r2 * r2 else r2 / sqrt(n2v2)
    # ||c2 + tau (v - c2) - c1||^2 = DD + 2 tau <v - c2, c2 - c1> + tau^2 ||v - c2||^2
    if DD + 2.0 * tau * (B - DD) + tau * tau * n2v2 <= r1 * r1:
        if tau < 1.0:
            for j in range(d):
                v[j] = c2[j] + tau * (v[j] - c2[j])
        return 0
    if D == 0.0:
        # concentric: the smaller ball; both checks failing means rounding
        proj_ball(v, c1, r1 if r1 < r2 else r2, d)
        return 0
    # both active: the circle S1 cap S2
    a = 0.5 * (r1 * r1 - r2 * r2 + DD) / D
    rho2 = r1 * r1 - a * a
    rho = sqrt(rho2) if rho2 > 0.0 else 0.0
    s = B / D                      # <v - c1, e>
    h2 = A - s * s                 # squared distance of v from the axis
    h = sqrt(h2) if h2 > 0.0 else 0.0
    if h > 1e-300 * (1.0 + sqrt(A)):
        f = rho / h
        for j in range(d):
            e_j = (c2[j] - c1[j]) / D
            v[j] = c1[j] + a * e_j + f * ((v[j] - c1[j]) - s * e_j)
        return 0
    # v on the axis: every point of the circle is nearest; take the direction
    # of the coordinate axis least aligned with e, orthogonalised against e.
    jmin = 0
    emin = INFINITY
    for j in range(d):
        e_j = fabs(c2[j] - c1[j]) / D
        if e_j < emin:
            emin = e_j
            jmin = j
    e_j = (c2[jmin] - c1[jmin]) / D
    h = sqrt(1.0 - e_j * e_j) if e_j * e_j < 1.0 else 0.0
    for j in range(d):
        f = (c2[j] - c1[j]) / D
        t = ((1.0 if j == jmin else 0.0) - e_j * f)
        v[j] = c1[j] + a * f + (rho * t / h if h > 0.0 else 0.0)
    return 0


cdef inline double _g_lemma28(double lam, double A, double B, double C, double rw,
                              double r) noexcept nogil:
    """g(lam) = ||Pi_W(z_lam) - c||^2 - r^2 with z_lam = (y + lam c)/(1 + lam).

    Scalars: A = ||y - cw||^2, B = <y - cw, c - cw>, C = ||c - cw||^2, so
    ||z - cw||^2 = (A + 2 lam B + lam^2 C)/(1+lam)^2 and
    <c - cw, z - cw> = (B + lam C)/(1 + lam).
    """
    cdef double s = 1.0 / (1.0 + lam)
    cdef double zz = (A + 2.0 * lam * B + lam * lam * C) * s * s
    cdef double zc = (B + lam * C) * s
    cdef double tau = 1.0
    if zz > rw * rw:
        tau = rw / sqrt(zz)
    return C - 2.0 * tau * zc + tau * tau * zz - r * r


cdef int inexact_proj_two_balls(double *v, const double *cw, double rw,
                                const double *c, double r, double xi,
                                Py_ssize_t d) noexcept nogil:
    """v <- Lowy L-Lemma 2.8 xi-inexact projection onto W cap B(c, r), W = B(cw, rw).

    1. If Pi_W(v) is in B(c, r), return it.
    2. Else bisect lam in [0, lam_bar], lam_bar = ||v - c|| / r, on
       g(lam) = ||Pi_W(z_lam) - c||^2 - r^2 (non-increasing),
       z_lam = (v + lam c) / (1 + lam), for N = ceil(log2(1 + ||v - c||^2 / (r xi)))
       steps, and return Pi_W(z_hi) at the upper end of the bracket
       (g(hi) <= 0: the point lies in the set).
    The lemma needs c in W (then g(lam_bar) <= 0); if c is outside W we
    double lam_bar until g <= 0, and report an empty set if that fails.
    """
    cdef Py_ssize_t j
    cdef double A = 0.0, B = 0.0, C = 0.0, t, f, yc2, lo, hi, mid, s, zz, tau
    cdef int n_steps, it
    for j in range(d):
        t = v[j] - cw[j]
        f = c[j] - cw[j]
        A += t * t
        B += t * f
        C += f * f
    if _g_lemma28(0.0, A, B, C, rw, r) <= 0.0:
        proj_ball(v, cw, rw, d)
        return 0
    if C > (rw + r) * (rw + r):
        return -1
    yc2 = A - 2.0 * B + C  # ||v - c||^2
    hi = sqrt(yc2) / r
    it = 0
    while _g_lemma28(hi, A, B, C, rw, r) > 0.0:
        hi *= 2.0
        it += 1
        if it > 2000 or not isfinite(hi):
            return -1
    lo = 0.0
    if xi > 0.0:
        n_steps = <int> ceil(log2(1.0 + yc2 / (r * xi)))
    else:
        n_steps = 200
    if n_steps > 200:
        n_steps = 200
    for it in range(n_steps):
        mid = 0.5 * (lo + hi)
        if _g_lemma28(mid, A, B, C, rw, r) <= 0.0:
            hi = mid
        else:
            lo = mid
    # materialise x = Pi_W(z_hi)
    s = 1.0 / (1.0 + hi)
    zz = (A + 2.0 * hi * B + hi * hi * C) * s * s
    tau = 1.0 if zz <= rw * rw else rw / sqrt(zz)
    for j in range(d):
        v[j] = cw[j] + tau * s * ((v[j] - cw[j]) + hi * (c[j] - cw[j]))
    return 0


cdef int project_domain(const Domain *dom, double *v, double xi) noexcept nogil:
    """Project v in place on the domain; for two balls use the xi-inexact
    projection when xi > 0, the exact one otherwise."""
    if dom.kind == DOMAIN_BALL:
        proj_ball(v, dom.c1, dom.r1, dom.d)
        return 0
    if dom.kind == DOMAIN_TWO_BALLS:
        if xi > 0.0:
            return inexact_proj_two_balls(v, dom.c1, dom.r1, dom.c2, dom.r2, xi, dom.d)
        return proj_two_balls(v, dom.c1, dom.r1, dom.c2, dom.r2, dom.d)
    return 0


cdef double domain_diameter(const Domain *dom) noexcept nogil:
    """An upper bound on the diameter: 2 * (smallest radius)."""
    if dom.kind == DOMAIN_BALL:
        return 2.0 * dom.r1
    if dom.kind == DOMAIN_TWO_BALLS:
        return 2.0 * (dom.r1 if dom.r1 < dom.r2 else dom.r2)
    return INFINITY


cdef class DomainData:
    """Feasible set shared by the loops: R^d, a ball, or ball cap ball.

    Parameters
    ----------
    d : int
    ball_center, ball_radius : array of shape (d,) and float, or None
        The main domain W = B(ball_center, ball_radius).
    local_center, local_radius : array of shape (d,) and float, or None
        Lowy's localisation ball; the domain is then W cap B(local_center,
        local_radius) and needs W.
    xi : float, default=0.0
        Two balls only: > 0 selects the xi-inexact projection of L-Lemma 2.8,
        0 the exact projection.
    """

    def __cinit__(self, Py_ssize_t d, ball_center=None, ball_radius=None,
                  local_center=None, local_radius=None, double xi=0.0):
        cdef const double[::1] c1v, c2v
        self.dom.kind = DOMAIN_NONE
        self.dom.d = d
        self.dom.xi = xi
        self._keep = ()
        if not (xi >= 0.0) or not isfinite(xi):
            raise ValueError(f"xi must be finite and >= 0, got {xi!r}")
        if (ball_center is None) != (ball_radius is None):
            raise ValueError("ball_center and ball_radius go together")
        if (local_center is None) != (local_radius is None):
            raise ValueError("local_center and local_radius go together")
        if local_center is not None and ball_center is None:
            raise ValueError("a local ball needs the main ball (ball_center, ball_radius)")
        if ball_center is None:
            return
        c1 = _center(ball_center, d, "ball_center")
        self.dom.r1 = _radius(ball_radius, "ball_radius")
        c1v = c1
        self.dom.c1 = &c1v[0] if d > 0 else NULL
        self.dom.kind = DOMAIN_BALL
        self._keep = (c1,)
        if local_center is None:
            return
        c2 = _center(local_center, d, "local_center")
        self.dom.r2 = _radius(local_radius, "local_radius")
        c2v = c2
        self.dom.c2 = &c2v[0] if d > 0 else NULL
        self.dom.kind = DOMAIN_TWO_BALLS
        self._keep = (c1, c2)
        if np.linalg.norm(c1 - c2) > self.dom.r1 + self.dom.r2:
            raise ValueError("the two balls do not intersect")

    @property
    def kind(self):
        return int(self.dom.kind)

    @property
    def diameter(self):
        return domain_diameter(&self.dom)

    def project(self, v, xi=None):
        """Project a copy of v on the domain (``xi`` overrides the default)."""
        cdef double x = self.dom.xi if xi is None else xi
        out = np.array(v, dtype=np.float64, copy=True)
        if out.shape != (self.dom.d,):
            raise ValueError(f"v must have shape ({self.dom.d},), got {out.shape}")
        cdef double[::1] ov = out
        cdef int rc = 0
        if self.dom.d > 0:
            with nogil:
                rc = project_domain(&self.dom, &ov[0], x)
        if rc != 0:
            raise ValueError("empty feasible set")
        return out


def _center(c, Py_ssize_t d, name):
    arr = np.ascontiguousarray(c, dtype=np.float64)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _radius(r, name):
    r = float(r)
    if not (r > 0.0) or not np.isfinite(r):
        raise ValueError(f"{name} must be finite and > 0, got {r!r}")
    return r


def project_ball(v, c, r):
    """Euclidean projection onto the ball ``B(c, r)``.

    Parameters
    ----------
    v, c : array-like of shape (d,)
    r : float, > 0

    Returns
    -------
    x : ndarray of shape (d,)
    """
    out = np.array(v, dtype=np.float64, copy=True).reshape(-1)
    cdef const double[::1] cv = _center(c, out.shape[0], "c")
    cdef double rr = _radius(r, "r")
    cdef double[::1] ov = out
    if out.shape[0] > 0:
        with nogil:
            proj_ball(&ov[0], &cv[0], rr, ov.shape[0])
    return out


def project_two_balls(v, c1, r1, c2, r2):
    """Exact Euclidean projection onto ``B(c1, r1) cap B(c2, r2)``.

    Parameters
    ----------
    v, c1, c2 : array-like of shape (d,)
    r1, r2 : float, > 0

    Returns
    -------
    x : ndarray of shape (d,)

    Raises
    ------
    ValueError
        If the two balls do not intersect.
    """
    out = np.array(v, dtype=np.float64, copy=True).reshape(-1)
    cdef Py_ssize_t d = out.shape[0]
    cdef const double[::1] a = _center(c1, d, "c1")
    cdef const double[::1] b = _center(c2, d, "c2")
    cdef double ra = _radius(r1, "r1"), rb = _radius(r2, "r2")
    cdef double[::1] ov = out
    cdef int rc = 0
    if d > 0:
        with nogil:
            rc = proj_two_balls(&ov[0], &a[0], ra, &b[0], rb, d)
    if rc != 0:
        raise ValueError("the two balls do not intersect")
    return out


def inexact_project_two_balls(v, center_w, radius_w, c, r, xi):
    """Lowy's xi-inexact projection onto ``W cap B(c, r)``, ``W = B(center_w, radius_w)``.

    Lowy 2026, Lemma 2.8 (doc/algorithms.rst, L-Lemma 2.8): the result lies in
    ``W cap B(c, r)`` and within ``xi`` of the exact projection (when ``c``
    lies in ``W``, as in Lowy's use where ``c = Pi_W(.)``).

    Parameters
    ----------
    v, center_w, c : array-like of shape (d,)
    radius_w, r, xi : float, > 0

    Returns
    -------
    x : ndarray of shape (d,)
    """
    out = np.array(v, dtype=np.float64, copy=True).reshape(-1)
    cdef Py_ssize_t d = out.shape[0]
    cdef const double[::1] a = _center(center_w, d, "center_w")
    cdef const double[::1] b = _center(c, d, "c")
    cdef double ra = _radius(radius_w, "radius_w"), rb = _radius(r, "r")
    cdef double x = _radius(xi, "xi")
    cdef double[::1] ov = out
    cdef int rc = 0
    if d > 0:
        with nogil:
            rc = inexact_proj_two_balls(&ov[0], &a[0], ra, &b[0], rb, x, d)
    if rc != 0:
        raise ValueError("the two balls do not intersect")
    return out
