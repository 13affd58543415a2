"""Fit time against scikit-learn at 200k x 20 and 2M x 20, ratios measured in one run.

Every estimator at its defaults (``solver="auto"``), epsilon = 1, ``delta`` in
{0, 1e-6}, the default secure noise, against its scikit-learn counterpart on
the same rows in the same process:

* DPLinearRegressor vs LinearRegression, declared bounds (``row_bound=1,
  label_bound=1``) and auto bounds (the defaults);
* DPHingeClassifier vs LinearSVC (its defaults), declared ``clip=1`` and
  ``clip="auto"`` (the default);
* DPGrowthAdaptiveRegressor (its defaults: "auto" row and label units, column scaling) vs Ridge.

Data (public generators, fixed seeds): d = 20 rows uniform in the unit ball;
regression targets ``clip(<w, x> + 0.1 N(0, 1), -1, 1)`` with ``||w|| = 2``,
classification labels ``sign(<w, x> + 0.05 N(0, 1))``. Time = best of
``--repeats`` fits, ours and the counterpart alternating. Each thread setting runs in its own process
(``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` = 1, then
unset = default threads), and inside one process every DP fit is timed next
to its counterpart, so the ratio is measured under the same machine load.

Writes benchmarks/results/speed.md and prints it. Run by hand (not in CI)::

    python benchmarks/bench_speed.py                      # 2e5 and 2e6 rows
    python benchmarks/bench_speed.py --sizes 2e5 --repeats 1
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

D = 20
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
TARGETS = {"DPLinearRegressor": 1.5, "DPHingeClassifier": 1.5, "DPGrowthAdaptiveRegressor": 3.0}


def ball_rows(n, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    X *= (rng.uniform(size=n) ** (1.0 / D) / np.linalg.norm(X, axis=1))[:, None]
    return X, rng


def regression(n, seed=1):
    import numpy as np

    X, rng = ball_rows(n, seed)
    w = np.random.default_rng(12345).standard_normal(D)
    y = X @ (2.0 * w / np.linalg.norm(w)) + 0.1 * rng.standard_normal(n)
    return X, np.clip(y, -1.0, 1.0)


def classification(n, seed=2):
    import numpy as np

    X, rng = ball_rows(n, seed)
    w = np.random.default_rng(12345).standard_normal(D)
    return X, np.where(X @ w + 0.05 * rng.standard_normal(n) > 0, 1, -1)


def cases():
    """(estimator, bounds, data family, DP factory, counterpart name, counterpart factory)."""
    from sklearn.linear_model import LinearRegression, Ridge
    from sklearn.svm import LinearSVC

    from sklearn_dpsco.linear_model import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor

    return [
        ("DPLinearRegressor", "declared", regression,
         lambda **kw: DPLinearRegressor(row_bound=1.0, label_bound=1.0, **kw), "LinearRegression", LinearRegression),
        ("DPLinearRegressor", "auto", regression, lambda **kw: DPLinearRegressor(**kw),
         "LinearRegression", LinearRegression),
        ("DPHingeClassifier", "declared", classification, lambda **kw: DPHingeClassifier(clip=1.0, **kw),
         "LinearSVC", LinearSVC),
        ("DPHingeClassifier", "auto", classification, lambda **kw: DPHingeClassifier(**kw), "LinearSVC", LinearSVC),
        ("DPGrowthAdaptiveRegressor", "auto", regression, lambda **kw: DPGrowthAdaptiveRegressor(**kw),
         "Ridge", Ridge),
    ]


def timed(fit):
    """(wall-clock, CPU) seconds of one call; CPU time sums the process's threads."""
    w0, c0 = time.perf_counter(), time.process_time()
    fit()
    return time.perf_counter() - w0, time.process_time() - c0


def best_pair(repeats, fit_ref, fit_ours):
    """Best of ``repeats`` for both, the two fits alternating so that a burst of load hits both."""
    ref, ours = [], []
    for _ in range(repeats):
        ref.append(timed(fit_ref))
        ours.append(timed(fit_ours))
    return (min(t[0] for t in ref), min(t[1] for t in ref)), (min(t[0] for t in ours), min(t[1] for t in ours))


