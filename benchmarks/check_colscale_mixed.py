"""Column scaling on the public ``_mixed`` family (a year near 2000, an income, an indicator, a standard column):
``DPLinearRegressor`` and ``DPHingeClassifier`` defaults, test R^2 / accuracy on 5000 held-out rows, 5 seeds.

Run by hand with the library to measure installed (benchmarks/results/colscale_two_stage.md, "Disjoint halves")::

    OMP_NUM_THREADS=1 python benchmarks/check_colscale_mixed.py
"""

import warnings

import numpy as np
from sklearn.metrics import r2_score

from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco.testing import mixed_units as mixed


def main():
    warnings.simplefilter("ignore")
    for n in (3000, 8000, 30000, 100000):
        for eps in (0.5, 1.0, 2.0):
            r2s, accs = [], []
            for seed in range(5):
                X, lab, y = mixed(n + 5000, seed)
                reg = DPLinearRegressor(epsilon=eps, random_state=seed).fit(X[:n], y[:n])
                r2s.append(r2_score(y[n:], reg.predict(X[n:])))
                clf = DPHingeClassifier(epsilon=eps, random_state=seed).fit(X[:n], lab[:n])
                accs.append(clf.score(X[n:], lab[n:]))
            stages = (reg.fit_info_.get("column_scaling") or {}).get("stages")
            print(n, eps, stages, reg.solver_, f"R2 {np.mean(r2s):.3f}", f"acc {np.mean(accs):.3f}", flush=True)


if __name__ == "__main__":
    main()
