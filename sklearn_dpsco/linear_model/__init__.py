"""Private linear models."""

from ._hinge import DPHingeClassifier
from ._least_squares import DPLinearRegressor

__all__ = ["DPHingeClassifier", "DPLinearRegressor"]
