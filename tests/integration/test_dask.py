"""Fits on rows held by a Dask cluster: same event, same release as in memory, work on the workers.

A LocalCluster of two in-process workers (``processes=False``) keeps the
module fast; one test uses two worker processes so the tasks really cross a
process boundary (pickled plans, seeds, closures). Skipped without
dask.distributed (the ``test`` extra installs it).
"""

import pickle

import numpy as np
import pytest

pytest.importorskip("dask.distributed")
da = pytest.importorskip("dask.array")
from dask.distributed import Client, LocalCluster  # noqa: E402
from distributed.diagnostics.plugin import WorkerPlugin  # noqa: E402
from distributed.utils import key_split  # noqa: E402

from sklearn_dpsco._solvers._core._cluster import aligned_chunks  # noqa: E402
from sklearn_dpsco.accounting import BudgetAccountant  # noqa: E402
from sklearn_dpsco.linear_model import (  # noqa: E402
    DPGrowthAdaptiveRegressor,
    DPHingeClassifier,
    DPLinearRegressor,
    UserLevelDPLogistic,
)

N, D = 20000, 4  # more than two 8192-row blocks, so several aligned chunks


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D)) / 2
    y = X @ np.array([0.5, -0.3, 0.2, 0.1]) + 0.3 + 0.05 * rng.standard_normal(N)
    return X, y


def _dask(X, y, chunks, w=None):
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    yd = da.from_array(y, chunks=chunks)
    return (Xd, yd) if w is None else (Xd, yd, da.from_array(w, chunks=chunks))


def _same_fit(a, b):
    assert np.array_equal(a.coef_, b.coef_)
    assert np.array_equal(a.intercept_, b.intercept_)
    assert a.privacy_event_ == b.privacy_event_
    assert a.solver_ == b.solver_


def _spy_computes(monkeypatch):
    """Record every dask array computed or converted to NumPy from the client (there must be none)."""
    calls = []
    compute, to_numpy = da.Array.compute, da.Array.__array__

    def spy_compute(self, *args, **kwargs):
        calls.append(("compute", self.shape))
        return compute(self, *args, **kwargs)

    def spy_array(self, *args, **kwargs):
        calls.append(("__array__", self.shape))
        return to_numpy(self, *args, **kwargs)

    monkeypatch.setattr(da.Array, "compute", spy_compute)
    monkeypatch.setattr(da.Array, "__array__", spy_array)
    return calls


#: (task name, key, pickled bytes) of every task result kept on an in-process worker (see _ResultSizes)
RESULT_SIZES = []


class _ResultSizes(WorkerPlugin):
    """Records the pickled size of each task result as it lands in a worker's memory."""

    name = "result-sizes"

    def setup(self, worker):
        self.worker = worker

    def transition(self, key, start, finish, **kwargs):
        if finish == "memory" and key in self.worker.data:
            RESULT_SIZES.append((key_split(key), key, len(pickle.dumps(self.worker.data[key]))))


@pytest.fixture
def result_sizes(client):
    client.register_plugin(_ResultSizes())
    RESULT_SIZES.clear()
    yield RESULT_SIZES
    client.unregister_worker_plugin("result-sizes")


def _one_pass_params(solver):
    extra = dict(noise="float", delta=1e-6) if solver == "snowball" else {}
    return dict(solver=solver, row_bound=1.0, label_bound=2.0, **extra)


