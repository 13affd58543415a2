"""Validation scores with a public per-row range (their sensitivity is known in advance).

A private search scores candidates on private validation rows, so each
score must be a mean of per-row terms lying in a public interval: replacing
one row then moves a mean over m rows by at most (range length) / m. Only
such scorers are offered; arbitrary scikit-learn scorers (ROC AUC, R^2...)
have data-dependent sensitivity and are refused.
"""

import numpy as np

__all__ = ["PerRowScorer", "get_scorer"]


class PerRowScorer:
    """A score that is the mean of per-row terms in ``[low, low + width]``."""

    def __init__(self, name, width, fn):
        self.name = name
        self.width = float(width)
        self._fn = fn

    def per_row(self, estimator, X, y):
        return self._fn(np.asarray(estimator.predict(X)), np.asarray(y))

    def __call__(self, estimator, X, y):
        return float(np.mean(self.per_row(estimator, X, y)))

    def __repr__(self):
        return f"PerRowScorer({self.name!r}, width={self.width})"


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
            return PerRowScorer(scoring, bound, lambda pred, y: -np.minimum(np.abs(pred - y), bound))
        return PerRowScorer(scoring, bound, lambda pred, y: -np.minimum((pred - y) ** 2, bound))
    raise ValueError(
        f"scoring={scoring!r} is not supported by a private search: only scores that are means of per-row "
        "terms in a public range ('accuracy', 'neg_mean_absolute_error', 'neg_mean_squared_error' with "
        "loss_bound) have a sensitivity known in advance."
    )
