"""Study: DPGrowthAdaptiveRegressor's defaults against its own intercept-only release at small ``n epsilon``.

Usage: OMP_NUM_THREADS=1 python benchmarks/study_growth_small_budget.py real|real350|real_lsq|synth|synth_d|synth350 [seeds]
[out.json]

The growth regressor releases the intercept-only model (a private label median) below ``n epsilon = 300`` with
three "auto" estimates (``scales_supported``); DPLinearRegressor does so below 400 (weighted parts) and also
guards AdaSSP privately (its model or the zero model). Is a higher threshold, or a d-dependent one, right for
the growth regressor? Each cell fits the defaults and ``Const`` (the same estimator with the constant plan
forced: the release the rule would make) on the same rows and seed.

* ``real``: benchmarks/_real_datasets.REGRESSION_STUDY_SETS, the training rows subsampled to
  ``n = n_epsilon / epsilon`` (seeded), scored on the fixed test split.
* ``real350``: the same at n epsilon 350 only.
* ``synth``: rows N(offset / 10, diag(10^U(0, 1))^2), y = offset + standardized <x, w> + noise at population
  R^2 ``r2``; 2000 test rows; d in {1, 2, 5, 20}, n epsilon 300-600, epsilon 0.5 / 2.
* ``synth_d``: the same family with half the columns carrying signal, d in {10, 15, 20, 30, 50}, n epsilon
  300-1500, epsilon 1, 8 seeds; ``synth350``: d in {2, 5, 10, 20, 30} at n epsilon 350.

* ``real_lsq``: ``real`` for DPLinearRegressor against its own constant, n epsilon 400-1500.

The runs behind the results page: ``real 10``, ``real350 10``, ``real_lsq 10``, ``synth 10``, ``synth_d 8``,
``synth350 8``
(the growth_small_budget_*.json files; the defaults there are those of the commit before the rule).

Results and the conclusion: benchmarks/results/growth_small_budget.md.
"""
import json
import os
import sys
import warnings

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor  # noqa: E402

warnings.simplefilter("ignore")


class Const(DPGrowthAdaptiveRegressor):
    """The defaults with the constant plan forced (the intercept-only release of ``_constant_plan``)."""

    def _scales_unsupported(self, targets, n_samples, columns=None, n_coef=None):
        return True


class ConstLSQ(DPLinearRegressor):
    """DPLinearRegressor with the constant plan forced (mode ``real_lsq``)."""

    def _scales_unsupported(self, targets, n_samples, columns=None, n_coef=None):
        return True


#: the estimator and its forced-constant twin compared by :func:`pair` (``real_lsq`` swaps them)
MODELS = [DPGrowthAdaptiveRegressor, Const]


def pair(X, y, Xte, yte, eps, seed):
    model, const = MODELS
    g = r2_score(yte, model(epsilon=eps, random_state=seed).fit(X, y).predict(Xte))
    c = r2_score(yte, const(epsilon=eps, random_state=seed).fit(X, y).predict(Xte))
    return g, c


def real_lsq(seeds):
    MODELS[:] = [DPLinearRegressor, ConstLSQ]
    return real(seeds, (400, 500, 700, 1000, 1500))


def real(seeds, grid=(300, 400, 500, 600, 800, 1000, 1500)):
    for name in R.REGRESSION_STUDY_SETS:
        Xtr, ytr, Xte, yte = R.regression_study_split(name)
        for neps in grid:
            for eps in (0.5, 1.0, 2.0):
                n = int(round(neps / eps))
                if n > len(ytr) or n < 150:
                    continue
                res = []
                for s in range(seeds):
                    idx = np.random.default_rng(1000 + s).choice(len(ytr), n, replace=False)
                    res.append(pair(Xtr[idx], ytr[idx], Xte, yte, eps, s))
                yield dict(set=name, d=Xtr.shape[1], n=n, eps=eps, neps=neps, growth=[r[0] for r in res],
                           const=[r[1] for r in res])


def synth(seeds):
    for d in (1, 2, 5, 20):
        for r2 in (0.5, 0.9, 0.99):
            for offset in (0.0, 50.0):
                for neps in (300, 400, 500, 600):
                    for eps in (0.5, 2.0):
                        n = int(neps / eps)
                        res = []
                        for s in range(seeds):
                            rng = np.random.default_rng(s)
                            X = rng.standard_normal((n + 2000, d)) * np.logspace(0, 1, d) + offset / 10
                            f = X @ rng.standard_normal(d)
                            y = offset + f / f.std() + np.sqrt(1 / r2 - 1) * rng.standard_normal(n + 2000)
                            res.append(pair(X[:n], y[:n], X[n:], y[n:], eps, s))
                        yield dict(set=f"synth d={d} r2={r2} offset={offset:g}", d=d, n=n, eps=eps, neps=neps,
                                   growth=[r[0] for r in res], const=[r[1] for r in res])


def synth_d(seeds, dims=(10, 15, 20, 30, 50), grid=(300, 400, 500, 700, 1000, 1500)):
    for d in dims:
        for neps in grid:
            for r2 in (0.3, 0.7, 0.95):
                for offset in (0.0, 50.0):
                    n, res = int(neps), []
                    for s in range(seeds):
                        rng = np.random.default_rng(100 + s)
                        X = rng.standard_normal((n + 2000, d)) * np.logspace(0, 1, d) + offset / 10
                        w = rng.standard_normal(d) * (rng.uniform(size=d) < 0.5)  # half the columns carry signal
                        if not w.any():
                            w[0] = 1.0
                        f = X @ w
                        y = offset + f / f.std() + np.sqrt(1 / r2 - 1) * rng.standard_normal(n + 2000)
                        res.append(pair(X[:n], y[:n], X[n:], y[n:], 1.0, s))
                    yield dict(set=f"synth d={d} r2={r2} offset={offset:g}", d=d, n=n, eps=1.0, neps=neps,
                               growth=[r[0] for r in res], const=[r[1] for r in res])


MODES = {"real": real, "real350": lambda s: real(s, (350,)), "real_lsq": real_lsq, "synth": synth, "synth_d": synth_d,
         "synth350": lambda s: synth_d(s, (2, 5, 10, 20, 30), (350,))}


def main():
    mode = sys.argv[1]
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    out = []
    for row in MODES[mode](seeds):
        g, c = np.array(row["growth"]), np.array(row["const"])
        out.append(row)
        print(f"{row['set']:34s} d={row['d']:3d} n eps={row['neps']:5d} eps={row['eps']:3.1f} n={row['n']:5d} "
              f"growth {g.mean():7.3f} const {c.mean():7.3f} diff {np.mean(g - c):+.3f} "
              f"(s.e. {np.std(g - c, ddof=1) / np.sqrt(len(g)):.3f}) worst {g.min():.3f}", flush=True)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as fh:
            json.dump(out, fh)


if __name__ == "__main__":
    main()
