"""Growth-adaptive private regression: excess population risk vs n, and against peers.

Instances (d = 10, rows uniform on the unit sphere, ``w*`` a seeded random
unit vector, ``y = <w*, x> + xi``):

====  =====================  ==============================================  =================
name  loss                   noise xi                                        growth kappa
====  =====================  ==============================================  =================
lad   |r|   (LAD)            none                                            1 (sharp)
p1.5  |r|^1.5                0 w.p. 1/2, +-0.01 w.p. 1/4 each                1.5 at every scale
p2    r^2                    same                                            2
p3    |r|^3                  same                                            3 for |w - w*| >> 0.03
====  =====================  ==============================================  =================

The excess population risk is exact up to a fixed 2e6-draw Monte Carlo of the
one-dimensional marginal ``<w - w*, x> = |w - w*| x_1`` (x_1 ~ 2 Beta(4.5, 4.5) - 1):
``E g(|w - w*| x_1)`` with ``g(t) = E|xi - t|^p - E|xi|^p`` in closed form.

Part 1 (rate): DPGrowthAdaptiveRegressor with the SAME settings on every
instance (kappa_lower = 1.25, clip = 1, radius = 2, epsilon = 1, pure DP,
fit_intercept = False): ``solver="ald_growth"`` (adaptive) and
``solver="ald_localization"`` (ALD-1, non-adaptive baseline) on the same data,
n in {2k, ..., 128k}. The statistical term is measured by the non-private
ERM on the same data; a point is *private-dominated* when the private excess
is at least 3x the ERM's. Slopes are least-squares fits of log(mean excess) on
log n over the private-dominated points down to the first one at the
schedule's float floor (the final epoch's noise norm ``d * scale``; later
floor points measure float64, not the algorithm); theory ``-kappa/(kappa-1)``
(for sharp growth the adaptive guarantee is the ``kappa_lower`` rate, -5, and
a steeper fall is within it; there two points suffice).

Part 2 (p2 instance): against non-private scikit-learn QuantileRegressor
(LAD), HuberRegressor, LinearRegression, DPLinearRegressor (if importable,
else through ``--dplinear-python``), the ACCD interpolation solver, and
diffprivlib 0.6.6 LinearRegression (peer, subprocess), excess least-squares
risk, mean ± std over seeds.

Run from outside the source tree (about 30 min on 2 cores with the compiled
solver):
    python benchmarks/bench_growth.py --out-dir benchmarks/results
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import optimize

from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor

D = 10
RADIUS = 2.0
SIGMA = 0.01
INSTANCES = {"lad": (1.0, 1.0, "sharp"), "p1.5": (1.5, 1.5, "1.5"), "p2": (2.0, 2.0, "2"), "p3": (3.0, 3.0, "3")}
KAPPA_LOWER = 1.25
DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")
DPLINEAR_PYTHON = "/work/wt/dp-linear/.venv/bin/python"
QUANTILE_MAX_N = 32000


# ----------------------------------------------------------------------------- instances and risk
def make_instance(name, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.standard_normal(D)
    w /= np.linalg.norm(w)
    if name == "lad":
        xi = np.zeros(n)
    else:
        xi = SIGMA * rng.choice([0.0, 0.0, -1.0, 1.0], size=n)
    return X, X @ w + xi, w


_X1 = None


def _marginal():
    global _X1
    if _X1 is None:
        _X1 = 2.0 * np.random.default_rng(12345).beta((D - 1) / 2, (D - 1) / 2, size=2_000_000) - 1.0
    return _X1


def g_excess(name, t):
    """E|xi - t|^p - E|xi|^p for the instance's noise law (closed form)."""
    p = INSTANCES[name][0]
    t = np.abs(t)
    if name == "lad":
        return t
    s = SIGMA
    if p == 2.0:
        return t**2  # E(xi - t)^2 - E xi^2 = t^2 exactly
    return 0.5 * t**p + 0.25 * (np.abs(s - t) ** p + (s + t) ** p - 2.0 * s**p)


def excess_risk(name, w, w_star):
    r = float(np.linalg.norm(np.asarray(w) - w_star))
    if name == "lad":
        return r * float(np.mean(np.abs(_marginal())))
    return float(np.mean(g_excess(name, r * _marginal())))


