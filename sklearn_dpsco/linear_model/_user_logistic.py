"""UserLevelDPLogistic: logistic regression that protects whole users."""

import numbers
from dataclasses import replace

import numpy as np
from scipy.special import expit
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._compat import Interval, StrOptions, _fit_context
from .._mechanisms import DEFAULT_NOISE
from .._param_checks import SCALE_MAX, check_class_labels, check_groups, check_no_missing
from .._rng import spawn_random_states
from .._solvers import DEFAULT_MAX_EXHAUSTIVE_SOLVES, Problem, get_solver, loss_for, make_user_data, safe_row_norms
from .._solvers._core._user_data import index_users
from ._auto_scales import AUTO, DATA_NORM_LEVEL, DATA_NORM_MARGIN, ScaleTarget, is_auto
from ._cluster_inputs import is_cluster_input
from ._base import DPClassifierMixin, DPLinearModelMixin, FitInputs, FitPlan
from ._centering import CenteringPlan, centering_applies, feature_bound
from ._column_magnitudes import MagnitudePlan, magnitudes_apply
from ._column_scaling import ColumnScalingPlan
from ._user_logistic_rules import (
    DEFAULT_DATA_NORM,
    SGD_ALPHA_SHARE,
    SOLVERS,
    choose_plan,
    declared_row_scale,
    default_sgd_clip,
    default_sgd_iterations,
    default_sgd_momentum,
    default_sc_output_pert_alpha,
    default_user_alpha,
    first_row_per_user,
    prefers_dp_sgd,
    users_per_noise,
)

#: Below this many users per unit of noise (``users_per_noise``: users over the expected noise norm of one
#: unit-sensitivity release at the fit's epsilon and delta) the fit warns: the noise outweighs what the users
#: can average out, and the model is close to a constant (3 users at epsilon 1 fitted silently, accuracy 0.5).
#: The panels where the default beats the majority class sit at 8 or more (VerbAgg at epsilon 0.5;
#: benchmarks/results/panels.md). Public: n_users, d, epsilon, delta.
FEW_USERS_PER_NOISE = 1.0

#: Solvers the column magnitudes may precede (Gaussian / zCDP events).
MAGNITUDE_SOLVERS = ("user_clip", "user_dp_sgd")

