# Row access for dense and CSR data: one interface, kernels written once.
cimport cython
from libc.math cimport fabs


cdef inline void _neumaier(double *s, double *c, double *a, double x) noexcept nogil:
    # Neumaier (Kahan-Babuska) step: s + c carries the sum with error
    # <= 2u |sum| + O(n u^2) sum |x|. The rounding error of s + x is taken by
    # Knuth's branch-free TwoSum: the same exact error as Neumaier's
    # magnitude-ordered form, so the same floats, without an unpredictable branch.
    cdef double t = s[0] + x
    cdef double b = t - s[0]
    c[0] += (s[0] - (t - b)) + (x - b)
    s[0] = t
    a[0] += fabs(x)


@cython.final
cdef class RowData:
    cdef readonly Py_ssize_t n_samples
    # n_features counts the virtual intercept feature when intercept_scaling > 0.
    cdef readonly Py_ssize_t n_features
    cdef readonly double intercept_scaling
    cdef readonly bint is_sparse
    cdef Py_ssize_t n_raw          # stored columns; the intercept sits at column n_raw
    cdef bint has_intercept

    cdef const double *dense       # row-major n_samples x n_raw (dense only)
    cdef const double *data        # CSR values
    cdef const Py_ssize_t *indices # CSR column indices (normalised to intp once)
    cdef const Py_ssize_t *indptr  # CSR row pointers (normalised to intp once)
    cdef const double *sq_norms    # ||x_i||^2 including the intercept feature (may over/underflow)
    cdef const double *norms       # ||x_i||, computed without over/underflow (see _safe_norm)

    cdef object _X                 # what __reduce__ pickles
    cdef object _keep              # arrays the pointers above point into
    cdef object _sq_array          # the cached squared row norms (ndarray)
    cdef object _norm_array        # the cached row norms (ndarray)

    cdef double _raw_sq_norm(self, Py_ssize_t i) noexcept nogil
    cdef double _safe_norm(self, Py_ssize_t i, double sq) noexcept nogil
    cdef double dot(self, Py_ssize_t i, const double *w) noexcept nogil
    cdef double dot_abs(self, Py_ssize_t i, const double *w, double *abs_dot) noexcept nogil
    cdef void axpy(self, Py_ssize_t i, double a, double *w) noexcept nogil
    cdef void axpy_comp(self, Py_ssize_t i, double a, double *w, double *w_comp,
                        double *w_abs) noexcept nogil
    cdef double sq_norm(self, Py_ssize_t i) noexcept nogil
    cdef double norm(self, Py_ssize_t i) noexcept nogil
    cdef Py_ssize_t row(self, Py_ssize_t i, const double **values,
                        const Py_ssize_t **columns) noexcept nogil
    cdef void block_matvec(self, Py_ssize_t start, Py_ssize_t stop,
                           const double *w, double *out) noexcept nogil
    cdef void block_rmatvec(self, Py_ssize_t start, Py_ssize_t stop,
                            const double *coef, double *out) noexcept nogil
