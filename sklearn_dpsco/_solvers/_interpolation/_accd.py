"""Private optimization in the interpolation regime (Asi, Chadha, Cheng, Duchi 2022).

The ACCD building blocks, generic over the loss (doc/privacy/interpolation.rst,
doc/algorithms.rst, §3). Like :mod:`.._localization._phases`, each block is a PURE plan
function of public inputs (n, d, budget, declared smoothness ``H``, growth
``lambda`` and exponent ``kappa``, domain radius, Lipschitz level) that fixes
every epoch, radius, Lipschitz level, step and the exact privacy event before
any data is touched, and a run function that consumes exactly that plan.

* A-Alg 1, Lipschitzian-extension framework — :func:`extension_plan` /
  :func:`run_extension`: ALD Algorithm 2 (``kappa_lower = 2``) run on the
  ``L``-Lipschitz extension of every per-sample loss (``clip = L``). The
  extension is convex and ``L``-Lipschitz for EVERY row, so the run is
  (epsilon, delta)-DP whatever the data; on rows that are already
  ``L``-Lipschitz it is ALD-2 itself.
* A-Alg 2 / A-Alg 6, epochs for interpolation with quadratic / kappa growth —
  :func:`interpolation_schedule` / :func:`run_interpolation`: epoch ``i``
  runs A-Alg 1 on its own block of rows over ``X ∩ B(x_i, r_i)`` at
  ``L_i = 2 H r_i``; the radii follow the public recursion
  ``rho_i = lambda^(-1/(kappa-1)) (c L_i r(n_0))^(kappa/(kappa-1))``,
  ``r_{i+1} = (kappa rho_i / lambda)^(1/kappa)``.
* A-Alg 3, adaptive algorithm — :func:`adaptive_interpolation_schedule` /
  :func:`run_adaptive_interpolation`: A-Alg 1 on the first half, then the
  epochs on the second half inside the localized ball
  ``X ∩ B(x_1, r')``, ``r' = (kappa rho(L, n/2) / lambda)^(1/kappa)``.

Privacy never depends on ``H``, ``lambda``, ``kappa`` or the utility constant
``c``: they only shape public schedules. Every epoch is (epsilon, delta)-DP on
its own disjoint block (the extension makes each loss ``L_i``-Lipschitz for
any data), centres are earlier projected outputs, so the whole run is
(epsilon, delta)-DP by parallel composition (doc/algorithms.rst, P5).
"""

import math
from dataclasses import dataclass

import numpy as np

from ..._mechanisms import DEFAULT_NOISE
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ParallelComposedEvent
from .._core._balls import project_balls
from .._localization._growth import PRACTICAL_RESOLUTION, growth_epochs_schedule
from .._localization._phases import _MIN_STEP_FRACTION, _ald_growth_step, _dimension_term
from .._output_perturbation import run_output_perturbation
from .._core._result import PrivateFit

__all__ = [
    "DEFAULT_UTILITY_CONSTANT",
    "AdaptiveInterpolationSchedule",
    "ExtensionPlan",
    "InterpolationSchedule",
    "accd_error_rate",
    "adaptive_interpolation",
    "adaptive_interpolation_schedule",
    "extension_plan",
    "growth_excess",
    "interpolation_epochs",
    "interpolation_schedule",
    "run_adaptive_interpolation",
    "run_extension",
    "run_interpolation",
]

#: ACCD's utility constant ``c`` (doc/algorithms.rst, A-Alg 2: "not recoverable").
#: It scales the public radius recursion only — never a noise scale. Calibrated
#: empirically (benchmarks/calibrate_accd.py):
#: the largest implied ``c = sqrt(lambda excess) / (L r(m))`` of A-Alg 1
#: (practical ALD-2) on noiseless least squares, d in {2, 5, 10}, m in
#: {500, 2000, 8000}, epsilon in {0.5, 1, 4}, was 0.168; twice that, for
#: safety (a c too small lets the radii shrink past x*).
DEFAULT_UTILITY_CONSTANT = 0.34

