"""Private linear models."""

from ._growth import DPGrowthAdaptiveRegressor
from ._hinge import DPHingeClassifier
from ._least_squares import DPLinearRegressor
from ._user_logistic import UserLevelDPLogistic

__all__ = ["DPGrowthAdaptiveRegressor", "DPHingeClassifier", "DPLinearRegressor", "UserLevelDPLogistic"]
