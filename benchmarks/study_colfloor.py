"""Column-scale floor study (issues 16, 18): rules on the released quartiles, A/B in one process.

    OMP_NUM_THREADS=1 python benchmarks/study_colfloor.py mixed 2e4,2e5 main,F8,agree
    OMP_NUM_THREADS=1 python benchmarks/study_colfloor.py atoms 2e4,2e5 main,F8,agree
"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from bench_speed import regression
from sklearn.linear_model import LinearRegression
from sklearn_dpsco import DPLinearRegressor, DPGrowthAdaptiveRegressor, DPHingeClassifier
from sklearn_dpsco.accounting import BudgetAccountant
import sklearn_dpsco.linear_model._column_scaling as CS
from sklearn_dpsco.preprocessing._scaler import BOUNDS_GRID

STEP = 2.0 ** (1.0 / BOUNDS_GRID.per_octave) - 1.0


def _spread(q):
    lo, hi = np.minimum(q[0], q[1]), np.maximum(q[0], q[1])
    return lo, hi, np.maximum(hi - lo, STEP * np.maximum(np.abs(lo), np.abs(hi)))


_NEW = CS.ColumnScaling.from_two_stages.__func__


def _old(cls, centre_1, quartiles, first):
    """main before the change: the stage-1 quartiles unused (a wide pair: scale = max(s2, 1))."""
    wide = np.array([np.full_like(centre_1, -1e300), np.full_like(centre_1, 1e300)])
    return _NEW(cls, centre_1, quartiles, wide)


_FQ = CS.ColumnScaling.from_quartiles.__func__
_RELEASE = CS.ColumnScalingPlan.release


def _one_stage(cls, quartiles, centre=True):
    """Experiment: the two-stage rule's zero, collapse and ratio parts on one stage's pair (b = s_1)."""
    out = _FQ(cls, quartiles, centre)
    lo, hi = out.quartiles
    s1 = CS._spread(lo, hi)
    atom = (lo == 0) | (hi == 0) | (lo == hi)
    top = np.max(np.minimum(s1, 1.0)[~out.passthrough], initial=0.0)
    if top == 0:
        return out
    small = np.maximum(s1, np.minimum(out.scale, CS.SMALL_SPREAD_RATIO * s1 / top))
    scale = np.where(out.passthrough | atom, out.scale, small)
    return cls(out.quartiles, out.centre, scale, out.passthrough)


def set_rule(name):
    """``main``: the floor 1 in both stages (before); ``new``: the library's rule (enlarge with two stages)."""
    base, _, ratio = name.partition(":")  # new:4 = SMALL_SPREAD_RATIO 4, new:none = no ratio
    CS.SMALL_SPREAD_RATIO = None if ratio == "none" else float(ratio or 4.0)
    CS.ColumnScaling.from_two_stages = classmethod({"main": _old, "new": _NEW, "one": _NEW}[base])
    CS.ColumnScaling.from_quartiles = classmethod(_FQ)
    CS.ColumnScalingPlan.release = _RELEASE
    if base == "one":  # also one stage (experiment; from_two_stages' own call keeps the floor 1)
        def release(self, X, rng, n_jobs=None):
            columns, event = _RELEASE(self, X, rng, n_jobs)
            if self.stages == 1:
                columns = _one_stage(CS.ColumnScaling, columns.quartiles, self.centre)
            return columns, event
        CS.ColumnScalingPlan.release = release


def mixed(n, seed=None):
    rng = np.random.default_rng(9)
    X, y = regression(n) if seed is None else regression(n, seed)
    cs = 10.0 ** rng.uniform(-2, 3, size=X.shape[1]); sh = rng.uniform(-5, 5, size=X.shape[1]) * cs
    return X * cs + sh, 300.0 + 40.0 * y


