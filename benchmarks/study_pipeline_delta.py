"""DPPipeline at delta > 0: zCDP shares (before) against (epsilon_i, delta_i) shares (``split_kinds``).

    OMP_NUM_THREADS=1 python benchmarks/study_pipeline_delta.py [--seeds 8] [--sets a,b] [--configs a,b]

Encoding (b) of bench_defaults.py (columns scaled by public ranges) for ``declared_clip`` and
``declared_bounds``, encoding (a) (raw) for ``default``. Three pipelines:

* ``default``: ``DPPipeline([DPStandardScaler(), model()])``: the scaler hands its work over, one working step;
* ``declared_clip``: the model's scale declared (``clip=1`` / ``row_bound=1``): the scaler keeps its 0.3 share;
* ``declared_bounds``: ``DPStandardScaler(bounds=(-1, 1))`` (Gaussian only) before the default model.

For each (set, epsilon): the mean over paired noise seeds of the pipeline at ``delta = 0``, at ``delta = 1e-6``
with the zCDP split of every step (``curve_kind``, before) and with ``split_kinds`` (after); the paired
difference after - before with its standard error. Accuracy for classifiers, R^2 for regressors.
Results: benchmarks/results/pipeline_delta.md.
"""

import argparse
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402

SETS = ("HI", "Participation", "biopsy", "breast_cancer", "wine", "Computers", "diabetes")
CONFIGS = ("default", "declared_clip", "declared_bounds")
EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-6


def _pipeline(config, seed, task, epsilon, delta):
    from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor, DPPipeline, DPStandardScaler

    reg = task == "reg"
    if config == "declared_clip":
        model = DPLinearRegressor(row_bound=1.0, random_state=seed) if reg else DPHingeClassifier(clip=1.0,
                                                                                                 random_state=seed)
    else:
        model = DPLinearRegressor(random_state=seed) if reg else DPHingeClassifier(random_state=seed)
    bounds = (-1.0, 1.0) if config == "declared_bounds" else "auto"
    steps = [("scaler", DPStandardScaler(bounds=bounds, random_state=seed)), ("model", model)]
    return DPPipeline(steps, epsilon=epsilon, delta=delta)


def main(argv=None):
    import sklearn_dpsco.preprocessing._pipeline as P
    from sklearn_dpsco.accounting._shares import curve_kind

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args(argv)
    after = P.split_kinds

    def before(steps, delta):
        return [curve_kind(step) for step in steps]

    print("| pipeline | set | eps | delta 0 | zCDP shares (before) | (eps_i, delta_i) shares (after) | after - before |")
    print("|---|---|---|---|---|---|---|")
    for config in args.configs.split(","):
        for key in args.sets.split(","):
            rs = R.load(key)
            Xtr, ytr, Xte, yte = R.split(key, "raw" if config == "default" else "scaled")
            for eps in EPSILONS:
                arms = {}
                for arm, delta, kinds in (("pure", 0.0, after), ("before", DELTA, before), ("after", DELTA, after)):
                    P.split_kinds = kinds
                    scores = []
                    for seed in range(args.seeds):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            pipe = _pipeline(config, seed, rs.task, eps, delta).fit(Xtr, ytr)
                        pred = pipe.predict(Xte)
                        scores.append(r2_score(yte, pred) if rs.task == "reg" else float(np.mean(pred == yte)))
                    arms[arm] = np.array(scores)
                P.split_kinds = after
                diff = arms["after"] - arms["before"]
                se = diff.std(ddof=1) / np.sqrt(len(diff))
                print(f"| {config} | {key} | {eps:g} | {arms['pure'].mean():.3f} | {arms['before'].mean():.3f} | "
                      f"{arms['after'].mean():.3f} | {diff.mean():+.3f} ± {se:.3f} |", flush=True)


if __name__ == "__main__":
    main()
