"""Public settings shared by the noisy-SGD building blocks (PNSGD, Phased-SGD).

The loss of one row is the C-Lipschitz (Huber) extension of the squared loss
(doc/algorithms.rst, §6.2) on the *clipped* row ``x~ = (min(1, R/||x||) x, s)``:

    f(w; x, y) = huber_K(<w, x~> - y),   K = C / ||x~||,
    grad f     = clip(<w, x~> - y, -K, K) x~          (norm <= C).

Row clipping to the public bound ``R`` is a fixed per-row map (it does not
look at other rows), so it is part of the loss, not a data-dependent bound.
It is what makes the per-row losses ``beta``-smooth with the PUBLIC constant
``beta = R^2 + s^2`` (the Huber loss has second derivative <= 1, so the
Hessian is <= x~ x~^T). Amplification by iteration (FKT Thm 3.1) and the
stability of one-pass SGD (FKT Section 4) both need every step map
``w -> w - eta grad f(w)`` to be non-expansive, which holds exactly when
``eta <= 2 / beta`` for EVERY row's loss: without the clipping a single row
of huge norm would make its step expansive and void the privacy proof
(doc/privacy/snowball_sgd.rst).
"""

import math
from dataclasses import dataclass

from ..._param_checks import check_nonnegative, check_positive

__all__ = ["SGDSettings"]


@dataclass(frozen=True)
class SGDSettings:
    """Public constants of a noisy-SGD run.

    Attributes
    ----------
    clip : float
        Lipschitz level ``C`` of the Huber extension (``L`` in FKT).
    row_bound : float
        Public bound ``R`` on the feature part of a row; rows are scaled
        down to it. Must be finite for the SGD solvers.
    intercept_scaling : float
        Value ``s`` of the virtual intercept column (0 = no intercept).
    radius : float
        Radius of the parameter domain ``K = B(0, radius)``; iterates are
        projected onto it (``inf``: no projection).
    """

    clip: float
    row_bound: float
    intercept_scaling: float = 0.0
    radius: float = math.inf

    def __post_init__(self):
        object.__setattr__(self, "clip", check_positive(self.clip, "clip"))
        object.__setattr__(self, "row_bound", check_positive(self.row_bound, "row_bound"))
        object.__setattr__(self, "intercept_scaling", check_nonnegative(self.intercept_scaling, "intercept_scaling"))
        if not (isinstance(self.radius, (int, float)) and self.radius > 0):
            raise ValueError(f"radius must be > 0 (inf for none), got {self.radius!r}.")
        object.__setattr__(self, "radius", float(self.radius))

    @property
    def lipschitz(self):
        """``L``: every extended per-row loss is C-Lipschitz in w."""
        return self.clip

    @property
    def smoothness(self):
        """``beta = R^2 + s^2``: the largest Hessian of any clipped row's loss."""
        return self.row_bound**2 + self.intercept_scaling**2

    @property
    def max_step(self):
        """Largest step with non-expansive gradient maps: ``2 / beta`` (FKT Prop 2.10)."""
        return 2.0 / self.smoothness

    @property
    def diameter(self):
        return 2.0 * self.radius
