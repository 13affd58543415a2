"""DPLinearRegressor benchmark: utility vs scikit-learn and diffprivlib, interpolation, heavy tails, speed.

Run from outside the source tree with the installed package (one run, 5 seeds):

    python benchmarks/bench_linear.py                 # everything, writes benchmarks/results/linear.md
    python benchmarks/bench_linear.py --parts grid    # one part (grid, interpolation, heavy, timing)

Parts
-----
grid           make_regression(n + 10000, 20, n_informative=10, noise=10, random_state=0); X / 6.5, rows
               clipped to norm 1; y / (3 sqrt(||coef||^2 + 100)) clipped to [-1, 1]; the last 10000 rows are
               the test set. n in {2000, 20000, 100000}, epsilon in {0.1, 0.5, 1, 2, 5}, pure and delta=1e-5.
               Test R^2 of every solver (public bounds R = B = 1, defaults otherwise) against scikit-learn's
               LinearRegression and diffprivlib's LinearRegression (its own venv, same arrays via .npz).
interpolation  the same features with y = <w*, x> exactly (w* = the scaled make_regression coef); excess test
               risk 1/2 E(<w, x> - y)^2 of the interpolation-adaptive solver vs Phased-ERM (and others) at
               epsilon = 1 for n from 2500 to 80000; plot benchmarks/results/linear_interpolation.png.
heavy          Student-t(3) features and labels (y = <w*, x> + t(3) noise), NO bounds declared: the
               extension-only solvers against non-private least squares.
timing         Snowball-SGD fit time for n = 1e4 ... 1e6 (d = 20): slope of log time vs log n, and the ratio to
               scikit-learn's SGDRegressor with one epoch.
memory         fit_stream on file-backed (numpy.memmap) datasets of 1e5 and 1e6 rows: peak Python/numpy
               allocations (tracemalloc) stay at a few blocks whatever the file size.

Raw numbers are cached in benchmarks/.cache/linear_raw.json (git-ignored; delete it to recompute).

All fits use noise="float" (Snowball has no secure path; the recorded results/linear.md are float-path
numbers, comparable with diffprivlib's float samplers).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_regression
from sklearn.linear_model import LinearRegression, SGDRegressor
from sklearn.metrics import r2_score

from sklearn_dpsco.linear_model import DPLinearRegressor
from sklearn_dpsco.linear_model._least_squares_rules import choose_solver as _auto_solver

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RAW = HERE / ".cache" / "linear_raw.json"  # raw numbers, not committed
DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")

NS = (2000, 20000, 100000)
EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
DELTAS = (0.0, 1e-5)
SEEDS = 5
SOLVERS = ("auto", "adassp", "snowball", "phased_sgd", "phased_erm", "lowy", "interpolation")


# ----------------------------------------------------------------------------- data
def synthetic(n, noise=10.0, d=20):
    """The benchmark's grid data: (X, y, X_test, y_test, w*) with rows of norm <= 1 and |y| <= 1."""
    X, y, coef = make_regression(n + 10000, d, n_informative=10, noise=noise, random_state=0, coef=True)
    X = X / 6.5
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    scale = 3.0 * math.sqrt(coef @ coef + 100.0)
    w_star = coef * 6.5 / scale
    y = np.clip(y / scale, -1.0, 1.0) if noise > 0 else X @ w_star
    return X[:n], y[:n], X[n:], y[n:], w_star


def heavy_tailed(n, d=20, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1, 1, d) / math.sqrt(d)
    X = rng.standard_t(3, (n + 10000, d))
    y = X @ w + rng.standard_t(3, n + 10000)
    return X[:n], y[:n], X[n:], y[n:]


# ----------------------------------------------------------------------------- cache
def load_raw():
    return json.loads(RAW.read_text()) if RAW.exists() else {}


def save_raw(raw):
    RAW.parent.mkdir(parents=True, exist_ok=True)
    RAW.write_text(json.dumps(raw, indent=0, sort_keys=True))


def fit_many(make, X, y, Xt, yt, seeds, metric="r2"):
    """Fit ``make(seed)`` for each seed; returns lists of the metric, fit seconds and the solver used."""
    scores, secs, solver = [], [], None
    for seed in range(seeds):
        est = make(seed)
        t0 = time.perf_counter()
        est.fit(X, y)
        secs.append(time.perf_counter() - t0)
        pred = est.predict(Xt)
        solver = getattr(est, "solver_", None)
        scores.append(float(r2_score(yt, pred)) if metric == "r2" else float(0.5 * np.mean((pred - yt) ** 2)))
    return {"score": scores, "time": secs, "solver": solver}


