"""User-level column magnitudes of UserLevelDPLogistic (linear_model/_column_magnitudes.py).

doc/privacy/user_level.rst, "Column magnitudes": the d x K histogram of the users' octaves (each user's
largest |x_j| per column) is released by the Gaussian mechanism with l2-sensitivity sqrt(2 d) under
replace-one-user; everything after it is post-processing.

Factor-2 audit (doc/privacy/testing.rst, "Factor-2 mutants"): the first audit builds its own plan and its row-level
mutant counts m = 4 rows per user (a 4-fold jump). ``test_fit_histogram_audit_flags_half_noise_and_per_row`` takes
the mechanism the real fit builds (a spy on ``MagnitudePlan.release``: the plan the fit charges and the rows it reads,
on D and D'), users of m = 2 rows, user 0's rows in octave 0 (D) then octave 10 (D'): the histograms differ by
sqrt(2 d), the sensitivity, attained. The correct release passes; half the noise (twice the charged mu) and the
per-row histogram (every row counted: user 0 moves it by 2 sqrt(2 d), the user's sensitivity taken as a row's) are
flagged.
"""

import dataclasses
import math
import warnings

import numpy as np
import pytest

from sklearn_dpsco import UserLevelDPLogistic
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import gaussian_mechanism_for
from sklearn_dpsco._solvers._core._user_data import index_users
from sklearn_dpsco.accounting import BudgetAccountant, epsilon_delta
from sklearn_dpsco.linear_model._column_magnitudes import (
    MAGNITUDE_CLEAR_RATE,
    MAGNITUDE_OCTAVES,
    MagnitudePlan,
    magnitude_clear_sigmas,
    user_octave_histogram,
)
from sklearn_dpsco.testing import audit_gaussian_dp, audit_release_with_mutants, project_on


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _raw_panel(n_users=400, rows=6, seed=0):
    """A raw panel: a survey year (1980-1987), a count in the hundreds and six 0/1 indicators."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_users), rows)
    n = g.size
    year = rng.integers(1980, 1988, n).astype(float)
    count = rng.integers(50, 700, n).astype(float)
    ind = (rng.random((n, 6)) < 0.4).astype(float)
    X = np.column_stack([year, count, ind])
    z = 0.25 * (year - 1983.5) + 0.004 * (count - 375) + ind @ np.array([1.2, -1.0, 0.8, -0.6, 0.5, 0.0])
    y = (z + rng.logistic(size=n) > 0.3).astype(int)
    return X, y, g


def _naive_histogram(X, g):
    ids = np.unique(g)
    H = np.zeros((X.shape[1], MAGNITUDE_OCTAVES), dtype=np.int64)
    for u in ids:
        v = np.abs(X[g == u]).max(axis=0)
        for j, x in enumerate(v):
            k = 0 if x <= 1 else int(math.ceil(math.log2(x) / 2))
            H[j, min(k, MAGNITUDE_OCTAVES - 1)] += 1
    return H


def test_histogram_matches_the_reference_and_ignores_order_and_identifiers():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4)) * 10.0 ** rng.uniform(-3, 12, (1, 4))
    X[::7, 0] = 2.0 ** 6  # exactly a power of four: its own bin, not the next
    g = rng.integers(0, 40, 300)
    H = user_octave_histogram(X, index_users(g))
    assert np.array_equal(H, _naive_histogram(X, g))
    assert H.sum() == 4 * np.unique(g).size
    perm = rng.permutation(300)
    assert np.array_equal(user_octave_histogram(X[perm], index_users(g[perm] * 7 + 3)), H)


def test_replacing_one_user_moves_the_histogram_by_at_most_sqrt_2d_attained():
    d, rows = 5, 4
    sens = MagnitudePlan.build(Budget(1.0, 1e-6, "secure"), 30, d).mechanism.sensitivity
    assert sens == math.sqrt(2 * d)
    rng = np.random.default_rng(1)
    worst = 0.0
    for trial in range(400):
        n = int(rng.integers(2, 30))
        g = np.repeat(np.arange(n), rows)
        X = rng.standard_normal((n * rows, d)) * 10.0 ** rng.uniform(-2, 15, (n * rows, 1))
        H = user_octave_histogram(X, index_users(g))
        # user 0 replaced by any block, of any size, under a fresh identifier
        k = int(rng.integers(1, 9))
        block = rng.standard_normal((k, d)) * 10.0 ** rng.uniform(-2, 15, (k, 1))
        if trial % 4 == 0:  # worst case: every column's octave changes
            block = np.full((k, d), 2.0 ** 20)
            X[:rows] = 0.5
        Xp = np.vstack([X[rows:], block])
        gp = np.concatenate([g[rows:], np.full(k, 10_000)])
        Hp = user_octave_histogram(Xp, index_users(gp))
        if trial % 4 == 0:
            H = user_octave_histogram(X, index_users(g))
        dist = float(np.linalg.norm((H - Hp).astype(float)))
        assert dist <= sens + 1e-12
        worst = max(worst, dist)
    assert worst == pytest.approx(sens)  # attained: a plan at half of it would be wrong


def test_event_is_fixed_before_data_and_the_fit_spends_exactly_epsilon():
    X, y, g = _raw_panel()
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = UserLevelDPLogistic(random_state=0, accountant=acc).fit(X, y, g)
    assert "column_magnitudes" in est.fit_info_[0]
    event = est.privacy_event_
    assert len(acc.ledger) == 1 and acc.ledger[0].event == event and acc.ledger[0].privacy_unit == "user"
    eps, spent_delta = epsilon_delta(event, delta=1e-6)
    assert eps <= 1.0 + 1e-12 and eps == pytest.approx(1.0, rel=1e-6)
    assert spent_delta <= 1e-6 * (1 + 1e-9)
    events = [UserLevelDPLogistic(random_state=1, accountant=_ledger()).fit(X * s, y, g).privacy_event_
              for s in (1.0, 1e-3, 1e6)]
    assert events[0] == events[1] == events[2] == UserLevelDPLogistic(random_state=2, accountant=_ledger()).fit(
        np.random.default_rng(5).standard_normal(X.shape), y, g).privacy_event_


@pytest.mark.parametrize("params", [{"data_norm": 1.0}, {"column_scaling": False}, {"fit_intercept": False}])
def test_declared_settings_leave_the_fit_as_before(params):
    X, y, g = _raw_panel()
    est = UserLevelDPLogistic(random_state=0, accountant=_ledger(), **params).fit(X, y, g)
    assert "column_magnitudes" not in est.fit_info_[0]


def test_raw_panel_defaults_are_not_the_majority_class():
    X, y, g = _raw_panel(n_users=400, seed=2)
    Xt, yt, _ = _raw_panel(n_users=1000, seed=102)
    majority = max(np.mean(yt), 1 - np.mean(yt))
    on = [UserLevelDPLogistic(random_state=s, accountant=_ledger()).fit(X, y, g).score(Xt, yt) for s in range(3)]
    off = [UserLevelDPLogistic(column_scaling=False, random_state=s, accountant=_ledger()).fit(X, y, g).score(Xt, yt)
           for s in range(3)]
    assert np.mean(on) > majority + 0.05
    assert np.mean(on) > np.mean(off) + 0.03


def test_auto_takes_dp_gd_with_the_centre_under_the_magnitudes_at_any_user_count():
    """With the magnitudes and the centre (nothing declared), ``solver="auto"`` takes ``user_dp_sgd`` where
    r = n_users / u < SGD_AUTO_MIN_STEPS too (MAGNITUDE_SGD_MIN_STEPS, public facts): 150 users at eps 1.
    A declared bound, ``data_norm="auto"`` (no centre) and ``centering=False`` keep the threshold of every
    other fit (user_clip here); the event is still fixed before the data is read."""
    from sklearn_dpsco.linear_model import _user_logistic_rules as rules

    assert rules.users_per_noise(150, 9, 1.0, 1e-6) < rules.SGD_AUTO_MIN_STEPS
    assert rules.prefers_dp_sgd(150, 9, 1.0, 1e-6, magnitudes=True)
    assert not rules.prefers_dp_sgd(150, 9, 1.0, 1e-6)
    X, y, g = _raw_panel(n_users=150)
    est = UserLevelDPLogistic(random_state=0, accountant=_ledger()).fit(X, y, g)
    assert "column_magnitudes" in est.fit_info_[0]
    assert est.solver_ == "user_dp_sgd" and est.column_center_ is not None
    for params in ({"data_norm": 1.0}, {"data_norm": "auto"}, {"centering": False}):
        other = UserLevelDPLogistic(random_state=0, accountant=_ledger(), **params).fit(X, y, g)
        assert other.solver_ == "user_clip", params
    events = [UserLevelDPLogistic(random_state=s, accountant=_ledger()).fit(Z, y, g).privacy_event_
              for s, Z in ((1, X), (2, X * 1e-3), (3, np.random.default_rng(5).standard_normal(X.shape)))]
    assert events[0] == events[1] == events[2]


# -- the statistical audit (T1) -----------------------------------------------------------------------
class _HistogramRelease:
    """``release(centre, rng, size)``: ``size`` releases of the histogram of D (centre) or D'."""

    def __init__(self, mechanism, X, Xp, g, centre, per_user=True):
        self.mechanism, self.X, self.Xp, self.g, self.centre, self.per_user = mechanism, X, Xp, g, centre, per_user

    def release(self, value, rng, size):
        X = self.X if np.array_equal(value, self.centre) else self.Xp
        if self.per_user:
            H = user_octave_histogram(X, index_users(self.g))
        else:  # mutant: every row counted (a row-level histogram; one user moves it by sqrt(2 d) m)
            H = user_octave_histogram(X, index_users(np.arange(X.shape[0])))
        return self.mechanism.release(H.ravel().astype(float), rng, size)


