"""Second reading of AdaSSP's secure path: a data-dependent failure near the top of the float range.

Nothing in the plan keeps the statistics below the float64 maximum: with public bounds R = 1, B = 1e306 and
n = 257 rows, b = sum x~ y overflows for the dataset whose labels are all at +B and not for its neighbour with
one label replaced by 0. The secure mechanism then raises ("value must be finite") on one dataset and releases
on the other: the error is an observable output that depends on one row (pure DP fails outright). The same holds
for vec(A) when n X2 is near 1.3e308 (sqrt(2) A_ij overflows in vec_from_sym). Before the fix the plan accepts
these bounds; after it, adassp_plan refuses them (public: n, d, R, B, s) before any row is read.

Usage: OMP_NUM_THREADS=1 python benchmarks/pdreview/overflow_neighbours.py
"""

import numpy as np

from sklearn_dpsco._solvers import ArraySource, adassp_plan, run_adassp


def outcome(X, y, plan):
    try:
        run_adassp(ArraySource(X, y), plan, np.random.default_rng(0))
        return "released"
    except ValueError as exc:
        return f"ValueError: {exc}"


def main():
    n, d, R, B = 257, 2, 1.0, 1e306
    try:
        plan = adassp_plan(n, d, epsilon=1.0, delta=0.0, row_bound=R, label_bound=B, noise="secure")
    except ValueError as exc:
        print(f"plan refused (public bounds): {exc}")
        return
    X = np.full((n, d), 0.7)  # ||x|| = 0.99 <= R
    y = np.full(n, B)
    yp = y.copy()
    yp[0] = 0.0  # the neighbour: one label replaced
    with np.errstate(over="ignore"):
        print("D :", outcome(X, y, plan))
        print("D':", outcome(X, yp, plan))


if __name__ == "__main__":
    main()
