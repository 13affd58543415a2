"""Does secure Snowball-SGD (or interpolation over it) win anywhere solver="auto" could pick it?

    OMP_NUM_THREADS=1 python benchmarks/bench_secure_snowball.py [synth,real,interp]

Approximate DP (delta = 1e-5) on the default noise="secure": the auto table's candidates (adassp,
phased_erm) against snowball and interpolation on the secure path (one discrete Gaussian per batch
sum, constant batches; doc/privacy/snowball_sgd.rst, "Secure path"), with float Snowball as a
reference. Cells: the synthetic family of study_rules.py (rows of norm <= 1, declared row_bound = 1)
at d+1 in {4, 11, 31}, n in {2000, 20000, 200000}, eps in {0.25, 1}; the real regression sets in
encoding (b) at eps in {0.5, 1, 2}; the noiseless d = 20 family of bench_linear.py (excess risk).
Test R^2 (excess risk for interp), mean of 2 seeds. Raw lines: results/secure_snowball.log;
summary in results/rules.md, "Secure Snowball".
"""

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

SOLVERS = (("auto", "secure"), ("adassp", "secure"), ("phased_erm", "secure"), ("snowball", "secure"),
           ("interpolation", "secure"), ("snowball", "float"))
SEEDS = (0, 1)
DELTA = 1e-5


def _fit_score(X, y, Xt, yt, solver, noise, eps, metric, **kw):
    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor

    vals, picks, t0 = [], set(), time.perf_counter()
    for seed in SEEDS:
        est = DPLinearRegressor(epsilon=eps, delta=DELTA, solver=solver, noise=noise, random_state=seed,
                                accountant=BudgetAccountant(np.inf, 1.0), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        picks.add(est.solver_)
        if metric == "r2":
            vals.append(est.score(Xt, yt))
        else:  # excess risk 1/2 E(<w, x> - y)^2 on noiseless labels
            vals.append(0.5 * float(np.mean((est.predict(Xt) - yt) ** 2)))
    return float(np.mean(vals)), "/".join(sorted(picks)), (time.perf_counter() - t0) / len(SEEDS)


def _line(name, n, d, eps, X, y, Xt, yt, metric="r2", **kw):
    out = []
    for solver, noise in SOLVERS:
        try:
            v, pick, secs = _fit_score(X, y, Xt, yt, solver, noise, eps, metric, **kw)
            label = f"{solver}[{pick}]" if solver == "auto" else (solver if noise == "secure" else f"{solver}-float")
            out.append(f"{label}={v:.4g} ({secs:.1f}s)")
        except ValueError as err:
            out.append(f"{solver}-{noise}=refused({str(err)[:40]})")
    print(f"{name:24s} n={n:<7d} d+1={d + 1:<3d} eps={eps:<5} m={n * eps / (d + 1):9.0f} | " + " ".join(out),
          flush=True)


def synth():
    from study_rules import reg_family

    for d in (3, 10, 30):
        for n in (2000, 20000, 200000):
            X, y, Xt, yt = reg_family(n, d)
            for eps in (0.25, 1.0):
                _line(f"synth d={d}", n, d, eps, X, y, Xt, yt, row_bound=1.0, label_bound=1.0)


def real():
    import _real_datasets as R

    for key, loader in R.DATASETS.items():
        rs = loader()
        if rs.task != "reg":
            continue
        tr, te = R.train_test(rs)
        X, y = R.encode(rs, "scaled")
        for eps in (0.5, 1.0, 2.0):
            _line(rs.name, len(tr), X.shape[1], eps, X[tr], y[tr], X[te], y[te], row_bound=1.0, label_bound=1.0)


def interp():
    from bench_linear import synthetic

    for n in (5000, 20000, 80000):
        X, y, Xt, yt, _ = synthetic(n, noise=0.0)
        _line("interp d=20 (excess)", n, X.shape[1], 1.0, X, y, Xt, yt, metric="excess", fit_intercept=False,
              row_bound=1.0, label_bound=1.0)


if __name__ == "__main__":
    parts = sys.argv[1].split(",") if len(sys.argv) > 1 else ["synth", "real", "interp"]
    for part in parts:
        {"synth": synth, "real": real, "interp": interp}[part]()
