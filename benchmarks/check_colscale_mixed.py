"""Column scaling on the public ``_mixed`` family (a year near 2000, an income, an indicator, a standard column):
``DPLinearRegressor`` and ``DPHingeClassifier`` defaults, test R^2 / accuracy on 5000 held-out rows, 5 seeds.

Run by hand with the library to measure installed (benchmarks/results/colscale_two_stage.md, "Disjoint halves")::

    OMP_NUM_THREADS=1 python benchmarks/check_colscale_mixed.py
"""
import sys, json, warnings
warnings.simplefilter("ignore")
import numpy as np
def _mixed(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    year = 1975.0 + 40.0 * rng.random(n)
    income = 1000.0 * rng.standard_normal(n)
    ind = (rng.random(n) < 0.5).astype(float)
    z = rng.standard_normal(n)
    X = np.column_stack([year, income, ind, z])
    signal = (year - 1995.0) / 12.0 + income / 1000.0 + (ind - 0.5) * 2.0 + z
    y_cls = (signal + 0.5 * rng.standard_normal(n) > 0).astype(int)
    y_reg = 10.0 + signal + 0.5 * rng.standard_normal(n)
    return X, y_cls, y_reg
from sklearn_dpsco import DPLinearRegressor, DPHingeClassifier
from sklearn.metrics import r2_score
res = {}
for n in (3000, 8000, 30000, 100000):
    for eps in (0.5, 1.0, 2.0):
        r2s, accs, st = [], [], None
        for seed in range(5):
            X, lab, y = _mixed(n=n + 5000, seed=seed)
            Xtr, Xte, ytr, yte, ltr, lte = X[:n], X[n:], y[:n], y[n:], lab[:n], lab[n:]
            e = DPLinearRegressor(epsilon=eps, random_state=seed).fit(Xtr, ytr)
            r2s.append(r2_score(yte, e.predict(Xte)))
            st = (e.fit_info_.get("column_scaling") or {}).get("stages"), e.solver_
            h = DPHingeClassifier(epsilon=eps, random_state=seed).fit(Xtr, ltr)
            accs.append(h.score(Xte, lte))
        print(n, eps, st, "R2 %.3f" % np.mean(r2s), "acc %.3f" % np.mean(accs), flush=True)
