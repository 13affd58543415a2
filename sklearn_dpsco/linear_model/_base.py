"""Shared machinery of the private linear models: the ONE fit template.

Every fit — ``fit`` of the four estimators and ``DPLinearRegressor.fit_stream``
— runs :meth:`DPLinearModelMixin._fit_template` (doc/design.rst, section 2,
"data flows one way"):

1. validate the public parameters and the data (finite, shapes, classes,
   weights, groups) — hook ``_validate_fit_inputs``; nothing spent yet;
2. plan from public facts only (n, d, number of problems, parameters):
   choose the solver in the registry and build its :class:`Plan` — hook
   ``_plan``; the plan knows the privacy event it will consume;
3. check that event within the estimator's own (epsilon, delta), then
   ``accountant.check(event)`` — refuse before any private computation.
   With "auto" scales the event is ``ComposedEvent((scales' event, solver's
   event))``: the scale estimates' pure-DP part and the solver's part on
   the rest of the budget (``split_scale_share``), both planned here;
4. draw every random state up front: first the private column quartiles,
   if ``column_scaling`` runs (then the rows are mapped by the released
   per-column affine map; linear_model/_column_scaling.py), then the private
   scale releases, if any (then the rows and labels are divided by them — hook
   ``_rescale_inputs``, a public per-row map), then the problems — hook
   ``_draw_problems`` (one-vs-rest problems run through joblib, so results
   never depend on ``n_jobs``), then ``plan.run(problem, rng)`` for each;
5. verify that every run (and every scale release) consumed exactly the
   planned event;
6. ``accountant.spend(event)`` exactly once;
7. only then store the fitted attributes — hook ``_store_fit`` (and
   ``_store_scales``, which maps the unit-scale coefficients back, then
   ``_store_columns``, which folds the column map into them).

Any exception in steps 1-7 leaves the estimator exactly as it was before
``fit`` (a refit that fails does not half-overwrite a fitted model); one
before step 6 spends nothing (after it, the spend stands). A refusal in steps 1-3 (scikit-learn's parameter
constraints and data checks included) ends with "Nothing was spent.", its
type unchanged (sklearn_dpsco/_refusals.py); a failure from step 4 on does
not get that ending: a release has run on the data (doc/privacy/accounting.rst).
The hooks are abstract: a subclass missing one cannot be instantiated.
"""

import numbers
import warnings
from abc import ABCMeta, abstractmethod
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator

from .._budget import Budget, largest_fitting_fraction
from .._compat import Interval, StrOptions, validate_data
from .._mechanisms._scale_grid import GRID_END, at_grid_end
from .._param_checks import (EPSILON_MIN, SCALE_MAX, SCALE_MIN, _is_missing, check_class_labels, check_delta,
                             check_epsilon, check_no_missing)
from .._refusals import refusing_before_any_spend
from .._rng import check_random_state, noise_source, spawn_random_states
from .._solvers import ClusterRows, GLMData, Problem
from .._solvers._core._data import DeferredRowScale, RowScaledData
from ..accounting import BudgetAccountant, FitAllowance, epsilon_delta
from ..accounting._resolve import AccountantMixin
from ..accounting._allowance import usage_fits
from ._auto_scales import (CONSTANT_SOLVER, SCALE_RANKS, SHARE_CAP, ConstantPlan, fill_budget, fit_event, is_auto,
                           scale_plan, scales_supported, trivial_scale_plan, weighted_parts)
from ._cluster_inputs import cluster_inputs, is_cluster_input
from ._column_scaling import ColumnScalingPlan, column_scaling_mode
from ._constant_mean import mean_constant_plan

__all__ = ["DPClassifierMixin", "DPLinearModelMixin", "DPRegressorMixin", "FitInputs", "FitPlan", "check_fit"]

#: The estimator whose ``fit`` :func:`check_fit` runs (its template stops after the budget checks).
_CHECKING = ContextVar("sklearn_dpsco_checking_fit", default=None)


class _Checked(Exception):
    """Raised by the template of the estimator :func:`check_fit` runs, once its checks have passed."""

    def __init__(self, event):
        super().__init__("checked")
        self.event = event


def check_fit(estimator, *args, **kwargs):
    """Every refusal ``estimator.fit(*args, **kwargs)`` can give before its first release, without the fit.

    Runs the estimator's own ``fit`` (its parameter constraints, any override of ``fit`` in a subclass) up to
    step 3 of the template: the validation of the inputs, the plan from public facts and the budget checks.
    Nothing is released or spent and the estimator is left as it was (the template restores it). Searches
    call it for every configured candidate before they charge their budget (model_selection/_search.py).

    A ``DPPipeline`` stops the same way after its own checks (its final step's included), and a private search
    after its candidates' checks and the ledger's check of its event, where it would charge its budget.

    Returns
    -------
    event : PrivacyEvent
        What the fit would spend (a pipeline: its steps' allowances). A fit whose event depends on a release (the
        hinge classifier's count-first row magnitudes: the count chooses the branch) returns the closed branch's
        event, the one planned first; every branch was checked (against the fit's budget, its allowance and the
        ledger), so the refusals are complete, which is all the library's callers (searches, pipelines) read. To
        reserve a budget before such a fit, give it an allowance (as they do), not this event.
    """
    token = _CHECKING.set(estimator)
    try:
        # the parameter constraints, also where fit does not run them itself (DPPipeline.fit); a private search
        # declares none (its fit checks its own parameters)
        if hasattr(estimator, "_parameter_constraints"):
            estimator._validate_params()
        estimator.fit(*args, **kwargs)
    except _Checked as done:
        return done.event
    finally:
        _CHECKING.reset(token)
    raise RuntimeError(f"{type(estimator).__name__}.fit did not run the fit template; nothing was checked.")


class _FitTemplateMeta(ABCMeta, type(BaseEstimator)):
    """ABCMeta combined with whatever metaclass scikit-learn gives ``BaseEstimator``.

    ``BaseEstimator`` is built by ``type`` today; deriving from both keeps
    the class creatable (no metaclass conflict) if it ever gets its own, and
    makes the template's ``@abstractmethod`` hooks enforced.
    """


