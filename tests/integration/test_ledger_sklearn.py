"""The user's ledger survives scikit-learn: clone, CV, searches, pipelines, threads and processes.

doc/privacy/accounting.rst. Most fits use the microsecond TinyDPClassifier
(a real private mechanism) so every entry point x backend x n_jobs runs in
seconds; a few use DPHingeClassifier end to end.
"""

import copy
import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import threading
import warnings

import joblib
import numpy as np
import pytest
from joblib.externals.loky.process_executor import TerminatedWorkerError
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, cross_val_score, cross_validate
from sklearn.pipeline import Pipeline

from sklearn_dpsco import DPGridSearchCV, DPPipeline, RowNormClipper, budget
from sklearn_dpsco.accounting import (
    AmbiguousAccountantError,
    BudgetAccountant,
    BudgetExceededError,
    FitAllowance,
    GaussianEvent,
    PureDPEvent,
    active_accountant,
    default_accountant,
    get_accountant,
)
from sklearn_dpsco.accounting._bindings import _Binding, binding_for_pickle
from sklearn_dpsco.accounting._default import ENV_VAR
from sklearn_dpsco.linear_model import DPHingeClassifier
from sklearn_dpsco.testing._estimators import TinyDPClassifier
from sklearn_dpsco.testing._workers import fit_with_default_ledger

EPS = 0.1
N_FOLDS = 4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _entry_points(est, X, y, n_jobs):
    """Run every scikit-learn entry point once; return the number of fits each made."""
    fits = 0
    cross_val_score(est, X, y, cv=N_FOLDS, n_jobs=n_jobs, error_score="raise")
    fits += N_FOLDS
    cross_validate(est, X, y, cv=N_FOLDS, n_jobs=n_jobs, error_score="raise")
    fits += N_FOLDS
    GridSearchCV(est, {"shift": [0.0, 0.1]}, cv=3, n_jobs=n_jobs, error_score="raise").fit(X, y)
    fits += 2 * 3 + 1
    RandomizedSearchCV(
        est, {"shift": [0.0, 0.1, 0.2]}, n_iter=2, cv=3, n_jobs=n_jobs, random_state=0, error_score="raise"
    ).fit(X, y)
    fits += 2 * 3 + 1
    pipe = Pipeline([("clip", RowNormClipper()), ("clf", est)])
    GridSearchCV(pipe, {"clf__shift": [0.0, 0.1]}, cv=3, n_jobs=n_jobs, error_score="raise").fit(X, y)
    fits += 2 * 3 + 1
    return fits


BACKENDS = [("sequential", 1), ("threading", 2), ("loky", 2)]


# ------------------------------------------------------------------ identity
def test_clone_deepcopy_pickle_keep_one_ledger(tmp_path):
    acc = BudgetAccountant(1.0, path=tmp_path / "l.sqlite")
    est = TinyDPClassifier(EPS, accountant=acc)
    assert clone(est).accountant is acc
    assert copy.deepcopy(est).accountant is acc
    # pickled (as to a worker): a new object over the same file
    other = pickle.loads(pickle.dumps(est)).accountant
    other.spend(PureDPEvent(0.25), label="from a copy")
    assert acc.total() == pytest.approx((0.25, 0.0))


@pytest.mark.parametrize("backend,n_jobs", BACKENDS)
def test_accountant_parameter_every_entry_point(data, tmp_path, backend, n_jobs):
    X, y = data
    acc = BudgetAccountant(100.0, path=tmp_path / "ledger.sqlite")
    with joblib.parallel_backend(backend, n_jobs=n_jobs):
        fits = _entry_points(TinyDPClassifier(EPS, accountant=acc, random_state=0), X, y, n_jobs)
    assert len(acc.ledger) == fits
    assert acc.total()[0] == pytest.approx(fits * EPS)
    assert {e.label for e in acc.ledger} == {"TinyDPClassifier"}


@pytest.mark.parametrize("backend,n_jobs", BACKENDS)
def test_budget_block_every_entry_point(data, backend, n_jobs):
    X, y = data
    with joblib.parallel_backend(backend, n_jobs=n_jobs):
        with budget(100.0) as acc:
            fits = _entry_points(TinyDPClassifier(EPS, random_state=0), X, y, n_jobs)
    assert len(acc.ledger) == fits
    assert acc.total()[0] == pytest.approx(fits * EPS)


@pytest.mark.parametrize("backend,n_jobs", BACKENDS)
def test_default_ledger_every_entry_point(data, backend, n_jobs):
    X, y = data
    default = default_accountant()
    before = len(default.ledger)
    with joblib.parallel_backend(backend, n_jobs=n_jobs):
        fits = _entry_points(TinyDPClassifier(EPS, random_state=0), X, y, n_jobs)
    assert len(default.ledger) - before == fits


