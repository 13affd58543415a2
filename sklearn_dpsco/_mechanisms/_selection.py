"""Private selection among public candidates: exponential mechanism and permute-and-flip.

Both select index ``r`` of ``m`` public candidates with weight
``exp(-gamma_r)``, where ``gamma_r = epsilon (u* - u_r) / (2 Delta) >= 0`` is
the candidate's utility gap to the best one, scaled (doc/privacy/quantiles.rst,
"Selection"). The caller computes the gaps; this module only samples.

* exponential mechanism (McSherry and Talwar 2007):
  ``P(r) = exp(-gamma_r) / sum_s exp(-gamma_s)``;
* permute-and-flip (McKenna and Sheldon 2020): visit the candidates in a
  uniformly random order and stop at the first ``r`` whose coin
  ``Bernoulli(exp(-gamma_r))`` comes up; the best candidate's coin always
  does (``gamma = 0``). Same privacy as the exponential mechanism at the same
  gaps, never a worse expected utility.

Two sampling paths, as for the noise mechanisms (doc/privacy/secure_noise.rst):

``"secure"``
    Gaps are exact rationals ``(numerator, denominator)`` of Python ints;
    every coin is the exact ``Bernoulli(exp(-gamma))`` sampler of
    :mod:`sklearn_dpsco._fast._discrete` (Canonne, Kamath and Steinke 2020,
    Algorithm 1) and every uniform choice is numpy's rejection-sampled
    bounded integer, so the output law is EXACTLY the target law given ideal
    random bits: no ``exp``, ``log`` or division in floating point.
    The exponential mechanism is drawn by rejection: propose a uniform
    candidate, accept it with its coin (accepted proposals have law
    ``exp(-gamma_r) / sum_s exp(-gamma_s)``; at most ``m`` expected
    proposals since the best candidate is always accepted).
``"float"``
    The same laws with float64 weights (``rng.choice`` and ``rng.random``).
    Fast; the float weights are not exact, kept for benchmarks and comparison.

The number of coins drawn (the running time) depends on the gaps, hence on
the data; the released index does not leak through it in the model of
doc/privacy/quantiles.rst (an observer of outputs only), as for every
rejection sampler in this library whose loop depends on a public law.
"""

import math
from fractions import Fraction

import numpy as np

from .._fast._discrete import bernoulli_exp, bernoulli_exp_table, bernoulli_exp_table_u64, select_rows_u64
from ..accounting import PureDPEvent

__all__ = [
    "SELECTION_METHODS",
    "PureSelection",
    "dyadic_at_most",
    "exponential_pmf",
    "permute_and_flip_pmf",
    "select_exact",
    "select_float",
]

SELECTION_METHODS = ("exponential", "permute_and_flip")

#: Denominator bits of the exact rational read from ``epsilon``.
_EXACT_BITS = 62


