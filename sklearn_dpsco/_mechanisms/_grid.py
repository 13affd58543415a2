"""Floating-point-safe ("secure") noise: grids, integer sensitivities, releases.

The construction (doc/privacy/secure_noise.rst):

1. pick a power-of-two grid ``gamma`` from *public* quantities only
   (``gamma <= b 2^-48`` for the coordinate Laplace of scale ``b``,
   ``gamma <= b 2^-40`` for the hardened l2-Laplace, ``gamma <= sigma 2^-30``
   for Gaussian noise);
2. round the centre coordinate-wise to the grid: ``k = rint(x / gamma)``,
   an integer vector with ``|k_i - x_i / gamma| <= 1/2``;
3. bound the sensitivity of ``k`` in grid units, including the rounding:
   neighbouring centres ``x, x'`` give ``|k_i - k'_i| <= |x_i - x'_i| / gamma + 1``,
   hence ``||k - k'||_1 <= floor(D1 / gamma) + d`` and
   ``||k - k'||_2 <= D2 / gamma + sqrt(d)``;
4. add exact integer noise (:mod:`sklearn_dpsco._fast._discrete`)
   calibrated to that integer sensitivity;
5. scale back: the output is ``fl(k + n) * gamma``, a deterministic function
   of the exact integer ``k + n`` (IEEE addition is correctly rounded and
   multiplying by a power of two is exact), so it is post-processing of an
   exactly private integer release.

Everything here is pure and data-independent except :func:`round_to_grid`
and :func:`scale_back`, which only do the arithmetic of steps 2 and 5.
"""

import functools
import math
from fractions import Fraction

import numpy as np

from .._fast._discrete import MAX_INT, as_rational, discrete_gaussian, discrete_laplace

__all__ = [
    "LAPLACE_GRID_BITS",
    "L2_LAPLACE_GRID_BITS",
    "GAUSSIAN_GRID_BITS",
    "power_of_two_at_least",
    "power_of_two_at_most",
    "sqrt_upper",
    "l1_grid_sensitivity",
    "l2_grid_sensitivity_squared",
    "round_to_grid",
    "scale_back",
    "rational_at_least",
    "hardened_l2_laplace_noise",
    "discrete_laplace",
    "discrete_gaussian",
]

#: Coordinate Laplace grids: ``gamma <= b 2^-LAPLACE_GRID_BITS`` (so also
#: ``<= b 2^-40``). The discrete Laplace scale in grid units is then
#: ``t < 2^49 + d / epsilon`` (below 2^53, so events record exact floats),
#: and the rounding inflation of the sensitivity, ``d gamma``, grows the
#: noise scale by a relative ``(d / epsilon + 1) 2^-48`` at most.
LAPLACE_GRID_BITS = 48

#: Hardened l2-Laplace grids: ``gamma <= b 2^-L2_LAPLACE_GRID_BITS``. Coarser
#: than the coordinate Laplace on purpose: the hardening argument needs every
#: grid cell in the bulk of the noise to hold many floats.
L2_LAPLACE_GRID_BITS = 40

#: Gaussian grids: ``gamma <= sigma * 2^-GAUSSIAN_GRID_BITS``. sigma^2 in
#: grid units is then below 2^62 (the exact sampler takes 63-bit rationals);
#: the inflation ``sqrt(d) * gamma`` is relative size
#: ``<= sqrt(d) * (sigma / D2) * 2^-30``.
GAUSSIAN_GRID_BITS = 30

_TWO53 = float(2**53)


def power_of_two_at_most(x):
    """The largest power of two ``2^k <= x`` (``x`` positive and finite)."""
    x = float(x)
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"need a positive finite number, got {x!r}.")
    if x < math.ldexp(1.0, -1074):
        raise ValueError(f"{x!r} is below the smallest float power of two; the noise scale is too small.")
    _, e = math.frexp(x)  # x = m 2^e with 0.5 <= m < 1
    return math.ldexp(1.0, e - 1)


def power_of_two_at_least(x):
    """The smallest power of two ``2^k >= x`` (``x`` positive and finite)."""
    p = power_of_two_at_most(x)
    return p if p >= x else 2.0 * p


def sqrt_upper(d):
    """An exact rational upper bound on ``sqrt(d)`` (exact when d is a square)."""
    d = int(d)
    r = math.isqrt(d)
    if r * r == d:
        return Fraction(r)
    return Fraction(math.isqrt(d << 64) + 1, 1 << 32)


def l1_grid_sensitivity(sensitivity, gamma, dimension):
    """Integer bound on ``||k - k'||_1`` for grid-rounded neighbouring centres.

    ``|k_i - k'_i| <= |x_i - x'_i| / gamma + 1``; summing, the integer
    ``||k - k'||_1`` is at most ``floor(D1 / gamma) + d``.
    """
    return math.floor(Fraction(sensitivity) / Fraction(gamma)) + int(dimension)


def l2_grid_sensitivity_squared(sensitivity, gamma, dimension):
    """Integer bound on ``||k - k'||_2^2`` for grid-rounded neighbouring centres.

    The rounding errors form a vector with entries in [-1, 1], of l2 norm at
    most ``sqrt(d)``; by the triangle inequality ``||k - k'||_2 <= D2 / gamma
    + sqrt(d)``, and ``||k - k'||_2^2`` is an integer.
    """
    # in integers (the same exact rational, no Fraction normalisation): D2 / gamma + sqrt_upper(d) = N / M
    a, b = _integer_ratio(sensitivity)
    g1, g2 = _integer_ratio(gamma)
    s1, s2 = _sqrt_upper_ratio(int(dimension))
    num = a * g2 * s2 + s1 * b * g1
    den = b * g1 * s2
    return (num * num) // (den * den)


