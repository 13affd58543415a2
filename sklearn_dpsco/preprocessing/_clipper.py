"""RowNormClipper: scale each row into a public norm ball (stateless, data-independent)."""

import numbers
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from .._compat import Interval, StrOptions, _check_feature_names, _check_n_features, _fit_context, validate_data
from .._solvers import is_dask_collection, safe_row_norms
from ._lazy import LazyRowMapMixin

__all__ = ["RowNormClipper"]


def _dense_row_norms(X, norm):
    order = {"l2": 2, "l1": 1, "max": np.inf}[norm]
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(X, ord=order, axis=1)
    if norm == "l2":
        # sum of squares overflows past ~1e154 (inf: the row would be zeroed, not clipped) and
        # underflows below ~1e-162; recompute those rows scaled (ordinary rows: bit-identical)
        bad = ~np.isfinite(norms) | ((norms == 0) & np.any(X != 0, axis=1))
        if np.any(bad):
            norms[bad] = safe_row_norms(X[bad])
    return norms


def _clip_factors(norms, max_norm, rows, norm):
    """``min(1, max_norm / ||x||)`` per row from its norm; ``rows(mask)`` gives the dense rows whose norm is not
    finite (beyond float64: an l1 sum of entries near 1e308), whose factor is taken on the row divided by its
    largest entry instead of being 0. Under ``errstate``: ``max_norm / tiny`` overflows to inf (factor 1) for a
    zero row, and a warning there would tell whether the rows hold one."""
    with np.errstate(over="ignore", divide="ignore"):
        factor = np.minimum(1.0, max_norm / np.maximum(norms, np.finfo(float).tiny))
    bad = ~np.isfinite(norms)
    if np.any(bad):
        A = np.abs(rows(bad))
        top = A.max(axis=1)
        order = {"l2": 2, "l1": 1, "max": np.inf}[norm]
        with np.errstate(over="ignore", under="ignore"):
            factor[bad] = np.minimum(1.0, (max_norm / top) / np.linalg.norm(A / top[:, None], ord=order, axis=1))
    return factor


def _clip_dense_rows(X, max_norm, norm):
    """``x * min(1, max_norm / ||x||)`` of every row of a dense float64 array (each row from itself only)."""
    factor = _clip_factors(_dense_row_norms(X, norm), max_norm, lambda mask: X[mask], norm)
    return X * factor[:, None]


class RowNormClipper(LazyRowMapMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale every row with norm above ``max_norm`` down to norm ``max_norm``.

    ``x -> x * min(1, max_norm / ||x||)``. Each output row depends only on its
    own input row and on the public ``max_norm``: the transformer learns
    nothing from the data, costs no privacy budget, and may precede a private
    estimator in a :class:`~sklearn_dpsco.preprocessing.DPPipeline`. Rows
    already inside the ball are unchanged.

    Parameters
    ----------
    max_norm : float, default=1.0
        The public radius.
    norm : {"l2", "l1", "max"}, default="l2"
        The norm of the ball.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has feature names that are all strings.

    See Also
    --------
    sklearn.preprocessing.Normalizer : scales *every* row to norm 1.

    Notes
    -----
    After clipping, replacing one row changes a sum of rows by at most
    ``2 * max_norm`` in the chosen norm: the bound private estimators use.

    No privacy unit (``privacy_unit`` is None): the transformer releases
    nothing about the data, and each output row depends on its own input row
    only, so replacing one row changes one output row and replacing one user
    changes that user's output rows only. It may sit in row-level and
    user-level pipelines alike.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco.preprocessing import RowNormClipper
    >>> RowNormClipper(max_norm=1.0).fit_transform(np.array([[3.0, 4.0], [0.3, 0.4]]))
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """

    #: unit-neutral: data-independent, row-wise (see Notes)
    privacy_unit = None

    _parameter_constraints = {
        "max_norm": [Interval(numbers.Real, 0, None, closed="neither")],
        "norm": [StrOptions({"l2", "l1", "max"})],
    }

    def __init__(self, max_norm=1.0, *, norm="l2"):
        self.max_norm = max_norm
        self.norm = norm

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate ``X`` (only its shape is kept); learns nothing from the values.

        A dask array or DataFrame is not read: only its number of columns
        (and names) is kept; its values are checked when ``transform``'s
        result is computed, chunk by chunk on the workers.
        """
        if is_dask_collection(X):
            _check_n_features(self, X, reset=True)
            _check_feature_names(self, X, reset=True)
            return self
        validate_data(self, X, accept_sparse="csr", ensure_all_finite=True)
        return self

    def _row_norms(self, X):
        if sp.issparse(X):
            A = abs(X)
            if self.norm == "l2":
                return safe_row_norms(X)
            if self.norm == "l1":
                with np.errstate(over="ignore"):  # a sum beyond float64 is inf: _clip_factors rescales that row
                    return np.asarray(A.sum(axis=1)).ravel()
            return A.max(axis=1).toarray().ravel()
        return _dense_row_norms(X, self.norm)

    def _row_map(self):
        """The map of dense float64 rows (picklable: the workers of a dask transform run it)."""
        return partial(_clip_dense_rows, max_norm=self.max_norm, norm=self.norm)

    def _transform_in_memory(self, X):
        X = validate_data(self, X, accept_sparse="csr", ensure_all_finite=True, reset=False, dtype=np.float64)
        if not sp.issparse(X):
            return _clip_dense_rows(X, self.max_norm, self.norm)
        factor = _clip_factors(self._row_norms(X), self.max_norm, lambda mask: X[np.flatnonzero(mask)].toarray(),
                               self.norm)
        return sp.diags(factor) @ X

    # transform (LazyRowMapMixin): clip the rows of an array, sparse matrix or dask collection

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.sparse = True
        return tags
