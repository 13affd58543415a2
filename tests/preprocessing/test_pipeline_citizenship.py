"""DPPipeline as a scikit-learn citizen (doc/privacy/preprocessing.rst, "Private pipelines").

* every check public facts and the inputs allow (the final step's ``y`` and
  fit parameters included) runs before the first step spends;
* a failed (re)fit leaves the pipeline and every step as they were;
* ``fit_transform`` / ``fit_predict`` exist only when the final step can;
* slices are working DPPipelines sharing the steps and the accountant;
* metadata routing (``set_fit_request``) reaches the steps.
"""

import numpy as np
import pytest
import sklearn
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.estimator_checks import check_fit_score_takes_y, check_pipeline_consistency

from sklearn_dpsco import DPPipeline, DPStandardScaler, RowNormClipper, make_dp_pipeline
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model import DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from sklearn_dpsco.testing._estimators import TinyDPClassifier


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


def _state(pipe):
    """Everything a refit could change: the pipeline's and each step's attributes (identity of arrays)."""
    return [(name, {k: (id(v), repr(v) if np.isscalar(v) else None) for k, v in vars(step).items()})
            for name, step in pipe.steps] + [("pipe", {k: id(v) for k, v in vars(pipe).items()})]


def _ledger(acc):
    return len(acc.ledger), acc.total()


def _fitted(X, y, acc):
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0), accountant=acc)
    return pipe.fit(X, y)


@pytest.mark.parametrize("case", ["one class", "nan y", "continuous y", "weight above 1", "unknown param",
                                  "bad final parameter"])
def test_refit_refused_before_any_spend_and_leaves_the_pipeline(data, case):
    X, y = data
    acc = BudgetAccountant(10.0)
    pipe = _fitted(X, y, acc)
    before, state = _ledger(acc), _state(pipe)
    params = {}
    y2 = y
    if case == "one class":
        y2 = np.zeros(len(y))
    elif case == "nan y":
        y2 = np.r_[np.nan, y[1:]]
    elif case == "continuous y":
        y2 = X[:, 0]
    elif case == "weight above 1":
        params = {"dphingeclassifier__sample_weight": np.full(len(y), 2.0)}
    elif case == "unknown param":
        params = {"dphingeclassifier__foo": 1}
    else:
        pipe.set_params(dphingeclassifier__alpha=-1.0)
    with pytest.raises((ValueError, TypeError)):
        pipe.fit(X[:, :3], y2, **params)
    assert _ledger(acc) == before  # the scaler's share was not spent
    assert pipe[0].n_features_in_ == pipe[-1].n_features_in_ == 5
    if case != "bad final parameter":
        assert _state(pipe) == state


def test_user_level_final_step_checks_labels_before_any_spend(data):
    X, y = data
    acc = BudgetAccountant(10.0, 1e-3)
    pipe = make_dp_pipeline(
        DPStandardScaler(bounds=(-4, 4), privacy_unit="user", max_items_per_user=10, random_state=0),
        UserLevelDPLogistic(random_state=0), delta=1e-6, accountant=acc)
    groups = np.arange(len(y)) // 5
    with pytest.raises(ValueError, match="at least 2 classes"):
        pipe.fit(X, np.zeros(len(y)), groups=groups)
    assert _ledger(acc) == (0, (0.0, 0.0))
    assert not hasattr(pipe[0], "n_features_in_")


def test_nested_pipeline_final_step_checks_before_any_spend(data):
    X, y = data
    acc = BudgetAccountant(10.0)
    inner = make_dp_pipeline(RowNormClipper(), DPHingeClassifier(random_state=0))
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), inner, accountant=acc)
    with pytest.raises(ValueError, match="at least 2 classes"):
        pipe.fit(X, np.zeros(len(y)))
    assert _ledger(acc) == (0, (0.0, 0.0))
    pipe.fit(X, y)
    assert len(acc.ledger) == 2


def test_failure_after_a_spend_keeps_the_release_and_restores_every_step(data):
    X, y = data
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), TinyDPClassifier(), accountant=acc).fit(X, y)
    state, mean = _state(pipe), pipe[0].mean_.copy()
    pipe.set_params(tinydpclassifier__crash="raise_before")
    state = _state(pipe)
    with pytest.raises(RuntimeError, match="simulated"):
        pipe.fit(X[:, :3] * 10, y)
    # the scaler's release on the data happened: it stays in the ledger
    assert len(acc.ledger) == 3 and acc.ledger[-1].label.startswith("DPPipeline[dpstandardscaler]")
    assert _state(pipe) == state
    np.testing.assert_array_equal(pipe[0].mean_, mean)
    assert pipe[0].n_features_in_ == 5

    fresh = make_dp_pipeline(DPStandardScaler(random_state=0), TinyDPClassifier(crash="raise_before"),
                             accountant=acc)
    with pytest.raises(RuntimeError):
        fresh.fit(X, y)
    assert not hasattr(fresh[0], "mean_") and not hasattr(fresh, "budget_shares_")


