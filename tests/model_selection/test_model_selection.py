"""Private model selection (doc/privacy/model_selection.rst).

T0: split sensitivities against brute force, the budget rule, the search's
ledger identity and refusals, no exact validation score in anything it
releases, exact privacy of random stopping from its generating function.
T1: audits of the exponential selection on worst-case neighbours through the
real scoring path, and of the random-stopping sampler, each with a mutant
that must be flagged.
"""

import math
import numbers

import joblib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold

from sklearn_dpsco import DPGridSearchCV, DPPipeline, DPRandomizedSearchCV, RowNormClipper
from sklearn_dpsco.accounting import (
    BudgetAccountant,
    BudgetExceededError,
    GaussianEvent,
    ParallelComposedEvent,
    PureDPEvent,
    ZCDPEvent,
    epsilon_delta,
)
from sklearn_dpsco.linear_model import DPHingeClassifier
from sklearn_dpsco.model_selection import ExponentialMechanism, RandomStopping
from sklearn_dpsco.model_selection import _search as search_module
from sklearn_dpsco.model_selection._budget import plan_exponential, plan_random_stopping
from sklearn_dpsco.model_selection._scoring import ScoreGrid, get_scorer
from sklearn_dpsco.model_selection._splits import holdout_split, make_splits, row_classes
from sklearn_dpsco.testing import epsilon_lower_bound_from_counts
from sklearn_dpsco.testing._estimators import TinyDPClassifier

ALPHA = 1e-6
N_DRAWS = 100_000


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] + 0.4 > 0).astype(int)
    return X, y


# ------------------------------------------------------------------ splits and their sensitivity
def _brute_force_sensitivity(splits, n):
    """Max over rows of the change of the mean-over-splits accuracy when that row's correctness flips."""
    S = len(splits)
    worst = 0.0
    for i in range(n):
        change = sum(1.0 / (S * te.size) for _, te in splits if i in set(te))
        worst = max(worst, change)
    return worst


@pytest.mark.parametrize(
    "cv,n",
    [(KFold(5, shuffle=True, random_state=0), 103), (ShuffleSplit(4, test_size=0.3, random_state=1), 57)],
)
def test_split_sensitivity_matches_brute_force(cv, n):
    splits = make_splits(cv, n)
    rows = row_classes(splits, n)
    assert rows.sensitivity == pytest.approx(_brute_force_sensitivity(splits, n))
    if isinstance(cv, KFold):
        assert rows.sensitivity == pytest.approx(1 / (5 * 20))  # smallest fold: 20 rows
        assert rows.classes == ((4, 1),)


def test_accuracy_moves_by_exactly_the_sensitivity():
    """Replace one validation row: the real scorer's mean-over-splits moves by the computed sensitivity."""
    n = 40
    train, val = holdout_split(n, 0.25, seed=0)
    rows = row_classes([(train, val)], n)
    scorer = get_scorer(None, True, None)
    est = TinyDPClassifier().set_params(shift=1.0)
    est.classes_, est.coef_ = np.array([0, 1]), np.zeros(2)  # constant classifier: predicts 1
    X = np.zeros((n, 2))
    y = np.zeros(n, dtype=int)
    yp = y.copy()
    yp[val[0]] = 1
    change = abs(scorer(est, X[val], yp[val]) - scorer(est, X[val], y[val]))
    assert change == pytest.approx(rows.sensitivity) == pytest.approx(1 / val.size)


def test_regression_scores_are_clipped_to_the_public_bound():
    scorer = get_scorer("neg_mean_absolute_error", False, 2.0)

    class Const:
        def predict(self, X):
            return np.zeros(len(X))

    assert scorer.width == 2.0
    np.testing.assert_allclose(scorer.per_row(Const(), np.zeros((3, 1)), np.array([0.5, -5.0, 100.0])), [-0.5, -2, -2])
    with pytest.raises(ValueError, match="loss_bound"):
        get_scorer("neg_mean_squared_error", False, None)
    with pytest.raises(ValueError, match="not supported"):
        get_scorer("roc_auc", True, None)


