"""Data-independent validation splits and what they imply for privacy.

A private search may only use splits chosen without looking at the private
data: a fold assignment that depends on the labels (``StratifiedKFold``) or
on groups changes for many rows when one row is replaced, and the
sensitivity arguments of doc/privacy/model_selection.rst no longer hold.
Splits are therefore made from the number of rows alone
(``splitter.split(np.empty((n, 0)))``: the private data is never passed).
"""

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold, PredefinedSplit, RepeatedKFold, ShuffleSplit

__all__ = ["check_private_cv", "make_splits", "RowClasses", "row_classes", "holdout_split"]

#: splitters whose folds depend on n (and public parameters) only
_DATA_INDEPENDENT = (KFold, ShuffleSplit, RepeatedKFold, PredefinedSplit)


def check_private_cv(cv, seed):
    """A splitter (or explicit list of splits) whose folds depend on n only.

    ``cv`` int -> ``KFold(cv, shuffle=True, random_state=seed)`` (``seed`` is
    public randomness). Stratified, group-based or custom splitters are
    refused. An explicit iterable of ``(train, test)`` index arrays is
    accepted as given: it must have been chosen without the private data.
    """
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be >= 2 folds, got {cv}.")
        return KFold(int(cv), shuffle=True, random_state=seed)
    if type(cv) in _DATA_INDEPENDENT:
        return cv
    if hasattr(cv, "split"):
        raise ValueError(
            f"cv={type(cv).__name__} is not accepted by a private search: its folds may depend on the labels "
            "or groups of the private data, so replacing one row could move many rows between folds. Use an "
            "int, KFold, ShuffleSplit, RepeatedKFold or PredefinedSplit, or an explicit list of "
            "(train, test) index arrays chosen without the data. Nothing was spent."
        )
    try:
        return [(np.asarray(tr, dtype=np.intp), np.asarray(te, dtype=np.intp)) for tr, te in cv]
    except Exception as exc:
        raise ValueError(f"cv must be an int, a data-independent splitter or a list of (train, test): {exc}") from exc


def make_splits(cv, n, unit="rows"):
    """The (train, test) index arrays of ``cv`` for ``n`` rows (or users: ``unit="users"``), from n alone."""
    if isinstance(cv, list):
        splits = cv
    else:
        try:
            splits = [(np.asarray(tr), np.asarray(te)) for tr, te in cv.split(np.empty((n, 0)))]
        except ValueError as exc:  # e.g. more folds than units: scikit-learn's message counts "samples"
            raise ValueError(f"cv={cv!r} cannot split the search's {n} {unit}: {exc} Nothing was spent.") from exc
    if not splits:
        raise ValueError("cv produced no split. Nothing was spent.")
    for tr, te in splits:
        if tr.size == 0 or te.size == 0:
            raise ValueError(f"every split needs at least one training and one validation {unit[:-1]}. "
                             "Nothing was spent.")
        if np.intersect1d(tr, te).size:
            raise ValueError(f"a split's training and validation {unit} must be disjoint. Nothing was spent.")
        # why: the shares count each unit once per split (row_classes); a unit listed twice (a bootstrap) would
        # enter its fit or its validation mean twice and lose more than its share (doc/privacy/model_selection.rst)
        if np.unique(tr).size != tr.size or np.unique(te).size != te.size:
            raise ValueError(f"a split lists a {unit[:-1]} more than once (a bootstrap sample?): each training and "
                             f"validation set must hold distinct {unit}, whose privacy loss the search counts once "
                             "per split. Nothing was spent.")
        if tr.min() < 0 or te.min() < 0 or max(tr.max(), te.max()) >= n:
            raise ValueError(f"split indices out of range for {n} {unit}. Nothing was spent.")
    return splits


def holdout_split(n, validation_fraction, seed, unit="n_samples"):
    """One random (train, validation) split of ``n`` rows, or users (``unit="n_users"``; public randomness)."""
    if not (0 < validation_fraction < 1):
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}.")
    m = int(round(n * validation_fraction))
    if m < 1 or m > n - 1:
        what = "user" if unit == "n_users" else "row"
        raise ValueError(f"validation_fraction={validation_fraction} leaves no training or no validation {what} at "
                         f"{unit}={n}. Nothing was spent.")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[m:]), np.sort(perm[:m])


@dataclass(frozen=True)
class RowClasses:
    """How the rows are touched by a search's splits.

    ``classes`` are the distinct pairs ``(t, v)``: a row of that class is in
    ``t`` training sets and in ``v`` (0 or 1: at least one) validation sets.
    ``sensitivity`` is the largest change of a mean-over-splits validation
    score with per-row scores in an interval of length 1, when one row is
    replaced: ``max_i sum_{s: i in val_s} 1 / (S m_s)``.
    """

    classes: tuple
    sensitivity: float
    n_splits: int


def row_classes(splits, n):
    """The :class:`RowClasses` of ``splits`` over ``n`` rows (exact, from the indices)."""
    S = len(splits)
    t = np.zeros(n, dtype=np.int64)
    weight = np.zeros(n)
    for tr, te in splits:
        t[tr] += 1
        # why: a row in val_s moves that split's mean score by <= 1/m_s, and the
        # search averages over S splits (doc/privacy/model_selection.rst)
        weight[te] += 1.0 / (S * te.size)
    v = (weight > 0).astype(np.int64)
    classes = tuple(sorted({(int(a), int(b)) for a, b in zip(t, v)}))
    return RowClasses(classes=classes, sensitivity=float(weight.max()), n_splits=S)
