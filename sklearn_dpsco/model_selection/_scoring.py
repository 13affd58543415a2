"""Validation scores with a public per-row range (their sensitivity is known in advance).

A private search scores candidates on private validation rows, so each
score must be a mean of per-row terms lying in a public interval: replacing
one row then moves a mean over m rows by at most (range length) / m. Only
such scorers are offered; arbitrary scikit-learn scorers (ROC AUC, R^2...)
have data-dependent sensitivity and are refused.

The scores are computed as exact integer sums (:class:`ScoreGrid`): every
per-row term is rounded to a power-of-two grid and the integers are added
exactly, so a score does not depend on the order of the rows (or users) and
moves by at most the grid's integer width when one unit is replaced -- the
sensitivity of the number actually released, not of a real-number mean
(doc/privacy/model_selection.rst, "Exact scores on the secure path").
"""

import math

import numpy as np

from .._mechanisms._calibrate import user_grid_terms
from .._mechanisms._grid import power_of_two_at_most

__all__ = ["PerRowScorer", "ScoreGrid", "get_scorer"]

#: The per-row terms are rounded to a power-of-two grid of ``2^-SCORE_GRID_BITS`` of the scorer's width
#: (fewer bits beyond ``2^18`` units, so that every sum stays below ``2^53``).
SCORE_GRID_BITS = 32
_EXACT = 2**53


class PerRowScorer:
    """A score that is the mean of per-row terms in ``[low, low + width]``."""

    def __init__(self, name, width, fn, low=0.0):
        self.name = name
        self.width = float(width)
        self.low = float(low)
        self.high = self.low + self.width
        self._fn = fn

    def per_row(self, estimator, X, y):
        return self._fn(np.asarray(estimator.predict(X)), np.asarray(y))

    def __call__(self, estimator, X, y):
        """The mean per-row score, from the exact grid sum (:class:`ScoreGrid`)."""
        grid = ScoreGrid(self, len(y))
        return grid.mean(grid.row_sum(self.per_row(estimator, X, y)))

    def __repr__(self):
        return f"PerRowScorer({self.name!r}, width={self.width})"


