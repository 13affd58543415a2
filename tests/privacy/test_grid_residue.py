"""Grid-residue audit (doc/privacy/testing.rst, "Grid-residue audit").

A secure release is ``round(c) + integer noise`` on a power-of-two grid. The
defect this guards against -- ``c + noise_on_grid`` with ``c`` the exact solver
output -- keeps ``c mod gamma`` in EVERY release. Each estimator x solver x
delta that runs on ``noise="secure"`` is fitted with OS-entropy noise on
worst-case neighbours and audited; where the audit has power, a mutant that
turns every secure release of the library back into ``c + on-grid noise``
must be flagged on the same case (its power, measured, not assumed).
"""

import math

import numpy as np
import pytest

from sklearn_dpsco import UserLevelDPLogistic, _mechanisms
from sklearn_dpsco._mechanisms import GaussianMechanism, L2LaplaceMechanism, LaplaceMechanism
from sklearn_dpsco.linear_model import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco.model_selection import DPRandomizedSearchCV
from sklearn_dpsco.preprocessing import DPStandardScaler
from sklearn_dpsco.testing import (
    collect_releases,
    extreme_row,
    grid_residue_audit,
    replace_row,
    replace_user,
)

N_FITS = 16  # per side; 5-50 ms per fit at these sizes


# --------------------------------------------------------------------------- the unrounded-centre mutant
def _unrounded(release):
    """``value + release(0)``: the old idiom, exact on-grid noise added to the UNROUNDED centre."""

    def leaky(self, value, *args, **kwargs):
        value = np.asarray(value, dtype=float)
        return value + release(self, np.zeros_like(value), *args, **kwargs)

    return leaky


@pytest.fixture
def unrounded_releases(monkeypatch):
    """Turn every secure release of the library into ``centre + on-grid noise`` (test-only)."""

    def apply():
        # every release of the library goes through NoiseDraw.release
        monkeypatch.setattr(_mechanisms.NoiseDraw, "release", _unrounded(_mechanisms.NoiseDraw.release))

    return apply


# --------------------------------------------------------------------------- the audit itself
def _centres(d, seed):
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1, 1, d)
    return w, w + 0.01 * rng.standard_normal(d)


MECHANISMS = [
    pytest.param(lambda d: GaussianMechanism(0.01, 1.0, 1e-5, dimension=d), id="gaussian"),
    pytest.param(lambda d: L2LaplaceMechanism(1.0, 1.0, d), id="l2_laplace"),
]
# The coordinate Laplace's grid b 2^-48 is only ~2^4 float spacings of its own noisy values: the residue
# signature sits below what float64 can show (see test_coordinate_laplace_grid_is_below_the_audit).
LAPLACE = pytest.param(lambda d: LaplaceMechanism(16.0, 1.0, d), id="laplace")


@pytest.mark.parametrize("make", MECHANISMS)
@pytest.mark.parametrize("seed", range(5))
def test_unrounded_centre_is_flagged_with_certainty(make, seed):
    # (a) the old idiom: on-grid noise added to an unrounded centre (OS entropy, as a release would)
    d = 3
    mech = make(d)
    rng = np.random.default_rng()
    w, w_prime = _centres(d, seed)
    leaky = lambda c: c + mech.release(np.zeros(d), rng, size=N_FITS)  # noqa: E731
    result = grid_residue_audit(leaky(w), leaky(w_prime))
    assert not result.passed, result.explanation
    # every coordinate, on both sides: one release is enough to tell D from D'
    assert {(f["side"], f["coordinate"]) for f in result.findings} == {(s, c) for s in ("D", "D'") for c in range(d)}
    assert "constant and non-zero" in result.explanation
    assert not grid_residue_audit(leaky(w), leaky(w_prime), grid="auto").passed


