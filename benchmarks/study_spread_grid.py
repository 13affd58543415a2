"""The median-and-spread map's spread grid (issue 16): the fixed grid against the grid its released centre sets.

The column map's median-and-spread mode (``200 d <= n epsilon < 400 d``) releases each column's spread, the median
of ``|x_j - m_j|``, at 17-30 ranks. Until 2026-11-29 the candidates were a fixed grid (``2^-20 .. 2^20``, one point
per octave, and 0: 42); since, ``spread_grid(m_j)`` (from 1/2 to ``2^J``, ``J = max(ceil(log2 max(|m_j|, 1)) + 2,
4)``, and 0). Arms: ``fixed`` (``spread_grid`` patched to return the former grid) and ``library``. Every raw set of
study_mm_band.py at ``n epsilon / d`` in RATIOS (its ``band_point`` and ``band_rows``), the same rows and seed in both arms.

    OMP_NUM_THREADS=1 python benchmarks/study_spread_grid.py [SEEDS] [--jobs 2]

Writes benchmarks/results/spread_grid.jsonl (one line per set, model, ratio) and prints the paired differences.
"""

import json
import math
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_learning_curves as L  # noqa: E402
import study_mm_band as B  # noqa: E402

from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid  # noqa: E402
from sklearn_dpsco.linear_model import _column_scaling as C  # noqa: E402

RATIOS = (210, 250, 300, 350)
ROWS = (("HI", "hinge"), ("Participation", "hinge"), ("biopsy", "hinge"), ("breast_cancer", "hinge"),
        ("wine", "hinge"), ("BudgetFood", "linear"), ("BudgetFood", "growth"), ("Vocab", "linear"),
        ("Computers", "linear"), ("Computers", "growth"), ("Wages", "linear"), ("Wages", "growth"),
        ("Workinghours", "linear"), ("PSID", "linear"), ("PSID", "growth"), ("Schooling", "linear"),
        ("diabetes", "linear"))
FIXED = ScaleGrid(per_octave=1)  # the former spread grid
LIBRARY = C.spread_grid


def run(key, kind, ratio, seeds):
    Xtr, ytr, _, Xte, yte, _ = L.data(key, "raw")
    task = "reg" if kind in ("linear", "growth") else "clf"
    total, d = len(ytr), Xtr.shape[1]
    n, eps = B.band_point(total, d, ratio)
    out = {"set": key, "model": kind, "ratio": ratio, "n": int(n), "eps": eps, "fixed": [], "library": []}
    for s in seeds:
        idx = B.band_rows(total, n, s)
        for arm in ("fixed", "library"):
            C.spread_grid = LIBRARY if arm == "library" else (lambda centre: FIXED)
            est = L.model(kind, eps, s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(Xtr[idx], ytr[idx])
            out[arm].append(L.score(task, est, Xte, yte))
    C.spread_grid = LIBRARY
    return out


def _task(args):
    return run(*args)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seeds = list(range(int(args[0]) if args else 30))
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 1
    tasks = [(key, kind, r, seeds) for key, kind in ROWS for r in RATIOS]
    if jobs > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=jobs)(delayed(_task)(t) for t in tasks)
    else:
        results = [_task(t) for t in tasks]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "spread_grid.jsonl")
    diffs = []
    with open(path, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
            d = np.array(r["library"]) - np.array(r["fixed"])
            se = d.std(ddof=1) / math.sqrt(len(d))
            diffs.append(d.mean())
            print(f"{r['set']:14s} {r['model']:7s} {r['ratio']:4d} n {r['n']:6d} eps {r['eps']:.2f} fixed "
                  f"{np.mean(r['fixed']):+.3f} library {np.mean(r['library']):+.3f} diff {d.mean():+.3f} ({se:.3f})")
    print(f"mean difference {np.mean(diffs):+.4f}, median {np.median(diffs):+.4f} over {len(diffs)} rows")


if __name__ == "__main__":
    main()
