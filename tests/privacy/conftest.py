"""Fixtures shared by the privacy tests of the estimators' "auto" scales."""

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
