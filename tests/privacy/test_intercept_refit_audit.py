"""End-to-end release audit of DPHingeClassifier's private intercept refit (doc/privacy/hinge.rst).

The refit is ``epsilon_t``-DP *given* the solver's released ``w~`` ("Private intercept refit":
the argument fixes ``w~``; the solver's release is audited with the solver). Both neighbours are
fitted with the solver's release fixed to the same public ``W_RELEASED``; everything after it runs
as in ``DPHingeClassifier.fit`` on the secure path: the plan the estimator builds
(``InterceptRefitPlan.run``: ``epsilon_t`` from ``intercept_share``, the public grid from ``w~``
and the clip, the scores ``data.matvec(w~)`` of the problem's rows with their intercept column,
labels +-1, the exact permute-and-flip selection on the plan's generator). At that one call the
selection draws ``size`` independent releases instead of one (``select_exact(..., size)``, the
same law: tests/linear_model/test_intercept_refit.py); the fit releases the first, and the fitted
``coef_``/``intercept_`` are checked against it.

Neighbours: replace-one pairs of ``N_ROWS`` rows of one feature (positions ``POSITIONS``, both
labels), chosen by enumeration from the exact laws to maximise the loss of a threshold event on
the released shift (the audit's events). Mutants: the refit reporting ``f`` times the utility's
sensitivity (its ``units``), i.e. weights ``exp(epsilon_t u / (2 f Delta))``; ``f = 0.5`` MUST be
flagged.

Grids: at these ``n epsilon`` (3 rows) the fit runs the tiny-budget grid ``{-B, 0, B}`` (3 points,
linear_model/_hinge_rules.py ``default_intercept_grid``); the 101-point grid of larger budgets is audited
by lowering ``INTERCEPT_MIN_RANKS`` to 0 (the same code path, the grid is the only difference).

T1 (``statistical``, CI): ``epsilon_t = 1``, the releases follow the documented law, and a short
audit with the half-sensitivity mutant, on both grids. T2 (``slow``, by hand: ``pytest --run-slow -m slow
tests``): ``epsilon_t`` in {0.5, 1, 2}, 1e6 releases per side, mutants 0.8x and 0.5x, recorded in
the T2 audit report (doc/privacy/testing.rst).
"""

import itertools
import math
import threading
import time
import zlib
from fractions import Fraction

import numpy as np
import pytest

from sklearn_dpsco import BudgetAccountant
from sklearn_dpsco._solvers import PrivateFit
from sklearn_dpsco.linear_model import DPHingeClassifier, _hinge, _hinge_rules
from sklearn_dpsco.linear_model._intercept_refit import InterceptRefit, InterceptRefitPlan, dyadic_round
from sklearn_dpsco.testing import audit_release_with_mutants, discrete_pmf_pvalue

#: The solver's release ``w~ = (w~_x, w~_b)`` in the problem's units, the same on both neighbours.
W_RELEASED = np.array([1.0, 0.25])
CLIP, SCALING = 1.0, 1.0
#: Row values (one feature, |x| <= CLIP): scores ``x + 0.25`` on the grid ``linspace(-B, B, 101)``,
#: ``B = ||w~|| sqrt(CLIP^2 + SCALING^2) = 1.46``.
POSITIONS = tuple(float(v) for v in np.linspace(-1.0, 1.0, 5))
N_ROWS = 3

N_FAST = 100_000  # T1 releases per side

_call = threading.local()  # per audit thread: draws wanted, mutant factor, the draws made


# ------------------------------------------------------------------ the estimator with w~ given
class _GivenRelease:
    """The solver's plan with its release fixed to ``W_RELEASED`` (same event, info and schedule)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def run(self, problem, rng):
        return PrivateFit(coef=W_RELEASED.copy(), event=self._inner.event, info=self._inner.info)


class _RefitGivenRelease(InterceptRefitPlan):
    """``InterceptRefitPlan`` (its ``run`` unchanged) on top of the fixed release."""

    def __init__(self, inner, refit, row_bound, joint=False):
        super().__init__(_GivenRelease(inner), refit, row_bound, joint)


@pytest.fixture
def given_release(monkeypatch):
    """Patch the estimator so its refit runs on ``W_RELEASED``, draws ``_call.size`` releases at
    once, and (mutants) reports ``_call.factor`` times the sensitivity."""
    release_index, units = InterceptRefit.release_index, InterceptRefit.units

    def many(self, scores, y, sample_weight, points, rng, size=None):
        n = getattr(_call, "size", None)
        if n is None:
            return release_index(self, scores, y, sample_weight, points, rng, size)
        _call.draws = release_index(self, scores, y, sample_weight, points, rng, size=n)
        _call.points = np.asarray(points)
        return _call.draws[0]

    def mutant_units(y, sample_weight):
        u, sensitivity = units(y, sample_weight)
        factor = getattr(_call, "factor", None)
        return u, sensitivity if factor is None else sensitivity * factor

    monkeypatch.setattr(_hinge, "InterceptRefitPlan", _RefitGivenRelease)
    monkeypatch.setattr(InterceptRefit, "release_index", many)
    monkeypatch.setattr(InterceptRefit, "units", staticmethod(mutant_units))


@pytest.fixture(params=[3, 101], ids=["3 points", "101 points"])
def grid(request, monkeypatch):
    """The refit's grid size: 3 (what the fit runs on these 3 rows), or 101 (threshold lowered to 0)."""
    if request.param == 101:
        monkeypatch.setattr(_hinge_rules, "INTERCEPT_MIN_RANKS", 0.0)
    return request.param


