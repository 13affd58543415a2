"""PNSGD and Snowball-SGD (Feldman, Koren, Talwar 2020, Algorithm 1, Thms 3.1, 3.5, 3.6).

Projected noisy SGD over consecutive, disjoint batches ``B_1..B_T`` (one
pass over the data), Gaussian noise ``xi_t ~ N(0, sigma^2 I)`` added to
every batch gradient, and only the LAST iterate released:

    w_t = Pi_K( w_{t-1} - eta_t (grad F_t(w_{t-1}) + xi_t) ).

Privacy (FKT Thm 3.1, amplification by iteration): if every per-row loss is
convex, L-Lipschitz and beta-smooth and ``eta_t <= 2 / beta``, the run is
``(alpha, alpha rho^2 / 2)``-RDP for all alpha, i.e. ``rho^2 / 2``-zCDP, with

    rho = 2 L max_t eta_t / (B_t sqrt(sum_{s >= t} eta_s^2 sigma_s^2)).

Every schedule here is computed from public inputs only (n, d, the target
rho, L = C, beta = R^2 + s^2, the domain radius) before any data is read;
:func:`fkt_rho` evaluates Thm 3.1 on the ACTUAL schedule and the plan
refuses to exist unless it is within the target. The smoothness condition is
made to hold for every input by clipping rows to the public bound R
(:mod:`._sgd_settings`). Argument and tests: doc/privacy/snowball_sgd.rst.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .._param_checks import check_positive
from ..accounting import ZCDPEvent
from ..accounting._calibration import zcdp_rho
from ._sgd_settings import SGDSettings

__all__ = [
    "PNSGDSchedule",
    "fkt_rho",
    "jnn_steps",
    "pnsgd_schedule",
    "rho_for_budget",
    "snowball_schedule",
]

# Relative margin on the batch rule's ceiling: a ratio that is an integer up
# to rounding must still round up, so that Thm 3.1's rho stays within target.
_CEIL_MARGIN = 1e-12


def rho_for_budget(epsilon, delta):
    """FKT's ``rho`` for a target (epsilon, delta): ``sqrt(2 rho_zCDP)``.

    ``rho_zCDP = zcdp_rho(epsilon, delta)`` is the largest zCDP parameter the
    library converts to (epsilon, delta); FKT's ``(alpha, alpha rho^2/2)``-RDP
    is ``rho^2/2``-zCDP.
    """
    if delta == 0:
        raise ValueError(
            "PNSGD / Snowball-SGD give approximate DP only (their guarantee is Renyi DP); "
            "set delta > 0 or choose a pure-DP solver."
        )
    return math.sqrt(2.0 * zcdp_rho(epsilon, delta))


def fkt_rho(batch_sizes, steps, sigmas, lipschitz):
    """Thm 3.1's ``rho = 2 L max_t eta_t / (B_t sqrt(sum_{s>=t} eta_s^2 sigma_s^2))``."""
    B = np.asarray(batch_sizes, dtype=np.float64)
    eta = np.asarray(steps, dtype=np.float64)
    sig = np.broadcast_to(np.asarray(sigmas, dtype=np.float64), eta.shape)
    tail = np.sqrt(np.cumsum((eta * sig)[::-1] ** 2)[::-1])
    return float(2.0 * lipschitz * np.max(eta / (B * tail)))


def jnn_steps(T, c):
    """Jain-Nagaraj-Netrapalli step sizes (FKT Def 3.3): ``eta_t = c 2^-i / sqrt(T)``.

    ``k = ceil(log2 T)``, ``T_i = T - ceil(T 2^-i)`` (0 <= i <= k),
    ``T_{k+1} = T``; step t (1-based) with ``T_i < t <= T_{i+1}`` uses ``2^-i``.
    """
    k = max(0, math.ceil(math.log2(T))) if T > 1 else 0
    edges = [T - math.ceil(T * 2.0 ** (-i)) for i in range(k + 1)] + [T]
    t = np.arange(1, T + 1)
    # i(t) = number of edges T_1..T_{k+1} strictly below t
    i = np.searchsorted(np.asarray(edges[1:]), t, side="left")
    return c * 2.0 ** (-i.astype(np.float64)) / math.sqrt(T)


