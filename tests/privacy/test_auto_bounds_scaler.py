"""Privacy of ``DPStandardScaler(bounds="auto")`` (preprocessing/_scaler.py, doc/privacy/quantiles.rst,
"Use in the estimators").

The bounds are private quartiles of every feature (``private_column_quantiles``); the statistics then
run on the features mapped into [0, 1] by the released bounds. Every test fails if the quartiles were
charged wrongly, read the data before the budget check, were spent more than once, leaked into a
declared fit, or were computed without privacy (the min/max mutant of the audit).
"""

import numpy as np
import pytest

from sklearn_dpsco import _scale_estimation
from sklearn_dpsco.accounting import BudgetAccountant, BudgetExceededError, ComposedEvent, PureDPEvent, epsilon_delta
from sklearn_dpsco.preprocessing import DPStandardScaler
from sklearn_dpsco.preprocessing import _scaler
from sklearn_dpsco.testing import audit_epsilon


def _data(n=3000, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return scale * np.column_stack([rng.normal(5, 2, n), rng.normal(-300, 50, n), rng.uniform(0, 1, n)])


@pytest.mark.parametrize("delta,noise,with_std", [(0.0, "secure", True), (1e-6, "secure", True),
                                                  (1e-6, "float", True), (0.0, "secure", False)])
def test_auto_event_is_the_planned_composition_spent_once(delta, noise, with_std):
    X = _data()
    n, d = X.shape
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    sc = DPStandardScaler(epsilon=1.0, delta=delta, bounds="auto", with_std=with_std, noise=noise,
                          accountant=acc, random_state=0)
    scale_budget, rest, bounds_event = sc._bounds_plan(n, d)  # public facts only: no data
    share = _scaler.default_bounds_share(n, d, 1.0)
    assert share == pytest.approx(min(0.8, 2 * d * _scaler.BOUNDS_RANKS / n))
    assert scale_budget.epsilon == pytest.approx(share) and rest.epsilon == pytest.approx(1.0 - share)
    assert bounds_event == ComposedEvent(tuple([PureDPEvent(share / (2 * d))] * (2 * d)))
    mechs = sc._mechanisms(n, np.zeros(d), np.ones(d), rest)
    stats_event = ComposedEvent(tuple(m.event for m in mechs.values()))
    sc.fit(X)
    assert sc.privacy_event_ == ComposedEvent((bounds_event, stats_event))
    assert len(acc.ledger) == 1 and acc.ledger[0].event == sc.privacy_event_
    eps, dl = epsilon_delta(sc.privacy_event_, delta=delta if delta > 0 else None)
    assert eps <= 1.0 * (1 + 1e-9) and dl <= max(delta, 0) * (1 + 1e-9)
    lower, upper = sc.bounds_
    assert np.all(lower <= upper)
    np.testing.assert_array_equal(sc.lower_, lower)
    # the estimates land near the truth (3000 rows at epsilon 1)
    assert np.all(np.abs(sc.mean_ - X.mean(axis=0)) <= 0.15 * X.std(axis=0))
    if with_std:
        assert np.all(np.abs(np.log(sc.scale_ / X.std(axis=0))) < 0.3)


def test_planned_event_does_not_depend_on_the_data():
    a = DPStandardScaler(bounds="auto", random_state=0, accountant=BudgetAccountant()).fit(_data(seed=1))
    b = DPStandardScaler(bounds="auto", random_state=0, accountant=BudgetAccountant()).fit(_data(seed=2, scale=1e4))
    assert a.privacy_event_ == b.privacy_event_
    assert np.all(np.abs(b.bounds_[1] - b.bounds_[0]) >= 100 * np.abs(a.bounds_[1] - a.bounds_[0]))


def test_declared_bounds_spend_nothing_on_estimation(monkeypatch):
    calls = []
    monkeypatch.setattr(_scaler, "private_column_quantiles", lambda *a, **k: calls.append(1))
    X = _data()
    a = DPStandardScaler(bounds=(-400, 20), random_state=0, accountant=BudgetAccountant()).fit(X)
    b = DPStandardScaler(bounds=(-400, 20), scale_share=0.4, random_state=0, accountant=BudgetAccountant()).fit(X)
    assert calls == []
    assert a.privacy_event_ == b.privacy_event_
    assert all(not isinstance(e, ComposedEvent) for e in a.privacy_event_.events)  # the statistics alone
    np.testing.assert_array_equal(a.mean_, b.mean_)
    np.testing.assert_array_equal(a.bounds_[0], np.full(3, -400.0))


@pytest.fixture
def releases(monkeypatch):
    seen = []
    original = _scale_estimation.private_column_quantiles

    def spy(*args, **kwargs):
        seen.append(np.shape(args[0])[0])  # the number of rows read: 7 for a pipeline's synthetic dry run
        return original(*args, **kwargs)

    monkeypatch.setattr(_scaler, "private_column_quantiles", spy)
    return seen


def test_estimate_never_reads_data_before_the_budget_check(releases):
    acc = BudgetAccountant(epsilon=0.5)
    sc = DPStandardScaler(epsilon=1.0, bounds="auto", accountant=acc)
    with pytest.raises(BudgetExceededError):
        sc.fit(_data())
    assert releases == [] and acc.ledger == ()
    assert not hasattr(sc, "mean_")


@pytest.mark.parametrize("bad", ["nan", "scale_share", "user", "string", "sparse"])
def test_bad_input_errors_before_spending(bad, releases):
    X = _data()
    acc = BudgetAccountant(epsilon=5.0)
    sc = DPStandardScaler(bounds="auto", accountant=acc)
    if bad == "nan":
        X[3, 1] = np.nan
        with pytest.raises(ValueError):
            sc.fit(X)
    elif bad == "scale_share":
        with pytest.raises(ValueError, match="scale_share"):
            sc.set_params(scale_share=1.5).fit(X)
    elif bad == "user":
        with pytest.raises(ValueError, match="row-level only"):
            sc.set_params(privacy_unit="user").fit(X, groups=np.arange(X.shape[0]) // 3)
    elif bad == "string":
        with pytest.raises(ValueError, match="bounds"):
            sc.set_params(bounds="data").fit(X)
    else:
        import scipy.sparse as sp

        with pytest.raises(TypeError, match="sparse"):
            sc.fit(sp.csr_matrix(X))
    assert releases == [] and acc.ledger == ()


def test_constant_feature_and_extreme_row():
    X = _data(n=2000)
    X[:, 2] = 3.0
    X[0] = 1e300  # one extreme row cannot move the quartiles by more than a rank
    sc = DPStandardScaler(epsilon=2.0, bounds="auto", random_state=1, accountant=BudgetAccountant()).fit(X)
    assert np.all(np.isfinite(sc.mean_)) and np.all(np.isfinite(sc.scale_))
    assert sc.bounds_[1][0] < 20 and abs(sc.mean_[2] - 3.0) < 0.5  # a constant feature: one grid step wide
    assert not sc.passthrough_.any()
    assert np.all(np.isfinite(sc.transform(X)))


# --------------------------------------------------------------------------- audit with a mutant
def _upper_scores(X, draws, seed):
    out = np.empty(draws)
    for i in range(draws):
        sc = DPStandardScaler(epsilon=1.0, bounds="auto", with_std=False, noise="float", random_state=seed + i,
                              accountant=BudgetAccountant())
        out[i] = np.log2(1.0 + abs(sc.fit(X).bounds_[1][0]))
    return out


def _minmax(X, qs, budget, **kwargs):
    """The mutant: non-private bounds, the data's min and max (what "fit the range" would do)."""
    X = np.asarray(X)
    out = np.vstack([X.min(axis=0), X.max(axis=0)])
    real = _scale_estimation.private_column_quantiles(X, qs, budget, **kwargs)
    return _scale_estimation.ScaleRelease(out, real.event)


def test_audit_flags_a_minmax_bound_and_passes_the_private_one(monkeypatch):
    """Worst-case neighbours: D has values in [0, 1]; D' replaces one value by 1e6."""
    rng = np.random.default_rng(0)
    n = 200  # enough rows for the quartiles at epsilon 1 (auto_bounds_feasible)
    X = rng.uniform(0, 1, (n, 1))
    Xp = X.copy()
    Xp[-1] = 1e6
    eps_s = _scaler.default_bounds_share(n, 1, 1.0)
    draws = 200
    private = audit_epsilon(_upper_scores(X, draws, 0), _upper_scores(Xp, draws, 10_000), eps_s)
    assert not private.violation, private
    monkeypatch.setattr(_scaler, "private_column_quantiles", _minmax)
    mutant = audit_epsilon(_upper_scores(X, draws, 0), _upper_scores(Xp, draws, 10_000), eps_s)
    assert mutant.violation, mutant


# --------------------------------------------------------------------------- the default, in pipelines
def test_auto_is_the_default_and_user_level_refuses_it_before_spending(releases):
    assert DPStandardScaler().get_params()["bounds"] == "auto"
    X = _data()
    acc = BudgetAccountant(epsilon=5.0)
    sc = DPStandardScaler(random_state=0, accountant=acc).fit(X)
    assert sc.fit_info_["bounds"] == "auto" and len(acc.ledger) == 1 and releases == [X.shape[0]]
    assert sc.fit_info_["scale_epsilon"] == pytest.approx(sc.fit_info_["scale_share"] * 1.0)
    user = DPStandardScaler(privacy_unit="user", accountant=acc)
    with pytest.raises(ValueError, match="bounds='auto' \\(the default\\) is row-level only.*declare|needs public"):
        user.fit(X, groups=np.arange(X.shape[0]) // 3)
    assert len(acc.ledger) == 1 and releases == [X.shape[0]]
    declared = DPStandardScaler(bounds=(-400, 20), accountant=BudgetAccountant()).fit(X)
    assert declared.fit_info_ == {"bounds": "declared"} and not declared.passthrough_.any()


def test_zero_atoms_are_left_as_they_are():
    """A rare 0/1 indicator: both quartiles at 0, no spread released; fences around 0 would zero it."""
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([rng.normal(50, 10, n), (rng.uniform(size=n) < 0.1).astype(float),
                         rng.normal(2000, 10, n)])
    sc = DPStandardScaler(epsilon=2.0, random_state=0, accountant=BudgetAccountant()).fit(X)
    assert sc.passthrough_.tolist() == [False, True, False]
    Z = sc.transform(X)
    np.testing.assert_array_equal(Z[:, 1], X[:, 1])
    assert sc.mean_[1] == 0.0 and sc.scale_[1] == 1.0 and sc.fit_info_["n_passthrough"] == 1
    assert abs(np.std(Z[:, 0]) - 1.0) < 0.2
    assert np.std(Z[:, 2]) > 0.1  # a small relative spread far from 0 keeps its (one-step) fences


def test_default_pipeline_plans_its_split_and_spends_once_per_step(releases):
    from sklearn_dpsco import DPHingeClassifier
    from sklearn_dpsco.preprocessing import PREPROCESSING_SHARE, make_dp_pipeline

    rng = np.random.default_rng(0)
    X = _data(n=2000)
    y = (X[:, 0] + 0.1 * X[:, 1] + rng.normal(0, 1, X.shape[0]) > -25).astype(int)
    acc = BudgetAccountant(epsilon=0.99)
    # column_scaling=False: a model that does not map its columns itself (else the scaler hands its work over)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0, column_scaling=False),
                            accountant=acc)
    with pytest.raises(BudgetExceededError):  # the whole budget is checked before any step reads the data
        pipe.fit(X, y)
    assert X.shape[0] not in releases and acc.ledger == ()  # only the dry run on synthetic rows
    acc = BudgetAccountant(epsilon=1.0)
    pipe.set_params(accountant=acc).fit(X, y)
    assert pipe.budget_shares_ == {"dpstandardscaler": (pytest.approx(PREPROCESSING_SHARE), 0.0),
                                   "dphingeclassifier": (pytest.approx(1 - PREPROCESSING_SHARE), 0.0)}
    assert len(acc.ledger) == 2 and acc.total()[0] == pytest.approx(1.0) and releases.count(X.shape[0]) == 1
    scaler = pipe[0]
    assert scaler.fit_info_["scale_epsilon"] == pytest.approx(scaler.fit_info_["scale_share"] * PREPROCESSING_SHARE)
    assert len(np.unique(pipe.predict(X))) == 2


def test_too_few_rows_release_nothing_and_spend_nothing(releases):
    """The decision is public (n, d, epsilon, share): below it no quartile is drawn and the event is empty."""
    X = _data(n=200)
    n, d = X.shape
    assert not _scaler.auto_bounds_feasible(n, d, 0.5 * 0.3)
    assert _scaler.auto_bounds_feasible(3000, d, 0.5 * 1.0)
    acc = BudgetAccountant(epsilon=1.0)
    sc = DPStandardScaler(epsilon=0.3, random_state=0, accountant=acc)
    assert not sc.would_estimate_bounds(n, d)
    with pytest.warns(UserWarning, match=r"too few for \d+ private quartiles.*nothing was spent"):  # said, not silent
        sc.fit(X)
    assert releases == [] and sc.privacy_event_ == ComposedEvent(()) and sc.epsilon_spent_ == 0.0
    assert len(acc.ledger) == 1 and acc.total()[0] == 0.0
    assert sc.fit_info_["estimated"] is False and "too few" in sc.fit_info_["reason"]
    np.testing.assert_array_equal(sc.transform(X), X)
    # the same public facts give the same decision whatever the values
    assert DPStandardScaler(epsilon=0.3, accountant=BudgetAccountant()).fit(1e6 * X).privacy_event_ == ComposedEvent(())
    # declared bounds always release their statistics
    assert DPStandardScaler(epsilon=0.3, bounds=(-400, 20)).would_estimate_bounds(n, d)
    # warnings as errors: the warning comes before the ledger records the fit (it left a 0 entry behind an error)
    import warnings

    acc, sc = BudgetAccountant(epsilon=1.0), DPStandardScaler(epsilon=0.3, random_state=0)
    sc.set_params(accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="too few"):
            sc.fit(X)
    assert acc.ledger == () and not hasattr(sc, "scale_")


def test_default_pipeline_gives_an_idle_scaler_almost_nothing():
    from sklearn_dpsco import DPHingeClassifier
    from sklearn_dpsco.preprocessing import make_dp_pipeline
    from sklearn_dpsco.preprocessing._pipeline import IDLE_WEIGHT

    X = _data(n=300)
    y = (X[:, 0] > 5).astype(int)
    acc = BudgetAccountant(epsilon=1.0)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0, column_scaling=False),
                            accountant=acc).fit(X, y)
    shares = pipe.budget_shares_
    assert shares["dpstandardscaler"][0] == pytest.approx(IDLE_WEIGHT)
    assert shares["dphingeclassifier"][0] == pytest.approx(1 - IDLE_WEIGHT)
    assert pipe[0].epsilon_spent_ == 0.0 and acc.total()[0] <= 1.0 + 1e-12
