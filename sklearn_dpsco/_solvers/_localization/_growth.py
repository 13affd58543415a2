"""ALD-1 / ALD-2 schedules with the paper's or practical utility constants.

Both variants are :func:`ald_schedule` / :func:`ald_growth_schedule` of
:mod:`._phases` (doc/privacy/localization.rst) — the same phases of certified output
perturbation on disjoint blocks, the same privacy argument. They differ only
in public, utility-only constants (doc/privacy/growth.rst):

``"paper"``
    ALD Props 1-2 / Alg 2 as printed: ``eta = (D/L) min(1/sqrt(n log(1/beta)),
    eps/(dim log(1/beta)))`` (ALD-2: ``n_0 log n_0`` under the root),
    ``k = ceil(log n_0)`` inner phases with steps ``2^-4i eta``.
``"practical"``
    the privacy branch of the step only, ``eta = (D/L) eps / (dim log(1/beta))``
    (the ``1/sqrt(n)`` branch balances a worst-case stability bound and, with
    the ``2^-4`` first-phase factor and the split into ``k`` blocks, leaves
    the first phase unable to move the iterate across the domain for any
    ``n`` below ~1e7 at d = 10); ALD-2 runs ONE phase per epoch at step
    ``2^-i eta_0`` (the epochs' halving already shrinks the noise
    geometrically; more inner blocks only delay localization — measured in
    benchmarks/results/growth_rates.md). The float64 floor is set at ``1e-6`` of
    the domain radius, ``1e-7`` for centred phases.

Regression phases can be *centred* (``centred=True``): each phase solves for
``w - w_prev`` against the residuals at its public centre, so the certificate's
float floor (:func:`~.._output_perturbation.float_floor`) may be declared at
:data:`CENTRED_OBJECTIVE_SCALE` instead of the generic ``1e6``. At the generic
scale the floor, not the step, set the noise of every epoch past about the
sixth, and the rates flattened (benchmarks/results/growth_rates.md).
"""

import math

from ..._mechanisms import DEFAULT_NOISE
from ..._param_checks import check_positive
from ._phases import _dimension_term, ald_growth_schedule, ald_schedule
from .._output_perturbation import OBJECTIVE_SCALE

__all__ = ["CENTRED_OBJECTIVE_SCALE", "SCHEDULES", "growth_epochs_schedule", "localization_schedule",
           "practical_step"]

SCHEDULES = ("practical", "paper")

#: Relative float64 floor of the practical schedules: phases whose movement
#: ``L eta`` is below this fraction of the domain radius are not scheduled
#: (at the generic certificate scale 1e6 the float floor, not the step, sets
#: the noise well before this depth).
PRACTICAL_RESOLUTION = 1e-6

#: The same for centred phases. At :data:`CENTRED_OBJECTIVE_SCALE` the
#: certificate's floor stays below the step noise to well past this depth;
#: the cap is set by rows instead: each further epoch takes rows from the
#: others. Measured at d = 10, epsilon = 1 (benchmarks/bench_growth.py
#: instances): 1e-7 (17-18 epochs) beats 1e-8 (21) at n <= 4k on every
#: instance with the same slopes; 1e-6 (14) flattens the rates at n >= 16k.
CENTRED_RESOLUTION = 1e-7

#: Declared size of a centred regression phase's objective terms (public): the
#: certificate's float floor is ``2 sqrt(2 (d + 16) 2^-50 S / lam)`` at this S.
#: Centred terms are sized by the residuals at the phase's centre, so only data
#: whose mean centred term exceeds about 4 S (residuals of order 100 at a late
#: centre) can fail to certify — and then the fit refuses before spending.
CENTRED_OBJECTIVE_SCALE = 1e2


def _scale_factor(centred):
    """The schedules of :mod:`._phases` drop phases below ``1e-9 * scale``; ``scale = radius * factor`` moves that floor."""
    return (CENTRED_RESOLUTION if centred else PRACTICAL_RESOLUTION) / 1e-9