# Inner ALD-2 epochs must keep this many resolvable halvings (2^3) for a
# radius to be worth an epoch; below it the radius recursion is floored.
_MIN_INNER_HALVINGS = 3


# ----------------------------------------------------------------------- public rate functions
def accd_error_rate(m, d, *, epsilon, delta, beta):
    """ACCD's public error function ``r(m)`` for ALD-2 on ``m`` rows.

    ``sqrt(log(1/beta)) log(m) / sqrt(m) + dim log(1/beta) / (m epsilon)``
    with ``dim = d`` (pure DP) or ``sqrt(d log(1/delta))`` (approximate DP).
    """
    log_b = math.log(1.0 / beta)
    return math.sqrt(log_b) * math.log(max(m, 2)) / math.sqrt(m) + _dimension_term(d, delta) * log_b / (m * epsilon)


def growth_excess(lipschitz, rate, *, growth, kappa, c=DEFAULT_UTILITY_CONSTANT):
    """Predicted excess risk ``lambda^(-1/(kappa-1)) (c L rate)^(kappa/(kappa-1))`` (ALD Thm 2 form).

    With ``kappa = 2`` this is ``(c^2 / lambda) L^2 rate^2``, ACCD's
    ``rho(L, m)`` with their constant equal to ``c^2``.
    """
    return growth ** (-1.0 / (kappa - 1.0)) * (c * lipschitz * rate) ** (kappa / (kappa - 1.0))


def _radius_from_excess(excess, growth, kappa):
    # kappa-growth: lambda/kappa ||x - x*||^kappa <= f(x) - f* <= excess
    return (kappa * excess / growth) ** (1.0 / kappa)


def _check_growth_params(smoothness, growth, kappa):
    smoothness = check_positive(smoothness, "smoothness")
    growth = check_positive(growth, "growth")
    kappa = check_positive(kappa, "kappa")
    if kappa < 2:
        raise ValueError(
            f"kappa must be >= 2 for the interpolation epochs (a smooth loss cannot grow faster than "
            f"quadratically at an interior minimizer), got {kappa}."
        )
    return smoothness, growth, kappa


# ----------------------------------------------------------------------- A-Alg 1
@dataclass(frozen=True)
class ExtensionPlan:
    """A-Alg 1 with ``A`` = ALD-2: growth epochs on the ``lipschitz``-extension of the loss.

    Attributes
    ----------
    schedule : PhaseSchedule
        The ALD-2 schedule (``clip = lipschitz``).
    lipschitz : float
        Lipschitz level of the extension (public).
    radius : float
        Radius of the ball around the run's centre it optimizes over.
    """

    schedule: object
    lipschitz: float
    radius: float

    @property
    def event(self):
        return self.schedule.event

    @property
    def info(self):
        return dict(self.schedule.info, lipschitz=self.lipschitz, radius=self.radius)

    @property
    def rows(self):
        first, last = self.schedule.phases[0].phases[0], self.schedule.phases[-1].phases[-1]
        return first.start, last.stop


