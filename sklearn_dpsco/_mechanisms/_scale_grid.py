"""The public log-spaced grid that private scale estimates are chosen from (doc/privacy/quantiles.rst).

A scale estimate (a clip level, a row-norm bound, a label bound, a feature's
lower or upper end) is released as one point of a grid fixed before the data
is seen. The grid depends on its three public parameters only, so choosing a
point of it is a *selection* among public candidates: nothing about the
grid's position, spacing or extent can leak the data.

Values outside the grid's span are never moved, but the count queries the
mechanisms use, ``#{x_i <= t}`` for grid points ``t``, read a value below the
first point as if it sat at the first point, and the quantile utility counts a
value above the last point at the last point (its cell is open above): in
effect the data is clamped to the grid's ends. That costs accuracy (the estimate saturates at an end), never
privacy (the counts still move by at most one per replaced row).
"""

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._threads import map_threads, row_chunks

__all__ = ["DEFAULT_HIGH_EXPONENT", "DEFAULT_LOW_EXPONENT", "DEFAULT_PER_OCTAVE", "GRID_END", "ScaleGrid",
           "at_grid_end"]

#: Default span of the grid: magnitudes from ``2^-20`` (about 1e-6) to
#: ``2^20`` (about 1e6), which covers standardised features, raw counts and
#: prices; widen it (``ScaleGrid(low_exponent=..., high_exponent=...)``) for
#: data in other units. Every extra octave adds ``per_octave`` candidates,
#: whose weight under the mechanisms grows the error only logarithmically.
DEFAULT_LOW_EXPONENT = -20
DEFAULT_HIGH_EXPONENT = 20
#: The default grids' last point: a release there means values at or beyond it, which the grid cannot place.
GRID_END = 2.0**DEFAULT_HIGH_EXPONENT


def at_grid_end(*values):
    """Indices of the columns where any of ``values`` (released arrays, one entry per column) has ``|v| >=
    GRID_END``: post-processing of the releases (the fits' and the scaler's grid-end warnings)."""
    return np.flatnonzero(np.any(np.abs(np.vstack(values)) >= GRID_END, axis=0))

#: Default resolution: two points per octave (ratio ``sqrt(2)`` between
#: neighbours, so a released scale is within a factor ``sqrt(2)`` of the
#: grid point nearest the true quantile). benchmarks/bench_quantiles.py
#: compares one, two and four points per octave.
DEFAULT_PER_OCTAVE = 2


