"""T0: the floating-point positive-definiteness proofs of the certified lambda_min (sklearn_dpsco/_solvers/
_verified_pd.py; doc/privacy/adassp.rst, "Rounding on the secure path") never contradict the exact Bareiss
test, on random and adversarial integer matrices (singular with an integer eigenvalue, near-singular, unbalanced
diagonal, tiny and huge entries, indefinite) at d <= 40; they decide whenever the shift is clear of the
spectrum by Demmel's margin; and the mutant without Rump's shift (the plain float Cholesky) accepts a
singular matrix, which the shifted test refuses.
"""

import numpy as np
import pytest
import scipy.linalg

from sklearn_dpsco._solvers._adassp import certified_lambda_min, lambda_tolerance
from sklearn_dpsco._solvers._verified_pd import (
    _integer_vector,
    float_pd_proof,
    not_pd_witness,
    positive_definite_exact,
    rump_shift,
)


def _gram(rng, d, k, scale):
    B = rng.integers(-scale, scale + 1, size=(d, k))
    return (B @ B.T).astype(np.int64)


def _cases(seed):
    """(name, M) integer symmetric matrices with entries below 2^52."""
    rng = np.random.default_rng(seed)
    for _ in range(6):
        d = int(rng.integers(1, 41))
        k = int(rng.integers(1, d + 1))
        yield "gram", _gram(rng, d, k, 3)  # tiny entries, often singular
        yield "gram_huge", _gram(rng, d, k, int(2**24 / np.sqrt(k)))  # entries up to ~2^48
        M = _gram(rng, d, max(d - 1, 1), 1000) + int(rng.integers(0, 3)) * np.eye(d, dtype=np.int64)
        yield "singular_plus_kI", M  # lambda_min is exactly the integer k (d >= 2)
        D = 2 ** rng.integers(0, 18, size=d)
        yield "unbalanced", (D[:, None] * _gram(rng, d, d, 5) * D[None, :])
        S = rng.integers(-2**40, 2**40, size=(d, d))
        yield "indefinite", (S + S.T) // 2
    for d in (4, 8, 12):
        H = scipy.linalg.hilbert(d) * 2.0**45
        yield "hilbert", np.rint(H).astype(np.int64)  # near-singular (cond ~ 1e16 at d = 12)


@pytest.mark.parametrize("seed", range(4))
def test_float_proofs_never_contradict_the_exact_test(seed):
    decided = 0
    for name, M in _cases(seed):
        d = M.shape[0]
        assert np.abs(M).max() < 2**52, name
        value, vector = scipy.linalg.eigh(M.astype(float), subset_by_index=[0, 0])
        v = _integer_vector(vector[:, 0])
        c = int(np.floor(value[0]))
        shifts = {c - 2, c - 1, c, c + 1, c + 2}
        r = rump_shift(M - c * np.eye(d, dtype=np.int64))
        shifts |= {c - r, c - 2 * r, c - 4 * r - 2 * d, c + r}
        for s in sorted(shifts):
            exact = positive_definite_exact(M, s)
            pd = float_pd_proof(M, s)
            not_pd = not_pd_witness(M, s, v)
            assert not (pd and not_pd), (name, s)
            if pd:
                assert exact, (name, s, "float proof claimed PD")
            if not_pd:
                assert not exact, (name, s, "witness claimed not PD")
            decided += pd or not_pd
    assert decided > 0


def test_proofs_decide_away_from_the_spectrum():
    rng = np.random.default_rng(7)
    for d in (5, 20, 40):
        X = rng.standard_normal((4 * d, d))
        M = np.rint(X.T @ X * 2.0**30).astype(np.int64)
        value, vector = scipy.linalg.eigh(M.astype(float), subset_by_index=[0, 0])
        v = _integer_vector(vector[:, 0])
        lam = float(value[0])
        r = rump_shift(M - int(lam) * np.eye(d, dtype=np.int64))
        margin = 2 * r + 2 * d * (d + 1) * 2.0**-53 * float(M.diagonal().max()) * 2 + 2
        assert float_pd_proof(M, int(np.floor(lam - margin)))
        assert not_pd_witness(M, int(np.ceil(lam)) + 1, v)


def test_mutant_plain_float_cholesky_accepts_a_singular_matrix():
    """Without Rump's shift the float Cholesky 'proves' singular matrices positive definite."""
    rng = np.random.default_rng(11)
    found = 0
    for _ in range(200):
        d = int(rng.integers(8, 30))
        M = _gram(rng, d, d - 1, 2**20)  # rank d - 1: lambda_min = 0 exactly
        if float_pd_proof(M, 0, shift=0):  # the mutant accepts
            assert not positive_definite_exact(M, 0)  # but M is singular
            assert not float_pd_proof(M, 0)  # the real test refuses
            found += 1
    assert found >= 5


@pytest.mark.parametrize("d", [3, 17, 40])
def test_certified_lambda_min_is_exactly_within_tol(d, monkeypatch):
    """Bareiss-checked: PD at c - tol and not PD at c + tol; the exact test is not needed on Gram matrices."""
    from sklearn_dpsco._solvers import _adassp

    rng = np.random.default_rng(d)
    n = 5 * d
    X = rng.standard_normal((n, d - 1))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    X = np.hstack([X, np.ones((n, 1))])
    X[:, 0] = X[:, 1]  # collinear columns: lambda_min(A) = 0 up to rounding
    A = X.T @ X
    eta, tol = lambda_tolerance(n, d, 1.0, 1.0)
    monkeypatch.setattr(_adassp, "positive_definite_exact", lambda M, s: pytest.fail("exact fallback reached"))
    lam = certified_lambda_min(A, eta, tol=tol)
    M = np.rint(A / eta).astype(np.int64)
    c = round(lam / eta)
    assert positive_definite_exact(M, c - tol) and not positive_definite_exact(M, c + tol)
