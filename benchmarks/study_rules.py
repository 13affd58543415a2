"""Evidence for the default rules: sweeps behind the regularization and solver tables.

    OMP_NUM_THREADS=1 python benchmarks/study_rules.py hinge    # DPHingeClassifier alpha vs (n, d, eps), clip = true scale
    OMP_NUM_THREADS=1 python benchmarks/study_rules.py user     # UserLevelDPLogistic alpha vs (users, m, d, eps), data_norm = true bound
    OMP_NUM_THREADS=1 python benchmarks/study_rules.py linear   # DPLinearRegressor solver by (n, d, eps, delta)

Synthetic families cover d = 3 .. 100 (rows of norm <= 1, the declared bound, so "clip = the true
row-norm scale"); the real sets of bench_defaults.py in encoding (b) check the result. Every
private fit is one (epsilon, delta) fit with a fixed public setting; test utility is the mean over
noise seeds. Results go to benchmarks/results/rules_<study>.json and the printed tables.
"""

import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


# ---------------------------------------------------------------------------- synthetic families
def clf_family(n, d, seed=0, n_test=5000):
    """Gaussian rows scaled to norm <= 1 (median ~0.8), a linear rule with 10% label noise, 35% positives."""
    rng = np.random.default_rng(seed)
    N = n + n_test
    X = rng.standard_normal((N, d)) * 0.8 / math.sqrt(d)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    s = X @ w * math.sqrt(d)
    y = (s > np.quantile(s, 0.65)).astype(int)
    flip = rng.random(N) < 0.1
    y[flip] = 1 - y[flip]
    return X[:n], y[:n], X[n:], y[n:]


def reg_family(n, d, seed=0, n_test=5000):
    """Rows of norm <= 1, y = <w, x> + noise clipped to [-1, 1] (signal R^2 about 0.6-0.8)."""
    rng = np.random.default_rng(seed)
    N = n + n_test
    X = rng.standard_normal((N, d)) * 0.8 / math.sqrt(d)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    w = rng.standard_normal(d)
    w *= 0.8 / np.linalg.norm(w) * math.sqrt(d) / 2  # <w, x> of order 0.4
    y = np.clip(X @ w + 0.1 + 0.2 * rng.standard_normal(N), -1, 1)
    return X[:n], y[:n], X[n:], y[n:]


def user_family(n_users, m, d, seed=0, n_test_users=2000):
    """Users with m rows each, a user effect, rows of norm <= 1."""
    rng = np.random.default_rng(seed)
    U = n_users + n_test_users
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((U * m, d)) * 0.8 / math.sqrt(d)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    g = np.repeat(np.arange(U), m)
    s = X @ w * math.sqrt(d) + 0.5 * rng.standard_normal(U)[g]
    y = (s + 0.5 * rng.standard_normal(U * m) > 0.3).astype(int)
    tr = g < n_users
    return X[tr], y[tr], g[tr], X[~tr], y[~tr]


def _real(task):
    import _real_datasets as R

    out = []
    for key, rs_loader in R.DATASETS.items():
        rs = rs_loader()
        if rs.task != task:
            continue
        tr, te = R.train_test(rs)
        X, y = R.encode(rs, "scaled")
        out.append((rs.name, X[tr], y[tr], X[te], y[te], None if rs.groups is None else rs.groups[tr], rs.m))
    return out


def _fit(est, X, y, g=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y) if g is None else est.fit(X, y, g)


# ---------------------------------------------------------------------------- hinge
HINGE_A = [10.0 ** k for k in np.arange(-4.5, 0.01, 0.5)]


def study_hinge(seeds=(0, 1)):
    """Best alpha / C^2 for output perturbation and for localization's first phase, C = 1 = true scale."""
    from sklearn.svm import LinearSVC

    from sklearn_dpsco import DPHingeClassifier

    cases = []
    for d in (3, 10, 30, 100):
        for n in (1000, 10000):
            X, y, Xt, yt = clf_family(n, d)
            cases.append((f"synth d={d} n={n}", X, y, Xt, yt))
    for name, X, y, Xt, yt, _, _ in _real("clf"):
        cases.append((name, X, y, Xt, yt))
    rows = []
    for name, X, y, Xt, yt in cases:
        n, d = X.shape
        ref = LinearSVC().fit(X, y).score(Xt, yt)
        triv = max(np.mean(yt), 1 - np.mean(yt))
        for eps in (0.5, 2.0):
            for solver in ("output_perturbation", "localized_output_perturbation"):
                if solver != "output_perturbation" and n < 1000:
                    continue
                accs = []
                for a in HINGE_A:
                    acc = [_fit(DPHingeClassifier(epsilon=eps, clip=1.0, alpha=a, solver=solver, random_state=s,
                                                  accountant=_ledger()), X, y).score(Xt, yt) for s in seeds]
                    accs.append(float(np.mean(acc)))
                best = int(np.argmax(accs))
                rows.append({"case": name, "n": n, "d": d + 1, "eps": eps, "solver": solver, "ref": ref,
                             "trivial": triv, "accs": accs, "best_a": HINGE_A[best], "best": accs[best]})
                u = (d + 1) / eps
                print(f"{name:28s} eps={eps:<4} {solver[:9]:9s} u/n={u / n:.2e} best a={HINGE_A[best]:.1e} "
                      f"acc={accs[best]:.3f} ref={ref:.3f} triv={triv:.3f} | "
                      + " ".join(f"{v:.3f}" for v in accs), flush=True)
    return rows


