"""Deletion-sensitivity output perturbation for user-level strongly convex ERM.

Ghazi, Kamath, Kumar, Meka, Manurangsi, Zhang (ICML 2023), Algorithm 1
(DelOutputPert) with the certificate of their Appendix C, as reconstructed in
doc/algorithms.rst, §2 and proved in doc/privacy/user_level.rst. Two tests decide
which point is released; both share the same skeleton:

1. draw ``l ~ TDLap(eps1, k)`` on {0, ..., 2k} and the Gaussian noise Z
   (both before any data is touched);
2. compute an integer *level* ``L(x)`` and a set of users ``S(x)`` with
   ``|S(x)| <= L(x)``;
3. release ``A(x without S(x)) + Z`` if ``l >= L(x)``, else the refusal
   symbol (``None``, "⊥").

``test="exhaustive"`` is G-Alg 1 itself: ``L(x)`` is the size of the smallest
*good* set (every further deletion of up to K = 4k - 1 users moves the
certified minimizer by at most the public Δ), found by enumerating all sets
of up to K + 1 users — unless the App. C certificate (per-user gradient sums
at the certified minimizer) already proves that the empty set is good, in
which case the output law is exactly the enumeration's. The enumeration costs
``sum_{u <= K+1} C(n, u)`` solves; its cost is computed from public (n, K) and
checked against a user-set budget before anything runs; the plan refuses
otherwise.

``test="graded"`` (OUR CONSTRUCTION, proved in doc/privacy/user_level.rst)
replaces the enumeration by a count of outlying users. With the per-user
gradient sums ``s_u`` at the certified full-data minimizer and public
thresholds ``theta_j = theta_0 + j eta``:

    L(x) = min{ j : #{u : ||s_u|| > theta_j} <= j },   S(x) = {u : ||s_u|| > theta_L}.

Replacing one user moves every other user's sum by at most the public ``eta``,
so ``L`` changes by at most one between neighbours (the property the
exhaustive search gets from Observation 3.5), and the removal of S(x) is
proven good from public bounds alone. It costs two certified solves; its fast
path (``L(x) = 0``: every per-user sum below ``theta_0``) is the App. C
certificate.

Every threshold, noise scale, k, K and budget split is computed from public
inputs (n users, cap m, dimension, R, lambda, epsilon, delta) by
:func:`deletion_plan` before the data is touched.
"""

import itertools
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from joblib import Parallel, delayed

from ..._budget import Budget
from ..._mechanisms import DEFAULT_NOISE, GaussianMechanism, TruncatedDiscreteLaplace
from ..._mechanisms._calibrate import certified_sensitivity, gaussian_mechanism_for, truncated_level_for
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ApproxDPEvent, gaussian_mu
from .._optim._user_erm import augmented_user_sums, solve_user_logistic

__all__ = [
    "DeletionBudget",
    "DeletionPlan",
    "DEFAULT_MAX_EXHAUSTIVE_SOLVES",
    "deletion_budget",
    "deletion_plan",
    "exhaustive_cost",
    "graded_level",
    "graded_step_bounds",
    "record_diagnostics",
    "release_at_level",
    "run_deletion_mechanism",
    "certificate_value",
    "deletion_centre",
]

#: Default compute budget of the exhaustive test, in certified solves.
DEFAULT_MAX_EXHAUSTIVE_SOLVES = 20_000
# Candidate shares of epsilon given to the TDLap step; the plan keeps the one
# with the smallest noise (a public computation).
_EPS1_FRACTIONS = (0.25, 0.35, 0.45, 0.5, 0.55, 0.65, 0.75)
# Solver accuracy as a fraction of what keeps the residual bound rho_0 at 5% of theta_0.
_TAU_FRACTION = 0.05


# --------------------------------------------------------------------------- diagnostics
class _Recorder:
    lock = threading.Lock()
    sinks = []


