"""T2 audit: private model selection over the user-level model, neighbours differing in one whole user.

End to end through the real code: ``DPGridSearchCV(UserLevelDPLogistic(solver="user_dp_sgd"),
{"fit_intercept": [True, False]}, cv=2).fit(X, y, groups=g)`` (user splits, candidate fits on the
users' rows, per-user-mean scores, exponential selection), on D and D' that differ in all rows of
one heavy user (doc/privacy/model_selection.rst, "User-level searches"). The release audited is
``best_index_``; the event "candidate 1 selected" is fixed in advance, and Clopper-Pearson bounds
at alpha = 1e-6 certify a lower bound on epsilon (at the search's delta), which must stay below the
search's epsilon.

Construction (X = 0, one column): candidate 1 (no intercept) predicts class 0 on every row
(decision exactly 0), candidate 0 learns the majority class of the users (90% of the light users
have label 1) and predicts 1. User 0 has 1000 rows (label 0 on D, 1 on D'), the 100 light users one
each. Per-user-mean scores see user 0 as one user of ~50 in its validation fold: the correct search
barely moves. Mutant (power): the validation score as the mean over validation *rows* (what the doc
explains "would not do"): user 0's rows then decide its fold, the selection is calibrated for one
user in 50, and the certified bound exceeds the search's epsilon.

The search's budget plan is a pure function of public facts (epsilon, delta, the number of
candidates, the split sizes), identical in every run; it is computed once and reused (it takes most
of a run's time).
"""

import time

import numpy as np
import pytest

from sklearn_dpsco import BudgetAccountant
from sklearn_dpsco.linear_model import UserLevelDPLogistic
from sklearn_dpsco.model_selection import DPGridSearchCV
from sklearn_dpsco.model_selection import _search, _units
from sklearn_dpsco.testing import epsilon_lower_bound_from_counts

pytestmark = pytest.mark.slow

N_SEARCHES = 300  # per side and per search
ALPHA = 1e-6
EPS, DELTA = 1.0, 1e-5
HEAVY_ROWS, N_LIGHT = 1000, 100


def _data(heavy_label):
    """User 0: HEAVY_ROWS rows of label ``heavy_label``; users 1..N_LIGHT: one row each, 90% label 1."""
    y_light = (np.arange(N_LIGHT) < 0.9 * N_LIGHT).astype(int)
    y = np.concatenate([np.full(HEAVY_ROWS, heavy_label), y_light])
    groups = np.concatenate([np.zeros(HEAVY_ROWS, dtype=int), np.arange(1, N_LIGHT + 1)])
    return np.zeros((y.size, 1)), y, groups


def _selected(heavy_label, seeds):
    X, y, groups = _data(heavy_label)
    out = []
    for seed in seeds:
        search = DPGridSearchCV(UserLevelDPLogistic(solver="user_dp_sgd"), {"fit_intercept": [True, False]},
                                epsilon=EPS, delta=DELTA, cv=2, refit=False, random_state=int(seed),
                                accountant=BudgetAccountant(np.inf, 1.0))
        search.fit(X, y, groups=groups)
        assert search.privacy_unit == "user" and search.epsilon_spent_ <= EPS * (1 + 1e-9)
        out.append(search.best_index_)
    return np.asarray(out)


def _lower_bound(seed):
    """max over both directions of the certified epsilon of the event "candidate 1 selected"."""
    rng = np.random.default_rng(seed)
    a = _selected(0, rng.integers(2**31, size=N_SEARCHES))
    b = _selected(1, rng.integers(2**31, size=N_SEARCHES))
    ka, kb = int(np.sum(a == 1)), int(np.sum(b == 1))
    up = epsilon_lower_bound_from_counts(ka, N_SEARCHES, kb, N_SEARCHES, delta=DELTA, alpha=ALPHA)
    down = epsilon_lower_bound_from_counts(kb, N_SEARCHES, ka, N_SEARCHES, delta=DELTA, alpha=ALPHA)
    return max(up, down), ka, kb


@pytest.fixture
def cached_plan(monkeypatch):
    """``plan_exponential`` memoised on its public arguments (the split sizes summarised by the row classes)."""
    real, cache = _search.plan_exponential, {}

    def plan(epsilon, delta, n_candidates, rows, selection_share, refit_share, kind="zcdp"):
        key = (epsilon, delta, n_candidates, repr(rows), selection_share, refit_share, kind)
        if key not in cache:
            cache[key] = real(epsilon, delta, n_candidates, rows, selection_share, refit_share, kind=kind)
        return cache[key]

    monkeypatch.setattr(_search, "plan_exponential", plan)


def _row_mean_score(self, scorer, estimator, X_test, y_test, test_rows):
    """Mutant: the mean over validation rows, whatever the users."""
    return scorer(estimator, X_test, y_test)


def test_t2_user_level_search_selection_audit_with_row_mean_mutant(monkeypatch, audit_report, cached_plan):
    t0 = time.perf_counter()
    lb, ka, kb = _lower_bound(0)
    assert lb <= EPS, (lb, ka, kb)
    with monkeypatch.context() as patch:
        patch.setattr(_units.SearchUnits, "score", _row_mean_score)
        lb_mutant, ka_m, kb_m = _lower_bound(1)
    assert lb_mutant > EPS, (lb_mutant, ka_m, kb_m)
    audit_report.record(
        group="Private model selection (user level)",
        name="DPGridSearchCV(UserLevelDPLogistic, groups) best_index_",
        params={"eps": EPS, "delta": DELTA, "users": N_LIGHT + 1, "heavy_rows": HEAVY_ROWS, "cv": 2},
        n_draws=N_SEARCHES, statistic="epsilon", claimed=EPS, lower_bound=lb,
        mutants={"row-mean score": (lb_mutant, None)}, seconds=time.perf_counter() - t0,
        note=f"candidate 1 selected: {ka}/{kb} of {N_SEARCHES} (D/D'); mutant {ka_m}/{kb_m}",
    )
