"""Bad input is refused, clearly, before any budget is spent, and the refusal says so (non-negotiable 5).

Every refusal a bare estimator gives before its first release (scikit-learn's parameter constraints, its data
checks, the library's own checks of labels, weights and groups) keeps its exception type, names the cause and ends
with "Nothing was spent." (sklearn_dpsco/_refusals.py), and leaves a shared ledger as it was. A failure after a
release, or after the spend, never says so (linear_model/_base.py, the fit template).
"""

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from sklearn_dpsco._refusals import say_nothing_spent
from sklearn_dpsco.accounting import BudgetAccountant, PureDPEvent
from sklearn_dpsco.linear_model._base import _CHECKING
from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

N = 240
ESTIMATORS = {
    "hinge": lambda acc, **p: DPHingeClassifier(accountant=acc, random_state=0, **p),
    "linear": lambda acc, **p: DPLinearRegressor(accountant=acc, random_state=0, **p),
    "growth": lambda acc, **p: DPGrowthAdaptiveRegressor(accountant=acc, random_state=0, **p),
    "user": lambda acc, **p: UserLevelDPLogistic(accountant=acc, random_state=0, **p),
    "scaler": lambda acc, **p: DPStandardScaler(accountant=acc, random_state=0, **p),
}
CLASSIFIERS = ("hinge", "user")
REGRESSORS = ("linear", "growth")
WEIGHTED = ("hinge", "linear", "growth")


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    y_cls = (X[:, 0] > 0).astype(int)
    y_reg = X @ np.array([1.0, -0.5, 0.25]) + 0.1 * rng.normal(size=N)
    groups = np.arange(N) // 3
    return X, y_cls, y_reg, groups


def _fit_args(kind):
    """``(X, y, fit kwargs)`` that the estimator ``kind`` fits."""
    X, y_cls, y_reg, groups = _data()
    if kind == "scaler":
        return X, None, {}
    y = y_cls if kind in CLASSIFIERS else y_reg
    return X, y, ({"groups": groups} if kind == "user" else {})


def _with_na(values, dtype, at=5):
    s = pd.Series(values, dtype=dtype)
    s.iloc[at] = pd.NA
    return s


def _nan(X):
    X = X.copy()
    X[3, 1] = np.nan
    return X


def _inf(X):
    X = X.copy()
    X[3, 1] = np.inf
    return X


# ---------------------------------------------------------------------------- the bad inputs
# name: (estimators, mutate(X, y, kw, kind) -> (X, y, kw) or params dict, exception type, message pattern)
def _params(**p):
    return lambda X, y, kw, kind: p


def _data_case(fn):
    return lambda X, y, kw, kind: fn(X, y, dict(kw), kind)


