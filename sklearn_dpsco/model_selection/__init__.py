"""Private model selection: hyperparameter search under one total budget.

See doc/privacy/model_selection.rst.
"""

from ._search import DPGridSearchCV, DPRandomizedSearchCV
from ._selection import ExponentialMechanism, RandomStopping

__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV", "ExponentialMechanism", "RandomStopping"]
