"""Public synthetic data families shared by the tests and the benchmarks."""

import numpy as np

__all__ = ["mixed_units"]


def mixed_units(n=6000, seed=0):
    """Raw columns in mixed units: ``(X, labels, targets)`` of ``n`` rows.

    A survey year in [1975, 2015) (a large offset, a small spread: the column that one quartile stage
    scales at one grid step), an income in thousands, a 0/1 indicator and a standard column; the label
    and the regression target depend on all four (doc/privacy/column_scaling.rst, "Two stages").
    """
    rng = np.random.default_rng(seed)
    year = 1975.0 + 40.0 * rng.random(n)
    income = 1000.0 * rng.standard_normal(n)
    ind = (rng.random(n) < 0.5).astype(float)
    z = rng.standard_normal(n)
    X = np.column_stack([year, income, ind, z])
    signal = (year - 1995.0) / 12.0 + income / 1000.0 + (ind - 0.5) * 2.0 + z
    labels = (signal + 0.5 * rng.standard_normal(n) > 0).astype(int)
    targets = 10.0 + signal + 0.5 * rng.standard_normal(n)
    return X, labels, targets
