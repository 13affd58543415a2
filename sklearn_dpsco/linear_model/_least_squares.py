"""DPLinearRegressor: private least squares (doc/privacy/linear_regression.rst)."""

import math
import numbers

import numpy as np
from sklearn.base import RegressorMixin

from .._compat import Interval, StrOptions, _fit_context
from .._mechanisms import DEFAULT_NOISE
from .._rng import check_random_state, noise_source
from .._solvers import (
    ArraySource,
    PrivateFit,
    SGDSettings,
    adaptive_interpolation_schedule,
    adassp_plan,
    as_row_source,
    get_loss,
    interpolation_sgd_schedule,
    is_dask_array,
    lowy_clip,
    lowy_lam1,
    phased_erm_schedule,
    phased_sgd_schedule,
    pop_localize_plan,
    rho_for_budget,
    run_adaptive_interpolation,
    run_adassp,
    run_interpolation_sgd,
    run_phased_sgd,
    run_phases,
    run_pnsgd,
    run_pop_localize,
    snowball_schedule,
)
from ._base import DPLinearModelMixin, DPRegressorMixin, FitPlan
from ._least_squares_rules import table_solver

__all__ = ["DPLinearRegressor"]

_SQUARED = get_loss("squared")

#: Solvers that read the rows once, in order (they can fit from chunks).
ONE_PASS_SOLVERS = ("snowball", "phased_sgd", "adassp", "interpolation")
#: Solvers that need the public row bound R (smoothness or sensitivity).
ROW_BOUND_SOLVERS = ("snowball", "phased_sgd", "adassp", "interpolation")
#: Solvers whose privacy rests on the Lipschitz extension alone (any rows, any labels).
EXTENSION_SOLVERS = ("phased_erm", "lowy", "interpolation_ald")
_ALL_SOLVERS = ("auto", "adassp", "snowball", "phased_sgd", "phased_erm", "lowy", "interpolation",
                "interpolation_ald")

#: AdaSSP's intercept column, as a fraction of the row bound: the column adds
#: s^2 to every sensitivity (R^2 + s^2), while n s^2 on the diagonal keeps
#: the intercept well determined; 1/4 costs 6% (benchmarks/results/linear.md).
_ADASSP_INTERCEPT_FRACTION = 0.25
#: Absolute constant of Lowy's base regularization lam_1 (utility only).
_LOWY_LAM1_CONSTANT = 10.0
#: Lowy phases whose minimizer moves by less than this fraction of the radius are dropped.
_MIN_MOVE_FRACTION = 1e-9


def _auto_solver(n_samples, n_features, epsilon, delta, row_bound, noise=DEFAULT_NOISE):
    """The ``solver="auto"`` table (public facts only; the thresholds live in _least_squares_rules.py).

    ``m = n epsilon / d`` (rows per unit of privacy per coefficient, d with the intercept column):

    ===============================================  ============  =======================================
    condition                                        solver        why
    ===============================================  ============  =======================================
    ``delta > 0``, ``noise="float"``, a row bound,   snowball      best R^2 whenever it runs (n >= 2000),
    Snowball fits in n                                             linear time (float noise only)
    a row bound, ``d <= 1000`` and ``m < 500``       adassp        never below R^2 ~ 0 where the others go
    (pure DP) or ``m < 5000`` (``delta > 0``)                      negative (benchmarks/results/rules.md)
    ``m < 500``                                      lowy          best extension solver at moderate m
    otherwise                                        phased_erm    best pure-DP R^2 for large m
    ===============================================  ============  =======================================

    Without a row bound only the extension solvers qualify (lowy, phased_erm). Snowball adds
    floating-point Gaussian noise at every step (no secure sampler), so under the default
    ``noise="secure"`` it is never chosen.
    """
    if row_bound is not None and delta > 0 and noise == "float" and _snowball_fits(
            n_samples, n_features, epsilon, delta, row_bound):
        return "snowball"
    return table_solver(n_samples, n_features, epsilon, delta, row_bound)


