"""Certified output perturbation of regularized ERM (doc/privacy/output_perturbation.rst).

``w_priv = w~ + b`` where ``w~`` minimizes, to a certified accuracy,

    P(w) = (1/n) sum_i s_i psi_i(<x_i, w>) + (lam/2) ||w - w0||^2,

``psi_i`` the C-Lipschitz extension of the loss (weights ``s_i in [0, 1]``),
and ``b`` is l2-Laplace (pure) or Gaussian noise calibrated to

    sensitivity = 2 C / (lam n) + 2 tau,   tau = tolerance * 2 C / (lam n).

``2C/(lam n)`` is the replace-one sensitivity of the exact minimizer
(doc/algorithms.rst, P4; Chaudhuri, Monteleoni, Sarwate 2011); ``tau`` is the
*public* accuracy target the solver must certify deterministically, or
refuse (:class:`CertificationError`).
"""

import math
from dataclasses import dataclass

import numpy as np

from .._budget import Budget
from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._calibrate import certified_sensitivity, mechanism_event_for, mechanism_for
from .._param_checks import check_delta, check_epsilon, check_positive
from ._optim._erm import solve_certified, targets_inside_norms
from ._core._result import PrivateFit

__all__ = ["OutputPerturbationPlan", "centred_phase_data", "erm_sensitivity", "float_floor", "output_perturbation",
           "output_perturbation_plan", "run_output_perturbation", "winsorized_targets"]


# A declared (public) scale of the objective's terms: the float64 duality
# gap cannot certify distances below sqrt(2 (d + 16) 2^-50 S / lam) for terms
# of total size S (doc/privacy/output_perturbation.rst, "Float floor").
OBJECTIVE_SCALE = 1e6


def float_floor(lam, d, objective_scale=OBJECTIVE_SCALE):
    """Smallest certified distance requested of the solver: a public function of (lam, d).

    Twice the solver's rounding floor at the declared ``objective_scale``
    (default :data:`OBJECTIVE_SCALE`). It binds for very large ``lam`` (late
    localization phases); there the noise it adds can exceed the exact
    sensitivity, which is why centred regression phases declare a smaller
    scale (``centred`` in :func:`output_perturbation_plan`).
    """
    return 2.0 * math.sqrt(2.0 * (d + 16.0) * 2.0**-50 * objective_scale / lam)


def erm_sensitivity(clip, lam, n, tolerance, d=1, objective_scale=OBJECTIVE_SCALE):
    """Replace-one l2-sensitivity of a certified regularized minimizer, and the solver target.

    Returns ``(sensitivity, target_distance)``; the target is the larger of
    ``tolerance`` times the exact sensitivity and :func:`float_floor`.
    """
    # why: each of the n terms is clip-Lipschitz and the objective lam-strongly
    # convex, so exact minimizers on neighbours are within 2 clip / (lam n)
    # (doc/algorithms.rst, P4); the certified solver may be off by tau on each side.
    exact = 2.0 * clip / (lam * n)
    tau = max(tolerance * exact, float_floor(lam, d, objective_scale))
    return certified_sensitivity(exact, tau), tau


@dataclass(frozen=True)
class OutputPerturbationPlan:
    """Public plan of one release: rows, regularisation, solver target and mechanism."""

    start: int
    stop: int
    lam: float
    clip: float
    target_distance: float
    mechanism: object
    centred: bool = False

    @property
    def event(self):
        return self.mechanism.event

    @property
    def sensitivity(self):
        return self.mechanism.sensitivity


def output_perturbation_plan(n, d, *, lam, clip, epsilon, delta, start=0, tolerance=0.1, noise=DEFAULT_NOISE,
                             centred=False, objective_scale=OBJECTIVE_SCALE, events_only=False):
    """Plan a release on ``n`` rows from ``start`` in dimension ``d`` — public inputs only.

    ``centred=True`` (regression losses only) solves the block's problem in
    ``u = w - w0`` with targets ``y - <x, w0>`` and releases ``w0 + (u + noise)``:
    the same minimizer, but the objective's terms are sized by the residuals
    at the centre, so a small declared ``objective_scale`` (the certificate's
    float floor, :func:`float_floor`) is reachable on data whose targets are
    far from 0.

    ``events_only=True``: only the plan's ``event`` (the same checks and the same event, no mechanism built;
    a budget fill's candidates).
    """
    lam = check_positive(lam, "lam")
    clip = check_positive(clip, "clip")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if n < 1:
        raise ValueError("output perturbation needs at least one row.")
    objective_scale = check_positive(objective_scale, "objective_scale")
    sensitivity, tau = erm_sensitivity(clip, lam, n, tolerance, d, objective_scale)
    if events_only:
        return mechanism_event_for(sensitivity, Budget(epsilon, delta, noise), d)
    mechanism = mechanism_for(sensitivity, Budget(epsilon, delta, noise), d)
    return OutputPerturbationPlan(start, start + n, lam, clip, tau, mechanism, bool(centred))


