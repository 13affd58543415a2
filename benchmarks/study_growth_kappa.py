"""DPGrowthAdaptiveRegressor's ``kappa_lower`` (the number of ALD-2 epochs) on the real regression sets.

``T = ceil(2 log n / (kappa_lower - 1))`` epochs on disjoint blocks of ``n / T`` rows (capped at what float64
resolves). The paper's T is a safe over-estimate (doc/algorithms.rst, ALD-2); fewer, larger epochs leave each
block's ERM better determined, which matters most for rare indicator columns once the private column
scaling makes every column count (Treatment, issue 16's bug hunt). Prints one markdown row per
(data set, encoding, epsilon): test R^2 (mean over seeds) at each ``kappa_lower``, defaults otherwise.

    OMP_NUM_THREADS=1 python benchmarks/study_growth_kappa.py [--seeds 3] [--kappas 1.25,2,3,4]
"""

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402


def main(argv=None):
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--kappas", default="1.25,2,3,4")
    parser.add_argument("--datasets", default="BudgetFood,Vocab,Computers,Wages,diabetes")
    args = parser.parse_args(argv)
    kappas = [float(k) for k in args.kappas.split(",")]
    print("| data set | encoding | eps | " + " | ".join(f"kappa_lower={k:g}" for k in kappas) + " |")
    print("|---|---|---|" + "---|" * len(kappas))
    warnings.simplefilter("ignore")
    for name in args.datasets.split(","):
        for enc in ("raw", "scaled"):
            Xtr, ytr, Xte, yte = R.split(name, enc)
            for eps in (0.5, 1.0, 2.0):
                cells = []
                for k in kappas:
                    scores = [r2_score(yte, DPGrowthAdaptiveRegressor(
                        epsilon=eps, kappa_lower=k, random_state=s,
                        accountant=BudgetAccountant(float("inf"), delta=1.0)).fit(Xtr, ytr).predict(Xte))
                        for s in range(args.seeds)]
                    cells.append(f"{np.mean(scores):.3f}")
                print(f"| {name} | {enc} | {eps:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