ALL = tuple(ESTIMATORS)
FITTERS = CLASSIFIERS + REGRESSORS
CASES = {
    # scikit-learn's parameter constraints (its _fit_context runs them): InvalidParameterError stays one
    "epsilon -1": (ALL, _params(epsilon=-1), InvalidParameterError, r"The 'epsilon' parameter of \w+ must be"),
    "epsilon str": (ALL, _params(epsilon="a"), InvalidParameterError, r"The 'epsilon' parameter .* Got 'a' instead"),
    "delta 1": (ALL, _params(delta=1.0), InvalidParameterError, r"The 'delta' parameter"),
    "noise": (ALL, _params(noise="loud"), InvalidParameterError, r"The 'noise' parameter"),
    "classes with None": (CLASSIFIERS, _params(classes=[0, 1, None]), ValueError, r"classes must be a flat list"),
    "classes nested": (CLASSIFIERS, _params(classes=[[0, 1]]), ValueError, r"classes must be a flat list"),
    "row_bound True": (REGRESSORS, _params(row_bound=True), TypeError, r"row_bound must be a real number, got bool"),
    "radius True": (REGRESSORS, _params(radius=True), TypeError, r"radius must be a real number, got bool"),
    "epsilon tiny": (ALL, _params(epsilon=1e-200), InvalidParameterError,
                     r"The 'epsilon' parameter of \w+ must be a float in the range \[1e-12, inf\)"),
    "n_jobs 0": (FITTERS, _params(n_jobs=0), InvalidParameterError, r"The 'n_jobs' parameter of \w+ must be"),
    "alpha -1": (CLASSIFIERS, _params(alpha=-1), InvalidParameterError, r"The 'alpha' parameter"),
    "repeats 0": (("hinge",), _params(repeats=0), InvalidParameterError, r"The 'repeats' parameter"),
    "solver": (FITTERS, _params(solver="nope"), InvalidParameterError, r"The 'solver' parameter"),
    "grid_size 0": (("growth",), _params(grid_size=0), InvalidParameterError, r"The 'grid_size' parameter"),
    "max_items 0": (("user", "scaler"), _params(max_items_per_user=0), InvalidParameterError,
                    r"The 'max_items_per_user' parameter"),
    "sgd_iterations 0": (("user",), _params(sgd_iterations=0), InvalidParameterError,
                         r"The 'sgd_iterations' parameter"),
    "with_mean str": (("scaler",), _params(with_mean="x"), InvalidParameterError, r"The 'with_mean' parameter"),
    # the library's checks of the privacy parameters (scikit-learn's Interval lets these through)
    "epsilon bool": (ALL, _params(epsilon=True), TypeError, r"epsilon must be a real number, got bool"),
    "alpha bool": (CLASSIFIERS, _params(alpha=True), TypeError, r"alpha must be a real number, got bool"),
    # scikit-learn's check_array / check_X_y
    "X nan": (ALL, _data_case(lambda X, y, kw, kind: (_nan(X), y, kw)), ValueError, r"Input X contains NaN"),
    "X inf": (ALL, _data_case(lambda X, y, kw, kind: (_inf(X), y, kw)), ValueError, r"Input X contains infinity"),
    "X 1d": (ALL, _data_case(lambda X, y, kw, kind: (X[:, 0], y, kw)), ValueError, r"Expected 2D array, got 1D"),
    "X 3d": (ALL, _data_case(lambda X, y, kw, kind: (X[:, :, None], y, kw)), ValueError,
             r"Found array with dim 3"),
    "X empty": (ALL, _data_case(lambda X, y, kw, kind: (
        X[:0], None if y is None else y[:0], {k: v[:0] for k, v in kw.items()})), ValueError,
        r"Found array with 0 sample\(s\)"),
    "y short": (FITTERS, _data_case(lambda X, y, kw, kind: (X, y[:-1], kw)), ValueError,
                r"inconsistent numbers of samples"),
    "X sparse": (("scaler",), _data_case(lambda X, y, kw, kind: (sp.csr_matrix(X), y, kw)), TypeError,
                 r"DPStandardScaler does not accept sparse input"),
    # labels
    "one class": (CLASSIFIERS, _data_case(lambda X, y, kw, kind: (X, np.ones(N, dtype=int), kw)), ValueError,
                  r"at least 2 classes; got 1 class"),
    "y Int64 NA": (FITTERS, _data_case(lambda X, y, kw, kind: (
        X, _with_na(y, "Int64" if kind in CLASSIFIERS else "Float64"), kw)), ValueError,
        r"y contains missing (labels|targets): pd\.NA, NaN or None among its values of dtype '(Int64|Float64)'"),
    "y boolean NA": (FITTERS, _data_case(lambda X, y, kw, kind: (X, _with_na(y > np.median(y), "boolean"), kw)),
                     ValueError, r"y contains missing (labels|targets): .* dtype 'boolean'"),
    "y string NA": (FITTERS, _data_case(lambda X, y, kw, kind: (X, _with_na(y.astype(str), "string"), kw)),
                    ValueError, r"y contains missing (labels|targets): .* dtype 'string"),
    "y object pd.NA": (FITTERS, _data_case(lambda X, y, kw, kind: (X, _with_na(y, object).to_numpy(), kw)),
                       ValueError, r"y contains missing (labels|targets): None, NaN or pd\.NA among its values"),
    # sample weights
    "weight shape": (WEIGHTED, _data_case(lambda X, y, kw, kind: (X, y, {"sample_weight": np.ones(N - 1)})),
                     ValueError, r"sample_weight must have shape \(240,\), got \(239,\)"),
    "weight 2": (WEIGHTED, _data_case(lambda X, y, kw, kind: (X, y, {"sample_weight": np.full(N, 2.0)})),
                 ValueError, r"sample_weight must lie in \[0, 1\]"),
    "weight nan": (WEIGHTED, _data_case(lambda X, y, kw, kind: (X, y, {"sample_weight": _nan(np.ones((N, 2)))[:, 1]})),
                   ValueError, r"sample_weight must be finite"),
    # groups
    "groups missing": (("user",), _data_case(lambda X, y, kw, kind: (X, y, {})), ValueError, r"requires groups"),
    "groups shape": (("user",), _data_case(lambda X, y, kw, kind: (X, y, {"groups": kw["groups"][:-1]})),
                     ValueError, r"groups must have shape \(240,\)"),
    "groups one user": (("user",), _data_case(lambda X, y, kw, kind: (X, y, {"groups": np.zeros(N)})), ValueError,
                        r"at least 2 users"),
    "groups Int64 NA": (("user",), _data_case(lambda X, y, kw, kind: (
        X, y, {"groups": _with_na(kw["groups"], "Int64")})), ValueError,
        r"groups contains missing user identifiers: .* dtype 'Int64'"),
    "groups string NA": (("user",), _data_case(lambda X, y, kw, kind: (
        X, y, {"groups": _with_na(kw["groups"].astype(str), "string")})), ValueError,
        r"groups contains missing user identifiers: .* dtype 'string"),
    "groups None": (("user",), _data_case(lambda X, y, kw, kind: (
        X, y, {"groups": np.where(np.arange(N) == 7, None, kw["groups"].astype(object))})), ValueError,
        r"groups contains missing user identifiers: None, NaN or pd\.NA"),
    "groups to a row scaler": (("scaler",), _data_case(lambda X, y, kw, kind: (X, y, {"groups": np.arange(N)})),
                               ValueError, r"groups was given to a row-level DPStandardScaler"),
}


