"""Two follow-ups of benchmarks/results/fresh.md (no library change; monkeypatch and parameters only).

``python benchmarks/study_fresh.py idle``: proposal A. ``make_dp_pipeline(DPStandardScaler(), model)`` turns the
model's own ``column_scaling`` / ``centering`` off (``_pipeline._column_settings``) even when the scaler idled
(released nothing: too few rows for its quartiles at its share). ``A`` = the same pipeline with those settings
left alone whenever every scaler before the model idled (``fit_info_["estimated"] is False``: a public decision
from n, d and the share). Fresh sets (bench_fresh.py) and the tuned sets (_real_datasets.py, raw encoding).

``python benchmarks/study_fresh.py solver``: proposal C. ``DPLinearRegressor(epsilon)`` with ``solver="auto"``
against ``solver="phased_erm"`` on the tuned regression sets (``REGRESSION_STUDY_SETS``); the fresh sets'
numbers are in fresh.md.

Both: epsilon 0.5 / 1 / 2, 5 seeds, fixed 70/30 split; ``1cK`` = K seeds predict one class; ``idle`` = the
scaler idled in some seed.
"""

import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import bench_fresh as B  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
SEEDS = range(5)


def _idle_aware(orig):
    from sklearn_dpsco.preprocessing._scaler import DPStandardScaler

    def settings(step, earlier):
        scalers = [s for s in earlier if isinstance(s, DPStandardScaler)]
        if scalers and all(getattr(s, "fit_info_", {}).get("estimated", True) is False for s in scalers):
            return {}
        return orig(step, earlier)
    return settings


def _sets():
    for k in ("flchain", "Hdma", "Chile", "DoctorAUS", "digits", "Treatment", "SLID", "Star", "Forbes2000", "OFP"):
        rs = B.SETS[k]()
        tr, te = B.split(rs)
        yield "fresh/" + k, rs.task, rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]
    for k in ("HI", "Benefits", "Participation", "biopsy", "breast_cancer", "wine", "BudgetFood", "Vocab", "Computers",
              "Wages", "diabetes"):
        Xtr, ytr, Xte, yte = R.split(k, "raw")
        yield "tuned/" + k, R.load(k).task, Xtr, ytr, Xte, yte


def idle():
    from sklearn_dpsco.preprocessing import _pipeline as P

    orig = P._column_settings
    for name, task, Xtr, ytr, Xte, yte in _sets():
        for model in ("hinge",) if task == "clf" else ("linear", "growth"):
            line = []
            for which, fn in (("main", orig), ("A", _idle_aware(orig))):
                P._column_settings = fn
                cells = []
                for eps in EPSILONS:
                    sc, one, idled = [], 0, 0
                    for s in SEEDS:
                        est = B.ours(model, eps, s, pipe=True)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est.fit(Xtr, ytr)
                        p = est.predict(Xte)
                        sc.append(B.score(task, yte, p))
                        one += task == "clf" and len(np.unique(p)) == 1
                        idled += est[0].fit_info_.get("estimated", True) is False
                    cells.append(f"{np.mean(sc):.3f}{' 1c%d' % one if one else ''}{' idle' if idled else ''}")
                line.append(" / ".join(cells))
            P._column_settings = orig
            print(f"| {name} | {model} | {line[0]} | {line[1]} |", flush=True)


def solver():
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor

    for name in R.REGRESSION_STUDY_SETS:
        Xtr, ytr, Xte, yte = R.regression_study_split(name)
        out = []
        for choice in ("auto", "phased_erm"):
            cells = []
            for eps in EPSILONS:
                sc, used = [], set()
                for s in SEEDS:
                    est = DPLinearRegressor(epsilon=eps, random_state=s, solver=choice,
                                            accountant=BudgetAccountant(float("inf"), 1.0))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(Xtr, ytr)
                    sc.append(r2_score(yte, est.predict(Xte)))
                    used.add(est.solver_)
                tag = "" if choice != "auto" else " " + "/".join(sorted(used))
                cells.append(f"{np.mean(sc):.3f} ({np.std(sc):.3f}){tag}")
            out.append(" / ".join(cells))
        print(f"| {name} | {len(ytr)} x {Xtr.shape[1]} | {out[0]} | {out[1]} |", flush=True)


if __name__ == "__main__":
    {"idle": idle, "solver": solver}[sys.argv[1] if len(sys.argv) > 1 else "idle"]()
