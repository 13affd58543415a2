"""Study (smallsets2): the branch's two rules together vs main, paired noise seeds, on the regression study sets.

Usage: OMP_NUM_THREADS=1 python benchmarks/study_smallsets2_final.py [seeds] [out.json] [fresh]
(``fresh``: bench_fresh.py's regression sets Treatment, SLID, Star, Forbes2000, OFP instead.)
``main``: both rules off in the same process (GUARD_MIN_RANKS = inf; ``_scale_parts`` = the number of estimates,
the 300 rule); ``branch``: as committed. Sets: benchmarks/_real_datasets.REGRESSION_STUDY_SETS, bare defaults
(``lin``) and DPStandardScaler + model (``pipe``), epsilon 0.5 / 1 / 2. Cells whose first 3 seeds agree exactly are
reported as ``same`` and not run further.
"""
import json
import os
import sys
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import sklearn_dpsco._solvers._adassp_selection as S  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPLinearRegressor  # noqa: E402
from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline  # noqa: E402

warnings.simplefilter("ignore")
_weighted, _ranks = DPLinearRegressor._scale_parts, S.GUARD_MIN_RANKS


def set_variant(v):
    S.GUARD_MIN_RANKS = float("inf") if v == "main" else _ranks
    DPLinearRegressor._scale_parts = (lambda self, targets: len(targets)) if v == "main" else _weighted


def model(mode, eps, seed):
    led = BudgetAccountant(float("inf"), 1.0)
    if mode == "lin":
        return DPLinearRegressor(epsilon=eps, random_state=seed, accountant=led)
    return make_dp_pipeline(DPStandardScaler(random_state=seed), DPLinearRegressor(random_state=seed),
                            epsilon=eps, accountant=led)


def scores(mode, eps, seeds, X, y, Xt, yt, v):
    set_variant(v)
    return [float(model(mode, eps, s).fit(X, y).score(Xt, yt)) for s in seeds]


FRESH = ("Treatment", "SLID", "Star", "Forbes2000", "OFP")


def fresh_split(name):
    """benchmarks/bench_fresh.py's regression set ``name`` on its fixed 70/30 split."""
    import bench_fresh as F

    rs = F.SETS[name]()
    tr, te = F.split(rs)
    return rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    outp = sys.argv[2] if len(sys.argv) > 2 else None
    fresh = len(sys.argv) > 3 and sys.argv[3] == "fresh"
    res = {}
    for name in (FRESH if fresh else R.REGRESSION_STUDY_SETS):
        X, y, Xt, yt = fresh_split(name) if fresh else R.regression_study_split(name)
        for mode in ("lin", "pipe"):
            for eps in (0.5, 1.0, 2.0):
                key = f"{name}/{mode}/{eps}"
                a = scores(mode, eps, range(3), X, y, Xt, yt, "main")
                b = scores(mode, eps, range(3), X, y, Xt, yt, "branch")
                if a == b:
                    print(f"{key:34s} same", flush=True)
                    continue
                a += scores(mode, eps, range(3, seeds), X, y, Xt, yt, "main")
                b += scores(mode, eps, range(3, seeds), X, y, Xt, yt, "branch")
                d = np.array(b) - np.array(a)
                res[key] = {"main": a, "branch": b}
                print(f"{key:34s} main {np.mean(a):+.3f} (min {np.min(a):+.2f})  branch {np.mean(b):+.3f} "
                      f"(min {np.min(b):+.2f})  d {d.mean():+.3f} t {d.mean() / (d.std(ddof=1) / np.sqrt(len(d))):+.1f}",
                      flush=True)
    if outp:
        json.dump(res, open(outp, "w"))


if __name__ == "__main__":
    main()
