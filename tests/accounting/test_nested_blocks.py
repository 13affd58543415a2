"""Nested budget blocks charge every enclosing block, all or nothing (doc/privacy/accounting.rst, "Budget blocks").

A block is a promise about everything run inside it: a fit inside nested
blocks is checked against every block's ledger before touching data and
recorded once in each distinct ledger, or in none; an explicit
``accountant=`` inside a block is charged with the block.
"""

import threading

import joblib
import numpy as np
import pytest
from sklearn.model_selection import cross_val_score

import sklearn_dpsco
from sklearn_dpsco import DPGridSearchCV, DPLinearRegressor, DPPipeline, RowNormClipper
from sklearn_dpsco.accounting import (
    BudgetAccountant,
    BudgetExceededError,
    PrivacyUnitError,
    PureDPEvent,
    get_accountant,
)
from sklearn_dpsco.accounting._nested import NestedCharge
from sklearn_dpsco.linear_model import _base
from sklearn_dpsco.testing._estimators import TinyDPClassifier

EPS = 0.1


@pytest.fixture(scope="module")
def classification():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(300, 3)) / 2
    return X, X.sum(axis=1) / 3


@pytest.fixture
def no_data_read(monkeypatch):
    """Fails the test if a linear model's solver runs (reads the rows)."""
    calls = []
    real = _base._run_plan

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_base, "_run_plan", spy)
    return calls


def _spent(acc):
    return acc.total()[0]


# ------------------------------------------------------------------ the defect
@pytest.mark.parametrize("how", ["budget", "accountants"])
def test_fit_exceeding_outer_ceiling_is_refused_before_data_and_records_nothing(regression, no_data_read, how):
    X, y = regression
    if how == "budget":
        with sklearn_dpsco.budget(epsilon=1.0) as outer:
            with sklearn_dpsco.budget(epsilon=5.0) as inner:
                with pytest.raises(BudgetExceededError):
                    DPLinearRegressor(epsilon=3.0, random_state=0).fit(X, y)
    else:
        outer, inner = BudgetAccountant(1.0), BudgetAccountant(5.0)
        with outer:
            with inner:
                with pytest.raises(BudgetExceededError):
                    DPLinearRegressor(epsilon=3.0, random_state=0).fit(X, y)
    assert no_data_read == []
    assert outer.ledger == () and inner.ledger == ()
    assert _spent(outer) == 0 and _spent(inner) == 0


def test_inner_refusal_refuses_too(regression, no_data_read):
    X, y = regression
    with sklearn_dpsco.budget(epsilon=5.0) as outer:
        with sklearn_dpsco.budget(epsilon=1.0) as inner:
            with pytest.raises(BudgetExceededError):
                DPLinearRegressor(epsilon=3.0, random_state=0).fit(X, y)
    assert no_data_read == [] and outer.ledger == () and inner.ledger == ()


def test_fit_within_both_ceilings_is_recorded_in_both(regression):
    X, y = regression
    with sklearn_dpsco.budget(epsilon=1.0) as outer:
        with sklearn_dpsco.budget(epsilon=5.0) as inner:
            est = DPLinearRegressor(epsilon=0.5, random_state=0).fit(X, y)
            assert isinstance(get_accountant(None), NestedCharge)
        with pytest.raises(BudgetExceededError):  # the outer ceiling saw the first fit
            with sklearn_dpsco.budget(epsilon=5.0):
                DPLinearRegressor(epsilon=0.6, random_state=0).fit(X, y)
    for acc in (outer, inner):
        assert len(acc.ledger) == 1
        assert acc.ledger[0].event == est.privacy_event_ and acc.ledger[0].label == "DPLinearRegressor"
        assert _spent(acc) == pytest.approx(0.5)


def test_three_levels(classification):
    X, y = classification
    a, b, c = BudgetAccountant(1.0), BudgetAccountant(1.0), BudgetAccountant(1.0)
    with a:
        with b:
            with c:
                TinyDPClassifier(EPS, random_state=0).fit(X, y)
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
        TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert [len(x.ledger) for x in (a, b, c)] == [3, 2, 1]


