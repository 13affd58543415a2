"""The one shape every solver has for the fit template: a :class:`Plan`.

A plan is built from public facts only (n, d, the budget, declared
settings) before any data are touched (doc/design.rst, section 2). It
carries

* ``event`` — the privacy event one run of it consumes, known up front so
  the accountant can refuse before anything runs;
* ``info`` — the public facts a fit reports in ``fit_info_``;
* ``run(problem, rng)`` — the private computation on one :class:`Problem`,
  returning a :class:`~sklearn_dpsco._solvers.PrivateFit`.

``run`` returns a ``PrivateFit`` rather than a bare coefficient vector
because the template compares the event a run reports with the planned
one before spending (a plan that ran something else is refused), and
because a few solvers release more than the coefficients (the
user-level deletion mechanism's count of ⊥ outputs), which have to travel
with the point they belong to.

The existing plan and schedule classes of the solver families keep their
own fields (tests and privacy arguments read them); :class:`SchedulePlan`
is the thin adapter that gives each of them this shape.
"""

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._result import PrivateFit

__all__ = ["Plan", "Problem", "SchedulePlan", "SolverSpec"]


@runtime_checkable
class Plan(Protocol):
    """What a solver will run, decided from public facts.

    Attributes
    ----------
    event : PrivacyEvent
        The privacy event one :meth:`run` consumes.
    info : dict
        Public facts for ``fit_info_`` (schedules, block sizes, noise scales).
    """

    event: Any
    info: dict

    def run(self, problem, rng):
        """Run the plan privately on ``problem``; return a :class:`PrivateFit`."""


@dataclass(frozen=True)
class Problem:
    """One private problem as :meth:`Plan.run` receives it.

    Parameters
    ----------
    data : GLMData, RowSource or UserData
        The validated rows (in memory, a one-pass row source, or rows
        grouped by user).
    loss : object, default=None
        The loss object (``get_loss``) for solvers that take one.
    radius : float, default=None
        Radius of the public domain ball centred at 0.
    n_jobs : int, default=None
        Threads for independent sub-problems inside one run (results never
        depend on it).
    """

    data: Any
    loss: Any = None
    radius: float = None
    n_jobs: int = None

    @property
    def center(self):
        """The public domain centre (the origin)."""
        return np.zeros(self.data.n_features)


class SchedulePlan:
    """Adapter giving an existing plan or schedule object the :class:`Plan` shape.

    Parameters
    ----------
    schedule : object
        The family's plan or schedule (it has ``event``, usually ``info``).
    runner : callable
        ``runner(problem, schedule, rng)`` returns the coefficient vector,
        or a ``(coef, outputs)`` pair when the run releases more (a dict of
        released, privacy-accounted outputs).
    info : dict, default=None
        Public facts for ``fit_info_``; ``None`` copies ``schedule.info``.
    map_reduce : bool, default=False
        The runner handles rows held by a Dask cluster itself, reading them
        only through the cluster primitives of the data (``fold_blocks``,
        ``run_one_pass``), so the work stays on the workers holding the
        rows; otherwise such rows are solved on one worker
        (``_core/_cluster.py``).

    Attributes
    ----------
    schedule : object
        The wrapped plan or schedule.
    event : PrivacyEvent
        ``schedule.event``.
    info : dict
        Public facts; the estimator may add its own public settings before
        the plan runs.
    """

    def __init__(self, schedule, runner, info=None, *, map_reduce=False):
        self.schedule = schedule
        self.map_reduce = bool(map_reduce)
        self.event = schedule.event
        self.info = dict(getattr(schedule, "info", {})) if info is None else dict(info)
        self._runner = runner

    def run(self, problem, rng):
        """Run the schedule on ``problem`` with ``rng``; return a :class:`PrivateFit`."""
        out = self._runner(problem, self.schedule, rng)
        coef, outputs = out if isinstance(out, tuple) else (out, {})
        return PrivateFit(coef=coef, event=self.schedule.event, info=dict(self.info), outputs=outputs)

    def __repr__(self):
        return f"SchedulePlan({type(self.schedule).__name__}, event={self.event!r})"


@dataclass(frozen=True, eq=False)
class SolverSpec:
    """What the registry knows about one solver of one estimator family.

    Parameters
    ----------
    name : str
        The solver name (``solver=`` of the estimator, ``solver_`` after fit).
    build : callable
        ``build(n, d, budget, params)`` returns a :class:`Plan` from public
        facts only: ``n`` rows (users for user-level solvers), ``d``
        coefficients (intercept column included), a
        :class:`~sklearn_dpsco._budget.Budget` per problem and the
        estimator's resolved public settings ``params`` (a mapping).
    loss : str
        Name of the loss the runs minimise (``get_loss``; ``"power"`` takes
        the estimator's exponent).
    one_pass : bool, default=False
        Reads the rows once, in order: it can fit from a row source.
    noise : tuple of str, default=("secure", "float")
        Noise paths supported (doc/privacy/secure_noise.rst).
    approx_noise : tuple of str, default=None
        Noise paths supported when ``delta > 0`` (``None``: ``noise``).
    privacy_unit : {"row", "user"}, default="row"
        The neighbouring relation of the guarantee.
    needs_row_bound : bool, default=False
        The privacy argument rests on a declared public row bound.
    split : str, default=None
        How one-vs-rest problems share the budget (a ``split_budget`` kind);
        ``None``: the budget's own rule for its noise path.
    expected_noise_norm : callable, default=None
        ``f(schedule)``: the expected norm of the noise the plan adds to the
        coefficients (public; used by ``solver="auto"`` rules).
    traits : dict, default={}
        Other public facts an estimator's rules read (regularisation kind,
        default intercept column).
    build_event : callable, default=None
        ``build_event(n, d, budget, params)``: ``build(n, d, budget, params).event``
        without building the plan (the same checks, the same event), for a
        budget fill's candidates; ``None``: only ``build``.
    """

    name: str
    build: Any
    loss: str
    one_pass: bool = False
    noise: tuple = ("secure", "float")
    approx_noise: tuple = None
    privacy_unit: str = "row"
    needs_row_bound: bool = False
    split: str = None
    expected_noise_norm: Any = None
    traits: dict = field(default_factory=dict)
    build_event: Any = None

    def supports_noise(self, noise, delta):
        """True if releases on ``noise`` are supported at this ``delta``."""
        paths = self.approx_noise if (delta > 0 and self.approx_noise is not None) else self.noise
        return noise in paths