def erm(name, X, y):
    """Non-private ERM of the instance's loss (the statistical term)."""
    p = INSTANCES[name][0]
    if p == 1.0:
        # LAD by iteratively reweighted least squares (scikit-learn's LP QuantileRegressor takes minutes at
        # n >= 64k; on these noiseless instances the ERM is w* and IRLS gets within float precision)
        w = np.linalg.lstsq(X, y, rcond=None)[0]
        for _ in range(200):
            wt = 1.0 / np.maximum(np.abs(X @ w - y), 1e-12)
            w = np.linalg.solve(X.T @ (wt[:, None] * X), X.T @ (wt * y))
        return w
    if p == 2.0:
        return np.linalg.lstsq(X, y, rcond=None)[0]

    def f(w):
        r = X @ w - y
        return np.mean(np.abs(r) ** p), X.T @ (p * np.abs(r) ** (p - 1) * np.sign(r)) / len(y)

    w0 = np.linalg.lstsq(X, y, rcond=None)[0]
    return optimize.minimize(f, w0, jac=True, method="L-BFGS-B", options={"gtol": 1e-14, "ftol": 0.0,
                                                                         "maxiter": 5000}).x


def floor_norm(est, n):
    """Mean norm of the last phase's noise: the schedule's resolution floor (public)."""
    plan = est._plan(n, D, 1)
    last = plan.schedule.phases[-1]
    last = getattr(last, "phases", [last])[-1]
    return D * last.mechanism.scale if hasattr(last.mechanism, "scale") else 0.0


# ----------------------------------------------------------------------------- part 1: rates
def run_rates(ns, seeds, instances, log):
    acc = BudgetAccountant(epsilon=float("inf"), delta=1.0)
    rows = []
    for name in instances:
        p = INSTANCES[name][0]
        for n in ns:
            for seed in range(seeds):
                X, y, w = make_instance(name, n, seed)
                rec = {"inst": name, "n": n, "seed": seed}
                for solver in ("ald_growth", "ald_localization"):
                    est = DPGrowthAdaptiveRegressor(epsilon=1.0, power=p, kappa_lower=KAPPA_LOWER, clip=1.0,
                                                    radius=RADIUS, row_bound=None, label_bound=None, fit_intercept=False, solver=solver,
                                                    accountant=acc, random_state=1000 + seed)
                    t0 = time.perf_counter()
                    est.fit(X, y)
                    rec[solver] = excess_risk(name, est.coef_, w)
                    rec[solver + "_time"] = time.perf_counter() - t0
                    rec[solver + "_epochs"] = est.n_epochs_
                    rec[solver + "_floor"] = excess_risk(name, w + floor_norm(est, n) * np.eye(D)[0], w)
                t0 = time.perf_counter()
                rec["erm"] = excess_risk(name, erm(name, X, y), w)
                rec["erm_time"] = time.perf_counter() - t0
                rows.append(rec)
                log(json.dumps(rec))
    return rows


def theory_slope(name):
    kappa = INSTANCES[name][1]
    if kappa == 1.0:
        kappa = KAPPA_LOWER  # sharp growth is kappa-growth for every kappa >= kappa_lower on a bounded domain
    return -kappa / (kappa - 1.0)


