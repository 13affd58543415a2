"""GLM loss kernels with closed-form Lipschitz extensions (doc/algorithms.rst, §6).

Every loss is a ``cdef class`` with one interface (``_losses.pxd``): raw value
and derivative in ``z = <w, x>``, the ``k``-Lipschitz extension
``psi_k = phi [inf-conv] k|.|`` and its derivative ``clip(phi'(z), -k, k)``,
the convex conjugate of the extension and one exact dual coordinate step, all
``noexcept nogil``. The Python methods of the same names are vectorised
(numpy broadcasting) hooks for tests and drivers.

Conventions
-----------
* Classification losses (`Hinge`, `Logistic`) take ``y`` in {-1, +1} and are
  functions of the margin ``m = y z``; regression losses (`Squared`,
  `Absolute`, `Power`) are functions of the residual ``r = z - y``.
* ``k = C / ||x_i||`` turns the per-example gradient into per-example
  clipping at norm ``C``; ``k = inf`` means no extension.
* Subgradient at kinks: the one of smallest magnitude (hinge at ``m = 1``
  and absolute at ``r = 0`` return 0).
* Conjugates are of the extension in ``z``:
  ``psi_k^*(u) = phi^*(u) + indicator(|u| <= k)``, ``+inf`` off the domain.
"""
import numpy as np

from libc.math cimport exp, log, log1p, fabs, sqrt, pow, INFINITY, isfinite


cdef enum:
    OP_VALUE = 0
    OP_DERIV = 1
    OP_EXT_VALUE = 2
    OP_EXT_DERIV = 3
    OP_CONJ = 4
    OP_DUAL_UPDATE = 5


cdef inline double _clip(double v, double lo, double hi) noexcept nogil:
    return lo if v < lo else (hi if v > hi else v)


cdef inline double _sign(double v) noexcept nogil:
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)


cdef inline double _log1pexp(double x) noexcept nogil:
    """log(1 + e^x) without overflow."""
    if x > 0.0:
        return x + log1p(exp(-x))
    return log1p(exp(x))


cdef inline double _sigmoid(double t) noexcept nogil:
    """1 / (1 + e^-t) without overflow."""
    cdef double e
    if t >= 0.0:
        return 1.0 / (1.0 + exp(-t))
    e = exp(t)
    return e / (1.0 + e)


cdef inline double _xlogx(double x) noexcept nogil:
    return 0.0 if x <= 0.0 else x * log(x)


