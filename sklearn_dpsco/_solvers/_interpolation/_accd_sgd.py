"""ACCD's interpolation-adaptive algorithm with FKT's SGD methods as the inner solver.

Asi, Chadha, Cheng, Duchi 2022, Algorithms 1-3 (doc/algorithms.rst, §3), with
``A`` = Snowball-SGD (approximate DP) or Phased-SGD (pure DP) instead of
ALD-2. ACCD's framework takes any DP-SCO algorithm that is private whenever
every per-sample loss is convex and L-Lipschitz (A-Alg 1); FKT's SGD
methods additionally need the public smoothness ``beta = R^2 + s^2``, which
row clipping gives (:mod:`.._core._sgd_settings`) and the Lipschitz extension
preserves (doc/algorithms.rst, §6.1). One pass over the rows:

1. stage 1 (A-Alg 3 step 2): the first ``floor(n/2)`` rows, Lipschitz level
   ``C``, domain ``B(0, radius)`` -> ``x_1``;
2. epochs ``i = 1..T`` (A-Alg 2) on equal consecutive blocks of the rest:
   Lipschitz level ``L_i = C 2^-(i-1)``, domain ``B(x_i, r_i)`` with ACCD's
   ``L_i = 2 H r_i``, i.e. ``r_i = min(radius, L_i / (2H))`` -> ``x_{i+1}``.

Why it adapts: under interpolation every row's gradient vanishes at x*, so
inside ``B(x*, r)`` a row's gradient is at most ``H ||x - x*||``-ish and the
extension at ``L_i`` leaves x* the minimizer; the privacy noise is
proportional to ``L_i``, which halves every epoch: the error decays
geometrically in the number of epochs, i.e. near-exponentially in n.

Public schedule (OUR RECONSTRUCTION; ACCD's radius recursion needs the
growth constant and an unrecoverable utility constant c): ``T =
floor((n - n_1) / n_0)`` epochs of ``n_0 = ceil(150 dim / epsilon)`` rows
(dim = d pure, sqrt(d log(1/delta)) approximate: the rows at which the
privacy term of ACCD's rate r(m) is 1/150), and ``H`` declared (default
``beta / sqrt(d)``, the typical ``|<x, u>| ||x||`` of a row against a random
unit direction). These shape utility only.

Privacy: each stage runs on its own block and is (epsilon, delta)-DP by its
own argument (FKT Thm 3.1 / Phased-SGD stability) for ANY data: the
extension at ``L_i`` makes every row's loss ``L_i``-Lipschitz and row
clipping keeps it ``beta``-smooth; the centres are earlier releases and the
levels and radii public, so the run is (epsilon, delta)-DP by parallel
composition (doc/algorithms.rst, P5). Doc: doc/privacy/interpolation_sgd.rst.
"""

import math
from dataclasses import dataclass, field, replace

from ..._mechanisms import DEFAULT_NOISE
from ..._mechanisms._calibrate import rate_dimension_term
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ParallelComposedEvent
from .._noisy_sgd._phased_sgd import phased_sgd_schedule, run_phased_sgd
from .._noisy_sgd._pnsgd import rho_for_budget, snowball_schedule
from .._noisy_sgd._secure_pnsgd import run_snowball, secure_snowball_schedule
from .._core._row_source import split_rows

__all__ = ["InterpolationSGDSchedule", "epoch_rows", "interpolation_sgd_schedule", "run_interpolation_sgd"]

#: ACCD epoch size factor: n_0 = ceil(factor * dim / epsilon) (utility only;
#: benchmarks/results/linear.md shows the per-epoch contraction it buys).
_EPOCH_ROWS_FACTOR = 150
#: Factor by which the Lipschitz level (and radius) shrinks per epoch.
_SHRINK = 2.0


def epoch_rows(d, epsilon, delta):
    """Rows per ACCD epoch: where the privacy term ``dim / (m epsilon)`` of ACCD's rate is 1/150."""
    return math.ceil(_EPOCH_ROWS_FACTOR * rate_dimension_term(d, delta) / epsilon)


