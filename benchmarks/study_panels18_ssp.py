"""Issue 17 (panels18), a simulation: a user-level sufficient-statistics linear classifier (not a mechanism of the library).

``OMP_NUM_THREADS=1 python benchmarks/study_panels18_ssp.py --panels baseball,Wages [--oracle-centre]``

On bench_panels' scaled encoding (rows of norm <= 1, an intercept column): each user's first m rows, clipped to
norm ``c`` (features) with the intercept column ``c``, give ``A_u = mean(z z^T)`` and ``b_u = mean(z t)`` (``t =
2y - 1``); replacing one user moves ``sum A_u`` by at most ``4 c^2`` (Frobenius) and ``sum b_u`` by ``2 sqrt(2) c``.
Both sums are released with the Gaussian mechanism on halves of the zCDP rho of (epsilon, 1e-6) and the classifier
is ``sign(z . w)``, ``w = (A / n + lam I)^-1 b / n`` with ``lam = k sigma_A sqrt(d) / n`` (AdaSSP-like). With
``--oracle-centre`` the rows are first centred at the exact (non-private) training mean: an upper bound for a
privately centred version. Printed: test accuracy over 10 noise seeds and the non-private least-squares classifier.
"""

import argparse
import math
import os
import sys

import numpy as np
from scipy.optimize import brentq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_panels as B  # noqa: E402


def rho_of(eps, delta):
    """zCDP rho with rho + 2 sqrt(rho log(1 / delta)) = eps."""
    return brentq(lambda r: r + 2 * math.sqrt(r * math.log(1 / delta)) - eps, 1e-12, 100.0)


def rows(X, c, centre):
    Z = X - centre
    Z = Z * np.minimum(1.0, c / np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1e-300))
    return np.hstack([Z, np.full((len(Z), 1), c)])


def user_sums(X, y, g, m, c, centre):
    order = np.argsort(g, kind="stable")
    Z, t, g = rows(X[order], c, centre), 2.0 * y[order] - 1.0, g[order]
    _, start, counts = np.unique(g, return_index=True, return_counts=True)
    d = Z.shape[1]
    A, b = np.zeros((d, d)), np.zeros(d)
    for s, k in zip(start, np.minimum(counts, m)):
        A += Z[s:s + k].T @ Z[s:s + k] / k
        b += Z[s:s + k].T @ t[s:s + k] / k
    return A, b, len(start)


def run(ds, eps, c, lam_k, centre, seeds=10):
    A, b, n = user_sums(ds["X"], ds["y"], ds["g"], ds["m"], c, centre)
    d = A.shape[0]
    rho = rho_of(eps, 1e-6)
    sigma_a = 4 * c**2 / math.sqrt(2 * rho / 2)
    sigma_b = 2 * math.sqrt(2) * c / math.sqrt(2 * rho / 2)
    Zt = rows(ds["Xt"], c, centre)
    accs = []
    for s in range(seeds):
        rng = np.random.default_rng(s)
        N = np.triu(rng.normal(0, sigma_a, (d, d)))
        N = N + np.triu(N, 1).T
        w = np.linalg.solve((A + N) / n + lam_k * sigma_a * math.sqrt(d) / n * np.eye(d),
                            (b + rng.normal(0, sigma_b, d)) / n)
        accs.append(np.mean((Zt @ w > 0) == (ds["yt"] == 1)))
    w0 = np.linalg.solve(A / n + 1e-9 * np.eye(d), b / n)
    return float(np.mean(accs)), float(np.std(accs)), float(np.mean((Zt @ w0 > 0) == (ds["yt"] == 1)))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--panels", default="baseball,Wages")
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--oracle-centre", action="store_true")
    a = p.parse_args(argv)
    for key in a.panels.split(","):
        ds = B.load_panel(key)
        centre = ds["X"].mean(axis=0) if a.oracle_centre else np.zeros(ds["X"].shape[1])
        for c in (1.0, 0.5, 0.25, 0.125):
            for lam_k in (1.0, 3.0, 10.0):
                mean, std, nonpriv = run(ds, a.eps, c, lam_k, centre)
                print(f"{key} c={c} lam_k={lam_k}: {mean:.3f} ± {std:.3f} (non-private {nonpriv:.3f})", flush=True)


if __name__ == "__main__":
    main()