def extension_plan(n, d, *, lipschitz, radius, epsilon, delta, kappa_lower=2.0, start=0, beta=None, scale=None,
                   schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE):
    """Plan A-Alg 1 (ALD-2 on the ``lipschitz``-extension) on ``n`` rows from ``start``.

    Parameters
    ----------
    n, d : int
        Rows of the block and number of coefficients.
    lipschitz : float
        Lipschitz level ``L`` of the extension (public; the privacy
        argument uses only that every extended loss is ``L``-Lipschitz).
    radius : float
        The run optimizes over ``domain ∩ B(centre, radius)``.
    epsilon, delta : float
    kappa_lower : float, default=2.0
        ALD-2's lower bound on the growth exponent (ACCD use 2).
    beta : float, optional
        Utility failure probability; default ``1 / (n + d)``.
    scale : float, optional
        Size of the outermost domain (float64 resolution floor); default
        ``radius``.
    schedule : {"practical", "paper"}, default="practical"
        ALD-2's utility constants (:mod:`.._localization._growth`; privacy is the same).

    Returns
    -------
    ExtensionPlan
    """
    lipschitz = check_positive(lipschitz, "lipschitz")
    radius = check_positive(radius, "radius")
    scale = radius if scale is None else check_positive(scale, "scale")
    sched = growth_epochs_schedule(
        n, d, clip=lipschitz, radius=radius, kappa_lower=kappa_lower, epsilon=epsilon, delta=delta, start=start,
        beta=beta, tolerance=tolerance, noise=noise, scale=scale, schedule=schedule,
    )
    first_step = sched.phases[0].info["steps"][0]
    floor = PRACTICAL_RESOLUTION if schedule == "practical" else _MIN_STEP_FRACTION
    if lipschitz * first_step < floor * scale:
        raise ValueError(
            f"radius {radius:.3g} is too small relative to the domain scale {scale:.3g} for float64: "
            "no phase could be certified."
        )
    return ExtensionPlan(sched, lipschitz, radius)


def _check_anchor(center, balls):
    for c, r in balls:
        if np.linalg.norm(center - c) > r * (1.0 + 1e-9) + 1e-300:
            raise ValueError("the centre must lie in the domain.")


def run_extension(data, loss, plan, *, center, domain=(), rng):
    """Run an :class:`ExtensionPlan` from ``center`` over ``domain ∩ B(center, plan.radius)``.

    ``domain`` is a list of public balls ``(centre, radius)`` containing
    ``center``. Every phase's noisy output is projected onto the current
    epoch's domain (post-processing), so the result lies in
    ``domain ∩ B(center, plan.radius)``.
    """
    x = np.asarray(center, dtype=float)
    base = [(np.asarray(c, dtype=float), float(r)) for c, r in domain] + [(x, plan.radius)]
    _check_anchor(x, base)
    for epoch, D_i in zip(plan.schedule.phases, plan.schedule.info["radii"]):
        anchor = x
        balls = base + [(anchor, D_i)]
        for phase in epoch.phases:
            x = project_balls(run_output_perturbation(data, loss, phase, rng, w0=x), balls, anchor)
    return x


# ----------------------------------------------------------------------- A-Alg 2 / A-Alg 6
@dataclass(frozen=True)
class InterpolationSchedule:
    """Public plan of the interpolation epochs: one :class:`ExtensionPlan` per epoch.

    ``info`` exposes ``epochs``, ``epoch_size``, ``radii`` (r_i),
    ``lipschitz`` (L_i), ``predicted_excess`` (rho_i), ``error_rate``
    (r(n_0)), ``kappa`` and ``utility_constant`` — public quantities only.
    """

    epochs: tuple
    event: object
    info: dict


