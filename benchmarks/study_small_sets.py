"""DPHingeClassifier with its defaults on small raw sets: would centring or column scaling below the gate help?

One command (2 cores, about 3 minutes)::

    OMP_NUM_THREADS=1 python benchmarks/study_small_sets.py [--datasets iris,wine,...] [--seeds 8]

Datasets: bench_defaults.py's raw encoding (a) of its small classification sets (fixed 70/30 split) and
scikit-learn's iris (three classes, one-vs-rest; stratified 70/30 split, random_state 0). Nothing declared.
Columns (test accuracy, mean over noise seeds 0..seeds-1, and the number of seeds whose model predicts a
single class on the test rows):

* ``default``: ``DPHingeClassifier(epsilon)`` (column scaling where its public gate
  ``n epsilon >= 400 d`` lets it run, else the auto clip alone);
* ``forced``: ``column_scaling=True`` (the private column quartiles below the gate);
* ``centred (sim.)``: a SIMULATION of a private centre before the auto clip: the rows clipped at their
  exact median norm (an oracle stand-in for a private quantile on 0.1 of epsilon), their mean released
  with l2-Laplace noise (sensitivity 2 B) on 0.15 of epsilon, the rows shifted by it and fitted by
  ``DPHingeClassifier(0.75 epsilon, column_scaling=False)``. Not a mechanism of the library: the
  question is only whether building it would pay. Results: benchmarks/results/hinge_eps2.md.
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

EPSILONS = (1.0, 2.0, 5.0)


def load(key):
    """(X, Xt, y, yt), raw columns."""
    from sklearn.model_selection import train_test_split

    if key == "iris":
        from sklearn.datasets import load_iris

        X, y = load_iris(return_X_y=True)
        return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    X, y, Xt, yt = R.split(key, "raw")
    return X, Xt, y, yt


def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def simulated_centre(X, epsilon, seed, centre_share=0.15, bound_share=0.1):
    """The centre a private release would give (see the module docstring), and the budget left to the fit."""
    rng = np.random.default_rng(1000 + seed)
    n, d = X.shape
    norms = np.linalg.norm(X, axis=1)
    bound = np.median(norms)
    clipped = X * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]
    direction = rng.standard_normal(d)
    noise = direction / np.linalg.norm(direction) * rng.gamma(d, 2.0 * bound / (centre_share * epsilon))
    centre = (clipped.sum(axis=0) + noise) / n
    if np.linalg.norm(centre) > bound:
        centre *= bound / np.linalg.norm(centre)
    return centre, epsilon * (1.0 - centre_share - bound_share)


def _cell(models, Xt, yt, shift=None):
    shifts = shift if shift is not None else [0.0] * len(models)
    acc = [m.score(Xt - s, yt) for m, s in zip(models, shifts)]
    single = sum(len(np.unique(m.predict(Xt - s))) == 1 for m, s in zip(models, shifts))
    return f"{np.mean(acc):.3f} ({single})"


def study(keys, seeds):
    from sklearn_dpsco import DPHingeClassifier

    print("| dataset | n | d | eps | n eps / d | default | forced | centred (sim.) |")
    print("|---|---|---|---|---|---|---|---|")
    for key in keys:
        X, Xt, y, yt = load(key)
        n, d = X.shape
        for eps in EPSILONS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                default = [DPHingeClassifier(epsilon=eps, random_state=s, accountant=_ledger()).fit(X, y)
                           for s in range(seeds)]
                forced = [DPHingeClassifier(epsilon=eps, column_scaling=True, random_state=s,
                                            accountant=_ledger()).fit(X, y) for s in range(seeds)]
                centred, centres = [], []
                for s in range(seeds):
                    centre, rest = simulated_centre(X, eps, s)
                    centred.append(DPHingeClassifier(epsilon=rest, column_scaling=False, random_state=s,
                                                     accountant=_ledger()).fit(X - centre, y))
                    centres.append(centre)
            print(f"| {key} | {n} | {d} | {eps:g} | {n * eps / d:.0f} | {_cell(default, Xt, yt)} | "
                  f"{_cell(forced, Xt, yt)} | {_cell(centred, Xt, yt, centres)} |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="iris,wine,breast_cancer,biopsy,Participation,HI")
    p.add_argument("--seeds", type=int, default=8)
    args = p.parse_args(argv)
    study(args.datasets.split(","), args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
