"""1-D: the smooth inverse-sensitivity estimator vs Laplace on a clipped mean and private medians.

Data: y = mu + Student-t(2) (heavy tails: infinite variance), mu = 1. Every
private estimator gets the same public range [-R, R] and budget epsilon:

* ``IS median`` — DPGrowthAdaptiveRegressor(power=1, fit_intercept=False) on
  X = ones: solver ``inverse_sensitivity`` (ALD's smooth inverse-sensitivity
  mechanism exact on a 65537-point grid), pure epsilon-DP;
* ``clipped mean`` — mean of y clipped to [-R, R] + Laplace(2R / (n eps))
  (replace-one sensitivity 2R/n), this library's LaplaceMechanism;
* diffprivlib 0.6.6 ``tools.mean`` / ``tools.median`` with bounds (-R, R)
  (peer library, run in its own venv in a subprocess on the same arrays).

Error: |estimate - mu|, mean ± standard error over ``--reps`` seeded
repetitions; ratios are clipped-mean error / IS error. Non-private sample
median, mean and clipped mean for reference; ``ceiling`` = non-private
clipped-mean error / non-private median error is the ratio a noise-free median
would reach against a noise-free clipped mean — where it is below 2, no
private median can be 2x better than the clipped mean (the target's regime is
where the clipped mean's Laplace noise, not its sampling error, dominates).

Run from outside the source tree:
    python benchmarks/bench_inverse_sensitivity.py [--reps 200] [--out benchmarks/results/growth_1d.md]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor
from sklearn_dpsco._mechanisms import LaplaceMechanism

MU = 1.0
DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")
_DPL_SCRIPT = r"""
import json, sys, numpy as np
from diffprivlib.tools import mean, median
from diffprivlib.accountant import BudgetAccountant
data = np.load(sys.argv[1])
cfg = json.loads(sys.argv[2])
out = {"mean": [], "median": []}
acc = BudgetAccountant()
for i in range(data["Y"].shape[0]):
    y = data["Y"][i]
    for name, f in (("mean", mean), ("median", median)):
        out[name].append(float(f(y, epsilon=cfg["eps"], bounds=(-cfg["R"], cfg["R"]), random_state=cfg["seed"] + i,
                                 accountant=acc)))
print(json.dumps(out))
"""


def run_dpl(Y, eps, R, seed):
    if not os.path.exists(DPL_PYTHON):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "y.npz")
        np.savez(path, Y=Y)
        res = subprocess.run([DPL_PYTHON, "-c", _DPL_SCRIPT, path, json.dumps({"eps": eps, "R": R, "seed": seed})],
                             capture_output=True, text=True, check=True)
    return {k: np.asarray(v) for k, v in json.loads(res.stdout).items()}


def fmt(errs):
    errs = np.asarray(errs)
    return f"{errs.mean():.3g} ± {errs.std(ddof=1) / np.sqrt(errs.size):.2g}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--radii", default="10,100")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    acc = BudgetAccountant(epsilon=float("inf"), delta=1.0)
    lines = [
        "| R | epsilon | n | IS median (ours) | clipped mean + Laplace (ours) | ratio CM/IS | "
        "diffprivlib median | diffprivlib mean | non-private median | non-private mean | non-private clipped mean | "
        "ceiling | IS time |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    t_start = time.perf_counter()
    for R in [float(r) for r in args.radii.split(",")]:
        for eps in (0.1, 0.5, 1.0):
            for n in (100, 1000, 10000):
                rng = np.random.default_rng(1000 * n + int(10 * eps))
                Y = MU + rng.standard_t(2, size=(args.reps, n))
                is_err, cm_err = [], []
                t0 = time.perf_counter()
                for i in range(args.reps):
                    reg = DPGrowthAdaptiveRegressor(epsilon=eps, power=1.0, radius=R, row_bound=None, label_bound=None,
                                                    fit_intercept=False,
                                                    accountant=acc, random_state=i)
                    is_err.append(abs(reg.fit(np.ones((n, 1)), Y[i]).coef_[0] - MU))
                t_is = (time.perf_counter() - t0) / args.reps
                lap = LaplaceMechanism(sensitivity=2.0 * R / n, epsilon=eps)  # replace-one: a row moves the mean 2R/n
                noise_rng = np.random.default_rng(7 + n)
                for i in range(args.reps):
                    cm_err.append(abs(lap.release(np.clip(Y[i], -R, R).mean(), noise_rng)[0] - MU))
                dpl = run_dpl(Y, eps, R, seed=11)
                dpl_med = fmt(np.abs(dpl["median"] - MU)) if dpl else "n/a"
                dpl_mean = fmt(np.abs(dpl["mean"] - MU)) if dpl else "n/a"
                ratio = np.mean(cm_err) / np.mean(is_err)
                np_med = np.abs(np.median(Y, axis=1) - MU)
                np_cm = np.abs(np.clip(Y, -R, R).mean(axis=1) - MU)
                lines.append(
                    f"| {R:g} | {eps:g} | {n} | {fmt(is_err)} | {fmt(cm_err)} | {ratio:.2f} | {dpl_med} | {dpl_mean} | "
                    f"{fmt(np_med)} | {fmt(np.abs(Y.mean(axis=1) - MU))} | {fmt(np_cm)} | "
                    f"{np_cm.mean() / np_med.mean():.2f} | {1e3 * t_is:.1f} ms |"
                )
                print(lines[-1], flush=True)
    table = "\n".join(lines)
    footer = (f"\n\n{args.reps} repetitions per cell; error |estimate - mu| (mean ± s.e.); y = 1 + t(2). "
              f"Total {time.perf_counter() - t_start:.0f}s.\n")
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + footer)
    print(footer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
