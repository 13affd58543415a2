"""Transforms of rows held by a Dask cluster: the in-memory per-row map, chunk by chunk, lazily.

A fitted transformer's ``transform`` of a dask array or DataFrame returns a
lazy dask collection: each row-chunk is mapped on the worker holding it by
the very function the in-memory ``transform`` applies to a NumPy array
(``map_blocks`` / ``map_partitions``), so every entry is the same float as
in memory and no row travels to the client (doc/large_data.rst, "Dask").
Checks that read values (finiteness) run inside the map, when the result is
computed; checks of public facts (the number of features, the feature
names) run at the call, as scikit-learn's ``validate_data(reset=False)``.

Output containers follow ``set_output``: ``"default"`` gives a dask array,
``"pandas"`` a dask DataFrame (columns ``get_feature_names_out()``, a
DataFrame input's index kept); other containers have no lazy form and are
refused.
"""

from functools import partial

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._compat import _check_feature_names, _check_n_features, _get_output_config, _wrap_data_with_container
from .._solvers import is_dask_collection

__all__ = ["LazyRowMapMixin", "lazy_row_map"]


def _checked_chunk(chunk):
    """One chunk as C-contiguous float64 after the in-memory validation's finiteness check (on its worker)."""
    X = np.ascontiguousarray(chunk, dtype=np.float64)
    if X.ndim != 2 or not np.isfinite(X).all():
        raise ValueError("Input X contains NaN or infinity (in a dask chunk).")
    return X


def _map_chunk(fn, chunk):
    return np.asarray(fn(_checked_chunk(chunk)), dtype=np.float64)


def _map_partition(fn, names, part):
    import pandas as pd

    return pd.DataFrame(_map_chunk(fn, part.to_numpy()), index=part.index, columns=names)


def _rows(X):
    """A dask DataFrame's or array's rows as a dask array of whole rows (unknown chunk sizes stay unknown)."""
    rows = X if hasattr(X, "chunks") else X.to_dask_array()
    if rows.ndim != 2:
        raise ValueError(f"Expected a 2D array, got a dask array of shape {rows.shape}.")
    return rows.rechunk({1: -1}) if len(rows.chunks[1]) != 1 else rows


def lazy_row_map(estimator, X, fn, *, validate=True):
    """``fn`` (an in-memory per-row map of float64 arrays) of every row-chunk of ``X``, lazily.

    ``validate``: check ``X``'s number of features and names against the
    fitted ones first (``validate_data(reset=False)``'s public checks).
    Returns a dask array, or a dask DataFrame under ``set_output(transform="pandas")``.
    """
    if validate:
        _check_feature_names(estimator, X, reset=False)
        _check_n_features(estimator, _rows(X), reset=False)
    config = _get_output_config("transform", estimator)["dense"]
    if config == "default":
        return _rows(X).map_blocks(partial(_map_chunk, fn), dtype=np.float64)
    if config != "pandas":
        raise ValueError(f"set_output(transform={config!r}) has no lazy container for a dask input: use "
                         "'default' (a dask array) or 'pandas' (a dask DataFrame).")
    import pandas as pd
    import dask.dataframe as dd

    names = list(estimator.get_feature_names_out())
    if not hasattr(X, "chunks"):  # a DataFrame: its partitions and index are kept
        meta = pd.DataFrame({name: pd.Series(dtype=np.float64) for name in names})
        return X.map_partitions(partial(_map_partition, fn, names), meta=meta)
    return dd.from_dask_array(_rows(X).map_blocks(partial(_map_chunk, fn), dtype=np.float64), columns=names)


class LazyRowMapMixin:
    """``transform`` / ``fit_transform`` of a per-row map, lazy on dask collections (module docstring).

    The class defines ``_row_map()``: the function of a float64 array that its
    in-memory transform applies after validation, and ``_transform_in_memory(X)``.
    (``transform`` lives here, not in the class: scikit-learn's ``set_output``
    wrapper would turn a lazy result into a pandas DataFrame on the client.)
    """

    def transform(self, X, copy=None):
        """Map the rows of ``X``.

        Parameters
        ----------
        X : {array-like, dask array or DataFrame} of shape (n_samples, n_features)
            A dask collection is mapped chunk by chunk on its workers, lazily
            (the same floats as in memory).
        copy : bool, default=None
            Unused (a new array is always returned).

        Returns
        -------
        X_tr : {ndarray, dask array} of shape (n_samples, n_features)
            Or a (dask) DataFrame under ``set_output(transform="pandas")``.
        """
        if is_dask_collection(X):
            self._check_lazy_fitted()
            return lazy_row_map(self, X, self._row_map())
        return _wrap_data_with_container("transform", self._transform_in_memory(X), X, self)

    def _check_lazy_fitted(self):
        if self.__sklearn_tags__().requires_fit:
            check_is_fitted(self)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit, then transform ``X`` (lazily for a dask collection)."""
        if is_dask_collection(X):
            return self.fit(X, y, **fit_params).transform(X)
        return super().fit_transform(X, y, **fit_params)