# The practical ALD-2 epoch is one ALD-1 phase; ald_schedule gives phase 1 the
# step eta / decay, so the epoch step eta_i is passed as decay * eta_i.
_FIRST_PHASE_DECAY = 2.0


def _check_schedule(schedule):
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}.")
    return schedule


def practical_step(radius, clip, d, epsilon, delta, beta):
    """``(D / L) eps / (dim log(1/beta))`` with ``D = 2 radius`` (ALD's privacy branch)."""
    return (2.0 * radius / clip) * epsilon / (_dimension_term(d, delta) * math.log(1.0 / beta))


def localization_schedule(n, d, *, clip, radius, epsilon, delta, start=0, beta=None, scale=None, schedule="practical",
                          tolerance=0.1, noise=DEFAULT_NOISE, centred=False, objective_scale=OBJECTIVE_SCALE):
    """ALD Algorithm 1 (non-adaptive) on ``n`` rows from ``start``."""
    _check_schedule(schedule)
    beta = 1.0 / (n + d) if beta is None else beta
    cert = {"centred": centred, "objective_scale": objective_scale}
    if schedule == "paper":
        return ald_schedule(n, d, clip=clip, radius=radius, epsilon=epsilon, delta=delta, start=start, beta=beta,
                            scale=scale, tolerance=tolerance, noise=noise, **cert)
    radius = check_positive(radius, "radius")
    clip = check_positive(clip, "clip")
    scale = radius if scale is None else scale
    # the paper's phase structure (k = ceil(log n) blocks, steps 16^-i eta), with the first phase
    # at the practical ALD-2's first epoch step, so the two solvers start alike
    eta0 = 0.5 * practical_step(radius, clip, d, epsilon, delta, beta)
    return ald_schedule(n, d, clip=clip, radius=radius, epsilon=epsilon, delta=delta, start=start, beta=beta,
                        scale=scale * _scale_factor(centred), tolerance=tolerance, noise=noise, step=16.0 * eta0,
                        **cert)


def growth_epochs_schedule(n, d, *, clip, radius, kappa_lower, epsilon, delta, start=0, beta=None, scale=None,
                           schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE, centred=False,
                           objective_scale=OBJECTIVE_SCALE, events_only=False):
    """ALD Algorithm 2 on ``n`` rows from ``start`` with the chosen constants.

    Returns a :class:`PhaseSchedule` (``info``: ``epochs``,
    ``epoch_size``, ``radii``, ``steps``, and ``epochs_uncapped`` when the
    float floor binds); ``events_only=True``: its ``event`` alone (``ald_growth_schedule``).
    """
    _check_schedule(schedule)
    beta = 1.0 / (n + d) if beta is None else beta
    cert = {"centred": centred, "objective_scale": objective_scale, "events_only": events_only}
    if schedule == "paper":
        return ald_growth_schedule(n, d, clip=clip, radius=radius, kappa_lower=kappa_lower, epsilon=epsilon,
                                   delta=delta, start=start, beta=beta, scale=scale, tolerance=tolerance, noise=noise,
                                   **cert)
    radius = check_positive(radius, "radius")
    clip = check_positive(clip, "clip")
    scale = radius if scale is None else scale
    # eta_0 = (D_0 / 2L) eps / (dim log(1/beta)) with D_0 = 2 radius: ALD-2's eta_0 without the sqrt branch
    eta0 = 0.5 * practical_step(radius, clip, d, epsilon, delta, beta)
    return ald_growth_schedule(
        n, d, clip=clip, radius=radius, kappa_lower=kappa_lower, epsilon=epsilon, delta=delta, start=start, beta=beta,
        scale=scale * _scale_factor(centred), tolerance=tolerance, noise=noise, step=_FIRST_PHASE_DECAY * eta0,
        decay=_FIRST_PHASE_DECAY, phases=1, max_epochs=n,  # one phase per epoch: at least one row each
        **cert,
    )
