"""select_rows_u64 (the batched exact permute-and-flip): McKenna and Sheldon's visiting algorithm, coins only
for the visited candidates, and its law."""

import numpy as np
import pytest

from sklearn_dpsco._fast._discrete import bernoulli_exp_table_u64, select_rows_u64
from sklearn_dpsco._mechanisms import _selection as S
from sklearn_dpsco.testing import discrete_pmf_pvalue


def _visiting(rng, nums, dens, multiplier):
    # the algorithm written out with the one-candidate coin: a uniform order, then a coin per visited candidate
    # (a fresh bit buffer each, as bernoulli_exp_table_u64 draws one), stopping at the first heads
    order = rng.permutation(nums.size)
    for j in order:
        if nums[j] == 0 or multiplier == 0:
            return int(j)
        if bernoulli_exp_table_u64(rng, nums[j:j + 1], dens[j:j + 1], 1, multiplier)[0, 0]:
            return int(j)
    raise AssertionError("no heads")


@pytest.mark.parametrize("seed", range(40))
def test_select_rows_u64_draws_the_visiting_algorithm(seed):
    g = np.random.default_rng(1000 + seed)
    rows, m = int(g.integers(1, 5)), int(g.integers(1, 700))
    nums = g.integers(0, int(g.choice([3, 50, 10**6, 2**40])), size=(rows, m)).astype(np.uint64)
    nums[np.arange(rows), g.integers(0, m, size=rows)] = 0
    dens = g.integers(1, int(g.choice([2, 7, 10**9])), size=(rows, m)).astype(np.uint64)
    multiplier = int(g.choice([1, 3, 2**20]))
    r1, r2, r3 = (np.random.default_rng(seed) for _ in range(3))
    expected = [_visiting(r1, nums[j], dens[j], multiplier) for j in range(rows)]
    assert list(select_rows_u64(r2, nums, dens, multiplier)) == expected
    assert [S.select_exact_u64(r3, nums[j], dens[j], multiplier) for j in range(rows)] == expected
    assert r1.bit_generator.state == r2.bit_generator.state == r3.bit_generator.state


@pytest.mark.statistical
def test_select_rows_u64_has_the_permute_and_flip_law():
    # gaps 0, 1/2, 1, 3/2, 3 (and a repeated 1): the index's law is permute_and_flip_pmf's
    nums = np.array([[0, 1, 2, 3, 6, 2]], dtype=np.uint64)
    dens = np.full_like(nums, 2)
    rng = np.random.default_rng(5)
    idx = select_rows_u64(rng, np.repeat(nums, 40_000, axis=0), np.repeat(dens, 40_000, axis=0))
    pmf = S.permute_and_flip_pmf(nums[0] / dens[0])
    assert discrete_pmf_pvalue(idx, np.arange(nums.shape[1]), pmf) > 1e-6
    wrong = S.permute_and_flip_pmf(1.3 * nums[0] / dens[0])  # the law at another epsilon is rejected
    assert discrete_pmf_pvalue(idx, np.arange(nums.shape[1]), wrong) < 1e-6


def test_select_rows_u64_zero_multiplier_keeps_the_first_visited():
    nums = np.array([[0, 5, 7, 9]], dtype=np.uint64)
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    assert select_rows_u64(a, nums, np.ones_like(nums), 0)[0] == b.permutation(4)[0]
    assert a.bit_generator.state == b.bit_generator.state


def test_select_rows_u64_checks_before_drawing():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="zero"):
        select_rows_u64(rng, np.array([[0, 1], [1, 1]], dtype=np.uint64), np.ones((2, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="positive denominator"):
        select_rows_u64(rng, np.array([[0, 1]], dtype=np.uint64), np.array([[1, 0]], dtype=np.uint64))
    with pytest.raises(ValueError, match="numerator"):  # the second row's range, before the first row's draws
        select_rows_u64(rng, np.array([[0, 1], [0, 2**63]], dtype=np.uint64), np.ones((2, 2), dtype=np.uint64),
                        2**(64 * 6 - 64))
    assert rng.bit_generator.state == state