def atoms(n, seed=1):
    """10 continuous columns (mixed units) next to indicators and counts, each pulling its weight."""
    rng = np.random.default_rng(seed)
    ps = [0.05, 0.25, 0.3, 0.6, 0.75, 0.9]
    C = rng.standard_normal((n, 10)) * np.array([0.01, 0.1, 1, 10, 100, 0.03, 0.3, 3, 30, 1000])
    C += np.array([0, 1, -2, 50, 2000, 0.1, 0, 5, -100, 1e4])
    ind = (rng.uniform(size=(n, len(ps))) < ps).astype(float)
    ind12 = 1.0 + (rng.uniform(size=(n, 1)) < 0.25)
    cnt = np.column_stack([rng.poisson(0.5, n), rng.poisson(2, n)]).astype(float)
    X = np.column_stack([C, ind, ind12, cnt])
    Z = (X - X.mean(0)) / X.std(0)
    w = np.random.default_rng(77).uniform(0.5, 1.5, X.shape[1]) * np.where(np.arange(X.shape[1]) % 2, 1, -1)
    y = 10 + Z @ w + 1.0 * rng.standard_normal(n)
    return X, y


def hard(n, seed=1):
    """Worst case for an enlargement: 10 unit-spread columns next to 10 indicators whose p sits near a quartile
    level (the released quartile between the atoms is not identified), coded 0/1, 1/2 and -1/1."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, 10)) * np.array([1, 2, 5, 1, 3, 1, 10, 1, 2, 1])
    u = rng.uniform(size=(n, 10))
    ps = np.array([0.7, 0.75, 0.8, 0.25, 0.75, 0.22, 0.78, 0.25, 0.75, 0.73])
    ind = (u < ps).astype(float)
    ind[:, 3:7] += 1.0          # coded 1/2
    ind[:, 7:9] = 2 * ind[:, 7:9] - 1   # coded -1/1
    X = np.column_stack([C, ind])
    Z = (X - X.mean(0)) / X.std(0)
    w = np.random.default_rng(78).uniform(0.5, 1.5, X.shape[1]) * np.where(np.arange(X.shape[1]) % 2, 1, -1)
    return X, 10 + Z @ w + 1.0 * rng.standard_normal(n)


def run(kind, sizes, rules, epsilons=(0.5, 1.0), seeds=3, est="lin"):
    seeds = int(__import__('os').environ.get('SEEDS', seeds))
    make = {"lin": DPLinearRegressor, "growth": DPGrowthAdaptiveRegressor, "hinge": DPHingeClassifier}[est]
    gen = {"mixed": mixed, "atoms": atoms, "hard": hard}[kind]
    for n in sizes:
        X, y = gen(n)
        Xt, yt = gen(50000, 7)
        if est == "hinge":
            med = np.median(y); y = np.where(y > med, 1, -1); yt = np.where(yt > med, 1, -1)
        if est != "hinge":
            print(n, "LR", round(LinearRegression().fit(X, y).score(Xt, yt), 4), flush=True)
        for eps in epsilons:
            for r in rules:
                set_rule(r)
                sc = []; t0 = time.perf_counter(); sol = None
                for s in range(seeds):
                    e = make(epsilon=eps, random_state=100 + s,
                             accountant=BudgetAccountant(float("inf"), 1.0)).fit(X, y)
                    sc.append(e.score(Xt, yt)); sol = getattr(e, "solver_", "")
                print(f"{kind} {est} n={n:.0e} eps={eps} {r:12s} {sol:10s} mean={np.mean(sc):.4f} min={np.min(sc):.4f} "
                      f"{np.round(sc, 4)} {time.perf_counter() - t0:.1f}s", flush=True)
    set_rule("main")


if __name__ == "__main__":
    kind, sizes, rules = sys.argv[1], [int(float(a)) for a in sys.argv[2].split(",")], sys.argv[3].split(",")
    est = sys.argv[4] if len(sys.argv) > 4 else "lin"
    run(kind, sizes, rules, est=est)