def test_same_ledger_nested_twice_is_charged_once(classification, tmp_path):
    X, y = classification
    a, b = BudgetAccountant(1.0), BudgetAccountant(1.0)
    with a:
        with a:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
            assert get_accountant(None) is a
        with b:
            with a:
                TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert len(a.ledger) == 2 and len(b.ledger) == 1
    assert _spent(a) == pytest.approx(2 * EPS)
    # two objects over one file are one ledger
    path = tmp_path / "one.sqlite"
    one, same = BudgetAccountant(1.0, path=path), BudgetAccountant(1.0, path=path)
    with one:
        with same:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert len(one.ledger) == 1 and _spent(same) == pytest.approx(EPS)


def test_single_block_and_no_block_unchanged(classification):
    X, y = classification
    acc = BudgetAccountant(1.0)
    with acc:
        assert get_accountant(None) is acc
        TinyDPClassifier(EPS, random_state=0).fit(X, y)
    explicit = BudgetAccountant(1.0)
    assert get_accountant(explicit) is explicit
    TinyDPClassifier(EPS, accountant=explicit, random_state=0).fit(X, y)
    assert len(acc.ledger) == len(explicit.ledger) == 1


# ------------------------------------------------------------------ explicit accountant inside blocks
def test_explicit_accountant_inside_a_block_charges_the_block_too(classification, no_data_read, regression):
    X, y = classification
    explicit = BudgetAccountant(10.0)
    with sklearn_dpsco.budget(epsilon=0.25) as block:
        TinyDPClassifier(EPS, accountant=explicit, random_state=0).fit(X, y)
        TinyDPClassifier(EPS, accountant=block, random_state=0).fit(X, y)  # the block's own ledger: once
        with pytest.raises(BudgetExceededError):
            DPLinearRegressor(epsilon=1.0, accountant=explicit, random_state=0).fit(*regression)
    assert no_data_read == []
    assert len(explicit.ledger) == 1 and len(block.ledger) == 2
    assert _spent(block) == pytest.approx(2 * EPS)


# ------------------------------------------------------------------ all or nothing
@pytest.mark.parametrize("storage", ["memory", "sqlite"])
def test_recording_failure_in_one_ledger_retracts_the_others(classification, tmp_path, monkeypatch, storage):
    X, y = classification
    kw = {} if storage == "memory" else {"path": tmp_path / "inner.sqlite"}
    outer, inner = BudgetAccountant(1.0), BudgetAccountant(1.0, **kw)
    inner.spend(PureDPEvent(0.2), label="before")
    before = inner._ledger.profile() if storage == "memory" else inner._store.profile()

    def refuse(event, label="", privacy_unit="row"):  # a concurrent fit took the room since the check
        raise BudgetExceededError("taken meanwhile. Nothing was spent.")

    monkeypatch.setattr(outer, "spend", refuse)
    with outer:
        with inner:
            with pytest.raises(BudgetExceededError, match="taken meanwhile"):
                TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert [e.label for e in inner.ledger] == ["before"]
    assert (inner._ledger.profile() if storage == "memory" else inner._store.profile()) == before
    assert _spent(inner) == pytest.approx(0.2)
    monkeypatch.undo()
    with outer:
        with inner:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert _spent(inner) == pytest.approx(0.2 + EPS) and _spent(outer) == pytest.approx(EPS)


def test_each_ledger_applies_its_privacy_unit_rule(classification):
    X, y = classification
    outer = BudgetAccountant(10.0)
    converting = BudgetAccountant(10.0, privacy_unit="user", max_items_per_user=2)
    with outer:
        with converting:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert outer.ledger[0].privacy_unit == "row" and _spent(outer) == pytest.approx(EPS)
    assert converting.ledger[0].privacy_unit == "user" and _spent(converting) == pytest.approx(2 * EPS)
    # a ledger refusing the unit refuses the fit everywhere
    user_only = BudgetAccountant(10.0, privacy_unit="user")
    with outer:
        with user_only:
            with pytest.raises(PrivacyUnitError):
                TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert len(outer.ledger) == 1 and user_only.ledger == ()


