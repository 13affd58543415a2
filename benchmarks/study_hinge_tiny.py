"""DPHingeClassifier at tiny budgets (``n epsilon`` per problem below INTERCEPT_MIN_RANKS = 150): the
3-point intercept refit ``{-B, 0, B}`` against no refit (the former rule), on public synthetic families.

Command (2 cores, a few minutes)::

    OMP_NUM_THREADS=1 python benchmarks/study_hinge_tiny.py [--seeds 5] [--out results/hinge_tiny.jsonl]

Conditions ``share:grid`` (monkeypatching the public rule's constants INTERCEPT_TINY_SHARE / _GRID, same
seeds): ``0:3`` no refit below the threshold (the former default), ``0.3:3`` the default rule (the 3-point
refit at share 0.3 inside its window ``30 <= n eps < 150``, ``n eps / d < 6``), ``s:g`` share ``s`` on a
``g``-point grid inside the window. (``results/hinge_tiny_shares.jsonl`` was run before the window existed:
there ``s:g`` applied at every ``n eps < 150``.)

Commands of results/hinge_intercept.md, "Tiny budgets"::

    python benchmarks/study_hinge_tiny.py --seeds 8 --neps 10,25,50,100,200 --conds 0:3,0.3:3 \
        --out benchmarks/results/hinge_tiny_rule.jsonl
    python benchmarks/study_hinge_tiny.py --seeds 8 --ns 1000,5000 --ds 5,40 --ps 0.35,0.1 \
        --neps 40,80,150,250 --conds 0:3,0.3:3 --out benchmarks/results/hinge_tiny_holdout.jsonl
Families (test rows alongside, 5000):

* ``gauss``: standard-normal rows (centred, unbounded), a linear rule at prevalence ``p`` (0.5 or 0.2),
  10 % of labels flipped; every default (``clip="auto"``).
* ``offset``: rows of norm <= 1 far from centred (offset 0.6, spread 0.3, as in
  tests/linear_model/test_intercept_refit.py), prevalence ``p``; ``clip=1`` declared, and defaults.
* ``multi``: three classes (0.6 / 0.25 / 0.15), standard-normal rows, nearest of three random centres
  with 10 % flipped; defaults.

Per cell: mean test accuracy, the majority class's accuracy, the number of seeds whose model is below the
majority by more than 0.02 (``below``) and of single-class models (``1c``).
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from sklearn_dpsco import BudgetAccountant, DPHingeClassifier  # noqa: E402
from sklearn_dpsco.linear_model import _hinge_rules as rules  # noqa: E402

N_TEST = 5000


def gauss(n, d, p, seed):
    rng = np.random.default_rng(seed)
    N = n + N_TEST
    X = rng.standard_normal((N, d))
    s = X @ rng.standard_normal(d)
    y = (s > np.quantile(s, 1 - p)).astype(int)
    flip = rng.random(N) < 0.1
    y[flip] = 1 - y[flip]
    return X[:n], y[:n], X[n:], y[n:]


def offset(n, d, p, seed):
    rng = np.random.default_rng(seed)
    N = n + N_TEST
    direction = rng.standard_normal(d)
    direction /= np.linalg.norm(direction)
    Z = rng.standard_normal((N, d)) * 0.3 / math.sqrt(d)
    X = 0.6 * np.ones(d) / math.sqrt(d) + Z
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    s = Z @ direction
    y = (s > np.quantile(s, 1 - p)).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def multi(n, d, p, seed):
    rng = np.random.default_rng(seed)
    N = n + N_TEST
    centres = rng.standard_normal((3, d))
    y = rng.choice(3, size=N, p=[0.6, 0.25, 0.15])
    X = centres[y] * 0.7 + rng.standard_normal((N, d))
    flip = rng.random(N) < 0.1
    y[flip] = rng.integers(0, 3, int(flip.sum()))
    return X[:n], y[:n], X[n:], y[n:]


FAMILIES = {"gauss": (gauss, {}), "offset_clip1": (offset, {"clip": 1.0}), "offset": (offset, {}),
            "multi": (multi, {})}


def fit_score(X, y, Xt, yt, eps, seed, cond, kw):
    share, grid = cond.split(":")
    saved = rules.INTERCEPT_TINY_SHARE, rules.INTERCEPT_TINY_GRID
    rules.INTERCEPT_TINY_SHARE, rules.INTERCEPT_TINY_GRID = float(share), int(grid)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DPHingeClassifier(epsilon=eps, random_state=seed, accountant=BudgetAccountant(math.inf, 1.0),
                                    **kw).fit(X, y)
    except Exception as exc:  # a refused fit (recorded; e.g. the ERM certificate at tiny alpha)
        print(f"refused: {type(exc).__name__} eps={eps} seed={seed} cond={cond}", file=sys.stderr)
        return None
    finally:
        rules.INTERCEPT_TINY_SHARE, rules.INTERCEPT_TINY_GRID = saved
    pred = est.predict(Xt)
    info = est.fit_info_[0]
    problem_eps = info["epsilon"] + info.get("intercept_refit_epsilon", 0.0)
    return float(np.mean(pred == yt)), len(np.unique(pred)) == 1, problem_eps, info.get("intercept_refit_grid")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--families", default="gauss,offset_clip1,offset,multi")
    ap.add_argument("--ns", default="400,2000")
    ap.add_argument("--neps", default="10,25,50,100,200,300")
    ap.add_argument("--ds", default="3,10,20")
    ap.add_argument("--ps", default="0.5,0.2")
    ap.add_argument("--conds", default="0:3,0.1:3,0.2:3,0.3:3,0.3:101",
                    help="share:grid pairs (share 0: no refit below the threshold, the former rule)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    shares = a.conds.split(",")
    out = open(a.out, "a") if a.out else None
    t0 = time.perf_counter()
    for fam in a.families.split(","):
        make, kw = FAMILIES[fam]
        for n in (int(v) for v in a.ns.split(",")):
            for neps in (float(v) for v in a.neps.split(",")):
                eps = neps / n
                for d in (int(v) for v in a.ds.split(",")):
                    for p in ((None,) if fam == "multi" else (float(v) for v in a.ps.split(","))):
                        cell = {s: [] for s in shares}
                        majority, peps, grids, errors = [], None, {}, {}
                        for seed in range(a.seeds):
                            X, y, Xt, yt = make(n, d, p, seed)
                            majority.append(float(np.max(np.bincount(yt)) / len(yt)))
                            for s in shares:
                                res = fit_score(X, y, Xt, yt, eps, seed, s, kw)
                                if res is None:
                                    errors[s] = errors.get(s, 0) + 1
                                    continue
                                acc, single, peps, grid = res
                                cell[s].append((acc, single, majority[-1]))
                                grids[s] = grid
                        maj = float(np.mean(majority))
                        row = dict(family=fam, n=n, n_eps=neps, d=d, p=p, problem_n_eps=None if peps is None else round(n * peps, 1),
                                   majority=round(maj, 4))
                        for s in shares:
                            accs = [acc for acc, _, _ in cell[s]]
                            row[s] = dict(acc=round(float(np.mean(accs)), 4) if accs else None,
                                                 below=int(sum(acc < m - 0.02 for acc, _, m in cell[s])),
                                                 single=int(sum(sg for _, sg, _ in cell[s])), grid=grids.get(s),
                                                 err=errors.get(s, 0))
                        line = json.dumps(row)
                        print(line, flush=True)
                        if out:
                            out.write(line + "\n")
                            out.flush()
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