@contextmanager
def record_diagnostics():
    """Collect per-call diagnostics (level, removed users, fast path) into a list.

    FOR BENCHMARKS AND TESTS ONLY: these quantities depend on the private data
    and are NOT covered by the privacy guarantee. Nothing is recorded unless
    this context is active; fitted estimators never store them. The sink lives
    here because :func:`deletion_centre` writes to it at run time; tests and
    benchmarks reach it as ``sklearn_dpsco.testing.record_deletion_diagnostics``.
    """
    sink = []
    with _Recorder.lock:
        _Recorder.sinks.append(sink)
    try:
        yield sink
    finally:
        with _Recorder.lock:
            _Recorder.sinks.remove(sink)


def _record(**info):
    if _Recorder.sinks:
        with _Recorder.lock:
            for sink in _Recorder.sinks:
                sink.append(dict(info))


# --------------------------------------------------------------------------- budget: k, K, split
@lru_cache(maxsize=4096)
def _tdlap_k(epsilon1, delta1):
    # k depends on the pmf only, not on the sampling path: the plan builds the sampler with its noise
    return TruncatedDiscreteLaplace.for_delta(epsilon1, delta1, noise="float").k


@lru_cache(maxsize=4096)
def _gaussian_mu(epsilon, delta):
    return gaussian_mu(epsilon, delta)


@dataclass(frozen=True)
class DeletionBudget:
    """The privacy split of one deletion-mechanism call (doc/algorithms.rst, G-Alg 1).

    ``epsilon1, delta1`` go to the truncated discrete Laplace level (its end
    atom has mass <= delta1), ``epsilon2, delta2`` to the Gaussian release.
    The call is ``(epsilon1 + epsilon2, 2 delta1 + e^epsilon1 delta2)``-DP.
    """

    epsilon1: float
    epsilon2: float
    delta1: float
    delta2: float
    k: int

    @property
    def K(self):
        """Largest number of deleted users a good set must tolerate: 4k - 1."""
        return 4 * self.k - 1

    @property
    def min_users(self):
        """n >= 2(K + 1): every dataset with K + 1 users deleted keeps at least half of them."""
        return 2 * (self.K + 1)

    @property
    def epsilon(self):
        return self.epsilon1 + self.epsilon2

    @property
    def delta(self):
        return 2.0 * self.delta1 + math.exp(self.epsilon1) * self.delta2

    @property
    def event(self):
        return ApproxDPEvent(self.epsilon, self.delta)

    @property
    def gaussian_mu(self):
        return _gaussian_mu(self.epsilon2, self.delta2)


