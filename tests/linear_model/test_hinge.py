"""DPHingeClassifier: scikit-learn contract, privacy through the estimator, bad input.

T0: exact sensitivity on worst-case neighbours through ``fit`` (coupled
seeds: the outputs differ by exactly the certified centres' displacement,
``2 C / (alpha n)``, below the recorded event's sensitivity); coupling (every
fitted attribute other than coef_/intercept_ is a function of public facts);
bad input raises before anything is spent; defaults follow the documented
public rules. T1: the estimator's noise matches its recorded event (KS, with
a mutant that must be rejected) and the release audited on the estimator's
centres with the half-noise mutant flagged.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from scipy import stats

from sklearn_dpsco.accounting import (
    BudgetAccountant,
    BudgetExceededError,
    ComposedEvent,
    LaplaceEvent,
    epsilon_delta,
    gaussian_mu,
)
from sklearn_dpsco.linear_model import DPHingeClassifier
from sklearn_dpsco.linear_model import _hinge_rules as hinge_rules
from sklearn_dpsco.linear_model._hinge_rules import ALPHA_FACTOR, choose_solver, default_alpha, default_intercept_share
from sklearn_dpsco.testing import (
    audit_epsilon,
    audit_gaussian_dp,
    expected_failed_checks,
    parametrize_with_checks,
    project_on,
)

SOLVERS = list(hinge_rules.SOLVERS)


# the deliberate deviations (sample weights above 1) and their reasons: sklearn_dpsco.testing
@parametrize_with_checks([DPHingeClassifier(random_state=0)], expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data(n=600, d=4, seed=0, classes=2):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=min(d, 3), n_redundant=0, n_classes=classes,
        n_clusters_per_class=1, random_state=seed,
    )
    return StandardScaler().fit_transform(X), y


# --------------------------------------------------------------------------- exact sensitivity through fit
def _worst_case(n, d, scale=1.0):
    """All rows equal (norm ``scale``), label +1; D' flips the last label. With alpha large every
    margin stays below 1, the hinge is linear there and a flip moves the minimizer by exactly
    2 C / (alpha n) — the bound (clip >= scale)."""
    X = np.zeros((n, d))
    X[:, 0] = scale
    y = np.ones(n, dtype=int)
    yp = y.copy()
    yp[-1] = 0
    return X, y, yp


def _full_coef(est):
    w = est.coef_.ravel()
    if est.fit_intercept:
        w = np.append(w, est.intercept_[0] / est.intercept_scaling_)
    return w


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_exact_sensitivity_through_fit(fit_intercept):
    n, d, alpha, clip, t = 50, 2, 4.0, 1.0, 0.05
    X, y, yp = _worst_case(n, d, scale=0.6 if fit_intercept else 1.0)
    kw = dict(epsilon=1.0, solver="output_perturbation", clip=clip, alpha=alpha, tolerance=t,
              fit_intercept=fit_intercept, intercept_scaling=0.8, intercept_share=0, classes=[0, 1], random_state=3)
    a = DPHingeClassifier(**kw).fit(X, y)
    b = DPHingeClassifier(**kw).fit(X, yp)
    move = np.linalg.norm(_full_coef(a) - _full_coef(b))  # same seed: identical noise, so only centres differ
    exact = 2 * clip / (alpha * n)
    tau = t * exact
    assert abs(move - exact) <= 2 * tau + 1e-12
    assert a.privacy_event_ == b.privacy_event_
    assert isinstance(a.privacy_event_, LaplaceEvent) and a.privacy_event_.norm == "l2"
    assert a.privacy_event_.sensitivity == pytest.approx(exact * (1 + 2 * t), rel=1e-12)
    assert a.privacy_event_.scale == pytest.approx(exact * (1 + 2 * t), rel=1e-12)  # epsilon = 1
    assert a.epsilon_spent_ == pytest.approx(1.0)


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_exact_sensitivity_at_declared_share(scale):
    """A declared bound with small noise per row (n epsilon / d >= 300) is fitted at c = DECLARED_CLIP_SHARE x
    clip: the release's sensitivity is 2 c / (alpha n), reached by rows of norm c and by rows at the
    bound (down-weighted by c / ||x||), and the event records it."""
    n, d, alpha, declared, t = 1000, 2, 4.0, 1.0, 0.05
    X, y, yp = _worst_case(n, d, scale=scale)
    kw = dict(epsilon=1.0, solver="output_perturbation", clip=declared, alpha=alpha, tolerance=t,
              fit_intercept=False, intercept_share=0, classes=[0, 1], random_state=3)
    a = DPHingeClassifier(**kw).fit(X, y)
    b = DPHingeClassifier(**kw).fit(X, yp)
    c = hinge_rules.DECLARED_CLIP_SHARE * declared
    assert n * 1.0 / d >= hinge_rules.LOCALIZE_ABOVE and a.clip_ == pytest.approx(c)
    exact = 2 * c / (alpha * n)
    move = np.linalg.norm(_full_coef(a) - _full_coef(b))  # coupled noise: only the centres differ
    assert abs(move - exact) <= 2 * t * exact + 1e-12
    assert a.privacy_event_ == b.privacy_event_
    assert a.privacy_event_.sensitivity == pytest.approx(exact * (1 + 2 * t), rel=1e-12)
    # the bound itself is used below the threshold (n epsilon / d = 25 here)
    small = DPHingeClassifier(**{**kw, "epsilon": 0.05}).fit(X, y)
    assert small.clip_ == declared and small.privacy_event_.sensitivity == pytest.approx(
        2 * declared / (alpha * n) * (1 + 2 * t), rel=1e-12)


def test_heavy_row_moves_model_at_most_sensitivity():
    """A row of norm 1e6 (far above clip) replaced: the extension keeps the move below the bound."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3)) * 0.3
    y = (X[:, 0] > 0).astype(int)
    Xp = X.copy()
    Xp[0] = [1e6, -1e6, 5e5]
    kw = dict(epsilon=1.0, solver="output_perturbation", clip=1.0, alpha=0.5, random_state=1, classes=[0, 1],
              intercept_share=0)  # the solver's release alone (the refit is tested in test_intercept_refit.py)
    a = DPHingeClassifier(**kw).fit(X, y)
    b = DPHingeClassifier(**kw).fit(Xp, y)
    move = np.linalg.norm(_full_coef(a) - _full_coef(b))
    assert move <= a.privacy_event_.sensitivity


@pytest.mark.parametrize("solver", ["localized_output_perturbation", "ald_localization"])
def test_localized_last_block_and_unused_rows(solver):
    """Phases run on disjoint blocks: a flip in the last block moves the output by at most that phase's
    sensitivity (earlier phases identical under coupled seeds; projection is non-expansive), and a
    flip in a row no block uses leaves the output bit-identical."""
    rng = np.random.default_rng(0)
    n = 1000
    X = rng.standard_normal((n, 2)) * 0.4
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    # centering=False: the centre reads every row (tests/privacy/test_centering_rows.py); here the solver alone
    kw = dict(epsilon=1.0, solver=solver, clip=1.0, classes=[0, 1], random_state=4, intercept_share=0,
              centering=False)
    base = DPHingeClassifier(**kw).fit(X, y)
    blocks = base.fit_info_[0]["blocks"]
    last = blocks[-1][-1] if solver == "localized_output_perturbation" else blocks[-1]
    used_until = last[1]
    assert used_until < n  # the schedule leaves a remainder unused
    for row, bound in ((last[0], base.privacy_event_.events[-1]), (n - 1, None)):
        yp = y.copy()
        yp[row] = 1 - yp[row]
        other = DPHingeClassifier(**kw).fit(X, yp)
        move = np.linalg.norm(_full_coef(base) - _full_coef(other))
        if bound is None:
            assert move == 0.0
        else:
            assert 0 < move <= bound.sensitivity