def _integer_ratio(x):
    """``Fraction(x)`` as ``(numerator, denominator)`` (exact; floats and ints without a Fraction)."""
    if isinstance(x, (float, int)):
        return x.as_integer_ratio()
    return Fraction(x).as_integer_ratio()


@functools.lru_cache(maxsize=256)
def _sqrt_upper_ratio(d):
    """:func:`sqrt_upper` of ``d`` as ``(numerator, denominator)`` (memoised: a pure function of an int)."""
    return sqrt_upper(d).as_integer_ratio()


def rational_at_least(x, max_bits=62):
    """A rational ``>= x`` whose numerator and denominator have at most ``max_bits`` bits.

    ``x`` (a positive float or Fraction) is returned exactly when it fits;
    otherwise it is rounded *up* to a dyadic ``ceil(x 2^k) / 2^k``. Used for
    noise scales, where rounding up only adds noise.
    """
    frac = Fraction(x)
    if frac <= 0:
        raise ValueError("need a positive value.")
    if frac.numerator < 2**max_bits and frac.denominator < 2**max_bits:
        return frac
    # largest k with ceil(x 2^k) < 2^max_bits and 2^k < 2^max_bits
    k = min(max_bits - 1, max_bits - 1 - math.ceil(math.log2(float(frac) + 1.0)))
    while k >= 0:
        num = math.ceil(frac * 2**k)
        if num < 2**max_bits:
            return Fraction(num, 2**k)
        k -= 1
    raise ValueError(f"{x!r} is too large to represent with {max_bits}-bit integers.")


def round_to_grid(value, gamma, shape):
    """Centre in grid units: ``k = rint(value / gamma)`` as integer-valued float64.

    ``value / gamma`` is exact (division by a power of two) unless it
    overflows, and ``rint`` puts ``k`` within 1/2 of it.

    Parameters
    ----------
    value : array-like
        The centre(s); must broadcast to ``shape``.
    gamma : float
        The grid (a power of two).
    shape : int or tuple of int
        ``(dimension,)`` for one release, ``(size, dimension)`` for stacked
        releases (one centre per row, or one centre for every row).

    Raises
    ------
    ValueError
        If ``value`` is not finite or does not broadcast to ``shape``.
        (The estimators keep centres in public bounded sets; an error here
        is a programming error, never a silent privacy loss.)
    """
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(shape)
    value = np.asarray(value, dtype=float)
    try:
        fits = np.broadcast_shapes(value.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"value of shape {value.shape} does not match the release shape {shape} (dimension {shape[-1]}).")
    k = np.rint(np.broadcast_to(value, shape) / gamma)
    if not np.all(np.isfinite(k)):
        raise ValueError("value must be finite (and |value| / grid must not overflow) for secure noise.")
    return k


def scale_back(k, n, gamma):
    """``fl(k + n) * gamma`` with ``k`` integer-valued float64 and ``n`` integer noise.

    The result depends on the exact integer ``k + n`` only: when ``|n| <=
    2^53`` both summands are exact floats and IEEE addition rounds their
    exact sum once; larger ``n`` (probability about ``exp(-2^53 / t)`` per
    coordinate for a discrete Laplace of scale ``t``, e.g. 1e-7 at the
    coordinate Laplace's ``t ~ 2^49``; nil for the Gaussian's ``sigma <
    2^32``) go through Python integers, whose conversion to float rounds
    the same way (to nearest, ties to even).
    """
    n = np.asarray(n)
    k = np.broadcast_to(k, n.shape)
    if n.dtype.kind == "f":
        big = np.abs(n) > _TWO53
        nf = n
    else:
        big = np.abs(n) > 2**53
        nf = n.astype(np.float64)
    out = k + nf
    if np.any(big):
        idx = np.nonzero(big)
        out[idx] = [float(int(a) + int(b)) for a, b in zip(k[idx], n[idx])]
    return out * gamma


def hardened_l2_laplace_noise(rng, scale, dimension, size=None, n_gamma=4, n_normal=2):
    """Continuous isotropic l2-Laplace noise drawn with hardening (not a proof).

    The law is exactly that of :func:`sklearn_dpsco._mechanisms.l2_laplace_noise`
    (radius Gamma(d, scale), uniform direction); what differs is how the
    floats are produced:

    * the radius is a sum of ``n_gamma`` independent Gamma(d / n_gamma, scale)
      draws, so no single call of the Gamma sampler (and no single pattern
      of its low-order bits) fixes the radius;
    * the direction is the normalised sum of ``n_normal`` independent
      standard normal vectors (again a standard normal vector).

    The caller rounds the result to a grid far coarser than float spacing
    (:class:`~sklearn_dpsco._mechanisms.L2LaplaceMechanism`), which removes
    the "holes" a float sampler leaves.
    """
    shape = (dimension,) if size is None else (int(size), dimension)
    g = rng.standard_normal(shape)
    for _ in range(n_normal - 1):
        g += rng.standard_normal(shape)
    norms = np.linalg.norm(g, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    radius = np.zeros(shape[:-1] + (1,))
    for _ in range(n_gamma):
        radius += rng.gamma(shape=dimension / n_gamma, scale=scale, size=shape[:-1] + (1,))
    return radius * (g / norms)


def check_int_scale(value, name):
    """``value`` (int or Fraction) as a ``(num, den)`` pair accepted by the exact samplers."""
    num, den = as_rational(Fraction(value), name)
    if num >= MAX_INT or den >= MAX_INT:  # pragma: no cover - as_rational already checks
        raise ValueError(f"{name} too large for the exact samplers.")
    return num, den
