"""The one fit template (sklearn_dpsco/linear_model/_base.py, doc/design.rst section 2).

Every test here fails if a step of the template is skipped, reordered or
bypassed: hooks are enforced by ABCMeta, the planned event is verified
before the spend, the within-budget check runs before any row is read
(also for ``fit_stream``), and every fit spends exactly once, after the run.
"""

import dataclasses
from abc import ABCMeta

import numpy as np
import pytest
from sklearn.base import RegressorMixin, clone

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from sklearn_dpsco._solvers import ArraySource, Plan, PrivateFit, Problem, SchedulePlan, get_solver, solver_names
from sklearn_dpsco.accounting import BudgetAccountant, BudgetExceededError, ComposedEvent
from sklearn_dpsco.linear_model._base import DPLinearModelMixin, DPRegressorMixin, FitInputs

HOOKS = ("_validate_fit_inputs", "_plan", "_store_fit")


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    y_reg = np.clip(X @ np.linspace(1.0, -0.5, d) + 0.1 * rng.standard_normal(n), -1, 1)
    y_cls = (X[:, 0] + 0.2 * rng.standard_normal(n) > 0).astype(int)
    return X, y_reg, y_cls


def _cases():
    """(estimator, fit args): one per estimator, binary and one-vs-rest classifiers."""
    X, y_reg, y_cls = _data()
    Xu, _, yu = _data(n=3000, seed=1)
    groups = np.repeat(np.arange(1000), 3)
    three = np.digitize(X[:, 1], [-0.1, 0.1])
    return [
        (DPHingeClassifier(random_state=0), (X, y_cls)),
        (DPHingeClassifier(solver="output_perturbation", random_state=0), (X, three)),
        (DPLinearRegressor(delta=1e-6, random_state=0), (X, y_reg)),
        (DPGrowthAdaptiveRegressor(random_state=0), (X, y_reg)),
        (UserLevelDPLogistic(solver="user_clip", random_state=0), (Xu, yu, groups)),
    ]


CASES = _cases()
IDS = ["hinge", "hinge-ovr", "linear", "growth", "user"]


# ------------------------------------------------------------------ hooks are enforced
def _toy_class(missing=None):
    """A regressor with every hook of the template except ``missing``."""

    def _validate_fit_inputs(self, X, y, sample_weight=None):
        return FitInputs(len(y), 1, 1, None)

    def _plan(self, n_samples, n_coef, n_problems):
        return None

    def _store_fit(self, inputs, plan, fits):
        pass

    body = {"_validate_fit_inputs": _validate_fit_inputs, "_plan": _plan, "_store_fit": _store_fit,
            "__init__": lambda self: None}
    body.pop(missing, None)
    # straight on the base: the regressor mixin would supply validation and storage
    return type("Toy", (RegressorMixin, DPLinearModelMixin), body)


def test_the_base_is_built_by_abcmeta_and_the_estimators_are_concrete():
    assert isinstance(DPLinearModelMixin, ABCMeta)
    assert set(HOOKS) <= DPLinearModelMixin.__abstractmethods__
    for cls in (DPHingeClassifier, DPLinearRegressor, DPGrowthAdaptiveRegressor, UserLevelDPLogistic):
        assert cls.__abstractmethods__ == frozenset()
    _toy_class()()  # every hook present: instantiable


@pytest.mark.parametrize("hook", HOOKS)
def test_a_subclass_missing_a_hook_cannot_be_instantiated(hook):
    with pytest.raises(TypeError, match=hook):
        _toy_class(missing=hook)()


def test_the_regressor_mixin_does_not_supply_a_plan():
    cls = type("NoPlan", (DPRegressorMixin, RegressorMixin, DPLinearModelMixin), {"__init__": lambda self: None})
    with pytest.raises(TypeError, match="_plan"):
        cls()


