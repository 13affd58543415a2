"""The two noise paths, "secure" (the default) and "float" (doc/privacy/secure_noise.rst)."""

__all__ = ["DEFAULT_NOISE", "NOISE_PATHS", "check_noise", "release_shape"]

NOISE_PATHS = ("secure", "float")

#: The noise path every mechanism (and, through them, every estimator) uses
#: unless told otherwise. Measured cost (doc/privacy/secure_noise.rst,
#: benchmarks/bench_noise.py): one release takes 30-55 us at d <= 100 and
#: 0.1-0.4 ms at d = 1000 (float: 2-20 us), negligible next to a fit; the
#: Laplace and
#: l2-Laplace noise scales grow by a relative ``(d / epsilon + 1) 2^-48``
#: (resp. ``sqrt(d) 2^-40 / epsilon``) at most;
#: the Gaussian's sigma grows by 4-11% (zCDP calibration, see
#: GaussianMechanism) -- the price of a proof that covers the released floats.
DEFAULT_NOISE = "secure"


def check_noise(noise):
    """``noise`` if it names a noise path, else a ValueError."""
    if noise not in NOISE_PATHS:
        raise ValueError(f"noise must be one of {NOISE_PATHS}, got {noise!r}.")
    return noise


def release_shape(size, dimension):
    """Shape of one release (``size=None``) or of ``size`` stacked releases."""
    if size is None:
        return (dimension,)
    return (size, dimension)

