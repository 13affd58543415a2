"""Cost of the certified lambda_min (secure AdaSSP path) at d = 100, 300, 1000: the rigorous float proofs
(Rump-shifted Cholesky + exact integer witness) against the exact Bareiss test they replace.

    OMP_NUM_THREADS=1 python benchmarks/adassp_lambda_certificate.py [--bareiss]

CPU time (process_time), best of 3. Rows: n = 10 d Gaussian rows clipped to the unit sphere plus an intercept
column (s = 1), so A is a realistic Gram matrix; ``tol`` from ``lambda_tolerance`` (public).
"""

import argparse
import time

import numpy as np
import scipy.linalg

from sklearn_dpsco._solvers import _adassp
from sklearn_dpsco._solvers._adassp import certified_lambda_min, lambda_tolerance
from sklearn_dpsco._solvers._verified_pd import positive_definite_exact


def _best(f, k=3):
    out = []
    for _ in range(k):
        t0 = time.process_time()
        f()
        out.append(time.process_time() - t0)
    return min(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bareiss", action="store_true", help="also time the exact Bareiss pair (d = 100 only)")
    args = parser.parse_args()
    calls = []
    real_exact = _adassp.positive_definite_exact

    def counting(M, s):
        calls.append(s)
        return real_exact(M, s)

    _adassp.positive_definite_exact = counting
    for d in (100, 300, 1000):
        rng = np.random.default_rng(d)
        n = 10 * d
        X = rng.standard_normal((n, d - 1))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        X = np.hstack([X, np.ones((n, 1))])
        A = X.T @ X
        eta, tol = lambda_tolerance(n, d, 1.0, 1.0)
        calls.clear()
        lam = certified_lambda_min(A, eta, tol=tol)
        t_cert = _best(lambda: certified_lambda_min(A, eta, tol=tol))
        t_eig = _best(lambda: np.linalg.eigvalsh(np.rint(A / eta)))
        t_pair = _best(lambda: scipy.linalg.eigh(np.rint(A / eta), subset_by_index=[0, 0]))
        print(f"d={d:5d} n={n} tol={tol} lambda={lam:.6g}  certified {t_cert * 1e3:8.1f} ms  "
              f"(eigvalsh alone {t_eig * 1e3:.1f} ms, smallest eigenpair {t_pair * 1e3:.1f} ms)  "
              f"exact fallbacks: {len(calls)}")
        if args.bareiss and d == 100:
            M = np.rint(A / eta).astype(np.int64)
            c = int(round(lam / eta))
            t_b = _best(lambda: (positive_definite_exact(M, c - tol), positive_definite_exact(M, c + tol)), k=1)
            print(f"          exact Bareiss pair at d=100: {t_b * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