cdef class Loss:
    """Base class: one interface for every GLM loss (see module docstring)."""

    cdef double cy_value(self, double z, double y) noexcept nogil:
        return 0.0

    cdef double cy_deriv(self, double z, double y) noexcept nogil:
        return 0.0

    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil:
        return 0.0

    cdef double cy_ext_deriv(self, double z, double y, double k) noexcept nogil:
        # doc/algorithms.rst, §6.1: psi_k' = clip(phi', -k, k) (per-example clipping).
        return _clip(self.cy_deriv(z, y), -k, k)

    cdef double cy_conj(self, double u, double y, double k) noexcept nogil:
        return INFINITY

    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil:
        return beta

    cdef double cy_dual_update(self, double beta, double z, double y, double k,
                               double q) noexcept nogil:
        if q <= 0.0:
            # max_b -psi^*(-b) - b z is attained at any b with -b in d psi(z).
            return -self.cy_ext_deriv(z, y, k)
        return self.cy_dual_step(beta, z, y, k, q)

    # ---- Python hooks ------------------------------------------------------
    def value(self, z, y):
        """Raw loss ``phi(z; y)``, vectorised over broadcast arrays."""
        return self._map(OP_VALUE, (z, y))

    def deriv(self, z, y):
        """``d phi / d z`` (smallest-magnitude subgradient at kinks)."""
        return self._map(OP_DERIV, (z, y))

    def ext_value(self, z, y, k=np.inf):
        """Value of the ``k``-Lipschitz extension (doc/algorithms.rst, §6.2)."""
        return self._map(OP_EXT_VALUE, (z, y, k))

    def ext_deriv(self, z, y, k=np.inf):
        """Derivative of the extension: ``clip(deriv(z, y), -k, k)``."""
        return self._map(OP_EXT_DERIV, (z, y, k))

    def conj(self, u, y, k=np.inf):
        """Convex conjugate of the extension in ``z``; ``inf`` off its domain."""
        return self._map(OP_CONJ, (u, y, k))

    def dual_step(self, beta, z, y, k, q):
        """One exact dual coordinate step.

        Returns ``argmax_b -conj(-b, y, k) - b z - q/2 (b - beta)^2``; for
        ``q == 0`` the maximiser ``-ext_deriv(z, y, k)``.
        """
        return self._map(OP_DUAL_UPDATE, (beta, z, y, k, q))

    @property
    def lipschitz(self):
        """``sup |phi'|`` of the raw loss (``inf`` if unbounded)."""
        return np.inf

    @property
    def smoothness(self):
        """``sup phi''`` of the raw loss (``inf`` if not smooth)."""
        return np.inf

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __reduce__(self):
        return (type(self), ())

    def _map(self, int op, tuple args):
        arrays = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in args])
        shape = arrays[0].shape
        cols = [np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in arrays]
        while len(cols) < 5:
            cols.append(cols[0])
        out = np.empty(cols[0].shape[0], dtype=np.float64)
        cdef double[::1] o = out
        cdef const double[::1] a0 = cols[0], a1 = cols[1], a2 = cols[2], a3 = cols[3], a4 = cols[4]
        cdef Py_ssize_t i
        with nogil:
            for i in range(o.shape[0]):
                if op == OP_VALUE:
                    o[i] = self.cy_value(a0[i], a1[i])
                elif op == OP_DERIV:
                    o[i] = self.cy_deriv(a0[i], a1[i])
                elif op == OP_EXT_VALUE:
                    o[i] = self.cy_ext_value(a0[i], a1[i], a2[i])
                elif op == OP_EXT_DERIV:
                    o[i] = self.cy_ext_deriv(a0[i], a1[i], a2[i])
                elif op == OP_CONJ:
                    o[i] = self.cy_conj(a0[i], a1[i], a2[i])
                else:
                    o[i] = self.cy_dual_update(a0[i], a1[i], a2[i], a3[i], a4[i])
        return out.reshape(shape)


cdef class Hinge(Loss):
    """Hinge loss ``max(0, 1 - m)``, ``m = y z``; extension ``min(1, k) * hinge``."""

    def __cinit__(self):
        self.is_classification = True

    cdef double cy_value(self, double z, double y) noexcept nogil:
        cdef double m = y * z
        return 1.0 - m if m < 1.0 else 0.0

    cdef double cy_deriv(self, double z, double y) noexcept nogil:
        return -y if y * z < 1.0 else 0.0

    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil:
        return (k if k < 1.0 else 1.0) * self.cy_value(z, y)

    cdef double cy_conj(self, double u, double y, double k) noexcept nogil:
        # hinge^*(v) = v on [-1, 0]; in z: v = u y; extension: |u| <= k.
        cdef double c = k if k < 1.0 else 1.0
        cdef double v = u * y
        if v >= -c and v <= 0.0:
            return v
        return INFINITY

    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil:
        # In b = beta y in [0, c]: maximise b - m b - q/2 (b - b0)^2 (concave
        # quadratic), so the clipped stationary point is exact.
        cdef double c = k if k < 1.0 else 1.0
        cdef double b = _clip(beta * y + (1.0 - y * z) / q, 0.0, c)
        return b * y

    @property
    def lipschitz(self):
        return 1.0