def test_fit_transform_and_fit_predict_exist_only_when_the_final_step_can(data):
    X, y = data
    acc = BudgetAccountant(10.0)
    clf = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0), accountant=acc)
    assert not hasattr(clf, "fit_transform") and not hasattr(clf, "fit_predict")
    for method in (DPPipeline.fit_transform, DPPipeline.fit_predict):  # called anyway: nothing spent
        with pytest.raises(AttributeError):
            method(clf, X, y)
    assert _ledger(acc) == (0, (0.0, 0.0))
    assert not hasattr(clf[-1], "coef_")

    trans = make_dp_pipeline(DPStandardScaler(bounds=(-4, 4), random_state=0), RowNormClipper(), accountant=acc)
    assert hasattr(trans, "fit_transform") and not hasattr(trans, "fit_predict")
    Xt = trans.fit_transform(X)
    np.testing.assert_allclose(Xt, trans.transform(X))
    assert len(acc.ledger) == 1


def test_sklearn_checks_that_called_the_missing_methods():
    pipe = make_dp_pipeline(DPStandardScaler(), DPHingeClassifier(random_state=0))
    check_fit_score_takes_y("DPPipeline", pipe)
    check_pipeline_consistency("DPPipeline", pipe)


def test_slices_are_working_dp_pipelines(data):
    X, y = data
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), RowNormClipper(), DPHingeClassifier(random_state=0),
                            weights={"dpstandardscaler": 1, "dphingeclassifier": 2}, accountant=acc).fit(X, y)
    head = pipe[:-1]
    assert isinstance(head, DPPipeline)
    assert head.accountant is acc and head.epsilon == pipe.epsilon and head.delta == pipe.delta
    assert head.weights == {"dpstandardscaler": 1}
    assert head[0] is pipe[0]  # shallow, as scikit-learn's slices
    n = len(acc.ledger)
    np.testing.assert_allclose(head.transform(X), pipe[1].transform(pipe[0].transform(X)))
    assert list(head.get_feature_names_out()) == [f"x{i}" for i in range(5)]
    assert len(acc.ledger) == n  # transforming with the fitted steps spends nothing
    assert isinstance(pipe[1:], DPPipeline) and pipe[1:].weights == {"dphingeclassifier": 2}
    assert pipe[:1].fit_transform(X).shape == X.shape and len(acc.ledger) == n + 1  # a new fit of the slice
    with pytest.raises(ValueError, match="step of 1"):
        pipe[::2]
    assert pipe["rownormclipper"] is pipe[1]


def test_metadata_routing_reaches_the_steps(data):
    X, y = data
    sw = np.random.default_rng(1).uniform(0.2, 1.0, len(y))
    acc = BudgetAccountant(100.0)

    def pipe(request=True):
        clf = DPHingeClassifier(random_state=0)
        if request:
            clf = clf.set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        return make_dp_pipeline(DPStandardScaler(random_state=0), clf, accountant=acc)

    explicit = pipe(request=False).fit(X, y, dphingeclassifier__sample_weight=sw)
    with sklearn.config_context(enable_metadata_routing=True):
        assert pipe().fit(X, y, dphingeclassifier__sample_weight=sw)[-1].coef_.tolist() == explicit[-1].coef_.tolist()
        routed = pipe().fit(X, y, sample_weight=sw)
        np.testing.assert_array_equal(routed[-1].coef_, explicit[-1].coef_)
        # the scorer says it takes no weights (scikit-learn 1.6's Pipeline does not derive its score request
        # from the final step)
        scoring = get_scorer("accuracy").set_score_request(sample_weight=False)
        search = GridSearchCV(pipe(), {"dphingeclassifier__alpha": [0.01]}, cv=KFold(2), error_score="raise",
                              scoring=scoring)
        search.fit(X, y, sample_weight=sw)
        assert len(acc.ledger) == 6 + 2 * 3  # two steps per fit: two splits and the refit
        before = _ledger(acc)
        with pytest.raises(Exception, match="sample_weight"):  # not requested: refused, nothing spent
            pipe(request=False).fit(X, y, sample_weight=sw)
        with pytest.raises(ValueError, match=r"\[0, 1\]"):  # routed, then checked before any spend
            pipe().fit(X, y, sample_weight=3 * sw)
        assert _ledger(acc) == before
    with pytest.raises(ValueError, match="<step>__<param>"):  # routing off: the explicit form only
        pipe(request=False).fit(X, y, sample_weight=sw)
    assert _ledger(acc) == before