@dataclass
class FitInputs:
    """The validated inputs of one fit: public facts for the plan, private data for the run.

    Attributes
    ----------
    n_samples : int
        Rows (users for a user-level model); public.
    n_coef : int
        Coefficients, the intercept column included; public.
    n_problems : int
        One-vs-rest problems (1 for a regression); public.
    data : object
        The private payload (arrays, a row source); read only by ``run``.
    plan_options : dict
        Extra public keywords for ``_plan`` (``streaming=True``).
    public : dict
        Other public facts the store step needs (the label set, the number
        of users).
    scratch : ndarray or None
        An array of ``data`` that this fit made (the column-scaled rows),
        which later public maps may overwrite in place; never the caller's.
    """

    n_samples: int
    n_coef: int
    n_problems: int
    data: Any
    plan_options: dict = field(default_factory=dict)
    public: dict = field(default_factory=dict)
    scratch: Any = field(default=None, repr=False)


@dataclass(frozen=True)
class FitPlan:
    """What a fit will run, decided from public facts before touching data.

    Attributes
    ----------
    solver : str
        The solver name (``solver_`` after fit).
    plan : Plan
        The solver's plan: ``event`` of ONE problem (a one-vs-rest fit
        composes one per class), ``info`` and ``run(problem, rng)``.
    loss : object
        The loss the runs minimise (None for solvers with their own).
    radius : float
        Radius of the public domain ball centred at 0.
    intercept_scaling : float
        Value of the virtual intercept column (0 without intercept).
    attributes : dict
        Public settings stored as fitted attributes (``{"clip_": ...}``).
    scales : ScalePlan or None
        The private scale estimates the fit releases before its solver runs
        ("auto" clip levels and bounds; linear_model/_auto_scales.py), or
        None when every scale is declared. The solver's plan is then built
        at unit scale, so the whole event is known before any data is read.
    columns : ColumnScalingPlan or None
        The private column quartiles released first (``column_scaling``;
        linear_model/_column_scaling.py), or None.
    """

    solver: str
    plan: Any
    loss: Any = None
    radius: float = None
    intercept_scaling: float = 0.0
    attributes: dict = field(default_factory=dict)
    scales: Any = None
    columns: Any = None
    #: ``(FitPlan, event)`` of the branch a count-first column plan (``columns.count_first``) takes when its noisy count
    #: opens the histogram; None otherwise. Planned and checked with this plan, before any data is read.
    opened: Any = None

    def branches(self, event):
        """``[(plan, event)]`` of every branch the fit may take (this one first)."""
        return [(self, event)] + ([] if self.opened is None else [self.opened])

    @property
    def event(self):
        """The privacy event of one problem."""
        return self.plan.event

    @property
    def info(self):
        """Public facts of the plan (``fit_info_``)."""
        return self.plan.info

    @property
    def schedule(self):
        """The solver family's own plan or schedule object (diagnostics, tests)."""
        return self.plan.schedule


def _run_plan(plan, problem, random_state):
    """One private run: the generator from its state drawn up front, then ``plan.run``.

    Rows held by a Dask cluster go to the plan as they are when its runner
    reads them through map-reduce primitives (``map_reduce``); otherwise the
    unchanged in-memory run happens on one worker, which returns only the
    :class:`PrivateFit` (solvers/_core/_cluster.py).
    """
    if isinstance(problem.data, ClusterRows) and not getattr(plan, "map_reduce", False):
        return problem.data.on_one_worker(partial(_run_on_rows, plan, problem, random_state))
    return plan.run(problem, check_random_state(random_state))


def _run_on_rows(plan, problem, random_state, data):
    """``plan.run`` on ``problem`` with its rows replaced by the in-memory ``data`` (runs on a worker)."""
    return plan.run(replace(problem, data=data), check_random_state(random_state))