@pytest.mark.parametrize("solver", ["phased_sgd", "snowball"])
@pytest.mark.parametrize("chunks, weighted", [(3000, False), (9000, True), (20000, False)])
def test_one_pass_solvers_chunk_by_chunk_same_release(client, regression, solver, chunks, weighted, result_sizes,
                                                      monkeypatch):
    # fit: the public permutation drawn and applied on the workers, then a chain of per-chunk tasks
    X, y = regression
    w = np.linspace(0.2, 1.0, N) if weighted else None
    acc_mem, acc_dask = BudgetAccountant(delta=1e-3), BudgetAccountant(delta=1e-3)
    a = DPLinearRegressor(random_state=6, accountant=acc_mem, **_one_pass_params(solver)).fit(X, y, w)
    calls = _spy_computes(monkeypatch)
    b = DPLinearRegressor(random_state=6, accountant=acc_dask, **_one_pass_params(solver)).fit(*_dask(X, y, chunks, w))
    assert calls == []  # the rows never came to the client
    _same_fit(a, b)
    assert [e.event for e in acc_mem.ledger] == [e.event for e in acc_dask.ledger] and len(acc_dask.ledger) == 1
    # one task per aligned chunk, each passing on only the run: far smaller than one column of the rows
    chain = {key: size for name, key, size in result_sizes if name == "feed_blocks"}.values()
    assert len(chain) == len(aligned_chunks((chunks,) * (N // chunks) + ((N % chunks,) if N % chunks else ()), 8192))
    assert max(chain) < 8 * N / 4


@pytest.mark.parametrize("solver", ["phased_sgd", "snowball"])
def test_fit_stream_one_pass_solver_on_the_workers(client, regression, solver, result_sizes, monkeypatch):
    # fit_stream reads the rows in the order given, each dask chunk one block, as an array with that block size
    X, y = regression
    params = dict(random_state=7, **_one_pass_params(solver))
    a = DPLinearRegressor(**params).fit_stream(X, y, block_rows=5000)
    calls = _spy_computes(monkeypatch)
    b = DPLinearRegressor(**params).fit_stream(*_dask(X, y, 5000))
    assert calls == []
    _same_fit(a, b)
    chain = {key: size for name, key, size in result_sizes if name == "checked_feed"}.values()
    assert len(chain) == N // 5000 and max(chain) < 8 * N / 4
    # each chunk is fed where its rows are: no X chunk moves between the workers (a result landing
    # twice moved; a y chunk may join its X chunk, the runs move along the chain)
    keys = [key for _, key, _ in result_sizes]
    moved = [(name, size) for name, key, size in result_sizes if keys.count(key) > 1]
    assert all(size < 5000 * D * 8 for name, size in moved)


def test_unknown_chunk_sizes_are_read_on_a_copy(client, regression):
    # a dask DataFrame's .values has unknown (NaN) chunk sizes: fit and fit_stream compute them on a copy and
    # release what the known-size arrays release; the caller's arrays keep their unknown sizes
    X, y = regression
    Xd, yd = _dask(X, y, 5000)
    unknown_X, unknown_y = Xd[da.isfinite(Xd[:, 0])], yd[da.isfinite(yd)]  # every row kept, sizes unknown
    assert np.isnan(unknown_X.shape[0]) and np.isnan(unknown_y.shape[0])
    params = dict(random_state=7, **_one_pass_params("adassp"))
    _same_fit(DPLinearRegressor(**params).fit_stream(Xd, yd), DPLinearRegressor(**params).fit_stream(unknown_X, unknown_y))
    _same_fit(DPLinearRegressor(**params).fit(Xd, yd), DPLinearRegressor(**params).fit(unknown_X, unknown_y))
    assert np.isnan(unknown_X.shape[0]) and np.isnan(unknown_y.shape[0])


def test_sparse_chunks_are_named_in_the_refusal(client, regression):
    import scipy.sparse as sp

    X, y = regression
    Xd, yd = _dask(X, y, 5000)
    acc = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="dask array of sparse chunks.*Nothing was spent"):
        DPLinearRegressor(accountant=acc).fit(Xd.map_blocks(sp.csr_matrix), yd)
    assert acc.total() == (0.0, 0.0)


def test_fit_stream_bad_chunk_refused_on_its_worker(client, regression):
    X, y = regression
    X = X.copy()
    X[N - 3, 0] = np.inf  # in the last chunk: the run has advanced on the workers, nothing was released
    acc = BudgetAccountant(epsilon=10.0)
    est = DPLinearRegressor(accountant=acc, random_state=0, **_one_pass_params("phased_sgd"))
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.fit_stream(*_dask(X, y, 5000))
    assert acc.ledger == ()
    assert not hasattr(est, "coef_")


def test_run_one_pass_moves_the_generator_as_in_memory(client, regression):
    # later draws on the client continue the sequence: the generator leaves the chain where memory leaves it
    from sklearn_dpsco._solvers import ArraySource, SGDSettings, phased_sgd_schedule, run_phased_sgd
    from sklearn_dpsco._solvers._core._row_source import DaskSource
    from sklearn_dpsco._solvers._noisy_sgd._phased_sgd import PhasedSGDRun

    X, y = regression
    settings = SGDSettings(clip=1.0, row_bound=1.0, intercept_scaling=0.0, radius=1.0)
    schedule = phased_sgd_schedule(N, D, epsilon=1.0, delta=0.0, settings=settings)
    rng_mem, rng_dask = np.random.default_rng(4), np.random.default_rng(4)
    w_mem = run_phased_sgd(ArraySource(X, y, block_rows=4000), schedule, rng_mem)
    run = DaskSource(*_dask(X, y, 4000)).run_one_pass(lambda rng: PhasedSGDRun(schedule, rng, D), rng_dask)
    assert np.array_equal(run.result(), w_mem)
    assert rng_mem.random() == rng_dask.random()


@pytest.mark.parametrize("params", [
    dict(solver="adassp", row_bound=2.0, label_bound=2.0),
    dict(solver="adassp", delta=1e-6),  # auto row and label bounds: grid counts on the workers
    dict(solver="adassp", noise="float", sample_weight=True),
])
@pytest.mark.parametrize("chunks", [3000, 7000, 20000])
def test_adassp_same_release_any_chunking(client, regression, params, chunks, monkeypatch):
    X, y = regression
    params = dict(params)
    w = np.linspace(0.2, 1.0, N) if params.pop("sample_weight", False) else None
    acc_mem, acc_dask = BudgetAccountant(delta=1e-3), BudgetAccountant(delta=1e-3)
    a = DPLinearRegressor(random_state=5, accountant=acc_mem, **params).fit(X, y, w)
    calls = _spy_computes(monkeypatch)
    b = DPLinearRegressor(random_state=5, accountant=acc_dask, **params).fit(*_dask(X, y, chunks, w))
    assert calls == []  # the rows never came to the client
    _same_fit(a, b)
    assert [e.event for e in acc_mem.ledger] == [e.event for e in acc_dask.ledger] and len(acc_dask.ledger) == 1
    assert b.fit_info_ == a.fit_info_


@pytest.mark.parametrize("weighted", [False, True])
def test_constant_at_the_label_mean_same_release(client, regression, weighted, monkeypatch):
    """n epsilon = 300: the intercept-only release at the label mean (linear_model/_constant_mean.py); its integer
    label sum is folded over the chunks on the workers: the in-memory release, the rows never at the client."""
    X, y = regression
    w = np.linspace(0.2, 1.0, N) if weighted else None
    eps = 300.0 / N
    a = DPLinearRegressor(epsilon=eps, random_state=5).fit(X, y, w)
    calls = _spy_computes(monkeypatch)
    b = DPLinearRegressor(epsilon=eps, random_state=5).fit(*_dask(X, y, 3000, w))
    assert calls == []
    _same_fit(a, b)
    assert a.solver_ == "intercept_only" and a.fit_info_["label_mean"] and b.fit_info_ == a.fit_info_


@pytest.mark.parametrize("chunks", [3000, 20000])
def test_labels_tied_at_the_centre_same_release(client, regression, chunks):
    """A 0/1 label with most rows at 0: the label bound's ties are split by position (label_deviations); each
    worker's chunk starts at an even position of the sampled rows, so the counts and the release are equal."""
    X, y = regression
    y01 = (y > np.quantile(y, 0.7)).astype(float)
    a = DPLinearRegressor(solver="adassp", random_state=5).fit(X, y01)
    b = DPLinearRegressor(solver="adassp", random_state=5).fit(*_dask(X, y01, chunks))
    _same_fit(a, b)
    assert a.label_center_ == 0.0 and a.label_bound_ >= 1.0 and b.fit_info_ == a.fit_info_


@pytest.mark.parametrize("solver", ["phased_erm", "lowy", "phased_sgd"])
def test_linear_sequential_solvers_same_release(client, regression, solver):
    # sequential solvers run the in-memory code on one worker: the same release
    X, y = regression
    X, y = X[:3000], y[:3000]
    params = dict(solver=solver, row_bound=1.0 if solver == "phased_sgd" else None, label_bound=2.0)
    a = DPLinearRegressor(random_state=1, **params).fit(X, y)
    b = DPLinearRegressor(random_state=1, **params).fit(*_dask(X, y, 1000))
    _same_fit(a, b)


@pytest.mark.parametrize("clip", ["auto", 2.0])
def test_hinge_same_release_multiclass(client, regression, clip):
    X, y = regression
    X, labels = X[:4000], np.digitize(y[:4000], [0.1, 0.5]).astype(str)  # three string classes
    a = DPHingeClassifier(random_state=2, clip=clip).fit(X, labels)
    b = DPHingeClassifier(random_state=2, clip=clip).fit(*_dask(X, labels, 1500))
    _same_fit(a, b)
    assert list(b.classes_) == ["0", "1", "2"]
    assert b.clip_ == a.clip_
    # a declared clip: the private centre runs on the workers too (exact integer sums: the same release)
    assert ("centering" in b.fit_info_[0]) == (clip != "auto")


@pytest.mark.parametrize("chunks", [3000, 20000])
def test_column_quartiles_on_sampled_rows_same_release(client, regression, chunks, monkeypatch):
    # the quartiles read every k-th row (k a power of two dividing the block size): each aligned chunk takes
    # chunk[::k], the same rows as X[::k] in memory, so the same counts and the same release
    from sklearn_dpsco.linear_model import _column_scaling

    monkeypatch.setattr(_column_scaling, "COLUMN_SAMPLE_RANKS", 10.0)
    X, y = regression
    X = X * np.array([1.0, 100.0, 1.0, 10.0])  # columns in mixed units
    a = DPLinearRegressor(random_state=6).fit(X, y)
    b = DPLinearRegressor(random_state=6).fit(*_dask(X, y, chunks))
    assert a.fit_info_["column_scaling"]["row_stride"] > 1
    assert a.fit_info_["column_scaling"]["stages"] == 2  # stage 2 counts x - centre_1 on the workers
    _same_fit(a, b)
    np.testing.assert_array_equal(a.column_center_, b.column_center_)
    np.testing.assert_array_equal(a.column_scale_, b.column_scale_)


def test_growth_regressor_same_release(client, regression):
    X, y = regression
    X, y = X[:2000] / 2, np.clip(y[:2000], -1, 1)
    a = DPGrowthAdaptiveRegressor(random_state=4).fit(X, y)
    b = DPGrowthAdaptiveRegressor(random_state=4).fit(*_dask(X, y, 700))
    _same_fit(a, b)


def test_dask_dataframe_inputs(client, regression):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = regression
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)])
    a = DPLinearRegressor(solver="adassp", random_state=3).fit(frame, y)
    b = DPLinearRegressor(solver="adassp", random_state=3).fit(dd.from_pandas(frame, npartitions=3),
                                                              dd.from_pandas(pd.Series(y), npartitions=3))
    _same_fit(a, b)
    assert list(b.feature_names_in_) == list(frame.columns)
    assert b.n_features_in_ == D


@pytest.mark.parametrize("case, message", [
    ("nan_row", "NaN or infinity"),
    ("inf_label", "NaN or infinity"),
    ("weight_above_one", "lie in \\[0, 1\\]"),
    ("lengths", "inconsistent numbers of samples"),
])
def test_bad_input_refused_before_budget(client, regression, case, message):
    X, y = regression
    X, y, w = X.copy(), y.copy(), None
    if case == "nan_row":
        X[N - 5, 2] = np.nan  # in the last chunk only: the flag must come back from its worker
    elif case == "inf_label":
        y[17] = np.inf
    elif case == "weight_above_one":
        w = np.ones(N)
        w[N - 1] = 1.5
    acc = BudgetAccountant(epsilon=10.0)
    Xd, yd = _dask(X, y, 6000)
    if case == "lengths":
        yd = yd[:-1]
    est = DPLinearRegressor(solver="adassp", accountant=acc, random_state=0)
    with pytest.raises(ValueError, match=message):
        est.fit(Xd, yd, None if w is None else da.from_array(w, chunks=6000))
    assert acc.ledger == ()
    assert not hasattr(est, "coef_")


def test_single_class_refused_before_budget(client, regression):
    X, _ = regression
    acc = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        DPHingeClassifier(accountant=acc).fit(*_dask(X, np.ones(N), 5000))
    assert acc.ledger == ()