@pytest.mark.parametrize("make", MECHANISMS + [LAPLACE])
@pytest.mark.parametrize("seed", range(5))
def test_rounded_release_passes_and_lies_on_its_grid(make, seed):
    # (b) the release contract: round the centre, add integer noise, scale back
    d = 3
    mech = make(d)
    rng = np.random.default_rng()
    w, w_prime = _centres(d, seed)
    grids = (None, mech.grid) if isinstance(mech, LaplaceMechanism) else (None, mech.grid, "auto")
    for grid in grids:
        result = grid_residue_audit(mech.release(w, rng, size=N_FITS), mech.release(w_prime, rng, size=N_FITS),
                                    grid=grid)
        assert result.passed, result.explanation
    if not isinstance(mech, LaplaceMechanism):
        assert result.detectable_bits > 0  # the unrounded variant of this release would have been caught


def test_coordinate_laplace_grid_is_below_the_audit():
    # documented limitation: values of a Laplace release have magnitude >~ b, float spacing >~ b 2^-52, and
    # the grid is b 2^-48 -- the audit reports no power (detectable_bits == 0) instead of a false pass claim
    mech = LaplaceMechanism(16.0, 1.0, 3)
    rng = np.random.default_rng()
    w, w_prime = _centres(3, 0)
    result = grid_residue_audit(mech.release(w, rng, size=N_FITS), mech.release(w_prime, rng, size=N_FITS))
    assert result.passed and result.detectable_bits == 0
    assert "none: the release grid is below" in result.explanation


def test_few_fits_still_flag_a_gaussian_leak():
    # the brief's measurement: a handful of fits suffices at the Gaussian grid sigma 2^-30
    mech = GaussianMechanism(0.05, 1.0, 1e-5, dimension=2)
    rng = np.random.default_rng()
    w, w_prime = _centres(2, 0)
    leaky = lambda c: c + mech.release(np.zeros(2), rng, size=6)  # noqa: E731
    assert not grid_residue_audit(leaky(w), leaky(w_prime)).passed
    assert grid_residue_audit(mech.release(w, rng, size=6), mech.release(w_prime, rng, size=6)).passed


def test_residues_are_exact_and_circular():
    from sklearn_dpsco.testing._grid_residue import _circular_distance, _common_grid_exponent, _signed_residues

    x = np.array([-0.3, 0.3, -1.75, 2.5, -2.0**-60])
    for j in (-3, 0, 2):
        s = _signed_residues(x, j)
        # exact: residue + rint(x / 2^j) reconstructs x / 2^j exactly, in rationals
        from fractions import Fraction

        for xi, si in zip(x, s):
            y = Fraction(xi) / Fraction(2) ** j
            assert Fraction(si) == y - round(y) or Fraction(si) == y - (math.floor(y) + 1) or Fraction(si) == y - math.floor(y)
            assert -0.5 <= si <= 0.5
    assert _circular_distance(np.array([0.9999999]), 0.0)[0] == pytest.approx(1e-7)
    assert _circular_distance(np.array([-0.4999]), 0.4999)[0] == pytest.approx(2e-4)
    assert _common_grid_exponent([0.75, -1.5, 3.0]) == -2
    assert _common_grid_exponent([0.0, 0.0]) is None


def test_near_zero_residues_are_zero_not_constant():
    # residues straddling 0 (0.9999999 and 0.0000001) are "0" on the circle: an on-grid value
    # perturbed by float rounding only is not flagged
    base = np.array([3.0, 4.0, -7.0, 10.0, 13.0, -18.0, 21.0, -6.0]) * 2.0**-10  # mixed parity: on grid 2^-10
    vals = base + np.array([1, -1, 1, -1, 1, -1, 1, -1]) * np.spacing(base)
    result = grid_residue_audit(vals, vals[::-1])
    assert result.passed, result.explanation


