"""The data of a private GLM fit, seen by the building blocks.

``GLMData`` holds the validated rows (dense C-contiguous float64 or CSR), the
targets, optional sample weights in [0, 1] and the intercept handling: with
``intercept_scaling > 0`` every row has a virtual extra feature of that
constant value (it is penalised and counts in the row norm, as in
LIBLINEAR). Building blocks address disjoint blocks of rows by
``(start, stop)``; nothing here copies X.
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["DeferredRowScale", "GLMData", "RowScaledData", "row_norms_of"]


def safe_row_norms(X, intercept_scaling=0.0):
    """Euclidean row norms of a dense or CSR ``X`` with a virtual column ``intercept_scaling``, overflow-free.

    Same fast path and fallback as the compiled ``RowData`` (``_fast/_rows.pyx``).
    """
    s = float(intercept_scaling)
    with np.errstate(over="ignore", under="ignore"):
        if sp.issparse(X):
            sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", X, X)
            if sq.dtype == np.float64 and sq.ndim == 1:
                from ..._fast._rows import norms_from_squares

                # the same floats as below in one compiled pass; every row in range: done
                norms = np.empty_like(sq)
                if norms_from_squares(sq, s**2, norms) == 0:
                    return norms
        norms = np.sqrt(sq + s**2)
        bad = ~(np.isfinite(sq) & (sq + s**2 >= 2.0**-900))
        if np.any(bad):
            rows = X[np.flatnonzero(bad)]
            if sp.issparse(rows):
                m = np.asarray(abs(rows).max(axis=1).todense()).ravel()
                scale = np.where(m > 0, m, 1.0)
                scaled = sp.csr_matrix(sp.diags(1.0 / scale) @ rows)
                raw = m * np.sqrt(np.asarray(scaled.multiply(scaled).sum(axis=1)).ravel())
            else:
                m = np.max(np.abs(rows), axis=1) if rows.shape[1] else np.zeros(rows.shape[0])
                scale = np.where(m > 0, m, 1.0)
                raw = m * np.sqrt(np.einsum("ij,ij->i", rows / scale[:, None], rows / scale[:, None]))
            norms[bad] = np.hypot(raw, s)
    return norms


@dataclass
class GLMData:
    X: object
    y: np.ndarray
    sample_weight: object = None
    intercept_scaling: float = 0.0
    _norms: np.ndarray = field(default=None, init=False, repr=False)
    _rows: object = field(default=None, init=False, repr=False)
    #: the dense rows' sums of squares as ``RowData`` sums them (no intercept term), when the pass that wrote
    #: the rows computed them (``DeferredRowScale.rows(..., sq=True)``); None: RowData sums them itself
    _raw_sq: object = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if sp.issparse(self.X):
            self.X = sp.csr_matrix(self.X, dtype=np.float64)
        else:
            self.X = np.ascontiguousarray(self.X, dtype=np.float64)
        self.y = np.ascontiguousarray(self.y, dtype=np.float64)
        if self.sample_weight is not None:
            self.sample_weight = np.ascontiguousarray(self.sample_weight, dtype=np.float64)

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        """Number of coefficients, the intercept's virtual column included."""
        return self.X.shape[1] + (1 if self.intercept_scaling > 0 else 0)

    @property
    def sparse(self):
        return sp.issparse(self.X)

    def row_norms(self):
        """l2 norms of the rows, intercept column included (cached), without over/underflow.

        Rows whose sum of squares overflows (norm above ~1e154) or nears
        underflow get the hypot-style ``m * sqrt(sum (x_j / m)^2)``; every
        other row keeps the plain ``sqrt(sum x_j^2 + s^2)``.
        """
        if self._norms is None:
            self._norms = safe_row_norms(self.X, self.intercept_scaling)
        return self._norms

    def row_data(self):
        """The compiled row access (:class:`sklearn_dpsco._fast._rows.RowData`), built once."""
        if self._rows is None:
            from ..._fast._rows import RowData

            self._rows = RowData(self.X, self.intercept_scaling)
        return self._rows

    def _block(self, start, stop):
        stop = self.n_samples if stop is None else stop
        return self.X[start:stop], stop

    def matvec(self, w, start=0, stop=None):
        """``<x_i, w>`` for rows in [start, stop)."""
        Xb, stop = self._block(start, stop)
        z = Xb @ w[: self.X.shape[1]]
        if self.intercept_scaling > 0:
            z = z + self.intercept_scaling * w[-1]
        return np.asarray(z).ravel()

    def rmatvec(self, a, start=0, stop=None):
        """``sum_i a_i x_i`` over rows in [start, stop)."""
        Xb, stop = self._block(start, stop)
        g = np.asarray(Xb.T @ a).ravel()
        if self.intercept_scaling > 0:
            g = np.append(g, self.intercept_scaling * a.sum())
        return g

    def centred_block(self, center, start=0, stop=None):
        """Rows [start, stop) with targets ``y_i - <x_i, center>``: the regression problem in ``w - center``.

        For a loss of the residual ``<x_i, w> - y_i`` the block's objective in
        ``u = w - center`` is the original one in ``w`` (up to the rounding of
        the new targets). Each new target is a function of its own row and the
        public ``center`` only, so every per-row loss keeps its Lipschitz level
        and the replace-one argument of a building block applies unchanged
        (doc/privacy/output_perturbation.rst, "Centring").
        """
        whole = start == 0 and (stop is None or stop == self.n_samples)
        Xb, stop = self._block(start, stop)
        sw = None if self.sample_weight is None else self.sample_weight[start:stop]
        y = self.y[start:stop] - self.matvec(np.asarray(center, dtype=float), start, stop)
        out = GLMData(self.X if whole and not self.sparse else Xb, y, sw, self.intercept_scaling)
        if whole and out.X is self.X:
            out._raw_sq = self._raw_sq  # the same rows
        return out

    def weights(self, start=0, stop=None):
        stop = self.n_samples if stop is None else stop
        if self.sample_weight is None:
            return np.ones(stop - start)
        return self.sample_weight[start:stop]


