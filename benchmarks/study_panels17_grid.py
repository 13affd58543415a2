"""Issue 17: the magnitudes' DP-GD threshold on bench_user_level's synthetic model, nothing declared.

``OMP_NUM_THREADS=1 python benchmarks/study_panels17_grid.py --out <jsonl>``: bench_user_level.synthetic
(d = 10, X ~ N(0, 1) / sqrt(d), logistic labels, w* of norm 4) at n_users in {200, 500, 2000}, m = 10,
epsilon in {0.5, 1, 2}, 10 seeds, UserLevelDPLogistic with nothing declared (``data_norm=None``: the column
magnitudes where the quartiles do not run) under the new rule (MAGNITUDE_SGD_MIN_STEPS = 0) and the old one
(20, the threshold of every other fit). Two encodings of the same rows: ``centred`` (the model's own
columns, mean 0, within [-1.5, 1.5]) and ``shifted`` (``10 x + 30``: every column one-sided, in raw units
like a year or an age). Test accuracy on bench_user_level.synthetic_test() under the same map.
"""

import argparse
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_user_level as BU  # noqa: E402


def fit(X, y, g, Xt, yt, eps, seed, thr):
    import sklearn_dpsco.linear_model._user_logistic_rules as RR
    from sklearn_dpsco import BudgetAccountant
    from sklearn_dpsco.linear_model import UserLevelDPLogistic

    old = RR.MAGNITUDE_SGD_MIN_STEPS
    RR.MAGNITUDE_SGD_MIN_STEPS = thr
    try:
        est = UserLevelDPLogistic(epsilon=eps, delta=1e-6, max_items_per_user=10, random_state=seed,
                                  accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y, g)
        return float(est.score(Xt, yt)), est.solver_
    finally:
        RR.MAGNITUDE_SGD_MIN_STEPS = old


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--users", default="200,500,2000")
    p.add_argument("--eps", default="0.5,1,2")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    Xt0, yt = BU.synthetic_test()
    maps = {"centred": lambda X: X, "shifted": lambda X: 10.0 * X + 30.0}
    with open(a.out, "a") as fh:
        for n in [int(v) for v in a.users.split(",")]:
            for enc, f in maps.items():
                for eps in [float(e) for e in a.eps.split(",")]:
                    for thr in (0, 20):
                        accs, solver = [], None
                        for s in range(a.seeds):
                            X, y, g = BU.synthetic(n, 10, s)
                            acc, solver = fit(f(X), y, g, f(Xt0), yt, eps, s, thr)
                            accs.append(acc)
                        rec = {"n_users": n, "enc": enc, "eps": eps, "thr": thr, "acc": accs, "solver": solver}
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(f"n={n} {enc} eps={eps:g} thr={thr}: {np.mean(accs):.3f} ± {np.std(accs):.3f} {solver}",
                              flush=True)


if __name__ == "__main__":
    main()
