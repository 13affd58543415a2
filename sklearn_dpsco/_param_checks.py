"""Checks of public privacy parameters, shared by events, mechanisms and estimators.

Each raises a ``ValueError`` (or ``TypeError``) whose message names the
parameter, so a user sees which argument is wrong before anything runs.
"""

import math
import numbers

import numpy as np

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_nonnegative",
    "check_positive",
    "check_dimension",
    "check_groups",
    "check_class_labels",
    "check_no_missing",
    "EPSILON_MIN",
    "SCALE_MAX",
    "SCALE_MIN",
]

#: The smallest ``epsilon`` an estimator or ``DPStandardScaler`` accepts, checked with the other parameters before
#: anything runs. Below it no part of a fit's split carries any information, and the mechanisms' exact arithmetic
#: leaves float64 (``epsilon=1e-200``: OverflowError; ``1e-15`` at ``delta > 0``: the calibration's bracket
#: underflows), which the estimators reported as internal errors.
EPSILON_MIN = 1e-12

#: The range of a declared scale (``clip``, ``row_bound``, ``label_bound``, ``data_norm``,
#: ``intercept_scaling``), checked with the other parameters before anything runs. The noise calibration
#: squares these bounds and multiplies them by ``n``: beyond the range the public arithmetic leaves float64
#: (OverflowError, a zero divisor, an infinite Fraction), which the estimators reported as internal errors.
#: ``SCALE_MIN`` is the secure path's smallest clip (``_mechanisms/_calibrate._MIN_CLIP``).
SCALE_MIN = 2.0**-300
SCALE_MAX = 2.0**250


def _as_real(value, name):
    if type(value) is float:
        return value  # the common case, without the numbers.Real ABC check (float(value) is value itself)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    return float(value)


def check_epsilon(epsilon, name="epsilon", *, allow_zero=False):
    """Return ``epsilon`` as a float after checking it is finite and positive."""
    value = _as_real(epsilon, name)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {epsilon!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {epsilon!r}.")
    return value


def check_delta(delta, name="delta"):
    """Return ``delta`` as a float after checking 0 <= delta < 1."""
    value = _as_real(delta, name)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"{name} must be in [0, 1), got {delta!r}.")
    return value


def check_nonnegative(value, name):
    """Return ``value`` as a float after checking it is finite and >= 0."""
    out = _as_real(value, name)
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}.")
    return out


def check_positive(value, name):
    """Return ``value`` as a float after checking it is finite and > 0."""
    out = _as_real(value, name)
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}.")
    return out


def check_dimension(d, name="dimension"):
    """Return ``d`` as an int after checking it is a whole number >= 1."""
    if isinstance(d, bool) or not isinstance(d, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(d).__name__}.")
    if d < 1:
        raise ValueError(f"{name} must be >= 1, got {d!r}.")
    return int(d)


#: Appended to a user-level fit's "groups missing" refusal: scikit-learn's helpers hand their own ``groups``
#: argument to the splitter, never to ``fit``, so the user who passed it needs the way to route it.
SKLEARN_GROUPS_HINT = (
    "(scikit-learn's cross_val_score, cross_validate and GridSearchCV give their own groups argument to the "
    "splitter only: pass the users to the fits with params={'groups': groups}, or with metadata routing "
    "enabled call set_fit_request(groups=True) on the estimator.)"
)


