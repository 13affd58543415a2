"""Rigorous positive-definiteness decisions for integer matrices, in floating point (doc/privacy/adassp.rst,
"Rounding on the secure path", *Certified lambda_min*).

For a symmetric integer matrix ``M`` (numpy int64, entries below ``2^52``) and an integer shift ``s``:

* :func:`float_pd_proof` -- ``True`` only if ``M - s I`` is positive definite (PROVEN; ``False`` means
  "not proven"). A floating-point Cholesky factorisation of ``H' = M - (s + r) I`` in our own blocked
  algorithm (each entry of ``R`` evaluated as ``(h_ij - sum_k r_ki r_kj) / r_ii`` or ``sqrt(h_ii - sum_k
  r_ki^2)``, the sum in ANY order: BLAS ``gemm`` / ``gemv`` blocks, FMA or not) that runs to completion with
  finite entries gives ``R^T R = H' + D`` with, entrywise (IEEE binary64, rounding to nearest, gradual
  underflow -- numpy's default, no flush-to-zero / denormals-are-zero mode: every rounding is ``x (1 + delta)
  + eta``, ``|delta| <= u``, ``|eta| <= 2^-1075``; at most ``2d + 1`` roundings per entry, ``r_ii <= 2^512``),

      ``|D| <= g (|H'| + |R|^T |R|) + U``,  ``g = gamma_{d+2}``, ``||U||_2, tr U < 2^-500``,

  so ``||D||_2 <= g (||H0||_F + r) + g (tr H0 + g (sum |h0_ii| + d r)) / (1 - g) + 2^-18`` (``H0 = M - s I``;
  ``|| |R|^T |R| ||_2 <= ||R||_F^2 = tr(H' + D)``). :func:`rump_shift` returns the smallest integer ``r``
  above that bound, so ``lambda_min(H0) >= r - ||D||_2 > 0``. This is S. M. Rump's criterion ("Verification
  of positive definiteness", BIT 46 (2006) 433-452: a Cholesky of ``A - c I`` with ``c`` of order
  ``gamma_{n+1} tr(A)`` plus an underflow term certifies ``A`` positive definite), re-derived for this
  algorithm with the cruder entrywise bound above (an extra ``g |H'|`` term: at most a factor 2 on ``r``).
  Assumption (as for the statistics): the BLAS forms each entry of a product as a sum of its products
  (no Strassen-type algorithm).
* :func:`not_pd_witness` -- ``True`` only if ``M - s I`` is NOT positive definite (PROVEN): an integer vector
  ``v`` with ``v^T M v < s v^T v``, evaluated exactly (int64 halves of ``M``, Python integers for the last
  ``d`` products). ``v`` is LAPACK's eigenvector rounded; its quality only decides whether the proof succeeds.
* :func:`positive_definite_exact` -- the exact test (Sylvester, fraction-free Bareiss in Python integers),
  ``O(d^3)`` big-integer work: the last resort.
"""

import math
from fractions import Fraction

import numpy as np

from .._mechanisms._calibrate import _gamma

__all__ = ["float_pd_proof", "not_pd_witness", "positive_definite_exact", "rump_shift", "float_cholesky_upper"]

#: Entries of ``M`` (and of ``M - s I``) must stay below this for the float matrices to be exact.
_EXACT_FLOAT = 2**53
#: Block size of :func:`float_cholesky_upper` (speed only).
_BLOCK = 128
#: Bound on every underflow contribution (``||U||_2 + g tr U / (1 - g)``); see the module docstring.
_UNDERFLOW = Fraction(1, 2**18)


def float_cholesky_upper(H, block=_BLOCK):
    """Blocked floating-point Cholesky ``H = R^T R`` (``R`` upper triangular), or None on breakdown.

    Every entry is ``(h_ij - sum_{k<i} r_ki r_kj) / r_ii`` (diagonal: ``sqrt(h_ii - sum r_ki^2)``) with the sum
    split between the trailing ``gemm`` updates of earlier blocks and one ``gemv`` inside the block, each in
    any order: the evaluation the error bound of :func:`float_pd_proof` covers. Breakdown: a pivot that is not
    ``> 0`` (NaN included) or any non-finite entry.
    """
    n = H.shape[0]
    R = np.array(H, dtype=np.float64, order="C")  # only the upper triangle is read
    for k0 in range(0, n, block):
        k1 = min(k0 + block, n)
        for j in range(k0, k1):
            col = R[k0:j, j]
            s = R[j, j] - col @ col
            if not s > 0:
                return None
            rjj = math.sqrt(s)
            R[j, j] = rjj
            if j + 1 < n:
                R[j, j + 1:] = (R[j, j + 1:] - col @ R[k0:j, j + 1:]) / rjj
        if k1 < n:
            P = R[k0:k1, k1:]
            R[k1:, k1:] -= P.T @ P
    R = np.triu(R)
    if not np.isfinite(R).all():
        return None
    return R


