"""Second reading of the certified lambda_min (sklearn_dpsco/_solvers/_verified_pd.py): adversarial matrices.

For integer matrices whose lambda_min is known EXACTLY by construction (B B^T + k I with B of rank < d: lambda_min
= k), and for others checked by the exact Bareiss test (d <= 40), ask float_pd_proof whether M - s I is positive
definite at shifts s at and around lambda_min. A True at s >= lambda_min would be a soundness defect. Also:

* the same with the Cholesky's block size changed (1, 3, 64, 128, 200): the bound claims ANY summation order;
* the real backward error ||R^T R - H'||_2 (R computed, product evaluated EXACTLY in Python integers) against
  Rump's shift r: the margin the shift leaves (ratio r / ||D||_2);
* shifts r * f for f < 1 (a weakened certificate): how small f must get before a false acceptance appears, i.e.
  how far the proof is from the edge;
* not_pd_witness never claims "not PD" for a PD matrix (exact construction).

Usage: OMP_NUM_THREADS=1 python benchmarks/pdreview/adversarial_pd.py [--quick | --fallback]
"""

import math
import sys
from fractions import Fraction

import numpy as np
import scipy.linalg

from sklearn_dpsco._solvers._verified_pd import (
    _integer_vector,
    float_cholesky_upper,
    float_pd_proof,
    not_pd_witness,
    positive_definite_exact,
    rump_shift,
)

QUICK = "--quick" in sys.argv