class DPLinearModelMixin(AccountantMixin, BaseEstimator, metaclass=_FitTemplateMeta):
    """Base of the private linear models: parameters, validation, the fit template.

    Subclasses implement the hooks ``_validate_fit_inputs(*fit_args)``
    (returns :class:`FitInputs`), ``_plan(n_samples, n_coef, n_problems,
    **options)`` (returns a :class:`FitPlan`) and ``_store_fit(inputs, plan,
    fits)``; ``_draw_problems`` has a default for in-memory rows. The
    classifier and regressor mixins below provide validation and storage.

    ``privacy_unit`` (read-only) is the neighbouring relation of the
    guarantee: ``"row"`` (replace one row) here; a user-level subclass sets
    the class constant ``_PRIVACY_UNIT = "user"``. It is the one source of
    truth the ledger entry, pipelines and searches read
    (doc/privacy/accounting.rst, "Privacy units").
    """

    #: the neighbouring relation of every guarantee of the class (read through ``privacy_unit``)
    _PRIVACY_UNIT = "row"

    _parameter_constraints = {
        "epsilon": [Interval(numbers.Real, EPSILON_MIN, None, closed="left")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both")],
        "accountant": [BudgetAccountant, None],
        "random_state": ["random_state"],
        # joblib's meaning, refused before anything runs where it has none (0: joblib would stop a fit mid-way)
        "n_jobs": [Interval(numbers.Integral, 1, None, closed="left"), Interval(numbers.Integral, None, -1, closed="right"),
                   None],
        "noise": [StrOptions({"secure", "float"})],
        "verbose": ["verbose"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # random_state=None draws the noise from the OS CSPRNG: two fits differ on purpose
        tags.non_deterministic = self.random_state is None
        return tags

    @property
    def privacy_unit(self):
        """``"row"`` (replace one training row) or ``"user"`` (replace one whole user)."""
        return self._PRIVACY_UNIT

    # -- hooks --------------------------------------------------------------------------
    @abstractmethod
    def _validate_fit_inputs(self, *args, **kwargs):
        """Validate the data (nothing spent yet); return :class:`FitInputs`."""

    @abstractmethod
    def _plan(self, n_samples, n_coef, n_problems, **options):
        """Choose the solver and build its plan from public facts; return a :class:`FitPlan`."""

    @abstractmethod
    def _store_fit(self, inputs, plan, fits):
        """Store the fitted attributes from the runs' :class:`PrivateFit` (called after the spend)."""

    def _draw_problems(self, inputs, plan, rng):
        """``[(Problem, random_state)]`` of in-memory rows, one per target, states drawn up front."""
        X, targets, sample_weight = inputs.data
        states = spawn_random_states(rng, len(targets))
        rows = ClusterRows if inputs.public.get("cluster") else GLMData
        if isinstance(X, DeferredRowScale):
            rows = RowScaledData
        return [
            (Problem(rows(X, t, sample_weight, plan.intercept_scaling), plan.loss, plan.radius, self.n_jobs), s)
            for t, s in zip(targets, states)
        ]

    # -- "auto" scales (linear_model/_auto_scales.py) ---------------------------------------
    def _scale_units(self, released):
        """``(row_scale, label_scale, label_shift)``: rows become ``X / row_scale``, targets
        ``(y - label_shift) / label_scale``, from the releases (public once released)."""
        raise NotImplementedError(f"{type(self).__name__} estimates no scale")

    def _rescale_inputs(self, inputs, released):
        """The inputs with rows and targets mapped by :meth:`_scale_units` (a public per-row map)."""
        row_scale, label_scale, label_shift = self._scale_units(released)
        X, targets, sample_weight = inputs.data
        if row_scale != 1.0:
            if isinstance(X, DeferredRowScale):  # the column map is deferred too: the row scale joins it
                X = replace(X, factor=1.0 / row_scale)  # its factor was 1.0: the same products, block by block
            elif self._defers_row_scaling(inputs, X):
                X = DeferredRowScale(X, 1.0 / row_scale)  # the same products, block by block (RowScaledData)
            elif X is inputs.scratch and isinstance(X, np.ndarray) and X.dtype == np.float64:
                np.multiply(X, 1.0 / row_scale, out=X)  # the fit's own copy: the same products, no new array
            else:
                X = X * (1.0 / row_scale)
        if label_scale != 1.0 or label_shift != 0.0:
            targets = [(t - label_shift) / label_scale for t in targets]
        return FitInputs(inputs.n_samples, inputs.n_coef, inputs.n_problems, (X, targets, sample_weight),
                         dict(inputs.plan_options), dict(inputs.public))

    def _defers_row_scaling(self, inputs, X):
        """Whether the rows' public rescaling is left to the solver's blocks (``RowScaledData``); speed only."""
        return False

    def _store_scales(self, plan, released):
        """Coefficients back in the data's units (post-processing), the estimates in ``fit_info_``."""
        row_scale, label_scale, label_shift = self._scale_units(released)
        self.coef_ = self.coef_ * (label_scale / row_scale)
        self.intercept_ = self.intercept_ * label_scale + label_shift
        info = plan.scales.info(released)
        for entry in self.fit_info_ if isinstance(self.fit_info_, list) else [self.fit_info_]:
            entry.update(info)
        if self.verbose:
            print(f"[{type(self).__name__}] private scales: {info}")

    def _scale_plan(self, targets, n_samples, columns=None):
        """``(ScalePlan or None, solver budget)`` for the "auto" ``targets`` (public: n, budget, share).

        With ``columns`` (a :class:`ColumnScalingPlan`) the estimates and the
        solver share what the column quartiles leave (``columns.rest``).
        """
        budget = self._budget() if columns is None else columns.rest
        return scale_plan(targets, budget, n_samples, self.scale_share, positional=self._COLUMN_ROWS_POSITIONAL)

    def _scales_unsupported(self, targets, n_samples, columns=None, n_coef=None):
        """Public rule: "auto" estimates under the default share that the budget cannot support
        (:func:`~._auto_scales.scales_supported` fails); the fit then releases the constant model."""
        if not targets or self.scale_share is not None:
            return False
        budget = self._budget() if columns is None else columns.rest
        return not scales_supported(n_samples, budget.epsilon, self._scale_parts(targets, n_coef))

    def _scale_parts(self, targets, n_coef=None):
        """The ``k`` of :func:`~._auto_scales.scales_supported` for the "auto" ``targets``: their number
        (public: what the user passed; ``n_coef``, the model's coefficients, for the rules that read it)."""
        return len(targets)

    def _constant_plan(self, targets, n_samples, n_coef, columns=None, attributes=None, info=None, radius=None,
                       at_mean=False):
        """The intercept-only plan of a budget too small for the "auto" estimates (public facts only).

        The label centre alone on the whole epsilon (:func:`~._auto_scales.trivial_scale_plan`), the
        zero model in the fit's units (no row read, nothing spent), so the released model is
        ``coef_ = 0``, ``intercept_ = `` the private label median; without a centre (no intercept,
        or ``n epsilon < SCALE_RANKS``) the zero model, nothing spent (doc/privacy/quantiles.rst,
        "Budgets too small for the estimates"). ``at_mean=True`` (DPLinearRegressor with an "auto" label
        bound: squared loss) and an intercept, where :func:`~._constant_mean.mean_constant_applies`: the label centre and
        spread, then the label mean (:mod:`._constant_mean`; doc/privacy/quantiles.rst, "The constant at the
        label mean").
        """
        budget = self._budget() if columns is None else columns.rest
        rule = (f"n epsilon = {n_samples * budget.epsilon:.4g} < {self._scale_parts(targets, n_coef):g} x "
                f"{SCALE_RANKS:g} / {SHARE_CAP:g}: too small for the 'auto' estimates; intercept-only model")
        info = {"algorithm": CONSTANT_SOLVER, "constant_rule": rule, **(info or {})}
        mean = mean_constant_plan(n_coef, n_samples, budget, info, usage=self._allowance_usage()) \
            if at_mean and self.fit_intercept else None
        if mean is not None:
            scales, plan = mean
        else:
            scales = trivial_scale_plan(self.fit_intercept, budget, n_samples, usage=self._allowance_usage())
            plan = ConstantPlan(n_coef, info=info)
        return FitPlan(CONSTANT_SOLVER, plan, radius=radius, intercept_scaling=1.0 if self.fit_intercept else 0.0,
                       attributes=dict(attributes or {}), scales=scales, columns=columns)

    def _fill_budget(self, build, scales, rest, n_problems=1, columns=None, build_event=None):
        """``build(solver_budget)`` at the budget that makes the fit's event certify exactly epsilon.

        Public facts only (linear_model/_auto_scales.py, ``fill_budget``):
        ``rest`` itself for pure DP or declared scales; at ``delta > 0`` with
        "auto" scales (or column quartiles) the largest solver budget whose
        composition with the estimates stays within the estimator's (epsilon, delta). ``build_event``:
        ``build(budget).event`` without the plan (``fill_budget``; speed only).
        """
        return fill_budget(build, scales, rest, self._budget(), n_problems, composed=self._solver_composes_pure(),
                           columns=columns, usage=self._allowance_usage(), build_event=build_event)

    def _solver_composes_pure(self):
        """True when the solver's own event composes a pure part with an approximate one (filled without
        estimates too; DPHingeClassifier's intercept refit). Public facts only."""
        return False

    #: Fits may compose pure releases (scales, column quartiles, refits) with Gaussian ones at delta > 0: a
    #: meta-estimator gives them zCDP allowances (accounting/_shares.py, ``curve_kind``).
    _may_release_pure = True

    def _allowance_usage(self):
        """The ``usage`` of the meta-estimator's :class:`~sklearn_dpsco.accounting.FitAllowance` this fit runs
        under, when it covers the fit's own epsilon (the budget fill then plans within it), else None."""
        accountant = self._get_accountant()
        if isinstance(accountant, FitAllowance) and accountant.covers(self.epsilon, self.delta):
            return accountant.usage
        return None

    # -- private column scaling (linear_model/_column_scaling.py) -------------------------------
    def _declares_scales(self):
        """True when a scale setting is declared (column_scaling="auto" then stays off); public."""
        return True

    def _column_plan(self, inputs):
        """The fit's column map plan: the quartiles' (:meth:`_quartile_plan`), else the private centre's
        (:meth:`_centering_plan`, linear_model/_centering.py), else None; public facts only."""
        quartiles = self._quartile_plan(inputs)
        if quartiles is None:
            return self._centering_plan(inputs)
        if getattr(self, "centering", False) is True:  # "auto" yields to the quartiles (they centre too)
            raise ValueError("centering=True and column scaling both shift the columns; set one of them to False. "
                             "Nothing was spent.")
        return quartiles

    def _centering_plan(self, inputs):
        """The private centre's :class:`~._centering.CenteringPlan`, or None (estimators with ``centering``)."""
        return None

    @staticmethod
    def _dense_rows(inputs):
        """True for dense rows in memory, or on a cluster in NumPy chunks (a public fact of the input's format)."""
        X = inputs.data[0] if isinstance(inputs.data, tuple) else None
        if inputs.public.get("cluster"):  # a dask array: dense when its chunks are NumPy arrays
            return isinstance(getattr(X, "_meta", None), np.ndarray)
        return isinstance(X, np.ndarray) and not inputs.plan_options.get("streaming")

    def _quartile_plan(self, inputs):
        """The :class:`ColumnScalingPlan` of this fit, or None (public facts: n, d, epsilon, settings, format)."""
        setting = getattr(self, "column_scaling", False)
        if setting is False:
            return None
        dense = self._dense_rows(inputs)
        if setting is True and not dense:
            raise ValueError(
                "column_scaling=True needs dense rows (centring would densify sparse rows; rows in a stream are "
                "read once). Use column_scaling='auto' or False. Nothing was spent."
            )
        d = inputs.n_coef - (1 if self.fit_intercept else 0)
        # the quartiles, or below their rule the median and spread (linear_model/_column_scaling.py)
        mode = column_scaling_mode(setting, inputs.n_samples, d, self.epsilon, declared=self._declares_scales(),
                                   dense=dense, centre=bool(self.fit_intercept),
                                   positional=self._COLUMN_ROWS_POSITIONAL,
                                   cluster=bool(inputs.public.get("cluster")), magnitudes=self._ROW_MAGNITUDES)
        if mode is None:
            return None
        return ColumnScalingPlan.build(self._budget(), inputs.n_samples, d, centre=self.fit_intercept,
                                       positional=self._COLUMN_ROWS_POSITIONAL, mode=mode)

    #: The released column map clips its mapped columns at ``k`` released spreads (``COLUMN_CLIP``,
    #: linear_model/_column_scaling.py "Clipped columns"), in the fit and at prediction time (:meth:`_clip_columns`).
    #: False keeps the plain affine map (``UserLevelDPLogistic``: not measured there).
    _CLIPS_COLUMNS = True

    #: The rows of :meth:`_column_rows` keep their positions under the privacy unit's neighbours (replace one
    #: row in place), so the column quartiles may read every k-th of them (public positions).
    _COLUMN_ROWS_POSITIONAL = True
    #: Below the median and spread the fit may release its columns' magnitudes (linear_model/_column_scaling.py,
    #: "Row magnitudes"): the hinge classifier only (the regressors lost with it, benchmarks/results/row_magnitudes.md).
    _ROW_MAGNITUDES = False

    def _column_rows(self, inputs, columns):
        """The rows ``columns`` (the column plan) is released from: every row (one row is the privacy unit)."""
        return inputs.data[0]

    def _store_columns(self, plan, columns):
        """Fold the released column map into ``coef_`` / ``intercept_`` (post-processing); report it."""
        if not hasattr(self, "column_scaling"):
            return
        if columns is None:
            self.column_center_ = self.column_scale_ = self.column_bounds_ = None
            return
        coef, intercept = columns.fold(self.coef_, self.intercept_)
        self.coef_ = coef
        self.intercept_ = intercept if np.ndim(intercept) else float(intercept)
        self.column_center_, self.column_scale_ = columns.centre.copy(), columns.scale.copy()
        self.column_bounds_ = columns.raw_bounds()
        info = plan.columns.info(columns)
        for entry in self.fit_info_ if isinstance(self.fit_info_, list) else [self.fit_info_]:
            entry.update(info)
        if self.verbose:
            for key, value in info.items():
                print(f"[{type(self).__name__}] private {key.replace('_', ' ')}: {value}")

    # -- budget ----------------------------------------------------------------------------
    def _budget(self):
        """The estimator's whole budget on its noise path."""
        return Budget(self.epsilon, self.delta, self.noise)

    def _split_budget(self, n_problems):
        """(epsilon, delta) for each of ``n_problems`` one-vs-rest problems (public).

        The rule matches the noise path: pure DP splits epsilon; the float
        Gaussian splits the Gaussian-DP mu; the secure (discrete) Gaussian,
        calibrated through zCDP, splits rho.
        """
        share = self._budget().split_equal(n_problems)
        return share.epsilon, share.delta

    # -- checks ---------------------------------------------------------------------------
    def _validate_params(self):
        """scikit-learn's validation of the parameter constraints (``_fit_context`` runs it before ``fit``), whose
        refusal (an ``InvalidParameterError``, still one) says that nothing was spent."""
        with refusing_before_any_spend():
            super()._validate_params()

    def _check_privacy_params(self):
        # sklearn's Interval lets inf and bools through; the privacy checks do not.
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        # a bool reached the solvers as a number (alpha: refused there as 'lam' or fitted as 1.0; a declared bound
        # True became the unit 1 and row_bound_ = True): every numeric parameter refuses it, as check_epsilon does
        for name, constraints in self._parameter_constraints.items():
            if isinstance(getattr(self, name, None), (bool, np.bool_)) and not any(
                    isinstance(c, str) and c in ("boolean", "verbose") for c in constraints):
                raise TypeError(f"{name} must be a real number, got bool.")

    def _validate_X(self, X, reset):
        return validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=np.float64,
            order="C",
            ensure_all_finite=True,
        )

    def _validate_Xy(self, X, y, y_numeric):
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            order="C",
            y_numeric=y_numeric,
            ensure_all_finite=True,
            multi_output=False,
        )
        return X, y

    @staticmethod
    def _check_sample_weight(sample_weight, n):
        if sample_weight is None:
            return None
        sw = np.asarray(sample_weight, dtype=np.float64)
        if sw.ndim == 0:  # one weight for every row, as scikit-learn accepts it
            sw = np.full(n, float(sw))
        if sw.ndim != 1 or sw.shape[0] != n:
            raise ValueError(f"sample_weight must have shape ({n},), got {sw.shape}. Nothing was spent.")
        if not np.all(np.isfinite(sw)):
            raise ValueError("sample_weight must be finite. Nothing was spent.")
        # why: weights in [0, 1] scale each C-Lipschitz loss term to at most C,
        # keeping the sensitivity argument; larger weights would break it.
        if np.any(sw < 0):
            raise ValueError("sample_weight must lie in [0, 1]: negative weights are not weights. Nothing was spent.")
        if np.any(sw > 1):
            raise ValueError(
                "sample_weight must lie in [0, 1]: a weight above 1 would let one row move the model "
                "more than the privacy guarantee allows. Nothing was spent."
            )
        # all-zero weights are fitted, not refused: a weight is part of its private row, so refusing them
        # would reveal whether the one row with a positive weight has weight 0 (a data-dependent refusal)
        return sw

    def _cluster_fit_inputs(self, X, y, sample_weight, *, classification):
        """Step 1 for rows held by a Dask cluster: checked on the workers, kept there (lazy dask arrays).

        The one-vs-rest targets are lazy maps of the labels; ``public["cluster"]``
        makes :meth:`_draw_problems` hand the solvers :class:`ClusterRows`.
        """
        X_, y_, sw, labels = cluster_inputs(self, X, y, sample_weight, classification=classification)
        n_coef = X_.shape[1] + (1 if self.fit_intercept else 0)
        if not classification:
            return FitInputs(X_.shape[0], n_coef, 1, (X_, [y_], sw), public={"cluster": True})
        classes = self._resolve_classes(labels)
        targets = self._ovr_targets(y_, classes)
        return FitInputs(X_.shape[0], n_coef, len(targets), (X_, targets, sw),
                         public={"classes": classes, "cluster": True})

    def _glm_data(self, X, y, sample_weight):
        return GLMData(X, y, sample_weight, self.intercept_scaling if self.fit_intercept else 0.0)

    # -- the template ---------------------------------------------------------------------------
    def _prepare_fit(self, *args, **kwargs):
        """Steps 1-3 of the template: ``(inputs, plan, event, accountant)``; nothing read for a release, nothing
        spent (may set validation attributes such as ``n_features_in_``: callers restore the estimator).
        Meta-estimators run them through :func:`check_fit`."""
        self._check_privacy_params()
        inputs = self._validate_fit_inputs(*args, **kwargs)  # 1
        plan, event = self._plan_fit(inputs)  # 2
        usage = self._allowance_usage()
        if usage is not None and not self._branches_fit(plan, event, usage):
            plan, event = self._plan_within_allowance(inputs, usage, (plan, event))
        # every branch a count-first column plan may take (its event is then a function of the count's release)
        branches = [branch_event for _, branch_event in plan.branches(event)]
        for branch_event in branches:
            self._check_within_budget(branch_event)  # 3
        # the parameter, else the budget block in force, else the ledger bound
        # when this estimator was sent to a worker, else the session default
        accountant = self._get_accountant()
        for branch_event in branches:
            accountant.check(branch_event, privacy_unit=self.privacy_unit)
        return inputs, plan, event, accountant

    def _plan_fit(self, inputs):
        """``(plan, event)`` of the fit from public facts: the column plan, then the estimates and the solver."""
        columns_plan = self._column_plan(inputs)
        options = dict(inputs.plan_options)
        if columns_plan is not None:
            options["columns"] = columns_plan
        plan = self._plan(inputs.n_samples, inputs.n_coef, inputs.n_problems, **options)
        if getattr(columns_plan, "count_first", False):
            # count first (linear_model/_column_scaling.py, "Row magnitudes"): this plan is the closed branch (the
            # count only); the open one (count, histogram, the fit on the rest) is planned here too, from public facts
            options["columns"] = columns_plan.opened_plan()
            wide = self._plan(inputs.n_samples, inputs.n_coef, inputs.n_problems, **options)
            plan = replace(plan, opened=(wide, fit_event(wide.scales, wide.event, inputs.n_problems, wide.columns)))
        # the column quartiles' and the estimates' pure parts first (if any), then the solver's runs
        return plan, fit_event(plan.scales, plan.event, inputs.n_problems, plan.columns)

    def _branches_fit(self, plan, event, usage):
        """:meth:`_plan_fits` for every branch of ``plan``."""
        return all(self._plan_fits(e, usage) for _, e in plan.branches(event))

    def _plan_fits(self, event, usage):
        """True when ``event`` is within the fit's (epsilon, delta) and its meta-estimator's allowance."""
        eps, delta = epsilon_delta(event, delta=self.delta if self.delta > 0 else None)
        within = eps <= self.epsilon * (1 + 1e-9) + 1e-12 and delta <= self.delta * (1 + 1e-9)
        # the allowance's own relative slack (accounting/_allowance.py, usage_fits): a pure plan whose parts sum
        # to the allowance an ulp above fits, instead of a bisection to 1 - 2^-10 of epsilon
        return within and usage_fits(usage(event))

    #: Bisection steps of :meth:`_plan_within_allowance`: the budget factor to within 2^-10 (at most 0.1 % of
    #: epsilon left unused); each step is a whole plan with its budget fill (up to ~0.3 s for AdaSSP's).
    _ALLOWANCE_STEPS = 10

    def _plan_within_allowance(self, inputs, usage, planned):
        """The plan at the largest fraction ``t`` of the fit's epsilon whose event the allowance holds (public).

        Why: a meta-estimator gives the fit ``(epsilon_i, delta)`` read off a zCDP share ``rho_i``. The pure
        parts (column quartiles, "auto" estimates) are planned as shares of ``epsilon_i`` and read in zCDP as
        ``epsilon_s^2 / 2``; the solver's fill (``fill_budget``) only lowers the solver, so where the pure
        parts alone exceed ``rho_i`` (about ``share > sqrt(2 / (4 ln(1 / delta)))``: small budgets with
        "auto" scales) every fit was refused (DPGridSearchCV / DPPipeline at ``delta > 0``). Every part is
        then planned on ``t epsilon`` (bisection on public arithmetic, as DPStandardScaler's
        ``_within_allowance``); a fit that fits at ``t = 1`` never comes here, so its plan is unchanged.
        ``planned`` (the refused plan) is returned when no fraction fits.
        """
        epsilon = self.epsilon

        def plan(t):
            self.epsilon = epsilon * t  # every part of the plan (and _plan_fits' check) reads it
            return self._plan_fit(inputs)

        try:
            best = largest_fitting_fraction(plan, lambda trial: self._branches_fit(*trial, usage),
                                            self._ALLOWANCE_STEPS)
        finally:
            self.epsilon = epsilon
        return planned if best is None else best

    def _fit_template(self, *args, **kwargs):
        """Run the seven steps of the module docstring; ``args`` go to ``_validate_fit_inputs``."""
        saved = dict(self.__dict__)
        try:
            checking = _CHECKING.get() is self
            # every refusal before the first release says that nothing was spent, with its type unchanged
            # (sklearn_dpsco/_refusals.py); nothing after it is wrapped: a failure after a release is an outcome
            # of the data, and one after the spend must not claim that nothing was spent
            with refusing_before_any_spend():
                self._check_privacy_params()
                inputs, plan, event, accountant = self._prepare_fit(*args, **kwargs)  # 1-3
                if not checking:
                    # what the public plan warns about, before any row is read: a warning turned into an error
                    # (warnings-as-errors) then refuses the fit with nothing spent, instead of discarding a paid
                    # release
                    for message in self._plan_warnings(inputs, plan):
                        warnings.warn(message, UserWarning, stacklevel=3)
            if checking:  # check_fit: every refusal has had its chance; nothing runs
                raise _Checked(event)

            rng = check_random_state(self.random_state)
            released = columns = None
            if plan.columns is not None:  # 4a: column quartiles (after the checks), then a public per-row map
                rows, count = self._column_rows(inputs, plan.columns), None
                if getattr(plan.columns, "count_first", False):
                    # the count first, then the branch it chooses (adaptive sequential composition: both branches
                    # were planned and checked at the same epsilon; the event spent is the one that runs)
                    count = plan.columns.release_count(rows, rng)
                    if count[1] != plan.columns.count_event:
                        raise AssertionError(f"the count consumed {count[1]}, planned {plan.columns.count_event}")
                    if plan.opened is not None and count[0] > plan.columns.count_threshold(inputs.n_samples):
                        plan, event = plan.opened
                columns, column_event = plan.columns.release(rows, rng, n_jobs=self.n_jobs,
                                                               **({} if count is None else {"count": count}))
                if column_event != plan.columns.event:
                    raise AssertionError(f"column quartiles consumed {column_event}, planned {plan.columns.event}")
                if not self._CLIPS_COLUMNS:
                    columns = columns.with_clip(None)
                source = inputs.data[0]
                if self._defers_row_scaling(inputs, source):
                    # the solver's blocks map their own rows (RowScaledData): the same floats as the eager map,
                    # without a mapped copy of every row (speed only)
                    X, owned = DeferredRowScale(source, 1.0, *columns.affine(), columns.clip_bounds()), False
                else:
                    X = columns.transform(source)  # a dask array stays lazy, mapped chunk by chunk on the workers
                    X = np.ascontiguousarray(X) if isinstance(X, np.ndarray) else X
                    # a fresh array (the map never returns its input, nor a view of it; checked, as the caller's
                    # rows must never be written): the row rescaling may then work in place
                    owned = isinstance(X, np.ndarray) and not (isinstance(source, np.ndarray)
                                                               and np.may_share_memory(X, source))
                inputs = replace(inputs, data=(X, *inputs.data[1:]), scratch=X if owned else None)
            if plan.scales is not None:  # 4a: private scales (after the checks), then a public rescaling
                released, scale_event = plan.scales.release(inputs.data, rng)
                if scale_event != plan.scales.event:
                    raise AssertionError(f"scale estimates consumed {scale_event}, planned {plan.scales.event}")
                inputs = self._rescale_inputs(inputs, released)
            jobs = self._draw_problems(inputs, plan, rng)  # 4
            if len(jobs) == 1:
                # one problem: run it here (joblib's thread pool for a single task cost about 12 ms a fit
                # at n_jobs=2; the same call on the same arguments)
                fits = [_run_plan(plan.plan, *jobs[0])]
            else:
                fits = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                    delayed(_run_plan)(plan.plan, problem, state) for problem, state in jobs
                )
            # 4b: releases that read every problem's release (the joint threshold refit of one-vs-rest)
            fits = self._complete_runs(plan, jobs, fits, rng)
            for fit in fits:  # 5: the plan promised this event; never spend less than ran
                if fit.event != plan.event:
                    raise AssertionError(f"solver consumed {fit.event}, planned {plan.event}")

            accountant.spend(event, label=type(self).__name__, privacy_unit=self.privacy_unit)  # 6
            self._store_fit(inputs, plan, fits)  # 7
            self._store_privacy(plan, event, noise_source(rng))
            if released is not None:
                self._store_scales(plan, released)
            self._store_columns(plan, columns)
            late = self._grid_end_warnings(plan, released, columns)
            if late:
                for entry in self.fit_info_ if isinstance(self.fit_info_, list) else [self.fit_info_]:
                    entry["warnings"] = list(late)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        # read from the releases, after the spend and with the fit stored: a warning turned into an error then
        # reaches the caller with the paid model kept on the estimator (nothing is discarded)
        for message in late:
            warnings.warn(message, UserWarning, stacklevel=3)
        return self

    def _plan_warnings(self, inputs, plan):
        """Warnings about the fit that public facts decide (the plan, ``inputs.n_samples``, the parameters), issued
        after the checks and before any row is read. Here: the intercept-only release of a budget too small for
        the "auto" estimates (visible, not only in ``fit_info_``: the model predicts one value)."""
        if plan.solver != CONSTANT_SOLVER:
            return []
        asked = getattr(self, "solver", "auto")
        return [
            f"{type(self).__name__}: n epsilon is too small for the 'auto' scale estimates, so the fit "
            f"releases the intercept-only model (solver_='{CONSTANT_SOLVER}'"
            + (f", not the requested solver={asked!r}" if asked != "auto" else "")
            + "); declare row_bound and label_bound (or a scale_share) to fit a linear model "
            "(doc/privacy/quantiles.rst, 'Budgets too small for the estimates')."
        ]

    def _grid_end_warnings(self, plan, released, columns):
        """Warnings read from the releases (post-processing, after the spend): a released column quartile or centre,
        label centre or scale at its grid's last point (``|value| >= 2^20``). The values are then at or beyond it,
        where the grid cannot place them: such a column is mapped to a constant and such labels are fitted around
        ``2^20`` (doc/fitting_raw_data.rst, "Tiny magnitudes"; mhtdata's positions near 1e8: R^2 -1.15, 1.00 in
        millions). Without it the model is silently poor."""
        messages, name = [], type(self).__name__
        if columns is not None and getattr(plan.columns, "mode", None) in ("quartiles", "median_mad"):
            at_end = at_grid_end(*columns.quartiles, columns.centre)
            if at_end.size:
                messages.append(
                    f"{name}: the private quartiles of column(s) {at_end.tolist()} reached the end of the library's grid "
                    f"(2^20 = {GRID_END:g}): their values are at or beyond it and the column map treats them as constant. "
                    "Divide such columns by a public unit (thousands, millions) before fitting "
                    "(doc/fitting_raw_data.rst, 'Tiny magnitudes').")
        if released is not None and plan.scales is not None:
            for target in plan.scales.targets:
                value = abs(float(released[target.name])) / (1.0 if target.signed else target.margin)
                if value >= GRID_END:
                    messages.append(
                        f"{name}: the private {target.name.replace('_', ' ')} reached the end of the library's grid "
                        f"(2^20 = {GRID_END:g}): the values it estimates are at or beyond it. Divide them by a public "
                        "unit (thousands, millions) before fitting, or declare the bound "
                        "(doc/fitting_raw_data.rst, 'Tiny magnitudes').")
        return messages

    def _complete_runs(self, plan, jobs, fits, rng):
        """The runs' fits, after any release that reads all of them (a hook: none by default).

        Called after every problem's ``plan.run`` and before the events are checked: a subclass may
        release more here, on the same rows, as long as each fit's event then equals the plan's.
        """
        return fits

    def _check_within_budget(self, event):
        """Refuse (as an internal error) a plan whose event exceeds the user's (epsilon, delta)."""
        eps, delta = epsilon_delta(event, delta=self.delta if self.delta > 0 else None)
        if eps > self.epsilon * (1 + 1e-9) + 1e-12 or delta > self.delta * (1 + 1e-9):
            raise RuntimeError(
                f"internal error: {type(self).__name__} planned a spend of (epsilon={eps:.6g}, "
                f"delta={delta:.3g}) above its budget (epsilon={self.epsilon}, delta={self.delta}); "
                "nothing was run or released. Please report this."
            )

    def _store_privacy(self, plan, event, source):
        self.solver_ = plan.solver
        self.privacy_event_ = event
        self.epsilon_spent_, self.delta_spent_ = epsilon_delta(event, delta=self.delta if self.delta > 0 else None)
        self.noise_source_ = source
        for name, value in plan.attributes.items():
            setattr(self, name, value)

    def _split_coef(self, w, plan):
        """``(coef, intercept)`` of a run's vector: the last entry times the intercept column's value."""
        if self.fit_intercept:
            return w[:-1], w[-1] * plan.intercept_scaling
        return w, 0.0

    def _clip_columns(self, X):
        """``X`` with every column clipped to ``column_bounds_`` (the fit's clipped column map, in the data's
        units), or ``X`` itself without them. Post-processing: the model was fitted on the clipped columns, and a
        value beyond them (a missing-value code 98 / 99) would extrapolate its slope (doc/privacy/column_scaling.rst,
        "Clipped columns")."""
        bounds = getattr(self, "column_bounds_", None)
        if bounds is None:
            return X
        if sp.issparse(X):  # column scaling fits dense rows; a centre off 0 moves the zeros too
            X = X.toarray()
        return np.clip(X, bounds[0], bounds[1])

    def _decision(self, X):
        X = self._clip_columns(self._validate_X(X, reset=False))
        scores = X @ self.coef_.T
        if sp.issparse(scores):
            scores = scores.toarray()
        return np.asarray(scores) + self.intercept_


