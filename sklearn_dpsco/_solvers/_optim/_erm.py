"""The certified ERM façade every output-perturbation step goes through.

``solve_certified`` returns a point together with a *deterministic* bound on
its distance to the exact regularized minimizer (duality-gap certificate of
the compiled SDCA solver, ``sklearn_dpsco._fast._erm``), and raises
:class:`CertificationError` — before anything is released or spent — when
the bound does not reach the caller's public target within the public
iteration budget. Callers add twice the target to the exact-minimizer
sensitivity (doc/privacy/output_perturbation.rst); they never look at the
achieved bound when choosing noise.
"""

import numpy as np
import scipy.sparse as sp

from ..._fast._erm import certified_erm
from ..._fast._objective import Objective
from ..._fast._losses import Absolute, Hinge, Logistic, Power, Squared
from ..._fast._rows import RowData, targets_within_norms, targets_within_widths
from .._core._data import GLMData, safe_row_norms
from ._interior import interior_dual_start
from ._reference_erm import reference_certified_erm
from ._warm_start import dual_start
from ._working_set import KINKED_LOSSES, certified_kinked_erm

__all__ = ["CertificationError", "MAX_EPOCHS", "solve_certified"]

#: Public work budget of the certified solver, in passes over the rows.
MAX_EPOCHS = 2000
#: Losses whose solves start from a Newton guess (``_warm_start.dual_start``); hinge and absolute
#: start from a working-set solution (``_working_set``); the others start from zero.
WARM_LOSSES = ("squared",)


class CertificationError(RuntimeError):
    """The solver could not certify the requested accuracy; nothing was released or spent."""


def _compiled_loss(loss):
    """The Cython loss matching a reference loss object, or None (test-only losses)."""
    name = loss.name
    if name == "hinge":
        return Hinge()
    if name == "logistic":
        return Logistic()
    if name == "squared":
        return Squared()
    if name == "absolute":
        return Absolute()
    if name.startswith("power"):
        return Power(loss.p)
    return None


def _rows(data):
    rows = getattr(data, "_row_data", None)
    if rows is None:
        # a block whose map's pass summed its rows' squares (GLMData._raw_sq): the same floats, no second pass
        raw_sq = getattr(data, "_raw_sq", None)
        rows = RowData(data.X, intercept_scaling=data.intercept_scaling, raw_sq_norms=raw_sq)
        data._row_data = rows
    return rows


#: Rows are conditioned to norms in [2^-256, 2^256] before the certified solve (see
#: :func:`condition_rows`): squared norms, curvatures ``||x||^2 / (lam n)`` and the
#: certificate's terms then stay far from float64 overflow and underflow.
ROW_NORM_CAP = 2.0**256
ROW_NORM_FLOOR = 2.0**-256
#: Target clipping: the half-width's cap on the saturation residual and its margin, in units
#: of ``(1 + clip / lam) ||x_i||`` (see :func:`condition_rows`).
TARGET_SLACK = 2.0**10


#: Relative margin of :func:`targets_inside_norms` (the compiled norms and the einsum's norms of the same
#: rows agree within a relative (d + 2) 2^-53, far inside it for any d below 2^20).
NORM_MARGIN = 1.0 - 2.0**-30