# --------------------------------------------------------------------------- statistical: through the estimator
def _one_dim_pair(n=20):
    X = np.ones((n, 1))
    y = np.ones(n, dtype=int)
    yp = y.copy()
    yp[-1] = 0
    return X, y, yp


@pytest.mark.statistical
def test_estimator_noise_matches_its_event():
    """400 fits with different seeds: output minus centre is Laplace(scale) in 1-D (the 1-D l2-Laplace):
    KS for the shape, the exact Gamma(400, scale) law of sum |z| for the scale — which must reject the
    0.7x and 1.3x mutants of the recorded event."""
    X, y, _ = _one_dim_pair()
    kw = dict(epsilon=1.0, solver="output_perturbation", clip=1.0, alpha=2.0, fit_intercept=False, classes=[0, 1])
    outs = np.array([DPHingeClassifier(random_state=s, **kw).fit(X, y).coef_[0, 0] for s in range(400)])
    scale = DPHingeClassifier(random_state=0, **kw).fit(X, y).privacy_event_.scale
    centre = 0.5  # margins below 1: the minimizer is mean(y x) / alpha = 1/2 (within the certified tau)
    z = outs - centre
    assert stats.kstest(z, stats.laplace(scale=scale).cdf).pvalue > 1e-4

    def scale_pvalue(b):
        cdf = stats.gamma(a=z.size, scale=b).cdf(np.abs(z).sum())
        return 2 * min(cdf, 1 - cdf)

    assert scale_pvalue(scale) > 1e-4
    assert scale_pvalue(0.7 * scale) < 1e-6 and scale_pvalue(1.3 * scale) < 1e-6


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_release_audit_on_estimator_centres(delta):
    """Centres measured through fit (coupled seeds: the outputs' difference is the centres'
    difference); releases drawn from the estimator's recorded event; 1e5 draws per side.
    The true noise passes, half of it is flagged. Float noise: coupled seeds then shift the
    outputs by exactly the centres' difference (the secure path's grid is audited in
    test_secure_noise.py)."""
    X, y, yp = _one_dim_pair()
    eps = 1.0
    kw = dict(epsilon=eps, delta=delta, solver="output_perturbation", clip=1.0, alpha=2.0, fit_intercept=False,
              classes=[0, 1], random_state=7, noise="float")
    a = DPHingeClassifier(**kw).fit(X, y)
    b = DPHingeClassifier(**kw).fit(X, yp)
    shift = a.coef_[0, 0] - b.coef_[0, 0]
    event = a.privacy_event_
    assert 0 < shift <= event.sensitivity
    rng = np.random.default_rng(11)
    for mult, flagged in ((1.0, False), (0.5, True)):
        if delta == 0:
            draw = lambda c: c + rng.laplace(0, event.scale * mult, size=100_000)  # noqa: E731
        else:
            draw = lambda c: c + rng.normal(0, event.sigma * mult, size=100_000)  # noqa: E731
        s_a = project_on(draw(shift)[:, None], [shift], [0.0])
        s_b = project_on(draw(0.0)[:, None], [shift], [0.0])
        res = audit_gaussian_dp(s_a, s_b, eps, delta) if delta else audit_epsilon(s_a, s_b, eps)
        assert res.violation is flagged, res


# --------------------------------------------------------------------------- coupling
@pytest.mark.parametrize("solver", SOLVERS)
def test_fitted_attributes_other_than_outputs_are_public(solver):
    rng = np.random.default_rng(0)
    n, d = 600, 3
    Xa, ya = rng.standard_normal((n, d)), rng.integers(0, 3, n)
    Xb, yb = 100 * rng.standard_t(2, (n, d)), rng.integers(0, 3, n)
    kw = dict(epsilon=2.0, solver=solver, classes=[0, 1, 2], clip=None)  # declared: no private estimate
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning on one dataset only would leak; none on either
        a = DPHingeClassifier(random_state=1, **kw).fit(Xa, ya)
        b = DPHingeClassifier(random_state=2, **kw).fit(Xb, yb)
    public = ["solver_", "privacy_event_", "epsilon_spent_", "delta_spent_", "clip_", "alpha_", "radius_",
              "intercept_scaling_", "fit_info_", "n_features_in_", "noise_source_"]
    for name in public:
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.classes_, b.classes_)
    assert a.coef_.shape == b.coef_.shape == (3, d) and a.intercept_.shape == (3,)
    assert not np.allclose(a.coef_, b.coef_)