# ------------------------------------------------------------------ the budget rule
def test_plan_pure_kfold_and_holdout():
    n, K = 90, 4
    rows = row_classes(make_splits(KFold(3), n), n)
    plan = plan_exponential(2.0, 0.0, K, rows, selection_share=0.1, refit_share=0.5)
    # each row: K (S - 1) fits + selection + refit
    assert plan.fit.epsilon == pytest.approx((2.0 - 1.0 - 0.2) / (K * 2))
    assert plan.epsilon == pytest.approx(2.0)
    tr, te = holdout_split(n, 0.3, 0)
    rows = row_classes([(tr, te)], n)
    plan = plan_exponential(2.0, 0.0, K, rows, selection_share=0.4, refit_share=0.5)
    # training rows see the fits, validation rows the selection: parallel, not added
    assert plan.fit.epsilon == pytest.approx((2.0 - 1.0) / K)
    assert isinstance(plan.event, ParallelComposedEvent)
    assert epsilon_delta(plan.event)[0] == pytest.approx(2.0)  # max(K fits, selection) + refit
    with pytest.raises(ValueError, match="leave no budget"):
        plan_exponential(2.0, 0.0, K, row_classes(make_splits(KFold(3), n), n), 0.5, 0.5)


@pytest.mark.parametrize("kind,event", [("gaussian", GaussianEvent), ("zcdp", ZCDPEvent)])
def test_plan_curve_shares_are_within_total(kind, event):
    n, K = 90, 6
    rows = row_classes(make_splits(KFold(3), n), n)
    plan = plan_exponential(2.0, 1e-6, K, rows, selection_share=0.1, refit_share=0.4, kind=kind)
    eps, delta = epsilon_delta(plan.event, 1e-6)
    assert delta == 1e-6 and eps <= 2.0 and eps == pytest.approx(2.0, rel=1e-9)
    assert isinstance(plan.fit.allowance, event)
    # curve composition: far more per fit than basic composition would give
    assert plan.fit.epsilon > 3 * (2.0 * 0.5 / (K * 2))


def test_plan_random_stopping():
    stop = RandomStopping(10, "logarithmic")
    plan = plan_random_stopping(2.0, 0.0, stop, refit_share=0.0)
    assert plan.fit.epsilon == pytest.approx(1.0) and plan.epsilon == pytest.approx(2.0)
    plan = plan_random_stopping(3.0, 0.0, RandomStopping(10, "geometric"), refit_share=0.0)
    assert plan.fit.epsilon == pytest.approx(1.0)
    plan = plan_random_stopping(2.0, 0.0, stop, refit_share=0.5)
    assert plan.fit.epsilon == pytest.approx(0.5) and plan.epsilon == pytest.approx(2.0)
    with pytest.raises(ValueError, match="pure DP only"):
        plan_random_stopping(2.0, 1e-6, stop, 0.0)


# ------------------------------------------------------------------ the search end to end
@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_search_charges_its_total_once(data, selection):
    X, y = data
    acc = BudgetAccountant(3.0)
    search = DPGridSearchCV(
        TinyDPClassifier(), {"shift": [-0.4, 0.0, 0.4]}, epsilon=2.0, selection=selection, accountant=acc,
        random_state=0,
    ).fit(X, y)
    assert len(acc.ledger) == 1
    assert acc.ledger[0].event == search.privacy_event_
    assert acc.total()[0] == pytest.approx(2.0) and search.epsilon_spent_ <= 2.0 + 1e-12
    assert search.best_params_["shift"] in (-0.4, 0.0, 0.4)
    assert search.predict(X).shape == y.shape
    assert 0.5 < search.score(X, y) <= 1.0


@pytest.mark.parametrize("noise", ["float", "secure"])
def test_search_with_pipeline_and_gaussian_budget(data, noise):
    # float Gaussian fits compose in Gaussian DP, secure ones in zCDP: both within the budget
    X, y = data
    acc = BudgetAccountant(2.0, 1e-6)
    pipe = DPPipeline([("clip", RowNormClipper()), ("clf", TinyDPClassifier(noise=noise))])
    search = DPGridSearchCV(
        pipe, {"clf__shift": [-0.4, 0.0]}, epsilon=2.0, delta=1e-6, accountant=acc, random_state=0
    ).fit(X, y)
    eps, delta = acc.total()
    assert eps <= 2.0 + 1e-9 and delta == 1e-6
    assert search.best_estimator_.budget_shares_["clf"][1] == 1e-6


