"""The calibration module (the one place a sensitivity becomes noise) and the Budget value."""

import subprocess

import numpy as np
import pytest

from sklearn_dpsco._budget import Budget
from sklearn_dpsco._mechanisms import GaussianMechanism, L2LaplaceMechanism, LaplaceMechanism
from sklearn_dpsco._mechanisms._calibrate import (
    certified_sensitivity,
    expected_noise_norm,
    gaussian_mechanism_for,
    gaussian_steps,
    laplace_mechanism_for,
    mechanism_for,
)
from sklearn_dpsco.accounting import ComposedEvent, epsilon_delta
from sklearn_dpsco.accounting._calibration import gaussian_mu


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_mechanism_for_is_the_direct_construction(noise, delta):
    got = mechanism_for(0.37, Budget(0.8, delta, noise), 5)
    want = (L2LaplaceMechanism(0.37, 0.8, 5, noise=noise) if delta == 0
            else GaussianMechanism(0.37, 0.8, delta, 5, noise=noise))
    assert got == want and type(got) is type(want)
    a = got.release(np.ones(5), np.random.default_rng(3))
    b = want.release(np.ones(5), np.random.default_rng(3))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("noise", ["secure", "float"])
def test_laplace_and_gaussian_for(noise):
    assert laplace_mechanism_for(2.0, Budget(0.5, 0.0, noise), 3) == LaplaceMechanism(2.0, 0.5, 3, noise=noise)
    assert gaussian_mechanism_for(2.0, Budget(0.5, 1e-5, noise), 3) == GaussianMechanism(2.0, 0.5, 1e-5, 3, noise=noise)
    with pytest.raises(ValueError, match="delta must be > 0"):
        gaussian_mechanism_for(2.0, Budget(0.5, 0.0, noise), 3)


def test_certified_sensitivity_is_exact_plus_twice_the_tolerance():
    assert certified_sensitivity(0.25, 0.01) == 0.25 + 2.0 * 0.01
    # commutative in IEEE: the deletion mechanism's "2 tau + chain" is the same float
    assert certified_sensitivity(0.1, 0.3) == 2.0 * 0.3 + 0.1


def test_gaussian_steps_match_scaled_standard_normals_bit_for_bit():
    for sigma in (0.3, 1.7e-5, 123.4):
        a = gaussian_steps(sigma).sample(np.random.default_rng(5), (7, 100))
        b = sigma * np.random.default_rng(5).standard_normal((7, 100))
        assert np.array_equal(a.view(np.int64), b.view(np.int64))
        c = gaussian_steps(sigma).draw(np.random.default_rng(5), (7, 100)).release(np.ones((7, 100)))
        assert np.array_equal(c, np.ones((7, 100)) + b)


def test_expected_noise_norm():
    assert expected_noise_norm(2.0, 4, 0.5, 0.0) == 2.0 * 4 / 0.5
    assert expected_noise_norm(1.0, 9, 1.0, 1e-6) == 3.0 / gaussian_mu(1.0, 1e-6)


def test_budget_validates_once():
    with pytest.raises(ValueError):
        Budget(0.0)
    with pytest.raises(ValueError):
        Budget(1.0, 1.0)
    with pytest.raises(ValueError, match="noise"):
        Budget(1.0, 0.0, "fast")
    b = Budget(1, 0)
    assert isinstance(b.epsilon, float) and b.pure and b.noise == "secure"


@pytest.mark.parametrize("noise", ["secure", "float"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_split_composes_to_the_whole(noise, delta):
    whole = Budget(1.3, delta, noise)
    parts = whole.split((0.2, 0.5, 0.3))
    mechs = [mechanism_for(1.0, p, 3) for p in parts]
    eps, _ = epsilon_delta(ComposedEvent(tuple(m.event for m in mechs)), delta)
    assert eps <= 1.3 * (1 + 1e-9)
    assert eps >= 1.3 * 0.9  # the split uses the budget, it does not waste it
    equal = whole.split_equal(4)
    assert equal == whole.split((1, 1, 1, 1))[0]
    assert whole.split_equal(1) == whole


def test_only_the_calibration_module_builds_mechanisms_from_a_sensitivity():
    out = subprocess.run(
        ["git", "grep", "-nE", r"(Laplace|Gaussian)Mechanism\(|TruncatedDiscreteLaplace\(", "--", "sklearn_dpsco/*.py"],
        capture_output=True, text=True, cwd=__file__.rsplit("/tests/", 1)[0],
    )
    if out.returncode not in (0, 1):
        pytest.skip("not a git checkout")
    lines = [ln for ln in out.stdout.splitlines()
             if not ln.startswith("sklearn_dpsco/_mechanisms/") and ">>>" not in ln]
    assert lines == []