def test_regressor_pipeline_refuses_bad_weights_before_any_spend(data):
    X, y = data
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPLinearRegressor(random_state=0), accountant=acc)
    with pytest.raises(ValueError, match="shape"):
        pipe.fit(X, X[:, 0], dplinearregressor__sample_weight=np.ones(3))
    with pytest.raises(ValueError):
        pipe.fit(X, np.r_[np.inf, X[1:, 0]])
    assert _ledger(acc) == (0, (0.0, 0.0))


def test_dp_search_routes_metadata_to_a_pipeline_and_refuses_unrequested_before_reserving(data):
    from sklearn_dpsco import DPGridSearchCV

    X, y = data
    sw = np.full(len(y), 0.5)
    acc = BudgetAccountant(100.0)
    with sklearn.config_context(enable_metadata_routing=True):
        def search(request):
            clf = DPHingeClassifier(random_state=0)
            clf = clf.set_fit_request(sample_weight=True) if request else clf
            return DPGridSearchCV(make_dp_pipeline(DPStandardScaler(random_state=0), clf),
                                  {"dphingeclassifier__alpha": [0.01, 0.1]}, epsilon=1.0, random_state=0,
                                  accountant=acc)

        assert search(True).fit(X, y, sample_weight=sw).best_estimator_[-1].coef_.shape == (1, 5)
        assert len(acc.ledger) == 1  # the search's one reservation
        with pytest.raises(Exception, match="sample_weight"):  # no step requests it: before the reservation
            search(False).fit(X, y, sample_weight=sw)
        assert len(acc.ledger) == 1


