"""Evidence for DPHingeClassifier's private intercept refit (doc/privacy/hinge.rst, "Private intercept refit").

    OMP_NUM_THREADS=1 python benchmarks/study_hinge_intercept.py [--seeds 5]

On the small and medium real classification sets of bench_defaults.py (same split and encodings):

1. diagnosis at the declared clip (encoding (b), clip = 1): accuracy of the solver's output without
   noise (epsilon 1e4) at the default alpha of each epsilon, and the best accuracy a threshold on the
   RELEASED w could reach (the non-private best training threshold: an upper bound for any refit);
2. ``intercept_share=0`` (no refit, the former behaviour) against the default rule, every encoding
   of bench_defaults (raw / scaled, nothing declared / clip = 1 declared), epsilon 0.5 / 1 / 2.

Writes benchmarks/results/hinge_intercept.json and prints the tables (copied into hinge_intercept.md).
"""

import argparse
import json
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

SETS = ("breast_cancer", "Participation", "wine", "biopsy", "Benefits", "HI")
EPSILONS = (0.5, 1.0, 2.0)
VARIANTS = (("raw", {}), ("scaled", {}), ("scaled", {"clip": 1.0}))


def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _fit(Xtr, ytr, eps, seed, **kw):
    from sklearn_dpsco import DPHingeClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPHingeClassifier(epsilon=eps, random_state=seed, accountant=_ledger(), **kw).fit(Xtr, ytr)


def _best_threshold_accuracy(est, Xtr, ytr, Xte, yte):
    w, b = est.coef_.ravel(), float(est.intercept_[0])
    s = Xtr @ w + b
    pos = ytr == est.classes_[1]
    cands = np.concatenate([[-np.inf], np.sort(s)])
    errs = [np.sum(pos != (s > t)) for t in cands]
    t = cands[int(np.argmin(errs))]
    return float(np.mean(np.where(Xte @ w + b > t, est.classes_[1], est.classes_[0]) == yte))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--sets", default=",".join(SETS))
    a = p.parse_args(argv)
    seeds = range(a.seeds)
    out = {}
    for key in a.sets.split(","):
        rs = R.load(key)
        tr, te = R.train_test(rs)
        res = out[key] = {}
        Xs, ys = R.encode(rs, "scaled")
        diag = res["diagnosis"] = {}
        for eps in EPSILONS:
            plain = _fit(Xs[tr], ys[tr], 1e4, 0, clip=1.0, intercept_share=0,
                         alpha=_fit(Xs[tr], ys[tr], eps, 0, clip=1.0, intercept_share=0).alpha_)
            noiseless = float(np.mean(plain.predict(Xs[te]) == ys[te]))
            oracle = [_best_threshold_accuracy(_fit(Xs[tr], ys[tr], eps, s, clip=1.0, intercept_share=0),
                                               Xs[tr], ys[tr], Xs[te], ys[te]) for s in seeds]
            diag[repr(eps)] = {"noiseless": noiseless, "best_threshold_on_release": float(np.mean(oracle))}
            print(f"{key} diagnosis eps {eps}: noiseless {noiseless:.3f}, best threshold on the release "
                  f"{np.mean(oracle):.3f}", flush=True)
        for enc, kw in VARIANTS:
            X, y = R.encode(rs, enc)
            name = enc + (" declared" if kw else " defaults")
            row = res[name] = {}
            for eps in EPSILONS:
                cell = {}
                for label, share in (("no refit", 0), ("refit", None)):
                    acc, single = [], 0
                    for s in seeds:
                        est = _fit(X[tr], y[tr], eps, s, intercept_share=share, **kw)
                        pred = est.predict(X[te])
                        acc.append(float(np.mean(pred == y[te])))
                        single += int(len(np.unique(pred)) == 1)
                    cell[label] = {"mean": float(np.mean(acc)), "single": single}
                row[repr(eps)] = cell
                print(f"{key} {name} eps {eps}: " + "  ".join(
                    f"{lab} {c['mean']:.3f}" + (f" ({c['single']}/{len(seeds)} 1c)" if c["single"] else "")
                    for lab, c in cell.items()), flush=True)
    (HERE / "results" / "hinge_intercept.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