# --------------------------------------------------------------------------- budget, multiclass, inputs
def test_multiclass_budget_split_and_accounting():
    X, y = _data(n=600, classes=3)
    acc = BudgetAccountant(epsilon=3.0)
    est = DPHingeClassifier(epsilon=1.5, clip=None, accountant=acc, random_state=0).fit(X, y)
    assert isinstance(est.privacy_event_, ComposedEvent) and len(est.privacy_event_.events) == 3
    assert est.epsilon_spent_ == pytest.approx(1.5)
    assert epsilon_delta(est.privacy_event_.events[0])[0] == pytest.approx(0.5)  # solver + intercept refit
    assert acc.total()[0] == pytest.approx(1.5) and len(acc.ledger) == 1
    info = est.fit_info_[0]  # the solver's part and the refit's, per problem
    assert info["epsilon"] + info["intercept_refit_epsilon"] == pytest.approx(0.5)
    # approximate DP: Gaussian parts (GDP for float noise, zCDP for secure noise) composing to (epsilon, delta)
    for noise in ("float", "secure"):
        g = DPHingeClassifier(epsilon=1.0, delta=1e-6, noise=noise, clip=None, random_state=0).fit(X, y)
        assert epsilon_delta(g.privacy_event_, delta=1e-6)[0] == pytest.approx(1.0, rel=1e-6)
        assert g.epsilon_spent_ <= 1.0 and g.delta_spent_ == 1e-6
    # clone shares the ledger; an exhausted budget refuses before touching the data
    est2 = clone(est)
    est2.fit(X, y)
    assert acc.total()[0] == pytest.approx(3.0)
    before = acc.ledger
    with pytest.raises(BudgetExceededError):
        clone(est).fit(X, y)
    assert acc.ledger == before


def test_multiclass_utility_and_prediction_shapes():
    X, y = _data(n=3000, d=5, classes=3, seed=1)
    est = DPHingeClassifier(epsilon=4.0, random_state=0).fit(X, y)
    ref = LinearSVC().fit(X, y).score(X, y)
    assert est.score(X, y) >= ref - 0.1
    assert est.decision_function(X).shape == (3000, 3)
    assert set(np.unique(est.predict(X))) <= set(est.classes_)


def test_binary_utility_standardized_defaults():
    """Defaults (clip = sqrt(d), alpha rule, auto) on standardized data, epsilon = 1."""
    X, y = make_classification(n_samples=8000, n_features=8, n_informative=5, random_state=0)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = X[:6000], X[6000:], y[:6000], y[6000:]
    ref = LinearSVC().fit(Xtr, ytr).score(Xte, yte)
    scores = [DPHingeClassifier(epsilon=1.0, random_state=s).fit(Xtr, ytr).score(Xte, yte) for s in range(3)]
    assert np.mean(scores) >= ref - 0.03


@pytest.mark.parametrize("params", [{}, {"clip": 1.0, "centering": False}])
def test_near_constant_columns_fit(params):
    """Regression: almost-constant columns (spread 1e-6 around an offset, as a noisy DPStandardScaler leaves
    them) and labels the rows do not explain put every majority row at the hinge's kink; the certified ascent
    needed more than its 2000 passes and the default fit refused (CertificationError; Benefits after
    DPStandardScaler at epsilon 2). The interior-point restart certifies it (output perturbation, and the
    localization phases with their domain ball)."""
    rng = np.random.default_rng(0)
    n = 3000
    X = np.c_[0.2 * rng.normal(size=(n, 12)), rng.uniform(-0.3, 0.3, size=5) + 1e-6 * rng.normal(size=(n, 5))]
    y = np.where(rng.uniform(size=n) < 0.7, 1, 0)
    clf = DPHingeClassifier(epsilon=2.0 if params else 1.0, random_state=0, **params).fit(X, y)
    assert clf.solver_ == ("localized_output_perturbation" if params else "output_perturbation")
    assert np.all(np.isfinite(clf.coef_))