@pytest.mark.parametrize("labels, message", [
    ([1, "a"], r"Mix of label input types \(string and number\).*Nothing was spent"),  # a chunk holds both
    (["a", None], r"missing labels: None, NaN or pd\.NA.*Nothing was spent"),
])
def test_unsortable_labels_refused_by_name_before_budget(client, regression, labels, message):
    """Mixed str / number or missing labels on the workers: refused with the in-memory fit's message (found by the
    bug hunt: the workers' np.unique raised "'<' not supported between instances of 'str' and 'int'")."""
    X, _ = regression
    acc = BudgetAccountant(epsilon=10.0)
    y = np.array(labels * (N // 2), dtype=object)
    with pytest.raises(ValueError, match=message):
        DPHingeClassifier(accountant=acc).fit(*_dask(X, y, 5000))
    assert acc.ledger == ()


@pytest.mark.parametrize("missing", [None, "pd.NA"])
def test_missing_targets_refused_by_name_before_budget(client, regression, missing):
    """A regressor's targets with None or pd.NA on the workers (an object chunk): named as the in-memory fit names
    them, not as "non-numeric values"."""
    import pandas as pd

    X, y = regression
    acc = BudgetAccountant(epsilon=10.0)
    y = y.astype(object)
    y[7] = pd.NA if missing == "pd.NA" else None
    with pytest.raises(ValueError, match=r"missing targets: None, NaN or pd\.NA.*Nothing was spent"):
        DPLinearRegressor(accountant=acc).fit(*_dask(X, y, 5000))
    assert acc.ledger == ()


def test_user_level_refused_before_budget(client, regression):
    X, y = regression
    acc = BudgetAccountant(epsilon=10.0)
    Xd, yd = _dask(X, (y > 0).astype(int), 5000)
    with pytest.raises(TypeError, match="privacy unit is a user"):
        UserLevelDPLogistic(accountant=acc).fit(Xd, yd, groups=np.arange(N) // 10)
    assert acc.ledger == ()


def test_fit_stream_adassp_reduces_on_workers(client, regression, monkeypatch):
    X, y = regression
    Xd, yd = _dask(X, y, 5000)
    params = dict(solver="adassp", row_bound=2.0, label_bound=2.0, random_state=7)
    a = DPLinearRegressor(**params).fit_stream(X, y, block_rows=5000)
    calls = _spy_computes(monkeypatch)
    b = DPLinearRegressor(**params).fit_stream(Xd, yd)
    assert calls == []
    _same_fit(a, b)


def test_worker_processes_same_release(regression):
    # tasks cross a process boundary: pickled plans, seeds and per-chunk closures
    X, y = regression
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster):
        b = DPLinearRegressor(random_state=9, solver="adassp").fit(*_dask(X, y, 9000))
        c = DPHingeClassifier(random_state=9, clip=1.0).fit(*_dask(X[:3000], (y[:3000] > 0.3).astype(int), 1000))
        s = DPLinearRegressor(random_state=9, **_one_pass_params("snowball")).fit(*_dask(X, y, 9000))
    _same_fit(DPLinearRegressor(random_state=9, solver="adassp").fit(X, y), b)
    _same_fit(DPLinearRegressor(random_state=9, **_one_pass_params("snowball")).fit(X, y), s)
    _same_fit(DPHingeClassifier(random_state=9, clip=1.0).fit(X[:3000], (y[:3000] > 0.3).astype(int)), c)


def test_task_failing_after_the_budget_check_spends_nothing(client, regression, tmp_path):
    # validation reads the three chunks once; the next read (the private statistics) fails on a worker
    X, y = regression
    log = tmp_path / "reads"
    log.write_text("")

    def flaky(block):
        if block.shape[0]:  # not dask's meta probe
            with open(log, "a") as fh:
                fh.write("r\n")
            if len(log.read_text().split()) > 3:
                raise RuntimeError("worker lost")
        return block

    Xd = da.from_array(X, chunks=(8192, D)).map_blocks(flaky, dtype=float)
    acc = BudgetAccountant(epsilon=10.0)
    est = DPLinearRegressor(solver="adassp", row_bound=2.0, label_bound=2.0, accountant=acc, random_state=0)
    with pytest.raises(RuntimeError, match="worker lost"):
        est.fit(Xd, da.from_array(y, chunks=8192))
    assert len(log.read_text().split()) > 3  # the failure came after validation
    assert acc.ledger == ()
    assert not hasattr(est, "coef_")


def test_results_do_not_depend_on_n_jobs(client, regression):
    X, y = regression
    labels = np.digitize(y[:3000], [0.1, 0.5])
    fits = [DPHingeClassifier(random_state=3, clip=1.0, n_jobs=j).fit(*_dask(X[:3000], labels, 1000)) for j in (1, 3)]
    _same_fit(*fits)


# -- preprocessing and pipelines on the cluster ------------------------------------------------------------------


@pytest.fixture(scope="module")
def raw_columns():
    """Columns in mixed units and offsets (the scaler's auto bounds and statistics have work to do)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, D)) * np.array([1.0, 100.0, 3.0, 10.0]) + np.array([0.0, 50.0, 0.0, 2000.0])
    y = X @ np.array([0.5, 0.003, 0.2, 0.01]) + rng.normal(size=N)
    return X, y


def _same_scaler(a, b):
    for attr in ("mean_", "scale_", "var_", "lower_", "upper_", "passthrough_"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr)), attr
    assert a.privacy_event_ == b.privacy_event_
    assert (a.epsilon_spent_, a.delta_spent_) == (b.epsilon_spent_, b.delta_spent_)
    assert a.n_features_in_ == b.n_features_in_


@pytest.mark.parametrize("params", [
    dict(),  # auto bounds: quartiles from the chunks' grid counts, then the unit map on the workers
    dict(delta=1e-6),
    dict(bounds=(-300.0, 3000.0)),
    dict(bounds=([-3, -300, -10, 1900], [3, 400, 10, 2100]), with_std=False),
])
@pytest.mark.parametrize("chunks", [3000, 20000])
def test_scaler_fit_same_release_on_the_workers(client, raw_columns, params, chunks, monkeypatch):
    from sklearn_dpsco.preprocessing import DPStandardScaler

    X, y = raw_columns
    a = DPStandardScaler(random_state=5, **params).fit(X)
    Xd, _ = _dask(X, y, chunks)
    calls = _spy_computes(monkeypatch)
    b = DPStandardScaler(random_state=5, **params).fit(Xd)
    assert calls == []  # nothing computed to the client: flags, counts and integer sums only
    _same_scaler(a, b)
    assert a.fit_info_.get("quartiles") is None or all(
        np.array_equal(p, q) for p, q in zip(a.fit_info_["quartiles"], b.fit_info_["quartiles"]))
    t = b.transform(Xd)
    assert isinstance(t, da.Array) and calls == []  # lazy
    assert np.array_equal(t.compute(), a.transform(X))
    assert np.array_equal(b.inverse_transform(t).compute(), a.inverse_transform(a.transform(X)))
    assert np.array_equal(b.fit_transform(Xd).compute(), a.transform(X))


def test_scaler_user_level_refused_before_budget(client, raw_columns):
    from sklearn_dpsco.preprocessing import DPStandardScaler

    X, y = raw_columns
    acc = BudgetAccountant(epsilon=10.0)
    est = DPStandardScaler(privacy_unit="user", bounds=(-10, 10), max_items_per_user=5, accountant=acc)
    with pytest.raises(TypeError, match="cannot fit rows held by a Dask cluster"):
        est.fit(_dask(X, y, 5000)[0], groups=np.arange(N) // 10)
    assert acc.ledger == ()
    assert not hasattr(est, "mean_")


def test_scaler_bad_rows_refused_before_budget(client, raw_columns):
    from sklearn_dpsco.preprocessing import DPStandardScaler

    X, y = raw_columns
    X = X.copy()
    X[N - 3, 1] = np.inf  # in the last chunk: the flag comes back from its worker
    acc = BudgetAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="NaN or infinity"):
        DPStandardScaler(accountant=acc).fit(_dask(X, y, 6000)[0])
    assert acc.ledger == ()


def test_transforms_stay_lazy_dataframes_and_set_output(client, raw_columns, monkeypatch):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from sklearn_dpsco.preprocessing import DPStandardScaler, RowNormClipper

    X, y = raw_columns
    names = [f"f{j}" for j in range(D)]
    frame = pd.DataFrame(X, columns=names)
    ddf = dd.from_pandas(frame, npartitions=3)
    a = DPStandardScaler(random_state=2).fit(frame)
    b = DPStandardScaler(random_state=2).fit(ddf)
    _same_scaler(a, b)
    assert list(b.feature_names_in_) == names
    calls = _spy_computes(monkeypatch)
    t = b.transform(ddf)  # default output: a lazy dask array
    assert isinstance(t, da.Array) and calls == []
    assert np.array_equal(t.compute(), a.transform(frame))
    b.set_output(transform="pandas")
    a.set_output(transform="pandas")
    tf = b.transform(ddf)  # a lazy dask DataFrame, index and partitions kept
    assert isinstance(tf, dd.DataFrame) and list(tf.columns) == names
    pd.testing.assert_frame_equal(tf.compute(), a.transform(frame))
    tf = b.transform(da.from_array(X, chunks=(7000, D)))
    assert isinstance(tf, dd.DataFrame)
    np.testing.assert_array_equal(tf.compute().to_numpy(), a.transform(X).to_numpy())
    b.set_output(transform="default")
    with pytest.raises(ValueError, match="features"):
        b.transform(da.from_array(X[:, :3], chunks=(7000, 3)))

    clip = RowNormClipper(max_norm=100.0)
    calls.clear()
    tc = clip.fit_transform(ddf)
    assert isinstance(tc, da.Array) and calls == []  # fit reads the columns only
    assert np.array_equal(tc.compute(), RowNormClipper(max_norm=100.0).fit_transform(frame))
    bad = X.copy()
    bad[5, 0] = np.nan
    lazy = clip.transform(da.from_array(bad, chunks=(7000, D)))  # refused when computed, on its worker
    with pytest.raises(ValueError, match="NaN or infinity"):
        lazy.compute()


def _pipelines(model):
    from sklearn_dpsco.preprocessing import DPStandardScaler, RowNormClipper, make_dp_pipeline

    return [make_dp_pipeline(DPStandardScaler(random_state=4), model(random_state=4)),
            make_dp_pipeline(DPStandardScaler(random_state=4, bounds=(-300.0, 3000.0)), RowNormClipper(2.0),
                             model(random_state=4), delta=1e-6, epsilon=2.0)]


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("model", ["regressor", "hinge"])
def test_pipeline_same_release_on_the_workers(client, raw_columns, which, model, monkeypatch):
    import warnings

    X, y = raw_columns
    cls = DPLinearRegressor
    if model == "hinge":
        X, y, cls = X[:4000], (y[:4000] > np.median(y)).astype(int), DPHingeClassifier
    acc_a, acc_b = BudgetAccountant(epsilon=10.0, delta=1e-5), BudgetAccountant(epsilon=10.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the dry run's synthetic rows are too few for auto bounds
        a = _pipelines(cls)[which].set_params(accountant=acc_a).fit(X, y)
        calls = _spy_computes(monkeypatch)
        b = _pipelines(cls)[which].set_params(accountant=acc_b).fit(*_dask(X, y, 1500 if model == "hinge" else 7000))
    assert calls == []
    _same_fit(a[-1], b[-1])
    _same_scaler(a[0], b[0])
    assert a.privacy_event_ == b.privacy_event_ and a.budget_shares_ == b.budget_shares_
    assert [e.event for e in acc_a.ledger] == [e.event for e in acc_b.ledger]


def test_pipeline_dataframes_and_refusals(client, raw_columns):
    import warnings

    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from sklearn.preprocessing import Normalizer

    from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

    X, y = raw_columns
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = _pipelines(DPLinearRegressor)[0].fit(frame, y)
        b = _pipelines(DPLinearRegressor)[0].fit(dd.from_pandas(frame, npartitions=4),
                                                 dd.from_pandas(pd.Series(y), npartitions=4))
    _same_fit(a[-1], b[-1])
    assert list(b.feature_names_in_) == list(frame.columns)

    acc = BudgetAccountant(epsilon=10.0)
    Xd, yd = _dask(X, y, 5000)
    pipe = make_dp_pipeline(Normalizer(), DPLinearRegressor(), accountant=acc)
    with pytest.raises(TypeError, match="Normalizer.*cannot transform rows held by a Dask cluster"):
        pipe.fit(Xd, yd)
    bad = X.copy()
    bad[N - 1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        make_dp_pipeline(DPStandardScaler(), DPLinearRegressor(), accountant=acc).fit(_dask(bad, y, 5000)[0], yd)
    assert acc.ledger == ()
