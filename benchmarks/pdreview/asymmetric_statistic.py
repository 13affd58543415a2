"""Second reading of the certified lambda_min: a nonsymmetric statistic (sample weights make fl(A) nonsymmetric).

Small integer matrices S + K (S a Gram matrix, K strictly upper, entries in [-2, 2]) with eta = 1, tol = 1: counts
the certified values farther than tol from lambda_min of the upper triangle's symmetric matrix (the one
vec_from_sym releases) AND of the symmetric part. Before the fix (certified_lambda_min symmetrising M from its
upper triangle) 142 of 3000 x 3 runs, with LAPACK's candidate or a wrong one; after: 0.

Usage: OMP_NUM_THREADS=1 python benchmarks/pdreview/asymmetric_statistic.py
"""

import numpy as np

from sklearn_dpsco._solvers._adassp import certified_lambda_min


def main():
    rng = np.random.default_rng(0)
    found = 0
    for _ in range(3000):
        d = int(rng.integers(2, 5))
        B = rng.integers(-4, 5, size=(d, d))
        M = B @ B.T + np.triu(rng.integers(-2, 3, size=(d, d)), 1)
        lu = np.linalg.eigvalsh(np.triu(M) + np.triu(M, 1).T)[0]
        ls = np.linalg.eigvalsh((M + M.T) / 2)[0]
        for cand in (None, 1e6, -1e6):
            c = certified_lambda_min(M.astype(float), 1.0, candidate=cand, tol=1)
            if abs(c - lu) > 1 + 1e-9 and abs(c - ls) > 1 + 1e-9:
                found += 1
                if found <= 3:
                    print(f"candidate {cand}: certified {c}, upper-triangle lambda_min {lu:.4f}, symmetric part "
                          f"{ls:.4f}\n{M}")
    print(f"certified values outside the tolerance: {found}")


if __name__ == "__main__":
    main()
