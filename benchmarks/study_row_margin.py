"""Issue 16, rule 3: the margin of the "auto" row bound of the regressors (``ROW_MARGIN`` x the private median row norm).

``row_bound="auto"`` (DPLinearRegressor, DPGrowthAdaptiveRegressor) releases a private median of the row norms (on
the rows as the fit sees them: after the released column map where there is one) and multiplies it by the public
margin ``ROW_MARGIN`` (2 since the first "auto" scales). The margin is post-processing of the same release: the
arms below share every release and every noise draw (same seed), only the bound the solver runs at moves. Paired
differences against the current margin, mean (s.e.) over the seeds.

    python benchmarks/study_row_margin.py real [seeds] [margins] [models] [tag]   # REGRESSION_STUDY_SETS, eps 0.5 / 1 / 2
    python benchmarks/study_row_margin.py synth [seeds] [margins] [models] [tag]  # public synthetic families, d = 3 .. 100
    python benchmarks/study_row_margin.py summary FILE

``margins`` comma-separated, the first the reference (default ``2,1.41,1``); ``models`` ``linear,growth`` by default.

Results: benchmarks/results/row_margin.md (and row_margin_<part>.jsonl beside it).
"""

import json
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EPSILONS = (0.5, 1.0, 2.0)
MODELS = ("linear", "growth")
HERE = os.path.dirname(os.path.abspath(__file__))


def synth_split(name):
    """``(X_train, y_train, X_test, y_test)`` of a synthetic family ``kind:d:n`` (fixed seed 0; 5000 test rows).

    ``gauss``: standard-normal columns; ``t3``: Student-t columns with 3 degrees of freedom (heavy row norms);
    ``mixed``: standard-normal columns times public scales spread over four decades (raw units).
    Labels ``<w, x> + N(0, s^2)`` with ``||w||`` set so the noiseless R^2 is about 0.5.
    """
    kind, d, n = name.split(":")
    d, n = int(d), int(n)
    rng = np.random.default_rng(0)
    m = n + 5000
    if kind == "t3":
        X = rng.standard_t(3, size=(m, d))
    else:
        X = rng.standard_normal((m, d))
    if kind == "mixed":
        X *= np.logspace(-2, 2, d)[None, :]
    w = rng.standard_normal(d)
    signal = X @ (w / np.maximum(np.logspace(-2, 2, d), 1e-300) if kind == "mixed" else w)
    y = 3.0 + signal + rng.standard_normal(m) * signal.std()
    return X[:n], y[:n], X[n:], y[n:]


SYNTH_SETS = [f"{k}:{d}:{n}" for k in ("gauss", "t3", "mixed") for d in (3, 10, 30, 100) for n in (2000, 20000)]


def _fit_score(model, X, y, Xt, yt, eps, seed, margin):
    import sklearn_dpsco.linear_model._growth as G
    import sklearn_dpsco.linear_model._least_squares as LS
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor, DPLinearRegressor

    LS.ROW_MARGIN = G.ROW_MARGIN = float(margin)
    cls = DPLinearRegressor if model == "linear" else DPGrowthAdaptiveRegressor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(epsilon=eps, random_state=seed, accountant=BudgetAccountant(float("inf"), 1.0)).fit(X, y)
        pred = est.predict(Xt)
    return float(r2_score(yt, pred)) if np.all(np.isfinite(pred)) else float("nan")


def _cell(part, name, model, eps, seeds, margins):
    import _real_datasets as R

    X, y, Xt, yt = R.regression_study_split(name) if part == "real" else synth_split(name)
    out = {str(m): [_fit_score(model, X, y, Xt, yt, eps, s, m) for s in range(seeds)] for m in margins}
    return {"set": name, "model": model, "eps": eps, "n": int(len(y)), "d": int(X.shape[1]), "scores": out}


def main(argv):
    from joblib import Parallel, delayed

    import _real_datasets as R

    part = argv[0]
    seeds = int(argv[1]) if len(argv) > 1 else 10
    margins = [float(m) for m in argv[2].split(",")] if len(argv) > 2 else [2.0, 1.41, 1.0]
    models = argv[3].split(",") if len(argv) > 3 else MODELS
    tag = f"_{argv[4]}" if len(argv) > 4 else ""
    sets = R.REGRESSION_STUDY_SETS if part == "real" else SYNTH_SETS
    cells = [(n, m, e) for n in sets for m in models for e in EPSILONS]
    path = os.path.join(HERE, "results", f"row_margin_{part}{tag}.jsonl")
    rows = Parallel(n_jobs=2)(delayed(_cell)(part, n, m, e, seeds, margins) for n, m, e in cells)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    summarize(path, margins)


def summarize(path, margins=None):
    rows = [json.loads(line) for line in open(path)]
    margins = margins or [float(k) for k in rows[0]["scores"]]
    ref = str(margins[0])
    print(f"| set | model | n | d | eps | R^2 at {ref} | " + " | ".join(f"{m:g} - {ref}" for m in margins[1:]) + " |")
    print("|---|---|---|---|---|---|" + "---|" * (len(margins) - 1))
    diffs = {m: [] for m in margins[1:]}
    for r in rows:
        base = np.array(r["scores"][ref])
        cells = []
        for m in margins[1:]:
            dlt = np.array(r["scores"][str(m)]) - base
            diffs[m].append(dlt.mean())
            cells.append(f"{dlt.mean():+.3f} ({dlt.std(ddof=1) / np.sqrt(len(dlt)):.3f})")
        print(f"| {r['set']} | {r['model']} | {r['n']} | {r['d']} | {r['eps']:g} | {base.mean():.3f} | "
              + " | ".join(cells) + " |")
    print()
    for m in margins[1:]:
        v = np.array(diffs[m])
        print(f"* margin {m:g} - {ref}: mean {v.mean():+.4f}, median {np.median(v):+.4f}, "
              f"worst {v.min():+.3f}, best {v.max():+.3f} over {len(v)} cells")


if __name__ == "__main__":
    if sys.argv[1] == "summary":
        summarize(sys.argv[2])
    else:
        main(sys.argv[1:])
