"""Plans of the least-squares solvers (DPLinearRegressor; doc/privacy/linear_regression.rst).

``params`` (resolved by the estimator from public facts): ``clip``,
``row_bound``, ``label_bound``, ``radius``, ``intercept_scaling`` (the
value s of the intercept column, 0 without one), ``steps``,
``smoothness``, ``growth``, ``moment``, ``moment_order``; optional
``ridge_selection`` (AdaSSP's private ridge choice, default False),
``phased_choice`` (AdaSSP's choice also offers a Phased-ERM release, default False) and
``step_radius`` (Phased-ERM's step scale, default None: the radius).
"""

import math
from dataclasses import dataclass, field, replace
from functools import partial

from .._adassp import adassp_plan, run_adassp
from .._adassp_selection import (PHASED_CHOICE_SELECTION_SHARE, PHASED_CHOICE_SHARE, guard_applies, recentre_applies,
                                 selection_applies)
from .._core._cluster import ClusterRows
from .._core._plan import SchedulePlan, SolverSpec
from .._core._row_source import ArraySource, DaskSource, RowSource
from ..._budget import split_scale_share
from ...accounting import ComposedEvent
from .._core._sgd_settings import SGDSettings
from .._interpolation._accd import adaptive_interpolation_schedule, run_adaptive_interpolation
from .._interpolation._accd_sgd import interpolation_sgd_schedule, run_interpolation_sgd
from .._localization._growth import CENTRED_OBJECTIVE_SCALE
from .._localization._phases import phased_erm_schedule, run_phases
from .._lowy import lowy_clip, lowy_lam1, pop_localize_plan, run_pop_localize
from .._noisy_sgd._phased_sgd import PhasedSGDRun, phased_sgd_schedule, run_phased_sgd
from .._noisy_sgd._pnsgd import PNSGDRun, rho_for_budget, run_pnsgd, snowball_schedule
from .._noisy_sgd._secure_pnsgd import run_snowball, secure_snowball_schedule

__all__ = ["SOLVERS", "snowball_fits"]

#: Absolute constant of Lowy's base regularization lam_1 (utility only).
LOWY_LAM1_CONSTANT = 10.0
#: Lowy phases whose minimizer moves by less than this fraction of the radius are dropped.
MIN_MOVE_FRACTION = 1e-9


def _source(problem, rng, permute):
    """The rows of ``problem`` as a row source: a given source as is, in-memory rows in a public order."""
    data = problem.data
    if isinstance(data, (RowSource, ClusterRows)):
        return data  # one pass in the order given (fit_stream); map-reduce on a cluster
    # the permutation is public randomness: privacy holds for every order (doc/privacy/)
    order = rng.permutation(data.n_samples) if permute else None
    return ArraySource(data.X, data.y, data.sample_weight, order=order, validate=False)


def _on_cluster(problem, rng, make_run):
    """A one-pass run fed chunk by chunk on the workers holding the rows, or None for rows elsewhere.

    ``fit`` on a cluster reads the rows in the in-memory fit's public
    permutation (drawn and applied on the workers); ``fit_stream`` on a dask
    array in the order given. Same blocks, same draws: the in-memory release
    (solvers/_core/_cluster.py).
    """
    data = problem.data
    if isinstance(data, ClusterRows):
        return data.run_one_pass(make_run, rng, permute=True).result()
    if isinstance(data, DaskSource):
        return data.run_one_pass(make_run, rng).result()
    return None


def _raw_features(data):
    """Columns of the rows, the intercept's virtual column excluded."""
    return int(data.X.shape[1]) if isinstance(data, ClusterRows) else data.n_features


def _in_memory(runner, problem, schedule, rng, data):
    """``runner`` on ``problem`` with its rows replaced by the in-memory ``data`` (runs on one worker)."""
    return runner(replace(problem, data=data), schedule, rng)


def _sgd_settings(params):
    return SGDSettings(clip=params["clip"], row_bound=params["row_bound"],
                       intercept_scaling=params["intercept_scaling"], radius=params["radius"])


def _run_adassp(problem, schedule, rng):
    return run_adassp(_source(problem, rng, permute=False), schedule, rng)[0]


