"""DPHingeClassifier: private linear SVM (hinge loss) that picks its algorithm."""

import math
import numbers
from functools import partial

from sklearn.base import ClassifierMixin

from .._compat import Interval, StrOptions, _fit_context
from .._budget import split_scale_share
from .._mechanisms import DEFAULT_NOISE
from .._param_checks import SCALE_MAX, SCALE_MIN
from .._rng import check_random_state, spawn_random_states
from .._solvers import ClusterRows, GLMData, get_solver, loss_for, safe_row_norms
from ._auto_scales import AUTO, CLIP_LEVEL, CLIP_MARGIN, ScaleTarget, is_auto
from ._base import DPClassifierMixin, DPLinearModelMixin, FitPlan
from ._centering import ROW_CENTERING_SHARE, ROW_CENTRE_MAX_ERROR, CenteringPlan, centering_applies
from ._intercept_refit import InterceptRefit, InterceptRefitPlan
from ._hinge_rules import (
    LOCALIZATION_GROWTH,
    LOCALIZATION_MIN_BLOCK,
    LOCALIZATION_PHASES,
    OBJECTIVE_SCALE,
    SOLVERS,
    declared_clip_level,
    default_clip,
    default_intercept_scaling,
    default_intercept_grid,
    default_intercept_share,
    default_radius,
    regularization,
    resolve_solver,
)

__all__ = ["DPHingeClassifier"]


def _joint_refit(refit, fits, state, data):
    """:meth:`InterceptRefitPlan.complete` with the generator of ``state`` (runs where ``data`` is)."""
    return refit.complete(data, fits, check_random_state(state))


