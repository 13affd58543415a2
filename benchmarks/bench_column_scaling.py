"""Fit time of the bare defaults with and without private column scaling, 200k x 20, one thread.

DPLinearRegressor and DPHingeClassifier at their defaults (epsilon 1, delta 0,
secure noise) with ``column_scaling="auto"`` (the default; it runs at this size)
against ``column_scaling=False`` (the fit as before: the declared path and
the auto path share all other code) and the scikit-learn counterpart, on two
public row families: ``ball`` (bench_speed.py's rows, uniform in the unit
ball) and ``mixed`` (the same rows with column 0 mapped to a year near 2000
and column 1 to an income in thousands). Also ``DPStandardScaler()`` (bounds
"auto") and the quartile releases alone, by the current path (one counting
pass over X gives every column's grid counts, reused by every level) and by the former path (one ``release`` per level and
column); both give the same releases (tests/mechanisms/test_quantile.py).
Time = best of ``--repeats``, process CPU time (one BLAS thread, so it is the
fit's own time; wall time on a shared machine counts the other jobs too).

    OMP_NUM_THREADS=1 python benchmarks/bench_column_scaling.py [--repeats 3]

Writes benchmarks/results/column_scaling_speed.md.
"""

import argparse
import os
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

N, D = 200_000, 20


def rows(kind, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((N, D))
    unit = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.random((N, 1)) ** (1.0 / D)
    w = np.linspace(1.0, -1.0, D) / np.sqrt(D) * 2.0
    y_reg = np.clip(unit @ w + 0.1 * rng.standard_normal(N), -1, 1)
    y_cls = np.where(unit @ w + 0.05 * rng.standard_normal(N) > 0, 1, -1)
    X = unit.copy()
    if kind == "mixed":
        X[:, 0] = 2000.0 + 200.0 * unit[:, 0]
        X[:, 1] = 1e4 * unit[:, 1]
    return X, y_reg, y_cls


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def former_quartiles(X, budget, rng):
    """The former path of private_column_quantiles: one release (one count of its column) per level and column."""
    from sklearn_dpsco._mechanisms._calibrate import quantile_mechanism_for
    from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID, BOUNDS_LEVELS

    part = budget.split_equal(len(BOUNDS_LEVELS) * X.shape[1])
    mechanisms = [quantile_mechanism_for(q, part, BOUNDS_GRID) for q in BOUNDS_LEVELS]
    return np.array([[m.release(X[:, j], rng) for j in range(X.shape[1])] for m in mechanisms])


def main(argv=None):
    from sklearn.linear_model import LinearRegression
    from sklearn.svm import LinearSVC

    from sklearn_dpsco import BudgetAccountant, DPHingeClassifier, DPLinearRegressor
    from sklearn_dpsco._budget import Budget
    from sklearn_dpsco._scale_estimation import private_column_quantiles
    from sklearn_dpsco.preprocessing import DPStandardScaler
    from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID, BOUNDS_LEVELS

    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    led = lambda: BudgetAccountant(float("inf"), 1.0)  # noqa: E731
    lines = ["# Column scaling: fit time at 200k x 20, one thread (benchmarks/bench_column_scaling.py)", "",
             f"Best of {a.repeats} (process CPU time); epsilon 1, delta 0, secure noise. `off` = `column_scaling=False` (the fit "
             "as before).", "", "| rows | estimator | sklearn (s) | off (s) | auto (s) | off / sklearn | "
             "auto / sklearn | score off | score auto |", "|---|---|---|---|---|---|---|---|---|"]
    for kind in ("ball", "mixed"):
        X, y_reg, y_cls = rows(kind)
        for name, cls, ref, y in (("DPLinearRegressor", DPLinearRegressor, LinearRegression, y_reg),
                                  ("DPHingeClassifier", DPHingeClassifier, LinearSVC, y_cls)):
            t_ref = best(lambda: ref().fit(X, y), a.repeats)
            t = {}
            sc = {}
            for cs in (False, "auto"):
                est = cls(epsilon=1.0, random_state=0, column_scaling=cs, accountant=led())
                t[cs] = best(lambda: est.fit(X, y), a.repeats)
                sc[cs] = est.score(X, y)
            lines.append(f"| {kind} | {name} | {t_ref:.2f} | {t[False]:.2f} | {t['auto']:.2f} | "
                         f"{t[False] / t_ref:.1f} | {t['auto'] / t_ref:.1f} | {sc[False]:.3f} | {sc['auto']:.3f} |")
            print(lines[-1], flush=True)
    X = rows("mixed")[0]
    b = Budget(0.25, 0.0, "secure")
    t_new = best(lambda: private_column_quantiles(X, BOUNDS_LEVELS, b, grid=BOUNDS_GRID, random_state=0), a.repeats)
    t_old = best(lambda: former_quartiles(X, b, np.random.default_rng(0)), a.repeats)
    t_sc = best(lambda: DPStandardScaler(random_state=0, accountant=led()).fit(X), a.repeats)
    lines += ["", "| 40 quartile releases (200k x 20) | seconds |", "|---|---|",
              f"| former path (one release per level and column) | {t_old:.2f} |",
              f"| current path (one counting pass over X, counts reused) | {t_new:.2f} |",
              f"| DPStandardScaler() fit (bounds='auto'), current | {t_sc:.2f} |"]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(__file__).resolve().parent.joinpath("results", "column_scaling_speed.md").write_text(text)


if __name__ == "__main__":
    main()
