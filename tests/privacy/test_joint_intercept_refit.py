"""The joint intercept refit of a one-vs-rest DPHingeClassifier (linear_model/_intercept_refit.py
``joint_shifts``; doc/privacy/hinge.rst, "Private intercept refit", "Several classes").

T0: the rows a class's refit counts and their exact sensitivity (every replace-one pair of small
three-class data sets, every class, several released shift vectors); the exact privacy loss of the
selection's law on those pairs, and of the mutant that claims half the sensitivity. T1: an audit of the
secure release on the worst pair, the half-sensitivity mutant flagged. Through the estimator: the event
and exact epsilon, the wiring (the released intercepts are the solver's moved by the released shifts),
and the bug it fixes (a weak-signal multiclass fit predicting a rare class everywhere, below the
majority class).
"""

import itertools

import numpy as np
import pytest

from sklearn_dpsco import BudgetAccountant
from sklearn_dpsco.accounting import epsilon_delta
from sklearn_dpsco.linear_model import DPHingeClassifier
from sklearn_dpsco.linear_model._intercept_refit import InterceptRefit, joint_refit_rows
from sklearn_dpsco.testing import audit_release_with_mutants

POINTS = np.linspace(-1.0, 1.0, 5)
#: rows: three class scores and a label (scores on a small public lattice)
ROWS = [(v, lab) for v in ((-0.7, -0.3, 0.0), (0.4, 0.6, 0.0), (-0.7, 0.6, 0.9), (0.4, -0.3, 0.9), (0.4, 0.6, 0.9))
        for lab in (0, 1, 2)]
APPLIED = [np.zeros(3), np.array([0.5, 0.0, 0.0]), np.array([0.0, -0.5, 0.25])]


def _utility(m, data, k, applied):
    scores = np.array([r[0] for r in data], dtype=float)
    labels = np.array([r[1] for r in data])
    margin, sign, _ = joint_refit_rows(scores, labels, applied, k)
    return m.utility(margin, sign, None, POINTS)


def _pairs(size):
    for data in itertools.combinations_with_replacement(ROWS, size):
        for i, new in itertools.product(range(size), ROWS):
            other = list(data)
            other[i] = new
            yield list(data), other


def test_joint_utility_sensitivity_is_exactly_one():
    """Replacing one row (its scores and its class) moves every class's utility by at most 1 at every shift,
    whatever the released shifts of the other classes; 1 is attained."""
    m = InterceptRefit(1.0, grid_points=5, noise="float")
    worst = 0
    for data, other in _pairs(2):
        for k, applied in itertools.product(range(3), APPLIED):
            (u, delta), (v, _) = _utility(m, data, k, applied), _utility(m, other, k, applied)
            assert delta == 1
            worst = max(worst, max(abs(a - b) for a, b in zip(u, v)))
    assert worst == 1


def test_joint_utility_counts_the_models_own_errors():
    # class 1's shift t: rows predicted argmax_j (s_j - t_j) with t_1 = t; the utility is minus the errors
    # up to a constant (rows the other classes already get wrong)
    scores = np.array([[0.9, 0.1, -0.2], [0.2, 0.5, 0.0], [-0.1, 0.3, 0.6], [0.4, 0.45, 0.0]])
    labels = np.array([0, 1, 2, 0])
    m = InterceptRefit(1.0, grid_points=5, noise="float")
    u, _ = m.utility(*joint_refit_rows(scores, labels, np.zeros(3), 1)[:2], None, POINTS)
    for t, ut in zip(POINTS, u):
        shifted = scores - np.array([0.0, t, 0.0])
        wrong = int(np.sum(np.argmax(shifted, axis=1) != labels))
        always = int(np.sum((np.argmax(np.delete(scores, 1, axis=1), axis=1) != np.array([0, 9, 1, 0])) &
                            (labels != 1)))
        assert -ut == wrong - always


def _worst_loss(m):
    worst, pair = 0.0, None
    for data, other in _pairs(2):
        for k in range(3):
            p, q = (m.pmf(*_utility_inputs(d, k), None, POINTS) for d in (data, other))
            loss = float(np.abs(np.log(p) - np.log(q)).max())
            if loss > worst:
                worst, pair = loss, (data, other, k)
    return worst, pair


def _utility_inputs(data, k):
    scores = np.array([r[0] for r in data], dtype=float)
    labels = np.array([r[1] for r in data])
    return joint_refit_rows(scores, labels, np.zeros(3), k)[:2]


@pytest.mark.parametrize("method", ["permute_and_flip", "exponential"])
def test_exact_privacy_loss_of_the_joint_selection_and_mutant(method):
    eps = 1.0
    loss, _ = _worst_loss(InterceptRefit(eps, grid_points=5, method=method, noise="float"))
    mutant, _ = _worst_loss(InterceptRefit(2 * eps, grid_points=5, method=method, noise="float"))
    assert 0.5 * eps < loss <= eps + 1e-12
    assert mutant > 1.2 * eps


