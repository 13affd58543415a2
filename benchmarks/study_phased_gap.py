"""Phased-ERM just above the pure-DP AdaSSP threshold (m = n eps / d >= 500): why HI goes negative.

    OMP_NUM_THREADS=1 python benchmarks/study_phased_gap.py [--seeds 6] [--tag phasedgap]

Cells: HI as a linear probability model (y 0/1 as float, d + 1 = 22) in encodings raw / scaled at
epsilon 0.7 .. 2 and on row subsamples; the regression sets of bench_defaults where the table picks
Phased-ERM near m = 500 .. 6000; a synthetic 0/1-label family (d + 1 = 21). Rows: the default
estimator (its pick), solver="adassp", solver="phased_erm", and Phased-ERM variants that isolate a
factor (column_scaling=False; radius=1). Utility: test R^2 on the fixed 70/30 split, mean over
seeds, paired differences to the default with t = mean / se. Writes
benchmarks/results/phased_gap_<tag>.json and .md.
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _real_datasets as R  # noqa: E402

from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

from sklearn_dpsco.linear_model import DPLinearRegressor  # noqa: E402

VARIANTS = {
    "default": {},
    "adassp": {"solver": "adassp"},
    "phased_erm": {"solver": "phased_erm"},
    "pe_nocolscale": {"solver": "phased_erm", "column_scaling": False},
    "pe_radius1": {"solver": "phased_erm", "radius": 1.0},
    # the step's distance scale D_step instead of the domain radius (the domain stays radius = 10)
    "pe_step1": {"solver": "phased_erm", "_step_radius": 1.0},
    "pe_step2.5": {"solver": "phased_erm", "_step_radius": 2.5},
}
VARIANT_SETS = {"all": list(VARIANTS), "step": ["default", "adassp", "phased_erm", "pe_step1", "pe_step2.5"]}


def _fit(kw, eps, seed, Xtr, ytr):
    """One fit; ``_step_radius`` plans Phased-ERM's step with D_step in place of the radius (study only)."""
    kw = dict(kw)
    step_radius = kw.pop("_step_radius", None)
    if step_radius is None:
        return DPLinearRegressor(epsilon=eps, random_state=seed, **kw).fit(Xtr, ytr)
    import math

    from sklearn_dpsco._mechanisms._calibrate import rate_dimension_term
    from sklearn_dpsco._solvers._builders import _least_squares as B

    original = B.phased_erm_schedule

    def schedule(n, d, *, clip, radius, epsilon, delta, **rest):
        step = (2.0 * step_radius / clip) * min(4.0 / math.sqrt(n), epsilon / rate_dimension_term(d, delta))
        return original(n, d, clip=clip, radius=radius, epsilon=epsilon, delta=delta, step=step, **rest)

    B.phased_erm_schedule = schedule
    try:
        return DPLinearRegressor(epsilon=eps, random_state=seed, **kw).fit(Xtr, ytr)
    finally:
        B.phased_erm_schedule = original


def _synthetic01(n, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3.0, d) + rng.uniform(-2, 2, d)
    z = (X - X.mean(0)) / X.std(0) @ (rng.standard_normal(d) / np.sqrt(d)) * 1.5 - 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(float)
    k = int(0.7 * n)
    return X[:k], y[:k], X[k:], y[k:]


def cells():
    out = []
    for enc in ("raw", "scaled"):
        for eps in (0.7, 0.85, 1.0, 1.4, 2.0):
            out.append(("HI", enc, eps, None))
        for eps in (1.0, 2.0):
            out.append(("HI", enc, eps, 8000))
    for key, eps_list in (("BudgetFood", (0.5, 1.0, 2.0)), ("Computers", (2.0,)), ("Wages", (2.0,))):
        for enc in ("raw", "scaled"):
            for eps in eps_list:
                out.append((key, enc, eps, None))
    for n in (8000, 20000):
        for eps in (1.0, 2.0):
            out.append(("synth01", "raw", eps, n))
    return out


def load(key, enc, sub):
    if key == "synth01":
        return _synthetic01(sub)
    Xtr, ytr, Xte, yte = R.split(key, enc)
    ytr, yte = ytr.astype(float), yte.astype(float)
    if sub is not None:
        idx = np.random.default_rng(123).permutation(len(ytr))[:sub]  # a fixed public subsample
        Xtr, ytr = Xtr[idx], ytr[idx]
    return Xtr, ytr, Xte, yte


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--tag", default="phasedgap")
    p.add_argument("--variants", default="all", choices=sorted(VARIANT_SETS))
    a = p.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for key, enc, eps, sub in cells():
        Xtr, ytr, Xte, yte = load(key, enc, sub)
        ols = r2_score(yte, LinearRegression().fit(Xtr, ytr).predict(Xte))
        n, d = Xtr.shape[0], Xtr.shape[1] + 1
        rec = {"set": key, "enc": enc, "eps": eps, "n": n, "d": d, "m": n * eps / d, "ols": ols, "r2": {}, "pick": {}}
        for name in VARIANT_SETS[a.variants]:
            kw, r = VARIANTS[name], []
            for s in range(a.seeds):
                m = _fit(kw, eps, s, Xtr, ytr)
                r.append(float(r2_score(yte, m.predict(Xte))))
            rec["r2"][name], rec["pick"][name] = r, m.solver_
        rows.append(rec)
        print(_line(rec), flush=True)
    out = HERE / "results" / f"phased_gap_{a.tag}"
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    out.with_suffix(".md").write_text(render(rows, a.seeds))


def _paired(a, b):
    dlt = np.asarray(b) - np.asarray(a)
    se = dlt.std(ddof=1) / np.sqrt(len(dlt)) if len(dlt) > 1 else np.nan
    return dlt.mean(), (dlt.mean() / se if se > 0 else np.nan)


def _line(rec):
    base = rec["r2"]["default"]
    s = (f"{rec['set']:10s} {rec['enc']:6s} eps {rec['eps']:<4} n {rec['n']:5d} d {rec['d']:2d} m {rec['m']:6.0f} "
         f"ols {rec['ols']:.3f} | default({rec['pick']['default']}) {np.mean(base):+.3f} min {np.min(base):+.3f}")
    for name in list(rec["r2"])[1:]:
        dm, t = _paired(base, rec["r2"][name])
        s += f" | {name} {np.mean(rec['r2'][name]):+.3f} d{dm:+.3f} t{t:+.1f}"
    return s


def render(rows, seeds):
    head = ("# Phased-ERM near the pure-DP threshold (benchmarks/study_phased_gap.py)\n\n"
            f"Test R^2, mean over {seeds} noise seeds (min in brackets for the default); `d` = paired mean "
            "difference to the default over the same seeds, `t` = d / se. m = n eps / d (d with the intercept).\n\n")
    names = list(rows[0]["r2"])[1:]
    cols = ["set", "enc", "eps", "n", "d+1", "m", "OLS", "default (pick)"] + names
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in rows:
        base = rec["r2"]["default"]
        cells_ = [rec["set"], rec["enc"], f"{rec['eps']}", f"{rec['n']}", f"{rec['d']}", f"{rec['m']:.0f}",
                  f"{rec['ols']:.3f}", f"{np.mean(base):+.3f} [{np.min(base):+.3f}] ({rec['pick']['default']})"]
        for name in names:
            dm, t = _paired(base, rec["r2"][name])
            cells_.append(f"{np.mean(rec['r2'][name]):+.3f} (d {dm:+.3f}, t {t:+.1f})")
        lines.append("| " + " | ".join(cells_) + " |")
    return head + "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