def _inner_floor(n0, d, epsilon, delta, beta, scale, schedule):
    """Smallest epoch radius whose inner ALD-2 keeps ``2^_MIN_INNER_HALVINGS`` resolvable halvings."""
    if schedule == "practical":
        # the first phase moves by L eta_0 = radius eps / (dim log(1/beta))
        unit = epsilon / (_dimension_term(d, delta) * math.log(1.0 / beta))
        return 2.0**_MIN_INNER_HALVINGS * PRACTICAL_RESOLUTION * scale / unit
    T_inner = max(1, math.ceil(2.0 * math.log(n0)))
    m = max(n0 // T_inner, 1)
    # clip * eta_0 = radius * step(radius=1, clip=1): the step scales with radius / clip
    unit = _ald_growth_step(1.0, 1.0, m, d, epsilon, delta, math.log(1.0 / beta))
    return 16.0 * 2.0**_MIN_INNER_HALVINGS * _MIN_STEP_FRACTION * scale / unit


def _radius_recursion(T, L0, r0, rate, *, smoothness, growth, kappa, c, floor, cap=math.inf):
    radii, lips, excess = [r0], [L0], []
    for i in range(T):
        rho = growth_excess(lips[i], rate, growth=growth, kappa=kappa, c=c)
        excess.append(rho)
        if i + 1 < T:
            # x* stays within 2 r_i of the next centre whatever happens (both in X_i),
            # so the recursion never needs a radius above 2 r_i; below the float floor it stops.
            r_next = max(min(_radius_from_excess(rho, growth, kappa), 2.0 * radii[i]), floor)
            radii.append(r_next)
            lips.append(min(cap, 2.0 * smoothness * r_next))
    return radii, lips, excess


def _min_rows_for_ald2():
    """Smallest block ALD-2 (kappa_lower = 2) accepts (its schedule raises below it)."""
    m = 2
    while True:
        T = max(1, math.ceil(2.0 * math.log(m)))
        n0 = m // T
        if n0 >= max(1, math.ceil(math.log(max(n0, 2)))):
            return m
        m += 1


def interpolation_schedule(n, d, *, smoothness, growth, radius, epsilon, delta, kappa=2.0, lipschitz=None, start=0,
                           c=DEFAULT_UTILITY_CONSTANT, beta=None, n_epochs=None, max_epochs=128, scale=None,
                           inner_kappa_lower=2.0, schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE):
    """Plan ACCD Algorithm 2 (``kappa = 2``) / Algorithm 6 (``kappa > 2``) on ``n`` rows from ``start``.

    Parameters
    ----------
    n, d : int
    smoothness : float
        Declared smoothness ``H`` of every per-sample loss (public; utility only).
    growth : float
        Declared growth constant ``lambda`` of the population loss (public; utility only).
    radius : float
        ``r_0``: the first epoch optimizes over ``domain ∩ B(centre, r_0)``.
    epsilon, delta : float
        Budget of EVERY epoch (the epochs run on disjoint blocks).
    kappa : float, default=2.0
        Declared growth exponent (>= 2; utility only).
    lipschitz : float, optional
        A global Lipschitz level; ``L_i = min(lipschitz, 2 H r_i)``
        (``2 H r_i`` bounds the gradients on epoch i's domain under
        interpolation).
    c : float, default=DEFAULT_UTILITY_CONSTANT
        ACCD's utility constant (not recoverable from the paper; calibrated).
    beta : float, optional
        Utility failure probability per epoch; default ``1 / (n + d)``.
    n_epochs : int, optional
        Number of epochs. Default: the ``T <= max_epochs`` minimizing the
        predicted final excess ``rho_{T-1}`` of the public recursion, each
        epoch on ``floor(n / T)`` rows.
    scale : float, optional
        Size of the outermost domain (float64 floor); default ``radius``.
    inner_kappa_lower : float, default=2.0
        ALD-2's ``kappa_lower`` inside each epoch (ACCD: 2).
    schedule : {"practical", "paper"}, default="practical"
        The inner ALD-2's utility constants (:mod:`.._localization._growth`).

    Returns
    -------
    InterpolationSchedule
    """
    smoothness, growth, kappa = _check_growth_params(smoothness, growth, kappa)
    radius = check_positive(radius, "radius")
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    scale = radius if scale is None else check_positive(scale, "scale")
    c = check_positive(c, "c")
    L_cap = math.inf if lipschitz is None else check_positive(lipschitz, "lipschitz")
    L0 = min(L_cap, 2.0 * smoothness * radius)
    beta = 1.0 / (n + d) if beta is None else beta
    min_rows = _min_rows_for_ald2()
    if n < min_rows:
        raise ValueError(f"the interpolation epochs need at least {min_rows} rows, got {n}.")

    def plan_for(T):
        n0 = n // T
        rate = accd_error_rate(n0, d, epsilon=epsilon, delta=delta, beta=beta)
        floor = _inner_floor(n0, d, epsilon, delta, beta, scale, schedule)
        return n0, rate, _radius_recursion(
            T, L0, radius, rate, smoothness=smoothness, growth=growth, kappa=kappa, c=c, floor=floor, cap=L_cap
        )

    if n_epochs is None:
        T_max = max(1, min(int(max_epochs), n // min_rows))
        best = None
        for T in range(1, T_max + 1):
            final = plan_for(T)[2][2][-1]
            if best is None or final < best[1] * (1.0 - 1e-12):
                best = (T, final)
        T = best[0]
    else:
        T = int(n_epochs)
        if T < 1 or n // T < min_rows:
            raise ValueError(f"n_epochs={n_epochs} leaves fewer than {min_rows} rows per epoch (n={n}).")
    n0, rate, (radii, lips, excess) = plan_for(T)
    epochs = tuple(
        extension_plan(
            n0, d, lipschitz=lips[i], radius=radii[i], epsilon=epsilon, delta=delta, kappa_lower=inner_kappa_lower,
            start=start + i * n0, beta=beta, scale=scale, schedule=schedule, tolerance=tolerance, noise=noise,
        )
        for i in range(T)
    )
    info = {
        "epochs": T, "epoch_size": n0, "radii": radii, "lipschitz": lips, "predicted_excess": excess,
        "error_rate": rate, "kappa": kappa, "utility_constant": c, "schedule": schedule,
    }
    return InterpolationSchedule(epochs, ParallelComposedEvent(tuple(e.event for e in epochs)), info)


def run_interpolation(data, loss, schedule, *, center, domain=None, rng):
    """Run an :class:`InterpolationSchedule` from ``center``.

    Epoch ``i`` runs A-Alg 1 over ``domain ∩ B(x_i, r_i)`` and its output
    (projected there) is the next centre. ``domain`` (list of public balls
    containing ``center``) defaults to ``[(center, r_0)]``.
    """
    x = np.asarray(center, dtype=float)
    outer = [(x, schedule.info["radii"][0])] if domain is None else list(domain)
    for plan in schedule.epochs:
        x = run_extension(data, loss, plan, center=x, domain=outer, rng=rng)
    return x


# ----------------------------------------------------------------------- A-Alg 3
@dataclass(frozen=True)
class AdaptiveInterpolationSchedule:
    """A-Alg 3: A-Alg 1 on the first half, interpolation epochs on the second inside the localized ball."""

    first: ExtensionPlan
    second: InterpolationSchedule
    radius: float
    event: object
    info: dict


def adaptive_interpolation_schedule(n, d, *, smoothness, growth, lipschitz, radius, epsilon, delta, kappa=2.0,
                                    start=0, c=DEFAULT_UTILITY_CONSTANT, beta=None, n_epochs=None, max_epochs=128,
                                    schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE):
    """Plan ACCD Algorithm 3 on ``n`` rows from ``start`` over ``X = B(centre, radius)``.

    1. A-Alg 1 (ALD-2, ``kappa_lower = 2``) at Lipschitz level ``lipschitz``
       on the first ``floor(n / 2)`` rows, over ``X``.
    2. ``r' = min(2 radius, (kappa rho(L, n/2) / lambda)^(1/kappa))``,
       ``L' = min(L, 2 H r')``.
    3. Interpolation epochs (A-Alg 2 / 6) on the remaining rows over
       ``X ∩ B(x_1, r')`` with ``L_0 = L'``.

    Both stages have the full budget: disjoint halves (parallel
    composition). Without interpolation the second stage still returns a
    point of ``X ∩ B(x_1, r')``, which contains ``x*`` with high probability
    under growth — ACCD Thm 3's non-interpolation guarantee.

    Returns
    -------
    AdaptiveInterpolationSchedule
    """
    smoothness, growth, kappa = _check_growth_params(smoothness, growth, kappa)
    lipschitz = check_positive(lipschitz, "lipschitz")
    radius = check_positive(radius, "radius")
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    beta = 1.0 / (n + d) if beta is None else beta
    n1 = n // 2
    first = extension_plan(
        n1, d, lipschitz=lipschitz, radius=radius, epsilon=epsilon, delta=delta, kappa_lower=2.0, start=start,
        beta=beta, scale=radius, schedule=schedule, tolerance=tolerance, noise=noise,
    )
    rho1 = growth_excess(
        lipschitz, accd_error_rate(n1, d, epsilon=epsilon, delta=delta, beta=beta), growth=growth, kappa=kappa, c=c
    )
    r_loc = min(2.0 * radius, _radius_from_excess(rho1, growth, kappa))
    r_loc = max(r_loc, _inner_floor(n - n1, d, epsilon, delta, beta, radius, schedule))
    second = interpolation_schedule(
        n - n1, d, smoothness=smoothness, growth=growth, radius=r_loc, epsilon=epsilon, delta=delta, kappa=kappa,
        lipschitz=min(lipschitz, 2.0 * smoothness * r_loc), start=start + n1, c=c, beta=beta, n_epochs=n_epochs,
        max_epochs=max_epochs, scale=radius, schedule=schedule, tolerance=tolerance, noise=noise,
    )
    info = {
        "first_stage": first.info, "first_excess": rho1, "localized_radius": r_loc,
        "epochs": 1 + second.info["epochs"], "radii": [radius] + list(second.info["radii"]),
        "lipschitz": [lipschitz] + list(second.info["lipschitz"]), "second_stage": second.info,
    }
    return AdaptiveInterpolationSchedule(first, second, radius, ParallelComposedEvent((first.event, second.event)),
                                         info)


def run_adaptive_interpolation(data, loss, schedule, *, center, rng):
    """Run an :class:`AdaptiveInterpolationSchedule` over ``X = B(center, schedule.radius)``."""
    center = np.asarray(center, dtype=float)
    outer = [(center, schedule.radius)]
    x1 = run_extension(data, loss, schedule.first, center=center, rng=rng)
    return run_interpolation(data, loss, schedule.second, center=x1, domain=outer, rng=rng)


# ----------------------------------------------------------------------- plan and run in one call
def _n_rows(data, start, stop):
    return (data.n_samples if stop is None else stop) - start


def interpolation_epochs(data, loss, *, smoothness, growth, center, radius, epsilon, delta, rng, kappa=2.0,
                         lipschitz=None, start=0, stop=None, c=DEFAULT_UTILITY_CONSTANT, beta=None, n_epochs=None,
                         schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE):
    """ACCD Algorithm 2/6 on rows [start, stop) over ``B(center, radius)``: plan, then run."""
    sched = interpolation_schedule(
        _n_rows(data, start, stop), data.n_features, smoothness=smoothness, growth=growth, radius=radius,
        epsilon=epsilon, delta=delta, kappa=kappa, lipschitz=lipschitz, start=start, c=c, beta=beta,
        n_epochs=n_epochs, schedule=schedule, tolerance=tolerance, noise=noise,
    )
    x = run_interpolation(data, loss, sched, center=center, rng=rng)
    return PrivateFit(coef=x, event=sched.event, info=dict(sched.info))


def adaptive_interpolation(data, loss, *, smoothness, growth, lipschitz, center, radius, epsilon, delta, rng,
                           kappa=2.0, start=0, stop=None, c=DEFAULT_UTILITY_CONSTANT, beta=None, n_epochs=None,
                           schedule="practical", tolerance=0.1, noise=DEFAULT_NOISE):
    """ACCD Algorithm 3 on rows [start, stop) over ``B(center, radius)``: plan, then run."""
    sched = adaptive_interpolation_schedule(
        _n_rows(data, start, stop), data.n_features, smoothness=smoothness, growth=growth, lipschitz=lipschitz,
        radius=radius, epsilon=epsilon, delta=delta, kappa=kappa, start=start, c=c, beta=beta, n_epochs=n_epochs,
        schedule=schedule, tolerance=tolerance, noise=noise,
    )
    x = run_adaptive_interpolation(data, loss, sched, center=center, rng=rng)
    return PrivateFit(coef=x, event=sched.event, info=dict(sched.info))