def _shared_ledger(kind):
    """A ledger shared with earlier fits: it holds a spend already (in the estimator's privacy unit)."""
    acc = BudgetAccountant(epsilon=100.0, delta=1e-3)
    acc.spend(PureDPEvent(0.5), label="an earlier fit", privacy_unit="user" if kind == "user" else "row")
    return acc


def _ledger_state(acc):
    return acc.total(), [(e.label, e.event) for e in acc.ledger]


_GRID = [(kind, case) for case, (kinds, *_) in CASES.items() for kind in kinds]


@pytest.mark.parametrize("kind, case", _GRID, ids=[f"{k}-{c}" for k, c in _GRID])
def test_every_refusal_before_the_first_release_keeps_its_type_and_says_nothing_was_spent(kind, case):
    _, mutate, error, pattern = CASES[case]
    X, y, kw = _fit_args(kind)
    acc = _shared_ledger(kind)
    before = _ledger_state(acc)
    change = mutate(X, y, kw, kind)
    params = change if isinstance(change, dict) else {}
    if not isinstance(change, dict):
        X, y, kw = change
    est = ESTIMATORS[kind](acc, **params)
    with pytest.raises(error) as info:
        est.fit(X, y, **kw)
    if error is InvalidParameterError:
        assert type(info.value) is InvalidParameterError  # scikit-learn's own checks still catch it
    assert isinstance(info.value, error)
    message = str(info.value)
    assert re.search(pattern, message, flags=re.DOTALL), message
    assert message.count("Nothing was spent.") == 1, message
    if not case.startswith("groups missing"):  # that one ends with scikit-learn's routing hint
        assert message.endswith("Nothing was spent."), message
    assert _ledger_state(acc) == before
    assert not hasattr(est, "n_features_in_") and not hasattr(est, "privacy_event_")


@pytest.mark.parametrize("kind", ALL)
def test_the_same_fits_pass_without_the_bad_input(kind):
    # the baseline of the grid: each estimator fits these rows on the shared ledger (one more entry)
    X, y, kw = _fit_args(kind)
    acc = _shared_ledger(kind)
    ESTIMATORS[kind](acc, epsilon=2.0).fit(X, y, **kw)
    assert len(acc.ledger) == 2


@pytest.mark.parametrize("kind", FITTERS)
def test_nullable_labels_without_na_fit(kind):
    X, y, kw = _fit_args(kind)
    acc = _shared_ledger(kind)
    dtype = "Int64" if kind in CLASSIFIERS else "Float64"
    ESTIMATORS[kind](acc, epsilon=2.0).fit(X, pd.Series(y, dtype=dtype), **kw)
    assert len(acc.ledger) == 2


def test_fit_stream_refuses_missing_targets_before_spending():
    X, _, y, _ = _data()
    acc = _shared_ledger("linear")
    before = _ledger_state(acc)
    est = DPLinearRegressor(row_bound=5.0, label_bound=5.0, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match=r"y contains missing targets: .*'Float64'.*Nothing was spent\.$"):
        est.fit_stream(X, _with_na(y, "Float64"))
    with pytest.raises(InvalidParameterError, match=r"'epsilon' parameter.*Nothing was spent\.$"):
        est.set_params(epsilon=-1.0).fit_stream(X, y)
    assert _ledger_state(acc) == before


