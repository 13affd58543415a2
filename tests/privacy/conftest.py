"""Fixtures shared by the privacy tests of the estimators' "auto" scales."""

import numpy as np
import pytest

from sklearn_dpsco.linear_model import _auto_scales


@pytest.fixture
def releases(monkeypatch):
    """Records every scale release (the only place an estimate reads the data)."""
    seen = []
    original = _auto_scales.ScalePlan.release

    def spy(self, data, rng):
        seen.append(len(self.targets))
        return original(self, data, rng)

    monkeypatch.setattr(_auto_scales.ScalePlan, "release", spy)
    return seen


def _tie_vote_deviations(data, released):
    """Mutant label deviations: ``|y - c|`` with the ties at the centre sent to +inf by a data-dependent vote
    (when most labels are ties); one more tie moves every tie, so a release of these is not private."""
    deviations = np.abs(data[1][0] - released.get("label_center", 0.0))
    ties = deviations == 0.0
    if ties.mean() > 0.5:
        deviations[ties] = np.inf
    return deviations


@pytest.fixture
def tie_vote_rule():
    """The vote mutant of the label deviations (test_label_ties.py, test_label_upper.py)."""
    return _tie_vote_deviations
