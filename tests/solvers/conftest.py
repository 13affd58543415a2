"""Fixtures shared by the tests of AdaSSP's private ridge choice (test_adassp_selection.py), of the AdaSSP /
Phased-ERM choice (test_adassp_phased_choice.py) and of the two-candidate guard (test_adassp_guard.py) that reuse it."""

from functools import partial

import numpy as np
import pytest

from sklearn_dpsco._solvers import ArraySource
from sklearn_dpsco._solvers._adassp import _selection_block
from sklearn_dpsco._solvers._adassp_selection import QUANT


def _utilities(plan, X, y, w, thetas):
    src = ArraySource(np.asarray(X, float), np.asarray(y, float), None if w is None else np.asarray(w, float))
    return plan.selection.utilities(src, partial(_selection_block, plan), thetas)


@pytest.fixture
def selection_utilities():
    """``utilities(plan, X, y, w, thetas)``: the choice's scores of the candidates ``thetas`` on the rows
    ``(X, y, w)``, read through the plan's own clipped blocks (as the fit reads them)."""
    return _utilities


@pytest.fixture
def check_worst_pair():
    """``check(plan, thetas, X, y, y2)``: the neighbours ``(X, y)`` and ``(X, y2)`` (one label swapped between the
    two candidates' predictions) move BOTH candidates' utilities by exactly QUANT: the sensitivity is attained."""

    def check(plan, thetas, X, y, y2):
        u1, u2 = _utilities(plan, X, y, None, thetas), _utilities(plan, X, y2, None, thetas)
        assert [abs(a - b) for a, b in zip(u1, u2)] == [QUANT, QUANT]

    return check


@pytest.fixture
def check_random_neighbours():
    """``check(plan, rng, candidates)``: 200 random datasets of 40 rows (norms up to 1e6, labels up to 1e9, with and
    without weights), each with a neighbour whose one row is replaced by an adversarial one (norm up to 1e8, label up
    to 1e12); ``candidates(rng)`` draws the candidate models after the rows (releases: fixed before the scores). Every
    utility moves by at most QUANT between neighbours and lies in ``[-n QUANT, 0]``."""

    def check(plan, rng, candidates):
        for trial in range(200):
            n = 40
            X = rng.standard_normal((n, 3)) * rng.choice([0.1, 1.0, 1e6], (n, 1))
            y = rng.standard_normal(n) * rng.choice([0.5, 5.0, 1e9])
            w = rng.uniform(0, 1, n) if trial % 2 else None
            thetas = candidates(rng)
            Xp, yp = X.copy(), y.copy()
            i = rng.integers(n)
            Xp[i] = rng.standard_normal(3) * rng.choice([1.0, 1e8])
            yp[i] = rng.standard_normal() * rng.choice([1.0, 1e12])
            wp = None if w is None else w.copy()
            if wp is not None:
                wp[i] = rng.uniform()
            u1, u2 = _utilities(plan, X, y, w, thetas), _utilities(plan, Xp, yp, wp, thetas)
            assert all(abs(a - b) <= QUANT for a, b in zip(u1, u2))
            assert all(-n * QUANT <= u <= 0 for u in u1)

    return check
