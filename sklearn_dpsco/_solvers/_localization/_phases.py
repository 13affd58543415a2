"""Localization: phases of certified output perturbation on disjoint blocks.

One engine, three public schedules (doc/privacy/localization.rst):

* :func:`ald_schedule` — Asi, Levy, Duchi 2021, Algorithm 1: k = ceil(log n)
  equal blocks, steps ``eta_i = 2^(-4i) eta``.
* :func:`phased_erm_schedule` — Feldman, Koren, Talwar 2020, Section 4
  (non-smooth Phased-ERM): blocks of ``floor(2^-i n)`` rows, ``eta_i = 4^(-i) eta``.
* :func:`ald_growth_schedule` — ALD Algorithm 2: T = ceil(2 log n /
  (kappa_lower - 1)) epochs of ALD-1 with radii ``D_i = 2^-i D_0`` and steps
  ``2^-i eta_0``.

Phase i minimizes ``block mean + (1 / (eta_i n_i)) ||w - w_{i-1}||^2``, i.e.
``lam_i = 2 / (eta_i n_i)`` in :func:`output_perturbation`'s convention, so
the exact minimizer has replace-one sensitivity ``2 L / (lam_i n_i) = L
eta_i``. Each phase is released with the FULL budget: the blocks are
disjoint, centres are earlier outputs and radii/steps public schedules, so
the whole run is (epsilon, delta)-DP by parallel composition. Noisy outputs
are projected onto the public domain (post-processing). The papers' ball
constraints around ``w_{i-1}`` are inactive for the exact minimizer (it lies
within ``L / lam_i = L eta_i n_i / 2`` of the centre), so the phases solve over
R^d; privacy (P4) holds over any convex set.

Schedules are computed from public inputs only (n, d, budget, bounds) —
before any data is touched — and carry the exact event the run consumes.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..._mechanisms import DEFAULT_NOISE
from ..._mechanisms._calibrate import rate_dimension_term as _dimension_term
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ParallelComposedEvent
from .._core._geometry import project_ball, project_two_balls
from .._output_perturbation import OBJECTIVE_SCALE, output_perturbation_plan, run_output_perturbation
from .._core._result import PrivateFit

__all__ = [
    "PhaseSchedule",
    "ald_growth_epochs",
    "ald_growth_schedule",
    "ald_localization",
    "ald_schedule",
    "ald_step",
    "phased_erm",
    "phased_erm_schedule",
    "run_growth_epochs",
    "run_phases",
]

# Phases whose step is below this fraction of the domain radius (over the
# Lipschitz level) move the iterate by less than float64 can certify; they are
# dropped from the public schedule (fewer releases on disjoint blocks: the
# parallel composition argument is unchanged).
_MIN_STEP_FRACTION = 1e-9


@dataclass(frozen=True)
class PhaseSchedule:
    """Public plan of a localization run: one output-perturbation plan per phase."""

    phases: tuple
    event: object
    info: dict


def _project(v, domain):
    if len(domain) == 1:
        return project_ball(v, *domain[0])
    (c1, r1), (c2, r2) = domain
    return project_two_balls(v, c1, r1, c2, r2)


def _check_common(clip, radius, epsilon, delta):
    return (
        check_positive(clip, "clip"),
        check_positive(radius, "radius"),
        check_epsilon(epsilon),
        check_delta(delta),
    )


def _make_schedule(blocks, d, *, clip, epsilon, delta, tolerance, noise, scale, info, centred=False,
                   objective_scale=OBJECTIVE_SCALE, events_only=False):
    """Output-perturbation plans for ``blocks`` = [(start, stop, eta)], dropping unresolvable ones.

    ``centred`` and ``objective_scale`` go to every phase's
    :func:`output_perturbation_plan` (centred regression phases). ``events_only=True``: the schedule's
    ``event`` alone (the same phases, checks and event; no mechanism built).
    """
    # A phase's certified target is never below the float floor at the declared objective_scale
    # (float_floor), so every kept phase asks for a gap float64 can prove; only the step decides.
    kept = [b for b in blocks if clip * b[2] >= _MIN_STEP_FRACTION * scale] or blocks[:1]
    phases = tuple(
        output_perturbation_plan(
            stop - start, d, lam=2.0 / (eta * (stop - start)), clip=clip, epsilon=epsilon, delta=delta,
            start=start, tolerance=tolerance, noise=noise, centred=centred, objective_scale=objective_scale,
            events_only=events_only,
        )
        for start, stop, eta in kept
    )
    if events_only:  # the phases are their events
        return ParallelComposedEvent(phases)
    info = dict(info, phases=len(phases), steps=[b[2] for b in kept])
    return PhaseSchedule(phases, ParallelComposedEvent(tuple(p.event for p in phases)), info)


def ald_step(radius, clip, n, d, epsilon, delta, beta):
    """ALD Prop 1 (delta = 0) / Prop 2 (delta > 0) base step size, with D = 2 radius."""
    log_b = math.log(1.0 / beta)
    return (2.0 * radius / clip) * min(1.0 / math.sqrt(n * log_b), epsilon / (_dimension_term(d, delta) * log_b))


def ald_schedule(n, d, *, clip, radius, epsilon, delta, start=0, step=None, beta=None, scale=None, tolerance=0.1,
                 noise=DEFAULT_NOISE, decay=16.0, phases=None, centred=False, objective_scale=OBJECTIVE_SCALE,
                 events_only=False):
    """ALD Algorithm 1 schedule on ``n`` rows from ``start`` (doc/algorithms.rst, ALD-1).

    ``step`` defaults to ALD Prop 1/2 with D = 2 radius; ``beta`` (utility
    failure probability) to ``1 / (n + d)``; ``scale`` (size of the outermost
    domain, for dropping unresolvable phases) to ``radius``. Phase i uses
    ``eta_i = decay^-i step`` (ALD: ``decay = 2^4``; any public ``decay > 1``
    is private — each phase's sensitivity is computed from its own step).
    ``phases`` overrides ALD's phase count ``k = ceil(log n)``. ``centred``
    and ``objective_scale`` are passed to every phase's plan. ``events_only=True``: the schedule's
    ``event`` alone (:func:`_make_schedule`).
    """
    clip, radius, epsilon, delta = _check_common(clip, radius, epsilon, delta)
    k = max(1, math.ceil(math.log(n))) if phases is None else int(phases)
    if k < 1:
        raise ValueError(f"phases must be >= 1, got {phases!r}.")
    n0 = n // k
    if n0 < 1:
        raise ValueError(f"ALD localization needs at least {k} rows, got {n}.")
    beta = 1.0 / (n + d) if beta is None else beta
    eta = ald_step(radius, clip, n, d, epsilon, delta, beta) if step is None else check_positive(step, "step")
    decay = _check_decay(decay)
    blocks = [(start + (i - 1) * n0, start + i * n0, decay ** (-i) * eta) for i in range(1, k + 1)]
    return _make_schedule(
        blocks, d, clip=clip, epsilon=epsilon, delta=delta, tolerance=tolerance, noise=noise,
        scale=radius if scale is None else scale, info={"block_size": n0, "step": eta}, centred=centred,
        objective_scale=objective_scale, events_only=events_only,
    )


def phased_erm_schedule(n, d, *, clip, radius, epsilon, delta, start=0, step=None, tolerance=0.1, noise=DEFAULT_NOISE,
                        centred=False, objective_scale=OBJECTIVE_SCALE, step_radius=None):
    """FKT Phased-ERM schedule (Section 4, non-smooth case).

    k = ceil(log2 n) phases on disjoint blocks of ``floor(2^-i n)`` rows,
    ``eta_i = 4^-i eta`` with ``eta = (D / L) min(4 / sqrt(n), rho / dim)``
    (doc/algorithms.rst, F-Alg 3; ``rho / dim`` is ``epsilon / d`` for pure DP and
    ``epsilon / sqrt(d log(1/delta))`` otherwise — a utility choice only).
    ``D = 2 radius``, or ``2 min(radius, step_radius)`` when a public
    ``step_radius`` is given: the distance the step is sized for, while the
    domain stays the radius ball (doc/privacy/localization.rst, "Step
    scale"). ``centred`` and ``objective_scale`` go to every phase's plan
    (centred regression phases, doc/privacy/output_perturbation.rst).
    """
    clip, radius, epsilon, delta = _check_common(clip, radius, epsilon, delta)
    if n < 2:
        raise ValueError(f"Phased-ERM needs at least 2 rows, got {n}.")
    if step is None:
        reach = radius if step_radius is None else min(radius, check_positive(step_radius, "step_radius"))
        # why (utility only): phase 1's noise has norm ~ 0.6 D whatever n, and the later phases cannot
        # remove it in directions of curvature near their lam_i; D is a public number either way, and
        # every phase's sensitivity is computed from its own step (privacy holds for any public step)
        step = (2.0 * reach / clip) * min(4.0 / math.sqrt(n), epsilon / _dimension_term(d, delta))
    blocks, offset = [], start
    for i in range(1, max(1, math.ceil(math.log2(n))) + 1):
        n_i = n // 2**i
        if n_i < 1:
            break
        blocks.append((offset, offset + n_i, 4.0 ** (-i) * step))
        offset += n_i
    return _make_schedule(
        blocks, d, clip=clip, epsilon=epsilon, delta=delta, tolerance=tolerance, noise=noise, scale=radius,
        info={"step": step} if step_radius is None else {"step": step, "step_radius": min(radius, step_radius)},
        centred=centred, objective_scale=objective_scale,
    )


def run_phases(data, loss, schedule, *, center, domain, rng):
    """Run a :class:`PhaseSchedule`: each phase centred at the previous projected output."""
    x = np.asarray(center, dtype=float)
    for plan in schedule.phases:
        x = _project(run_output_perturbation(data, loss, plan, rng, w0=x), domain)
    return x


def _ald_growth_step(radius, clip, n0, d, epsilon, delta, log_b):
    """ALD Algorithm 2's eta_0 (with D_0 = 2 radius) for epochs of ``n0`` rows."""
    return (radius / clip) * min(
        1.0 / math.sqrt(n0 * math.log(max(n0, 2)) * log_b), epsilon / (_dimension_term(d, delta) * log_b)
    )


def _check_decay(decay):
    decay = check_positive(decay, "decay")
    if not decay > 1:
        raise ValueError(f"decay must be > 1, got {decay}.")
    return decay


def _resolvable_epochs(eta0, clip, scale, decay=16.0):
    """Epochs whose first ALD-1 phase (step ``decay^-1 2^-i eta0``) float64 can still certify."""
    ratio = clip * eta0 / (decay * _MIN_STEP_FRACTION * scale)
    return 0 if ratio < 1.0 else 1 + math.floor(math.log2(ratio))


def ald_growth_schedule(n, d, *, clip, radius, kappa_lower, epsilon, delta, start=0, beta=None, tolerance=0.1,
                        noise=DEFAULT_NOISE, scale=None, step=None, decay=16.0, phases=None, max_epochs=None,
                        centred=False, objective_scale=OBJECTIVE_SCALE, events_only=False):
    """ALD Algorithm 2 schedule: T epochs of ALD-1 with halving radii and steps.

    Returns a :class:`PhaseSchedule` whose ``phases`` are the per-epoch
    ALD-1 schedules and whose ``info`` exposes ``epochs``, ``radii`` and
    ``steps`` — the public quantities the adaptivity uses.

    ``T = ceil(2 log n / (kappa_lower - 1))`` (ALD), capped at the number of
    halvings whose first phase moves the iterate by at least ``1e-9 scale``
    (``scale`` defaults to ``radius``): deeper epochs could not be certified
    in float64. When the cap binds, the rows are re-split over the fewer
    epochs (still disjoint blocks; parallel composition is unchanged) and
    ``info["epochs_uncapped"]`` records the paper's T.

    ``step`` overrides ALD's ``eta_0``, ``decay`` the inner ALD-1 phase
    ratio and ``phases`` its phase count (all public, utility only; see
    :func:`ald_schedule`); ``max_epochs`` caps T before anything else;
    ``centred`` and ``objective_scale`` go to every phase's plan. ``events_only=True``: the
    schedule's ``event`` alone (the same epochs, phases, checks and event; no mechanism built: a budget
    fill's candidates, ``linear_model/_auto_scales.py`` ``fill_budget``).
    """
    clip, radius, epsilon, delta = _check_common(clip, radius, epsilon, delta)
    if not kappa_lower > 1:
        raise ValueError(f"kappa_lower must be > 1, got {kappa_lower}.")
    scale = radius if scale is None else check_positive(scale, "scale")
    beta = 1.0 / (n + d) if beta is None else beta
    log_b = math.log(1.0 / beta)
    T_paper = max(1, math.ceil(2.0 * math.log(n) / (kappa_lower - 1.0)))
    if max_epochs is not None:
        T_paper = max(1, min(T_paper, int(max_epochs)))
    # data sufficiency is judged on the paper's T (the cap below only re-splits rows)
    n0 = n // T_paper
    k = max(1, math.ceil(math.log(max(n0, 2)))) if phases is None else int(phases)
    if n0 < k:
        raise ValueError(
            f"ALD growth epochs with kappa_lower={kappa_lower} need T={T_paper} epochs of at least {k} rows each; "
            f"got {n} rows. Use more data or a larger kappa_lower."
        )
    decay = _check_decay(decay)
    if step is not None:
        step = check_positive(step, "step")

    def base_step(n0):
        return _ald_growth_step(radius, clip, n0, d, epsilon, delta, log_b) if step is None else step

    T = T_paper
    while True:  # eta_0 shrinks as the epochs grow: iterate the (monotone) cap to its fixed point
        cap = _resolvable_epochs(base_step(max(n // T, 1)), clip, scale, decay)
        if cap >= T or T == 1:
            break
        T = max(1, cap)
    n0 = n // T
    D0 = 2.0 * radius
    eta0 = base_step(n0)
    epochs, radii, steps = [], [], []
    for i in range(T):
        D_i, eta_i = 2.0 ** (-i) * D0, 2.0 ** (-i) * eta0
        epochs.append(
            ald_schedule(
                n0, d, clip=clip, radius=min(D_i, radius), epsilon=epsilon, delta=delta, start=start + i * n0,
                step=eta_i, beta=beta, scale=scale, tolerance=tolerance, noise=noise, decay=decay, phases=phases,
                centred=centred, objective_scale=objective_scale, events_only=events_only,
            )
        )
        radii.append(D_i)
        steps.append(eta_i)
    if events_only:  # the epochs' events (the schedule's event, as below)
        return ParallelComposedEvent(tuple(epochs))
    info = {"epochs": T, "epoch_size": n0, "radii": radii, "steps": steps}
    if T != T_paper:
        info["epochs_uncapped"] = T_paper
    return PhaseSchedule(tuple(epochs), ParallelComposedEvent(tuple(e.event for e in epochs)), info)


def run_growth_epochs(data, loss, schedule, *, center, radius, rng):
    outer = (np.asarray(center, dtype=float), radius)
    x = outer[0]
    for epoch, D_i in zip(schedule.phases, schedule.info["radii"]):
        x = run_phases(data, loss, epoch, center=x, domain=[outer, (x, D_i)], rng=rng)
    return x


# -- convenience: plan and run in one call --------------------------------------------------
def _n_rows(data, start, stop):
    return (data.n_samples if stop is None else stop) - start


def ald_localization(data, loss, *, clip, center, radius, epsilon, delta, rng, start=0, stop=None, step=None,
                     beta=None, noise=DEFAULT_NOISE, tolerance=0.1):
    """ALD Algorithm 1 on rows [start, stop): plan from public inputs, then run."""
    sched = ald_schedule(
        _n_rows(data, start, stop), data.n_features, clip=clip, radius=radius, epsilon=epsilon, delta=delta,
        start=start, step=step, beta=beta, tolerance=tolerance, noise=noise,
    )
    x = run_phases(data, loss, sched, center=center, domain=[(np.asarray(center, dtype=float), radius)], rng=rng)
    return PrivateFit(coef=x, event=sched.event, info=_schedule_info(sched))


def phased_erm(data, loss, *, clip, center, radius, epsilon, delta, rng, start=0, stop=None, step=None,
               noise=DEFAULT_NOISE, tolerance=0.1, step_radius=None):
    """FKT Phased-ERM on rows [start, stop): plan from public inputs, then run."""
    sched = phased_erm_schedule(
        _n_rows(data, start, stop), data.n_features, clip=clip, radius=radius, epsilon=epsilon, delta=delta,
        start=start, step=step, tolerance=tolerance, noise=noise, step_radius=step_radius,
    )
    x = run_phases(data, loss, sched, center=center, domain=[(np.asarray(center, dtype=float), radius)], rng=rng)
    return PrivateFit(coef=x, event=sched.event, info=_schedule_info(sched))


def ald_growth_epochs(data, loss, *, clip, center, radius, kappa_lower, epsilon, delta, rng, start=0, stop=None,
                      beta=None, noise=DEFAULT_NOISE, tolerance=0.1):
    """ALD Algorithm 2 on rows [start, stop): plan from public inputs, then run."""
    sched = ald_growth_schedule(
        _n_rows(data, start, stop), data.n_features, clip=clip, radius=radius, kappa_lower=kappa_lower,
        epsilon=epsilon, delta=delta, start=start, beta=beta, tolerance=tolerance, noise=noise,
    )
    x = run_growth_epochs(data, loss, sched, center=center, radius=radius, rng=rng)
    return PrivateFit(coef=x, event=sched.event, info=dict(sched.info))


def _schedule_info(sched):
    info = dict(sched.info)
    info["schedule"] = [
        {"rows": (p.start, p.stop), "eta": eta, "lam": p.lam, "sensitivity": p.sensitivity}
        for p, eta in zip(sched.phases, sched.info["steps"])
    ]
    return info
