"""Budget: the (epsilon, delta, noise path) of one release or one fit, validated once.

Solvers take a ``budget`` instead of three loose arguments; the calibration
module (:mod:`sklearn_dpsco._mechanisms._calibrate`) turns a sensitivity and
a budget into a mechanism. Splitting goes through the library's ONE split
rule, :func:`sklearn_dpsco.accounting._shares.split_by_weights`
(doc/privacy/composition.rst): epsilon for pure DP, ``mu^2`` for the float
Gaussian, ``rho`` for the secure discrete Gaussian.
"""

from dataclasses import dataclass

from ._mechanisms._paths import DEFAULT_NOISE, check_noise
from ._param_checks import check_delta, check_epsilon
from .accounting._shares import split_budget, split_by_weights, split_kind

__all__ = ["Budget", "as_budget"]


@dataclass(frozen=True)
class Budget:
    """A validated privacy budget and the noise path its releases use.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float, default=0.0
        In [0, 1); 0 means pure DP.
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        Noise path of the releases (doc/privacy/secure_noise.rst).
    """

    epsilon: float
    delta: float = 0.0
    noise: str = DEFAULT_NOISE

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_noise(self.noise)

    @property
    def pure(self):
        """True for pure DP (``delta == 0``)."""
        return self.delta == 0

    @property
    def split_kind(self):
        """The split rule of this budget's releases: ``"pure"``, ``"gaussian"`` or ``"zcdp"``."""
        return split_kind(self.delta, self.noise)

    def split(self, weights, kinds=None):
        """Budgets proportional to ``weights`` whose composition is within this one.

        ``kinds`` (one per weight) defaults to this budget's :attr:`split_kind`
        for every part; see :func:`~sklearn_dpsco.accounting._shares.split_by_weights`.
        """
        weights = list(weights)
        if kinds is None:
            kind = self.split_kind
            kinds = None if kind == "pure" else [kind] * len(weights)
        shares = split_by_weights(self.epsilon, self.delta, weights, kinds)
        return [Budget(s.epsilon, s.delta, self.noise) for s in shares]

    def split_equal(self, parts, kind=None):
        """The budget of each of ``parts`` equal parts (the whole budget, unchanged, for one part)."""
        epsilon, delta = split_budget(self.epsilon, self.delta, parts, self.split_kind if kind is None else kind)
        return Budget(epsilon, delta, self.noise)

    def with_noise(self, noise):
        """The same (epsilon, delta) on another noise path."""
        return Budget(self.epsilon, self.delta, noise)


def as_budget(budget=None, *, epsilon=None, delta=0.0, noise=DEFAULT_NOISE):
    """``budget`` if given, else ``Budget(epsilon, delta, noise)``."""
    if budget is not None:
        if not isinstance(budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(budget).__name__}.")
        return budget
    return Budget(epsilon, delta, noise)