def test_off_grid_values_are_reported():
    rng = np.random.default_rng()
    mech = GaussianMechanism(0.01, 1.0, 1e-5, dimension=2)
    r = mech.release(np.array([0.2, 0.4]), rng, size=6)
    r_bad = r.copy()
    r_bad[3, 1] += mech.grid / 2
    result = grid_residue_audit(r, r_bad, grid=mech.grid)
    assert not result.passed and len(result.off_grid) == 1
    assert result.off_grid[0]["side"] == "D'" and result.off_grid[0]["coordinate"] == 1


def test_deterministic_coordinates_are_not_tested():
    # a coordinate clipped to a public bound in every fit carries no noise: nothing to test
    rng = np.random.default_rng()
    mech = GaussianMechanism(0.01, 1.0, 1e-5, dimension=1)
    noisy = mech.release(np.array([0.3]), rng, size=6)
    a = np.column_stack([noisy, np.full(6, 0.3)])
    result = grid_residue_audit(a, a)
    assert result.passed
    assert [c["deterministic"] for c in result.coverage if c["side"] == "D"] == [False, True]


def test_bad_inputs():
    with pytest.raises(ValueError, match="at least 4 fits"):
        grid_residue_audit(np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="non-finite"):
        grid_residue_audit(np.full((6, 1), np.nan), np.zeros((6, 1)))
    with pytest.raises(ValueError, match="same number of columns"):
        grid_residue_audit(np.zeros((6, 1)), np.zeros((6, 2)))