cdef class Logistic(Loss):
    """Logistic loss ``log(1 + exp(-m))``, ``m = y z``.

    Extension for ``k < 1`` (doc/algorithms.rst, §6.2): with
    ``m_k = log((1 - k) / k)``, the loss for ``m >= m_k`` and the line
    ``-log(1 - k) + k (m_k - m)`` below it.
    """

    def __cinit__(self):
        self.is_classification = True

    cdef double cy_value(self, double z, double y) noexcept nogil:
        return _log1pexp(-y * z)

    cdef double cy_deriv(self, double z, double y) noexcept nogil:
        return -y * _sigmoid(-y * z)

    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil:
        cdef double m = y * z, mk
        if k >= 1.0:
            return _log1pexp(-m)
        if k <= 0.0:
            return 0.0  # the infimum of the logistic loss
        mk = log1p(-k) - log(k)
        if m >= mk:
            return _log1pexp(-m)
        return -log1p(-k) + k * (mk - m)

    cdef double cy_conj(self, double u, double y, double k) noexcept nogil:
        # logistic^*(v) = (-v) log(-v) + (1 + v) log(1 + v) on [-1, 0].
        cdef double c = k if k < 1.0 else 1.0
        cdef double b = -u * y
        if b >= 0.0 and b <= c:
            # (1 - b) log1p(-b): relative accuracy also for tiny b, where
            # log(1 - b) would carry an absolute error of 2^-53 (the duality
            # gap certificate needs every term accurate relative to itself)
            return _xlogx(b) + ((1.0 - b) * log1p(-b) if b < 1.0 else 0.0)
        return INFINITY

    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil:
        # In b = beta y in [0, c] the optimality condition is
        #     log((1 - b) / b) - m - q (b - b0) = 0.
        # Solve in t = logit(b): f(t) = -t - m - q (sigmoid(t) - b0) is
        # decreasing with f' in [-1 - q/4, -1] (well conditioned) and its root
        # lies in [-m - q (1 - b0), -m + q b0]: safeguarded Newton.
        cdef double c = k if k < 1.0 else 1.0
        cdef double m = y * z, b0 = beta * y
        cdef double lo, hi, t, tn, ft, s, tc
        cdef int it
        if c <= 0.0:
            return 0.0
        lo = -m - q * (1.0 - b0)
        hi = -m + q * b0
        if c < 1.0:
            tc = log(c) - log1p(-c)
            if -tc - m - q * (c - b0) >= 0.0:
                return c * y  # the unconstrained maximiser lies beyond c
            if tc < hi:
                hi = tc
        t = _clip(-m - q * (_sigmoid(-m) - b0), lo, hi)
        for it in range(200):
            s = _sigmoid(t)
            ft = -t - m - q * (s - b0)
            if ft > 0.0:
                lo = t
            else:
                hi = t
            tn = t + ft / (1.0 + q * s * (1.0 - s))
            # converged Newton step: accept (t itself is a bracket end now, so
            # the safeguard below would wrongly bisect away from the root)
            if fabs(tn - t) <= 4e-16 * (1.0 + fabs(t)):
                t = tn
                break
            if not (tn > lo and tn < hi):
                tn = 0.5 * (lo + hi)
            if hi - lo <= 4e-16 * (1.0 + fabs(t)):
                t = tn
                break
            t = tn
        s = _sigmoid(t)
        if s > c:
            s = c
        return s * y

    @property
    def lipschitz(self):
        return 1.0

    @property
    def smoothness(self):
        return 0.25


cdef class Squared(Loss):
    """Squared loss ``r^2 / 2``, ``r = z - y``; extension Huber_k."""

    def __cinit__(self):
        self.is_classification = False

    cdef double cy_value(self, double z, double y) noexcept nogil:
        cdef double r = z - y
        return 0.5 * r * r

    cdef double cy_deriv(self, double z, double y) noexcept nogil:
        return z - y

    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil:
        cdef double r = fabs(z - y)
        if r <= k:
            return 0.5 * r * r
        return k * r - 0.5 * k * k

    cdef double cy_conj(self, double u, double y, double k) noexcept nogil:
        if fabs(u) <= k:
            return u * y + 0.5 * u * u
        return INFINITY

    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil:
        # maximise b y - b^2/2 - b z - q/2 (b - beta)^2 over |b| <= k.
        return _clip((y - z + q * beta) / (1.0 + q), -k, k)

    @property
    def smoothness(self):
        return 1.0


cdef class Absolute(Loss):
    """Absolute loss ``|r|``, ``r = z - y``; extension ``min(1, k) |r|``."""

    def __cinit__(self):
        self.is_classification = False

    cdef double cy_value(self, double z, double y) noexcept nogil:
        return fabs(z - y)

    cdef double cy_deriv(self, double z, double y) noexcept nogil:
        return _sign(z - y)

    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil:
        return (k if k < 1.0 else 1.0) * fabs(z - y)

    cdef double cy_conj(self, double u, double y, double k) noexcept nogil:
        cdef double c = k if k < 1.0 else 1.0
        if fabs(u) <= c:
            return u * y
        return INFINITY

    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil:
        cdef double c = k if k < 1.0 else 1.0
        return _clip(beta + (y - z) / q, -c, c)

    @property
    def lipschitz(self):
        return 1.0


