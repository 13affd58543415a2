"""Issue 16, proposal D: AdaSSP's label mean clipped wider than the fit's label bound (benchmarks/results/skewlabel.md).

``python benchmarks/study_skewlabel.py K1,K2,... [out.json]``: ``DPLinearRegressor(epsilon)`` with every default
("auto" bounds, nothing declared, raw columns) on the fresh regression sets (bench_fresh.py) and the tuned ones
(_real_datasets.py raw encoding, plus the extra_split sets), epsilon 0.5 / 1 / 2, 10 seeds, fixed 70/30 split,
for each public multiple ``K`` of ``_adassp_selection.MEAN_CLIP_MULTIPLE`` (the clip of the label-mean release in
multiples of the label bound; 1 = main); ``dK``: the same with ``_adassp_selection.DROP_NOISY_MEAN`` (no
intercept-only candidate in the ridge choice after the label mean's release; adopted, so ``d1`` is the branch's
default and ``1`` main's); ``dKrR``: also ``MEAN_MIN_RANKS = R`` (the ranks the mean's share buys; 50). Paired: the same seeds for every K. Prints mean and worst seed of the test R^2 per
cell, and the solver / whether the label mean was released. ``SEED0`` / ``SEEDS`` (environment): the seeds.
Optional third argument: a comma-separated subset of the sets.
"""

import json
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import bench_fresh as B  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
SEEDS = range(int(os.environ.get("SEED0", "0")), int(os.environ.get("SEED0", "0")) + int(os.environ.get("SEEDS", "10")))
FRESH = ("Forbes2000", "OFP", "Star", "SLID", "Treatment")
TUNED = ("BudgetFood", "Vocab", "Computers", "Wages", "diabetes")
EXTRA = ("PSID", "Schooling", "Workinghours")


def sets(names=None):
    for k in FRESH:
        if names is None or k in names:
            rs = B.SETS[k]()
            tr, te = B.split(rs)
            yield "fresh/" + k, rs.X[tr].astype(float), rs.y[tr].astype(float), rs.X[te].astype(float), rs.y[te]
    for k in TUNED:
        if names is None or k in names:
            yield ("tuned/" + k, *R.split(k, "raw"))
    for k in EXTRA:
        if names is None or k in names:
            yield ("tuned/" + k, *R.extra_split(k))


def run(multiples, names=None):
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor
    from sklearn_dpsco._solvers import _adassp_selection as S

    out = []
    for name, Xtr, ytr, Xte, yte in sets(names):
        for eps in EPSILONS:
            row = {"set": name, "eps": eps, "n": len(ytr), "d": Xtr.shape[1]}
            for k in multiples:
                # "dK": also drop the intercept-only candidate after the label mean's release
                # "dKrR": also the label mean's MEAN_MIN_RANKS = R (main 50)
                S.DROP_NOISY_MEAN = str(k).startswith("d")
                body, _, ranks = str(k).lstrip("d").partition("r")
                S.MEAN_CLIP_MULTIPLE = float(body)
                S.MEAN_MIN_RANKS = float(ranks) if ranks else 50.0
                scores, solvers, means = [], set(), set()
                for seed in SEEDS:
                    est = DPLinearRegressor(epsilon=eps, random_state=seed,
                                            accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(Xtr, ytr)
                    assert abs(est.epsilon_spent_ - eps) <= 1e-9 * eps, est.epsilon_spent_
                    scores.append(float(r2_score(yte, est.predict(Xte))))
                    solvers.add(est.solver_)
                    means.add(bool(est.fit_info_.get("label_mean", False)))
                row[str(k)] = scores
                row["solver"] = "/".join(sorted(solvers))
                row["label_mean"] = "/".join(str(m) for m in sorted(means))
            print(name, eps, row["solver"], row["label_mean"],
                  " | ".join(f"K={k}: {np.mean(row[str(k)]):.3f} ({min(row[str(k)]):.3f})" for k in multiples), flush=True)
            out.append(row)
    S.MEAN_CLIP_MULTIPLE, S.DROP_NOISY_MEAN, S.MEAN_MIN_RANKS = 1.0, True, 50.0
    return out


if __name__ == "__main__":
    ks = sys.argv[1].split(",")
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    res = run(ks, names)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump(res, f)