def test_pandas_and_csr_input():
    pd = pytest.importorskip("pandas")
    X, y = _data(n=400, d=3)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    kw = dict(epsilon=1.0, clip=None, random_state=0, intercept_share=0)
    dense = DPHingeClassifier(**kw).fit(X, y)
    frame = DPHingeClassifier(**kw).fit(df, pd.Series(y))
    csr = DPHingeClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(frame.feature_names_in_, ["a", "b", "c"])
    np.testing.assert_allclose(dense.coef_, frame.coef_)
    # two certified solves, each within tau of the same exact minimizer, plus the same noise
    np.testing.assert_allclose(dense.coef_, csr.coef_, atol=dense.privacy_event_.sensitivity)
    np.testing.assert_array_equal(csr.predict(sp.csr_matrix(X)), dense.predict(X))


@pytest.mark.parametrize("solver", ["output_perturbation", "localized_output_perturbation"])
def test_results_independent_of_n_jobs(solver):
    X, y = _data(n=600, classes=3)
    kw = dict(solver=solver, random_state=5, repeats=1 if solver == "output_perturbation" else 3)
    a = DPHingeClassifier(n_jobs=1, **kw).fit(X, y)
    b = DPHingeClassifier(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_sample_weight_is_used_and_bounded():
    X, y = _data(n=600)
    kw = dict(epsilon=1.0, random_state=0)
    base = DPHingeClassifier(**kw).fit(X, y)
    w = np.where(np.arange(600) % 2 == 0, 1.0, 0.2)
    weighted = DPHingeClassifier(**kw).fit(X, y, sample_weight=w)
    assert not np.allclose(base.coef_, weighted.coef_)  # weights are not ignored
    assert weighted.privacy_event_ == base.privacy_event_  # and they do not change the guarantee
    for bad, match in [(np.full(600, 1.5), r"\[0, 1\]"), (np.ones(5), "shape")]:
        acc = BudgetAccountant()
        with pytest.raises(ValueError, match=match):
            DPHingeClassifier(accountant=acc, **kw).fit(X, y, sample_weight=bad)
        assert acc.ledger == ()
    # a weight is part of its row: all-zero weights are fitted like any weights (refusing them would tell
    # whether the one positive weight of a neighbour is 0); the same event either way
    one = np.zeros(600)
    one[-1] = 1.0
    fits = [DPHingeClassifier(**kw).fit(X, y, sample_weight=w) for w in (one, np.zeros(600))]
    assert fits[0].privacy_event_ == fits[1].privacy_event_ == base.privacy_event_


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.1}, "delta"),
        ({"clip": 0.0}, "clip"),
        ({"solver": "sgd"}, "solver"),
        ({"tolerance": 0.0}, "tolerance"),
    ],
)
def test_bad_parameters_raise_before_spending(params, match):
    X, y = _data(n=100)
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=match):
        DPHingeClassifier(accountant=acc, **params).fit(X, y)
    assert acc.ledger == ()


def test_bad_data_raises_before_spending():
    X, y = _data(n=100)
    acc = BudgetAccountant()
    est = DPHingeClassifier(accountant=acc, random_state=0)
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    cases = [
        ((Xnan, y), "NaN"),
        ((Xinf, y), "infinity"),
        ((X, np.zeros(100, dtype=int)), "at least 2 classes"),
        ((X, y[:50]), "inconsistent numbers of samples"),
        ((X[:, 0], y), "2D array"),
    ]
    for (Xi, yi), match in cases:
        with pytest.raises(ValueError, match=match):
            est.fit(Xi, yi)
    with pytest.raises(ValueError, match=r"not listed in classes: .*\. Nothing was spent\."):
        DPHingeClassifier(accountant=acc, classes=[0, 2]).fit(X, y)
    assert acc.ledger == ()
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    # a failed refit leaves the fitted model untouched
    coef = est.coef_.copy()
    with pytest.raises(ValueError):
        est.fit(Xnan, y)
    np.testing.assert_array_equal(est.coef_, coef)
    assert len(acc.ledger) == 1