@dataclass(frozen=True)
class DeferredRowScale:
    """Rows ``X * factor`` (dense C-contiguous float64 ``X``) not computed yet: :class:`RowScaledData` scales them.

    With a released column map (``centre``, ``inv_scale``: linear_model/_column_scaling.py) the rows are
    ``column_affine(X, centre, inv_scale) * factor``: the column map's two roundings per entry, then the
    row scale's product, as the eager arrays had them.
    """

    X: np.ndarray
    factor: float
    centre: object = None
    inv_scale: object = None
    #: per-column bound ``b`` of the mapped entries (``-b <= z <= b``; ``inf``: none), or None (no clip)
    clip: object = None

    def rows(self, start=0, stop=None, sq=False):
        """The mapped rows [start, stop) as a fresh array (the same floats as the eager map's rows).

        ``sq=True``: ``(rows, raw_sq)``, ``raw_sq`` the rows' sums of squares as ``RowData`` sums them (written
        in the map's pass, ``column_affine(sq_out=...)``), or None where the map has no compiled pass."""
        X = self.X[start:stop]
        if self.centre is None:
            return (X * self.factor, None) if sq else X * self.factor
        from ..._fast._rows import column_affine

        raw_sq = np.empty(X.shape[0]) if sq else None
        # the row scale's product in the same pass (column_affine's scale: the same products as out * factor)
        if self.clip is None:
            out = column_affine(X, self.centre, self.inv_scale, float(self.factor), None, raw_sq)
        else:
            # clip(z) * f == clip(z * f, b * f): rounding is monotone, so the eager map's clip-then-scale floats;
            # the clip in the same compiled pass, as np.clip(out, -bound, bound) clips (the same floats)
            bound = np.broadcast_to(np.asarray(self.clip * float(self.factor), dtype=np.float64), (X.shape[1],))
            out = column_affine(X, self.centre, self.inv_scale, float(self.factor), bound, raw_sq)
        return (out, raw_sq) if sq else out