@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["secure", "float"])
def test_histogram_release_audit_with_half_noise_and_row_level_mutants(noise):
    n, m, d = 20, 4, 1
    g = np.repeat(np.arange(n), m)
    X = np.full((n * m, d), 0.5)
    Xp = X.copy()
    Xp[:m] = 2.0 ** 10  # user 0 moves from octave 0 to octave 10: distance sqrt(2 d), the sensitivity
    plan = MagnitudePlan.build(Budget(4.0, 1e-5, noise), n, d)
    mech = plan.mechanism
    eps_c = mech.epsilon
    centre = user_octave_histogram(X, index_users(g)).ravel().astype(float)
    centre_p = user_octave_histogram(Xp, index_users(g)).ravel().astype(float)
    assert float(np.linalg.norm(centre - centre_p)) == pytest.approx(mech.sensitivity)

    def make(f):
        return _HistogramRelease(
            gaussian_mechanism_for(f * mech.sensitivity, Budget(eps_c, 1e-5, noise), d * MAGNITUDE_OCTAVES),
            X, Xp, g, centre)

    ok, mutants = audit_release_with_mutants(make, centre, centre_p, eps_c, 1e-5, statistic="mu", n_draws=40_000,
                                             rng=np.random.default_rng(41), factors=(0.5,))
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]
    rows = _HistogramRelease(mech, X, Xp, g, centre, per_user=False)
    c_rows = user_octave_histogram(X, index_users(np.arange(n * m))).ravel().astype(float)
    rows.centre = c_rows
    cp_rows = user_octave_histogram(Xp, index_users(np.arange(n * m))).ravel().astype(float)
    rows_ok, _ = audit_release_with_mutants(lambda f: rows, c_rows, cp_rows, eps_c, 1e-5, statistic="mu",
                                            n_draws=40_000, rng=np.random.default_rng(42), factors=())
    assert rows_ok.violation, rows_ok


