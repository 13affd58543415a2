"""Deterministic certified optimizers: no noise is drawn here.

Certified ERM (compiled SDCA with its NumPy/SciPy reference as the fallback
for losses without a compiled kernel), the certified user-level logistic
solver, and the noisy-SGD loop drivers (compiled kernels with the NumPy
reference loop as fallback; the noise they add is drawn by the caller's
schedule). The references here are library code, not test oracles: the
solvers call them at run time.
"""