def test_dp_hinge_cross_val_score_loky_reaches_ledger(data, tmp_path):
    X, y = data
    acc = BudgetAccountant(10.0, path=tmp_path / "ledger.sqlite")
    with joblib.parallel_backend("loky", n_jobs=2):
        cross_val_score(DPHingeClassifier(0.5, accountant=acc, random_state=0), X, y, cv=3, error_score="raise")
        with acc:
            cross_val_score(DPHingeClassifier(0.5, random_state=1), X, y, cv=2, error_score="raise")
    assert [e.label for e in acc.ledger] == ["DPHingeClassifier"] * 5
    assert acc.total()[0] == pytest.approx(2.5)


def test_dp_pipeline_in_grid_search_loky(data, tmp_path):
    X, y = data
    acc = BudgetAccountant(100.0, path=tmp_path / "ledger.sqlite")
    pipe = DPPipeline([("clip", RowNormClipper()), ("clf", TinyDPClassifier())], epsilon=0.2, accountant=acc)
    with joblib.parallel_backend("loky", n_jobs=2):
        GridSearchCV(pipe, {"clf__shift": [0.0, 0.1]}, cv=3, error_score="raise").fit(X, y)
    assert len(acc.ledger) == 7
    assert {e.label for e in acc.ledger} == {"DPPipeline[clf] TinyDPClassifier"}
    assert acc.total()[0] == pytest.approx(7 * 0.2)


# ------------------------------------------------------------------ in-memory ledgers follow processes
def test_in_memory_parameter_follows_loky(data):
    # the ledger moves to a session file when first pickled; workers charge it, the object keeps using it
    X, y = data
    acc = BudgetAccountant(100.0)
    with joblib.parallel_backend("loky", n_jobs=2):
        cross_val_score(TinyDPClassifier(EPS, accountant=acc), X, y, cv=3, error_score="raise")
    assert acc.path is not None and len(acc.ledger) == 3
    acc.spend(PureDPEvent(EPS), label="after")
    assert len(acc.ledger) == 4 and acc.total()[0] == pytest.approx(4 * EPS)


def test_in_memory_block_follows_loky(data):
    X, y = data
    with joblib.parallel_backend("loky", n_jobs=2):
        with budget(100.0, process_safe=False) as acc:
            cross_val_score(TinyDPClassifier(EPS), X, y, cv=3, error_score="raise")
    assert len(acc.ledger) == 3


def test_unreachable_block_ledger_refuses_in_worker_with_clear_error(data, monkeypatch):
    # the block's ledger cannot move to a file (no writable temporary directory): workers refuse
    import sklearn_dpsco.accounting._accountant as accountant_module

    def no_dir(stem):
        raise OSError("no temporary directory")

    X, y = data
    monkeypatch.setattr(accountant_module, "session_file", no_dir)
    with joblib.parallel_backend("loky", n_jobs=2):
        with budget(100.0, process_safe=False) as acc:
            with pytest.raises(Exception, match="detached, read-only record"):
                cross_val_score(TinyDPClassifier(EPS), X, y, cv=3, error_score="raise")
    assert acc.ledger == () and acc.path is None


def test_in_memory_block_works_with_threads(data):
    X, y = data
    with joblib.parallel_backend("threading", n_jobs=2):
        with budget(100.0, process_safe=False) as acc:
            cross_val_score(TinyDPClassifier(EPS), X, y, cv=3, error_score="raise")
    assert len(acc.ledger) == 3


# ------------------------------------------------------------------ budget blocks
def test_blocks_nest_and_restore(data):
    X, y = data
    outer, inner = BudgetAccountant(10.0), BudgetAccountant(10.0)
    assert active_accountant() is None
    with outer:
        TinyDPClassifier(EPS, random_state=0).fit(X, y)
        with inner:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
            assert active_accountant() is inner
            assert get_accountant(None).targets == (inner, outer)  # every enclosing block is charged
        assert get_accountant(None) is outer
        TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert active_accountant() is None
    assert (len(outer.ledger), len(inner.ledger)) == (3, 1)
    # an explicit parameter inside a block is charged together with the block (nothing escapes it)
    explicit = BudgetAccountant(10.0)
    with outer:
        TinyDPClassifier(EPS, accountant=explicit, random_state=0).fit(X, y)
    assert (len(outer.ledger), len(explicit.ledger)) == (4, 1)


def test_block_ceiling_enforced(data):
    X, y = data
    with budget(0.25) as acc:
        TinyDPClassifier(EPS, random_state=0).fit(X, y)
        TinyDPClassifier(EPS, random_state=0).fit(X, y)
        with pytest.raises(BudgetExceededError):
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
    assert acc.total()[0] == pytest.approx(0.2)


