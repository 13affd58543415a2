"""Rows in the order a one-pass algorithm uses them, one bounded block at a time.

A :class:`RowSource` yields ``(X_block, y_block, weight_block)`` with X
dense C-contiguous float64 or CSR. Sources:

* :class:`ArraySource` — in-memory arrays (dense, CSR) or a ``numpy.memmap``;
  optionally in the order of a permutation drawn from public randomness.
  Blocks are copied out one at a time, so a memmap is never loaded whole.
* :class:`IterableSource` — any iterable of ``(X, y)`` or ``(X, y, w)``
  blocks; the number of rows must be declared (it is a public input of
  the schedule).
* :class:`DaskSource` — a dask array pair, computed one row-chunk at a time
  (its :meth:`~RowSource.fold_blocks` reduces each chunk on its worker, its
  :meth:`~DaskSource.run_one_pass` feeds a one-pass run each chunk there).

Every block is validated on arrival (shape, finiteness, weights); the
consumer checks that exactly the declared number of rows arrived. A
failure raises before anything is released, so nothing is spent.
"""

import numbers
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _get_feature_names

from ._cluster import DEFAULT_BLOCK_ROWS, chunk_tasks, feed_chain, fold_chunks

__all__ = ["ArraySource", "DaskSource", "IterableSource", "RowSource", "as_row_source", "is_dask_array",
           "with_known_chunks"]


def is_dask_array(a):
    return type(a).__module__.split(".")[0] == "dask" and hasattr(a, "chunks")


def _check_block(X, y, w, n_features, where):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        data = X.data
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        data = X
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"{where}: X block has shape {X.shape}, expected (rows, {n_features}). Nothing was spent.")
    y = np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1))
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            f"{where}: X block has {X.shape[0]} rows but y block has {y.shape[0]} values. Nothing was spent."
        )
    if not (np.all(np.isfinite(data)) and np.all(np.isfinite(y))):
        raise ValueError(f"{where}: input contains NaN or infinity. Nothing was spent.")
    if w is not None:
        w = np.ascontiguousarray(np.asarray(w, dtype=np.float64).reshape(-1))
        if w.shape[0] != X.shape[0] or not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w > 1):
            raise ValueError(f"{where}: sample weights must be finite, in [0, 1], one per row. Nothing was spent.")
    return X, y, w


class RowSource:
    """Base: ``n_samples``, ``n_features`` and :meth:`blocks`."""

    n_samples: int
    n_features: int

    def blocks(self):
        raise NotImplementedError

    def fold_blocks(self, fn, combine, init):
        """``combine(...combine(init, fn(*block_0))..., fn(*block_last))`` over :meth:`blocks`, in order."""
        acc = init
        for X, y, w in self.blocks():
            acc = combine(acc, fn(X, y, w))
        return acc


class ArraySource(RowSource):
    """Rows of in-memory (or memory-mapped) arrays, optionally permuted.

    Parameters
    ----------
    X : ndarray, numpy.memmap or CSR matrix of shape (n, p)
    y : array-like of shape (n,)
    sample_weight : array-like of shape (n,), optional
    order : ndarray of int, optional
        A permutation of ``range(n)`` drawn from public randomness.
    block_rows : int
    validate : bool, default=True
        Check every block (set False when the arrays were validated whole).
    """

    def __init__(self, X, y, sample_weight=None, *, order=None, block_rows=DEFAULT_BLOCK_ROWS, validate=True):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d, got shape {X.shape}. Nothing was spent.")
        if sp.issparse(X) and X.format not in ("csr", "csc"):
            X = X.tocsr()  # COO, DOK, BSR... have no row slices; fit() converts them the same way
        self.X, self.y, self.sample_weight = X, y, sample_weight
        self.n_samples, self.n_features = int(X.shape[0]), int(X.shape[1])
        if self.n_samples < 1 or self.n_features < 1:
            raise ValueError(f"Found array with shape {X.shape}: at least one row and one feature are needed. "
                             "Nothing was spent.")
        if len(y) != self.n_samples:
            raise ValueError(f"X has {self.n_samples} rows but y has {len(y)} values. Nothing was spent.")
        self.order = None if order is None else np.asarray(order, dtype=np.int64)
        self.block_rows = int(block_rows)
        self.validate = validate

    def blocks(self):
        for a in range(0, self.n_samples, self.block_rows):
            b = min(a + self.block_rows, self.n_samples)
            idx = slice(a, b) if self.order is None else self.order[a:b]
            Xb = self.X[idx]
            Xb = Xb if sp.issparse(Xb) else np.array(Xb, dtype=np.float64, order="C")
            yb = np.array(self.y[idx], dtype=np.float64)
            wb = None if self.sample_weight is None else np.array(self.sample_weight[idx], dtype=np.float64)
            if self.validate:
                Xb, yb, wb = _check_block(Xb, yb, wb, self.n_features, f"rows {a}-{b}")
            elif sp.issparse(Xb):
                Xb = sp.csr_matrix(Xb)
            yield Xb, yb, wb


