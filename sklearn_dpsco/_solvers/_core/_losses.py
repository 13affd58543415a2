"""NumPy reference of the GLM losses, their C-Lipschitz extensions and conjugates.

The compiled kernels (``sklearn_dpsco._fast``) are tested against these, and the
reference certified solver (:mod:`.._optim._reference_erm`) uses them. Conventions
(doc/algorithms.rst, §6): ``z = <w, x>``; classification losses take ``y in {-1, +1}``
and the margin ``m = y z``; regression losses the residual ``r = z - y``. The
extension threshold is ``k = C / ||x||`` (``inf`` = no extension); the
extension's derivative is ``clip(phi'(z), -k, k)``.

Conjugates are of the *extended* loss as a function of z,
``psi*(a) = sup_z a z - psi(z)``; they are finite exactly on the box
``dom(psi*)`` returned by :meth:`dual_box`, which has half-width ``<= k``.
"""

import numpy as np

__all__ = ["LOSSES", "get_loss"]


def _clip(v, k):
    return np.clip(v, -k, k)


class _Hinge:
    name = "hinge"
    classification = True
    lipschitz = 1.0
    smoothness = np.inf

    def value(self, z, y):
        return np.maximum(0.0, 1.0 - y * z)

    def deriv(self, z, y):
        # subgradient -y on the kink (m = 1 taken as "active")
        return np.where(y * z <= 1.0, -y, 0.0) * np.ones_like(z)

    def ext_value(self, z, y, k):
        return np.minimum(1.0, k) * self.value(z, y)

    def ext_deriv(self, z, y, k):
        return _clip(self.deriv(z, y), k)

    def dual_box(self, y, k):
        c = np.minimum(1.0, k)
        lo = np.where(y > 0, -c, 0.0)
        hi = np.where(y > 0, 0.0, c)
        return lo, hi

    def conj(self, a, y, k):
        return y * a

    def conj_deriv(self, a, y, k):
        return y * np.ones_like(a)


class _Absolute:
    name = "absolute"
    classification = False
    lipschitz = 1.0
    smoothness = np.inf

    def value(self, z, y):
        return np.abs(z - y)

    def deriv(self, z, y):
        return np.sign(z - y)

    def ext_value(self, z, y, k):
        return np.minimum(1.0, k) * self.value(z, y)

    def ext_deriv(self, z, y, k):
        return _clip(self.deriv(z, y), k)

    def saturation(self, k):
        """Residual size beyond which the extension's derivative is constant (+-min(1, k))."""
        return np.zeros_like(k, dtype=float)

    def dual_box(self, y, k):
        c = np.minimum(1.0, k) * np.ones_like(y, dtype=float)
        return -c, c

    def conj(self, a, y, k):
        return a * y

    def conj_deriv(self, a, y, k):
        return y * np.ones_like(a)


class _Squared:
    """0.5 r^2; its extension is the Huber loss with threshold k."""

    name = "squared"
    classification = False
    lipschitz = np.inf
    smoothness = 1.0

    def value(self, z, y):
        return 0.5 * (z - y) ** 2

    def deriv(self, z, y):
        return z - y

    def ext_value(self, z, y, k):
        r = np.abs(z - y)
        return np.where(r <= k, 0.5 * r**2, k * r - 0.5 * k**2)

    def ext_deriv(self, z, y, k):
        return _clip(z - y, k)

    def saturation(self, k):
        """Residual size beyond which the extension's derivative is constant (+-k)."""
        return np.asarray(k, dtype=float)

    def dual_box(self, y, k):
        k = k * np.ones_like(y, dtype=float)
        return -k, k

    def conj(self, a, y, k):
        return a * y + 0.5 * a**2

    def conj_deriv(self, a, y, k):
        return y + a


