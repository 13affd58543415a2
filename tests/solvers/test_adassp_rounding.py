"""T0: AdaSSP's secure path covers the rounding of the statistics it releases (doc/privacy/adassp.rst,
"Rounding on the secure path").

The certified lambda_min is within its tolerance of the exact smallest eigenvalue of the rounded matrix,
whatever candidate LAPACK gives (a wrong candidate takes the bisection); the exact positive-definiteness
test agrees with the spectrum (the float proofs that replace it: test_verified_pd.py); the released statistics of adversarial neighbours (rows on the clipping sphere,
labels at the bound, n = 2e5) move by at most the inflated sensitivities.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_dpsco._solvers import ArraySource, adassp_plan
from sklearn_dpsco._solvers._adassp import (
    _LAMBDA_TOL,
    _positive_definite,
    adassp_statistics,
    certified_lambda_min,
    lambda_tolerance,
    rounding_sensitivities,
    vec_from_sym,
)


def test_positive_definite_is_exact():
    rng = np.random.default_rng(0)
    for _ in range(300):
        d = int(rng.integers(1, 6))
        B = rng.integers(-5, 6, size=(d, d))
        M = (B @ B.T).tolist()  # PSD, often singular
        lam = np.linalg.eigvalsh(np.array(M, dtype=float))
        for shift in (-1, 0, 1, int(np.floor(lam[0])), int(np.ceil(lam[0]))):
            expected = lam[0] - shift > 1e-9
            if abs(lam[0] - shift) > 1e-9:
                assert _positive_definite(M, shift) == expected
    assert not _positive_definite([[0]], 0) and _positive_definite([[1]], 0)


@pytest.mark.parametrize("bad_candidate", [False, True])
def test_certified_lambda_min_is_within_tolerance(bad_candidate):
    rng = np.random.default_rng(1)
    for _ in range(40):
        n, d = int(rng.integers(2, 50)), int(rng.integers(1, 7))
        X = rng.standard_normal((n, d)) * rng.choice([1e-3, 1.0, 30.0])
        A = X.T @ X
        eta = 2.0**-10
        candidate = float(rng.uniform(-1e6, 1e6)) if bad_candidate else None
        lam = certified_lambda_min(A, eta, candidate=candidate)
        M = np.rint(A / eta) * eta
        exact = np.linalg.eigvalsh(M)[0]  # within ~1e-12 relative; the tolerance is 4 eta
        assert abs(lam - exact) <= _LAMBDA_TOL * eta + 1e-9 * max(1.0, abs(exact))
        assert Fraction(lam) / Fraction(eta) == int(Fraction(lam) / Fraction(eta))  # an integer multiple of eta


def test_inflation_is_small_at_moderate_n_and_grows_like_n_squared_u():
    sm, sa, sb, eta = rounding_sensitivities(200_000, 20, 1.0, 1.0, 0.0)
    assert 1 < sm / 1.0 < 1 + 2e-5 and 1 < sa / math.sqrt(2) < 1 + 1e-5 and 1 < sb / 2.0 < 1 + 1e-5
    big = rounding_sensitivities(10**8, 20, 1.0, 1.0, 0.0)
    # the float proofs' public tolerance grows like d^2 n u grid steps: 4 up to d ~ 20, ~2e-4 relative at d = 1000
    assert lambda_tolerance(200_000, 20, 1.0, 0.0)[1] == _LAMBDA_TOL
    eta, tol = lambda_tolerance(100_000, 1000, 1.0, 1.0)
    assert _LAMBDA_TOL < tol and 2 * tol * eta / 2.0 < 1e-4
    assert rounding_sensitivities(100_000, 1000, 1.0, 1.0, 1.0)[0] / 2.0 < 1 + 2e-4
    assert big[0] > 2.0  # the Higham bound (any order) is useless beyond ~1e7 rows: see adassp.rst


def test_adversarial_neighbours_at_2e5_rows_stay_within_the_secure_sensitivities():
    rng = np.random.default_rng(2)
    n, d, R, B = 200_000, 5, 1.0, 1.0
    plan = adassp_plan(n, d, epsilon=1.0, delta=0.0, row_bound=R, label_bound=B)
    sens_min, sens_A, sens_b = plan.info["sensitivities"]
    X = rng.standard_normal((n, d)) * 1e3  # every row clipped onto the sphere: the largest summation errors
    y = np.where(rng.random(n) < 0.5, 5.0, -5.0)  # every label at the bound
    for _ in range(3):
        j = int(rng.integers(n))
        Xp, yp = X.copy(), y.copy()
        Xp[j], yp[j] = -X[j] + rng.standard_normal(d), -y[j]
        A, b = adassp_statistics(ArraySource(X, y), plan)
        Ap, bp = adassp_statistics(ArraySource(Xp, yp), plan)
        lam, lamp = (certified_lambda_min(M, plan.lambda_grid, tol=plan.lambda_tol) for M in (A, Ap))
        assert abs(lam - lamp) <= sens_min
        assert np.linalg.norm(vec_from_sym(A) - vec_from_sym(Ap)) <= sens_A
        assert np.linalg.norm(b - bp) <= sens_b


@pytest.mark.parametrize("candidate", [None, 1e6, -1e6])
def test_certified_lambda_min_symmetrises_a_nonsymmetric_statistic(candidate):
    # fl(A) is not symmetric with sample weights (x_j fl(x_k w) vs x_k fl(x_j w)); before the fix LAPACK read the
    # lower triangle, the Cholesky the upper, the witness (M + M^T) / 2 and Bareiss all of M (Sylvester's
    # criterion is void for a nonsymmetric matrix): this M came out at 5 or 4 with tol 1, its upper triangle's
    # lambda_min being 2.46 (benchmarks/pdreview/asymmetric_statistic.py finds 142 such in 3000 small cases)
    M = np.array([[23, 3, 20, -6], [2, 18, 8, 16], [20, 7, 34, -8], [-8, 14, -6, 29]], dtype=float)
    upper = np.triu(M) + np.triu(M, 1).T
    lam = certified_lambda_min(M, 1.0, candidate=candidate, tol=1)
    assert abs(lam - np.linalg.eigvalsh(upper)[0]) <= 1
    # and the library's own statistic with weights is indeed nonsymmetric in floating point
    rng = np.random.default_rng(0)
    X, w = rng.standard_normal((10_000, 5)), rng.uniform(size=10_000)
    A = X.T @ (X * w[:, None])
    assert (A != A.T).any()


def test_bounds_whose_statistics_could_overflow_are_refused_at_plan_time():
    # before: planned fine, then b = sum x~ y overflowed on the dataset with every label at +B (the secure
    # mechanism raised "value must be finite") and not on its neighbour with one label at 0: a data-dependent
    # outcome (benchmarks/pdreview/overflow_neighbours.py)
    for noise in ("secure", "float"):
        with pytest.raises(ValueError, match="overflow"):
            adassp_plan(257, 2, epsilon=1.0, delta=0.0, row_bound=1.0, label_bound=1e306, noise=noise)
        with pytest.raises(ValueError, match="overflow"):
            adassp_plan(1000, 2, epsilon=1.0, delta=0.0, row_bound=3.9e152, label_bound=1.0, noise=noise)
    adassp_plan(10**6, 20, epsilon=1.0, delta=0.0, row_bound=1e100, label_bound=1e100)  # far from the limit: fine
