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
(:mod:`.._core._sgd_settings`). Argument and tests: doc/privacy/snowball_sgd.rst.
"""

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..._mechanisms._calibrate import fkt_sigma, gaussian_steps
from ..._param_checks import check_positive
from ...accounting import ZCDPEvent
from ...accounting._calibration import zcdp_rho
from .._core._sgd_settings import SGDSettings

__all__ = [
    "PNSGDRun",
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


@functools.lru_cache(maxsize=64)
def rho_for_budget(epsilon, delta):
    """FKT's ``rho`` for a target (epsilon, delta): ``sqrt(2 rho_zCDP)``.

    ``rho_zCDP = zcdp_rho(epsilon, delta)`` is the largest zCDP parameter the
    library converts to (epsilon, delta); FKT's ``(alpha, alpha rho^2/2)``-RDP
    is ``rho^2/2``-zCDP.
    """
    if delta == 0:
        raise ValueError(
            "PNSGD / Snowball-SGD give approximate DP only (their guarantee is Renyi DP); "
            "set delta > 0 or choose a pure-DP solver. Nothing was spent."
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


def fkt_rho_runs(lengths, batches, steps, sigma, lipschitz):
    """Thm 3.1's rho for a schedule given as runs of equal (batch, step).

    Within a run of steps t = a..e with step eta and batch B, the tail
    ``sum_{s>=t} eta_s^2`` is smallest at t = e, so the run's largest term is
    ``2 L eta / (B sigma sqrt(eta^2 + S_after))``, S_after the tail after it.
    """
    lengths = np.asarray(lengths, dtype=np.float64)
    eta = np.asarray(steps, dtype=np.float64)
    B = np.asarray(batches, dtype=np.float64)
    after = np.concatenate([np.cumsum((lengths * eta**2)[::-1])[::-1][1:], [0.0]])
    return float(2.0 * lipschitz * np.max(eta / (B * sigma * np.sqrt(eta**2 + after))))


@dataclass(frozen=True)
class PNSGDSchedule:
    """Public plan of one PNSGD run, stored as runs of consecutive steps sharing (batch, step).

    A run-length form keeps the plan small (a few thousand runs for a
    billion rows): memory stays bounded when fitting from chunks.
    ``batch_sizes`` / ``steps`` expand it to per-step arrays (tests, small
    problems). ``sigma`` is the gradient noise std per coordinate;
    ``rho_actual`` is Thm 3.1 on this schedule, ``rho`` the target it is
    within; ``event`` the zCDP event of the target. ``mechanism`` is set on
    the secure path (:mod:`._secure_pnsgd`): every batch sum is released
    through it, ``sigma`` is then the noise std on the batch mean and
    ``rho`` the mechanism's zCDP in FKT's convention.
    """

    run_lengths: np.ndarray
    run_batches: np.ndarray
    run_steps: np.ndarray
    sigma: float
    settings: SGDSettings
    rho: float
    rho_actual: float
    event: object
    info: dict = field(default_factory=dict)
    mechanism: object = None

    @property
    def noise(self):
        return "float" if self.mechanism is None else "secure"

    @property
    def n(self):
        """Rows consumed: ``sum_t B_t``."""
        return int(np.dot(self.run_lengths, self.run_batches))

    @property
    def n_steps(self):
        return int(self.run_lengths.sum())

    @property
    def batch_sizes(self):
        return np.repeat(self.run_batches, self.run_lengths)

    @property
    def steps(self):
        return np.repeat(self.run_steps, self.run_lengths)

    def window(self, t0, t1):
        """Per-step ``(batch_sizes, steps)`` for steps ``t0 <= t < t1`` (0-based)."""
        t1 = min(t1, self.n_steps)
        starts = np.concatenate([[0], np.cumsum(self.run_lengths)])
        r0 = int(np.searchsorted(starts, t0, side="right") - 1)
        r1 = int(np.searchsorted(starts, t1, side="left"))
        lengths = self.run_lengths[r0:r1].copy()
        if lengths.size:
            lengths[0] -= t0 - starts[r0]
            lengths[-1] -= starts[r1] - t1
        return np.repeat(self.run_batches[r0:r1], lengths), np.repeat(self.run_steps[r0:r1], lengths)

    def steps_completed(self, rows):
        """Number of steps whose batch ends within the first ``rows`` rows."""
        ends = np.cumsum(self.run_lengths * self.run_batches)
        r = int(np.searchsorted(ends, rows, side="right"))
        done = int(self.run_lengths[:r].sum())
        if r < self.run_lengths.size:
            before = int(ends[r - 1]) if r > 0 else 0
            done += (rows - before) // int(self.run_batches[r])
        return done


def _as_runs(batch_sizes, steps):
    B = np.asarray(batch_sizes, dtype=np.int64)
    eta = np.asarray(steps, dtype=np.float64)
    if B.ndim != 1 or B.size == 0 or B.shape != eta.shape:
        raise ValueError("batch_sizes and steps must be non-empty 1-d arrays of equal length.")
    change = np.flatnonzero((B[1:] != B[:-1]) | (eta[1:] != eta[:-1])) + 1
    starts = np.concatenate([[0], change])
    lengths = np.diff(np.concatenate([starts, [B.size]]))
    return lengths.astype(np.int64), B[starts], eta[starts]


def pnsgd_schedule(batch_sizes, steps, sigma, *, rho, settings, info=None):
    """Validate a per-step PNSGD schedule against FKT Thm 3.1 and wrap it with its event."""
    return _schedule_from_runs(*_as_runs(batch_sizes, steps), sigma, rho=rho, settings=settings, info=info)


def _schedule_from_runs(lengths, batches, steps, sigma, *, rho, settings, info=None):
    """Validate runs of (length, batch, step) against FKT Thm 3.1.

    Raises
    ------
    ValueError
        If a step exceeds ``2 / beta`` (the step maps would not be
        non-expansive), or batches / steps are out of range.
    AssertionError
        If Thm 3.1's rho on this schedule exceeds the target ``rho``.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    batches = np.asarray(batches, dtype=np.int64)
    steps = np.asarray(steps, dtype=np.float64)
    sigma = check_positive(sigma, "sigma")
    rho = check_positive(rho, "rho")
    if np.any(lengths < 1) or np.any(batches < 1):
        raise ValueError("batch sizes must be >= 1.")
    if not np.all(np.isfinite(steps)) or np.any(steps <= 0):
        raise ValueError("steps must be finite and > 0.")
    # why: FKT Prop 2.10 -- w -> w - eta grad f(w) is 1-Lipschitz for a convex
    # beta-smooth f iff eta <= 2/beta; Thm 3.1 needs every step map contractive.
    if np.max(steps) > settings.max_step:
        raise ValueError(
            f"a step size {np.max(steps):.3g} exceeds 2/beta = {settings.max_step:.3g} "
            f"(beta = row_bound^2 + intercept_scaling^2): the privacy proof needs non-expansive steps."
        )
    # why: Thm 3.1 evaluated on the actual schedule (not the paper's closed-form bound).
    actual = fkt_rho_runs(lengths, batches, steps, sigma, settings.lipschitz)
    if not actual <= rho:
        raise AssertionError(f"PNSGD schedule gives rho={actual!r} above the target {rho!r}")
    for a in (lengths, batches, steps):
        a.setflags(write=False)  # schedules are shared (cached): never mutated
    return PNSGDSchedule(
        run_lengths=lengths, run_batches=batches, run_steps=steps, sigma=sigma, settings=settings, rho=rho,
        rho_actual=actual, event=ZCDPEvent(rho**2 / 2.0), info=dict(info or {}),
    )