def summarize_rates(rows, instances):
    out = {}
    for name in instances:
        sub = [r for r in rows if r["inst"] == name]
        ns = sorted({r["n"] for r in sub})
        table = []
        for n in ns:
            at = [r for r in sub if r["n"] == n]
            entry = {"n": n}
            for key in ("ald_growth", "ald_localization", "erm"):
                vals = np.array([max(r[key], 1e-300) for r in at])
                entry[key] = float(np.exp(np.mean(np.log(vals))))  # geometric mean over seeds
                entry[key + "_sd"] = float(np.std(np.log10(vals)))
            for key in ("ald_growth", "ald_localization"):
                entry[key + "_floor"] = float(np.mean([r[key + "_floor"] for r in at]))
                entry[key + "_time"] = float(np.mean([r[key + "_time"] for r in at]))
                entry[key + "_epochs"] = at[0][key + "_epochs"]
            table.append(entry)
        fits = {}
        for key in ("ald_growth", "ald_localization"):
            # private-dominated points above the float floor, plus the FIRST point at the floor: on sharp
            # growth the excess falls off a cliff to the floor (faster than any power of n), and that fall is
            # the rate; later floor points measure float64, not the algorithm
            keep, at_floor = [], False
            for e in table:
                if e[key] < 3 * e["erm"] or at_floor:
                    continue
                at_floor = e[key] <= 3 * e[key + "_floor"]
                keep.append(e)
            # a fit needs 3 points; on sharp growth the cliff may come after 2, and its check is "steeper than"
            if len(keep) >= 3 or (INSTANCES[name][2] == "sharp" and len(keep) == 2):
                slope = float(np.polyfit(np.log([e["n"] for e in keep]), np.log([e[key] for e in keep]), 1)[0])
            else:
                slope = float("nan")
            all_slope = float(np.polyfit(np.log([e["n"] for e in table]), np.log([e[key] for e in table]), 1)[0])
            fits[key] = {"slope": slope, "points": [e["n"] for e in keep], "slope_all": all_slope}
        out[name] = {"table": table, "fits": fits, "theory": theory_slope(name)}
    return out