def test_budget_exhausted_clear_error_nothing_spent():
    X, y = _data(n=200)
    acc = BudgetAccountant(epsilon=1.0)
    DPHingeClassifier(epsilon=0.8, accountant=acc, random_state=0).fit(X, y)
    with pytest.raises(BudgetExceededError, match="budget|ceiling|exceed"):
        DPHingeClassifier(epsilon=0.5, accountant=acc, random_state=0).fit(X, y)
    assert acc.total()[0] == pytest.approx(0.8) and len(acc.ledger) == 1


# --------------------------------------------------------------------------- defaults and solver choice
def test_default_settings_follow_public_rules():
    X, y = _data(n=1000, d=4)
    est = DPHingeClassifier(epsilon=0.5, clip=None, random_state=0).fit(X, y)
    assert est.solver_ == "output_perturbation"
    assert est.clip_ == pytest.approx(2.0)  # sqrt(4)
    assert est.intercept_scaling_ == pytest.approx(1.0)
    assert est.radius_ == pytest.approx(10.0)
    # min(ALPHA_FACTOR clip^2 u / (n d), clip^2 / d) with u = d / epsilon at pure DP, at the solver's
    # epsilon: the intercept refit takes min(0.3, max(0.02, 500 / (n epsilon))) of it first
    share = default_intercept_share(1000, 5, 0.5)
    assert share == pytest.approx(0.3)  # 500 / (n epsilon) = 1 above the cap
    solver_eps = 0.5 * (1 - share)
    assert est.fit_info_[0]["epsilon"] == pytest.approx(solver_eps)
    assert est.fit_info_[0]["intercept_refit_epsilon"] == pytest.approx(0.5 * share)
    assert est.alpha_ == pytest.approx(min(ALPHA_FACTOR * 4.0 / (solver_eps * 1000), 4.0 / 5))
    assert est.alpha_ == pytest.approx(default_alpha(1000, 5, 2.0, solver_eps, 0.0))
    # Gaussian: the expected noise norm per unit sensitivity is about sqrt(d) / mu(epsilon, delta)
    gauss = default_alpha(1000, 5, 2.0, 0.5, 1e-6)
    assert gauss == pytest.approx(min(ALPHA_FACTOR * 4.0 * math.sqrt(5) / gaussian_mu(0.5, 1e-6) / 1000 / 5, 4.0 / 5))
    assert est.get_params()["clip"] is None and est.get_params()["alpha"] is None  # fit did not write them
    assert DPHingeClassifier().get_params()["clip"] == "auto"  # the default: privately estimated


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_every_solver_by_name(solver, delta):
    X, y = _data(n=1500, d=3)
    est = DPHingeClassifier(epsilon=2.0, delta=delta, solver=solver, clip=None, random_state=0).fit(X, y)
    assert est.solver_ == solver
    report = epsilon_delta(est.privacy_event_, delta=delta if delta else None)
    assert report[0] == pytest.approx(2.0, rel=1e-6)
    assert est.score(X, y) > 0.5
    if solver != "output_perturbation":
        assert np.linalg.norm(_full_coef(est)) <= est.radius_ * (1 + 1e-9)