def _shifted(M, s):
    """``M - s I`` as int64, or None if an entry reaches ``2^53`` (then the float copy would not be exact)."""
    d = M.shape[0]
    diag = M.diagonal().astype(object) - int(s)
    if max(abs(int(v)) for v in diag) >= _EXACT_FLOAT or int(np.max(np.abs(M))) >= _EXACT_FLOAT:
        return None
    H = M.copy()
    H[np.diag_indices(d)] = np.array([int(v) for v in diag], dtype=np.int64)
    return H


def _frobenius_up(H):
    """A rational ``>= ||H||_F`` (``H`` int64 below ``2^53``: the squares are integers, no underflow)."""
    x = H.astype(np.float64).ravel()
    n_terms = max(1, x.size)
    computed = float(np.dot(x, x))  # each term rounded once, then <= n - 1 additions in any order
    bound2 = Fraction(computed) / (1 - _gamma(n_terms))  # computed >= (1 - gamma_N) * exact (terms >= 0)
    r = math.sqrt(float(bound2))
    while Fraction(r) ** 2 < bound2:
        r = math.nextafter(r, math.inf)
    return Fraction(r)


def rump_shift(H0):
    """The integer ``r`` of :func:`float_pd_proof` for ``H0 = M - s I`` (int64): if a float Cholesky of
    ``H0 - r I`` runs to completion, ``lambda_min(H0) > 0``."""
    d = H0.shape[0]
    g = _gamma(d + 2)
    F = _frobenius_up(H0)
    diag = [int(v) for v in H0.diagonal()]
    tau, tau_abs = max(sum(diag), 0), sum(abs(v) for v in diag)
    coef = 1 - g - g * g * d / (1 - g)
    rhs = g * F + g * (tau + g * tau_abs) / (1 - g) + _UNDERFLOW
    return math.floor(rhs / coef) + 1


def float_pd_proof(M, s, *, shift=None):
    """True only if ``M - s I`` is positive definite (proven); False: not proven (see the module docstring).

    ``shift`` overrides Rump's shift (tests only: ``shift=0`` is the uncorrected float Cholesky, unsound).
    """
    H0 = _shifted(M, s)
    if H0 is None:
        return False
    r = rump_shift(H0) if shift is None else int(shift)
    H = _shifted(H0, r)
    if H is None:
        return False
    R = float_cholesky_upper(H.astype(np.float64))
    return R is not None


def _integer_vector(v, bits=26):
    v = np.asarray(v, dtype=np.float64)
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if not (top > 0 and math.isfinite(top)):
        return None
    return np.rint(v * (2.0**bits / top)).astype(np.int64)


def exact_quadratic(M, v):
    """``v^T M v`` exactly (Python int) for int64 ``M`` (entries below ``2^52``) and ``|v_i| <= 2^26``."""
    d = M.shape[0]
    if int(np.max(np.abs(M))) < 2**52 and int(np.max(np.abs(v))) <= 2**26:
        hi = M >> 26  # floor; |hi| <= 2^26
        lo = M - (hi << 26)  # 0 <= lo < 2^26
        w = [0] * d
        for c0 in range(0, d, 1024):  # <= 1024 products below 2^52 each: no int64 overflow
            c1 = min(c0 + 1024, d)
            wh = hi[:, c0:c1] @ v[c0:c1]
            wl = lo[:, c0:c1] @ v[c0:c1]
            w = [a + (int(x) << 26) + int(y) for a, x, y in zip(w, wh, wl)]
    else:
        rows = M.tolist()
        vv = [int(x) for x in v]
        w = [sum(a * b for a, b in zip(row, vv)) for row in rows]
    return sum(int(a) * b for a, b in zip(v, w))


def not_pd_witness(M, s, v):
    """True only if ``M - s I`` is not positive definite (proven by ``v^T (M - s I) v < 0`` exactly)."""
    if v is None:
        return False
    q = exact_quadratic(M, v)
    nv = sum(int(a) * int(a) for a in v)
    return nv > 0 and q < int(s) * nv


def positive_definite_exact(M, shift):
    """Exactly: is the integer matrix ``M - shift I`` positive definite? (Sylvester: every leading principal
    minor > 0, computed by fraction-free Bareiss elimination in Python integers.)"""
    M = M.tolist() if isinstance(M, np.ndarray) else M
    d = len(M)
    a = [[int(M[i][j]) - (shift if i == j else 0) for j in range(d)] for i in range(d)]
    prev = 1
    for k in range(d):
        pivot = a[k][k]
        if pivot <= 0:  # the k-th leading minor (Bareiss: a[k][k] is that minor exactly)
            return False
        for i in range(k + 1, d):
            ai, ak = a[i], a[k]
            for j in range(k + 1, d):
                ai[j] = (ai[j] * pivot - ai[k] * ak[j]) // prev
        prev = pivot
    return True
