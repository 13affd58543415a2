"""Every import of private scikit-learn API lives here (doc/design.rst, convention 7).

Tested against scikit-learn 1.6 (oldest supported) to 1.9 (current). If a
future release moves one of these, this is the only file to change.
"""

from sklearn.base import _fit_context  # noqa: F401  (private in every release so far)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions  # noqa: F401
from sklearn.pipeline import _name_estimators  # noqa: F401  (make_pipeline's step naming)
from sklearn.utils.validation import validate_data  # noqa: F401  (public since 1.6)
from sklearn.utils.metadata_routing import _routing_enabled, process_routing  # noqa: F401
from sklearn.utils.validation import _check_feature_names, _check_n_features  # noqa: F401  (validate_data's parts)
from sklearn.utils._set_output import _get_output_config, _wrap_data_with_container  # noqa: F401  (set_output's)

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "_check_feature_names",
    "_check_n_features",
    "_fit_context",
    "_get_output_config",
    "_name_estimators",
    "_routing_enabled",
    "_wrap_data_with_container",
    "process_routing",
    "validate_data",
]