# ------------------------------------------------------------------ the order of the steps
@pytest.mark.parametrize(("est", "args"), CASES, ids=IDS)
def test_steps_run_in_order_and_spend_exactly_once(est, args, monkeypatch):
    est, calls = clone(est), []

    class Recording(BudgetAccountant):
        def check(self, event, privacy_unit="row"):
            calls.append("check")
            return super().check(event, privacy_unit)

        def spend(self, event, label="", privacy_unit="row"):
            calls.append("spend")
            return super().spend(event, label, privacy_unit)

    def spy(name):
        original = getattr(type(est), name)

        def wrapped(self, *a, **k):
            calls.append(name)
            return original(self, *a, **k)

        return wrapped

    for name in (*HOOKS, "_check_within_budget", "_draw_problems"):
        monkeypatch.setattr(type(est), name, spy(name))
    run = SchedulePlan.run
    monkeypatch.setattr(SchedulePlan, "run", lambda self, p, rng: (calls.append("run"), run(self, p, rng))[1])

    acc = Recording(10.0, 1e-3)
    est.set_params(accountant=acc).fit(*args)
    runs = calls.count("run")
    assert runs == len(est.coef_) if est.coef_.ndim == 2 else runs == 1
    # DPLinearRegressor at delta > 0 with "auto" bounds plans the pure choice first (_pure_choice_plan), public
    plans = ["_plan", "_plan"] if isinstance(est, DPLinearRegressor) and est.delta > 0 else ["_plan"]
    assert calls == ["_validate_fit_inputs", *plans, "_check_within_budget", "check", "_draw_problems",
                     *["run"] * runs, "spend", "_store_fit"]
    assert len(acc.ledger) == 1
    assert acc.ledger[0].event == est.privacy_event_


# ------------------------------------------------------------------ the planned event is verified
@pytest.mark.parametrize(("est", "args"), CASES, ids=IDS)
def test_a_run_whose_event_differs_from_the_plan_raises_and_spends_nothing(est, args, monkeypatch):
    est, run = clone(est), SchedulePlan.run

    def ran_more(self, problem, rng):  # a solver that consumed twice what it planned
        fit = run(self, problem, rng)
        return dataclasses.replace(fit, event=ComposedEvent((fit.event, fit.event)))

    monkeypatch.setattr(SchedulePlan, "run", ran_more)
    acc = BudgetAccountant(10.0, 1e-3)
    with pytest.raises(AssertionError, match="planned"):
        est.set_params(accountant=acc).fit(*args)
    assert acc.ledger == ()
    assert not hasattr(est, "coef_") and not hasattr(est, "privacy_event_")


def test_user_level_planned_event_mismatch_is_caught_and_a_refit_keeps_the_old_model(monkeypatch):
    est, args = clone(CASES[-1][0]), CASES[-1][1]
    acc = BudgetAccountant(10.0, 1e-3)
    est.set_params(accountant=acc).fit(*args)
    before = est.coef_.copy()
    run = SchedulePlan.run
    monkeypatch.setattr(SchedulePlan, "run", lambda self, p, rng: dataclasses.replace(
        run(self, p, rng), event=ComposedEvent((self.event, self.event))))
    with pytest.raises(AssertionError, match="planned"):
        est.fit(*args)
    assert len(acc.ledger) == 1
    np.testing.assert_array_equal(est.coef_, before)


# ------------------------------------------------------------------ fit_stream through the template
class _Overspending(DPLinearRegressor):
    """Test-only: a plan whose event is twice the estimator's budget (a planning bug)."""

    def _plan(self, n_samples, n_features, n_problems, streaming=False):
        plan = super()._plan(n_samples, n_features, n_problems, streaming)
        inner = SchedulePlan(plan.schedule, lambda *a: None)
        inner.event = ComposedEvent((plan.event, plan.event))
        return dataclasses.replace(plan, plan=inner)


@pytest.fixture
def blocks_read(monkeypatch):
    reads = []
    blocks = ArraySource.blocks

    def recording(self):
        reads.append(self)
        yield from blocks(self)

    monkeypatch.setattr(ArraySource, "blocks", recording)
    return reads


