"""select_rows_u64 (the column quartiles' batched selections) draws what the per-row path drew."""

import numpy as np
import pytest

from sklearn_dpsco._fast._discrete import bernoulli_exp_table_u64, select_rows_u64
from sklearn_dpsco._mechanisms import _selection as S


def _per_row(rng, nums, dens, multiplier):
    # the path select_exact_u64 took before select_rows_u64: the coin table, then rng.permuted on one row
    coins = bernoulli_exp_table_u64(rng, nums, dens, 1, multiplier).T.astype(bool)
    return int(S._first_heads_in_random_order(rng, coins)[0])


@pytest.mark.parametrize("seed", range(40))
def test_select_rows_u64_same_draws_as_per_row(seed):
    g = np.random.default_rng(1000 + seed)
    rows, m = int(g.integers(1, 5)), int(g.integers(1, 700))
    nums = g.integers(0, int(g.choice([3, 50, 10**6, 2**40])), size=(rows, m)).astype(np.uint64)
    nums[np.arange(rows), g.integers(0, m, size=rows)] = 0
    dens = g.integers(1, int(g.choice([2, 7, 10**9])), size=(rows, m)).astype(np.uint64)
    multiplier = int(g.choice([1, 3, 2**20]))
    r1, r2, r3 = (np.random.default_rng(seed) for _ in range(3))
    expected = [_per_row(r1, nums[j], dens[j], multiplier) for j in range(rows)]
    assert list(select_rows_u64(r2, nums, dens, multiplier)) == expected
    assert [S.select_exact_u64(r3, nums[j], dens[j], multiplier) for j in range(rows)] == expected
    assert r1.bit_generator.state == r2.bit_generator.state == r3.bit_generator.state


def test_select_rows_u64_checks_before_drawing():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="zero"):
        select_rows_u64(rng, np.array([[0, 1], [1, 1]], dtype=np.uint64), np.ones((2, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="positive denominator"):
        select_rows_u64(rng, np.array([[0, 1]], dtype=np.uint64), np.array([[1, 0]], dtype=np.uint64))
    assert rng.bit_generator.state == state
