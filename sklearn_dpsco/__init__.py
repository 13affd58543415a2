"""Differentially private convex learning as scikit-learn estimators.

Public names only; see the API reference (doc/api.rst).
"""

from .accounting import BudgetAccountant, BudgetExceededError
from .linear_model import DPHingeClassifier, DPLinearRegressor

__version__ = "0.1.0.dev0"

__all__ = ["BudgetAccountant", "BudgetExceededError", "DPHingeClassifier", "DPLinearRegressor", "__version__"]