@dataclass(frozen=True)
class PNSGDSchedule:
    """Public plan of one PNSGD run (all arrays 1-based in the papers, 0-based here).

    ``batch_sizes`` and ``steps`` have length T; ``sigma`` is the gradient
    noise std per coordinate; ``n`` the rows consumed (``sum(batch_sizes)``).
    ``rho_actual`` is Thm 3.1 on this schedule, ``rho`` the target it is
    within; ``event`` the zCDP event of the target.
    """

    batch_sizes: np.ndarray
    steps: np.ndarray
    sigma: float
    settings: SGDSettings
    rho: float
    rho_actual: float
    event: object
    info: dict = field(default_factory=dict)

    @property
    def n(self):
        return int(self.batch_sizes.sum())

    @property
    def n_steps(self):
        return int(self.batch_sizes.size)


def pnsgd_schedule(batch_sizes, steps, sigma, *, rho, settings, info=None):
    """Validate a PNSGD schedule against FKT Thm 3.1 and wrap it with its event.

    Raises
    ------
    ValueError
        If a step exceeds ``2 / beta`` (the step maps would not be
        non-expansive) or Thm 3.1's rho on this schedule exceeds ``rho``.
    """
    B = np.asarray(batch_sizes, dtype=np.int64)
    eta = np.asarray(steps, dtype=np.float64)
    sigma = check_positive(sigma, "sigma")
    rho = check_positive(rho, "rho")
    if B.ndim != 1 or B.size == 0 or B.shape != eta.shape or np.any(B < 1):
        raise ValueError("batch_sizes and steps must be non-empty 1-d arrays of equal length, batches >= 1.")
    if not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError("steps must be finite and > 0.")
    # why: FKT Prop 2.10 -- w -> w - eta grad f(w) is 1-Lipschitz for a convex
    # beta-smooth f iff eta <= 2/beta; Thm 3.1 needs every step map contractive.
    if np.max(eta) > settings.max_step:
        raise ValueError(
            f"a step size {np.max(eta):.3g} exceeds 2/beta = {settings.max_step:.3g} "
            f"(beta = row_bound^2 + intercept_scaling^2): the privacy proof needs non-expansive steps."
        )
    # why: Thm 3.1 evaluated on the actual schedule (not the paper's closed-form bound).
    actual = fkt_rho(B, eta, sigma, settings.lipschitz)
    if not actual <= rho:
        raise AssertionError(f"PNSGD schedule gives rho={actual!r} above the target {rho!r}")
    return PNSGDSchedule(
        batch_sizes=B, steps=eta, sigma=sigma, settings=settings, rho=rho, rho_actual=actual,
        event=ZCDPEvent(rho**2 / 2.0), info=dict(info or {}),
    )


def _batches(coef, T):
    """``B_t = ceil(coef / sqrt(T - t + 1))`` for t = 1..T."""
    j = np.arange(T, 0, -1, dtype=np.float64)  # T - t + 1
    return np.ceil(coef / np.sqrt(j) * (1.0 + _CEIL_MARGIN)).astype(np.int64)


def _exact_batches(eta, sigma, lipschitz, rho):
    """The generic rule ``B_t = ceil(2 L eta_t / (rho sqrt(sum_{s>=t} eta_s^2 sigma^2)))``."""
    tail = np.sqrt(np.cumsum((eta * sigma)[::-1] ** 2)[::-1])
    return np.maximum(1, np.ceil(2.0 * lipschitz * eta / (rho * tail) * (1.0 + _CEIL_MARGIN))).astype(np.int64)


def _largest_T(n, rows_needed):
    """Largest T >= 1 with ``rows_needed(T) <= n`` (rows_needed non-decreasing), or 0."""
    if rows_needed(1) > n:
        return 0
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if rows_needed(mid) <= n:
            lo = mid
        else:
            hi = mid - 1
    return lo


