# GLM losses phi(z; y), z = <w, x>, with their k-Lipschitz extensions in z
# (doc/algorithms.rst, §0.2 and §6) and what dual coordinate ascent needs.
#
# Conventions: classification losses take y in {-1, +1} and work on the margin
# m = y z; regression losses work on the residual r = z - y. k = C / ||x_i||;
# k = +inf means "no extension". psi_k denotes the extended loss.

cdef class Loss:
    cdef readonly bint is_classification

    # value and derivative in z of the raw loss (a subgradient at kinks)
    cdef double cy_value(self, double z, double y) noexcept nogil
    cdef double cy_deriv(self, double z, double y) noexcept nogil
    # the k-Lipschitz extension psi_k = phi inf-conv k|.|, and its derivative
    # clip(phi'(z), -k, k)
    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil
    cdef double cy_ext_deriv(self, double z, double y, double k) noexcept nogil
    # convex conjugate psi_k^*(u) = phi^*(u) + indicator(|u| <= k); +inf off
    # its domain
    cdef double cy_conj(self, double u, double y, double k) noexcept nogil
    # One dual coordinate step: argmax over b of
    #     -psi_k^*(-b) - b z - (q/2) (b - beta)^2        (q > 0)
    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil
    # cy_dual_step for q > 0; for q == 0 (a zero row) the exact maximiser
    # -psi_k'(z)
    cdef double cy_dual_update(self, double beta, double z, double y, double k,
                               double q) noexcept nogil


cdef class Hinge(Loss):
    pass


cdef class Logistic(Loss):
    pass


cdef class Squared(Loss):
    pass


cdef class Absolute(Loss):
    pass


cdef class Power(Loss):
    cdef readonly double p
