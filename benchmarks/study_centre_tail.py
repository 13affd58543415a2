"""Study (centre2, issue 16): the label centre's tail at small rank budgets, and the centre's double part.

DPLinearRegressor(label_bound="auto") releases a private label median ``c`` on the 643-point signed grid
(8 points per octave) on ``n epsilon_i`` ranks, 50 where the default share is not capped. A release far
from the labels is catastrophic (the spread |y - c| and the solver's noise grow with the miss).

Two parts:

``laws``  exact permute-and-flip laws (no sampling) of the centre on each study set's training labels at
          ``n epsilon_i`` = 50 / 75 / 100, and of the unsigned releases (row norms, |y - median|) at 50 / 75
          / 100; and the two-step candidate (coarse octave grid with a share ``a`` of the centre's
          epsilon, then the fine grid on the released octave and ``W`` octaves either side) at the same
          total budget. Tail = probability of a release beyond ``t`` standard deviations of the median.
``fits``  DPLinearRegressor with every default, rules ``base`` (main), ``weight`` (CENTRE_WEIGHT = 2 only) and
          ``new`` (the library as installed: also the 32-per-octave centre grid), the same seeds (paired), on the regression study
          sets (benchmarks/_real_datasets.py: bench_defaults' sets raw and scaled, Workinghours,
          Schooling, PSID) and synthetic sets (study_small_m's generator); test R^2: mean, 1st
          percentile, minimum, paired difference.

``grid``  the centre's exact law on 8 / 16 / 32 / 64 points per octave (resolution against tail).

Usage: OMP_NUM_THREADS=1 python benchmarks/study_centre_tail.py laws|grid [sets]
       OMP_NUM_THREADS=1 python benchmarks/study_centre_tail.py fits seeds eps[,eps] [sets] > out
"""
import dataclasses
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from numpy.polynomial.legendre import leggauss