def test_fit_stream_over_the_ledger_budget_raises_before_reading_any_row(blocks_read):
    X, y, _ = _data()
    acc = BudgetAccountant(0.5)
    with pytest.raises(BudgetExceededError):
        DPLinearRegressor(epsilon=1.0, solver="adassp", row_bound=1.0, label_bound=1.0, accountant=acc,
                          random_state=0).fit_stream(X, y)
    assert blocks_read == [] and acc.ledger == ()


def test_fit_stream_checks_the_plan_within_its_own_budget(blocks_read):
    X, y, _ = _data()
    acc = BudgetAccountant(10.0)
    est = _Overspending(epsilon=1.0, solver="adassp", row_bound=1.0, label_bound=1.0, accountant=acc, random_state=0)
    with pytest.raises(RuntimeError, match="above its budget"):
        est.fit_stream(X, y)
    assert blocks_read == [] and acc.ledger == ()
    assert not hasattr(est, "coef_")
    with pytest.raises(RuntimeError, match="above its budget"):
        est.fit(X, y)  # the same check guards fit


def test_fit_stream_runs_the_template_and_equals_an_in_order_fit(blocks_read):
    X, y, _ = _data()
    acc = BudgetAccountant(10.0)
    est = DPLinearRegressor(solver="adassp", row_bound=1.0, label_bound=1.0, accountant=acc,
                            random_state=0).fit_stream(X, y, block_rows=100)
    assert len(blocks_read) == 1 and len(acc.ledger) == 1
    assert est.n_features_in_ == X.shape[1] and est.solver_ == "adassp"
    # replay: the one-pass plan run by hand on the rows in order, with the fit's own generator
    plan = est._plan(X.shape[0], X.shape[1] + 1, 1, streaming=True)
    fit = plan.plan.run(Problem(ArraySource(X, y), plan.loss, plan.radius), np.random.default_rng(0))
    np.testing.assert_array_equal(est.coef_, fit.coef[:-1])
    assert est.intercept_ == fit.coef[-1] * plan.intercept_scaling


# ------------------------------------------------------------------ every registered solver is a Plan
def _estimator_for(family, solver):
    if family == "hinge":
        return DPHingeClassifier(solver=solver), (2000, 4, 1)
    if family == "least_squares":
        return DPLinearRegressor(solver=solver, delta=1e-6, noise="float"), (2000, 4, 1)
    if family == "growth":
        extra = {"smoothness": 1.0, "growth": 0.5} if solver == "interpolation" else {}
        return DPGrowthAdaptiveRegressor(solver=solver, **extra), (2000, 1 if solver == "inverse_sensitivity" else 4, 1)
    return UserLevelDPLogistic(solver=solver, epsilon=8.0, noise="float"), (20000, 4, 1)


@pytest.mark.parametrize(("family", "solver"), [(f, s) for f in ("hinge", "least_squares", "growth", "user_logistic")
                                                for s in solver_names(f)])
def test_every_registered_solver_plans_a_plan_the_template_can_run(family, solver):
    est, facts = _estimator_for(family, solver)
    plan = est._plan(*facts)
    assert plan.solver == solver
    assert isinstance(plan.plan, Plan) and plan.event is plan.plan.event
    assert get_solver(family, solver).privacy_unit == est.privacy_unit


def test_plan_run_returns_a_private_fit_with_the_planned_event():
    X, y, _ = _data()
    est = DPLinearRegressor(solver="phased_erm", random_state=0)
    fit_plan = est._plan(X.shape[0], X.shape[1] + 1, 1)
    inputs = est._validate_fit_inputs(X, y)
    (problem, state), = est._draw_problems(inputs, fit_plan, np.random.default_rng(0))
    fit = fit_plan.plan.run(problem, np.random.default_rng(state))
    assert isinstance(fit, PrivateFit) and fit.event == fit_plan.event
    assert fit.coef.shape == (X.shape[1] + 1,)


