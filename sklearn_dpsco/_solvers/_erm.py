"""The certified ERM façade every output-perturbation step goes through.

``solve_certified`` returns a point together with a *deterministic* bound on
its distance to the exact regularized minimizer (duality-gap certificate),
and raises :class:`CertificationError` — before anything is released or
spent — when the bound does not reach the caller's public target within the
iteration budget. Callers add twice the target to the exact-minimizer
sensitivity (doc/privacy/output_perturbation.rst); they never look at the
achieved bound when choosing noise.
"""

from ._reference_erm import ERMResult, reference_certified_erm

__all__ = ["CertificationError", "ERMResult", "solve_certified"]


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
    res = reference_certified_erm(
        data, loss, lam, w0, clip=clip, start=start, stop=stop, target_distance=target_distance, ball=ball
    )
    if not res.certified:
        # The message carries public quantities only: the achieved bound depends on the data.
        raise CertificationError(
            f"the ERM solver could not certify a distance of {target_distance:.3g} to the exact minimizer "
            "within its iteration budget; no point was released and no budget spent. Increase the "
            "regularisation or the solver's iteration budget."
        )
    return res
