"""Private linear models."""

from ._growth import DPGrowthAdaptiveRegressor
from ._hinge import DPHingeClassifier

__all__ = ["DPGrowthAdaptiveRegressor", "DPHingeClassifier"]
