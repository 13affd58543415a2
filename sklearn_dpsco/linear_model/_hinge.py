"""DPHingeClassifier: private linear SVM (hinge loss)."""

import numbers

import numpy as np
from sklearn.base import ClassifierMixin

from .._compat import Interval, StrOptions, _fit_context
from .._rng import check_random_state
from .._solvers import (
    PrivateFit,
    ald_growth_schedule,
    ald_schedule,
    output_perturbation_plan,
    run_growth_epochs,
    run_output_perturbation,
    run_phases,
)
from .._solvers._glm_reference import get_loss
from ._base import DPClassifierMixin, DPLinearModelMixin, FitPlan

__all__ = ["DPHingeClassifier"]

_HINGE = get_loss("hinge")


class DPHingeClassifier(DPClassifierMixin, ClassifierMixin, DPLinearModelMixin):
    """Differentially private linear SVM.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=0.0
    solver : {"auto", "output_perturbation", "ald_localization", "ald_growth"}, default="auto"
    clip : float, default=1.0
        Lipschitz level C of the hinge extension (per-row threshold C/||x||).
    alpha : float, default=0.01
        Regularisation strength of output perturbation.
    radius : float, default=10.0
        Radius of the public domain ball of the localization solvers.
    kappa_lower : float, default=2.0
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
    classes : array-like, default=None
    accountant : BudgetAccountant, default=None
    random_state : int, Generator or None, default=None
    n_jobs : int, default=None
    noise : {"secure", "float"}, default="secure"
    verbose : int, default=0
    """

    _parameter_constraints = {
        **DPLinearModelMixin._parameter_constraints,
        "solver": [StrOptions({"auto", "output_perturbation", "ald_localization", "ald_growth"})],
        "clip": [Interval(numbers.Real, 0, None, closed="neither")],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "radius": [Interval(numbers.Real, 0, None, closed="neither")],
        "kappa_lower": [Interval(numbers.Real, 1, None, closed="neither")],
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        solver="auto",
        clip=1.0,
        alpha=0.01,
        radius=10.0,
        kappa_lower=2.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        classes=None,
        accountant=None,
        random_state=None,
        n_jobs=None,
        noise="secure",
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.clip = clip
        self.alpha = alpha
        self.radius = radius
        self.kappa_lower = kappa_lower
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.noise = noise
        self.verbose = verbose

    def _choose_solver(self, n_samples, n_features):
        return "output_perturbation" if self.solver == "auto" else self.solver

    def _plan(self, n_samples, n_features, n_problems):
        solver = self._choose_solver(n_samples, n_features)
        eps, delta = self._split_budget(n_problems)
        common = dict(clip=self.clip, epsilon=eps, delta=delta, noise=self.noise)
        if solver == "output_perturbation":
            schedule = output_perturbation_plan(n_samples, n_features, lam=self.alpha, **common)
        elif solver == "ald_localization":
            schedule = ald_schedule(n_samples, n_features, radius=self.radius, **common)
        else:
            schedule = ald_growth_schedule(
                n_samples, n_features, radius=self.radius, kappa_lower=self.kappa_lower, **common
            )
        return FitPlan(solver, schedule.event, schedule=schedule)

    def _solve_one(self, data, plan, random_state):
        rng = check_random_state(random_state)
        schedule = plan.params["schedule"]
        center = np.zeros(data.n_features)
        if plan.solver == "output_perturbation":
            coef = run_output_perturbation(data, _HINGE, schedule, rng)
        elif plan.solver == "ald_localization":
            coef = run_phases(data, _HINGE, schedule, center=center, domain=[(center, self.radius)], rng=rng)
        else:
            coef = run_growth_epochs(data, _HINGE, schedule, center=center, radius=self.radius, rng=rng)
        return PrivateFit(coef=coef, event=schedule.event, info={})

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private linear SVM."""
        return self._fit_classifier(X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
