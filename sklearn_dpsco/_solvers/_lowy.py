"""Lowy 2026 building blocks, generic over the loss (doc/privacy/lowy.rst).

* OutputPert-Localize (Lowy Algorithm 2): a certified output-perturbation
  release turned into a ball that contains the regularized minimizer with
  probability ``1 - exp(-zeta)``.
* Double-OutputPert (Lowy Algorithm 4): OutputPert-Localize, then a second
  certified output perturbation whose ERM is constrained to that ball
  (``solve_certified(..., ball=(center, radius))``), projected back onto it.
* Pop-Localize (Lowy Algorithm 1, after Asi, Liu, Tian 2024): phases on
  disjoint blocks with geometrically growing regularization; ``J`` repeats
  per phase on disjoint sub-blocks, combined by geometric aggregation.

Every block follows the pattern of :mod:`._localization._phases`: a *plan* function
computes every block, regularization, certified solver target, noise scale,
radius and the exact privacy event from public inputs (n, d, budget,
declared bounds) before any data is touched; a *run* function consumes
exactly that plan. The loss is any object of
:func:`~sklearn_dpsco._solvers._core._losses.get_loss` (or its compiled
twin): privacy only uses that its ``clip``-extension is convex and
``clip``-Lipschitz.

Constants are tighter than Lowy's: the certified distance target is a
fraction ``tolerance`` of the exact-minimizer sensitivity ``2C/(lam m)``, so
each release has sensitivity ``2C(1 + 2 tolerance)/(lam m)`` (Lowy: ``6C/(lam
m)``), re-derived in doc/privacy/lowy.rst; the localized radius is the exact
noise-norm quantile (Lowy's Gamma tail bound ``P(||b|| > s(d + t)) <= e^-t``
is false for d > 1; his radius ``100 zeta C d / (lam m eps)`` is safe but
about 16 zeta times larger than needed).
"""

import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from .._param_checks import check_delta, check_epsilon, check_positive
from .._rng import check_random_state, spawn_random_states
from .._budget import Budget
from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._calibrate import noise_norm_quantile
from ..accounting import ComposedEvent, ParallelComposedEvent
from ._core._data import GLMData
from ._core._geometry import project_ball, project_two_balls
from ._output_perturbation import OBJECTIVE_SCALE, output_perturbation_plan, run_output_perturbation
from ._core._result import PrivateFit

__all__ = [
    "DoubleOutputPerturbationPlan",
    "LocalizePlan",
    "PopLocalizePlan",
    "double_output_perturbation",
    "double_output_perturbation_plan",
    "geometric_aggregate",
    "lowy_clip",
    "lowy_lam1",
    "lowy_repeats",
    "noise_norm_quantile",
    "output_pert_localize",
    "output_pert_localize_plan",
    "pop_localize",
    "pop_localize_plan",
    "run_double_output_perturbation",
    "run_output_pert_localize",
    "run_pop_localize",
    "split_two_stages",
]


# --------------------------------------------------------------------------- public parameter rules
def lowy_clip(moment, k, m, epsilon, d):
    """Lowy's Lipschitz level ``C = G_k (m epsilon / d)^(1/k)`` (Lowy 2026, Prop. 3.2).

    ``moment`` is the public bound ``G_k`` on the k-th moment of the
    per-example gradient norm, ``m`` the block size of the call.
    """
    moment = check_positive(moment, "moment")
    if not k >= 2:
        raise ValueError(f"the moment order k must be >= 2, got {k}.")
    return moment * (m * check_epsilon(epsilon) / d) ** (1.0 / k)


def lowy_lam1(n, d, epsilon, *, radius, moment, k, moment2=None, repeats=1):
    """Base regularization of Pop-Localize (doc/algorithms.rst, L-Alg 1, OUR RECONSTRUCTION).

    ``lam_1 = (1/D) (G_k (d J / (n eps))^(1 - 1/k) + G_2 sqrt(J / n))`` with
    ``D = 2 radius``; ``moment2`` (``G_2``) defaults to ``moment``.
    """
    moment2 = moment if moment2 is None else moment2
    D = 2.0 * check_positive(radius, "radius")
    return (moment * (d * repeats / (n * epsilon)) ** (1.0 - 1.0 / k) + moment2 * math.sqrt(repeats / n)) / D


