"""Shared machinery of the private linear models.

The fit template (doc/design.rst, section 2, "data flows one way"):

1. validate public parameters (names the parameter on error);
2. validate the data (finite, shapes, classes, weights) — nothing spent yet;
3. plan: from public facts only (n, d, number of classes, parameters) choose
   the solver and compute the privacy event the fit will consume;
4. ``accountant.check(event)`` — refuse before any private computation;
5. run the private building blocks (one-vs-rest problems through joblib with
   random states drawn up front, so results never depend on ``n_jobs``);
6. ``accountant.spend(event)`` exactly once;
7. only then store the fitted attributes.

Any exception in steps 2-6 leaves the estimator exactly as it was before
``fit`` (a refit that fails does not half-overwrite a fitted model) and
spends nothing.
"""

import numbers
from abc import abstractmethod

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator

from .._compat import Interval, StrOptions, validate_data
from .._param_checks import check_delta, check_epsilon
from .._rng import check_random_state, noise_source, spawn_random_states
from ..accounting import BudgetAccountant, ComposedEvent, epsilon_delta
from ..accounting._resolve import AccountantMixin
from ..accounting._shares import split_budget, split_kind
from .._solvers import GLMData

__all__ = ["DPClassifierMixin", "DPLinearModelMixin", "DPRegressorMixin", "FitPlan"]


class DPLinearModelMixin(AccountantMixin, BaseEstimator):
    """Base of the private linear models: parameters, validation, the fit template.

    Subclasses define ``_plan(n, d, n_problems)`` (returns a plan object with
    the chosen solver name and the per-problem budget), ``_solve_one(data,
    plan, random_state)`` (returns a :class:`~sklearn_dpsco._solvers.PrivateFit`)
    and the prediction methods.

    ``privacy_unit`` (read-only) is the neighbouring relation of the
    guarantee: ``"row"`` (replace one row) here; a user-level subclass sets
    the class constant ``_PRIVACY_UNIT = "user"``. It is the one source of
    truth the ledger entry, pipelines and searches read
    (doc/privacy/accounting.rst, "Privacy units").
    """

    #: the neighbouring relation of every guarantee of the class (read through ``privacy_unit``)
    _PRIVACY_UNIT = "row"

    _parameter_constraints = {
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither")],
        "accountant": [BudgetAccountant, None],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "noise": [StrOptions({"secure", "float"})],
        "verbose": ["verbose"],
    }

    @property
    def privacy_unit(self):
        """``"row"`` (replace one training row) or ``"user"`` (replace one whole user)."""
        return self._PRIVACY_UNIT

    # -- hooks --------------------------------------------------------------------------
    @abstractmethod
    def _plan(self, n_samples, n_features, n_problems):
        """Choose the solver and budgets from public facts; return a plan."""

    @abstractmethod
    def _solve_one(self, data, plan, random_state):
        """Fit one (binary or regression) problem privately; return a PrivateFit."""

    def _split_budget(self, n_problems):
        """(epsilon, delta) for each of ``n_problems`` one-vs-rest problems (public).

        The rule matches the noise path: pure DP splits epsilon; the float
        Gaussian splits the Gaussian-DP mu; the secure (discrete) Gaussian,
        calibrated through zCDP, splits rho.
        """
        return split_budget(self.epsilon, self.delta, n_problems, split_kind(self.delta, self.noise))

    # -- checks ---------------------------------------------------------------------------
    def _check_privacy_params(self):
        # sklearn's Interval lets inf through; the privacy checks do not.
        check_epsilon(self.epsilon)
        check_delta(self.delta)

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
        if sw.ndim != 1 or sw.shape[0] != n:
            raise ValueError(f"sample_weight must have shape ({n},), got {sw.shape}.")
        if not np.all(np.isfinite(sw)):
            raise ValueError("sample_weight must be finite.")
        # why: weights in [0, 1] scale each C-Lipschitz loss term to at most C,
        # keeping the sensitivity argument; larger weights would break it.
        if np.any(sw < 0) or np.any(sw > 1):
            raise ValueError(
                "sample_weight must lie in [0, 1]: a weight above 1 would let one row move the model "
                "more than the privacy guarantee allows."
            )
        if not np.any(sw > 0):
            raise ValueError("sample_weight must not be all zero. Nothing was spent.")
        return sw

    def _glm_data(self, X, y, sample_weight):
        return GLMData(X, y, sample_weight, self.intercept_scaling if self.fit_intercept else 0.0)

    # -- the template ---------------------------------------------------------------------------
    def _fit_problems(self, X, targets, sample_weight):
        """Run the template on ``targets`` (a list of y vectors: OvR problems or one regression)."""
        n, d = X.shape
        d_coef = d + (1 if self.fit_intercept else 0)
        plan = self._plan(n, d_coef, len(targets))
        event = plan.event if len(targets) == 1 else ComposedEvent(tuple([plan.event] * len(targets)))
        self._check_within_budget(event)
        # the parameter, else the budget block in force, else the ledger bound
        # when this estimator was sent to a worker, else the session default
        accountant = self._get_accountant()
        accountant.check(event, privacy_unit=self.privacy_unit)

        rng = check_random_state(self.random_state)
        states = spawn_random_states(rng, len(targets))
        jobs = (delayed(self._solve_one)(self._glm_data(X, t, sample_weight), plan, s) for t, s in zip(targets, states))
        fits = Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs)
        for fit in fits:
            if fit.event != plan.event:  # the plan promised this event; never spend less than ran
                raise AssertionError(f"solver consumed {fit.event}, planned {plan.event}")

        accountant.spend(event, label=type(self).__name__, privacy_unit=self.privacy_unit)
        return plan, event, fits, noise_source(rng)

    def _check_within_budget(self, event):
        """Refuse (as an internal error) a plan whose event exceeds the user's (epsilon, delta)."""
        eps, delta = epsilon_delta(event, delta=self.delta if self.delta > 0 else None)
        if eps > self.epsilon * (1 + 1e-9) + 1e-12 or delta > self.delta * (1 + 1e-9):
            raise RuntimeError(
                f"internal error: {type(self).__name__} planned a spend of (epsilon={eps:.6g}, "
                f"delta={delta:.3g}) above its budget (epsilon={self.epsilon}, delta={self.delta}); "
                "nothing was run or spent. Please report this."
            )

    def _store_privacy(self, plan, event, source):
        self.solver_ = plan.solver
        self.privacy_event_ = event
        self.epsilon_spent_, self.delta_spent_ = epsilon_delta(event, delta=self.delta if self.delta > 0 else None)
        self.noise_source_ = source

    def _split_coef(self, w):
        if self.fit_intercept:
            return w[:-1], w[-1] * self.intercept_scaling
        return w, 0.0

    def _run_fit(self, fit_body):
        """Call ``fit_body()``; on any exception restore the estimator's previous state."""
        self._check_privacy_params()
        saved = dict(self.__dict__)
        try:
            fit_body()
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        return self

    def _decision(self, X):
        X = self._validate_X(X, reset=False)
        scores = X @ self.coef_.T
        if sp.issparse(scores):
            scores = scores.toarray()
        return np.asarray(scores) + self.intercept_


