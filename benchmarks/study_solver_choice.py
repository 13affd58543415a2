"""Issue 16 item 5: why AdaSSP shrinks on Star / Treatment, and what would fix it (benchmarks/results/solver_choice.md).

``python benchmarks/study_solver_choice.py VARIANTS [--seeds N] [--eps 0.5,1,2] [--sets a,b] [--out file.json]``

``DPLinearRegressor(epsilon)`` with every default (raw columns, nothing declared) on the fresh regression sets
(bench_fresh.py: Star, Treatment, SLID, OFP, Forbes2000) and the tuned ones (_real_datasets.py: BudgetFood, Vocab,
Computers, Wages, diabetes in the raw encoding; PSID, Schooling, Workinghours by ``extra_split``). Variants are
monkeypatches of public constants / post-processing, or estimator parameters:

* ``auto``: the defaults; ``nochoice``: the defaults without the choice between AdaSSP and Phased-ERM (main
  before it); ``phased``: ``solver="phased_erm"``; ``adassp``: ``solver="adassp"``;
* ``ridgeC``: AdaSSP's noise bound ``bound_E`` (the adaptive ridge, the choice's candidates, the eigen floor)
  times C (a public constant, e.g. ``ridge0.5``);
* any variant registered in :data:`VARIANTS` below.

Paired: the same ``random_state`` per seed in every variant. Prints per (set, eps): mean R^2 and worst seed of
each variant, and the paired mean difference to the first variant with its standard error.
"""

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import bench_fresh as B  # noqa: E402

FRESH = ("Star", "Treatment", "SLID", "OFP", "Forbes2000")
TUNED = ("BudgetFood/raw", "Vocab/raw", "Computers/raw", "Wages/raw", "diabetes/raw", "PSID", "Schooling",
         "Workinghours")
SETS = FRESH + TUNED


def load(name):
    if name in B.SETS:
        rs = B.SETS[name]()
        tr, te = B.split(rs)
        return rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]
    return R.regression_study_split(name)


@contextlib.contextmanager
def _ridge_factor(c):
    from sklearn_dpsco._solvers import _adassp as AD

    orig = AD.noise_operator_norm_bound
    AD.noise_operator_norm_bound = lambda mech, d, beta: c * orig(mech, d, beta)
    try:
        yield
    finally:
        AD.noise_operator_norm_bound = orig


@contextlib.contextmanager
def _choice(share, sel_share, min_ranks=100.0, min_d=5):
    """A prototype of the private choice between AdaSSP and Phased-ERM inside one fit (study only).

    The "adassp" plan becomes: Phased-ERM on ``share`` of the solver's budget (its own release, first), then AdaSSP
    on the rest with its private ridge choice forced on at ``sel_share`` of the WHOLE solver budget, Phased-ERM's
    model offered as one more candidate (fixed before the scores are read: adaptive basic composition). Gate
    (public): ``n epsilon sel_share >= min_ranks`` and ``d >= min_d`` (d with the intercept column; the "auto" table's
    small-d branch, d <= 4, where AdaSSP ties or beats Phased-ERM, keeps plain AdaSSP), else plain AdaSSP. The events compose (``epsilon_spent_`` is
    checked in :func:`fit_score`).
    """
    from sklearn_dpsco._budget import split_scale_share
    from sklearn_dpsco._solvers import _adassp as AD
    from sklearn_dpsco._solvers._adassp_selection import RidgeSelection
    from sklearn_dpsco._solvers._builders import _least_squares as BL
    from sklearn_dpsco._solvers._core._plan import SchedulePlan
    from sklearn_dpsco.accounting import ComposedEvent

    orig_builder, orig_cand, orig_share, orig_applies = BL.adassp, AD.ridge_candidates, AD.selection_share, \
        BL.selection_applies
    state = {}

    class Sel(RidgeSelection):
        def utilities(self, source, clip_block, thetas):
            plan = clip_block.args[0]
            slot = thetas[-1]
            slot[:] = state["theta_pe"]
            if plan.intercept_scaling > 0:
                slot[-1] -= plan.label_shift / plan.intercept_scaling  # into the recentred labels' units
            return super().utilities(source, clip_block, thetas)

        def select(self, utilities, rng, size=None):
            i = super().select(utilities, rng, size)
            state["picked"] = i == len(utilities) - 1
            return i

    def cand(*a, **k):
        out = orig_cand(*a, **k)
        if state.get("on"):
            out.append(("phased_erm", np.zeros(a[0].shape[0])))
        return out

    def builder(n, d, budget, params):
        eps = budget.epsilon
        params = {**params, "phased_choice": False}  # the library's own choice off: this prototype replaces it
        if not (n * eps * sel_share >= min_ranks and d >= min_d):
            state["on"] = False
            return orig_builder(n, d, budget, params)
        state["on"] = True
        pe_budget, rest = split_scale_share(budget, share)
        pe = BL.phased_erm(n, d, pe_budget, params)
        AD.selection_share = lambda n_, e_: sel_share * eps / e_
        BL.selection_applies = lambda *a: True
        try:
            ada = orig_builder(n, d, rest, params)
        finally:
            AD.selection_share, BL.selection_applies = orig_share, orig_applies
        sch = ada.schedule
        sch = dataclasses.replace(sch, selection=Sel(sch.selection.epsilon, sch.selection.noise),
                                  event=ComposedEvent((pe.event, sch.event)))

        def runner(problem, schedule, rng):
            state["theta_pe"] = np.asarray(pe.run(problem, rng).coef, dtype=float)
            return BL._run_adassp(problem, schedule, rng)
        return SchedulePlan(sch, runner)

    from sklearn_dpsco._solvers import get_solver

    spec = get_solver("least_squares", "adassp")
    object.__setattr__(spec, "build", builder)  # the frozen spec holds the builder function
    AD.ridge_candidates = cand
    try:
        yield state
    finally:
        object.__setattr__(spec, "build", orig_builder)
        AD.ridge_candidates = orig_cand


