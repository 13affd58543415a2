"""diffprivlib side of bench_linear.py: run in diffprivlib's own venv (/work/venv_dpl).

Usage: python _dpl_linear.py data.npz eps1,eps2,... n_seeds out.json

Reads X, y, X_test, y_test from the .npz written by bench_linear.py (the same
arrays the sklearn_dpsco side uses), fits diffprivlib's LinearRegression with
the same public bounds (every feature in [-1, 1] since rows have norm <= 1,
labels in [-1, 1]) and writes test R^2 and fit times as JSON.
"""

import json
import sys
import time
import warnings

import numpy as np
from sklearn.metrics import r2_score


def main():
    path, eps_list, n_seeds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    from diffprivlib.models import LinearRegression

    data = np.load(path)
    X, y, Xt, yt = data["X"], data["y"], data["X_test"], data["y_test"]
    results = {}
    for eps in (float(e) for e in eps_list.split(",")):
        r2, secs = [], []
        for seed in range(n_seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                model = LinearRegression(epsilon=eps, bounds_X=(-1.0, 1.0), bounds_y=(-1.0, 1.0), random_state=seed)
                model.fit(X, y)
                secs.append(time.perf_counter() - t0)
                pred = model.predict(Xt)
            r2.append(float(r2_score(yt, pred)) if np.all(np.isfinite(pred)) else float("-inf"))
        results[repr(eps)] = {"r2": r2, "time": secs}
    with open(out, "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main()