def _fit_shifts(x, y, eps_t, size, seed, factor=None, grid_points=None):
    """``size`` released threshold shifts of ``DPHingeClassifier.fit`` on rows ``x`` (given ``w~``)."""
    _call.size, _call.factor, _call.draws = size, factor, None
    try:
        est = DPHingeClassifier(
            epsilon=2 * eps_t, intercept_share=0.5, clip=CLIP, intercept_scaling=SCALING,
            solver="output_perturbation", classes=[0, 1], noise="secure",
            accountant=BudgetAccountant(math.inf, 1.0), random_state=seed,
        ).fit(np.asarray(x, dtype=float)[:, None], np.asarray(y))
        draws, points = _call.draws, _call.points
    finally:
        _call.size = _call.factor = _call.draws = None
    assert draws is not None and len(draws) == size  # the refit ran through the patched call
    assert est.fit_info_[0]["intercept_refit_epsilon"] == eps_t
    if grid_points is not None:
        assert est.fit_info_[0]["intercept_refit_grid"] == grid_points == len(points)
    # the fit released the first draw: w~ with its intercept coordinate moved by t / s
    shift = float(points[draws[0]])
    np.testing.assert_array_equal(np.ravel(est.coef_), W_RELEASED[:-1])
    assert float(np.ravel(est.intercept_)[0]) == (W_RELEASED[-1] - dyadic_round(shift / SCALING, points)) * SCALING
    return points[draws]


class _RefitThroughFit:
    """``release(centre, rng, size)``: shifts released by the fit on D (centre 0) or D' (centre 1)."""

    def __init__(self, pair, eps_t, factor, grid_points=None):
        self.pair, self.eps_t, self.factor, self.grid_points = pair, eps_t, factor, grid_points

    def release(self, centre, rng, size):
        x, y = self.pair[int(float(np.ravel(centre)[0]) == 1.0)]
        seed = int(rng.integers(2**32))  # the estimator's random_state range
        return _fit_shifts(x, y, self.eps_t, size, seed, self.factor, self.grid_points)[:, None]


def _make(pair, eps_t, grid_points=None):
    # f = 1: the refit as shipped; f < 1: it reports f times its sensitivity (exact rational)
    return lambda f: _RefitThroughFit(pair, eps_t, None if f == 1.0 else Fraction(str(f)), grid_points)


# ------------------------------------------------------------------ the worst pair, from the exact laws
def _law(rows, eps_t, factor=1, grid_points=101):
    refit = InterceptRefit(eps_t / factor, grid_points=grid_points, noise="float")
    points = refit.grid(W_RELEASED, math.hypot(CLIP, SCALING))
    x, y = (np.array(c, dtype=float) for c in zip(*rows))
    scores = W_RELEASED[0] * x + W_RELEASED[1] * SCALING
    return refit.pmf(scores, 2 * y - 1, None, points)


def _threshold_loss(p, q):
    """max over events {shift <= t_k} and {shift > t_k} of |log P_D(E) - log P_D'(E)|."""
    cp, cq = np.cumsum(p)[:-1], np.cumsum(q)[:-1]
    return float(max(np.abs(np.log(cp / cq)).max(), np.abs(np.log((1 - cp) / (1 - cq))).max()))


_WORST = {}