def fmt(values, digits=3):
    v = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(v)):
        return "diverged" if np.median(v) == -np.inf else f"{np.median(v):.{digits}g} (median)"
    med = np.median(v)
    if abs(med) > 1e3:
        return f"{med:.2e}"
    return f"{med:.{digits}f} ± {np.std(v):.{digits}f}"


# ----------------------------------------------------------------------------- grid
def run_grid(raw, seeds, ns):
    for n in ns:
        X, y, Xt, yt, _ = synthetic(n)
        key = f"grid/{n}/sklearn"
        if key not in raw:
            secs = []
            for _ in range(5):  # the first call pays one-off import/BLAS set-up costs: keep the fastest
                t0 = time.perf_counter()
                model = LinearRegression().fit(X, y)
                secs.append(time.perf_counter() - t0)
            raw[key] = {"score": [float(model.score(Xt, yt))], "time": [min(secs)]}
        key = f"grid/{n}/diffprivlib"
        if key not in raw:
            raw[key] = run_diffprivlib(X, y, Xt, yt, seeds)
        save_raw(raw)
        for delta in DELTAS:
            for eps in EPSILONS:
                for solver in SOLVERS:
                    key = f"grid/{n}/{delta}/{eps}/{solver}"
                    if key in raw or (solver == "snowball" and delta == 0):
                        continue
                    make = lambda seed, s=solver: DPLinearRegressor(  # noqa: E731
                        epsilon=eps, delta=delta, solver=s, random_state=seed, noise="float")
                    try:
                        raw[key] = fit_many(make, X, y, Xt, yt, seeds)
                    except ValueError as err:  # e.g. Snowball-SGD needs more rows at this budget
                        raw[key] = {"error": str(err).split(".")[0]}
                    print(key, raw[key].get("score", raw[key].get("error")), flush=True)
                    save_raw(raw)


def run_diffprivlib(X, y, Xt, yt, seeds):
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "data.npz", Path(tmp) / "out.json"
        np.savez(data, X=X, y=y, X_test=Xt, y_test=yt)
        eps = ",".join(repr(e) for e in EPSILONS)
        subprocess.run([DPL_PYTHON, str(HERE / "_dpl_linear.py"), str(data), eps, str(seeds), str(out)], check=True)
        return json.loads(out.read_text())