def _snowball_fits(n, d, epsilon, delta, row_bound):
    """True when Snowball-SGD has a schedule on n rows at this budget (public: n, d, epsilon, delta)."""
    try:
        settings = SGDSettings(clip=1.0, row_bound=row_bound, intercept_scaling=row_bound, radius=1.0)
        snowball_schedule(n, d, rho=rho_for_budget(epsilon, delta), settings=settings)
    except ValueError:
        return False
    return True


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
    row_bound : float or None, default=1.0
        Public bound R on the l2 norm of a row; rows of larger norm are
        scaled down to it (a per-row map). Needed by "adassp", "snowball",
        "phased_sgd" and "interpolation" (their privacy rests on it);
        ``None`` declares no bound and restricts the choice to the
        extension-only solvers "phased_erm", "lowy", "interpolation_ald".
    label_bound : float, default=1.0
        Public bound B on ``|y|``; AdaSSP clips labels to [-B, B]. The other
        solvers need no label bound.
    radius : float, default=10.0
        Radius of the public parameter domain (a ball around 0 containing
        the coefficients, the intercept column included).
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
    random_state : int, Generator or None, default=None
        None draws noise from the OS CSPRNG (use for releases); an int
        gives reproducible, seeded noise (experiments and tests only).
    n_jobs : int, default=None
        Reserved for solvers with independent sub-problems; results never
        depend on it.
    noise : {"secure", "float"}, default="secure"
        Noise sampling path (doc/privacy/secure_noise.rst): ``"secure"`` exact
        integer noise on a grid (Gaussians calibrated through zCDP), ``"float"``
        the textbook floating-point samplers. ``"snowball"`` (and
        ``"interpolation"`` with ``delta > 0``, which runs Snowball inside) add
        floating-point Gaussian noise at every step and have no secure path:
        they are refused under ``"secure"`` and ``solver="auto"`` skips them.
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
        Public schedule facts only (phase counts, steps, batch sizes).
    noise_source_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    Unit of privacy: one row (``privacy_unit == "row"``; replace-one neighbours; the number of rows n
    is public). Solvers and their privacy arguments (doc/privacy/):

    * ``"adassp"`` — sufficient-statistics perturbation with adaptive ridge
      (Wang 2018): rows clipped to R, labels to B; pure or approximate DP
      (adassp.rst).
    * ``"snowball"`` — one pass of projected noisy SGD with growing batches
      (Feldman, Koren, Talwar 2020, Thms 3.1/3.5/3.6); approximate DP only,
      through its Renyi-DP bound; linear time; can fit from chunks
      (:meth:`fit_stream`). Rows clipped to R make every step map
      non-expansive (step <= 2/(R^2 + s^2)) (snowball_sgd.rst).
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
    row bound is declared and its schedule fits in n rows; else AdaSSP when ``m < 500``
    (pure DP) or ``m < 5000`` (``delta > 0``), with a row bound declared and ``d <= 1000``;
    else Lowy when ``m < 500``; else Phased-ERM (benchmarks/results/rules.md,
    doc/privacy/linear_regression.rst).

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
        "solver": [StrOptions(set(_ALL_SOLVERS))],
        "clip": [Interval(numbers.Real, 0, None, closed="neither")],
        "row_bound": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "label_bound": [Interval(numbers.Real, 0, None, closed="neither")],
        "radius": [Interval(numbers.Real, 0, None, closed="neither")],
        "steps": [StrOptions({"jnn", "constant"})],
        "smoothness": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "growth": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "moment": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "moment_order": [Interval(numbers.Real, 2, None, closed="left")],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        solver="auto",
        clip=0.1,
        row_bound=1.0,
        label_bound=1.0,
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
    def _check_bounds(self, solver):
        names = ("clip", "radius", "label_bound", "moment_order", "smoothness", "growth", "moment", "row_bound")
        for name in names:
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}.")
        if solver in ROW_BOUND_SOLVERS and self.row_bound is None:
            raise ValueError(
                f"solver={solver!r} needs a public row_bound (rows are scaled down to it; its privacy "
                "argument rests on it). Declare row_bound, or use one of "
                f"{', '.join(EXTENSION_SOLVERS)} (privacy from the Lipschitz extension alone)."
            )

    def _scaling(self, solver):
        """The intercept column's value s for ``solver`` (0 without intercept)."""
        if not self.fit_intercept:
            return 0.0
        if self.intercept_scaling is not None:
            return float(self.intercept_scaling)
        if solver == "adassp" and self.row_bound is not None:
            return _ADASSP_INTERCEPT_FRACTION * self.row_bound
        if solver in ("snowball", "phased_sgd", "interpolation") and self.row_bound is not None:
            return float(self.row_bound)
        return 1.0

    def _choose_solver(self, n_samples, n_coef, streaming=False):
        if self.solver != "auto":
            return self.solver
        if streaming:
            return "snowball" if self.delta > 0 and self.noise == "float" else "adassp"
        return _auto_solver(n_samples, n_coef, self.epsilon, self.delta, self.row_bound, self.noise)

    def _plan(self, n_samples, n_features, n_problems, streaming=False):
        # n_features counts the intercept column (the base adds it when fit_intercept)
        solver = self._choose_solver(n_samples, n_features, streaming)
        self._check_bounds(solver)
        if streaming and solver not in ONE_PASS_SOLVERS:
            raise ValueError(
                f"solver={solver!r} cannot fit from chunks; one-pass solvers: {', '.join(ONE_PASS_SOLVERS)}."
            )
        s = self._scaling(solver)
        eps, delta = self.epsilon, self.delta
        if solver == "adassp":
            schedule = adassp_plan(
                n_samples, n_features, epsilon=eps, delta=delta, row_bound=self.row_bound,
                label_bound=self.label_bound, intercept_scaling=s, noise=self.noise,
            )
        elif solver in ("snowball", "phased_sgd"):
            settings = SGDSettings(clip=self.clip, row_bound=self.row_bound, intercept_scaling=s, radius=self.radius)
            if solver == "snowball":
                self._check_float_noise(solver)
                schedule = snowball_schedule(
                    n_samples, n_features, rho=rho_for_budget(eps, delta), settings=settings, steps=self.steps
                )
            else:
                schedule = phased_sgd_schedule(
                    n_samples, n_features, epsilon=eps, delta=delta, settings=settings, noise=self.noise
                )
        elif solver == "interpolation":
            settings = SGDSettings(clip=self.clip, row_bound=self.row_bound, intercept_scaling=s, radius=self.radius)
            if delta > 0:
                self._check_float_noise(solver)
            schedule = interpolation_sgd_schedule(
                n_samples, n_features, epsilon=eps, delta=delta, settings=settings, smoothness=self.smoothness,
                steps=self.steps, noise=self.noise,
            )
        elif solver == "lowy":
            schedule = self._lowy_plan(n_samples, n_features)
        elif solver == "interpolation_ald":
            r2 = (1.0 if self.row_bound is None else self.row_bound) ** 2
            schedule = adaptive_interpolation_schedule(
                n_samples, n_features, smoothness=self.smoothness or r2 + s**2,
                growth=self.growth or r2 / n_features, lipschitz=self.clip, radius=self.radius, epsilon=eps,
                delta=delta, noise=self.noise,
            )
        else:
            schedule = phased_erm_schedule(
                n_samples, n_features, clip=self.clip, radius=self.radius, epsilon=eps, delta=delta,
                noise=self.noise,
            )
        return FitPlan(solver, schedule.event, schedule=schedule, intercept_scaling=s)

    def _lowy_plan(self, n, d):
        """Pop-Localize over Double-OutputPert (Lowy Algorithms 1, 4), J = 1 repeat per phase."""
        k = self.moment_order
        if self.moment is None:
            clip, moment = self.clip, self.clip  # G_k := C: the extension level the user chose
        else:
            # Lowy Prop 3.2: C = G_k (m eps / d)^(1/k) with m the first phase's block size n/2
            clip, moment = lowy_clip(self.moment, k, max(1, n // 2), self.epsilon, d), self.moment
        # lowy_lam1 is Lowy's rule "up to an absolute constant" (doc/algorithms.rst, L-Alg 1): the constant 1
        # over-noises phase 1 (its release scale ~ 2C/(lam1 m)); 10 is benchmarks/results/linear.md's choice
        lam1 = _LOWY_LAM1_CONSTANT * lowy_lam1(n, d, self.epsilon, radius=self.radius, moment=moment, k=k)
        # Lowy: T = ceil(log2 n) phases with lam_t = 32^(t-1) lam1. Drop the phases whose exact-minimizer
        # sensitivity 2C/(lam_t m_t) is below 1e-9 of the domain radius: float64 cannot certify them
        # (the same public rule as the localization module; fewer disjoint releases, same argument).
        T = 0
        while T < max(1, math.ceil(math.log2(max(n, 2)))) and n // 2 ** (T + 1) >= 1:
            if 2.0 * clip / (lam1 * 32.0**T * (n // 2 ** (T + 1))) < _MIN_MOVE_FRACTION * self.radius:
                break
            T += 1
        return pop_localize_plan(n, d, clip=clip, epsilon=self.epsilon, delta=self.delta, lam1=lam1,
                                 phases=max(1, T), noise=self.noise)

    def _check_float_noise(self, solver):
        if self.noise != "float":
            raise ValueError(f"solver={solver!r} adds Gaussian noise at every step; it supports noise='float' only.")

    # -- running the plan -----------------------------------------------------------------
    def _run(self, solver, source, schedule, rng):
        if solver == "adassp":
            return run_adassp(source, schedule, rng)[0]
        if solver == "snowball":
            return run_pnsgd(source, schedule, rng)
        if solver == "interpolation":
            return run_interpolation_sgd(source, schedule, rng)
        return run_phased_sgd(source, schedule, rng)

    def _solve_one(self, data, plan, random_state):
        rng = check_random_state(random_state)
        schedule, s = plan.params["schedule"], plan.params["intercept_scaling"]
        center = np.zeros(data.n_features)
        if plan.solver == "phased_erm":
            coef = run_phases(data, _SQUARED, schedule, center=center, domain=[(center, self.radius)], rng=rng)
        elif plan.solver == "lowy":
            coef = run_pop_localize(data, _SQUARED, schedule, center=center, rng=rng, domain=(center, self.radius),
                                    n_jobs=self.n_jobs)
        elif plan.solver == "interpolation_ald":
            coef = run_adaptive_interpolation(data, _SQUARED, schedule, center=center, rng=rng)
        else:
            # the permutation is public randomness: privacy holds for every order (doc/privacy/)
            order = rng.permutation(data.n_samples) if plan.solver != "adassp" else None
            source = ArraySource(data.X, data.y, data.sample_weight, order=order, validate=False)
            coef = self._run(plan.solver, source, schedule, rng)
        return PrivateFit(coef=self._unscale(coef, s), event=schedule.event, info=dict(schedule.info))

    def _unscale(self, w, s):
        w = np.array(w, dtype=float)
        if self.fit_intercept:
            w[-1] *= s  # the last entry becomes the intercept itself
        return w

    def _glm_data(self, X, y, sample_weight):
        from .._solvers import GLMData

        return GLMData(X, y, sample_weight, self._plan_scaling)

    def _split_coef(self, w):
        if self.fit_intercept:
            return w[:-1], w[-1]
        return w, 0.0

    # -- fit ---------------------------------------------------------------------------------
    def _fit_problems(self, X, targets, sample_weight):
        n, d = X.shape
        solver = self._choose_solver(n, d + (1 if self.fit_intercept else 0))
        self._plan_scaling = self._scaling(solver)
        try:
            return super()._fit_problems(X, targets, sample_weight)
        finally:
            del self._plan_scaling

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Weights in [0, 1] (a weight above 1 would let one row count more
            than the guarantee allows).

        Returns
        -------
        self
        """
        return self._fit_regressor(X, y, sample_weight)

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
        Rows are used in the order given (shuffle them beforehand if they
        are sorted: utility, not privacy, assumes a random order). Only
        one-pass solvers are allowed (``"snowball"``, ``"phased_sgd"``,
        ``"adassp"``); ``solver="auto"`` uses Snowball-SGD for
        approximate DP with ``noise="float"`` and AdaSSP otherwise. Memory stays bounded by a
        block (plus d x d for AdaSSP).
        """
        self._validate_params()
        if hasattr(X, "to_numpy") and not is_dask_array(X):
            X = X.to_numpy()
        if y is not None and hasattr(y, "to_numpy") and not is_dask_array(y):
            y = y.to_numpy()
        source = as_row_source(X, y, sample_weight, n_samples=n_samples, block_rows=block_rows)
        if hasattr(source, "peek_n_features"):
            source.peek_n_features()

        def body():
            n, p = source.n_samples, source.n_features
            d = p + (1 if self.fit_intercept else 0)
            plan = self._plan(n, d, 1, streaming=True)
            accountant = self._get_accountant()  # the template's resolution (blocks, allowances, bindings)
            accountant.check(plan.event)
            rng = check_random_state(self.random_state)
            coef = self._unscale(self._run(plan.solver, source, plan.params["schedule"], rng),
                                 plan.params["intercept_scaling"])
            accountant.spend(plan.event, label=type(self).__name__)
            self.coef_, intercept = self._split_coef(coef)
            self.intercept_ = float(intercept)
            self.n_features_in_ = p
            self.__dict__.pop("feature_names_in_", None)
            self.fit_info_ = dict(plan.params["schedule"].info)
            self._store_privacy(plan, plan.event, noise_source(rng))

        return self._run_fit(body)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # a private fit on a handful of rows is noise-dominated by design
        tags.regressor_tags.poor_score = True
        return tags
