"""Differentially private convex learning as scikit-learn estimators.

Public names only; see the API reference (doc/api.rst).
"""

from .accounting import BudgetAccountant, BudgetExceededError, budget
from .linear_model import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from .model_selection import DPGridSearchCV, DPRandomizedSearchCV
from .preprocessing import DPPipeline, DPStandardScaler, RowNormClipper, make_dp_pipeline
from ._privacy_report import privacy_report

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "DPGridSearchCV",
    "DPGrowthAdaptiveRegressor",
    "DPHingeClassifier",
    "DPLinearRegressor",
    "DPPipeline",
    "DPRandomizedSearchCV",
    "DPStandardScaler",
    "RowNormClipper",
    "UserLevelDPLogistic",
    "__version__",
    "budget",
    "make_dp_pipeline",
    "privacy_report",
]
