"""Dispatch of the noisy-SGD loop kernels: compiled when available, NumPy reference otherwise.

The compiled kernels (``sklearn_dpsco._fast._sgd``: ``pnsgd_chunk``,
``sgd_one_pass``) implement exactly :mod:`._sgd_reference` on whole batches
of a :class:`~sklearn_dpsco._fast._rows.RowData`. This module adapts them to
the chunked drivers:

* the per-row map of :mod:`.._core._sgd_settings` (rows scaled to the public bound R)
  is applied to each block before the kernel sees it (a copy of the block);
* a batch that straddles two blocks is carried over: its rows are kept
  (already scaled) and prepended to the next block, so the kernel only ever
  runs whole batches, every one of them at a single iterate — the same
  arithmetic as the reference, whatever the block size;
* stacks of independent runs (audits) and sample weights go to the
  reference (the compiled loop takes one iterate and no weights).

Tests compare both paths step for step (tests/solvers/test_pnsgd.py).
"""

import math

import numpy as np
import scipy.sparse as sp

from . import _sgd_reference as _ref

__all__ = ["HAVE_COMPILED_KERNELS", "pnsgd_chunk", "sgd_one_pass", "use_compiled"]

try:  # the compiled loops of ``_fast/_sgd.pyx``; without them the NumPy reference runs
    from ..._fast._losses import Squared as _Squared
    from ..._fast._rows import RowData as _RowData
    from ..._fast._sgd import pnsgd_chunk as _c_pnsgd_chunk
    from ..._fast._sgd import sgd_one_pass as _c_sgd_one_pass
except ImportError:  # pragma: no cover - exercised on builds without the kernels
    HAVE_COMPILED_KERNELS = False
else:
    HAVE_COMPILED_KERNELS = True
    _SQUARED = _Squared()

#: Switch for tests and benchmarks (``use_compiled(False)`` forces the reference). It lives
#: here because :func:`_compiled` reads it at run time; tests reach it as
#: ``sklearn_dpsco.testing.use_compiled_sgd_kernels``.
_ENABLED = [True]


def use_compiled(flag):
    """Enable or disable the compiled kernels (returns the previous setting)."""
    old = _ENABLED[0]
    _ENABLED[0] = bool(flag)
    return old


def _compiled(state_w, sample_weight):
    return HAVE_COMPILED_KERNELS and _ENABLED[0] and state_w.ndim == 1 and sample_weight is None


def _scaled_rows(X, settings):
    """Rows scaled to norm <= R (the per-row map of the loss); a new array / CSR matrix."""
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        sq = np.einsum("ij,ij->i", X, X)
    norms = np.sqrt(sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norms > settings.row_bound, settings.row_bound / norms, 1.0)
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(scale) @ X)
    return X * scale[:, None]


def _stack(a, b):
    if a is None:
        return b
    if sp.issparse(b) or sp.issparse(a):
        return sp.vstack([sp.csr_matrix(a), sp.csr_matrix(b)], format="csr")
    return np.vstack([a, b])


def _ball(center, radius, d):
    if math.isinf(radius):
        return None, None
    return (np.zeros(d) if center is None else np.ascontiguousarray(center, dtype=np.float64)), radius


def pnsgd_chunk(X, y, sample_weight, state, batch_sizes, steps, noise, settings):
    """Feed one chunk to PNSGD; same contract as :func:`._sgd_reference.pnsgd_chunk`."""
    if state.path is None:  # the first chunk decides, for the whole run
        state.path = "compiled" if _compiled(state.w, sample_weight) else "reference"
    if state.path == "reference":
        return _ref.pnsgd_chunk(X, y, sample_weight, state, batch_sizes, steps, noise, settings)
    if sample_weight is not None:
        raise ValueError("sample weights must be given for every block of a stream or for none.")
    carry = state.carry
    Xs = _stack(None if carry is None else carry[0], _scaled_rows(X, settings))
    ys = y if carry is None else np.concatenate([carry[1], y])
    k = len(noise)
    starts = np.concatenate([[0], np.cumsum(batch_sizes[:k])]).astype(np.intp)
    used = int(starts[-1])
    if used > Xs.shape[0]:
        raise AssertionError("the schedule window asks for more rows than the chunk holds")
    d = state.w.shape[0]
    if k:
        rows = _RowData(Xs[:used] if used < Xs.shape[0] else Xs, settings.intercept_scaling)
        center, radius = _ball(state.center, settings.radius, d)
        w = np.ascontiguousarray(state.w, dtype=np.float64).copy()
        _c_pnsgd_chunk(rows, np.ascontiguousarray(ys[:used]), _SQUARED, w, np.asarray(steps[:k], dtype=np.float64),
                       starts, np.ascontiguousarray(noise), 0, k, clip=settings.clip, ball_center=center,
                       ball_radius=radius)
        state.w = w
        state.step += k
    rest = Xs.shape[0] - used
    state.carry = (Xs[used:], ys[used:]) if rest else None
    state.filled = rest
    return k


def sgd_one_pass(X, y, sample_weight, state, step, settings):
    """One pass of projected SGD over the chunk; same contract as :func:`._sgd_reference.sgd_one_pass`."""
    if not _compiled(state.u, sample_weight) or X.shape[0] == 0:
        return _ref.sgd_one_pass(X, y, sample_weight, state, step, settings)
    d = state.u.shape[0]
    rows = _RowData(_scaled_rows(X, settings), settings.intercept_scaling)
    center, radius = _ball(state.center, settings.radius, d)
    last, avg = _c_sgd_one_pass(rows, np.ascontiguousarray(y, dtype=np.float64), _SQUARED,
                                np.ascontiguousarray(state.u, dtype=np.float64), step, clip=settings.clip,
                                ball_center=center, ball_radius=radius, average=True)
    m = X.shape[0]
    state.u = last
    state.u_sum = state.u_sum + avg * m
    state.count += m
    return state