def _spy_histogram(monkeypatch):
    """Records ``(plan, rows)`` of each MagnitudePlan release (the plan the fit charges, the rows it reads)."""
    seen = []
    original = MagnitudePlan.release

    def spy(self, rows, rng, n_jobs=None):
        seen.append((self, rows))
        return original(self, rows, rng, n_jobs)

    monkeypatch.setattr(MagnitudePlan, "release", spy)
    return seen


def fit_histogram_pair(monkeypatch, noise, n_users=50, m=2, d=3, epsilon=20.0):
    """The histogram's release of a real fit (UserLevelDPLogistic, nothing declared) on the worst user pair:
    ``(plan, (X, users), (X', users))``. Epsilon 20 (public): the histogram's Gaussian has mu about 1.3 (at
    epsilon 24 the public rule takes the quartiles instead for 50 users of 3 columns)."""
    seen = _spy_histogram(monkeypatch)
    g = np.repeat(np.arange(n_users), m)
    y = (np.arange(n_users * m) % 2).astype(int)
    X = np.full((n_users * m, d), 0.5)
    X[1::2] = -0.5
    Xp = X.copy()
    Xp[:m] = 2.0**20  # user 0: octave 0 -> octave 10 in every column
    out = []
    for Z in (X, Xp):
        est = UserLevelDPLogistic(epsilon=epsilon, delta=1e-5, noise=noise, random_state=0,
                                  accountant=_ledger()).fit(Z, y, g)
        assert "column_magnitudes" in est.fit_info_[0]
        out.append(seen[-1])
    (plan, rows), (plan_p, rows_p) = out
    assert plan_p == plan and plan.n_features == d and plan.n_users == n_users
    return plan, rows, rows_p


