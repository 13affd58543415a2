"""The certified ERM façade every output-perturbation step goes through.

Losses with a compiled twin run the Cython SDCA solver
(:mod:`sklearn_dpsco._fast._erm`); others (the test-only linear loss) the
NumPy/SciPy reference. Both certify by the duality gap.

``solve_certified`` returns a point together with a *deterministic* bound on
its distance to the exact regularized minimizer (duality-gap certificate),
and raises :class:`CertificationError` — before anything is released or
spent — when the bound does not reach the caller's public target within the
iteration budget. Callers add twice the target to the exact-minimizer
sensitivity (doc/privacy/output_perturbation.rst); they never look at the
achieved bound when choosing noise.
"""

import numpy as np

from .._fast import _losses as _fast_losses
from .._fast._erm import certified_erm as _compiled_certified_erm
from ._reference_erm import ERMResult, reference_certified_erm

__all__ = ["CertificationError", "ERMResult", "solve_certified"]

#: Work budget of the compiled solver, in passes over the rows (public, data-independent).
MAX_EPOCHS = 1000

_COMPILED = {
    "hinge": _fast_losses.Hinge,
    "logistic": _fast_losses.Logistic,
    "squared": _fast_losses.Squared,
    "absolute": _fast_losses.Absolute,
}


def _compiled_loss(loss):
    """The compiled twin of a reference loss (None: no twin, e.g. the test-only linear loss)."""
    if isinstance(loss, _fast_losses.Loss):
        return loss
    if getattr(loss, "name", "").startswith("power("):
        return _fast_losses.Power(loss.p)
    make = _COMPILED.get(getattr(loss, "name", None))
    return None if make is None else make()


class CertificationError(RuntimeError):
    """The solver could not certify the requested accuracy; nothing was released or spent."""


def solve_certified(data, loss, lam, w0, *, clip, target_distance, start=0, stop=None, ball=None):
    """Regularized extended-GLM minimizer certified within ``target_distance``.

    Parameters
    ----------
    data : GLMData
    loss : loss object
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
    ERMResult
    """
    compiled = _compiled_loss(loss)
    if compiled is None:
        res = reference_certified_erm(
            data, loss, lam, w0, clip=clip, start=start, stop=stop, target_distance=target_distance, ball=ball
        )
    else:
        center, radius = (None, None) if ball is None else (np.asarray(ball[0], dtype=float), float(ball[1]))
        res = _compiled_certified_erm(
            data.row_data(), data.y, compiled, lam, np.asarray(w0, dtype=float), clip=clip,
            sample_weight=data.sample_weight, start=start, stop=stop, target_distance=target_distance,
            max_epochs=MAX_EPOCHS, ball_center=center, ball_radius=radius,
        )
    if not res.certified:
        # The message carries public quantities only: the achieved bound depends on the data.
        raise CertificationError(
            f"the ERM solver could not certify a distance of {target_distance:.3g} to the exact minimizer "
            "within its iteration budget; no point was released and no budget spent. Increase the "
            "regularisation or the solver's iteration budget."
        )
    return res
