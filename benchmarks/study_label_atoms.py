"""Issue 16: the "auto" label bound on atomic labels (0/1, counts, ordinal) and on the continuous study sets.

Compares the default rule (LABEL_UPPER: 1.5 x a private 0.8-quantile of |y - c|, ties at 0, weight 3, with
LABEL_SPREAD's split median as the fallback under a capped share) with the previous rule (LABEL_SPREAD: 3 x the
median of the tie-split deviations, weight 1) on the same seeds. Prints, per case, the negative-R^2 rate, the
median and the worst R^2 (training R^2 for the synthetic sets, test R^2 for the real sets).

    python benchmarks/study_label_atoms.py [seeds_synthetic] [seeds_real] [epsilon]
"""

import sys
import warnings

import numpy as np

import sklearn_dpsco.linear_model._auto_scales as A
import sklearn_dpsco.linear_model._growth as G
import sklearn_dpsco.linear_model._least_squares as LS
from sklearn_dpsco import DPLinearRegressor

RULES = {"previous": A.LABEL_SPREAD, "upper": A.LABEL_UPPER}


def use(rule):
    LS.LABEL_UPPER = G.LABEL_UPPER = RULES[rule]


def synthetic(kind, frac, seed=1, n=3000, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    z = X @ np.array([1.0, 0.5, 0.0, 0.0]) + rng.normal(size=n)
    if kind == "binary":
        y = (z > np.quantile(z, frac)).astype(float)
    elif kind == "count":
        y = rng.poisson(np.exp(0.6 * z - 0.5)).astype(float)
    else:  # ordinal 0..10
        y = np.clip(np.round(5 + 2 * z), 0, 10)
    return X, y, X, y


def cases(real_too):
    for f in (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9):
        yield f"binary {f:.0%} zeros", (lambda f=f: synthetic("binary", f)), False
    yield "count (Poisson, ~45% zeros)", lambda: synthetic("count", 0), False
    yield "ordinal 0..10", lambda: synthetic("ordinal", 0), False
    if real_too:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        import _real_datasets as R

        for name in [*R.REGRESSION_STUDY_SETS, "HI/raw", "HI/scaled"]:
            yield name, (lambda name=name: R.regression_study_split(name)), True


def main():
    warnings.simplefilter("ignore")
    s_syn = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    s_real = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    eps = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    print(f"epsilon {eps}; synthetic n=3000 d=4 ({s_syn} seeds, train R^2); real sets ({s_real} seeds, test R^2)")
    print(f"{'case':32s} " + "  ".join(f"{r + ': neg  median   worst':>34s}" for r in RULES))
    for name, load, real in cases(s_real > 0):
        Xtr, ytr, Xte, yte = load()
        ytr, yte = np.asarray(ytr, float), np.asarray(yte, float)
        cols = []
        for rule in RULES:
            use(rule)
            sc = np.array([DPLinearRegressor(epsilon=eps, random_state=s).fit(Xtr, ytr).score(Xte, yte)
                           for s in range(s_real if real else s_syn)])
            cols.append(f"{np.mean(sc < 0):10.0%} {np.median(sc):8.4f} {sc.min():12.4g}")
        print(f"{name:32s} " + "  ".join(cols), flush=True)
    use("upper")


if __name__ == "__main__":
    main()