def _histogram(X, ids):
    return user_octave_histogram(X, index_users(ids)).ravel().astype(float)


def audit_mu(mechanism, centre, centre_p, claimed, draws, seed=0):
    """Gaussian-DP audit of ``draws`` releases of ``mechanism`` at ``centre`` and ``centre_p`` (projected on
    their difference) against the mu of ``claimed = (epsilon, delta)``."""
    a = project_on(mechanism.release(centre, np.random.default_rng(seed), size=draws), centre, centre_p)
    b = project_on(mechanism.release(centre_p, np.random.default_rng(seed + 10_000), size=draws), centre, centre_p)
    return audit_gaussian_dp(a, b, *claimed)


def check_histogram(plan, rows, rows_p, draws, seed=0):
    """The correct release passes; half the noise and the per-row histogram are flagged, well above the claim."""
    mechanism = plan.mechanism
    c, cp = plan_histogram(rows), plan_histogram(rows_p)
    assert float(np.linalg.norm(c - cp)) == mechanism.sensitivity  # the sensitivity sqrt(2 d), attained
    claimed = (mechanism.epsilon, mechanism.delta)
    honest = audit_mu(mechanism, c, cp, claimed, draws, seed)
    assert not honest.violation, honest
    half = audit_mu(dataclasses.replace(mechanism, sensitivity=mechanism.sensitivity / 2.0), c, cp, claimed, draws,
                    seed)
    assert half.violation and half.lower_bound > 1.2 * half.claimed, half
    every_row = np.arange(rows[0].shape[0])
    r, rp = _histogram(rows[0], every_row), _histogram(rows_p[0], every_row)
    assert float(np.linalg.norm(r - rp)) == pytest.approx(2 * mechanism.sensitivity)  # two rows of user 0
    per_row = audit_mu(mechanism, r, rp, claimed, draws, seed + 1)
    assert per_row.violation and per_row.lower_bound > 1.2 * per_row.claimed, per_row
    return honest, half, per_row


def plan_histogram(rows):
    X, users = rows
    return user_octave_histogram(X, users).ravel().astype(float)


@pytest.mark.statistical
@pytest.mark.parametrize("noise,draws", [("secure", 10_000), ("float", 40_000)])
def test_fit_histogram_audit_flags_half_noise_and_per_row(monkeypatch, noise, draws):
    """The histogram as the fit releases it (its charged part, mu about 1.35): passes; half the noise and the
    per-row histogram are flagged (10 seeds: correct 0.78-1.26, half noise and per row 1.91-2.57 against 1.34-1.36;
    tests/slow/test_t2_twice_mutants.py). The secure path's exact discrete Gaussians (d K = 48 per release) cost
    about 10x the float path's draws: 10 000 per side there (1.5 s)."""
    plan, rows, rows_p = fit_histogram_pair(monkeypatch, noise)
    assert 0.5 < plan.mechanism.sensitivity / plan.mechanism.sigma < 1.5
    check_histogram(plan, rows, rows_p, draws)


def test_a_failure_after_the_histogram_was_released_spends_nothing(monkeypatch):
    """The histogram (and the centre after it) read the users before the solver: a failure after them leaves
    the ledger and the previous fit as they were."""
    X, y, g = _raw_panel()
    acc = _ledger()
    est = UserLevelDPLogistic(random_state=0, accountant=acc).fit(X, y, g)
    assert "column_magnitudes" in est.fit_info_[0]
    before = (est.coef_.copy(), est.column_scale_.copy(), len(acc.ledger))
    released = []
    real = MagnitudePlan.release

    def spy(self, *a, **k):
        released.append(True)
        return real(self, *a, **k)

    def broken(self, inputs, plan, rng):
        raise RuntimeError("solver failed")

    monkeypatch.setattr(MagnitudePlan, "release", spy)
    monkeypatch.setattr(UserLevelDPLogistic, "_draw_problems", broken)
    with pytest.raises(RuntimeError, match="solver failed"):
        est.fit(X * 7.0, y, g)
    assert released == [True]
    np.testing.assert_array_equal(est.coef_, before[0])
    np.testing.assert_array_equal(est.column_scale_, before[1])
    assert len(acc.ledger) == before[2] == 1


