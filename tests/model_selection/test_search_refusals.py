"""A private search refuses, before it charges anything, every candidate its own fit would refuse.

Each case failed before the searches ran the candidates' own checks (``_check_fit``): the search charged its
whole budget, then the first fit of the bad candidate raised. Every test fails if anything is spent.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_dpsco import BudgetAccountant, DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco.accounting import BudgetExceededError, ComposedEvent, epsilon_delta
from sklearn_dpsco.linear_model import UserLevelDPLogistic
from sklearn_dpsco.model_selection import DPGridSearchCV, DPRandomizedSearchCV

X, Y = make_classification(600, 5, random_state=0)
XR, YR = make_regression(600, 5, random_state=0)
GROUPS = np.random.default_rng(0).integers(0, 40, 600)
REGRESSION = {"scoring": "neg_mean_absolute_error", "loss_bound": 500.0}

CASES = [
    ("unknown solver", DPHingeClassifier(), {"solver": ["output_perturbation", "nope"]}, (X, Y), {}, 0.0, {},
     InvalidParameterError, "'solver' parameter"),
    ("negative alpha", DPHingeClassifier(), {"alpha": [0.1, -1.0]}, (X, Y), {}, 0.0, {},
     InvalidParameterError, "'alpha' parameter"),
    ("too few rows for the solver", DPHingeClassifier(solver="lowy"), {"alpha": [0.1, 1.0]}, (X[:120], Y[:120]), {},
     0.0, {}, ValueError, "Pop-Localize needs at least"),
    ("pure DP with an approximate-DP solver", DPLinearRegressor(), {"solver": ["adassp", "snowball"]}, (XR, YR), {},
     0.0, REGRESSION, ValueError, "approximate DP only"),
    ("one-dimensional solver on d > 1", DPGrowthAdaptiveRegressor(), {"solver": ["auto", "inverse_sensitivity"]},
     (XR, YR), {}, 0.0, REGRESSION, ValueError, "one-dimensional"),
    ("too few users", UserLevelDPLogistic(), {"solver": ["user_clip", "phased_erm"]}, (X, Y), {"groups": GROUPS},
     1e-6, {}, ValueError, "needs at least"),
    ("an (epsilon, delta) loss under a zCDP share", UserLevelDPLogistic(solver="item_group"), {"alpha": [0.01, 0.1]},
     (X, Y), {"groups": GROUPS}, 1e-6, {}, BudgetExceededError, "searched at delta=0"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_a_candidate_its_fit_would_refuse_spends_nothing(case, selection):
    _, est, grid, (A, b), fit_kw, delta, extra, error, text = case
    acc = BudgetAccountant(100.0, 0.5)
    search = DPGridSearchCV(est, grid, epsilon=1.0, delta=delta, accountant=acc, random_state=0,
                            selection=selection, **extra)
    if selection == "random_stopping":
        if delta > 0:
            pytest.skip("random stopping is proven for pure DP only")
        # every run draws a bad candidate: only the bad value in the grid
        search.set_params(param_grid={k: [v[-1]] for k, v in grid.items()})
    with pytest.raises(error, match=text) as info:
        search.fit(A, b, **fit_kw)
    assert "Nothing was spent" in str(info.value) and "would refuse its fit" in str(info.value)
    assert len(acc.ledger) == 0 and acc.total() == (0.0, 0.0)
    assert not hasattr(search, "best_params_")


def test_the_refit_is_checked_on_every_row_and_good_grids_still_search():
    # the candidates' checks run on their split; the refit's on all rows: here both pass and the search spends once
    acc = BudgetAccountant(100.0, 0.5)
    search = DPRandomizedSearchCV(DPHingeClassifier(), {"alpha": [0.01, 0.1]}, n_iter=3, epsilon=1.0,
                                  accountant=acc, random_state=0).fit(X, Y)
    assert len(acc.ledger) == 1 and acc.total()[0] == pytest.approx(1.0)
    assert search.predict(X).shape == (600,)


def test_refit_false_explains_the_missing_methods():
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.01, 0.1]}, epsilon=1.0, refit=False,
                            accountant=BudgetAccountant(10.0), random_state=0).fit(X, Y)
    assert not hasattr(search, "predict")
    with pytest.raises(AttributeError) as info:
        search.predict(X)
    # scikit-learn's available_if names the method; the reason is its cause, as for scikit-learn's searches
    assert "refit=False" in str(info.value.__cause__) and "best_params_" in str(info.value.__cause__)


def test_a_pipeline_candidate_its_fit_would_refuse_spends_nothing():
    from sklearn_dpsco import DPStandardScaler, make_dp_pipeline

    acc = BudgetAccountant(100.0, 0.5)
    pipe = make_dp_pipeline(DPStandardScaler(), DPHingeClassifier())
    search = DPGridSearchCV(pipe, {"dphingeclassifier__alpha": [0.1, -1.0]}, epsilon=1.0, accountant=acc,
                            random_state=0, selection="exponential")
    with pytest.raises(InvalidParameterError, match="would refuse its fit.*'alpha' parameter"):
        search.fit(X, Y)
    assert len(acc.ledger) == 0


def test_a_ledger_named_inside_a_search_or_pipeline_is_refused_not_ignored():
    # the search (and a pipeline) gives every sub-fit its own allowance: an accountant named on the
    # estimator or a step would not be charged, and a named ledger must not be escaped
    from sklearn_dpsco import BudgetAccountant, DPGridSearchCV, DPHingeClassifier
    from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 3))
    y = (X[:, 0] > 0).astype(int)
    named, outer = BudgetAccountant(epsilon=0.5), BudgetAccountant(epsilon=10.0)
    search = DPGridSearchCV(DPHingeClassifier(clip=1.0, accountant=named), {"alpha": [0.1, 1.0]}, epsilon=1.0,
                            accountant=outer)
    with pytest.raises(ValueError, match="accountant= to the search"):
        search.fit(X, y)
    pipe = make_dp_pipeline(DPStandardScaler(bounds=(-1.0, 1.0), accountant=named), DPHingeClassifier(clip=1.0),
                            epsilon=1.0, accountant=outer)
    with pytest.raises(ValueError, match="accountant= to the pipeline"):
        pipe.fit(X, y)
    assert named.ledger == () and outer.ledger == ()


@pytest.mark.parametrize("seed", range(8))
def test_random_stopping_checks_every_grid_candidate_not_only_the_drawn_runs(seed):
    # found by a bug hunt: random stopping checked only the candidates its runs drew, so a grid with a bad value
    # was refused for some seeds and searched (without the bad value, silently) for others
    acc = BudgetAccountant(100.0)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [-1.0, 1.0]}, epsilon=1.0, accountant=acc,
                            random_state=seed, selection="random_stopping")
    with pytest.raises(InvalidParameterError, match="candidate \\{'alpha': -1.0\\} would refuse its fit") as info:
        search.fit(X, Y)
    assert "Nothing was spent" in str(info.value)
    assert len(acc.ledger) == 0 and acc.total() == (0.0, 0.0)


class _FailsAfterItsRelease(DPHingeClassifier):
    """A candidate whose fit fails after its checks (as a certified solver's refusal can), saying nothing spent."""

    def fit(self, X, y, sample_weight=None):
        super().fit(X, y, sample_weight)
        raise RuntimeError("the solver failed; nothing was spent")


@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_a_fit_failing_after_the_reservation_says_the_search_budget_stays_spent(selection):
    # found by a bug hunt: a CertificationError inside a search read "no point was released and no budget spent"
    # while the search had charged its whole budget up front (and keeps it, doc/privacy/accounting.rst)
    acc = BudgetAccountant(100.0)
    search = DPGridSearchCV(_FailsAfterItsRelease(), {"alpha": [0.1, 1.0]}, epsilon=1.0, accountant=acc,
                            random_state=0, selection=selection)
    with pytest.raises(RuntimeError, match="charged its whole budget \\(epsilon=1, delta=0\\)") as info:
        search.fit(X, Y)
    assert "that spend stands" in str(info.value) and "the solver failed" in str(info.value)
    assert acc.total()[0] == pytest.approx(1.0) and len(acc.ledger) == 1
    assert not hasattr(search, "best_params_") and not hasattr(search, "_charged")


def test_a_refusal_before_the_reservation_keeps_its_own_message():
    acc = BudgetAccountant(100.0)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, -1.0]}, epsilon=1.0, accountant=acc, random_state=0)
    with pytest.raises(InvalidParameterError) as info:
        search.fit(X, Y)
    assert "charged its whole budget" not in str(info.value) and acc.total() == (0.0, 0.0)


