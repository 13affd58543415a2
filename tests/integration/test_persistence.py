"""Saving and loading fitted models, whatever ledger they were fitted with (doc/persistence.rst).

Every public estimator, the pipelines, the scaler and the private searches
are fitted and saved (joblib) by a spawned session that then ends; this
process loads them: they release exactly the same outputs, a model fitted
with an in-memory ledger carries a detached, read-only record of that ledger
(entries, ceiling, unit) that refuses to spend until attached to a file, an
SQLite ledger is reopened, a model fitted with no accountant charges the
ledger in force here. Round trips inside one session keep the ledger's
identity; a forked copy of an in-memory ledger refuses to spend; skops saves
the models with only sklearn_dpsco types to trust.
"""

import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import weakref

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline

import sklearn_dpsco.accounting._accountant as accountant_module
from sklearn_dpsco import DPPipeline, budget
from sklearn_dpsco.accounting import BudgetAccountant, DetachedLedgerError, FitAllowance, PureDPEvent
from sklearn_dpsco.testing._persistence import CEILING, LEDGERS, MODELS, fit_model, make_model, output_of

# ledger entries each model's fit records (a DPPipeline: one per private step)
ENTRIES = {name: (2 if name == "dp_pipeline" else 1) for name in MODELS}


def _ledger_of(model):
    """The ledger a model charges (a scikit-learn Pipeline's: its private step's)."""
    if isinstance(model, Pipeline) and not isinstance(model, DPPipeline):
        return model.named_steps["clf"].accountant
    return model.accountant


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The directory where a spawned session, now ended, saved every model x ledger."""
    directory = str(tmp_path_factory.mktemp("saved"))
    code = f"from sklearn_dpsco.testing._persistence import save_session; save_session({directory!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=directory)
    assert proc.returncode == 0, proc.stderr
    return directory


def _load(saved, name, kind):
    return joblib.load(os.path.join(saved, f"{name}-{kind}.joblib"))


def _data(name):
    _, X, y, fit_kw = make_model(name, None)
    return X, y, fit_kw


# ------------------------------------------------------------------ a later session
@pytest.mark.parametrize("kind", LEDGERS)
@pytest.mark.parametrize("name", MODELS)
def test_loaded_model_releases_identical_outputs(saved, name, kind):
    model = _load(saved, name, kind)
    X, _, _ = _data(name)
    expected = np.load(os.path.join(saved, f"{name}-{kind}.npy"), allow_pickle=False)
    np.testing.assert_array_equal(output_of(model, X), expected)


@pytest.mark.parametrize("name", MODELS)
def test_in_memory_ledger_loads_as_detached_record_that_refuses(saved, name):
    model = _load(saved, name, "memory")
    acc = _ledger_of(model)
    assert acc.is_detached and acc.path is None
    assert (acc.epsilon, acc.delta) == CEILING and acc.privacy_unit is None
    # the record is the ledger as it was when this model was saved: the fits so far in that session
    everything = joblib.load(os.path.join(saved, "ledger-memory.joblib"))
    n = sum(ENTRIES[m] for m in MODELS[: MODELS.index(name) + 1])
    assert [e.label for e in acc.ledger] == [e.label for e in everything.ledger][:n]
    if name not in ("dp_pipeline", "sk_pipeline"):
        assert acc.ledger[-1].event == model.privacy_event_
    total = acc.total()
    # a refit is refused before it touches data: nothing is spent, the model is unchanged
    X, y, fit_kw = _data(name)
    before = output_of(model, X)
    with pytest.raises(DetachedLedgerError, match="detached, read-only record.*session of process"):
        model.fit(X, y, **fit_kw)
    with pytest.raises(DetachedLedgerError):
        acc.spend(PureDPEvent(0.1))
    assert acc.total() == total and len(acc.ledger) == n
    np.testing.assert_array_equal(output_of(model, X), before)


def test_detached_record_attaches_to_a_file_once(saved, tmp_path):
    model = _load(saved, "hinge", "memory")
    acc = model.accountant
    n, spent = len(acc.ledger), acc.total()[0]
    path = tmp_path / "continued.sqlite"
    assert acc.attach(path) is acc and not acc.is_detached and acc.path == str(path)
    X, y, _ = _data("hinge")
    model.fit(X, y)
    assert len(acc.ledger) == n + 1 and acc.total()[0] == pytest.approx(spent + 1.0)
    assert (acc.epsilon, acc.delta) == CEILING
    # the file keeps the ledger's identity: another loaded copy opens it (no second budget) ...
    again = _load(saved, "hinge", "memory").accountant
    assert again.ledger_id == acc.ledger_id
    again.attach(path)
    assert len(again.ledger) == n + 1
    # ... and the ceiling counts what the record had already spent
    assert again.remaining()[0] == pytest.approx(CEILING[0] - spent - 1.0)
    # a file holding another ledger is refused
    other = tmp_path / "other.sqlite"
    BudgetAccountant(*CEILING, path=other)
    with pytest.raises(ValueError, match="not ledger"):
        _load(saved, "linear", "memory").accountant.attach(other)


@pytest.mark.parametrize("name", MODELS)
def test_sqlite_ledger_is_reopened(saved, name):
    model = _load(saved, name, "sqlite")
    acc = _ledger_of(model)
    assert not acc.is_detached and acc.path == os.path.join(saved, "ledger.sqlite")
    before = len(acc.ledger)
    X, y, fit_kw = _data(name)
    clone(model).fit(X, y, **fit_kw)
    assert len(BudgetAccountant(*CEILING, path=acc.path).ledger) == before + ENTRIES[name]


@pytest.mark.parametrize("name", MODELS)
def test_model_fitted_without_accountant_charges_the_ledger_in_force(saved, name):
    model = _load(saved, name, "none")
    X, y, fit_kw = _data(name)
    with budget(50.0, 1e-3) as acc:
        model.fit(X, y, **fit_kw)
    assert len(acc.ledger) == ENTRIES[name]


def test_missing_sqlite_file_loads_detached(tmp_path, monkeypatch):
    path = tmp_path / "gone.sqlite"
    model, _ = fit_model("hinge", BudgetAccountant(*CEILING, path=path))
    blob = pickle.dumps(model)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")
    # as in another process: this process's accountants are not found
    monkeypatch.setattr(accountant_module, "_origin", weakref.WeakValueDictionary())
    monkeypatch.setattr(accountant_module, "_restored", {})
    loaded = pickle.loads(blob).accountant
    assert loaded.is_detached and len(loaded.ledger) == 1
    with pytest.raises(DetachedLedgerError, match="does not exist"):
        loaded.check(PureDPEvent(0.1))
    assert not os.path.exists(path)  # loading never recreated an empty ledger (a reset budget)


# ------------------------------------------------------------------ within one session
@pytest.mark.parametrize("name", MODELS)
def test_round_trip_in_session_keeps_the_ledger(name):
    acc = BudgetAccountant(*CEILING)
    model, X = fit_model(name, acc)
    loaded = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(output_of(loaded, X), output_of(model, X))
    assert _ledger_of(loaded) is acc and acc.path is not None  # moved to a session file, same object
    n = len(acc.ledger)
    X, y, fit_kw = _data(name)
    loaded.fit(X, y, **fit_kw)
    assert len(acc.ledger) == n + ENTRIES[name]


def test_moving_to_a_file_keeps_entries_and_ceiling():
    acc = BudgetAccountant(1.0, privacy_unit="row")
    acc.spend(PureDPEvent(0.25), label="a")
    ledger_id = acc.ledger_id
    pickle.dumps(acc)
    assert acc.path is not None and acc.ledger_id == ledger_id
    assert [e.label for e in acc.ledger] == ["a"] and acc.privacy_unit == "row"
    reopened = BudgetAccountant(1.0, path=acc.path)
    assert reopened.ledger_id == ledger_id and reopened.privacy_unit == "row"
    reopened.spend(PureDPEvent(0.5))
    assert acc.total()[0] == pytest.approx(0.75)


def test_allowance_pickles_with_its_parent():
    parent = BudgetAccountant(1.0)
    allowance = pickle.loads(pickle.dumps(FitAllowance(PureDPEvent(0.5), parent=parent)))
    assert allowance.parent is parent
    allowance.spend(PureDPEvent(0.5))
    with pytest.raises(ValueError):
        allowance.spend(PureDPEvent(0.1))
    assert parent.total()[0] == pytest.approx(0.5)


def _spend_in_fork(acc, queue):
    try:
        acc.spend(PureDPEvent(0.1))
        queue.put("spent")
    except RuntimeError as exc:
        queue.put(str(exc))


@pytest.mark.skipif(sys.platform == "win32" or "fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_forked_copy_of_in_memory_ledger_refuses():
    acc = BudgetAccountant(1.0)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_spend_in_fork, args=(acc, q))
    p.start()
    message = q.get(timeout=60)
    p.join(60)
    assert "fork the budget" in message and acc.ledger == ()


# ------------------------------------------------------------------ skops
@pytest.mark.parametrize("name", MODELS)
def test_skops_round_trip_trusts_only_package_types(name):
    sio = pytest.importorskip("skops.io")
    acc = BudgetAccountant(*CEILING)
    model, X = fit_model(name, acc)
    blob = sio.dumps(model)
    untrusted = sio.get_untrusted_types(data=blob)
    assert all(t.startswith("sklearn_dpsco.") for t in untrusted), untrusted
    loaded = sio.loads(blob, trusted=untrusted)
    np.testing.assert_array_equal(output_of(loaded, X), output_of(model, X))
    assert _ledger_of(loaded).ledger_id == acc.ledger_id and len(_ledger_of(loaded).ledger) == len(acc.ledger)