def test_users_listed_in_any_order_with_any_identifiers_give_the_same_fit():
    """The histogram, the centre and the solver's event read the users as a set: relabelling the users and
    shuffling the rows (a public permutation) releases a fit with the same event, and the histogram is equal."""
    X, y, g = _raw_panel(n_users=300)
    rng = np.random.default_rng(3)
    perm = rng.permutation(X.shape[0])
    relabel = rng.permutation(300)[g] * 7 + 1000
    H = user_octave_histogram(X, index_users(g))
    np.testing.assert_array_equal(H, user_octave_histogram(X[perm], index_users(relabel[perm])))
    a = UserLevelDPLogistic(random_state=0, accountant=_ledger()).fit(X, y, g)
    b = UserLevelDPLogistic(random_state=0, accountant=_ledger()).fit(X[perm], y[perm], relabel[perm])
    assert a.privacy_event_ == b.privacy_event_ and a.fit_info_[0]["column_magnitudes"]["sigma"] == \
        b.fit_info_[0]["column_magnitudes"]["sigma"]


def test_an_auto_data_norm_follows_the_histogram_and_the_fit_spends_exactly_epsilon():
    """``data_norm="auto"`` is not a declared unit: the histogram runs, then the private data_norm (one value per
    user, pure DP) on the mapped rows, then the solver; the ledger holds the composed event, within epsilon."""
    X, y, g = _raw_panel()
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = UserLevelDPLogistic(data_norm="auto", random_state=0, accountant=acc).fit(X, y, g)
    assert "column_magnitudes" in est.fit_info_[0] and "data_norm" in est.fit_info_[0]
    histogram, rest = est.privacy_event_.events
    # the discrete Gaussian's rho covers (sqrt(2 d))^2 / (2 sigma^2) plus the grid's rounding slack
    sigma = est.fit_info_[0]["column_magnitudes"]["sigma"]
    assert X.shape[1] / sigma**2 <= histogram.rho <= X.shape[1] / sigma**2 * (1 + 1e-5)
    assert type(rest.events[0]).__name__ == "PureDPEvent"
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    eps, _ = epsilon_delta(est.privacy_event_, delta=1e-6)
    assert eps <= 1.0 + 1e-12 and eps == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("n_users", [3, 40, 150])