cdef class Power(Loss):
    """Power loss ``|r|^p``, ``r = z - y``, ``p >= 1``.

    ``p = 1`` is `Absolute`; ``p = 2`` gives ``r^2`` (not ``r^2 / 2``).
    Extension (doc/algorithms.rst, §6.2): with ``r_k = (k / p)^(1 / (p - 1))``,
    ``|r|^p`` for ``|r| <= r_k`` and ``k |r| - (p - 1) r_k^p`` beyond.

    Parameters
    ----------
    p : float, >= 1
    """

    def __cinit__(self, double p):
        if not (p >= 1.0) or not isfinite(p):
            raise ValueError(f"Power loss needs a finite p >= 1, got {p!r}")
        self.p = p
        self.is_classification = False

    def __repr__(self):
        return f"Power(p={self.p!r})"

    def __reduce__(self):
        return (Power, (self.p,))

    cdef double cy_value(self, double z, double y) noexcept nogil:
        return pow(fabs(z - y), self.p)

    cdef double cy_deriv(self, double z, double y) noexcept nogil:
        cdef double r = z - y
        if self.p == 1.0:
            return _sign(r)
        return self.p * pow(fabs(r), self.p - 1.0) * _sign(r)

    cdef double cy_ext_value(self, double z, double y, double k) noexcept nogil:
        cdef double r = fabs(z - y), rk
        if self.p == 1.0:
            return (k if k < 1.0 else 1.0) * r
        if not isfinite(k):
            return pow(r, self.p)
        rk = pow(k / self.p, 1.0 / (self.p - 1.0))
        if r <= rk:
            return pow(r, self.p)
        return k * r - (self.p - 1.0) * pow(rk, self.p)

    cdef double cy_conj(self, double u, double y, double k) noexcept nogil:
        # (|r|^p)^*(u) = (p - 1) (|u| / p)^(p / (p - 1)); shifted by u y.
        cdef double c = k
        if self.p == 1.0:
            c = k if k < 1.0 else 1.0
            return u * y if fabs(u) <= c else INFINITY
        if fabs(u) <= c:
            return u * y + (self.p - 1.0) * pow(fabs(u) / self.p, self.p / (self.p - 1.0))
        return INFINITY

    cdef double cy_dual_step(self, double beta, double z, double y, double k,
                             double q) noexcept nogil:
        # Stationarity: sign(b) (|b| / p)^(1/(p-1)) + q b = e := y - z + q beta.
        # The left side is odd and increasing, so b = sign(e) A with A >= 0;
        # substituting A = p r^(p-1) gives g(r) = r + q p r^(p-1) - |e| = 0 on
        # [0, |e|] (g(0) <= 0 <= g(|e|)): bracketed Newton. The 1-D objective
        # is concave, so clipping A to k afterwards is exact.
        cdef double p = self.p, e = y - z + q * beta, E = fabs(e)
        cdef double lo, hi, r, rn, g, gp, A
        cdef int it
        if p == 1.0:
            A = k if k < 1.0 else 1.0
            return _clip(beta + (y - z) / q, -A, A)
        if E == 0.0:
            return 0.0
        if isfinite(k) and pow(k / p, 1.0 / (p - 1.0)) + q * k <= E:
            return _sign(e) * k
        if p == 2.0:
            A = 2.0 * E / (1.0 + 2.0 * q)
        else:
            lo = 0.0
            hi = E
            r = E / (1.0 + q * p) if p < 2.0 else E
            for it in range(300):
                g = r + q * p * pow(r, p - 1.0) - E
                if g > 0.0:
                    hi = r
                elif g < 0.0:
                    lo = r
                else:
                    break
                gp = 1.0 + q * p * (p - 1.0) * pow(r, p - 2.0) if r > 0.0 else INFINITY
                rn = r - g / gp
                if fabs(rn - r) <= 4e-16 * r:
                    r = rn   # converged Newton step (see Logistic.cy_dual_step)
                    break
                if not (rn > lo and rn < hi):
                    rn = 0.5 * (lo + hi)
                if hi - lo <= 4e-16 * hi:
                    r = rn
                    break
                r = rn
            A = p * pow(r, p - 1.0)
        if A > k:
            A = k
        return _sign(e) * A

    @property
    def lipschitz(self):
        return 1.0 if self.p == 1.0 else np.inf

    @property
    def smoothness(self):
        return 2.0 if self.p == 2.0 else np.inf
