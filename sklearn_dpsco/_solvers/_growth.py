"""ALD-1 / ALD-2 schedules with the paper's or practical utility constants.

Both variants are the lead's :func:`ald_schedule` / :func:`ald_growth_schedule`
(doc/privacy/localization.rst) — the same phases of certified output
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
    benchmarks/results/growth.md). The float64 floor is set at ``1e-6`` of
    the domain radius (steps below it could not be certified reliably).
"""

import math

from .._mechanisms import DEFAULT_NOISE
from .._param_checks import check_positive
from ._localization import _dimension_term, ald_growth_schedule, ald_schedule

__all__ = ["SCHEDULES", "growth_epochs_schedule", "localization_schedule", "practical_step"]

SCHEDULES = ("practical", "paper")

#: Relative float64 floor of the practical schedules: phases whose movement
#: ``L eta`` is below this fraction of the domain radius are not scheduled
#: (the lead's floor is 1e-9; the reference certified solver is not reliable
#: below ~1e-7 on non-smooth losses).
PRACTICAL_RESOLUTION = 1e-6

# The lead's schedules drop phases below 1e-9 * scale; scale = radius * this
# factor moves the floor to PRACTICAL_RESOLUTION * radius.
_SCALE_FACTOR = PRACTICAL_RESOLUTION / 1e-9

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
                          tolerance=0.1, noise=DEFAULT_NOISE):
    """ALD Algorithm 1 (non-adaptive) on ``n`` rows from ``start``."""
    _check_schedule(schedule)
    beta = 1.0 / (n + d) if beta is None else beta
    if schedule == "paper":
        return ald_schedule(n, d, clip=clip, radius=radius, epsilon=epsilon, delta=delta, start=start, beta=beta,
                            scale=scale, tolerance=tolerance, noise=noise)
    radius = check_positive(radius, "radius")
    clip = check_positive(clip, "clip")
    scale = radius if scale is None else scale
    # the paper's phase structure (k = ceil(log n) blocks, steps 16^-i eta), with the first phase
    # at the practical ALD-2's first epoch step, so the two solvers start alike
    eta0 = 0.5 * practical_step(radius, clip, d, epsilon, delta, beta)
    return ald_schedule(n, d, clip=clip, radius=radius, epsilon=epsilon, delta=delta, start=start, beta=beta,
                        scale=scale * _SCALE_FACTOR, tolerance=tolerance, noise=noise, step=16.0 * eta0)


def growth_epochs_schedule(n, d, *, clip, radius, kappa_lower, epsilon, delta, start=0, beta=None, scale=None,
                           schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE):
    """ALD Algorithm 2 on ``n`` rows from ``start`` with the chosen constants.

    Returns the lead's :class:`PhaseSchedule` (``info``: ``epochs``,
    ``epoch_size``, ``radii``, ``steps``, and ``epochs_uncapped`` when the
    float floor binds).
    """
    _check_schedule(schedule)
    beta = 1.0 / (n + d) if beta is None else beta
    if schedule == "paper":
        return ald_growth_schedule(n, d, clip=clip, radius=radius, kappa_lower=kappa_lower, epsilon=epsilon,
                                   delta=delta, start=start, beta=beta, scale=scale, tolerance=tolerance, noise=noise)
    radius = check_positive(radius, "radius")
    clip = check_positive(clip, "clip")
    scale = radius if scale is None else scale
    # eta_0 = (D_0 / 2L) eps / (dim log(1/beta)) with D_0 = 2 radius: ALD-2's eta_0 without the sqrt branch
    eta0 = 0.5 * practical_step(radius, clip, d, epsilon, delta, beta)
    return ald_growth_schedule(
        n, d, clip=clip, radius=radius, kappa_lower=kappa_lower, epsilon=epsilon, delta=delta, start=start, beta=beta,
        scale=scale * _SCALE_FACTOR, tolerance=tolerance, noise=noise, step=_FIRST_PHASE_DECAY * eta0,
        decay=_FIRST_PHASE_DECAY, phases=1, max_epochs=n,  # one phase per epoch: at least one row each
    )