def test_one_user_with_many_rows_changes_no_public_decision(n_users):
    """Replace-one-user neighbours may differ in their ROW counts: one user with 6 rows against the same user with
    3000 rows (rows beyond max_items_per_user dropped by the public rule), or with rows of norm 1e150. The
    magnitudes' DP-GD rule (MAGNITUDE_SGD_MIN_STEPS), the centre, the solver, its iterations, the event and the
    few-users warning must read the public number of users only; a rule fed the row count would differ here."""
    X, y, g = _raw_panel(n_users=n_users, rows=6, seed=3)
    rng = np.random.default_rng(8)
    extra = 2994
    X_many = np.vstack([X, X[rng.integers(0, 6, extra)]])
    y_many = np.r_[y, y[rng.integers(0, 6, extra)]]
    g_many = np.r_[g, np.zeros(extra, dtype=g.dtype)]
    X_huge = X.copy()
    X_huge[g == 0] *= 1e150
    outcomes = []
    for Xn, yn, gn in ((X, y, g), (X_many, y_many, g_many), (X_huge, y, g)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = UserLevelDPLogistic(random_state=0, accountant=_ledger()).fit(Xn, yn, gn)
        assert np.all(np.isfinite(est.coef_))
        outcomes.append((est.privacy_event_, est.solver_, est.n_users_, est.fit_info_[0].get("iterations"),
                         sorted(k for k in est.fit_info_[0] if not isinstance(est.fit_info_[0][k], float)),
                         [str(w.message) for w in caught]))
    assert outcomes[0][1] == "user_dp_sgd" and outcomes[0][2] == n_users
    assert all(o == outcomes[0] for o in outcomes[1:]), [o[1:4] for o in outcomes]
    assert any("too few" in m for m in outcomes[0][5]) == (n_users == 3)


def test_the_clear_threshold_is_the_union_bound_over_the_large_bins():
    from scipy.stats import norm

    assert MAGNITUDE_CLEAR_RATE == 0.05
    for d in (1, 9, 13, 40):
        z = magnitude_clear_sigmas(d)
        assert d * (MAGNITUDE_OCTAVES - 2) * norm.sf(z) == pytest.approx(MAGNITUDE_CLEAR_RATE, rel=1e-9)
    assert magnitude_clear_sigmas(13) > magnitude_clear_sigmas(9) > 3.0


def _plan(d=3, n_users=100, epsilon=0.5):
    return MagnitudePlan.build(MagnitudePlan.split(Budget(epsilon, 1e-6, "secure"))[0], n_users, d)


def _clear(plan):
    """The reading a large mode must reach: z sigma sqrt(3)."""
    return magnitude_clear_sigmas(plan.n_features) * plan.noise_std * math.sqrt(3.0)


def test_a_large_mode_below_the_threshold_shrinks_only_its_own_column():
    """The gate reads the released counts and the public n only: a noisy mode in a bin >= 2 whose reading (its count
    plus n less the small bins' counts) is below z sigma sqrt(3) divides its own column by b_j and leaves the
    others in their units; at the threshold it also divides every column by sqrt(d)."""
    plan = _plan()
    d, n, clear = plan.n_features, plan.n_users, _clear(plan)
    assert clear > n  # the mode below can beat the small bins' n and still not clear
    noisy = np.zeros((d, MAGNITUDE_OCTAVES))
    noisy[0, 0], noisy[2, 0] = n, n  # two columns within [-1, 1]
    noisy[1, 0] = n  # column 1: the small bins hold every user ...
    noisy[1, 6] = 0.999 * clear  # ... yet its mode is bin 6, (4^5, 4^6], b = 2^11: reading 0.999 clear
    scale, b = plan.scales(noisy.ravel())
    np.testing.assert_array_equal(b, [1.0, 2.0**11, 1.0])
    np.testing.assert_array_equal(scale, [1.0, 2.0**11, 1.0])  # main's rule: [1, 2^11, 1] * sqrt(3)
    noisy[1, 6] = clear
    scale, b = plan.scales(noisy.ravel())
    np.testing.assert_array_equal(b, [1.0, 2.0**11, 1.0])
    np.testing.assert_array_equal(scale, np.array([1.0, 2.0**11, 1.0]) * math.sqrt(d))
    noisy[1, 0], noisy[1, 6] = 0.0, clear - n  # the same reading with the small bins empty: clears
    np.testing.assert_array_equal(plan.scales(noisy.ravel())[0], np.array([1.0, 2.0**11, 1.0]) * math.sqrt(d))
    noisy[1, 6] = 0.999 * clear - n
    np.testing.assert_array_equal(plan.scales(noisy.ravel())[0], [1.0, 2.0**11, 1.0])
    noisy[1] = 0.0
    noisy[1, 1] = 2 * clear  # no large mode: nothing moves
    np.testing.assert_array_equal(plan.scales(noisy.ravel())[0], np.ones(d))


def test_one_clearing_mode_opens_the_shrink_for_every_column():
    plan = _plan(d=4)
    sigma, n, clear = plan.noise_std, plan.n_users, _clear(plan)
    noisy = np.zeros((4, MAGNITUDE_OCTAVES))
    noisy[0, 0] = noisy[3, 0] = n
    noisy[1, 0], noisy[1, 3] = n, n + 1.0  # a large mode that does not clear (reading n + 1 < clear)
    assert n + 1.0 < clear
    noisy[2, 8] = clear - n + 1.0  # one that does (small bins 0)
    noisy[2, 9] = 3.0 * sigma  # and the run above it (MAGNITUDE_RUN_SIGMAS)
    scale, b = plan.scales(noisy.ravel())
    np.testing.assert_array_equal(b, [1.0, 2.0**5, 2.0**17, 1.0])
    np.testing.assert_array_equal(scale, b * 2.0)


def test_pure_noise_in_the_large_bins_shrinks_the_rows_at_most_at_the_rate():
    """Columns within [-1, 1] (every user in bin 0, at 3.3 sigma as Males at epsilon 0.5) plus the released noise:
    the rows are shrunk in at most MAGNITUDE_CLEAR_RATE of the draws (the union bound; main's argmax: in most)."""
    plan = _plan(d=13, n_users=381)
    sigma, d, n = plan.noise_std, plan.n_features, plan.n_users
    rng = np.random.default_rng(0)
    shrunk = argmax_rule = 0
    draws = 2000
    for _ in range(draws):
        noisy = rng.normal(0.0, sigma, (d, MAGNITUDE_OCTAVES))
        noisy[:, 0] += n
        scale, b = plan.scales(noisy.ravel())
        shrunk += bool(np.any(scale[b == 1.0] > 1.0))
        argmax_rule += bool(np.any(b > 1.0))
    assert shrunk / draws <= MAGNITUDE_CLEAR_RATE
    assert argmax_rule / draws > 0.5
