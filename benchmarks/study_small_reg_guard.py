"""Study (smallsets2): AdaSSP's two-candidate guard (its model or the zero model) below the full choice's ranks.

Usage: OMP_NUM_THREADS=1 python benchmarks/study_small_reg_guard.py real|synth [seeds] [variants] [out.json]

Variants (monkeypatched public constants of sklearn_dpsco._solvers._adassp_selection, same seeds):
``main`` = no guard (GUARD_MIN_RANKS = inf: main's code path), ``g<share>`` = the guard on ``share`` of
AdaSSP's epsilon (e.g. g0.2), ``g<share>r<ranks>b<below>`` with its GUARD_MIN_RANKS and GUARD_BELOW (m = n epsilon / d); a suffix ``d1``: GUARD_MIN_FEATURES = 1. (Variant ``f1``, the guard
with the unshrunk-intercept ridge at factor 1 as a third candidate, ran at commit ae6020a; see
benchmarks/results/smallsets2.md.) Cells where the guard does not
run (fit_info_ has no ``ridge_guard`` at seed 0) are identical to main and skipped.
Real: benchmarks/_real_datasets.REGRESSION_STUDY_SETS, bare defaults (``lin``) and DPStandardScaler + model
(``pipe``). Synthetic: rows N(mu, diag(s^2)) (``c``: mu = 0; ``o``: |mu| = 3 s, raw-like offsets and
scales 10^U(-1,2)), y = 50 + X w + noise at non-private R^2 ``r2``; 70/30 split.
"""
import json
import zlib
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
EPS = (0.5, 1.0, 2.0)


def set_variant(v):
    if v == "main":
        S.GUARD_MIN_RANKS = float("inf")
        return
    S.GUARD_MIN_FEATURES = 5
    if v.endswith("d1"):
        S.GUARD_MIN_FEATURES, v = 1, v[:-2]
    body, _, below = v[1:].partition("b")
    share, _, ranks = body.partition("r")
    S.GUARD_SHARE = float(share)
    S.GUARD_MIN_RANKS = float(ranks) if ranks else 10.0
    S.GUARD_BELOW = float(below) if below else 1000.0


def model(mode, eps, seed):
    led = BudgetAccountant(float("inf"), 1.0)
    if mode == "lin":
        return DPLinearRegressor(epsilon=eps, random_state=seed, accountant=led)
    return make_dp_pipeline(DPStandardScaler(random_state=seed), DPLinearRegressor(random_state=seed),
                            epsilon=eps, accountant=led)


def info(m):
    est = m if hasattr(m, "fit_info_") else m.steps[-1][1]
    return est.fit_info_


def synth_sets():
    out = {}
    for kind in ("c", "o"):
        for d in (3, 5, 10, 20, 30):
            for n in (150, 300, 600, 1000, 3000):
                for r2 in (0.3, 0.8):
                    rng = np.random.default_rng(zlib.crc32(f"{kind}{d}{n}{r2}".encode()))
                    N = int(n / 0.7)
                    s = 10 ** rng.uniform(-1, 2, d) if kind == "o" else np.ones(d)
                    mu = 3 * s * rng.choice([-1, 1], d) if kind == "o" else np.zeros(d)
                    X = mu + s * rng.standard_normal((N, d))
                    w = rng.standard_normal(d) / s
                    sig = (X - mu) @ w
                    noise = rng.standard_normal(N) * sig.std() * np.sqrt((1 - r2) / r2)
                    y = 50 + sig + noise
                    out[f"{kind}_d{d}_n{n}_r{r2}"] = (X[:n], y[:n], X[n:], y[n:])
    return out


def main():
    args = sys.argv[1:]
    which = args[0]
    seeds = int(args[1]) if len(args) > 1 else 20
    variants = args[2].split(",") if len(args) > 2 else ["main", "g0.2"]
    outp = args[3] if len(args) > 3 else None
    if which == "real":
        sets = {k: R.regression_study_split(k) for k in R.REGRESSION_STUDY_SETS}
        modes = ("lin", "pipe")
    else:
        sets = synth_sets()
        modes = ("lin",)
    res = {}
    for name, (X, y, Xt, yt) in sets.items():
        for mode in modes:
            for eps in EPS:
                key = f"{name}/{mode}/{eps}"
                set_variant(variants[-1])
                m = model(mode, eps, 0).fit(X, y)
                if not info(m).get("ridge_guard"):
                    continue
                cell = {}
                for v in variants:
                    set_variant(v)
                    cell[v] = [float(model(mode, eps, s).fit(X, y).score(Xt, yt)) for s in range(seeds)]
                res[key] = cell
                base = np.array(cell[variants[0]])
                line = f"{key:34s} n={len(X)} d={X.shape[1]} " + " ".join(
                    f"{v}: {np.mean(c):+.3f} (min {np.min(c):+.2f})" for v, c in cell.items())
                for v in variants[1:]:
                    dd = np.array(cell[v]) - base
                    line += f"  d[{v}] {dd.mean():+.3f} t {dd.mean() / (dd.std(ddof=1) / np.sqrt(len(dd)) + 1e-12):+.1f}"
                print(line, flush=True)
    if outp:
        json.dump(res, open(outp, "w"))


if __name__ == "__main__":
    main()
