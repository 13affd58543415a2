"""AdaSSP vs Phased-ERM at pure DP between m = 500 and m = 1e4 (the auto table's gap), by d.

    OMP_NUM_THREADS=1 python benchmarks/study_small_d_gap.py [--seeds 10]

Encoding (b) of the real regression sets (``row_bound=1, label_bound=1`` declared) and the
synthetic ``reg_family`` of study_rules.py at d + 1 in {4, 5, 6, 21}; test R^2 mean (std) over the
noise seeds at epsilon 0.5 / 1 / 2 for each forced solver and for ``solver="auto"``. Results in
benchmarks/results/rules.md, "Small d in the pure-DP gap".
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

EPSILONS = (0.5, 1.0, 2.0)
REAL = ("Vocab", "BudgetFood", "Computers", "Wages", "diabetes")
SYNTHETIC = ((3, 20000), (3, 5000), (4, 20000), (4, 5000), (5, 5000), (20, 20000))


def _cells(X, y, Xt, yt, solver, seeds):
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor

    out = []
    for eps in EPSILONS:
        sc = []
        for seed in seeds:
            est = DPLinearRegressor(epsilon=eps, random_state=seed, row_bound=1.0, label_bound=1.0, solver=solver,
                                    accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            p = est.predict(Xt)
            sc.append(r2_score(yt, p) if np.all(np.isfinite(p)) else np.nan)
        out.append(f"{np.mean(sc):.3f} ({np.std(sc):.3f})")
    return out


def main(argv=None):
    import _real_datasets as R
    from study_rules import reg_family

    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=10)
    a = p.parse_args(argv)
    seeds = range(a.seeds)
    sets = []
    for key in REAL:
        rs = R.load(key)
        tr, te = R.train_test(rs)
        X, y = R.encode(rs, "scaled")
        sets.append((f"{key} (d+1 = {X.shape[1] + 1}, n = {len(tr)})", X[tr], y[tr], X[te], y[te]))
    for d, n in SYNTHETIC:
        sets.append((f"synthetic (d+1 = {d + 1}, n = {n})",) + reg_family(n, d))
    print("| set | solver | eps 0.5 | eps 1 | eps 2 |\n|---|---|---|---|---|")
    for name, X, y, Xt, yt in sets:
        for solver in ("auto", "adassp", "phased_erm"):
            print(f"| {name} | {solver} | " + " | ".join(_cells(X, y, Xt, yt, solver, seeds)) + " |", flush=True)


if __name__ == "__main__":
    main()