@dataclass(frozen=True)
class ScaleGrid:
    """A public, log-spaced grid of candidate scales.

    The positive part is ``2^(k / per_octave)`` for the integers ``k`` from
    ``low_exponent * per_octave`` to ``high_exponent * per_octave``; the grid
    also holds ``0`` and, when ``signed``, the negatives of the positive part.
    Points are increasing floats computed from the three integers alone.

    Parameters
    ----------
    low_exponent : int, default=DEFAULT_LOW_EXPONENT
        The smallest positive point is ``2^low_exponent``.
    high_exponent : int, default=DEFAULT_HIGH_EXPONENT
        The largest point is ``2^high_exponent``.
    per_octave : int, default=DEFAULT_PER_OCTAVE
        Points per factor of two.
    signed : bool, default=False
        False: candidates ``0`` and the positive part (for norms, ``|y|`` and
        other nonnegative values). True: also the negative part (for a
        feature's lower and upper ends).
    """

    low_exponent: int = DEFAULT_LOW_EXPONENT
    high_exponent: int = DEFAULT_HIGH_EXPONENT
    per_octave: int = DEFAULT_PER_OCTAVE
    signed: bool = False

    def __post_init__(self):
        for name in ("low_exponent", "high_exponent", "per_octave"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, got {type(value).__name__}.")
            object.__setattr__(self, name, int(value))
        if self.per_octave < 1:
            raise ValueError(f"per_octave must be >= 1, got {self.per_octave}.")
        if not self.low_exponent <= self.high_exponent:
            raise ValueError(
                f"low_exponent must be <= high_exponent, got {self.low_exponent} > {self.high_exponent}."
            )
        if self.low_exponent < -1000 or self.high_exponent > 1000:
            raise ValueError("the grid's exponents must lie in [-1000, 1000] (finite, normal floats).")
        if not isinstance(self.signed, (bool, np.bool_)):
            raise TypeError(f"signed must be a bool, got {type(self.signed).__name__}.")
        object.__setattr__(self, "signed", bool(self.signed))

    @cached_property
    def points(self):
        """The candidates, increasing, as a read-only float64 array."""
        k = np.arange(self.low_exponent * self.per_octave, self.high_exponent * self.per_octave + 1)
        positive = np.array([math.pow(2.0, int(j) / self.per_octave) for j in k])
        parts = ([-positive[::-1]] if self.signed else []) + [np.zeros(1), positive]
        out = np.concatenate(parts)
        out.setflags(write=False)
        return out

    def __len__(self):
        return self.points.size

    def counts(self, values):
        """``#{x_i <= t}`` for every grid point ``t`` (integers, increasing).

        Replacing one value changes each count by at most one, and every
        count it changes moves in the same direction (doc/privacy/quantiles.rst,
        "Sensitivity").
        """
        values = np.asarray(values, dtype=float).reshape(-1, 1)
        # one pass, no sort: the same integers as searchsorted(sort(values), points, side="right")
        return self.column_counts(values)[0]

    @cached_property
    def _cell_starts(self):
        """Public lookup table of first guesses for :meth:`column_counts` (depends on the grid only)."""
        from .._fast._grid_counts import TABLE_BITS, ordered_keys

        keys = ordered_keys(np.ascontiguousarray(self.points))
        bucket_lows = np.arange(1 << TABLE_BITS, dtype=np.uint64) << np.uint64(64 - TABLE_BITS)
        by_key = np.searchsorted(keys, bucket_lows, side="left").astype(np.int32)
        # the kernel reads the table at a float's own top bits ``b`` (one shift): the floats of raw bucket ``b`` are
        # those of key bucket ``b ^ 0b10...0`` when the sign bit is clear (the key sets it) and ``b ^ 0b11...1``
        # when it is set (the key flips every bit), so each float finds its key bucket's entry
        raw = np.arange(1 << TABLE_BITS)
        half, ones = 1 << (TABLE_BITS - 1), (1 << TABLE_BITS) - 1
        out = by_key[np.where(raw < half, raw ^ half, raw ^ ones)]
        out.setflags(write=False)
        return out

    @cached_property
    def _one_step(self):
        """Whether every bucket of :attr:`_cell_starts` holds at most one point (then each value's cell is
        its bucket's guess or the next one: one comparison; depends on the grid only)."""
        from .._fast._grid_counts import one_step_table

        return bool(one_step_table(np.ascontiguousarray(self.points)))

    def column_counts(self, X, shift=None, n_jobs=None):
        """:meth:`counts` of every column of a 2-D float array, shape ``(n_features, len(self))``.

        ``shift`` (one value per column, public): the counts of ``X - shift``, computed without the shifted
        copy (the same subtraction, the same floats).

        Row ``j`` equals ``searchsorted(sort(X[:, j]), points, side="right")``
        exactly (tests/mechanisms/test_quantile.py), from one pass over ``X``
        without sorting (sklearn_dpsco/_fast/_grid_counts.pyx).

        ``n_jobs`` (joblib's meaning: None is 1 outside a ``joblib.parallel_config`` context): threads
        counting disjoint row-chunks of a large ``X`` (the compiled pass runs without the GIL); their
        tallies are exact integers, so the counts are the same for every ``n_jobs``.
        """
        from .._fast._grid_counts import grid_cell_tallies

        X = np.asarray(X, dtype=float)
        points = np.ascontiguousarray(self.points)
        table, one_step = self._cell_starts, self._one_step
        chunks = row_chunks(X.shape[0], X.shape[0] * X.shape[1], n_jobs)
        if len(chunks) == 1:
            tallies = grid_cell_tallies(X, points, table, one_step, shift)
        else:
            # integer tallies of disjoint rows: their sum is the whole array's, whatever the chunks
            tallies = sum(map_threads(lambda a, b: grid_cell_tallies(X[a:b], points, table, one_step, shift),
                                      chunks))
        return np.cumsum(tallies[:, :-1], axis=1)
