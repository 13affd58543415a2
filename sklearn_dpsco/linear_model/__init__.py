"""Private linear models."""

from ._hinge import DPHingeClassifier
from ._user_logistic import UserLevelDPLogistic

__all__ = ["DPHingeClassifier", "UserLevelDPLogistic"]
