"""T2 (slow tier): the power table of the factor-2 audits (doc/privacy/testing.rst, "Factor-2 mutants").

Run by hand::

    pytest --run-slow -m slow -s tests/slow/test_t2_twice_mutants.py

Each fast audit of tests/privacy (the release taken from its real fit by a spy, on worst-case neighbours) is
repeated over ``SEEDS`` seeds at the CI draw counts: the correct release must pass on every seed and each factor-2
mutant (twice the charged part, half the noise, the per-user reduction dropped) must be flagged on every seed. The
table of certified bounds (min-max over the seeds, against the claim) is printed; doc/privacy/testing.rst quotes it.
The helpers are the fast audits' own (loaded from their modules), so the two tiers audit the same thing.
"""

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

SEEDS = range(10)
PRIVACY = Path(__file__).resolve().parents[1] / "privacy"


def _module(name):
    spec = importlib.util.spec_from_file_location(f"_t2_{name}", PRIVACY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TWICE = _module("test_twice_mutants")
CENTRE = _module("test_centering_user")
MAGNITUDES = _module("test_column_magnitudes_user")
COUNT = _module("test_row_magnitude_count")


def _table(name, results, expect, margin=("twice", "half noise")):
    """Prints ``name``'s row and asserts: ``expect[k]`` False (must pass) / True (must be flagged) on every seed;
    the keys in ``margin`` well above the claim (``> 1.2`` times it), as their fast audits assert."""
    cells = []
    for key, flagged in expect.items():
        lbs = [r.lower_bound for r in results[key]]
        hits = sum(r.violation for r in results[key])
        cells.append(f"{key} {hits}/{len(lbs)} flagged, lb {min(lbs):.3g}-{max(lbs):.3g}")
    claimed = results[next(iter(expect))][0].claimed
    print(f"\n{name} (claimed {claimed:.3g}): " + "; ".join(cells))
    for key, flagged in expect.items():
        for r in results[key]:
            assert r.violation == flagged, (name, key, r)
            if flagged and key in margin:
                assert r.lower_bound > 1.2 * r.claimed, (name, key, r)


def _quantile_rows(mechanism, a, b, draws, per_row_m=None):
    out = {"correct": [], "twice": [], "per row": []}
    for seed in SEEDS:
        out["correct"].append(TWICE.audit_release(mechanism, a, b, mechanism.epsilon, draws, seed))
        out["twice"].append(TWICE.audit_release(TWICE.twice(mechanism), a, b, mechanism.epsilon, draws, seed))
        if per_row_m:
            out["per row"].append(TWICE.audit_release(mechanism, np.repeat(a, per_row_m), np.repeat(b, per_row_m),
                                                      mechanism.epsilon, draws, seed))
    return out


QUANTILE_CASES = ["growth label spread", "upper label spread", "scaler q3", "user column q3", "column median",
                  "column spread", "row column q1", "row column q3", "second stage q1", "second stage q3",
                  "growth row bound", "user data norm", "scaler q1", "user column q1", "user column q1 part 1"]


def _quantile_case(monkeypatch, case, noise):
    """``(mechanism, D values, D' values, draws, per-row m, per-row draws)`` of ``case`` as its fast audit builds it
    on ``noise`` (the fast audit's draw counts; the per-row audits' too)."""
    from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
    from sklearn_dpsco.linear_model import _auto_scales

    m, row_draws = None, None
    if case == "growth label spread":
        mechanism, _, a, b = TWICE.label_bound_release(monkeypatch, DPGrowthAdaptiveRegressor, _auto_scales.LABEL_SPREAD,
                                                       noise=noise)
        draws = 30_000
    elif case == "upper label spread":
        mechanism, _, a, b = TWICE.label_bound_release(monkeypatch, DPLinearRegressor, _auto_scales.LABEL_UPPER,
                                                       noise=noise)
        draws = 30_000
    elif case == "scaler q3":
        mechanism, a, b = TWICE.scaler_q3_pair(monkeypatch, noise=noise)
        draws = 10_000
    elif case == "user column q3":
        mechanism, a, b, m = TWICE.user_column_q3_pair(monkeypatch, noise=noise)
        draws = row_draws = 10_000
    elif case == "column median":
        mechanism, _, a, b = TWICE.median_mad_release(monkeypatch, noise=noise)
        draws = 10_000
    elif case == "column spread":
        _, mechanism, _, _ = TWICE.median_mad_release(monkeypatch, noise=noise)
        a, b = TWICE.worst_pair(mechanism, 25)
        draws = 30_000
    elif case.startswith("row column"):
        mechanism, a, b = TWICE.row_column_quartile_pair(monkeypatch, 0.25 if case.endswith("q1") else 0.75,
                                                         noise=noise)
        draws = 10_000
    elif case.startswith("second stage"):
        mechanism, a, b, _ = TWICE.second_stage_pair(monkeypatch, 0.25 if case.endswith("q1") else 0.75, noise=noise)
        draws = 10_000
    elif case == "growth row bound":
        mechanism, _, a, b = TWICE.growth_row_bound_release(monkeypatch, noise=noise)
        draws = 30_000
    elif case == "user data norm":
        mechanism, _, ((a, rows_a), (b, rows_b)) = TWICE.user_data_norm_release(monkeypatch, epsilon=20.0, noise=noise)
        draws, m, row_draws = 30_000, (rows_a, rows_b), (100_000 if noise == "float" else 40_000)
    elif case == "scaler q1":
        n = 200
        d, dp = TWICE.worst_pair(TWICE._scaler_probe(), n)
        mechanisms, (a, b) = TWICE.column_quartile_release(
            monkeypatch, TWICE._scaler, TWICE.functools.partial(TWICE._scaler_fit, noise=noise), n, (d, dp))
        mechanism, draws = mechanisms[0], 10_000
    else:  # user column q1: the fast audit's part (1.0 float, 2.0 secure); "part 1": 1.0 and 30 000 draws on both
        epsilon, draws = (8.0, 30_000) if noise == "float" or case.endswith("part 1") else (16.0, 10_000)
        mechanism, a, b, _ = TWICE._user_column_pair(monkeypatch, noise=noise, epsilon=epsilon)
    assert mechanism.noise == noise
    return mechanism, a, b, draws, m, row_draws


def _quantile_rows(mechanism, a, b, draws, per_row_m=None, row_draws=None):
    """``per_row_m``: the rows per user (each value repeated) or the per-row values ``(D, D')`` themselves."""
    out = {"correct": [], "twice": [], "per row": []}
    if per_row_m is not None:
        rows = per_row_m if isinstance(per_row_m, tuple) else (np.repeat(a, per_row_m), np.repeat(b, per_row_m))
    for seed in SEEDS:
        out["correct"].append(TWICE.audit_release(mechanism, a, b, mechanism.epsilon, draws, seed))
        out["twice"].append(TWICE.audit_release(TWICE.twice(mechanism), a, b, mechanism.epsilon, draws, seed))
        if per_row_m is not None:
            out["per row"].append(TWICE.audit_release(mechanism, *rows, mechanism.epsilon, row_draws, seed))
    return out


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("case", QUANTILE_CASES)
def test_power_of_the_quantile_audits(monkeypatch, case, noise):
    mechanism, a, b, draws, m, row_draws = _quantile_case(monkeypatch, case, noise)
    results = _quantile_rows(mechanism, a, b, draws, m, row_draws)
    expect = {"correct": False, "twice": True}
    if m is not None:
        expect["per row"] = True
    per_row = f", per row {row_draws}" if m is not None else ""
    # "part 1" is a measurement (the float fast audit's configuration on both paths): flagged on every seed, the
    # margin not asserted (secure: 1.19-1.54, one seed below 1.2; hence the secure fast audit's part 2.0)
    margin = () if case.endswith("part 1") else ("twice", "half noise")
    _table(f"{case}, {noise} (part {mechanism.epsilon:.3g}, {draws} draws{per_row})", results, expect, margin)


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_power_of_the_user_centre_audit(monkeypatch, noise):
    mechanism, plan, rows, rows_p = CENTRE.fit_centre_pair(monkeypatch, noise)
    c, cp = plan.total(rows), plan.total(rows_p)
    r, rp = CENTRE._clipped_row_sum(rows[0], plan.bound), CENTRE._clipped_row_sum(rows_p[0], plan.bound)
    claimed = (mechanism.epsilon, mechanism.delta)
    out = {"correct": [], "half noise": [], "per row": []}
    for seed in SEEDS:
        out["correct"].append(CENTRE.audit_mu(mechanism, c, cp, claimed, 40_000, seed))
        out["half noise"].append(CENTRE.audit_mu(CENTRE.half_noise(mechanism), c, cp, claimed, 40_000, seed))
        out["per row"].append(CENTRE.audit_mu(mechanism, r, rp, claimed, 40_000, seed + 1))
    _table(f"user centre, {noise} (mu, 40000 draws)", out, {"correct": False, "half noise": True, "per row": True},
           margin=("half noise", "per row"))


@pytest.mark.parametrize("noise,draws", [("secure", 10_000), ("float", 40_000)])
def test_power_of_the_user_magnitudes_audit(monkeypatch, noise, draws):
    plan, rows, rows_p = MAGNITUDES.fit_histogram_pair(monkeypatch, noise)
    mechanism = plan.mechanism
    c, cp = MAGNITUDES.plan_histogram(rows), MAGNITUDES.plan_histogram(rows_p)
    every_row = np.arange(rows[0].shape[0])
    r, rp = MAGNITUDES._histogram(rows[0], every_row), MAGNITUDES._histogram(rows_p[0], every_row)
    half = dataclasses.replace(mechanism, sensitivity=mechanism.sensitivity / 2.0)
    claimed = (mechanism.epsilon, mechanism.delta)
    out = {"correct": [], "half noise": [], "per row": []}
    for seed in SEEDS:
        out["correct"].append(MAGNITUDES.audit_mu(mechanism, c, cp, claimed, draws, seed))
        out["half noise"].append(MAGNITUDES.audit_mu(half, c, cp, claimed, draws, seed))
        out["per row"].append(MAGNITUDES.audit_mu(mechanism, r, rp, claimed, draws, seed + 1))
    _table(f"user magnitudes, {noise} (mu, {draws} draws)", out,
           {"correct": False, "half noise": True, "per row": True}, margin=("half noise", "per row"))


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_power_of_the_row_magnitude_count_audit(monkeypatch, noise):
    mechanism, c, cp = COUNT.fit_count_pair(monkeypatch, noise)
    doubled = dataclasses.replace(mechanism, epsilon=2.0 * mechanism.epsilon)
    out = {"correct": [], "twice": []}
    for seed in SEEDS:
        out["correct"].append(COUNT._count_audit(mechanism, c, cp, mechanism.epsilon, 100_000, seed))
        out["twice"].append(COUNT._count_audit(doubled, c, cp, mechanism.epsilon, 100_000, seed))
    _table(f"row magnitude count, {noise} (part {mechanism.epsilon:.3g}, 100000 draws)", out,
           {"correct": False, "twice": True})