# ---------------------------------------------------------------------------- failures after a release or a spend
def _failing(monkeypatch, cls, name, error):
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(cls, name, fail)


@pytest.mark.parametrize("kind", FITTERS)
def test_a_failure_after_the_spend_does_not_say_nothing_was_spent(kind, monkeypatch):
    X, y, kw = _fit_args(kind)
    acc = _shared_ledger(kind)
    est = ESTIMATORS[kind](acc, epsilon=2.0)
    _failing(monkeypatch, type(est), "_store_fit", ValueError("storing the fit failed"))
    with pytest.raises(ValueError, match="storing the fit failed") as info:
        est.fit(X, y, **kw)
    assert "nothing was spent" not in str(info.value).lower()
    assert len(acc.ledger) == 2  # the spend stands (a failure after a release is an outcome of the data)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("kind", FITTERS)
def test_a_failure_after_the_first_release_is_not_told_nothing_was_spent(kind, monkeypatch):
    # between the release and the spend (steps 4-5): the ledger is not charged, but a release has run on the
    # data, so the template does not add the ending either
    X, y, kw = _fit_args(kind)
    acc = _shared_ledger(kind)
    est = ESTIMATORS[kind](acc, epsilon=2.0)
    _failing(monkeypatch, type(est), "_complete_runs", ValueError("a run failed"))
    with pytest.raises(ValueError, match="a run failed") as info:
        est.fit(X, y, **kw)
    assert str(info.value) == "a run failed"


def test_a_scaler_failure_after_its_release_or_spend_does_not_say_nothing_was_spent(monkeypatch):
    from sklearn_dpsco.preprocessing import _scaler

    X, _, _, _ = _data()
    acc = _shared_ledger("scaler")
    monkeypatch.setattr(DPStandardScaler, "_released_bounds", staticmethod(lambda q: (_ for _ in ()).throw(
        ValueError("after the quartiles"))))
    with pytest.raises(ValueError) as info:
        DPStandardScaler(epsilon=5.0, accountant=acc, random_state=0).fit(X)
    assert str(info.value) == "after the quartiles" and len(acc.ledger) == 1
    monkeypatch.undo()
    _failing(monkeypatch, _scaler, "noise_source", ValueError("after the spend"))
    with pytest.raises(ValueError) as info:
        DPStandardScaler(epsilon=5.0, accountant=acc, random_state=0).fit(X)
    assert str(info.value) == "after the spend" and len(acc.ledger) == 2


def test_a_final_steps_refusal_after_the_pipelines_release_says_the_release_stands(monkeypatch):
    # the model's own check passes on the pipeline's stand-in rows, then refuses the real ones after the scaler
    # released: "Nothing was spent" alone would be false of the pipeline's fit
    X, y, _, _ = _data()
    validate = DPHingeClassifier._validate_fit_inputs

    def late(self, *args, **kwargs):
        if _CHECKING.get() is None:
            raise ValueError("the real rows are refused. Nothing was spent.")
        return validate(self, *args, **kwargs)

    monkeypatch.setattr(DPHingeClassifier, "_validate_fit_inputs", late)
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(DPStandardScaler(bounds=(-4, 4), random_state=0), DPHingeClassifier(random_state=0),
                            accountant=acc)
    with pytest.raises(ValueError, match=r"the real rows are refused\. Nothing was spent by this fit, but the "
                                         r"enclosing pipeline's private step 'dpstandardscaler' has released .*"
                                         r"that spend stands") as info:
        pipe.fit(X, y)
    assert str(info.value).count("Nothing was spent") == 1
    assert len(acc.ledger) == 1 and acc.ledger[0].label.startswith("DPPipeline[dpstandardscaler]")


def test_say_nothing_spent_leaves_other_exceptions_and_said_ones_alone():
    said = ValueError("bad y. Nothing was spent.")
    say_nothing_spent(said)
    assert said.args == ("bad y. Nothing was spent.",)
    key = KeyError("column")
    say_nothing_spent(key)
    assert key.args == ("column",)
    bare = ValueError("bad y")
    say_nothing_spent(bare)
    assert bare.args == ("bad y. Nothing was spent.",)
    many = ValueError("a", "b")
    say_nothing_spent(many)
    assert many.args == ("a", "b")