class _JointRelease:
    """``release(centre, rng, size)``: class k's secure release on D (centre 0) or D' (centre 1)."""

    def __init__(self, pair, k, eps):
        self.pair, self.k, self.eps = pair, k, eps

    def release(self, centre, rng, size):
        data = self.pair[int(float(np.ravel(centre)[0]) == 1.0)]
        m = InterceptRefit(self.eps, grid_points=5, noise="secure")
        return np.asarray(m.release_index(*_utility_inputs(data, self.k), None, POINTS, rng, size=size),
                          dtype=float)[:, None]


@pytest.mark.statistical
def test_joint_refit_release_audit_flags_half_sensitivity():
    eps = 1.0
    _, (data, other, k) = _worst_loss(InterceptRefit(eps, grid_points=5, noise="float"))
    pair = (data, other)
    # f < 1: the selection claims f times its sensitivity (weights exp(eps u / (2 f))): eps / f in the law
    ok, mutants = audit_release_with_mutants(
        lambda f: _JointRelease(pair, k, eps / f), [0.0], [1.0], eps, 0.0, statistic="epsilon", n_draws=100_000,
        rng=np.random.default_rng(3), factors=(0.5,))
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]


# ------------------------------------------------------------------ through the estimator
def _weak_three_classes(n=1800, seed=0):
    """A public family: three classes at 55 / 35 / 10 %, a weak signal in two raw columns."""
    rng = np.random.default_rng(seed)
    y = rng.choice(3, size=n, p=[0.55, 0.35, 0.10])
    X = np.column_stack([1000.0 + 50.0 * rng.standard_normal(n) + 5.0 * y, 30.0 + 10.0 * rng.standard_normal(n),
                         (rng.random(n) < 0.3 + 0.05 * y).astype(float)])
    return X, y


def test_joint_refit_event_and_exact_epsilon():
    X, y = _weak_three_classes()
    est = DPHingeClassifier(epsilon=3.0, random_state=0, accountant=BudgetAccountant(10.0)).fit(X, y)
    info = est.fit_info_[0]
    assert info["intercept_refit"] == "joint" and len(est.fit_info_) == 3
    # the same event as per-class refits (each class's solver release composed with its refit; the template
    # checks every fit's event against the plan's): spent once, exactly epsilon
    assert info["intercept_refit_epsilon"] > 0
    assert epsilon_delta(est.privacy_event_)[0] == pytest.approx(3.0, rel=1e-9)
    binary = DPHingeClassifier(epsilon=3.0, random_state=0, accountant=BudgetAccountant(10.0)).fit(X, y == 0)
    assert binary.fit_info_[0]["intercept_refit"] == "per class"


def test_joint_refit_moves_each_solver_release_by_its_shift(monkeypatch):
    from sklearn_dpsco.linear_model import _intercept_refit

    seen = {}
    real = _intercept_refit.joint_shifts

    def spy(data, coefs, refit, row_bound, rng):
        seen["coefs"] = [c.copy() for c in coefs]
        seen["shifts"] = real(data, coefs, refit, row_bound, rng)
        seen["points"] = [refit.grid(c, row_bound) for c in coefs]
        seen["s"] = data.intercept_scaling
        return seen["shifts"]

    monkeypatch.setattr(_intercept_refit, "joint_shifts", spy)
    X, y = _weak_three_classes()
    est = DPHingeClassifier(epsilon=3.0, clip=2000.0, centering=False, random_state=1,
                            accountant=BudgetAccountant(10.0)).fit(X, y)
    s = seen["s"]
    for k in range(3):
        moved = seen["coefs"][k][-1] - _intercept_refit.dyadic_round(seen["shifts"][k] / s, seen["points"][k])
        assert est.intercept_[k] == pytest.approx(moved * s, rel=1e-12)
        assert est.fit_info_[k]["intercept_refit"] == "joint"


def test_a_weak_multiclass_fit_no_longer_falls_below_the_majority_class():
    """Per-class refits left each class's threshold anywhere above its scores ("never me"), and the argmax
    over those arbitrary shifts could give every row the rarest class (Chile, 4 classes: accuracy 0.07 for
    a majority of 0.36). The joint refit chooses the shifts for the model's own errors."""
    X, y = _weak_three_classes()
    Xt, yt = _weak_three_classes(seed=1)
    majority = np.mean(yt == 0)
    accs = [np.mean(DPHingeClassifier(epsilon=2.0, random_state=s, accountant=BudgetAccountant(100.0))
                    .fit(X, y).predict(Xt) == yt) for s in range(5)]
    assert min(accs) >= majority - 0.03, (accs, majority)