def test_zcdp_allowance_accepts_gaussian_and_pure_through_their_zcdp_reading():
    from sklearn_dpsco.accounting._allowance import dominates
    from sklearn_dpsco.accounting._composition import profile_of

    cap = profile_of(ZCDPEvent(0.5))
    assert dominates(cap, profile_of(GaussianEvent(1.0, 1.0)))  # mu = 1 -> rho = 1/2
    assert not dominates(cap, profile_of(GaussianEvent(1.01, 1.0)))
    assert dominates(cap, profile_of(PureDPEvent(1.0)))  # eps^2 / 2 = 1/2
    assert not dominates(cap, profile_of(PureDPEvent(1.0)) + profile_of(ZCDPEvent(0.01)))
    # a Gaussian cap does not accept zCDP (zCDP does not imply Gaussian DP)
    assert not dominates(profile_of(GaussianEvent(1.0, 1.0)), profile_of(ZCDPEvent(0.01)))


def test_search_refuses_before_spending(data):
    X, y = data
    acc = BudgetAccountant(5.0)
    grid = {"shift": [0.0, 0.1]}
    with pytest.raises(ValueError, match="StratifiedKFold"):
        DPGridSearchCV(TinyDPClassifier(), grid, cv=StratifiedKFold(3), selection="random_stopping", accountant=acc).fit(
            X, y
        )
    with pytest.raises(ValueError, match="StratifiedKFold"):
        DPGridSearchCV(TinyDPClassifier(), grid, cv=StratifiedKFold(3), selection="exponential", accountant=acc).fit(X, y)
    with pytest.raises(ValueError, match="owns 'epsilon'"):
        DPGridSearchCV(TinyDPClassifier(), {"epsilon": [0.1, 1.0]}, accountant=acc).fit(X, y)
    with pytest.raises(TypeError, match="private sklearn_dpsco estimator"):
        DPGridSearchCV(LogisticRegression(), {"C": [1.0]}, accountant=acc).fit(X, y)
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        DPGridSearchCV(TinyDPClassifier(), grid, accountant=acc).fit(bad, y)
    with pytest.raises(ValueError, match="not supported"):
        DPGridSearchCV(TinyDPClassifier(), grid, scoring="roc_auc", accountant=acc).fit(X, y)
    with pytest.raises(BudgetExceededError):
        DPGridSearchCV(TinyDPClassifier(), grid, epsilon=6.0, accountant=acc).fit(X, y)
    for selection in ("exponential", "random_stopping"):  # a bad parameter name fails before the reservation
        with pytest.raises(ValueError, match="Invalid parameter"):
            DPGridSearchCV(TinyDPClassifier(), {"no_such": [1]}, selection=selection, accountant=acc).fit(X, y)
    assert acc.ledger == ()


def test_auto_selection_warns_about_ignored_parameters(data):
    X, y = data
    with pytest.warns(UserWarning, match="does not use cv, selection_share"):
        s = DPGridSearchCV(
            TinyDPClassifier(), {"shift": [0.0, 0.2]}, cv=5, selection_share=0.3, accountant=BudgetAccountant(),
            random_state=0,
        ).fit(X, y)
    assert s.budget_["selection_method"] == "random_stopping"
    s = DPGridSearchCV(
        TinyDPClassifier(), {"shift": [0.0, 0.2]}, delta=1e-6, epsilon=1.0, cv=5, accountant=BudgetAccountant(1.0, 1e-6),
        random_state=0,
    ).fit(X, y)
    assert s.budget_["selection_method"] == "exponential"


class _OverspendingClassifier(TinyDPClassifier):
    """A mutant candidate that spends twice its epsilon: its allowance must refuse it."""

    def _mechanism(self, n, d):
        from sklearn_dpsco._mechanisms import L2LaplaceMechanism

        return L2LaplaceMechanism(2.0 / n, 2 * self.epsilon, d)


def test_candidate_allowance_refuses_overspending_estimator(data):
    X, y = data
    with pytest.raises(BudgetExceededError, match="allowance"):
        DPGridSearchCV(_OverspendingClassifier(), {"shift": [0.0]}, accountant=BudgetAccountant()).fit(X, y)


