"""DPGrowthAdaptiveRegressor on REAL regression sets: "auto" scales vs the former defaults vs declared vs non-private.

One command (2 cores, a few minutes)::

    OMP_NUM_THREADS=1 python benchmarks/bench_growth_scales.py [--seeds 3] [--datasets Wages,diabetes]

Datasets: the regression sets of benchmarks/bench_defaults.py (benchmarks/_real_datasets.py). Rows,
test R^2 on the fixed 70/30 split, mean (std) over the noise seeds at epsilon 0.5, 1, 2:

* ``auto (raw)``: raw columns, nothing declared (``row_bound="auto"``, ``label_bound="auto"``, the defaults);
* ``former (raw)``: raw columns with ``row_bound=None, label_bound=None`` (the defaults before the
  "auto" scales: ``clip=1`` and ``radius=10`` in the data's units);
* ``former (scaled)``: encoding (b) of bench_defaults (row norms <= 1, labels on [-1, 1]), no
  units (the bounds the former defaults assumed hold: ``clip=1``, ``radius=10``);
* ``declared (scaled)``: encoding (b) with ``row_bound=1, label_bound=1`` declared (radius 3);
* ``auto (scaled)``: encoding (b), nothing declared;
* ``auto delta=1e-6 (raw)``: the defaults at ``delta = 1e-6``;
* references: non-private LAD (scikit-learn ``QuantileRegressor(alpha=0)``), least squares, the trivial
  training median.

Writes ``benchmarks/results/growth_scales.md``.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _real_datasets as R  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
REGRESSION = ("BudgetFood", "Vocab", "Computers", "Wages", "diabetes")
VARIANTS = {
    "auto (raw)": ("raw", {}),
    "former (raw)": ("raw", {"row_bound": None, "label_bound": None}),
    "former (scaled)": ("scaled", {"row_bound": None, "label_bound": None}),
    "declared (scaled)": ("scaled", {"row_bound": 1.0, "label_bound": 1.0}),
    "auto (scaled)": ("scaled", {}),
    "auto delta=1e-6 (raw)": ("raw", {"delta": 1e-6}),
}


def _r2(yt, pred):
    from sklearn.metrics import r2_score

    pred = np.asarray(pred, dtype=float)
    return float(r2_score(yt, pred)) if np.all(np.isfinite(pred)) else float("nan")


def references(Xtr, ytr, Xte, yte):
    from sklearn.linear_model import LinearRegression, QuantileRegressor

    m = min(len(ytr), 5000)  # HiGHS on every row of the largest sets takes minutes; LAD on 5000 rows is stable
    out = {"non-private LAD": _r2(yte, QuantileRegressor(alpha=0.0, solver="highs").fit(Xtr[:m], ytr[:m]).predict(Xte)),
           "non-private least squares": _r2(yte, LinearRegression().fit(Xtr, ytr).predict(Xte)),
           "trivial (train median)": _r2(yte, np.full(len(yte), np.median(ytr)))}
    return out


def run(key, seeds):
    from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor

    rs = R.load(key)
    tr, te = R.train_test(rs)
    data = {enc: R.encode(rs, enc) for enc in ("raw", "scaled")}
    rows = {}
    X, y = data["raw"]
    for name, value in references(X[tr], y[tr], X[te], y[te]).items():
        rows[name] = {repr(e): [value] for e in EPSILONS}
    Xs, ys = data["scaled"]
    # encoding (b) maps the labels affinely: R^2 is invariant, so one scale serves both encodings
    for name, (enc, extra) in VARIANTS.items():
        X, y = data[enc]
        row, times = {}, []
        for eps in EPSILONS:
            scores = []
            for seed in seeds:
                est = DPGrowthAdaptiveRegressor(epsilon=eps, random_state=seed,
                                                accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0), **extra)
                t0 = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(X[tr], y[tr])
                except Exception as err:  # a refusal is reported, not hidden
                    print(f"  {key} {name} eps={eps}: {type(err).__name__}: {err}"[:200])
                    continue
                times.append(time.perf_counter() - t0)
                scores.append(_r2(y[te], est.predict(X[te])))
            row[repr(eps)] = scores
        rows[name] = row
        print(f"  {key:11s} {name:24s} " + "  ".join(_cell(row[repr(e)]) for e in EPSILONS)
              + f"   fit {np.median(times):.2f}s", flush=True)
    return {"name": rs.name, "n": int(len(tr)), "d": int(data["raw"][0].shape[1]), "rows": rows}


def _cell(scores):
    if not scores:
        return "err"
    s = np.asarray(scores)
    return f"{np.mean(s):.3f}" if s.size == 1 else f"{np.mean(s):.3f} ({np.std(s):.3f})"


def render(results, seeds):
    lines = ["# DPGrowthAdaptiveRegressor (LAD, p = 1): private scales on real regression sets", "",
             f"Test R^2 (70/30 split), mean (std) over {len(seeds)} noise seeds; `python "
             "benchmarks/bench_growth_scales.py`. Rows: see the script's docstring.", ""]
    for res in results:
        lines += [f"## {res['name']} (n = {res['n']}, d = {res['d']})", "",
                  "| estimator | " + " | ".join(f"eps = {e:g}" for e in EPSILONS) + " |",
                  "|---|" + "---|" * len(EPSILONS)]
        for name, row in res["rows"].items():
            lines.append(f"| {name} | " + " | ".join(_cell(row[repr(e)]) for e in EPSILONS) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--datasets", default=",".join(REGRESSION))
    p.add_argument("--out", default=str(HERE / "results" / "growth_scales.md"))
    a = p.parse_args(argv)
    seeds = list(range(a.seeds))
    results = [run(key, seeds) for key in a.datasets.split(",")]
    text = render(results, seeds)
    Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
