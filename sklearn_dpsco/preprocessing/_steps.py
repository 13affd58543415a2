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

    Fits a clone on public synthetic rows (never on the private data) and
    compares the transform of all rows with the transform of all rows but the
    first. Returns None when the step passes, else a short reason.
    """
    from sklearn.base import clone

    rng = np.random.default_rng(seed)
    Z = rng.uniform(0.5, 2.0, size=(_PROBE_ROWS, n_features))
    try:
        full = np.asarray(clone(step).fit(Z).transform(Z), dtype=float)
        rest = np.asarray(clone(step).fit(Z[1:]).transform(Z[1:]), dtype=float)
    except Exception as exc:  # the function could not be evaluated on a plain float array
        return f"it could not be evaluated on a synthetic float array ({type(exc).__name__}: {exc})"
    if full.shape[0] != _PROBE_ROWS or not np.allclose(full[1:], rest, equal_nan=True):
        return "its output rows depend on other rows (it aggregates across rows)"
    return None
