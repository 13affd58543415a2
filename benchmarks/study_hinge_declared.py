"""DPHingeClassifier with a declared clip: the bound as declared vs fitted at a share of it.

One command (2 cores, about 3 minutes)::

    OMP_NUM_THREADS=1 python benchmarks/study_hinge_declared.py [--seeds 10] [--variants old,new]

Datasets: run_all.py's hinge rows (biopsy, baseball seasons, bench_hinge.bounded_data at n = 2000
and 20000) and the scaled encoding (b) of bench_defaults.py (HI, Benefits, Participation,
breast_cancer, wine; biopsy is the same arrays as run_all's): columns mapped onto [-1, 1] by
documented ranges and rows divided by sqrt(d), declared ``clip=1``. Variants:

* ``old``: the declared bound as the Lipschitz level (the rule before ``declared_clip_level``);
* ``new``: the current default (``declared_clip_level``, linear_model/_hinge_rules.py);
* ``c=<x>``: ``clip=x`` declared directly (the defaults at level x on every problem);
* ``noiseless``: ``old``'s alpha with epsilon = 1e6 (output perturbation): the regularization bias alone.

Test accuracy, mean ± std over noise seeds 0..seeds-1, epsilon 0.5 / 1 / 2, and the level ``clip_``
used at epsilon 2. Results: benchmarks/results/hinge_declared.md.
"""

import argparse
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import bench_hinge  # noqa: E402
import run_all  # noqa: E402

DATASETS = ("baseball", "syn2000", "syn20000", "biopsy", "HI", "Benefits", "Participation", "breast_cancer", "wine")
EPSILONS = (0.5, 1.0, 2.0)


def load(key):
    if key in ("biopsy", "baseball"):
        ds = run_all.real_classification(key)
        return ds.X, ds.y, ds.Xt, ds.yt
    if key.startswith("syn"):
        return bench_hinge.bounded_data(int(key[3:]))
    rs = R.load(key)
    tr, te = R.train_test(rs)
    X, y = R.encode(rs, "scaled")
    return X[tr], y[tr], X[te], y[te]


def estimator(variant, eps, seed, n, d):
    from sklearn_dpsco import BudgetAccountant
    from sklearn_dpsco.linear_model import DPHingeClassifier
    from sklearn_dpsco.linear_model import _hinge as module
    from sklearn_dpsco.linear_model import _hinge_rules as rules

    module.declared_clip_level = rules.declared_clip_level
    kw = dict(epsilon=eps, random_state=seed, accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
    if variant in ("old", "noiseless") or variant.startswith("c="):
        module.declared_clip_level = lambda clip, *args: float(clip)  # the declared level on every problem
    if variant == "old":
        return DPHingeClassifier(clip=1.0, **kw)
    if variant == "new":
        return DPHingeClassifier(clip=1.0, **kw)
    if variant.startswith("c="):
        return DPHingeClassifier(clip=float(variant[2:]), **kw)
    if variant == "noiseless":
        # the old rule's alpha of one problem's solver epsilon (the refit takes its share first)
        share = rules.default_intercept_share(n, d + 1, eps)
        alpha = rules.default_alpha(n, d + 1, 1.0, eps * (1 - share), 0.0)
        kw.update(epsilon=1e6)
        return DPHingeClassifier(clip=1.0, solver="output_perturbation", alpha=alpha, **kw)
    raise ValueError(variant)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--variants", default="old,new")
    args = p.parse_args(argv)
    print("| dataset | n | d | median row norm | variant | eps 0.5 | eps 1 | eps 2 | clip_ at eps 2 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in args.datasets.split(","):
        X, y, Xt, yt = load(key)
        n, d = X.shape
        med = float(np.median(np.linalg.norm(X, axis=1)))
        for variant in args.variants.split(","):
            cells, est = [], None
            for eps in EPSILONS:
                acc = []
                for seed in range(1 if variant == "noiseless" else args.seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = estimator(variant, eps, seed, n, d).fit(X, y)
                    acc.append(float(np.mean(est.predict(Xt) == yt)))
                cells.append(f"{np.mean(acc):.3f} ± {np.std(acc):.3f}" if len(acc) > 1 else f"{acc[0]:.3f}")
            print(f"| {key} | {n} | {d} | {med:.2f} | {variant} | " + " | ".join(cells) + f" | {est.clip_:g} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
