"""UserLevelDPLogistic: logistic regression that protects whole users."""

import math
import numbers

import numpy as np
from joblib import Parallel, delayed
from scipy.special import expit
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _fit_context
from .._mechanisms import DEFAULT_NOISE
from .._param_checks import check_groups
from .._rng import check_random_state, noise_source, spawn_random_states
from .._solvers import (
    DEFAULT_MAX_EXHAUSTIVE_SOLVES,
    GKKMMZ_SOLVERS,
    dp_sgd_plan,
    item_group_plan,
    make_user_data,
    run_dp_sgd,
    run_item_group,
    run_user_clip,
    run_user_level,
    user_clip_plan,
    user_level_schedule,
    user_mean_gradients,
)
from ..accounting import ComposedEvent
from ..accounting._shares import split_budget, split_kind
from ._base import DPClassifierMixin, DPLinearModelMixin, FitPlan
from ._user_logistic_rules import default_user_alpha

__all__ = ["UserLevelDPLogistic"]

_SOLVERS = GKKMMZ_SOLVERS + ("user_clip", "user_dp_sgd", "item_group")
# solver="auto" chooses among the solvers of the alpha-regularised objective
_AUTO_CANDIDATES = ("user_clip", "sc_output_pert", "item_group", "user_dp_sgd")
# solvers whose noise has no secure (discrete) sampler: refused under noise="secure"
_FLOAT_ONLY = ("user_dp_sgd",)


