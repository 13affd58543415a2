"""Validation of rows held by a Dask cluster, on the workers, before any budget is spent.

``fit`` on a dask array or DataFrame checks what the in-memory validation
checks — shapes, finiteness of rows and targets, the label set, sample
weights in [0, 1] — with one pass of :func:`map_chunks`: each worker
returns a few flags (and its labels' unique values) for its chunks, the
client reduces them and raises the in-memory error before the plan is
checked against the budget. The rows stay lazy dask arrays (float64), so the
later steps (private scales, the solver's statistics) also run on the
workers (doc/large_data.rst, "Dask").
"""

from functools import partial

import numpy as np

from .._param_checks import _is_missing, check_class_labels, check_no_missing
from .._solvers import is_dask_collection, map_chunks, with_known_chunks

__all__ = ["cluster_inputs", "cluster_rows", "is_cluster_input", "record_features"]


def is_cluster_input(X, y=None):
    """True when the rows (or the targets) are a dask collection."""
    return is_dask_collection(X) or (y is not None and is_dask_collection(y))


def _as_dask_array(a, name, row_chunks=None):
    """A dask DataFrame/Series (partition lengths computed on the workers), a dask array, or an
    in-memory array wrapped into chunks matching the rows."""
    import dask.array as da

    names = None
    if is_dask_collection(a) and not hasattr(a, "chunks"):  # DataFrame or Series
        if hasattr(a, "columns"):
            names = np.asarray(a.columns, dtype=object)
        a = a.to_dask_array(lengths=True)
    elif not is_dask_collection(a):
        a = np.asarray(a)
        if row_chunks is None:
            raise TypeError(f"{name} must be a dask array or DataFrame.")
        if a.ndim == 0 or a.shape[0] != sum(row_chunks):
            raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                             f"[{sum(row_chunks)}, {a.shape[0] if a.ndim else 0}] ({name}).")
        a = da.from_array(a, chunks=(row_chunks,) + a.shape[1:])
    return with_known_chunks(a), names  # a copy where the sizes were unknown: the caller's array stays as it was


def _flags(X, y, w, *, classification):
    """One chunk's checks (runs on its worker): a dict of flags and, for labels, their unique values."""
    out = {"rows": int(np.shape(X)[0]), "x_sparse": bool(hasattr(X, "tocsr"))}
    try:
        Xf = np.asarray(X, dtype=np.float64)
        out["x_finite"] = bool(np.isfinite(Xf).all())
        out["x_numeric"] = True
    except (TypeError, ValueError):
        out["x_numeric"] = False
    if classification:
        y = np.asarray(y)
        try:
            out["labels"] = np.unique(y)
        except TypeError:  # unsortable (strings mixed with numbers, None): the distinct values, named by the client
            out["labels"] = np.array(list(dict.fromkeys(y.ravel().tolist())), dtype=object)
    else:
        try:
            yf = np.asarray(y, dtype=np.float64)
            out["y_numeric"] = True
            out["y_finite"] = bool(np.isfinite(yf).all())
        except (TypeError, ValueError):
            out["y_numeric"] = False
        objects = np.asarray(y)
        # None or pd.NA in an object chunk (a nullable column): the first one, for the client's check_no_missing
        out["y_missing"] = [] if objects.dtype != object else [v for v in objects.ravel() if _is_missing(v)][:1]
    if w is not None:
        wf = np.asarray(w, dtype=np.float64)
        out["w_finite"] = bool(np.isfinite(wf).all())
        out["w_range"] = bool(((wf >= 0) & (wf <= 1)).all())
    return out


def _to_float64(chunk):
    return np.ascontiguousarray(chunk, dtype=np.float64)


def _check_numeric_chunks(flags):
    """Refuse chunks that are not numbers, naming sparse chunks (not supported on a cluster) as such."""
    if any(f["x_sparse"] for f in flags):
        raise ValueError("X is a dask array of sparse chunks, which the cluster fits do not read: densify the chunks "
                         "(X.map_blocks(lambda b: b.toarray())) or fit a scipy.sparse matrix in memory. "
                         "Nothing was spent.")
    if not all(f["x_numeric"] for f in flags):
        raise ValueError("X contains non-numeric values (could not convert to float64). Nothing was spent.")


def _row_flags(X):
    """One chunk's checks of the rows alone (runs on its worker)."""
    return _flags(X, 0.0, None, classification=False)