def _step_segments(T, steps, D, L, max_step):
    """Piecewise-constant steps as (length, eta) segments, scaled so the largest is <= 2/beta."""
    if steps == "constant":
        segs = [(T, D / (L * math.sqrt(2.0 * T)))]
    else:
        c = D / (math.sqrt(2.0) * L)
        k = max(0, math.ceil(math.log2(T))) if T > 1 else 0
        edges = [T - math.ceil(T * 2.0 ** (-i)) for i in range(k + 1)] + [T]
        segs = [(b - a, c * 2.0 ** (-i) / math.sqrt(T)) for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))]
        segs = [s for s in segs if s[0] > 0]
    top = max(eta for _, eta in segs)
    # a common factor does not change rho (it cancels in Thm 3.1): cap at 2/beta
    scale = min(1.0, max_step / top)
    return [(m, min(eta * scale, max_step)) for m, eta in segs]


def _segment_runs(length, K, alpha, beta):
    """Runs of ``B_t = max(1, ceil(K / sqrt(alpha (e - t + 1) + beta)))`` over the t = 1..length of a segment.

    ``B_t`` is non-decreasing in t, and ``B_t <= b`` iff ``t <= length + 1 -
    ((K / b)^2 - beta) / alpha``: count the steps of each value in closed
    form. (K carries the ceiling margin, so a rounding error at a boundary
    can only make a batch one row larger than needed, never smaller.)
    """
    def value(t):
        return max(1, math.ceil(K / math.sqrt(alpha * (length - t + 1) + beta)))

    lo, hi = value(1), value(length)
    b = np.arange(lo, hi + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        last = np.floor(length + 1 - ((K / b) ** 2 - beta) / alpha)
    counts_le = np.clip(last, 0, length).astype(np.int64)
    counts_le[-1] = length
    counts = np.diff(np.concatenate([[0], np.maximum.accumulate(counts_le)]))
    keep = counts > 0
    return counts[keep], b[keep].astype(np.int64)


def _largest_T(n, rows_needed):
    """Largest T >= 1 with ``rows_needed(T) <= n`` (rows_needed non-decreasing), or 0.

    ``rows_needed(T) = T + extra(T)`` where the extra rows of the growing
    batches vary slowly with T (like sqrt(T)): a few fixed-point steps
    ``T <- n - extra(T)`` bracket the answer, then bisection finishes it.
    """
    if rows_needed(1) > n:
        return 0
    guess = n
    for _ in range(4):
        guess = max(1, min(n, n - (rows_needed(guess) - guess)))
    lo, hi = 1, n
    # widen around the guess until it brackets the answer
    width = max(1, n // 1000)
    while True:
        a, b = max(1, guess - width), min(n, guess + width)
        fa = rows_needed(a) <= n
        fb = rows_needed(b) <= n
        if fa and not fb:
            lo, hi = a, b - 1
            break
        if fa and fb and b == n:
            return n
        if not fa and a == 1:
            lo, hi = 1, a
            break
        if fa and fb:
            guess = b
        else:
            guess = a
        width *= 4
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
        smallest batches Thm 3.1 allows for these steps,
        ``B_t = ceil(2 L eta_t / (rho sigma sqrt(sum_{s>=t} eta_s^2)))``
        (identical to the paper's for constant steps, smaller for JNN).

    Both use ``sigma = L / sqrt(d)`` (FKT). Steps above ``2 / beta`` are scaled
    down uniformly; for a fixed schedule shape rho does not depend on that
    scale. Rows left over after the longest schedule that fits join the last
    batch (a larger batch only lowers rho).
    """
    return _snowball_schedule(int(n), int(d), float(rho), settings, steps, batch_rule)


@functools.lru_cache(maxsize=32)  # a pure function of public inputs; the result is read-only
def _snowball_schedule(n, d, rho, settings, steps, batch_rule):
    if steps not in ("jnn", "constant"):
        raise ValueError(f"steps must be 'jnn' or 'constant', got {steps!r}.")
    if batch_rule not in ("exact", "paper"):
        raise ValueError(f"batch_rule must be 'exact' or 'paper', got {batch_rule!r}.")
    rho = check_positive(rho, "rho")
    n, d = int(n), int(d)
    L, D = settings.lipschitz, settings.diameter
    if not math.isfinite(D):
        raise ValueError("Snowball-SGD needs a finite domain radius (its step size is D / (L sqrt(2T))).")
    sigma = fkt_sigma(L, d)  # FKT: d sigma^2 = L^2
    margin = 1.0 + _CEIL_MARGIN

    def runs(T):
        segs = _step_segments(T, steps, D, L, settings.max_step)
        lengths, batches, etas = [], [], []
        after, remaining = 0.0, T  # tail sum of eta^2 after the segment; steps after it
        for m, eta in reversed(segs):
            remaining -= m
            if batch_rule == "paper" or steps == "constant":
                coef = 2.0 * math.sqrt(d) / rho if steps == "constant" else math.sqrt(48.0 * d) / rho
                # B_t = ceil(coef / sqrt(T - t + 1)), T - t + 1 = (e - t + 1) + (steps after the segment)
                c, b = _segment_runs(m, coef * margin, 1.0, float(T - remaining - m))
            else:
                # B_t = ceil(2 L eta / (rho sigma sqrt(eta^2 (e - t + 1) + after)))
                c, b = _segment_runs(m, 2.0 * L * eta / (rho * sigma) * margin, eta**2, after)
            lengths.insert(0, c)
            batches.insert(0, b)
            etas.insert(0, np.full(c.size, eta))
            after += m * eta**2
        return np.concatenate(lengths), np.concatenate(batches), np.concatenate(etas)

    def rows_needed(T):
        lengths, batches, _ = runs(T)
        return int(np.dot(lengths, batches))

    T = _largest_T(n, rows_needed)
    if T == 0:
        raise ValueError(
            f"Snowball-SGD needs at least {rows_needed(1)} rows at this privacy level (d={d}); got {n}. "
            "Use more data, a larger epsilon or delta, or another solver."
        )
    while rows_needed(T) > n:  # guard: the exact rule is monotone in T only up to rounding
        T -= 1
    lengths, batches, etas = runs(T)
    leftover = n - int(np.dot(lengths, batches))
    if leftover:  # leftover rows join the last batch
        if lengths[-1] > 1:
            lengths = np.append(lengths, 1)
            lengths[-2] -= 1
            batches = np.append(batches, batches[-1])
            etas = np.append(etas, etas[-1])
        batches[-1] += leftover
    return _schedule_from_runs(
        lengths, batches, etas, sigma, rho=rho, settings=settings,
        info={"algorithm": "snowball_sgd", "steps": steps, "batch_rule": batch_rule, "T": T,
              "max_batch": int(batches.max()), "sigma": sigma},
    )


def run_pnsgd(source, schedule, rng, *, w0=None, center=None, kernel=None, n_runs=None):
    """Run a :class:`PNSGDSchedule` over a :class:`~.._core._row_source.RowSource`; return the last iterate.

    The noise of the steps a block completes is drawn from ``rng`` just
    before the block is processed (``sigma * N(0, I_d)``, in step order), so
    the result does not depend on how the rows are cut into blocks. The
    kernel sees only the window of the schedule the block touches (memory
    bounded by the block). ``n_runs`` runs that many independent copies at
    once (audits; returns shape ``(n_runs, d)``). The domain is
    ``B(center, radius)`` (``center``: public or an earlier release; default
    the origin); the run starts at ``w0`` (default: the centre).
    """
    from .._optim._sgd_kernels import pnsgd_chunk
    from .._optim._sgd_reference import PNSGDState

    if schedule.mechanism is not None:
        raise ValueError("a secure schedule releases every batch sum: run it with _secure_pnsgd.run_snowball.")

    kernel = pnsgd_chunk if kernel is None else kernel
    settings = schedule.settings
    d = source.n_features + (1 if settings.intercept_scaling > 0 else 0)
    if source.n_samples != schedule.n:
        raise ValueError(f"the schedule was planned for {schedule.n} rows, the data has {source.n_samples}.")
    shape = (d,) if n_runs is None else (n_runs, d)
    start = center if w0 is None else w0
    state = PNSGDState.start(np.zeros(shape) if start is None else np.broadcast_to(start, shape), center=center)
    run = PNSGDRun(schedule, rng, state, kernel=kernel)
    for X, y, sw in source.blocks():
        run.feed(X, y, sw)
    return run.result()


class PNSGDRun:
    """Where a PNSGD run stands between blocks of rows: fed in order, then :meth:`result`.

    Holds the :class:`PNSGDState` (d-sized, plus the rows of an unfinished
    batch) and the generator, so it can travel between the workers that
    hold consecutive row-chunks (solvers/_core/_cluster.py).
    """

    def __init__(self, schedule, rng, state, *, kernel=None):
        from .._optim._sgd_kernels import pnsgd_chunk

        self.schedule, self.rng, self.state = schedule, rng, state
        self.kernel = pnsgd_chunk if kernel is None else kernel
        self.seen = 0

    @classmethod
    def from_origin(cls, schedule, rng, d):
        """A run in ``d`` coefficients started at the origin, the centre of the domain ball."""
        from .._optim._sgd_reference import PNSGDState

        return cls(schedule, rng, PNSGDState.start(np.zeros(d)))

    def feed(self, X, y, sw):
        """One block: the noise of the steps it completes (in step order), then the kernel over its rows."""
        schedule, state = self.schedule, self.state
        stop = self.seen + X.shape[0]
        if stop > schedule.n:
            raise ValueError(f"the data has more rows than the declared n_samples={schedule.n}. Nothing was spent.")
        k = schedule.steps_completed(stop) - state.step
        noise = gaussian_steps(schedule.sigma).sample(self.rng, (k,) + state.w.shape)
        batch_sizes, steps = schedule.window(state.step, state.step + k + 1)
        state.offset = state.step
        self.kernel(X, y, sw, state, batch_sizes, steps, noise, schedule.settings)
        self.seen = stop

    def result(self):
        """The last iterate."""
        n = self.schedule.n
        if self.seen != n:
            raise ValueError(f"the data had fewer rows than the declared n_samples={n}. Nothing was spent.")
        return self.state.w
