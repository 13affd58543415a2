"""Exact integer samplers driven by a numpy BitGenerator (doc/privacy/secure_noise.rst).

Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential
Privacy", Algorithms 1-3:

* ``Bernoulli(exp(-gamma))`` for a rational ``gamma = a / b >= 0``;
* the discrete Laplace ``P(y) ~ exp(-|y| / t)`` for a rational scale
  ``t = num / den``;
* the discrete Gaussian ``P(y) ~ exp(-y^2 / (2 sigma^2))`` for a rational
  ``sigma^2 = num / den``.

*Exact* means: if the bit generator's words are ideal uniform bits, each
output has exactly the target law. There is no floating point anywhere in
this file. Every Bernoulli with a rational success probability ``a / b`` is
decided by comparing a lazily drawn uniform binary expansion ``U`` with the
binary expansion of ``a / b`` (shift-and-subtract long division), so no
integer wider than ``2 b`` is ever formed; the discrete Gaussian's
acceptance exponent needs up to ~320-bit integers, handled by a small
fixed-width unsigned integer (``NLIMBS`` 64-bit limbs) with overflow checks.

Limits: every numerator and denominator must lie in ``[1, 2^63)``. A draw
whose magnitude would not fit in an int64 raises ``OverflowError`` instead
of returning a wrong value; for the scales used by the mechanisms
(``t < 2^53``, ``sigma < 2^32``) its probability is below ``exp(-2^10)``.

The generator's lock is held for the whole fill and the GIL is released.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int64_t, uint8_t, uint64_t
from numpy.random cimport bitgen_t

import math
import numbers
from fractions import Fraction

import numpy as np

__all__ = [
    "as_rational",
    "bernoulli_exp",
    "bernoulli_exp_table",
    "discrete_gaussian",
    "discrete_laplace",
    "MAX_INT",
]

#: Numerators and denominators must be below this bound (2^63).
MAX_INT = 1 << 63

cdef enum:
    NLIMBS = 6          # 384-bit unsigned integers
    ST_OK = 0
    ST_OVERFLOW = 1

cdef uint64_t I64MAX = 0x7FFFFFFFFFFFFFFF
cdef uint64_t LOW32 = 0xFFFFFFFF


# --------------------------------------------------------------------------- random bits
ctypedef struct bits_t:
    bitgen_t *bg
    uint64_t word
    int n


cdef inline int next_bit(bits_t *s) noexcept nogil:
    cdef int b
    if s.n == 0:
        s.word = s.bg.next_uint64(s.bg.state)
        s.n = 64
    b = <int>(s.word & 1)
    s.word >>= 1
    s.n -= 1
    return b


cdef inline uint64_t uniform_below(bits_t *s, uint64_t n) noexcept nogil:
    """Exactly uniform on {0, ..., n - 1} (n >= 1): masked rejection."""
    cdef uint64_t mask, x
    if n <= 1:
        return 0
    mask = n - 1
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    mask |= mask >> 32
    while True:
        x = s.bg.next_uint64(s.bg.state) & mask
        if x < n:
            return x


# --------------------------------------------------------------------------- 64-bit Bernoullis
cdef inline int bern_frac64(bits_t *s, uint64_t a, uint64_t b) noexcept nogil:
    """Bernoulli(a / b) for 0 < b <= 2^63: is U < a/b, bit by bit?

    The k-th bit of a/b is produced by doubling the remainder; the first
    bit where U differs decides. Expected 2 random bits.
    """
    cdef int pb
    if a >= b:
        return 1
    if a == 0:
        return 0
    while True:
        a <<= 1  # a < b <= 2^63: no wrap-around
        if a >= b:
            pb = 1
            a -= b
        else:
            pb = 0
        if next_bit(s) != pb:
            return pb  # U's bit 0 < p's bit 1 -> U < p; the reverse -> U > p
        if a == 0:
            return 0  # p's expansion ended: U >= p


cdef inline int bern_exp_le1_64(bits_t *s, uint64_t a, uint64_t b) noexcept nogil:
    """Bernoulli(exp(-a/b)) for 0 <= a <= b (CKS20 Algorithm 1, gamma <= 1).

    Draw A_K ~ Bernoulli(gamma / K) for K = 1, 2, ... until the first
    failure; return 1 iff the failure happened at an odd K. Bernoulli(gamma /
    K) is the product of independent Bernoulli(a/b) and Bernoulli(1/K).
    """
    cdef uint64_t k = 1
    while True:
        if not bern_frac64(s, a, b):
            break
        if k > 1 and not bern_frac64(s, 1, k):
            break
        k += 1
    return <int>(k & 1)


cdef inline int bern_exp64(bits_t *s, uint64_t a, uint64_t b) noexcept nogil:
    """Bernoulli(exp(-a/b)) for any a >= 0, 0 < b <= 2^63 (CKS20 Algorithm 1).

    exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma))): one
    Bernoulli(exp(-1)) per unit of gamma, stopping at the first failure.
    """
    while a >= b:
        if not bern_exp_le1_64(s, 1, 1):
            return 0
        a -= b
    return bern_exp_le1_64(s, a, b)


# --------------------------------------------------------------------------- fixed-width big integers
ctypedef struct big_t:
    uint64_t w[NLIMBS]  # little-endian limbs


cdef inline void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) noexcept nogil:
    """Full 64 x 64 -> 128-bit product from 32-bit halves (portable C)."""
    cdef uint64_t a0 = a & LOW32, a1 = a >> 32, b0 = b & LOW32, b1 = b >> 32
    cdef uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1
    cdef uint64_t mid = (p00 >> 32) + (p01 & LOW32) + (p10 & LOW32)
    lo[0] = (mid << 32) | (p00 & LOW32)
    hi[0] = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32)


cdef inline void big_set(big_t *x, uint64_t v) noexcept nogil:
    cdef int i
    x.w[0] = v
    for i in range(1, NLIMBS):
        x.w[i] = 0


cdef inline int big_cmp(const big_t *x, const big_t *y) noexcept nogil:
    cdef int i
    for i in range(NLIMBS - 1, -1, -1):
        if x.w[i] != y.w[i]:
            return 1 if x.w[i] > y.w[i] else -1
    return 0


cdef inline bint big_is_zero(const big_t *x) noexcept nogil:
    cdef int i
    for i in range(NLIMBS):
        if x.w[i] != 0:
            return False
    return True


cdef inline void big_sub(big_t *x, const big_t *y) noexcept nogil:
    """x -= y; requires x >= y."""
    cdef int i
    cdef uint64_t borrow = 0, xi, d
    for i in range(NLIMBS):
        xi = x.w[i]
        d = xi - y.w[i]
        x.w[i] = d - borrow
        borrow = 1 if (xi < y.w[i]) or (d < borrow) else 0


cdef inline uint64_t big_shl1(big_t *x) noexcept nogil:
    """x <<= 1; returns the bit shifted out."""
    cdef int i
    cdef uint64_t carry = 0, nxt
    for i in range(NLIMBS):
        nxt = x.w[i] >> 63
        x.w[i] = (x.w[i] << 1) | carry
        carry = nxt
    return carry


cdef inline int big_mul(big_t *out, const big_t *x, const big_t *y) noexcept nogil:
    """out = x * y (schoolbook); ST_OVERFLOW if the product needs > NLIMBS limbs."""
    cdef uint64_t acc[2 * NLIMBS]
    cdef uint64_t hi, lo, carry, t1, t2, c1, c2
    cdef int i, j, k
    for k in range(2 * NLIMBS):
        acc[k] = 0
    for i in range(NLIMBS):
        if x.w[i] == 0:
            continue
        carry = 0
        for j in range(NLIMBS):
            mul64(x.w[i], y.w[j], &hi, &lo)
            t1 = acc[i + j] + lo
            c1 = 1 if t1 < lo else 0
            t2 = t1 + carry
            c2 = 1 if t2 < carry else 0
            acc[i + j] = t2
            # acc + x*y + carry < 2^128, so the high word cannot wrap.
            carry = hi + c1 + c2
        k = i + NLIMBS
        while carry != 0:
            t1 = acc[k] + carry
            carry = 1 if t1 < carry else 0
            acc[k] = t1
            k += 1
    for k in range(NLIMBS, 2 * NLIMBS):
        if acc[k] != 0:
            return ST_OVERFLOW
    for k in range(NLIMBS):
        out.w[k] = acc[k]
    return ST_OK


cdef inline int big_mul_u64(big_t *x, uint64_t v) noexcept nogil:
    cdef big_t y
    big_set(&y, v)
    return big_mul(x, x, &y)


cdef inline int big_scaled_in_range(big_t *x, const big_t *base, uint64_t v) noexcept nogil:
    """``x = base * v``; ST_OK when it is below ``2^(64 NLIMBS - 2)`` (the tuple form's range check,
    ``_to_big``), else ST_OVERFLOW (``x`` then undefined)."""
    x[0] = base[0]
    if big_mul_u64(x, v) != ST_OK or (x.w[NLIMBS - 1] >> 62) != 0:
        return ST_OVERFLOW
    return ST_OK


cdef inline int bern_frac_big(bits_t *s, const big_t *a, const big_t *b) noexcept nogil:
    """Bernoulli(a / b) for big a, b; b < 2^(64 NLIMBS - 1). Same scheme as bern_frac64."""
    cdef big_t r
    cdef int pb
    if big_cmp(a, b) >= 0:
        return 1
    if big_is_zero(a):
        return 0
    r = a[0]
    while True:
        big_shl1(&r)  # r < b < 2^(64 NLIMBS - 1): no carry out
        if big_cmp(&r, b) >= 0:
            pb = 1
            big_sub(&r, b)
        else:
            pb = 0
        if next_bit(s) != pb:
            return pb
        if big_is_zero(&r):
            return 0


cdef inline int bern_exp_big(bits_t *s, big_t a, const big_t *b) noexcept nogil:
    """Bernoulli(exp(-a/b)) for big a >= 0, b > 0 (a is taken by value)."""
    cdef uint64_t k = 1
    while big_cmp(&a, b) >= 0:
        if not bern_exp_le1_64(s, 1, 1):
            return 0
        big_sub(&a, b)
    while True:
        if not bern_frac_big(s, &a, b):
            break
        if k > 1 and not bern_frac64(s, 1, k):
            break
        k += 1
    return <int>(k & 1)


# --------------------------------------------------------------------------- samplers
cdef inline int dlap(bits_t *s, uint64_t t, uint64_t sden, int64_t *out) noexcept nogil:
    """One discrete Laplace draw, scale t / sden (CKS20 Algorithm 2)."""
    cdef uint64_t u, v, x, y
    while True:
        u = uniform_below(s, t)
        if not bern_exp_le1_64(s, u, t):  # u < t: exp(-u/t)
            continue
        v = 0
        while bern_exp_le1_64(s, 1, 1):  # v ~ Geometric(1 - exp(-1)) on {0, 1, ...}
            v += 1
        if v > (I64MAX - u) / t:
            return ST_OVERFLOW
        x = u + t * v  # ~ Geometric(1 - exp(-1/t)), exactly
        y = x / sden
        if next_bit(s):
            if y == 0:
                continue  # -0 would double-count zero
            out[0] = -<int64_t>y
        else:
            out[0] = <int64_t>y
        return ST_OK


cdef inline int dgauss(bits_t *s, uint64_t num, uint64_t den, uint64_t t,
                       const big_t *denom, int64_t *out) noexcept nogil:
    """One discrete Gaussian draw, sigma^2 = num / den (CKS20 Algorithm 3).

    Propose Y from the discrete Laplace of scale t, accept with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-m^2 / denom) with
    m = |Y| t den - num and denom = 2 num den t^2.
    """
    cdef int64_t y
    cdef uint64_t ay
    cdef big_t m, c, a
    while True:
        if dlap(s, t, 1, &y) != ST_OK:
            return ST_OVERFLOW
        ay = <uint64_t>(-y) if y < 0 else <uint64_t>y
        big_set(&m, ay)
        if big_mul_u64(&m, t) != ST_OK or big_mul_u64(&m, den) != ST_OK:
            return ST_OVERFLOW
        big_set(&c, num)
        if big_cmp(&m, &c) >= 0:
            big_sub(&m, &c)
        else:
            big_sub(&c, &m)
            m = c
        if big_mul(&a, &m, &m) != ST_OK:
            return ST_OVERFLOW
        if bern_exp_big(s, a, denom):
            out[0] = y
            return ST_OK


# --------------------------------------------------------------------------- Python face
cdef bitgen_t *_bitgen_ptr(object bit_generator) except NULL:
    capsule = bit_generator.capsule
    if not PyCapsule_IsValid(capsule, b"BitGenerator"):
        raise ValueError("not a numpy BitGenerator capsule")
    return <bitgen_t *> PyCapsule_GetPointer(capsule, b"BitGenerator")


def _bit_generator(rng):
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator
    if isinstance(rng, np.random.BitGenerator):
        return rng
    raise TypeError(f"rng must be a numpy Generator or BitGenerator, got {type(rng).__name__}.")


def as_rational(value, name="value"):
    """``value`` as an exact positive rational ``(numerator, denominator)``.

    Accepts an int, a :class:`fractions.Fraction`, a ``(num, den)`` pair of
    ints, or a float (converted *exactly*: a float is a dyadic rational).
    Both parts must be below 2^63 after reduction; nothing is rounded.
    """
    if isinstance(value, tuple):
        if len(value) != 2 or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
            raise TypeError(f"{name} as a tuple must be (numerator, denominator) integers.")
        if value[1] == 0:
            raise ValueError(f"{name} has a zero denominator.")
        frac = Fraction(int(value[0]), int(value[1]))
    elif isinstance(value, bool):
        raise TypeError(f"{name} must be a positive rational, got bool.")
    elif isinstance(value, (numbers.Integral, Fraction)):
        frac = Fraction(value)
    elif isinstance(value, numbers.Real):
        v = float(value)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"{name} must be finite, got {value!r}.")
        frac = Fraction(v)
    else:
        raise TypeError(f"{name} must be a positive rational, got {type(value).__name__}.")
    if frac <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}.")
    if frac.numerator >= MAX_INT or frac.denominator >= MAX_INT:
        raise ValueError(
            f"{name} = {frac} needs more than 63 bits in its numerator or denominator; "
            "pass a coarser rational (e.g. round the scale up to a dyadic with fewer bits)."
        )
    return int(frac.numerator), int(frac.denominator)


def _to_big(value, name):
    value = int(value)
    if value < 0 or value.bit_length() > 64 * NLIMBS - 2:
        raise ValueError(f"{name} must be in [0, 2^{64 * NLIMBS - 2}).")
    return [(value >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(NLIMBS)]


def _limbs_table(values, name):
    """``(len(values), NLIMBS)`` uint64 limbs of non-negative Python ints, as ``_to_big`` row by row.

    The common case (every value below 2^64) fills the lowest limb in one NumPy
    conversion instead of one Python list per value; wider values in range are
    written as little-endian bytes and read back as limbs: speed only, the same limbs.
    """
    out = np.zeros((len(values), NLIMBS), dtype=np.uint64)
    if all(v < 18446744073709551616 for v in values):
        out[:, 0] = np.array(values, dtype=np.uint64)
        return out
    if min(values) >= 0 and max(values).bit_length() <= 64 * NLIMBS - 2:
        raw = b"".join([int(v).to_bytes(8 * NLIMBS, "little") for v in values])
        out[:] = np.frombuffer(raw, dtype="<u8").reshape(len(values), NLIMBS)
        return out
    for j, value in enumerate(values):
        out[j] = _to_big(value, name)
    return out


def _shape_of(size):
    if size is None:
        return ()
    if isinstance(size, numbers.Integral):
        return (int(size),)
    return tuple(int(s) for s in size)


def discrete_laplace(rng, scale, size=None):
    """Exact discrete Laplace draws: ``P(y) = tanh(1/(2t)) exp(-|y| / t)`` on the integers.

    Parameters
    ----------
    rng : numpy.random.Generator or numpy.random.BitGenerator
    scale : int, Fraction, (num, den) or float
        The scale ``t > 0`` as an exact rational (see :func:`as_rational`).
    size : int or tuple of int, optional

    Returns
    -------
    numpy.ndarray of int64 (or an int when ``size`` is None)
    """
    t_num, t_den = as_rational(scale, "scale")
    shape = _shape_of(size)
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    cdef int64_t[::1] buf = out
    cdef Py_ssize_t i, n = out.shape[0]
    cdef uint64_t t = t_num, sden = t_den
    cdef int err = ST_OK
    cdef bits_t bits
    bg = _bit_generator(rng)
    bits.bg = _bitgen_ptr(bg)
    bits.word = 0
    bits.n = 0
    with bg.lock:
        with nogil:
            for i in range(n):
                err = dlap(&bits, t, sden, &buf[i])
                if err != ST_OK:
                    break
            bits.word = 0
    if err != ST_OK:
        raise OverflowError("discrete Laplace draw does not fit in int64 (probability < exp(-2^10) for scales below 2^53).")
    return out.reshape(shape) if size is not None else int(out[0])


def discrete_gaussian(rng, sigma2, size=None):
    """Exact discrete Gaussian draws: ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers.

    Parameters
    ----------
    rng : numpy.random.Generator or numpy.random.BitGenerator
    sigma2 : int, Fraction, (num, den) or float
        The variance parameter ``sigma^2 > 0`` as an exact rational.
    size : int or tuple of int, optional

    Returns
    -------
    numpy.ndarray of int64 (or an int when ``size`` is None)
    """
    num, den = as_rational(sigma2, "sigma2")
    # t = floor(sigma) + 1, exactly: floor(sqrt(num/den)) = isqrt(num // den).
    t_py = math.isqrt(num // den) + 1
    denom_py = 2 * num * den * t_py * t_py
    limbs = _to_big(denom_py, "2 num den t^2")
    shape = _shape_of(size)
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    cdef int64_t[::1] buf = out
    cdef Py_ssize_t i, n = out.shape[0]
    cdef uint64_t c_num = num, c_den = den, t = t_py
    cdef big_t denom
    cdef int k, err = ST_OK
    cdef bits_t bits
    for k in range(NLIMBS):
        denom.w[k] = limbs[k]
    bg = _bit_generator(rng)
    bits.bg = _bitgen_ptr(bg)
    bits.word = 0
    bits.n = 0
    with bg.lock:
        with nogil:
            for i in range(n):
                err = dgauss(&bits, c_num, c_den, t, &denom, &buf[i])
                if err != ST_OK:
                    break
            bits.word = 0
    if err != ST_OK:
        raise OverflowError("discrete Gaussian draw does not fit in int64 (probability < exp(-2^10) for sigma below 2^32).")
    return out.reshape(shape) if size is not None else int(out[0])


def bernoulli_exp(rng, gamma, size=None):
    """Exact Bernoulli(exp(-gamma)) draws (0/1 as uint8) for a rational ``gamma >= 0``.

    ``gamma`` may be a ``(num, den)`` pair of arbitrary non-negative Python
    ints below 2^382 (den > 0), a Fraction, an int or a float; this wide
    path exercises the same big-integer code as the discrete Gaussian.
    """
    if isinstance(gamma, tuple):
        num_py, den_py = int(gamma[0]), int(gamma[1])
    else:
        frac = Fraction(gamma)  # exact for ints, Fractions and floats
        num_py, den_py = frac.numerator, frac.denominator
    if num_py < 0 or den_py <= 0:
        raise ValueError("gamma must be a non-negative rational with a positive denominator.")
    a_limbs, b_limbs = _to_big(num_py, "numerator"), _to_big(den_py, "denominator")
    shape = _shape_of(size)
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.uint8)
    cdef uint8_t[::1] buf = out
    cdef Py_ssize_t i, n = out.shape[0]
    cdef big_t a, b
    cdef int k
    cdef bits_t bits
    for k in range(NLIMBS):
        a.w[k] = a_limbs[k]
        b.w[k] = b_limbs[k]
    bg = _bit_generator(rng)
    bits.bg = _bitgen_ptr(bg)
    bits.word = 0
    bits.n = 0
    with bg.lock:
        with nogil:
            for i in range(n):
                buf[i] = <uint8_t> bern_exp_big(&bits, a, &b)
            bits.word = 0
    return out.reshape(shape) if size is not None else int(out[0])


def bernoulli_exp_table(rng, gammas, count):
    """``count`` exact Bernoulli(exp(-gamma_j)) draws (0/1 as uint8) for each ``(num, den)`` in ``gammas``.

    Returns an array of shape ``(len(gammas), count)`` whose row ``j`` is
    exactly what ``bernoulli_exp(rng, gammas[j], size=count)`` would return
    after the rows before it were drawn the same way: each row starts from a
    fresh bit buffer, as a separate call does, and a zero gap gives ones
    without reading the generator (as the selection's coin helper does).
    One compiled loop in place of one Python call per candidate: speed only.
    """
    cdef Py_ssize_t m = len(gammas), j, i, n = int(count)
    if n < 0:
        raise ValueError("count must be >= 0.")
    nums = [int(num_py) for num_py, _ in gammas]
    dens = [int(den_py) for _, den_py in gammas]
    if any(v < 0 for v in nums) or any(v <= 0 for v in dens):
        raise ValueError("gamma must be a non-negative rational with a positive denominator.")
    return _bernoulli_exp_limbs(rng, _limbs_table(nums, "numerator"), _limbs_table(dens, "denominator"), n)


def bernoulli_exp_table_u64(rng, nums, dens, count, multiplier=1):
    """:func:`bernoulli_exp_table` for gaps ``multiplier * nums[j] / dens[j]``, ``nums`` and ``dens`` uint64 arrays.

    ``multiplier`` is a non-negative Python int (the gaps' common numerator
    factor). The numerators' limbs are the fixed-width products, the same
    limbs as the tuple form's Python ints, so the same draws in the same
    order; no Python int per candidate: speed only.
    """
    nums = np.ascontiguousarray(nums, dtype=np.uint64)
    dens = np.asarray(dens, dtype=np.uint64)
    if nums.ndim != 1 or nums.shape != dens.shape:
        raise ValueError("nums and dens must be 1-d arrays of the same length.")
    if int(count) < 0:
        raise ValueError("count must be >= 0.")
    if np.any(dens == 0):
        raise ValueError("gamma must be a non-negative rational with a positive denominator.")
    cdef Py_ssize_t m = nums.size, j
    cdef int k
    cdef big_t base, x
    limbs = _to_big(multiplier, "multiplier")
    for k in range(NLIMBS):
        base.w[k] = limbs[k]
    a_arr = np.zeros((m, NLIMBS), dtype=np.uint64)
    b_arr = np.zeros((m, NLIMBS), dtype=np.uint64)
    cdef uint64_t[:, ::1] av = a_arr
    cdef const uint64_t[::1] nv = nums
    for j in range(m):
        if big_scaled_in_range(&x, &base, nv[j]) != ST_OK:
            raise ValueError(f"numerator must be in [0, 2^{64 * NLIMBS - 2}).")
        for k in range(NLIMBS):
            av[j, k] = x.w[k]
    b_arr[:, 0] = dens
    return _bernoulli_exp_limbs(rng, a_arr, b_arr, int(count))


def select_rows_u64(rng, nums, dens, multiplier=1):
    """Permute-and-flip selections, one per row of the uint64 tables ``nums`` and ``dens`` (gaps
    ``multiplier * nums[r, j] / dens[r, j]``), by McKenna and Sheldon's algorithm as stated: row by row,
    a uniform visiting order ``rng.permutation(m)``, then one exact ``Bernoulli(exp(-gap))`` coin per
    visited candidate (each from a fresh bit buffer, as ``bernoulli_exp_table_u64`` draws it; a zero gap
    heads without a draw), in that order, until the first heads, which is kept.

    The law of the output is permute-and-flip's: the coins are independent of the order and of each
    other, so flipping only the visited ones (the coins after the first heads are never read) gives the
    same distribution as flipping every coin first (what this function did before 2026-11-27, seventh
    session: 643 coins a quartile release at 2e5 x 20, of which about 190 visited), with other draws.
    ``rng`` a numpy Generator. Returns int64 indices, one per row. The gaps' zeros and denominators and
    every row's numerator range (``multiplier`` times the row's largest numerator) are checked before any
    draw.
    """
    nums = np.ascontiguousarray(nums, dtype=np.uint64)
    dens = np.ascontiguousarray(dens, dtype=np.uint64)
    if nums.ndim != 2 or nums.shape != dens.shape:
        raise ValueError("nums and dens must be 2-d arrays of the same shape.")
    if np.any(dens == 0):
        raise ValueError("gamma must be a non-negative rational with a positive denominator.")
    if nums.shape[0] and not np.all(np.any(nums == 0, axis=1)):
        raise ValueError("gaps must contain a zero (the best candidate's).")
    cdef Py_ssize_t rows = nums.shape[0], m = nums.shape[1], r, j, t
    cdef int k
    cdef big_t base, a, b
    cdef bits_t bits
    cdef const uint64_t[:, ::1] nv = nums
    cdef const uint64_t[:, ::1] dv = dens
    limbs = _to_big(multiplier, "multiplier")
    for k in range(NLIMBS):
        base.w[k] = limbs[k]
    # the product is increasing in the numerator: the row's largest in range puts every one in range
    maxima = np.ascontiguousarray(nums.max(axis=1) if m else np.zeros(rows, dtype=np.uint64), dtype=np.uint64)
    cdef const uint64_t[::1] mv = maxima
    for r in range(rows):
        if big_scaled_in_range(&a, &base, mv[r]) != ST_OK:
            raise ValueError(f"numerator must be in [0, 2^{64 * NLIMBS - 2}).")
    out = np.empty(rows, dtype=np.int64)
    cdef int64_t[::1] ov = out
    cdef const int64_t[::1] order
    cdef Py_ssize_t chosen
    cdef bint base_zero = multiplier == 0  # every gap 0: the first visited candidate heads
    bg = _bit_generator(rng)
    bits.bg = _bitgen_ptr(bg)
    for r in range(rows):
        order = np.ascontiguousarray(rng.permutation(m), dtype=np.int64)
        chosen = -1
        with bg.lock:
            with nogil:
                for t in range(m):
                    j = order[t]
                    if nv[r, j] == 0 or base_zero:
                        chosen = j
                        break
                    a = base
                    big_mul_u64(&a, nv[r, j])  # in range: checked above
                    for k in range(NLIMBS):
                        b.w[k] = 0
                    b.w[0] = dv[r, j]
                    bits.word = 0
                    bits.n = 0
                    if bern_exp_big(&bits, a, &b):
                        chosen = j
                        break
                bits.word = 0
        if chosen < 0:
            raise RuntimeError("permute-and-flip needs a candidate with gap 0 (the best one).")
        ov[r] = chosen
    return out


def _bernoulli_exp_limbs(rng, a_arr, b_arr, Py_ssize_t n):
    """The loop of :func:`bernoulli_exp_table` on ``(m, NLIMBS)`` limb tables of the gaps."""
    cdef Py_ssize_t m = a_arr.shape[0], j, i
    out = np.empty((m, n), dtype=np.uint8)
    cdef uint8_t[:, ::1] buf = out
    cdef uint64_t[:, ::1] av = a_arr
    cdef uint64_t[:, ::1] bv = b_arr
    cdef big_t a, b
    cdef int k, zero
    cdef bits_t bits
    bg = _bit_generator(rng)
    bits.bg = _bitgen_ptr(bg)
    with bg.lock:
        with nogil:
            for j in range(m):
                zero = 1
                for k in range(NLIMBS):
                    a.w[k] = av[j, k]
                    b.w[k] = bv[j, k]
                    if av[j, k] != 0:
                        zero = 0
                if zero:
                    for i in range(n):
                        buf[j, i] = 1
                    continue
                bits.word = 0
                bits.n = 0
                for i in range(n):
                    buf[j, i] = <uint8_t> bern_exp_big(&bits, a, &b)
            bits.word = 0
    return out


# --------------------------------------------------------------------------- test hooks
def _big_mul(x, y):
    """Product through the fixed-width code (tests compare with Python ints)."""
    cdef big_t a, b, c
    cdef int k
    xa, ya = _to_big(x, "x"), _to_big(y, "y")
    for k in range(NLIMBS):
        a.w[k] = xa[k]
        b.w[k] = ya[k]
    if big_mul(&c, &a, &b) != ST_OK:
        raise OverflowError("product exceeds the fixed width")
    return sum(int(c.w[k]) << (64 * k) for k in range(NLIMBS))


def _big_sub_cmp(x, y):
    """``(cmp(x, y), x - y if x >= y else None)`` through the fixed-width code."""
    cdef big_t a, b
    cdef int k, c
    xa, ya = _to_big(x, "x"), _to_big(y, "y")
    for k in range(NLIMBS):
        a.w[k] = xa[k]
        b.w[k] = ya[k]
    c = big_cmp(&a, &b)
    if c < 0:
        return c, None
    big_sub(&a, &b)
    return c, sum(int(a.w[k]) << (64 * k) for k in range(NLIMBS))
