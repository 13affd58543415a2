"""Calibrate ACCD's utility constant c (utility only; privacy never depends on it).

ACCD's radius recursion predicts that A-Alg 1 (ALD-2 on the L-extension,
kappa_lower = 2) on m rows of an interpolation problem with quadratic growth
lambda reaches excess risk

    rho(L, m) = (c L r(m))^2 / lambda,

r(m) the public error function (sklearn_dpsco._solvers._interpolation._accd.accd_error_rate).
The paper's c is lost. Here: noiseless least squares (loss 1/2 r^2, H = 1,
rows uniform on the unit sphere so lambda = 1/d), the optimum at 0.9 r_0 from
the centre of a ball of radius r_0, L = 2 H r_0 (ACCD's L_0). For each run
the implied constant is c_hat = sqrt(lambda * excess) / (L r(m)). We report
quantiles and set DEFAULT_UTILITY_CONSTANT to twice the largest c_hat seen
(a safety factor: too small a c lets the radii shrink past x*).

Run: python benchmarks/calibrate_accd.py  (from outside the source tree is
not needed: it only imports the installed package). ~5 minutes on 2 cores.
"""

import argparse
import json
import math
import time

import numpy as np

from sklearn_dpsco._solvers import GLMData, extension_plan, run_extension
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._solvers._interpolation._accd import accd_error_rate


def implied_constant(m, d, epsilon, seed, r0=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    u = rng.standard_normal(d)
    w_star = 0.9 * r0 * u / np.linalg.norm(u)
    y = X @ w_star
    H, lam = 1.0, 1.0 / d
    L = 2.0 * H * r0
    plan = extension_plan(m, d, lipschitz=L, radius=r0, epsilon=epsilon, delta=0.0)
    x = run_extension(GLMData(X, y), get_loss("squared"), plan, center=np.zeros(d), rng=np.random.default_rng(seed + 7))
    excess = 0.5 * lam * float(np.sum((x - w_star) ** 2))  # population: 1/2 E<x, w - w*>^2 = |w - w*|^2 / (2d)
    rate = accd_error_rate(m, d, epsilon=epsilon, delta=0.0, beta=1.0 / (m + d))
    return math.sqrt(lam * excess) / (L * rate), excess


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=None, help="write the raw results as JSON")
    args = parser.parse_args(argv)
    rows = []
    t0 = time.perf_counter()
    for d in (2, 5, 10):
        for m in (500, 2000, 8000):
            for eps in (0.5, 1.0, 4.0):
                cs = [implied_constant(m, d, eps, s)[0] for s in range(args.seeds)]
                rows.append({"d": d, "m": m, "epsilon": eps, "c_max": max(cs), "c_median": float(np.median(cs))})
                print(f"d={d:2d} m={m:5d} eps={eps:3.1f}  c_hat median {np.median(cs):.3g}  max {max(cs):.3g}",
                      flush=True)
    c_all = max(r["c_max"] for r in rows)
    print(f"\nlargest implied c = {c_all:.3g}; suggested DEFAULT_UTILITY_CONSTANT = 2 * that = {2 * c_all:.3g} "
          f"({time.perf_counter() - t0:.0f}s)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
