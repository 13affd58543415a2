"""Second reading of AdaSSP's secure-path sensitivities (rounding_sensitivities): brute force.

Replace-one neighbours built to attain each exact sensitivity (lambda_min, vec(A), b), plus stress cases (rows
near 2^50 next to columns near 1e-300 and subnormals, subnormal weights, intercept). Each dataset's statistics are
computed by the library's own code (adassp_statistics on an ArraySource) in several summation orders (row
permutations x block splits); every pair (order of D, order of D') is compared against the planned sensitivity.
Prints, per case, the largest observed change and the fraction of the rounding allowance it used:
(observed - exact part) / (planned sensitivity - exact part), exact part: the change in exact arithmetic of the
same clipped rows. > 1 would be a defect (up to the float evaluation of the observed norm, ~1e-16 relative).

Usage: OMP_NUM_THREADS=1 python benchmarks/pdreview/sensitivity_bruteforce.py
"""

import itertools
import math
from fractions import Fraction

import numpy as np

from sklearn_dpsco._solvers import ArraySource, adassp_plan
from sklearn_dpsco._solvers._adassp import _clipped_block, adassp_statistics, certified_lambda_min, vec_from_sym


def orders(rng, n):
    perm = rng.permutation(n)
    for order, block in ((None, 4096), (np.arange(n)[::-1].copy(), 997), (perm, 64), (perm, n)):
        yield order, block


def releases(X, y, w, plan, rng):
    out = []
    for order, block in orders(rng, X.shape[0]):
        src = ArraySource(X, y, w, order=order, block_rows=block)
        A, b = adassp_statistics(src, plan)
        lam = certified_lambda_min(A, plan.lambda_grid, tol=plan.lambda_tol)
        out.append((lam, vec_from_sym(A), b))
    return out


def _clipped(X, y, w, plan):
    """The clipped rows in float64 (their own rounding, ~1e-16, is far below the allowances measured)."""
    Xc, yc, sw = _clipped_block(X, y, w, plan)
    return Xc, yc, sw


def exact_changes(D, Dp, plan):
    """The exact-arithmetic change of (lambda_min(A), vec(A), b): only row 0 differs (and its weight), so the
    change of A and b is that row's contribution, evaluated in Fractions; lambda_min from a float64 reference
    (error ~ u ||A||, far below the allowance)."""
    out = []
    (Xc, yc, sw), (Xq, yq, swq) = _clipped(*D, plan), _clipped(*Dp, plan)
    x, xq = [Fraction(v) for v in Xc[0]], [Fraction(v) for v in Xq[0]]
    w, wq = Fraction(sw[0]), Fraction(swq[0])
    dA = [[w * a * b - wq * c * e for b, e in zip(x, xq)] for a, c in zip(x, xq)]
    fro2 = sum(v * v for row in dA for v in row)
    db = [w * Fraction(yc[0]) * a - wq * Fraction(yq[0]) * c for a, c in zip(x, xq)]
    lam = [np.linalg.eigvalsh(Z.T @ (Z * s[:, None]))[0] for Z, s in ((Xc, sw), (Xq, swq))]
    out = (abs(lam[0] - lam[1]), math.sqrt(fro2), math.sqrt(sum(v * v for v in db)))
    return out


def worst(rel, relp):
    dl = max(abs(a[0] - c[0]) for a, c in itertools.product(rel, relp))
    dA = max(np.linalg.norm(a[1] - c[1]) for a, c in itertools.product(rel, relp))
    db = max(np.linalg.norm(a[2] - c[2]) for a, c in itertools.product(rel, relp))
    return dl, dA, db


def cases(rng):
    R, B = 3.0, 5.0
    for n, d in ((2000, 2), (20000, 5), (5000, 30)):
        # lambda_min: column 0 is zero except row j (R e_0 -> R e_1): lambda_min moves by exactly R^2
        X = np.zeros((n, d))
        X[:, 1:] = rng.standard_normal((n, d - 1)) * 1e3  # clipped onto the sphere
        X[0] = 0.0
        X[0, 0] = 1e6
        Xp = X.copy()
        Xp[0] = 0.0
        Xp[0, 1] = 1e6
        y = np.full(n, B)
        yield f"lambda n={n} d={d}", (X, y, None), (Xp, y, None), dict(R=R, B=B, s=0.0)
        # vec(A): x = R u, x' = R u' orthogonal; b: labels +B -> -B with x' = -x
        X = rng.standard_normal((n, d)) * 1e3
        u = X[0] / np.linalg.norm(X[0])
        Xp = X.copy()
        v = rng.standard_normal(d)
        v -= (v @ u) * u
        Xp[0] = v / np.linalg.norm(v) * 1e3
        yield f"A n={n} d={d}", (X, y, None), (Xp, y, None), dict(R=R, B=B, s=0.0)
        Xp = X.copy()
        Xp[0] = -X[0]
        yield f"b n={n} d={d}", (X, y, None), (Xp, y, None), dict(R=R, B=B, s=0.0)
        yp = y.copy()
        yp[0] = -B
        yield f"b(y) n={n} d={d}", (X, y, None), (Xp, yp, None), dict(R=R, B=B, s=0.0)
        # stress: huge / tiny / subnormal columns, subnormal and random weights, intercept
        X = rng.standard_normal((n, d))
        X[:, 0] *= 2.0**50
        if d > 1:
            X[:, 1] *= 1e-300
        if d > 2:
            X[:, 2] *= 5e-324 * 7
        w = rng.uniform(size=n)
        w[::3] = 5e-324
        w[1::7] = 1.0
        Xp, wp = X.copy(), w.copy()
        Xp[0] = -X[0]
        wp[0] = 1.0
        yp = y.copy()
        yp[0] = -B
        yield f"stress n={n} d={d}", (X, y, w), (Xp, yp, wp), dict(R=R, B=B, s=0.75)


def main():
    rng = np.random.default_rng(7)
    worst_use = 0.0
    for name, D, Dp, bounds in cases(rng):
        n, d0 = D[0].shape
        d = d0 + (1 if bounds["s"] > 0 else 0)
        plan = adassp_plan(n, d, epsilon=1.0, delta=1e-6, row_bound=bounds["R"], label_bound=bounds["B"],
                           intercept_scaling=bounds["s"], noise="secure")
        sens = plan.info["sensitivities"]
        exact = exact_changes(D, Dp, plan)
        obs = worst(releases(*D, plan, rng), releases(*Dp, plan, rng))
        use = [(o - e) / (s - e) if o > e else 0.0 for o, e, s in zip(obs, exact, sens)]
        worst_use = max(worst_use, *use)
        print(f"{name:24s} observed (lam, A, b) = {obs[0]:.9g} {obs[1]:.9g} {obs[2]:.9g}; "
              f"sens = {sens[0]:.9g} {sens[1]:.9g} {sens[2]:.9g}; allowance used "
              f"{use[0]:.3g} {use[1]:.3g} {use[2]:.3g}")
        assert all(o <= s for o, s in zip(obs, sens)), name
    print(f"largest fraction of a rounding allowance used: {worst_use:.3g} (> 1 would be a defect)")


if __name__ == "__main__":
    main()