def test_refitting_the_released_best_estimator_explains_its_used_allowance():
    # found by a bug hunt: clone(search.best_estimator_).fit(...) (or cross_val_score on it) was refused with
    # "this fit's allowance is PureDPEvent(...) and it already consumed a profile of PrivacyProfile(...)"
    from sklearn.base import clone

    acc = BudgetAccountant(10.0)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, epsilon=1.0, accountant=acc,
                            random_state=0).fit(X, Y)
    with pytest.raises(BudgetExceededError, match="one-fit allowance .* that a private search or pipeline gave it"):
        clone(search.best_estimator_).fit(X, Y)
    assert acc.total()[0] == pytest.approx(1.0)
    # the advice works: its own ledger, a new release charged there
    again = clone(search.best_estimator_).set_params(accountant=acc).fit(X, Y)
    assert acc.total()[0] == pytest.approx(1.0 + again.epsilon) and len(acc.ledger) == 2


@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_a_dataframe_keeps_its_column_names_and_the_same_release(selection):
    # found by a bug hunt: the search turned a DataFrame into an array, so the search had no feature_names_in_
    # and predicting on the same DataFrame warned "X has feature names, but DPHingeClassifier was fitted without"
    import warnings

    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    kw = dict(epsilon=1.0, random_state=0, selection=selection, accountant=BudgetAccountant(10.0))
    on_frame = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, **kw).fit(df, Y)
    on_array = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, **kw).fit(X, Y)
    assert list(on_frame.feature_names_in_) == list(df.columns)
    assert list(on_frame.best_estimator_.feature_names_in_) == list(df.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_frame.predict(df)
    assert np.array_equal(on_frame.best_estimator_.coef_, on_array.best_estimator_.coef_)
    with pytest.raises(AttributeError):
        on_array.feature_names_in_


@pytest.mark.parametrize("search", [
    DPGridSearchCV(DPHingeClassifier(random_state=0), {"alpha": [0.1, 1.0]}, random_state=0),
    DPRandomizedSearchCV(DPLinearRegressor(random_state=0), {"scale_share": [0.2, 0.3]}, n_iter=2, random_state=0,
                         **REGRESSION),
], ids=type)
def test_one_row_or_one_class_is_refused_in_scikit_learns_words_before_any_spend(search):
    """scikit-learn's check_fit2d_1sample: the refusal names one sample / one class (found by the bug hunt: the
    searches said 'y must contain at least 2 classes' and 'leaves no training or no validation row at n=1')."""
    from sklearn.utils.estimator_checks import check_fit2d_1sample

    acc = BudgetAccountant(100.0)
    search.set_params(accountant=acc)
    check_fit2d_1sample(type(search).__name__, search)
    with pytest.raises(ValueError, match="n_samples=1|1 class") as info:
        search.fit(XR[:1] if search.loss_bound else X[:1], YR[:1] if search.loss_bound else Y[:1])
    assert "Nothing was spent" in str(info.value)
    if search.loss_bound is None:  # two rows, one class
        with pytest.raises(ValueError, match="got 1 class. Nothing was spent."):
            search.fit(X[:2], np.zeros(2, int))
    assert len(acc.ledger) == 0


def test_a_search_as_a_pipelines_final_step_is_checked_before_the_first_spend():
    """Found by the bug hunt: DPPipeline ran its final step's checks only for linear models and pipelines, so a
    DPGridSearchCV after a DPStandardScaler at delta > 0 (whose exponential selection's pure part does not fit the
    zCDP share the pipeline gives it) was refused only after the scaler had spent its share, with an allowance's
    internal repr ('... consumed a profile of PrivacyProfile(pure_eps=0.0, ...)'). The same held one level up: a
    search over such a pipeline charged its whole budget, then failed.

    A DPPipeline on a ledger now gives such steps ``(epsilon_i, delta_i)`` shares (``split_kinds``), which hold
    the selection's pure part: that pipeline fits. Under the outer search's zCDP allowance it keeps zCDP shares,
    so the inner search is still refused there, before anything is spent."""
    from sklearn_dpsco import DPStandardScaler, make_dp_pipeline

    acc = BudgetAccountant(100.0, 1e-3)
    inner = DPGridSearchCV(DPHingeClassifier(), {"alpha": [1e-3, 1e-2]}, random_state=0)
    make_dp_pipeline(DPStandardScaler(), inner, epsilon=1.0, delta=1e-6, accountant=acc).fit(X, Y)
    assert len(acc.ledger) == 2
    assert epsilon_delta(ComposedEvent(tuple(e.event for e in acc.ledger)), delta=1e-6)[0] <= 1.0
    acc = BudgetAccountant(100.0, 1e-3)
    outer = DPGridSearchCV(make_dp_pipeline(DPStandardScaler(), inner), {"dpstandardscaler__scale_share": [0.2, 0.4]},
                           epsilon=1.0, delta=1e-6, accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError, match="would refuse its fit"):
        outer.fit(X, Y)
    assert acc.ledger == ()
    # at delta = 0 the same pipeline fits, one spend per step
    make_dp_pipeline(DPStandardScaler(), inner, epsilon=1.0, accountant=acc).fit(X, Y)
    assert len(acc.ledger) == 2


@pytest.mark.parametrize("cv", [3, 5])
def test_more_folds_than_users_says_users_and_spends_nothing(cv):
    # scikit-learn's KFold counted the users as "samples" ("n_samples=2"), without saying nothing was spent
    acc = BudgetAccountant(100.0, 0.5)
    search = DPGridSearchCV(UserLevelDPLogistic(), {"alpha": [0.01, 0.1]}, epsilon=1.0, delta=1e-6, cv=cv,
                            selection="exponential", accountant=acc, random_state=0)
    with pytest.raises(ValueError, match=f"cannot split the search's {cv - 1} users.*Nothing was spent"):
        search.fit(X, Y, groups=np.arange(600) % (cv - 1))
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("with_scaler", [False, True], ids=["log first", "log after a scaler"])
def test_a_pipeline_candidate_whose_log_fails_is_refused_before_the_reservation(with_scaler):
    # the candidates' checks ran the pipeline's checks on a stand-in only: the search charged its whole
    # budget, then every candidate's model refused the log's -inf / NaN (the reservation stood)
    from sklearn.preprocessing import FunctionTransformer

    from sklearn_dpsco import DPStandardScaler, make_dp_pipeline

    A = np.abs(X)
    A[:4, 0] = 0.0
    steps = [DPStandardScaler(bounds=(0, 3))] if with_scaler else []
    pipe = make_dp_pipeline(*steps, FunctionTransformer(np.log), DPHingeClassifier())
    acc = BudgetAccountant(100.0)
    search = DPGridSearchCV(pipe, {"dphingeclassifier__alpha": [0.1, 1.0]}, epsilon=1.0, accountant=acc,
                            random_state=0)
    with pytest.raises(ValueError, match="would refuse its fit.*'functiontransformer'.*NaN or infinite"):
        search.fit(A, Y)
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("search_cls", [DPGridSearchCV, DPRandomizedSearchCV])
@pytest.mark.parametrize("how", ["no y", "y", "y and accuracy", "pipeline of transformers"])
def test_a_search_over_a_transformer_is_refused_before_anything_is_spent(search_cls, how):
    # found by the bug hunt: fit(X) raised a bare "missing 1 required positional argument: 'y'", fit(X, y) asked a
    # regressor's scoring, and with scoring='accuracy' the search charged its whole budget, then the first
    # candidate failed on its missing predict. The private scorers score predictions against y (scikit-learn's
    # GridSearchCV refuses a transformer without score or scoring too, with a TypeError)
    from sklearn_dpsco import DPStandardScaler, RowNormClipper, make_dp_pipeline

    acc = BudgetAccountant(100.0)
    est, grid = DPStandardScaler(bounds=(-5.0, 5.0)), {"with_mean": [True, False]}
    if how == "pipeline of transformers":
        est = make_dp_pipeline(RowNormClipper(1.0), est)
        grid = {"dpstandardscaler__with_mean": [True, False]}
    extra = {"n_iter": 2} if search_cls is DPRandomizedSearchCV else {}
    search = search_cls(est, grid, accountant=acc, random_state=0,
                        scoring="accuracy" if how == "y and accuracy" else None, **extra)
    with pytest.raises(TypeError, match=f"{search_cls.__name__} scores each candidate's predictions.*"
                                        f"{type(est).__name__} has no predict.*Nothing was spent."):
        search.fit(X) if how == "no y" else search.fit(X, Y)
    assert len(acc.ledger) == 0 and acc.total() == (0.0, 0.0)


@pytest.mark.parametrize("y", ["omitted", None])
def test_a_search_without_y_says_it_needs_y_before_anything_is_spent(y):
    acc = BudgetAccountant(100.0)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="DPGridSearchCV requires y to be passed.*Nothing was spent."):
        search.fit(X) if y == "omitted" else search.fit(X, y)
    assert len(acc.ledger) == 0


