"""Where a sensitivity becomes noise: the one release step of output perturbation.

Pure DP uses the isotropic l2-Laplace mechanism, approximate DP the analytic
Gaussian (doc/privacy/mechanisms.rst). Every building block that perturbs a
point calls :func:`release_mechanism` with a sensitivity it computed from
public quantities, so the noise scale of the whole library is set here.
"""

from .._mechanisms import DEFAULT_NOISE, GaussianMechanism, L2LaplaceMechanism

__all__ = ["release_mechanism"]


def release_mechanism(sensitivity, epsilon, delta, dimension, noise=DEFAULT_NOISE):
    """The mechanism releasing a d-vector of l2-sensitivity ``sensitivity`` at (epsilon, delta).

    ``delta == 0``: :class:`L2LaplaceMechanism` (pure epsilon-DP, scale
    ``sensitivity / epsilon``). ``delta > 0``: analytic
    :class:`GaussianMechanism`.
    """
    if delta == 0:
        return L2LaplaceMechanism(sensitivity, epsilon, dimension, noise=noise)
    return GaussianMechanism(sensitivity, epsilon, delta, dimension, noise=noise)
