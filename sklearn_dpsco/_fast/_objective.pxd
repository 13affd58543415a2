# The regularised empirical objective shared by the solvers:
#   P(w) = (1/n) sum_{i in [start, stop)} s_i psi_i(<x_i, w>) + (lam/2) ||w - w0||^2,
#   psi_i = loss extended with k_i = C / ||x_i||, n = stop - start.
from libc.math cimport sqrt, INFINITY
from libc.float cimport DBL_MAX

from ._rows cimport RowData
from ._losses cimport Loss


cdef struct Problem:
    const double *y
    const double *sw        # sample weights in [0, 1]; NULL = all ones
    double clip             # C; +inf = raw loss
    double k_factor         # rounding guard for k_i, see row_k
    Py_ssize_t start
    Py_ssize_t stop
    double lam
    const double *w0        # length d
    Py_ssize_t d


cdef inline double k_of_norm(double nrm, const Problem *pb) noexcept nogil:
    # k_i = C / ||x_i||, rounded *down* by pb.k_factor = 1 - (d + 8) 2^-53 so
    # that k_i * ||x_i|| <= C holds for the exact norm too: the float norm has
    # relative error <= (d/2 + 2) 2^-53 (sum of squares, sqrt, division).
    # A zero row never meets the loss's slope: no extension (k = inf).
    # A level above the largest double is capped to it (still <= C / ||x_i||).
    cdef double k
    if pb.clip == INFINITY:
        return INFINITY
    if nrm == 0.0:
        return INFINITY
    k = pb.clip / nrm * pb.k_factor
    return k if k <= DBL_MAX else DBL_MAX


cdef inline double row_k(RowData rows, Py_ssize_t i, const Problem *pb) noexcept nogil:
    # k_of_norm of row i's norm. The norm is the over/underflow-free one (RowData.norm): a squared norm
    # that underflows to 0 on a tiny nonzero row must NOT read as a zero row (that would drop the extension).
    if pb.clip == INFINITY:
        return INFINITY
    return k_of_norm(rows.norm(i), pb)


cdef inline double row_weight(const Problem *pb, Py_ssize_t i) noexcept nogil:
    return 1.0 if pb.sw == NULL else pb.sw[i]


cdef void loss_gradient(RowData rows, Loss loss, const Problem *pb,
                        const double *w, double *out) noexcept nogil
cdef double loss_value(RowData rows, Loss loss, const Problem *pb,
                       const double *w) noexcept nogil


cdef class Objective:
    cdef readonly RowData rows
    cdef readonly Loss loss
    cdef Problem pb
    cdef object _keep
