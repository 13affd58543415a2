"""Private optimization in the interpolation regime, ACCD (doc/privacy/interpolation.rst,
doc/privacy/interpolation_sgd.rst).

The ACCD building blocks over localization (``_accd``) and ACCD with
Feldman-Koren-Talwar's noisy SGD as the inner solver (``_accd_sgd``).
"""
