"""DPLinearRegressor: private least squares (doc/privacy/linear_regression.rst)."""

import math
import numbers

from sklearn.base import RegressorMixin
from sklearn.utils.validation import _get_feature_names

from .._compat import Interval, StrOptions, _fit_context
from .._mechanisms import DEFAULT_NOISE
from .._param_checks import SCALE_MAX, SCALE_MIN, check_no_missing
from .._solvers import Problem, RowSource, as_row_source, get_solver, is_dask_array, loss_for, safe_row_norms
from ._auto_scales import AUTO, LABEL_CENTRE, LABEL_UPPER, ROW_LEVEL, ROW_MARGIN, ScaleTarget, is_auto
from ._base import DPLinearModelMixin, DPRegressorMixin, FitInputs, FitPlan
from ._cluster_inputs import record_features
from ._least_squares_rules import (
    EXTENSION_SOLVERS,
    ONE_PASS_SOLVERS,
    ROW_BOUND_SOLVERS,
    SOLVERS,
    default_intercept_scaling,
    domain_radius,
    phased_choice_applies,
    phased_erm_step_radius,
    resolve_solver,
)

__all__ = ["DPLinearRegressor"]


class DPLinearRegressor(DPRegressorMixin, RegressorMixin, DPLinearModelMixin):
    """Differentially private least-squares linear regression.

    Minimizes the squared loss ``1/2 (y - <w, x> - b)^2`` under
    (epsilon, delta)-differential privacy with respect to replacing one
    training row. Rows and labels of any size are allowed: privacy comes
    either from the C-Lipschitz (Huber) extension of the squared loss, or
    from declared PUBLIC bounds to which rows and labels are clipped — never
    from the data's own ranges.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon (> 0).
    delta : float, default=0.0
        Privacy parameter delta in [0, 1); 0 gives pure epsilon-DP.
    solver : {"auto", "adassp", "snowball", "phased_sgd", "phased_erm", "lowy", \
            "interpolation", "interpolation_ald"}, default="auto"
        Algorithm (see Notes). ``"auto"`` picks from public facts only
        (n, d, epsilon, delta, declared bounds); the choice is ``solver_``.
    clip : float, default=0.1
        Lipschitz level C of the Huber extension: each row's gradient is
        ``clip(residual, -C/||x||, C/||x||) x``, of norm at most C. Used by
        the SGD and ERM solvers (not by AdaSSP).
    row_bound : "auto", float or None, default="auto"
        Bound R on the l2 norm of a row; rows of larger norm are scaled down
        to it (a per-row map). ``"auto"``: twice a private median of the row
        norms, released inside this fit's budget (doc/privacy/quantiles.rst,
        "Use in the estimators"); the fit then runs on ``X / row_bound_`` with
        row bound 1, so a declared ``clip``, ``radius`` or
        ``intercept_scaling`` is read in those units. A number is a public
        declaration (nothing spent on it). Needed by "adassp", "snowball",
        "phased_sgd" and "interpolation" (their privacy rests on it);
        ``None`` declares no bound and restricts the choice to the
        extension-only solvers "phased_erm", "lowy", "interpolation_ald".
    label_bound : "auto" or float, default="auto"
        Bound B on ``|y|``; AdaSSP clips labels to [-B, B]. ``"auto"``: a
        private median ``c`` of y (``label_center_``; with
        ``fit_intercept=False`` no centre, ``c = 0``), then ``B = 1.5 x`` a
        private 0.8-quantile of ``|y - c|`` where its part buys 150 ranks
        (about ``n epsilon >= 600``; robust to 0/1 and count labels), else
        ``B = 3 x`` a private median of ``|y - c|`` (doc/privacy/quantiles.rst,
        "The upper label spread"); the fit runs on ``(y - c) / B`` with
        label bound 1 and the model is mapped back. The other solvers need
        no label bound.
    scale_share : float or None, default=None
        Fraction of epsilon spent on the ``"auto"`` bounds, in (0, 1);
        ignored when both are declared. ``None``: ``min(0.5, max(0.05, 50 k /
        (n epsilon)))`` for ``k`` estimates' parts (the label centre counts
        2, the upper label spread 3; public facts only).
    column_scaling : "auto" or bool, default="auto"
        Rescale the columns privately inside the fit: private quartiles
        ``q1, q3`` of every column (DPStandardScaler's ``bounds="auto"``
        releases, on ``min(0.25, max(0.05, 600 n_features / (n epsilon)))``
        of epsilon), rows mapped to ``(x - (q1 + q3) / 2) / max(q3 - q1, 1)`` before
        the ``"auto"`` row bound and the solver run on the rest, and the map
        folded back into ``coef_`` and ``intercept_`` (post-processing; no
        centring without an intercept; doc/privacy/column_scaling.rst). For
        raw columns in mixed units (a year or an income next to 0/1
        indicators), where one row-norm bound follows the dominant column.
        ``"auto"``: only with ``row_bound="auto"`` and
        ``intercept_scaling=None`` (nothing declared), dense rows (NumPy or Dask),
        and ``n epsilon`` large enough for the ``2 n_features`` quartiles
        (each gets ``n epsilon_i >= 50``: about ``n epsilon >= 400
        n_features``; from about ``200 n_features`` with an intercept and rows in
        memory, the private median and spread instead: doc/privacy/column_scaling.rst,
        "Median and spread"); public facts only. ``True``: always (dense rows only). ``False``:
        never. :class:`~sklearn_dpsco.preprocessing.DPPipeline` turns
        ``"auto"`` off after a ``DPStandardScaler`` that releases.
    radius : float, default=10.0
        Radius of the public parameter domain (a ball around 0 containing
        the coefficients, the intercept column included), in the units
        where rows are divided by the row bound and labels by the label
        bound, declared or "auto": with declared numbers the ball in the
        data's units has radius ``radius x label_bound / row_bound``
        (a side left ``None`` stays in the data's units). With both bounds
        ``"auto"``, ``"phased_erm"`` sizes its step for ``min(radius, 2.5)``
        in the rescaled units (the domain stays this ball; public rule,
        doc/privacy/localization.rst, "Step scale").
    steps : {"jnn", "constant"}, default="jnn"
        Snowball-SGD step schedule: Jain-Nagaraj-Netrapalli (FKT Thm 3.6)
        or constant (FKT Thm 3.5).
    smoothness : float or None, default=None
        Declared smoothness H of the interpolation solvers (utility only:
        ACCD's Lipschitz levels ``L_i = 2 H r_i``). None: ``(R^2 + s^2) /
        sqrt(d)`` for "interpolation", ``R^2 + s^2`` for "interpolation_ald"
        (R = 1 when no row bound is declared).
    growth : float or None, default=None
        Declared quadratic-growth constant lambda of the population loss for
        "interpolation_ald" (utility only). None: ``R^2 / d`` (isotropic rows).
    moment : float or None, default=None
        Declared bound G_k on the k-th moment of the per-row gradient norm
        (Lowy's heavy-tail assumption; utility only). When given, "lowy"
        uses Lowy's level ``C = G_k (m epsilon / d)^(1/k)`` instead of
        ``clip``.
    moment_order : float, default=2.0
        The k of ``moment`` (k >= 2).
    fit_intercept : bool, default=True
    intercept_scaling : float or None, default=None
        Value s of the virtual intercept column. ``None``: ``R / 4`` for
        AdaSSP (its sensitivities grow with ``R^2 + s^2``), ``R`` for the SGD
        solvers, 1 for Phased-ERM.
    accountant : BudgetAccountant, default=None
        Ledger charged once per successful fit (None: the default ledger).
    random_state : int, RandomState instance or None, default=None
        None draws noise from the OS CSPRNG (use for releases); an int
        gives reproducible, seeded noise (experiments and tests only).
    n_jobs : int, default=None
        Threads for solvers with independent sub-problems and the column
        quartiles' grid counts; results never depend on it.
    noise : {"secure", "float"}, default="secure"
        Noise sampling path (doc/privacy/secure_noise.rst): ``"secure"`` exact
        integer noise on a grid (Gaussians calibrated through zCDP), ``"float"``
        the textbook floating-point samplers. On ``"secure"``, ``"snowball"``
        (and ``"interpolation"`` with ``delta > 0``, which runs Snowball
        inside) release every batch's gradient sum through a discrete Gaussian
        at the full budget (disjoint batches: parallel composition in zCDP),
        with constant batches instead of growing ones (snowball_sgd.rst,
        "Secure path").
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    solver_ : str
    privacy_event_ : PrivacyEvent
        What the fit consumed (composition in doc/privacy/composition.rst).
    epsilon_spent_, delta_spent_ : float
    fit_info_ : dict
        Public schedule facts (phase counts, steps, batch sizes); with
        "auto" bounds also ``scale_estimates``, ``scale_share``,
        ``scale_epsilon`` and ``scale_rule``.
    row_bound_, label_bound_ : float
        The bounds used: the declared numbers, or the private estimates
        (``row_bound_`` is None when no row bound is declared).
    label_center_ : float
        The private label median (``label_bound="auto"`` only; 0 without
        an intercept). Where the budget is too small for the "auto"
        estimates (``n epsilon < 400``) the fit releases the intercept-only
        model (``solver_ == "intercept_only"``): at this centre, or from ``n
        epsilon >= 250`` at a private label mean (``fit_info_["label_mean"]``;
        doc/privacy/quantiles.rst, "The constant at the label mean").
    column_center_, column_scale_ : ndarray of shape (n_features,) or None
        The released column map (differentially private: functions of the
        released quartiles), or None when ``column_scaling`` did not run.
        With it, ``row_bound_`` is in the units of the rescaled columns.
    column_bounds_ : tuple of two ndarrays of shape (n_features,) or None
        ``(lower, upper)``: the raw columns' clip of the released column map
        (``centre -+ k scale``, ``k`` a public constant; ``-+inf`` for a
        column passed through), applied in the fit to the mapped columns and
        by prediction to the raw ones (doc/privacy/column_scaling.rst,
        "Clipped columns"); None without a quartile or median-and-spread map.
    noise_source_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    Unit of privacy: one row (``privacy_unit == "row"``; replace-one neighbours; the number of rows n
    is public). With column scaling the event is ``ComposedEvent((column quartiles, the rest))``
    (doc/privacy/column_scaling.rst). With "auto" bounds it is ``ComposedEvent((estimates, solver))``,
    planned before any data is read and spent once (doc/privacy/quantiles.rst,
    "Use in the estimators"; at ``delta > 0`` the solver's part is raised until
    the composition certifies exactly ``epsilon``, never more);
    :meth:`fit_stream` needs declared bounds.
    Solvers and their privacy arguments (doc/privacy/):

    * ``"adassp"`` — sufficient-statistics perturbation with adaptive ridge
      (Wang 2018): rows clipped to R, labels to B; pure or approximate DP
      (adassp.rst). At small ``n epsilon / d`` (public rule) 10 % of its
      epsilon privately chooses between its model, the label centre, the
      noisy label mean (not after the label-mean release below: the centre is then
      that mean) and a ridge that leaves the intercept unshrunk, by
      clipped squared loss on the rows (adassp.rst, "Private ridge choice";
      not in :meth:`fit_stream`); where that choice has too few ranks (``n epsilon < 1000``) but
      ``n epsilon / d < 50``, ``d >= 5``, ``n epsilon >= 50`` and ``label_bound="auto"``, 20 % chooses
      between its model and the label centre only (adassp.rst, "Guard at few ranks"). With an intercept,
      ``label_bound="auto"``, ``n epsilon >= 200`` and
      ``n epsilon / d < 1000`` (AdaSSP's epsilon), ``max(5 %, 50 / (n epsilon))`` (at most 25 %)
      first releases the clipped labels' mean and the statistics read the labels minus it, so the ridge
      shrinks towards the mean (adassp.rst, "Label mean (recentring)"; not in
      :meth:`fit_stream`).
    * ``"snowball"`` — one pass of projected noisy SGD with growing batches
      (Feldman, Koren, Talwar 2020, Thms 3.1/3.5/3.6); approximate DP only,
      through its Renyi-DP bound; linear time; can fit from chunks
      (:meth:`fit_stream`). Rows clipped to R make every step map
      non-expansive (step <= 2/(R^2 + s^2)) (snowball_sgd.rst). On
      ``noise="secure"`` every batch sum is released exactly instead.
    * ``"phased_sgd"`` — FKT Phased-SGD: one-pass SGD per phase, average
      iterate released with noise of sensitivity 2 C eta_i; pure or
      approximate (phased_sgd.rst).
    * ``"phased_erm"`` — FKT Phased-ERM with certified output perturbation;
      needs no row or label bound (localization.rst).
    * ``"lowy"`` — Lowy's localized double output perturbation (Pop-Localize
      over Double-OutputPert) on the Huber extension; pure or approximate;
      needs no bound; for heavy-tailed data (lowy.rst).
    * ``"interpolation"`` — ACCD's interpolation-adaptive algorithm (Alg 3)
      with Snowball-SGD (approximate) or Phased-SGD (pure) as its inner
      solver: Lipschitz levels halve per epoch, so on data with ``y = <w*,
      x>`` the error decays near-exponentially in n (interpolation_sgd.rst).
    * ``"interpolation_ald"`` — ACCD Alg 3 exactly as in the paper, with
      ALD Algorithm 2 inside; needs no bound (interpolation.rst).

    ``solver="auto"`` (public facts only; ``m = n epsilon / d``, d with the
    intercept column): Snowball-SGD when ``delta > 0``, ``noise="float"``, a
    row bound is declared and its schedule fits in n rows (secure Snowball is not chosen: it did
    not measurably win, benchmarks/results/rules.md "Secure Snowball"); else AdaSSP when ``m < 500``
    (pure DP) or ``m < 5000`` (``delta > 0``), or ``m >= 1e4``, or ``d <= 5`` with both bounds
    declared, with a row bound and ``d <= 1000``; else Lowy when ``m < 500``; else Phased-ERM (benchmarks/results/rules.md,
    benchmarks/results/scaling_n.md,
    doc/privacy/linear_regression.rst). Where that AdaSSP pick is at ``m < 500`` (pure DP, ``d`` above the
    small-d branch, both bounds "auto", rows in memory, ``n epsilon >= 500``), Phased-ERM is released first on 60 % of the
    solver's epsilon and AdaSSP's private choice (20 %) may return it instead of a ridge model
    (``fit_info_["phased_choice"]``; ``solver_`` stays ``"adassp"``; doc/privacy/adassp.rst, "Choice between
    AdaSSP and Phased-ERM"; benchmarks/results/solver_choice.md).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco.linear_model import DPLinearRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (5000, 3)) / 2
    >>> y = X @ np.array([0.5, -0.3, 0.2]) + 0.01 * rng.standard_normal(5000)
    >>> reg = DPLinearRegressor(epsilon=1.0, delta=1e-5, random_state=0).fit(X, y)
    >>> reg.solver_
    'adassp'
    >>> DPLinearRegressor(epsilon=1.0, delta=1e-5, noise="float", random_state=0).fit(X, y).solver_
    'snowball'
    """

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "solver": [StrOptions({"auto", *SOLVERS})],
        "clip": [Interval(numbers.Real, 0, None, closed="neither")],
        "row_bound": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), StrOptions({AUTO}), None],
        "label_bound": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), StrOptions({AUTO})],
        "scale_share": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "column_scaling": [StrOptions({AUTO}), "boolean"],
        "radius": [Interval(numbers.Real, 0, None, closed="neither")],
        "steps": [StrOptions({"jnn", "constant"})],
        "smoothness": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "growth": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "moment": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "moment_order": [Interval(numbers.Real, 2, None, closed="left")],
        "intercept_scaling": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), None],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        solver="auto",
        clip=0.1,
        row_bound=AUTO,
        label_bound=AUTO,
        scale_share=None,
        column_scaling=AUTO,
        radius=10.0,
        steps="jnn",
        smoothness=None,
        growth=None,
        moment=None,
        moment_order=2.0,
        fit_intercept=True,
        intercept_scaling=None,
        accountant=None,
        random_state=None,
        n_jobs=None,
        noise=DEFAULT_NOISE,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.clip = clip
        self.row_bound = row_bound
        self.label_bound = label_bound
        self.scale_share = scale_share
        self.column_scaling = column_scaling
        self.radius = radius
        self.steps = steps
        self.smoothness = smoothness
        self.growth = growth
        self.moment = moment
        self.moment_order = moment_order
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.noise = noise
        self.verbose = verbose

    # -- public-facts planning -------------------------------------------------------------
    def _check_bounds(self, spec):
        names = ("clip", "radius", "label_bound", "moment_order", "smoothness", "growth", "moment", "row_bound")
        for name in names:
            value = getattr(self, name)
            if value is not None and not is_auto(value) and not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}.")
        if spec.needs_row_bound and self.row_bound is None:
            raise ValueError(
                f"solver={spec.name!r} needs a public row_bound (rows are scaled down to it; its privacy "
                "argument rests on it). Declare row_bound, or use one of "
                f"{', '.join(EXTENSION_SOLVERS)} (privacy from the Lipschitz extension alone)."
            )

    def _scaling(self, spec, row_bound):
        """The intercept column's value s for the solver ``spec`` (0 without intercept)."""
        if not self.fit_intercept:
            return 0.0
        if self.intercept_scaling is not None:
            return float(self.intercept_scaling)
        return default_intercept_scaling(spec, row_bound)

    def _scale_targets(self, streaming):
        """The "auto" bounds to estimate (linear_model/_auto_scales.py); public."""
        targets = []
        if is_auto(self.row_bound):
            targets.append(ScaleTarget("row_bound", ROW_LEVEL, ROW_MARGIN, lambda data, _: safe_row_norms(data[0])))
        if is_auto(self.label_bound):
            # the label median first (signed grid), then the spread of the labels around it;
            # without an intercept a shift of the labels could not be undone: no centre, c = 0
            if self.fit_intercept:
                targets.append(LABEL_CENTRE)
            targets.append(LABEL_UPPER)
        if targets and streaming:
            raise ValueError(
                "fit_stream reads the rows once, in order, and cannot estimate "
                f"{' and '.join(t.name for t in targets if t.name != 'label_center')}='auto' first: declare them as "
                "numbers (every one-pass solver needs a row_bound; row_bound=None leaves only the extension solvers, "
                "which do not stream). Nothing was spent."
            )
        return targets

    def _declares_scales(self):
        return not (is_auto(self.row_bound) and self.intercept_scaling is None)

    def _plan_fit(self, inputs):
        """``(plan, event)``; at ``delta > 0``, the pure plan where that plan runs the AdaSSP / Phased-ERM choice.

        Why: the choice (:func:`phased_choice_applies`) is pure DP, and at ``delta > 0`` the Gaussian AdaSSP alone
        lost to it where it applies (16 seeds, epsilon 0.5 / 1: Computers raw 0.39 / 0.61 at delta 1e-6 against
        0.50 / 0.67 at delta 0, Computers scaled 0.31 / 0.44 against 0.53 / 0.61, Wages raw epsilon 1 0.18
        against 0.24; benchmarks/results/delta_choice.md): an epsilon-DP plan is also (epsilon, delta)-DP, so a
        fit given a delta never does worse than the pure fit there. Public: the rule reads the pure plan's
        solver parameters (n, d, epsilon, the settings). Under a meta-estimator's allowance the pure plan is kept
        only where the allowance holds it (a zCDP share reads its parts as epsilon^2 / 2).
        """
        # the choice's own preconditions first (phased_choice_applies): no second plan where it cannot apply
        if (self.delta > 0 and self.solver == AUTO and is_auto(self.row_bound) and is_auto(self.label_bound)
                and not inputs.plan_options.get("streaming", False)):
            pure = self._pure_choice_plan(inputs)
            if pure is not None:
                return pure
        return super()._plan_fit(inputs)

    def _pure_choice_plan(self, inputs):
        """The plan at ``delta = 0`` when its AdaSSP runs the Phased-ERM choice and the fit's allowance (if any)
        holds its event, else None (public arithmetic, nothing read)."""
        delta, self.delta = self.delta, 0.0
        try:
            plan, event = super()._plan_fit(inputs)
        except ValueError:  # a setting the pure path refuses: the fit plans at its delta, which says so if needed
            return None
        finally:
            self.delta = delta
        if not plan.plan.info.get("phased_choice", False):
            return None
        usage = self._allowance_usage()
        if usage is not None and not self._branches_fit(plan, event, usage):
            return None
        return plan, event

    def _plan(self, n_samples, n_features, n_problems, streaming=False, columns=None):
        """The solver's plan from public facts; with "auto" bounds, at unit scale on the rescaled data.

        An "auto" row bound (label bound) is planned as 1: the rows (labels)
        are divided by the released ``row_bound_`` (``label_bound_``) before
        the run, so the solver's event, like the estimates', is fixed here.
        """
        # n_features counts the intercept column (the template adds it when fit_intercept)
        targets = self._scale_targets(streaming)
        scales, rest = self._scale_plan(targets, n_samples, columns)
        row_bound = 1.0 if is_auto(self.row_bound) else self.row_bound
        label_bound = 1.0 if is_auto(self.label_bound) else self.label_bound
        declared = not (is_auto(self.row_bound) or is_auto(self.label_bound))  # public: what was passed
        # the ball in the solver's units: ``radius`` where rows and labels are in their bounds' units
        radius = domain_radius(self.radius, self.row_bound, self.label_bound)

        def build(budget):
            solver = resolve_solver(self.solver, n_samples, n_features, budget.epsilon, budget.delta, row_bound,
                                    self.noise, streaming, bounds_declared=declared)
            spec = get_solver("least_squares", solver)
            self._check_bounds(spec)
            if streaming and not spec.one_pass:
                raise ValueError(
                    f"solver={solver!r} cannot fit from chunks; one-pass solvers: {', '.join(ONE_PASS_SOLVERS)}."
                )
            s = self._scaling(spec, row_bound)
            if not spec.supports_noise(self.noise, self.delta):
                raise ValueError(
                    f"solver={solver!r} adds Gaussian noise at every step; it supports noise='float' only.")
            names = ("clip", "steps", "smoothness", "growth", "moment", "moment_order")
            params = {name: getattr(self, name) for name in names}
            params["radius"] = radius
            # AdaSSP's private ridge choice reads the rows a second time: not from a one-pass stream
            # recentring by a released label mean: only where the centre is the "auto" median (a declared
            # bound keeps the choice's unshrunk-intercept ridges at full budget)
            params.update(row_bound=row_bound, label_bound=label_bound, intercept_scaling=s,
                          ridge_selection=not streaming, recentre_labels=not streaming and is_auto(self.label_bound),
                          phased_choice=phased_choice_applies(self.solver, solver, n_samples, n_features,
                                                              budget.epsilon, budget.delta, streaming=streaming,
                                                              bounds_auto=is_auto(self.row_bound)
                                                              and is_auto(self.label_bound)),
                          step_radius=phased_erm_step_radius(is_auto(self.row_bound), is_auto(self.label_bound)))
            plan = spec.build(n_samples, n_features, budget, params)
            return FitPlan(solver, plan, loss=loss_for(spec), radius=radius, intercept_scaling=s,
                           attributes={"row_bound_": row_bound, "label_bound_": label_bound}, scales=scales,
                           columns=columns)

        plan = self._fill_budget(build, scales, rest, columns=columns)  # also every refusal of the settings
        if self._scales_unsupported(targets, n_samples, columns, n_features):
            attributes = {"row_bound_": None if is_auto(self.row_bound) else self.row_bound,
                          "label_bound_": None if is_auto(self.label_bound) else self.label_bound,
                          "label_center_": 0.0}
            # squared loss: the constant at the label mean where the budget allows it (linear_model/_constant_mean.py)
            return self._constant_plan(targets, n_samples, n_features, columns, attributes,
                                       at_mean=is_auto(self.label_bound))
        return plan

    def _scale_units(self, released):
        return released.get("row_bound", 1.0), released.get("label_bound", 1.0), released.get("label_center", 0.0)

    def _store_scales(self, plan, released):
        super()._store_scales(plan, released)
        for name, value in released.items():
            setattr(self, name + "_", value)
        if is_auto(self.label_bound) and not self.fit_intercept:
            self.label_center_ = 0.0

    # -- the template's hooks for fit_stream ------------------------------------------------
    def _validate_fit_inputs(self, X, y, sample_weight=None, *, stream=None):
        """Step 1; ``stream`` (``{"n_samples", "block_rows"}``) reads the rows through a one-pass source."""
        if stream is None:
            return super()._validate_fit_inputs(X, y, sample_weight)
        # a DataFrame's column names, recorded as scikit-learn's validation does in fit (predict then checks them)
        names = _get_feature_names(X) if not is_dask_array(X) else None
        if hasattr(X, "to_numpy") and not is_dask_array(X):
            X = X.to_numpy()
        if y is not None and hasattr(y, "to_numpy") and not is_dask_array(y):
            check_no_missing(y, what="targets")  # pd.NA of a nullable column, by name
            y = y.to_numpy()
        source = as_row_source(X, y, sample_weight, **stream)
        if hasattr(source, "peek_n_features"):
            source.peek_n_features()
            names = source.feature_names  # a stream of DataFrame blocks: the first block's (every block's, checked)
        p = source.n_features
        return FitInputs(source.n_samples, p + (1 if self.fit_intercept else 0), 1, source,
                         plan_options={"streaming": True}, public={"n_features": p, "feature_names": names})

    def _draw_problems(self, inputs, plan, rng):
        if not isinstance(inputs.data, RowSource):
            return super()._draw_problems(inputs, plan, rng)
        # one problem read once in the given order: the fit's own generator runs it
        return [(Problem(inputs.data, plan.loss, plan.radius, self.n_jobs), rng)]

    def _store_fit(self, inputs, plan, fits):
        if hasattr(self, "label_center_"):
            del self.label_center_  # an earlier fit's release; this fit's own (if any) is stored after this
        super()._store_fit(inputs, plan, fits)
        if isinstance(inputs.data, RowSource):
            record_features(self, inputs.public["n_features"], inputs.public["feature_names"])

    # -- fit ---------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or DataFrame} of shape (n_samples, n_features)
            A dask collection stays on its cluster: validation, "auto"
            bounds and AdaSSP's statistics run on the workers, Phased-SGD
            and Snowball-SGD chunk by chunk on the workers holding the rows,
            the other solvers on one worker; the release is the in-memory
            one (doc/large_data.rst, "Dask").
        y : array-like or dask array/Series of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Weights in [0, 1] (a weight above 1 would let one row count more
            than the guarantee allows).

        Returns
        -------
        self
        """
        return self._fit_template(X, y, sample_weight)

    def fit_stream(self, X, y=None, sample_weight=None, *, n_samples=None, block_rows=8192):
        """Fit in ONE pass over data larger than memory, spending the budget once.

        Parameters
        ----------
        X : numpy.memmap or ndarray, dask array, or iterable of blocks
            An array (e.g. ``np.load(path, mmap_mode="r")``) or dask array
            with ``y`` (and ``sample_weight``) alongside; or an iterable of
            ``(X_block, y_block)`` / ``(X_block, y_block, w_block)`` tuples,
            which then needs ``n_samples``.
        y, sample_weight : array-like or dask array, optional
        n_samples : int, optional
            Number of rows (public: the schedule is computed from it before
            any row is read). Required for an iterable of blocks; a stream
            with a different number of rows raises and spends nothing.
        block_rows : int, default=8192
            Rows read at a time from an array.

        Returns
        -------
        self

        Notes
        -----
        The scales must be declared: ``row_bound`` and ``label_bound`` as
        numbers (every one-pass solver needs a row bound). The defaults
        ``"auto"`` are refused before anything is spent, since their
        private estimates would need a pass over the rows before the one
        pass (doc/large_data.rst).

        Rows are used in the order given (shuffle them beforehand if they
        are sorted: utility, not privacy, assumes a random order). Only
        one-pass solvers are allowed (``"snowball"``, ``"phased_sgd"``,
        ``"adassp"``, ``"interpolation"``; the registry's ``one_pass``);
        ``solver="auto"`` uses Snowball-SGD for
        approximate DP with ``noise="float"`` and AdaSSP otherwise. Memory stays bounded by a
        block (plus d x d for AdaSSP). A dask array is read chunk by chunk on
        the workers holding it (AdaSSP, Phased-SGD, Snowball-SGD): only the
        solver's d-sized state moves (doc/large_data.rst, "Dask").
        """
        self._validate_params()
        return self._fit_template(X, y, sample_weight, stream={"n_samples": n_samples, "block_rows": block_rows})

    def _predict_row_bound(self):
        """``row_bound_`` when the fitted solver clipped the rows to it, else None (public: the fitted solver): the
        model is a linear function of the clipped row (``DPRegressorMixin.predict``)."""
        if getattr(self, "row_bound_", None) is None or self.solver_ not in ROW_BOUND_SOLVERS:
            return None
        return float(self.row_bound_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # a private fit on a handful of rows is noise-dominated by design
        tags.regressor_tags.poor_score = True
        return tags
