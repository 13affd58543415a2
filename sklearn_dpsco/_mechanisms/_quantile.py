"""Private quantile of a 1-D array over a public grid (doc/privacy/quantiles.rst).

The building block of the library's "auto" scales (a clip level from the row
norms, a bound on ``|y|``, a feature's lower and upper ends): release the
grid point ``t_j`` whose cell ``(t_{j-1}, t_j]`` holds the order statistic
``x_(k)``, ``k = max(1, ceil(q n))`` (numpy's ``"inverted_cdf"`` quantile),
or a point near it. With ``c(t) = #{x_i <= t}`` and ``c(t_{-1}) = 0``, the
utility of ``t_j`` is minus the number of ranks by which its cell misses
``k``::

    u(t_j) = -max(c(t_{j-1}) - (k - 1), k - c(t_j), 0)

an integer, 0 exactly for the cell holding ``x_(k)``. Under replace-one
neighbours (``n``, hence ``k``, fixed and public; one row replaced, or, at
user level, one user's single reduced value replaced) every count moves by
at most one, so each term of the max, and the max, moves by at most one:
the utility's sensitivity is 1 (tests/mechanisms/test_quantile.py checks it exactly on
worst-case pairs). Selection uses weights ``exp(epsilon u(t) / 2)``
(exponential mechanism, or permute-and-flip with the same gaps), which is
``epsilon``-DP.

On the secure path the gaps ``epsilon (u* - u(t)) / 2`` are exact rationals:
the utilities are integers and ``epsilon``, a float, is a dyadic rational,
read exactly (rounded *down* to a multiple of ``2^-62`` when its exact form
is longer, which only adds privacy).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .._param_checks import check_epsilon
from ._paths import DEFAULT_NOISE, check_noise
from ._scale_grid import ScaleGrid
from ._selection import (
    SELECTION_METHODS,
    PureSelection,
    exponential_pmf,
    permute_and_flip_pmf,
    select_exact,
    select_exact_u64,
    select_float,
    select_rows_u64,
)

__all__ = ["DEFAULT_SELECTION", "QuantileMechanism", "UTILITY_SENSITIVITY", "check_scale_values"]

#: Replace-one changes every count ``#{x_i <= t}`` by at most one, so the
#: utility (minus a max of counts shifted by public constants) by at most one
#: (doc/privacy/quantiles.rst, "Sensitivity").
UTILITY_SENSITIVITY = 1

#: Default selection rule. Permute-and-flip has the exponential mechanism's
#: privacy at the same gaps and never a worse expected utility (McKenna and
#: Sheldon 2020); benchmarks/bench_quantiles.py measures both.
DEFAULT_SELECTION = "permute_and_flip"

def _reduced_product(scale, m):
    """``scale * m`` in lowest terms as ``(numerator, denominator)``, for a Fraction ``scale`` and an int ``m >= 0``.

    The same pair as ``Fraction(scale * m)`` (``scale`` is already reduced, so only
    ``gcd(m, denominator)`` can cancel), without building a Fraction per candidate.
    """
    g = math.gcd(m, scale.denominator)
    return scale.numerator * (m // g), scale.denominator // g


def _all_finite(arr):
    """``np.isfinite(arr).all()``, first by one sum: a finite sum has no NaN or infinite term (a NaN or an
    infinity makes every sum it enters NaN or infinite), so only a sum that overflowed needs the elementwise
    test (the same answer, one pass without a boolean array)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(arr)):
            return True
    return bool(np.isfinite(arr).all())


def check_scale_values(values, grid, name="values"):
    """``values`` as a 1-D float array fit for a private scale estimate, or a clear error.

    Raises before anything is spent: a non-1-D or empty array, NaN or
    infinite entries, and negative entries for an unsigned grid (a value
    that is negative where a norm or ``|y|`` is expected is a caller bug;
    use ``ScaleGrid(signed=True)`` for signed data).
    """
    arr = np.asarray(values)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}. Nothing was spent.")
    arr = arr.astype(float, copy=False)  # read only: no copy of float64 input
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}. Nothing was spent.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a private quantile needs at least one value. Nothing was spent.")
    if not _all_finite(arr):
        raise ValueError(f"{name} must not contain NaN or infinite values. Nothing was spent.")
    if not grid.signed and (arr < 0).any():
        raise ValueError(
            f"{name} must be >= 0 for an unsigned grid (norms, |y|); use ScaleGrid(signed=True) "
            "for signed values. Nothing was spent."
        )
    return arr


def _gcd_u64(m, den):
    """``np.gcd(m, den)`` for a uint64 array ``m`` and a Python int ``0 < den < 2^64``.

    A power-of-two ``den = 2^k`` (exact_epsilon is dyadic) takes a shortcut:
    ``gcd(m, 2^k)`` is ``m``'s lowest set bit capped at ``2^k``, and ``2^k``
    for ``m = 0`` (the wrapped ``low - 1`` and the cap give exactly that), in
    three integer operations instead of Euclid's loop per element.
    """
    d = np.uint64(den)
    if den & (den - 1):
        return np.gcd(m, d)
    one = np.uint64(1)
    low = m & (~m + one)
    return np.minimum(low - one, d - one) + one