class IterableSource(RowSource):
    """Blocks from an iterable of ``(X, y)`` or ``(X, y, sample_weight)``; ``n_samples`` declared."""

    def __init__(self, blocks, n_samples, n_features=None):
        if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
            raise ValueError(
                "n_samples must be declared (a positive integer) to fit from an iterator of blocks: "
                "the privacy schedule is computed from it before any row is read."
            )
        self._blocks = blocks
        self.n_samples = int(n_samples)
        self.n_features = n_features
        self._first = None
        #: the first block's column names (a DataFrame's, as scikit-learn records them), else None
        self.feature_names = None

    def peek_n_features(self):
        """Read the first block to learn the number of features (it is replayed by :meth:`blocks`)."""
        if self.n_features is None:
            self._iter = iter(self._blocks)
            try:
                self._first = next(self._iter)
            except StopIteration:
                raise ValueError("the iterator of blocks is empty.") from None
            X, _, _ = _block_parts(self._first, 0)
            if np.ndim(X) != 2:
                raise ValueError("block 0: expected a tuple (X, y) or (X, y, sample_weight) with a 2-d X block. "
                                 "Nothing was spent.")
            self.n_features = int(np.shape(X)[1])
            self.feature_names = _get_feature_names(X)
        return self.n_features

    def blocks(self):
        if self._first is not None:
            it, first = self._iter, [self._first]
            self._first = None
        else:
            it, first = iter(self._blocks), []
        seen = 0
        for k, block in enumerate(_chain(first, it)):
            parts = _block_parts(block, k)
            if k == 0 and self.feature_names is None:
                self.feature_names = _get_feature_names(parts[0])
            _check_block_names(parts[0], self.feature_names, k)
            checked = _check_block(*parts, self.n_features, f"block {k}")
            seen += checked[0].shape[0]
            if seen > self.n_samples:  # the declared count is public: every solver relies on it
                raise ValueError(f"block {k}: the stream holds more than the declared n_samples={self.n_samples} "
                                 "rows. Nothing was spent.")
            yield checked
        if seen != self.n_samples:
            raise ValueError(f"the stream held {seen} rows, not the declared n_samples={self.n_samples}. "
                             "Nothing was spent.")


def _check_block_names(X, first, k):
    """Refuse block ``k`` whose column names differ from the first block's (``first``): its columns would be
    read by position, so a block with its columns in another order would mix them. Blocks without names
    (arrays) are read by position, as ``fit`` reads an array."""
    names = _get_feature_names(X)
    if first is not None and names is not None and not np.array_equal(names, first):
        raise ValueError(f"block {k}: its columns {list(names)} are not the first block's {list(first)} (in the "
                         "same order); the blocks' columns are read by position. Nothing was spent.")


def _block_parts(block, k):
    """``(X, y, w)`` of stream block ``k``: a tuple ``(X, y)`` or ``(X, y, sample_weight)``."""
    if not isinstance(block, tuple) or len(block) not in (2, 3):
        raise ValueError(f"block {k}: expected a tuple (X, y) or (X, y, sample_weight). Nothing was spent.")
    return block[0], block[1], block[2] if len(block) == 3 else None


def _chain(first, it):
    yield from first
    yield from it


def with_known_chunks(a):
    """A dask array whose chunk sizes are known (``df.values`` leaves them unknown, NaN): ``a`` itself when they are,
    else a copy with them computed (one pass over the chunks' lengths; the caller's array is left as it was)."""
    if a is None or not any(np.isnan(size) for sizes in a.chunks for size in sizes):
        return a
    return a.copy().compute_chunk_sizes()


class DaskSource(RowSource):
    """Row-chunks of dask arrays, each computed when it is needed."""

    def __init__(self, X, y, sample_weight=None):
        X, y, sample_weight = with_known_chunks(X), with_known_chunks(y), with_known_chunks(sample_weight)
        if X.ndim != 2 or len(X.chunks[1]) != 1:
            X = X.rechunk({1: -1})
        self.X, self.y, self.sample_weight = X, y, sample_weight
        self.n_samples, self.n_features = int(X.shape[0]), int(X.shape[1])
        if int(y.shape[0]) != self.n_samples:
            raise ValueError(f"X has {self.n_samples} rows but y has {int(y.shape[0])} values.")

    def blocks(self):
        a = 0
        for k, rows in enumerate(self.X.chunks[0]):
            b = a + rows
            Xb = np.asarray(self.X.blocks[k, 0].compute())
            yb = np.asarray(self.y[a:b].compute() if hasattr(self.y, "compute") else self.y[a:b])
            wb = None
            if self.sample_weight is not None:
                sw = self.sample_weight[a:b]
                wb = np.asarray(sw.compute() if hasattr(sw, "compute") else sw)
            yield _check_block(Xb, yb, wb, self.n_features, f"dask chunk {k}")
            a = b

    def _aligned_arrays(self):
        """X, y and the weights as dask arrays with X's row-chunks (an in-memory y is chunked alike)."""
        import dask.array as da

        X = self.X.rechunk({1: -1})
        arrays = [X]
        for a in (self.y, self.sample_weight):
            if a is None or is_dask_array(a):
                arrays.append(None if a is None else a.rechunk((X.chunks[0],)))
            else:
                arrays.append(da.from_array(np.asarray(a), chunks=(X.chunks[0],)))
        return arrays

    def fold_blocks(self, fn, combine, init):
        """The fold of :meth:`blocks` with each chunk checked and reduced on the worker holding it.

        The same chunks, checks and order as :meth:`blocks` on the client,
        so the same result; only the accumulator reaches the client.
        """
        return fold_chunks(partial(_checked_block_result, fn, self.n_features), combine, init,
                           self._aligned_arrays())

    def run_one_pass(self, make_run, rng):
        """``make_run(rng)`` fed every chunk of :meth:`blocks` in order, each checked and fed on its worker.

        The same blocks, checks, order and generator draws as feeding
        :meth:`blocks` on the client, so the same run; only the run (d-sized
        state and the generator) moves from chunk to chunk.
        """
        return feed_chain(make_run, rng, chunk_tasks(self._aligned_arrays()),
                          partial(_checked_feed, self.n_features))