@dataclass(frozen=True)
class AdaSSPChoicePlan:
    """Phased-ERM on ``PHASED_CHOICE_SHARE`` of the budget, then AdaSSP on the rest with its private choice
    offered the Phased-ERM release as one more candidate (doc/privacy/adassp.rst, "Choice between AdaSSP and
    Phased-ERM"). ``event``: the two parts' basic composition."""

    phased: object
    adassp: object
    event: object
    info: dict = field(default_factory=dict)


def _run_adassp_choice(problem, schedule, rng):
    # the Phased-ERM release first (its own event), then AdaSSP whose choice may return it
    theta_pe = schedule.phased.run(problem, rng).coef
    return run_adassp(_source(problem, rng, permute=False), schedule.adassp, rng,
                      extra_candidates=(("phased_erm", theta_pe),))[0]


def adassp(n, d, budget, params):
    """Sufficient-statistics perturbation with adaptive ridge (Wang 2018).

    ``params["ridge_selection"]`` (the estimator's; False for a one-pass
    stream, which cannot read the rows a second time) turns on the private
    choice of the ridge when ``n epsilon / d`` is small (public rule,
    :func:`~sklearn_dpsco._solvers._adassp_selection.selection_applies`).
    ``params["phased_choice"]`` (the estimator's public rule,
    ``linear_model._least_squares_rules.phased_choice_applies``): Phased-ERM is released first on
    ``PHASED_CHOICE_SHARE`` of the budget and AdaSSP's choice, on ``PHASED_CHOICE_SELECTION_SHARE`` of the
    budget, may return it (:class:`AdaSSPChoicePlan`).
    """
    if params.get("phased_choice", False):
        pe_budget, rest = split_scale_share(budget, PHASED_CHOICE_SHARE)
        phased = phased_erm(n, d, pe_budget, params)
        ada = _adassp_schedule(n, d, rest, params, True,
                               selection_fraction=PHASED_CHOICE_SELECTION_SHARE * budget.epsilon / rest.epsilon)
        info = {**ada.info, "phased_choice": True, "phased_choice_share": PHASED_CHOICE_SHARE}
        plan = AdaSSPChoicePlan(phased, ada, ComposedEvent((phased.event, ada.event)), info)
        return SchedulePlan(plan, _run_adassp_choice)
    select = params.get("ridge_selection", False) and selection_applies(n, d, budget.epsilon)
    # the guard's zero model must be a label centre (an "auto" label bound: the private median, or the released
    # mean); with a declared label bound it would predict the label 0 (diabetes scaled, declared bounds, epsilon
    # 0.5 / 1: R^2 -0.16 / -0.10 -> -0.28 / -0.21, 3 seeds), so the guard stays off there (public: what was passed)
    guard = (params.get("ridge_selection", False) and params.get("recentre_labels", False)
             and guard_applies(n, d, budget.epsilon))
    return SchedulePlan(_adassp_schedule(n, d, budget, params, select, guard=guard), _run_adassp, map_reduce=True)


def _adassp_schedule(n, d, budget, params, select, selection_fraction=None, guard=False):
    """AdaSSP's plan on ``budget`` with the estimator's bounds (recentred labels where its public rule holds)."""
    return adassp_plan(n, d, epsilon=budget.epsilon, delta=budget.delta, row_bound=params["row_bound"],
                       label_bound=params["label_bound"], intercept_scaling=params["intercept_scaling"],
                       noise=budget.noise, select=select, selection_fraction=selection_fraction, guard=guard,
                       recentre=params.get("recentre_labels", False) and recentre_applies(n, d, budget.epsilon))


def _run_pnsgd(problem, schedule, rng):
    if getattr(schedule, "mechanism", None) is not None:  # a path releasing every batch sum
        if isinstance(problem.data, ClusterRows):  # the in-memory run, on one worker
            return problem.data.on_one_worker(partial(_in_memory, _run_pnsgd, problem, schedule, rng))
        return run_snowball(_source(problem, rng, permute=True), schedule, rng)
    d = _raw_features(problem.data) + (1 if schedule.settings.intercept_scaling > 0 else 0)
    w = _on_cluster(problem, rng, partial(_pnsgd_run, schedule, d))
    return run_pnsgd(_source(problem, rng, permute=True), schedule, rng) if w is None else w


