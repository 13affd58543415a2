"""Float samplers of the continuous and discrete noise laws (the "float" path)."""

import math

import numpy as np

from ._paths import release_shape

__all__ = ["discrete_laplace_noise", "gaussian_noise", "l2_laplace_noise", "laplace_noise"]


def laplace_noise(rng, scale, size):
    """I.i.d. Laplace(0, ``scale``) coordinates (doc/algorithms.rst, P1)."""
    return rng.laplace(0.0, scale, size=size)


def l2_laplace_noise(rng, scale, dimension, size=None):
    """Isotropic l2-Laplace: density proportional to ``exp(-||b|| / scale)`` in R^d.

    The norm of such a vector is Gamma(d, scale) and its direction uniform on
    the sphere, independently (doc/algorithms.rst, P2): the density in polar form
    is ``r^(d-1) exp(-r / scale)`` times the uniform surface measure.
    """
    shape = release_shape(size, dimension)
    direction = rng.standard_normal(shape)
    norms = np.linalg.norm(direction, axis=-1, keepdims=True)
    # A zero Gaussian vector has probability 0; guard the division anyway.
    norms[norms == 0] = 1.0
    radius = rng.gamma(shape=dimension, scale=scale, size=shape[:-1] + (1,))
    return radius * direction / norms


def gaussian_noise(rng, sigma, size):
    """I.i.d. N(0, ``sigma``^2) coordinates."""
    return rng.normal(0.0, sigma, size=size)


def discrete_laplace_noise(rng, t, size):
    """Integers with P(k) proportional to ``exp(-|k| / t)``.

    Drawn as the difference of two i.i.d. geometric variables with success
    probability ``1 - exp(-1/t)`` (Inusah and Kozubowski 2006).
    """
    p = -math.expm1(-1.0 / t)
    return rng.geometric(p, size=size) - rng.geometric(p, size=size)

