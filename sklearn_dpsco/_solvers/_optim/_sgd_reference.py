"""NumPy reference loops of the noisy-SGD kernels (one row at a time).

``pnsgd_chunk`` and ``sgd_one_pass`` are the loop kernels of PNSGD /
Snowball-SGD and of Phased-SGD's one-pass phases. These references are the
specification the compiled kernels are tested against, and the test
reference of "with noise off, a private solver equals its reference"
(doc/design.rst, convention 11). They are slow (a Python loop over rows) but exact.

Per-row loss and clipping: :mod:`.._core._sgd_settings`. A chunk is a block of
consecutive rows in the order the algorithm uses them: ``X`` dense
(C-contiguous float64) or CSR, ``y``, optional weights in [0, 1].

The iterate may carry a leading axis of independent runs (``w`` of shape
``(R, d)``, noise of shape ``(k, R, d)``): the statistical privacy audits
draw 1e5 releases of the real schedule at once this way.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["PNSGDState", "OnePassState", "pnsgd_chunk", "sgd_one_pass", "clipped_row"]


@dataclass
class PNSGDState:
    """Where a PNSGD run stands between chunks.

    ``w``: current iterate; ``grad_sum``: sum of the clipped gradients of the
    rows of the current (unfinished) batch, all taken at ``w``; ``step``:
    index (0-based) of the current batch; ``filled``: rows accumulated in it;
    ``offset``: global index of the first step of the schedule window passed
    to the kernel; ``center``: centre of the domain ball ``B(center,
    settings.radius)`` (None: the origin). ``carry`` and ``path`` are used by
    the compiled-kernel adapter (:mod:`._sgd_kernels`): the rows of an
    unfinished batch, and which loop the run uses.
    """

    w: np.ndarray
    grad_sum: np.ndarray
    step: int = 0
    filled: int = 0
    offset: int = 0
    center: object = None
    carry: object = None
    path: str = None

    @classmethod
    def start(cls, w0, center=None):
        w0 = np.array(w0, dtype=np.float64)
        return cls(w0, np.zeros_like(w0), center=center)


@dataclass
class OnePassState:
    """One-pass SGD state: iterate ``u``, running sum of iterates, count, domain centre."""

    u: np.ndarray
    u_sum: np.ndarray
    count: int = 0
    center: object = None

    @classmethod
    def start(cls, u0, center=None):
        u0 = np.array(u0, dtype=np.float64)
        return cls(u0, np.zeros_like(u0), center=center)

    @property
    def average(self):
        return self.u_sum / self.count


def _row(X, i):
    if sp.issparse(X):
        start, stop = X.indptr[i], X.indptr[i + 1]
        x = np.zeros(X.shape[1])
        x[X.indices[start:stop]] = X.data[start:stop]
        return x
    return np.asarray(X[i], dtype=np.float64)


def clipped_row(x, settings):
    """``x~ = (min(1, R / ||x||) x, s)``: the row scaled to the public bound, intercept appended."""
    norm = np.linalg.norm(x)
    scale = 1.0 if norm <= settings.row_bound else settings.row_bound / norm
    xc = scale * x
    if settings.intercept_scaling > 0:
        xc = np.append(xc, settings.intercept_scaling)
    return xc


def _clipped_gradient(w, x_tilde, y, weight, clip):
    """Gradient of the Huber extension: ``clip(r, -K, K) x~`` with ``K = C / ||x~||``."""
    norm = np.linalg.norm(x_tilde)
    if norm == 0.0:
        return np.zeros_like(w)
    k = clip / norm
    r = w @ x_tilde - y
    return (weight * np.clip(r, -k, k))[..., None] * x_tilde


def _project(v, radius, center=None):
    """Projection onto ``B(center, radius)`` (row-wise for a stack of runs; centre 0 if None)."""
    if np.isinf(radius):
        return v
    diff = v if center is None else v - center
    norm = np.linalg.norm(diff, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(norm > radius, radius / norm, 1.0)
    return diff * factor if center is None else center + diff * factor


def pnsgd_chunk(X, y, sample_weight, state, batch_sizes, steps, noise, settings):
    """Feed one chunk of rows to PNSGD (FKT Algorithm 1); update ``state`` in place.

    Parameters
    ----------
    X, y, sample_weight : the chunk (rows in the order of use).
    state : PNSGDState
    batch_sizes : ndarray of int
        Batch sizes of the schedule window starting at step ``state.offset``
        (it covers every step the chunk touches).
    steps : ndarray of float
        Step sizes of the same window.
    noise : ndarray of shape (k, d)
        Gaussian gradient noise (already scaled by sigma) for exactly the
        ``k`` steps this chunk completes, in order.
    settings : SGDSettings

    Returns
    -------
    completed : int
        Number of steps completed (must equal ``len(noise)``).
    """
    used = 0
    for i in range(X.shape[0]):
        x_tilde = clipped_row(_row(X, i), settings)
        weight = 1.0 if sample_weight is None else float(sample_weight[i])
        state.grad_sum += _clipped_gradient(state.w, x_tilde, float(y[i]), weight, settings.clip)
        state.filled += 1
        t = state.step - state.offset
        if state.filled == batch_sizes[t]:
            # v_t = w_{t-1} - eta_t (grad F_t(w_{t-1}) + xi_t); w_t = Pi_K(v_t)
            v = state.w - steps[t] * (state.grad_sum / batch_sizes[t] + noise[used])
            state.w = _project(v, settings.radius, state.center)
            state.grad_sum = np.zeros_like(state.w)
            state.filled = 0
            state.step += 1
            used += 1
    if used != len(noise):
        raise AssertionError(f"chunk completed {used} steps but {len(noise)} noise vectors were drawn")
    return used


def sgd_one_pass(X, y, sample_weight, state, step, settings):
    """One pass of projected SGD with batch size 1 and constant ``step``; update ``state``.

    ``u_t = Pi_K(u_{t-1} - step * grad f(u_{t-1}; x_t, y_t))``; the running
    sum of ``u_1..u_t`` is kept for the average iterate (FKT Section 4).
    """
    for i in range(X.shape[0]):
        x_tilde = clipped_row(_row(X, i), settings)
        weight = 1.0 if sample_weight is None else float(sample_weight[i])
        g = _clipped_gradient(state.u, x_tilde, float(y[i]), weight, settings.clip)
        state.u = _project(state.u - step * g, settings.radius, state.center)
        state.u_sum += state.u
        state.count += 1
    return state