def lowy_repeats(phases, failure, success=0.6):
    """Repeats per phase so that all phases aggregate well w.p. ``1 - failure``.

    Hoeffding: ``J = ceil(ln(T / failure) / (2 (success - 1/2)^2))`` (doc/algorithms.rst,
    L-Alg 1: 50 ln(T/delta) at success 0.6, 12.5 ln(T/delta) at 0.7).
    """
    if not 0.5 < success <= 1:
        raise ValueError(f"success must be in (1/2, 1], got {success}.")
    return max(1, math.ceil(math.log(phases / failure) / (2.0 * (success - 0.5) ** 2)))


def split_two_stages(epsilon, delta, share, noise=DEFAULT_NOISE):
    """Budgets of two releases on the same rows whose composition is (epsilon, delta).

    ``share`` and ``1 - share`` of the budget by the library's one split
    (:func:`~sklearn_dpsco.accounting._shares.split_by_weights`): epsilon for
    pure DP, ``mu^2`` for the float Gaussian, ``rho`` for the secure one.
    """
    if not 0 < share < 1:
        raise ValueError(f"the localization share must be in (0, 1), got {share}.")
    first, second = Budget(epsilon, delta, noise).split((share, 1.0 - share))
    return (first.epsilon, first.delta), (second.epsilon, second.delta)


# --------------------------------------------------------------------------- OutputPert-Localize
@dataclass(frozen=True)
class LocalizePlan:
    """Public plan of OutputPert-Localize: the release and the ball radius."""

    release: object  # OutputPerturbationPlan
    radius: float
    zeta: float

    @property
    def event(self):
        return self.release.event

    @property
    def start(self):
        return self.release.start

    @property
    def stop(self):
        return self.release.stop


def output_pert_localize_plan(n, d, *, lam, clip, epsilon, delta=0.0, zeta=3.0, start=0, tolerance=0.1,
                              noise=DEFAULT_NOISE, objective_scale=OBJECTIVE_SCALE):
    """Plan OutputPert-Localize (Lowy Algorithm 2) on ``n`` rows from ``start``.

    The radius ``tau + q`` (``tau`` the certified distance target, ``q`` the
    exact ``1 - exp(-zeta)`` quantile of the noise norm) makes the returned
    ball contain the exact regularized minimizer with probability at least
    ``1 - exp(-zeta)``. Privacy does not depend on it.
    """
    zeta = check_positive(zeta, "zeta")
    release = output_perturbation_plan(
        n, d, lam=lam, clip=clip, epsilon=epsilon, delta=delta, start=start, tolerance=tolerance, noise=noise,
        objective_scale=objective_scale,
    )
    # why: ||Pi_W(w~ + b) - w*|| <= ||w~ - w*|| + ||b|| <= tau + ||b|| (w* in W, projections are
    # non-expansive), and ||b|| exceeds its exact quantile with probability exp(-zeta).
    radius = release.target_distance + noise_norm_quantile(release.mechanism, zeta)
    return LocalizePlan(release, radius, zeta)


def _project_domain(v, domain):
    return v if domain is None else project_ball(v, *domain)


def run_output_pert_localize(data, loss, plan, rng, *, w0, domain=None):
    """Run a :class:`LocalizePlan`; returns the ball ``(center, radius)``.

    ``domain`` is the public ball ``W = (center, radius)`` the ERM is
    constrained to (``None``: R^d).
    """
    noisy = run_output_perturbation(data, loss, plan.release, rng, w0=w0, ball=domain)
    return _project_domain(noisy, domain), plan.radius


