"""Localization (doc/privacy/localization.rst, doc/privacy/growth.rst).

Phases of certified output perturbation on disjoint blocks (the ALD schedules,
phased ERM, the growth epochs) and the ALD-1 / ALD-2 schedules with the
paper's or practical utility constants.
"""