class DPClassifierMixin:
    """Binary and one-vs-rest multiclass fitting on top of :class:`DPLinearModelMixin`.

    The label set is treated as public: pass ``classes`` to fix it in advance
    (recommended); if it is inferred from ``y``, the labels present in the
    training data are revealed by ``classes_`` (as in every DP library), and
    the one-vs-rest budget split depends on their number.
    """

    def _resolve_classes(self, y_):
        """The sorted label set: ``classes`` if given (checked against ``y``), else read from ``y``."""
        if self.classes is None:
            classes = np.unique(y_)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or any(_is_missing(c) for c in classes.tolist()):
                raise ValueError(f"classes must be a flat list of labels without missing values, got "
                                 f"{self.classes!r}. Nothing was spent.")
            if np.unique(classes).size != classes.size:
                raise ValueError("classes must not contain duplicates.")
            unknown = np.setdiff1d(np.unique(y_), classes)
            if unknown.size:
                raise ValueError(f"y contains labels not listed in classes: {unknown[:5]!r}. Nothing was spent.")
            classes = np.sort(classes)
        if classes.size < 2:
            raise ValueError(
                "The training data must contain samples of at least 2 classes; "
                f"got {classes.size} class. Nothing was spent."
            )
        return classes

    def _validate_fit_inputs(self, X, y, sample_weight=None):
        """Step 1: rows, labels (public label set), weights; one ±1 target per one-vs-rest problem."""
        if is_cluster_input(X, y):
            return self._cluster_fit_inputs(X, y, sample_weight, classification=True)
        check_no_missing(y)  # pd.NA of a nullable column, by name (scikit-learn's check says NaN, or crashes)
        X_, y_ = self._validate_Xy(X, y, y_numeric=False)
        check_class_labels(y_)
        classes = self._resolve_classes(y_)
        sw = self._check_sample_weight(sample_weight, X_.shape[0])
        targets = self._ovr_targets(y_, classes)
        n_coef = X_.shape[1] + (1 if self.fit_intercept else 0)
        return FitInputs(X_.shape[0], n_coef, len(targets), (X_, targets, sw), public={"classes": classes})

    @staticmethod
    def _ovr_targets(y, classes):
        """One ±1 vector for a binary problem, one per class otherwise (one-vs-rest)."""
        if classes.size == 2:
            return [np.where(y == classes[1], 1.0, -1.0)]
        return [np.where(y == c, 1.0, -1.0) for c in classes]

    def _store_fit(self, inputs, plan, fits):
        """Step 7: one row of ``coef_`` and one ``intercept_`` per problem."""
        parts = [self._split_coef(f.coef, plan) for f in fits]
        self.classes_ = inputs.public["classes"]
        self.coef_ = np.array([p[0] for p in parts])
        self.intercept_ = np.array([p[1] for p in parts], dtype=float)
        self.fit_info_ = [f.info for f in fits]

    def decision_function(self, X):
        """Signed scores; shape (n_samples,) for binary, (n_samples, n_classes) otherwise."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        scores = self._decision(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]


class DPRegressorMixin:
    """Single-target regression on top of :class:`DPLinearModelMixin`."""

    #: Fewest coefficients (the intercept's included) from which :meth:`_scale_parts` counts the weighted parts;
    #: 0: at every width (DPLinearRegressor). DPGrowthAdaptiveRegressor: 8 (linear_model/_growth_rules.py,
    #: ``WEIGHTED_PARTS_MIN_COEF``, with its evidence). Public.
    _WEIGHTED_PARTS_MIN_COEF = 0

    def _scale_parts(self, targets, n_coef=None):
        """Public rule: with both bounds "auto", a label centre and at least ``_WEIGHTED_PARTS_MIN_COEF``
        coefficients, the estimates' weighted parts (:func:`~._auto_scales.weighted_parts`: the centre counts
        :data:`~._auto_scales.CENTRE_WEIGHT`, the label bound its median fallback's 1: 4), so the fit releases
        the intercept-only model below ``n epsilon = 4 x 50 / 0.5 = 400``, not 300; else their number.

        Why (DPLinearRegressor): between 300 and 400 the weighted share is capped, every estimate gets equal
        parts of under 67 ranks, the centre runs on its coarse grid (9 % steps: up to 0.09 |median| off) and
        AdaSSP's budget is too small for the label mean (n epsilon >= 200); on labels narrow against their level
        (sd 2.5 at 50) the model's level is then off by several spreads (synthetic d 2..30 at n epsilon 300 /
        350: mean R^2 down to -19), while the centre alone on the whole epsilon (the intercept-only plan: 300+
        ranks on the fine grid) is within 0.1 of the trivial model but in one cell. It costs the cells where a
        small model learned at n epsilon 300-400 on wide labels (d = 2, 3: R^2 0.19 / 0.30 / 0.17 / 0.12 -> 0;
        benchmarks/results/smallsets2.md, benchmarks/study_centre_window_smallsets2.py).
        """
        floor = self._WEIGHTED_PARTS_MIN_COEF
        wide = floor == 0 or (n_coef is not None and n_coef >= floor)
        if wide and is_auto(self.row_bound) and is_auto(self.label_bound) and self.fit_intercept:
            return weighted_parts(targets)
        return super()._scale_parts(targets, n_coef)

    def _validate_fit_inputs(self, X, y, sample_weight=None):
        """Step 1: rows, numeric targets, weights; one problem."""
        if is_cluster_input(X, y):
            return self._cluster_fit_inputs(X, y, sample_weight, classification=False)
        check_no_missing(y, what="targets")  # pd.NA of a nullable column, by name
        X_, y_ = self._validate_Xy(X, y, y_numeric=True)
        y_ = self._finite_targets(y_)
        sw = self._check_sample_weight(sample_weight, X_.shape[0])
        return FitInputs(X_.shape[0], X_.shape[1] + (1 if self.fit_intercept else 0), 1, (X_, [y_], sw))

    @staticmethod
    def _finite_targets(y):
        """``y`` as float64, refused unless every target is a finite number (nothing spent).

        scikit-learn's check reads an object array before converting it, so ``None`` or the string ``"nan"``
        among object labels reached the fit as NaN (a constant release at the full spend).
        """
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric for a regressor: {exc}. Nothing was spent.") from exc
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity (or values that convert to them, such as None or 'nan'). "
                             "Nothing was spent.")
        return y

    def _store_fit(self, inputs, plan, fits):
        """Step 7: ``coef_``, ``intercept_`` and ``fit_info_`` of the one problem."""
        coef, intercept = self._split_coef(fits[0].coef, plan)
        self.coef_ = coef
        self.intercept_ = float(intercept)
        self.fit_info_ = fits[0].info

    def predict(self, X):
        """Predict with the private linear model; a row far outside the fit's rows is first brought to a bound.

        With a quartile or median-and-spread column map the raw columns are first clipped to ``column_bounds_``,
        as the fit clipped the mapped ones (doc/privacy/column_scaling.rst, "Clipped columns"). A row whose norm
        in the fit's column units, ``z = (x - column_center_) / column_scale_`` (``z = x`` without a map),
        exceeds the estimator's prediction bound is then predicted from ``c + s z bound / ||z||`` (its score
        moves towards the score at the column centre by the same factor); every other row as ``X @ coef_ +
        intercept_``. Post-processing of the releases: nothing is spent.

        The bound: DPLinearRegressor's ``row_bound_`` where its solver clipped the rows to it (``"adassp"``,
        ``"snowball"``, ``"phased_sgd"``, ``"interpolation"``: the model is a linear function of the clipped
        row), none where the solver bounds each row's loss instead (``"phased_erm"``, ``"lowy"``,
        ``"interpolation_ald"``); DPGrowthAdaptiveRegressor's ``PREDICT_ROW_UNITS = 4`` times ``row_bound_``
        (none when an "auto" unit sits at the grid's end, ``2^20``: it is then not the rows' median).

        Why: a row far outside the fit's rows extrapolates a slope fitted on rows that were never that far
        (DPLinearRegressor on PSID's missing-value codes 98 / 99: R^2 -1.77 -> +0.31 at epsilon 2,
        benchmarks/results/predict_clip.md; DPGrowthAdaptiveRegressor on medical expenses up to 39182 next to a
        median row of 45: -3.6 -> 0.0, benchmarks/results/growth_predict_clip.md).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        from sklearn.utils.extmath import row_norms
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = self._clip_columns(self._validate_X(X, reset=False))
        scores = np.asarray(X @ self.coef_).ravel()
        bound = self._predict_row_bound()
        if bound is not None:
            if getattr(self, "column_center_", None) is None:  # no column map (sparse rows: column scaling needs dense)
                at_centre, norms = 0.0, row_norms(X)
            else:
                at_centre = float(self.column_center_ @ self.coef_)
                norms = row_norms((X - self.column_center_) / self.column_scale_)
            scores = at_centre + (scores - at_centre) * np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
        return scores + self.intercept_

    def _predict_row_bound(self):
        """The norm (in the fit's column units) :meth:`predict` brings farther rows to, or None: every row as it is
        (public: the releases and the fitted solver)."""
        return None
