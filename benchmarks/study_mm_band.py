"""The median-and-spread band (issue 16): default against ``column_scaling=False`` across the band.

bench_learning_curves.py (eps 1) found fits just inside the band ``200 d <= n epsilon < 400 d``
(``column_scaling_mode == "median_mad"``) below the same estimator on fewer rows without a column map
(BudgetFood raw linear 1131 rows -0.049 against 0.138 at 800, PSID raw 2263 rows 0.250 against 0.386 at
1600, HI raw hinge 4525 rows 0.703 against 0.740 at 3200). Here every raw set, at ``n epsilon / d`` in
RATIOS (epsilon 1 on a nested subsample when the set has the rows, else all rows at ``epsilon = ratio d /
n``), fits the default and the same estimator with ``column_scaling=False`` on the same rows and seed.

    OMP_NUM_THREADS=1 python benchmarks/study_mm_band.py [SEEDS] [--jobs 2]

Writes benchmarks/results/mm_band.jsonl (one line per set, model, ratio).
"""

import json
import math
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_learning_curves as L  # noqa: E402

RATIOS = (150, 210, 250, 300, 350, 390, 450)
SETS = ("HI", "Benefits", "Participation", "biopsy", "BudgetFood", "Vocab", "Computers", "Wages",
        "Workinghours", "PSID", "Schooling", "diabetes", "breast_cancer", "wine")


def make(kind, eps, seed, cs):
    est = L.model(kind, eps, seed)
    return est if cs else est.set_params(column_scaling=False)


def band_point(total, d, ratio):
    """``(n, epsilon)`` with ``n epsilon / d = ratio``: epsilon 1 on ``ratio d`` rows when the set has them, else all
    ``total`` rows at ``epsilon = ratio d / total``."""
    n = ratio * d
    return (n, 1.0) if n <= total else (total, ratio * d / total)


def band_rows(total, n, seed):
    """The rows of seed ``seed``: the first ``n`` of its fixed permutation of the ``total`` training rows, sorted."""
    return np.sort(np.random.default_rng(1000 + seed).permutation(total)[:n])


def run(key, kind, ratio, seeds):
    Xtr, ytr, _, Xte, yte, _ = L.data(key, "raw")
    task = "reg" if kind in ("linear", "growth") else "clf"
    total, d = len(ytr), Xtr.shape[1]
    n, eps = band_point(total, d, ratio)
    out = {"set": key, "model": kind, "ratio": ratio, "n": int(n), "eps": eps, "default": [], "off": [], "mode": []}
    for s in seeds:
        idx = band_rows(total, n, s)
        for cs, name in ((True, "default"), (False, "off")):
            est = make(kind, eps, s, cs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(Xtr[idx], ytr[idx])
            out[name].append(L.score(task, est, Xte, yte))
            if cs:
                info = est.fit_info_ if isinstance(est.fit_info_, dict) else est.fit_info_[0]
                out["mode"].append(info.get("column_scaling", {}).get("mode"))
    return out


def main():
    seeds = list(range(int(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else 10))
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 1
    todo = []
    for key in SETS:
        kinds = ("hinge",) if key in L.CLASSIFICATION else ("linear", "growth")
        todo += [(key, k, r) for k in kinds for r in RATIOS]
    from joblib import Parallel, delayed

    rows = Parallel(n_jobs=jobs)(delayed(run)(*t, seeds) for t in todo)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "mm_band.jsonl")
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    for r in rows:
        dlt = np.array(r["default"]) - np.array(r["off"])
        print(f"{r['set']:14s} {r['model']:6s} {r['ratio']:4d} n={r['n']:6d} eps={r['eps']:.3f} "
              f"default {np.mean(r['default']):+.3f} off {np.mean(r['off']):+.3f} diff {dlt.mean():+.3f} "
              f"({dlt.std(ddof=1) / math.sqrt(len(dlt)):.3f}) {set(r['mode'])}")


if __name__ == "__main__":
    main()