def plot_rates(summary, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.0), dpi=90)
    for ax, name in zip(np.atleast_1d(axes), names):
        tab = summary[name]["table"]
        n = np.array([e["n"] for e in tab])
        for key, label, marker in (("ald_growth", "ALD-2 (adaptive)", "o"), ("ald_localization", "ALD-1", "s")):
            ax.loglog(n, [e[key] for e in tab], marker=marker, ms=4, label=label)
        ax.loglog(n, [max(e["erm"], 1e-300) for e in tab], ":", color="gray", label="non-private ERM")
        ax.loglog(n, [e["ald_growth_floor"] for e in tab], "--", color="lightgray", lw=1, label="float floor")
        pts = summary[name]["fits"]["ald_growth"]["points"]
        if pts:
            e0 = next(e for e in tab if e["n"] == pts[0])
            s = summary[name]["theory"]
            ax.loglog(n, e0["ald_growth"] * (n / pts[0]) ** s, "k-", lw=0.7, alpha=0.6, label=f"slope {s:.2g}")
            ax.loglog(n, e0["ald_localization"] * (n / pts[0]) ** -1.0, "k-.", lw=0.7, alpha=0.4, label="slope -1")
        ax.set_title(f"{name} (kappa {INSTANCES[name][2]})", fontsize=9)
        ax.set_xlabel("n", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=max(1e-14, min(e["ald_growth_floor"] for e in tab) / 10))
    np.atleast_1d(axes)[0].set_ylabel("excess population risk", fontsize=8)
    np.atleast_1d(axes)[0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ----------------------------------------------------------------------------- part 2: p2 peers
_DPL_SCRIPT = r"""
import json, sys, time, numpy as np
from diffprivlib.models import LinearRegression
from diffprivlib.accountant import BudgetAccountant
d = np.load(sys.argv[1]); cfg = json.loads(sys.argv[2])
t0 = time.perf_counter()
m = LinearRegression(epsilon=1.0, bounds_X=(-1.0, 1.0), bounds_y=(-cfg["yb"], cfg["yb"]), fit_intercept=False,
                     random_state=cfg["seed"], accountant=BudgetAccountant()).fit(d["X"], d["y"])
print(json.dumps({"coef": m.coef_.ravel().tolist(), "time": time.perf_counter() - t0}))
"""

_DPLINEAR_SCRIPT = r"""
import json, sys, time, numpy as np
from sklearn_dpsco.linear_model import DPLinearRegressor
d = np.load(sys.argv[1]); cfg = json.loads(sys.argv[2])
t0 = time.perf_counter()
m = DPLinearRegressor(epsilon=1.0, fit_intercept=False, row_bound=1.0, label_bound=cfg["yb"], radius=cfg["radius"],
                      random_state=cfg["seed"]).fit(d["X"], d["y"])
print(json.dumps({"coef": np.ravel(m.coef_).tolist(), "time": time.perf_counter() - t0, "solver": m.solver_}))
"""


def _subprocess_fit(python, script, X, y, cfg):
    if python is None or not os.path.exists(python):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "d.npz")
        np.savez(path, X=X, y=y)
        res = subprocess.run([python, "-c", script, path, json.dumps(cfg)], capture_output=True, text=True,
                             cwd=tmp)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "failed"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_peers(ns, seeds, dplinear_python, log):
    from sklearn.linear_model import HuberRegressor, LinearRegression, QuantileRegressor

    try:
        from sklearn_dpsco.linear_model import DPLinearRegressor  # optional: its rows are skipped without it
    except ImportError:
        DPLinearRegressor = None
    acc = BudgetAccountant(epsilon=float("inf"), delta=1.0)
    rows = []
    yb = 1.0 + SIGMA  # |<w*, x>| <= 1, |xi| <= sigma: the true label bound of the instance
    for n in ns:
        for seed in range(seeds):
            X, y, w = make_instance("p2", n, seed)
            rec = {"n": n, "seed": seed}

            def timed(key, fn):
                t0 = time.perf_counter()
                coef = fn()
                rec[key] = excess_risk("p2", coef, w)
                rec[key + "_time"] = time.perf_counter() - t0

            common = dict(epsilon=1.0, power=2.0, clip=1.0, radius=RADIUS, row_bound=None, label_bound=None,
                          fit_intercept=False, accountant=acc,
                          random_state=1000 + seed)
            timed("ald_growth (ours)", lambda: DPGrowthAdaptiveRegressor(kappa_lower=KAPPA_LOWER, **common)
                  .fit(X, y).coef_)
            timed("ald_localization (ours)", lambda: DPGrowthAdaptiveRegressor(solver="ald_localization", **common)
                  .fit(X, y).coef_)
            # ACCD Alg 6 with the instance's declared constants: per-row H = 2 ||x||^2 = 2; risk t^2 -> lambda = 2/d
            timed("interpolation (ours)", lambda: DPGrowthAdaptiveRegressor(
                solver="interpolation", smoothness=2.0, growth=2.0 / D, **common).fit(X, y).coef_)
            if DPLinearRegressor is not None:
                timed("DPLinearRegressor", lambda: DPLinearRegressor(
                    epsilon=1.0, fit_intercept=False, row_bound=1.0, label_bound=yb, radius=RADIUS,
                    accountant=acc, random_state=1000 + seed).fit(X, y).coef_)
            else:
                out = _subprocess_fit(dplinear_python, _DPLINEAR_SCRIPT, X, y,
                                      {"yb": yb, "radius": RADIUS, "seed": 1000 + seed})
                if out and "coef" in out:
                    rec["DPLinearRegressor"] = excess_risk("p2", out["coef"], w)
                    rec["DPLinearRegressor_time"] = out["time"]
                    rec["DPLinearRegressor_solver"] = out["solver"]
            out = _subprocess_fit(DPL_PYTHON, _DPL_SCRIPT, X, y, {"yb": yb, "seed": 1000 + seed})
            if out and "coef" in out:
                rec["diffprivlib LinearRegression"] = excess_risk("p2", out["coef"], w)
                rec["diffprivlib LinearRegression_time"] = out["time"]
            timed("LinearRegression (non-private)", lambda: LinearRegression(fit_intercept=False).fit(X, y).coef_)
            timed("HuberRegressor (non-private)", lambda: HuberRegressor(fit_intercept=False, alpha=0.0,
                                                                         max_iter=1000).fit(X, y).coef_)
            if n <= QUANTILE_MAX_N:  # the LP solver takes minutes beyond (measured: 30 s at 32k)
                timed("QuantileRegressor LAD (non-private)", lambda: QuantileRegressor(
                    quantile=0.5, alpha=0.0, fit_intercept=False, solver="highs").fit(X, y).coef_)
            rows.append(rec)
            log(json.dumps(rec))
    return rows


