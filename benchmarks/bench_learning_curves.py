"""Learning curves on real data with the defaults: does any estimator get worse with more data?

The synthetic check (bench_scaling_n.py) starts at 1e4 rows; the defaults switch rules at small
``n epsilon`` (the constant plan below the estimates' parts, column scaling modes, the user-level
horizon), where a user with a few hundred or a few thousand rows sits. Here every estimator is fitted at
its defaults (nothing declared) on nested subsamples of the real training sets of
bench_defaults.py (and the three extra regression sets), and scored on the fixed test set:

* classification sets: DPHingeClassifier; regression sets: DPLinearRegressor and
  DPGrowthAdaptiveRegressor (R^2); panels: UserLevelDPLogistic (delta 1e-6), subsampled by user;
* encodings "raw" and "scaled" (_real_datasets.py; the extra regression sets raw only);
* n on a grid of factor sqrt(2) from 100 rows (40 users) to the whole training set;
* seed s: the first n rows (users) of the s-th fixed permutation of the training rows (users), noise
  ``random_state=s``; the subsamples are nested in n for each seed, so consecutive n are paired.

A cell is flagged "drop" when its mean score is below the best mean at a smaller n by more than 0.02 and by
more than two standard errors of the paired (same seeds) difference. Run by hand (not in CI)::

    OMP_NUM_THREADS=1 python benchmarks/bench_learning_curves.py --eps 1 --seeds 10 --jobs 2

Writes ``benchmarks/results/learning_curves_<tag>.md`` (tag default ``eps<epsilon>``) and the raw scores to the
``.json`` beside it; the reading of the runs is ``benchmarks/results/learning_curves.md``.
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSIFICATION = ("HI", "Benefits", "Participation", "biopsy", "breast_cancer", "wine")
REGRESSION = ("BudgetFood", "Vocab", "Computers", "Wages", "diabetes")
PANELS = ("Males", "baseball")
USER_DELTA = 1e-6
DROP_MIN = 0.02


def cases():
    """(label, loader key, encoding, model) for every curve."""
    out = []
    for key in CLASSIFICATION:
        out += [(f"{key}/{enc} hinge", key, enc, "hinge") for enc in ("raw", "scaled")]
    for key in REGRESSION:
        for enc in ("raw", "scaled"):
            out += [(f"{key}/{enc} {m}", key, enc, m) for m in ("linear", "growth")]
    for key in R.EXTRA_REGRESSION:
        out += [(f"{key}/raw {m}", key, "raw", m) for m in ("linear", "growth")]
    for key in PANELS:
        out += [(f"{key}/{enc} user", key, enc, "user") for enc in ("raw", "scaled")]
    return out


def data(key, enc):
    """(Xtr, ytr, groups_tr or None, Xte, yte, task)."""
    if key in R.EXTRA_REGRESSION:
        Xtr, ytr, Xte, yte = R.extra_split(key)
        return Xtr, ytr, None, Xte, yte, "reg"
    rs = R.load(key)
    tr, te = R.train_test(rs)
    X, y = R.encode(rs, enc)
    g = None if rs.groups is None else rs.groups[tr]
    return X[tr], y[tr], g, X[te], y[te], rs.task


def model(kind, eps, seed):
    from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
    from sklearn_dpsco.accounting import BudgetAccountant

    common = dict(epsilon=eps, random_state=seed, accountant=BudgetAccountant(math.inf, 1.0))
    return {"hinge": lambda: DPHingeClassifier(**common), "linear": lambda: DPLinearRegressor(**common),
            "growth": lambda: DPGrowthAdaptiveRegressor(**common),
            "user": lambda: UserLevelDPLogistic(delta=USER_DELTA, **common)}[kind]()


def grid(total, start):
    """``start, start sqrt 2, ...`` (rounded) below ``total``, then ``total``."""
    out, k = [], 0
    while True:
        n = int(round(start * 2 ** (k / 2)))
        if n >= total:
            break
        out.append(n)
        k += 1
    return out + [total]


def score(task, est, X, y):
    pred = np.asarray(est.predict(X), dtype=float)
    if task == "reg":
        from sklearn.metrics import r2_score

        return float(r2_score(y, pred)) if np.all(np.isfinite(pred)) else float("nan")
    return float(np.mean(pred == np.asarray(y, dtype=float)))


def run_case(case, eps, seeds):
    label, key, enc, kind = case
    Xtr, ytr, g, Xte, yte, task = data(key, enc)
    task = "reg" if kind in ("linear", "growth") else "clf"
    units = np.unique(g) if g is not None else None
    total = len(units) if g is not None else len(ytr)
    ns = grid(total, 40 if g is not None else 100)
    scores = {n: [] for n in ns}
    errors = {}
    t0 = time.perf_counter()
    for s in seeds:
        perm = np.random.default_rng(1000 + s).permutation(total)
        for n in ns:
            if g is None:
                idx = np.sort(perm[:n])
            else:
                idx = np.flatnonzero(np.isin(g, units[perm[:n]]))
            est = model(kind, eps, s)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xtr[idx], ytr[idx]) if g is None else est.fit(Xtr[idx], ytr[idx], g[idx])
                scores[n].append(score(task, est, Xte, yte))
            except Exception as err:  # a refusal is reported, not hidden
                errors.setdefault(str(n), type(err).__name__ + ": " + " ".join(str(err).split())[:120])
                scores[n].append(float("nan"))
    return {"label": label, "unit": "users" if g is not None else "rows", "n": ns,
            "scores": {str(n): v for n, v in scores.items()}, "errors": errors, "seconds": time.perf_counter() - t0}


def drops(res):
    """``[(n, mean, best smaller n, its mean, paired diff, s.e.)]`` of the flagged cells."""
    ns = res["n"]
    S = np.array([res["scores"][str(n)] for n in ns])  # (len(ns), seeds)
    out = []
    for i in range(1, len(ns)):
        means = np.nanmean(S[:i], axis=1)
        j = int(np.nanargmax(means))
        diff = S[i] - S[j]
        diff = diff[np.isfinite(diff)]
        if diff.size < 2:
            continue
        se = diff.std(ddof=1) / math.sqrt(diff.size)
        if -diff.mean() > DROP_MIN and -diff.mean() > 2 * se:
            out.append((ns[i], float(np.nanmean(S[i])), ns[j], float(means[j]), float(diff.mean()), float(se)))
    return out


def report(results, eps, seeds, tag):
    lines = [f"# Learning curves on real data, defaults, epsilon = {eps}" + (f" ({tag})" if tag else ""), "",
             "`" + " ".join(["OMP_NUM_THREADS=1 python benchmarks/bench_learning_curves.py", *sys.argv[1:]]) + "`; "
             f"{len(seeds)} seeds; mean test score (accuracy or R^2) at each training size (rows, or users for "
             "panels). Flag: below the best mean at a smaller n by more than "
             f"{DROP_MIN} and two standard errors of the paired difference (the module docstring).", ""]
    flagged = []
    for res in results:
        d = drops(res)
        flagged += [(res["label"], *x) for x in d]
    lines += ["## Flagged drops", "", "| curve | n | mean | best smaller n | its mean | paired diff (se) |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {c} | {n} | {m:.3f} | {nb} | {mb:.3f} | {df:+.3f} ({se:.3f}) |"
              for c, n, m, nb, mb, df, se in flagged] or ["| none | | | | | |"]
    lines += ["", "## Curves (mean over seeds)", ""]
    for res in results:
        ns = res["n"]
        cells = " ".join(f"{n}:{np.nanmean(res['scores'][str(n)]):.3f}" for n in ns)
        lines.append(f"* **{res['label']}** ({res['unit']}): {cells}")
        for n, msg in res["errors"].items():
            lines.append(f"  - n = {n}: {msg}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated substrings of curve labels")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    only = [o for o in args.only.split(",") if o]
    todo = [c for c in cases() if not only or any(o in c[0] for o in only)]
    seeds = list(range(args.seeds))
    from joblib import Parallel, delayed

    results = Parallel(n_jobs=args.jobs, verbose=0)(delayed(run_case)(c, args.eps, seeds) for c in todo)
    tag = args.tag or f"eps{args.eps:g}"
    path = os.path.join(HERE, "results", f"learning_curves_{tag}")
    with open(path + ".json", "w") as f:
        json.dump({"eps": args.eps, "seeds": seeds, "results": results}, f)
    text = report(results, args.eps, seeds, tag)
    with open(path + ".md", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
