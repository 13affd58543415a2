"""Grouping rows by user (make_user_data, index_users): one stable sort, the same rows as np.unique's grouping."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._solvers._core._user_data import index_users, make_user_data


def _reference_keep(groups, max_items, item_selection, random_state):
    """The kept rows by np.unique's user ranks (the grouping make_user_data must reproduce)."""
    n_rows = groups.size
    _, user_of_row = np.unique(groups, return_inverse=True)
    user_of_row = user_of_row.ravel()
    order = np.argsort(user_of_row, kind="stable")
    counts = np.bincount(user_of_row)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(n_rows) - np.repeat(starts, counts)
    if item_selection == "first":
        return order[rank < max_items], counts
    rng = np.random.default_rng(random_state)
    by_priority = np.lexsort((rng.random(n_rows), user_of_row))
    selected = np.zeros(n_rows, dtype=bool)
    selected[by_priority[rank < max_items]] = True
    return order[selected[order]], counts


def _groups(kind, n, rng):
    ids = rng.integers(0, n // 3, size=n)
    if kind == "sorted":
        return np.sort(ids)
    if kind == "str":
        return np.array([f"user{i}" for i in ids])
    if kind == "float":
        return ids.astype(float) - 0.5
    if kind == "object":
        return np.array([f"u{i:03d}" for i in ids], dtype=object)
    return ids


@pytest.mark.parametrize("kind", ["sorted", "int", "str", "float", "object"])
@pytest.mark.parametrize("item_selection", ["first", "random"])
@pytest.mark.parametrize("max_items", [1, 3, 100])
def test_index_users_groups_like_np_unique(kind, item_selection, max_items):
    rng = np.random.default_rng(0)
    n = 300
    groups = _groups(kind, n, rng)
    users = index_users(groups)
    keep, counts = _reference_keep(groups, max_items, item_selection, 5)
    assert users.n_users == np.unique(groups).size
    np.testing.assert_array_equal(users.counts, counts)
    assert (users.order is None) == (kind == "sorted")
    X = rng.standard_normal((n, 4))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    for Xin in (X, sp.csr_matrix(X)):
        for intercept in (0.0, 1.0):
            for given in (None, users):
                data = make_user_data(Xin, y, groups, max_items=max_items, data_norm=1.5, intercept_scaling=intercept,
                                      item_selection=item_selection, random_state=5, users=given)
                np.testing.assert_array_equal(data.source_rows, keep)
                np.testing.assert_array_equal(data.y, y[keep])
                np.testing.assert_array_equal(np.diff(data.indptr), np.minimum(counts, max_items))
                dense = data.X.toarray() if sp.issparse(data.X) else data.X
                np.testing.assert_array_equal(dense[:, :4] != 0, X[keep] != 0)
                assert np.all(np.linalg.norm(dense, axis=1) <= 1.5)


def test_make_user_data_does_not_write_into_x():
    """The presorted fast path copies X (the rows are then scaled in place)."""
    rng = np.random.default_rng(1)
    X = 3.0 * rng.standard_normal((50, 3))
    before = X.copy()
    groups = np.repeat(np.arange(10), 5)
    for intercept in (0.0, 1.0):
        data = make_user_data(X, np.ones(50), groups, max_items=5, data_norm=1.0, intercept_scaling=intercept)
        assert np.all(np.linalg.norm(data.X, axis=1) <= 1.0)
        np.testing.assert_array_equal(X, before)


def test_index_users_empty_and_single():
    assert index_users(np.array([], dtype=int)).n_users == 0
    users = index_users(np.array([7, 7, 7]))
    assert users.n_users == 1 and users.order is None and users.counts.tolist() == [3]
