"""T0/T1: the random-stopping search's released score moves by at most its calibrated sensitivity, rounding included.

The search releases ``best_score_``, a noisy validation score. The secure Laplace proof needs the sensitivity of
the float64 centre actually rounded to the noise grid (doc/privacy/secure_noise.rst, "The construction", step
3). The old centre was the float mean ``np.mean`` of the per-row terms (user level: the mean of per-user means),
calibrated to ``width / m``: one rounding step of the computed mean exceeds ``1 / m`` by a relative 8.8e-14 for
accuracy over 999 rows, and its rounded centres then differ by up to 25 noise-grid steps more than the
mechanism's integer sensitivity ``S``. That computation is kept here as the mutant the adversarial neighbours
must catch. The centre is now ``g Q``, ``Q`` an exact integer sum of grid terms (:class:`ScoreGrid`), with the
mean formed after the noise. Argument: doc/privacy/model_selection.rst, "Exact scores on the secure path".
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_dpsco import DPRandomizedSearchCV
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import laplace_mechanism_for
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.model_selection._scoring import ScoreGrid, get_scorer
from sklearn_dpsco.model_selection._search import noisy_score_sums, release_best_score
from sklearn_dpsco.model_selection._units import SearchUnits
from sklearn_dpsco.testing import audit_epsilon
from sklearn_dpsco.testing._estimators import TinyDPClassifier

EPS_RUN = 2.0 / 3.0  # epsilon = 2, geometric stopping, no refit share
ALPHA = 1e-6
N_DRAWS = 100_000


class Fixed:
    """A fitted model that predicts the given values (the validation rows are what the neighbours change)."""

    def __init__(self, pred):
        self.pred = np.asarray(pred)

    def predict(self, X):
        return self.pred[: X.shape[0]]


def _steps_within(mech, a, b):
    """The secure release rounds the centre to its grid: the proof needs |k - k'| <= S."""
    steps = abs(np.rint(a / mech.grid) - np.rint(b / mech.grid))
    return steps * mech.grid <= mech.noise_sensitivity


def _old_row_mean(values):
    return float(np.mean(values))


def _old_user_mean(values, user):
    per_user = np.bincount(user, weights=values) / np.bincount(user)
    return float(per_user.mean())


# ------------------------------------------------------------------ the defect, kept as the mutant
def test_old_float_mean_exceeds_the_calibrated_sensitivity():
    m = 999
    old_mech = laplace_mechanism_for(1.0 / m, Budget(EPS_RUN))
    worst, escaped = Fraction(0), 0
    for c in range(m):  # neighbours: one validation row's correctness flips, c -> c + 1 correct rows
        a = _old_row_mean(np.r_[np.ones(c), np.zeros(m - c)])
        b = _old_row_mean(np.r_[np.ones(c + 1), np.zeros(m - c - 1)])
        worst = max(worst, (Fraction(b) - Fraction(a)) * m)
        escaped += not _steps_within(old_mech, a, b)
    assert worst > 1 + Fraction(8, 10**14)  # one computed step exceeds 1/m by a relative 8.8e-14
    assert escaped > 100  # the rounded centres leave the mechanism's integer sensitivity


def test_old_user_mean_exceeds_the_calibrated_sensitivity():
    rng = np.random.default_rng(0)
    worst = Fraction(0)
    for _ in range(500):
        U = int(rng.integers(50, 400))
        counts = rng.integers(1, 8, size=U)
        right = np.minimum(rng.integers(0, 8, size=U), counts)
        user = np.repeat(np.arange(U), counts)
        values = np.concatenate([np.r_[np.ones(r), np.zeros(c - r)] for r, c in zip(right, counts)])
        j = int(rng.integers(U))
        vp = values.copy()
        values[user == j], vp[user == j] = 0.0, 1.0  # user j: every row wrong, replaced by every row right
        worst = max(worst, (Fraction(_old_user_mean(vp, user)) - Fraction(_old_user_mean(values, user))) * U)
    assert worst > 1