def test_results_do_not_depend_on_n_jobs_or_backend(data):
    X, y = data
    grid = {"shift": [-0.4, -0.1, 0.2, 0.5]}
    fits = []
    for backend, n_jobs in [("sequential", 1), ("threading", 2), ("loky", 2)]:
        for selection in ("exponential", "random_stopping"):
            acc = BudgetAccountant.temporary()
            with joblib.parallel_backend(backend, n_jobs=n_jobs):
                s = DPGridSearchCV(
                    TinyDPClassifier(), grid, epsilon=2.0, selection=selection, accountant=acc, random_state=5
                ).fit(X, y)
            fits.append((selection, s.best_params_, s.best_estimator_.coef_.copy()))
            assert acc.total()[0] == pytest.approx(2.0)
    for selection, best, coef in fits[2:]:
        ref = fits[0] if selection == "exponential" else fits[1]
        assert best == ref[1]
        np.testing.assert_array_equal(coef, ref[2])


@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_estimator_valued_grids_give_every_candidate_its_own_copy(data, selection):
    """Found by the bug hunt: grid values that are estimators (a pipeline step to try) were set on every
    candidate as the same object, as given: all candidates and splits fitted that one object (n_jobs=2 raced on
    it and failed after the search had charged its budget: 'this estimator's accountant is the one-fit
    allowance...'), its random_state was overwritten by each configuration (every int-seeded candidate fit drew
    the same noise), and the user's grid objects were returned fitted and mutated. Each candidate now gets a
    clone, as scikit-learn's searches do."""
    X, y = data
    fits = []
    for n_jobs in (1, 2):
        steps = [TinyDPClassifier(shift=-0.3), TinyDPClassifier(shift=0.3)]
        before = [repr(est.get_params()) for est in steps]
        acc = BudgetAccountant(10.0)
        pipe = DPPipeline([("clip", RowNormClipper(3.0)), ("clf", TinyDPClassifier())])
        s = DPGridSearchCV(pipe, {"clf": steps}, epsilon=2.0, selection=selection, accountant=acc, random_state=5,
                           n_jobs=n_jobs).fit(X, y)
        assert [repr(est.get_params()) for est in steps] == before and not any(hasattr(e, "coef_") for e in steps)
        assert s.best_estimator_[-1] is not steps[s.best_index_] and len(acc.ledger) == 1
        fits.append((s.best_index_, s.best_estimator_[-1].coef_.copy()))
    assert fits[0][0] == fits[1][0]
    np.testing.assert_array_equal(fits[0][1], fits[1][1])


def test_randomized_search(data):
    X, y = data
    acc = BudgetAccountant(4.0)
    dist = {"shift": [-0.4, -0.2, 0.0, 0.2]}
    s = DPRandomizedSearchCV(
        TinyDPClassifier(), dist, n_iter=3, epsilon=2.0, selection="exponential", accountant=acc, random_state=0
    ).fit(X, y)
    assert len(s.cv_results_["params"]) == 3
    s2 = DPRandomizedSearchCV(
        TinyDPClassifier(), dist, n_iter=6, epsilon=2.0, selection="random_stopping", accountant=acc, random_state=0
    ).fit(X, y)
    assert s2.best_params_["shift"] in dist["shift"]
    assert acc.total()[0] == pytest.approx(4.0)


def test_dp_hinge_search_end_to_end(data):
    X, y = data
    acc = BudgetAccountant(2.0)
    s = DPGridSearchCV(
        DPHingeClassifier(), {"alpha": [0.01, 0.1]}, epsilon=2.0, selection="exponential", cv=2, accountant=acc,
        random_state=0, n_jobs=2,
    ).fit(X, y)
    assert s.best_estimator_.epsilon_spent_ == pytest.approx(1.0)  # the refit share
    assert acc.total()[0] == pytest.approx(2.0) and len(acc.ledger) == 1


# ------------------------------------------------------------------ nothing exact is released
def _released_floats(search):
    """Every float the search exposes besides the released model itself."""
    out = []

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, np.ndarray):
            if v.dtype.kind == "f":
                out.extend(v.ravel().tolist())
            elif v.dtype == object:
                walk(list(v.ravel()))
        elif isinstance(v, numbers.Real) and not isinstance(v, bool):
            out.append(float(v))

    # the public plan (computed before any data is touched) may hold any number
    public = ("best_estimator_", "privacy_event_", "budget_", "selection_sensitivity_", "epsilon_spent_",
              "delta_spent_", "n_splits_", "best_index_", "noise_source_")
    for key, value in vars(search).items():
        if key.endswith("_") and key not in public:
            walk(value)
    return out


def _leaks(search, exact):
    released = np.array(_released_floats(search))
    return [s for s in exact if np.any(np.isclose(released, s, rtol=1e-12, atol=0))]


