"""One row-access abstraction for dense and CSR data (doc/design.rst, convention 3).

`RowData` wraps a C-contiguous float64 array or a CSR matrix without copying
the values, and optionally appends a *virtual* constant feature of value
``intercept_scaling`` (no copy of X: ``dot``, ``axpy`` and ``sq_norm`` add it
on the fly). Kernels only ever see rows through the ``noexcept nogil`` methods
declared in ``_rows.pxd``; a block of rows ``[start, stop)`` is simply the loop
``for i in range(start, stop)`` with O(1) access to row ``i``, plus the
blocked helpers ``block_matvec`` / ``block_rmatvec``.
"""
import numpy as np
import scipy.sparse as sp

from libc.math cimport sqrt, fabs, isfinite, nearbyint
from libc.string cimport memcpy

cdef extern from *:
    void __builtin_prefetch(const void *addr) noexcept nogil

from ._dot cimport clip_scale, dense_axpy4, dense_dot


cdef class RowData:
    """Rows of a dense or CSR matrix, with an optional virtual intercept column.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_raw) or scipy CSR matrix/array
        Dense input is used without a copy when it is C-contiguous float64;
        otherwise it is converted once. CSR values are converted to float64
        and the index arrays to ``intp`` once (int32 and int64 both work). A
        CSR matrix with duplicate entries is copied and summed, so that the
        cached row norms are the norms of the rows the matrix represents.
    intercept_scaling : float, default=0.0
        When > 0, every row gets an extra feature of this constant value at
        column ``n_raw``; ``n_features`` is then ``n_raw + 1``.

    Attributes
    ----------
    n_samples : int
    n_features : int
        Number of columns including the virtual intercept column.
    intercept_scaling : float
    is_sparse : bool

    Notes
    -----
    Non-finite values are rejected: every kernel (and every certificate)
    assumes finite rows.
    """

    def __cinit__(self, X, double intercept_scaling=0.0, norms_of=None, raw_sq_norms=None):
        cdef const double[:, ::1] dense_view
        cdef const double[::1] data_view
        cdef const Py_ssize_t[::1] ind_view, ptr_view
        cdef double[::1] norms
        cdef double[::1] nv
        cdef const double[::1] raw_sq
        cdef Py_ssize_t i
        if not (intercept_scaling >= 0.0) or not np.isfinite(intercept_scaling):
            raise ValueError(f"intercept_scaling must be finite and >= 0, got {intercept_scaling!r}")
        self.intercept_scaling = intercept_scaling
        self.has_intercept = intercept_scaling > 0.0
        if sp.issparse(X):
            if X.format != "csr":
                X = X.tocsr()
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            data = np.ascontiguousarray(X.data, dtype=np.float64)
            indices = np.ascontiguousarray(X.indices, dtype=np.intp)
            indptr = np.ascontiguousarray(X.indptr, dtype=np.intp)
            if not np.all(np.isfinite(data)):
                raise ValueError("X contains NaN or infinity")
            self.is_sparse = True
            self.n_samples, self.n_raw = X.shape
            self._X = X
            self._keep = (data, indices, indptr)
            if data.shape[0] > 0:
                data_view = data
                ind_view = indices
                self.data = &data_view[0]
                self.indices = &ind_view[0]
            ptr_view = indptr
            self.indptr = &ptr_view[0]
        else:
            arr = np.ascontiguousarray(X, dtype=np.float64)
            if arr.ndim != 2:
                raise ValueError(f"X must be 2-D, got shape {arr.shape}")
            # finiteness is checked below from the squared norms (a NaN or infinite entry makes its row's
            # sum NaN or inf; only then are the entries themselves read again)
            self.is_sparse = False
            self.n_samples, self.n_raw = arr.shape[0], arr.shape[1]
            self._X = arr
            self._keep = (arr,)
            if arr.size > 0:
                dense_view = arr
                self.dense = &dense_view[0, 0]
        self.n_features = self.n_raw + (1 if self.has_intercept else 0)
        if norms_of is not None:
            # the rows' own cached norms, from a RowData holding the same rows (``take``): computed there from
            # the same entries by the same loops, so the same floats, and those rows were checked finite there
            sq, nrm = (np.ascontiguousarray(a, dtype=np.float64) for a in norms_of)
            if sq.shape != (self.n_samples,) or nrm.shape != (self.n_samples,):
                raise ValueError("norms_of needs one squared norm and one norm per row.")
        else:
            sq = np.empty(self.n_samples, dtype=np.float64)
            nrm = np.empty(self.n_samples, dtype=np.float64)
        self._keep = self._keep + (sq, nrm)
        self._sq_array = sq
        self._norm_array = nrm
        if self.n_samples > 0:
            norms = sq
            nv = nrm
            self.sq_norms = &norms[0]
            self.norms = &nv[0]
        if norms_of is not None or self.n_samples == 0:
            return
        if raw_sq_norms is not None and not self.is_sparse:
            # the rows' sums of squares as _raw_sq_norm sums them (column_affine's sq_out, written with
            # the rows: the same dense_dot), then the intercept's term as _raw_sq_norm adds it
            raw_sq = np.ascontiguousarray(raw_sq_norms, dtype=np.float64)
            if raw_sq.shape[0] != self.n_samples:
                raise ValueError("raw_sq_norms needs one entry per row.")
            with nogil:
                for i in range(self.n_samples):
                    norms[i] = raw_sq[i]
                    if self.has_intercept:
                        norms[i] += self.intercept_scaling * self.intercept_scaling
        else:
            with nogil:
                for i in range(self.n_samples):
                    norms[i] = self._raw_sq_norm(i)
        if not self.is_sparse and not np.all(np.isfinite(sq)) and not np.all(np.isfinite(self._X)):
            raise ValueError("X contains NaN or infinity")
        with nogil:
            for i in range(self.n_samples):
                nv[i] = self._safe_norm(i, norms[i])

    cdef double _safe_norm(self, Py_ssize_t i, double sq) noexcept nogil:
        # ||x_i|| for every finite row. Fast path: sqrt of the plain sum of
        # squares when that sum neither overflowed nor came near underflow
        # (then it is the value every kernel always used). Otherwise (rows of
        # norm above ~1e154 or below ~1e-135) the hypot-style ``m sqrt(sum
        # (x_j / m)^2)``, m = max |x_j|: relative error <= (d/2 + 3) 2^-53 like
        # the fast path, plus an absolute (d + 3) 2^-1074 for subnormal
        # results, added so that the value is never below the exact norm by
        # more than row_k's rounding guard allows.
        cdef Py_ssize_t j, lo, hi
        cdef double m = 0.0, t, acc = 0.0
        cdef const double *x
        if sq == sq and sq >= 2.0 ** -900 and sq <= 1.7e308:
            return sqrt(sq)
        if self.is_sparse:
            lo, hi = self.indptr[i], self.indptr[i + 1]
            x = self.data
        else:
            lo, hi = 0, self.n_raw
            x = self.dense + i * self.n_raw
        for j in range(lo, hi):
            if fabs(x[j]) > m:
                m = fabs(x[j])
        if self.has_intercept and self.intercept_scaling > m:
            m = self.intercept_scaling
        if m == 0.0:
            return 0.0
        for j in range(lo, hi):
            t = x[j] / m
            acc += t * t
        if self.has_intercept:
            t = self.intercept_scaling / m
            acc += t * t
        return m * sqrt(acc) + (hi - lo + 3) * 2.0 ** -1074

    cdef double _raw_sq_norm(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t j
        cdef double s = 0.0
        if self.is_sparse:
            for j in range(self.indptr[i], self.indptr[i + 1]):
                s += self.data[j] * self.data[j]
        else:
            s = dense_dot(self.dense + i * self.n_raw, self.dense + i * self.n_raw, self.n_raw)
        if self.has_intercept:
            s += self.intercept_scaling * self.intercept_scaling
        return s

    def __reduce__(self):
        return (RowData, (self._X, self.intercept_scaling))

    # ---- nogil interface -------------------------------------------------
    cdef double dot(self, Py_ssize_t i, const double *w) noexcept nogil:
        """<x_i, w> (intercept feature included)."""
        cdef Py_ssize_t j
        cdef double s = 0.0
        if self.is_sparse:
            for j in range(self.indptr[i], self.indptr[i + 1]):
                s += self.data[j] * w[self.indices[j]]
        else:
            s = dense_dot(self.dense + i * self.n_raw, w, self.n_raw)
        if self.has_intercept:
            s += self.intercept_scaling * w[self.n_raw]
        return s

    cdef double dot_abs(self, Py_ssize_t i, const double *w, double *abs_dot) noexcept nogil:
        """<x_i, w>, and sum_j |x_ij w_j| in *abs_dot (for rounding-error bounds)."""
        cdef Py_ssize_t j
        cdef double s = 0.0, a = 0.0, t
        cdef const double *x
        if self.is_sparse:
            for j in range(self.indptr[i], self.indptr[i + 1]):
                t = self.data[j] * w[self.indices[j]]
                s += t
                a += fabs(t)
        else:
            x = self.dense + i * self.n_raw
            for j in range(self.n_raw):
                t = x[j] * w[j]
                s += t
                a += fabs(t)
        if self.has_intercept:
            t = self.intercept_scaling * w[self.n_raw]
            s += t
            a += fabs(t)
        abs_dot[0] = a
        return s

    cdef void axpy(self, Py_ssize_t i, double a, double *w) noexcept nogil:
        """w += a * x_i."""
        cdef Py_ssize_t j
        cdef const double *x
        if self.is_sparse:
            for j in range(self.indptr[i], self.indptr[i + 1]):
                w[self.indices[j]] += a * self.data[j]
        else:
            x = self.dense + i * self.n_raw
            for j in range(self.n_raw):
                w[j] += a * x[j]
        if self.has_intercept:
            w[self.n_raw] += a * self.intercept_scaling

    cdef void axpy_comp(self, Py_ssize_t i, double a, double *w, double *w_comp,
                        double *w_abs) noexcept nogil:
        """Compensated w += a * x_i (Neumaier: the running error goes to w_comp,
        the true sum is w + w_comp), and w_abs += |a * x_i|.

        Used where a certificate needs sums over many rows whose rounding
        error must not grow with the number of rows.
        """
        cdef Py_ssize_t j
        cdef const double *x
        if self.is_sparse:
            for j in range(self.indptr[i], self.indptr[i + 1]):
                _neumaier(w + self.indices[j], w_comp + self.indices[j],
                          w_abs + self.indices[j], a * self.data[j])
        else:
            x = self.dense + i * self.n_raw
            for j in range(self.n_raw):
                _neumaier(w + j, w_comp + j, w_abs + j, a * x[j])
        if self.has_intercept:
            _neumaier(w + self.n_raw, w_comp + self.n_raw, w_abs + self.n_raw,
                      a * self.intercept_scaling)

    cdef double norm(self, Py_ssize_t i) noexcept nogil:
        # ||x_i|| (intercept included), finite for every finite row (_safe_norm).
        return self.norms[i]

    cdef double sq_norm(self, Py_ssize_t i) noexcept nogil:
        """||x_i||^2 (cached at construction; intercept feature included)."""
        return self.sq_norms[i]

    cdef Py_ssize_t row(self, Py_ssize_t i, const double **values,
                        const Py_ssize_t **columns) noexcept nogil:
        """Stored entries of row i, *without* the intercept feature.

        Sets ``values`` and ``columns`` and returns the number of entries. For
        dense data ``columns`` is NULL: entry j sits in column j.
        """
        if self.is_sparse:
            values[0] = self.data + self.indptr[i]
            columns[0] = self.indices + self.indptr[i]
            return self.indptr[i + 1] - self.indptr[i]
        values[0] = self.dense + i * self.n_raw
        columns[0] = NULL
        return self.n_raw

    cdef void block_matvec(self, Py_ssize_t start, Py_ssize_t stop,
                           const double *w, double *out) noexcept nogil:
        """out[i - start] = <x_i, w> for i in [start, stop)."""
        cdef Py_ssize_t i
        for i in range(start, stop):
            out[i - start] = self.dot(i, w)

    cdef void block_rmatvec(self, Py_ssize_t start, Py_ssize_t stop,
                            const double *coef, double *out) noexcept nogil:
        """out += sum_{i in [start, stop)} coef[i - start] * x_i.

        Dense rows with a nonzero coefficient are taken four per sweep over the
        coordinates: each coordinate gets their products added one after the
        other in row order, as four ``axpy`` calls add them (the same floats),
        with its running value in a register instead of a store and reload per row.
        """
        cdef Py_ssize_t i, q = 0, m = self.n_raw
        cdef Py_ssize_t r[4]
        cdef double a[4]
        for i in range(start, stop):
            if coef[i - start] == 0.0:
                continue
            if self.is_sparse:
                self.axpy(i, coef[i - start], out)
                continue
            r[q] = i
            a[q] = coef[i - start]
            q += 1
            if q < 4:
                continue
            q = 0
            dense_axpy4(self.dense, m, r, a, out, self.has_intercept, self.intercept_scaling)
        for i in range(q):
            self.axpy(r[i], a[i], out)

    # ---- Python helpers (tests, drivers) -----------------------------------
    def take(self, index):
        """``(X, RowData)`` of the dense rows ``index`` (a fresh C-contiguous copy, ``X[index]``'s values), the
        rows' norms read from this RowData's cache instead of recomputed: the same rows, so the same floats
        (a working set's rows, ``_working_set.working_set_dual``; speed only). Dense rows only."""
        if self.is_sparse:
            raise ValueError("take reads dense rows only.")
        index = np.asarray(index, dtype=np.intp)
        X = np.ascontiguousarray(self._X[index])
        return X, RowData(X, self.intercept_scaling, norms_of=(self._sq_array[index], self._norm_array[index]))

    def row_norms(self, squared=False):
        """Euclidean norms of the rows, intercept feature included.

        Parameters
        ----------
        squared : bool, default=False
            Return squared norms (the cached values) instead.

        Returns
        -------
        norms : ndarray of shape (n_samples,)
        """
        if squared:
            return self._sq_array.copy()
        return self._norm_array.copy()

    def _range(self, start, stop):
        stop = self.n_samples if stop is None else int(stop)
        if not (0 <= start <= stop <= self.n_samples):
            raise ValueError(f"need 0 <= start <= stop <= n_samples={self.n_samples}, got [{start}, {stop})")
        return int(start), stop

    def matvec(self, w, start=0, stop=None):
        """Return ``X_aug[start:stop] @ w`` (``X_aug`` includes the intercept column).

        Parameters
        ----------
        w : array-like of shape (n_features,)
        start, stop : int, default=0, None
            Row range (``stop=None``: n_samples).

        Returns
        -------
        z : ndarray of shape (stop - start,)
        """
        cdef const double[::1] wv = self._vector(w, self.n_features, "w")
        cdef Py_ssize_t lo, hi
        lo, hi = self._range(start, stop)
        out = np.zeros(hi - lo, dtype=np.float64)
        cdef double[::1] ov = out
        if hi > lo and self.n_features > 0:
            with nogil:
                self.block_matvec(lo, hi, &wv[0], &ov[0])
        return out

    def rmatvec(self, a, start=0, stop=None):
        """Return ``X_aug[start:stop].T @ a``.

        Parameters
        ----------
        a : array-like of shape (stop - start,)
        start, stop : int, default=0, None
            Row range (``stop=None``: n_samples).

        Returns
        -------
        g : ndarray of shape (n_features,)
        """
        cdef Py_ssize_t lo, hi
        lo, hi = self._range(start, stop)
        cdef const double[::1] av = self._vector(a, hi - lo, "a")
        out = np.zeros(self.n_features, dtype=np.float64)
        cdef double[::1] ov = out
        if hi > lo and self.n_features > 0:
            with nogil:
                self.block_rmatvec(lo, hi, &av[0], &ov[0])
        return out

    def toarray(self):
        """Dense copy of the augmented matrix (tests and debugging only)."""
        X = self._X.toarray() if self.is_sparse else np.array(self._X)
        if self.has_intercept:
            X = np.hstack([X, np.full((self.n_samples, 1), self.intercept_scaling)])
        return X

    @staticmethod
    def _vector(v, Py_ssize_t n, name):
        arr = np.ascontiguousarray(v, dtype=np.float64)
        if arr.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
        return arr


cdef inline double _np_clip(double x, double lo, double hi) noexcept nogil:
    # NumPy's clip of a double for lo < 0 < hi (numpy/_core/src/umath/clip.cpp: min(max(x, lo), hi) with a
    # NaN kept): the same float, NaN and signed zeros included (no tie between zeros when lo < 0 < hi). Two
    # comparisons that are false for a NaN, so it passes through; branch-free, the flat loop vectorises
    x = lo if x < lo else x
    return hi if x > hi else x


cdef void _affine_flat(const double *x, const double *c, const double *f, double scale, const double *lo,
                       const double *hi, double *o, Py_ssize_t n, Py_ssize_t d, double *sq) noexcept nogil:
    # column_affine on C-contiguous rows: per entry the subtraction, the product, the row scale's product
    # (scale != 1) and the clip (lo != NULL; lo < 0 < hi, NaN kept: np.clip's float) of the strided loops;
    # sq != NULL: each written row's dense_dot with itself, while the row is in cache (RowData's own sum)
    cdef Py_ssize_t i, j
    cdef double v
    cdef bint scaled = scale != 1.0
    for i in range(n):
        if lo == NULL:
            if scaled:
                for j in range(d):
                    v = (x[j] - c[j]) * f[j]
                    o[j] = v * scale
            else:
                for j in range(d):
                    o[j] = (x[j] - c[j]) * f[j]
        else:
            for j in range(d):
                v = (x[j] - c[j]) * f[j]
                if scaled:
                    v = v * scale
                o[j] = _np_clip(v, lo[j], hi[j])
        if sq != NULL:
            sq[i] = dense_dot(o, o, d)
        x += d
        o += d


def column_affine(const double[:, :] X, const double[::1] centre, const double[::1] factor, double scale=1.0,
                  bound=None, double[::1] sq_out=None):
    """``(X - centre) * factor`` column by column, in one pass into a fresh C-contiguous array.

    The same two roundings per entry as NumPy's ``out = X - centre; out *= factor``
    (a subtraction, then a product: nothing to contract into an FMA), so the
    same floats; one read of ``X`` and one write instead of two of each. With
    ``scale != 1``, each entry is then multiplied by ``scale`` (a third rounding,
    NumPy's ``out *= scale`` after the map: the same floats, without a second
    pass over ``out``). With ``bound`` (one entry per column), each entry is
    then clipped as ``np.clip(out, -bound, bound, out=out)`` clips it (the same
    floats, without NumPy's slower broadcast clip pass over ``out``).

    ``sq_out`` (optional, one entry per row): filled with each mapped row's sum of squares as
    ``RowData`` sums it (``dense_dot`` of the row with itself, without the intercept's term), in the
    same pass while the row is in cache: ``RowData(out, s, raw_sq_norms=sq_out)`` then skips its own
    pass over the rows (the same floats).
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i
    cdef double *sqp = NULL
    cdef bint fused
    if sq_out is not None:
        if sq_out.shape[0] != n:
            raise ValueError("sq_out needs one entry per row.")
        if n > 0:
            sqp = &sq_out[0]
    cdef const double[::1] b
    cdef double[::1] nbv
    cdef double *nb = NULL
    if centre.shape[0] != d or factor.shape[0] != d:
        raise ValueError("centre and factor need one entry per column.")
    out = np.empty((n, d), dtype=np.float64)
    cdef double[:, ::1] o = out
    if bound is not None:
        b = np.ascontiguousarray(bound, dtype=np.float64)
        if b.shape[0] != d:
            raise ValueError("bound needs one entry per column.")
        # positive bounds only (inf allowed): with a zero, negative or NaN bound NumPy's own clip (its
        # signed zeros there depend on its SIMD path)
        if d > 0 and bool(np.all(np.asarray(b) > 0)):
            nbv = -np.asarray(b)  # NumPy's -bound: exact negations
            nb = &nbv[0]
    if n > 0 and d > 0 and X.strides[1] == sizeof(double) and X.strides[0] == d * sizeof(double):
        # C-contiguous rows: one fused pass over flat arrays (the strided views' index arithmetic kept the
        # compiler from vectorising: about 4x a plain copy's time); the same operations per entry
        # (the sums of squares in the pass unless NumPy's clip comes after it)
        fused = bound is None or nb != NULL
        with nogil:
            _affine_flat(&X[0, 0], &centre[0], &factor[0], scale, nb, &b[0] if nb != NULL else NULL, &o[0, 0], n, d,
                         sqp if fused else NULL)
        if fused:
            sqp = NULL
    else:
        _affine_strided(X, centre, factor, scale, nb, &b[0] if nb != NULL else NULL, o, n, d)
    if bound is not None and nb == NULL:
        np.clip(out, -np.asarray(b), b, out=out)
    if sqp != NULL and d > 0:
        with nogil:
            for i in range(n):
                sqp[i] = dense_dot(&o[i, 0], &o[i, 0], d)
    elif sqp != NULL:
        sq_out[:] = 0.0
    return out


cdef void _affine_strided(const double[:, :] X, const double[::1] centre, const double[::1] factor, double scale,
                          const double *nb, const double *hi, double[:, ::1] o, Py_ssize_t n,
                          Py_ssize_t d) noexcept:
    cdef Py_ssize_t i, j
    cdef double diff, prod
    with nogil:
        if scale == 1.0:
            for i in range(n):
                for j in range(d):
                    diff = X[i, j] - centre[j]
                    o[i, j] = diff * factor[j]
        else:
            for i in range(n):
                for j in range(d):
                    diff = X[i, j] - centre[j]
                    prod = diff * factor[j]
                    o[i, j] = prod * scale
        if nb != NULL:
            for i in range(n):
                for j in range(d):
                    o[i, j] = _np_clip(o[i, j], nb[j], hi[j])


def affine_row_sq_norms(const double[:, ::1] X, const double[::1] centre, const double[::1] factor, double scale):
    """``sum_j (((x_ij - centre_j) * factor_j) * scale)^2`` per row, without writing the mapped rows.

    Each mapped entry has the roundings of :func:`column_affine` followed by the row scale's product
    (``DeferredRowScale.rows``); the squares are summed in four interleaved partial sums (the order
    differs from NumPy's einsum, so a sum may differ from it in its last bits). One read of ``X``:
    the norms of the mapped rows at the cost of one pass (_solvers/_core/_data.py ``row_norms_of``).
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j
    if centre.shape[0] != d or factor.shape[0] != d:
        raise ValueError("centre and factor need one entry per column.")
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    cdef double t0, t1, t2, t3, s0, s1, s2, s3
    cdef bint scaled = scale != 1.0
    with nogil:
        for i in range(n):
            s0 = s1 = s2 = s3 = 0.0
            j = 0
            while j + 4 <= d:
                t0 = (X[i, j] - centre[j]) * factor[j]
                t1 = (X[i, j + 1] - centre[j + 1]) * factor[j + 1]
                t2 = (X[i, j + 2] - centre[j + 2]) * factor[j + 2]
                t3 = (X[i, j + 3] - centre[j + 3]) * factor[j + 3]
                if scaled:
                    t0 = t0 * scale
                    t1 = t1 * scale
                    t2 = t2 * scale
                    t3 = t3 * scale
                s0 += t0 * t0
                s1 += t1 * t1
                s2 += t2 * t2
                s3 += t3 * t3
                j += 4
            while j < d:
                t0 = (X[i, j] - centre[j]) * factor[j]
                if scaled:
                    t0 = t0 * scale
                s0 += t0 * t0
                j += 1
            o[i] = (s0 + s1) + (s2 + s3)
    return out


def clipped_row_grid_sums(const double[:, ::1] X, double bound, double grid):
    """``sum_i round(clip_B(x_i) / grid)`` as int64: the rows clipped to ``bound``, on a grid, summed exactly.

    Each row is scaled by ``min(1, B / ||x_i||)`` (a row whose squared norm
    overflows counts as 0), every coordinate divided by ``grid`` (a power of
    two: exact) and rounded to the nearest integer (ties to even); the integers
    are summed exactly, so the result does not depend on the order of the rows
    or on how they are cut into chunks (linear_model/_centering.py, the
    row-level centre; doc/privacy/hinge.rst, "Private centring"). Needs
    ``n (B / grid + 1) < 2^63``.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j
    if not (bound > 0 and grid > 0):
        raise ValueError("bound and grid must be > 0")
    if n * (bound / grid + 1.0) >= 9.2e18:
        raise ValueError("too many rows for exact int64 sums at this grid")
    out = np.zeros(d, dtype=np.int64)
    cdef long long[::1] o = out
    cdef double f
    with nogil:
        for i in range(n):
            f = clip_scale(&X[i, 0], d, bound) if d > 0 else 1.0
            for j in range(d):
                o[j] += <long long> nearbyint((f * X[i, j]) / grid)
    return out


def targets_within_widths(const double[::1] y, const double[::1] norms, const double[::1] sat, double slack,
                          double size):
    """Whether every target lies within its conditioning width around 0 (``_erm.condition_rows``, a centre 0).

    ``width_i = (1 + 2^-20) min(sat_i, t_i) + t_i + 2^-20 ||x_i|| size`` with
    ``t_i = slack ||x_i||``, each float computed as ``condition_rows``' NumPy
    formula computes it; True when ``-width_i <= y_i <= width_i`` for every
    row (its clip then leaves every target equal to itself). False as soon as
    a row is outside or a value is NaN: the caller then runs the NumPy path.
    """
    cdef Py_ssize_t i, n = y.shape[0]
    cdef double t, s, m, width, yi
    cdef bint ok = True
    if norms.shape[0] != n or sat.shape[0] != n:
        raise ValueError("arrays of the wrong length")
    with nogil:
        for i in range(n):
            t = slack * norms[i]
            s = sat[i]
            if s != s or t != t:  # np.minimum propagates NaN (the clip would then change the target)
                ok = False
                break
            m = s if s < t else t
            width = ((1.0 + 2.0 ** -20) * m + t) + (2.0 ** -20 * norms[i]) * size
            yi = y[i]
            if not ((0.0 - width) <= yi and yi <= (0.0 + width)):
                ok = False
                break
    return bool(ok)


def norms_from_squares(const double[::1] sq, double s2, double[::1] out):
    """``out = sqrt(sq + s2)``, and how many rows fall outside the plain formula's range.

    The same floats as NumPy's ``np.sqrt(sq + s2)`` (an addition and a correctly rounded square
    root per entry), in one pass; a row counts when ``sq_i`` is not finite or ``sq_i + s2 < 2^-900``
    (``_solvers/_core/_data.py`` ``safe_row_norms``: those rows take its scaled fallback).
    """
    cdef Py_ssize_t i, n = sq.shape[0], bad = 0
    cdef double t
    if out.shape[0] != n:
        raise ValueError("arrays of the wrong length")
    with nogil:
        for i in range(n):
            t = sq[i] + s2
            out[i] = sqrt(t)
            bad += not (isfinite(sq[i]) and t >= 2.0 ** -900)
    return bad


def targets_within_norms(RowData rows not None, const double[::1] y, double factor, double low, double high):
    """Whether every row's norm (this RowData's, :meth:`row_norms`) lies in ``[low, high]`` and
    ``|y_i| <= factor ||x_i||`` (the product rounded once); False at the first row that does not, or at a NaN.

    Reads the cached norms and the targets only: a caller that proves a bound on another norm of the
    same rows (an einsum's, within a relative ``(d + 2) 2^-53``) folds its margin into ``factor``.
    """
    cdef Py_ssize_t i, n = y.shape[0]
    cdef double nrm
    cdef bint ok = True
    if n != rows.n_samples:
        raise ValueError("one target per row")
    with nogil:
        for i in range(n):
            nrm = rows.norms[i]
            if not (low <= nrm and nrm <= high and fabs(y[i]) <= factor * nrm):
                ok = False
                break
    return bool(ok)


#: Rows ahead whose cache lines :func:`every_kth_row_copy` requests (the jumps between the rows it reads stop the
#: hardware prefetchers, as in ``_grid_counts``).
cdef enum:
    _COPY_AHEAD = 16


def every_kth_row_copy(const double[:, ::1] X, Py_ssize_t k):
    """``np.ascontiguousarray(X[::k])`` for C-contiguous rows (the same bytes, a fresh array), each row copied
    while the rows ``_COPY_AHEAD`` steps ahead are requested (speed only)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t m = (n + k - 1) // k, i, j, ahead
    out = np.empty((m, d), dtype=np.float64)
    if m == 0 or d == 0:
        return out
    cdef double[:, ::1] o = out
    cdef const double *src = &X[0, 0]
    cdef double *dst = &o[0, 0]
    cdef size_t row_bytes = d * sizeof(double)
    with nogil:
        for i in range(m):
            ahead = i + _COPY_AHEAD
            if ahead < m:
                j = 0
                while j < d:
                    __builtin_prefetch(src + ahead * k * d + j)
                    j += 8  # one request per 64-byte line
                __builtin_prefetch(src + ahead * k * d + d - 1)
            memcpy(dst + i * d, src + i * k * d, row_bytes)
    return out
