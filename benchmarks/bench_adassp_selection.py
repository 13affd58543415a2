"""AdaSSP's private ridge choice on the small real regression sets: on / off, and an oracle.

For the regression sets of benchmarks/bench_defaults.py where DPLinearRegressor runs AdaSSP
(Wages, diabetes, Computers at epsilon <= 1), test R^2 (fixed 70/30 split) mean over ``--seeds``
noise seeds, in encoding (a) raw (nothing declared) and (b) scaled (``auto`` bounds, and
``row_bound=1, label_bound=1`` declared):

* ``off``: the fit without the choice (the public rule forced off);
* ``on``: the default (doc/privacy/adassp.rst, "Private ridge choice");
* ``oracle``: with the choice off, the best TEST R^2 over a wide candidate set built from the same
  releases (ridge ``bound_E x 4^k``, k = -4..4, intercept shrunk or not, the adaptive ridge, the
  noisy label mean, the zero model). Not private (it reads the test labels): an upper bound on
  what any choice among AdaSSP's releases can reach; where it is negative the cell is out of
  reach for AdaSSP at that budget.

Writes benchmarks/results/adassp_selection.md::

    OMP_NUM_THREADS=1 python benchmarks/bench_adassp_selection.py [--seeds 8]
"""

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _real_datasets as R  # noqa: E402

import sklearn_dpsco._solvers._adassp as AD  # noqa: E402
import sklearn_dpsco._solvers._builders._least_squares as LS  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPLinearRegressor  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
CELLS = (("Wages", "raw", False), ("Wages", "scaled", False), ("Wages", "scaled", True),
         ("diabetes", "raw", False), ("diabetes", "scaled", False), ("diabetes", "scaled", True),
         ("Computers", "raw", False), ("Computers", "scaled", True))
_RULE = LS.selection_applies
_STASH = {}


def _wide_candidates(A_hat, b_hat, adaptive, bound_E, intercept):
    d = A_hat.shape[0]
    out = [("adaptive", adaptive), ("zero", np.zeros(d))]
    if intercept and A_hat[-1, -1] > 0:
        t = np.zeros(d)
        t[-1] = b_hat[-1] / A_hat[-1, -1]
        out.append(("mean", t))
    for free in (False, True):
        pen = np.ones(d)
        if free and intercept:
            pen[-1] = 0.0
        for k in range(-4, 5):
            M = A_hat + bound_E * 4.0**k * np.diag(pen)
            if np.linalg.eigvalsh(M)[0] > 0:
                out.append((f"ridge{k}{'f' if free else ''}", np.linalg.solve(M, b_hat)))
    return out


def _fit(X, y, eps, seed, declared):
    kw = dict(row_bound=1.0, label_bound=1.0) if declared else {}
    return DPLinearRegressor(epsilon=eps, random_state=seed, accountant=BudgetAccountant(float("inf"), 1.0),
                             **kw).fit(X, y)


def _oracle(est, X_test, y_test, declared):
    """Best test R^2 over the wide candidates of the last AdaSSP run (not private)."""
    from sklearn.metrics import r2_score

    cands = _STASH.get("candidates")
    if cands is None:
        return float("nan")
    c = 0.0 if declared else getattr(est, "label_center_", 0.0)
    s = _STASH["s"]
    Z = np.hstack([X_test / est.row_bound_, np.full((len(X_test), 1), s)]) if s > 0 else X_test / est.row_bound_
    return max(r2_score(y_test, c + est.label_bound_ * (Z @ t)) for _, t in cands)


def main():
    from sklearn.metrics import r2_score

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    orig_run = AD.run_adassp

    def spy(source, plan, rng, *, statistics=None):
        # the same releases as run_adassp (same rng draws), then the wide candidate set
        A, b = AD.adassp_statistics(source, plan) if statistics is None else statistics
        state = rng.bit_generator.state
        lam_min = float(np.linalg.eigvalsh(A)[0])
        plan.mech_min.release(lam_min, rng)  # run_adassp's draw of the smallest eigenvalue (not used here)
        A_hat = AD.sym_from_vec(plan.mech_A.release(AD.vec_from_sym(A), rng), plan.d)
        b_hat = plan.mech_b.release(b, rng)
        rng.bit_generator.state = state
        theta, ridge = orig_run(source, plan, rng, statistics=(A, b))
        _STASH["candidates"] = _wide_candidates(A_hat, b_hat, theta, plan.bound_E, plan.intercept_scaling > 0)
        _STASH["s"] = plan.intercept_scaling
        return theta, ridge

    LS.run_adassp = spy
    lines = ["# AdaSSP's private ridge choice on the small real regression sets", "",
             f"`OMP_NUM_THREADS=1 python benchmarks/bench_adassp_selection.py --seeds {args.seeds}`; test R^2, "
             "mean over the seeds at epsilon 0.5 / 1 / 2 (fixed 70/30 split). `off`: the choice forced off; "
             "`on`: the default; `oracle (off)`: the best TEST R^2 among a wide set of candidates from the "
             "releases of the `off` fit (not private; an upper bound for any choice among AdaSSP's releases). "
             "`-` = another solver ran (m >= 500, pure DP).", "",
             "| dataset | encoding | bounds | off | on | oracle (off) |", "|---|---|---|---|---|---|"]
    for key, enc, declared in CELLS:
        rs = R.load(key)
        tr, te = R.train_test(rs)
        X, y = R.encode(rs, enc)
        row = {"off": [], "on": [], "oracle": []}
        for eps in EPSILONS:
            vals = {"off": [], "on": [], "oracle": []}
            solver = None
            for seed in range(args.seeds):
                for mode in ("off", "on"):
                    LS.selection_applies = (lambda *a: False) if mode == "off" else _RULE
                    _STASH.clear()
                    est = _fit(X[tr], y[tr], eps, seed, declared)
                    solver = est.solver_
                    vals[mode].append(r2_score(y[te], est.predict(X[te])))
                    if mode == "off":
                        vals["oracle"].append(_oracle(est, X[te], y[te], declared))
            for k in row:
                row[k].append("-" if solver != "adassp" else f"{np.mean(vals[k]):.3f}")
        LS.selection_applies = _RULE
        line = (f"| {key} | {enc} | {'declared' if declared else 'auto'} | " +
                " | ".join(" / ".join(row[k]) for k in ("off", "on", "oracle")) + " |")
        print(line, flush=True)
        lines.append(line)
    out = os.path.join(os.path.dirname(__file__), "results", "adassp_selection.md")
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
