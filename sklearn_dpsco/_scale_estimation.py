"""Private scale estimates: the face the "auto" defaults call (doc/privacy/quantiles.rst).

A fit that wants a data-driven clip level, row bound, label bound or feature
range does, before touching the data with anything else::

    scale_budget, rest = split_scale_share(budget, scale_share)   # sklearn_dpsco._budget
    clip = private_quantile(row_norms, 0.9, scale_budget, random_state=rng)
    ...fit with clip.value on `rest`; compose clip.event into the fit's ComposedEvent

Nothing here charges a ledger: each function returns the privacy event of
what it released, and the calling fit checks and spends the composition of
all its events (doc/design.rst, contract rule 4). Every argument is
validated before the first random draw.

Neighbouring relation: replace-one (``n`` is public). At user level the
unit is a user, whose rows must first be reduced to ONE value
(:func:`per_user_reduce`, e.g. the user's largest row norm); replacing a user
then replaces one value, and ``n`` is the public number of users.
"""

from typing import NamedTuple

import numpy as np

from ._budget import Budget
from ._mechanisms._calibrate import quantile_mechanism_for
from ._mechanisms._quantile import DEFAULT_SELECTION, _all_finite, check_scale_values
from ._mechanisms._scale_grid import ScaleGrid
from ._param_checks import check_groups
from ._rng import check_random_state
from ._solvers._core._user_data import index_users
from .accounting import ComposedEvent

__all__ = ["ScaleRelease", "column_quantiles_event", "column_quantiles_from_counts", "per_user_reduce",
           "private_column_quantiles", "private_quantile"]

_REDUCERS = {"max": np.maximum, "min": np.minimum}


class ScaleRelease(NamedTuple):
    """A released scale and the privacy event the caller composes into its fit."""

    value: object  # float, or ndarray for several quantiles
    event: object  # PrivacyEvent


def _pure(budget):
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}.")
    # The quantile releases are pure DP: only epsilon is used (and is within any (epsilon, delta)).
    return Budget(budget.epsilon, 0.0, budget.noise)


def _check_levels(qs):
    levels = np.atleast_1d(np.asarray(qs, dtype=float))
    if levels.ndim != 1 or levels.size == 0:
        raise ValueError(f"qs must be a non-empty 1-D list of levels in [0, 1], got {qs!r}.")
    if not np.all((levels >= 0) & (levels <= 1)):
        raise ValueError(f"every quantile level must be in [0, 1], got {qs!r}.")
    return [float(q) for q in levels]


def private_quantile(values, q, budget, *, grid=None, method=DEFAULT_SELECTION, random_state=None):
    """An ``epsilon``-DP grid point near the ``q``-quantile of ``values``.

    Parameters
    ----------
    values : array-like of shape (n,)
        Nonnegative values (row norms, ``|y|``, per-user reductions), or
        signed values with ``grid=ScaleGrid(signed=True)``.
    q : float
        Quantile level in [0, 1].
    budget : Budget
        Only ``budget.epsilon`` and ``budget.noise`` are used (pure DP).
    grid : ScaleGrid, optional
        Public candidates; ``ScaleGrid()`` (0 and ``2^-20 .. 2^20``, two
        points per octave) by default.
    method : {"permute_and_flip", "exponential"}, default=DEFAULT_SELECTION
    random_state : None, int or numpy.random.Generator, default=None
        None draws from OS entropy (doc/privacy/randomness.rst).

    Returns
    -------
    ScaleRelease
        ``value`` (a grid point, float) and ``event`` (``PureDPEvent(epsilon)``).
    """
    mechanism = quantile_mechanism_for(q, _pure(budget), ScaleGrid() if grid is None else grid, method)
    values = check_scale_values(values, mechanism.grid)
    rng = check_random_state(random_state)
    return ScaleRelease(mechanism.release(values, rng), mechanism.event)


