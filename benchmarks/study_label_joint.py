"""Issue 16: the library's joint (row bound, label bound) selection (LABEL_UPPER_JOINT) against the separate
releases of before (LABEL_UPPER on its weight 3), paired by seed. The library as installed; ``sep`` swaps the
joint rule back to LABEL_UPPER (the rule of main: the other releases are unchanged).

    python benchmarks/study_label_joint.py atoms [seeds] [first_seed] [eps,...]   # study_label_atoms.py synthetic cases
    python benchmarks/study_label_joint.py cont [seeds] [eps,...]                 # study_label_atoms2.py continuous cells

Results: benchmarks/results/label_atoms.md, section 5.
"""

import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sklearn_dpsco.linear_model._auto_scales as A  # noqa: E402
import sklearn_dpsco.linear_model._least_squares as LS  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPLinearRegressor  # noqa: E402

RULES = {"sep": A.LABEL_UPPER, "joint": A.LABEL_UPPER_JOINT}


def use(rule):
    LS.LABEL_UPPER_JOINT = RULES[rule]


def fit(X, y, eps, seed):
    est = DPLinearRegressor(epsilon=eps, random_state=seed, accountant=BudgetAccountant(float("inf"), 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def atoms(seeds, first, epsilons):
    import study_label_atoms as S

    for eps in epsilons:
        print(f"eps {eps}, seeds {first}..{first + seeds - 1}: training R^2, neg share, median, mean, worst", flush=True)
        for case in [("binary", 0.3), ("binary", 0.5), ("binary", 0.7), ("count", 0), ("ordinal", 0)]:
            X, y, _, _ = S.synthetic(*case)
            for rule in RULES:
                use(rule)
                sc = np.array([fit(X, y, eps, s).score(X, y) for s in range(first, first + seeds)])
                print(f"{case[0]} {case[1]:.0%}".ljust(14), rule.ljust(6), f"neg {np.mean(sc < 0):6.1%} "
                      f"median {np.median(sc):.4f} mean {sc.mean():.4f} worst {sc.min():.4g}", flush=True)


def cont(seeds, epsilons):
    import study_label_atoms2 as S2

    print(f"joint - sep, {seeds} seeds: mean diff (s.e.) [#better/#worse]; sep mean")
    for name, Xtr, ytr, Xte, yte in S2.cont_sets():
        ytr, yte = np.asarray(ytr, float), np.asarray(yte, float)
        for eps in epsilons:
            sc = {}
            for rule in RULES:
                use(rule)
                sc[rule] = np.array([fit(Xtr, ytr, eps, s).score(Xte, yte) for s in range(seeds)])
            d = sc["joint"] - sc["sep"]
            print(f"{name:16s} eps {eps:<4g} sep {sc['sep'].mean():.4f} | joint {d.mean():+.4f} "
                  f"({d.std(ddof=1) / np.sqrt(seeds):.4f}) [{(d > 1e-12).sum()}/{(d < -1e-12).sum()}]", flush=True)


def main():
    warnings.simplefilter("ignore")
    mode = sys.argv[1]
    if mode == "atoms":
        seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
        first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
        epsilons = [float(e) for e in sys.argv[4].split(",")] if len(sys.argv) > 4 else [1.0, 0.5]
        atoms(seeds, first, epsilons)
    else:
        seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 128
        epsilons = [float(e) for e in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0.5, 1.0, 2.0]
        cont(seeds, epsilons)


if __name__ == "__main__":
    main()