class _Power:
    """|r|^p, p >= 1."""

    classification = False

    def __init__(self, p):
        if not p >= 1:
            raise ValueError(f"power must be >= 1, got {p}.")
        self.p = float(p)
        self.name = f"power({self.p:g})"
        self.lipschitz = 1.0 if self.p == 1 else np.inf
        self.smoothness = 2.0 if self.p == 2 else (np.inf if self.p != 1 else np.inf)

    def value(self, z, y):
        return np.abs(z - y) ** self.p

    def deriv(self, z, y):
        r = z - y
        return self.p * np.abs(r) ** (self.p - 1) * np.sign(r)

    def ext_value(self, z, y, k):
        p = self.p
        r = np.abs(z - y)
        if p == 1:
            return np.minimum(1.0, k) * r
        with np.errstate(over="ignore", divide="ignore"):
            r_k = (k / p) ** (1.0 / (p - 1.0))
            lin = k * r - (p - 1.0) * r_k**p
        return np.where(r <= r_k, r**p, lin)

    def ext_deriv(self, z, y, k):
        return _clip(self.deriv(z, y), k)

    def saturation(self, k):
        """Residual size beyond which the extension's derivative is constant: p r^(p-1) = k."""
        k = np.asarray(k, dtype=float)
        if self.p == 1:
            return np.zeros_like(k)
        with np.errstate(over="ignore"):
            return (k / self.p) ** (1.0 / (self.p - 1.0))

    def dual_box(self, y, k):
        c = (np.minimum(1.0, k) if self.p == 1 else k) * np.ones_like(y, dtype=float)
        return -c, c

    def conj(self, a, y, k):
        p = self.p
        if p == 1:
            return a * y
        q = p / (p - 1.0)
        return a * y + (p - 1.0) * (np.abs(a) / p) ** q

    def conj_deriv(self, a, y, k):
        p = self.p
        if p == 1:
            return y * np.ones_like(a)
        return y + np.sign(a) * (np.abs(a) / p) ** (1.0 / (p - 1.0))


class _Logistic:
    name = "logistic"
    classification = True
    lipschitz = 1.0
    smoothness = 0.25

    def value(self, z, y):
        return np.logaddexp(0.0, -y * z)

    def deriv(self, z, y):
        return -y / (1.0 + np.exp(y * z))

    def ext_value(self, z, y, k):
        m = y * z
        base = np.logaddexp(0.0, -m)
        k = np.asarray(k, dtype=float) * np.ones_like(m)
        out = base.copy()
        small = k < 1.0
        if np.any(small):
            kk = k[small]
            m_k = np.log((1.0 - kk) / kk)
            lin = -np.log1p(-kk) + kk * (m_k - m[small])
            out[small] = np.where(m[small] >= m_k, base[small], lin)
        return out

    def ext_deriv(self, z, y, k):
        return _clip(self.deriv(z, y), k)

    def dual_box(self, y, k):
        c = np.minimum(1.0, k)
        lo = np.where(y > 0, -c, 0.0)
        hi = np.where(y > 0, 0.0, c)
        return lo, hi

    def conj(self, a, y, k):
        s = -y * a  # in [0, min(1, k)]
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(s > 0, s * np.log(s), 0.0) + np.where(s < 1, (1 - s) * np.log1p(-s), 0.0)
        return ent

    def conj_deriv(self, a, y, k):
        s = np.clip(-y * a, 1e-300, 1 - 1e-16)
        return -y * (np.log(s) - np.log1p(-s))


class _Linear:
    """Test-only linear loss ``-y z`` (doc/privacy/testing.rst): 1-Lipschitz in z, so with
    ``||x|| <= 1`` and ``clip >= 1`` its extension is inactive, the regularized
    minimizer is ``w0 + sum_i s_i y_i x_i / (lam n)`` and a label flip moves it by
    exactly the replace-one sensitivity ``2 / (lam n)``."""

    name = "linear"
    classification = True
    lipschitz = 1.0
    smoothness = 0.0

    def value(self, z, y):
        return -y * z

    def deriv(self, z, y):
        return -y * np.ones_like(z)

    def ext_value(self, z, y, k):
        return np.minimum(1.0, k) * self.value(z, y)

    def ext_deriv(self, z, y, k):
        return _clip(self.deriv(z, y), k)

    def dual_box(self, y, k):
        c = -y * np.minimum(1.0, k)
        return c, c.copy()

    def conj(self, a, y, k):
        return np.zeros_like(a)

    def conj_deriv(self, a, y, k):
        return np.zeros_like(a)


LOSSES = {"linear": _Linear, "hinge": _Hinge, "absolute": _Absolute, "squared": _Squared, "logistic": _Logistic}


def get_loss(name, power=None):
    """A reference loss object by name (``"power"`` needs ``power``)."""
    if name == "power":
        return _Power(power)
    try:
        return LOSSES[name]()
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; expected one of {sorted(LOSSES) + ['power']}") from None
