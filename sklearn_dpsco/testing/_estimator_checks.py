"""The scikit-learn estimator checks the library fails on purpose, and why: one place for every test module.

scikit-learn's common checks (``parametrize_with_checks``,
``check_estimator``) encode what an estimator normally does. A private
estimator deviates from it in a few places, deliberately, because the
privacy guarantee requires it. Each deviation is listed here once, with its
reason, so that every test module running the checks uses the same list and
a tool can read it:

* :func:`expected_failed_checks` — ``{check name: reason}`` for one
  estimator, the ``expected_failed_checks`` argument of
  :func:`sklearn.utils.estimator_checks.parametrize_with_checks`;
* :func:`deliberate_tags` — ``{tag: reason}`` for the tags that relax checks
  (``poor_score``, ``non_deterministic``, ``requires_fit=False``);
* :func:`parametrize_with_checks` — scikit-learn's decorator with its cases
  as a list (scikit-learn 1.6, the oldest supported, hands pytest a
  generator, which pytest deprecates: an error from pytest 10 on);
* :func:`estimator_for_checks` — the estimator the checks can run on. The
  checks call ``fit(X, y)``; an estimator whose guarantee is about users
  needs ``groups`` (:data:`GROUPS_REQUIRED`), and runs the checks through a
  test-only subclass that makes every row its own user.

A listed check that passes in some scikit-learn version is harmless (the
checks are marked non-strict xfail); ``tests/test_estimator_checks.py``
checks that every listed check exists and fails in the installed version,
so the list cannot silently go stale. Privacy units: doc/privacy/accounting.rst.
"""

import numpy as np
from sklearn.utils import get_tags

from ..linear_model import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from ..model_selection import DPGridSearchCV, DPRandomizedSearchCV
from ..preprocessing import DPPipeline, DPStandardScaler

__all__ = [
    "GROUPS_REQUIRED",
    "parametrize_with_checks",
    "RowsAreUsersDPStandardScaler",
    "RowsAreUsersLogistic",
    "deliberate_tags",
    "estimator_for_checks",
    "expected_failed_checks",
]

_WEIGHTS_IN_UNIT_INTERVAL = (
    "sample_weight must lie in [0, 1]: a weight above 1 would let one row move the model more than the privacy "
    "guarantee allows (the guarantee is for one row of weight at most 1); the check uses integer weights >= 2"
)
_WEIGHTS_NOT_DUPLICATES = (
    _WEIGHTS_IN_UNIT_INTERVAL + "; and a private fit adds fresh noise, so a weighted fit cannot equal the fit on "
    "duplicated rows"
)
_ZERO_WEIGHTS_FITTED = (
    "all-zero sample weights are fitted, not refused: a weight is part of its private row, so refusing them would "
    "reveal whether a neighbour's one positive weight is 0 (a data-dependent refusal); the fit then releases a "
    "model of the noise alone, at the same privacy cost"
)

#: Checks a row-level linear model with ``sample_weight`` fails on purpose.
_SAMPLE_WEIGHT_CHECKS = {
    "check_sample_weights_list": _WEIGHTS_IN_UNIT_INTERVAL,
    "check_sample_weights_not_overwritten": _WEIGHTS_IN_UNIT_INTERVAL,
    "check_sample_weight_equivalence_on_dense_data": _WEIGHTS_NOT_DUPLICATES,
    "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS_NOT_DUPLICATES,
    "check_all_zero_sample_weights_error": _ZERO_WEIGHTS_FITTED,
}

_STEPS_FITTED_IN_PLACE = (
    "DPPipeline fits its steps in place, as scikit-learn's Pipeline does (the check hashes the steps parameter "
    "before and after fit); scikit-learn lists the same check as an expected failure of its own Pipeline"
)
_SEARCH_ON_TEN_ROWS = (
    "the check fits on 10 rows with one class weighted 0: a private search splits off validation rows and fits "
    "each candidate on a share of epsilon, so on 8 rows the noise decides some predictions (the estimator alone, "
    "with its whole epsilon, passes)"
)

_SEARCH_TRAIN_ACCURACY = (
    "the check asks for training accuracy > 0.83 on 200-300 rows in 2 features at epsilon 1: the search fits every "
    "candidate on a share of epsilon, selects privately and refits on another share, so the noise decides the "
    "accuracy (0.25-0.97 over 10 seeds on the check's 3-class data; the estimator alone 0.78-0.92)"
)

_EXPECTED_FAILED = {
    DPHingeClassifier: _SAMPLE_WEIGHT_CHECKS,
    DPLinearRegressor: _SAMPLE_WEIGHT_CHECKS,
    DPGrowthAdaptiveRegressor: _SAMPLE_WEIGHT_CHECKS,
    DPPipeline: {"check_estimators_overwrite_params": _STEPS_FITTED_IN_PLACE},
}

#: Why a user-level estimator cannot run scikit-learn's checks as it is.
GROUPS_REQUIRED = (
    "fit needs groups (the user of each row): the guarantee protects one user, and without groups the estimator "
    "cannot know which rows to protect together, so it refuses. scikit-learn's checks call fit(X, y) without "
    "groups; they run on estimator_for_checks(estimator), a test-only subclass that makes every row its own "
    "user. What the checks cannot test (grouping, the per-user row cap) is tested in test_user_logistic.py and "
    "test_privacy_units.py."
)