# The searches' own refusals (their parameters, X and y, the scoring, the splitter) before the reservation: found by
# the bug hunt, they did not say that nothing was spent, where the candidates' refusals and DPPipeline's did.
OWN_REFUSALS = [
    ("selection_share", DPGridSearchCV, {"selection_share": 2}, Y, "selection_share must be in"),
    ("refit_share", DPGridSearchCV, {"refit_share": "x"}, Y, "refit_share must be a number or 'auto'"),
    ("one fold", DPGridSearchCV, {"cv": 1, "selection": "exponential"}, Y, "cv must be >= 2 folds"),
    ("scoring", DPGridSearchCV, {"scoring": "nonsense"}, Y, "not supported by a private search"),
    ("selection", DPGridSearchCV, {"selection": "bogus"}, Y, "selection must be"),
    ("n_iter", DPRandomizedSearchCV, {"n_iter": 0}, Y, "n_iter must be an integer >= 1"),
    ("y length", DPGridSearchCV, {}, Y[:-1], "X has 600 rows but y has 599"),
]


@pytest.mark.parametrize("case", OWN_REFUSALS, ids=[c[0] for c in OWN_REFUSALS])
def test_the_searches_own_refusals_say_nothing_was_spent_once(case):
    _, search, kwargs, y, match = case
    acc = BudgetAccountant(5.0)
    grid = {"param_distributions" if search is DPRandomizedSearchCV else "param_grid": {"alpha": [0.1, 1.0]}}
    with pytest.raises(ValueError, match=match) as info:
        search(DPHingeClassifier(), accountant=acc, random_state=0, **grid, **kwargs).fit(X, y)
    message = str(info.value)
    assert message.endswith("Nothing was spent.") and message.count("Nothing was spent") == 1, message
    assert len(acc.ledger) == 0