def known_cases(rng, d):
    """(name, M, lam) with lambda_min(M) = lam exactly (an integer); entries below 2^52."""
    k = int(rng.integers(0, 4))
    for rank in sorted({1, max(1, d // 2), max(1, d - 1)}):
        for scale in (1, 3, 1000, int(2**24 / math.sqrt(rank))):
            B = rng.integers(-scale, scale + 1, size=(d, rank))
            G = B @ B.T
            if np.abs(G).max() + k >= 2**52:
                continue
            yield f"gram r={rank} s={scale}", G + k * np.eye(d, dtype=np.int64), k
    # huge dynamic range: D G D with G singular (columns scaled by 2^0 .. 2^22)
    B = rng.integers(-3, 4, size=(d, max(1, d - 1)))
    Dg = 2 ** rng.integers(0, 23, size=d)
    G = Dg[:, None] * (B @ B.T) * Dg[None, :]
    if np.abs(G).max() < 2**52:
        yield "scaled gram", G, 0
    # rank one with entries near 2^50: v v^T, v ~ 2^25
    v = rng.integers(2**24, 2**25, size=d) * rng.choice([-1, 1], size=d)
    yield "rank1 2^50", np.outer(v, v), 0
    # X^T X with X having fewer rows than d (rows near 2^25 each, so entries near 2^50 * rows / (rows) )
    nr = max(1, d // 3)
    X = rng.integers(-2**24, 2**24, size=(nr, d)) // max(1, int(math.isqrt(nr)))
    G = X.T @ X
    if np.abs(G).max() < 2**52:
        yield "XtX few rows", G, 0
    # all-ones plus integer shift: one eigenvalue d + k, the others k
    yield "ones", np.ones((d, d), dtype=np.int64) * (2**40) + k * np.eye(d, dtype=np.int64), k
    # a graph Laplacian (path): singular, lambda_min = 0, ill-conditioned as d grows
    L = 2 * np.eye(d, dtype=np.int64) - np.eye(d, k=1, dtype=np.int64) - np.eye(d, k=-1, dtype=np.int64)
    L[0, 0] = L[-1, -1] = 1
    yield "path laplacian * 2^30", L * 2**30, 0


def exact_backward_error(H, R):
    """||R^T R - H||_2 (R float, computed exactly as a scaled integer matrix; norm then in float)."""
    d = H.shape[0]
    K = 1100
    Ri = [[int(Fraction(float(x)) * 2**K) if x != 0 else 0 for x in row] for row in R.tolist()]
    D = np.empty((d, d))
    for i in range(d):
        for j in range(i, d):
            s = sum(Ri[k][i] * Ri[k][j] for k in range(min(i, j) + 1))
            D[i, j] = D[j, i] = float(Fraction(s, 2 ** (2 * K)) - int(H[i, j]))
    return float(np.linalg.norm(D, 2))


def main():
    rng = np.random.default_rng(20261127)
    dims = [2, 3, 5, 8, 13, 20, 40, 64, 100, 129, 150, 200]
    if QUICK:
        dims = [2, 5, 20, 129]
    false_accept = false_reject_witness = 0
    checked = 0
    ratios = []
    weakest = {}
    for d in dims:
        for name, M, lam in known_cases(rng, d):
            M = np.asarray(M, dtype=np.int64)
            H0 = M - lam * np.eye(d, dtype=np.int64)
            r = rump_shift(H0)
            # soundness: never PD at s >= lam; block sizes varied
            for s in (lam, lam + 1, lam + r, lam + 2 * r):
                for block in (1, 3, 64, 128, 200):
                    H = M - (s + rump_shift(M - s * np.eye(d, dtype=np.int64))) * np.eye(d, dtype=np.int64)
                    if np.abs(H).max() < 2**53:
                        ok = float_cholesky_upper(H.astype(np.float64), block=block) is not None
                    else:
                        ok = False
                    checked += 1
                    if ok:
                        false_accept += 1
                        print("FALSE ACCEPT", name, d, s, lam, block)
                assert not float_pd_proof(M, s)
            # witness soundness at s < lam (M - s I PD): must never say "not PD"
            _, vec = scipy.linalg.eigh(M.astype(float), subset_by_index=[0, 0])
            v = _integer_vector(vec[:, 0])
            for s in (lam - 1, lam - r):
                if not_pd_witness(M, s, v):
                    false_reject_witness += 1
                    print("WITNESS WRONG", name, d, s, lam)
            # weakened shift: the smallest fraction of r that still refuses at s = lam
            for f in (0.5, 0.1, 0.01, 1e-3, 0.0):
                sh = int(r * f)
                if float_pd_proof(M, lam, shift=sh):
                    weakest.setdefault(name.split(" ")[0], []).append((d, f, r, sh))
                    break
            # the real backward error of the Cholesky run at s = lam - 2 r - 2 (PD: runs to completion)
            if d <= 64:
                Hp = M - (lam - r - 1) * np.eye(d, dtype=np.int64)
                Hp = Hp - rump_shift(Hp) * np.eye(d, dtype=np.int64)
                R = float_cholesky_upper(Hp.astype(np.float64))
                if R is not None and np.abs(Hp).max() < 2**53:
                    err = exact_backward_error(Hp, R)
                    ratios.append((rump_shift(M - (lam - r - 1) * np.eye(d, dtype=np.int64)) / max(err, 1e-300),
                                   d, name))
    print(f"float Cholesky + Rump shift at s >= lambda_min (5 block sizes): {checked} runs, false accepts: "
          f"{false_accept}")
    print(f"integer witness at s < lambda_min: wrong 'not PD': {false_reject_witness}")
    ratios.sort()
    print("Rump shift / real backward error ||R^T R - H'||_2, smallest 5:",
          [(f"{a:.3g}", d, n) for a, d, n in ratios[:5]])
    print("weakened shift r*f accepted a singular matrix (first f that did), by family:")
    for k, v in sorted(weakest.items()):
        print(f"  {k}: {len(v)} cases, largest f with a nonzero shift "
              f"{max([f for _, f, _, sh in v if sh > 0], default=None)}, e.g. (d, f, r, r*f) {v[:4]}")

    # Bareiss cross-check on random near-singular matrices (d <= 30): float proof True => exact True
    bad = 0
    n_bar = 0
    for _ in range(8 if QUICK else 40):
        d = int(rng.integers(2, 31))
        B = rng.integers(-2**20, 2**20, size=(d, d))
        M = B @ B.T // 7 + rng.integers(0, 3)
        M = (M + M.T) // 2
        w, V = np.linalg.eigh(M.astype(float))
        c = int(np.floor(w[0]))
        for s in range(c - 3, c + 4):
            if float_pd_proof(M, s):
                n_bar += 1
                if not positive_definite_exact(M, s):
                    bad += 1
                    print("BAREISS CONTRADICTS", d, s)
    print(f"Bareiss cross-check (near-singular, d <= 30): {n_bar} float acceptances, {bad} contradicted")


if __name__ == "__main__" and "--fallback" not in sys.argv:
    main()


def fallback_count():
    """certified_lambda_min at lambda_tolerance's tol on rank-deficient / ill-conditioned X^T X (rows of norm <= 1,
    n = 10 d): how often the exact Bareiss fallback is reached (utility and running time, not soundness)."""
    from sklearn_dpsco._solvers import _adassp
    from sklearn_dpsco._solvers._adassp import certified_lambda_min, lambda_tolerance

    calls = []
    real = _adassp.positive_definite_exact

    def counting(M, shift):
        calls.append(M.shape[0])
        return real(M, shift)

    _adassp.positive_definite_exact = counting
    rng = np.random.default_rng(3)
    try:
        for d in (20, 50, 100, 200):
            n = 10 * d
            eta, tol = lambda_tolerance(n, d, 1.0, 0.0)
            for kind in ("rank d/2", "cols 1..1e-8", "duplicate column"):
                X = rng.standard_normal((n, d))
                if kind == "rank d/2":
                    X = X[:, : d // 2] @ rng.standard_normal((d // 2, d))
                elif kind == "cols 1..1e-8":
                    X *= np.logspace(0, -8, d)
                else:
                    X[:, 1] = X[:, 0]
                X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
                A = X.T @ X
                before = len(calls)
                lam = certified_lambda_min(A, eta, tol=tol)
                ref = np.linalg.eigvalsh(np.rint(A / eta))[0] * eta
                print(f"d={d} {kind}: tol={tol}, |certified - eigvalsh| = {abs(lam - ref) / eta:.2f} grid steps, "
                      f"Bareiss calls {len(calls) - before}")
    finally:
        _adassp.positive_definite_exact = real


if __name__ == "__main__" and "--fallback" in sys.argv:
    fallback_count()