# --------------------------------------------------------------------------- worst-case neighbours
def _row_data(n=400, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    y_class = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    y_reg = X @ np.array([0.5, -0.3]) + 0.05 * rng.standard_normal(n)
    return X, y_class, y_reg


@pytest.fixture(scope="module")
def row_classification():
    """D and D' = D with its last row replaced by a row at the public bound (clip) with the other label."""
    X, y, _ = _row_data()
    bound = math.sqrt(X.shape[1])  # DPHingeClassifier's default clip
    return (X, y), replace_row(X, y, extreme_row(X.shape[1], bound), 1 - y[-1])


@pytest.fixture(scope="module")
def row_regression():
    """D' replaces the last row by one at the row bound (1) with a label at -label_bound... or far out."""
    X, _, y = _row_data()
    return (X, y), replace_row(X, y, extreme_row(X.shape[1], 1.0), -10.0)


@pytest.fixture(scope="module")
def user_data():
    """150 users x 4 rows; D' replaces user 0's whole block by 7 rows of norm 50 with the other label."""
    rng = np.random.default_rng(1)
    n_users, m, d = 150, 4, 2
    X = rng.standard_normal((n_users * m, d)) / np.sqrt(d)
    y = (X[:, 0] > 0).astype(int)
    groups = np.repeat(np.arange(n_users), m)
    rows = np.tile(extreme_row(d, 50.0), (7, 1))
    return (X, y, groups), replace_user(X, y, groups, rows, 1 - y[0])


# --------------------------------------------------------------------------- every secure case
# power: "residue" -- the residue test flags the unrounded mutant (one-shot release, fixed centre);
# "grid" -- the release is on a coarse power-of-two grid, so grid="auto" flags the mutant even when the
# last centre depends on earlier noise (multi-phase); None -- no power, with the reason.
NO_POWER_LAPLACE = "pure DP: the Laplace grid (b 2^-48, l2: b 2^-40) is at or below the float spacing of the values"
NO_POWER_POST = "release post-processed by a non-power-of-two map ({})"

HINGE = ("output_perturbation", "localized_output_perturbation", "lowy", "ald_localization", "ald_growth")
LINEAR = ("adassp", "snowball", "phased_sgd", "phased_erm", "lowy", "interpolation", "interpolation_ald")
GROWTH = ("ald_growth", "ald_localization", "interpolation", "inverse_sensitivity")
USER = ("user_clip", "item_group", "sc_output_pert", "phased_erm", "phased_sco", "sc_erm_two_step",
        "sc_sco_two_step", "user_dp_sgd")

FLOAT_ONLY = {
    ("DPLinearRegressor", "snowball", 0.0): "approximate DP only (delta = 0 is refused on both noise paths)",
}

POWER = {
    ("DPHingeClassifier", "output_perturbation", 0.0): "residue",
    ("DPHingeClassifier", "output_perturbation", 1e-5): "residue",
    ("DPHingeClassifier", "localized_output_perturbation", 0.0): NO_POWER_LAPLACE,
    ("DPHingeClassifier", "localized_output_perturbation", 1e-5): "grid",
    ("DPHingeClassifier", "lowy", 0.0): NO_POWER_POST.format("stage averaging / ball projection"),
    ("DPHingeClassifier", "lowy", 1e-5): NO_POWER_POST.format("stage averaging / ball projection"),
    ("DPHingeClassifier", "ald_localization", 0.0): NO_POWER_LAPLACE,
    ("DPHingeClassifier", "ald_localization", 1e-5): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPHingeClassifier", "ald_growth", 0.0): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPHingeClassifier", "ald_growth", 1e-5): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPLinearRegressor", "adassp", 0.0): NO_POWER_POST.format("a linear solve of the noisy statistics"),
    ("DPLinearRegressor", "adassp", 1e-5): NO_POWER_POST.format("a linear solve of the noisy statistics"),
    ("DPLinearRegressor", "phased_sgd", 0.0): NO_POWER_LAPLACE,
    ("DPLinearRegressor", "phased_sgd", 1e-5): "grid",
    ("DPLinearRegressor", "phased_erm", 0.0): NO_POWER_LAPLACE,
    # centred phases (doc/privacy/output_perturbation.rst, "Centring"): the previous output plus the on-grid release
    ("DPLinearRegressor", "phased_erm", 1e-5): NO_POWER_POST.format("the centre added to the on-grid release"),
    ("DPLinearRegressor", "lowy", 0.0): NO_POWER_POST.format("stage averaging / ball projection"),
    ("DPLinearRegressor", "lowy", 1e-5): NO_POWER_POST.format("stage averaging / ball projection"),
    ("DPLinearRegressor", "interpolation", 0.0): NO_POWER_LAPLACE,
    ("DPLinearRegressor", "snowball", 1e-5): NO_POWER_POST.format("steps -(eta / B) release, projection"),
    ("DPLinearRegressor", "interpolation", 1e-5): NO_POWER_POST.format("steps -(eta / B) release, projection"),
    ("DPLinearRegressor", "interpolation_ald", 0.0): NO_POWER_LAPLACE,
    # the noisy phase output is projected onto the intersection of the localization balls when it
    # lands outside (about 1 run in 40 here), which moves it off the grid: "grid" would flake
    ("DPLinearRegressor", "interpolation_ald", 1e-5): NO_POWER_POST.format("projection onto the balls' intersection"),
    ("DPGrowthAdaptiveRegressor", "ald_growth", 0.0): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPGrowthAdaptiveRegressor", "ald_growth", 1e-5): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPGrowthAdaptiveRegressor", "ald_localization", 0.0): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPGrowthAdaptiveRegressor", "ald_localization", 1e-5): NO_POWER_POST.format("noisy iterates averaged"),
    ("DPGrowthAdaptiveRegressor", "interpolation", 0.0): NO_POWER_LAPLACE,
    ("DPGrowthAdaptiveRegressor", "interpolation", 1e-5): "grid",
    ("DPGrowthAdaptiveRegressor", "inverse_sensitivity", 0.0): "not additive noise: releases a public grid point",
    ("DPGrowthAdaptiveRegressor", "inverse_sensitivity", 1e-5): "not additive noise: releases a public grid point",
    ("UserLevelDPLogistic", "user_clip", 1e-2): "residue",
    ("UserLevelDPLogistic", "item_group", 1e-2): "residue",
    ("UserLevelDPLogistic", "sc_output_pert", 1e-2): "residue",
    ("UserLevelDPLogistic", "phased_erm", 1e-2): NO_POWER_POST.format("ball projection of the phase outputs"),
    ("UserLevelDPLogistic", "phased_sco", 1e-2): "grid",
    ("UserLevelDPLogistic", "sc_erm_two_step", 1e-2): "noise-dominated values: the last phase's grid is at "
                                                       "their float spacing",
    ("UserLevelDPLogistic", "sc_sco_two_step", 1e-2): NO_POWER_POST.format("ball projection of the phase outputs"),
    # the per-step releases themselves are audited, with power, by test_dp_gd_step_releases_carry_no_centre_bits
    ("UserLevelDPLogistic", "user_dp_sgd", 1e-2): NO_POWER_POST.format("steps -(step / n) release + ridge, projection"),
}