def _checked_feed(n_features, run, X, y, w):
    run.feed(*_check_block(np.asarray(X), np.asarray(y), None if w is None else np.asarray(w), n_features,
                           "a dask chunk"))
    return run


def _checked_block_result(fn, n_features, X, y, w):
    return [fn(*_check_block(np.asarray(X), np.asarray(y), None if w is None else np.asarray(w), n_features,
                             "a dask chunk"))]


def as_row_source(X, y=None, sample_weight=None, *, n_samples=None, block_rows=DEFAULT_BLOCK_ROWS):
    """Wrap a memmap / array, a dask array pair, or an iterable of blocks."""
    if isinstance(block_rows, bool) or not isinstance(block_rows, numbers.Integral) or block_rows < 1:
        raise ValueError(f"block_rows must be a positive integer, got {block_rows!r}. Nothing was spent.")
    if is_dask_array(X):
        if y is None:
            raise ValueError("y is required with a dask array X.")
        if n_samples is not None and n_samples != X.shape[0]:
            raise ValueError(f"n_samples={n_samples} does not match X's {X.shape[0]} rows. Nothing was spent.")
        return DaskSource(X, y, sample_weight)
    if isinstance(X, np.ndarray) or sp.issparse(X):
        if y is None:
            raise ValueError("y is required with an array X.")
        if n_samples is not None and n_samples != X.shape[0]:
            raise ValueError(f"n_samples={n_samples} does not match X's {X.shape[0]} rows. Nothing was spent.")
        return ArraySource(X, np.asarray(y) if not isinstance(y, np.ndarray) else y, sample_weight,
                           block_rows=block_rows)
    if y is not None or sample_weight is not None:
        # a dask DataFrame stays on its cluster as a dask array; anything else can be read in memory
        as_array = ("a dask array (X.to_dask_array(lengths=True))" if hasattr(X, "to_dask_array")
                    else "an array (np.asarray(X))")
        raise ValueError(
            f"X is a {type(X).__name__}, read as an iterable of (X_block, y_block) blocks: pass y and sample "
            f"weights inside the blocks, or X as {as_array} with y alongside. Nothing was spent."
        )
    return IterableSource(X, n_samples)


class _Consecutive(RowSource):
    """The next ``n_samples`` rows of a shared block iterator (see :func:`split_rows`)."""

    def __init__(self, feed, n_samples, n_features):
        self._feed = feed
        self.n_samples = int(n_samples)
        self.n_features = n_features

    def blocks(self):
        left = self.n_samples
        while left > 0:
            X, y, w = self._feed.take(left)
            left -= X.shape[0]
            yield X, y, w


class _Feed:
    def __init__(self, source):
        self._it = source.blocks()
        self._carry = None

    def take(self, at_most):
        if self._carry is None:
            try:
                self._carry = next(self._it)
            except StopIteration:
                raise ValueError("the data ended before the planned number of rows. Nothing was spent.") from None
        X, y, w = self._carry
        k = min(at_most, X.shape[0])
        head = (X[:k], y[:k], None if w is None else w[:k])
        self._carry = None if k == X.shape[0] else (X[k:], y[k:], None if w is None else w[k:])
        return head

    def exhausted(self):
        if self._carry is not None:
            return False
        for X, y, w in self._it:
            if X.shape[0]:
                self._carry = (X, y, w)
                return False
        return True


def split_rows(source, lengths):
    """Consecutive row sources of the given lengths over ONE pass of ``source``.

    Use them in order. Returns ``(parts, done)``; call ``done()`` after the
    last part to check that no rows are left over.
    """
    feed = _Feed(source)
    parts = [_Consecutive(feed, m, source.n_features) for m in lengths]

    def done():
        if not feed.exhausted():
            raise ValueError("the data has more rows than planned. Nothing was spent.")

    return parts, done
