"""T0: events, composition rules and the BudgetAccountant ledger semantics."""

import copy
import math
import multiprocessing as mp
import pickle
import threading

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

import sklearn_dpsco
from sklearn_dpsco.accounting import (
    ApproxDPEvent,
    BudgetAccountant,
    BudgetExceededError,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PureDPEvent,
    SelfComposedEvent,
    ZCDPEvent,
    epsilon_delta,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    profile_of,
    zcdp_epsilon,
)
from sklearn_dpsco.accounting._events import event_from_dict, event_to_dict
from sklearn_dpsco.testing._workers import spend_repeatedly


# ------------------------------------------------------------------ events
def test_events_are_frozen():
    e = PureDPEvent(1.0)
    with pytest.raises(AttributeError):
        e.epsilon = 2.0


@pytest.mark.parametrize("make, name", [
    (lambda: PureDPEvent(-1.0), "epsilon"),
    (lambda: PureDPEvent(math.inf), "epsilon"),
    (lambda: ApproxDPEvent(1.0, 1.0), "delta"),
    (lambda: ApproxDPEvent(1.0, -1e-9), "delta"),
    (lambda: GaussianEvent(-1.0, 1.0), "sensitivity"),
    (lambda: GaussianEvent(1.0, 0.0), "sigma"),
    (lambda: ZCDPEvent(-0.1), "rho"),
    (lambda: LaplaceEvent(1.0, 1.0, "l3"), "norm"),
    (lambda: SelfComposedEvent(PureDPEvent(1.0), -1), "count"),
])
def test_event_validation_names_parameter(make, name):
    with pytest.raises((ValueError, TypeError), match=name):
        make()


def test_event_roundtrip_dict():
    e = ComposedEvent((
        PureDPEvent(0.5),
        SelfComposedEvent(GaussianEvent(1.0, 3.0), 4),
        ParallelComposedEvent((LaplaceEvent(2.0, 4.0, "l2"), ApproxDPEvent(0.3, 1e-6))),
        ZCDPEvent(0.01),
    ))
    assert event_from_dict(event_to_dict(e)) == e


# ------------------------------------------------------------------ composition
def test_basic_composition_of_pure_and_approx():
    e = ComposedEvent((PureDPEvent(0.5), LaplaceEvent(1.0, 4.0), ApproxDPEvent(0.2, 1e-6)))
    assert epsilon_delta(e) == pytest.approx((0.95, 1e-6))


def test_self_composition_multiplies():
    assert epsilon_delta(SelfComposedEvent(PureDPEvent(0.1), 7)) == pytest.approx((0.7, 0.0))


def test_parallel_composition_is_max():
    e = ParallelComposedEvent((PureDPEvent(0.3), PureDPEvent(1.0), PureDPEvent(0.7)))
    assert epsilon_delta(e) == pytest.approx((1.0, 0.0))


def test_gaussian_composition_is_exact_gdp():
    # k Gaussians of mu each compose to one Gaussian with mu*sqrt(k) (Dong, Roth, Su 2019)
    g = GaussianEvent(1.0, 4.0)
    eps, delta = epsilon_delta(SelfComposedEvent(g, 9), delta=1e-5)
    assert eps == pytest.approx(gaussian_epsilon(3 * 0.25, 1e-5), rel=1e-9)


def test_gaussian_calibrated_event_reports_its_target():
    sigma = gaussian_sigma_analytic(2.0, 0.8, 1e-6)
    eps, _ = epsilon_delta(GaussianEvent(2.0, sigma), delta=1e-6)
    assert eps == pytest.approx(0.8, rel=1e-8)


def test_zcdp_and_gaussian_mix_uses_zcdp():
    e = ComposedEvent((ZCDPEvent(0.05), GaussianEvent(1.0, 10.0)))
    eps, _ = epsilon_delta(e, delta=1e-6)
    assert eps == pytest.approx(zcdp_epsilon(0.05 + 0.01 / 2, 1e-6))


def test_pure_folded_into_zcdp_when_better():
    # many small pure spends: the zCDP reading (sum eps^2/2) beats basic composition
    e = SelfComposedEvent(PureDPEvent(0.01), 10000)
    eps_basic, _ = epsilon_delta(e)
    assert eps_basic == pytest.approx(100.0)
    composed = ComposedEvent((e, GaussianEvent(1.0, 1000.0)))
    eps_mixed, _ = epsilon_delta(composed, delta=1e-6)
    assert eps_mixed < 10.0  # sqrt-type growth, not linear


def test_delta_required_for_curves():
    with pytest.raises(ValueError, match="delta"):
        epsilon_delta(GaussianEvent(1.0, 1.0))


