"""Rows held by a Dask cluster, and the ordered map-reduce primitives the solvers call on them.

A fit on dask input never brings the rows to the client: the data-touching
work runs on the worker that holds each row-chunk and only d-sized or
d x d-sized results travel back (doc/large_data.rst, "Dask").

* :func:`map_chunks` — a function of each row-chunk, results in chunk order
  (validation flags, histogram counts over a public grid);
* :class:`ClusterRows` — the rows of one problem on the cluster;
  :meth:`ClusterRows.fold_blocks` folds per-block results in block order in
  a chain of small tasks on the workers (sufficient statistics);
  :meth:`ClusterRows.on_one_worker` runs an in-memory solver on ONE worker
  (the rows move between workers, never through the client);
  :meth:`ClusterRows.run_one_pass` feeds a one-pass solver's run the blocks
  of each chunk on the worker holding it, in a chain of tasks that passes
  only the run (d-sized state and the generator) from chunk to chunk.

Determinism: the rows are re-chunked so every chunk boundary is a multiple
of ``block_rows``, the block size the in-memory path reads
(``ArraySource``). Each block is then the same contiguous float64 array as
in memory, its result is computed by the same code, and the fold adds the
results in the same order: the statistic is bit-for-bit the in-memory one,
whatever the chunking or number of workers (tests/integration/test_dask.py).
Integer counts add exactly in any order. A one-pass run sees the same
blocks in the same order, and draws its noise from the same generator in the
same order, so it releases the in-memory result bit for bit; a fit's public
permutation of the rows is drawn and applied on the workers.
"""

from functools import partial

import numpy as np

from ._data import GLMData

#: Rows per block of the in-memory one-pass reads (``ArraySource``; a few MB of float64 at d ~ 100).
#: Cluster chunks are aligned to its multiples so the blocks, hence the folded floats, are the same.
DEFAULT_BLOCK_ROWS = 8192

__all__ = [
    "ClusterRows", "aligned_chunks", "chunk_tasks", "feed_chain", "fold_chunks", "is_dask_collection", "map_chunks",
]


def is_dask_collection(obj):
    """True for a dask array, DataFrame or Series (checked without importing dask)."""
    return type(obj).__module__.split(".")[0] == "dask" and (hasattr(obj, "chunks") or hasattr(obj, "npartitions"))


def aligned_chunks(chunks, block_rows):
    """Row-chunk sizes covering the same rows with every boundary a multiple of ``block_rows``.

    Each inner boundary is rounded to the nearest multiple (so chunks keep
    about their size); empty chunks are dropped; the last chunk ends at n.
    """
    n = int(sum(chunks))
    bounds = np.cumsum(chunks)[:-1]
    inner = sorted({int(round(b / block_rows)) * block_rows for b in bounds} - {0})
    inner = [b for b in inner if 0 < b < n]
    edges = [0, *inner, n]
    sizes = tuple(b - a for a, b in zip(edges[:-1], edges[1:]) if b > a)
    return sizes or (n,)


def _dask():
    try:
        import dask
    except ImportError as exc:  # pragma: no cover - dask inputs imply dask
        raise ImportError("fitting on dask collections needs dask: pip install 'sklearn_dpsco[dask]'.") from exc
    return dask


def _aligned(arrays, block_rows):
    """The dask arrays (X 2-d, then 1-d ones, or None) re-chunked to the same block-aligned row chunks."""
    X = arrays[0]
    rows = aligned_chunks(X.chunks[0], block_rows)
    out = [X.rechunk((rows, X.shape[1])) if X.chunks != (rows, (X.shape[1],)) else X]
    for a in arrays[1:]:
        out.append(None if a is None else (a.rechunk((rows,)) if a.chunks != (rows,) else a))
    return out, rows


def _chunk_delayed(arrays, block_rows):
    """Per chunk, the tuple of delayed chunks of every array (None stays None)."""
    arrays, rows = _aligned(arrays, block_rows)
    parts = []
    for a in arrays:
        if a is None:
            parts.append([None] * len(rows))
        else:
            parts.append(list(a.to_delayed().ravel()))
    return list(zip(*parts)), rows


def _call(fn, *chunks):
    return fn(*chunks)


def map_chunks(fn, arrays, *, block_rows=DEFAULT_BLOCK_ROWS):
    """``[fn(*chunk_k) for each row-chunk k]``, computed on the workers, in chunk order.

    Parameters
    ----------
    fn : callable
        Takes one NumPy chunk of each array of ``arrays`` (None for a None
        entry); its result is what travels to the client, so keep it small.
    arrays : sequence
        A 2-d dask array of rows first, then 1-d dask arrays or None.
    block_rows : int
        Chunk boundaries are aligned to multiples of it.
    """
    dask = _dask()
    chunks, _ = _chunk_delayed(arrays, block_rows)
    tasks = [dask.delayed(_call)(fn, *chunk) for chunk in chunks]
    return list(dask.compute(*tasks))


