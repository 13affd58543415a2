"""Private linear models."""

from ._hinge import DPHingeClassifier

__all__ = ["DPHingeClassifier"]
