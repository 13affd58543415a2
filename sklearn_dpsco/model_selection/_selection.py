"""Private selection: the exponential mechanism, and random stopping over private candidates.

Privacy arguments: doc/privacy/model_selection.rst.
"""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from .._param_checks import check_epsilon, check_positive
from ..accounting import PureDPEvent

__all__ = ["ExponentialMechanism", "RandomStopping"]


@dataclass(frozen=True)
class ExponentialMechanism:
    """Choose index c with probability proportional to ``exp(epsilon u_c / (k sensitivity))``.

    ``k = 2`` in general; ``k = 1`` when a neighbour can move the scores only
    in one direction, or only one of them (``monotone=True``). Sampled
    exactly as report-noisy-max with Gumbel noise of scale ``k sensitivity /
    epsilon`` (the Gumbel-max identity), which is epsilon-DP.

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Largest change of any one score when one row is replaced (public).
    monotone : bool, default=False
    """

    epsilon: float
    sensitivity: float
    monotone: bool = False
    scale: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        k = 1.0 if self.monotone else 2.0
        # why: each weight exp(eps u_c / (2 D)) and the normaliser move by at most
        # exp(eps / 2) each when every score moves by <= D (doc/privacy/model_selection.rst)
        object.__setattr__(self, "scale", k * self.sensitivity / self.epsilon)

    @property
    def event(self):
        return PureDPEvent(self.epsilon)

    def probabilities(self, scores):
        """The exact selection probabilities (for tests)."""
        z = np.asarray(scores, dtype=float) / self.scale
        z = z - z.max()
        w = np.exp(z)
        return w / w.sum()

    def select(self, scores, rng, size=None):
        """Index (or ``size`` independent indices) chosen by the mechanism."""
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
            raise ValueError("scores must be a non-empty 1-D array of finite numbers.")
        shape = (scores.size,) if size is None else (size, scores.size)
        noisy = scores / self.scale + rng.gumbel(0.0, 1.0, size=shape)
        return np.argmax(noisy, axis=-1)


def _log_mean(gamma):
    # E[T] for P(T = t) = (1 - gamma)^t / (t ln(1/gamma)), t >= 1
    return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))


@dataclass(frozen=True)
class RandomStopping:
    """How many private candidate runs to make: a random number T, hidden from the output.

    Liu and Talwar (2019), Papernot and Steinke (2022): run an epsilon-DP
    candidate mechanism T times independently and release only the best
    run. With T logarithmic (``P(T = t) ~ (1 - gamma)^t / t``) the release is
    ``2 epsilon``-DP; with T geometric it is ``3 epsilon``-DP
    (doc/privacy/model_selection.rst proves both). T itself, and which run
    won, must stay hidden.

    Parameters
    ----------
    expected_runs : float
        E[T] (> 1).
    distribution : {"geometric", "logarithmic"}, default="geometric"
    """

    expected_runs: float
    distribution: str = "geometric"
    gamma: float = field(init=False)
    factor: int = field(init=False)

    def __post_init__(self):
        mean = check_positive(self.expected_runs, "expected_runs")
        if not mean > 1:
            raise ValueError(f"expected_runs must be > 1, got {self.expected_runs!r}.")
        if self.distribution == "logarithmic":
            # _log_mean decreases from inf (gamma -> 0) to 1 (gamma -> 1)
            gamma = optimize.brentq(lambda g: _log_mean(g) - mean, 1e-300, 1 - 1e-15, xtol=1e-300, rtol=1e-14)
            factor = 2
        elif self.distribution == "geometric":
            gamma = 1.0 / mean
            factor = 3
        else:
            raise ValueError(f"distribution must be 'logarithmic' or 'geometric', got {self.distribution!r}.")
        object.__setattr__(self, "gamma", float(gamma))
        object.__setattr__(self, "factor", factor)

    def pgf_derivative(self, x):
        """f'(x) for the probability generating function f(x) = E[x^T] (used by the proofs' tests)."""
        g = self.gamma
        if self.distribution == "logarithmic":
            return (1 - g) / ((1 - (1 - g) * x) * math.log(1 / g))
        return g / (1 - (1 - g) * x) ** 2

    def pgf(self, x):
        g = self.gamma
        if self.distribution == "logarithmic":
            return math.log(1 - (1 - g) * x) / math.log(g)
        return g * x / (1 - (1 - g) * x)

    def sample(self, rng):
        """Draw T (>= 1)."""
        if self.distribution == "logarithmic":
            return int(rng.logseries(1.0 - self.gamma))
        return int(rng.geometric(self.gamma))

    def event(self, run_epsilon):
        """The privacy of releasing the best of T runs of a ``run_epsilon``-DP mechanism."""
        return PureDPEvent(self.factor * run_epsilon)