def winsorized_targets(block, loss, clip, lam):
    """A centred block's targets clipped where clipping cannot move the minimizer.

    Row ``i``'s target is clipped to ``+-(saturation(k_i) + clip ||x_i|| / lam)``
    with ``k_i = clip / ||x_i||``. This bounds the size of the certificate's
    terms by the rows' own norms — targets of any size certify — and leaves
    the minimizer exactly where it was. Each clipped target is a function of
    its own row and public constants, so privacy is unaffected
    (doc/privacy/output_perturbation.rst, "Centring").
    """
    if targets_inside_norms(block, loss, clip / lam):
        # the absolute loss (saturation 0): every |target| is within clip ||x_i|| / lam, below its bound,
        # proven from the compiled rows' norms (kept for the solve): the clip below would return every
        # target as it is, so the einsum norms are not computed (speed only)
        return block.y
    norms = block.row_norms()
    with np.errstate(divide="ignore"):
        k = clip / norms
    # why: lam u* is a weighted mean of gradients of norm <= clip, so |<x_i, u*>| <= clip ||x_i|| / lam;
    # a target beyond saturation(k_i) + that keeps the residual at u* where the extension's derivative
    # is the constant +-k_i, so the gradient at u* — hence the minimizer — is unchanged.
    bound = (1.0 + 1e-6) * (loss.saturation(k) + clip * norms / lam)
    return np.clip(block.y, -bound, bound)


def centred_phase_data(data, loss, plan, w0):
    """The rows a centred ``plan`` solves on: targets ``y - <x, w0>``, winsorized by :func:`winsorized_targets`.

    Each new target is a function of its own row and the public ``w0``, ``plan.clip`` and ``plan.lam``.
    """
    if loss.classification:
        raise ValueError(f"a centred release needs a regression loss (of the residual); got {loss.name!r}.")
    block = data.centred_block(w0, plan.start, plan.stop)
    block.y = winsorized_targets(block, loss, plan.clip, plan.lam)
    return block


def run_output_perturbation(data, loss, plan, rng, *, w0=None, ball=None):
    """Solve the planned ERM to its certified target and release it with the planned mechanism."""
    w0 = np.zeros(data.n_features) if w0 is None else np.asarray(w0, dtype=float)
    if plan.centred:
        # the problem in u = w - w0; adding the public w0 to the released u is post-processing
        block = centred_phase_data(data, loss, plan, w0)
        shifted = None if ball is None else (np.asarray(ball[0], dtype=float) - w0, ball[1])
        res = solve_certified(
            block, loss, plan.lam, np.zeros_like(w0), clip=plan.clip, target_distance=plan.target_distance,
            ball=shifted,
        )
        return w0 + plan.mechanism.release(res.w, rng)
    res = solve_certified(
        data, loss, plan.lam, w0, clip=plan.clip, target_distance=plan.target_distance, start=plan.start,
        stop=plan.stop, ball=ball,
    )
    return plan.mechanism.release(res.w, rng)


def output_perturbation(
    data, loss, *, lam, clip, epsilon, delta, rng, w0=None, start=0, stop=None, ball=None, tolerance=0.1,
    noise=DEFAULT_NOISE,
):
    """One certified output-perturbation release on rows [start, stop).

    Parameters
    ----------
    data : GLMData
    loss : loss object
    lam : float
        Regularisation strength (public).
    clip : float
        Lipschitz level C of the loss extension (public).
    epsilon, delta : float
        Budget of this release; ``delta=0`` gives pure DP (l2-Laplace).
    rng : numpy.random.Generator
    w0 : ndarray, optional
        Regularisation centre (public or an earlier private output).
    ball : (center, radius), optional
        Public constraint set of the ERM.
    tolerance : float, default=0.1
        Certified solver accuracy as a fraction of the exact sensitivity.
    noise : {"secure", "float"}, default=DEFAULT_NOISE

    Returns
    -------
    PrivateFit
    """
    stop = data.n_samples if stop is None else stop
    plan = output_perturbation_plan(
        stop - start, data.n_features, lam=lam, clip=clip, epsilon=epsilon, delta=delta, start=start,
        tolerance=tolerance, noise=noise,
    )
    released = run_output_perturbation(data, loss, plan, rng, w0=w0, ball=ball)
    return PrivateFit(
        coef=released,
        event=plan.event,
        info={"sensitivity": plan.sensitivity, "target_distance": plan.target_distance, "n": stop - start, "lam": lam},
    )