def snowball_schedule(n, d, *, rho, settings, steps="jnn", batch_rule="exact"):
    """Snowball-SGD: the longest PNSGD schedule that fits ``n`` rows at target ``rho``.

    Parameters
    ----------
    n : int
        Rows available (public).
    d : int
        Number of coefficients (intercept column included).
    rho : float
        FKT target: the run is ``(alpha, alpha rho^2/2)``-RDP.
    settings : SGDSettings
        ``L = clip``, ``beta = row_bound^2 + intercept_scaling^2``,
        ``D = 2 radius``.
    steps : {"jnn", "constant"}, default="jnn"
        ``"constant"``: FKT Thm 3.5, ``eta = D / (L sqrt(2T))``,
        ``B_t = ceil(2 sqrt(d) / (rho sqrt(T - t + 1)))``. ``"jnn"``: FKT
        Thm 3.6, ``eta_t = c 2^-i / sqrt(T)`` with ``c = D / (sqrt(2) L)``.
    batch_rule : {"exact", "paper"}, default="exact"
        ``"paper"``: the theorem's closed form (Thm 3.6 uses
        ``B_t = ceil(sqrt(48 d / (rho^2 (T - t + 1))))``). ``"exact"``: the
        smallest batches Thm 3.1 allows for these steps (identical to the
        paper's for constant steps, smaller for JNN).

    Both use ``sigma = L / sqrt(d)`` (FKT). Steps above ``2 / beta`` are scaled
    down uniformly; for a fixed schedule shape rho does not depend on that
    scale. Rows left over after the last full schedule join the last batch
    (a larger batch only lowers rho).
    """
    if steps not in ("jnn", "constant"):
        raise ValueError(f"steps must be 'jnn' or 'constant', got {steps!r}.")
    if batch_rule not in ("exact", "paper"):
        raise ValueError(f"batch_rule must be 'exact' or 'paper', got {batch_rule!r}.")
    rho = check_positive(rho, "rho")
    n, d = int(n), int(d)
    L, D = settings.lipschitz, settings.diameter
    if not math.isfinite(D):
        raise ValueError("Snowball-SGD needs a finite domain radius (its step size is D / (L sqrt(2T))).")
    sigma = L / math.sqrt(d)  # FKT: d sigma^2 = L^2

    def step_sizes(T):
        if steps == "constant":
            eta = np.full(T, D / (L * math.sqrt(2.0 * T)))
        else:
            eta = jnn_steps(T, D / (math.sqrt(2.0) * L))
        # a common factor does not change rho (it cancels in Thm 3.1): cap at 2/beta
        # (np.minimum guards the last ulp of the rescaled maximum)
        return np.minimum(eta * min(1.0, settings.max_step / float(eta.max())), settings.max_step)

    def batches(T):
        if steps == "constant" or batch_rule == "paper":
            coef = 2.0 * math.sqrt(d) / rho if steps == "constant" else math.sqrt(48.0 * d) / rho
            return _batches(coef, T)
        return _exact_batches(step_sizes(T), sigma, L, rho)

    T = _largest_T(n, lambda T: int(batches(T).sum()))
    if T == 0:
        need = int(batches(1).sum())
        raise ValueError(
            f"Snowball-SGD needs at least {need} rows at this privacy level (d={d}); got {n}. "
            "Use more data, a larger epsilon or delta, or another solver."
        )
    B = batches(T)
    while int(B.sum()) > n:  # guard: the exact rule is monotone in T only up to rounding
        T -= 1
        B = batches(T)
    B[-1] += n - int(B.sum())  # leftover rows join the last batch
    return pnsgd_schedule(
        B, step_sizes(T), sigma, rho=rho, settings=settings,
        info={"algorithm": "snowball_sgd", "steps": steps, "batch_rule": batch_rule, "T": T,
              "max_batch": int(B.max()), "sigma": sigma},
    )


def run_pnsgd(source, schedule, rng, *, w0=None, kernel=None, n_runs=None):
    """Run a :class:`PNSGDSchedule` over a :class:`~._row_source.RowSource`; return the last iterate.

    The noise of the steps a block completes is drawn from ``rng`` just
    before the block is processed (``sigma * N(0, I_d)``, in step order), so
    the result does not depend on how the rows are cut into blocks.
    ``n_runs`` runs that many independent copies at once (audits; returns
    shape ``(n_runs, d)``).
    """
    from ._sgd_kernels import pnsgd_chunk
    from ._sgd_reference import PNSGDState

    kernel = pnsgd_chunk if kernel is None else kernel
    settings = schedule.settings
    d = source.n_features + (1 if settings.intercept_scaling > 0 else 0)
    if source.n_samples != schedule.n:
        raise ValueError(f"the schedule was planned for {schedule.n} rows, the data has {source.n_samples}.")
    shape = (d,) if n_runs is None else (n_runs, d)
    state = PNSGDState.start(np.zeros(shape) if w0 is None else np.broadcast_to(w0, shape))
    ends = np.cumsum(schedule.batch_sizes)
    seen = 0
    for X, y, sw in source.blocks():
        stop = seen + X.shape[0]
        if stop > schedule.n:
            raise ValueError(f"the data has more rows than the declared n_samples={schedule.n}. Nothing was spent.")
        k = int(np.searchsorted(ends, stop, side="right") - np.searchsorted(ends, seen, side="right"))
        noise = schedule.sigma * rng.standard_normal((k,) + shape)
        kernel(X, y, sw, state, schedule.batch_sizes, schedule.steps, noise, settings)
        seen = stop
    if seen != schedule.n:
        raise ValueError(f"the data had {seen} rows, fewer than the declared n_samples={schedule.n}. Nothing was spent.")
    return state.w