def private_column_quantiles(X, qs, budget, *, grid=None, method=DEFAULT_SELECTION, random_state=None, n_jobs=None):
    """``epsilon``-DP grid points near the ``qs``-quantiles of every column of ``X``.

    The ``len(qs) * n_features`` releases share ``budget.epsilon`` equally
    (basic composition of pure DP). Typical use: a scaler's per-feature
    lower and upper ends, ``qs=(0.02, 0.98)`` with ``ScaleGrid(signed=True)``.

    Parameters
    ----------
    X : array-like of shape (n, n_features)
    qs : sequence of float
        Levels in [0, 1].
    budget : Budget
        The whole budget of these releases (only epsilon and noise are used).
    grid : ScaleGrid, optional
        Defaults to ``ScaleGrid(signed=True)``.
    method, random_state
        As in :func:`private_quantile`.
    n_jobs : int, optional
        Threads for the grid counts (joblib's meaning; the release is the same for every value).

    Returns
    -------
    ScaleRelease
        ``value`` of shape (len(qs), n_features) and ``event``, the
        ``ComposedEvent`` of the ``len(qs) * n_features`` pure-DP releases.
    """
    grid = ScaleGrid(signed=True) if grid is None else grid
    levels = _check_levels(qs)
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"X must be 2-D with at least one column, got shape {X.shape}. Nothing was spent.")
    X = _checked_columns(X, grid)
    # every release reads its column only through the grid counts: one pass over X gives every
    # column's counts (grid.column_counts equals grid.counts per column), which serve all levels
    return column_quantiles_from_counts(grid.column_counts(X, n_jobs=n_jobs), X.shape[0], levels, budget, grid=grid,
                                        method=method, random_state=random_state)


def _column_mechanisms(levels, budget, n_features, grid, method):
    """The ``len(levels) * n_features`` releases' mechanisms: ``budget.epsilon`` split equally (public)."""
    part = _pure(budget).split_equal(len(levels) * n_features)
    return [quantile_mechanism_for(q, part, grid, method) for q in levels]


def column_quantiles_event(qs, budget, n_features, *, grid=None, method=DEFAULT_SELECTION):
    """The event :func:`private_column_quantiles` returns for ``n_features`` columns, before any data (public)."""
    grid = ScaleGrid(signed=True) if grid is None else grid
    mechanisms = _column_mechanisms(_check_levels(qs), budget, n_features, grid, method)
    return ComposedEvent(tuple(m.event for m in mechanisms for _ in range(n_features)))


def column_quantiles_from_counts(counts, n, qs, budget, *, grid=None, method=DEFAULT_SELECTION, random_state=None):
    """:func:`private_column_quantiles` from every column's grid counts of ``n`` rows.

    ``counts[j] = grid.counts(X[:, j])``; counts summed over disjoint row-chunks
    (on a cluster; exact integers) give the release of the rows whole, draw
    for draw (``release_counts`` is ``release``'s law with the same draws in
    the same order).
    """
    grid = ScaleGrid(signed=True) if grid is None else grid
    counts = np.asarray(counts)
    d = counts.shape[0]
    mechanisms = _column_mechanisms(_check_levels(qs), budget, d, grid, method)
    rng = check_random_state(random_state)
    # each mechanism releases every column in turn (the same draws in the same order as one call per column)
    out = np.array([m.release_counts_columns(counts, n, rng) for m in mechanisms])
    return ScaleRelease(out, ComposedEvent(tuple(m.event for m in mechanisms for _ in range(d))))


def _checked_columns(X, grid):
    """``X`` as float64 when every column passes :func:`check_scale_values`, else that check's error.

    The whole array is checked by :func:`check_scale_values` at once (the same
    tests: numeric, at least one value, finite, nonnegative for an unsigned
    grid); on failure the per-column checks run and raise the first column's
    error, with its column in the message.
    """
    if X.shape[0] > 0 and X.dtype == np.float64 and grid.signed and _all_finite(X):
        # float64, not empty, finite, and a signed grid takes values of either sign: every test of
        # check_scale_values passes, without the reshape's copy of a strided view (every k-th row)
        return X
    if X.shape[0] > 0:
        try:
            return check_scale_values(X.reshape(-1), grid).reshape(X.shape)
        except (TypeError, ValueError):
            pass
    for j in range(X.shape[1]):
        check_scale_values(X[:, j], grid, name=f"X[:, {j}]")
    raise AssertionError("unreachable: a column failed the whole-array check")  # pragma: no cover


def per_user_reduce(values, groups, reduce="max"):
    """One value per user: the user's largest (or smallest) value, ordered by user identifier.

    The reduction that makes a user-level scale estimate a replace-one
    release: replacing a user's rows changes that user's reduced value only
    (doc/privacy/quantiles.rst, "User level"). Use ``"max"`` for norms,
    ``|y|`` and upper ends, ``"min"`` for lower ends.

    Parameters
    ----------
    values : array-like of shape (n_rows,)
    groups : array-like of shape (n_rows,)
        One user identifier per row.
    reduce : {"max", "min"}, default="max"

    Returns
    -------
    ndarray of shape (n_users,)
    """
    if reduce not in _REDUCERS:
        raise ValueError(f"reduce must be one of {tuple(_REDUCERS)}, got {reduce!r}.")
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}. Nothing was spent.")
    groups = check_groups(groups, values.shape[0], "per_user_reduce")
    return index_users(groups).reduce_per_user(values, _REDUCERS[reduce])
