"""Default rules of the estimators: functions of public facts only, monotone where they must be."""

import inspect
import math

import numpy as np
import pytest

from sklearn_dpsco.linear_model import _hinge_rules as hinge

PUBLIC_NAMES = {"n", "d", "clip", "epsilon", "delta", "factor", "n_users", "m", "data_norm", "n_coef",
                "row_bound", "noise", "n_features"}


@pytest.mark.parametrize("rule", [hinge.default_alpha])
def test_rules_take_public_facts_only(rule):
    # no argument that could carry data: every parameter is a named public scalar
    assert set(inspect.signature(rule).parameters) <= PUBLIC_NAMES


def test_hinge_alpha_formula_and_cap():
    # pure DP: min(50 clip^2 / (n eps), clip^2 / d)
    assert hinge.default_alpha(10_000, 11, 1.0, 1.0, 0.0) == pytest.approx(50.0 / 10_000)
    assert hinge.default_alpha(100, 11, 1.0, 0.5, 0.0) == pytest.approx(1.0 / 11)  # capped
    assert hinge.default_alpha(10_000, 11, 3.0, 1.0, 0.0) == pytest.approx(9 * 50.0 / 10_000)
    # the first-phase rule on n/2 rows equals output perturbation's on n rows
    assert hinge.default_alpha(5000, 11, 1.0, 1.0, 0.0, factor=hinge.PHASE1_ALPHA_FACTOR) == pytest.approx(
        hinge.default_alpha(10_000, 11, 1.0, 1.0, 0.0))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_hinge_alpha_monotone(delta):
    ns = np.geomspace(50, 1e7, 30)
    for d in (2, 4, 11, 31, 101):
        a = [hinge.default_alpha(int(n), d, 1.0, 1.0, delta) for n in ns]
        assert all(x >= y for x, y in zip(a, a[1:])), "alpha must not grow with n"
        a = [hinge.default_alpha(5000, d, 1.0, e, delta) for e in np.geomspace(0.05, 20, 30)]
        assert all(x >= y for x, y in zip(a, a[1:])), "alpha must not grow with epsilon"
        a = [hinge.default_alpha(5000, d, c, 1.0, delta) for c in np.geomspace(0.01, 100, 30)]
        assert all(x < y for x, y in zip(a, a[1:])), "alpha grows with the declared scale"
        assert all(0 < hinge.default_alpha(int(n), d, 1.0, 1.0, delta) <= 1.0 / d + 1e-15 for n in ns)


def test_hinge_alpha_finite_at_extremes():
    for args in [(1, 1, 1e-8, 1e-6, 0.0), (10**12, 1000, 1e8, 100.0, 0.0), (10**9, 3, 1.0, 1e-3, 1e-9)]:
        assert math.isfinite(hinge.default_alpha(*args)) and hinge.default_alpha(*args) > 0
