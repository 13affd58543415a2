"""Row magnitudes below the median-and-spread rule (doc/privacy/column_scaling.rst, "Row magnitudes").

Fails if the rule read anything but public facts, if the histogram were charged other than its plan (coordinate
Laplace of l1-sensitivity ``2 d`` on the column share), if replacing one row could move the histogram by more than
``2 d`` in l1, or if the noise were calibrated per column (sensitivity 2, the first audit's mutant) or to one count
per column (sensitivity ``d``: half the noise, the second audit's mutant).
"""

import numpy as np
import pytest

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms._calibrate import laplace_mechanism_for
from sklearn_dpsco.accounting import BudgetAccountant
from sklearn_dpsco.linear_model import _column_scaling as C
from sklearn_dpsco.linear_model._column_scaling import (
    COLUMN_MAD_RANKS,
    ROW_MAGNITUDE_BINS,
    ColumnScalingPlan,
    column_scaling_mode,
    default_column_share,
    row_magnitude_histogram,
    row_magnitude_scales,
)
from sklearn_dpsco.testing import audit_epsilon, mixed_units

N_LOW = 300  # mixed_units has d = 4: 300 x 0.25 / 8 = 9.4 per release at epsilon 1 (below COLUMN_MAD_RANKS)


@pytest.fixture
def magnitudes_on(monkeypatch):
    # the histogram itself (no count first: its branches, events and audit are tests/privacy/test_row_magnitude_count.py)
    monkeypatch.setattr(C, "ROW_MAGNITUDE_RANKS", 4.0)
    monkeypatch.setattr(C, "ROW_MAGNITUDE_COUNT_SHARE", None)
    return 4.0


def _ledger():
    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def test_the_rule_is_public(magnitudes_on):
    for n, d, eps in [(300, 4, 1.0), (1196, 14, 0.5), (1196, 14, 2.0), (1257, 64, 0.5), (1000, 4, 1.0),
                      (100, 4, 0.5)]:
        per = n * default_column_share(n, d, eps) * eps / (2 * d)
        mode = column_scaling_mode("auto", n, d, eps, declared=False, dense=True)
        if per >= COLUMN_MAD_RANKS:
            assert mode in ("quartiles", "median_mad")
            continue
        assert mode == ("magnitudes" if per >= magnitudes_on else None), (n, d, eps, per)
        if mode == "magnitudes":
            for veto in (dict(declared=True), dict(dense=False), dict(centre=False), dict(positional=False),
                         dict(cluster=True), dict(magnitudes=False)):
                assert column_scaling_mode("auto", n, d, eps, **{**dict(declared=False, dense=True), **veto}) is None
            assert column_scaling_mode(False, n, d, eps, declared=False, dense=True) is None


def test_the_rule_reads_the_per_cell_ranks():
    # a rule of n, d, epsilon only: off below ROW_MAGNITUDE_RANKS, and never for an estimator without them
    if C.ROW_MAGNITUDE_RANKS is None:
        assert column_scaling_mode("auto", N_LOW, 4, 1.0, declared=False, dense=True) is None
        return
    per = N_LOW * default_column_share(N_LOW, 4, 1.0) * 1.0 / 8
    assert per < COLUMN_MAD_RANKS
    mode = column_scaling_mode("auto", N_LOW, 4, 1.0, declared=False, dense=True)
    assert mode == ("magnitudes" if per >= C.ROW_MAGNITUDE_RANKS else None)
    assert column_scaling_mode("auto", N_LOW, 4, 1.0, declared=False, dense=True, magnitudes=False) is None


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_event_is_the_histogram_then_the_former_fit_spent_once(magnitudes_on, delta, noise):
    X, y, _ = mixed_units(n=N_LOW)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = DPHingeClassifier(epsilon=1.0, delta=delta, noise=noise, random_state=0, accountant=acc).fit(X, y)
    share = default_column_share(N_LOW, 4, 1.0)
    info = est.fit_info_[0]["column_scaling"]
    assert info["mode"] == "magnitudes" and info["share"] == share
    expected = laplace_mechanism_for(2.0 * 4, Budget(share * 1.0, 0.0, noise), 4 * ROW_MAGNITUDE_BINS).event
    assert est.privacy_event_.events[0] == expected
    assert len(acc.ledger) == 1 and acc.ledger[0].event == est.privacy_event_
    assert est.epsilon_spent_ == pytest.approx(1.0, rel=1e-9) and est.epsilon_spent_ <= 1.0 + 1e-12
    if delta == 0:  # the rest is the former fit at epsilon - epsilon_c
        rest = DPHingeClassifier(**{**est.get_params(), "column_scaling": False, "epsilon": 1.0 - share})
        assert est.privacy_event_.events[1] == rest.set_params(accountant=_ledger()).fit(X, y).privacy_event_
    # the map: no centre, scales >= 1 (never enlarged)
    np.testing.assert_array_equal(est.column_center_, np.zeros(4))
    assert np.all(est.column_scale_ >= 1.0)


@pytest.mark.parametrize("cls,which", [(DPLinearRegressor, 2), (DPGrowthAdaptiveRegressor, 2), (DPHingeClassifier, 1)])
def test_regressors_and_declared_settings_keep_the_fit_as_before(magnitudes_on, cls, which):
    data = mixed_units(n=N_LOW)
    X, y = data[0], data[which]
    kw = {} if cls is not DPHingeClassifier else {"clip": 1.0}  # the hinge classifier: a declared clip
    est = cls(epsilon=1.0, random_state=0, accountant=_ledger(), **kw).fit(X, y)
    off = cls(epsilon=1.0, random_state=0, accountant=_ledger(), column_scaling=False, **kw).fit(X, y)
    assert est.privacy_event_ == off.privacy_event_
    np.testing.assert_array_equal(est.coef_, off.coef_)
    assert est.column_scale_ is None


def test_the_map_is_the_released_histogram(magnitudes_on):
    X, y, _ = mixed_units(n=N_LOW)
    est = DPHingeClassifier(epsilon=1.0, random_state=3, accountant=_ledger()).fit(X, y)
    plan = ColumnScalingPlan.build(Budget(1.0), N_LOW, 4, True, mode="magnitudes")
    from sklearn_dpsco._rng import check_random_state  # the fit's generator from its random_state

    columns, _ = plan.release(X, check_random_state(3))
    np.testing.assert_array_equal(est.column_scale_, columns.scale)


def test_scales_from_a_histogram():
    # four-octave bins: bin k holds (16^(k-1), 16^k], scale 2^(4 k - 2) for k >= 2
    noisy = np.zeros((3, ROW_MAGNITUDE_BINS))
    noisy[0, 0] = 100  # a 0/1 column: 1
    noisy[1, 5] = 100  # a column in (16^4, 16^5]: 2^18
    noisy[2, 2], noisy[2, 3], noisy[2, 4] = 100, 50, 5  # the run above the mode while >= tau = 10
    np.testing.assert_array_equal(row_magnitude_scales(noisy, 10.0), [1.0, 2.0**18, 2.0**10])


def test_the_gate_reads_the_released_modes_only():
    # applied only when some column's noisy mode is a bin >= the gate with a noisy count >= tau; else the identity
    noisy = np.zeros((3, ROW_MAGNITUDE_BINS))
    noisy[0, 0], noisy[1, 5], noisy[2, 2] = 100, 100, 100
    np.testing.assert_array_equal(row_magnitude_scales(noisy, 10.0, gate=4), [1.0, 2.0**18, 2.0**6])
    noisy[1, 5] = 9.0  # below tau: not a mode to open the gate (column 1's mode is now bin 0, count 0 ... 9)
    np.testing.assert_array_equal(row_magnitude_scales(noisy, 10.0, gate=4), np.ones(3))
    noisy[1] = 0.0
    noisy[1, 3], noisy[1, 4], noisy[1, 5] = 100, 50, 50  # a run reaching bin 5 from a mode in bin 3: closed
    np.testing.assert_array_equal(row_magnitude_scales(noisy, 10.0, gate=4), np.ones(3))
    np.testing.assert_array_equal(row_magnitude_scales(noisy, 10.0), [1.0, 2.0**18, 2.0**6])  # no gate


def test_the_library_rule_and_gate():
    # released from n, d, epsilon (10 ranks per cell at the default share); applied where a column is above 2^12
    assert C.ROW_MAGNITUDE_RANKS == 10.0 and C.ROW_MAGNITUDE_GATE_BIN == 4 and C.ROW_MAGNITUDE_BIN_OCTAVES == 4
    on = dict(declared=False, dense=True)
    assert column_scaling_mode("auto", 1196, 14, 1.0, **on) == "magnitudes"  # Chile epsilon 1: 10.7 ranks
    assert column_scaling_mode("auto", 1196, 14, 0.5, **on) is None  # 5.3 ranks
    assert column_scaling_mode("auto", 1196, 14, 1.0, **on, magnitudes=False) is None  # the regressors


@pytest.mark.parametrize("count", [None, 0.03])
@pytest.mark.parametrize("factor", [1.0, 100.0])
def test_the_gate_is_post_processing(factor, count, monkeypatch):
    # without the count: the same event, budget and ledger entry whether the gate opens (a column multiplied to ~2^16)
    # or not: the gate only chooses the map from the released histogram. With the count first (the library's rule)
    # the count chooses the branch (adaptive composition): the same event type and epsilon, the histogram's event only
    # where it was released (tests/privacy/test_row_magnitude_count.py)
    monkeypatch.setattr(C, "ROW_MAGNITUDE_COUNT_SHARE", count)
    X, y, _ = mixed_units(n=400)
    X = X.copy()
    X[:, 1] *= factor
    n, d = X.shape
    assert column_scaling_mode("auto", n, d, 1.0, declared=False, dense=True) == "magnitudes"
    est = DPHingeClassifier(epsilon=1.0, random_state=0, accountant=_ledger()).fit(X, y)
    ref = DPHingeClassifier(epsilon=1.0, random_state=0, accountant=_ledger()).fit(mixed_units(n=400)[0], y)
    if count is None or factor == 1:
        assert est.privacy_event_ == ref.privacy_event_ and est.epsilon_spent_ == ref.epsilon_spent_
    else:
        assert type(est.privacy_event_) is type(ref.privacy_event_)
        assert est.epsilon_spent_ == pytest.approx(ref.epsilon_spent_, rel=1e-9)
        assert est.privacy_event_.events[0].events[0] == ref.privacy_event_.events[0].events[0]  # the count
        assert len(est.privacy_event_.events[0].events) == 2 and len(ref.privacy_event_.events[0].events) == 1
    info = est.fit_info_[0]["column_scaling"]
    assert info["mode"] == "magnitudes" and info["applied"] == (factor > 1)
    if factor > 1:
        assert est.column_scale_[1] >= 2.0**10 and np.all(est.column_scale_ >= 1.0)
    else:
        np.testing.assert_array_equal(est.column_scale_, np.ones(d))


def test_histogram_counts_and_bin_edges():
    X = np.array([[0.0, 1.0, 16.0, 16.000001, -256.0, 1e300, -np.inf]]).repeat(2, axis=0)[:, :6]
    H = row_magnitude_histogram(X)
    assert H.shape == (6, ROW_MAGNITUDE_BINS) and np.all(H.sum(axis=1) == 2)
    assert [int(np.argmax(h)) for h in H] == [0, 0, 1, 2, 2, ROW_MAGNITUDE_BINS - 1]


def test_histogram_sensitivity_is_exactly_2d():
    # replacing any one row (by extreme values, 0, a year, a mix) moves the histogram by at most 2 d in l1, attained
    X, _, _ = mixed_units(n=61)
    d = X.shape[1]
    base = row_magnitude_histogram(X)
    worst = 0
    for i in range(X.shape[0]):
        for value in (-1e300, -3.5, 0.0, 0.5, 1994.0, 1e6, 1e300, np.array([1e300, 0.0, -7.0, 2.0**40])):
            Xn = X.copy()
            Xn[i] = value
            diff = np.abs(row_magnitude_histogram(Xn) - base)
            assert diff.sum() <= 2 * d and diff.max() <= 1
            worst = max(worst, int(diff.sum()))
    assert worst == 2 * d


# --------------------------------------------------------------------------- audit with a mutant
def _rows(n=200, d=16):
    """Sixteen 0/1-like columns: every row in bin 0."""
    return (np.random.default_rng(7).random((n, d)) < 0.5).astype(float)


def _scores(plan, X, draws, seed):
    """The sum over columns of the noisy count of the top bin (where D' moves its row)."""
    out = np.empty(draws)
    for i in range(draws):
        H = row_magnitude_histogram(X).ravel().astype(float)
        noisy = plan._magnitude_mechanism.release(H, np.random.default_rng(seed + i))
        out[i] = noisy.reshape(plan.n_features, ROW_MAGNITUDE_BINS)[:, -1].sum()
    return out


@pytest.mark.statistical
def test_audit_of_the_histogram_flags_per_column_noise(monkeypatch):
    """Worst-case neighbours: D' moves row 0 to 1e300 in every column (each column's count leaves bin 0 for the
    top bin: l1 distance 2 d). The release stays within ``e^{epsilon_c}``; the mutant calibrates the noise to one
    column's sensitivity 2 (forgetting that one row moves every column): ``d`` times the claim."""
    X = _rows()
    d = X.shape[1]
    eps = 2.0  # the mutant's true epsilon is d eps = 32 on the histogram; the sum's threshold test certifies about 3.3
    plan = ColumnScalingPlan(d, Budget(eps), Budget(eps), 0.25, True, 1, 1, "magnitudes")
    Xp = X.copy()
    Xp[0] = 1e300
    draws = 3000
    honest = audit_epsilon(_scores(plan, X, draws, 0), _scores(plan, Xp, draws, 10_000), eps)
    assert not honest.violation, honest
    mutant_mechanism = laplace_mechanism_for(2.0, Budget(eps), d * ROW_MAGNITUDE_BINS)
    monkeypatch.setattr(ColumnScalingPlan, "_magnitude_mechanism", mutant_mechanism)
    plan = ColumnScalingPlan(d, Budget(eps), Budget(eps), 0.25, True, 1, 1, "magnitudes")  # nothing cached
    assert plan._magnitude_mechanism is mutant_mechanism
    mutant = audit_epsilon(_scores(plan, X, draws, 0), _scores(plan, Xp, draws, 10_000), eps)
    assert mutant.violation, mutant


def _moved_cells(plan, rows, X, Xp, draws, seed):
    """The least of the ``2 d`` cells where D' differs from D, each signed so that D' moves it up by 1 and measured
    from D's count, for ``draws`` releases on ``rows`` (D or D'): a threshold ``t >= 1`` on it is the event where every such cell is past its shift, whose
    probability ratio is the whole ``exp(2 d / b) = e^{epsilon_c}`` (a sum over the cells only reaches a fraction)."""
    H = row_magnitude_histogram(X).ravel().astype(float)
    sign = row_magnitude_histogram(Xp).ravel().astype(float) - H
    cells = np.flatnonzero(sign)
    noisy = plan._magnitude_mechanism.release(row_magnitude_histogram(rows).ravel().astype(float),
                                              np.random.default_rng(seed), size=draws)
    return np.min((noisy[:, cells] - H[cells]) * sign[cells], axis=1)


@pytest.mark.statistical
@pytest.mark.parametrize("noise", ["float", "secure"])
def test_audit_of_the_histogram_flags_half_the_noise(noise, monkeypatch):
    """The factor-two error: the noise calibrated to l1-sensitivity ``d`` (one count per column, forgetting that
    the row leaves one bin as it enters another), half the scale. Worst-case neighbours with ``d = 2`` (D' moves
    row 0 from bin 0 to the top bin in both columns: four cells, each by 1) and the least moved cell as the
    statistic: the release passes at ``epsilon_c = 2`` (lower bound about 1.5), the mutant (true epsilon 4) is
    flagged at about 3 (the former sum statistic at ``d = 16``: 0.02)."""
    X = _rows(d=2)
    d = X.shape[1]
    eps = 2.0
    Xp = X.copy()
    Xp[0] = 1e300
    draws = 50_000
    plan = ColumnScalingPlan(d, Budget(eps, 0.0, noise), Budget(eps), 0.25, True, 1, 1, "magnitudes")
    assert plan._magnitude_mechanism.sensitivity == 2 * d
    honest = audit_epsilon(_moved_cells(plan, X, X, Xp, draws, 0), _moved_cells(plan, Xp, X, Xp, draws, 10_000), eps)
    assert not honest.violation, honest
    mutant_mechanism = laplace_mechanism_for(d, Budget(eps, 0.0, noise), d * ROW_MAGNITUDE_BINS)
    monkeypatch.setattr(ColumnScalingPlan, "_magnitude_mechanism", mutant_mechanism)
    plan = ColumnScalingPlan(d, Budget(eps, 0.0, noise), Budget(eps), 0.25, True, 1, 1, "magnitudes")
    assert plan._magnitude_mechanism is mutant_mechanism
    mutant = audit_epsilon(_moved_cells(plan, X, X, Xp, draws, 0), _moved_cells(plan, Xp, X, Xp, draws, 10_000), eps)
    assert mutant.violation, mutant
    assert mutant.lower_bound > 1.15 * eps, mutant  # a margin, not a coin flip at the claim
