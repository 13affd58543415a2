"""GKKMMZ user-level solvers: public schedules, composition, batches, ⊥ handling, refusals."""

import math

import numpy as np
import pytest

from sklearn_dpsco._solvers._user_level import _gkkmmz as _user_level
from sklearn_dpsco._solvers._user_level._deletion import deletion_budget
from sklearn_dpsco._solvers._core._user_data import make_user_data
from sklearn_dpsco._solvers._user_level._gkkmmz import GKKMMZ_SOLVERS, run_user_level, user_level_schedule
from sklearn_dpsco.accounting import ComposedEvent, ParallelComposedEvent, epsilon_delta

BIG = dict(epsilon=8.0, delta=1e-2)  # small k: schedules stay feasible with a few hundred users


def _data(n, m, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n * m, d)) / math.sqrt(d)
    y = np.where(rng.random(n * m) < 1 / (1 + np.exp(-2 * X[:, 0])), 1.0, -1.0)
    return make_user_data(X, y, np.repeat(np.arange(n), m), max_items=m, data_norm=1.0)


def _schedule(solver, n, m=4, p=3, **kw):
    args = dict(data_norm=1.0, alpha=0.1, radius=5.0, **BIG)
    args.update(kw)
    return user_level_schedule(solver, n, m, p, **args)


@pytest.mark.parametrize("solver", GKKMMZ_SOLVERS)
def test_schedules_spend_exactly_the_budget(solver):
    sched = _schedule(solver, 600)
    eps, delta = epsilon_delta(sched.event)
    assert eps <= BIG["epsilon"] * (1 + 1e-9) and eps >= 0.99 * BIG["epsilon"]
    assert delta <= BIG["delta"]


def test_phased_erm_schedule():
    n, m = 600, 4
    sched = _schedule("phased_erm", n, m)
    T = 1 + math.ceil(math.log(n * math.sqrt(m), 4))
    assert sched.info["phases"] == T
    lams = sched.info["lambdas"]
    np.testing.assert_allclose(np.array(lams[1:]) / np.array(lams[:-1]), 4.0)
    assert isinstance(sched.event, ComposedEvent) and len(sched.event.events) == T
    for ph in sched.stages[0].phases:  # every phase on all users at (eps/T, delta/T)
        assert ph.plan.n_users == n
        assert ph.plan.event.epsilon == pytest.approx(BIG["epsilon"] / T)
    # lam_1: the first phase's noise is sigma_1 = D / (sqrt(16/3) sqrt(d)) (G-Alg 3)
    assert sched.stages[0].phases[0].plan.sigma == pytest.approx(10.0 / (math.sqrt(16 / 3) * math.sqrt(3)),
                                                                 rel=1e-6)


def test_phased_sco_schedule_uses_disjoint_halving_batches():
    n = 1000
    sched = _schedule("phased_sco", n)
    n_min = deletion_budget(BIG["epsilon"], BIG["delta"], 0.75).min_users
    T = max(1, int(math.floor(math.log2(n / n_min))))
    assert sched.info["batches"] == [n // 2**i for i in range(1, T + 1)]
    assert sum(sched.info["batches"]) <= n
    lams = sched.info["lambdas"]
    np.testing.assert_allclose(np.array(lams[1:]) / np.array(lams[:-1]), 8.0)
    assert isinstance(sched.event, ParallelComposedEvent)
    assert epsilon_delta(sched.event)[0] == pytest.approx(epsilon_delta(sched.event.events[0])[0])


@pytest.mark.parametrize("solver", ["phased_sco", "sc_sco_two_step", "phased_erm", "sc_output_pert"])
def test_calls_see_the_planned_users(monkeypatch, solver):
    calls = []
    real = _user_level.run_deletion_mechanism

    def spy(data, plan, rng, *, lam, center, users=None, n_jobs=None):
        calls.append((np.asarray(users).copy(), plan.n_users))
        return real(data, plan, rng, lam=lam, center=center, users=users, n_jobs=n_jobs)

    monkeypatch.setattr(_user_level, "run_deletion_mechanism", spy)
    n = 1000
    sched = _schedule(solver, n)
    coef, _ = run_user_level(_data(n, 4), sched, np.random.default_rng(0))
    assert np.linalg.norm(coef) <= sched.radius + 1e-9
    for users, planned in calls:
        assert len(users) == planned and np.all(np.diff(users) > 0)
    if solver in ("phased_sco", "sc_sco_two_step"):
        seen = np.concatenate([u for u, _ in calls])
        assert np.unique(seen).size == seen.size  # disjoint batches (and halves)
    else:
        assert all(len(u) == n for u, _ in calls)


def test_bottom_keeps_the_previous_iterate(monkeypatch):
    monkeypatch.setattr(_user_level, "run_deletion_mechanism", lambda *a, **k: None)
    sched = _schedule("phased_erm", 600)
    coef, bottoms = run_user_level(_data(600, 4), sched, np.random.default_rng(0))
    np.testing.assert_array_equal(coef, np.zeros(3))
    assert bottoms == sched.info["phases"]


@pytest.mark.parametrize("solver", GKKMMZ_SOLVERS)
def test_too_few_users_is_refused_from_public_facts(solver):
    with pytest.raises(ValueError, match="users") as err:
        _schedule(solver, 30, epsilon=1.0, delta=1e-6)
    assert "Nothing was spent" in str(err.value)


def test_schedules_do_not_depend_on_data():
    """The schedule is a function of public facts; two datasets of the same shape get the same run
    structure (batches, lambdas, events)."""
    a, b = _schedule("sc_sco_two_step", 1000), _schedule("sc_sco_two_step", 1000)
    assert a.info == b.info and a.event == b.event