def targets_inside_norms(data, loss, slope):
    """True when, for every row, ``|y_i| <= slope ||x_i||`` holds for the norms ``data.row_norms()`` would
    give, proven from the compiled rows' own norms (``_rows(data)``, built here and kept for the solve) with
    the margin :data:`NORM_MARGIN`, and every norm lies within ``[ROW_NORM_FLOOR, ROW_NORM_CAP]`` with the
    same margin. False when that is not proven (the caller then computes ``data.row_norms()``).

    Speed only: the einsum norms (one more pass over the block) are needed exactly when a target may be
    clipped, and the absolute loss's clipping width is ``slope ||x_i||`` itself (its saturation is 0). Dense
    rows of the absolute loss whose norms are not computed yet; any other case returns False.
    """
    # an in-memory GLMData only (a RowScaledData would materialise its rows on any other attribute)
    if not isinstance(data, GLMData) or getattr(loss, "name", None) != "absolute" or data.sparse \
            or data._norms is not None:
        return False
    if not (np.isfinite(slope) and slope > 0):
        return False
    try:
        rows = _rows(data)
    except ValueError:  # a non-finite entry: the caller's own path decides
        return False
    return targets_within_norms(rows, data.y, slope * NORM_MARGIN, 2.0 * ROW_NORM_FLOOR, 0.5 * ROW_NORM_CAP)


def _ball_point(w0, ball):
    """``Pi_B(w0)`` (``w0`` itself without a ball) and the size of its coordinates, for rounding slack."""
    w0 = np.asarray(w0, dtype=float)
    if ball is None:
        return w0, float(np.linalg.norm(w0))
    c, R = np.asarray(ball[0], dtype=float), float(ball[1])
    gap = float(np.linalg.norm(w0 - c))
    p0 = w0 if gap <= R else c + (R / gap) * (w0 - c)
    return p0, float(np.linalg.norm(p0)) + float(np.linalg.norm(c)) + R