# ------------------------------------------------------------------ the exact sums
def _check(grid, Q, Qp, mech):
    assert abs(Q - Qp) <= grid.width_units
    a, b = float(grid.centre(Q)), float(grid.centre(Qp))
    assert Fraction(a) == grid.grid * Fraction(Q) and Fraction(b) == grid.grid * Fraction(Qp)  # exact centres
    assert abs(Fraction(a) - Fraction(b)) <= Fraction(mech.sensitivity) == grid.grid * grid.width_units
    assert _steps_within(mech, a, b)


def test_accuracy_sums_are_exact_for_every_count():
    m = 999
    scorer = get_scorer(None, True, None)
    grid = ScoreGrid(scorer, m)
    mech = laplace_mechanism_for(grid.sensitivity, Budget(EPS_RUN))
    assert grid.sensitivity == scorer.width  # accuracy: the sum counts correct rows exactly (g W = 1)
    units = SearchUnits.rows(m)
    rows = np.arange(m)
    X = np.zeros((m, 1))
    for c in range(m):
        y = np.r_[np.ones(c, dtype=int), np.zeros(m - c, dtype=int)]
        yp = y.copy()
        yp[c] = 1
        model = Fixed(np.ones(m, dtype=int))
        (_, Q), (_, Qp) = units.score_sum(scorer, model, X, y, rows), units.score_sum(scorer, model, X, yp, rows)
        assert grid.centre(Q) == c and grid.centre(Qp) == c + 1
        _check(grid, Q, Qp, mech)


@pytest.mark.parametrize("scoring", ["neg_mean_absolute_error", "neg_mean_squared_error"])
@pytest.mark.parametrize("bound", [1.0, 3.0, 0.1, 2.0**50 + 2.0**-2])
def test_loss_sums_on_adversarial_rows(scoring, bound):
    """Rows on the grid's rounding ties, at the clip, beyond it, with NaN predictions; random rows too."""
    rng = np.random.default_rng(1)
    scorer = get_scorer(scoring, False, bound)
    m = 401
    grid = ScoreGrid(scorer, m)
    mech = laplace_mechanism_for(grid.sensitivity, Budget(EPS_RUN))
    assert grid.sensitivity <= scorer.width * (1 + 2.0**-32)
    g = grid.grid
    # losses whose terms sit on rint ties, both parities, and the ends of the range
    ties = np.r_[(np.arange(0, 40) + 0.5) * g, bound - 0.5 * g, bound, 0.0, bound * 7]
    base = np.sqrt(ties) if scoring == "neg_mean_squared_error" else ties
    units = SearchUnits.rows(m)
    rows = np.arange(m)
    X = np.zeros((m, 1))
    for _ in range(60):
        pred = rng.choice(base, size=m) * rng.choice([-1.0, 1.0], size=m)
        y = np.zeros(m)
        i = int(rng.integers(m))
        pred_p = pred.copy()
        pred[i], pred_p[i] = 0.0, rng.choice([bound * 7, np.nan, np.inf, -np.inf])  # best -> worst row
        (_, Q), (_, Qp) = (units.score_sum(scorer, Fixed(p), X, y, rows) for p in (pred, pred_p))
        assert Q - Qp == grid.width_units  # the bound is attained: 0 -> clipped at loss_bound (NaN counts as worst)
        _check(grid, Q, Qp, mech)