warnings.simplefilter("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_datasets as R  # noqa: E402

import sklearn_dpsco.linear_model._auto_scales as _AS  # noqa: E402
import sklearn_dpsco.linear_model._growth as _G  # noqa: E402
import sklearn_dpsco.linear_model._least_squares as _LS  # noqa: E402
from sklearn_dpsco import DPLinearRegressor  # noqa: E402
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid  # noqa: E402
from sklearn_dpsco.linear_model._auto_scales import LABEL_CENTRE  # noqa: E402

SYNTH = [(2000, 3, 0.4), (500, 3, 0.8), (1000, 10, 0.8), (5000, 10, 0.4)]
SETS = list(R.REGRESSION_STUDY_SETS) + [f"syn n{n} d{d} r{r}" for n, d, r in SYNTH]


def load(name):
    if not name.startswith("syn"):
        return R.regression_study_split(name)
    n, d, r2 = (float(p[1:]) for p in name.split()[1:])
    n, d = int(n), int(d)
    rng = np.random.default_rng(1000 * n + 10 * d + int(10 * r2))  # study_small_m.py's sets
    N = int(n / 0.7)
    X = rng.normal(size=(N, d)) * rng.uniform(0.5, 3, d) + rng.uniform(-2, 5, d)
    s = X @ rng.normal(size=d)
    y = 50 + s + rng.normal(scale=np.sqrt(s.var() * (1 - r2) / r2), size=N)
    return X[:n], y[:n], X[n:], y[n:]


# ---------------------------------------------------------------------------------------------- laws
_T, _W = leggauss(700)
_T, _W = 0.5 * (_T + 1), 0.5 * _W


def pf_pmf(gaps):
    """Permute-and-flip's law: ``P(r) = p_r int_0^1 prod_{s != r} (1 - p_s t) dt`` (``p = exp(-gap)``; each
    candidate's uniform arrival time ``t``), by Gauss-Legendre (exact for the polynomial of degree < 1400)."""
    p = np.exp(-np.asarray(gaps, float))
    logs = np.log1p(-np.outer(p, _T))
    out = p * (np.exp(logs.sum(0)[None, :] - logs) @ _W)
    return out / out.sum()


def utility(points, values, q=0.5):
    """The library's quantile utility (sklearn_dpsco/_mechanisms/_quantile.py) over any increasing points."""
    n = values.size
    k = min(n, max(1, math.ceil(q * n)))
    c = np.searchsorted(np.sort(values), points, side="right").astype(np.int64)
    below = np.concatenate(([0], c[:-1]))
    c[-1] = n
    return -np.maximum(np.maximum(below - (k - 1), k - c), 0)


def law(points, values, ranks):
    u = utility(points, values)
    return pf_pmf(ranks / values.size * (u.max() - u) / 2)


CENTRE_GRID = ScaleGrid(per_octave=8, signed=True).points
COARSE_GRID = ScaleGrid(per_octave=1, signed=True).points
UNSIGNED_GRID = ScaleGrid().points


def two_step(y, ranks, a, w):
    pc = law(COARSE_GRID, y, a * ranks)
    out = np.zeros(CENTRE_GRID.size)
    for j in np.nonzero(pc > 1e-300)[0]:
        lo = COARSE_GRID[j - 1 - w] if j - 1 - w >= 0 else -np.inf
        hi = COARSE_GRID[min(j + w, COARSE_GRID.size - 1)]
        idx = np.nonzero((CENTRE_GRID > lo) & (CENTRE_GRID <= hi))[0]
        out[idx] += pc[j] * law(CENTRE_GRID[idx], y, (1 - a) * ranks)
    return out


def tails(pmf, y, ts=(1, 3, 10, 100)):
    med = np.quantile(y, 0.5, method="inverted_cdf")
    err = np.abs(CENTRE_GRID - med) / max(np.std(y), 1e-12)
    return [float(pmf[err > t].sum()) for t in ts]


def unsigned_tail(values, ranks, factor=8.0):
    pmf = law(UNSIGNED_GRID, values, ranks)
    med = np.quantile(values, 0.5, method="inverted_cdf")
    return float(pmf[UNSIGNED_GRID > factor * med].sum()), float(pmf[UNSIGNED_GRID < med / factor].sum())


def run_laws(sets):
    fmt = lambda v: " ".join(f"{x:8.1e}" for x in v)  # noqa: E731
    print("centre: P(|c - median| > 1 / 3 / 10 / 100 sd); rows, |y - median|: P(> 8x, < 1/8 x the median)")
    for name in sets:
        X, y = load(name)[:2]
        X, y = np.asarray(X, float), np.asarray(y, float)
        med = np.quantile(y, 0.5, method="inverted_cdf")
        rows, dev = np.linalg.norm(X, axis=1), np.abs(y - med)
        for ranks in (50, 75, 100):
            print(f"{name:18s} n{y.size:6d} ranks {ranks:3d} centre {fmt(tails(law(CENTRE_GRID, y, ranks), y))} | "
                  f"rows {fmt(unsigned_tail(rows, ranks))} | |y-m| {fmt(unsigned_tail(dev, ranks))}", flush=True)
        for ranks in (50, 100):
            for a, w in ((0.5, 1), (0.7, 1), (0.85, 1), (0.7, 2)):
                print(f"{name:18s} n{y.size:6d} ranks {ranks:3d} two-step a{a} W{w} "
                      f"{fmt(tails(two_step(y, ranks, a, w), y))}", flush=True)


def run_grid(sets):
    """The centre's resolution and tail on 8 / 16 / 32 / 64 points per octave at 75 / 100 / 200 ranks."""
    for name in sets:
        y = np.asarray(load(name)[1], float)
        med, sd = np.quantile(y, 0.5, method="inverted_cdf"), y.std()
        for ranks in (75, 100, 200):
            for per_octave in (8, 16, 32, 64):
                grid = ScaleGrid(per_octave=per_octave, signed=True).points
                pmf = law(grid, y, ranks)
                err = np.abs(grid - med) / sd
                print(f"{name:18s} ranks {ranks:3d} per_octave {per_octave:2d} |G| {grid.size:5d} E[|c - median| / sd] "
                      f"{pmf @ np.minimum(err, 1e6):7.3f} P>1sd {pmf[err > 1].sum():.1e} P>10sd {pmf[err > 10].sum():.1e}",
                      flush=True)


# ---------------------------------------------------------------------------------------------- fits
BASE_CENTRE = dataclasses.replace(LABEL_CENTRE, weight=1.0)
FINE_RANKS = _AS.FINE_CENTRE_RANKS
RULES = ("base", "weight", "new")


def set_rule(rule):
    """``base``: main (equal parts, the 8-per-octave centre grid); ``weight``: the centre's double part only;
    ``new``: the library as installed (double part, and the 32-per-octave grid from 100 ranks)."""
    _LS.LABEL_CENTRE = _G.LABEL_CENTRE = BASE_CENTRE if rule == "base" else LABEL_CENTRE
    _AS.FINE_CENTRE_RANKS = FINE_RANKS if rule == "new" else float("inf")


def run_fits(seeds, eps_list, sets):
    out = {}
    for name in sets:
        Xtr, ytr, Xte, yte = load(name)
        for eps in eps_list:
            res = {}
            for rule in RULES:
                set_rule(rule)
                r2, cs = [], []
                for s in range(seeds):
                    m = DPLinearRegressor(epsilon=eps, random_state=s).fit(Xtr, ytr)
                    r2.append(float(m.score(Xte, yte)))
                    cs.append(float(m.label_center_))
                res[rule] = dict(r2=r2, centre=cs)
            set_rule("new")
            b = np.array(res["base"]["r2"])
            line = f"{name:18s} n{len(ytr):6d} eps{eps:<5} base mean {b.mean():+10.4g} p1 {np.percentile(b, 1):+10.4g} " \
                   f"min {b.min():+10.4g} #<-1 {int((b < -1).sum()):3d}"
            for rule in RULES[1:]:
                a = np.array(res[rule]["r2"])
                d = a - b
                t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size)) if d.std() > 0 else 0.0
                # the paired difference without the seeds where either rule is catastrophic (R^2 < -1)
                ok = (a > -1) & (b > -1)
                dk = d[ok]
                tk = dk.mean() / (dk.std(ddof=1) / math.sqrt(dk.size)) if dk.size > 1 and dk.std() > 0 else 0.0
                line += f" || {rule} mean {a.mean():+10.4g} p1 {np.percentile(a, 1):+10.4g} min {a.min():+10.4g} " \
                        f"#<-1 {int((a < -1).sum()):3d} d {d.mean():+.4f} t {t:+.1f} no-cat d {dk.mean():+.4f} t {tk:+.1f}"
            print(line, flush=True)
            out[f"{name}/{eps}"] = res
    return out


if __name__ == "__main__":
    if sys.argv[1] in ("laws", "grid"):
        (run_laws if sys.argv[1] == "laws" else run_grid)(sys.argv[2].split(",") if len(sys.argv) > 2 else SETS)
    else:
        seeds, eps_list = int(sys.argv[2]), [float(e) for e in sys.argv[3].split(",")]
        sets = sys.argv[4].split(",") if len(sys.argv) > 4 and sys.argv[4] else SETS
        out = run_fits(seeds, eps_list, sets)
        if len(sys.argv) > 5:
            json.dump(out, open(sys.argv[5], "w"))