def condition_rows(data, loss, lam, w0, *, clip, start=0, stop=None, ball=None):
    """The rows the certified solver works on: a per-row map that keeps every float finite.

    Each row ``(x_i, y_i)`` is mapped on its own, by a rule that reads only that
    row and public quantities (``lam``, ``clip``, ``w0``, ``ball``), so every
    term of the objective stays ``clip``-Lipschitz and the replace-one
    argument of the caller applies unchanged (doc/privacy/output_perturbation.rst,
    "Extreme rows"):

    1. a row of norm above ``ROW_NORM_CAP`` has its stored features — and, for a
       regression loss, its target — multiplied by an exact power of two that
       brings the features' norm below the cap (the virtual intercept column
       is not scaled);
    2. a row of norm below ``ROW_NORM_FLOOR`` has its stored features set to 0
       (and its target to 0 for a regression loss): its loss is then constant;
    3. for a regression loss (of the residual ``<x, w> - y``), the target is
       clipped to ``z0_i +- W_i``, ``z0_i = <x_i, p0>`` with ``p0 = Pi_B(w0)``
       and ``W_i = (1 + 2^-20) min(sat(k_i), T_i) + T_i + 2^-20 ||x_i|| A``,
       ``T_i = TARGET_SLACK (1 + clip/lam) ||x_i||``, ``k_i = clip/||x_i||``,
       ``sat`` the residual beyond which the extension is linear and ``A``
       bounds the coordinates of ``p0`` (rounding slack).

    Step 3 cannot move the minimizer when ``sat(k_i) <= T_i`` (every row but
    those of norm below ~``sqrt(clip / (TARGET_SLACK (1 + clip/lam)))`` for the
    squared loss): ``lam (w* - w0)`` is minus an average of gradients of norm
    <= clip (plus a normal cone of the ball), so ``||w* - p0|| <= clip/lam``
    and ``|<x_i, w*> - z0_i| <= (clip/lam) ||x_i||``; a target beyond
    ``sat(k_i) + (clip/lam) ||x_i||`` from ``z0_i`` keeps the residual at
    ``w*`` in the linear part of the extension, with the same slope, so the
    gradient at ``w*`` is unchanged. Then every term of the certificate is at
    most ``~2 TARGET_SLACK clip (1 + clip/lam)`` plus the centre's own
    ``clip ||p0||``: a bound by public quantities, whatever the targets.

    Returns ``(data, start, stop)``: the original arguments when no row
    changes (the common case: ordinary data are solved bit for bit as before),
    else a conditioned copy of the block with ``start=0, stop=None``.
    """
    stop = data.n_samples if stop is None else stop
    if (ball is None and start == 0 and stop == data.n_samples and not np.any(w0)
            and targets_inside_norms(data, loss, TARGET_SLACK * (1.0 + clip / lam))):
        # a centred block of the absolute loss: no row is extreme and every target lies within its width
        # t_i = TARGET_SLACK (1 + clip / lam) ||x_i|| (its saturation is 0 and p0 = 0), proven without the
        # einsum norms: the check below would return the same arguments
        return data, start, stop
    norms = data.row_norms()[start:stop]
    huge, tiny = norms > ROW_NORM_CAP, norms < ROW_NORM_FLOOR
    regression = not loss.classification and hasattr(loss, "saturation")
    extreme = bool(huge.any() or tiny.any())
    if not (extreme or regression):
        return data, start, stop
    if regression and not extreme and not np.any(_ball_point(w0, ball)[0]):
        # a centred solve (p0 = 0, z0 = 0): the clip below leaves every target as it is exactly when each
        # lies within its width, checked in one compiled pass with the same floats (else the NumPy path)
        with np.errstate(divide="ignore", over="ignore"):
            sat = np.ascontiguousarray(loss.saturation((clip / norms) * (1.0 + 2.0**-30)), dtype=float)
        if targets_within_widths(data.y[start:stop], norms, sat, TARGET_SLACK * (1.0 + clip / lam),
                                 _ball_point(w0, ball)[1]):
            return data, start, stop
    s = data.intercept_scaling
    X, y = data.X[start:stop], np.array(data.y[start:stop], dtype=float)
    scale = np.ones(stop - start)
    if huge.any() or tiny.any():
        raw = safe_row_norms(X[np.flatnonzero(huge)])
        # an exact power of two c with c * raw < ROW_NORM_CAP (frexp: raw < 2^e)
        scale[huge] = np.ldexp(1.0, np.log2(ROW_NORM_CAP).astype(int) - np.frexp(raw)[1])
        scale[tiny] = 0.0
        X = sp.csr_matrix(sp.diags(scale) @ X) if sp.issparse(X) else X * scale[:, None]
        if regression:
            y = y * scale
        norms = safe_row_norms(X, s)
    if regression:
        rho = clip / lam
        p0, size = _ball_point(w0, ball)
        # a centred solve's p0 is 0: its products are zeros, read no rows for them
        z0 = GLMData(X, y, None, s).matvec(p0) if np.any(p0) else np.zeros(y.shape[0])
        with np.errstate(divide="ignore", over="ignore"):
            k = clip / norms
            sat = np.asarray(loss.saturation(k * (1.0 + 2.0**-30)), dtype=float)
        t = TARGET_SLACK * (1.0 + rho) * norms
        # why: exact when sat <= t (the docstring's argument); else a per-row map (privacy unchanged)
        width = (1.0 + 2.0**-20) * np.minimum(sat, t) + t + 2.0**-20 * norms * size
        y_new = np.clip(y, z0 - width, z0 + width)
        if not (huge.any() or tiny.any()) and np.array_equal(y_new, y):
            return data, start, stop
        y = y_new
    sw = None if data.sample_weight is None else data.sample_weight[start:stop]
    return GLMData(X, y, sw, s), 0, None


def _interior_restart(data, loss, lam, w0, clip, target_distance, start, stop, ball, res):
    """The certified ascent (a fresh budget of :data:`MAX_EPOCHS` passes) from the dual point of an interior-point
    solve (``_interior.interior_dual_start``); ``res`` itself when that solve gives no point.

    The interior-point solve ignores a ball: when the minimizer lies inside it (the localization phases' domain
    of radius ``20 / clip``, far outside the solutions) its dual point is the constrained problem's as well;
    when the ball binds it is a start like any other.
    """
    rows = _rows(data)
    stop = data.n_samples if stop is None else stop
    cap = np.minimum(Objective(rows, data.y, loss, lam, w0, clip, data.sample_weight, start, stop).k_values(), 1.0)
    beta = interior_dual_start(data, loss.is_classification, lam, w0, cap, target_distance, start, stop)
    if beta is None:
        return res
    return certified_erm(
        rows, data.y, loss, lam, w0, clip=clip, sample_weight=data.sample_weight, start=start, stop=stop,
        target_distance=target_distance, max_epochs=MAX_EPOCHS, dual_start=beta,
        ball_center=None if ball is None else ball[0], ball_radius=None if ball is None else ball[1],
    )