@pytest.mark.parametrize("selection", ["exponential", "random_stopping"])
def test_no_exact_validation_score_is_released(data, monkeypatch, selection):
    X, y = data
    exact = []
    real = search_module._fit_and_score

    def recording(*args, **kwargs):
        score = real(*args, **kwargs)
        exact.append(score)
        return score

    def recording_sum(est, X, y, train, test, scorer, units, params):
        Q, model = real_sum(est, X, y, train, test, scorer, units, params)
        score_grid = ScoreGrid(scorer, len(test))  # row level: one unit per validation row
        # the exact sum in grid units, the centre g Q and the exact mean g Q / m: none may be released
        exact.extend([float(Q), float(score_grid.centre(Q)), score_grid.mean(Q)])
        return Q, model

    real_sum = search_module._fit_and_score_sum
    monkeypatch.setattr(search_module, "_fit_and_score", recording)
    monkeypatch.setattr(search_module, "_fit_and_score_sum", recording_sum)
    grid = {"shift": [-0.37, -0.11, 0.13, 0.41]}
    search = DPGridSearchCV(
        TinyDPClassifier(), grid, epsilon=2.0, selection=selection, accountant=BudgetAccountant(), random_state=1,
        cv=4,
    ).fit(X, y)
    assert len(exact) >= 1
    if selection == "exponential":
        means = np.asarray(exact).reshape(4, 4).mean(axis=1).tolist()
        assert set(search.cv_results_) == {"params", "param_shift", "selected"}
        assert search.best_score_ is None
    else:
        means = []
        assert set(search.cv_results_) == {"params", "param_shift", "selected", "noisy_score"}
        assert len(search.cv_results_["params"]) == 1  # the number of runs stays hidden
    assert _leaks(search, exact + means) == []
    # power of this check: a search exposing scikit-learn's mean_test_score would be caught
    search.cv_results_["mean_test_score"] = np.array(means or exact)
    assert _leaks(search, exact + means) != []


