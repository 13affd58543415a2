"""UserLevelDPLogistic fit time against scikit-learn's LogisticRegression, measured in one run.

Synthetic grouped data: n_users users with m = 10 rows each, d = 20 features, items i.i.d. from a
logistic model (x ~ N(0, I/d), ||w*|| = 4). Every private model at epsilon = 1, delta = 1e-6 with the
estimator's defaults (``solver="auto"``; also ``user_clip`` and ``user_dp_sgd`` forced), against
``LogisticRegression()`` at its defaults on the same arrays. Each time is the best of ``--repeats``
fits; the ratio is ours / LogisticRegression from the same run, so machine load cancels to first order.
BLAS threads: 1 (threadpoolctl) and the library default.

Usage: python benchmarks/bench_user_speed.py [--repeats 3] [--sizes 20000 2000] [--out benchmarks/results]
"""

import argparse
import os
import platform
import time

import numpy as np
from threadpoolctl import threadpool_limits

D, M = 20, 10
SOLVERS = ["auto", "user_clip", "user_dp_sgd"]
COLUMNS = [(solver, None) for solver in SOLVERS] + [("auto", 2)]  # (solver, n_jobs)


def data(n_users, seed=0):
    rng = np.random.default_rng([seed, n_users])
    w = rng.standard_normal(D)
    w = 4.0 * w / np.linalg.norm(w)
    X = rng.standard_normal((n_users * M, D)) / np.sqrt(D)
    y = (rng.random(n_users * M) < 1.0 / (1.0 + np.exp(-X @ w))).astype(int)
    return X, y, np.repeat(np.arange(n_users), M)


def best_time(fit, repeats):
    """Best wall-clock and best CPU (process, all threads) seconds over ``repeats`` fits."""
    wall = cpu = np.inf
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fit()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu


def measure(n_users, repeats, threads):
    from sklearn.linear_model import LogisticRegression

    from sklearn_dpsco import UserLevelDPLogistic

    X, y, groups = data(n_users)
    limit = threadpool_limits(limits=threads) if threads is not None else None
    try:
        out = {"LogisticRegression": best_time(lambda: LogisticRegression().fit(X, y), repeats)}
        for solver, n_jobs in COLUMNS:
            est = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, solver=solver, random_state=0, n_jobs=n_jobs)
            out[solver, n_jobs] = best_time(lambda est=est: est.fit(X, y, groups), repeats)
            out[solver, n_jobs, "chosen"] = est.solver_
    finally:
        if limit is not None:
            limit.unregister()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20000, 2000], help="numbers of users")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args(argv)
    lines = [
        "# UserLevelDPLogistic fit time vs LogisticRegression",
        "",
        f"`python benchmarks/bench_user_speed.py --repeats {args.repeats} --sizes "
        + " ".join(map(str, args.sizes)) + "`; " + platform.machine() + f", {os.cpu_count()} cores "
        "(shared: ratios are from the same run, each time the best of the repeats).",
        "",
        "Synthetic users with m = 10 rows each, d = 20, epsilon = 1, delta = 1e-6, estimator defaults "
        "(`auto` = the default solver, its choice in brackets; `n_jobs=2`: the kernels' user blocks on two "
        "threads, same result). Each cell: wall seconds (wall ratio; CPU-time ratio) against "
        "`LogisticRegression()` on the same arrays in the same run. On a loaded machine the CPU-time ratio is "
        "the steadier one; with threads CPU time adds up over threads.",
        "",
        "| rows / users | BLAS threads | LogisticRegression wall (CPU) | "
        + " | ".join(f"{s}" + (f" n_jobs={j}" if j else "") for s, j in COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(COLUMNS),
    ]
    for n_users in args.sizes:
        for threads in (1, None):
            res = measure(n_users, args.repeats, threads)
            sk_wall, sk_cpu = res["LogisticRegression"]
            cells = []
            for solver, n_jobs in COLUMNS:
                wall, cpu = res[solver, n_jobs]
                chosen = f" [{res[solver, n_jobs, 'chosen']}]" if solver == "auto" else ""
                cells.append(f"{wall:.3f} ({wall / sk_wall:.1f}x; {cpu / sk_cpu:.1f}x){chosen}")
            row = (f"| {n_users * M} / {n_users} | {threads or 'default'} | {sk_wall:.3f} ({sk_cpu:.3f}) | "
                   + " | ".join(cells) + " |")
            print(row, flush=True)
            lines.append(row)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "user_level_speed.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