def _blocks(block_rows, X, y, w):
    """The ``block_rows`` blocks of one chunk, in order, each its own C-contiguous float64 copy
    (as ``ArraySource`` makes them)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    w = None if w is None else np.ascontiguousarray(w, dtype=np.float64)
    for a in range(0, X.shape[0], block_rows):
        b = min(a + block_rows, X.shape[0])
        yield np.array(X[a:b], order="C"), np.array(y[a:b]), None if w is None else np.array(w[a:b])


def _block_results(fn, block_rows, X, y, w):
    """``fn`` of each ``block_rows`` block of one chunk, in order (runs on the chunk's worker)."""
    return [fn(*block) for block in _blocks(block_rows, X, y, w)]


def fold_chunks(fn, combine, init, arrays, *, block_rows=None):
    """Fold the results of ``fn(*chunk_k)`` (a list per chunk) in chunk order, on the workers.

    ``fn`` runs on the worker holding each chunk (in parallel); the fold is
    a chain of small tasks, one per chunk, so ``combine`` sees the results
    in order and only the final accumulator reaches the client. With
    ``block_rows`` the chunks are first aligned to its multiples.
    """
    dask = _dask()
    if block_rows is None:
        chunks = chunk_tasks(arrays)
    else:
        chunks, _ = _chunk_delayed(arrays, block_rows)
    acc = init
    for chunk in chunks:
        parts = dask.delayed(_call)(fn, *chunk)
        acc = dask.delayed(_fold)(combine, acc, parts)
    return dask.compute(acc)[0]


def _fold(combine, acc, results):
    for r in results:
        acc = combine(acc, r)
    return acc


def _start_run(make_run, rng):
    return make_run(rng)


def _feed_blocks(block_rows, run, X, y, w):
    """Feed one chunk's blocks to the run, in order (runs on the chunk's worker); return the run."""
    for block in _blocks(block_rows, X, y, w):
        run.feed(*block)
    return run


def _adopt_state(rng, drawn):
    """Move ``rng`` to the state of ``drawn``, its copy advanced on the workers."""
    if hasattr(rng, "bit_generator"):
        rng.bit_generator.state = drawn.bit_generator.state
    else:
        rng.set_state(drawn.get_state())


def feed_chain(make_run, rng, chunks, feed_chunk, *, drawn=None):
    """``make_run(rng)``, fed every chunk in order by ``feed_chunk(run, *chunk)`` on the chunk's worker.

    A chain of tasks, one per chunk: each takes the previous task's run
    (d-sized state and the generator) and the chunk, so it runs where the
    chunk is and only the run moves. The run starts from a copy of ``rng``,
    or from ``drawn``, a delayed generator already advanced on a worker.
    Returns the final run; ``rng`` is moved to the state of the run's
    generator, so later draws on the client continue the sequence as in
    memory.
    """
    dask = _dask()
    run = dask.delayed(_start_run)(make_run, rng if drawn is None else drawn)
    for chunk in chunks:
        run = dask.delayed(feed_chunk)(run, *chunk)
    run = dask.compute(run)[0]
    _adopt_state(rng, run.rng)
    return run


def chunk_tasks(arrays):
    """Per row-chunk, the tuple of delayed chunks of every array (None stays None), as they are chunked."""
    return list(zip(*[[None] * len(arrays[0].chunks[0]) if a is None else list(a.to_delayed().ravel())
                      for a in arrays]))


def _draw_order(rng, n):
    """The public permutation of the in-memory fit, drawn on a worker from a copy of the generator."""
    return rng.permutation(n), rng


def _order_slice(drawn, a, b):
    return drawn[0][a:b]


def _rows_from_chunk(order, start, stop, X, y, w):
    """The rows of this chunk (global rows ``start..stop``) that ``order`` selects, in ``order``'s order."""
    local = order[(order >= start) & (order < stop)] - start
    return X[local], y[local], None if w is None else w[local]


def _assemble(order, bounds, *pieces):
    """The permuted chunk: row ``k`` is global row ``order[k]``, taken from its chunk's piece."""
    k = len(order)
    X = np.empty((k, pieces[0][0].shape[1]))
    y = np.empty(k)
    w = None if pieces[0][2] is None else np.empty(k)
    for (start, stop), (Xp, yp, wp) in zip(bounds, pieces):
        at = np.flatnonzero((order >= start) & (order < stop))
        X[at], y[at] = Xp, yp
        if w is not None:
            w[at] = wp
    return X, y, w


def _gather_and_run(fn, intercept_scaling, *chunks):
    """Concatenate the chunks on this worker into a :class:`GLMData` and run ``fn`` on it."""
    k = len(chunks) // 3
    X = np.concatenate([np.asarray(c, dtype=np.float64) for c in chunks[:k]], axis=0)
    y = np.concatenate([np.asarray(c, dtype=np.float64) for c in chunks[k:2 * k]])
    ws = chunks[2 * k:]
    w = None if ws[0] is None else np.concatenate([np.asarray(c, dtype=np.float64) for c in ws])
    return fn(GLMData(X, y, w, intercept_scaling))


class ClusterRows:
    """The rows of one private problem, held by a Dask cluster in row-chunks.

    Parameters
    ----------
    X : dask array of shape (n, p)
        Validated rows (float64 chunks, finite).
    y : dask array of shape (n,)
        The problem's float64 targets.
    sample_weight : dask array of shape (n,) or None
    intercept_scaling : float, default=0.0
        Value of the virtual intercept column (as :class:`GLMData`).
    block_rows : int, default=DEFAULT_BLOCK_ROWS
        The block size of the in-memory path; chunk boundaries are aligned to it.

    Attributes
    ----------
    n_samples : int
    n_features : int
        Coefficients, the intercept's virtual column included (as :class:`GLMData`).
    """

    def __init__(self, X, y, sample_weight=None, intercept_scaling=0.0, *, block_rows=DEFAULT_BLOCK_ROWS):
        self.X, self.y, self.sample_weight = X, y, sample_weight
        self.intercept_scaling = float(intercept_scaling)
        self.block_rows = int(block_rows)
        self.n_samples = int(X.shape[0])
        self.n_features = int(X.shape[1]) + (1 if self.intercept_scaling > 0 else 0)

    @property
    def n_chunks(self):
        return len(aligned_chunks(self.X.chunks[0], self.block_rows))

    def fold_blocks(self, fn, combine, init):
        """``combine(...combine(combine(init, fn(block_0)), fn(block_1))..., fn(block_last))``.

        ``fn(X_block, y_block, w_block)`` runs on the worker holding the
        block's chunk (one task per chunk, in parallel); the fold over the
        chunks' result lists is a chain of small tasks in chunk order, so
        the additions happen in the in-memory order and only the final
        accumulator reaches the client.
        """
        return fold_chunks(partial(_block_results, fn, self.block_rows), combine, init,
                           (self.X, self.y, self.sample_weight), block_rows=self.block_rows)

    def run_one_pass(self, make_run, rng, *, permute):
        """A one-pass solver's run fed every block, each on the worker holding it; return the run.

        ``make_run(rng)`` builds the run on a worker; it needs ``feed(X, y,
        w)`` and a picklable state holding ``rng``. With ``permute`` the rows
        are read in the order of ``rng.permutation(n)``, as the in-memory fit
        reads them: the permutation is drawn on a worker, each permuted chunk
        is assembled there from the pieces of every chunk (rows move between
        workers, never through the client), and the run continues with the
        generator after the draw. The blocks, their order and the noise draws
        are the in-memory ones: the same release.
        """
        dask = _dask()
        chunks, rows = _chunk_delayed((self.X, self.y, self.sample_weight), self.block_rows)
        if permute:
            drawn = dask.delayed(_draw_order)(rng, self.n_samples)
            edges = np.concatenate([[0], np.cumsum(rows)]).tolist()
            bounds = list(zip(edges[:-1], edges[1:]))
            permuted = []
            for a, b in bounds:
                order = dask.delayed(_order_slice)(drawn, a, b)
                pieces = [dask.delayed(_rows_from_chunk)(order, start, stop, *chunk)
                          for (start, stop), chunk in zip(bounds, chunks)]
                permuted.append(dask.delayed(_assemble, nout=3)(order, bounds, *pieces))
            chunks = [tuple(p) for p in permuted]
            return feed_chain(make_run, rng, chunks, partial(_feed_blocks, self.block_rows), drawn=drawn[1])
        return feed_chain(make_run, rng, chunks, partial(_feed_blocks, self.block_rows))

    def on_one_worker(self, fn):
        """``fn(GLMData)`` on one worker holding all the rows; only its result reaches the client.

        For solvers whose iterations are sequential over the rows (certified
        ERM, noisy SGD in a permuted order): running the unchanged in-memory
        solver there gives the in-memory release bit for bit. The rows move
        between workers, so that worker needs memory for them.
        """
        dask = _dask()
        chunks, _ = _chunk_delayed((self.X, self.y, self.sample_weight), self.block_rows)
        Xs, ys, ws = (list(c) for c in zip(*chunks))
        task = dask.delayed(_gather_and_run)(fn, self.intercept_scaling, *Xs, *ys, *ws)
        return dask.compute(task)[0]
