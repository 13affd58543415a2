"""Speed of the compiled kernels against scikit-learn (run by hand, not a test).

    python benchmarks/bench_kernels.py [--quick]

Prints one table: our time, the reference time and the ratio (ours / ref;
below 1 means we are faster). Timings are the best of a few repeats on
synthetic data (seeded), single-threaded kernels.
"""
import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.svm import LinearSVC

from sklearn_dpsco._fast._erm import _gradient_blas, certified_erm
from sklearn_dpsco._fast._losses import Hinge, Logistic
from sklearn_dpsco._fast._objective import Objective
from sklearn_dpsco._fast._rows import RowData
from sklearn_dpsco._fast._sgd import sgd_one_pass


def best_of(fn, repeat):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def make_data(n, d, density, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    if density < 1:
        # nnz_row distinct random columns per row (scipy.sparse.random is very
        # slow at this size)
        nnz_row = max(1, int(round(density * d)))
        cols = np.sort(rng.integers(0, d, size=(n, nnz_row)), axis=1)
        X = sp.csr_matrix((rng.normal(size=n * nnz_row), cols.ravel(),
                           np.arange(0, n * nnz_row + 1, nnz_row)), shape=(n, d))
        X.sum_duplicates()
    else:
        X = rng.normal(size=(n, d))
    y = np.sign(X @ w + 0.5 * rng.normal(size=n))
    y[y == 0] = 1.0
    return X, y


def bench_sgd(rows_out, X, y, label, repeat):
    step, alpha = 0.01, 1e-4
    rows = RowData(X, 1.0)
    w = np.zeros(rows.n_features)
    t_ours, _ = best_of(lambda: sgd_one_pass(rows, y, Hinge(), w, step, alpha=alpha,
                                             average=False), repeat)
    t_avg, _ = best_of(lambda: sgd_one_pass(rows, y, Hinge(), w, step, alpha=alpha), repeat)
    clf = SGDClassifier(loss="hinge", alpha=alpha, max_iter=1, tol=None, shuffle=False,
                        learning_rate="constant", eta0=step)
    clf_avg = SGDClassifier(loss="hinge", alpha=alpha, max_iter=1, tol=None, shuffle=False,
                            learning_rate="constant", eta0=step, average=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t_sk, _ = best_of(lambda: clf.fit(X, y), repeat)
        t_sk_avg, _ = best_of(lambda: clf_avg.fit(X, y), repeat)
    t_rows, _ = best_of(lambda: RowData(X, 1.0), repeat)
    rows_out.append((f"SGD epoch, hinge, {label}", t_ours, "SGDClassifier(max_iter=1)", t_sk))
    rows_out.append((f"SGD epoch + average, {label}", t_avg, "SGDClassifier(average=True)",
                     t_sk_avg))
    rows_out.append((f"  (RowData construction, {label})", t_rows, "-", np.nan))


def bench_erm(rows_out, X, y, label, repeat, lam, target):
    n = X.shape[0]
    rows = RowData(X)
    t_h, res_h = best_of(lambda: certified_erm(rows, y, Hinge(), lam, target_distance=target,
                                               max_epochs=5000), repeat)
    svc = LinearSVC(loss="hinge", C=1.0 / (lam * n), fit_intercept=False, dual=True,
                    max_iter=100000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t_svc, _ = best_of(lambda: svc.fit(X, y), repeat)
    rows_out.append((f"certified ERM hinge, {label} ({res_h.n_epochs} ep, "
                     f"bound {res_h.distance_bound:.1e})", t_h, "LinearSVC (tol=1e-4)", t_svc))
    t_l, res_l = best_of(lambda: certified_erm(rows, y, Logistic(), lam,
                                               target_distance=target, max_epochs=5000), repeat)
    for solver in ("lbfgs", "liblinear"):
        lr = LogisticRegression(C=1.0 / (lam * n), fit_intercept=False, solver=solver,
                                max_iter=10000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t_lr, _ = best_of(lambda: lr.fit(X, y), repeat)
        rows_out.append((f"certified ERM logistic, {label} ({res_l.n_epochs} ep, "
                         f"bound {res_l.distance_bound:.1e})", t_l,
                         f"LogisticRegression({solver})", t_lr))


def bench_gradient(rows_out, X, y, label, repeat):
    rows = RowData(X, 1.0)
    obj = Objective(rows, y, Logistic(), 0.0, None, 1.0)
    w = np.random.default_rng(1).normal(size=rows.n_features) * 0.1
    t_cy, g_cy = best_of(lambda: obj.loss_gradient(w), repeat)
    t_blas, g_blas = best_of(lambda: _gradient_blas(obj, w), repeat)
    assert np.allclose(g_cy, g_blas, rtol=1e-9, atol=1e-12)
    ref = "BLAS X@w, X.T@c" if not rows.is_sparse else "scipy.sparse X@w, X.T@c"
    rows_out.append((f"full gradient (nogil row loop), {label}", t_cy, ref, t_blas))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller problems")
    args = parser.parse_args()
    scale = 5 if args.quick else 1
    repeat = 3
    out = []
    Xd, yd = make_data(100_000 // scale, 100, 1.0)
    Xs, ys = make_data(200_000 // scale, 50_000, 20 / 50_000)
    bench_sgd(out, Xd, yd, f"dense {Xd.shape[0]}x{Xd.shape[1]}", repeat)
    bench_sgd(out, Xs, ys, f"CSR {Xs.shape[0]}x{Xs.shape[1]} nnz/row 20", repeat)
    bench_gradient(out, Xd, yd, "dense", repeat)
    bench_gradient(out, Xs, ys, "CSR", repeat)
    Xe, ye = make_data(20_000 // scale, 50, 1.0, seed=3)
    Xes, yes = make_data(20_000 // scale, 5_000, 20 / 5_000, seed=3)
    lam = 1e-3
    bench_erm(out, Xe, ye, f"dense {Xe.shape[0]}x{Xe.shape[1]}", 1, lam, 1e-3)
    bench_erm(out, Xes, yes, f"CSR {Xes.shape[0]}x{Xes.shape[1]}", 1, lam, 1e-3)

    w1 = max(len(r[0]) for r in out)
    w3 = max(len(r[2]) for r in out)
    print(f"{'kernel':<{w1}}  {'ours [s]':>9}  {'reference':<{w3}}  {'ref [s]':>9}  {'ratio':>6}")
    for name, t, ref, t_ref in out:
        ratio = t / t_ref if np.isfinite(t_ref) else np.nan
        print(f"{name:<{w1}}  {t:9.4f}  {ref:<{w3}}  {t_ref:9.4f}  {ratio:6.2f}")


if __name__ == "__main__":
    main()
