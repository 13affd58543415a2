"""Noisy one-pass SGD (doc/privacy/snowball_sgd.rst, doc/privacy/phased_sgd.rst).

PNSGD and Snowball-SGD (``_pnsgd``) and Phased-SGD (``_phased_sgd``) of
Feldman, Koren, Talwar 2020: schedules from public facts and their drivers.
"""