@dataclass(frozen=True)
class QuantileMechanism(PureSelection):
    """Release a grid point near the ``q``-quantile of a 1-D array, ``epsilon``-DP.

    Built by :func:`sklearn_dpsco._mechanisms._calibrate.quantile_mechanism_for`.

    Parameters
    ----------
    q : float
        Target quantile level in [0, 1]: the target is the order statistic
        ``x_(k)``, ``k = max(1, ceil(q n))``, rounded up to the grid. ``q = 1``
        (the maximum) is a poor target: every grid point above the maximum
        misses it by one rank only, so their weight adds up; prefer
        ``q <= 0.99`` and a public margin.
    epsilon : float
        > 0; the release is ``epsilon``-DP under replace-one neighbours.
    grid : ScaleGrid, default=ScaleGrid()
        The public candidates (doc/privacy/quantiles.rst, "The grid").
    method : {"permute_and_flip", "exponential"}, default=DEFAULT_SELECTION
        Selection rule over the grid (:mod:`._selection`).
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"``: exact rational gaps and exact Bernoulli(exp(-x)) coins.
        ``"float"``: float64 weights.

    Attributes
    ----------
    event : PureDPEvent
        ``PureDPEvent(epsilon)``.
    """

    q: float
    epsilon: float
    grid: ScaleGrid = field(default_factory=ScaleGrid)
    method: str = DEFAULT_SELECTION
    noise: str = DEFAULT_NOISE

    def __post_init__(self):
        q = self.q
        if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating)):
            raise TypeError(f"q must be a real number in [0, 1], got {type(q).__name__}.")
        if not 0.0 <= float(q) <= 1.0:
            raise ValueError(f"q must be in [0, 1], got {q!r}.")
        object.__setattr__(self, "q", float(q))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if not isinstance(self.grid, ScaleGrid):
            raise TypeError(f"grid must be a ScaleGrid, got {type(self.grid).__name__}.")
        if self.method not in SELECTION_METHODS:
            raise ValueError(f"method must be one of {SELECTION_METHODS}, got {self.method!r}.")
        check_noise(self.noise)

    def target_rank(self, n):
        """``k = max(1, ceil(q n))`` with ``q n`` in float64 as numpy's ``"inverted_cdf"`` does
        (so ``q = 0.9, n = 10`` gives 9); a public function of ``q`` and ``n``."""
        return min(n, max(1, math.ceil(self.q * n)))

    def utility(self, values):
        """``u(t_j) = -max(c(t_{j-1}) - (k - 1), k - c(t_j), 0)`` for every grid point (Python ints)."""
        values = check_scale_values(values, self.grid)
        return self.utility_from_counts(self.grid.counts(values), values.size)

    def utility_from_counts(self, counts, n):
        """:meth:`utility` from ``counts = grid.counts(values)`` of ``n`` values.

        The utility reads the values only through these counts, so counts
        summed over disjoint parts of the data (row-chunks on a cluster; the
        integer sums are exact) give the same release as the values whole.
        """
        # exact in int64 (counts <= n); returned as Python ints
        return self._utility_array(counts, n).tolist()

    def _utility_array(self, counts, n):
        """:meth:`utility_from_counts` as an int64 array (the secure selection takes it as it is)."""
        k = self.target_rank(int(n))
        counts = np.array(counts, dtype=np.int64)
        below = np.concatenate(([0], counts[:-1]))  # c(t_{j-1}), with c(t_{-1}) = 0
        # why: the last cell is (t_{G-2}, +inf): a value above the grid counts at its last point, as if clamped
        # to it, so a quantile beyond the grid saturates there; read as "just past the end" instead, no cell
        # held it and every point tied (a uniformly random scale for labels near 5e6). n is public, so the
        # sensitivity stays 1 (doc/privacy/quantiles.rst, "Values outside the grid")
        if counts.size:
            counts[-1] = int(n)
        return -np.maximum(np.maximum(below - (k - 1), k - counts), 0)

    def gaps(self, values):
        """``epsilon (u* - u(t)) / (2 Delta)`` per grid point, as exact ``(numerator, denominator)``.

        ``u*`` is the best utility, so the gaps are >= 0 with at least one 0.
        """
        return self._gaps(self.utility(values))

    def _gaps(self, u):
        fast = self._gaps_u64(u)
        if fast is not None:
            # numerators as Python ints, which can exceed 64 bits
            a, dens, p = fast
            return [(p * x, y) for x, y in zip(a.tolist(), dens.tolist())]
        best = max(u)
        scale = self.exact_epsilon / (2 * UTILITY_SENSITIVITY)
        # many grid points share a utility (all those beyond the data's range): reduce each value once
        reduced = {m: _reduced_product(scale, m) for m in {best - ut for ut in u}}
        return [reduced[best - ut] for ut in u]

    def pmf(self, values):
        """The law of the released grid index (float64; for tests and benchmarks)."""
        gaps = [a / b for a, b in self.gaps(values)]
        return exponential_pmf(gaps) if self.method == "exponential" else permute_and_flip_pmf(gaps)

    def release_index(self, values, rng, size=None):
        """Index into ``grid.points`` of one release (``size=None``) or of ``size`` independent releases."""
        return self._select_utility(self.utility(values), rng, size)

    def release_counts(self, counts, n, rng):
        """One released grid point from ``grid.counts`` of the ``n`` private values (see
        :meth:`utility_from_counts`); the same law and event as :meth:`release`."""
        return float(self.grid.points[self._select_utility(self._utility_array(counts, n), rng, None)])

    def release_counts_columns(self, counts, n, rng):
        """``[self.release_counts(c, n, rng) for c in counts]`` for the rows of a 2-D ``counts`` (one column's
        grid counts each): the same draws in the same order, with every column's utilities and gaps computed
        in array operations (the same integers) before the selections (speed only)."""
        counts = np.asarray(counts)
        if not (self.noise == "secure" and self.method == "permute_and_flip" and counts.ndim == 2 and counts.size):
            return [self.release_counts(c, n, rng) for c in counts]
        k = self.target_rank(int(n))
        c = np.array(counts, dtype=np.int64)
        below = np.concatenate((np.zeros((c.shape[0], 1), dtype=np.int64), c[:, :-1]), axis=1)
        c[:, -1] = int(n)  # as _utility_array: a value above the grid counts at its last point
        u = -np.maximum(np.maximum(below - (k - 1), k - c), 0)
        scale = self.exact_epsilon / (2 * UTILITY_SENSITIVITY)
        best = u.max(axis=1)
        if not (scale.denominator < 1 << 64 and int((best - u.min(axis=1)).max()) < 1 << 62):
            return [self.release_counts(row, n, rng) for row in counts]
        # _gaps_u64 of every row: (best - u) in uint64, reduced by the gcds with epsilon's denominator
        m = (best[:, None] - u).astype(np.uint64)
        g = _gcd_u64(m, scale.denominator)
        nums, dens = m // g, np.uint64(scale.denominator) // g
        points = self.grid.points
        # every column's selection in one compiled call: select_exact_u64's visiting draws, row after row
        return [float(points[j]) for j in select_rows_u64(rng, nums, np.broadcast_to(dens, nums.shape),
                                                          scale.numerator)]

    def _select_utility(self, u, rng, size):
        """The selection from the utilities ``u``: :meth:`_select` of :meth:`_gaps`."""
        fast = size is None and self.noise == "secure" and self.method == "permute_and_flip"
        gaps = self._gaps_u64(u) if fast else None
        # the same gaps as _gaps, as two uint64 arrays when they fit: the same coins, no tuple per grid point
        if gaps is None:
            return self._select(self._gaps(u.tolist() if isinstance(u, np.ndarray) else u), rng, size)
        return select_exact_u64(rng, *gaps)

    def _gaps_u64(self, u):
        """:meth:`_gaps`'s reduced pairs as ``(a, denominators, p)``: numerators ``p * a`` with ``a`` and
        the denominators uint64 arrays (the same pairs as _reduced_product, the gcds in uint64 at once, exact
        below 2^64), or None when the utilities' range or epsilon's denominator does not fit."""
        # why: the utility has sensitivity 1 (UTILITY_SENSITIVITY), so weights
        # exp(epsilon u / (2 Delta)) are epsilon-DP (doc/privacy/quantiles.rst, "Selection").
        scale = self.exact_epsilon / (2 * UTILITY_SENSITIVITY)
        u = np.asarray(u, dtype=np.int64)
        best = int(u.max())
        if not (scale.denominator < 1 << 64 and best - int(u.min()) < 1 << 62):
            return None
        m = (best - u).astype(np.uint64)
        den = np.uint64(scale.denominator)
        g = _gcd_u64(m, scale.denominator)
        return m // g, den // g, scale.numerator

    def _select(self, gaps, rng, size):
        if self.noise == "secure":
            return select_exact(rng, gaps, self.method, size)
        return select_float(rng, gaps, self.method, size)

    def release(self, values, rng, size=None):
        """The released grid point(s): ``grid.points[release_index(...)]``.

        Parameters
        ----------
        values : array-like of shape (n,)
            The private values (row norms, ``|y|``, one reduced value per
            user, a feature column). ``n`` is public under replace-one.
        rng : numpy.random.Generator
        size : int, optional
            Number of independent releases (audits, benchmarks); None for one.

        Returns
        -------
        float or ndarray of shape (size,)
        """
        index = self.release_index(values, rng, size)
        return float(self.grid.points[index]) if size is None else self.grid.points[index]