def deletion_budget(epsilon, delta, epsilon1_fraction=0.5, delta1_fraction=0.5):
    """Split (epsilon, delta) between the level and the release; choose the minimal k.

    ``epsilon1 = f epsilon``, ``epsilon2 = epsilon - epsilon1``; ``delta1 = g
    delta / 2`` and ``delta2 = (delta - 2 delta1) e^-epsilon1`` so that ``2
    delta1 + e^epsilon1 delta2 = delta`` (rounded down). With f = g = 1/2
    this is the split of G-Alg 1 (delta1 = delta/4, delta2 = delta/(2
    e^(eps/2))); ``epsilon1`` is capped at ``ln(1/delta1) + 1``, where k is already
    1. ``k`` is the smallest half-width whose TDLap end atom has
    mass <= delta1 (never more than G-Def 3.4's ceil(ln(1/delta1)/eps1)).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError(
            "the deletion-sensitivity mechanism needs delta > 0 (its level distribution always "
            "has an uncovered end atom and its release is Gaussian)."
        )
    if not (0 < epsilon1_fraction < 1 and 0 < delta1_fraction < 1):
        raise ValueError("epsilon1_fraction and delta1_fraction must lie in (0, 1).")
    delta1 = delta1_fraction * delta / 2.0
    # beyond ln(1/delta1) + 1 the level already has k = 1 (end mass e^-eps1 / Z <= delta1): a larger
    # share would buy nothing and, for huge epsilon, make e^-eps1 delta2 underflow.
    eps1 = min(epsilon * epsilon1_fraction, math.log(1.0 / delta1) + 1.0)
    eps2 = epsilon - eps1
    delta2 = (delta - 2.0 * delta1) * math.exp(-eps1) * (1.0 - 1e-12)
    budget = DeletionBudget(eps1, eps2, delta1, delta2, _tdlap_k(eps1, delta1))
    assert budget.epsilon <= epsilon * (1 + 1e-12) and budget.delta <= delta
    return budget


def exhaustive_cost(n_users, K):
    """Number of certified solves of the exhaustive test: all sets of <= K + 1 deleted users."""
    return sum(math.comb(n_users, u) for u in range(0, min(K + 1, n_users - 1) + 1))


# --------------------------------------------------------------------------- public bounds
def _smoothness(data_norm, lam):
    """Per-item smoothness of logistic + regulariser share: R^2/4 + lam (row norms <= R)."""
    return 0.25 * data_norm * data_norm + lam


def _concentration_threshold(n_users, max_items, data_norm, beta):
    """Gamma_0 = b sqrt(2 m ln(2n/beta)), b = 2R: w.h.p. bound on every per-user sum at the optimum.

    Lemma 3.8 of Ghazi et al. 2023 (constant from Hoeffding-Pinelis: doc/algorithms.rst,
    G-Thm 3.6) for the m items of a user drawn without replacement from zero-sum
    vectors ``grad l + lam (w* - c)`` of norm <= 2R, union bound over the n users.
    Utility only.
    """
    b = 2.0 * data_norm
    return b * math.sqrt(2.0 * max_items * math.log(2.0 * n_users / beta))


def graded_step_bounds(n_users, max_items, data_norm, lam, tau, k, thresholds):
    """Public per-level bounds Delta_j of the graded test (doc/privacy/user_level.rst, Lemma G2).

    If ``L(x) = j`` and S(x) is removed, every further deletion step
    ``ERM(x - U) -> ERM(x - U - i)`` with ``S(x) ⊆ U``, ``|U| <= K``, ``i ∉ U``
    moves the exact minimizer by at most ``Delta_j``. Two valid routes, the
    smaller is kept:

    * smoothness: ``||s_i(ERM(x - U))|| <= theta_j + m beta_s D_j`` and
      ``||ERM(V) - ERM(V - i)|| <= ||s_i(ERM(V))|| / (lam (|V| - 1) m)``;
    * triangle through the certified full-data point (App. C style).

    with ``D_j = (rho_0 + j Gamma_max + (K - j) a_j) / (lam (n - K) m)``
    bounding ``||A(x) - ERM(x - U)||``.
    """
    K = 4 * k - 1
    n, m, R = n_users, max_items, data_norm
    beta_s = _smoothness(R, lam)
    gamma_max = 2.0 * m * R + m * lam * tau  # ||s_u(A(x))|| for ANY user (rows <= R)
    rho0 = n * m * beta_s * tau  # ||sum_u s_u(A(x))|| = n m ||grad F(A(x))|| <= n m beta_s tau
    j = np.arange(len(thresholds), dtype=float)
    a_j = np.minimum(np.asarray(thresholds, dtype=float), gamma_max)
    d_j = (rho0 + j * gamma_max + (K - j) * a_j) / (lam * (n - K) * m)
    smooth = np.minimum(a_j + m * beta_s * d_j, 2.0 * m * R) / (lam * (n - K - 1) * m)
    triangle = d_j + (rho0 + j * gamma_max + (K + 1 - j) * a_j) / (lam * (n - K - 1) * m)
    out = np.minimum(smooth, triangle)
    # running maximum: the chain argument uses that Delta_j is non-decreasing
    return tuple(np.maximum.accumulate(out).tolist())


def _graded_release_sensitivity(step_bounds, k, tau):
    """Largest distance between released centres on neighbours (chain argument, Lemma G3).

    For neighbours with levels a = L(x) <= 2k - 1 and b = L(x') <= a + 1, the
    walk from S(x) to T = S(x) ∪ S(x') ∪ {i*} takes <= b + 1 steps of
    Delta_a, the walk from S(x') <= a + 1 steps of Delta_b; plus the solver's
    2 tau. Delta is non-decreasing, so the worst b is a + 1.
    """
    steps = np.asarray(step_bounds, dtype=float)
    a = np.arange(0, 2 * k)
    return certified_sensitivity(float(np.max((a + 2) * steps[a] + (a + 1) * steps[a + 1])), tau)


@dataclass(frozen=True)
class DeletionPlan:
    """Public plan of one deletion-mechanism call (computed before the data is touched)."""

    test: str
    n_users: int
    max_items: int
    n_coef: int
    data_norm: float
    lam: float
    tau: float
    beta: float
    budget: DeletionBudget
    thresholds: tuple
    step_bounds: tuple
    release_sensitivity: float
    mechanism: GaussianMechanism
    tdlap: TruncatedDiscreteLaplace
    max_exhaustive_solves: int

    @property
    def event(self):
        return self.budget.event

    @property
    def sigma(self):
        return self.mechanism.sigma

    @property
    def k(self):
        return self.budget.k

    @property
    def K(self):
        return self.budget.K

    @property
    def delta_cert(self):
        """Exhaustive test: the public threshold Delta_cert (single entry of ``step_bounds``)."""
        return self.step_bounds[0]

    @property
    def exhaustive_cost(self):
        return exhaustive_cost(self.n_users, self.K)

    def public_info(self):
        return {
            "test": self.test,
            "n_users": self.n_users,
            "k": self.k,
            "K": self.K,
            "lam": self.lam,
            "tau": self.tau,
            "theta0": self.thresholds[0],
            "step_bound": self.step_bounds[-1],
            "release_sensitivity": self.release_sensitivity,
            "sigma": self.sigma,
            "epsilon1": self.budget.epsilon1,
            "epsilon2": self.budget.epsilon2,
        }


def _plan_for_budget(test, n, m, p, R, lam, beta, budget, tau, theta0):
    k, K = budget.k, budget.K
    beta_s = _smoothness(R, lam)
    gamma0 = _concentration_threshold(n, m, R, beta)
    if tau is None:
        # keeps the public residual bound rho_0 = n m beta_s tau at 5% of Gamma_0
        tau = _TAU_FRACTION * gamma0 / (n * m * beta_s)
    base = gamma0 + m * beta_s * tau if theta0 is None else float(theta0)
    if test == "graded":
        # why: a replaced user moves the certified minimizer by <= 2R/(lam n) + 2 tau and
        # every other user's sum by <= m beta_s times that (Lemma G1)
        eta = m * beta_s * certified_sensitivity(2.0 * R / (lam * n), tau)
        eta += 1e-9 * (2.0 * m * R)  # float margin: computed scores carry rounding ~1e-12 Gamma_max
        thresholds = tuple(base + j * eta for j in range(2 * k + 1))
        steps = graded_step_bounds(n, m, R, lam, tau, k, thresholds)
        sensitivity = _graded_release_sensitivity(steps, k, tau)
    else:
        # App. C: Delta_cert = 2 tau + (2 rho_0 + (2K + 1) Gamma_0) / (lam (n - K - 1) m), f = A
        rho0 = n * m * beta_s * tau
        delta_cert = certified_sensitivity((2.0 * rho0 + (2 * K + 1) * base) / (lam * (n - K - 1) * m), tau)
        thresholds, steps = (base,), (delta_cert,)
        # why: chain bound of G-Alg 1 — released centres differ by <= (4k + 1) Delta
        sensitivity = (4 * k + 1) * delta_cert
    return thresholds, steps, sensitivity, tau


def deletion_plan(n_users, max_items, n_coef, *, data_norm, lam, epsilon, delta, test="graded", beta=0.05,
                  tau=None, theta0=None, epsilon1_fraction=None, max_exhaustive_solves=DEFAULT_MAX_EXHAUSTIVE_SOLVES,
                  noise=DEFAULT_NOISE):
    """Plan one deletion-mechanism call from public inputs only.

    Parameters
    ----------
    n_users : int
        Number of users in the call (public under replace-one-user).
    max_items : int
        Public cap m on rows per user.
    n_coef : int
        Dimension of the released vector.
    data_norm : float
        Public row-norm bound R.
    lam : float
        Strong convexity of the regulariser.
    epsilon, delta : float
        Budget of the call (delta > 0).
    test : {"graded", "exhaustive"}, default="graded"
    beta : float, default=0.05
        Utility failure probability the default threshold is set for.
    tau : float, optional
        Solver accuracy (public); default keeps the residual bound small.
    theta0 : float, optional
        Public base threshold on per-user gradient-sum norms (default: the
        concentration bound Gamma_0 plus the solver slack).
    epsilon1_fraction : float, optional
        Share of epsilon for the level; default: the candidate with the
        smallest noise.
    max_exhaustive_solves : int
        Compute budget of the exhaustive test; the plan refuses when the
        public cost exceeds it.

    Returns
    -------
    DeletionPlan

    Raises
    ------
    ValueError
        Too few users (n < 2(K + 1)) or an exhaustive test over budget —
        decided from public quantities, before any data is touched.
    """
    if test not in ("graded", "exhaustive"):
        raise ValueError(f"test must be 'graded' or 'exhaustive', got {test!r}.")
    lam = check_positive(lam, "lam")
    data_norm = check_positive(data_norm, "data_norm")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}.")
    n, m, p = int(n_users), int(max_items), int(n_coef)
    fractions = _EPS1_FRACTIONS if epsilon1_fraction is None else (float(epsilon1_fraction),)
    best = None
    smallest_needed = None
    for f in fractions:
        budget = deletion_budget(epsilon, delta, f)
        smallest_needed = budget.min_users if smallest_needed is None else min(smallest_needed, budget.min_users)
        if n < budget.min_users:
            continue
        if test == "exhaustive" and exhaustive_cost(n, budget.K) > max_exhaustive_solves:
            continue
        thresholds, steps, sens, tau_f = _plan_for_budget(test, n, m, p, data_norm, lam, beta, budget, tau, theta0)
        sigma = sens / budget.gaussian_mu
        if best is None or sigma < best[0]:
            best = (sigma, budget, thresholds, steps, sens, tau_f)
    if best is None:
        if n < smallest_needed:
            raise ValueError(
                f"the user-level deletion mechanism needs at least {smallest_needed} users at "
                f"epsilon={epsilon:g}, delta={delta:g} (n >= 2(K + 1), K = 4k - 1 with k = O(log(1/delta)/epsilon)); "
                f"got {n} users. Nothing was spent. Use more users, a larger budget, or solver='user_dp_sgd'."
            )
        raise ValueError(
            f"the exhaustive deletion test needs {exhaustive_cost(n, deletion_budget(epsilon, delta).K):.3g} "
            f"certified solves for n={n} users at epsilon={epsilon:g}, delta={delta:g}, above "
            f"max_exhaustive_solves={max_exhaustive_solves}; refusing before anything is spent. "
            "Use deletion_test='graded' (polynomial) or raise the compute budget."
        )
    sigma, budget, thresholds, steps, sens, tau_f = best
    mechanism = gaussian_mechanism_for(sens, Budget(budget.epsilon2, budget.delta2, noise), p)
    return DeletionPlan(
        test=test, n_users=n, max_items=m, n_coef=p, data_norm=data_norm, lam=lam, tau=tau_f, beta=beta,
        budget=budget, thresholds=thresholds, step_bounds=steps, release_sensitivity=sens, mechanism=mechanism,
        tdlap=truncated_level_for(budget.epsilon1, budget.k, noise), max_exhaustive_solves=int(max_exhaustive_solves),
    )


# --------------------------------------------------------------------------- the mechanism
def graded_level(scores, thresholds):
    """``L = min{ j : #{u : score_u > theta_j} <= j }`` (``len(thresholds)`` if none)."""
    scores = np.asarray(scores, dtype=float)
    for j, theta in enumerate(thresholds):
        if np.count_nonzero(scores > theta) <= j:
            return j
    return len(thresholds)


def release_at_level(plan, level, centre, rng, size=None):
    """The randomised part: draw ``l ~ TDLap`` and Z, release ``centre + Z`` iff ``l >= level``.

    Returns ``(released, points)``: with ``size=None`` a bool and a vector
    (``None`` when refused); with ``size`` a bool array and an array of
    points (rows of refused draws are NaN). The run path and the statistical
    audits call this same function. ``l`` is drawn before Z, and both are
    drawn whatever the level, so the random stream never depends on the data.
    """
    ell = plan.tdlap.sample(rng, size)
    noise = plan.mechanism.draw(rng, size)
    released = np.asarray(ell) >= level
    # the release rounds the centre to the noise grid (doc/privacy/secure_noise.rst, "The release contract")
    if size is None:
        return bool(released), (noise.release(centre) if released else None)
    points = noise.release(np.zeros(plan.n_coef) if centre is None else centre)
    points[~released] = np.nan
    return released, points


def _solve(data, users, plan, lam, center):
    X, y, _ = data.subset(users)
    return solve_user_logistic(
        X, y, len(users), max_items=plan.max_items, data_norm=plan.data_norm, lam=lam, center=center, tau=plan.tau
    ).w


def _user_sum_norms(data, users, w, lam, center, max_items):
    X, y, indptr = data.subset(users)
    sums = augmented_user_sums(X, y, indptr, w, lam=lam, center=center, max_items=max_items)
    return sums, np.linalg.norm(sums, axis=1)


def deletion_centre(data, plan, *, lam, center, users=None, n_jobs=None, force_exhaustive=False):
    """The deterministic part of one call: the level ``L(x)`` and the centre ``A(x - S(x))``.

    Returns ``(level, centre)``; ``centre`` is None when ``level > 2k`` (every
    draw is refused). For the exhaustive test, ``L(x)`` is the size of the
    smallest good set and the centre is ``A`` on the data without the
    canonically first good set of that size — exactly what G-Alg 1 releases
    for every ``l >= L(x)``.

    Parameters
    ----------
    data : UserData
    plan : DeletionPlan
        From :func:`deletion_plan` with ``n_users == len(users)`` and ``lam``.
    lam : float
        Strong convexity of the regulariser (must equal ``plan.lam``).
    center : ndarray
        Regularisation centre (public or an earlier private output).
    users : array of int, optional
        The users of this call (default: all), sorted.
    n_jobs : int, optional
        Threads for the exhaustive test's independent solves.
    force_exhaustive : bool, default=False
        Test hook: skip the App. C shortcut of the exhaustive test (the output
        law is the same when the shortcut would have fired).
    """
    users = np.arange(data.n_users) if users is None else np.asarray(users, dtype=np.intp)
    if len(users) != plan.n_users or lam != plan.lam:
        raise ValueError("the plan was made for another number of users or another lambda.")
    center = np.asarray(center, dtype=float)
    w = _solve(data, users, plan, lam, center)
    sums, norms = _user_sum_norms(data, users, w, lam, center, plan.max_items)
    if plan.test == "graded":
        level = graded_level(norms, plan.thresholds)
        if level > 2 * plan.k:
            _record(test="graded", level=level, removed=None, fast=False)
            return level, None
        removed = np.flatnonzero(norms > plan.thresholds[level])
        centre = w if removed.size == 0 else _solve(data, np.delete(users, removed), plan, lam, center)
        _record(test="graded", level=level, removed=int(removed.size), fast=level == 0)
        return level, centre
    fast = False if force_exhaustive else certificate_value(sums, norms, plan) <= plan.delta_cert
    if fast:
        _record(test="exhaustive", level=0, fast=True)
        return 0, w
    chosen = _exhaustive_search(data, users, plan, lam, center, n_jobs)
    if chosen is None:
        _record(test="exhaustive", level=2 * plan.k + 1, fast=False)
        return 2 * plan.k + 1, None
    _record(test="exhaustive", level=len(chosen[0]), fast=False)
    return len(chosen[0]), chosen[1]


def run_deletion_mechanism(data, plan, rng, *, lam, center, users=None, n_jobs=None, force_exhaustive=False):
    """One call of the planned mechanism; returns the released vector, or None (⊥).

    ``l`` and Z are drawn by :func:`release_at_level` whatever the data, so
    the random stream (and the number of draws) never depends on the data.
    Parameters as :func:`deletion_centre`, plus ``rng`` (numpy Generator).
    """
    level, centre = deletion_centre(data, plan, lam=lam, center=center, users=users, n_jobs=n_jobs,
                                    force_exhaustive=force_exhaustive)
    _, point = release_at_level(plan, level, centre, rng)
    return point


def certificate_value(sums, norms, plan):
    """App. C: ``Delta_hat = 2 tau + (2 rho_hat + (2K + 1) Gamma_hat) / (lam (n - K - 1) m)``.

    ``rho_hat = ||sum_u s_u||`` and ``Gamma_hat = max_u ||s_u||`` at the
    certified point; a relative float margin keeps it an upper bound.
    """
    n, K, m = plan.n_users, plan.K, plan.max_items
    rho_hat = float(np.linalg.norm(sums.sum(axis=0)))
    gamma_hat = float(norms.max())
    rho_hat += 1e-12 * float(norms.sum())  # float margin of the summed vector
    value = 2.0 * plan.tau + (2.0 * rho_hat + (2 * K + 1) * gamma_hat) / (plan.lam * (n - K - 1) * m)
    return value * (1.0 + 1e-12)


def _exhaustive_search(data, users, plan, lam, center, n_jobs):
    """G-Alg 1 steps 2-3: the canonically first good set of the smallest size <= 2k, or None.

    G-Alg 1 scans sizes 0..l in order, so for every ``l`` it returns this set
    when ``l`` is at least its size and ⊥ otherwise.

    Memoises ``f(U) = A(x - U)`` for every U of at most K + 1 (local) users,
    computed through joblib (deterministic solves, no randomness). A set S is
    good iff no U ⊇ S with |U| <= K has a deletion step longer than Delta.
    """
    n, K = len(users), plan.K
    delta = plan.delta_cert
    subsets = [U for size in range(0, min(K + 1, n - 1) + 1) for U in itertools.combinations(range(n), size)]
    points = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_solve)(data, np.delete(users, list(U)), plan, lam, center) for U in subsets
    )
    f = dict(zip(subsets, points))
    bad = []
    for U in subsets:
        if len(U) > K:
            continue
        fU = f[U]
        for i in range(n):
            if i in U:
                continue
            if float(np.linalg.norm(fU - f[tuple(sorted(U + (i,)))])) > delta:
                bad.append(frozenset(U))
                break

    def good(S):
        s = frozenset(S)
        return not any(s <= B for B in bad)

    for size in range(0, 2 * plan.k + 1):
        for S in itertools.combinations(range(n), size):
            if good(S):
                return S, f[S]
    return None