def solve_certified(data, loss, lam, w0, *, clip, target_distance, start=0, stop=None, ball=None):
    """Regularized extended-GLM minimizer certified within ``target_distance``.

    Parameters
    ----------
    data : GLMData
    loss : loss object (``_glm_reference.get_loss``)
    lam : float
        Strong-convexity of the regulariser ``lam/2 ||w - w0||^2``.
    w0 : ndarray
        Regularisation centre (public or an earlier private output).
    clip : float
        Lipschitz level C of the loss extension (public).
    target_distance : float
        Public accuracy target: the returned point is within this distance of
        the exact minimizer, deterministically.
    start, stop : int
        Block of rows.
    ball : (center, radius), optional
        Public constraint set.

    Returns
    -------
    result
        With attributes ``w`` and ``distance_bound`` (<= ``target_distance``).
    """
    # a per-row map that keeps every float finite and every certificate term bounded (condition_rows)
    data, start, stop = condition_rows(data, loss, lam, w0, clip=clip, start=start, stop=stop, ball=ball)
    compiled = _compiled_loss(loss)
    if compiled is None:
        res = reference_certified_erm(
            data, loss, lam, w0, clip=clip, start=start, stop=stop, target_distance=target_distance, ball=ball
        )
    else:
        center, radius = (None, None) if ball is None else ball
        if loss.name in KINKED_LOSSES:
            # speed only: the ascent starts at a working-set solution; the certificate is the same
            # duality gap whatever the start (doc/privacy/output_perturbation.rst, "Warm starts")
            res = certified_kinked_erm(
                data, _rows(data), compiled, lam, w0, clip=clip, start=start, stop=stop,
                target_distance=target_distance, max_epochs=MAX_EPOCHS, ball_center=center, ball_radius=radius,
            )
        else:
            # speed only: the ascent starts at the dual point of a BLAS Newton solve; the certificate
            # below is the same duality gap whatever the start (doc/privacy/output_perturbation.rst)
            beta0 = dual_start(data, loss.name, lam, w0, clip, target_distance, start, stop) \
                if loss.name in WARM_LOSSES else None
            res = certified_erm(
                _rows(data), data.y, compiled, lam, w0, clip=clip, sample_weight=data.sample_weight, start=start,
                stop=stop, target_distance=target_distance, max_epochs=MAX_EPOCHS, ball_center=center,
                ball_radius=radius, dual_start=beta0,
            )
    if not res.certified and compiled is not None and loss.name in KINKED_LOSSES:
        # speed only: the ascent ran out of passes (thousands of rows within a hair of their kink on rows with
        # directions of tiny spread); an interior-point solve of the dual box QP starts it again, and the
        # certificate is the same duality gap (_interior.py; doc/privacy/output_perturbation.rst, "Warm starts")
        res = _interior_restart(data, compiled, lam, w0, clip, target_distance, start, stop, ball, res)
    if not res.certified:
        # The message carries public quantities only: the achieved bound depends on the data.
        raise CertificationError(
            f"the ERM solver could not certify a distance of {target_distance:.3g} to the exact minimizer "
            f"within its budget of {MAX_EPOCHS} passes; no point was released and no budget spent. "
            "Increase the regularisation (or the tolerance) of this solver, or rescale the targets."
        )
    return res