# ---------------------------------------------------------------------------- user-level
USER_A = [10.0 ** k for k in np.arange(-4.0, 0.01, 0.5)]


def study_user(seeds=(0,), delta=1e-6):
    from sklearn.linear_model import LogisticRegression

    from sklearn_dpsco import UserLevelDPLogistic

    cases = []
    for d in (3, 10, 30, 100):
        for nu in (500, 5000):
            X, y, g, Xt, yt = user_family(nu, 5, d)
            cases.append((f"synth d={d} users={nu} m=5", X, y, g, Xt, yt, 5))
    for name, X, y, Xt, yt, g, m in _real("group"):
        cases.append((name, X, y, g, Xt, yt, m))
    rows = []
    for name, X, y, g, Xt, yt, m in cases:
        d = X.shape[1] + 1
        nu = len(np.unique(g))
        ref = LogisticRegression(max_iter=2000).fit(X, y).score(Xt, yt)
        triv = max(np.mean(yt), 1 - np.mean(yt))
        for eps in (0.5, 2.0):
            accs = []
            for a in USER_A:
                acc = []
                for s in seeds:
                    try:
                        est = _fit(UserLevelDPLogistic(epsilon=eps, delta=delta, alpha=a, data_norm=math.sqrt(2),
                                                       max_items_per_user=m, random_state=s, accountant=_ledger()),
                                   X, y, g)
                        acc.append(est.score(Xt, yt))
                    except ValueError:
                        acc.append(float("nan"))
                accs.append(float(np.mean(acc)))
            best = int(np.nanargmax(accs))
            rows.append({"case": name, "users": nu, "m": m, "d": d, "eps": eps, "ref": ref, "trivial": triv,
                         "accs": accs, "best_a": USER_A[best], "best": accs[best]})
            print(f"{name:30s} eps={eps:<4} best a={USER_A[best]:.1e} acc={accs[best]:.3f} ref={ref:.3f} "
                  f"triv={triv:.3f} | " + " ".join(f"{v:.3f}" for v in accs), flush=True)
    return rows


# ---------------------------------------------------------------------------- linear solver table
LINEAR_SOLVERS = ("adassp", "phased_sgd", "lowy", "phased_erm")


def study_linear(seeds=(0,)):
    from sklearn.linear_model import LinearRegression

    from sklearn_dpsco import DPLinearRegressor

    cases = []
    for d in (3, 5, 10, 30):
        for n in (2000, 20000):
            X, y, Xt, yt = reg_family(n, d)
            cases.append((f"synth d={d} n={n}", X, y, Xt, yt))
    for name, X, y, Xt, yt, _, _ in _real("reg"):
        cases.append((name, X, y, Xt, yt))
    rows = []
    for name, X, y, Xt, yt in cases:
        n, d = X.shape
        ref = LinearRegression().fit(X, y).score(Xt, yt)
        for eps, delta in ((0.5, 0.0), (2.0, 0.0), (1.0, 1e-5)):
            r2, secs = {}, {}
            for solver in LINEAR_SOLVERS:
                vals, t0 = [], time.perf_counter()
                for s in seeds:
                    try:
                        est = _fit(DPLinearRegressor(epsilon=eps, delta=delta, solver=solver, random_state=s,
                                                     accountant=_ledger()), X, y)
                        vals.append(est.score(Xt, yt))
                    except ValueError:
                        vals.append(float("nan"))
                r2[solver], secs[solver] = float(np.mean(vals)), (time.perf_counter() - t0) / len(seeds)
            best = max(r2, key=lambda k: -np.inf if np.isnan(r2[k]) else r2[k])
            rows.append({"case": name, "n": n, "d": d + 1, "eps": eps, "delta": delta, "ref": ref, "r2": r2,
                         "time": secs, "best": best})
            print(f"{name:22s} eps={eps:<4} delta={delta:<6} m={n * eps / (d + 1):8.0f} best={best:10s} ref={ref:.3f} | "
                  + " ".join(f"{k}={v:.3f}" for k, v in r2.items()), flush=True)
    return rows


def main():
    which = sys.argv[1]
    rows = {"hinge": study_hinge, "user": study_user, "linear": study_linear}[which]()
    (HERE / "results" / f"rules_{which}.json").write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