def _nothing_spent(acc, search):
    assert len(acc.ledger) == 0 and acc.total() == (0.0, 0.0)
    assert not hasattr(search, "best_params_")


@pytest.mark.parametrize("where", ["train", "test"])
def test_a_split_listing_a_row_twice_is_refused(where):
    # the shares count a row once per split: a bootstrap list (a row twice in a training or validation set)
    # would let it enter its fit or its validation mean twice and lose up to twice its share
    a = np.arange(600)
    train, test = a[:400], a[400:]
    split = (np.r_[train, train[:50]], test) if where == "train" else (train, np.r_[test, test[:10]])
    acc = BudgetAccountant(100.0, 0.5)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, epsilon=1.0, accountant=acc, random_state=0,
                            selection="exponential", cv=[split])
    with pytest.raises(ValueError, match="more than once") as info:
        search.fit(X, Y)
    assert "Nothing was spent" in str(info.value)
    _nothing_spent(acc, search)


def test_refit_without_a_refit_share_is_refused_before_the_spend():
    acc = BudgetAccountant(100.0, 0.5)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, epsilon=1.0, accountant=acc, random_state=0,
                            selection="exponential", refit_share=0.0)
    with pytest.raises(ValueError, match="needs refit_share > 0"):
        search.fit(X, Y)
    _nothing_spent(acc, search)
    search.set_params(refit=False).fit(X, Y)  # the selection alone: released, spent once
    assert len(acc.ledger) == 1


@pytest.mark.parametrize("labels", [np.array(["no", "yes"]), np.array([False, True])])
def test_an_error_score_over_labels_that_are_not_numbers_is_refused_before_the_spend(labels):
    acc = BudgetAccountant(100.0, 0.5)
    search = DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, epsilon=1.0, accountant=acc, random_state=0,
                            scoring="neg_mean_absolute_error", loss_bound=1.0)
    with pytest.raises(ValueError, match="classes are not numbers"):
        search.fit(X, labels[Y])
    _nothing_spent(acc, search)

