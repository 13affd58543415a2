"""AdaSSP vs Phased-ERM at pure DP in the auto table's gap (500 <= m < 1e4) with "auto" bounds (nothing declared).

    OMP_NUM_THREADS=1 python benchmarks/study_small_d_gap_auto.py [--seeds 5]

Sets: the ``_mixed`` family of benchmarks/check_colscale_mixed.py (all 4 columns; year, income and a
standard column; year and an indicator), study_rules.py's ``reg_family`` at d + 1 in {2, ..., 6}, and
Vocab / BudgetFood in both encodings of benchmarks/_real_datasets.py. Test R^2, mean over the noise seeds
at epsilon 0.5 / 1 / 2, for each forced solver and ``solver="auto"``; ``m = n epsilon / (d + 1)``. Results
in benchmarks/results/rules.md, "Small d in the pure-DP gap with auto bounds".
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

EPSILONS = (0.5, 1.0, 2.0)


def _sets():
    from _real_datasets import split
    from sklearn_dpsco.testing import mixed_units as mixed
    from study_rules import reg_family

    sets = []
    for n in (3000, 8000, 20000):
        for cols, seed in (((0, 1, 2, 3), 7), ((0, 1, 3), 11), ((0, 2), 12)):
            X, _, y = mixed(n + 5000, seed)
            X = X[:, list(cols)]
            sets.append((f"mixed d+1={len(cols) + 1} n={n}", X[:n], y[:n], X[n:], y[n:]))
    for d in (1, 2, 3, 4, 5):
        for n in (1500, 3000, 10000):
            sets.append((f"synthetic d+1={d + 1} n={n}",) + reg_family(n, d, seed=d * 7 + n))
    for key in ("Vocab", "BudgetFood"):
        for enc in ("raw", "scaled"):
            sets.append((f"{key} {enc}",) + split(key, enc))
    return sets


def main():
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor
    from sklearn_dpsco.linear_model._least_squares_rules import rows_per_unit

    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=5)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    print("| set | m at eps 0.5 / 1 / 2 | auto (its pick) | adassp | phased_erm |")
    print("|---|---|---|---|---|")
    for name, X, y, Xt, yt in _sets():
        cells = {}
        for solver in ("auto", "adassp", "phased_erm"):
            row = []
            for eps in EPSILONS:
                scores, picks = [], set()
                for seed in range(args.seeds):
                    est = DPLinearRegressor(epsilon=eps, solver=solver, random_state=seed,
                                            accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0)).fit(X, y)
                    scores.append(r2_score(yt, est.predict(Xt)))
                    picks.add(est.solver_)
                pick = f" ({'/'.join(sorted(picks))})" if solver == "auto" else ""
                row.append(f"{np.mean(scores):.3f}{pick}")
            cells[solver] = " / ".join(row)
        ms = " / ".join(f"{rows_per_unit(X.shape[0], X.shape[1] + 1, e):.0f}" for e in EPSILONS)
        print(f"| {name} | {ms} | {cells['auto']} | {cells['adassp']} | {cells['phased_erm']} |", flush=True)


if __name__ == "__main__":
    main()