def _pnsgd_run(schedule, d, rng):
    return PNSGDRun.from_origin(schedule, rng, d)


def snowball(n, d, budget, params):
    """One pass of projected noisy SGD with growing batches (FKT 2020, Thms 3.1/3.5/3.6).

    On ``noise="secure"`` every batch sum is released by a discrete Gaussian
    (constant batches, parallel composition; doc/privacy/snowball_sgd.rst, "Secure path").
    """
    if budget.noise == "secure":
        rho_for_budget(budget.epsilon, budget.delta)  # the same refusal of delta = 0 on both paths
        schedule = secure_snowball_schedule(n, d, epsilon=budget.epsilon, delta=budget.delta,
                                            settings=_sgd_settings(params), steps=params["steps"])
        return SchedulePlan(schedule, _run_pnsgd)
    rho = rho_for_budget(budget.epsilon, budget.delta)
    schedule = snowball_schedule(n, d, rho=rho, settings=_sgd_settings(params), steps=params["steps"])
    return SchedulePlan(schedule, _run_pnsgd, map_reduce=True)


def snowball_fits(n, d, budget, row_bound):
    """True when Snowball-SGD has a schedule on n rows at this budget (public: n, d, budget)."""
    try:
        settings = SGDSettings(clip=1.0, row_bound=row_bound, intercept_scaling=row_bound, radius=1.0)
        snowball_schedule(n, d, rho=rho_for_budget(budget.epsilon, budget.delta), settings=settings)
    except ValueError:
        return False
    return True


def _run_phased_sgd(problem, schedule, rng):
    w = _on_cluster(problem, rng, partial(_phased_sgd_run, schedule, _raw_features(problem.data)))
    return run_phased_sgd(_source(problem, rng, permute=True), schedule, rng) if w is None else w


def _phased_sgd_run(schedule, n_features, rng):
    return PhasedSGDRun(schedule, rng, n_features)


def phased_sgd(n, d, budget, params):
    """FKT Phased-SGD: one-pass SGD per phase, noisy average iterate."""
    schedule = phased_sgd_schedule(n, d, epsilon=budget.epsilon, delta=budget.delta, settings=_sgd_settings(params),
                                   noise=budget.noise)
    return SchedulePlan(schedule, _run_phased_sgd, map_reduce=True)


def _run_interpolation_sgd(problem, schedule, rng):
    return run_interpolation_sgd(_source(problem, rng, permute=True), schedule, rng)


def interpolation(n, d, budget, params):
    """ACCD Algorithm 3 over Snowball-SGD (approximate DP) or Phased-SGD (pure DP)."""
    schedule = interpolation_sgd_schedule(
        n, d, epsilon=budget.epsilon, delta=budget.delta, settings=_sgd_settings(params),
        smoothness=params["smoothness"], steps=params["steps"], noise=budget.noise,
    )
    return SchedulePlan(schedule, _run_interpolation_sgd)


def _run_pop_localize(problem, schedule, rng):
    center = problem.center
    return run_pop_localize(problem.data, problem.loss, schedule, center=center, rng=rng,
                            domain=(center, problem.radius), n_jobs=problem.n_jobs)