def dyadic_at_most(value):
    """The float ``value`` as an exact rational, rounded down to a multiple of ``2^-62`` if longer."""
    frac = Fraction(value)
    if frac.denominator <= 1 << _EXACT_BITS:
        return frac
    return Fraction((frac.numerator << _EXACT_BITS) // frac.denominator, 1 << _EXACT_BITS)


class PureSelection:
    """Mixin of an ``epsilon``-DP selection (a field ``epsilon``): its event and its secure path's epsilon."""

    @property
    def event(self):
        return PureDPEvent(self.epsilon)

    @property
    def exact_epsilon(self):
        """The rational epsilon of the secure path (``<= epsilon``): the gaps are exact rationals."""
        return dyadic_at_most(self.epsilon)


def _n_draws(size):
    return 1 if size is None else int(size)


def _finish(out, size):
    return int(out[0]) if size is None else out


def _coins_exact(rng, gap, count):
    """``count`` exact ``Bernoulli(exp(-gap))`` coins (bool) for a rational ``gap = (num, den)``."""
    if gap[0] == 0:
        return np.ones(count, dtype=bool)
    return bernoulli_exp(rng, gap, size=count).astype(bool)


def _exponential_exact(rng, gaps, n):
    m = len(gaps)
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        proposals = rng.integers(0, m, size=pending.size)
        accepted = np.zeros(pending.size, dtype=bool)
        for r in np.unique(proposals):
            mask = proposals == r
            accepted[mask] = _coins_exact(rng, gaps[int(r)], int(mask.sum()))
        out[pending[accepted]] = proposals[accepted]
        pending = pending[~accepted]
    return out


def _first_heads_in_random_order(rng, coins):
    """Permute-and-flip's output from a ``(n, m)`` table of independent coins.

    Each row visits the candidates in its own uniform random order and keeps
    the first whose coin is heads. Flipping every coin up front, instead of
    only the visited ones, leaves the law unchanged: the unvisited coins are
    independent of the visited ones and unused.
    """
    n, m = coins.shape
    order = rng.permuted(np.broadcast_to(np.arange(m), (n, m)), axis=1)
    if n == 1:
        # one selection (the column quartiles ask for 40 per fit): the same order and index by plain indexing
        visited = coins[0][order[0]]
        if not visited.any():
            raise RuntimeError("permute-and-flip needs a candidate with gap 0 (the best one).")
        first = int(np.argmax(visited))
        return order[0, first:first + 1]
    visited = np.take_along_axis(coins, order, axis=1)
    if not visited.any(axis=1).all():
        raise RuntimeError("permute-and-flip needs a candidate with gap 0 (the best one).")
    first = np.argmax(visited, axis=1)
    return order[np.arange(n), first]


def select_exact(rng, gaps, method, size=None):
    """Exact selection (the secure path).

    Parameters
    ----------
    rng : numpy.random.Generator
    gaps : sequence of (int, int)
        ``gamma_r`` as exact non-negative rationals ``(numerator,
        denominator)``, one per candidate, at least one zero.
    method : {"exponential", "permute_and_flip"}
    size : int, optional
        Number of independent selections; None for one.

    Returns
    -------
    int or ndarray of int64
        Candidate indices.
    """
    gaps = [(int(a), int(b)) for a, b in gaps]
    if not any(a == 0 for a, _ in gaps):
        raise ValueError("gaps must contain a zero (the best candidate's).")
    n = _n_draws(size)
    if method == "exponential":
        return _finish(_exponential_exact(rng, gaps, n), size)
    if method == "permute_and_flip":
        # every candidate's n coins in one compiled call: the same draws, in the same order, as
        # _coins_exact per candidate (bernoulli_exp_table's contract), without a Python call each
        coins = bernoulli_exp_table(rng, gaps, n).T.astype(bool)
        return _finish(_first_heads_in_random_order(rng, coins), size)
    raise ValueError(f"method must be one of {SELECTION_METHODS}, got {method!r}.")


def select_exact_u64(rng, nums, dens, multiplier=1):
    """One permute-and-flip selection (the secure path) from gaps ``multiplier * nums / dens``.

    ``nums`` and ``dens`` are uint64 arrays, ``multiplier`` a Python int. The
    law of :func:`select_exact` with the tuples ``(multiplier * nums[j], dens[j])``.
    With a numpy Generator (every estimator's release) the visiting algorithm
    (``select_rows_u64``): a uniform order first, then a coin for each visited
    candidate only, until the first heads (the same law as flipping every coin
    first, other draws; doc/privacy/quantiles.rst, "Exact sampling on the secure
    path"); otherwise every coin up front (``bernoulli_exp_table_u64``), then the order.
    """
    nums = np.asarray(nums)
    if not np.any(nums == 0):
        raise ValueError("gaps must contain a zero (the best candidate's).")
    if isinstance(rng, np.random.Generator) and nums.ndim == 1:
        # the visiting order and the visited candidates' coins in one compiled call (select_rows_u64)
        return int(select_rows_u64(rng, nums[None, :], np.asarray(dens)[None, :], multiplier)[0])
    coins = bernoulli_exp_table_u64(rng, nums, dens, 1, multiplier).T.astype(bool)
    return _finish(_first_heads_in_random_order(rng, coins), None)


def select_float(rng, gaps, method, size=None):
    """The same selection with float64 weights (the float path); ``gaps`` as floats >= 0."""
    gaps = np.asarray([float(Fraction(*g)) if isinstance(g, tuple) else float(g) for g in gaps])
    n = _n_draws(size)
    weights = np.exp(-gaps)
    if method == "exponential":
        return _finish(rng.choice(gaps.size, size=n, p=weights / weights.sum()), size)
    if method == "permute_and_flip":
        coins = rng.random((n, gaps.size)) < weights
        coins[:, gaps == 0] = True
        return _finish(_first_heads_in_random_order(rng, coins), size)
    raise ValueError(f"method must be one of {SELECTION_METHODS}, got {method!r}.")


def exponential_pmf(gaps):
    """Law of the exponential mechanism's index: ``exp(-gamma_r) / sum_s exp(-gamma_s)`` (float64)."""
    w = np.exp(-np.asarray(gaps, dtype=float))
    return w / w.sum()


def permute_and_flip_pmf(gaps):
    """Law of permute-and-flip's index (float64), in ``O(m^2)`` per candidate.

    With coins ``p_s = exp(-gamma_s)``, candidate ``r`` is output when its
    coin is heads and every candidate visited before it is tails. Its
    position is uniform on ``0..m-1`` and, given position ``k``, the set
    before it is a uniform ``k``-subset of the others, so
    ``P(r) = p_r / m * sum_k e_k(1 - p_{-r}) / C(m - 1, k)`` with ``e_k`` the
    elementary symmetric polynomials of the other candidates' tails
    probabilities.
    """
    p = np.exp(-np.asarray(gaps, dtype=float))
    m = p.size
    out = np.empty(m)
    for r in range(m):
        e = np.zeros(m)
        e[0] = 1.0
        for s in range(m):
            if s != r:
                e[1:] = e[1:] + e[:-1] * (1.0 - p[s])
        out[r] = p[r] / m * sum(e[k] / math.comb(m - 1, k) for k in range(m))
    return out