def test_user_sums_with_a_fresh_identifier_and_heavy_users():
    """A replaced user with a fresh identifier (it sorts last, so the others reorder); many rows per user."""
    rng = np.random.default_rng(2)
    scorer = get_scorer(None, True, None)
    for _ in range(100):
        U = int(rng.integers(20, 200))
        counts = rng.integers(1, 9, size=U)
        counts[0] = 1000  # a heavy user
        groups = np.repeat(np.arange(U) * 7 + 3, counts)
        y = rng.integers(0, 2, size=groups.size)
        j = int(rng.integers(U))
        gp, yp = groups.copy(), y.copy()
        gp[groups == groups[groups.size - 1 if j == U - 1 else 0]] = 10**9  # fresh identifier, sorts last
        yp[gp == 10**9] = 1 - yp[gp == 10**9]
        X = np.zeros((groups.size, 1))
        model = Fixed(np.ones(groups.size, dtype=int))
        rows = np.arange(groups.size)
        seed = int(rng.integers(2**32))
        ga, Q = SearchUnits.users(groups).shuffled(seed).score_sum(scorer, model, X, y, rows)
        gb, Qp = SearchUnits.users(gp).shuffled(seed).score_sum(scorer, model, X, yp, rows)
        assert ga.n_units == gb.n_units == U
        _check(ga, Q, Qp, laplace_mechanism_for(ga.sensitivity, Budget(EPS_RUN)))
        # order-independent: the same users in any order give the same sum
        perm = rng.permutation(groups.size)
        _, Qperm = SearchUnits.users(groups[perm]).shuffled(seed + 1).score_sum(scorer, model, X[perm], y[perm], rows)
        assert Qperm == Q


def test_released_score_is_post_processing_of_the_noisy_sum():
    """``best_score_`` is the winning noisy sum divided by m (on the secure path: a multiple of the noise grid
    divided by m), and a real search releases it."""
    scorer = get_scorer(None, True, None)
    grid = ScoreGrid(scorer, 250)
    mech = laplace_mechanism_for(grid.sensitivity, Budget(EPS_RUN))
    rng = np.random.default_rng(3)
    sums = [int(grid.terms(1.0)) * c for c in (100, 180, 179)]
    noisy = noisy_score_sums(mech.draw(np.random.default_rng(4), size=3), grid, sums)
    best, score = release_best_score(mech.draw(np.random.default_rng(4), size=3), grid, sums)
    assert best == int(np.argmax(noisy)) and score == noisy[best] / 250
    assert np.all(np.rint(noisy / mech.grid) * mech.grid == noisy)  # the noisy sums lie on the noise grid
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    search = DPRandomizedSearchCV(TinyDPClassifier(), {"shift": [-0.3, 0.0, 0.3]}, n_iter=3, epsilon=2.0,
                                  selection="random_stopping", accountant=BudgetAccountant(), random_state=0).fit(X, y)
    m = int(round(300 * search.validation_fraction))
    assert math.isfinite(search.best_score_)
    assert search.selection_sensitivity_ == pytest.approx(1.0 / m, rel=1e-12)


# ------------------------------------------------------------------ T1: the release, audited
@pytest.mark.statistical
@pytest.mark.parametrize("scoring", ["accuracy", "neg_mean_squared_error"])
def test_score_release_audit_with_mutants(scoring):
    """Worst-case neighbours ``Q`` and ``Q + W`` through the real release (noisy sums, divided by m), 1e5 draws
    per side: the certified epsilon stays below the run's share; half the noise, or a sensitivity underestimated
    2x, is flagged."""
    scorer = get_scorer(scoring, scoring == "accuracy", None if scoring == "accuracy" else 2.0)
    m = 999
    grid = ScoreGrid(scorer, m)
    Q = grid.lo * 400 + grid.hi * (m - 400)
    rng = np.random.default_rng(11)

    def scores(mech, q):
        noise = mech.draw(rng, size=N_DRAWS)
        return noisy_score_sums(noise, grid, np.full(N_DRAWS, q)) / m

    def audit(mech):
        return audit_epsilon(scores(mech, Q), scores(mech, Q + grid.width_units), EPS_RUN, alpha=ALPHA)

    result = audit(laplace_mechanism_for(grid.sensitivity, Budget(EPS_RUN)))
    assert not result.violation, str(result)
    half_noise = audit(laplace_mechanism_for(grid.sensitivity, Budget(2 * EPS_RUN)))
    assert half_noise.violation, str(half_noise)
    under = audit(laplace_mechanism_for(grid.sensitivity / 2, Budget(EPS_RUN)))
    assert under.violation, str(under)
