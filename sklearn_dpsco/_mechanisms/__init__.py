"""Noise mechanisms (doc/privacy/mechanisms.rst).

Each mechanism is a small frozen object built from *public* inputs
(sensitivity, budget, dimension). It knows its noise scale, the privacy
event it consumes, and how to draw noise. Releases are vectorised
(``size`` independent draws at once) so the statistical audits can draw
1e5 samples in milliseconds.

Noise is drawn from a :class:`numpy.random.Generator` made by
:func:`sklearn_dpsco._rng.check_random_state` (OS entropy by default).
The ``noise`` argument selects the sampling path (doc/privacy/secure_noise.rst):

``"secure"`` (the default, :data:`DEFAULT_NOISE`)
    Round the centre to a power-of-two grid, inflate the sensitivity by the
    rounding, add *exact* integer noise (discrete Laplace / discrete
    Gaussian, Canonne-Kamath-Steinke 2020), scale back. Outputs lie exactly
    on the grid and the privacy proof covers the floats actually released.
    The isotropic l2-Laplace has no proven lattice version: its secure path
    is a *hardened* continuous sampler rounded to the grid.
``"float"``
    The textbook ``value + rng.laplace(...)`` in float64. Not differentially
    private as a distribution over floats (Mironov 2012); kept for
    comparison, tests and benchmarks.

Modules: :mod:`._paths` (the noise paths), :mod:`._samplers` (float
samplers), :mod:`._grid` (grids and exact integer sensitivities of the
secure path), :mod:`._draw` (:class:`NoiseDraw`, the one release idiom),
:mod:`._additive` (Laplace, l2-Laplace, Gaussian), :mod:`._integer`
(discrete Laplace, truncated discrete Laplace), :mod:`._scale_grid`,
:mod:`._selection` and :mod:`._quantile` (private quantiles over a public
log-spaced grid, the building block of private scale estimates;
doc/privacy/quantiles.rst), :mod:`._steps` (per-step
float Gaussian of the iterative solvers' float path) and :mod:`._calibrate`,
the ONE place where a sensitivity and a budget become a mechanism.
"""

from ._additive import GaussianMechanism, L2LaplaceMechanism, LaplaceMechanism
from ._draw import NoiseDraw
from ._integer import DiscreteLaplaceMechanism, TruncatedDiscreteLaplace
from ._paths import DEFAULT_NOISE
from ._quantile import QuantileMechanism
from ._scale_grid import ScaleGrid
from ._samplers import discrete_laplace_noise, gaussian_noise, l2_laplace_noise, laplace_noise

__all__ = [
    "LaplaceMechanism",
    "L2LaplaceMechanism",
    "GaussianMechanism",
    "DiscreteLaplaceMechanism",
    "TruncatedDiscreteLaplace",
    "NoiseDraw",
    "QuantileMechanism",
    "ScaleGrid",
    "laplace_noise",
    "l2_laplace_noise",
    "gaussian_noise",
    "discrete_laplace_noise",
    "DEFAULT_NOISE",
]
