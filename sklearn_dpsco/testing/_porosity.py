"""Bit-level porosity audits (Mironov 2012; doc/privacy/secure_noise.rst).

A floating-point release ``fl(c + Z)`` cannot produce every float: which
floats it can produce depends on the centre ``c``. With ``c = 0`` the output
is the sampler's float ``Z`` itself, whose low mantissa bits are populated;
with ``c = 1`` every output in ``(-1/2, 1/2)`` is the exact difference
``1 + Z`` (Sterbenz), a multiple of ``2^-53``. The event

    E = { lo < y < hi  and  y * 2^bits is not an integer }

therefore has probability about 1/4 under ``c = 0`` (at scale 1) and
exactly 0 under ``c = 1``: no finite epsilon covers it. Secure outputs are
multiples of a grid ``gamma >= 2^-bits`` and never fall in E.

The event is fixed in advance, so both directions are certified on all
draws with :func:`~sklearn_dpsco.testing.epsilon_lower_bound_from_counts`
(Bonferroni over the two directions).
"""

from dataclasses import dataclass

import numpy as np

from ._audit import epsilon_lower_bound_from_counts

__all__ = ["porosity_event", "porosity_audit", "PorosityResult"]


def porosity_event(y, window=(-0.5, 0.5), bits=53):
    """Boolean mask of ``{lo < y < hi and y * 2^bits not an integer}``.

    ``y * 2^bits`` is exact in float64 (scaling by a power of two), so the
    test reads the mantissa bits below ``2^-bits`` without rounding.
    """
    y = np.asarray(y, dtype=float)
    lo, hi = window
    scaled = np.ldexp(y, bits)
    return (y > lo) & (y < hi) & (scaled != np.floor(scaled))


@dataclass(frozen=True)
class PorosityResult:
    """Counts of the porosity event on D and D' and the certified epsilon lower bound."""

    k_d: int
    n_d: int
    k_dp: int
    n_dp: int
    lower_bound: float
    claimed: float

    @property
    def violation(self):
        return self.lower_bound > self.claimed

    def __str__(self):
        return (
            f"porosity eps_lb={self.lower_bound:.4g} vs claimed {self.claimed:.4g} "
            f"(event on D: {self.k_d}/{self.n_d}, on D': {self.k_dp}/{self.n_dp})"
        )


def porosity_audit(outputs_d, outputs_dp, epsilon, delta=0.0, *, window=(-0.5, 0.5), bits=53, alpha=1e-6):
    """Certified epsilon lower bound from the porosity event on scalar outputs.

    Parameters
    ----------
    outputs_d, outputs_dp : array-like
        Released floats (one coordinate) on D (centre 0) and D' (centre 1).
    epsilon, delta : float
        The claimed guarantee.
    window, bits : see :func:`porosity_event`.
    alpha : float, default=1e-6
        Probability that a correct mechanism is flagged.

    Returns
    -------
    PorosityResult
    """
    a = np.asarray(outputs_d, dtype=float).ravel()
    b = np.asarray(outputs_dp, dtype=float).ravel()
    ka = int(porosity_event(a, window, bits).sum())
    kb = int(porosity_event(b, window, bits).sum())
    lb_ab = epsilon_lower_bound_from_counts(ka, a.size, kb, b.size, delta=delta, alpha=alpha / 2)
    lb_ba = epsilon_lower_bound_from_counts(kb, b.size, ka, a.size, delta=delta, alpha=alpha / 2)
    return PorosityResult(ka, a.size, kb, b.size, max(lb_ab, lb_ba), float(epsilon))