# ------------------------------------------------------------------ meta-estimators and parallelism
@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_search_inside_nested_blocks(classification, selection):
    X, y = classification
    grid = {"shift": [0.0, 0.1]}
    with sklearn_dpsco.budget(epsilon=0.5) as outer:
        with sklearn_dpsco.budget(epsilon=5.0) as inner:
            with pytest.raises(BudgetExceededError):
                DPGridSearchCV(TinyDPClassifier(), grid, epsilon=1.0, cv=2, selection=selection,
                               random_state=0).fit(X, y)
            assert outer.ledger == () and inner.ledger == ()
            search = DPGridSearchCV(TinyDPClassifier(), grid, epsilon=0.4, cv=2, selection=selection,
                                    random_state=0).fit(X, y)
    for acc in (outer, inner):
        # the reservation, once in each: the candidate and refit fits do not charge the blocks again
        assert [e.label.split(":")[0] for e in acc.ledger] == ["DPGridSearchCV"]
        assert _spent(acc) == pytest.approx(search.epsilon_spent_)


def test_pipeline_inside_nested_blocks(classification):
    X, y = classification
    pipe = DPPipeline([("clip", RowNormClipper()), ("clf", TinyDPClassifier())], epsilon=0.3)
    with sklearn_dpsco.budget(epsilon=0.2) as outer:
        with sklearn_dpsco.budget(epsilon=5.0) as inner:
            with pytest.raises(BudgetExceededError):
                pipe.fit(X, y)
    assert outer.ledger == () and inner.ledger == ()
    with sklearn_dpsco.budget(epsilon=1.0) as outer:
        with sklearn_dpsco.budget(epsilon=5.0) as inner:
            pipe.fit(X, y)
    for acc in (outer, inner):
        assert [e.label for e in acc.ledger] == ["DPPipeline[clf] TinyDPClassifier"]
        assert _spent(acc) == pytest.approx(0.3)


def test_worker_thread_without_a_block_charges_every_block_of_the_thread(classification):
    X, y = classification
    errors = []

    def fit():
        try:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    outer, inner = BudgetAccountant(1.0), BudgetAccountant(5.0)
    with outer:
        with inner:
            t = threading.Thread(target=fit)
            t.start()
            t.join()
            with joblib.parallel_backend("threading", n_jobs=2):
                cross_val_score(TinyDPClassifier(EPS, random_state=0), X, y, cv=3, error_score="raise")
    assert errors == []
    assert len(outer.ledger) == len(inner.ledger) == 4
    # a thread's fit exceeding the outer ceiling is refused, and records nothing
    small = BudgetAccountant(0.05)
    with small:
        with inner:
            t = threading.Thread(target=fit)
            t.start()
            t.join()
    assert len(errors) == 1 and isinstance(errors[0], BudgetExceededError)
    assert small.ledger == () and len(inner.ledger) == 4


def test_loky_workers_charge_every_block(classification):
    X, y = classification
    explicit = BudgetAccountant(10.0)
    with joblib.parallel_backend("loky", n_jobs=2):
        with sklearn_dpsco.budget(epsilon=1.0) as outer:
            with sklearn_dpsco.budget(epsilon=5.0, process_safe=False) as inner:
                cross_val_score(TinyDPClassifier(EPS, random_state=0), X, y, cv=3, error_score="raise")
                cross_val_score(TinyDPClassifier(EPS, accountant=explicit, random_state=0), X, y, cv=2,
                                error_score="raise")
    assert len(outer.ledger) == len(inner.ledger) == 5
    assert len(explicit.ledger) == 2
    assert _spent(outer) == pytest.approx(5 * EPS)


def test_fit_stream_inside_nested_blocks(regression):
    X, y = regression
    with sklearn_dpsco.budget(epsilon=1.0) as outer:
        with sklearn_dpsco.budget(epsilon=5.0) as inner:
            with pytest.raises(BudgetExceededError):
                DPLinearRegressor(epsilon=3.0, row_bound=1.0, label_bound=1.0, random_state=0).fit_stream(
                    ((X[a:a + 100], y[a:a + 100]) for a in range(0, 300, 100)), n_samples=300)
            DPLinearRegressor(epsilon=0.5, row_bound=1.0, label_bound=1.0, random_state=0).fit_stream(
                ((X[a:a + 100], y[a:a + 100]) for a in range(0, 300, 100)), n_samples=300)
    assert len(outer.ledger) == len(inner.ledger) == 1
