"""Which pipeline steps may touch private data (doc/privacy/preprocessing.rst, "Private pipelines").

Conservative by construction: a step is accepted only if it is

* *private*: a sklearn_dpsco estimator with a privacy budget (``epsilon``,
  ``delta`` and ``accountant`` parameters) — it is charged its share; or
* *stateless*: in an allow-list of transformers whose ``fit`` learns nothing
  from the values of the data and whose ``transform`` maps each row using
  that row only (plus public parameters), or ``"passthrough"`` / ``None``.

Everything else — any transformer with a non-trivial ``fit`` (StandardScaler,
PCA, SelectKBest, target encoders...) — would learn a non-private function of
the data that every later step then exposes, and is refused with an error
naming the step, unless the user opts out (``allow_non_private_steps=True``).
``FunctionTransformer`` is accepted only after a probe on synthetic data
shows that its function maps rows independently (``X - X.mean(0)`` fails).
"""

import numpy as np

from ..accounting._resolve import AccountantMixin

__all__ = ["classify_step", "is_private_estimator", "probe_row_wise", "STATELESS"]

#: scikit-learn transformers accepted as stateless: fit records only the input
#: shape (and, for PolynomialFeatures, the public output layout from it).
STATELESS = {
    ("sklearn.preprocessing._function_transformer", "FunctionTransformer"),
    ("sklearn.preprocessing._data", "Normalizer"),
    ("sklearn.preprocessing._data", "Binarizer"),
    ("sklearn.preprocessing._polynomial", "PolynomialFeatures"),
    ("sklearn_dpsco.preprocessing._clipper", "RowNormClipper"),
}

_PROBE_ROWS = 7  # a few synthetic rows suffice to expose a cross-row dependence


def is_private_estimator(est):
    """A sklearn_dpsco estimator that takes a budget and charges an accountant."""
    if not isinstance(est, AccountantMixin):
        return False
    params = est.get_params(deep=False)
    return {"epsilon", "delta", "accountant"} <= set(params)


def classify_step(step):
    """``"passthrough"``, ``"private"``, ``"stateless"`` or ``"non_private"``."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return "passthrough"
    if is_private_estimator(step):
        return "private"
    cls = type(step)
    if (cls.__module__, cls.__qualname__) in STATELESS:
        return "stateless"
    return "non_private"


def probe_row_wise(step, n_features, seed=0):
    """Check on synthetic data that ``step`` maps each row using that row only.

    Fits clones on public synthetic rows (never on the private data) and
    compares the transform of all rows with the transform of: every row
    alone, all rows but the first, the rows in another order, and the rows
    with the first replaced by a far larger one. A function reading other
    rows through an extreme row (a maximum, a minimum, the last row) passes
    a single drop-one comparison but not these. Returns None when the step
    passes, else a short reason.
    """
    import warnings

    from sklearn.base import clone

    rng = np.random.default_rng(seed)
    Z = rng.uniform(0.5, 2.0, size=(_PROBE_ROWS, n_features))
    order = rng.permutation(_PROBE_ROWS)
    far = Z.copy()
    far[0] *= -1e4  # far outside the other rows, of the other sign

    def transform(rows):
        return np.asarray(clone(step).fit(rows).transform(rows), dtype=float)

    dependent = "its output rows depend on other rows (it aggregates across rows)"
    # the function's own warnings on the synthetic rows (a log of the far row...) are not the user's concern
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            full = transform(Z)
            pairs = [(transform(Z[1:]), full[1:]), (transform(Z[order]), full[order]),
                     (transform(far)[1:], full[1:])]
        except Exception as exc:  # the function could not be evaluated on a plain float array
            return f"it could not be evaluated on a synthetic float array ({type(exc).__name__}: {exc})"
        try:  # a row-wise map maps one row as it maps it among others
            pairs += [(transform(Z[i:i + 1]), full[i:i + 1]) for i in range(_PROBE_ROWS)]
        except Exception as exc:
            return f"{dependent}: it fails on a single row ({type(exc).__name__}: {exc})"
    if full.shape[0] != _PROBE_ROWS or any(
        part.shape != whole.shape or not np.allclose(part, whole, equal_nan=True) for part, whole in pairs
    ):
        return dependent
    return None
