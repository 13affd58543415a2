"""Rows grouped by user: the data of a user-level fit (doc/privacy/user_level.rst).

The privacy unit of a user-level fit is one *user*: all rows sharing a value
of ``groups``. :func:`make_user_data` turns validated ``(X, y, groups)`` into a
:class:`UserData`:

* rows are stably sorted by user, so a user's rows stay in input order
  (one stable sort of the identifiers, :func:`index_users`, which also
  counts the users; rows that arrive sorted by user are not moved);
* every user keeps at most ``max_items`` rows, chosen by a data-independent
  rule — the first ``max_items`` rows in input order, or a uniformly random
  subset drawn from a random state that is independent of the data. Nothing
  about the values decides which rows are kept. With the first rows, a
  user's kept rows depend on that user's rows only; with the random subset
  the draws are tied to input positions, so for a fixed seed another user's
  kept rows can change when a user is replaced, but in law every user keeps
  an independent uniform subset of its own rows whatever the others hold
  (the distribution the privacy argument uses);
* an intercept column of constant ``intercept_scaling`` is appended (it
  counts in the row norm);
* every row whose norm exceeds the public ``data_norm`` R is scaled down to
  norm R. This is a fixed map applied to each row on its own: it does not
  look at other rows, so replacing one user's rows changes only that user's
  scaled rows.

``indptr`` is CSR-like: user ``u`` owns rows ``indptr[u]:indptr[u + 1]``.
The number of users ``n`` and the cap ``m = max_items`` are public under the
replace-one-user relation; the per-user row counts are not, and no public
quantity (noise scale, threshold, normalisation) is derived from them.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..._fast._users import group_sums

__all__ = ["UserData", "UserIndex", "group_gradient_sums", "group_gradient_sums_reference", "index_users",
           "make_user_data"]


@dataclass(frozen=True)
class UserIndex:
    """The rows grouped by user: one stable sort of the identifiers.

    Attributes
    ----------
    order : ndarray of shape (n_rows,) or None
        Row indices sorted by user, a user's rows in input order; ``None`` when
        the rows already are (the identity).
    counts : ndarray of shape (n_users,)
        Rows per user, users in increasing identifier order.
    """

    order: np.ndarray
    counts: np.ndarray

    @property
    def n_users(self):
        return int(self.counts.size)

    def reduce_per_user(self, values, ufunc=np.maximum):
        """``(n_users,)``: ``ufunc`` (``np.maximum`` or ``np.minimum``) over each user's values, users in
        increasing identifier order (exact in any order; :func:`~sklearn_dpsco._scale_estimation.per_user_reduce`
        is this on a fresh index)."""
        values = np.asarray(values, dtype=float)
        grouped = values if self.order is None else values[self.order]
        starts = np.concatenate(([0], np.cumsum(self.counts)[:-1])).astype(np.intp)
        return ufunc.reduceat(grouped, starts) if starts.size else np.zeros(0)


def index_users(groups):
    """Group rows by user id with one stable sort (none when ``groups`` is already non-decreasing).

    The users are the distinct values of ``groups`` (as ``np.unique`` counts
    them: equal values, one user), in increasing order.
    """
    groups = np.asarray(groups).ravel()
    n = groups.size
    if n == 0:
        return UserIndex(None, np.zeros(0, dtype=np.intp))
    try:
        presorted = bool(np.all(groups[1:] >= groups[:-1]))
    except TypeError:  # identifiers comparable for sorting only
        presorted = False
    order = None
    if not presorted:
        order = np.argsort(groups, kind="stable")  # rows of a user stay in input order
        groups = groups[order]
    starts = np.flatnonzero(groups[1:] != groups[:-1]) + 1
    counts = np.diff(np.concatenate(([0], starts, [n]))).astype(np.intp)
    return UserIndex(order, counts)


@dataclass
class UserData:
    """Rows sorted by user (dense C-contiguous or CSR), labels in {-1, +1}, user pointer.

    Attributes
    ----------
    X : ndarray or csr_matrix of shape (n_rows, n_coef)
        Scaled rows, intercept column included; every row norm is <= ``data_norm``.
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1} (one binary problem).
    indptr : ndarray of shape (n_users + 1,)
    max_items : int
        The public per-user cap m.
    data_norm : float
        The public row-norm bound R.
    source_rows : ndarray of shape (n_rows,)
        Index of each kept row in the caller's input (to select other label vectors).
    """

    X: object
    y: np.ndarray
    indptr: np.ndarray
    max_items: int
    data_norm: float
    source_rows: np.ndarray = None

    @property
    def n_users(self):
        return self.indptr.size - 1

    @property
    def n_features(self):
        """Number of coefficients (intercept column included)."""
        return self.X.shape[1]

    @property
    def sparse(self):
        return sp.issparse(self.X)

    def with_labels(self, y):
        """The same rows and users with another label vector (one-vs-rest problems share rows)."""
        return UserData(self.X, np.ascontiguousarray(y, dtype=float), self.indptr, self.max_items, self.data_norm,
                        self.source_rows)

    def rows_of(self, users):
        """Row indices of ``users`` (sorted user indices), in user order."""
        users = np.asarray(users, dtype=np.intp)
        starts, stops = self.indptr[users], self.indptr[users + 1]
        lengths = stops - starts
        if users.size == 0:
            return np.zeros(0, dtype=np.intp)
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        return np.arange(lengths.sum(), dtype=np.intp) + offsets

    def subset(self, users):
        """``(X, y, indptr)`` restricted to ``users`` (a copy of their rows; all users: no copy)."""
        users = np.asarray(users, dtype=np.intp)
        if users.size == self.n_users and np.array_equal(users, np.arange(self.n_users)):
            return self.X, self.y, self.indptr
        rows = self.rows_of(users)
        lengths = self.indptr[users + 1] - self.indptr[users]
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.intp)
        return self.X[rows], self.y[rows], indptr


def group_gradient_sums(X, coef_rows, indptr):
    """Per-user sums ``sum_{r in u} a_r x_r`` for a per-row scalar ``a`` (rows sorted by user).

    Compiled (``_fast/_users.pyx``): each user's rows are summed in order, so the
    computed sum errs by at most ``gamma_m sum_r |a_r| ||x_r||``, the bound the
    certificates and sensitivities use; :func:`group_gradient_sums_reference`
    is the NumPy version (equal up to the order of the additions).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_rows, p)
    coef_rows : ndarray of shape (n_rows,)
    indptr : ndarray of shape (n_users + 1,)
        Every user owns at least one row.

    Returns
    -------
    ndarray of shape (n_users, p)
    """
    return group_sums(X, coef_rows, indptr)


def group_gradient_sums_reference(X, coef_rows, indptr):
    """NumPy version of :func:`group_gradient_sums` (tests compare the two)."""
    if sp.issparse(X):
        n_users = indptr.size - 1
        owner = np.repeat(np.arange(n_users), np.diff(indptr))
        agg = sp.csr_matrix((coef_rows, (owner, np.arange(X.shape[0]))), shape=(n_users, X.shape[0]))
        return np.asarray((agg @ X).toarray())
    return np.add.reduceat(X * coef_rows[:, None], indptr[:-1], axis=0)


def make_user_data(X, y, groups, *, max_items, data_norm, intercept_scaling=0.0, item_selection="first",
                   random_state=None, users=None):
    """Group, cap, augment and scale rows (see the module docstring).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_rows, n_features)
        Validated, finite.
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1}.
    groups : ndarray of shape (n_rows,)
        User identifiers (any sortable values).
    max_items : int
        Public cap m on rows per user.
    data_norm : float
        Public row-norm bound R (intercept column included).
    intercept_scaling : float, default=0.0
        Value of the appended intercept column; 0 means no intercept.
    item_selection : {"first", "random"}, default="first"
        Which rows a user keeps when it has more than ``max_items``.
    random_state : int or None
        Seed for ``"random"`` selection (drawn up front by the caller, independent of the data).
    users : UserIndex, optional
        :func:`index_users` of ``groups``, if the caller already has it.

    Returns
    -------
    UserData
    """
    n_rows = X.shape[0]
    users = index_users(groups) if users is None else users
    counts = users.counts
    order = np.arange(n_rows) if users.order is None else users.order
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    if item_selection == "first":
        if counts.size == 0 or counts.max() <= max_items:
            keep = order  # every row is kept
        else:
            rank = np.arange(n_rows) - np.repeat(starts, counts)
            keep = order[rank < max_items]
    elif item_selection == "random":
        rng = np.random.default_rng(random_state)
        user_of_row = np.empty(n_rows, dtype=np.intp)
        user_of_row[order] = np.repeat(np.arange(counts.size), counts)
        # a random priority per row, independent of the data: a user keeps its
        # max_items rows of lowest priority, a uniformly random subset.
        by_priority = np.lexsort((rng.random(n_rows), user_of_row))
        rank = np.arange(n_rows) - np.repeat(starts, counts)
        selected = np.zeros(n_rows, dtype=bool)
        selected[by_priority[rank < max_items]] = True
        keep = order[selected[order]]  # kept rows back in input order within each user
    else:
        raise ValueError(f"item_selection must be 'first' or 'random', got {item_selection!r}.")
    kept_counts = np.minimum(counts, max_items)
    indptr = np.concatenate(([0], np.cumsum(kept_counts))).astype(np.intp)
    # every row kept and already in user order: copy X as it is instead of gathering it
    rows = slice(None) if users.order is None and keep.size == n_rows else keep

    if sp.issparse(X):
        Xk = X[rows]
        if intercept_scaling > 0:
            col = np.full((Xk.shape[0], 1), float(intercept_scaling))
            Xk = sp.hstack([Xk, sp.csr_matrix(col)], format="csr")
    elif intercept_scaling > 0:  # kept rows and the intercept column written once into one array
        Xk = np.empty((keep.size, X.shape[1] + 1), dtype=np.float64)
        Xk[:, :-1] = X[rows]
        Xk[:, -1] = float(intercept_scaling)
    else:
        Xk = np.array(X[rows], dtype=np.float64, order="C")  # a fresh array: scaled in place below
    if sp.issparse(Xk):
        Xk = sp.csr_matrix(Xk, dtype=np.float64)
        norms = np.sqrt(np.asarray(Xk.multiply(Xk).sum(axis=1)).ravel())
    else:
        Xk = np.ascontiguousarray(Xk, dtype=np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", Xk, Xk))
    # why: a fixed per-row map makes every row norm <= R, so each item's
    # logistic gradient is R-bounded and R^2/4-smooth (doc/privacy/user_level.rst).
    with np.errstate(divide="ignore"):
        factor = np.where(norms > data_norm, (data_norm / norms) * (1.0 - 4e-16), 1.0)
    if sp.issparse(Xk):
        Xk = sp.csr_matrix(sp.diags(factor) @ Xk)
    elif np.any(factor != 1.0):
        Xk *= factor[:, None]  # Xk is a fresh array here: scaled in place
    return UserData(Xk, np.ascontiguousarray(y[keep], dtype=float), indptr, int(max_items), float(data_norm), keep)