@contextlib.contextmanager
def _no_choice():
    """The library before the choice between AdaSSP and Phased-ERM (main 8c2dbff): its public rule off."""
    from sklearn_dpsco.linear_model import _least_squares as LS

    orig = LS.phased_choice_applies
    LS.phased_choice_applies = lambda *a, **k: False
    try:
        yield
    finally:
        LS.phased_choice_applies = orig


#: name -> (estimator parameters, context manager factory or None)
VARIANTS = {
    "auto": ({}, None),
    "phased": ({"solver": "phased_erm"}, None),
    "adassp": ({"solver": "adassp"}, None),
    "nochoice": ({}, _no_choice),
}


def variant(name):
    if name in VARIANTS:
        return VARIANTS[name]
    if name.startswith("choice"):  # choiceP_Q: Phased-ERM share P, selection share Q of the solver budget
        p, q, *k = (float(x) for x in name[len("choice"):].split("_"))
        return {}, lambda: _choice(p, q, min_d=k[0] if k else 5)
    if name.startswith("ridge"):
        c = float(name[len("ridge"):])
        return {}, lambda: _ridge_factor(c)
    raise KeyError(name)


def fit_score(Xtr, ytr, Xte, yte, eps, seed, name):
    from sklearn.metrics import r2_score

    from sklearn_dpsco import BudgetAccountant, DPLinearRegressor

    params, ctx = variant(name)
    est = DPLinearRegressor(epsilon=eps, random_state=seed, accountant=BudgetAccountant(float("inf"), 1.0), **params)
    with warnings.catch_warnings(), (ctx() if ctx else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
        assert abs(est.epsilon_spent_ - eps) < 1e-9 * eps or est.epsilon_spent_ <= eps
    return float(r2_score(yte, est.predict(Xte))), est.solver_


def run(names, sets, epsilons, seeds):
    out = {}
    for s in sets:
        Xtr, ytr, Xte, yte = load(s)
        for eps in epsilons:
            cell = {}
            for v in names:
                cell[v] = [fit_score(Xtr, ytr, Xte, yte, eps, seed, v) for seed in seeds]
            out[f"{s}@{eps}"] = cell
            base = np.array([r for r, _ in cell[names[0]]])
            parts = []
            for v in names:
                r = np.array([x for x, _ in cell[v]])
                used = "/".join(sorted({u for _, u in cell[v]}))
                diff = r - base
                se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else 0.0
                tag = "" if v == names[0] else f" d {diff.mean():+.3f}+-{se:.3f}"
                parts.append(f"{v}[{used}] {r.mean():.3f} (min {r.min():.3f}){tag}")
            print(f"{s} eps {eps}: " + " | ".join(parts), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("variants")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--eps", default="0.5,1,2")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    res = run(a.variants.split(","), a.sets.split(","), [float(e) for e in a.eps.split(",")], range(a.seeds))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main()
