"""What a search's split index stands for: one row, or one user.

A row-level search splits row indices and scores a candidate by the mean of
per-row scores. A user-level search (a user-level estimator, ``groups``
given) splits *users*, gives each candidate fit the ``groups`` of its
training rows, and scores by the mean over validation users of each user's
mean per-row score (each user's mean rounded to the score grid and the users
summed exactly, :class:`ScoreGrid`), so replacing one user moves a score by at most
``width / m_users`` (doc/privacy/model_selection.rst, "User-level searches").

The users are put in a uniformly random order (public randomness, the
search's split seed) before the splitter sees ``range(n_users)``: which users
share a fold is then a uniformly random partition of fixed sizes, whatever
the identifiers are, so replacing one user (and its identifier) leaves the
fold of every other user unchanged under the natural coupling.
"""

from dataclasses import dataclass

import numpy as np

from ._scoring import ScoreGrid

__all__ = ["SearchUnits"]


@dataclass(frozen=True)
class SearchUnits:
    """Rows (``unit_of_row is None``) or users (``unit_of_row[i]`` = row i's user position).

    Parameters
    ----------
    n_units : int
        Number of rows, or of distinct users.
    unit_of_row : ndarray of shape (n_rows,) or None
        Position of each row's user in the (shuffled) user order.
    groups : ndarray of shape (n_rows,) or None
        The user identifiers, passed on to the candidate fits.
    """

    n_units: int
    unit_of_row: np.ndarray | None = None
    groups: np.ndarray | None = None

    @classmethod
    def rows(cls, n_rows):
        return cls(int(n_rows))

    @classmethod
    def users(cls, groups):
        _, inverse = np.unique(groups, return_inverse=True)
        return cls(int(inverse.max()) + 1, inverse.reshape(-1), np.asarray(groups))

    @property
    def is_user_level(self):
        return self.unit_of_row is not None

    def shuffled(self, seed):
        """Users in a uniformly random order drawn from ``seed`` (rows: unchanged)."""
        if not self.is_user_level:
            return self
        position = np.random.default_rng(seed).permutation(self.n_units)
        return SearchUnits(self.n_units, position[self.unit_of_row], self.groups)

    def rows_of(self, train_units, test_units):
        """The row indices of a split given over units."""
        if not self.is_user_level:
            return train_units, test_units
        in_train = np.zeros(self.n_units, dtype=bool)
        in_test = np.zeros(self.n_units, dtype=bool)
        in_train[train_units] = True
        in_test[test_units] = True
        return np.flatnonzero(in_train[self.unit_of_row]), np.flatnonzero(in_test[self.unit_of_row])

    def fit_params(self, rows):
        """Keyword arguments of a candidate fit on ``rows`` (None: all rows)."""
        if not self.is_user_level:
            return {}
        return {"groups": self.groups if rows is None else self.groups[rows]}

    def score_sum(self, scorer, estimator, X_test, y_test, test_rows):
        """``(grid, Q)``: the exact integer score sum over the validation units and its :class:`ScoreGrid`.

        Rows: ``Q`` sums the rows' grid terms. Users: ``Q`` sums one integer per user, its rounded mean term
        (doc/privacy/model_selection.rst, "Exact scores on the secure path"); an exact integer sum, so the
        order of the users (which a replaced user's fresh identifier changes) does not matter.
        """
        per_row = np.asarray(scorer.per_row(estimator, X_test, y_test), dtype=float)
        if not self.is_user_level:
            grid = ScoreGrid(scorer, per_row.size)
            return grid, grid.row_sum(per_row)
        _, user = np.unique(self.unit_of_row[test_rows], return_inverse=True)
        # why: each user's integer lies in the grid's range, so one replaced user
        # moves the sum by <= W whatever its number of rows (model_selection.rst)
        grid = ScoreGrid(scorer, int(user.max()) + 1 if user.size else 0)
        return grid, grid.user_sum(per_row, user.reshape(-1))

    def score(self, scorer, estimator, X_test, y_test, test_rows):
        """The validation score: mean per-row score, or mean over users of per-user means (from the exact sums)."""
        grid, Q = self.score_sum(scorer, estimator, X_test, y_test, test_rows)
        return grid.mean(Q)