def test_a_step_refused_on_the_synthetic_rows_says_nothing_was_spent_once(data):
    """The dry run's message quotes the step's own refusal (found by the bug hunt: a user-level scaler left at
    bounds='auto' read '... Nothing was spent.. Nothing was spent.')."""
    X, y = data
    acc = BudgetAccountant(10.0, 1e-5)
    pipe = make_dp_pipeline(DPStandardScaler(privacy_unit="user", max_items_per_user=4),
                            UserLevelDPLogistic(random_state=0), accountant=acc, delta=1e-6)
    with pytest.raises(ValueError, match="step 'dpstandardscaler'.*row-level only") as info:
        pipe.fit(X, y, groups=np.arange(len(y)) // 4)
    message = str(info.value)
    assert message.count("Nothing was spent") == 1 and ".." not in message
    assert _ledger(acc) == (0, (0.0, 0.0))


def test_a_user_level_pipeline_under_a_sklearn_search_names_how_to_route_groups(data):
    """GridSearchCV(pipe).fit(X, y, groups=g) gives g to the splitter only (found by the bug hunt: the refusal
    asked for the groups the user had just passed); the message now says how to route them."""
    from sklearn.model_selection import GroupKFold

    X, y = data
    groups = np.arange(len(y)) // 4
    acc = BudgetAccountant(10.0, 1e-5)
    pipe = make_dp_pipeline(DPStandardScaler(privacy_unit="user", max_items_per_user=4, bounds=(-4.0, 4.0)),
                            UserLevelDPLogistic(random_state=0), accountant=acc, delta=1e-6)
    with pytest.raises(ValueError, match=r"needs one user identifier.*splitter only.*set_fit_request\(groups=True\)"):
        GridSearchCV(pipe, {"userleveldplogistic__alpha": [0.1, 1.0]}, cv=GroupKFold(2),
                     error_score="raise").fit(X, y, groups=groups)
    assert _ledger(acc) == (0, (0.0, 0.0))


def test_the_dry_run_on_synthetic_rows_does_not_warn_about_them():
    """Found by the bug hunt: make_dp_pipeline(DPStandardScaler(), model).fit on 1200 rows warned
    'DPStandardScaler: 7 rows are too few for 8 private quartiles' -- the 7 synthetic rows of the dry run --
    before the real fit's own warning about the user's rows."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] > 0).astype(int)
    acc = BudgetAccountant(10.0)
    # column_scaling=False: the scaler keeps its work (before a model that maps its columns itself it would hand it
    # over, release nothing and not warn)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0, column_scaling=False),
                            accountant=acc)
    with pytest.warns(UserWarning) as record:
        pipe.fit(X, y)
    messages = [str(w.message) for w in record]
    assert not any("7 rows" in m for m in messages), messages
    assert any("1200 rows are too few" in m for m in messages), messages


# -- a stateless step returning NaN / inf: refused before the first spend wherever the inputs decide it


def _positive(data):
    X, y = data
    return np.abs(X) + 0.5, X[:, 0] + X[:, 1]


@pytest.mark.parametrize("func", [np.log, np.sqrt, lambda z: np.exp(1000 * z)], ids=["log", "sqrt", "exp"])
def test_a_stateless_step_failing_after_a_scaler_is_refused_before_the_scaler_spends(data, func):
    # the scaler centres its columns on a noisy mean: a log / sqrt / large exp after it fails on any data,
    # which used to surface as the model's "Input X contains NaN" after the scaler had spent its 0.3
    from sklearn.preprocessing import FunctionTransformer

    X, y = _positive(data)
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(DPStandardScaler(bounds=(0, 5), random_state=0), FunctionTransformer(func),
                            DPLinearRegressor(random_state=0), accountant=acc)
    with pytest.raises(ValueError, match="'functiontransformer'.*synthetic rows standardized.*Nothing was spent"):
        pipe.fit(X, y)
    assert _ledger(acc) == (0, (0.0, 0.0))
    assert not hasattr(pipe[0], "mean_")


def test_a_stateless_step_failing_on_the_rows_before_any_release_records_nothing(data):
    # the log runs on the raw columns, exactly decidable before the fit; the default scaler right before the model
    # hands its work to it (identity, empty event), whose empty entry used to be recorded first
    from sklearn.preprocessing import FunctionTransformer

    X, y = _positive(data)
    X[:3, 1] = 0.0
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(FunctionTransformer(np.log), DPStandardScaler(), DPLinearRegressor(random_state=0),
                            accountant=acc)
    with pytest.raises(ValueError, match="'functiontransformer'.*input rows.*Nothing was spent"):
        pipe.fit(X, y)
    assert _ledger(acc) == (0, (0.0, 0.0))
    pipe.fit(X[3:], y[3:])  # the same pipeline on rows in its domain fits, and records as before
    assert len(acc.ledger) == 2


def test_a_stateless_step_failing_only_on_the_released_map_says_the_spend_stands(data):
    # with_mean=False keeps a zero at zero: log(0) fails only on the real rows after the release, which
    # is an outcome of the data (not refunded); the message says so, and every step is restored
    from sklearn.preprocessing import FunctionTransformer

    X, y = _positive(data)
    X[:3, 1] = 0.0
    acc = BudgetAccountant(10.0)
    pipe = make_dp_pipeline(DPStandardScaler(bounds=(0, 5), with_mean=False, random_state=0),
                            FunctionTransformer(np.log), DPLinearRegressor(random_state=0), accountant=acc)
    with pytest.raises(ValueError, match="'functiontransformer'.*output of the private step 'dpstandardscaler'.*"
                                         "spend stands"):
        pipe.fit(X, y)
    assert len(acc.ledger) == 1 and acc.ledger[0].label.startswith("DPPipeline[dpstandardscaler]")
    assert not hasattr(pipe[0], "mean_")


def test_a_nested_pipelines_row_check_does_not_run_on_the_outer_stand_in(data):
    # the outer pipeline checks its final step on zeros standing in for its input: the inner log's check of
    # real rows must not refuse them (it runs when the inner pipeline meets its real rows)
    from sklearn.preprocessing import FunctionTransformer

    X, y = _positive(data)
    acc = BudgetAccountant(10.0)
    inner = make_dp_pipeline(FunctionTransformer(np.log), DPLinearRegressor(random_state=0))
    make_dp_pipeline(RowNormClipper(10.0), inner, accountant=acc).fit(X, y)
    assert len(acc.ledger) == 1


def test_a_nested_pipelines_log_after_the_outer_scaler_is_refused_before_the_scaler_spends(data):
    # the inner pipeline's dry run starts from the outer's standardized synthetic rows; it started from raw
    # positive ones, so the outer scaler spent, then the inner refused the real rows saying "Nothing was spent"
    from sklearn.preprocessing import FunctionTransformer

    X, y = _positive(data)
    acc = BudgetAccountant(10.0)
    inner = make_dp_pipeline(FunctionTransformer(np.log), DPLinearRegressor(random_state=0))
    pipe = make_dp_pipeline(DPStandardScaler(bounds=(0, 5), random_state=0), inner, accountant=acc)
    with pytest.raises(ValueError, match="synthetic rows standardized as the private step 'dpstandardscaler'"):
        pipe.fit(X, y)
    assert _ledger(acc) == (0, (0.0, 0.0))

    X[:3, 1] = 0.0  # with_mean=False keeps the zeros: only the real rows show it, after the outer release
    pipe.set_params(dpstandardscaler__with_mean=False)
    with pytest.raises(ValueError, match="enclosing pipeline's private step 'dpstandardscaler'.*spend stands"):
        pipe.fit(X, y)
    assert len(acc.ledger) == 1


_PRE_SPEND_REFUSALS = {
    # the shared checks of epsilon and delta, the weights, the steps (scikit-learn's), X (scikit-learn's) and the
    # final step's checks of y: found by the bug hunt, the first ones did not say that nothing was spent
    "epsilon 0": (dict(epsilon=0), {}, ValueError, "epsilon must be > 0"),
    "epsilon nan": (dict(epsilon=float("nan")), {}, ValueError, "epsilon must be finite"),
    "epsilon str": (dict(epsilon="1"), {}, TypeError, "epsilon must be a real number"),
    "delta 1": (dict(delta=1.0), {}, ValueError, r"delta must be in \[0, 1\)"),
    "weight 0": (dict(weights={"dpstandardscaler": 0, "dphingeclassifier": 1}), {}, ValueError,
                 "weight of step 'dpstandardscaler' must be a finite number > 0"),
    "weight str": (dict(weights={"dpstandardscaler": "1", "dphingeclassifier": 1}), {}, ValueError,
                   "weight of step 'dpstandardscaler' must be a finite number > 0"),
    "passthrough param": (dict(steps=[("p", "passthrough"), ("clf", DPHingeClassifier())]), {"p__a": 1}, ValueError,
                          "given to passthrough step 'p'"),
    "duplicate names": (dict(steps=[("a", RowNormClipper(1.0)), ("a", DPHingeClassifier())]), {}, ValueError,
                        "Names provided are not unique"),
    "X nan": (dict(), {"X": "nan"}, ValueError, "Input contains NaN"),
    "y missing": (dict(), {"y": None}, ValueError, "requires y to be passed"),
    # the parameter constraints: DPPipeline's fit replaces Pipeline.fit, whose decorator ran them (found by the
    # bug hunt: allow_non_private_steps="yes" was accepted as true)
    "allow str": (dict(allow_non_private_steps="yes"), {}, ValueError,
                  "'allow_non_private_steps' parameter of DPPipeline must be an instance of 'bool'"),
}


@pytest.mark.parametrize("case", list(_PRE_SPEND_REFUSALS))
@pytest.mark.parametrize("maker", ["DPPipeline", "make_dp_pipeline"])
def test_every_refusal_before_any_spend_says_nothing_was_spent_once(data, case, maker):
    X, y = data
    kwargs, fit_kwargs, error, match = _PRE_SPEND_REFUSALS[case]
    kwargs, fit_kwargs = dict(kwargs), dict(fit_kwargs)
    acc = BudgetAccountant(10.0)
    steps = kwargs.pop("steps", [("dpstandardscaler", DPStandardScaler(bounds=(-4, 4))),
                                 ("dphingeclassifier", DPHingeClassifier())])
    if maker == "DPPipeline":
        pipe = DPPipeline(steps, accountant=acc, **kwargs)
    else:
        if len({name for name, _ in steps}) < len(steps):
            pytest.skip("make_dp_pipeline names its steps itself")
        pipe = make_dp_pipeline(*(step for _, step in steps), accountant=acc, **kwargs)
        if "p__a" in fit_kwargs:
            fit_kwargs = {"passthrough__a": 1}
            match = "given to passthrough step 'passthrough'"
    if fit_kwargs.pop("X", None) == "nan":
        X = X.copy()
        X[0, 0] = np.nan
    y = fit_kwargs.pop("y", y)
    with pytest.raises(error, match=match) as info:
        pipe.fit(X, y, **fit_kwargs)
    message = str(info.value)
    assert message.endswith("Nothing was spent.") and message.count("Nothing was spent") == 1, message
    assert ".." not in message
    assert _ledger(acc) == (0, (0.0, 0.0))