# ------------------------------------------------------------------ audit of the selection step (T1)
def _worst_case_scores(K, n=200):
    """Scores of K constant classifiers on neighbouring validation data, through the real scorer.

    Candidate 0 predicts class 1, the others class 0; the neighbour flips one
    validation label 0 -> 1: candidate 0's accuracy rises by 1/m and every
    other candidate's falls by 1/m — the largest, opposite-signed move.
    """
    train, val = holdout_split(n, 0.25, seed=0)
    rows = row_classes([(train, val)], n)
    scorer = get_scorer(None, True, None)
    X = np.zeros((n, 2))
    y = np.zeros(n, dtype=int)
    y[val[: val.size // 2]] = 1
    yp = y.copy()
    yp[val[-1]] = 1
    models = []
    for c in range(K):
        m = TinyDPClassifier(shift=1.0 if c == 0 else -1.0)
        m.classes_, m.coef_ = np.array([0, 1]), np.zeros(2)
        models.append(m)
    u = np.array([scorer(m, X[val], y[val]) for m in models])
    up = np.array([scorer(m, X[val], yp[val]) for m in models])
    return u, up, rows, scorer


@pytest.mark.statistical
@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_exponential_selection_audit_with_mutants(eps):
    K = 20
    u, up, rows, scorer = _worst_case_scores(K)
    assert np.max(np.abs(up - u)) == pytest.approx(rows.sensitivity)

    class Plan:
        selection_epsilon = eps

    rng = np.random.default_rng(11)

    def lower_bound(mech):
        # event fixed in advance: "candidate 0 is selected" (more likely on the neighbour)
        k_p = np.sum(mech.select(up, rng, size=N_DRAWS) == 0)
        k_d = np.sum(mech.select(u, rng, size=N_DRAWS) == 0)
        return epsilon_lower_bound_from_counts(k_p, N_DRAWS, k_d, N_DRAWS, alpha=ALPHA)

    mech = search_module.selection_mechanism(Plan, rows, scorer)
    exact = math.log(np.max(mech.probabilities(up) / mech.probabilities(u)))
    assert exact <= eps  # the exact probabilities: e^eps bound, nearly attained at K = 20
    assert lower_bound(mech) <= eps
    # mutant 1: the factor 2 dropped (treating non-monotone scores as monotone)
    assert lower_bound(ExponentialMechanism(eps, mech.sensitivity, monotone=True)) > eps
    # mutant 2: sensitivity 1/n instead of 1/m (validation rows only): 4x too small
    assert lower_bound(ExponentialMechanism(eps, 1.0 / 200)) > eps


# ------------------------------------------------------------------ random stopping: exact and audited
def _best_of_t_pmf(q, pgf):
    """Exact pmf of the best of T i.i.d. draws of a score with pmf ``q`` (scores ordered by index)."""
    F = np.concatenate([[0.0], np.cumsum(q)])
    return np.array([pgf(min(F[s + 1], 1.0)) - pgf(F[s]) for s in range(len(q))])


def _worst_pairs(eps):
    """Pairs of eps-DP score distributions, including the one that nearly attains the bound."""
    pairs = []
    for a, b in [(0.01, 0.5), (0.001, 0.55), (0.2, 0.3)]:
        q = np.array([1 - a - b, a, b])
        qp = np.array([0.0, a * math.exp(eps), b * math.exp(-eps)])
        qp[0] = 1 - qp[1:].sum()
        pairs.append((q, qp))
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.dirichlet(np.ones(4))
        qp = q * np.exp(rng.uniform(-eps / 2, eps / 2, size=4))
        qp /= qp.sum()  # ratios within e^{eps}
        pairs.append((q, qp))
    return pairs


@pytest.mark.parametrize("distribution,factor", [("logarithmic", 2), ("geometric", 3)])
def test_random_stopping_exact_privacy(distribution, factor):
    eps = 0.5
    stop = RandomStopping(200, distribution)
    worst = 0.0
    for q, qp in _worst_pairs(eps):
        assert np.max(np.abs(np.log(qp / q))) <= eps + 1e-12
        p, pp = _best_of_t_pmf(q, stop.pgf), _best_of_t_pmf(qp, stop.pgf)
        worst = max(worst, np.max(np.abs(np.log(pp / p))))
    assert worst <= factor * eps + 1e-9
    assert worst > (factor - 0.2) * eps  # the factor is needed: the bound is nearly attained
    # mutant: a fixed, known number of runs (T revealed) is far above the bound
    q, qp = _worst_pairs(eps)[0]
    fixed, fixed_p = _best_of_t_pmf(q, lambda x: x**200), _best_of_t_pmf(qp, lambda x: x**200)
    assert np.max(np.abs(np.log(fixed_p / fixed))) > 3 * eps


def test_random_stopping_mean_and_sampler():
    rng = np.random.default_rng(0)
    for dist in ("logarithmic", "geometric"):
        stop = RandomStopping(12, dist)
        draws = np.array([stop.sample(rng) for _ in range(20000)])
        assert draws.min() >= 1
        assert draws.mean() == pytest.approx(12, rel=0.08)
        h = 1e-6
        assert (stop.pgf(1 - h) - stop.pgf(1 - 2 * h)) / h == pytest.approx(stop.pgf_derivative(1 - 1.5 * h), rel=1e-3)


@pytest.mark.statistical
def test_random_stopping_audit_with_fixed_t_mutant():
    """The best-of-T release on the worst-case pair, with T from the implemented sampler."""
    eps = 0.5
    q, qp = _worst_pairs(eps)[0]
    stop = RandomStopping(10, "logarithmic")
    rng = np.random.default_rng(5)

    def release(pmf, n_runs):
        T = n_runs if n_runs is not None else np.array([stop.sample(rng) for _ in range(N_DRAWS)])
        T = np.broadcast_to(T, (N_DRAWS,))
        cdf = np.cumsum(pmf)
        # the best of T draws has cdf F^T: sampled by inversion of one uniform
        u = rng.uniform(size=N_DRAWS)
        return np.sum(u[:, None] > cdf[None, :] ** T[:, None], axis=1)

    def lb(n_runs, event):
        a, b = release(q, n_runs), release(qp, n_runs)
        up = epsilon_lower_bound_from_counts(np.sum(b == event), N_DRAWS, np.sum(a == event), N_DRAWS, alpha=ALPHA)
        down = epsilon_lower_bound_from_counts(np.sum(a == event), N_DRAWS, np.sum(b == event), N_DRAWS, alpha=ALPHA)
        return max(up, down)

    assert max(lb(None, 0), lb(None, 1)) <= 2 * eps
    assert lb(10, 0) > 2 * eps  # the number of runs fixed (or revealed): flagged