class UserLevelDPLogistic(DPClassifierMixin, ClassifierMixin, DPLinearModelMixin):
    """Logistic regression with user-level differential privacy.

    Every row belongs to a user (``groups``); the guarantee protects all rows
    of a user at once: the fitted model is (epsilon, delta)-DP with respect
    to replacing ONE USER's whole block of rows by any other block (of any
    size, with any values and labels). The number of users is public.

    Read more in doc/privacy/user_level.rst.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the whole fit (all classes).
    delta : float, default=1e-6
        Must be > 0: every user-level solver is an approximate-DP mechanism.
    solver : {"auto", "user_clip", "sc_output_pert", "phased_erm", "phased_sco", \
"sc_erm_two_step", "sc_sco_two_step", "user_dp_sgd", "item_group"}, default="auto"
        ``"user_clip"``: output perturbation of the ERM in which each user's
        total loss is replaced by its ``user_clip``-Lipschitz extension
        (sensitivity ``2 user_clip / (alpha n m)``; our construction, see
        doc/privacy/user_level.rst). ``"sc_output_pert"`` (Ghazi et al. 2023,
        Alg. 2): deletion-sensitivity output perturbation of the
        ``alpha``-regularised ERM. ``"phased_erm"`` / ``"phased_sco"`` (Alg. 3 /
        Thm 5.1): localized phases of the deletion mechanism for the convex
        problem (all users in every phase / disjoint user batches).
        ``"sc_erm_two_step"`` / ``"sc_sco_two_step"`` (App. B): output
        perturbation, then phases inside a ball around it. ``"user_dp_sgd"``:
        user-level DP gradient descent (per-user clipped average gradients,
        Gaussian noise, exact Gaussian composition). ``"item_group"``:
        item-level output perturbation made user-level by group privacy.
        ``"auto"``: among ``user_clip``, ``sc_output_pert``, ``item_group`` and
        ``user_dp_sgd`` (the solvers of the same ``alpha``-regularised
        objective; ``user_dp_sgd`` only with ``noise="float"``), the feasible
        one whose planned noise on the coefficients has the smallest expected
        norm — a function of public facts only (users, cap, dimension, budget,
        parameters; in practice ``user_dp_sgd`` at m = 1 with float noise and
        ``user_clip`` for m >= 10). The choice is stored in ``solver_``.
    max_items_per_user : int, default=10
        Contribution bound m: a user keeps at most this many rows; the others
        are dropped by ``item_selection``, a rule that never looks at values.
    item_selection : {"first", "random"}, default="first"
        ``"first"``: the first m rows of the user in input order.
        ``"random"``: a uniformly random subset (drawn from ``random_state``).
    data_norm : float, default=1.0
        Public bound R on row norms (intercept column included). Rows above
        it are scaled down to norm R before fitting (each row on its own).
        Predictions use the raw rows.
    alpha : float, default=None
        Strong convexity of the objective ``mean logistic loss + alpha/2
        ||w||^2`` (strongly convex solvers; an extra ridge for the others).
        ``None``: ``min(20 R^2 u / (n_users sqrt(m) d), R^2 / d)`` with ``R =
        data_norm``, ``m = max_items_per_user``, ``d`` the number of
        coefficients and ``u`` the expected noise norm per unit of sensitivity
        (about ``sqrt(d) / mu(epsilon, delta)``), computed per one-vs-rest
        problem from public facts (linear_model/_user_logistic_rules.py); the
        value used is ``alpha_``.
    radius : float, default=10.0
        Radius of the public domain ball of the coefficients (outputs are
        projected onto it; the phased solvers localize inside it).
    deletion_test : {"graded", "exhaustive"}, default="graded"
        How the deletion-sensitivity mechanism decides which point to release.
        ``"graded"``: polynomial, proven test (two certified solves).
        ``"exhaustive"``: Ghazi et al.'s enumeration with the App. C
        certificate shortcut; refused at fit start when its public cost
        exceeds ``max_exhaustive_solves``.
    max_exhaustive_solves : int, default=20000
        Compute budget (certified solves) of the exhaustive test.
    beta : float, default=0.05
        Utility failure probability used to set the deletion test's public
        thresholds and the two-step radii. Privacy does not depend on it.
    user_clip : float, default=None
        Lipschitz level C of each user's loss for ``solver="user_clip"``;
        ``None`` is ``data_norm * sqrt(max_items_per_user)`` (the root-mean-square
        norm of m independent zero-mean gradients of norm <= R).
    sgd_iterations : int, default=50
        Number of steps of ``user_dp_sgd`` (fixed in advance).
    sgd_clip : float, default=None
        Clip level of each user's average gradient; ``None`` is
        ``data_norm / 2``.
    sgd_step : float, default=None
        Step size of ``user_dp_sgd``; ``None`` is ``1 / (data_norm^2/4 + alpha)``.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        Value of the virtual intercept column (counts in the row norm).
    classes : array-like, default=None
        The label set, if known in advance (recommended; see Notes).
    accountant : BudgetAccountant, default=None
        Ledger charged once per successful fit (default: the global one).
    random_state : int, Generator or None, default=None
        ``None`` draws noise from the OS CSPRNG (required for releases).
    n_jobs : int, default=None
        Threads for one-vs-rest problems and the exhaustive test's solves;
        results do not depend on it.
    noise : {"secure", "float"}, default="secure"
        Noise sampling path (doc/privacy/secure_noise.rst), passed to every
        mechanism of the fit. ``"secure"``: the Gaussian releases
        (``user_clip``, ``item_group``, the deletion mechanism's release) draw
        exact discrete Gaussian noise on a grid, calibrated through zCDP, and
        the deletion mechanism's truncated discrete Laplace level is sampled
        exactly; ``"float"``: the textbook floating-point samplers.
        ``solver="user_dp_sgd"`` has NO secure path (its per-step noise is
        ``rng.normal``): it is refused under ``noise="secure"`` and left out of
        ``solver="auto"``'s candidates.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray
    solver_ : str
    alpha_ : float
        The regularization used (the parameter, or the public default rule).
    n_users_ : int
        Number of users seen by fit (public under the neighbouring relation).
    n_bottom_ : list of int
        Per problem, how many deletion-mechanism calls returned ⊥ (a function
        of the private outputs; a ⊥ keeps the previous iterate, or zero).
    privacy_event_, epsilon_spent_, delta_spent_, noise_source_, fit_info_

    Notes
    -----
    Privacy unit: one user, replace-one-user neighbouring, n public
    (``privacy_unit == "user"``, also recorded in the ledger entry; it
    implies the row-level guarantee). The
    guarantee holds for every input (any row norms, labels, adversarial
    users); utility guarantees assume exchangeable items (Ghazi et al. 2023).
    Public inputs of every noise scale: n users, m, dimension, R, alpha,
    radius, epsilon, delta, beta, the solver settings. The deletion mechanism
    needs at least 2(K + 1) users per call, K = 4k - 1, k = O(log(1/delta) /
    epsilon); fits with fewer users are refused before anything is spent.
    Multiclass problems are fitted one-vs-rest with the budget split evenly
    by the rule of the solver's events (accounting/_shares.py): basic
    composition for the approximate-DP solvers (deletion mechanism,
    ``item_group``), Gaussian-DP ``mu`` (float) or zCDP ``rho`` (secure) for
    ``user_clip``, Gaussian-DP for ``user_dp_sgd``.

    ``groups`` is required, so scikit-learn's generic ``check_estimator``
    (which calls ``fit(X, y)``) needs a wrapper that supplies it; the
    test-suite runs the checks on a subclass making every row its own user.

    References
    ----------
    Ghazi, Kamath, Kumar, Meka, Manurangsi, Zhang. On user-level private
    convex optimization. ICML 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco import UserLevelDPLogistic
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((2000, 3))
    >>> y = (X[:, 0] + 0.5 * rng.standard_normal(2000) > 0).astype(int)
    >>> groups = np.repeat(np.arange(200), 10)  # 200 users, 10 rows each
    >>> clf = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, random_state=0)
    >>> clf.fit(X, y, groups).solver_
    'user_clip'
    """

    _PRIVACY_UNIT = "user"  # replace one whole user (read through ``privacy_unit``)

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "solver": [StrOptions({"auto", *_SOLVERS})],
        "max_items_per_user": [Interval(numbers.Integral, 1, None, closed="left")],
        "item_selection": [StrOptions({"first", "random"})],
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither")],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "radius": [Interval(numbers.Real, 0, None, closed="neither")],
        "deletion_test": [StrOptions({"graded", "exhaustive"})],
        "max_exhaustive_solves": [Interval(numbers.Integral, 1, None, closed="left")],
        "beta": [Interval(numbers.Real, 0, 1, closed="neither")],
        "user_clip": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "sgd_iterations": [Interval(numbers.Integral, 1, None, closed="left")],
        "sgd_clip": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "sgd_step": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-6,
        *,
        solver="auto",
        max_items_per_user=10,
        item_selection="first",
        data_norm=1.0,
        alpha=None,
        radius=10.0,
        deletion_test="graded",
        max_exhaustive_solves=DEFAULT_MAX_EXHAUSTIVE_SOLVES,
        beta=0.05,
        user_clip=None,
        sgd_iterations=50,
        sgd_clip=None,
        sgd_step=None,
        fit_intercept=True,
        intercept_scaling=1.0,
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
        self.max_items_per_user = max_items_per_user
        self.item_selection = item_selection
        self.data_norm = data_norm
        self.alpha = alpha
        self.radius = radius
        self.deletion_test = deletion_test
        self.max_exhaustive_solves = max_exhaustive_solves
        self.beta = beta
        self.user_clip = user_clip
        self.sgd_iterations = sgd_iterations
        self.sgd_clip = sgd_clip
        self.sgd_step = sgd_step
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.noise = noise
        self.verbose = verbose

    # -- planning (public facts only) ---------------------------------------------------------
    def _check_privacy_params(self):
        super()._check_privacy_params()
        if self.delta == 0:
            raise ValueError(
                "UserLevelDPLogistic needs delta > 0: every user-level solver is an approximate-DP "
                "mechanism (the deletion test always has an uncovered atom; the others are Gaussian)."
            )

    def _sgd_settings(self, alpha):
        clip = self.data_norm / 2.0 if self.sgd_clip is None else self.sgd_clip
        step = 1.0 / (0.25 * self.data_norm**2 + alpha) if self.sgd_step is None else self.sgd_step
        return clip, step

    def _alpha(self, n_users, n_coef, epsilon, delta):
        """The parameter, else the public rule on this problem's budget share."""
        if self.alpha is not None:
            return float(self.alpha)
        return default_user_alpha(n_users, self.max_items_per_user, n_coef, self.data_norm, epsilon, delta)

    def _plan_solver(self, solver, n_users, n_coef, epsilon, delta):
        alpha = self._alpha(n_users, n_coef, epsilon, delta)
        plan = self._plan_solver_at(solver, n_users, n_coef, epsilon, delta, alpha)
        plan.params["alpha"] = alpha
        return plan

    def _plan_solver_at(self, solver, n_users, n_coef, epsilon, delta, alpha):
        m = self.max_items_per_user
        if solver in GKKMMZ_SOLVERS:
            sched = user_level_schedule(
                solver, n_users, m, n_coef, data_norm=self.data_norm, alpha=alpha, radius=self.radius,
                epsilon=epsilon, delta=delta, deletion_test=self.deletion_test, beta=self.beta,
                max_exhaustive_solves=self.max_exhaustive_solves, noise=self.noise,
            )
            return FitPlan(solver, sched.event, schedule=sched)
        if solver == "user_clip":
            sched = user_clip_plan(n_users, m, n_coef, data_norm=self.data_norm, lam=alpha, clip=self.user_clip,
                                   epsilon=epsilon, delta=delta, noise=self.noise)
            return FitPlan(solver, sched.event, schedule=sched)
        if solver == "user_dp_sgd":
            clip, step = self._sgd_settings(alpha)
            if self.noise != "float":
                raise ValueError(
                    "solver='user_dp_sgd' adds floating-point Gaussian noise at every step and has no secure "
                    "sampler; pass noise='float' to use it. Nothing was spent."
                )
            sched = dp_sgd_plan(n_users, n_coef, epsilon=epsilon, delta=delta, iterations=self.sgd_iterations,
                                clip=clip, step=step, lam=alpha, radius=self.radius)
            return FitPlan(solver, sched.event, schedule=sched)
        sched = item_group_plan(n_users, m, n_coef, data_norm=self.data_norm, lam=alpha, epsilon=epsilon,
                                delta=delta, noise=self.noise)
        return FitPlan(solver, sched.event, schedule=sched)

    @staticmethod
    def _noise_proxy(plan):
        """Expected norm of the noise a plan adds to the coefficients (public; for solver='auto')."""
        sched = plan.params["schedule"]
        if plan.solver == "user_dp_sgd":
            # w_T carries sum_t (1 - step lam)^t step sigma / n of per-step noise (projection ignored)
            contraction = (1.0 - sched.step * sched.lam) ** 2
            total = sum(contraction**t for t in range(sched.iterations))
            return sched.step * sched.sigma / sched.n_users * math.sqrt(total * sched.n_coef)
        if plan.solver in ("item_group", "user_clip"):
            return sched.mechanism.sigma * math.sqrt(sched.mechanism.dimension)
        return sched.info["sigma"] * math.sqrt(sched.stages[0].phases[0].plan.n_coef)

    def _split_kind(self, solver):
        """How one-vs-rest problems share the budget: the composition rule of ``solver``'s events."""
        if solver == "user_dp_sgd":
            return "gaussian"  # float Gaussian steps, exactly Gaussian-DP
        if solver == "user_clip":
            return split_kind(self.delta, self.noise)  # one Gaussian release on the noise path
        return "basic"  # approximate-DP events (deletion mechanism, group privacy)

    def _plan(self, n_users, n_coef, n_problems):
        solver = self.solver
        candidates = _AUTO_CANDIDATES if solver == "auto" else (solver,)
        if solver == "auto" and self.noise != "float":
            candidates = tuple(c for c in candidates if c not in _FLOAT_ONLY)
        best, first_error = None, None
        for name in candidates:
            eps, delta = split_budget(self.epsilon, self.delta, n_problems, self._split_kind(name))
            try:
                plan = self._plan_solver(name, n_users, n_coef, eps, delta)
            except ValueError as err:  # public refusal (too few users, exhaustive over budget)
                if solver != "auto":
                    raise
                first_error = first_error or err
                continue
            proxy = self._noise_proxy(plan) if solver == "auto" else 0.0
            if best is None or proxy < best[0]:
                best = (proxy, plan)
        if best is None:
            raise first_error
        return best[1]

    def _solve_user_problem(self, data, plan, random_state, n_jobs):
        rng = check_random_state(random_state)
        sched = plan.params["schedule"]
        bottoms = 0
        if plan.solver in GKKMMZ_SOLVERS:
            coef, bottoms = run_user_level(data, sched, rng, n_jobs=n_jobs)
            info = dict(sched.info)
        elif plan.solver == "user_clip":
            coef = run_user_clip(data, sched, rng, radius=self.radius)
            info = {"clip": sched.clip, "sensitivity": sched.sensitivity, "sigma": sched.mechanism.sigma}
        elif plan.solver == "user_dp_sgd":
            coef = run_dp_sgd(lambda W: user_mean_gradients(data, W), sched, rng)
            info = {"iterations": sched.iterations, "clip": sched.clip, "step": sched.step, "sigma": sched.sigma}
        else:
            coef = run_item_group(data, sched, rng, radius=self.radius)
            info = {"item_epsilon": sched.item_epsilon, "item_delta": sched.item_delta,
                    "sigma": sched.mechanism.sigma}
        return coef, bottoms, info

    # -- fit ----------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, groups=None):
        """Fit the model with user-level differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        groups : array-like of shape (n_samples,)
            User identifier of each row (required).

        Returns
        -------
        self
        """

        def body():
            X_, y_ = self._validate_Xy(X, y, y_numeric=False)
            check_classification_targets(y_)
            groups_ = check_groups(groups, X_.shape[0], "UserLevelDPLogistic.fit")
            classes = self._resolve_classes(y_)
            targets = [np.where(y_ == classes[1], 1.0, -1.0)] if classes.size == 2 else [
                np.where(y_ == c, 1.0, -1.0) for c in classes
            ]
            n_users = int(np.unique(groups_).size)  # public under replace-one-user
            n_coef = X_.shape[1] + (1 if self.fit_intercept else 0)
            plan = self._plan(n_users, n_coef, len(targets))  # may refuse: public facts only
            event = plan.event if len(targets) == 1 else ComposedEvent(tuple([plan.event] * len(targets)))
            self._check_within_budget(event)
            # the template's resolution: the parameter, else the budget block in force (a
            # pipeline's or search's allowance arrives as the parameter), else the ledger bound
            # when this estimator was sent to a worker, else the session default
            accountant = self._get_accountant()
            accountant.check(event, privacy_unit=self.privacy_unit)

            rng = check_random_state(self.random_state)
            states = spawn_random_states(rng, len(targets) + 1)
            data = make_user_data(
                X_, targets[0], groups_, max_items=self.max_items_per_user, data_norm=self.data_norm,
                intercept_scaling=self.intercept_scaling if self.fit_intercept else 0.0,
                item_selection=self.item_selection, random_state=states[-1],
            )
            # one-vs-rest problems share the users' kept rows
            kept_targets = [t[data.source_rows] for t in targets]
            inner_jobs = self.n_jobs if len(targets) == 1 else 1
            jobs = (delayed(self._solve_user_problem)(data.with_labels(t), plan, s, inner_jobs)
                    for t, s in zip(kept_targets, states[:-1]))
            fits = Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs)
            accountant.spend(event, label=type(self).__name__, privacy_unit=self.privacy_unit)

            parts = [self._split_coef(coef) for coef, _, _ in fits]
            self.classes_ = classes
            self.coef_ = np.array([q[0] for q in parts])
            self.intercept_ = np.array([q[1] for q in parts], dtype=float)
            self.n_users_ = n_users
            self.n_bottom_ = [b for _, b, _ in fits]
            self.fit_info_ = [info for _, _, info in fits]
            self._store_privacy(plan, event, noise_source(rng))
            self.alpha_ = plan.params["alpha"]

        return self._run_fit(body)

    # -- prediction -----------------------------------------------------------------------------
    def predict_proba(self, X):
        """Class probabilities: sigmoid for binary, normalised one-vs-rest sigmoids otherwise."""
        check_is_fitted(self)
        scores = self._decision(X)
        if scores.shape[1] == 1:
            p1 = expit(scores[:, 0])
            return np.column_stack([1.0 - p1, p1])
        probs = expit(scores)
        total = probs.sum(axis=1, keepdims=True)
        return probs / np.where(total > 0, total, 1.0)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        return tags