# ------------------------------------------------------------------ accountant
def test_overspend_raises_and_spends_nothing():
    acc = BudgetAccountant(1.0)
    acc.spend(PureDPEvent(0.7), label="a")
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        acc.spend(PureDPEvent(0.31))
    assert len(acc.ledger) == 1
    assert acc.total() == pytest.approx((0.7, 0.0))
    acc.spend(PureDPEvent(0.3))  # exactly reaching the ceiling is allowed
    assert acc.remaining()[0] == pytest.approx(0.0, abs=1e-12)


def test_check_does_not_spend():
    acc = BudgetAccountant(1.0)
    acc.check(PureDPEvent(1.0))
    assert acc.ledger == ()
    with pytest.raises(BudgetExceededError):
        acc.check(PureDPEvent(1.5))


def test_pure_only_accountant_refuses_gaussian_with_hint():
    acc = BudgetAccountant(5.0)  # delta ceiling 0
    with pytest.raises(BudgetExceededError, match="pure DP only"):
        acc.spend(GaussianEvent(1.0, 10.0))


def test_delta_ceiling():
    acc = BudgetAccountant(10.0, 1e-6)
    acc.spend(ApproxDPEvent(0.1, 6e-7))
    with pytest.raises(BudgetExceededError):
        acc.spend(ApproxDPEvent(0.1, 6e-7))


def test_gaussian_spends_compose_at_ceiling_delta():
    acc = BudgetAccountant(2.0, 1e-5)
    sigma = gaussian_sigma_analytic(1.0, 1.0, 1e-5)
    acc.spend(GaussianEvent(1.0, sigma))
    eps, delta = acc.total()
    assert delta == 1e-5 and eps == pytest.approx(1.0, rel=1e-8)
    acc.spend(GaussianEvent(1.0, sigma))
    # two Gaussians of mu compose to sqrt(2) mu, cheaper than 2 epsilon
    assert 1.0 < acc.total()[0] < 2.0
    assert acc.total()[0] == pytest.approx(gaussian_epsilon(math.sqrt(2) / sigma, 1e-5))


def test_bad_ceiling():
    with pytest.raises(ValueError, match="epsilon"):
        BudgetAccountant(-1.0)
    with pytest.raises(ValueError, match="delta"):
        BudgetAccountant(1.0, 1.5)
    with pytest.raises(ValueError, match="delta ceiling 1"):
        BudgetAccountant(1.0, 1.0)


def test_copy_deepcopy_clone_share_one_ledger():
    acc = BudgetAccountant(1.0)
    assert copy.copy(acc) is acc
    assert copy.deepcopy(acc) is acc
    assert copy.deepcopy({"a": acc})["a"] is acc

    class Holder(BaseEstimator):
        def __init__(self, accountant=None):
            self.accountant = accountant

    assert clone(Holder(accountant=acc)).accountant is acc
    # the docs say sklearn.base.clone returns the same object: clone(acc) itself used to raise TypeError
    # ("it does not seem to be a scikit-learn estimator"); now also for an allowance and a block's ledger
    assert clone(acc) is acc
    with sklearn_dpsco.budget(epsilon=1.0) as block:
        assert clone(block) is block


def test_threads_never_exceed_ceiling():
    acc = BudgetAccountant(1.0)
    barrier = threading.Barrier(16)
    refused = []

    def worker():
        barrier.wait()
        for _ in range(50):
            try:
                acc.spend(PureDPEvent(0.01))
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acc.ledger) == 100
    assert len(refused) == 16 * 50 - 100
    assert acc.total()[0] == pytest.approx(1.0)


# ------------------------------------------------------------------ SQLite ledger
def test_sqlite_ledger_persists_and_pickles(tmp_path):
    path = tmp_path / "ledger.sqlite"
    acc = BudgetAccountant(1.0, 1e-6, path=path)
    acc.spend(PureDPEvent(0.25), label="fit 1")
    clone_ = pickle.loads(pickle.dumps(acc))
    clone_.spend(PureDPEvent(0.25), label="fit 2")
    reopened = BudgetAccountant(1.0, 1e-6, path=path)
    assert [e.label for e in reopened.ledger] == ["fit 1", "fit 2"]
    assert acc.total() == pytest.approx((0.5, 0.0))


def test_sqlite_ceiling_mismatch(tmp_path):
    path = tmp_path / "ledger.sqlite"
    BudgetAccountant(1.0, path=path)
    with pytest.raises(ValueError, match="ceiling"):
        BudgetAccountant(2.0, path=path)