def test_block_reaches_plain_threads_and_refuses_when_ambiguous(data):
    X, y = data
    a, b = BudgetAccountant(10.0), BudgetAccountant(10.0)
    results = {}

    def fit_in_new_thread(key):
        try:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)
            results[key] = "ok"
        except AmbiguousAccountantError as exc:
            results[key] = str(exc)

    with a:
        t = threading.Thread(target=fit_in_new_thread, args=("one block",))
        t.start()
        t.join()
    assert results["one block"] == "ok" and len(a.ledger) == 1

    entered, release = threading.Event(), threading.Event()

    def hold_block():
        with b:
            entered.set()
            release.wait(10)

    holder = threading.Thread(target=hold_block)
    holder.start()
    entered.wait(10)
    try:
        with a:
            TinyDPClassifier(EPS, random_state=0).fit(X, y)  # own block: fine
            t = threading.Thread(target=fit_in_new_thread, args=("two blocks",))
            t.start()
            t.join()
    finally:
        release.set()
        holder.join()
    assert "cannot tell which ledger" in results["two blocks"]
    assert (len(a.ledger), len(b.ledger)) == (2, 0)


def test_block_exit_out_of_order_raises():
    a = BudgetAccountant()
    a.__enter__()
    b = BudgetAccountant()
    b.__enter__()
    with pytest.raises(RuntimeError, match="innermost first"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert active_accountant() is None


# ------------------------------------------------------------------ bindings
def test_binding_stale_origin_is_ignored(tmp_path):
    # a model pickled by a process that has since exited (saved to disk) resolves afresh
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(proc.stdout)
    import socket

    stale = _Binding("refusal", None, "should not fire", dead_pid, socket.gethostname())
    assert stale.resolve() is None
    live = _Binding("refusal", None, "refused here", os.getppid(), socket.gethostname())
    with pytest.raises(RuntimeError, match="refused here"):
        live.resolve()


def test_binding_is_dropped_in_the_pickling_process(data):
    X, y = data
    with budget(1.0, process_safe=False):
        est = pickle.loads(pickle.dumps(TinyDPClassifier(EPS)))
    assert not hasattr(est, "_dpsco_binding")
    acc = BudgetAccountant(1.0)
    with acc:
        est.fit(X, y)
    assert len(acc.ledger) == 1


def test_binding_refusal_for_ambiguous_and_allowance():
    b = binding_for_pickle()
    assert b.kind == "default"
    with FitAllowance(PureDPEvent(1.0)):
        assert binding_for_pickle().kind == "refusal"


def test_worker_reaches_parent_default_or_refuses(monkeypatch):
    ctx = mp.get_context("spawn")
    default_accountant()  # exports the session's default ledger path
    q = ctx.Queue()
    p = ctx.Process(target=fit_with_default_ledger, args=(q,))
    before = len(default_accountant().ledger)
    p.start()
    status, info = q.get(timeout=120)
    p.join(60)
    assert status == "ok" and info == default_accountant().path
    assert len(default_accountant().ledger) == before + 1
    # a worker started without the path (and no binding) refuses instead of losing the spend
    monkeypatch.delenv(ENV_VAR)
    p = ctx.Process(target=fit_with_default_ledger, args=(q,))
    p.start()
    status, info = q.get(timeout=120)
    p.join(60)
    assert status == "error" and "no default ledger of the parent" in info


# ------------------------------------------------------------------ ceilings across processes
def test_ceiling_holds_across_loky_workers(data, tmp_path):
    X, y = data
    acc = BudgetAccountant(1.0, path=tmp_path / "ledger.sqlite")
    est = TinyDPClassifier(EPS, accountant=acc, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)
        with joblib.parallel_backend("loky", n_jobs=2):
            GridSearchCV(est, {"shift": np.linspace(-0.5, 0.5, 6)}, cv=5, refit=False).fit(X, y)
    # 30 fits raced for a ceiling of 10 spends: exactly 10 recorded, none beyond
    assert len(acc.ledger) == 10
    assert acc.total()[0] == pytest.approx(1.0)


def test_cross_val_score_past_the_budget_scores_nan_and_error_score_raise_stops(data):
    # as doc/user_guide.rst ("A budget that runs out part-way") says: scikit-learn's default error_score turns the
    # refused folds into NaN with a FitFailedWarning, the ledger holding only the fits that ran; error_score="raise"
    # stops at the first refusal
    X, y = data
    with pytest.warns(FitFailedWarning, match="3 fits failed out of a total of 5"):
        with budget(epsilon=1.0) as ledger:
            scores = cross_val_score(DPHingeClassifier(epsilon=0.4, random_state=0), X, y, cv=5)
    assert np.isfinite(scores[:2]).all() and np.isnan(scores[2:]).all()
    assert len(ledger.ledger) == 2 and ledger.total() == (0.8, 0.0)
    with budget(epsilon=1.0) as ledger:
        with pytest.raises(BudgetExceededError, match="Nothing was spent"):
            cross_val_score(DPHingeClassifier(epsilon=0.4, random_state=0), X, y, cv=5, error_score="raise")
    assert len(ledger.ledger) == 2 and ledger.total() == (0.8, 0.0)
    with budget(epsilon=2.0) as ledger:  # sized for the folds: every fold scores
        assert np.isfinite(cross_val_score(DPHingeClassifier(epsilon=0.4, random_state=0), X, y, cv=5)).all()


def test_allowance_forwards_and_caps():
    parent = BudgetAccountant(10.0)
    allowance = FitAllowance(PureDPEvent(1.0), parent=parent, label_prefix="step ")
    allowance.spend(PureDPEvent(0.6), label="a")
    with pytest.raises(BudgetExceededError, match="allowance"):
        allowance.check(PureDPEvent(0.5))
    with pytest.raises(BudgetExceededError):
        allowance.spend(GaussianEvent(1.0, 10.0))  # another kind of loss: refused
    allowance.spend(PureDPEvent(0.4), label="b")
    assert [e.label for e in parent.ledger] == ["step a", "step b"]
    assert parent.total()[0] == pytest.approx(1.0)
    # Gaussian allowance: k parts of mu / sqrt(k) fit exactly
    g = FitAllowance(GaussianEvent(1.0, 2.0), delta=1e-6)
    for _ in range(4):
        g.spend(GaussianEvent(0.25, 1.0))
    with pytest.raises(BudgetExceededError):
        g.spend(GaussianEvent(0.01, 1.0))


# ------------------------------------------------------------------ crashes lose no recorded spend
def test_killed_worker_mid_search_loses_no_spend(data, tmp_path):
    X, y = data
    path = tmp_path / "ledger.sqlite"
    log = tmp_path / "spends.log"
    acc = BudgetAccountant(100.0, path=path)
    est = TinyDPClassifier(EPS, accountant=acc, random_state=0, spend_log=str(log))
    grid = {"crash": ["never", "never", "exit_after_spend"]}
    with joblib.parallel_backend("loky", n_jobs=2):
        with pytest.raises(TerminatedWorkerError):
            GridSearchCV(est, grid, cv=3, error_score="raise").fit(X, y)
    logged = [float(line.split()[1]) for line in log.read_text().splitlines()]
    # reopen from disk: every spend a worker saw committed is there, including the killed one's
    stamps = {e.timestamp for e in BudgetAccountant(100.0, path=path).ledger}
    assert len(logged) >= 1 and set(logged) <= stamps
    # no spend was made without a fit (the log is written after the commit, so it may lag)
    assert len(stamps) <= 9


def test_exception_mid_search_keeps_earlier_spends(data, tmp_path):
    X, y = data
    acc = BudgetAccountant(100.0, path=tmp_path / "ledger.sqlite")
    est = TinyDPClassifier(EPS, accountant=acc, random_state=0)
    with pytest.raises(RuntimeError, match="before touching data"):
        GridSearchCV(est, {"crash": ["never", "raise_before"]}, cv=3, error_score="raise").fit(X, y)
    assert len(acc.ledger) == 3  # the first candidate's folds; the failing fit spent nothing
    with pytest.raises(RuntimeError, match="after the spend"):
        GridSearchCV(est, {"crash": ["raise_after_spend"]}, cv=3, error_score="raise").fit(X, y)
    assert len(acc.ledger) == 4  # a spend committed before a crash stays


def test_killed_worker_in_private_search_keeps_reservation(data, tmp_path):
    X, y = data
    path = tmp_path / "ledger.sqlite"
    acc = BudgetAccountant(5.0, path=path)
    search = DPGridSearchCV(
        TinyDPClassifier(), {"crash": ["never", "exit_after_spend"]}, epsilon=2.0, selection="exponential",
        accountant=acc, random_state=0,
    )
    with joblib.parallel_backend("loky", n_jobs=2):
        with pytest.raises(TerminatedWorkerError):
            search.fit(X, y)
    ledger = BudgetAccountant(5.0, path=path).ledger
    assert len(ledger) == 1 and ledger[0].label.startswith("DPGridSearchCV")
    assert BudgetAccountant(5.0, path=path).total()[0] == pytest.approx(2.0)
