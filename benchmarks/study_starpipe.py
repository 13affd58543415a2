"""Issue 16: the default scaler pipeline vs the bare estimator on raw real sets, paired by seed.

    OMP_NUM_THREADS=1 python benchmarks/study_starpipe.py --tag before [--seeds 10] [--sets Star,SLID]
    python benchmarks/study_starpipe.py --compare before,after

``bare`` = ``Estimator(epsilon=eps, random_state=seed)``; ``pipe`` = ``make_dp_pipeline(DPStandardScaler(
random_state=seed), Estimator(random_state=seed), epsilon=eps)`` (every default), on raw columns: the
fresh sets of bench_fresh.py (Treatment, SLID, Star, OFP, Forbes2000, flchain, DoctorAUS, digits, Chile) and
the raw encoding of bench_defaults.py's row-level sets. Same fixed 70/30 splits as those scripts.
Scores (accuracy / R^2) per seed go to ``results/starpipe_<tag>.json``; ``--compare`` prints the paired
differences (mean and standard error over seeds) of pipe - bare in each run and of each arm between runs,
marking cells beyond 2 s.e. (and 0.01).
"""

import argparse
import json
import math
import os
import sys
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _real_datasets as R  # noqa: E402
import bench_fresh as F  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
FRESH = ("Treatment", "SLID", "Star", "OFP", "Forbes2000", "flchain", "DoctorAUS", "digits", "Chile")
DEFAULTS = ("HI", "Benefits", "Participation", "biopsy", "breast_cancer", "wine", "BudgetFood", "Vocab",
            "Computers", "Wages", "diabetes")
MODELS = {"clf": ("hinge",), "reg": ("linear", "growth")}


def load(key):
    """``(task, Xtr, ytr, Xte, yte)`` of a fresh or a bench_defaults set (raw columns)."""
    if key in F.SETS:
        rs = F.SETS[key]()
        tr, te = F.split(rs)
        X = rs.X if hasattr(rs, "X") else rs.frame.to_numpy(float)
        y = rs.y
    else:
        rs = R.load(key)
        tr, te = R.train_test(rs)
        X, y = R.encode(rs, "raw")
    X = np.asarray(X, dtype=float)
    return rs.task, X[tr], y[tr], X[te], y[te]


def run(keys, seeds):
    out = {}
    for key in keys:
        task, Xtr, ytr, Xte, yte = load(key)
        for model in MODELS[task]:
            for eps in EPSILONS:
                for arm in ("bare", "pipe"):
                    scores = []
                    for seed in seeds:
                        est = F.ours(model, eps, seed, pipe=arm == "pipe")
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est.fit(Xtr, ytr)
                        scores.append(F.score(task, yte, est.predict(Xte)))
                    out[f"{key}|{model}|{eps}|{arm}"] = scores
            print(key, model, {a: [round(float(np.mean(out[f'{key}|{model}|{e}|{a}'])), 3) for e in EPSILONS]
                               for a in ("bare", "pipe")}, flush=True)
    return out


def _paired(a, b):
    diff = np.asarray(b, float) - np.asarray(a, float)
    diff = diff[np.isfinite(diff)]
    if diff.size == 0:
        return float("nan"), float("nan")
    se = float(np.std(diff, ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else float("nan")
    return float(np.mean(diff)), se


def _fmt(m, se):
    mark = " **" if abs(m) > max(2 * se, 0.01) else ""
    return f"{m:+.3f} ({se:.3f}){mark}"


def compare(tags):
    runs = [json.loads((HERE / "results" / f"starpipe_{t}.json").read_text()) for t in tags]
    before, after = runs
    cells = sorted({k.rsplit("|", 1)[0] for k in before}, key=lambda c: (c.split("|")[0], c))
    lines = [f"| set | model | eps | bare | pipe {tags[0]} | pipe {tags[1]} | pipe-bare {tags[0]} | "
             f"pipe-bare {tags[1]} | pipe {tags[1]}-{tags[0]} |", "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        key, model, eps = c.split("|")
        if f"{c}|pipe" not in after:
            continue
        bare = before[f"{c}|bare"]
        pb, pa = before[f"{c}|pipe"], after[f"{c}|pipe"]
        lines.append(f"| {key} | {model} | {eps} | {np.nanmean(bare):.3f} | {np.nanmean(pb):.3f} | "
                     f"{np.nanmean(pa):.3f} | {_fmt(*_paired(bare, pb))} | {_fmt(*_paired(after[f'{c}|bare'], pa))} "
                     f"| {_fmt(*_paired(pb, pa))} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--sets", default=",".join(FRESH + DEFAULTS))
    p.add_argument("--tag", default="run")
    p.add_argument("--compare", default=None)
    a = p.parse_args(argv)
    if a.compare:
        print(compare(a.compare.split(",")))
        return
    out = run(a.sets.split(","), list(range(a.seeds)))
    (HERE / "results" / f"starpipe_{a.tag}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
