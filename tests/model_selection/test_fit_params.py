"""Fit parameters and metadata routing of the private searches (sklearn_dpsco/model_selection/_fit_params.py).

A parameter reaches every candidate fit indexed by that fit's training rows
and the refit whole; anything a candidate fit would refuse is refused before
the search reserves its budget; with metadata routing on, the estimator's
``set_fit_request`` decides, and a user-level search nested in scikit-learn's
``cross_validate`` receives ``groups`` through routing.
"""

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.model_selection import GroupKFold, cross_validate

from sklearn_dpsco import DPGridSearchCV, DPPipeline, DPRandomizedSearchCV, RowNormClipper
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model import DPHingeClassifier, UserLevelDPLogistic, _base


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(240, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.2 * rng.normal(size=240) > 0).astype(int)
    return X, y, rng.uniform(0.2, 1.0, size=240)


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.fixture
def fit_calls(monkeypatch):
    """Every (rows, sample_weight) a DPHingeClassifier fit receives (not the searches' up-front checks of the
    same calls, ``check_fit``, which stop before any release)."""
    calls = []
    fit = DPHingeClassifier.fit

    def spy(self, X, y, sample_weight=None):
        if _base._CHECKING.get() is not self:
            calls.append((np.array(X), None if sample_weight is None else np.array(sample_weight)))
        return fit(self, X, y, sample_weight=sample_weight)

    monkeypatch.setattr(DPHingeClassifier, "fit", spy)
    return calls


def _search(cls=DPGridSearchCV, estimator=None, **kwargs):
    grid = {"alpha": [0.01, 0.1]}
    kwargs.setdefault("accountant", BudgetAccountant(10.0))
    if cls is DPRandomizedSearchCV:
        kwargs.setdefault("n_iter", 2)
    return cls(estimator if estimator is not None else DPHingeClassifier(clip=1.0), grid, epsilon=1.0,
               random_state=0, **kwargs)


@pytest.mark.parametrize("cls", [DPGridSearchCV, DPRandomizedSearchCV])
@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_sample_weight_reaches_every_fit_indexed_by_its_rows(data, fit_calls, cls, selection):
    X, y, w = data
    search = _search(cls, selection=selection, refit_share=0.5).fit(X, y, sample_weight=w)
    row_of = {row.tobytes(): i for i, row in enumerate(X)}
    assert len(fit_calls) >= 2  # candidate fits (or runs), then the refit
    for rows, weights in fit_calls:
        index = [row_of[row.tobytes()] for row in rows]
        assert len(index) < X.shape[0] or rows is fit_calls[-1][0]
        assert np.array_equal(weights, w[index])  # each row keeps its own weight
    assert len(fit_calls[-1][0]) == X.shape[0]  # the refit: all rows
    assert search.best_estimator_.coef_.shape == (1, 3)


def test_refused_before_spending(data):
    X, y, w = data
    acc = BudgetAccountant(10.0)
    with pytest.raises(TypeError, match="no parameter 'weights'"):
        _search(accountant=acc).fit(X, y, weights=w)
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        _search(accountant=acc).fit(X, y, sample_weight=2 * w)
    with pytest.raises(ValueError, match="shape"):
        _search(accountant=acc).fit(X, y, sample_weight=w[:10])
    with pytest.raises(TypeError, match="UserLevelDPLogistic.fit has no parameter 'sample_weight'"):
        DPGridSearchCV(
            UserLevelDPLogistic(max_items_per_user=2), {"alpha": [0.1]}, epsilon=1.0, delta=1e-6, accountant=acc
        ).fit(X, y, groups=np.arange(240) // 2, sample_weight=w)
    assert acc.ledger == ()


def test_weights_zero_on_a_split_are_fitted_not_refused(data):
    # a weight belongs to its private row: refusing a split whose training weights are all zero would reveal
    # whether the one positive weight (row 0, in one split's test fold) is 0. The search runs and spends once
    X, y, w = data
    zero_on_a_fold = np.zeros_like(w)
    zero_on_a_fold[0] = 1.0
    acc = BudgetAccountant(10.0)
    search = _search(accountant=acc, selection="exponential").fit(X, y, sample_weight=zero_on_a_fold)
    assert len(acc.ledger) == 1 and hasattr(search, "best_params_")


def test_pipeline_step_parameters(data):
    X, y, w = data
    pipe = DPPipeline([("clip", RowNormClipper()), ("clf", DPHingeClassifier(clip=1.0))])
    acc = BudgetAccountant(10.0)
    search = DPGridSearchCV(pipe, {"clf__alpha": [0.01, 0.1]}, epsilon=1.0, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="'<step>__<param>'"):
        search.fit(X, y, sample_weight=w)
    with pytest.raises(TypeError, match="RowNormClipper.fit has no parameter 'sample_weight'"):
        search.fit(X, y, clip__sample_weight=w)
    assert acc.ledger == ()
    search.fit(X, y, clf__sample_weight=w)
    assert len(acc.ledger) == 1


def test_routing_follows_set_fit_request(data, routing, fit_calls):
    X, y, w = data
    acc = BudgetAccountant(10.0)
    with pytest.raises(UnsetMetadataPassedError):
        _search(accountant=acc).fit(X, y, sample_weight=w)
    assert acc.ledger == () and not fit_calls
    _search(DPGridSearchCV, DPHingeClassifier(clip=1.0).set_fit_request(sample_weight=True), accountant=acc).fit(
        X, y, sample_weight=w
    )
    assert fit_calls and all(weights is not None for _, weights in fit_calls)
    fit_calls.clear()
    with pytest.raises(TypeError, match="not routed to any object"):
        _search(DPGridSearchCV, DPHingeClassifier(clip=1.0).set_fit_request(sample_weight=False), accountant=acc).fit(
            X, y, sample_weight=w
        )
    assert len(acc.ledger) == 1 and not fit_calls


def test_user_level_search_inside_cross_validate_gets_groups_by_routing(data, routing):
    X, y, _ = data
    groups = np.arange(X.shape[0]) // 3
    acc = BudgetAccountant(10.0, 1e-3)
    search = DPGridSearchCV(
        UserLevelDPLogistic(max_items_per_user=3, data_norm=1.0), {"alpha": [0.01, 0.1]}, epsilon=1.0,
        delta=1e-6, accountant=acc, random_state=0,
    ).set_fit_request(groups=True)
    result = cross_validate(search, X, y, cv=GroupKFold(2), params={"groups": groups}, error_score="raise")
    assert result["test_score"].shape == (2,)
    # the clones share the search's ledger: two outer folds, two user-level searches charged
    assert len(acc.ledger) == 2 and {entry.privacy_unit for entry in acc.ledger} == {"user"}
