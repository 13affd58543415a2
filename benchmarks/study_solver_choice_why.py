"""The "why" table of benchmarks/results/solver_choice.md: AdaSSP's ridge bound_E against the signal eigenvalues of
the clipped rows, and what the NOISELESS ridge at bound_E explains next to least squares on the same clipped rows
(seed 0; non-private diagnostics computed inside a private fit: a study, never a release).

``python benchmarks/study_solver_choice_why.py x SET [SET ...]`` (SET as in study_solver_choice.py)
"""
import operator
import os
import sys
import warnings
os.environ.setdefault("OMP_NUM_THREADS","1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from functools import partial  # noqa: E402

import numpy as np  # noqa: E402
import study_solver_choice as S  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPLinearRegressor  # noqa: E402
from sklearn_dpsco._solvers import _adassp as AD  # noqa: E402
from sklearn_dpsco._solvers._builders import _least_squares as BL  # noqa: E402

REC = {}
orig_run = BL.run_adassp
def yy(X, y, w, plan):
    _, yc, sw = AD._clipped_block(X, y, w, plan); return np.array([(sw*yc*yc).sum(), (sw*yc).sum(), sw.sum()])
def run(source, plan, rng, **kw):
    theta, ridge = orig_run(source, plan, rng, **kw)
    # the exact statistics of the clipped rows (labels not recentred)
    A, b = AD.adassp_statistics(source, plan)
    t = source.fold_blocks(partial(yy, plan=plan), operator.add, np.zeros(3))
    n = t[2]; tss = t[0] - t[1]**2 / n
    def frac(th):  # in-sample explained fraction on the clipped rows / labels
        rss = t[0] - 2 * th @ b + th @ A @ th
        return 1 - rss / tss
    ols = np.linalg.lstsq(A, b, rcond=None)[0]
    rid = np.linalg.solve(A + plan.bound_E * np.eye(len(b)), b)
    Ac = A[:-1, :-1] - np.outer(A[:-1, -1], A[:-1, -1]) / A[-1, -1]  # centred covariance x n (intercept last)
    ev = np.linalg.eigvalsh(Ac)
    REC.update(bE=plan.bound_E, ridge=ridge, ols=frac(ols), rid=frac(rid), ev=ev[::-1][:3], sel=plan.selection is not None)
    return theta, ridge
BL.run_adassp = run
for name in sys.argv[2:]:
    Xtr, ytr, Xte, yte = S.load(name)
    for eps in (0.5, 1.0, 2.0):
        REC.clear()
        est = DPLinearRegressor(epsilon=eps, random_state=0, solver="adassp", accountant=BudgetAccountant(float("inf"), 1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore"); est.fit(Xtr, ytr)
        cs = est.fit_info_.get("column_scaling"); mode = cs["mode"] if cs else "none"
        if not REC: print(name, eps, est.solver_); continue
        print(f"| {name} | {eps} | {Xtr.shape[0]} x {Xtr.shape[1]+1} | {Xtr.shape[0]*eps/(Xtr.shape[1]+1):.0f} | {mode} | {REC['bE']:.0f} | {', '.join('%.0f' % e for e in REC['ev'])} | {REC['ols']:.3f} | {REC['rid']:.3f} |", flush=True)
