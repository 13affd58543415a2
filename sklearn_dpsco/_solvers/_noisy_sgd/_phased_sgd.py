"""Phased-SGD (Feldman, Koren, Talwar 2020, Section 4; doc/algorithms.rst, F-Alg 2).

``k = ceil(log2 n)`` phases on disjoint consecutive blocks of
``n_i = floor(2^-i n)`` rows. Phase i runs ONE pass of projected SGD (batch
size 1, constant step ``eta_i = 4^-i eta``) from the previous release
``w_{i-1}``, averages its iterates and releases

    w_i = (1/n_i) sum_t u_t + noise,   sensitivity 2 L eta_i,

with the analytic Gaussian at (epsilon, delta) or, for pure DP, the
isotropic l2-Laplace at epsilon. Why ``2 L eta_i``: with every step map
non-expansive (``eta_i <= 2/beta``, guaranteed by row clipping to the public
bound R, :mod:`.._core._sgd_settings`), neighbouring runs coincide until the
differing row, where the iterates separate by at most ``eta_i ||g - g'|| <=
2 L eta_i``, and never separate further (Hardt, Recht, Singer 2016); so does
every average. Phases touch disjoint rows: parallel composition. Argument:
doc/privacy/phased_sgd.rst.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..._budget import Budget
from ..._mechanisms import DEFAULT_NOISE
from ..._mechanisms._calibrate import mechanism_for
from ..._param_checks import check_delta, check_epsilon, check_positive
from ...accounting import ParallelComposedEvent
from ._pnsgd import rho_for_budget

__all__ = ["PhasedSGDRun", "PhasedSGDSchedule", "phased_sgd_schedule", "run_phased_sgd"]


@dataclass(frozen=True)
class PhasedSGDSchedule:
    """Public plan: rows per phase, steps, one release mechanism per phase."""

    phase_rows: tuple
    steps: tuple
    mechanisms: tuple
    settings: object
    event: object
    info: dict = field(default_factory=dict)

    @property
    def n(self):
        return int(sum(self.phase_rows))


def phased_sgd_step(n, d, epsilon, delta, settings):
    """FKT's base step ``eta = (D/L) min(4/sqrt(n), rho/sqrt(d))`` (pure DP: ``epsilon/d``).

    A utility choice; privacy only needs the phase steps ``<= 2/beta``.
    """
    dim_term = epsilon / d if delta == 0 else rho_for_budget(epsilon, delta) / math.sqrt(d)
    return (settings.diameter / settings.lipschitz) * min(4.0 / math.sqrt(n), dim_term)


def phased_sgd_schedule(n, d, *, epsilon, delta, settings, step=None, noise=DEFAULT_NOISE):
    """Phased-SGD schedule on ``n`` rows in dimension ``d`` (public inputs only).

    ``step`` overrides the base step ``eta``; every phase step ``4^-i eta`` is
    capped at ``2 / beta`` (non-expansive steps, the privacy condition).
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    n, d = int(n), int(d)
    if n < 2:
        raise ValueError(f"Phased-SGD needs at least 2 rows, got {n}.")
    if step is None:
        if not math.isfinite(settings.radius):
            raise ValueError("Phased-SGD needs a finite domain radius or an explicit step.")
        step = phased_sgd_step(n, d, epsilon, delta, settings)
    step = check_positive(step, "step")
    budget = Budget(epsilon, delta, noise)
    rows, steps, mechs = [], [], []
    for i in range(1, max(1, math.ceil(math.log2(n))) + 1):
        n_i = n // 2**i
        if n_i < 1:
            break
        eta_i = min(4.0 ** (-i) * step, settings.max_step)
        # why: one-pass SGD with non-expansive steps is 2 L eta_i-stable (the
        # differing row moves the iterate by <= eta_i ||g - g'|| <= 2 L eta_i),
        # and so is the average of its iterates (doc/privacy/phased_sgd.rst).
        sensitivity = 2.0 * settings.lipschitz * eta_i
        rows.append(n_i)
        steps.append(eta_i)
        mechs.append(mechanism_for(sensitivity, budget, d))
    event = ParallelComposedEvent(tuple(m.event for m in mechs))
    info = {"algorithm": "phased_sgd", "phases": len(rows), "phase_rows": list(rows), "steps": list(steps),
            "step": step}
    return PhasedSGDSchedule(tuple(rows), tuple(steps), tuple(mechs), settings, event, info)


class PhasedSGDRun:
    """Where a Phased-SGD run stands between blocks of rows: fed in order, then :meth:`result`.

    Holds only d-sized state (the phase's :class:`OnePassState`, the last
    release) and the generator, so it can travel between the workers that
    hold consecutive row-chunks (solvers/_core/_cluster.py). Arguments as
    :func:`run_phased_sgd`; ``n_features`` excludes the intercept column.
    """

    def __init__(self, schedule, rng, n_features, *, w0=None, center=None, kernel=None, n_runs=None):
        from .._optim._sgd_kernels import sgd_one_pass
        from .._optim._sgd_reference import OnePassState, _project

        self.schedule, self.rng, self.center, self.n_runs = schedule, rng, center, n_runs
        self.kernel = sgd_one_pass if kernel is None else kernel
        settings = schedule.settings
        d = n_features + (1 if settings.intercept_scaling > 0 else 0)
        shape = (d,) if n_runs is None else (n_runs, d)
        start = center if w0 is None else w0
        self.w = np.zeros(shape) if start is None else np.array(np.broadcast_to(start, shape), dtype=float)
        # u_0 = Pi_K(w_{i-1}): projecting the previous release is post-processing (and what the
        # compiled loop does); the steps then stay in K.
        self.state = OnePassState.start(_project(self.w, settings.radius, center), center)
        self.phase, self.left = 0, schedule.phase_rows[0]

    def feed(self, X, y, sw):
        """Run the block's rows through the current phase(s), releasing at every phase's end."""
        from .._optim._sgd_reference import OnePassState, _project

        schedule, settings, lengths = self.schedule, self.schedule.settings, self.schedule.phase_rows
        a = 0
        # rows after the last phase are unused (FKT: sum n_i <= n)
        while a < X.shape[0] and self.phase < len(lengths):
            b = min(X.shape[0], a + self.left)
            self.kernel(X[a:b], y[a:b], None if sw is None else sw[a:b], self.state, schedule.steps[self.phase],
                        settings)
            self.left -= b - a
            a = b
            if self.left == 0:
                self.w = schedule.mechanisms[self.phase].release(self.state.average, self.rng, size=self.n_runs)
                self.phase += 1
                self.left = lengths[self.phase] if self.phase < len(lengths) else 0
                self.state = OnePassState.start(_project(self.w, settings.radius, self.center), self.center)

    def result(self):
        """The last release projected on K."""
        from .._optim._sgd_reference import _project

        if self.phase != len(self.schedule.phase_rows):
            raise ValueError(f"the data had fewer rows than the planned {self.schedule.n}. Nothing was spent.")
        return _project(self.w, self.schedule.settings.radius, self.center)


def run_phased_sgd(source, schedule, rng, *, w0=None, center=None, kernel=None, n_runs=None):
    """Run a :class:`PhasedSGDSchedule` over a row source; return the last release projected on K.

    ``K = B(center, radius)`` (``center``: public or an earlier release;
    default the origin); the first phase starts at ``w0`` (default: the
    centre). ``n_runs`` runs that many independent copies at once (audits).
    """
    run = PhasedSGDRun(schedule, rng, source.n_features, w0=w0, center=center, kernel=kernel, n_runs=n_runs)
    for X, y, sw in source.blocks():
        run.feed(X, y, sw)
    return run.result()
