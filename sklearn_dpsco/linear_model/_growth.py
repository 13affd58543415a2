"""DPGrowthAdaptiveRegressor: private |r|^p regression that adapts to the unknown growth of the loss."""

import numbers

import numpy as np
from sklearn.base import RegressorMixin

from .._compat import Interval, StrOptions, _fit_context
from .._mechanisms import DEFAULT_NOISE
from .._param_checks import SCALE_MAX, SCALE_MIN
from .._solvers import GROWTH_SCHEDULES as SCHEDULES
from .._solvers import get_solver, loss_for
from .._solvers._builders._growth import _one_blas_thread
from .._solvers._core._data import row_norms_of
from ._auto_scales import AUTO, GROWTH_ROW_MARGIN, LABEL_CENTRE, LABEL_SPREAD, ROW_LEVEL, ScaleTarget, is_auto
from .._mechanisms._scale_grid import GRID_END
from ._base import DPLinearModelMixin, DPRegressorMixin, FitPlan
from ._growth_rules import (DEFAULT_KAPPA_LOWER, PREDICT_ROW_UNITS, SOLVERS, WEIGHTED_PARTS_MIN_COEF,
                            default_radius, resolve_solver)

__all__ = ["DPGrowthAdaptiveRegressor"]


class DPGrowthAdaptiveRegressor(DPRegressorMixin, RegressorMixin, DPLinearModelMixin):
    """Differentially private ``|y - <w, x>|^p`` regression, adaptive to the growth of the loss.

    Minimizes the population risk ``E |y - <w, x> - b|^p`` (``p >= 1``; ``p = 1``
    is least absolute deviations, ``p = 2`` least squares) under
    (epsilon, delta)-differential privacy, at the rate the *unknown* growth
    exponent ``kappa`` of the risk around its minimizer allows —
    ``(d / (n epsilon))^(kappa / (kappa - 1))`` for every ``kappa >= kappa_lower``
    (Asi, Levy, Duchi 2021) — without being told ``kappa``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the fit (> 0).
    delta : float, default=0.0
        ``0`` gives pure epsilon-DP (l2-Laplace noise); ``> 0`` approximate DP
        (Gaussian noise). The ``inverse_sensitivity`` solver is always pure.
    power : float, default=1.0
        The exponent ``p >= 1`` of the loss ``|r|^p``.
    kappa_lower : float, default=3.0
        A lower bound ``> 1`` on the growth exponent the estimator adapts to
        (``ald_growth``): ``T = ceil(2 log n / (kappa_lower - 1))`` epochs,
        capped at what float64 can resolve. The default (``T = ceil(log n)``)
        measured best on the real sets: fewer, larger epochs than the
        paper's example 1.25 (benchmarks/results/growth_kappa.md); a smaller
        value adapts to flatter growth with more, smaller epochs.
    solver : {"auto", "ald_growth", "ald_localization", "interpolation", \
            "inverse_sensitivity"}, default="auto"
        - ``"ald_growth"``: ALD Algorithm 2 — epochs of ALD Algorithm 1 on
          disjoint blocks with halving radii and steps (adaptive).
        - ``"ald_localization"``: ALD Algorithm 1 alone (non-adaptive
          baseline).
        - ``"interpolation"``: ACCD Algorithm 6 (``kappa``-growth
          interpolation epochs); needs ``smoothness`` and ``growth``.
        - ``"inverse_sensitivity"``: ALD's smooth inverse-sensitivity
          mechanism, sampled exactly on a grid; one coefficient only
          (``X`` with one column and ``fit_intercept=False``, e.g. a private
          median with ``X = ones``).
        - ``"auto"``: ``"inverse_sensitivity"`` when the model has exactly one
          coefficient, else ``"ald_growth"`` (public facts only).
    clip : float, default=1.0
        Lipschitz level ``C`` of the loss extension: each row's loss is
        replaced by its ``C``-Lipschitz extension (its gradient is
        ``clip(p |r|^(p-1) sign(r), -C/||x||, C/||x||) x``), which makes the fit
        private for rows of any norm. With ``||x|| <= 1``, LAD is unchanged
        at ``C = 1``. Read in the units of ``X / row_bound_`` when a row
        bound is set.
    row_bound : "auto", float or None, default="auto"
        Unit ``R`` of the rows: the fit runs on ``X / R`` (a public per-row
        map), so with ``clip=1`` rows of norm up to ``R`` keep the plain
        loss and larger ones are down-weighted by the ``clip``-Lipschitz
        extension. ``"auto"``: a private median of the row norms,
        released inside this fit's budget (``scale_share`` of epsilon;
        doc/privacy/quantiles.rst, "Use in the estimators"). A number is a
        public declaration (nothing spent on it). ``None``: the rows as
        given (``clip`` and ``radius`` in the data's units).
    label_bound : "auto", float or None, default="auto"
        Unit ``B`` of the labels: the fit runs on ``(y - c) / B``.
        ``"auto"``: ``c`` a private median of ``y`` (``label_center_``; with
        ``fit_intercept=False`` no centre, ``c = 0``), then ``B = 3 x`` a
        private median of ``|y - c|``. A number is a public declaration
        (``c = 0``, nothing spent). ``None``: the labels as given. The loss is
        Lipschitz in the coefficients for any labels: ``B`` sets the units of
        ``radius``, not the privacy.
    scale_share : float or None, default=None
        Fraction of epsilon spent on the ``"auto"`` scales, in (0, 1);
        ignored when none is ``"auto"``. ``None``: ``min(0.5, max(0.05, 50 k
        / (n epsilon)))`` for ``k`` estimates (public facts only).
    column_scaling : "auto" or bool, default="auto"
        Rescale the columns privately inside the fit, as
        :class:`~sklearn_dpsco.linear_model.DPLinearRegressor` does: private
        quartiles ``q1, q3`` of every column (DPStandardScaler's
        ``bounds="auto"`` releases, on ``min(0.25, max(0.05, 600 n_features /
        (n epsilon)))`` of epsilon), rows mapped to ``(x - (q1 + q3) / 2) /
        max(q3 - q1, 1)`` before the ``"auto"`` scales and the solver run on
        the rest, and the map folded back into ``coef_`` and ``intercept_``
        (post-processing; no centring without an intercept;
        doc/privacy/column_scaling.rst). For raw columns in mixed units (a
        year next to 0/1 indicators), where one row-norm unit follows the
        dominant column. ``"auto"``: only with ``row_bound="auto"``, dense
        rows, more than one coefficient (not the one-coefficient
        ``inverse_sensitivity`` mechanism) and ``n epsilon`` large enough for
        the ``2 n_features`` quartiles (about ``n epsilon >= 400
        n_features``; from about ``200 n_features`` with an intercept and rows in
        memory, the private median and spread instead: doc/privacy/column_scaling.rst,
        "Median and spread"); public facts only. ``True``: always (dense rows only).
        ``False``: never. :class:`~sklearn_dpsco.preprocessing.DPPipeline`
        turns ``"auto"`` off after a ``DPStandardScaler`` that releases.
    radius : float or None, default=None
        Radius of the public ball around 0 the coefficients (intercept
        included, scaled by ``intercept_scaling``) are searched in; in the
        units of the rescaled problem (``coef * row_bound_ / label_bound_``)
        when a row or label bound is set. ``None``: on the rescaled problem
        ``min(30, max(1, m / 50))`` with ``m = n epsilon / d`` (``d`` counting
        the intercept column), 10 in the data's units
        (``row_bound=label_bound=None``); public rule,
        benchmarks/results/growth_scales.md. ``radius_`` is the value used.
    schedule : {"practical", "paper"}, default="practical"
        Utility constants of the ALD schedules (step size, phases per epoch);
        privacy does not depend on them. See Notes.
    smoothness : float, default=None
        Declared smoothness ``H`` of every per-row loss (``interpolation``).
    growth : float, default=None
        Declared growth constant ``lambda`` of the risk (``interpolation``).
    kappa : float, default=2.0
        Declared growth exponent ``>= 2`` (``interpolation``).
    grid_size : int, default=None
        Grid points of ``inverse_sensitivity`` (default 65537 for ``p = 1``,
        4097 otherwise).
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        Value of the virtual intercept feature (it counts in the row norm).
    accountant : BudgetAccountant, default=None
        Ledger charged by ``fit``; ``None`` uses the process-wide default.
    random_state : int, RandomState instance or None, default=None
        ``None`` draws the noise from the OS CSPRNG (use for releases); an int
        gives reproducible, seeded noise.
    n_jobs : int, default=None
        Threads for the column quartiles' grid counts (joblib's meaning:
        None is one thread outside a ``joblib.parallel_config`` context);
        results do not depend on it. The phases are sequential (each is
        centred on the previous release).
    noise : {"secure", "float"}, default="secure"
        Noise path of the output perturbations (doc/privacy/secure_noise.rst):
        ``"secure"`` draws exact integer noise on a grid; ``"float"`` the
        textbook floating-point sampler. ``inverse_sensitivity`` releases a
        grid point and has no float noise either way.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    solver_ : str
        The solver used.
    n_epochs_ : int
        Epochs (or phases) the solver ran — public, fixed before the data
        were touched.
    radii_ : ndarray of shape (n_epochs,)
        The public per-epoch radii of the localization (the domain radius
        for one-shot solvers).
    privacy_event_ : PrivacyEvent
    epsilon_spent_, delta_spent_ : float
    noise_source_ : str
    radius_ : float
        The radius used (in the rescaled units when a row or label bound is set).
    row_bound_, label_bound_ : float or None
        The units used: the declared numbers (None: none), or the private
        estimates for ``"auto"``.
    label_center_ : float
        The label shift ``c`` (0 unless ``label_bound="auto"`` with an
        intercept, where it is a private release).
    column_center_, column_scale_ : ndarray of shape (n_features,) or None
        The released column map (differentially private: functions of the
        released quartiles), or None when ``column_scaling`` did not run.
        With it, ``row_bound_`` and ``radius_`` are in the units of the
        rescaled columns.
    column_bounds_ : tuple of two ndarrays of shape (n_features,) or None
        ``(lower, upper)``: the raw columns' clip of the released column map
        (``centre -+ k scale``, ``k`` a public constant; ``-+inf`` for a
        column passed through), applied in the fit to the mapped columns and
        by prediction to the raw ones (doc/privacy/column_scaling.rst,
        "Clipped columns"); None without a quartile or median-and-spread map.
    fit_info_ : dict
        Public schedule diagnostics (radii in the rescaled units); with
        "auto" scales also ``scale_estimates``, ``scale_share``,
        ``scale_epsilon`` and ``scale_rule`` (the private releases).
    n_features_in_ : int
    feature_names_in_ : ndarray

    Notes
    -----
    **Privacy.** Unit: one row (``privacy_unit == "row"``; replace-one neighbours; ``n`` is public).
    Every solver is (epsilon, delta)-DP for ANY data — unbounded rows, any
    targets — because each row's loss is replaced by its ``clip``-Lipschitz
    extension (convex, ``clip``-Lipschitz). ``ald_growth``,
    ``ald_localization`` and ``interpolation`` release certified output
    perturbations on disjoint blocks (parallel composition);
    ``inverse_sensitivity`` is the exponential mechanism with score
    sensitivity ``2 clip / n``, exponent ``epsilon n G / (4 clip)`` (ALD print
    ``/(2L)``, which is 2 epsilon-DP). Every radius, step, epoch count and
    noise scale is computed from ``n``, the number of coefficients,
    ``epsilon``, ``delta``, ``clip``, ``radius``, ``kappa_lower`` (and the
    declared ``smoothness``, ``growth``, ``kappa`` for ``interpolation``) before
    the data are touched. The declared ``smoothness``/``growth``/``kappa``
    and ``schedule`` affect utility only. See doc/privacy/growth.rst,
    doc/privacy/localization.rst, doc/privacy/interpolation.rst and
    doc/privacy/inverse_sensitivity.rst.

    **Scales.** With ``row_bound`` or ``label_bound`` ``"auto"`` the fit's
    event is ``ComposedEvent((estimates, solver))``: the private medians
    (pure DP, ``scale_share`` of epsilon) and the solver planned at unit
    scale on the rest, both fixed before the data is read and spent once
    (doc/privacy/growth.rst, "Private scales"). At ``delta > 0`` the
    solver's part is raised until the composition certifies exactly
    ``epsilon``. The coefficients are mapped back,
    ``coef_ = coef' B / R`` and ``intercept_ = intercept' B + c``
    (post-processing). Declared numbers spend nothing on estimation.

    **Schedules.** ``schedule="paper"`` uses ALD's printed step sizes and
    ``ceil(log n_0)`` phases per epoch; at n below ~1e7 (d = 10) its first
    phases cannot move the iterate across the domain. ``"practical"`` keeps
    the privacy branch of the step and one phase per epoch
    (benchmarks/results/growth_rates.md). Both centre every phase at the
    previous output (targets ``y - <x, w_prev>``, winsorized where that
    cannot move the phase's minimizer), so the certified solver resolves
    the deep epochs the adaptivity needs, for targets of any size
    (doc/privacy/output_perturbation.rst, "Centring").

    References
    ----------
    H. Asi, D. Levy, J. Duchi. Adapting to function difficulty and growth
    conditions in private optimization. NeurIPS 2021.
    H. Asi, K. Chadha, G. Cheng, J. Duchi. Private optimization in the
    interpolation regime: faster rates and hardness results. ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco.linear_model import DPGrowthAdaptiveRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((2000, 3)) / 3
    >>> y = X @ np.array([1.0, -0.5, 0.2])
    >>> reg = DPGrowthAdaptiveRegressor(epsilon=1.0, fit_intercept=False, random_state=0).fit(X, y)
    >>> reg.solver_, reg.n_epochs_ == len(reg.radii_)
    ('ald_growth', True)
    >>> sorted(reg.fit_info_["scale_estimates"])  # private releases, inside epsilon
    ['label_bound', 'row_bound']
    >>> declared = DPGrowthAdaptiveRegressor(epsilon=1.0, radius=2.0, row_bound=None, label_bound=None,
    ...                                      fit_intercept=False, random_state=0).fit(X, y)
    >>> round(declared.epsilon_spent_, 12), declared.row_bound_ is None
    (1.0, True)
    """

    #: the weighted-parts rule of DPRegressorMixin._scale_parts from this many coefficients (_growth_rules.py)
    _WEIGHTED_PARTS_MIN_COEF = WEIGHTED_PARTS_MIN_COEF

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "power": [Interval(numbers.Real, 1, None, closed="left")],
        "kappa_lower": [Interval(numbers.Real, 1, None, closed="neither")],
        "solver": [StrOptions({"auto", *SOLVERS})],
        "clip": [Interval(numbers.Real, 0, None, closed="neither")],
        "row_bound": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), StrOptions({AUTO}), None],
        "label_bound": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), StrOptions({AUTO}), None],
        "scale_share": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "column_scaling": [StrOptions({AUTO}), "boolean"],
        "radius": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "schedule": [StrOptions(set(SCHEDULES))],
        "smoothness": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "growth": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "kappa": [Interval(numbers.Real, 2, None, closed="left")],
        "grid_size": [Interval(numbers.Integral, 2, None, closed="left"), None],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        power=1.0,
        kappa_lower=DEFAULT_KAPPA_LOWER,
        solver="auto",
        clip=1.0,
        row_bound=AUTO,
        label_bound=AUTO,
        scale_share=None,
        column_scaling=AUTO,
        radius=None,
        schedule="practical",
        smoothness=None,
        growth=None,
        kappa=2.0,
        grid_size=None,
        fit_intercept=True,
        intercept_scaling=1.0,
        accountant=None,
        random_state=None,
        n_jobs=None,
        noise=DEFAULT_NOISE,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.power = power
        self.kappa_lower = kappa_lower
        self.solver = solver
        self.clip = clip
        self.row_bound = row_bound
        self.label_bound = label_bound
        self.scale_share = scale_share
        self.column_scaling = column_scaling
        self.radius = radius
        self.schedule = schedule
        self.smoothness = smoothness
        self.growth = growth
        self.kappa = kappa
        self.grid_size = grid_size
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.noise = noise
        self.verbose = verbose

    # -- public-facts-only decisions ---------------------------------------------------------
    def _loss(self):
        return loss_for(get_solver("growth", "ald_growth"), power=self.power)

    def _rescaled(self):
        """True when the fit runs on rows or labels divided by a unit ("auto" or declared); public."""
        return self.row_bound is not None or self.label_bound is not None

    def _radius(self, n_samples, n_coef):
        """``radius``, or the public ``radius=None`` rule (linear_model/_growth_rules.py)."""
        if self.radius is not None:
            return float(self.radius)
        return default_radius(self._rescaled(), n_samples, n_coef, self.epsilon)

    def _params(self, radius):
        """The public settings every plan builder of the family reads."""
        names = ("clip", "power", "kappa_lower", "schedule", "smoothness", "growth", "kappa", "grid_size")
        return {"radius": radius, **{name: getattr(self, name) for name in names}}

    def _scale_targets(self):
        """The "auto" units to estimate (linear_model/_auto_scales.py); public."""
        targets = []
        if is_auto(self.row_bound):
            # row_norms_of: also the norms of column-mapped rows whose map the solver's blocks apply (deferred)
            # the median itself: rows above it are down-weighted by the extension, not clipped (GROWTH_ROW_MARGIN)
            targets.append(ScaleTarget("row_bound", ROW_LEVEL, GROWTH_ROW_MARGIN,
                                       lambda data, _: row_norms_of(data[0])))
        if is_auto(self.label_bound):
            if self.fit_intercept:  # without an intercept a shift of the labels could not be undone
                targets.append(LABEL_CENTRE)
            # the split median (LABEL_SPREAD), not DPLinearRegressor's upper label spread: on the least absolute
            # deviations fit the upper rule's larger scale share lost beyond noise on real sets (12 seeds, eps 1:
            # PSID -0.075 (se 0.024), Computers scaled -0.104 (se 0.044); elsewhere within noise), and its
            # atomic-label gains were smaller than AdaSSP's (benchmarks/results/label_atoms.md)
            targets.append(LABEL_SPREAD)
        return targets

    def _check_units(self):
        for name in ("row_bound", "label_bound", "clip", "radius"):
            value = getattr(self, name)
            if value is not None and not is_auto(value) and not np.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}. Nothing was spent.")

    def _declares_scales(self):
        """True when the row unit is declared (``column_scaling="auto"`` then stays off); public."""
        return not is_auto(self.row_bound)

    def _quartile_plan(self, inputs):
        """The template's column plan, except that ``"auto"`` leaves the one-coefficient mechanism alone
        (``inverse_sensitivity``: a private median of one column has no columns to balance); public."""
        if self.column_scaling == AUTO and resolve_solver(self.solver, inputs.n_coef) == "inverse_sensitivity":
            return None
        return super()._quartile_plan(inputs)

    def _plan(self, n_samples, n_features, n_problems, columns=None):
        """The solver's plan from (n, d) and the public parameters; with "auto" units, at unit scale.

        An "auto" row (label) unit is planned as 1: the rows (labels) are
        divided by the released ``row_bound_`` (``label_bound_``) before the
        run, so the solver's event, like the estimates', is fixed here.
        ``columns`` (a ``ColumnScalingPlan``): the rows are first mapped by the
        released column quartiles, on ``columns.share`` of epsilon.
        """
        self._check_units()
        targets = self._scale_targets()
        radius = self._radius(n_samples, n_features)
        scales, rest = self._scale_plan(targets, n_samples, columns)
        solver = resolve_solver(self.solver, n_features)
        spec = get_solver("growth", solver)
        scaling = self.intercept_scaling if self.fit_intercept else 0.0
        attributes = {name + "_": None if is_auto(getattr(self, name)) else getattr(self, name)
                      for name in ("row_bound", "label_bound")}
        attributes.update(label_center_=0.0, radius_=radius)

        def build(budget):
            plan = spec.build(n_samples, n_features, budget, self._params(radius))
            return FitPlan(solver, plan, loss=loss_for(spec, power=self.power), radius=radius,
                           intercept_scaling=scaling, attributes=attributes, scales=scales, columns=columns)

        build_event = None if spec.build_event is None else (  # the candidates' events without their plans
            lambda budget: spec.build_event(n_samples, n_features, budget, self._params(radius)))
        plan = self._fill_budget(build, scales, rest, columns=columns,  # also every refusal of the settings
                                 build_event=build_event)
        if self._scales_unsupported(targets, n_samples, columns, n_features):
            return self._constant_plan(targets, n_samples, n_features, columns, dict(attributes),
                                       info={"epochs": 0, "radii": []}, radius=radius)
        return plan

    # -- units: "auto" releases or declared numbers (a public per-row map either way) ----------
    def _scale_units(self, released):
        row = released.get("row_bound", self.row_bound if not is_auto(self.row_bound) else None)
        label = released.get("label_bound", self.label_bound if not is_auto(self.label_bound) else None)
        return (1.0 if row is None else float(row), 1.0 if label is None else float(label),
                released.get("label_center", 0.0))

    def _declared_units(self):
        return self._scale_units({}) != (1.0, 1.0, 0.0)

    def _draw_problems(self, inputs, plan, rng):
        if plan.scales is None and self._declared_units():  # declared units: the same public map
            inputs = self._rescale_inputs(inputs, {})
        return super()._draw_problems(inputs, plan, rng)

    def _defers_row_scaling(self, inputs, X):
        # the phases read disjoint blocks of rows (centred_block): each scales its own block when it starts
        return (not inputs.public.get("cluster") and type(X) is np.ndarray and X.dtype == np.float64
                and X.ndim == 2 and X.flags.c_contiguous)

    def _store_scales(self, plan, released):
        super()._store_scales(plan, released)
        for name, value in released.items():
            setattr(self, name + "_", value)

    def _check_enough_samples(self, n_samples, n_features):
        # A public-facts check with sklearn's "n_samples = 1" wording; the
        # schedules raise their own specific errors for other small n.
        if n_samples < 2:
            raise ValueError(f"DPGrowthAdaptiveRegressor needs at least 2 samples; got n_samples = {n_samples}.")

    def _validate_fit_inputs(self, X, y, sample_weight=None):
        inputs = super()._validate_fit_inputs(X, y, sample_weight)
        X_ = inputs.data[0]
        self._check_enough_samples(*X_.shape)
        return inputs

    def _store_fit(self, inputs, plan, fits):
        super()._store_fit(inputs, plan, fits)
        if plan.scales is None and self._declared_units():  # back to the data's units (post-processing)
            row_scale, label_scale, _ = self._scale_units({})
            self.coef_ = self.coef_ * (label_scale / row_scale)
            self.intercept_ = self.intercept_ * label_scale
        self.n_epochs_ = int(self.fit_info_["epochs"])
        self.radii_ = np.asarray(self.fit_info_["radii"], dtype=float)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private regression.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Weights in [0, 1] (a weight above 1 would let one row count more
            than the guarantee allows).

        Returns
        -------
        self : object
        """
        # BLAS on one thread for the whole fit (speed only, the same floats as one thread's: the solver's
        # products are small; see _solvers/_builders/_growth.py, _one_blas_thread)
        with _one_blas_thread():
            return self._fit_template(X, y, sample_weight)

    def _predict_row_bound(self):
        """``PREDICT_ROW_UNITS`` times ``row_bound_`` (``DPRegressorMixin.predict``), or None: no unit, or an "auto"
        unit at the grid's end (the rows lie beyond ``2^20``, the fit warned, and the unit is not their median).

        Why: the fit's loss weighs a row at ``t`` row units by ``1 / t``, so a slope on a column that is rarely far
        from its centre (counts that are almost always 0, a heavy tail) rests on few rows and on the noise;
        applied as it is to a far row it extrapolates without bound (a day count of 30 next to a median row of 3
        units: R^2 -9.3; benchmarks/results/growth_predict_clip.md, where no cell of 91 real sets x 3 epsilons
        lost by more than 0.005).
        """
        unit = self.row_bound_
        if unit is None or (is_auto(self.row_bound) and unit >= GROWTH_ROW_MARGIN * GRID_END):
            return None
        return PREDICT_ROW_UNITS * float(unit)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.regressor_tags.poor_score = True
        return tags