def _estimator(kind, solver, delta):
    # declared scales: the solvers' own releases are audited (an "auto" scale multiplies the
    # coefficients by a released grid ratio, post-processing that hides the release grid)
    if kind == "DPHingeClassifier":
        return DPHingeClassifier(epsilon=1.0, delta=delta, solver=solver, clip=None), "row_classification"
    if kind == "DPLinearRegressor":
        return (DPLinearRegressor(epsilon=1.0, delta=delta, solver=solver, row_bound=1.0, label_bound=1.0),
                "row_regression")
    if kind == "DPGrowthAdaptiveRegressor":
        extra = dict(smoothness=1.0, growth=0.1) if solver == "interpolation" else {}
        if solver == "inverse_sensitivity":
            extra = dict(fit_intercept=False)  # one coefficient: a private location on X = ones
        return (DPGrowthAdaptiveRegressor(epsilon=1.0, delta=delta, solver=solver, row_bound=None, label_bound=None,
                                          **extra), "row_regression")
    # eps 8, delta 1e-2 keep the deletion mechanism's user count small; radius 1000 keeps the
    # one-shot releases inside the ball (no projection: the release itself is what is audited)
    return UserLevelDPLogistic(epsilon=8.0, delta=delta, solver=solver, radius=1000.0, data_norm=1.0), "user_data"


CASES = (
    [("DPHingeClassifier", s, dl) for s in HINGE for dl in (0.0, 1e-5)]
    + [("DPLinearRegressor", s, dl) for s in LINEAR for dl in (0.0, 1e-5)]
    + [("DPGrowthAdaptiveRegressor", s, dl) for s in GROWTH for dl in (0.0, 1e-5)]
    + [("UserLevelDPLogistic", s, 1e-2) for s in USER]  # delta > 0 only: every user-level solver is approximate
)


def _one_column(data):
    (X, y), (X2, y2) = data
    return (np.ones((X.shape[0], 1)), y), (np.ones((X2.shape[0], 1)), y2)


@pytest.mark.parametrize("kind,solver,delta", CASES, ids=[f"{k}-{s}-{d}" for k, s, d in CASES])
def test_estimator_releases_carry_no_centre_bits(kind, solver, delta, request, unrounded_releases):
    if (kind, solver, delta) in FLOAT_ONLY:
        pytest.skip(FLOAT_ONLY[(kind, solver, delta)] + ": refused under noise='secure'")
    est, fixture = _estimator(kind, solver, delta)
    data = request.getfixturevalue(fixture)
    if solver == "inverse_sensitivity":
        data = _one_column(data)
    power = POWER[(kind, solver, delta)]
    grid = "auto" if power == "grid" else None
    result = grid_residue_audit(*collect_releases(est, *data, n_fits=N_FITS), grid=grid)
    assert result.passed, result.explanation
    if power not in ("residue", "grid"):
        return  # documented: no power on this case (see POWER)
    if power == "residue":
        assert result.detectable_bits > 0, result.explanation
    # the mutant: every secure release of the library becomes centre + on-grid noise
    unrounded_releases()
    mutant = grid_residue_audit(*collect_releases(est, *data, n_fits=N_FITS), grid=grid)
    assert not mutant.passed, "the audit missed the unrounded-centre mutant:\n" + mutant.explanation


