"""DPLinearRegressor's intercept-only release: the label centre (a private median) against the label mean.

Below ``n epsilon = 400`` (with "auto" bounds) DPLinearRegressor releases the intercept-only model. Until
2026-11-29 its intercept was the label centre, a private median on a grid of 8 points per octave; now, where
``mean_constant_applies`` (``n epsilon >= 250``), it is the label mean of ``linear_model/_constant_mean.py`` (centre
and spread on ``1 - MEAN_CONSTANT_SHARE`` of epsilon, then the clipped mean). Arms: ``centre`` (the rule switched
off), ``library`` (the rule as it is), ``mean<s>`` (the mean forced at every ``n epsilon``, with
``MEAN_CONSTANT_SHARE = s``). Every regression study set (_real_datasets.REGRESSION_STUDY_SETS) and bench_fresh's
regression sets, training rows subsampled to ``n = (n epsilon) / epsilon``, the same subsample and seed in every
arm; test R^2 on the fixed test set.

    OMP_NUM_THREADS=1 python benchmarks/study_constant_mean.py explore [SEEDS]   # eps 1, n eps 60..390, shares
    OMP_NUM_THREADS=1 python benchmarks/study_constant_mean.py confirm [SEEDS]   # eps 0.5 / 1 / 2, n eps 250..390
    OMP_NUM_THREADS=1 python benchmarks/study_constant_mean.py model [SEEDS] [EPS]   # above the rule: the model
                                                                                   # against the mean constant

``model``: from ``n epsilon = 400`` DPLinearRegressor fits its model (``library``); the arm ``constant`` forces the
intercept-only release there (the mean, ``_scales_unsupported`` patched to True), n epsilon 400..1000, sets whose
rows reach it.

Prints one line per set and ``n epsilon`` and a summary per arm (results/constant_mean.md).
"""

import math
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402

from sklearn_dpsco import DPLinearRegressor  # noqa: E402
from sklearn_dpsco.accounting import BudgetAccountant  # noqa: E402
from sklearn_dpsco.linear_model import _constant_mean as M  # noqa: E402

MODES = {"explore": ((1.0,), (60, 100, 150, 200, 300, 390), ("centre", "mean0.3", "mean0.4", "mean0.5")),
         "confirm": ((0.5, 1.0, 2.0), (250, 275, 300, 350, 390), ("centre", "library")),
         "model": ((1.0,), (400, 500, 600, 700, 850, 1000), ("constant", "library"))}
_APPLIES, _SHARE = M.mean_constant_applies, M.MEAN_CONSTANT_SHARE

_UNSUPPORTED = DPLinearRegressor._scales_unsupported


def _forced(self, *args, **kwargs):
    return True
FRESH = ("Treatment", "SLID", "Star", "Forbes2000", "OFP")


def sets():
    out = [(name, R.regression_study_split) for name in R.REGRESSION_STUDY_SETS]
    import bench_fresh as F

    def fresh(name):
        rs = F.SETS[name]()
        tr, te = F.split(rs)
        return rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]

    return out + [(name, fresh) for name in FRESH]


def fit(arm, X, y, seed, eps):
    DPLinearRegressor._scales_unsupported = _forced if arm == "constant" else _UNSUPPORTED

    M.mean_constant_applies = {"centre": lambda n, e: False, "library": _APPLIES}.get(arm, lambda n, e: True)
    M.MEAN_CONSTANT_SHARE = float(arm[4:]) if arm.startswith("mean") else _SHARE
    est = DPLinearRegressor(epsilon=eps, random_state=seed, accountant=BudgetAccountant(math.inf, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def main():
    from sklearn.metrics import r2_score

    mode = sys.argv[1] if len(sys.argv) > 1 else "confirm"
    epsilons, n_eps, arms = MODES[mode]
    if mode == "model" and len(sys.argv) > 3:
        epsilons = (float(sys.argv[3]),)
    seeds = range(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    rows = []
    for name, load in sets():
        Xtr, ytr, Xte, yte = load(name)
        for eps in epsilons:
            for ne in n_eps:
                n = int(round(ne / eps))
                if n > len(ytr) and mode == "model":
                    continue  # the set's rows do not reach this n epsilon
                n = min(n, len(ytr))
                scores = {a: [] for a in arms}
                for s in seeds:
                    idx = np.sort(np.random.default_rng(1000 + s).permutation(len(ytr))[:n])
                    for a in arms:
                        est = fit(a, Xtr[idx], ytr[idx], s, eps)
                        assert (est.solver_ == "intercept_only") == (a != "library" or mode != "model")
                        scores[a].append(r2_score(yte, est.predict(Xte)))
                rows.append((name, eps, ne, scores))
                cells = " ".join(f"{a} {np.mean(v):+.3f} (worst {min(v):+.3f})" for a, v in scores.items())
                print(f"{name:16s} eps {eps:g} n eps {ne:4d} {cells}", flush=True)
    print()
    for eps in epsilons:
        for ne in n_eps:
            base = np.array([np.mean(r[3][arms[0]]) for r in rows if r[1:3] == (eps, ne)])
            for a in arms[1:]:
                arm = np.array([np.mean(r[3][a]) for r in rows if r[1:3] == (eps, ne)])
                d = arm - base
                print(f"eps {eps:g} n eps {ne:4d} {a}: mean diff {d.mean():+.4f}, sets better {int((d > 0.002).sum())}, "
                      f"worse {int((d < -0.002).sum())}, worst set diff {d.min():+.3f}")


if __name__ == "__main__":
    main()