@dataclass(frozen=True)
class InterpolationSGDSchedule:
    """Public plan: one inner schedule per stage (stage 0 = ACCD's first half)."""

    stages: tuple
    lipschitz: tuple
    radii: tuple
    inner: str
    event: object
    info: dict = field(default_factory=dict)

    @property
    def n(self):
        return sum(self.info["stage_rows"])


def _inner_schedule(inner, m, d, epsilon, delta, settings, steps, noise, iterate_bound):
    if inner == "snowball" and noise == "secure":
        # every batch sum released by a discrete Gaussian (doc/privacy/snowball_sgd.rst, "Secure path")
        rho_for_budget(epsilon, delta)
        return secure_snowball_schedule(m, d, epsilon=epsilon, delta=delta, settings=settings, steps=steps,
                                        iterate_bound=iterate_bound)
    if inner == "snowball":
        return snowball_schedule(m, d, rho=rho_for_budget(epsilon, delta), settings=settings, steps=steps)
    return phased_sgd_schedule(m, d, epsilon=epsilon, delta=delta, settings=settings, noise=noise)


def interpolation_sgd_schedule(n, d, *, epsilon, delta, settings, smoothness=None, n_epoch_rows=None,
                               inner=None, steps="jnn", noise=DEFAULT_NOISE):
    """Plan the interpolation-adaptive run on ``n`` rows (public inputs only).

    Parameters
    ----------
    n, d : int
        Rows and coefficients (intercept column included).
    epsilon, delta : float
        Budget of EVERY stage (disjoint blocks: parallel composition).
    settings : SGDSettings
        Stage 1's Lipschitz level ``C = settings.clip``, row bound, intercept
        scaling and outer domain radius.
    smoothness : float, optional
        Declared ``H`` (utility only); default ``beta / sqrt(d)``.
    n_epoch_rows : int, optional
        Rows per epoch; default :func:`epoch_rows`.
    inner : {"snowball", "phased_sgd"}, optional
        Default: Snowball-SGD when ``delta > 0``, Phased-SGD for pure DP.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    inner = ("snowball" if delta > 0 else "phased_sgd") if inner is None else inner
    if inner not in ("snowball", "phased_sgd"):
        raise ValueError(f"inner must be 'snowball' or 'phased_sgd', got {inner!r}.")
    H = settings.smoothness / math.sqrt(d) if smoothness is None else check_positive(smoothness, "smoothness")
    m = epoch_rows(d, epsilon, delta) if n_epoch_rows is None else int(n_epoch_rows)
    n1 = n // 2
    T = max(0, (n - n1) // m)
    while True:
        rows = [n1 + (n - n1) - T * m] + [m] * T if T else [n]
        clips = [settings.clip] + [settings.clip * _SHRINK ** (-i) for i in range(T)]
        radii = [settings.radius] + [min(settings.radius, L / (2.0 * H)) for L in clips[1:]]
        try:
            stages = tuple(
                # stage i's iterates lie in B(x_i, r_i) with ||x_i|| <= r_0 + ... + r_{i-1}
                _inner_schedule(inner, rows[i], d, epsilon, delta, replace(settings, clip=clips[i], radius=radii[i]),
                                steps, noise, sum(radii[: i + 1]))
                for i in range(len(rows))
            )
            break
        except ValueError:
            if T == 0:
                raise
            T -= 1  # too few rows per epoch for the inner solver: fewer, larger epochs
    event = ParallelComposedEvent(tuple(s.event for s in stages))
    info = {"algorithm": "interpolation_sgd", "inner": inner, "epochs": T, "stage_rows": rows,
            "lipschitz": clips, "radii": radii, "smoothness": H}
    return InterpolationSGDSchedule(stages, tuple(clips), tuple(radii), inner, event, info)


def run_interpolation_sgd(source, schedule, rng):
    """One pass over ``source``: stage 1 from the origin, then each epoch in ``B(x_i, r_i)``."""
    rows = schedule.info["stage_rows"]
    if source.n_samples != sum(rows):
        raise ValueError(f"the schedule was planned for {sum(rows)} rows, the data has {source.n_samples}.")
    parts, done = split_rows(source, rows)
    x = None
    for part, stage in zip(parts, schedule.stages):
        run = run_snowball if schedule.inner == "snowball" else run_phased_sgd
        x = run(part, stage, rng, center=x)
    done()
    return x
