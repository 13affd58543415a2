"""An explicit in-memory ledger under every joblib backend, with no change to user code (doc/persistence.rst).

GridSearchCV and cross_validate at n_jobs=2 with threads, loky processes and
joblib's Dask backend (a LocalCluster of 2 worker processes): every fit's
event reaches the user's ``BudgetAccountant()`` exactly once, a ceiling that
allows k fits refuses the others without spending, and the releases are the
same at n_jobs=1 and n_jobs=2.
"""

import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from sklearn_dpsco import DPGridSearchCV
from sklearn_dpsco.accounting import BudgetAccountant, DetachedLedgerError
from sklearn_dpsco.linear_model import DPHingeClassifier

EPS = 0.5
CV = KFold(4)  # deterministic folds: the same fits at any n_jobs
GRID = {"solver": ["output_perturbation", "localized_output_perturbation"]}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] - 0.5 * X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def dask_backend():
    """A context opening joblib's Dask backend on a LocalCluster of 2 worker processes (skipped without dask)."""
    pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
    )
    client = distributed.Client(cluster)
    yield lambda: joblib.parallel_config(backend="dask")
    client.close()
    cluster.close()


def _backend(name, dask_backend=None):
    if name == "dask":
        return dask_backend()
    return joblib.parallel_config(backend=name)


def _hinge(acc, **kw):
    return DPHingeClassifier(EPS, accountant=acc, random_state=0, **kw)


def _run(backend, n_jobs, data, acc, dask_backend=None):
    """GridSearchCV then cross_validate on one in-memory ledger; what they released, and the fits made."""
    X, y = data
    with _backend(backend, dask_backend):
        search = GridSearchCV(_hinge(acc), GRID, cv=CV, n_jobs=n_jobs, error_score="raise").fit(X, y)
        cv = cross_validate(_hinge(acc), X, y, cv=CV, n_jobs=n_jobs, return_estimator=True, error_score="raise")
    released = dict(
        scores=search.cv_results_["mean_test_score"],
        best_coef=search.best_estimator_.coef_,
        cv_coefs=np.stack([est.coef_ for est in cv["estimator"]]),
        cv_scores=cv["test_score"],
    )
    fitted = [search.best_estimator_] + list(cv["estimator"])
    n_fits = len(GRID["solver"]) * CV.get_n_splits() + 1 + CV.get_n_splits()
    return released, fitted, n_fits


def _assert_exactly_once(acc, fitted, n_fits):
    assert len(acc.ledger) == n_fits
    assert {e.label for e in acc.ledger} == {"DPHingeClassifier"}
    assert acc.total()[0] == pytest.approx(n_fits * EPS)
    events = [e.event for e in acc.ledger]
    for est in fitted:  # every released model's event is in the ledger
        assert est.privacy_event_ in events


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_in_memory_ledger_counts_every_fit_once_and_results_ignore_n_jobs(data, backend):
    serial = BudgetAccountant(100.0)
    expected, _, _ = _run("sequential", 1, data, serial)
    acc = BudgetAccountant(100.0)
    released, fitted, n_fits = _run(backend, 2, data, acc)
    _assert_exactly_once(acc, fitted, n_fits)
    for key, value in expected.items():
        np.testing.assert_array_equal(released[key], value, err_msg=key)
    assert sorted(map(repr, (e.event for e in acc.ledger))) == sorted(map(repr, (e.event for e in serial.ledger)))
    if backend == "loky":
        assert acc.path is not None  # moved to a session file when first sent to a worker


def test_in_memory_ledger_under_dask_local_cluster(data, dask_backend):
    serial = BudgetAccountant(100.0)
    expected, _, _ = _run("sequential", 1, data, serial)
    acc = BudgetAccountant(100.0)
    released, fitted, n_fits = _run("dask", 2, data, acc, dask_backend)
    assert acc.path is not None  # moved to a session file when first sent to a worker
    _assert_exactly_once(acc, fitted, n_fits)
    for key, value in expected.items():
        np.testing.assert_array_equal(released[key], value, err_msg=key)


def _ceiling_run(backend, data, k, dask_backend=None):
    X, y = data
    acc = BudgetAccountant(k * EPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (FitFailedWarning, UserWarning, RuntimeWarning))
        with _backend(backend, dask_backend):
            cv = cross_validate(_hinge(acc), X, y, cv=KFold(6), n_jobs=2, error_score=np.nan)
    return acc, cv["test_score"]


@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_ceiling_allows_k_fits_and_refuses_the_rest_without_spending(data, backend, request):
    dask_backend = request.getfixturevalue("dask_backend") if backend == "dask" else None
    k = 4
    acc, scores = _ceiling_run(backend, data, k, dask_backend)
    assert len(acc.ledger) == k and acc.total()[0] == pytest.approx(k * EPS)
    assert np.isfinite(scores).sum() == k and np.isnan(scores).sum() == 6 - k
    assert acc.remaining()[0] == pytest.approx(0.0, abs=1e-9)


def test_private_search_results_ignore_n_jobs(data):
    X, y = data
    out = []
    for n_jobs in (1, 2):
        acc = BudgetAccountant(10.0)
        with joblib.parallel_config(backend="loky"):
            search = DPGridSearchCV(
                DPHingeClassifier(), GRID, epsilon=2.0, selection="exponential", cv=2, random_state=0,
                accountant=acc, n_jobs=n_jobs,
            ).fit(X, y)
        out.append((search.best_params_, search.best_estimator_.coef_, [e.event for e in acc.ledger]))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert out[0][2] == out[1][2] and len(out[0][2]) == 1


def test_remote_worker_without_the_file_refuses_clearly(data, monkeypatch):
    # a worker on another machine does not see the session file: its copy is detached and refuses
    import pickle

    import sklearn_dpsco.accounting._accountant as accountant_module
    import sklearn_dpsco.accounting._portable as portable

    X, y = data
    acc = BudgetAccountant(10.0)
    blob = pickle.dumps(_hinge(acc))
    monkeypatch.setattr(accountant_module, "_origin", {})
    monkeypatch.setattr(accountant_module, "_restored", {})
    monkeypatch.setattr(portable.os.path, "exists", lambda path: False)
    remote = pickle.loads(blob)
    monkeypatch.undo()
    with pytest.raises(DetachedLedgerError, match="share a filesystem"):
        remote.fit(X, y)
    assert acc.ledger == ()