__all__ = ["UserLevelDPLogistic"]


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
        Gaussian noise at every step; on the secure path each step's sum is
        rounded to a grid and released with exact discrete Gaussian noise,
        the steps composed in zCDP), with Nesterov momentum by default. ``"item_group"``:
        item-level output perturbation made user-level by group privacy.
        ``"auto"``: ``user_dp_sgd`` when ``n_users / u >= 20`` (``u`` the
        expected noise norm per unit of sensitivity, about ``sqrt(d) /
        mu(epsilon, delta)``; about 300 users at d = 10, epsilon = 1), the
        rule of the panel benchmark (benchmarks/results/panels.md), and at
        any ``n_users / u`` when the fit releases the column magnitudes and
        the centre (nothing declared, quartiles off); otherwise,
        among ``user_clip``, ``sc_output_pert``, ``item_group`` and
        ``user_dp_sgd`` (the solvers of the same ``alpha``-regularised
        objective, on either noise path), the feasible one whose planned
        noise on the coefficients has the smallest expected norm. Both are
        functions of public facts only (users, cap, dimension, budget,
        parameters; linear_model/_user_logistic_rules.py). The choice is
        stored in ``solver_``.
    max_items_per_user : int, default=10
        Contribution bound m: a user keeps at most this many rows; the others
        are dropped by ``item_selection``, a rule that never looks at values.
    item_selection : {"first", "random"}, default="first"
        ``"first"``: the first m rows of the user in input order.
        ``"random"``: a uniformly random subset (drawn from ``random_state``).
    data_norm : float, "auto" or None, default=None
        ``None`` (the default): ``"auto"`` when the fit rescales its columns
        privately (``column_scaling``: dense rows and about ``n_users epsilon
        >= 400 d``, public facts), else the declared bound ``1.0``. Raw
        columns need the column map and the private scale (a raw panel of
        4288 users at epsilon 1: 0.657, the majority class, at ``1.0``
        against 0.757 with ``"auto"``; LogisticRegression 0.759), while
        rows already scaled to norm at most 1 gain from the declared bound
        where there are too few users for the column quartiles
        (benchmarks/results/panels.md, "The default data_norm"); ``data_norm_``
        reports which.
        A number: public bound R on row norms (intercept column included). Rows above
        it are scaled down to norm R before fitting (each row on its own).
        The fit then clips tighter, as ``"auto"`` does with its estimate:
        with ``c = R / 4`` (``R / 8`` when it centres the features, see
        ``centering``) it runs on ``X / c`` with bound ``sqrt(1 +
        intercept_scaling^2)`` (a public per-row map;
        linear_model/_user_logistic_rules.py, ``declared_row_scale``), so
        ``alpha``, ``radius``, ``user_clip``, ``sgd_clip`` and ``sgd_step``
        are read in the units of ``X / c`` (``alpha_`` is reported in the
        data's units).
        Predictions use the raw rows. ``"auto"``: ``1/4 x`` a private median of
        the users' largest row norms (one value per user, so the release is
        user-level DP), released inside this fit's budget (``scale_share`` of
        epsilon; doc/privacy/quantiles.rst, "Use in the estimators"); the fit
        then runs on ``X / data_norm_`` with bound ``sqrt(1 +
        intercept_scaling^2)``, so ``alpha``, ``radius``, ``user_clip``,
        ``sgd_clip``, ``sgd_step`` and ``intercept_scaling`` are read in the
        units of ``X / data_norm_`` (the fitted ``alpha_`` is in the data's
        units).
    scale_share : float or None, default=None
        Fraction of epsilon spent on the ``"auto"`` data norm, in (0, 1);
        ignored when ``data_norm`` is declared. ``None``: ``min(0.5, max(0.05,
        50 / (n_users epsilon)))``.
    column_scaling : {"auto", True, False}, default="auto"
        Rescale the columns privately inside the fit, with user-level
        privacy: the quartiles of every column are released from ONE row per
        user (each user's first row in input order, a public rule of the
        grouping) by :class:`~sklearn_dpsco.preprocessing.DPStandardScaler`'s
        ``bounds="auto"`` mechanism on a public share of epsilon; every row is
        mapped by ``x -> (x - centre) / scale`` before the rest of the fit,
        and the map is folded back into ``coef_`` and ``intercept_``
        (doc/privacy/column_scaling.rst, "User level"). For raw columns in
        mixed units (a year next to 0/1 indicators), which one global row
        scale cannot fix. ``"auto"``: only with ``data_norm="auto"`` or
        ``None`` (the default), dense rows and at least about ``400 d / epsilon`` users (each quartile gets
        ``n_users epsilon_i >= 50``; public facts only); a declared
        ``data_norm`` leaves the fit exactly as before. ``True``: always
        (dense rows; with a few hundred users the quartiles are mostly noise).
        ``False``: never. Where the quartiles do not run and nothing is declared
        (``data_norm`` None or ``"auto"``, dense rows, an intercept), ``"auto"``
        releases one magnitude per column instead (a noisy histogram of the
        users' largest ``|x_j|`` in bins of two octaves, l2-sensitivity ``sqrt(2
        d)``, on 0.15 of the budget; doc/privacy/user_level.rst, "Column
        magnitudes") and maps ``x_j -> x_j / (b_j sqrt(d))``, followed by the
        private centre when ``data_norm`` is None. With it on, ``alpha``, ``radius``, ``user_clip``,
        ``sgd_clip`` and ``sgd_step`` are read, and ``data_norm_``,
        ``row_bound_`` and ``alpha_`` reported, in the units of the rescaled
        columns (``coef_`` and ``intercept_`` are in the data's units).
    centering : {"auto", True, False}, default="auto"
        Centre the features privately inside the fit, with user-level
        privacy: the mean of the users' mean rows (each user's first
        ``max_items_per_user`` rows in input order, every row and each
        user's mean clipped to ``B = max(sqrt(R^2 - intercept_scaling^2), R /
        sqrt(2))``) is released by the Gaussian mechanism (l2-sensitivity
        2B under replace-one-user; discrete on the secure path) on 0.1 of the
        budget (of zCDP rho, or of mu^2 on the float path); every row is
        shifted by it, the fit runs on the rest with its rows clipped at ``c =
        R / 8``, and the shift is folded into ``intercept_``
        (doc/privacy/user_level.rst, "Feature centring"). Rows scaled by
        public ranges sit far from the origin; the noise of gradient descent
        then lands in the threshold (benchmarks/results/panels.md).
        ``"auto"``: with a declared ``data_norm``, an intercept, dense rows,
        and when the fit runs ``user_dp_sgd`` (forced, or chosen by
        ``solver="auto"``; public facts only). ``True``: whatever the solver
        (a declared ``data_norm``, an intercept and dense rows are required).
        ``False``: never.
    alpha : float, default=None
        Strong convexity of the objective ``mean logistic loss + alpha/2
        ||w||^2`` (strongly convex solvers; an extra ridge for the others).
        ``None``: ``min(20 R^2 u / (n_users sqrt(m) d), R^2 / d)`` with ``R =
        data_norm``, ``m = max_items_per_user``, ``d`` the number of
        coefficients and ``u`` the expected noise norm per unit of sensitivity
        (about ``sqrt(d) / mu(epsilon, delta)``), computed per one-vs-rest
        problem from public facts (linear_model/_user_logistic_rules.py);
        ``user_dp_sgd`` takes ``0.03`` times it (a smaller ridge: its step
        count already limits how far the iterate travels). A named
        ``solver="sc_output_pert"`` balances its ridge against its own output
        noise instead: ``max(min(0.5 R sqrt(R N_1 / d), R^2 / d), rule above)``
        with ``N_1`` the expected noise norm of its deletion-mechanism plan at
        ``alpha = 1`` (public; about 100-300x the user_clip noise per unit
        ``1 / alpha``): 6000 synthetic users at epsilon 64 / 8, 0.644 / 0.513
        under the rule above against 0.838 / 0.818 (LogisticRegression
        0.838); ``"auto"`` ranks it at the rule above. The value used is
        ``alpha_``.
    radius : float, default=10.0
        Radius of the public domain ball of the coefficients (outputs are
        projected onto it; the phased solvers localize inside it), in the
        units of the fitted rows ``X / c`` (see ``data_norm``): in the data's
        units the coefficients lie within ``radius / c``.
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
    sgd_iterations : int, default=None
        Number of steps of ``user_dp_sgd`` (fixed in advance). ``None``:
        ``n_users / u`` rounded, within [10, 30], and at most ``max(10,
        3e6 / (n_users m))`` (a cap on the passes over the rows; ``u`` as for
        ``"auto"``, on each one-vs-rest problem's budget share; public facts
        only); the value used is ``sgd_iterations_``.
    sgd_momentum : float, default=None
        Nesterov momentum of ``user_dp_sgd``, in [0, 1): the gradient is
        taken at the look-ahead point ``w_t + beta (w_t - w_{t-1})``. It is
        post-processing of the released gradient sums (their noise does not
        depend on it). ``None``: ``1 - T / H`` (0 when ``T >= H``), ``H =
        min(r max(1, r / 30)^2, 300)`` with ``r = n_users / u`` the step count
        of plain gradient descent under the public rule without a cap, ``T``
        the steps run: with
        momentum ``beta`` a step moves about ``1 / (1 - beta)`` plain steps'
        distance, so ``T`` steps travel about as far as ``H``. The value used
        is ``sgd_momentum_``.
    sgd_clip : float, default=None
        Clip level of each user's average gradient; ``None`` is ``B / (2
        sqrt(2))``, ``B`` the bound the rows are fitted at (``row_bound_``;
        public, linear_model/_user_logistic_rules.py ``default_sgd_clip``).
    sgd_step : float, default=None
        Step size of ``user_dp_sgd``; ``None`` is ``1 / (data_norm^2/4 + alpha)``.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        Value of the virtual intercept column (counts in the row norm).
    classes : array-like, default=None
        The label set, if known in advance (recommended; see Notes).
    accountant : BudgetAccountant, default=None
        Ledger charged once per successful fit (default: the global one).
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the OS CSPRNG (required for releases).
    n_jobs : int, default=None
        Threads for one-vs-rest problems and the exhaustive test's solves;
        results do not depend on it.
    noise : {"secure", "float"}, default="secure"
        Noise sampling path (doc/privacy/secure_noise.rst), passed to every
        mechanism of the fit. ``"secure"``: the Gaussian releases
        (``user_clip``, ``item_group``, the deletion mechanism's release and
        every step of ``user_dp_sgd``) round their centre to a grid and add
        exact discrete Gaussian noise, calibrated through zCDP, and the
        deletion mechanism's truncated discrete Laplace level is sampled
        exactly; ``"float"``: the textbook floating-point samplers.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray
    solver_ : str
    alpha_ : float
        The regularization used (the parameter, or the public default rule).
    sgd_iterations_ : int or None
        The steps of ``user_dp_sgd`` (the parameter or the public rule);
        ``None`` when another solver ran.
    sgd_momentum_ : float or None
        The momentum of ``user_dp_sgd`` (the parameter or the public rule);
        ``None`` when another solver ran.
    data_norm_ : float
        The declared ``data_norm``, or with ``data_norm="auto"`` the released
        scale the rows were divided by (a differentially private release);
        ``data_norm=None`` gives one of the two (the declared 1.0 unless the
        columns were rescaled).
    row_bound_ : float
        The norm the fit clipped its rows ``(x, c intercept_scaling)`` to,
        in the data's units: ``c sqrt(1 + intercept_scaling^2)`` with ``c``
        a quarter of the declared ``data_norm`` or the released
        ``data_norm_`` (see ``data_norm``).
    column_center_, column_scale_ : ndarray of shape (n_features,) or None
        The released column map (DP releases): the quartiles' centre and
        scale, or the released feature centre and ones; None when neither
        column scaling nor centring ran.
    n_users_ : int
        Number of users seen by fit (public under the neighbouring relation).
    n_bottom_ : list of int
        Per problem, how many deletion-mechanism calls returned ⊥ (a function
        of the private outputs; a ⊥ keeps the previous iterate, or zero).
    privacy_event_, epsilon_spent_, delta_spent_, noise_source_, fit_info_
        With ``data_norm="auto"`` the event is ``ComposedEvent((PureDPEvent(
        scale epsilon), solver events))`` and every ``fit_info_`` entry also
        holds ``data_norm``, ``scale_estimates``, ``scale_share``,
        ``scale_epsilon`` and ``scale_rule``. With column scaling the event
        is ``ComposedEvent((2 d quartile events, the event above))`` and
        every entry holds ``column_scaling`` (share, its epsilon, the number
        of passed-through columns); with centring it is
        ``ComposedEvent((the centre's Gaussian event, the solver's event))``
        and every entry holds ``centering`` (share, bound B, the expected
        norm of the released centre's error).

    Notes
    -----
    Privacy unit: one user, replace-one-user neighbouring, n public
    (``privacy_unit == "user"``, also recorded in the ledger entry; it
    implies the row-level guarantee). The
    guarantee holds for every input (any row norms, labels, adversarial
    users); utility guarantees assume exchangeable items (Ghazi et al. 2023).
    Public inputs of every noise scale: n users, m, dimension, R, alpha,
    radius, epsilon, delta, beta, the solver settings (with
    ``data_norm="auto"``, R is the public unit-scale bound and the released
    ``data_norm_`` only divides the rows, a public per-row map). The deletion mechanism
    needs at least 2(K + 1) users per call, K = 4k - 1, k = O(log(1/delta) /
    epsilon); fits with fewer users are refused before anything is spent.
    Multiclass problems are fitted one-vs-rest with the budget split evenly
    by the rule of the solver's events (accounting/_shares.py): basic
    composition for the approximate-DP solvers (deletion mechanism,
    ``item_group``), Gaussian-DP ``mu`` (float) or zCDP ``rho`` (secure) for
    ``user_clip`` and ``user_dp_sgd``.

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
    'user_dp_sgd'
    """

    _PRIVACY_UNIT = "user"  # replace one whole user (read through ``privacy_unit``)

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "solver": [StrOptions({"auto", *SOLVERS})],
        "max_items_per_user": [Interval(numbers.Integral, 1, None, closed="left")],
        "item_selection": [StrOptions({"first", "random"})],
        # the fit runs at a public fraction of data_norm (down to 1 / (8 sqrt 2)), which must stay >= SCALE_MIN
        "data_norm": [Interval(numbers.Real, 2.0**-290, SCALE_MAX, closed="both"), StrOptions({AUTO}), None],
        "scale_share": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "column_scaling": [StrOptions({AUTO}), "boolean"],
        "centering": [StrOptions({AUTO}), "boolean"],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "radius": [Interval(numbers.Real, 0, None, closed="neither")],
        "deletion_test": [StrOptions({"graded", "exhaustive"})],
        "max_exhaustive_solves": [Interval(numbers.Integral, 1, None, closed="left")],
        "beta": [Interval(numbers.Real, 0, 1, closed="neither")],
        "user_clip": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "sgd_iterations": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "sgd_momentum": [Interval(numbers.Real, 0, 1, closed="left"), None],
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
        data_norm=None,
        scale_share=None,
        column_scaling=AUTO,
        centering=AUTO,
        alpha=None,
        radius=10.0,
        deletion_test="graded",
        max_exhaustive_solves=DEFAULT_MAX_EXHAUSTIVE_SOLVES,
        beta=0.05,
        user_clip=None,
        sgd_iterations=None,
        sgd_momentum=None,
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
        self.scale_share = scale_share
        self.column_scaling = column_scaling
        self.centering = centering
        self.alpha = alpha
        self.radius = radius
        self.deletion_test = deletion_test
        self.max_exhaustive_solves = max_exhaustive_solves
        self.beta = beta
        self.user_clip = user_clip
        self.sgd_iterations = sgd_iterations
        self.sgd_momentum = sgd_momentum
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

    def _params(self, alpha, data_norm, sgd_iterations, sgd_momentum):
        """The public settings every plan builder of the family reads (``alpha``, ``data_norm``,
        ``sgd_iterations``, ``sgd_momentum`` resolved)."""
        names = ("radius", "deletion_test", "beta", "max_exhaustive_solves", "user_clip", "sgd_clip", "sgd_step")
        return {"max_items": self.max_items_per_user, "alpha": alpha, "data_norm": data_norm,
                "sgd_iterations": sgd_iterations, "sgd_momentum": sgd_momentum,
                **{name: getattr(self, name) for name in names}}

    def _alpha(self, solver, n_users, n_coef, budget, data_norm):
        """The parameter, else the public rule on this problem's budget share (a share of it for DP-GD)."""
        if self.alpha is not None:
            return float(self.alpha)
        if solver == "sc_output_pert" and self.solver == "sc_output_pert":  # named: its own balance rule
            return default_sc_output_pert_alpha(n_users, self.max_items_per_user, n_coef, data_norm,
                                                budget.epsilon, budget.delta)
        alpha = default_user_alpha(n_users, self.max_items_per_user, n_coef, data_norm, budget.epsilon,
                                   budget.delta)
        return alpha * SGD_ALPHA_SHARE if solver == "user_dp_sgd" else alpha

    def _sgd_iterations(self, n_users, n_coef, budget):
        """The parameter, else the public step rule on this problem's budget share."""
        if self.sgd_iterations is not None:
            return int(self.sgd_iterations)
        return default_sgd_iterations(n_users, self.max_items_per_user, n_coef, budget.epsilon, budget.delta)

    def _sgd_momentum(self, n_users, n_coef, budget, sgd_iterations):
        """The parameter, else the public momentum rule for ``sgd_iterations`` steps on this budget share."""
        if self.sgd_momentum is not None:
            return float(self.sgd_momentum)
        return default_sgd_momentum(n_users, n_coef, budget.epsilon, budget.delta, sgd_iterations)

    def _intercept_column(self):
        """Value of the virtual intercept column (0 without intercept); public."""
        return self.intercept_scaling if self.fit_intercept else 0.0

    def _plan_solver(self, solver, n_users, n_coef, n_problems, solver_budget, data_norm, declared=False,
                     centred=False, declared_norm=None):
        """The plan of ``solver``; one-vs-rest problems share the budget by the rule of its events.

        ``declared``: ``data_norm`` is the user's bound; the fit runs on the
        rows ``(x, c intercept_scaling)`` clipped to ``c sqrt(1 +
        intercept_scaling^2)`` (public: ``c`` from the declared bound and
        ``centred``, :func:`declared_row_scale`), and every setting below is
        planned at that bound, read in the units of ``X / c`` as under ``"auto"``.
        """
        spec = get_solver("user_logistic", solver)
        intercept_column, row_bound = self._intercept_column(), data_norm
        scale = declared_row_scale(data_norm, centred) if declared else None
        if scale is not None:
            # the rows (x / c, is) of "auto" in the data's units: (x, c is) of norm <= c sqrt(1 + is^2)
            intercept_column = scale * intercept_column
            row_bound = scale * float(np.hypot(1.0, self._intercept_column()))
            data_norm = row_bound
        budget = solver_budget.split_equal(n_problems, kind=spec.split)
        if not spec.supports_noise(self.noise, self.delta):
            raise ValueError(
                f"solver={solver!r} has no sampler on noise={self.noise!r} at delta={self.delta!r} "
                "(doc/privacy/secure_noise.rst); choose another noise path or solver. Nothing was spent."
            )
        alpha = self._alpha(solver, n_users, n_coef, budget, data_norm)
        if scale is not None and self.alpha is not None:
            alpha = alpha * scale**2  # given in the units of X / c, as under "auto": w = w' / c
        sgd_iterations = self._sgd_iterations(n_users, n_coef, budget)
        sgd_momentum = self._sgd_momentum(n_users, n_coef, budget, sgd_iterations)
        params = self._params(alpha, data_norm, sgd_iterations, sgd_momentum)
        if scale is not None:
            params.update(self._settings_in_data_units(scale))
        if params["sgd_clip"] is None:
            params["sgd_clip"] = default_sgd_clip(data_norm)  # public: the fit's row bound only
        plan = spec.build(n_users, n_coef, budget, params)
        # the step count and momentum are settings of user_dp_sgd only (None for the other solvers)
        sgd = solver == "user_dp_sgd"
        attributes = {"alpha_": alpha, "data_norm_": declared_norm if declared else data_norm,
                      "row_bound_": row_bound, "sgd_iterations_": sgd_iterations if sgd else None,
                      "sgd_momentum_": sgd_momentum if sgd else None}
        return FitPlan(solver, plan, loss=loss_for(spec), radius=params["radius"],
                       intercept_scaling=intercept_column, attributes=attributes)

    def _settings_in_data_units(self, scale):
        """``radius``, ``user_clip``, ``sgd_clip``, ``sgd_step`` read in the units of ``X / c`` (as under
        ``"auto"``), mapped to the data's units for the rows ``(x, c is)``: ``w = w' / c``, gradients
        in ``w`` are ``c`` times those in ``w'``. Public: the parameters and ``c`` only."""
        out = {"radius": self.radius / scale}
        for name, power in (("user_clip", 1), ("sgd_clip", 1), ("sgd_step", -2)):
            value = getattr(self, name)
            out[name] = None if value is None else value * scale**power
        return out

    def _prefer(self, n_users, n_coef, n_problems, solver_budget, magnitudes=False):
        """``"user_dp_sgd"`` when the public rule of ``solver="auto"`` takes it on its budget share
        (``magnitudes``: the fit maps its columns by the released column magnitudes, a public fact)."""
        budget = solver_budget.split_equal(n_problems, kind=get_solver("user_logistic", "user_dp_sgd").split)
        return "user_dp_sgd" if prefers_dp_sgd(n_users, n_coef, budget.epsilon, budget.delta,
                                               magnitudes=magnitudes) else None

    def _declares_scales(self):
        """True when ``data_norm`` is declared (``column_scaling="auto"`` then stays off); public."""
        return self.data_norm is not None and not is_auto(self.data_norm)

    def _data_norm(self, columns):
        """``data_norm`` with ``None`` resolved: ``"auto"`` when the column quartiles run (``columns`` is a
        ``ColumnScalingPlan``), else ``DEFAULT_DATA_NORM``; public (the column plan is)."""
        if self.data_norm is not None:
            return self.data_norm
        return AUTO if isinstance(columns, ColumnScalingPlan) else DEFAULT_DATA_NORM

    #: The users' first rows sit in the order of the users' identifiers: a replaced user with a fresh
    #: identifier moves and shifts every user between, so no stride (doc/privacy/column_scaling.rst, "User level").
    _COLUMN_ROWS_POSITIONAL = False
    #: The plain affine column map, no clip (the clip of linear_model/_column_scaling.py was measured on row-level
    #: estimators only, benchmarks/results/psid_spread.md).
    _CLIPS_COLUMNS = False

    def _column_rows(self, inputs, columns):
        """For the quartiles, one row per user, each user's first in input order (:func:`first_row_per_user`,
        public rule): replacing one user changes at most one of them, so the quartiles are user-level DP.
        For the centre, the rows and their user index (it averages each user's first rows itself)."""
        X_, _, _, users = inputs.data
        if isinstance(columns, (CenteringPlan, MagnitudePlan)):
            return X_, users
        return X_[first_row_per_user(users)]

    def _centering_plan(self, inputs):
        """The :class:`CenteringPlan` of this fit, or None: :func:`centering_applies` on public facts (the
        setting, the declared bound, the intercept, the rows' format, and the solver this fit runs). With
        nothing declared on dense rows, the :class:`MagnitudePlan` (column magnitudes, then that centre)."""
        magnitudes = self._magnitude_plan(inputs)
        if magnitudes is not None:
            return magnitudes
        if self.centering is False:
            return None
        data_norm = self._data_norm(None)  # the quartiles do not run when the template asks for a centre
        declared = not is_auto(data_norm)
        d = inputs.n_coef - (1 if self.fit_intercept else 0)
        if not centering_applies(self.centering, declared=declared, fit_intercept=self.fit_intercept,
                                 dense=self._dense_rows(inputs), n_features=d):
            return None
        plan = CenteringPlan.build(self._budget(), inputs.n_samples, d,
                                   feature_bound(data_norm, self.intercept_scaling), self.max_items_per_user)
        # the solver on the rest of the budget: "auto" centres only the fits that run DP-GD
        dp_sgd = self.solver == "user_dp_sgd" or (
            self.solver == "auto" and self._prefer(inputs.n_samples, inputs.n_coef, inputs.n_problems, plan.rest))
        if self.centering == AUTO and not dp_sgd:
            return None
        return plan

    def _magnitude_plan(self, inputs):
        """The :class:`MagnitudePlan` of this fit, or None (linear_model/_column_magnitudes.py): nothing declared,
        ``column_scaling="auto"`` (the quartiles did not apply: this runs only when they return None), dense
        rows, an intercept. The centre on the mapped rows by the centring rule. Public facts only."""
        d = inputs.n_coef - (1 if self.fit_intercept else 0)
        if not magnitudes_apply(declared=self._declares_scales(), column_setting=self.column_scaling,
                                dense=self._dense_rows(inputs), fit_intercept=self.fit_intercept,
                                n_features=d):
            return None
        histogram, rest = MagnitudePlan.split(self._budget())
        centring = None
        if self.centering is not False and self.data_norm is None:  # "auto" estimates its bound: no centre
            centre = CenteringPlan.build(rest, inputs.n_samples, d,
                                         feature_bound(DEFAULT_DATA_NORM, self.intercept_scaling),
                                         self.max_items_per_user)
            dp_sgd = self.solver == "user_dp_sgd" or (
                self.solver == "auto" and self._prefer(inputs.n_samples, inputs.n_coef, inputs.n_problems,
                                                       centre.rest, magnitudes=True))
            if self.centering is True or dp_sgd:
                centring = centre
        plan = MagnitudePlan.build(histogram, inputs.n_samples, d, centring, rest if centring is None else centring.rest)
        # only before solvers whose events are Gaussian / zCDP (they compose with the histogram's exactly; an
        # approximate-DP solver event would leave no delta for it): the solver this plan would run, public facts
        if self.solver != "auto":
            return plan if self.solver in MAGNITUDE_SOLVERS else None
        try:
            chosen = self._plan(inputs.n_samples, inputs.n_coef, inputs.n_problems, plan).solver
        except ValueError:
            return None
        return plan if chosen in MAGNITUDE_SOLVERS else None

    def _plan(self, n_users, n_coef, n_problems, columns=None):
        """The solver's plan from (users, coefficients, problems); may refuse on public facts only.

        With ``data_norm="auto"`` the solver is planned at unit scale on the
        rows divided by the released ``data_norm_`` (linear_model/_auto_scales.py):
        its bound is ``sqrt(1 + intercept_scaling^2)``, the norm of a row
        ``(x / data_norm_, intercept_scaling)`` with ``||x|| <= data_norm_``;
        its event, like the estimate's, is fixed here, before any data is read.
        ``columns`` (a ``ColumnScalingPlan`` built with ``n = n_users``): the
        rows are first mapped by the released column quartiles, on
        ``columns.share`` of epsilon; or a ``CenteringPlan``: the rows are
        first shifted by the released mean of the users' mean rows, on
        ``columns.share`` of the budget, and fitted at the centred row share.
        """
        targets = []
        resolved = self._data_norm(columns)
        if is_auto(resolved):
            # one value per user (its largest row norm): replacing a user replaces one value, so the
            # replace-one quantile release is user-level DP (doc/privacy/quantiles.rst, "User level")
            targets.append(ScaleTarget("data_norm", DATA_NORM_LEVEL, DATA_NORM_MARGIN,
                                       lambda data, _: data[3].reduce_per_user(safe_row_norms(data[0]))))
        scales, solver_budget = self._scale_plan(targets, n_users, columns)
        if scales is not None:
            data_norm = float(np.hypot(1.0, self._intercept_column()))  # unit scale: features of norm <= 1
        else:
            data_norm = float(resolved)
        declared = scales is None
        centred_magnitudes = isinstance(columns, MagnitudePlan) and columns.centred
        centred = isinstance(columns, CenteringPlan) or centred_magnitudes

        def build(budget):
            plan = choose_plan(
                self.solver,
                lambda name: self._plan_solver(name, n_users, n_coef, n_problems, budget, data_norm, declared,
                                               centred, declared_norm=None if scales is not None else float(resolved)),
                self.noise, self.delta,
                prefer=self._prefer(n_users, n_coef, n_problems, budget, magnitudes=centred_magnitudes),
            )
            return replace(plan, scales=scales, columns=columns)

        # at delta > 0 the solver's share is raised until the whole fit certifies exactly epsilon
        return self._fill_budget(build, scales, solver_budget, n_problems, columns)

    def _scale_units(self, released):
        return released["data_norm"], 1.0, 0.0

    def _rescale_inputs(self, inputs, released):
        """The template's row map on ``(X, targets, groups)``; the user index is unchanged by it."""
        X_, targets, groups_, users = inputs.data
        scaled = super()._rescale_inputs(replace(inputs, data=(X_, targets, groups_)), released)
        return replace(scaled, data=(*scaled.data, users))

    def _store_scales(self, plan, released):
        """The unit-scale settings in the data's units: ``w = w' / c``, so ``alpha = alpha' c^2``."""
        super()._store_scales(plan, released)
        c = released["data_norm"]
        self.data_norm_ = c
        self.row_bound_ = self.row_bound_ * c  # rows (x, c intercept_scaling) of norm <= c sqrt(1 + is^2)
        self.alpha_ = self.alpha_ * c * c
        for entry in self.fit_info_:
            entry.update(data_norm=c)

    # -- the template's hooks -------------------------------------------------------------------
    def _validate_fit_inputs(self, X, y, groups=None):
        """Step 1: rows, labels, user ids; the number of users is public under replace-one-user."""
        if is_cluster_input(X, y) or is_cluster_input(groups):
            raise TypeError(
                "UserLevelDPLogistic cannot fit rows held by a Dask cluster: its privacy unit is a user, so "
                "every user's rows must be gathered and selected together, which a row-chunked dask "
                "collection does not provide. Compute the collection (X.compute()) or group the rows by "
                "user first. Nothing was spent."
            )
        check_no_missing(y)  # pd.NA of a nullable column, by name (scikit-learn's check says NaN, or crashes)
        X_, y_ = self._validate_Xy(X, y, y_numeric=False)
        check_class_labels(y_)
        groups_ = check_groups(groups, X_.shape[0], "UserLevelDPLogistic.fit")
        classes = self._resolve_classes(y_)
        targets = self._ovr_targets(y_, classes)
        users = index_users(groups_)  # the one sort of the rows by user, reused by _draw_problems
        n_users = users.n_users
        n_coef = X_.shape[1] + (1 if self.fit_intercept else 0)
        return FitInputs(n_users, n_coef, len(targets), (X_, targets, groups_, users),
                         public={"classes": classes, "n_users": n_users})

    def _draw_problems(self, inputs, plan, rng):
        """The users' kept rows (item selection from its own state), one problem per target."""
        X_, targets, groups_, users = inputs.data
        states = spawn_random_states(rng, len(targets) + 1)
        data = make_user_data(
            X_, targets[0], groups_, max_items=self.max_items_per_user, data_norm=plan.attributes["row_bound_"],
            intercept_scaling=plan.intercept_scaling, item_selection=self.item_selection, random_state=states[-1],
            users=users,
        )
        # one-vs-rest problems share the users' kept rows
        inner_jobs = self.n_jobs if len(targets) == 1 else 1
        return [(Problem(data.with_labels(t[data.source_rows]), plan.loss, plan.radius, inner_jobs), s)
                for t, s in zip(targets, states[:-1])]

    def _store_fit(self, inputs, plan, fits):
        super()._store_fit(inputs, plan, fits)
        self.n_users_ = inputs.public["n_users"]
        self.n_bottom_ = [f.outputs.get("n_bottom", 0) for f in fits]

    def _plan_warnings(self, inputs, plan):
        """Too few users for the noise (public facts only: users, d, epsilon, delta), visible as the regressors'
        constant release is; issued before any row is read (see the template)."""
        n_users, d = inputs.public["n_users"], self.n_features_in_
        r = users_per_noise(n_users, d + 1, self.epsilon, self.delta)
        if r >= FEW_USERS_PER_NOISE:
            return []
        return [
            f"{type(self).__name__}: {n_users} users are too few for epsilon={self.epsilon:g}, "
            f"delta={self.delta:g} with {d} features (users per unit of noise "
            f"{r:.2g} < {FEW_USERS_PER_NOISE:g}): the noise outweighs the users' signal and the model is close "
            "to a constant. More users or a larger epsilon help."
        ]

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
        return self._fit_template(X, y, groups)

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