class FitPlan:
    """What a fit will run, decided from public facts before touching data.

    Attributes
    ----------
    solver : str
        The solver name (``solver_`` after fit).
    event : PrivacyEvent
        The privacy event ONE problem consumes (a one-vs-rest fit composes
        one per class).
    params : dict
        Public per-problem settings for the solver (budget share, clip level,
        regularisation, radii...).
    """

    def __init__(self, solver, event, **params):
        self.solver = solver
        self.event = event
        self.params = params

    def __repr__(self):
        return f"FitPlan(solver={self.solver!r}, event={self.event!r}, params={self.params!r})"


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
            if np.unique(classes).size != classes.size:
                raise ValueError("classes must not contain duplicates.")
            unknown = np.setdiff1d(np.unique(y_), classes)
            if unknown.size:
                raise ValueError(f"y contains labels not listed in classes: {unknown[:5]!r}.")
            classes = np.sort(classes)
        if classes.size < 2:
            raise ValueError(
                "The training data must contain samples of at least 2 classes; "
                f"got {classes.size} class. Nothing was spent."
            )
        return classes

    def _fit_classifier(self, X, y, sample_weight):
        from sklearn.utils.multiclass import check_classification_targets

        def body():
            X_, y_ = self._validate_Xy(X, y, y_numeric=False)
            check_classification_targets(y_)
            classes = self._resolve_classes(y_)
            sw = self._check_sample_weight(sample_weight, X_.shape[0])
            if classes.size == 2:
                targets = [np.where(y_ == classes[1], 1.0, -1.0)]
            else:
                targets = [np.where(y_ == c, 1.0, -1.0) for c in classes]
            plan, event, fits, source = self._fit_problems(X_, targets, sw)
            parts = [self._split_coef(f.coef) for f in fits]
            # -- success: store everything at once ------------------------------------
            self.classes_ = classes
            self.coef_ = np.array([p[0] for p in parts])
            self.intercept_ = np.array([p[1] for p in parts], dtype=float)
            self.fit_info_ = [f.info for f in fits]
            self._store_privacy(plan, event, source)

        return self._run_fit(body)

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

    def _fit_regressor(self, X, y, sample_weight):
        def body():
            X_, y_ = self._validate_Xy(X, y, y_numeric=True)
            sw = self._check_sample_weight(sample_weight, X_.shape[0])
            plan, event, fits, source = self._fit_problems(X_, [y_], sw)
            coef, intercept = self._split_coef(fits[0].coef)
            self.coef_ = coef
            self.intercept_ = float(intercept)
            self.fit_info_ = fits[0].info
            self._store_privacy(plan, event, source)

        return self._run_fit(body)

    def predict(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_