_POOR_SCORE = (
    "a private fit on the checks' few dozen rows is dominated by its noise by design; the score threshold of "
    "check_regressors_train is for non-private models"
)
_NON_DETERMINISTIC = (
    "random_state=None draws the noise from the operating system's CSPRNG (the setting for releases), so two fits "
    "differ on purpose; with an int random_state the fit is reproducible and the tag is off"
)
_NO_FIT = "stateless: transform maps each row with public parameters only, so it needs no fit (no budget either)"


def _tag_values(estimator):
    tags = get_tags(estimator)
    values = {
        "non_deterministic": tags.non_deterministic,
        "requires_fit": tags.requires_fit,
    }
    if tags.regressor_tags is not None:
        values["regressor_tags.poor_score"] = tags.regressor_tags.poor_score
    if tags.classifier_tags is not None:
        values["classifier_tags.poor_score"] = tags.classifier_tags.poor_score
    return values


def deliberate_tags(estimator):
    """The tags of ``estimator`` that relax scikit-learn's checks, with the reason for each.

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    dict of str -> str
        ``{tag: reason}`` for every relaxing tag that is on for this
        instance: ``"regressor_tags.poor_score"`` /
        ``"classifier_tags.poor_score"`` (True), ``"non_deterministic"``
        (True), ``"requires_fit"`` (False).
    """
    values = _tag_values(estimator)
    reasons = {
        "regressor_tags.poor_score": _POOR_SCORE,
        "classifier_tags.poor_score": _POOR_SCORE,
        "non_deterministic": _NON_DETERMINISTIC,
    }
    out = {tag: reasons[tag] for tag in reasons if values.get(tag)}
    if values["requires_fit"] is False:
        out["requires_fit"] = _NO_FIT
    return out


def expected_failed_checks(estimator):
    """The scikit-learn checks ``estimator`` fails on purpose: ``{check name: reason}``.

    Pass it as ``expected_failed_checks`` to
    :func:`sklearn.utils.estimator_checks.parametrize_with_checks` (or
    ``check_estimator``). Every other check must pass.

    Parameters
    ----------
    estimator : estimator instance
        A library estimator, or the test-only subclass returned by
        :func:`estimator_for_checks`.

    Returns
    -------
    dict of str -> str
        Empty for an estimator that passes every check (RowNormClipper,
        DPStandardScaler with bounds, UserLevelDPLogistic through
        :func:`estimator_for_checks`).

    Examples
    --------
    >>> from sklearn_dpsco import DPHingeClassifier
    >>> from sklearn_dpsco.testing import expected_failed_checks
    >>> sorted(expected_failed_checks(DPHingeClassifier()))[:2]
    ['check_sample_weight_equivalence_on_dense_data', 'check_sample_weight_equivalence_on_sparse_data']
    """
    for cls, failed in _EXPECTED_FAILED.items():
        if isinstance(estimator, cls):
            return dict(failed)
    if isinstance(estimator, (DPGridSearchCV, DPRandomizedSearchCV)) and isinstance(estimator.estimator,
                                                                                    DPHingeClassifier):
        return {"check_classifiers_one_label_sample_weights": _SEARCH_ON_TEN_ROWS,
                "check_classifiers_train": _SEARCH_TRAIN_ACCURACY}
    return {}


def _rows_as_users(X):
    return np.arange(X.shape[0] if hasattr(X, "shape") else np.asarray(X).shape[0])


class RowsAreUsersLogistic(UserLevelDPLogistic):
    """Test-only :class:`UserLevelDPLogistic`: ``groups=None`` makes every row its own user.

    The real estimator refuses ``fit(X, y)`` without groups
    (:data:`GROUPS_REQUIRED`); scikit-learn's checks call exactly that.
    """

    def fit(self, X, y, groups=None):
        return super().fit(X, y, _rows_as_users(X) if groups is None else groups)


class RowsAreUsersDPStandardScaler(DPStandardScaler):
    """Test-only :class:`DPStandardScaler`: user-level, ``groups=None`` makes every row its own user."""

    def fit(self, X, y=None, groups=None):
        if groups is None and self.privacy_unit == "user":
            groups = _rows_as_users(X)
        return super().fit(X, y, groups)


def estimator_for_checks(estimator):
    """The estimator scikit-learn's checks can run on: ``estimator`` itself, or its rows-as-users subclass.

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    estimator instance
        For :class:`UserLevelDPLogistic` and a user-level
        :class:`DPStandardScaler` (whose ``fit`` needs ``groups``,
        :data:`GROUPS_REQUIRED`), a test-only subclass with the same
        parameters that makes every row its own user when ``groups`` is
        omitted; otherwise ``estimator`` unchanged.
    """
    params = estimator.get_params(deep=False)
    if type(estimator) is UserLevelDPLogistic:
        return RowsAreUsersLogistic(**params)
    if type(estimator) is DPStandardScaler and params["privacy_unit"] == "user":
        return RowsAreUsersDPStandardScaler(**params)
    return estimator


def parametrize_with_checks(estimators, **kwargs):
    """:func:`sklearn.utils.estimator_checks.parametrize_with_checks` with its cases materialised as a list.

    scikit-learn 1.6 passes ``pytest.mark.parametrize`` a generator of
    ``(estimator, check)`` cases; pytest deprecates non-collection argument
    values (an error from pytest 10 on). Same cases, same ids, same marks.
    """
    import pytest
    from sklearn.utils.estimator_checks import parametrize_with_checks as sklearn_parametrize_with_checks

    mark = sklearn_parametrize_with_checks(estimators, **kwargs)
    names, cases = mark.args[0], mark.args[1]
    return pytest.mark.parametrize(names, list(cases), *mark.args[2:], **mark.kwargs)
