"""Dispatch of the noisy-SGD loop kernels: compiled when available, NumPy reference otherwise.

The compiled kernels (``sklearn_dpsco._fast``, branch ``kernels``) implement
exactly :mod:`._sgd_reference`; tests compare the two.
"""

from . import _sgd_reference as _ref

__all__ = ["HAVE_COMPILED_KERNELS", "pnsgd_chunk", "sgd_one_pass"]

HAVE_COMPILED_KERNELS = False


def pnsgd_chunk(X, y, sample_weight, state, batch_sizes, steps, noise, settings):
    return _ref.pnsgd_chunk(X, y, sample_weight, state, batch_sizes, steps, noise, settings)


def sgd_one_pass(X, y, sample_weight, state, step, settings):
    return _ref.sgd_one_pass(X, y, sample_weight, state, step, settings)
