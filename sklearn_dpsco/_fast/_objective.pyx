"""The regularised empirical objective and its validated construction.

``Objective`` bundles the settings every solver shares (doc/design.rst, convention 5):

    P(w) = (1/n) sum_{i in [start, stop)} s_i psi_i(<x_i, w>) + (lam/2) ||w - w0||^2,

with ``psi_i`` the loss extended with ``k_i = C / ||x_i||`` (``clip=None``:
the raw loss), ``n = stop - start`` and sample weights ``s_i`` in [0, 1]. The
rows ``[start, stop)`` are a view: nothing is copied.
"""
import numpy as np

from libc.math cimport INFINITY, isfinite, fabs

from ._rows cimport RowData
from ._losses cimport Loss


cdef void loss_gradient(RowData rows, Loss loss, const Problem *pb,
                        const double *w, double *out) noexcept nogil:
    """out = (1/n) sum_i s_i psi_i'(<x_i, w>) x_i (no regulariser)."""
    cdef Py_ssize_t i, j
    cdef double n = <double> (pb.stop - pb.start), s, g
    for j in range(pb.d):
        out[j] = 0.0
    if n <= 0:
        return
    for i in range(pb.start, pb.stop):
        s = row_weight(pb, i)
        if s == 0.0:
            continue
        g = loss.cy_ext_deriv(rows.dot(i, w), pb.y[i], row_k(rows, i, pb))
        if g != 0.0:
            rows.axpy(i, s * g / n, out)


cdef double loss_value(RowData rows, Loss loss, const Problem *pb,
                       const double *w) noexcept nogil:
    """(1/n) sum_i s_i psi_i(<x_i, w>)."""
    cdef Py_ssize_t i
    cdef double n = <double> (pb.stop - pb.start), s, total = 0.0
    if n <= 0:
        return 0.0
    for i in range(pb.start, pb.stop):
        s = row_weight(pb, i)
        if s != 0.0:
            total += s * loss.cy_ext_value(rows.dot(i, w), pb.y[i], row_k(rows, i, pb))
    return total / n


cdef class Objective:
    """Validated bundle of (rows, y, loss, lam, w0, clip, weights, row range).

    Parameters
    ----------
    rows : RowData
    y : array-like of shape (n_samples,)
        Labels in {-1, +1} for classification losses (checked on the range).
    loss : Loss
    lam : float, default=0.0
        Regularisation strength, >= 0.
    w0 : array-like of shape (n_features,), default=None
        Regularisation centre; zeros when None.
    clip : float or None, default=None
        The Lipschitz level C of the extension; None or inf: raw loss.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights in [0, 1]; None: all ones.
    start, stop : int, default=0, None
        Row range ``[start, stop)`` (stop=None: n_samples).
    """

    def __cinit__(self, RowData rows not None, y, Loss loss not None, double lam=0.0,
                  w0=None, clip=None, sample_weight=None, Py_ssize_t start=0, stop=None):
        cdef Py_ssize_t n = rows.n_samples, d = rows.n_features
        cdef const double[::1] yv, sv, wv
        if stop is None:
            stop = n
        stop = int(stop)
        if not (0 <= start <= stop <= n):
            raise ValueError(f"need 0 <= start <= stop <= n_samples={n}, got [{start}, {stop})")
        if not (lam >= 0.0) or not isfinite(lam):
            raise ValueError(f"lam must be finite and >= 0, got {lam!r}")
        y_arr = np.ascontiguousarray(y, dtype=np.float64)
        if y_arr.shape != (n,):
            raise ValueError(f"y must have shape ({n},), got {y_arr.shape}")
        ys = y_arr[start:stop]
        if not np.all(np.isfinite(ys)):
            raise ValueError("y contains NaN or infinity")
        if loss.is_classification and not np.all(np.abs(ys) == 1.0):
            raise ValueError(f"{loss!r} needs labels y in {{-1, +1}}")
        if clip is None:
            C = INFINITY
        else:
            C = float(clip)
            if not (C > 0.0):
                raise ValueError(f"clip must be > 0 (or None), got {clip!r}")
        w0_arr = np.zeros(d) if w0 is None else np.ascontiguousarray(w0, dtype=np.float64)
        if w0_arr.shape != (d,):
            raise ValueError(f"w0 must have shape ({d},), got {w0_arr.shape}")
        if not np.all(np.isfinite(w0_arr)):
            raise ValueError("w0 must be finite")
        sw_arr = None
        if sample_weight is not None:
            sw_arr = np.ascontiguousarray(sample_weight, dtype=np.float64)
            if sw_arr.shape != (n,):
                raise ValueError(f"sample_weight must have shape ({n},), got {sw_arr.shape}")
            ss = sw_arr[start:stop]
            if not np.all((ss >= 0.0) & (ss <= 1.0)):
                raise ValueError("sample_weight must lie in [0, 1]")
        self.rows = rows
        self.loss = loss
        self._keep = (y_arr, w0_arr, sw_arr)
        self.pb.clip = C
        self.pb.k_factor = 1.0 - (d + 8) * 2.0 ** -53
        self.pb.start = start
        self.pb.stop = stop
        self.pb.lam = lam
        self.pb.d = d
        self.pb.y = NULL
        self.pb.sw = NULL
        self.pb.w0 = NULL
        if n > 0:
            yv = y_arr
            self.pb.y = &yv[0]
        if d > 0:
            wv = w0_arr
            self.pb.w0 = &wv[0]
        if sw_arr is not None and n > 0:
            sv = sw_arr
            self.pb.sw = &sv[0]

    @property
    def n(self):
        """Number of rows in the range."""
        return self.pb.stop - self.pb.start

    @property
    def lam(self):
        return self.pb.lam

    @property
    def w0(self):
        return self._keep[1]

    def k_values(self):
        """The extension levels ``k_i`` the kernels use, for rows in the range.

        ``row_k`` of every row: :func:`k_of_norm` on the cached norms read in one loop (no method call per
        row; the same floats; speed only).
        """
        cdef Py_ssize_t i, n = self.pb.stop - self.pb.start
        out = np.empty(n)
        cdef double[::1] ov = out
        cdef const double *nr
        if n == 0:
            return out
        nr = self.rows.norms + self.pb.start
        with nogil:
            for i in range(n):
                ov[i] = k_of_norm(nr[i], &self.pb)
        return out

    def value(self, w):
        """``P(w)`` (loss part plus regulariser)."""
        cdef const double[::1] wv = self._w(w)
        cdef double v = 0.0
        if self.pb.d > 0:
            with nogil:
                v = loss_value(self.rows, self.loss, &self.pb, &wv[0])
        w_arr = np.asarray(wv)
        return v + 0.5 * self.pb.lam * float(np.sum((w_arr - self._keep[1]) ** 2))

    def loss_gradient(self, w):
        """Mean extended loss gradient (no regulariser)."""
        cdef const double[::1] wv = self._w(w)
        out = np.zeros(self.pb.d)
        cdef double[::1] ov = out
        if self.pb.d > 0:
            with nogil:
                loss_gradient(self.rows, self.loss, &self.pb, &wv[0], &ov[0])
        return out

    def _w(self, w):
        arr = np.ascontiguousarray(w, dtype=np.float64)
        if arr.shape != (self.pb.d,):
            raise ValueError(f"w must have shape ({self.pb.d},), got {arr.shape}")
        return arr
