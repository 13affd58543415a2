"""Study (smallsets2): DPLinearRegressor defaults at n epsilon in [300, 400), where the "auto" label centre runs on
its coarse grid (75 ranks) and no label mean is released (AdaSSP's n epsilon < 200).

Usage: OMP_NUM_THREADS=1 python benchmarks/study_centre_window_smallsets2.py [seeds] [out.json]
Variants (same seeds): ``main`` (no guard: GUARD_MIN_RANKS = inf), ``guard`` (this branch), ``guard+c400`` (the
intercept-only plan of "Budgets too small for the estimates" below n epsilon = 400 instead of 300, this branch's
``DPLinearRegressor._scale_parts``; the first run, results/smallsets2_window.log, monkeypatched the same rule: the label centre
then gets the whole epsilon, n epsilon >= 300 ranks on the fine grid). Families: ``c``/``o`` of
study_small_reg_guard.py (labels 50 + signal), ``w`` (labels centred at 0: y = X w + noise, rows N(0, I)).
"""
import json
import os
import sys
import warnings
import zlib

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import sklearn_dpsco._solvers._adassp_selection as S  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPLinearRegressor  # noqa: E402

warnings.simplefilter("ignore")
_weighted = DPLinearRegressor._scale_parts  # this branch's rule (400)


def _count(self, targets):  # the rule before it (300: the number of estimates)
    return len(targets)


def set_variant(v):
    S.GUARD_MIN_RANKS = float("inf") if v == "main" else 10.0
    DPLinearRegressor._scale_parts = _weighted if v.endswith("c400") else _count


def make(kind, d, n, r2, level):
    rng = np.random.default_rng(zlib.crc32(f"{kind}{d}{n}{r2}{level}".encode()))
    N = int(n / 0.7)
    s = 10 ** rng.uniform(-1, 2, d) if kind == "o" else np.ones(d)
    mu = 3 * s * rng.choice([-1, 1], d) if kind == "o" else np.zeros(d)
    X = mu + s * rng.standard_normal((N, d))
    w = rng.standard_normal(d) / s
    sig = (X - mu) @ w
    y = level + sig + rng.standard_normal(N) * sig.std() * np.sqrt((1 - r2) / r2)
    return X[:n], y[:n], X[n:], y[n:]


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    outp = sys.argv[2] if len(sys.argv) > 2 else None
    cells = {}
    for kind, level in (("c", 50.0), ("o", 50.0), ("w", 0.0)):
        for d in (1, 2, 3, 5, 10, 30):
            for n, eps in ((150, 2.0), (350, 1.0), (700, 0.5)):
                for r2 in (0.3, 0.9):
                    cells[f"{kind}_d{d}_n{n}_r{r2}/{eps}"] = (make(kind, d, n, r2, level), eps)
    X, y, Xt, yt = R.split("diabetes", "raw")
    cells["diabetes/raw/1.0"] = ((X, y, Xt, yt), 1.0)
    X, y, Xt, yt = R.split("diabetes", "scaled")
    cells["diabetes/scaled/1.0"] = ((X, y, Xt, yt), 1.0)
    variants = ("main", "guard", "guard+c400")
    res = {}
    for key, ((X, y, Xt, yt), eps) in cells.items():
        cell = {}
        for v in variants:
            set_variant(v)
            cell[v] = [float(DPLinearRegressor(epsilon=eps, random_state=s, accountant=BudgetAccountant(float("inf"), 1.0))
                             .fit(X, y).score(Xt, yt)) for s in range(seeds)]
        res[key] = cell
        base = np.array(cell["main"])
        print(f"{key:28s} " + " ".join(f"{v}: {np.mean(c):+.3f} (min {np.min(c):+.2f})" for v, c in cell.items())
              + "".join(f"  d[{v}] {np.mean(np.array(cell[v]) - base):+.3f}" for v in variants[1:]), flush=True)
    if outp:
        json.dump(res, open(outp, "w"))


if __name__ == "__main__":
    main()
