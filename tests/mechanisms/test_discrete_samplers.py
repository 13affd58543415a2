"""Exact integer samplers (CKS20): T0 arithmetic checks, T1 exact-pmf goodness of fit.

Every goodness-of-fit test compares against the *exact* target pmf (no
continuous approximation) at alpha = 1e-6 and also asserts that a mutant
law (wrong scale, or a continuous sampler rounded to the integers) IS
rejected by the same test on the same draws: that is the test's power.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from sklearn_dpsco._fast import _discrete
from sklearn_dpsco._fast._csprng import OSEntropyBitGenerator
from sklearn_dpsco.testing import discrete_pmf_pvalue, ks_pvalue

ALPHA = 1e-6


def dlap_pmf(t, support):
    """Exact discrete Laplace pmf: tanh(1/(2t)) exp(-|y|/t)."""
    t = float(t)
    return math.tanh(0.5 / t) * np.exp(-np.abs(support) / t)


def dgauss_pmf(sigma2, support):
    """Exact discrete Gaussian pmf, normalised over a support wide enough for float64."""
    sigma2 = float(sigma2)
    width = int(40 * math.sqrt(sigma2)) + 10
    z = np.exp(-np.arange(-width, width + 1) ** 2 / (2 * sigma2)).sum()
    return np.exp(-np.asarray(support, dtype=float) ** 2 / (2 * sigma2)) / z


# ------------------------------------------------------------------ T0
def test_as_rational_is_exact_and_strict():
    assert _discrete.as_rational(0.1) == (3602879701896397, 36028797018963968)
    assert Fraction(*_discrete.as_rational(0.1)) == Fraction(0.1)
    assert _discrete.as_rational((6, 4)) == (3, 2)
    assert _discrete.as_rational(Fraction(7, 3)) == (7, 3)
    assert _discrete.as_rational(5) == (5, 1)
    for bad, err in [(0, ValueError), (-1.0, ValueError), (math.inf, ValueError), (math.nan, ValueError),
                     ((1, 0), ValueError), (True, TypeError), ("1", TypeError), (2**63, ValueError),
                     (1e-30, ValueError)]:
        with pytest.raises(err):
            _discrete.as_rational(bad)


def test_fixed_width_arithmetic_matches_python_ints():
    rng = np.random.default_rng(0)
    for _ in range(300):
        bx, by = rng.integers(1, 190, size=2)
        x = int(rng.integers(0, 2**63)) << int(bx) | int(rng.integers(0, 2**63))
        y = int(rng.integers(0, 2**63)) << int(by) | int(rng.integers(0, 2**63))
        x, y = x % 2**190, y % 2**190
        assert _discrete._big_mul(x, y) == x * y
        c, diff = _discrete._big_sub_cmp(x, y)
        assert c == (x > y) - (x < y)
        assert diff == (x - y if x >= y else None)
    # carries across every limb
    assert _discrete._big_mul(2**191 - 1, 2**191 - 1) == (2**191 - 1) ** 2
    with pytest.raises(OverflowError):
        _discrete._big_mul(2**300, 2**100)


def test_samplers_accept_generators_and_bit_generators_and_are_reproducible():
    a = _discrete.discrete_laplace(np.random.default_rng(5), (7, 2), size=50)
    b = _discrete.discrete_laplace(np.random.PCG64(5), (7, 2), size=50)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.int64 and a.shape == (50,)
    assert isinstance(_discrete.discrete_gaussian(np.random.default_rng(1), 3.5), int)
    assert _discrete.discrete_gaussian(np.random.default_rng(1), 2.0, size=(3, 4)).shape == (3, 4)
    assert _discrete.bernoulli_exp(np.random.default_rng(1), 0, size=20).min() == 1  # exp(0) = 1
    with pytest.raises(TypeError):
        _discrete.discrete_laplace(np.random.RandomState(0), 1.0, size=3)


@pytest.mark.parametrize("count", [0, 1, 7, 130])
def test_bernoulli_exp_table_is_the_per_gap_calls(count):
    # the batched table must reproduce, draw for draw, one bernoulli_exp call per gap (a zero gap
    # reads no bits), and leave the generator where those calls leave it
    gaps = [(0, 1), (1, 3), (5, 2), (0, 7), (7, 1), (3 * 2**200 + 1, 2**201), (1, 1), (2, 2**63 - 1)]
    ref_rng, rng = np.random.default_rng(11), np.random.default_rng(11)
    ref = [np.ones(count, np.uint8) if a == 0 else _discrete.bernoulli_exp(ref_rng, (a, b), size=count)
           for a, b in gaps]
    table = _discrete.bernoulli_exp_table(rng, gaps, count)
    assert table.shape == (len(gaps), count) and table.dtype == np.uint8
    np.testing.assert_array_equal(table, np.array(ref, dtype=np.uint8).reshape(len(gaps), count))
    assert ref_rng.integers(2**62) == rng.integers(2**62)
    with pytest.raises(ValueError):
        _discrete.bernoulli_exp_table(rng, [(-1, 2)], 3)
    with pytest.raises(ValueError):
        _discrete.bernoulli_exp_table(rng, [(1, 0)], 3)


@pytest.mark.parametrize("multiplier", [1, 3, 2**52 + 7, 2**120 + 1])
@pytest.mark.parametrize("count", [0, 1, 9])
def test_bernoulli_exp_table_u64_is_the_tuple_table(multiplier, count):
    # gaps multiplier * a / b from uint64 arrays: the same draws as the tuple form, same generator state after
    rng0 = np.random.default_rng(3)
    a = rng0.integers(0, 2**40, size=300).astype(np.uint64)
    a[[0, 17, 250]] = 0
    a[5] = 2**64 - 1
    b = rng0.integers(1, 2**63, size=300).astype(np.uint64)
    ref_rng, rng = np.random.default_rng(12), np.random.default_rng(12)
    ref = _discrete.bernoulli_exp_table(ref_rng, [(multiplier * int(x), int(y)) for x, y in zip(a, b)], count)
    got = _discrete.bernoulli_exp_table_u64(rng, a, b, count, multiplier)
    np.testing.assert_array_equal(got, ref)
    assert ref_rng.integers(2**62) == rng.integers(2**62)
    with pytest.raises(ValueError):
        _discrete.bernoulli_exp_table_u64(rng, a[:2], np.array([1, 0], np.uint64), 3)
    with pytest.raises(ValueError):
        _discrete.bernoulli_exp_table_u64(rng, a[5:6], b[:1], 1, 2**330)  # beyond the fixed width


def test_limbs_table_is_the_per_value_limbs():
    # the batched limb split (values below 2^64, and wider values through bytes) equals _to_big per value
    limbs = len(_discrete._to_big(0, "x"))
    rng = np.random.default_rng(4)
    for _ in range(200):
        width = int(rng.integers(1, 64 * limbs - 1))
        values = [int(rng.integers(0, 2**62)) << int(rng.integers(0, max(1, width - 62))) for _ in range(20)]
        values = [v for v in values if v.bit_length() <= 64 * limbs - 2] + [0, 2**64 - 1]
        expected = np.array([_discrete._to_big(v, "x") for v in values], dtype=np.uint64)
        np.testing.assert_array_equal(_discrete._limbs_table(values, "x"), expected)
    for bad in ([2 ** (64 * limbs - 1)], [2**70, -1]):
        with pytest.raises(ValueError):
            _discrete._limbs_table(bad, "x")


def test_os_entropy_drives_the_exact_samplers():
    # smoke test only (unseeded: no statistical assertion)
    g = np.random.Generator(OSEntropyBitGenerator())
    x = _discrete.discrete_gaussian(g, 2**40, size=1000)
    y = _discrete.discrete_laplace(g, (2**40, 1), size=1000)
    assert x.dtype == y.dtype == np.int64 and x.shape == y.shape == (1000,)


# ------------------------------------------------------------------ T1: exact pmfs
@pytest.mark.statistical
@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(7),
                                   Fraction(3 * 2**200 + 1, 2**201)])
def test_bernoulli_exp_exact(gamma):
    n = 400_000
    x = _discrete.bernoulli_exp(np.random.default_rng(17), (gamma.numerator, gamma.denominator), size=n)
    k = int(x.sum())
    p = math.exp(-float(gamma))
    if p == 1.0:
        assert k == n
        return
    assert stats.binomtest(k, n, p).pvalue > ALPHA
    # mutant: gamma off by 5% (or by 0.05 at gamma = 0)
    p_bad = math.exp(-(float(gamma) * 1.05 + (0.05 if gamma == 0 else 0)))
    assert stats.binomtest(k, n, p_bad).pvalue < ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(22, 7)])
def test_discrete_laplace_exact_pmf_and_mutants(scale):
    n = 1_000_000
    x = _discrete.discrete_laplace(np.random.default_rng(3), (scale.numerator, scale.denominator), size=n)
    support = np.arange(-200, 201)
    assert discrete_pmf_pvalue(x, support, dlap_pmf(scale, support)) > ALPHA
    for factor in (0.93, 1.07):
        assert discrete_pmf_pvalue(x, support, dlap_pmf(float(scale) * factor, support)) < ALPHA


@pytest.mark.statistical
def test_discrete_laplace_large_scale_and_parity():
    """At the mechanisms' scales (t ~ 2^48) check the law of y / t and its low bits."""
    t = 2**48 + 12345
    x = _discrete.discrete_laplace(np.random.default_rng(8), (t, 1), size=300_000)
    u = x / t
    assert ks_pvalue(u, stats.laplace().cdf) > ALPHA
    assert ks_pvalue(u, stats.laplace(scale=1.05).cdf) < ALPHA
    # the integer noise is not concentrated on a sub-lattice: low bits are fair
    for bit in range(4):
        assert stats.binomtest(int(((x >> bit) & 1).sum()), x.size).pvalue > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(1), Fraction(5, 2), Fraction(9), Fraction(100)])
