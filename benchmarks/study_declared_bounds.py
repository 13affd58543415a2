"""Declared bounds against "auto" on rows scaled by public ranges (doc/fitting_raw_data.rst, "Declared bounds").

Encoding (b) of bench_defaults.py: columns mapped onto [-1, 1] by documented ranges, rows divided by sqrt(d)
(norm <= 1), labels mapped onto [-1, 1] by their range. DPLinearRegressor with both bounds declared, with
``row_bound=1`` only, and with nothing declared; DPGrowthAdaptiveRegressor (least absolute deviations) with
both declared. Test R^2, mean (std) over the noise seeds, at epsilon 0.5 / 1 / 2. Run by hand::

    python benchmarks/study_declared_bounds.py [--seeds 8]
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import r2_score

sys.path.insert(0, str(Path(__file__).parent))
import _real_datasets as R  # noqa: E402

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor  # noqa: E402

VARIANTS = {
    "both declared": lambda eps, s: DPLinearRegressor(epsilon=eps, random_state=s, row_bound=1, label_bound=1),
    "row_bound=1": lambda eps, s: DPLinearRegressor(epsilon=eps, random_state=s, row_bound=1),
    "nothing declared": lambda eps, s: DPLinearRegressor(epsilon=eps, random_state=s),
    "growth, both declared": lambda eps, s: DPGrowthAdaptiveRegressor(epsilon=eps, random_state=s, row_bound=1,
                                                                      label_bound=1),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--datasets", default="Computers,Wages,BudgetFood")
    args = parser.parse_args()
    for key in args.datasets.split(","):
        Xtr, ytr, Xte, yte = R.split(key, "scaled")
        for name, make in VARIANTS.items():
            cells = []
            for eps in (0.5, 1.0, 2.0):
                r = [r2_score(yte, make(eps, s).fit(Xtr, ytr).predict(Xte)) for s in range(args.seeds)]
                cells.append(f"{np.mean(r):.3f} ({np.std(r):.3f})")
            print(f"{key:<11} {name:<22} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
