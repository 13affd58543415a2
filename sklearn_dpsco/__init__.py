"""Differentially private convex learning as scikit-learn estimators."""

__version__ = "0.1.0.dev0"

from .accounting import BudgetAccountant, BudgetExceededError, budget
from .model_selection import DPGridSearchCV, DPRandomizedSearchCV
from .preprocessing import DPPipeline, DPStandardScaler, RowNormClipper, make_dp_pipeline

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "DPGridSearchCV",
    "DPPipeline",
    "DPRandomizedSearchCV",
    "DPStandardScaler",
    "RowNormClipper",
    "budget",
    "make_dp_pipeline",
]
