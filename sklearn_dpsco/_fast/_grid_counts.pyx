"""Grid counts ``#{x <= t}`` of every column at once, without sorting (doc/privacy/quantiles.rst).

The private quantile releases read a column only through the counts
``c(t) = #{x_i <= t}`` at the public grid points ``t``. Sorting each column
gives them in ``O(n log n)``; here every value is dropped into its grid cell
(the number of grid points strictly below it, found exactly by float
comparisons) and the counts are the running sums of the cell tallies: the
same integers in one pass over ``X``.

A value's cell is found from a public lookup table indexed by the top 18
bits of the float's own bit pattern (sign, exponent and six mantissa bits:
one shift), then fixed by exact comparisons with the grid points in both
directions, so the table only sets where the search starts: the result is
the exact cell for every input, whatever the table holds.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()

cdef extern from *:
    void __builtin_prefetch(const void *addr) noexcept nogil

#: Bits of the order-preserving key that index the lookup table.
cdef enum:
    _BITS = 18

TABLE_BITS = _BITS


cdef inline uint64_t _ordered_key(double x) noexcept nogil:
    # the float's bits as an unsigned integer that increases with x (negatives: all bits flipped)
    cdef uint64_t u
    memcpy(&u, &x, 8)
    if u >> 63:
        return ~u
    return u | (<uint64_t>1 << 63)


cdef inline Py_ssize_t _bucket(double x) noexcept nogil:
    # the lookup table's index: the float's top _BITS bits as they are (each bucket a run of consecutive floats
    # of one sign; the table is built in key order and permuted to this index, ScaleGrid._cell_starts). One
    # shift instead of the order-preserving key's four operations: the same bucket, so the same guess.
    cdef uint64_t u
    memcpy(&u, &x, 8)
    return <Py_ssize_t>(u >> (64 - _BITS))


cdef inline Py_ssize_t _cell(double x, const double *points, const int32_t *start, Py_ssize_t G) noexcept nogil:
    # the number of grid points < x, exactly: the table only guesses where the search starts.
    # NaN: above every point, as in a sort (never counted as <= t)
    cdef Py_ssize_t c
    if x != x:
        return G
    c = start[_bucket(x)]
    while c > 0 and not (points[c - 1] < x):
        c -= 1
    while c < G and points[c] < x:
        c += 1
    return c


cdef inline Py_ssize_t _cell_one_step(double x, const double *points, const int32_t *start, Py_ssize_t G) noexcept nogil:
    # _cell for a table whose every bucket holds at most one grid point (checked by the caller, _one_step_table):
    # the guess counts the points of the buckets below x's, which are all < x (the keys order the floats), so
    # the cell is the guess or the next one: one comparison with the first point at or above the bucket
    # (``points`` has G + 1 entries, the last +inf: no point above). NaN: above every point, as in _cell.
    cdef Py_ssize_t c
    if x != x:
        return G
    c = start[_bucket(x)]
    return c + (points[c] < x)


def one_step_table(const double[::1] points):
    """Whether every bucket of the lookup table (the top ``TABLE_BITS`` bits of the keys) holds at most one of
    the increasing ``points``: :func:`grid_cell_tallies` may then place each value with one comparison."""
    cdef Py_ssize_t j, G = points.shape[0]
    cdef uint64_t prev = 0, b
    for j in range(G):
        b = _ordered_key(points[j]) >> (64 - _BITS)
        if j > 0 and b == prev:
            return False
        prev = b
    return True


def ordered_keys(const double[::1] values):
    """The order-preserving 64-bit keys of ``values`` (for building the lookup table)."""
    cdef Py_ssize_t i, n = values.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    for i in range(n):
        o[i] = _ordered_key(values[i])
    return out


#: Rows ahead whose cache lines are requested when the rows are not adjacent in memory (every k-th row of
#: an array: the hardware prefetchers stop at the jumps, and each row's loads then waited on memory).
cdef enum:
    _PREFETCH_ROWS = 16

#: Rows whose cells are found before their tallies are stored (the cell buffer holds ``_BLOCK * d`` ints).
cdef enum:
    _BLOCK = 256

#: Below this many columns the increments go round-robin to ``_COPIES`` separate tallies, summed at the end
#: (the same integers): a narrow array's consecutive values often share a cell, and increments of one counter
#: wait on each other (one column's 50k values: one tally 0.49 ms, interleaved in one pass 0.68 ms).
cdef enum:
    _SPLIT_COLUMNS = 6
    _COPIES = 4


def grid_cell_tallies(const double[:, :] X, const double[::1] points, const int32_t[::1] start,
                      bint one_step=False, shift=None):
    """``tallies[j, c] = #{i : exactly c grid points are < X[i, j]}``, shape ``(n_features, G + 1)``.

    ``points`` increasing; ``start`` the lookup table (length ``2**TABLE_BITS``)
    of first guesses, indexed by a float's top ``TABLE_BITS`` bits as they are. The counts of column ``j`` are
    ``cumsum(tallies[j, :G])``. NaN is placed above every point, as ``np.sort`` places it.

    ``one_step=True``: ``start`` is the table of first guesses built from ``points``
    (``ScaleGrid._cell_starts``: each entry the number of points whose key is below
    the lowest key of its bucket's floats) and :func:`one_step_table` holds for ``points``; each value's cell is
    then the guess or the next one, found with one comparison instead of the two
    searches (the same cells).

    ``shift`` (optional, one value per column): the tallies of ``X[i, j] - shift[j]`` (the same one
    subtraction as NumPy's, so the same floats), without writing the shifted array. Without it every
    value is placed as ``X[i, j] - 0.0``, which is ``X[i, j]`` exactly (also -0.0, infinities and NaN).

    Two passes per block of ``_BLOCK`` rows: the cells of the block (flat indices into the tallies) go to a
    small buffer, then the tallies are incremented from it. The same cells and the same integers as one
    interleaved pass; separating the stores from the searches lets the increments' addresses be known ahead
    (about 20% less time at 200k x 20). Below ``_SPLIT_COLUMNS`` columns the increments alternate between
    ``_COPIES`` tallies, summed at the end.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], G = points.shape[0]
    cdef Py_ssize_t i, j, k, m, i0, i1, width = G + 1
    out = np.zeros((d, G + 1), dtype=np.int64)
    cdef int64_t[:, ::1] t = out
    if start.shape[0] != (1 << _BITS):
        raise ValueError("start must have 2**TABLE_BITS entries.")
    if n == 0 or d == 0:
        return out
    cdef const double *pts = &points[0] if G > 0 else NULL
    cdef const int32_t *tab = &start[0]
    shifts = np.zeros(d) if shift is None else np.ascontiguousarray(shift, dtype=np.float64)
    if shifts.shape != (d,):
        raise ValueError("shift needs one value per column.")
    cdef const double[::1] sh = shifts
    # the points and +inf after them (one_step's comparison at c = G)
    ext = np.empty(G + 1, dtype=np.float64)
    ext[:G] = points
    ext[G] = np.inf
    cdef const double[::1] ext_v = ext
    cdef const double *pts1 = &ext_v[0]
    if d * width >= 2**31:
        raise ValueError("too many columns and grid points for the 32-bit cell buffer.")
    cells = np.empty(_BLOCK * d, dtype=np.int32)
    cdef int32_t[::1] buf = cells
    # rows apart in memory (a strided view such as X[::k]): request them ahead (counts unchanged)
    cdef bint gapped = X.strides[0] > d * X.strides[1] + 64
    cdef bint split = d < _SPLIT_COLUMNS
    copies = np.zeros((_COPIES, d, G + 1), dtype=np.int64) if split else out
    cdef int64_t *flat = <int64_t *>cnp.PyArray_DATA(copies)
    cdef Py_ssize_t plane = d * width
    cdef bint unit = X.strides[1] == sizeof(double)
    cdef const double *row
    cdef const double *shp = &sh[0]
    with nogil:
        i0 = 0
        while i0 < n:
            i1 = min(i0 + _BLOCK, n)
            m = 0
            for i in range(i0, i1):
                if gapped and i + _PREFETCH_ROWS < n:
                    j = 0
                    while j < d:
                        __builtin_prefetch(&X[i + _PREFETCH_ROWS, j])
                        j += 8  # one request per 64-byte line
                    __builtin_prefetch(&X[i + _PREFETCH_ROWS, d - 1])
                if one_step and unit:  # the library's grids on rows of adjacent values: one comparison each
                    row = &X[i, 0]
                    for j in range(d):
                        buf[m] = <int32_t>(j * width + _cell_one_step(row[j] - shp[j], pts1, tab, G))
                        m += 1
                elif one_step:
                    for j in range(d):
                        buf[m] = <int32_t>(j * width + _cell_one_step(X[i, j] - sh[j], pts1, tab, G))
                        m += 1
                else:
                    for j in range(d):
                        buf[m] = <int32_t>(j * width + _cell(X[i, j] - sh[j], pts, tab, G))
                        m += 1
            if split:
                for k in range(m):
                    flat[(k & (_COPIES - 1)) * plane + buf[k]] += 1
            else:
                for k in range(m):
                    flat[buf[k]] += 1
            i0 = i1
    if split:
        return copies.sum(axis=0)
    return out
