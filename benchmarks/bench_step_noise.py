"""Secure per-step noise: user-level DP-GD on the secure path against the float path and user_clip.

Measures what ``noise="secure"`` costs ``solver="user_dp_sgd"`` (per-step grid rounding + exact
discrete Gaussian, zCDP composition; doc/privacy/user_level.rst) and whether the ``solver="auto"``
rule (smallest planned noise among user_clip, sc_output_pert, item_group, user_dp_sgd) still picks
the most accurate solver once user_dp_sgd is a candidate on the secure path.

Data and settings are those of ``benchmarks/bench_user_level.py`` (synthetic logistic users, d = 10,
epsilon = 1, delta = 1e-6, alpha = 0.05, data_norm = 1.5, intercept_scaling = 0.5).

Columns: ``||w - w_LR||`` (distance to the non-private minimizer of the same objective, mean over
seeds), per-step sigma, fit time (median over seeds), and the auto choice per noise path.

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_step_noise.py [--seeds 3] [--iterations 50]
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_user_level import ALPHA, DELTA, EPSILON, coef_vector, synthetic  # noqa: E402

DATA_NORM = 1.5


def reference(X, y):
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0 / (ALPHA * len(y)), max_iter=1000).fit(X, y)
    return np.append(lr.coef_.ravel(), lr.intercept_[:1])


def fit(solver, noise, X, y, g, m, seed, iterations):
    from sklearn_dpsco.accounting import BudgetAccountant
    from sklearn_dpsco.linear_model import UserLevelDPLogistic

    est = UserLevelDPLogistic(epsilon=EPSILON, delta=DELTA, solver=solver, max_items_per_user=m,
                              data_norm=DATA_NORM, intercept_scaling=0.5, alpha=ALPHA, random_state=seed,
                              noise=noise, sgd_iterations=iterations, accountant=BudgetAccountant(np.inf, 1.0))
    t = time.perf_counter()
    est.fit(X, y, g)
    return est, time.perf_counter() - t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"epsilon={EPSILON}, delta={DELTA}, T={args.iterations}, {args.seeds} seeds\n")
    print("| n_users | m | solver | noise | sigma/step | ||w - w_LR|| | fit time (s) | auto picks |")
    print("|---|---|---|---|---|---|---|---|")
    for n_users in (200, 1000, 5000):
        for m in (1, 10):
            rows = {}
            for seed in range(args.seeds):
                X, y, g = synthetic(n_users, m, seed)
                ref = reference(X, y)
                for solver in ("user_dp_sgd", "user_clip", "auto"):
                    for noise in ("secure", "float"):
                        est, secs = fit(solver, noise, X, y, g, m, seed, args.iterations)
                        r = rows.setdefault((solver, noise), {"err": [], "time": [], "sigma": [], "chosen": []})
                        r["err"].append(float(np.linalg.norm(coef_vector(est) - ref)))
                        r["time"].append(secs)
                        r["sigma"].append(est.fit_info_[0].get("sigma", np.nan))
                        r["chosen"].append(est.solver_)
            for (solver, noise), r in rows.items():
                chosen = ",".join(sorted(set(r["chosen"]))) if solver == "auto" else ""
                print(f"| {n_users} | {m} | {solver} | {noise} | {np.mean(r['sigma']):.3g} | "
                      f"{np.mean(r['err']):.3f} ± {np.std(r['err']):.3f} | {np.median(r['time']):.3f} | {chosen} |")
    # time cost of the secure steps alone (no data): T releases of a d-vector
    from sklearn_dpsco._budget import Budget
    from sklearn_dpsco._mechanisms._calibrate import dp_gd_step_mechanism, gaussian_steps

    rng = np.random.default_rng(0)
    print("\nPer-step noise of one fit (T x one release of d coordinates), median of 5:")
    print("| d | T | secure (ms) | float (ms) | ratio |")
    print("|---|---|---|---|---|")
    for d in (11, 101, 1001):
        T = args.iterations
        mech = dp_gd_step_mechanism(1.0, T, Budget(EPSILON, DELTA, "secure"), d)
        centre = rng.standard_normal((1, d))

        def secure():
            for _ in range(T):
                mech.draw(rng, 1).release(centre)

        def float_():
            for _ in range(T):
                gaussian_steps(mech.sigma).draw(rng, (1, d)).release(centre)

        times = {}
        for name, fn in (("secure", secure), ("float", float_)):
            ts = []
            for _ in range(5):
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
            times[name] = 1e3 * float(np.median(ts))
        print(f"| {d} | {T} | {times['secure']:.2f} | {times['float']:.2f} | {times['secure'] / times['float']:.1f} |")


if __name__ == "__main__":
    main()
