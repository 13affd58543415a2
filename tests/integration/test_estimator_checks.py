"""scikit-learn's estimator checks for the transformers, and the one list of deliberate deviations.

* DPStandardScaler (row- and user-level, pure and Gaussian) and
  RowNormClipper pass every check (the estimators' own test modules run
  them for the linear models), with the deviations of
  ``sklearn_dpsco.testing.expected_failed_checks``;
* DPPipeline (make_dp_pipeline), DPGridSearchCV and DPRandomizedSearchCV pass every check as a user builds them,
  with the deviations listed there (the pipeline's in-place step fits, as scikit-learn's own Pipeline);
* the list cannot go stale: every check it names exists in the installed
  scikit-learn and fails there, for the reason given (a weight above 1);
* every tag that relaxes a check is documented by ``deliberate_tags``;
* user-level estimators refuse ``fit(X, y)`` without groups, which is why
  their checks run through ``estimator_for_checks``.
"""

import numpy as np
import pytest
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import estimator_checks_generator

from sklearn_dpsco import (
    DPGrowthAdaptiveRegressor,
    DPHingeClassifier,
    DPLinearRegressor,
    DPStandardScaler,
    RowNormClipper,
    UserLevelDPLogistic,
)
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.model_selection import DPGridSearchCV, DPRandomizedSearchCV
from sklearn_dpsco.preprocessing import make_dp_pipeline
from sklearn_dpsco.testing import (
    GROUPS_REQUIRED,
    deliberate_tags,
    estimator_for_checks,
    expected_failed_checks,
    parametrize_with_checks,
)

TRANSFORMERS = [
    DPStandardScaler(random_state=0),  # the default: bounds="auto"
    DPStandardScaler(epsilon=50.0, random_state=0),  # auto, with budget enough to estimate on the checks' data
    DPStandardScaler(bounds=(-5.0, 5.0), random_state=0),
    DPStandardScaler(bounds=(-5.0, 5.0), delta=1e-5, noise="float", random_state=0),
    estimator_for_checks(
        DPStandardScaler(bounds=(-5.0, 5.0), privacy_unit="user", max_items_per_user=3, random_state=0)
    ),
    RowNormClipper(),
    RowNormClipper(2.0, norm="l1"),
]

#: The meta-estimators, as a user builds them (found by the bug hunt: none ran scikit-learn's checks, and both
#: searches failed check_fit2d_1sample).
META_ESTIMATORS = [
    make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0)),
    DPGridSearchCV(DPHingeClassifier(random_state=0), {"alpha": [0.01, 0.1]}, random_state=0),
    DPRandomizedSearchCV(DPLinearRegressor(random_state=0), {"scale_share": [0.2, 0.3]}, n_iter=2, random_state=0,
                         scoring="neg_mean_absolute_error", loss_bound=10.0),
]


#: Every estimator whose checks the suite runs, as it runs them.
CHECKED = TRANSFORMERS + META_ESTIMATORS + [
    DPHingeClassifier(random_state=0),
    DPLinearRegressor(random_state=0),
    DPLinearRegressor(delta=1e-5, random_state=0),
    DPGrowthAdaptiveRegressor(random_state=0),
    estimator_for_checks(UserLevelDPLogistic(epsilon=1e4, delta=1e-3, random_state=0)),
]


@parametrize_with_checks(TRANSFORMERS, expected_failed_checks=expected_failed_checks)
def test_sklearn_conformance(estimator, check):
    check(estimator)


@parametrize_with_checks(META_ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_meta_estimators_sklearn_conformance(estimator, check):
    check(estimator)


def _check_name(check):
    return getattr(check, "func", check).__name__


@pytest.mark.parametrize("estimator", [DPHingeClassifier(random_state=0), DPLinearRegressor(random_state=0),
                                       DPGrowthAdaptiveRegressor(random_state=0)], ids=type)
def test_listed_deviations_exist_and_fail(estimator):
    """Each listed check is one scikit-learn runs on this estimator, and it fails (no stale entry)."""
    listed = expected_failed_checks(estimator)
    assert listed and all(len(reason) > 40 for reason in listed.values())
    checks = {_check_name(c): (est, c) for est, c in estimator_checks_generator(estimator, mark=None)}
    present = set(listed) & set(checks)
    # the names changed across versions; at least the list-of-weights check exists in all
    assert "check_sample_weights_list" in present
    for name in present:
        est, check = checks[name]
        if name == "check_all_zero_sample_weights_error":  # newer scikit-learn: the fit does not refuse them
            with pytest.raises(AssertionError):
                check(est)
            continue
        with pytest.raises(ValueError, match="sample_weight must lie in"):
            check(est)


def test_every_relaxing_tag_has_a_reason():
    relaxing = {"non_deterministic": True, "requires_fit": False, "poor_score": True}
    for estimator in CHECKED + [DPHingeClassifier()]:
        tags = get_tags(estimator)
        on = set()
        if tags.non_deterministic:
            on.add("non_deterministic")
        if not tags.requires_fit:
            on.add("requires_fit")
        for kind in ("regressor_tags", "classifier_tags"):
            sub = getattr(tags, kind)
            if sub is not None and sub.poor_score == relaxing["poor_score"]:
                on.add(f"{kind}.poor_score")
        assert set(deliberate_tags(estimator)) == on, type(estimator).__name__
    # the CSPRNG default is non-deterministic, a seeded fit is not
    for make in (DPHingeClassifier, DPLinearRegressor, DPGrowthAdaptiveRegressor, UserLevelDPLogistic):
        assert "non_deterministic" in deliberate_tags(make()), make.__name__
        assert "non_deterministic" not in deliberate_tags(make(random_state=0)), make.__name__


def test_user_level_estimators_need_groups_and_the_check_wrapper_supplies_them():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.arange(40) % 2
    acc = BudgetAccountant(float("inf"), 1.0)  # records without a ceiling
    for est in [
        UserLevelDPLogistic(epsilon=1e3, delta=1e-3, random_state=0, accountant=acc),
        DPStandardScaler(bounds=(-3, 3), privacy_unit="user", random_state=0, accountant=acc),
    ]:
        with pytest.raises(ValueError, match="groups"):
            est.fit(X, y)
        wrapped = estimator_for_checks(est)
        assert type(wrapped) is not type(est) and isinstance(wrapped, type(est))
        assert wrapped.get_params() == est.get_params()
        wrapped.fit(X, y)  # every row its own user
        assert wrapped.privacy_unit == "user"
    assert len(acc.ledger) == 2 and {e.privacy_unit for e in acc.ledger} == {"user"}
    # a row-level estimator is checked as it is
    scaler = DPStandardScaler(bounds=(-1, 1))
    assert estimator_for_checks(scaler) is scaler
    assert "groups" in GROUPS_REQUIRED
