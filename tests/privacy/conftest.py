"""Fixtures shared by the privacy tests of the estimators' "auto" scales."""

import numpy as np
import pytest

from sklearn_dpsco._budget import Budget
from sklearn_dpsco.linear_model import _auto_scales
from sklearn_dpsco.testing import audit_epsilon


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


def _label_bound_draws(target, y, draws, seed, eps):
    """``draws`` released label bounds (log2) of ``target`` alone on the labels ``y`` (float noise path)."""
    plan = _auto_scales.ScalePlan((target,), Budget(eps, 0.0, "float"), 1.0)
    data = (np.zeros((y.size, 1)), [y], None)
    rng = np.random.default_rng(seed)
    return np.array([np.log2(plan.release(data, rng)[0]["label_bound"]) for _ in range(draws)])


@pytest.fixture
def vote_edge_audit():
    """``audit(target, mutant)``: worst-case neighbours at the tie vote's edge (D: n/2 labels at the centre 0 and n/2
    at 1, D' one more at 0); the released bound's law of ``target`` moves by at most e^epsilon, the ``mutant``'s is
    flagged (test_label_ties.py, test_label_upper.py)."""

    def audit(target, mutant, n=100, eps=0.5, draws=400):
        y = np.r_[np.zeros(n // 2), np.ones(n // 2)]
        y2 = y.copy()
        y2[-1] = 0.0
        for rule, flagged in ((target, False), (mutant, True)):
            result = audit_epsilon(_label_bound_draws(rule, y, draws, 0, eps),
                                   _label_bound_draws(rule, y2, draws, 10_000, eps), eps)
            assert result.violation == flagged, result

    return audit