def output_pert_localize(data, loss, *, lam, clip, epsilon, rng, w0=None, delta=0.0, zeta=3.0, start=0, stop=None,
                         domain=None, tolerance=0.1, noise=DEFAULT_NOISE):
    """OutputPert-Localize on rows [start, stop): plan from public inputs, then run.

    Returns
    -------
    ball : (ndarray, float)
        Centre and radius of the localized ball.
    event : PrivacyEvent
    """
    stop = data.n_samples if stop is None else stop
    plan = output_pert_localize_plan(
        stop - start, data.n_features, lam=lam, clip=clip, epsilon=epsilon, delta=delta, zeta=zeta, start=start,
        tolerance=tolerance, noise=noise,
    )
    w0 = np.zeros(data.n_features) if w0 is None else np.asarray(w0, dtype=float)
    return run_output_pert_localize(data, loss, plan, rng, w0=w0, domain=domain), plan.event


# --------------------------------------------------------------------------- Double-OutputPert
@dataclass(frozen=True)
class DoubleOutputPerturbationPlan:
    """Public plan of Double-OutputPert: the localization and the second release (same rows)."""

    localize: LocalizePlan
    release: object  # OutputPerturbationPlan

    @property
    def event(self):
        return ComposedEvent((self.localize.event, self.release.event))

    @property
    def start(self):
        return self.release.start

    @property
    def stop(self):
        return self.release.stop

    @property
    def lam(self):
        return self.release.lam