def _two_dimensional(X):
    """``(X, names)``: a dask array of 2 dimensions and at least one row and column, one chunk across columns."""
    X, names = _as_dask_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array, got a dask array of shape {X.shape}.")
    n, p = int(X.shape[0]), int(X.shape[1])
    if n < 1 or p < 1:
        raise ValueError(f"Found array with {n} sample(s) and {p} feature(s) while a minimum of 1 is required.")
    X = X.rechunk({1: -1}) if len(X.chunks[1]) != 1 else X
    return X, names


def cluster_rows(X):
    """``(X, names)``: the rows of a dask array or DataFrame as a float64 dask array, checked on the workers.

    What the in-memory validation of the rows checks (2-D, not empty,
    numeric, finite), with one pass of :func:`map_chunks` that returns a few
    flags per chunk; the rows stay lazy. ``names`` is the DataFrame's columns
    (None for an array). Partition lengths of a DataFrame, and unknown chunk
    sizes, are computed on the workers (integers only reach the client).

    Raises
    ------
    ValueError
        With the in-memory message, before anything is spent.
    """
    X, names = _two_dimensional(X)
    flags = map_chunks(_row_flags, (X,))
    _check_numeric_chunks(flags)
    if not all(f["x_finite"] for f in flags):
        raise ValueError("Input X contains NaN or infinity. Nothing was spent.")
    return X.map_blocks(_to_float64, dtype=np.float64), names


def cluster_inputs(estimator, X, y, sample_weight, *, classification):
    """``(X, y, sample_weight, labels)``: float64 dask arrays validated on the workers.

    ``y`` stays in its own dtype for a classifier (``labels`` is the sorted
    union of the chunks' labels); it is float64 for a regressor. Sets
    ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame with
    string columns), as scikit-learn's validation does.

    Raises
    ------
    ValueError
        With the in-memory message, before anything is spent.
    """
    if not is_dask_collection(X):
        raise TypeError("with dask targets, X must be a dask array or DataFrame as well.")
    X, names = _two_dimensional(X)
    n, p = int(X.shape[0]), int(X.shape[1])
    y, _ = _as_dask_array(y, "y", X.chunks[0])
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got a dask array of shape {y.shape} instead.")
    if int(y.shape[0]) != n:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n}, {int(y.shape[0])}]")
    w = None
    if sample_weight is not None:
        w, _ = _as_dask_array(sample_weight, "sample_weight", X.chunks[0])
        if w.ndim != 1 or int(w.shape[0]) != n:
            raise ValueError(f"sample_weight must have shape ({n},), got {tuple(w.shape)}.")

    flags = map_chunks(partial(_flags, classification=classification), (X, y, w))
    _check_numeric_chunks(flags)
    if not all(f["x_finite"] for f in flags):
        raise ValueError("Input X contains NaN or infinity. Nothing was spent.")
    labels = None
    if classification:
        labels = np.concatenate([f["labels"] for f in flags])
        check_class_labels(labels)  # mixed label types and missing labels refused by name, as in memory
        labels = np.unique(labels)
    else:
        # named as in memory: the workers' missing targets through the same check
        check_no_missing(np.array([v for f in flags for v in f["y_missing"]], dtype=object), what="targets")
        if not all(f["y_numeric"] for f in flags):
            raise ValueError("y contains non-numeric values (could not convert to float64). Nothing was spent.")
        if not all(f["y_finite"] for f in flags):
            raise ValueError("Input y contains NaN or infinity. Nothing was spent.")
        y = y.map_blocks(_to_float64, dtype=np.float64)
    if w is not None:
        if not all(f["w_finite"] for f in flags):
            raise ValueError("sample_weight must be finite. Nothing was spent.")
        # why: weights in [0, 1] keep each loss term within its Lipschitz level (the sensitivity argument)
        if not all(f["w_range"] for f in flags):
            raise ValueError(
                "sample_weight must lie in [0, 1]: a weight above 1 would let one row move the model "
                "more than the privacy guarantee allows. Nothing was spent."
            )
        w = w.map_blocks(_to_float64, dtype=np.float64)

    record_features(estimator, p, names)
    X = X.map_blocks(_to_float64, dtype=np.float64)
    return X, y, w, labels


def record_features(estimator, n_features, names):
    """``n_features_in_``, and ``feature_names_in_`` for a DataFrame with string columns, as scikit-learn's
    validation sets them (``names``: the DataFrame's columns, None for an array)."""
    estimator.n_features_in_ = int(n_features)
    if names is not None and all(isinstance(c, str) for c in names):
        estimator.feature_names_in_ = names
    else:
        estimator.__dict__.pop("feature_names_in_", None)