def _worst_pair(eps_t, grid_points=101):
    """The replace-one pair (both sides with both labels) of largest exact threshold-event loss."""
    if (eps_t, grid_points) not in _WORST:
        rows = [(x, lab) for x in POSITIONS for lab in (0, 1)]
        laws, best = {}, (-1.0, None)

        def law(data):
            key = tuple(sorted(data))
            if key not in laws:
                laws[key] = _law(key, eps_t, grid_points=grid_points)
            return laws[key]

        for data in itertools.combinations_with_replacement(rows, N_ROWS):
            for i, new in itertools.product(range(N_ROWS), rows):
                other = list(data)
                other[i] = new
                if len({lab for _, lab in data}) < 2 or len({lab for _, lab in other}) < 2:
                    continue
                loss = _threshold_loss(law(data), law(other))
                if loss > best[0]:
                    best = (loss, (list(data), other))
        _WORST[(eps_t, grid_points)] = best
    return _WORST[(eps_t, grid_points)]


def _as_xy(pair):
    return tuple(tuple(np.array(c, dtype=float) for c in zip(*rows)) for rows in pair)


# ------------------------------------------------------------------ T1 (CI)
#: The T2 enumeration's worst pair at epsilon_t in {1, 2} (pinned: the enumeration takes a minute)
WORST_PAIR = ([(-1.0, 0), (1.0, 0), (1.0, 1)], [(-1.0, 0), (1.0, 1), (1.0, 1)])


def _pair(eps_t, grid_points):
    """The pinned 101-point worst pair, or the 3-point grid's by enumeration (fast: three candidates)."""
    return WORST_PAIR if grid_points == 101 else _worst_pair(eps_t, grid_points)[1]


@pytest.mark.statistical
def test_refit_through_fit_follows_its_law(given_release, grid):
    """The shifts the fit releases (given w~) follow the exact law of the documented selection."""
    eps_t = 1.0
    pair = _pair(eps_t, grid)
    (x, y), _ = _as_xy(pair)
    shifts = _fit_shifts(x, y, eps_t, 50_000, seed=11, grid_points=grid)
    points = InterceptRefit(eps_t, grid_points=grid).grid(W_RELEASED, math.hypot(CLIP, SCALING))
    index = np.searchsorted(points, shifts)
    assert np.array_equal(points[index], shifts)
    support = np.arange(len(points))
    assert discrete_pmf_pvalue(index, support, _law(pair[0], eps_t, grid_points=grid)) > 1e-6
    assert discrete_pmf_pvalue(index, support, _law(pair[0], eps_t, factor=0.5, grid_points=grid)) < 1e-6


@pytest.mark.statistical
def test_refit_through_fit_audit_flags_half_sensitivity(given_release, grid):
    eps_t = 1.0
    pair = _pair(eps_t, grid)
    loss = _threshold_loss(_law(pair[0], eps_t, grid_points=grid), _law(pair[1], eps_t, grid_points=grid))
    assert 0.9 * eps_t < loss <= eps_t + 1e-12  # the pair nearly attains the claim (measured: 0.95; 3 points: 1)
    ok, mutants = audit_release_with_mutants(
        _make(_as_xy(pair), eps_t, grid), [0.0], [1.0], eps_t, 0.0, statistic="epsilon", n_draws=N_FAST,
        rng=np.random.default_rng(3), factors=(0.5,),
    )
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]



# ------------------------------------------------------------------ T2 (by hand)
N_DRAWS = 1_000_000
FACTORS = (0.8, 0.5)


@pytest.mark.slow
@pytest.mark.parametrize("eps_t", [0.5, 1.0, 2.0])
def test_t2_intercept_refit_through_fit(eps_t, given_release, grid, audit_report):
    t0 = time.perf_counter()
    loss, pair = _worst_pair(eps_t, grid)
    mutant_loss = {f"x{f:g}": _threshold_loss(_law(pair[0], eps_t, f, grid), _law(pair[1], eps_t, f, grid))
                   for f in FACTORS}
    key = ("intercept_refit", eps_t) if grid == 101 else ("intercept_refit", eps_t, grid)
    rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
    ok, mutants = audit_release_with_mutants(
        _make(_as_xy(pair), eps_t, grid), [0.0], [1.0], eps_t, 0.0, statistic="epsilon", n_draws=N_DRAWS,
        rng=rng, factors=FACTORS,
    )
    audit_report.record(
        group="DPHingeClassifier intercept refit (secure, through fit, given w~)",
        name="intercept_refit/permute_and_flip" + ("" if grid == 101 else f"/{grid} points"),
        params={"eps_t": eps_t, "D": pair[0], "D'": pair[1]}, n_draws=N_DRAWS, statistic="epsilon",
        claimed=ok.claimed, lower_bound=ok.lower_bound,
        mutants={lab: (res.lower_bound, mutant_loss[lab]) for lab, res in mutants.items()},
        seconds=time.perf_counter() - t0,
        note=f"exact threshold-event loss of the pair: {loss:.4g} (mutants: in brackets)",
    )
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]