def test_auto_table():
    """The documented table: localize when n / noise_norm_per_unit >= 300 and blocks are big enough."""
    assert choose_solver(2000, 21, 2.0, 0.0) == "output_perturbation"  # n eps / d = 190
    assert choose_solver(2000, 21, 5.0, 0.0) == "localized_output_perturbation"  # 476
    assert choose_solver(20000, 21, 0.1, 0.0) == "output_perturbation"  # 95
    assert choose_solver(20000, 21, 0.5, 0.0) == "localized_output_perturbation"  # 476
    assert choose_solver(6300, 21, 1.0, 0.0) == "localized_output_perturbation"  # 300
    assert choose_solver(6299, 21, 1.0, 0.0) == "output_perturbation"
    assert choose_solver(700, 1, 100.0, 0.0) == "output_perturbation"  # phase 4 would have 43 rows < 50
    # approximate DP: the Gaussian noise norm sqrt(d) / mu replaces d / epsilon
    u = math.sqrt(21) / gaussian_mu(1.0, 1e-6)
    n_min = math.ceil(hinge_rules.LOCALIZE_ABOVE * u)
    assert choose_solver(n_min, 21, 1.0, 1e-6) == "localized_output_perturbation"
    assert choose_solver(n_min - 1, 21, 1.0, 1e-6) == "output_perturbation"
    X, y = _data(n=6000, d=3)
    assert DPHingeClassifier(epsilon=1.0, random_state=0).fit(X, y).solver_ == "localized_output_perturbation"
    assert DPHingeClassifier(epsilon=0.1, random_state=0).fit(X, y).solver_ == "output_perturbation"  # 150


def _label_fit(fit, acc):
    """The four ways a classifier's labels reach a fit (400 rows; "user": 4 rows a user): ``(estimator, fit kwargs)``."""
    from sklearn_dpsco import DPGridSearchCV, DPStandardScaler, UserLevelDPLogistic, make_dp_pipeline

    est = {
        "hinge": lambda: DPHingeClassifier(accountant=acc),
        "user": lambda: UserLevelDPLogistic(accountant=acc),
        "search": lambda: DPGridSearchCV(DPHingeClassifier(), {"alpha": [0.1, 1.0]}, accountant=acc),
        "pipeline": lambda: make_dp_pipeline(DPStandardScaler(), DPHingeClassifier(), accountant=acc),
    }[fit]()
    return est, ({"groups": np.arange(400) // 4} if fit == "user" else {})


@pytest.mark.parametrize("missing", [None, np.nan])
@pytest.mark.parametrize("fit", ["hinge", "user", "search", "pipeline"])
def test_missing_object_labels_are_named_before_spending(fit, missing):
    # found by a bug hunt: None among string labels raised "TypeError: '<' not supported between instances of
    # 'NoneType' and 'str'", naming neither y nor the cause (a NaN was already refused as "Input contains NaN")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.where(X[:, 0] > 0, "yes", "no").astype(object)
    y[7] = missing
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    est, kw = _label_fit(fit, acc)
    text = "y contains missing labels: None, NaN or pd.NA.*Nothing was spent" if missing is None else "NaN"
    with pytest.raises(ValueError, match=text):
        est.fit(X, y, **kw)
    assert acc.total() == (0.0, 0.0) and len(acc.ledger) == 0


@pytest.mark.parametrize("first", ["string", "number"])
@pytest.mark.parametrize("fit", ["hinge", "user", "search", "pipeline"])
def test_mixed_string_and_number_labels_are_named_before_spending(fit, first):
    # found by the bug hunt: strings mixed with numbers raised numpy's "TypeError: '<' not supported between
    # instances of 'int' and 'str'" (first label a string; scikit-learn's estimators too) or "Unknown label type:
    # unknown ... regression target" (first label a number); both now say scikit-learn's unique_labels' words
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.array(["yes" if v > 0 else 0 for v in X[:, 0]], dtype=object)
    y[0] = "yes" if first == "string" else 0
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    est, kw = _label_fit(fit, acc)
    with pytest.raises(ValueError, match=r"Mix of label input types \(string and number\): y holds labels of types "
                                         r"\['int', 'str'\].*Nothing was spent.$"):
        est.fit(X, y, **kw)
    assert acc.total() == (0.0, 0.0) and len(acc.ledger) == 0
    est.fit(X, y.astype(str), **kw)  # one type: fits
