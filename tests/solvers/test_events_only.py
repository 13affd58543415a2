"""The budget fill's events-only candidates (speed only): the same events, errors and plans as the built plans.

``SolverSpec.build_event`` (``ald_growth_event``), ``gaussian_event`` and ``fit_profile`` stand in for the built
plan's event, ``GaussianMechanism(...).event`` and ``profile_of(fit_event(...))`` inside ``fill_budget``; these
tests check the equality the fill relies on (linear_model/_auto_scales.py).
"""

import numpy as np
import pytest

from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._additive import GaussianMechanism, gaussian_event
from sklearn_dpsco._solvers._builders._growth import ald_growth, ald_growth_event
from sklearn_dpsco.accounting import ComposedEvent, PureDPEvent, ZCDPEvent
from sklearn_dpsco.accounting._composition import profile_of
from sklearn_dpsco.linear_model import DPGrowthAdaptiveRegressor
from sklearn_dpsco.linear_model._auto_scales import fit_event, fit_profile


def _outcome(f):
    try:
        return f()
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("schedule", ["practical", "paper"])
@pytest.mark.parametrize("noise", ["secure", "float"])
def test_growth_event_matches_plan(schedule, noise):
    rng = np.random.default_rng(3)
    for _ in range(25):
        n, d = int(rng.integers(5, 10**7)), int(rng.integers(1, 60))
        epsilon, delta = float(rng.uniform(0.01, 5.0)), float(10 ** rng.uniform(-12, -1))
        est = DPGrowthAdaptiveRegressor(epsilon=epsilon, delta=delta, schedule=schedule,
                                        kappa_lower=float(rng.uniform(1.05, 6.0)))
        params = est._params(float(rng.uniform(0.05, 30.0)))
        budget = Budget(epsilon, delta if rng.uniform() < 0.8 else 0.0, noise)
        planned = _outcome(lambda: ald_growth(n, d, budget, params).event)
        assert _outcome(lambda: ald_growth_event(n, d, budget, params)) == planned


@pytest.mark.parametrize("noise,calibration", [("secure", None), ("secure", "zcdp"), ("float", None),
                                               ("float", "analytic"), ("float", "classic"), ("float", "zcdp"),
                                               ("secure", "analytic")])
def test_gaussian_event_matches_mechanism(noise, calibration):
    rng = np.random.default_rng(4)
    for sensitivity in [0.0, 1e-300, 1e-12, *rng.uniform(1e-6, 10.0, size=8), 1e200, -1.0]:
        epsilon = float(rng.uniform(0.05, 0.99))
        for delta in (1e-9, 1e-6, 0.0):
            args = (float(sensitivity), epsilon, delta, int(rng.integers(1, 40)))
            expected = _outcome(lambda: GaussianMechanism(*args, calibration=calibration, noise=noise).event)
            assert _outcome(lambda: gaussian_event(*args, noise=noise, calibration=calibration)) == expected


class _Part:
    def __init__(self, event):
        self.event = event


@pytest.mark.parametrize("n_problems", [1, 3])
def test_fit_profile_matches_fit_event(n_problems):
    rng = np.random.default_rng(5)
    columns = _Part(ComposedEvent(tuple(PureDPEvent(float(e)) for e in rng.uniform(1e-4, 1e-2, 40))))
    scales = _Part(ComposedEvent((PureDPEvent(0.01175), PureDPEvent(0.0235), PureDPEvent(0.01175))))
    for solver in (ZCDPEvent(0.0238967), PureDPEvent(0.9), ComposedEvent((ZCDPEvent(0.01), PureDPEvent(0.1)))):
        for s, c in ((None, None), (scales, None), (None, columns), (scales, columns)):
            expected = profile_of(fit_event(s, solver, n_problems, c))
            got = fit_profile(None if s is None else profile_of(s.event), profile_of(solver), n_problems,
                              None if c is None else profile_of(c.event))
            assert got == expected


def test_fill_keeps_the_plan():
    """The growth fill with events-only candidates returns the plan the built candidates gave."""
    from sklearn_dpsco.linear_model import _growth

    X = np.random.default_rng(6).standard_normal((3000, 4))
    y = X @ np.ones(4)
    for delta in (1e-6, 1e-9):
        est = DPGrowthAdaptiveRegressor(epsilon=1.0, delta=delta, random_state=0)
        inputs = est._validate_fit_inputs(X, y)
        fast = est._plan_fit(inputs)
        spec = _growth.get_solver("growth", "ald_growth")
        try:
            object.__setattr__(spec, "build_event", None)
            slow = est._plan_fit(inputs)
        finally:
            object.__setattr__(spec, "build_event", ald_growth_event)
        assert fast[1] == slow[1]
        assert fast[0].plan.schedule.info == slow[0].plan.schedule.info