def test_every_secure_case_has_a_declared_status():
    for case in CASES:
        assert case in POWER or case in FLOAT_ONLY, case


@pytest.fixture
def first_step_releases(monkeypatch):
    """Record the first NoiseDraw.release of every fit (user-level DP-GD: the step-0 sum, at w = 0)."""
    records = []

    def install():
        inner = _mechanisms.NoiseDraw.release

        def recording(self, value):
            out = inner(self, value)
            records.append(np.array(out, dtype=float).ravel())
            return out

        monkeypatch.setattr(_mechanisms.NoiseDraw, "release", recording)

    def first_of_fit(_estimator):
        first = records[0]
        records.clear()
        return first

    return install, first_of_fit


def test_dp_gd_step_releases_carry_no_centre_bits(user_data, first_step_releases, unrounded_releases, monkeypatch):
    """user_dp_sgd's coefficients are post-processed (no power there); its step releases are audited directly.

    Step 0 is taken at w = 0 on every fit, so its centre (the clipped gradient sum) is a fixed function of
    the data: the residue test has power, and the unrounded-centre mutant must be flagged."""
    est = UserLevelDPLogistic(epsilon=8.0, delta=1e-2, solver="user_dp_sgd", sgd_iterations=2, radius=1000.0,
                              data_norm=1.0)  # the declared bound (the default would rescale the columns here)
    install, first_of_fit = first_step_releases
    install()
    result = grid_residue_audit(*collect_releases(est, *user_data, n_fits=N_FITS, extract=first_of_fit))
    assert result.passed, result.explanation
    assert result.detectable_bits > 0, result.explanation
    monkeypatch.undo()  # record the mutant's releases (not the noise it draws inside)
    unrounded_releases()
    install()
    mutant = grid_residue_audit(*collect_releases(est, *user_data, n_fits=N_FITS, extract=first_of_fit))
    assert not mutant.passed, "the audit missed the unrounded-centre mutant:\n" + mutant.explanation


# --------------------------------------------------------------------------- preprocessing and search
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_scaler_mean_carries_no_centre_bits(delta, row_regression, unrounded_releases):
    (X, _), (X2, _) = row_regression
    X2 = X2.copy()
    X2[-1] = 1.0  # the upper bound in every feature
    est = DPStandardScaler(epsilon=1.0, delta=delta, bounds=(-1.0, 1.0))
    # mean_ is the released mean clipped to the bounds; var_ is m2 - (mean - centre)^2, clipped (post-processed:
    # no power there, audited but not counted on)
    data = ((X,), (X2,))
    result = grid_residue_audit(*collect_releases(est, *data, n_fits=N_FITS))
    assert result.passed, result.explanation
    if delta == 0:
        return  # NO_POWER_LAPLACE: the coordinate Laplace grid b 2^-48 is below the mean's float spacing
    means = lambda e: e.mean_  # noqa: E731
    assert grid_residue_audit(*collect_releases(est, *data, n_fits=N_FITS, extract=means), grid="auto").passed
    unrounded_releases()
    mutant = grid_residue_audit(*collect_releases(est, *data, n_fits=N_FITS, extract=means))
    assert not mutant.passed, mutant.explanation


def test_random_stopping_best_score(row_classification):
    # best_score_ = (g Q + Laplace(g W)) / m, the noisy exact sum on the grid b 2^-48 divided by m after the
    # noise (post-processing; model_selection.rst, "Exact scores"): the audit must pass
    search = DPRandomizedSearchCV(DPHingeClassifier(solver="output_perturbation"), {"alpha": [0.01, 0.1]},
                                  n_iter=2, epsilon=2.0, selection="random_stopping")
    score = lambda e: np.array([e.best_score_])  # noqa: E731
    result = grid_residue_audit(*collect_releases(search, *row_classification, n_fits=8, extract=score))
    assert result.passed, result.explanation