def test_discrete_gaussian_exact_pmf_and_mutants(sigma2):
    n = 1_000_000
    rng = np.random.default_rng(int(sigma2 * 4))
    x = _discrete.discrete_gaussian(rng, (sigma2.numerator, sigma2.denominator), size=n)
    support = np.arange(-int(12 * math.sqrt(sigma2)) - 5, int(12 * math.sqrt(sigma2)) + 6)
    assert discrete_pmf_pvalue(x, support, dgauss_pmf(sigma2, support)) > ALPHA
    for factor in (0.9, 1.1):
        assert discrete_pmf_pvalue(x, support, dgauss_pmf(float(sigma2) * factor, support)) < ALPHA
    if sigma2 <= 1:
        # structural mutant: a continuous Gaussian rounded to the integers
        s = math.sqrt(sigma2)
        rounded = stats.norm.cdf((support + 0.5) / s) - stats.norm.cdf((support - 0.5) / s)
        assert discrete_pmf_pvalue(x, support, rounded) < ALPHA


@pytest.mark.statistical
def test_discrete_gaussian_large_sigma():
    sigma2 = 2**61 + 3
    x = _discrete.discrete_gaussian(np.random.default_rng(4), (sigma2, 1), size=200_000)
    z = x / math.sqrt(sigma2)
    assert ks_pvalue(z, stats.norm.cdf) > ALPHA
    assert ks_pvalue(z, stats.norm(scale=1.03).cdf) < ALPHA
    assert stats.binomtest(int((x & 1).sum()), x.size).pvalue > ALPHA