def row_norms_of(X):
    """:func:`safe_row_norms` of ``X``, or the norms of the rows a :class:`DeferredRowScale` stands for.

    Mapped rows: one compiled pass over ``X`` sums the squares of the mapped entries without writing
    them (``_fast/_rows.pyx`` ``affine_row_sq_norms``: the entries' own roundings, the squares summed in
    another order than einsum's, so a norm may differ from the eager array's in its last bits); a row
    whose sum overflows or underflows takes :func:`safe_row_norms`'s scaled fallback on its mapped
    entries. A deterministic function of each row alone, as before.
    """
    if not isinstance(X, DeferredRowScale):
        return safe_row_norms(X)
    if X.centre is None:
        return safe_row_norms(X.rows())
    if X.clip is not None:  # clipped columns: the mapped rows block by block (no compiled clipped pass)
        step = 1 << 16
        return np.concatenate([safe_row_norms(X.rows(i, i + step)) for i in range(0, X.X.shape[0], step)]
                              or [np.zeros(0)])
    from ..._fast._rows import affine_row_sq_norms

    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        sq = affine_row_sq_norms(X.X, X.centre, X.inv_scale, float(X.factor))
        norms = np.sqrt(sq)
    bad = np.flatnonzero(~(np.isfinite(sq) & (sq >= 2.0**-900)))
    if bad.size:
        norms[bad] = safe_row_norms(DeferredRowScale(X.X[bad], X.factor, X.centre, X.inv_scale).rows())
    return norms


class RowScaledData:
    """``GLMData(X * factor, y, sample_weight, intercept_scaling)`` whose rows are scaled when they are read.

    A phase on rows [start, stop) (:meth:`centred_block`) scales only its own
    block, into a block-sized array: the same floats as the rows of the
    whole product (the map is elementwise), without writing a copy of every
    row first (at 2e6 x 20 the whole copy costs about as much again in fresh
    pages as in products). Any other use materialises the whole scaled
    ``GLMData`` once and reads it, so every value is the one the eager copy
    had. Speed only: the rows, targets and weights are those of the eager
    ``GLMData``.
    """

    def __init__(self, rows, y, sample_weight=None, intercept_scaling=0.0):
        self._rows = rows
        self._raw = rows.X
        self._args = (y, sample_weight, intercept_scaling)
        self._data = None

    def materialized(self):
        """The eager ``GLMData`` of the scaled rows (built once)."""
        if self._data is None:
            self._data = GLMData(self._rows.rows(), *self._args)
        return self._data

    def __getattr__(self, name):
        # everything but the block path reads the eager GLMData (private names included: its caches)
        if name.startswith("__") or name in ("_rows", "_raw", "_args", "_data"):
            raise AttributeError(name)
        return getattr(self.materialized(), name)

    @property
    def n_samples(self):
        return self._raw.shape[0]

    @property
    def n_features(self):
        return self._raw.shape[1] + (1 if self._args[2] > 0 else 0)

    def centred_block(self, center, start=0, stop=None):
        """:meth:`GLMData.centred_block` of the scaled rows, scaling rows [start, stop) only."""
        if self._data is not None:
            return self._data.centred_block(center, start, stop)
        stop = self.n_samples if stop is None else stop
        y, sample_weight, intercept_scaling = self._args
        sw = None if sample_weight is None else sample_weight[start:stop]
        rows, raw_sq = self._rows.rows(start, stop, sq=True)
        block = GLMData(rows, y[start:stop], sw, intercept_scaling)
        if raw_sq is not None and block.X is rows:
            block._raw_sq = raw_sq  # the map's pass summed them: RowData skips its own pass (the same floats)
        return block.centred_block(center)