def worker(n, repeats, only):
    """Time every case at ``n`` rows in this process; print one JSON line per case."""
    from sklearn_dpsco.accounting import BudgetAccountant

    data = {}
    for name, bounds, family, make, ref_name, make_ref in cases():
        if only and not any(o in f"{name} {bounds}" for o in only):
            continue
        if family not in data:
            data.clear()
            data[family] = family(n)
        X, y = data[family]
        for delta in (0.0, 1e-6):
            est = None

            def fit():
                nonlocal est
                est = make(epsilon=1.0, delta=delta, random_state=0,
                           accountant=BudgetAccountant(float("inf"), 1.0))
                est.fit(X, y)

            (ref_time, ref_cpu), (t, cpu) = best_pair(repeats, lambda: make_ref().fit(X, y), fit)
            row = dict(estimator=name, bounds=bounds, delta=delta, n=n, solver=str(est.solver_), time=t,
                       ref=ref_name, ref_time=ref_time, ratio=t / ref_time, cpu=cpu, ref_cpu=ref_cpu,
                       cpu_ratio=cpu / ref_cpu, score=float(est.score(X, y)))
            print(json.dumps(row), flush=True)


def run(sizes, repeats, only):
    rows = []
    for threads in ("1", "default"):
        env = dict(os.environ)
        for var in THREAD_VARS:
            if threads == "1":
                env[var] = "1"
            else:
                env.pop(var, None)
        for n in sizes:
            cmd = [sys.executable, __file__, "--worker", str(n), "--repeats", str(repeats)]
            if only:
                cmd += ["--only", *only]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                if line.startswith("{"):
                    row = json.loads(line)
                    row["threads"] = threads
                    rows.append(row)
                    print(f"threads={threads:7s} n={n:>8d} {row['estimator']:26s} {row['bounds']:8s} "
                          f"delta={row['delta']:<6g} {row['time']:7.3f}s vs {row['ref']} {row['ref_time']:7.3f}s "
                          f"ratio {row['ratio']:5.2f} (CPU {row['cpu_ratio']:5.2f})", flush=True)
    return rows


def report(rows, repeats):
    from sklearn_dpsco import __version__ as dpsco_version

    lines = [
        "# Fit time against scikit-learn",
        "",
        "Generated by `benchmarks/bench_speed.py` "
        f"(sklearn_dpsco {dpsco_version}, {platform.machine()}, {os.cpu_count()} CPUs, shared machine). "
        f"Best of {repeats} fits each, ours and scikit-learn's counterpart alternating in one process "
        "(a burst of load hits both); ratio = ours / counterpart in wall-clock time, CPU ratio the same in "
        "process CPU time (less sensitive to other jobs on the machine; with default threads it sums the "
        "threads). epsilon = 1, defaults (`solver=\"auto\"`), secure noise. "
        "Targets: 1.5x for DPLinearRegressor and DPHingeClassifier, 3x Ridge for DPGrowthAdaptiveRegressor. "
        "Data and cases in the script's docstring.",
        "",
        "| threads | n | estimator | bounds | delta | solver_ | fit (s) | counterpart | its fit (s) | ratio | "
        "CPU ratio | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ok = "ok" if r["ratio"] <= TARGETS[r["estimator"]] else "MISS"
        lines.append(
            f"| {r['threads']} | {r['n']:.0e} | {r['estimator']} | {r['bounds']} | {r['delta']:g} | {r['solver']} | "
            f"{r['time']:.3f} | {r['ref']} | {r['ref_time']:.3f} | {r['ratio']:.2f} | {r['cpu_ratio']:.2f} | "
            f"{TARGETS[r['estimator']]:g}x {ok} |"
        )
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", type=float, default=[2e5, 2e6])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="run only the cases whose 'estimator bounds' contains one of these")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                      "speed.md"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.repeats, args.only)
        return
    rows = run([int(n) for n in args.sizes], args.repeats, args.only)
    text = report(rows, args.repeats)
    print(text)
    with open(args.out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
