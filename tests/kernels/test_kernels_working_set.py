"""Working-set solves of kinked losses: the start changes where the ascent begins, never what is certified.

``certified_kinked_erm`` (``_solvers/_optim/_working_set.py``) must end at a
point whose duality-gap certificate passes, within its proven distance of the
exact minimizer (checked against a cold solve to a much tighter target), for
hinge and absolute losses with and without intercept, weights, sparse rows
and a ball; when the screening guesses wrong sides, the check rounds or the
full ascent must repair it.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._fast._erm import certified_erm
from sklearn_dpsco._fast._losses import Absolute, Hinge
from sklearn_dpsco._fast._rows import RowData
from sklearn_dpsco._solvers._core._data import GLMData
from sklearn_dpsco._solvers._core._losses import get_loss
from sklearn_dpsco._solvers._optim import _working_set
from sklearn_dpsco._solvers._optim._erm import solve_certified
from sklearn_dpsco._solvers._optim._working_set import certified_kinked_erm


#: The cold reference solve's target (the float floor of these instances is near 1e-5).
REFERENCE_TARGET = 2e-5


def _instance(seed, n=3000, d=5, classification=False, intercept=0.0, weights=False, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    if sparse:
        X[rng.uniform(size=X.shape) < 0.3] = 0.0
        X = sp.csr_matrix(X)
    w = rng.normal(size=d)
    z = X @ w
    if classification:
        y = np.where(z + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    else:
        y = z + 0.3 * rng.normal(size=n)
    sw = rng.uniform(0, 1, size=n) if weights else None
    if weights:
        sw[::7] = 0.0  # rows the objective ignores
    return GLMData(X, y, sw, intercept)


def _solve(data, loss, lam, target, w0=None, ball=None, start=0, stop=None, ref_target=REFERENCE_TARGET):
    rows = RowData(data.X, data.intercept_scaling)
    w0 = np.zeros(data.n_features) if w0 is None else w0
    c, R = (None, None) if ball is None else ball
    res = certified_kinked_erm(data, rows, loss, lam, w0, clip=0.5, start=start, stop=stop, target_distance=target,
                               max_epochs=2000, ball_center=c, ball_radius=R)
    cold = certified_erm(rows, data.y, loss, lam, w0, clip=0.5, sample_weight=data.sample_weight, start=start,
                         stop=stop, target_distance=ref_target, max_epochs=5000, ball_center=c, ball_radius=R)
    assert cold.certified
    return res, cold


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
@pytest.mark.parametrize("intercept", [0.0, 1.0])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_working_set_solve_is_certified_near_the_minimizer(loss, intercept, weights, sparse):
    data = _instance(0, classification=loss.is_classification, intercept=intercept, weights=weights, sparse=sparse)
    lam, target = 1e-3, 1e-4
    res, cold = _solve(data, loss, lam, target)
    assert res.certified and res.distance_bound <= target
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
def test_working_set_solve_with_ball_and_block(loss):
    data = _instance(1, n=4000, classification=loss.is_classification, intercept=1.0)
    w0 = np.full(data.n_features, 0.1)
    for radius in (0.05, 100.0):  # active and inactive constraint
        res, cold = _solve(data, loss, 1e-3, 1e-4, w0=w0, ball=(w0, radius), start=500, stop=3500, ref_target=1e-4)
        assert res.certified
        assert np.linalg.norm(res.w - w0) <= radius
        assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
def test_right_pattern_certifies_without_a_pass(loss):
    data = _instance(2, classification=loss.is_classification, intercept=1.0)
    rows = RowData(data.X, 1.0)
    lam, target = 1e-3, 5e-5
    w0 = np.zeros(data.n_features)
    probe = certified_erm(rows, data.y, loss, lam, w0, clip=0.5, target_distance=target,
                          max_epochs=sum(_working_set.PROBE_EPOCHS))
    assert not probe.certified, "the instance must need more than the probe"
    res = certified_kinked_erm(data, rows, loss, lam, w0, clip=0.5, start=0, stop=None, target_distance=target,
                               max_epochs=2000)
    # the assembled dual point is optimal: the certificate passes at once, over every row
    assert res.certified and res.n_epochs == 0


def test_a_wrong_screening_is_repaired_by_the_check_rounds(monkeypatch):
    # a tiny working set puts many rows near their kink on the side seen at the probe's point
    monkeypatch.setattr(_working_set, "SCREEN_SHRINK", 1e6)
    monkeypatch.setattr(_working_set, "MAX_ROUNDS", 50)
    sizes = []
    real = _working_set.certified_erm

    def spy(rows, y, *args, **kwargs):
        sizes.append(y.shape[0])
        return real(rows, y, *args, **kwargs)

    monkeypatch.setattr(_working_set, "certified_erm", spy)
    data = _instance(3, classification=True)
    res, cold = _solve(data, Hinge(), 1e-3, 5e-5)
    # (screens without a certificate call), reduced solves on a growing working set, the final certificate
    reduced = [size for size in sizes if size < data.n_samples]
    assert len(reduced) >= 2 and reduced[-2] < reduced[-1] and sizes[-1] == data.n_samples
    assert res.certified and res.n_epochs == 0
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
def test_an_overflowing_working_set_falls_back_to_the_probe(loss, monkeypatch):
    monkeypatch.setattr(_working_set, "MAX_WORKING_FRACTION", 0.0)
    data = _instance(3, classification=loss.is_classification)
    rows = RowData(data.X)
    w0 = np.zeros(data.n_features)
    probe = certified_erm(rows, data.y, loss, 1e-3, w0, clip=0.5, target_distance=5e-5, max_epochs=3)
    cap = np.minimum(0.5 / rows.row_norms(), 1.0)
    assert _working_set.working_set_dual(data, rows, loss, 1e-3, w0, 0.5, cap, 0, data.n_samples, 5e-5, probe,
                                         {}) is None
    res, cold = _solve(data, loss, 1e-3, 5e-5)
    assert res.certified and res.n_epochs > 0
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
def test_a_wrong_start_falls_back_to_the_full_ascent(loss, monkeypatch):
    # every screened row on the wrong side, and no check round to repair it: the ascent does the work
    monkeypatch.setattr(_working_set, "MAX_ROUNDS", 1)
    screen = _working_set.screen_rows

    def flipped(rows, start, stop, z, y, sw, threshold, hinge, cap, e, in_set, bound, *limit):
        count = screen(rows, start, stop, z, y, sw, threshold, hinge, cap, e, in_set, bound, *limit)
        bound[:] = np.where(e > 0, cap * y, 0.0) if hinge else np.where(e > 0, cap, -cap)
        return count

    monkeypatch.setattr(_working_set, "screen_rows", flipped)
    data = _instance(4, classification=loss.is_classification, weights=True)
    res, cold = _solve(data, loss, 1e-3, 5e-5)
    assert res.certified and res.n_epochs > 0
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


def test_a_probe_that_certifies_is_returned_as_is():
    data = _instance(5)
    res, _ = _solve(data, Absolute(), 1.0, 1.0)
    assert res.certified and res.n_epochs == 0


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
def test_nested_working_sets_certify_the_same_minimizer(loss, monkeypatch):
    # every working set is solved on a working set of its own
    monkeypatch.setattr(_working_set, "NESTED_MIN_ROWS", 1)
    data = _instance(8, n=6000, classification=loss.is_classification, intercept=1.0, weights=True)
    res, cold = _solve(data, loss, 3e-4, 1e-4, ref_target=1e-4)
    assert res.certified
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


@pytest.mark.parametrize("name", ["hinge", "absolute"])
def test_solve_certified_routes_kinked_losses_to_the_working_set(name, monkeypatch):
    calls = []
    real = _working_set.certified_kinked_erm

    def spy(*args, **kwargs):
        calls.append(kwargs["target_distance"])
        return real(*args, **kwargs)

    monkeypatch.setattr("sklearn_dpsco._solvers._optim._erm.certified_kinked_erm", spy)
    data = _instance(6, classification=name == "hinge", intercept=1.0)
    res = solve_certified(data, get_loss(name), 1e-3, np.zeros(data.n_features), clip=0.5, target_distance=1e-4)
    assert calls == [1e-4] and res.distance_bound <= 1e-4


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 2.0])
def test_rowdata_products_on_a_row_range(sparse, intercept):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 4))
    Xa = np.hstack([X, np.full((30, 1), intercept)]) if intercept > 0 else X
    rows = RowData(sp.csr_matrix(X) if sparse else X, intercept)
    w, a = rng.normal(size=Xa.shape[1]), rng.normal(size=12)
    np.testing.assert_allclose(rows.matvec(w, 5, 17), Xa[5:17] @ w, rtol=1e-13)
    np.testing.assert_allclose(rows.rmatvec(a, 5, 17), Xa[5:17].T @ a, rtol=1e-13)
    np.testing.assert_allclose(rows.matvec(w), Xa @ w, rtol=1e-13)
    with pytest.raises(ValueError, match="start <= stop"):
        rows.matvec(w, 20, 10)
    with pytest.raises(ValueError, match="shape"):
        rows.rmatvec(a, 0, 30)


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
def test_an_overflowing_screen_probes_again_before_the_full_ascent(loss, monkeypatch):
    # each probe whose working set overflows gets PROBE_EPOCHS' next few passes and a new screen;
    # the result is the same certified minimizer whichever probe screens
    data = _instance(4, classification=loss.is_classification)
    rows = RowData(data.X, 0.0)
    lam, target = 1e-3, 5e-5
    w0 = np.zeros(data.n_features)
    screen, probes = _working_set.working_set_dual, []

    def overflow_twice(data_, rows_, loss_, lam_, w0_, clip, cap, start, stop, target_distance, probe, ball,
                       nested=False, max_fraction=None):
        probes.append(probe.n_epochs)
        if len(probes) <= 2:
            return None  # as if the working set were above MAX_WORKING_FRACTION
        return screen(data_, rows_, loss_, lam_, w0_, clip, cap, start, stop, target_distance, probe, ball, nested,
                      max_fraction)

    monkeypatch.setattr(_working_set, "working_set_dual", overflow_twice)
    res = certified_kinked_erm(data, rows, loss, lam, w0, clip=0.5, start=0, stop=None, target_distance=target,
                               max_epochs=2000, nested=False)
    # the screen saw the point at beta = 0, then the point after a few passes, then after a few more
    assert len(probes) == 3 and probes[0] == 0 and min(probes[1:]) >= 3
    assert res.certified and res.distance_bound <= target
    cold = certified_erm(rows, data.y, loss, lam, w0, clip=0.5, target_distance=REFERENCE_TARGET, max_epochs=20000)
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
@pytest.mark.parametrize("weights", [False, True])
def test_blocked_order_ascent_certifies_the_same_minimizer(loss, weights):
    # blocks of 256 rows, a last partial block, a row range, zero-weight rows and a ball
    data = _instance(9, n=3000, classification=loss.is_classification, intercept=1.0, weights=weights)
    rows = RowData(data.X, data.intercept_scaling)
    w0 = np.full(data.n_features, 0.05)
    fit = dict(clip=0.5, sample_weight=data.sample_weight, start=123, stop=2900, max_epochs=5000)
    for ball in ((None, None), (w0, 0.3)):
        blocked = certified_erm(rows, data.y, loss, 1e-3, w0, target_distance=1e-4, blocked_order=True,
                                ball_center=ball[0], ball_radius=ball[1], **fit)
        shuffled = certified_erm(rows, data.y, loss, 1e-3, w0, target_distance=1e-4,
                                 ball_center=ball[0], ball_radius=ball[1], **fit)
        assert blocked.certified and shuffled.certified and blocked.n_epochs > 0
        assert np.linalg.norm(blocked.w - shuffled.w) <= blocked.distance_bound + shuffled.distance_bound


def test_working_set_uses_the_blocked_order_on_large_blocks_only(monkeypatch):
    seen = []
    real = _working_set.certified_erm

    def spy(rows, *args, **kwargs):
        stop = rows.n_samples if kwargs.get("stop") is None else kwargs["stop"]
        seen.append((stop - kwargs.get("start", 0), kwargs.get("blocked_order", False)))
        return real(rows, *args, **kwargs)

    monkeypatch.setattr(_working_set, "certified_erm", spy)
    data = _instance(10, n=3000, intercept=1.0)
    row_bytes = (data.n_features) * 8
    monkeypatch.setattr(_working_set, "BLOCKED_ORDER_BYTES", 2000 * row_bytes)
    res, cold = _solve(data, Absolute(), 3e-4, 1e-4, ref_target=1e-4)
    assert res.certified and np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound
    assert (3000, True) in seen and any(not b for n, b in seen if n < 2000)
    assert all(b == (n >= 2000) for n, b in seen)


@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("with_ball", [False, True])
def test_an_unchecked_start_takes_the_same_path(blocked, with_ball):
    # check_start=False skips only the certificate at a start known to fail it: same path, same result
    data = _instance(11, n=3000, classification=True, intercept=1.0, weights=True)
    rows = RowData(data.X, data.intercept_scaling)
    c = np.full(data.n_features, 0.1) if with_ball else None
    fit = dict(clip=0.5, sample_weight=data.sample_weight, target_distance=1e-4, blocked_order=blocked,
               ball_center=c, ball_radius=0.5 if with_ball else None)
    probe = certified_erm(rows, data.y, Hinge(), 1e-3, None, max_epochs=3, **fit)
    assert not probe.certified
    checked = certified_erm(rows, data.y, Hinge(), 1e-3, None, max_epochs=50, dual_start=probe.dual_coef, **fit)
    unchecked = certified_erm(rows, data.y, Hinge(), 1e-3, None, max_epochs=50, dual_start=probe.dual_coef,
                              check_start=False, **fit)
    assert checked.certified and checked.n_epochs > 0
    assert np.array_equal(checked.w, unchecked.w) and np.array_equal(checked.dual_coef, unchecked.dual_coef)
    assert (checked.distance_bound, checked.n_epochs) == (unchecked.distance_bound, unchecked.n_epochs)
    # with no pass to run, the start is checked whatever the flag
    zero = certified_erm(rows, data.y, Hinge(), 1e-3, None, max_epochs=0, dual_start=probe.dual_coef,
                         check_start=False, **fit)
    assert zero.distance_bound == probe.distance_bound


@pytest.mark.parametrize("loss", [Hinge(), Absolute()], ids=repr)
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("at_zero", [True, False])
def test_screening_point_is_the_certificate_without_its_margin(loss, weights, at_zero):
    # the screen's float estimate of the distance is the kernel's duality gap at the same dual point
    data = _instance(10, n=2000, classification=loss.is_classification, intercept=1.0, weights=weights)
    rows = RowData(data.X, data.intercept_scaling)
    lam, w0 = 1e-2, np.full(data.n_features, 0.1)
    probe = certified_erm(rows, data.y, loss, lam, w0, clip=0.5, sample_weight=data.sample_weight, start=100,
                          stop=1900, target_distance=0.0, max_epochs=0 if at_zero else 2)
    cap = np.minimum(0.5 / rows.row_norms()[100:1900], 1.0)
    point = _working_set.screening_point(data, rows, loss, lam, w0, cap, 100, 1900, probe.dual_coef)
    np.testing.assert_allclose(point.w, probe.w, rtol=1e-12, atol=1e-14)
    gap = 0.5 * lam * point.distance_bound**2
    assert abs(gap - probe.gap) <= 1e-9 * abs(probe.primal) + probe.float_margin
    assert point.distance_bound <= probe.distance_bound * (1 + 1e-9)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("clip", [0.5, 10.0])
def test_the_smoothed_start_screens_close_to_the_minimizer(weights, clip):
    # a dual point inside the box whose certified gap is within the smoothing's mu / 4 per row
    from sklearn_dpsco._solvers._optim import _warm_start

    data = _instance(11, n=20000, intercept=1.0, weights=weights)
    rows = RowData(data.X, data.intercept_scaling)
    lam, w0 = 1e-3, np.zeros(data.n_features)
    cap = np.minimum(clip / rows.row_norms(), 1.0)
    beta = _warm_start.smoothed_absolute_start(data, lam, w0, cap, 1e-4)
    assert beta is not None and np.all(np.abs(beta) <= cap)
    at_start = certified_erm(rows, data.y, Absolute(), lam, w0, clip=clip, sample_weight=data.sample_weight,
                             target_distance=0.0, max_epochs=0, dual_start=beta)
    at_zero = certified_erm(rows, data.y, Absolute(), lam, w0, clip=clip, sample_weight=data.sample_weight,
                            target_distance=0.0, max_epochs=0)
    scale = np.mean(np.abs(data.y))
    mu = _warm_start.SMOOTH_WIDTHS[-1] * scale
    assert at_start.gap <= np.mean(cap * (1.0 if data.sample_weight is None else data.sample_weight)) * mu / 4
    assert at_start.distance_bound < 0.05 * at_zero.distance_bound


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weights", [False, True])
def test_a_smoothed_screen_certifies_the_same_minimizer(weights, sparse, monkeypatch):
    monkeypatch.setattr(_working_set, "SMOOTHED_MIN_ROWS", 1)
    calls = []
    from sklearn_dpsco._solvers._optim import _warm_start
    real = _warm_start.smoothed_absolute_start
    monkeypatch.setattr(_working_set, "smoothed_absolute_start", lambda *a: calls.append(1) or real(*a))
    data = _instance(12, intercept=1.0, weights=weights, sparse=sparse)
    res, cold = _solve(data, Absolute(), 3e-4, 5e-5)
    assert calls == [1]  # the screen at beta = 0 did not screen; the smoothed one did
    assert res.certified
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


def test_a_failed_smoothed_start_leaves_the_probes_of_the_ascent(monkeypatch):
    # a Newton failure (None) costs nothing but the attempt: the probes after 3, 6, 9 passes screen instead
    monkeypatch.setattr(_working_set, "SMOOTHED_MIN_ROWS", 1)
    monkeypatch.setattr(_working_set, "smoothed_absolute_start", lambda *a: None)
    probes, screen = [], _working_set.working_set_dual

    def spy(*args, **kwargs):
        probes.append(args[10].n_epochs)
        return screen(*args, **kwargs)

    monkeypatch.setattr(_working_set, "working_set_dual", spy)
    data = _instance(12, intercept=1.0)
    res, cold = _solve(data, Absolute(), 3e-4, 5e-5)
    assert probes[0] == 0 and max(probes) >= 3  # the start's screen, then a probe of the ascent
    assert res.certified
    assert np.linalg.norm(res.w - cold.w) <= res.distance_bound + cold.distance_bound


def test_a_large_start_working_set_waits_for_the_smoothed_screen(monkeypatch):
    # on a block that will get the smoothed screen, the start's screen may only keep SMOOTHED_MAX_FRACTION
    # of the rows; after it, the general MAX_WORKING_FRACTION applies again
    monkeypatch.setattr(_working_set, "SMOOTHED_MIN_ROWS", 1)
    fractions, screen = [], _working_set.working_set_dual

    def spy(*args, **kwargs):
        fractions.append(args[13] if len(args) > 13 else kwargs.get("max_fraction"))
        return screen(*args, **kwargs)

    monkeypatch.setattr(_working_set, "working_set_dual", spy)
    data = _instance(12, intercept=1.0)
    res, cold = _solve(data, Absolute(), 3e-4, 5e-5)
    assert fractions[0] == _working_set.SMOOTHED_MAX_FRACTION and fractions[-1] is None
    assert res.certified


def test_the_smoothed_start_declines_a_block_already_at_its_centre():
    # zero residuals at the centre: no width to smooth at, so no start (the solve itself is unaffected)
    from sklearn_dpsco._solvers._optim import _warm_start

    data = _instance(13, n=500)
    w0 = np.zeros(data.n_features)
    flat = GLMData(data.X, np.zeros(data.n_samples), None, 0.0)
    assert _warm_start.smoothed_absolute_start(flat, 1e-3, w0, np.ones(data.n_samples), 1e-4) is None


@pytest.mark.parametrize("loss_name", ["absolute", "hinge"])
def test_screens_on_extreme_rows_stay_silent_and_finite(loss_name, monkeypatch):
    # rows of norm 1e300 and 1e-300 and targets of +-1e300 (conditioned by solve_certified): the float
    # screens and the smoothed start may see non-finite values, but never warn (a data-dependent
    # warning would leak) and the certified point stays finite
    import warnings

    monkeypatch.setattr(_working_set, "SMOOTHED_MIN_ROWS", 1)
    data = _instance(14, n=2000, classification=loss_name == "hinge", intercept=1.0)
    X, y = data.X.copy(), data.y.copy()
    X[0] *= 1e300 / np.linalg.norm(X[0])
    X[1] *= 1e-300 / np.linalg.norm(X[1])
    if loss_name == "absolute":
        y[2], y[3] = 1e300, -1e300
    extreme = GLMData(X, y, None, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # (1e-3: the huge conditioned targets put this objective's float floor at 2e-4)
        res = solve_certified(extreme, get_loss(loss_name), 1e-3, np.zeros(extreme.n_features), clip=0.5,
                              target_distance=1e-3)
    assert np.all(np.isfinite(res.w)) and res.distance_bound <= 1e-3
