"""Study (smallsets2, measure only): DPHingeClassifier's single-class outputs on raw wine / breast_cancer /
Participation at epsilon 0.5 / 1 / 2 (bench_defaults' raw encoding, fixed split), 20 noise seeds.

Usage: OMP_NUM_THREADS=1 python benchmarks/study_small_clf_smallsets2.py [seeds]
Variants: ``default``; ``scaling`` = column_scaling=True (private quartiles below their gate); ``centering`` =
centering=True; ``both`` = column_scaling=True, centering=False... (see VARIANTS). Cells: mean accuracy (number
of single-class seeds), majority-class accuracy for reference.
"""
import os
import sys
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPHingeClassifier  # noqa: E402

warnings.simplefilter("ignore")
VARIANTS = {"default": {}, "scaling": {"column_scaling": True}, "centering": {"centering": True, "column_scaling": False},
            "share0.25": {"scale_share": 0.25}}


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for key in ("wine", "breast_cancer", "Participation"):
        X, y, Xt, yt = R.split(key, "raw")
        maj = max(np.mean(yt == c) for c in np.unique(y))
        print(f"== {key} n={len(X)} d={X.shape[1]} majority {maj:.3f}", flush=True)
        for eps in (0.5, 1.0, 2.0):
            line = f"  eps {eps}:"
            for name, kw in VARIANTS.items():
                acc, single = [], 0
                for s in range(seeds):
                    try:
                        m = DPHingeClassifier(epsilon=eps, random_state=s, accountant=BudgetAccountant(float("inf"), 1.0),
                                              **kw).fit(X, y)
                    except ValueError as e:
                        line += f" {name}: err({str(e)[:40]})"
                        break
                    p = m.predict(Xt)
                    acc.append(np.mean(p == yt))
                    single += len(np.unique(p)) == 1
                else:
                    line += f" {name}: {np.mean(acc):.3f} ({single})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
