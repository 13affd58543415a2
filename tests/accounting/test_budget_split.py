"""The library's one budget split (accounting/_shares.py::split_by_weights) and its call sites.

Every rule is checked through the events of REAL mechanisms calibrated at the shares: a K-way split
composes (``epsilon_delta`` of the composed events) to at most (epsilon, delta) and within 1e-6
relative of it. A split that used the wrong rule for a noise path (e.g. Gaussian-DP shares for
secure zCDP-calibrated noise) composes above epsilon or far below it, and fails here.
"""

import math

import numpy as np
import pytest

from sklearn_dpsco._mechanisms import GaussianMechanism, L2LaplaceMechanism
from sklearn_dpsco._solvers._adassp import adassp_plan
from sklearn_dpsco._solvers._lowy import split_two_stages
from sklearn_dpsco.accounting import ApproxDPEvent, ComposedEvent, epsilon_delta
from sklearn_dpsco.accounting._shares import split_budget, split_by_weights, split_kind

EPS, DELTA = 1.3, 1e-6


def _event(kind, eps_i, delta_i):
    """The event of a real mechanism calibrated at one share of ``kind``."""
    if kind == "pure":
        return L2LaplaceMechanism(1.0, eps_i, 3, noise="secure").event
    if kind == "gaussian":
        return GaussianMechanism(1.0, eps_i, delta_i, 3, noise="float").event
    if kind == "zcdp":
        return GaussianMechanism(1.0, eps_i, delta_i, 3, noise="secure").event
    return ApproxDPEvent(eps_i, delta_i)


def _check_tight(event, epsilon, delta):
    eps, d = epsilon_delta(event, delta=delta if delta > 0 else None)
    assert eps <= epsilon and d <= delta
    assert eps >= epsilon * (1 - 1e-6), (eps, epsilon)


@pytest.mark.parametrize("kind", ["pure", "gaussian", "zcdp", "basic"])
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_equal_split_composes_to_the_budget(kind, parts):
    delta = 0.0 if kind == "pure" else DELTA
    eps_i, delta_i = split_budget(EPS, delta, parts, kind)
    _check_tight(ComposedEvent(tuple(_event(kind, eps_i, delta_i) for _ in range(parts))), EPS, delta)


@pytest.mark.parametrize("kind", ["pure", "gaussian", "zcdp", "basic"])
def test_weighted_split_composes_to_the_budget(kind):
    delta = 0.0 if kind == "pure" else DELTA
    weights = (0.1, 0.5, 0.4)
    shares = split_by_weights(EPS, delta, weights, None if kind == "pure" else [kind] * 3)
    _check_tight(ComposedEvent(tuple(_event(kind, s.epsilon, s.delta) for s in shares)), EPS, delta)
    # proportional: the pure shares follow the weights exactly
    if kind == "pure":
        np.testing.assert_allclose([s.epsilon for s in shares], [EPS * w for w in weights])


def test_wrong_rule_for_the_noise_path_is_caught():
    """Mutants: a split by another path's rule does not compose to the budget (the tightness check fails)."""
    for share_kind, spend_kind in (("gaussian", "zcdp"), ("zcdp", "gaussian"), ("basic", "zcdp"), ("basic", "gaussian")):
        eps_i, delta_i = split_budget(EPS, DELTA, 3, share_kind)
        got = epsilon_delta(ComposedEvent(tuple(_event(spend_kind, eps_i, delta_i) for _ in range(3))), DELTA)[0]
        assert abs(got - EPS) > 1e-4 * EPS, (share_kind, spend_kind, got)


def test_split_kind_follows_the_noise_path():
    assert split_kind(0.0, "secure") == split_kind(0.0, "float") == "pure"
    assert split_kind(1e-6, "secure") == "zcdp"
    assert split_kind(1e-6, "float") == "gaussian"
    with pytest.raises(ValueError, match="noise"):
        split_kind(1e-6, "exact")


def test_mixed_kinds_and_bad_input():
    # a float-Gaussian part next to secure parts is read through its zCDP reading
    shares = split_by_weights(EPS, DELTA, (1.0, 2.0), ["gaussian", "zcdp"])
    events = (_event("gaussian", shares[0].epsilon, DELTA), _event("zcdp", shares[1].epsilon, DELTA))
    assert epsilon_delta(ComposedEvent(events), DELTA)[0] <= EPS
    with pytest.raises(ValueError, match="basic"):
        split_by_weights(EPS, DELTA, (1.0, 1.0), ["basic", "zcdp"])
    with pytest.raises(ValueError, match="weights"):
        split_by_weights(EPS, DELTA, (1.0, 0.0))
    with pytest.raises(ValueError, match="parts"):
        split_budget(EPS, DELTA, 0, "zcdp")
    assert split_budget(EPS, DELTA, 1, "zcdp") == (EPS, DELTA)  # one part: nothing composes


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_call_sites_use_the_split_of_their_noise_path(noise, delta):
    """Lowy's two stages and AdaSSP's three releases compose to their budget on both noise paths."""
    (e1, d1), (e2, d2) = split_two_stages(EPS, delta, 0.3, noise)
    kind = split_kind(delta, noise)
    _check_tight(ComposedEvent((_event(kind, e1, d1), _event(kind, e2, d2))), EPS, delta)
    plan = adassp_plan(500, 4, epsilon=EPS, delta=delta, row_bound=1.0, label_bound=1.0, noise=noise)
    _check_tight(plan.event, EPS, delta)
    assert math.isfinite(plan.t_min)