def double_output_perturbation_plan(m, d, *, lam, clip, epsilon, delta=0.0, localize_share=0.5, zeta=3.0, start=0,
                                    tolerance=0.1, noise=DEFAULT_NOISE, objective_scale=OBJECTIVE_SCALE):
    """Plan Double-OutputPert (Lowy Algorithm 4) on ``m`` rows from ``start``.

    Stage 1 (OutputPert-Localize) gets ``localize_share`` of the budget,
    stage 2 the rest (Lowy: 1/2 each; :func:`split_two_stages`); both stages
    see the same rows, so the event is their sequential composition.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    (eps1, delta1), (eps2, delta2) = split_two_stages(epsilon, delta, localize_share, noise)
    common = dict(lam=lam, clip=clip, start=start, tolerance=tolerance, noise=noise, objective_scale=objective_scale)
    localize = output_pert_localize_plan(m, d, epsilon=eps1, delta=delta1, zeta=zeta, **common)
    release = output_perturbation_plan(m, d, epsilon=eps2, delta=delta2, **common)
    return DoubleOutputPerturbationPlan(localize, release)


def _project_localized(v, ball, domain):
    if domain is None:
        return project_ball(v, *ball)
    return project_two_balls(v, domain[0], domain[1], ball[0], ball[1])


def run_double_output_perturbation(data, loss, plan, rng, *, w0, domain=None):
    """Run a :class:`DoubleOutputPerturbationPlan`; returns the released point.

    Stage 2 minimizes the same regularized extended objective constrained to
    the localized ball ``B(center, radius)`` (a public function of stage 1's
    output), releases it with its own noise, and projects the result onto
    ``W ∩ B(center, radius)`` (post-processing).
    """
    ball = run_output_pert_localize(data, loss, plan.localize, rng, w0=w0, domain=domain)
    noisy = run_output_perturbation(data, loss, plan.release, rng, w0=w0, ball=ball)
    return _project_localized(noisy, ball, domain)


def double_output_perturbation(data, loss, *, lam, clip, epsilon, rng, w0=None, delta=0.0, localize_share=0.5,
                               zeta=3.0, start=0, stop=None, domain=None, tolerance=0.1, noise=DEFAULT_NOISE):
    """Double-OutputPert on rows [start, stop): plan from public inputs, then run."""
    stop = data.n_samples if stop is None else stop
    plan = double_output_perturbation_plan(
        stop - start, data.n_features, lam=lam, clip=clip, epsilon=epsilon, delta=delta,
        localize_share=localize_share, zeta=zeta, start=start, tolerance=tolerance, noise=noise,
    )
    w0 = np.zeros(data.n_features) if w0 is None else np.asarray(w0, dtype=float)
    coef = run_double_output_perturbation(data, loss, plan, rng, w0=w0, domain=domain)
    return PrivateFit(coef=coef, event=plan.event, info={"localized_radius": plan.localize.radius, "lam": lam})


# --------------------------------------------------------------------------- geometric aggregation
def geometric_aggregate(points):
    """Index of the point with the smallest majority radius (doc/algorithms.rst, L-Alg 1).

    ``r_j`` is the smallest r such that more than J/2 points (itself
    included) lie within r of point j; the aggregate is the point with the
    smallest ``r_j`` (ties: smallest j). If more than J/2 points lie within R
    of some w°, the aggregate is within 3R of w°. Post-processing.
    """
    P = np.asarray(points, dtype=float)
    J = P.shape[0]
    if J == 1:
        return 0
    dist = np.sqrt(np.maximum(((P[:, None, :] - P[None, :, :]) ** 2).sum(-1), 0.0))
    # the (floor(J/2) + 1)-th smallest distance in each row (the zero to itself included)
    radii = np.sort(dist, axis=1)[:, J // 2]
    return int(np.argmin(radii))


# --------------------------------------------------------------------------- Pop-Localize
@dataclass(frozen=True)
class PopLocalizePlan:
    """Public plan of Pop-Localize: ``phases[t][j]`` is the inner plan of block (t, j)."""

    phases: tuple
    lams: tuple
    event: object
    info: dict

    @property
    def n_calls(self):
        return sum(len(p) for p in self.phases)


_INNER = ("double", "single")


def _inner_plan(inner, m, d, *, lam, clip, epsilon, delta, localize_share, zeta, start, tolerance, noise,
                objective_scale):
    if inner == "double":
        return double_output_perturbation_plan(
            m, d, lam=lam, clip=clip, epsilon=epsilon, delta=delta, localize_share=localize_share, zeta=zeta,
            start=start, tolerance=tolerance, noise=noise, objective_scale=objective_scale,
        )
    return output_perturbation_plan(
        m, d, lam=lam, clip=clip, epsilon=epsilon, delta=delta, start=start, tolerance=tolerance, noise=noise,
        objective_scale=objective_scale,
    )


def pop_localize_plan(n, d, *, clip, epsilon, lam1, delta=0.0, phases=None, repeats=1, lam_growth=32.0,
                      shrink=2.0, min_block=1, inner="double", localize_share=0.5, zeta=3.0, start=0,
                      tolerance=0.1, noise=DEFAULT_NOISE, objective_scale=OBJECTIVE_SCALE):
    """Plan Pop-Localize (Lowy Algorithm 1) on ``n`` rows from ``start``.

    Phase t (t = 1..T) uses ``n_t = floor(n / shrink^t)`` fresh rows, split
    into ``repeats`` (J) blocks of ``m_t = floor(n_t / J)`` rows, each
    solved by the inner solver with regularization ``lam_t = lam_growth^(t-1)
    lam1`` centred at the previous aggregate. Lowy: ``shrink = 2``,
    ``lam_growth = 32``, ``T = ceil(log2 n)``. Phases whose blocks would have
    fewer than ``min_block`` rows are dropped (a public rule; fewer releases
    on disjoint blocks leave the argument unchanged); every block's certified
    target is at least the float floor of its plan, which float64 can prove
    (doc/privacy/output_perturbation.rst, "Float floor"). Every block gets the
    full budget: blocks are disjoint, so the run is (epsilon, delta)-DP by
    parallel composition (``ParallelComposedEvent``).

    Parameters
    ----------
    inner : {"double", "single"}
        ``"double"``: Double-OutputPert (Lowy Algorithm 4). ``"single"``:
        one certified output perturbation (ALT24's original inner solver).
    objective_scale : float
        Declared size of the certificate's terms in every block's plan (its
        float floor, doc/privacy/output_perturbation.rst).
    """
    clip = check_positive(clip, "clip")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    lam1 = check_positive(lam1, "lam1")
    if inner not in _INNER:
        raise ValueError(f"inner must be one of {_INNER}, got {inner!r}.")
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}.")
    repeats = int(repeats)
    if not shrink > 1:
        raise ValueError(f"shrink must be > 1, got {shrink}.")
    T = max(1, math.ceil(math.log2(max(n, 2)))) if phases is None else int(phases)
    if T < 1:
        raise ValueError(f"phases must be >= 1, got {phases!r}.")
    out, lams, offset = [], [], start
    for t in range(1, T + 1):
        n_t = int(n // shrink**t)
        m_t = n_t // repeats
        if m_t < max(1, min_block):
            break
        lam_t = lam1 * lam_growth ** (t - 1)
        out.append(
            tuple(
                _inner_plan(
                    inner, m_t, d, lam=lam_t, clip=clip, epsilon=epsilon, delta=delta,
                    localize_share=localize_share, zeta=zeta, start=offset + j * m_t, tolerance=tolerance,
                    noise=noise, objective_scale=objective_scale,
                )
                for j in range(repeats)
            )
        )
        lams.append(lam_t)
        offset += n_t
    if not out:
        raise ValueError(
            f"Pop-Localize needs at least {repeats * max(1, min_block)} rows in its first phase "
            f"(n / {shrink:g} with {repeats} repeats of at least {max(1, min_block)} rows); got n={n}."
        )
    event = ParallelComposedEvent(tuple(p.event for phase in out for p in phase))
    info = {
        "phases": len(out),
        "repeats": repeats,
        "lams": list(lams),
        "block_sizes": [phase[0].stop - phase[0].start for phase in out],
        "inner": inner,
        "rows_used": offset - start,
    }
    return PopLocalizePlan(tuple(out), tuple(lams), event, info)


def _aligned(data):
    """``data`` with float-aligned buffers.

    Process backends (Dask's in particular) may unpickle arrays at addresses
    that are not multiples of 8 bytes; BLAS then takes another code path and
    rounds differently, so results would depend on the backend. A copy
    restores numpy's alignment (only ever needed after a process hop, where
    the data were copied anyway).
    """
    X = data.X
    arrays = [X.data, X.indices, X.indptr] if data.sparse else [X]
    arrays += [data.y] + ([] if data.sample_weight is None else [data.sample_weight])
    if all(a.flags.aligned for a in arrays):
        return data
    X = X.copy() if data.sparse else np.array(X, order="C")
    sw = None if data.sample_weight is None else np.array(data.sample_weight)
    return GLMData(X, np.array(data.y), sw, data.intercept_scaling)


def _run_inner(data, loss, plan, random_state, w0, domain):
    """One inner call (module level: picklable for process and Dask backends)."""
    data = _aligned(data)
    rng = check_random_state(random_state)
    if isinstance(plan, DoubleOutputPerturbationPlan):
        return run_double_output_perturbation(data, loss, plan, rng, w0=w0, domain=domain)
    return _project_domain(run_output_perturbation(data, loss, plan, rng, w0=w0, ball=domain), domain)


def run_pop_localize(data, loss, plan, *, center, rng, domain=None, n_jobs=None):
    """Run a :class:`PopLocalizePlan`.

    The random states of all ``T x J`` inner calls are drawn from ``rng``
    before the first dispatch (:func:`~sklearn_dpsco._rng.spawn_random_states`),
    so the result is identical for any ``n_jobs`` and joblib backend (threads,
    processes, Dask). The J calls of a phase run through joblib.
    """
    states = spawn_random_states(rng, plan.n_calls)
    w = np.asarray(center, dtype=float)
    k = 0
    for phase in plan.phases:
        outs = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_run_inner)(data, loss, p, s, w, domain) for p, s in zip(phase, states[k : k + len(phase)])
        )
        k += len(phase)
        w = np.asarray(outs[geometric_aggregate(outs)], dtype=float)
    return w


def pop_localize(data, loss, *, clip, epsilon, lam1, rng, center=None, delta=0.0, start=0, stop=None, domain=None,
                 n_jobs=None, **schedule):
    """Pop-Localize on rows [start, stop): plan from public inputs, then run.

    ``schedule`` keywords are those of :func:`pop_localize_plan`.
    """
    stop = data.n_samples if stop is None else stop
    plan = pop_localize_plan(
        stop - start, data.n_features, clip=clip, epsilon=epsilon, lam1=lam1, delta=delta, start=start, **schedule
    )
    center = np.zeros(data.n_features) if center is None else center
    coef = run_pop_localize(data, loss, plan, center=center, rng=rng, domain=domain, n_jobs=n_jobs)
    return PrivateFit(coef=coef, event=plan.event, info=dict(plan.info))