def grid_tables(raw, ns):
    lines = []
    for n in ns:
        if f"grid/{n}/sklearn" not in raw:
            continue
        base = raw[f"grid/{n}/sklearn"]
        dpl = raw.get(f"grid/{n}/diffprivlib", {})
        lines.append(f"\n### n = {n}\n")
        lines.append(f"Non-private LinearRegression: R^2 = {base['score'][0]:.4f}, "
                     f"fit {base['time'][0] * 1e3:.1f} ms.\n")
        for delta in DELTAS:
            title = "pure epsilon-DP" if delta == 0 else f"(epsilon, {delta:g})-DP"
            lines.append(f"\n**{title}** — test R^2, median ± std over seeds; time = median fit time / sklearn's.\n")
            head = "| solver | " + " | ".join(f"eps={e:g}" for e in EPSILONS) + " | time ratio (eps=1) |"
            lines += [head, "|" + "---|" * (len(EPSILONS) + 2)]
            for solver in SOLVERS:
                cells, ratio = [], ""
                for eps in EPSILONS:
                    r = raw.get(f"grid/{n}/{delta}/{eps}/{solver}")
                    if r is None:
                        cells.append("n/a" if solver == "snowball" and delta == 0 else "—")
                        continue
                    if "error" in r:
                        cells.append("refused")
                        continue
                    cell = fmt(r["score"])
                    if solver == "auto":
                        cell += f" ({r['solver']})"
                    cells.append(cell)
                    if eps == 1.0:
                        ratio = f"{np.median(r['time']) / max(base['time'][0], 1e-9):.2g}x"
                lines.append(f"| {solver} | " + " | ".join(cells) + f" | {ratio} |")
            cells = [fmt(dpl[repr(e)]["r2"]) if repr(e) in dpl else "—" for e in EPSILONS]
            ratio = ""
            if repr(1.0) in dpl:
                ratio = f"{np.median(dpl[repr(1.0)]['time']) / max(base['time'][0], 1e-9):.2g}x"
            lines.append("| diffprivlib LinearRegression (pure eps) | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def targets(raw):
    def med(key):
        r = raw.get(key)
        return None if r is None or "error" in r else float(np.median(r["score"]))

    checks = [
        ("n=20000, eps=1, delta=1e-5, auto", med("grid/20000/1e-05/1.0/auto"), 0.95),
        ("n=20000, eps=1, pure, auto", med("grid/20000/0.0/1.0/auto"), 0.90),
        ("n=100000, eps=1, delta=1e-5, auto", med("grid/100000/1e-05/1.0/auto"), 0.98),
        ("n=100000, eps=1, pure, auto", med("grid/100000/0.0/1.0/auto"), 0.98),
    ]
    interp = [raw.get(f"interp/{d}/20000/{s}") for d in (1e-5, 0.0) for s in ("interpolation", "phased_erm")]
    for d, (a, b) in zip((1e-5, 0.0), (interp[:2], interp[2:])):
        if a and b and "score" in a and "score" in b:
            ratio = float(np.median(a["score"]) / np.median(b["score"]))
            checks.append((f"interpolation / phased_erm excess risk, n=20000, eps=1, delta={d:g} (<= 0.1)",
                           -ratio, -0.1))
    lines = ["| target | median R^2 | required | met |", "|---|---|---|---|"]
    for name, value, need in checks:
        if value is None:
            continue
        if need < 0:  # a ratio that must stay below -need
            lines.append(f"| {name} | ratio {-value:.3f} | <= {-need} | {'yes' if value >= need else 'NO'} |")
        else:
            lines.append(f"| {name} | {value:.4f} | >= {need} | {'yes' if value >= need else 'NO'} |")
    return lines


# ----------------------------------------------------------------------------- interpolation
INTERP_NS = (2500, 5000, 10000, 20000, 40000, 80000)
INTERP_SOLVERS = ("interpolation", "phased_erm", "snowball", "adassp", "interpolation_ald")


def run_interpolation(raw, seeds, delta_list=(1e-5, 0.0), ns=INTERP_NS):
    for delta in delta_list:
        for n in ns:
            X, y, Xt, yt, _ = synthetic(n, noise=0.0)
            for solver in INTERP_SOLVERS:
                key = f"interp/{delta}/{n}/{solver}"
                if key in raw or (solver == "snowball" and delta == 0):
                    continue
                if solver == "interpolation_ald" and n > 20000:
                    continue  # the paper's instance does not move at these sizes (see the table); slow
                make = lambda seed, s=solver: DPLinearRegressor(  # noqa: E731
                    epsilon=1.0, delta=delta, solver=s, random_state=seed, fit_intercept=False, noise="float")
                try:
                    raw[key] = fit_many(make, X, y, Xt, yt, seeds, metric="excess")
                except ValueError as err:
                    raw[key] = {"error": str(err).split(".")[0]}
                print(key, raw[key].get("score", raw[key].get("error")), flush=True)
                save_raw(raw)


def interpolation_report(raw):
    lines = []
    for delta in (1e-5, 0.0):
        title = "pure" if delta == 0 else f"delta = {delta:g}"
        lines.append(f"\n**epsilon = 1, {title}** — excess test risk 1/2 E(<w,x> - y)^2 (F* = 0), "
                     "median over seeds\n")
        lines += ["| n | " + " | ".join(INTERP_SOLVERS) + " | interpolation / phased_erm |",
                  "|" + "---|" * (len(INTERP_SOLVERS) + 2)]
        for n in INTERP_NS:
            cells, vals = [], {}
            for s in INTERP_SOLVERS:
                r = raw.get(f"interp/{delta}/{n}/{s}")
                if r is None or "error" in r:
                    cells.append("—")
                    continue
                vals[s] = float(np.median(r["score"]))
                cells.append(f"{vals[s]:.2e}")
            both = {"interpolation", "phased_erm"} <= set(vals)
            ratio = f"{vals['interpolation'] / vals['phased_erm']:.3f}" if both else ""
            lines.append(f"| {n} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def interpolation_plot(raw):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    colors = dict(zip(INTERP_SOLVERS, ("C0", "C1", "C2", "C3", "C4")))
    for ax, delta in zip(axes, (1e-5, 0.0)):
        for s in INTERP_SOLVERS:
            pts = [(n, np.median(raw[k]["score"])) for n in INTERP_NS
                   if "score" in raw.get(k := f"interp/{delta}/{n}/{s}", {})]
            if pts:
                ax.semilogy(*zip(*pts), marker="o", label=s, color=colors[s])
        ax.set_title("epsilon = 1, " + ("pure" if delta == 0 else f"delta = {delta:g}"))
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("excess risk (noiseless data, log scale)")
    axes[0].legend(fontsize=7)
    fig.suptitle("near-exponential decay = a straight line on this semi-log plot", fontsize=9)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "linear_interpolation.png"
    fig.savefig(path, dpi=80)
    return path


# ----------------------------------------------------------------------------- heavy tails
HEAVY_SOLVERS = ("phased_erm", "lowy", "interpolation_ald")


def run_heavy(raw, seeds, n=20000):
    X, y, Xt, yt = heavy_tailed(n)
    if "heavy/sklearn" not in raw:
        raw["heavy/sklearn"] = {"score": [float(LinearRegression().fit(X, y).score(Xt, yt))]}
    for delta in DELTAS:
        for solver in HEAVY_SOLVERS:
            key = f"heavy/{delta}/{solver}"
            if key in raw:
                continue
            make = lambda seed, s=solver: DPLinearRegressor(  # noqa: E731
                epsilon=1.0, delta=delta, solver=s, random_state=seed, row_bound=None, clip=1.0,
                noise="float")
            raw[key] = fit_many(make, X, y, Xt, yt, seeds)
            print(key, raw[key]["score"], flush=True)
            save_raw(raw)


def heavy_report(raw):
    if "heavy/sklearn" not in raw:
        return []
    lines = [f"Non-private LinearRegression: R^2 = {raw['heavy/sklearn']['score'][0]:.4f}.\n",
             "| solver (row_bound=None, clip=1) | pure, eps=1 | delta=1e-5, eps=1 |", "|---|---|---|"]
    for s in HEAVY_SOLVERS:
        cells = [fmt(raw[k]["score"]) if (k := f"heavy/{d}/{s}") in raw else "—" for d in DELTAS]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return lines


# ----------------------------------------------------------------------------- timing
TIMING_NS = (10_000, 30_000, 100_000, 300_000, 1_000_000)


def run_timing(raw, repeats=7):
    """Cold = the first fit (plan caches cleared: the schedule and the zCDP conversion are computed);
    warm = the best later fit (the plan is a cached pure function of public inputs, as in CV)."""
    import warnings

    from sklearn_dpsco._solvers._noisy_sgd import _pnsgd

    rng = np.random.default_rng(0)
    d = 20
    w = rng.standard_normal(d)
    Xall = rng.uniform(-1, 1, (max(TIMING_NS), d)) / math.sqrt(d)
    yall = np.clip(Xall @ w / 2 + 0.05 * rng.standard_normal(max(TIMING_NS)), -1, 1)
    for n in TIMING_NS:
        key = f"timing/{n}"
        if key in raw:
            continue
        X, y = Xall[:n], yall[:n]
        _pnsgd._snowball_schedule.cache_clear()
        _pnsgd.rho_for_budget.cache_clear()
        ours, sgd = [], []
        for r in range(repeats):
            est = DPLinearRegressor(epsilon=1.0, delta=1e-5, solver="snowball", random_state=r, noise="float")
            t0 = time.perf_counter()
            est.fit(X, y)
            ours.append(time.perf_counter() - t0)
            ref = SGDRegressor(max_iter=1, tol=None, random_state=r)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ConvergenceWarning: one epoch on purpose
                t0 = time.perf_counter()
                ref.fit(X, y)
                sgd.append(time.perf_counter() - t0)
        raw[key] = {"snowball_cold": ours[0], "snowball": min(ours[1:]), "sgd": min(sgd)}
        print(key, raw[key], flush=True)
        save_raw(raw)


def timing_report(raw):
    pts = [(n, raw[f"timing/{n}"]) for n in TIMING_NS if f"timing/{n}" in raw]
    if len(pts) < 2:
        return []
    ns = np.array([p[0] for p in pts], dtype=float)
    warm = np.array([p[1]["snowball"] for p in pts])
    cold = np.array([p[1]["snowball_cold"] for p in pts])
    sgd = np.array([p[1]["sgd"] for p in pts])
    lines = ["| n | Snowball-SGD fit, warm (s) | cold (s) | SGDRegressor 1 epoch (s) | ratio warm | ratio cold |",
             "|---|---|---|---|---|---|"]
    for n, a, c, b in zip(ns, warm, cold, sgd):
        lines.append(f"| {int(n)} | {a:.4f} | {c:.4f} | {b:.4f} | {a / b:.2f}x | {c / b:.2f}x |")
    for name, t in (("warm", warm), ("cold", cold)):
        slope = np.polyfit(np.log(ns), np.log(t), 1)[0]
        lines.append(f"\n{name}: slope of log(time) vs log(n) from {int(ns[0])} to {int(ns[-1])}: **{slope:.3f}** "
                     f"(target [0.9, 1.1]); ratio to SGDRegressor at n = {int(ns[-1])}: **{t[-1] / sgd[-1]:.2f}x**, "
                     f"largest over n: {np.max(t / sgd):.2f}x (target <= 3x).")
    lines.append("\nWarm = the best of six later fits (the plan — the Snowball schedule and the zCDP conversion — "
                 "is a cached pure function of the public inputs, as in cross-validation); cold = the first fit "
                 "(about 40 ms of planning, independent of n).")
    return lines


# ----------------------------------------------------------------------------- memory
MEMORY_NS = (100_000, 1_000_000)


def run_memory(raw, d=20, block_rows=8192):
    import tracemalloc

    rng = np.random.default_rng(1)
    w = rng.standard_normal(d)
    with tempfile.TemporaryDirectory() as tmp:
        for n in MEMORY_NS:
            key = f"memory/{n}"
            if key in raw:
                continue
            Xm = np.lib.format.open_memmap(Path(tmp) / "X.npy", mode="w+", dtype=np.float64, shape=(n, d))
            ym = np.lib.format.open_memmap(Path(tmp) / "y.npy", mode="w+", dtype=np.float64, shape=(n,))
            for i in range(0, n, 100_000):
                Xm[i:i + 100_000] = rng.uniform(-1, 1, (min(100_000, n - i), d)) / math.sqrt(d)
                ym[i:i + 100_000] = np.clip(Xm[i:i + 100_000] @ w / 2, -1, 1)
            Xm.flush()
            ym.flush()
            del Xm, ym
            X = np.load(Path(tmp) / "X.npy", mmap_mode="r")
            y = np.load(Path(tmp) / "y.npy", mmap_mode="r")
            out = {"file_mb": X.nbytes / 1e6}
            for solver in ("snowball", "adassp"):
                est = DPLinearRegressor(epsilon=1.0, delta=1e-5, solver=solver, random_state=0, noise="float")
                tracemalloc.start()
                t0 = time.perf_counter()
                est.fit_stream(X, y, block_rows=block_rows)
                secs = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                out[solver] = {"peak_mb": peak / 1e6, "time": secs, "r2": float(est.score(X[:20000], y[:20000]))}
            raw[key] = out
            del X, y
            print(key, out, flush=True)
            save_raw(raw)


def memory_report(raw):
    lines = ["| rows | file (MB) | solver | peak allocations (MB) | fit_stream time (s) | R^2 (first 20000 rows) |",
             "|---|---|---|---|---|---|"]
    for n in MEMORY_NS:
        r = raw.get(f"memory/{n}")
        if not r:
            continue
        for solver in ("snowball", "adassp"):
            lines.append(f"| {n} | {r['file_mb']:.0f} | {solver} | {r[solver]['peak_mb']:.2f} | "
                         f"{r[solver]['time']:.2f} | {r[solver]['r2']:.4f} |")
    return lines if len(lines) > 2 else []


# ----------------------------------------------------------------------------- report
def auto_table_lines():
    rows = ["| n | delta | eps=0.1 | eps=0.5 | eps=1 | eps=2 | eps=5 |", "|---|---|---|---|---|---|---|"]
    for n in NS:
        for delta in DELTAS:
            picks = (_auto_solver(n, 21, e, delta, 1.0) for e in EPSILONS)
            rows.append(f"| {n} | {delta:g} | " + " | ".join(picks) + " |")
    return rows


FINDINGS = [
    "- Every private solver here beats diffprivlib's LinearRegression by orders of magnitude: its "
    "functional mechanism diverges (median R^2 below -1e5) for every epsilon <= 2 at every n.",
    "- Approximate DP: Snowball-SGD (one pass, linear time) is the best or within 0.004 of the best "
    "wherever it has a schedule, hence `auto`; AdaSSP is the runner-up and the fallback for tiny n.",
    "- Pure DP: AdaSSP degrades gracefully (R^2 near 0, never very negative) when n epsilon / d < 75; "
    "Lowy's localized double output perturbation is best for moderate n epsilon / d; Phased-ERM for "
    "n epsilon / d >= 500. The localization methods go very negative at small n (their final noise "
    "is projected onto a radius-10 ball, far larger than ||w*|| ~ 2.2).",
    "- Interpolation: with delta > 0 the interpolation-adaptive solver (ACCD Alg 3 with Snowball-SGD "
    "inside) decays near-exponentially and stays 12-60x below Phased-ERM; the paper's instance (ALD-2 "
    "inside, `interpolation_ald`) does not leave the origin at these sizes (its steps are tiny at "
    "condition number 42). For pure DP the inner Phased-SGD is weak: the solver beats Phased-ERM "
    "only from n = 40000 (gap recorded in the report of the issue).",
    "- Heavy tails (no bounds): Phased-ERM and Lowy stay within about 0.02-0.06 R^2 of non-private "
    "least squares (whose R^2 is low by construction: the label noise is Student-t(3)).",
    "- Speed: with the compiled loop, Snowball-SGD's fit time grows linearly (warm slope ~0.99) and "
    "is about 2x SGDRegressor's one epoch from 1e5 rows up. At 1e4 rows fixed costs (validation, "
    "accounting conversions, ~10 ms) make it ~5x a 3 ms SGDRegressor fit; the first fit also pays "
    "~60 ms of planning (schedule search, exact zCDP conversion), cached afterwards. Most of the per-row "
    "cost is drawing the d Gaussian noise coordinates of every step.",
    "- Memory: fitting a 160 MB memmap keeps peak allocations at a few MB (a block plus the noise of its "
    "steps); the Snowball schedule is stored as ~80 runs, not one entry per step.",
    "- Times: Phased-ERM and Lowy use the reference (SciPy) certified ERM solver behind "
    "`solve_certified`; the compiled SDCA solver on main is not yet wired behind that facade.",
]


def write_report(raw):
    RESULTS.mkdir(parents=True, exist_ok=True)
    lines = ["# DPLinearRegressor benchmark", "",
             "Generated by `benchmarks/bench_linear.py` (one run; 5 seeds of privacy noise on fixed data). "
             "Public inputs given to every private solver: row_bound = 1, label_bound = 1 (the data are clipped "
             "to these), all other parameters at their defaults (clip = 0.1, radius = 10, fit_intercept=True). "
             "diffprivlib 0.6.6 LinearRegression gets bounds_X = (-1, 1), bounds_y = (-1, 1); it is pure "
             "epsilon-DP and is listed under both privacy levels.", "", "## Targets", ""]
    lines += targets(raw)
    lines += ["", "## Findings", "", *FINDINGS]
    lines += ["", "## Synthetic grid"] + grid_tables(raw, NS)
    lines += ["", "## solver='auto' (public facts only: n, d = 21 with the intercept, epsilon, delta, row_bound)", ""]
    lines += auto_table_lines()
    lines += ["", "## Interpolation (noiseless data)"] + interpolation_report(raw)
    if (RESULTS / "linear_interpolation.png").exists():
        lines += ["", "![excess risk vs n](linear_interpolation.png)"]
    lines += ["", "## Heavy tails: Student-t(3) features and labels, no bounds, n = 20000", ""] + heavy_report(raw)
    lines += ["", "## Speed: Snowball-SGD vs SGDRegressor (one epoch), d = 20", ""] + timing_report(raw)
    lines += ["", "## Memory: fit_stream from a file-backed numpy.memmap (blocks of 8192 rows), d = 20", ""]
    lines += memory_report(raw)
    (RESULTS / "linear.md").write_text("\n".join(lines) + "\n")
    print("wrote", RESULTS / "linear.md")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="grid,interpolation,heavy,timing,memory")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--ns", default=",".join(str(n) for n in NS), help="grid sizes")
    args = parser.parse_args(argv)
    raw = load_raw()
    parts = args.parts.split(",")
    ns = tuple(int(n) for n in args.ns.split(","))
    if "grid" in parts:
        run_grid(raw, args.seeds, ns)
    if "interpolation" in parts:
        run_interpolation(raw, args.seeds)
        interpolation_plot(raw)
    if "heavy" in parts:
        run_heavy(raw, args.seeds)
    if "timing" in parts:
        run_timing(raw)
    if "memory" in parts:
        run_memory(raw)
    write_report(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
