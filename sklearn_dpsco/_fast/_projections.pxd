# Euclidean projections used inside the loops (cdef nogil) and the feasible
# set description the loops share.

cdef enum DomainKind:
    DOMAIN_NONE = 0        # R^d
    DOMAIN_BALL = 1        # B(c1, r1)
    DOMAIN_TWO_BALLS = 2   # B(c1, r1) cap B(c2, r2): Lowy's W cap B(c, r)


cdef struct Domain:
    int kind
    Py_ssize_t d
    const double *c1
    double r1
    const double *c2
    double r2
    double xi              # two balls: > 0 -> L-Lemma 2.8 xi-inexact projection


cdef double sq_dist(const double *a, const double *b, Py_ssize_t d) noexcept nogil
cdef void proj_ball(double *v, const double *c, double r, Py_ssize_t d) noexcept nogil
cdef int proj_two_balls(double *v, const double *c1, double r1, const double *c2,
                        double r2, Py_ssize_t d) noexcept nogil
cdef int inexact_proj_two_balls(double *v, const double *cw, double rw,
                                const double *c, double r, double xi,
                                Py_ssize_t d) noexcept nogil
cdef int project_domain(const Domain *dom, double *v, double xi) noexcept nogil
cdef double domain_diameter(const Domain *dom) noexcept nogil


cdef class DomainData:
    cdef Domain dom
    cdef object _keep
