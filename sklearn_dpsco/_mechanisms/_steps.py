"""Per-step float Gaussian noise of the iterative solvers' float path.

PNSGD / Snowball-SGD (doc/privacy/snowball_sgd.rst) and user-level DP-GD
(doc/privacy/user_level.rst) add ``N(0, sigma^2 I)`` to a gradient at every
step on the float path. User-level DP-GD's secure path releases every step
through a :class:`~sklearn_dpsco._mechanisms.GaussianMechanism` instead
(:func:`~sklearn_dpsco._mechanisms._calibrate.dp_gd_step_mechanism`).
PNSGD / Snowball-SGD's accounting (amplification by iteration) is for
continuous Gaussians on an unreleased internal state; on ``noise="secure"``
they release every batch sum through a GaussianMechanism instead
(:func:`~sklearn_dpsco._mechanisms._calibrate.one_pass_step_mechanism`;
doc/privacy/snowball_sgd.rst, "Secure path").
"""

from dataclasses import dataclass

from .._param_checks import check_nonnegative
from ._draw import NoiseDraw
from ._samplers import gaussian_noise

__all__ = ["GaussianSteps"]


@dataclass(frozen=True)
class GaussianSteps:
    """I.i.d. ``N(0, sigma^2)`` coordinates for every step of an iterative solver (float path only).

    Built by :func:`sklearn_dpsco._mechanisms._calibrate.gaussian_steps`.

    Parameters
    ----------
    sigma : float
        Per-coordinate standard deviation of every step's noise.
    """

    sigma: float

    def __post_init__(self):
        object.__setattr__(self, "sigma", check_nonnegative(self.sigma, "sigma"))

    def sample(self, rng, shape):
        """Noise of one or more steps as floats, for kernels that add it inside a gradient step."""
        return gaussian_noise(rng, self.sigma, shape)

    def draw(self, rng, shape):
        """The same noise as :meth:`sample`, held in a :class:`NoiseDraw` (released with ``.release``)."""
        return NoiseDraw(self.sample(rng, shape), 0.0)