def test_sqlite_ceiling_holds_across_processes(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    BudgetAccountant(1.0, 0.0, path=path)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=spend_repeatedly, args=(path, 1.0, 40, 0.01, q)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    total_ok = sum(q.get(timeout=5) for _ in procs)
    acc = BudgetAccountant(1.0, 0.0, path=path)
    assert total_ok == len(acc.ledger) == 100
    assert acc.total()[0] == pytest.approx(1.0)


def test_profile_of_parallel_then_sequential_is_sound():
    # disjoint blocks, then a further spend on all data
    par = ParallelComposedEvent((PureDPEvent(1.0), GaussianEvent(1.0, 2.0)))
    prof = profile_of(ComposedEvent((par, PureDPEvent(0.5))))
    assert prof.pure_eps == pytest.approx(1.5)
    assert prof.gauss_mu2 == pytest.approx(0.25)


def test_privacy_profile_arithmetic_covers_every_field():
    """The spelled-out sum, scaling and maximum are the field-by-field ones over ``fields()``."""
    from dataclasses import fields

    from sklearn_dpsco.accounting._composition import PrivacyProfile

    names = [f.name for f in fields(PrivacyProfile)]
    a = PrivacyProfile(*[0.1 * (i + 1) for i in range(len(names))])
    b = PrivacyProfile(*[0.7 / (i + 1) for i in range(len(names))])
    for got, op in [(a + b, lambda x, y: x + y), (a.maximum(b), max), (a.scaled(3), lambda x, _: 3 * x)]:
        assert [getattr(got, n) for n in names] == [op(getattr(a, n), getattr(b, n)) for n in names]


def test_composed_profile_equals_the_profile_by_profile_sum():
    """profile_of(ComposedEvent) (pure parts summed on floats) is the running PrivacyProfile sum, bit for bit,
    on random mixes of pure (zero epsilons too), Laplace, approximate, Gaussian, zCDP and nested events."""
    from sklearn_dpsco.accounting import (
        ApproxDPEvent, ComposedEvent, GaussianEvent, LaplaceEvent, ParallelComposedEvent, PureDPEvent,
        SelfComposedEvent, ZCDPEvent,
    )
    import numpy as np

    from sklearn_dpsco.accounting._composition import PrivacyProfile, profile_of

    rng = np.random.default_rng(4)

    def leaf():
        k = int(rng.integers(6))
        x = float(10.0 ** rng.uniform(-6, 1))
        return [PureDPEvent(x), PureDPEvent(0.0), LaplaceEvent(1.0, 1.0 / x), ApproxDPEvent(x, 1e-9 * x),
                GaussianEvent(1.0, 1.0 / x), ZCDPEvent(x)][k]

    for _ in range(200):
        parts = [leaf() for _ in range(int(rng.integers(1, 50)))]
        if rng.random() < 0.3:
            parts.append(ParallelComposedEvent((leaf(), leaf())))
        if rng.random() < 0.3:
            parts.append(SelfComposedEvent(leaf(), int(rng.integers(1, 5))))
        if rng.random() < 0.3:
            parts.append(ComposedEvent(tuple(leaf() for _ in range(3))))
        expected = PrivacyProfile()
        for e in parts:
            expected = expected + profile_of(e)
        got = profile_of(ComposedEvent(tuple(parts)))
        assert [(v, math.copysign(1.0, v)) for v in vars(got).values()] == [
            (v, math.copysign(1.0, v)) for v in vars(expected).values()]


def test_a_refused_fit_names_its_event_in_one_line():
    # found by a bug hunt: the refusal printed the whole event (an AdaSSP fit: 1.9k characters of nested events)
    import numpy as np

    from sklearn_dpsco import DPLinearRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0]
    acc = BudgetAccountant(epsilon=10.0)
    DPLinearRegressor(epsilon=6.0, accountant=acc, random_state=0).fit(X, y)
    with pytest.raises(BudgetExceededError, match=r"spending ComposedEvent\(.*pure DP.*\) would bring") as info:
        DPLinearRegressor(epsilon=6.0, accountant=acc, random_state=0).fit(X, y)
    message = str(info.value)
    assert len(message) < 400 and "epsilon=12" in message and "already spent epsilon=6" in message
    assert isinstance(info.value.requested, ComposedEvent)  # the whole event stays on the exception


@pytest.mark.parametrize("ceiling", [np.int64(3), np.float32(3.0), np.float64(3.0)])
def test_numpy_scalar_ceilings_are_numbers(ceiling):
    # the estimators take numpy scalars for epsilon; the ledger's ceiling did not (it said "must be a number")
    acc = BudgetAccountant(epsilon=ceiling, delta=np.float32(1e-6))
    assert acc.epsilon == 3.0 and isinstance(acc.epsilon, float)
    with pytest.raises(ValueError, match="must be a number >= 0"):
        BudgetAccountant(epsilon=np.bool_(True))
