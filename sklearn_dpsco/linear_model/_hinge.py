"""DPHingeClassifier: private linear SVM (hinge loss) that picks its algorithm."""

import numbers

import numpy as np
from sklearn.base import ClassifierMixin

from .._compat import Interval, StrOptions, _fit_context
from .._mechanisms import DEFAULT_NOISE
from .._rng import check_random_state
from .._solvers import (
    PrivateFit,
    ald_growth_schedule,
    ald_schedule,
    get_loss,
    output_perturbation_plan,
    pop_localize_plan,
    run_growth_epochs,
    run_output_perturbation,
    run_phases,
    run_pop_localize,
    split_two_stages,
)
from ._base import DPClassifierMixin, DPLinearModelMixin, FitPlan
from ._hinge_rules import (
    LOCALIZATION_GROWTH,
    LOCALIZATION_MIN_BLOCK,
    LOCALIZATION_PHASES,
    PHASE1_ALPHA_FACTOR,
    SOLVERS,
    choose_solver,
    default_alpha,
    default_clip,
    default_intercept_scaling,
    certifiable_tolerance,
    default_radius,
)

__all__ = ["DPHingeClassifier"]

_HINGE = get_loss("hinge")

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
    clip : float, default=None
        Lipschitz level C of the loss extension (public). Rows with
        ``||x|| <= clip`` keep the plain hinge; larger rows are down-weighted
        by ``clip/||x||``. ``None``: ``sqrt(n_features)``, the norm of a
        standardized row. Declare your own bound if your rows are scaled
        otherwise (e.g. ``clip=1`` for rows clipped to norm 1).
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
        times the exact one. Raised (a public rule, recorded in
        ``fit_info_``) when float64 could not certify it (very large n).
    fit_intercept : bool, default=True
        Fit an intercept (a virtual column, penalized like a feature).
    intercept_scaling : float, default=None
        Value of the intercept column. ``None``: ``clip / sqrt(n_features)``
        (1 with the default clip).
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
        Threads for one-vs-rest problems and localization repeats. Results
        do not depend on it.
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
        The public settings used (resolved defaults). ``alpha_`` is None for
        the ALD solvers (their regularization follows their schedule).
    privacy_event_ : PrivacyEvent
        What the fit consumed (all classes).
    epsilon_spent_, delta_spent_ : float
        The (epsilon, delta) charged to the accountant.
    noise_source_ : str
        ``"os-entropy"`` or the seeded-generator label.
    fit_info_ : list of dict
        Public per-problem information (schedules, block sizes).

    See Also
    --------
    sklearn.svm.LinearSVC : the non-private counterpart.

    Notes
    -----
    Unit of privacy: one row (``privacy_unit == "row"``), replace-one neighbours; ``n``, ``n_features``
    and the label set are public. The guarantee rests only on the public
    parameters (``epsilon``, ``delta``, ``clip``, ``alpha``, ``radius``,
    ``tolerance``, ``intercept_scaling``) and holds for every dataset; the
    derivation of each solver is in doc/privacy/hinge.rst.

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
    >>> clf.solver_, clf.epsilon_spent_
    ('localized_output_perturbation', 1.0)
    >>> clf.score(X, y) > 0.8
    True
    """

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "solver": [StrOptions({"auto", *SOLVERS})],
        "clip": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "radius": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "kappa_lower": [Interval(numbers.Real, 1, None, closed="neither")],
        "repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "tolerance": [Interval(numbers.Real, 0, None, closed="neither")],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "classes": ["array-like", None],
        "noise": [StrOptions({"secure", "float"})],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        solver="auto",
        clip=None,
        alpha=None,
        radius=None,
        kappa_lower=2.0,
        repeats=1,
        tolerance=0.05,
        fit_intercept=True,
        intercept_scaling=None,
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
        self.alpha = alpha
        self.radius = radius
        self.kappa_lower = kappa_lower
        self.repeats = repeats
        self.tolerance = tolerance
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.noise = noise
        self.verbose = verbose

    # -- public settings (resolved from public facts only) ---------------------------------
    def _settings(self, n_features):
        clip = default_clip(n_features) if self.clip is None else float(self.clip)
        if self.intercept_scaling is None:
            scaling = default_intercept_scaling(clip, n_features)
        else:
            scaling = float(self.intercept_scaling)
        radius = default_radius(clip) if self.radius is None else float(self.radius)
        return clip, scaling, radius

    def _glm_data(self, X, y, sample_weight):
        from .._solvers import GLMData

        _, scaling, _ = self._settings(X.shape[1])
        return GLMData(X, y, sample_weight, scaling if self.fit_intercept else 0.0)

    def _plan(self, n_samples, n_features, n_problems):
        """Everything the fit will run, from (n, d, number of problems) and parameters."""
        d_raw = n_features - (1 if self.fit_intercept else 0)
        clip, scaling, radius = self._settings(d_raw)
        eps, delta = self._split_budget(n_problems)  # one-vs-rest shares, by noise path (_base.py)
        solver = choose_solver(n_samples, n_features, eps, delta) if self.solver == "auto" else self.solver
        common = dict(clip=clip, epsilon=eps, delta=delta, tolerance=self.tolerance, noise=self.noise)
        alpha = None
        if solver == "output_perturbation":
            alpha = default_alpha(n_samples, n_features, clip, eps, delta) if self.alpha is None else self.alpha
            common["tolerance"] = certifiable_tolerance(n_samples, alpha, clip, self.tolerance)
            schedule = output_perturbation_plan(n_samples, n_features, lam=alpha, **common)
            info = {"alpha": alpha, "sensitivity": schedule.sensitivity, "rows": n_samples}
        elif solver in ("localized_output_perturbation", "lowy"):
            inner = "single" if solver == "localized_output_perturbation" else "double"
            # phase 1 sees n/2 rows (split in J blocks); Lowy's stage 2 spends half the budget
            first = max(n_samples // 2 // self.repeats, 1)
            stage = (eps, delta) if inner == "single" else split_two_stages(eps, delta, 0.5, self.noise)[1]
            if self.alpha is None:
                alpha = default_alpha(first, n_features, clip, *stage, factor=PHASE1_ALPHA_FACTOR)
            else:
                alpha = self.alpha
            # with growth 4 and halving blocks every phase asks for the same gap as phase 1
            common["tolerance"] = certifiable_tolerance(first, alpha, clip, self.tolerance)
            schedule = pop_localize_plan(
                n_samples, n_features, lam1=alpha, phases=LOCALIZATION_PHASES, repeats=self.repeats,
                lam_growth=LOCALIZATION_GROWTH, min_block=LOCALIZATION_MIN_BLOCK, inner=inner, **common,
            )
            info = dict(schedule.info)
            info["blocks"] = [[(p.start, p.stop) for p in phase] for phase in schedule.phases]
        elif solver == "ald_localization":
            schedule = ald_schedule(n_samples, n_features, radius=radius, **common)
            info = {"phases": schedule.info["phases"], "steps": schedule.info["steps"],
                    "blocks": [(p.start, p.stop) for p in schedule.phases]}
        else:
            schedule = ald_growth_schedule(n_samples, n_features, radius=radius, kappa_lower=self.kappa_lower, **common)
            info = {"epochs": schedule.info["epochs"], "epoch_size": schedule.info["epoch_size"]}
        info.update(solver=solver, clip=clip, intercept_scaling=scaling, radius=radius, epsilon=eps, delta=delta,
                    tolerance=common["tolerance"])
        if self.verbose:
            print(f"[DPHingeClassifier] plan: {info}")
        return FitPlan(solver, schedule.event, schedule=schedule, clip=clip, alpha=alpha, radius=radius,
                       intercept_scaling=scaling, info=info)

    def _solve_one(self, data, plan, random_state):
        rng = check_random_state(random_state)
        schedule = plan.params["schedule"]
        center = np.zeros(data.n_features)
        radius = plan.params["radius"]
        if plan.solver == "output_perturbation":
            coef = run_output_perturbation(data, _HINGE, schedule, rng)
        elif plan.solver in ("localized_output_perturbation", "lowy"):
            coef = run_pop_localize(data, _HINGE, schedule, center=center, rng=rng, domain=(center, radius),
                                    n_jobs=self.n_jobs)
        elif plan.solver == "ald_localization":
            coef = run_phases(data, _HINGE, schedule, center=center, domain=[(center, radius)], rng=rng)
        else:
            coef = run_growth_epochs(data, _HINGE, schedule, center=center, radius=radius, rng=rng)
        return PrivateFit(coef=coef, event=schedule.event, info=dict(plan.params["info"]))

    def _split_coef(self, w):
        if self.fit_intercept:
            return w[:-1], w[-1] * self._settings(self.n_features_in_)[1]
        return w, 0.0

    def _store_privacy(self, plan, event, source):
        super()._store_privacy(plan, event, source)
        self.clip_ = plan.params["clip"]
        self.alpha_ = plan.params["alpha"]
        self.radius_ = plan.params["radius"]
        self.intercept_scaling_ = plan.params["intercept_scaling"]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private linear SVM.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, any norm (dense, CSR, or a pandas DataFrame).
        y : array-like of shape (n_samples,)
            Labels (at least two classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights in [0, 1] (larger weights would break the privacy bound
            and raise).

        Returns
        -------
        self : DPHingeClassifier
        """
        return self._fit_classifier(X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags

