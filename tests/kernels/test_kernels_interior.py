"""Interior-point restarts of kinked solves: a start for the ascent, never a different certificate.

``solve_certified`` restarts a hinge or absolute-loss solve whose dual ascent ran out of passes
from the dual point of an interior-point solve of the dual box QP (``_solvers/_optim/_interior.py``).
The regression case: rows with a few almost-constant columns (spread 1e-6 around an offset, as a
noisy private column scaling leaves them) and labels the features do not explain, so that the
minimizer scores every row of the majority class at the hinge's kink. The ascent then needs
thousands of passes (2696 on Benefits after ``DPStandardScaler`` at epsilon 2) and the fit refused.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._fast._erm import certified_erm
from sklearn_dpsco._fast._losses import Absolute, Hinge
from sklearn_dpsco._fast._objective import Objective
from sklearn_dpsco._fast._rows import RowData
from sklearn_dpsco._solvers._core._data import GLMData
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._solvers._optim import _erm
from sklearn_dpsco._solvers._optim._erm import CertificationError, solve_certified
from sklearn_dpsco._solvers._optim._interior import interior_dual_start


def _near_constant(seed, n=3000, spread=1e-6, hinge=True):
    """12 columns of noise and 5 almost-constant ones; labels (or ties of targets) the rows do not explain."""
    rng = np.random.default_rng(seed)
    X = np.c_[0.2 * rng.normal(size=(n, 12)), rng.uniform(-0.3, 0.3, size=5) + spread * rng.normal(size=(n, 5))]
    if hinge:
        y = np.where(rng.uniform(size=n) < 0.7, 1.0, -1.0)
    else:
        y = np.where(rng.uniform(size=n) < 0.5, 0.3, 0.3 + 0.5 * rng.normal(size=n))
    return GLMData(X, y, None, 1.0)


def _reference(data, loss, lam, target):
    """The same problem certified to ``target`` from the interior-point start (the kernel proves it)."""
    rows = RowData(data.X, data.intercept_scaling)
    w0 = np.zeros(data.n_features)
    cap = np.minimum(Objective(rows, data.y, loss, lam, w0, 1.0, None, 0, data.n_samples).k_values(), 1.0)
    beta = interior_dual_start(data, loss.is_classification, lam, w0, cap, target)
    ref = certified_erm(rows, data.y, loss, lam, w0, clip=1.0, target_distance=target, max_epochs=2000,
                        dual_start=beta)
    assert ref.certified
    return ref


@pytest.mark.parametrize("name, spread, lam", [("hinge", 1e-6, 0.0124), ("absolute", 1e-4, 0.01)])
def test_near_constant_columns_certify(name, spread, lam):
    # fails on main: CertificationError after the 2000 passes of the ascent
    data = _near_constant(0, spread=spread, hinge=name == "hinge")
    n = data.n_samples
    target = 0.05 * 2.0 / (lam * n)  # the output-perturbation rule: tolerance 0.05 of 2 C / (lam n)
    res = solve_certified(data, get_loss(name), lam, np.zeros(data.n_features), clip=1.0, target_distance=target)
    assert res.certified and res.distance_bound <= target
    ref = _reference(data, Hinge() if name == "hinge" else Absolute(), lam, 1e-2 * target)
    assert np.linalg.norm(res.w - ref.w) <= res.distance_bound + ref.distance_bound


def _instance(seed, n=1500, d=6, hinge=True, weights=False, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    z = X @ rng.normal(size=d)
    y = np.where(z + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0) if hinge else z + 0.3 * rng.normal(size=n)
    sw = None
    if weights:
        sw = rng.uniform(0, 1, size=n)
        sw[::7] = 0.0
    return GLMData(sp.csr_matrix(X) if sparse else X, y, sw, 1.0)


@pytest.mark.parametrize("hinge", [True, False], ids=["hinge", "absolute"])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_interior_start_is_in_the_box_and_certifies_without_a_pass(hinge, weights, sparse):
    data = _instance(1, hinge=hinge, weights=weights, sparse=sparse)
    loss = Hinge() if hinge else Absolute()
    rows = RowData(data.X, data.intercept_scaling)
    lam, start, stop = 0.02, 100, 1400
    w0 = np.random.default_rng(2).normal(size=data.n_features) * 0.1  # a later phase's centre
    cap = np.minimum(Objective(rows, data.y, loss, lam, w0, 0.5, data.sample_weight, start, stop).k_values(), 1.0)
    beta = interior_dual_start(data, hinge, lam, w0, cap, 1e-3, start, stop)
    assert beta.shape == (stop - start,)
    y = data.y[start:stop]
    if hinge:
        assert np.all(y * beta >= 0) and np.all(y * beta <= cap)
    else:
        assert np.all(np.abs(beta) <= cap)
    if weights:
        assert np.all(beta[data.sample_weight[start:stop] == 0] == 0)
    res = certified_erm(rows, data.y, loss, lam, w0, clip=0.5, sample_weight=data.sample_weight, start=start,
                        stop=stop, target_distance=1e-3, max_epochs=0, dual_start=beta)
    assert res.certified
    again = interior_dual_start(data, hinge, lam, w0, cap, 1e-3, start, stop)
    np.testing.assert_array_equal(beta, again)  # deterministic


def test_the_restart_runs_only_when_the_ascent_fails(monkeypatch):
    # a solve the ascent certifies never calls it: releases of such solves are unchanged
    calls = []
    monkeypatch.setattr(_erm, "interior_dual_start", lambda *a, **k: calls.append(1))
    data = _instance(3)
    res = solve_certified(data, get_loss("hinge"), 0.05, np.zeros(data.n_features), clip=1.0, target_distance=1e-3)
    assert res.certified and not calls


@pytest.mark.parametrize("radius", [100.0, 0.5])
def test_ball_constrained_restart(radius):
    # the localization phases' domain ball: inside it the interior point is the constrained problem's dual
    # point too (certified without a pass); a binding ball (|w*| is about 0.9 here) is only a start, and
    # whatever is returned is certified by the kernel with the ball
    data = _near_constant(0)
    d = data.n_features
    target = 0.05 * 2.0 / (0.0124 * 3000)
    try:
        res = solve_certified(data, get_loss("hinge"), 0.0124, np.zeros(d), clip=1.0, target_distance=target,
                              ball=(np.zeros(d), radius))
    except CertificationError:
        assert radius < 1.0
        return
    assert res.certified and np.linalg.norm(res.w) <= radius


def test_a_failed_interior_solve_keeps_the_refusal(monkeypatch):
    monkeypatch.setattr(_erm, "interior_dual_start", lambda *a, **k: None)
    data = _near_constant(0)
    with pytest.raises(CertificationError):
        solve_certified(data, get_loss("hinge"), 0.0124, np.zeros(data.n_features), clip=1.0,
                        target_distance=0.05 * 2.0 / (0.0124 * 3000))