class ScoreGrid:
    """The public plan of a score over ``n_units`` validation units: an integer per unit, summed exactly.

    A per-row term ``r`` (clipped to the scorer's ``[low, high]``; NaN counts as ``low``) becomes the integer
    ``t = rint(r / g)``, ``g`` the largest power of two at most ``width 2^-bits``. Division by a power of
    two and ``rint`` are monotone, so ``t`` lies in ``[lo, hi] = [rint(low / g), rint(high / g)]``, computed
    here with the same float operations from public numbers. A row-level score is ``Q = sum_i t_i``; a
    user-level one is ``Q = sum_u q_u`` with ``q_u = clip(rint(K_u / k_u), lo, hi)``, ``K_u`` the integer sum
    of the user's ``k_u`` terms: an integer in ``[lo, hi]`` that depends on that user's rows only. ``Q`` is
    exact (``n_units max(|lo|, |hi|) < 2^53``), so replacing one unit moves it by at most ``W = hi - lo``,
    whatever the order of the sum, and ``g Q`` (exact: ``g`` a power of two) by at most ``g W``
    (:attr:`sensitivity`, also exact). The mean score is the post-processing ``fl(g Q / n_units)``.
    """

    def __init__(self, scorer, n_units):
        n = int(n_units)
        if n < 1:
            raise ValueError("a score needs at least one validation unit.")
        self.n_units = n
        bits = min(SCORE_GRID_BITS, 51 - n.bit_length())
        if bits < 8:
            raise ValueError(f"{n} validation units are too many for the exact score sums. Nothing was spent.")
        if not (scorer.width > 0 and math.isfinite(scorer.width) and math.isfinite(scorer.low)
                and math.isfinite(scorer.high)):
            raise ValueError("a scorer's range must be finite with a positive width.")
        self.low, self.high = scorer.low, scorer.high
        self.grid = math.ldexp(power_of_two_at_most(scorer.width), -bits)  # the largest 2^k <= width 2^-bits
        lo, hi = self.terms(np.array([self.low, self.high]))
        self.lo, self.hi = int(lo), int(hi)
        # why: n max(|lo|, |hi|) < 2^53 keeps every partial sum (any order) and float(Q) exact
        if n * max(abs(self.lo), abs(self.hi)) >= _EXACT:
            raise ValueError(f"{n} validation units are too many for the exact score sums over this range. "
                             "Nothing was spent.")

    @property
    def width_units(self):
        """``W = hi - lo``: how far one unit moves the integer sum ``Q``."""
        return self.hi - self.lo

    @property
    def sensitivity(self):
        """``g W``: how far one unit moves the released centre ``g Q`` (an exact float)."""
        return self.grid * float(self.width_units)

    def terms(self, values):
        """The int64 grid terms of per-row scores (clipped to the scorer's range; NaN as ``low``)."""
        v = np.asarray(values, dtype=float)
        v = np.where(np.isnan(v), self.low, np.clip(v, self.low, self.high))
        return np.rint(v / self.grid).astype(np.int64)

    def row_sum(self, values):
        """``Q``: the exact sum of the rows' terms (one row per unit)."""
        t = self.terms(values)
        if t.size != self.n_units:
            raise ValueError(f"expected {self.n_units} rows, got {t.size}.")
        return int(t.sum())

    def user_sum(self, values, user):
        """``Q = sum_u q_u`` over the users ``user`` (a code in ``range(n_units)`` per row, every code present)."""
        t = self.terms(values)
        order = np.argsort(user, kind="stable")
        u = np.asarray(user)[order]
        starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
        if starts.size != self.n_units:
            raise ValueError(f"expected {self.n_units} users, got {starts.size}.")
        counts = np.diff(np.r_[starts, u.size])
        q = user_grid_terms(t[order], starts, counts, self.lo, self.hi)
        return int(q.sum())

    def centre(self, Q):
        """``g Q``: the released centre (exact floats)."""
        return self.grid * np.asarray(Q, dtype=np.float64)

    def mean(self, Q):
        """The mean score ``fl(g Q / n_units)`` (a float, or an array for an array of sums)."""
        out = self.centre(Q) / self.n_units
        return float(out) if np.ndim(out) == 0 else out


def get_scorer(scoring, is_classifier, loss_bound):
    """The :class:`PerRowScorer` for ``scoring`` (None: accuracy for classifiers)."""
    if scoring is None:
        if not is_classifier:
            raise ValueError(
                "a private search of a regressor needs scoring='neg_mean_absolute_error' or "
                "'neg_mean_squared_error' with a public loss_bound."
            )
        scoring = "accuracy"
    if scoring == "accuracy":
        return PerRowScorer("accuracy", 1.0, lambda pred, y: (pred == y).astype(float))
    if scoring in ("neg_mean_absolute_error", "neg_mean_squared_error"):
        if loss_bound is None or not (loss_bound > 0) or not np.isfinite(loss_bound):
            raise ValueError(
                f"scoring={scoring!r} needs a public loss_bound > 0: each row's loss is clipped to "
                "[0, loss_bound] so that one row moves the score by at most loss_bound / m."
            )
        bound = float(loss_bound)
        if scoring == "neg_mean_absolute_error":
            return PerRowScorer(scoring, bound, lambda pred, y: -np.minimum(np.abs(pred - y), bound), low=-bound)
        return PerRowScorer(scoring, bound, lambda pred, y: -np.minimum((pred - y) ** 2, bound), low=-bound)
    raise ValueError(
        f"scoring={scoring!r} is not supported by a private search: only scores that are means of per-row "
        "terms in a public range ('accuracy', 'neg_mean_absolute_error', 'neg_mean_squared_error' with "
        "loss_bound) have a sensitivity known in advance."
    )
