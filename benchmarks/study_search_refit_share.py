"""The refit's share in a private search at delta > 0 (doc/privacy/model_selection.rst, "The refit's share").

DPGridSearchCV(selection="exponential", epsilon=1, delta=1e-6) over the estimator's own default against one more
candidate, on real sets (benchmarks/_real_datasets.py): test accuracy / R^2 of the search's refit, mean (std) over
the seeds, and the seeds whose model predicts one class. Two plans of the same search:

* ``zcdp refit`` (before): the refit under a zCDP share worth (refit_share epsilon, delta) on its own, in which
  its pure parts (the "auto" scales, column quartiles, the hinge's intercept refit, AdaSSP's ridge choice) count
  as epsilon^2 / 2;
* ``basic refit`` (now): the refit under the approximate-DP share (refit_share epsilon, delta / 2), the budget a
  fit of its own at that epsilon has, when its plan composes a pure part; the candidates convert at delta / 2.

Run by hand::

    python benchmarks/study_search_refit_share.py [--seeds 8]
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import r2_score

sys.path.insert(0, str(Path(__file__).parent))
import _real_datasets as R  # noqa: E402

from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic  # noqa: E402
from sklearn_dpsco.model_selection import DPGridSearchCV  # noqa: E402
from sklearn_dpsco.model_selection._search import _BaseDPSearchCV  # noqa: E402

CASES = [  # (dataset, encoding, estimator, grid, scoring)
    ("biopsy", "scaled", DPHingeClassifier, {"alpha": [None, 0.3]}, {}),
    ("breast_cancer", "scaled", DPHingeClassifier, {"alpha": [None, 0.3]}, {}),
    ("HI", "raw", DPHingeClassifier, {"alpha": [None, 0.3]}, {}),
    ("Benefits", "scaled", DPHingeClassifier, {"alpha": [None, 0.3]}, {}),
    ("BudgetFood", "raw", DPLinearRegressor, {"solver": ["auto", "adassp"]},
     {"scoring": "neg_mean_absolute_error", "loss_bound": 1.0}),
    ("Computers", "scaled", DPLinearRegressor, {"solver": ["auto", "adassp"]},
     {"scoring": "neg_mean_absolute_error", "loss_bound": 1.0}),
    ("baseball", "scaled", UserLevelDPLogistic, {"alpha": [None, 1e-3]}, {}),
]


def _score(key, est, Xte, yte):
    p = est.predict(Xte)
    if key in ("BudgetFood", "Computers"):
        return r2_score(yte, p), False
    return float(np.mean(p == yte)), len(np.unique(p)) == 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--datasets", default=None, help="comma-separated subset of the cases' datasets")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    real = _BaseDPSearchCV._refit_kind
    for key, enc, make, grid, extra in CASES:
        if args.datasets and key not in args.datasets.split(","):
            continue
        rs = R.load(key)
        tr, te = R.train_test(rs)
        X, y = R.encode(rs, enc)
        fit_kw = {} if rs.groups is None else {"groups": rs.groups[tr]}
        cells = []
        for name, kind in (("zcdp refit", lambda *a, **k: None), ("basic refit", real)):
            _BaseDPSearchCV._refit_kind = kind
            scores, ones = [], 0
            for s in range(args.seeds):
                est = make() if rs.groups is None else make(delta=1e-6)
                search = DPGridSearchCV(est, grid, epsilon=1.0, delta=1e-6, selection="exponential", random_state=s,
                                        **extra).fit(X[tr], y[tr], **fit_kw)
                v, one = _score(key, search.best_estimator_, X[te], y[te])
                scores.append(v)
                ones += one
            cells.append(f"{name} {np.mean(scores):.3f} ({np.std(scores):.3f}) 1c={ones}")
        _BaseDPSearchCV._refit_kind = real
        print(f"{key:<14} {enc:<6} {make.__name__:<20} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
