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

from .._fast._erm import certified_erm
from .._fast._losses import Absolute, Hinge, Logistic, Power, Squared
from .._fast._rows import RowData
from ._reference_erm import reference_certified_erm

__all__ = ["CertificationError", "MAX_EPOCHS", "solve_certified"]

#: Public work budget of the certified solver, in passes over the rows.
MAX_EPOCHS = 2000


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
        rows = RowData(data.X, intercept_scaling=data.intercept_scaling)
        data._row_data = rows
    return rows


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
    compiled = _compiled_loss(loss)
    if compiled is None:
        res = reference_certified_erm(
            data, loss, lam, w0, clip=clip, start=start, stop=stop, target_distance=target_distance, ball=ball
        )
    else:
        center, radius = (None, None) if ball is None else ball
        res = certified_erm(
            _rows(data), data.y, compiled, lam, w0, clip=clip, sample_weight=data.sample_weight, start=start,
            stop=stop, target_distance=target_distance, max_epochs=MAX_EPOCHS, ball_center=center,
            ball_radius=radius,
        )
    if not res.certified:
        # The message carries public quantities only: the achieved bound depends on the data.
        raise CertificationError(
            f"the ERM solver could not certify a distance of {target_distance:.3g} to the exact minimizer "
            f"within its budget of {MAX_EPOCHS} passes; no point was released and no budget spent. "
            "Increase the regularisation (or the tolerance) of this solver, or rescale the targets."
        )
    return res