def test_a_scalar_sample_weight_is_every_rows_weight():
    # scikit-learn accepts one weight for every row; the fit equals the one with that weight per row
    from sklearn.datasets import make_classification

    X, y = make_classification(300, 4, random_state=0)
    fits = [DPHingeClassifier(epsilon=1.0, clip=1.0, random_state=0, accountant=BudgetAccountant(10.0))
            .fit(X, y, sample_weight=w) for w in (0.5, np.full(300, 0.5))]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        DPHingeClassifier(accountant=BudgetAccountant(10.0)).fit(X, y, sample_weight=2.0)


@pytest.mark.parametrize("cls", [DPHingeClassifier, DPLinearRegressor, DPGrowthAdaptiveRegressor])
def test_check_fit_plans_the_fit_and_leaves_everything_as_it_was(cls):
    # check_fit runs fit up to its budget checks: the event the fit then spends, nothing spent, nothing stored
    from sklearn.datasets import make_classification

    from sklearn_dpsco.linear_model._base import check_fit

    X, y = make_classification(400, 4, random_state=0)
    acc = BudgetAccountant(10.0)
    est = cls(epsilon=1.0, random_state=0, accountant=acc)
    before = dict(est.__dict__)
    event = check_fit(est, X, y)
    assert est.__dict__ == before and len(acc.ledger) == 0
    est.fit(X, y)
    assert est.privacy_event_ == event and len(acc.ledger) == 1
    fitted = {k: v for k, v in est.__dict__.items()}
    check_fit(est, X[:, :3], y)  # another shape: checked, and the fitted model is untouched
    assert est.__dict__.keys() == fitted.keys() and est.n_features_in_ == 4 and len(acc.ledger) == 1
    with pytest.raises(ValueError, match="NaN|finite"):
        check_fit(est, np.full_like(X, np.nan), y)
    assert len(acc.ledger) == 1


@pytest.mark.parametrize("cls", [DPLinearRegressor, DPGrowthAdaptiveRegressor])
@pytest.mark.parametrize("bad", ["none", "nan string", "inf string", "words"])
def test_object_and_string_targets_are_checked_before_any_spend(cls, bad):
    # scikit-learn's finiteness check reads object labels before converting them: None or "nan" reached
    # the fit as NaN and a constant model was released at the full spend
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X.sum(axis=1)
    first = {"none": None, "nan string": "nan", "inf string": "inf", "words": "many"}[bad]
    labels = np.array([first] + [str(v) if bad != "none" else v for v in y[1:]], dtype=object)
    acc = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match="Nothing was spent|could not convert"):
        cls(accountant=acc, random_state=0).fit(X, labels)
    assert len(acc.ledger) == 0
    # numeric strings are numbers
    fitted = cls(accountant=acc, random_state=0).fit(X, np.array([str(v) for v in y], dtype=object))
    assert np.all(np.isfinite(fitted.coef_))


def test_clear_errors_for_malformed_inputs_before_any_spend():
    # negative weights, a stream whose first block is not (X, y), per-feature bounds of the wrong length
    from sklearn_dpsco import DPStandardScaler

    X = np.random.default_rng(0).normal(size=(100, 3))
    acc = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match="negative weights"):
        DPHingeClassifier(accountant=acc).fit(X, X[:, 0] > 0, sample_weight=np.full(100, -0.1))
    for stream in (iter([X]), iter([(X[:, 0], X[:, 1])])):
        with pytest.raises(ValueError, match="block 0: expected a tuple"):
            DPLinearRegressor(row_bound=1.0, label_bound=1.0, accountant=acc).fit_stream(stream, n_samples=100)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        DPStandardScaler(bounds=([-1.0, -1.0], [1.0, 1.0]), accountant=acc).fit(X)
    assert len(acc.ledger) == 0