def lowy(n, d, budget, params):
    """Pop-Localize over Double-OutputPert (Lowy Algorithms 1, 4), J = 1 repeat per phase."""
    k, radius, epsilon = params["moment_order"], params["radius"], budget.epsilon
    if params["moment"] is None:
        clip = moment = params["clip"]  # G_k := C: the extension level the user chose
    else:
        # Lowy Prop 3.2: C = G_k (m eps / d)^(1/k) with m the first phase's block size n/2
        clip, moment = lowy_clip(params["moment"], k, max(1, n // 2), epsilon, d), params["moment"]
    # lowy_lam1 is Lowy's rule "up to an absolute constant" (doc/algorithms.rst, L-Alg 1): the constant 1
    # over-noises phase 1 (its release scale ~ 2C/(lam1 m)); 10 is benchmarks/results/linear.md's choice
    lam1 = LOWY_LAM1_CONSTANT * lowy_lam1(n, d, epsilon, radius=radius, moment=moment, k=k)
    # Lowy: T = ceil(log2 n) phases with lam_t = 32^(t-1) lam1. Drop the phases whose exact-minimizer
    # sensitivity 2C/(lam_t m_t) is below 1e-9 of the domain radius: float64 cannot certify them
    # (the same public rule as the localization module; fewer disjoint releases, same argument).
    T = 0
    while T < max(1, math.ceil(math.log2(max(n, 2)))) and n // 2 ** (T + 1) >= 1:
        if 2.0 * clip / (lam1 * 32.0**T * (n // 2 ** (T + 1))) < MIN_MOVE_FRACTION * radius:
            break
        T += 1
    schedule = pop_localize_plan(n, d, clip=clip, epsilon=epsilon, delta=budget.delta, lam1=lam1, phases=max(1, T),
                                 noise=budget.noise)
    return SchedulePlan(schedule, _run_pop_localize)


def _run_adaptive_interpolation(problem, schedule, rng):
    return run_adaptive_interpolation(problem.data, problem.loss, schedule, center=problem.center, rng=rng)


def interpolation_ald(n, d, budget, params):
    """ACCD Algorithm 3 exactly as in the paper, with ALD Algorithm 2 inside."""
    r2 = (1.0 if params["row_bound"] is None else params["row_bound"]) ** 2
    s = params["intercept_scaling"]
    schedule = adaptive_interpolation_schedule(
        n, d, smoothness=params["smoothness"] or r2 + s**2, growth=params["growth"] or r2 / d,
        lipschitz=params["clip"], radius=params["radius"], epsilon=budget.epsilon, delta=budget.delta,
        noise=budget.noise,
    )
    return SchedulePlan(schedule, _run_adaptive_interpolation)


def _run_phases(problem, schedule, rng):
    center = problem.center
    return run_phases(problem.data, problem.loss, schedule, center=center, domain=[(center, problem.radius)], rng=rng)


def phased_erm(n, d, budget, params):
    """FKT Phased-ERM with certified output perturbation."""
    # centred phases: the certificate's terms are sized by the residuals at each phase's centre, so
    # its float floor is declared at CENTRED_OBJECTIVE_SCALE and stays below the step's sensitivity
    # as n grows (doc/privacy/output_perturbation.rst, "Centring" and "Float floor")
    # params["step_radius"] (the estimator's public rule; None: the radius) sizes the step, not the domain
    schedule = phased_erm_schedule(n, d, clip=params["clip"], radius=params["radius"], epsilon=budget.epsilon,
                                   delta=budget.delta, noise=budget.noise, centred=True,
                                   objective_scale=CENTRED_OBJECTIVE_SCALE, step_radius=params.get("step_radius"))
    return SchedulePlan(schedule, _run_phases)


SOLVERS = (
    # traits["intercept_fraction"]: the default intercept column s as a fraction of the row bound R
    SolverSpec("snowball", snowball, "squared", one_pass=True, needs_row_bound=True,
               traits={"intercept_fraction": 1.0}),
    SolverSpec("phased_sgd", phased_sgd, "squared", one_pass=True, needs_row_bound=True,
               traits={"intercept_fraction": 1.0}),
    # AdaSSP's column adds s^2 to every sensitivity (R^2 + s^2), while n s^2 on the diagonal keeps
    # the intercept well determined; 1/4 costs 6% (benchmarks/results/linear.md)
    SolverSpec("adassp", adassp, "squared", one_pass=True, needs_row_bound=True,
               traits={"intercept_fraction": 0.25}),
    SolverSpec("interpolation", interpolation, "squared", one_pass=True, needs_row_bound=True,
               traits={"intercept_fraction": 1.0}),
    SolverSpec("phased_erm", phased_erm, "squared"),
    SolverSpec("lowy", lowy, "squared"),
    SolverSpec("interpolation_ald", interpolation_ald, "squared"),
)