def peers_table(rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys and k not in ("n", "seed") and not k.endswith(("_time", "_solver"))]
    ns = sorted({r["n"] for r in rows})
    lines = ["| estimator | " + " | ".join(f"n={n}" for n in ns) + " | time at largest n |",
             "|---|" + "---|" * (len(ns) + 1)]
    for key in keys:
        cells = []
        for n in ns:
            vals = np.array([r[key] for r in rows if r["n"] == n and key in r])
            if vals.size == 0:
                cells.append("n/a")
                continue
            logs = np.log10(np.maximum(vals, 1e-300))
            cells.append(f"{10 ** logs.mean():.2e} (±{logs.std():.2f} dex)")
        times = [r[key + "_time"] for r in rows if r["n"] == ns[-1] and key + "_time" in r]
        lines.append(f"| {key} | " + " | ".join(cells) + (f" | {np.mean(times):.2f}s |" if times else " | n/a |"))
    return "\n".join(lines)


def rates_markdown(summary):
    lines = ["| instance | kappa | theory slope | ALD-2 slope (private-dominated n) | within 25%? | "
             "ALD-2 slope (all n) | ALD-1 slope (private-dominated n) | ALD-1 slope (all n) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, s in summary.items():
        f2, f1 = s["fits"]["ald_growth"], s["fits"]["ald_localization"]
        ok = "yes" if abs(f2["slope"] - s["theory"]) <= 0.25 * abs(s["theory"]) else "no"
        if INSTANCES[name][2] == "sharp":  # the kappa_lower rate is a guarantee: steeper is within it
            ok = "yes (steeper)" if f2["slope"] <= 0.75 * s["theory"] else "no"
        if math.isnan(f2["slope"]):
            ok = "n/a (< 3 points)"
        pts = ",".join(f"{n // 1000}k" for n in f2["points"])
        lines.append(f"| {name} | {INSTANCES[name][2]} | {s['theory']:.2f} | {f2['slope']:.2f} ({pts}) | {ok} | "
                     f"{f2['slope_all']:.2f} | {f1['slope']:.2f} | {f1['slope_all']:.2f} |")
    lines.append("")
    for name, s in summary.items():
        lines.append(f"**{name}** (geometric mean over seeds; ± = std of log10)\n")
        lines.append("| n | ALD-2 excess | ALD-1 excess | non-private ERM | ALD-2 float floor | epochs | "
                     "ALD-2 time | ALD-1 time |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for e in s["table"]:
            lines.append(f"| {e['n']} | {e['ald_growth']:.2e} (±{e['ald_growth_sd']:.2f}) | "
                         f"{e['ald_localization']:.2e} (±{e['ald_localization_sd']:.2f}) | {e['erm']:.1e} | "
                         f"{e['ald_growth_floor']:.1e} | {e['ald_growth_epochs']} | {e['ald_growth_time']:.1f}s | "
                         f"{e['ald_localization_time']:.1f}s |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ns", default="2000,4000,8000,16000,32000,64000,128000")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--instances", default="lad,p1.5,p2,p3")
    parser.add_argument("--peer-ns", default="8000,32000,128000")
    parser.add_argument("--peer-seeds", type=int, default=3)
    parser.add_argument("--skip-rates", action="store_true")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--dplinear-python", default=DPLINEAR_PYTHON)
    parser.add_argument("--out-dir", default=None)
    args = parser.parse_args(argv)
    log_path = os.path.join(args.out_dir, "growth_raw.jsonl") if args.out_dir else None
    log_file = open(log_path, "a") if log_path else None

    def log(line):
        print(line, flush=True)
        if log_file:
            log_file.write(line + "\n")
            log_file.flush()

    t_start = time.perf_counter()
    instances = args.instances.split(",")
    if not args.skip_rates:
        rows = run_rates([int(v) for v in args.ns.split(",")], args.seeds, instances, log)
        summary = summarize_rates(rows, instances)
        md = rates_markdown(summary)
        print(md)
        if args.out_dir:
            with open(os.path.join(args.out_dir, "growth_rates.md"), "w") as f:
                f.write(md + "\n")
            plot_rates(summary, os.path.join(args.out_dir, "growth_rates.png"))
    if not args.skip_peers:
        prow = run_peers([int(v) for v in args.peer_ns.split(",")], args.peer_seeds, args.dplinear_python, log)
        md = peers_table(prow)
        print(md)
        if args.out_dir:
            with open(os.path.join(args.out_dir, "growth_peers.md"), "w") as f:
                f.write(md + "\n")
    print(f"total {time.perf_counter() - t_start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
