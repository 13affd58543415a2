# The four-accumulator dense dot product shared by the row kernels (_rows.pyx, _users.pyx).


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