_EXTREME_SCALES = [
    (DPHingeClassifier, {"clip": 1e160}), (DPHingeClassifier, {"intercept_scaling": 1e160}),
    (DPLinearRegressor, {"row_bound": 1e160}), (DPLinearRegressor, {"label_bound": 1e160}),
    (DPLinearRegressor, {"label_bound": 1e-200}), (DPLinearRegressor, {"row_bound": 2.0**300, "noise": "float",
                                                                     "delta": 1e-6}),
    (DPGrowthAdaptiveRegressor, {"intercept_scaling": 1e300}), (UserLevelDPLogistic, {"data_norm": 1e200}),
    (UserLevelDPLogistic, {"data_norm": 2.0**-300}),
]


@pytest.mark.parametrize("cls, params", _EXTREME_SCALES, ids=[f"{c.__name__}-{p}" for c, p in _EXTREME_SCALES])
def test_declared_scales_outside_the_float_range_are_refused_by_name(cls, params):
    """Declared bounds whose squares leave float64 raised OverflowError '(34, Numerical result out of range)',
    'cannot convert Infinity to integer ratio' or ZeroDivisionError (the last two while reading rows), or a
    message naming an internal 'clip' (found by the bug hunt): the parameter's own range check names it."""
    from sklearn.utils._param_validation import InvalidParameterError

    X, y_reg, y_cls = _data()
    y = y_reg if issubclass(cls, DPRegressorMixin) else y_cls
    fit = {"groups": np.arange(len(y)) % 150} if cls is UserLevelDPLogistic else {}
    acc = BudgetAccountant(epsilon=100.0, delta=1e-3)
    name = next(iter(params))
    est = cls(random_state=0, accountant=acc, **params, **({"delta": 1e-6} if cls is UserLevelDPLogistic else {}))
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        est.fit(X, y, **fit)
    assert acc.ledger == ()


@pytest.mark.parametrize("cls", [DPHingeClassifier, UserLevelDPLogistic])
def test_a_bool_alpha_is_refused_by_name_before_any_spend(cls):
    """alpha=True passed scikit-learn's Interval (a bool is a Real) and reached the solvers: the hinge refused it
    as 'lam', the user-level model fitted it as 1.0 (found by the bug hunt)."""
    X, _, y = _data()
    fit = {"groups": np.arange(len(y)) % 150} if cls is UserLevelDPLogistic else {}
    acc = BudgetAccountant(epsilon=100.0, delta=1e-3)
    est = cls(alpha=True, random_state=0, accountant=acc, **({"delta": 1e-6} if cls is UserLevelDPLogistic else {}))
    with pytest.raises(TypeError, match="^alpha must be a real number"):
        est.fit(X, y, **fit)
    assert acc.ledger == ()


@pytest.mark.parametrize("value", [2.0**-290, 2.0**250])
def test_declared_scales_at_the_ends_of_their_range_fit(value):
    X, y_reg, y_cls = _data()
    groups = np.arange(len(y_cls)) % 150
    for noise in ("secure", "float"):
        for delta in (0.0, 1e-6):
            DPHingeClassifier(clip=value, intercept_scaling=value, noise=noise, delta=delta, random_state=0).fit(X, y_cls)
            DPGrowthAdaptiveRegressor(row_bound=value, label_bound=value, intercept_scaling=value, noise=noise,
                                      delta=delta, random_state=0).fit(X, y_reg)
            for params in ({"row_bound": value}, {"label_bound": value}):
                try:
                    DPLinearRegressor(**params, noise=noise, delta=delta, random_state=0).fit(X, y_reg)
                except ValueError as exc:  # AdaSSP's own overflow rule at the top, with its reason
                    assert "could overflow float64" in str(exc) and value > 1
            if delta > 0:
                UserLevelDPLogistic(data_norm=value, noise=noise, delta=delta, random_state=0).fit(X, y_cls,
                                                                                                   groups=groups)