def _is_missing(value):
    """True for a missing entry of an object array: None, a float NaN, pandas' ``pd.NA`` or ``pd.NaT``."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    return type(value).__name__ in ("NAType", "NaTType")  # pandas' missing-value scalars, without importing pandas


def check_no_missing(values, name="y", what="labels"):
    """Refuse ``values`` (``y``, ``groups``) holding a missing entry, by name, before anything is spent.

    A pandas object is read through its own ``isna``: a nullable column (``"Int64"``, ``"boolean"``, ``"string"``)
    with ``pd.NA`` otherwise became a float NaN ("Input y contains NaN", which names no label) or reached
    ``np.unique`` and raised ``TypeError: boolean value of NA is ambiguous``. An array or list of objects is
    scanned for None, NaN, ``pd.NA`` and ``pd.NaT``. Numeric arrays are left to the callers' own checks
    (scikit-learn's finiteness check). A dask collection is not read (its checks run on its workers).
    """
    if values is None:
        return
    module = type(values).__module__ or ""
    if module.startswith("dask"):
        return
    if module.startswith("pandas") and hasattr(values, "isna"):
        if bool(np.asarray(values.isna()).any()):
            dtype = getattr(values, "dtype", None)
            kind = f" of dtype {str(dtype)!r}" if dtype is not None else ""
            raise ValueError(f"{name} contains missing {what}: pd.NA, NaN or None among its values{kind}. Drop or "
                             "fill those rows (and the same rows of X) before the fit. Nothing was spent.")
        return
    if isinstance(values, np.ndarray):
        if values.dtype != object:
            return
        arr = values
    elif isinstance(values, (list, tuple)):
        arr = np.asarray(values)  # numbers convert in C and are left to the callers' checks
        if arr.dtype != object:
            return
    else:
        return
    if any(_is_missing(v) for v in arr.ravel()):
        raise ValueError(f"{name} contains missing {what}: None, NaN or pd.NA among its values. Drop or fill those "
                         "rows (and the same rows of X) before the fit. Nothing was spent.")


#: Fewest users a user-level fit accepts (:func:`check_groups`).
MIN_USERS = 2


def check_groups(groups, n_rows, owner):
    """One user identifier per row, validated before anything is spent.

    Parameters
    ----------
    groups : array-like of shape (n_rows,) or None
    n_rows : int
    owner : str
        What needs the groups (``"UserLevelDPLogistic.fit"``), for the message.

    Returns
    -------
    ndarray of shape (n_rows,)
    """
    if groups is None:
        raise ValueError(
            f"{owner} requires groups: one user identifier per row (the privacy unit is a user). Nothing was spent. "
            + SKLEARN_GROUPS_HINT
        )
    check_no_missing(groups, "groups", "user identifiers")
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n_rows:
        raise ValueError(f"groups must have shape ({n_rows},), got {groups.shape}. Nothing was spent.")
    if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
        raise ValueError("groups must not contain NaN or infinite values. Nothing was spent.")
    if groups.dtype.kind == "O":
        try:
            np.unique(groups)
        except TypeError:
            raise ValueError("groups must hold comparable identifiers (one type). Nothing was spent.") from None
    # MIN_USERS = 2: fewer means every identifier equals the first, one O(n) comparison, not the sort of
    # np.unique (10 ms at 200k rows), which the fit's own user index does once anyway
    if n_rows == 0 or bool(np.all(groups == groups[0])):
        # the number of users is public (replace-one-user neighbours keep it), so refusing on it leaks nothing
        raise ValueError(
            f"groups hold {min(n_rows, 1)} user (in {n_rows} sample{'' if n_rows == 1 else 's'}): a user-level fit needs "
            f"at least {MIN_USERS} users (with one, a "
            "neighbouring dataset replaces every row, so the fit could not depend on the data). Nothing was spent."
        )
    return groups


def check_class_labels(y):
    """scikit-learn's ``check_classification_targets``, with missing labels and mixed label types in an object
    array refused by name.

    A ``None``, float NaN or ``pd.NA`` among object labels (a column read with gaps) otherwise reaches
    ``np.unique`` and raises ``TypeError: '<' not supported between instances of 'NoneType' and 'str'``, which
    names neither y nor the cause (:func:`check_no_missing` names it); so do strings mixed with numbers when
    the first label is a string (scikit-learn's estimators raise that TypeError too, and "Unknown label type:
    unknown" when the first is a number). Both orders say what scikit-learn's ``unique_labels`` says, "Mix of
    label input types (string and number)". Raises before anything is spent.
    """
    from sklearn.utils.multiclass import check_classification_targets

    check_no_missing(y)
    y = np.asarray(y)
    try:
        check_classification_targets(y)
    except (TypeError, ValueError):
        # diagnosed on the way out only (valid labels pay nothing): strings mixed with numbers could not be
        # sorted (first label a string) or were typed "unknown" (first label a number)
        if y.dtype == object:
            strings = [isinstance(v, str) for v in y.ravel()]
            if any(strings) and not all(strings):
                kinds = sorted({type(v).__name__ for v in y.ravel()})
                raise ValueError(
                    f"Mix of label input types (string and number): y holds labels of types {kinds}. Give every "
                    "label one type (e.g. y.astype(str)). Nothing was spent."
                ) from None
        raise
