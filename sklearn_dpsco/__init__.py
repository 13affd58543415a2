"""Differentially private convex learning as scikit-learn estimators."""

__version__ = "0.1.0.dev0"