class DPHingeClassifier(DPClassifierMixin, ClassifierMixin, DPLinearModelMixin):
    """Differentially private linear SVM (hinge loss), binary and one-vs-rest.

    Minimizes ``mean_i s_i psi_i(y_i <w, x_i>) + (alpha/2) ||w - w0||^2`` privately,
    where ``psi_i`` is the hinge loss extended to be ``clip``-Lipschitz in w:
    ``psi_i = min(1, clip/||x_i||) * hinge``. Rows of any norm are allowed —
    privacy comes from the extension, never from the data's norms.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of one fit (all classes together), > 0.
    delta : float, default=0.0
        ``0`` gives pure epsilon-DP (l2-Laplace noise); ``delta in (0, 1)``
        approximate DP (analytic Gaussian noise).
    solver : {"auto", "output_perturbation", "localized_output_perturbation", \
            "lowy", "ald_localization", "ald_growth"}, default="auto"
        Private algorithm; ``"auto"`` picks one from public facts (n, d,
        epsilon, delta) by the table in doc/privacy/hinge.rst (localized
        output perturbation when ``n epsilon / d >= 300`` — ``n / (sqrt(d) /
        mu(epsilon, delta))`` for approximate DP — output perturbation
        otherwise); ``solver_`` records the choice. Every solver is
        (epsilon, delta)-DP for every dataset:

        - ``"output_perturbation"``: certified regularized ERM plus noise
          (Chaudhuri, Monteleoni, Sarwate 2011); excess risk
          ``O(clip R sqrt(d / (n epsilon)))`` for comparators of norm R.
        - ``"localized_output_perturbation"``: population localization (Asi,
          Liu, Tian 2024; Lowy 2026, Algorithm 1) with one certified output
          perturbation per phase: 4 phases on n/2, n/4, n/8, n/16 fresh rows,
          regularization growing 4x per phase around the previous output.
        - ``"lowy"``: Lowy's localized double output perturbation (Lowy 2026,
          Algorithms 1, 2, 4), same phases, each solved by OutputPert-Localize
          then a second output perturbation inside the localized ball. Pure
          epsilon-DP (Gaussian stages if ``delta > 0``); built for
          heavy-tailed rows.
        - ``"ald_localization"``: Asi, Levy, Duchi 2021, Algorithm 1 with the
          paper's step size (l2-Laplace noise if ``delta == 0``, Gaussian
          otherwise); high-probability rate ``O~(clip R (1/sqrt(n) + d/(n epsilon)))``.
        - ``"ald_growth"``: ALD Algorithm 2, epochs adapting to an unknown
          growth exponent ``kappa >= kappa_lower``.
    clip : "auto", float or None, default="auto"
        Lipschitz level C of the loss extension. Rows with ``||x|| <= clip``
        keep the plain hinge; larger rows are down-weighted by ``clip/||x||``.
        ``"auto"``: a private median of the row norms, released inside this
        fit's budget (``scale_share`` of epsilon; doc/privacy/quantiles.rst,
        "Use in the estimators"); the fit then runs on ``X / clip_`` at clip
        1, so the default rules (alpha, radius, intercept column ``clip_``)
        follow the estimate, and a declared ``alpha``, ``radius`` or
        ``intercept_scaling`` is read in the units of ``X / clip_``. A number
        is a public declaration (nothing is spent on it), e.g. ``clip=1`` for
        rows clipped to norm 1; when the noise per row is small (``n epsilon /
        d >= 300`` per one-vs-rest problem, ``n / (sqrt(d) / mu)`` for
        approximate DP) the loss is extended at half the declared bound
        (``clip_ = clip / 2``; rows above it are down-weighted) and the
        default rules follow ``clip_`` (doc/privacy/hinge.rst, "Defaults").
        ``None``: ``sqrt(n_features)``, the norm of a standardized row.
    scale_share : float or None, default=None
        Fraction of epsilon spent on the ``"auto"`` clip, in (0, 1); ignored
        when ``clip`` is declared. ``None``: ``min(0.5, max(0.05, 50 /
        (n epsilon)))`` (public facts only).
    column_scaling : "auto" or bool, default="auto"
        Rescale the columns privately inside the fit: private quartiles
        ``q1, q3`` of every column (DPStandardScaler's ``bounds="auto"``
        releases, on ``min(0.25, max(0.05, 600 n_features / (n epsilon)))``
        of epsilon), rows mapped to ``(x - (q1 + q3) / 2) / max(q3 - q1, 1)`` before
        the ``"auto"`` clip and the solver run on the rest, and the map folded
        back into ``coef_`` and ``intercept_`` (post-processing; no centring
        without an intercept; doc/privacy/column_scaling.rst). For raw
        columns in mixed units (a year or an income next to 0/1
        indicators), where one row-norm clip follows the dominant column.
        ``"auto"``: only with ``clip="auto"`` and ``intercept_scaling=None``
        (nothing declared), dense rows (NumPy or Dask chunks), and ``n epsilon`` large
        enough for the ``2 n_features`` quartiles (each gets ``n epsilon_i >=
        50``: about ``n epsilon >= 400 n_features``); public facts only.
        From about ``200`` to ``400 n_features`` (with an intercept, rows in
        memory) a cheaper pair instead: the private median ``m`` of every
        column, then the median of ``|x - m|`` on a coarse grid, rows mapped
        to ``(x - m) / max(2 spread, 1)`` (doc/privacy/column_scaling.rst,
        "Median and spread"). Below that, from ``n epsilon ~ 80
        n_features``, a noisy histogram of every column's magnitude (bins of
        four octaves), released only when a noisy count (on 0.03 of
        epsilon) of the rows with some value above ``2^12`` (a population,
        an income) is above ``n / 8`` plus 3 noise scales, and applied only
        when some column's released magnitude is above ``2^12``: each column
        divided by its released magnitude (doc/privacy/column_scaling.rst,
        "Row magnitudes"); otherwise the columns are left as they are and
        the fit gets everything but the count's share.
        ``True``: always (dense rows only). ``False``: never.
        :class:`~sklearn_dpsco.preprocessing.DPPipeline` turns ``"auto"`` off
        after a ``DPStandardScaler`` that releases.
    centering : "auto" or bool, default="auto"
        With a declared ``clip``: centre the features privately inside the
        fit. The sum of the rows, each clipped to ``clip``, is released on
        0.1 of the budget (l2-sensitivity ``2 clip`` under replace-one-row;
        l2-Laplace for pure DP, Gaussian at ``delta > 0``), every row is
        shifted by the released mean, the fit runs unchanged on the rest, and
        the shift is folded into ``intercept_`` (doc/privacy/hinge.rst,
        "Private centring"). Columns mapped by public ranges sit far from the
        origin; the regularization and the noise then act on a large
        intercept (baseball seasons at epsilon 1, clip 1: 0.744 -> 0.758).
        ``"auto"``: a declared numeric ``clip``, an intercept, dense rows in
        memory, no column scaling, and an expected error of the released
        centre of at most 0.1 ``clip`` (about ``n epsilon >= 200
        n_features`` for pure DP; public facts only). ``True``: whenever a
        ``clip`` is declared (with an intercept and dense rows). ``False``:
        never.
    alpha : float, default=None
        Regularization ``alpha`` of ``"output_perturbation"`` (of the first
        phase for the localized solvers). ``None``: ``min(50 clip^2 u / (n d),
        clip^2 / d)`` (first phase: factor 25 on its ``n/2`` rows) with ``u =
        d/epsilon`` (pure) or ``sqrt(d)/mu(epsilon, delta)`` (Gaussian) the
        expected noise norm per unit sensitivity, computed per one-vs-rest
        problem from public facts (linear_model/_hinge_rules.py).
    radius : float, default=None
        Radius R of the public domain ball (centred at 0) of the localization
        solvers. ``None``: ``20 / clip``.
    kappa_lower : float, default=2.0
        Lower bound on the growth exponent for ``"ald_growth"``.
    repeats : int, default=1
        Localized solvers: repeats J per phase on disjoint blocks, combined by
        geometric aggregation (Lowy's high-probability boosting; J = 1 is
        the most accurate on average).
    tolerance : float, default=0.05
        Certified solver accuracy as a fraction of the exact-minimizer
        sensitivity; every release's sensitivity is ``(1 + 2 tolerance)``
        times the exact one, or the exact one plus twice the certificate's
        public float floor when that is larger (doc/privacy/output_perturbation.rst).
    fit_intercept : bool, default=True
        Fit an intercept (a virtual column, penalized like a feature).
    intercept_scaling : float, default=None
        Value of the intercept column. ``None``: ``clip / sqrt(n_features)``
        (1 with the default clip).
    intercept_share : float or None, default=None
        Fraction of each one-vs-rest problem's epsilon spent on the private
        intercept refit, in [0, 1): after the solver's release, the decision
        threshold moves to the shift of a public grid with the fewest
        training errors, chosen by private selection (doc/privacy/hinge.rst,
        "Private intercept refit"). It removes the common offset the
        release noise gives every score on rows that are not centred (a
        single-class model on small sets). ``None``: ``min(0.3, max(0.02,
        500 / (n epsilon)))`` from ``n epsilon >= 150`` on; below, 0.3 on the
        3-point grid {all one class, the model, all the other class} where
        ``30 <= n epsilon`` and ``n epsilon / d < 6`` (``d`` coefficients),
        else no refit (public facts only, epsilon of one problem); ``0``: no
        refit. Any share below ``n epsilon = 150`` uses the 3-point grid.
        Ignored without an intercept.
    classes : array-like, default=None
        The label set, public. If None it is read from ``y`` and therefore
        revealed by ``classes_``.
    accountant : BudgetAccountant, default=None
        Ledger charged once per successful fit (None: the process-wide
        recording ledger). The fit is refused before touching the data if
        the budget would be exceeded.
    random_state : int, RandomState instance or None, default=None
        None draws noise from the operating system's CSPRNG (use this for
        releases); an int gives reproducible noise (experiments only).
    n_jobs : int, default=None
        Threads for one-vs-rest problems, localization repeats and the column
        quartiles' grid counts. Results do not depend on it.
    noise : {"secure", "float"}, default="secure"
        Noise sampling path: ``"secure"`` releases on a grid with exact
        integer noise (DP for the released floats; doc/privacy/secure_noise.rst),
        ``"float"`` the textbook floating-point samplers.
    verbose : int, default=0
        Print the public plan (solver, regularization, schedule).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in,)
        Defined only when X has feature names that are all strings.
    solver_ : str
        The solver used.
    clip_, alpha_, radius_, intercept_scaling_ : float
        The settings used (resolved defaults), in the data's units. Public
        functions of the parameters when ``clip`` is declared; with
        ``clip="auto"``, ``clip_`` is a differentially private release and
        the others follow from it. ``alpha_`` is None for the ALD solvers
        (their regularization follows their schedule). With column
        scaling on, ``alpha_``, ``radius_`` and ``intercept_scaling_`` are in
        the units of the rescaled columns.
    column_center_, column_scale_ : ndarray of shape (n_features,) or None
        The released column map (differentially private: functions of the
        released quartiles, of the released medians and spreads, of the
        released column magnitudes (centre 0), or the released centre and
        ones), or None when neither ``column_scaling`` nor ``centering``
        ran.
    column_bounds_ : tuple of two ndarrays of shape (n_features,) or None
        ``(lower, upper)``: the raw columns' clip of the released column map
        (``centre -+ k scale``, ``k`` a public constant; ``-+inf`` for a
        column passed through), applied in the fit to the mapped columns and
        by prediction to the raw ones (doc/privacy/column_scaling.rst,
        "Clipped columns"); None without a quartile or median-and-spread map.
    privacy_event_ : PrivacyEvent
        What the fit consumed (all classes).
    epsilon_spent_, delta_spent_ : float
        The (epsilon, delta) charged to the accountant.
    noise_source_ : str
        ``"os-entropy"`` or the seeded-generator label.
    fit_info_ : list of dict
        Public per-problem information (schedules, block sizes); with
        ``clip="auto"`` also ``scale_estimates``, ``scale_share``,
        ``scale_epsilon`` and ``scale_rule``; with column scaling
        ``column_scaling`` (its ``share``, ``epsilon`` and ``n_passthrough``);
        with centring ``centering`` (its ``share``, ``bound`` and the
        expected norm of the centre's error).

    See Also
    --------
    sklearn.svm.LinearSVC : the non-private counterpart.

    Notes
    -----
    Unit of privacy: one row (``privacy_unit == "row"``), replace-one neighbours; ``n``, ``n_features``
    and the label set are public. The guarantee rests only on the public
    parameters (``epsilon``, ``delta``, ``clip``, ``alpha``, ``radius``,
    ``tolerance``, ``intercept_scaling``, ``scale_share``) and holds for
    every dataset; the derivation of each solver is in doc/privacy/hinge.rst.
    With ``clip="auto"`` the event is ``ComposedEvent((PureDPEvent(scale
    share of epsilon), solver event))``, planned before any data is read and
    spent once (doc/privacy/quantiles.rst, "Use in the estimators"); at
    ``delta > 0`` the solver's part is raised until the composition
    certifies exactly ``epsilon`` (never more; "Exact epsilon at delta > 0").
    With an intercept refit, each problem's event is ``ComposedEvent((solver
    event, PureDPEvent(intercept_share of its epsilon)))`` (doc/privacy/hinge.rst,
    "Private intercept refit"); at ``delta > 0`` it is filled to exactly
    ``epsilon`` the same way. With column scaling the whole event is
    ``ComposedEvent((column quartiles' pure event, the event above))``
    (doc/privacy/column_scaling.rst).

    Multiclass problems are fitted one-vs-rest on the same rows: the K
    binary problems compose sequentially, so each gets ``epsilon / K``
    (pure DP) or Gaussian-DP ``mu / sqrt(K)`` (approximate DP), and the
    whole fit is (epsilon, delta)-DP.

    ``sample_weight`` must lie in [0, 1]: a weight scales one loss term,
    keeping it ``clip``-Lipschitz; larger weights raise an error.

    References
    ----------
    Chaudhuri, Monteleoni, Sarwate (2011). Differentially private empirical
    risk minimization. JMLR 12.
    Asi, Levy, Duchi (2021). Adapting to function difficulty and growth
    conditions in private optimization. NeurIPS.
    Lowy (2026). Optimal rates for pure epsilon-DP stochastic convex
    optimization with heavy tails. arXiv 2604.06492.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_dpsco import DPHingeClassifier
    >>> X, y = make_classification(n_samples=5000, n_features=10, random_state=0)
    >>> clf = DPHingeClassifier(epsilon=1.0, random_state=0).fit(X, y)
    >>> clf.solver_, round(clf.epsilon_spent_, 12)  # the private scales, the solver and the refit together
    ('output_perturbation', 1.0)
    >>> round(clf.fit_info_[0]["epsilon"], 4)  # the solver's share, which solver="auto" reads
    0.6125
    >>> clf.score(X, y) > 0.8
    True
    """

    #: Row magnitudes below the median and spread (linear_model/_column_scaling.py, "Row magnitudes"; public).
    _ROW_MAGNITUDES = True

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "solver": [StrOptions({"auto", *SOLVERS})],
        "clip": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), StrOptions({AUTO}), None],
        "scale_share": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "column_scaling": [StrOptions({AUTO}), "boolean"],
        "centering": [StrOptions({AUTO}), "boolean"],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "radius": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "kappa_lower": [Interval(numbers.Real, 1, None, closed="neither")],
        "repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "tolerance": [Interval(numbers.Real, 0, None, closed="neither")],
        "intercept_scaling": [Interval(numbers.Real, SCALE_MIN, SCALE_MAX, closed="both"), None],
        "intercept_share": [Interval(numbers.Real, 0, 1, closed="left"), None],
        "classes": ["array-like", None],
        "noise": [StrOptions({"secure", "float"})],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        solver="auto",
        clip=AUTO,
        scale_share=None,
        column_scaling=AUTO,
        centering=AUTO,
        alpha=None,
        radius=None,
        kappa_lower=2.0,
        repeats=1,
        tolerance=0.05,
        fit_intercept=True,
        intercept_scaling=None,
        intercept_share=None,
        classes=None,
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
        self.scale_share = scale_share
        self.column_scaling = column_scaling
        self.centering = centering
        self.alpha = alpha
        self.radius = radius
        self.kappa_lower = kappa_lower
        self.repeats = repeats
        self.tolerance = tolerance
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.intercept_share = intercept_share
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.noise = noise
        self.verbose = verbose

    # -- public settings (resolved from public facts only) ---------------------------------
    def _settings(self, n_features, clip, auto=False):
        if self.intercept_scaling is None:
            # an "auto" clip is a median row norm: raw rows carry their offset in that norm, and an
            # intercept column of the same size keeps the offset learnable under the alpha rule
            # (biopsy, eps 1: accuracy 0.63 -> 0.90; benchmarks/results/auto_scales.md)
            scaling = clip if auto else default_intercept_scaling(clip, n_features)
        else:
            scaling = float(self.intercept_scaling)
        radius = default_radius(clip) if self.radius is None else float(self.radius)
        return scaling, radius

    def _declares_scales(self):
        return not (is_auto(self.clip) and self.intercept_scaling is None)

    # -- private centring with a declared clip (linear_model/_centering.py) -----------------
    def _centering_plan(self, inputs):
        """The row-level :class:`CenteringPlan` of this fit, or None (public facts: the settings, n, d, the
        budget, the rows' format). ``"auto"``: a declared numeric ``clip`` and an expected error of the
        released centre of at most ``ROW_CENTRE_MAX_ERROR`` times it."""
        if self.centering is False:
            return None
        declared = self.clip is not None and not is_auto(self.clip)
        d = inputs.n_coef - (1 if self.fit_intercept else 0)
        if not centering_applies(self.centering, declared=declared, fit_intercept=self.fit_intercept,
                                 dense=self._dense_rows(inputs), n_features=d):
            return None
        plan = CenteringPlan.build(self._budget(), inputs.n_samples, d, float(self.clip), None,
                                   share=ROW_CENTERING_SHARE)
        if self.centering == AUTO and plan.relative_error > ROW_CENTRE_MAX_ERROR:
            return None
        return plan


    def _plan(self, n_samples, n_features, n_problems, columns=None):
        """Everything the fit will run, from (n, d, number of problems) and parameters.

        With ``clip="auto"`` the solver is planned at clip 1 on the rows
        divided by the released ``clip_`` (linear_model/_auto_scales.py): its
        event, like the estimate's, is fixed here, before any data is read.
        ``columns`` (a ``ColumnScalingPlan``): the rows are first mapped by the
        released column quartiles, on ``columns.share`` of epsilon.
        """
        d_raw = n_features - (1 if self.fit_intercept else 0)
        targets = []
        if is_auto(self.clip):
            targets.append(ScaleTarget("clip", CLIP_LEVEL, CLIP_MARGIN, lambda data, _: safe_row_norms(data[0])))
        scales, solver_budget = self._scale_plan(targets, n_samples, columns)
        if scales is not None:
            clip = 1.0  # unit scale: the rows are divided by the released clip_ before the run
        elif self.clip is None:
            clip = default_clip(d_raw)
        else:
            # a declared bound: fitted at a share of it when the noise is small (public facts only,
            # linear_model/_hinge_rules.py, doc/privacy/hinge.rst "Defaults (public rules)")
            problem = solver_budget.split_equal(n_problems)
            clip = declared_clip_level(self.clip, n_samples, n_features, problem.epsilon, problem.delta)
        scaling, radius = self._settings(d_raw, clip, auto=scales is not None)

        def build(solver_budget):
            budget = solver_budget.split_equal(n_problems)  # one-vs-rest shares, by noise path
            share = self._intercept_share(n_samples, n_features, budget.epsilon)
            # public: rows and the problem's epsilon (the 3-point grid below INTERCEPT_MIN_RANKS)
            grid_points = default_intercept_grid(n_samples, budget.epsilon)
            if share > 0:
                # the refit's pure part first, the solver's on the rest (basic composition, doc/privacy/hinge.rst)
                refit_budget, budget = split_scale_share(budget, share)
            solver = resolve_solver(self.solver, n_samples, n_features, budget.epsilon, budget.delta)
            spec = get_solver("hinge", solver)
            alpha, tolerance = regularization(spec, n_samples, n_features, clip, budget, self.alpha,
                                              self.tolerance, self.repeats)
            params = dict(clip=clip, alpha=alpha, tolerance=tolerance, radius=radius, repeats=self.repeats,
                          kappa_lower=self.kappa_lower, phases=LOCALIZATION_PHASES, lam_growth=LOCALIZATION_GROWTH,
                          min_block=LOCALIZATION_MIN_BLOCK, objective_scale=OBJECTIVE_SCALE)
            plan = spec.build(n_samples, n_features, budget, params)
            if share > 0:
                refit = InterceptRefit(refit_budget.epsilon, grid_points=grid_points, noise=self.noise)
                # several classes: the shifts are released together, for the model's own argmax
                plan = InterceptRefitPlan(plan, refit, row_bound=math.hypot(clip, scaling), joint=n_problems > 1)
            plan.info.update(solver=solver, clip=clip, intercept_scaling=scaling, radius=radius,
                             epsilon=budget.epsilon, delta=budget.delta, tolerance=tolerance)
            return FitPlan(
                solver, plan, loss=loss_for(spec), radius=radius,
                intercept_scaling=scaling if self.fit_intercept else 0.0,
                attributes={"clip_": clip, "alpha_": alpha, "radius_": radius, "intercept_scaling_": scaling},
                scales=scales, columns=columns,
            )

        fit_plan = self._fill_budget(build, scales, solver_budget, n_problems, columns)
        if self.verbose:
            print(f"[DPHingeClassifier] plan: {fit_plan.info}")
        return fit_plan

    def _complete_runs(self, plan, jobs, fits, rng):
        """One-vs-rest with an intercept refit: the classes' shifts released together (joint refit).

        The rows with each row's class index as target, on one worker for rows on a cluster (as the solvers
        run there), so a Dask fit releases what the in-memory fit releases for the same seed.
        """
        refit = plan.plan
        if not getattr(refit, "joint", False):
            return fits
        state = spawn_random_states(rng, 1)[0]
        first = jobs[0][0].data
        # each row's class index (the one-vs-rest targets are +1 on their class), lazy on a cluster
        index = sum(k * (problem.data.y > 0) for k, (problem, _) in enumerate(jobs)) * 1.0
        if isinstance(first, ClusterRows):
            rows = ClusterRows(first.X, index, first.sample_weight, first.intercept_scaling,
                               block_rows=first.block_rows)
            return rows.on_one_worker(partial(_joint_refit, refit, fits, state))
        return _joint_refit(refit, fits, state, GLMData(first.X, index, first.sample_weight, first.intercept_scaling))

    def _solver_composes_pure(self):
        """The intercept refit's pure part composes with the solver's, so the budget fill runs at ``delta > 0``
        also with a declared clip (the folded reading certifies less than their sum)."""
        return self.fit_intercept and self.intercept_share != 0

    def _intercept_share(self, n_samples, n_coef, epsilon):
        """The refit's share of one problem's epsilon (0: no refit; public facts only)."""
        if not self.fit_intercept:
            return 0.0
        if self.intercept_share is None:
            return default_intercept_share(n_samples, n_coef, epsilon)
        return float(self.intercept_share)

    def _scale_units(self, released):
        return released["clip"], 1.0, 0.0

    def _store_scales(self, plan, released):
        """The unit-scale settings in the data's units: ``w = w' / c``, so ``alpha = alpha' c^2``."""
        super()._store_scales(plan, released)
        c = released["clip"]
        self.clip_ = c
        self.radius_ = self.radius_ / c
        self.intercept_scaling_ = self.intercept_scaling_ * c
        if self.alpha_ is not None:
            self.alpha_ = self.alpha_ * c * c
        for entry in self.fit_info_:
            entry.update(clip=c, radius=self.radius_, intercept_scaling=self.intercept_scaling_)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private linear SVM.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, any norm (dense, CSR, or a pandas DataFrame); or a
            dask array/DataFrame, validated and scaled on its workers and
            solved on one worker (doc/large_data.rst, "Dask").
        y : array-like or dask array/Series of shape (n_samples,)
            Labels (at least two classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights in [0, 1] (larger weights would break the privacy bound
            and raise).

        Returns
        -------
        self : DPHingeClassifier
        """
        return self._fit_template(X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

