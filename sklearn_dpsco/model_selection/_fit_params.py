"""Fit parameters of a search's candidate fits: routed, checked before the reservation, sliced per split.

``DPGridSearchCV.fit(X, y, groups=None, **params)`` passes ``params`` (e.g.
``sample_weight``, or ``clf__sample_weight`` for a :class:`DPPipeline`) to
every candidate fit and to the refit, like scikit-learn's ``GridSearchCV``:
as given when metadata routing is off, through ``process_routing`` (the
estimator's ``set_fit_request``) when it is on. ``groups`` is the search's
own argument (it fixes the privacy unit and the splits) and is never routed.
With routing on, a :class:`DPPipeline` receives metadata by its plain names
(``sample_weight``) and routes it to the steps that request it; its routing is
run once here so that an unrequested key fails before the reservation.

Everything is checked here, before the search reserves its budget: a
parameter the estimator's fit does not take, or a weight vector a candidate
fit would refuse on one of its splits, fails while nothing is spent. The
scores stay unweighted means (their sensitivity, doc/privacy/model_selection.rst).
"""

import numpy as np
from sklearn.utils.validation import has_fit_parameter

from .._compat import _routing_enabled, process_routing
from ..accounting._shares import pipeline_steps
from ..linear_model._base import DPLinearModelMixin

__all__ = ["rows_of_params", "search_fit_params"]


def search_fit_params(search, params, n_rows):
    """The fit parameters of the candidate fits (all rows), checked (public checks: keys, shapes, ranges).

    Parameters
    ----------
    search : DPGridSearchCV or DPRandomizedSearchCV
    params : dict
        The ``**params`` of the search's fit.
    n_rows : int

    Returns
    -------
    dict
    """
    routed = _routing_enabled()
    if routed:
        # process_routing has checked that a consumer requests each key (for a DPPipeline: one of its
        # steps, which receives it by its plain name through the pipeline's own routing)
        params = dict(process_routing(search, "fit", **params).estimator.fit)
        if pipeline_steps(search.estimator) and params:
            # the pipeline's own routing to its steps, as each candidate fit will run it: an unrequested
            # key fails here, before the reservation, not in the first candidate fit
            process_routing(search.estimator, "fit", **params)
    for key, value in params.items():
        if not routed:
            _check_accepted(search.estimator, key)
        if key == "sample_weight" or key.endswith("__sample_weight"):
            # shape and range only (public checks); weights that are zero on a split's rows are fitted
            DPLinearModelMixin._check_sample_weight(value, n_rows)
    return params


def rows_of_params(params, rows, n_rows):
    """The parameters of a fit on ``rows``: per-row arrays indexed, anything else as given."""
    if rows is None:
        return params
    return {key: _index_rows(value, rows, n_rows) for key, value in params.items()}


def _index_rows(value, rows, n_rows):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != n_rows:
        return value
    return np.asarray(value)[rows]


def _check_accepted(estimator, key):
    """``key`` is a parameter of the estimator's fit (``<step>__<param>`` for a pipeline)."""
    steps = dict(pipeline_steps(estimator))
    if steps:
        step, sep, param = key.partition("__")
        if not sep or step not in steps:
            raise ValueError(
                f"fit parameter {key!r} must be of the form '<step>__<param>' with a step of "
                f"{type(estimator).__name__} ({', '.join(steps)}). Nothing was spent."
            )
        target, name = steps[step], param
    else:
        target, name = estimator, key
    if not has_fit_parameter(target, name):
        raise TypeError(
            f"{type(target).__name__}.fit has no parameter {name!r}; the search passes its fit parameters to "
            "every candidate fit. Nothing was spent."
        )
