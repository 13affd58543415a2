"""Private per-column magnitudes at user level, for raw panels with a few hundred users (issues 16 and 17).

UserLevelDPLogistic with nothing declared on raw columns in mixed units (a year next to 0/1 indicators,
counts in the hundreds) clipped every row to the declared default bound: the row's direction is the year's,
and the other columns shrink to noise (the majority class on four real panels,
benchmarks/results/panels.md). The column quartiles (linear_model/_column_scaling.py) fix it from about
``400 d / epsilon`` users; below that ``2 d`` pure quantile selections get a few ranks each and land
orders of magnitude off. This release is cheaper: one octave per column, read off a noisy histogram.

For every user ``u`` and column ``j``, ``v_uj = max |x_rj|`` over the user's rows, and its bin of two octaves
``k_uj = min(ceil(log2(max(v_uj, 1)) / 2), K - 1)`` (``v <= 1`` in bin 0, ``K = MAGNITUDE_OCTAVES``).
The ``d x K`` histogram ``H[j, k] = #{u : k_uj = k}`` is released with the Gaussian mechanism (discrete on
the secure path) on :data:`MAGNITUDE_SHARE` of the fit's budget (of zCDP rho, or of mu^2 on the float path).
Replacing one user (any rows, any identifier) moves, in each column, at most one unit from one bin to
another: the l2-sensitivity is ``sqrt(2 d)`` exactly (integers; attained when every column's octave
changes). The number of users is public under replace-one-user. Everything after is post-processing::

    k_j     = argmax_k noisy H[j, k]                 (the most common bin of the users' magnitudes)
    k_j    += 1 while noisy H[j, k_j + 1] >= 3 sigma  (the run of clearly occupied bins above it)
    b_j     = 2^(2 k_j - 1) for k_j >= 2             (within a factor 2 of the bin's values either way)
    b_j     = 1             for k_j <= 1             (values within 4: the units the default bound expects)
    L_j     = noisy H[j, m_j] + n - noisy H[j, 0] - noisy H[j, 1]   (m_j: the mode, k_j before the run)
    scale_j = b_j sqrt(d)   if some column's mode m_j >= 2 has L_j >= z sigma sqrt(3) ("clears")
    scale_j = b_j           otherwise (1 when every b_j = 1: rows already within [-1, 1] are left as they are)

``L_j`` reads the column's users in its large mode twice: the mode's count, and the public number of users ``n``
less the small bins' counts (exact when those users all sit in that bin). Were every bin ``k >= 2`` empty (every
user within 4), ``L`` at any bin would be ``N(0, 3 sigma^2)``, and ``z`` (:func:`magnitude_clear_sigmas`) is the
union bound over the ``d (K - 2)`` such bins: some column clears with probability at most
:data:`MAGNITUDE_CLEAR_RATE`. Only a mode that clears shrinks the OTHER columns (the ``sqrt(d)``, which brings a
row of columns within [-1, 1] to about norm 1); a large mode that does not clear may be noise, so only its own
column is divided by ``b_j``.

Every row is mapped by ``x -> x / scale`` (the columns within about [-1, 1], the row within about norm 1,
the declared default's units), the fit's private centre (linear_model/_centering.py) runs on the mapped
rows when its rule applies, and the map is folded into ``coef_`` (``ColumnScaling.fold``).

Only public facts decide whether it runs and with what share (:func:`magnitudes_apply`): nothing declared
(``data_norm`` None or ``"auto"``), ``column_scaling="auto"`` with the quartiles off, dense rows, an
intercept, and a solver with a Gaussian / zCDP event (UserLevelDPLogistic checks the one it plans).
benchmarks/results/column_magnitudes.md has the measurements behind the constants.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._budget import Budget
from .._mechanisms._calibrate import mechanism_for
from ..accounting import ComposedEvent
from ._column_scaling import ColumnScaling

__all__ = ["MAGNITUDE_CLEAR_RATE", "MAGNITUDE_OCTAVES", "MAGNITUDE_SHARE", "MagnitudePlan", "magnitude_clear_sigmas",
           "magnitudes_apply", "user_octave_histogram"]

#: Share of the fit's budget (zCDP rho on the secure path, mu^2 on the float path) spent on the histogram.
#: Chosen in a simulation on four raw panels (the centre's 0.1 was too noisy at 400 users, d = 13); not swept.
MAGNITUDE_SHARE = 0.15
#: Bins ``0 .. K - 1``: ``v <= 1``, ``(1, 4]``, ..., ``(4^(K-2), 4^(K-1)]`` and above (clipped to the last).
MAGNITUDE_OCTAVES = 16
#: Octaves per bin: bin 0 holds ``v <= 1``, bin ``k >= 1`` holds ``(2^(w (k - 1)), 2^(w k)]``. Two: a spread
#: column (counts 0..200) puts twice the users in each bin, so its mode stands out of the noise (scales within
#: a factor 2 of the column's magnitude, which the fit's row clip absorbs; benchmarks/results/column_magnitudes.md).
MAGNITUDE_BIN_OCTAVES = 2
#: The released bin is the top of the run of bins above the histogram's (noisy) mode whose noisy counts
#: are at least this many noise standard deviations: a spread column (counts of home runs, 0..73, with many
#: users at 0) is not scaled at its mode's octave, which would leave its large values dominating the rows.
MAGNITUDE_RUN_SIGMAS = 3.0
#: The other columns are divided by ``sqrt(d)`` only when some column's noisy mode is a bin ``k >= 2`` whose reading
#: (its count plus ``n`` less the small bins' counts) is at least ``z sigma sqrt(3)``, ``z`` the union bound at this
#: rate over the ``d (K - 2)`` such bins (:func:`magnitude_clear_sigmas`): were they all empty, the rows would be
#: shrunk with probability at most this rate.
#: Why: at 381 users and epsilon 0.5 the users' count in their true bin is about 3.3 sigma, and in most fits one
#: of the ``15 d`` other noisy counts beat it somewhere; on rows already within norm 1 (Males scaled by public
#: ranges) the argmax alone then divided every other column by sqrt(d) and the fit predicted one class on some
#: seeds (benchmarks/results/males20.md). Gating the column's own ``b_j`` instead lost the raw panels at epsilon
#: 0.5, where any scale of a large column beats none. A public constant: post-processing of the released
#: histogram, nothing spent.
MAGNITUDE_CLEAR_RATE = 0.05


def magnitude_clear_sigmas(n_features, octaves=MAGNITUDE_OCTAVES, rate=MAGNITUDE_CLEAR_RATE):
    """``z`` with ``P(N(0, 1) >= z) = rate / (d (K - 2))``: the reading of a large mode, in standard deviations of its
    noise (``sigma sqrt(3)``), needed to shrink the other columns (public: ``d``, ``K`` and the rate)."""
    bins = max(int(n_features) * (int(octaves) - 2), 1)
    return float(-special.ndtri(float(rate) / bins))


def magnitudes_apply(*, declared, column_setting, dense, fit_intercept, n_features):
    """Whether a user-level fit releases its column magnitudes (public facts only; asked only where the
    column quartiles do not run: they map the columns themselves).

    ``declared``: ``data_norm`` was given as a number (``_declares_scales``; "auto" is not declared: the
    histogram then precedes the private ``data_norm`` estimate): the user chose the units, nothing changes.
    ``column_setting``: ``column_scaling``; only ``"auto"``. ``dense``, ``fit_intercept``, ``n_features``:
    as for the centre.
    """
    return not declared and column_setting == "auto" and dense and fit_intercept and n_features > 0


def user_octave_histogram(X, users, octaves=MAGNITUDE_OCTAVES):
    """``(d, octaves)`` integer counts: for every column, the users per bin of ``max |x_rj|`` over their rows.

    Each user's octave vector is a function of that user's rows only (any number of them, in any order)."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    counts = np.asarray(users.counts, dtype=np.intp)
    H = np.zeros((d, int(octaves)), dtype=np.int64)
    if counts.size == 0:
        return H
    A = np.abs(X if users.order is None else X[np.asarray(users.order)])
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
    V = np.maximum.reduceat(A, starts, axis=0)  # (n_users, d): each user's largest magnitude per column
    with np.errstate(divide="ignore"):
        # 0 for v <= 1; log2 of a float is exact at powers of two, and the division by a power of two exact
        k = np.ceil(np.log2(np.maximum(V, 1.0)) / MAGNITUDE_BIN_OCTAVES)
    k = np.clip(k, 0, int(octaves) - 1).astype(np.intp)
    for j in range(d):
        H[j] = np.bincount(k[:, j], minlength=int(octaves))
    return H


@dataclass(frozen=True)
class MagnitudePlan:
    """The magnitudes' release, and the centre's after it, in one fit: mechanisms and budgets fixed before data.

    Attributes
    ----------
    n_users, n_features : int
    share : float
    mechanism : GaussianMechanism
        Releases the ``d x K`` histogram (l2-sensitivity ``sqrt(2 d)``).
    centring : CenteringPlan or None
        The private centre on the mapped rows (its own share of what the histogram leaves), or None.
    rest : Budget
        What the solver gets (the budget fill then raises it until the fit certifies its epsilon).
    """

    n_users: int
    n_features: int
    share: float
    mechanism: object
    centring: object
    rest: Budget

    #: The solver's row clip follows the centred rule when the centre runs (linear_model/_user_logistic.py).
    @property
    def centred(self):
        return self.centring is not None

    @staticmethod
    def split(budget, share=MAGNITUDE_SHARE):
        """``(histogram budget, rest)``: ``share`` of ``budget`` in its Gaussian units (``delta > 0``)."""
        return budget.split([share, 1.0 - share])

    @classmethod
    def build(cls, budget, n_users, n_features, centring=None, rest=None, share=MAGNITUDE_SHARE):
        """``budget``: the histogram's part (:meth:`split`); ``centring``: the CenteringPlan built on the rest,
        or None; ``rest``: what the solver gets (the centre's rest when it runs)."""
        d = int(n_features)
        # why: replacing one user moves one count per column from one bin to another (integers, no rounding):
        # ||H - H'||_2 <= sqrt(2 d) (doc/privacy/user_level.rst, "Column magnitudes")
        mechanism = mechanism_for(math.sqrt(2.0 * d), budget, d * MAGNITUDE_OCTAVES)
        return cls(int(n_users), d, float(share), mechanism, centring, rest)

    @property
    def event(self):
        return self.mechanism.event if self.centring is None else ComposedEvent(
            (self.mechanism.event, self.centring.event))

    def scales(self, noisy):
        """The column scales from the released histogram (post-processing of the release only)."""
        noisy = np.asarray(noisy, dtype=float).reshape(self.n_features, MAGNITUDE_OCTAVES)
        tau = MAGNITUDE_RUN_SIGMAS * self.noise_std
        top = np.argmax(noisy, axis=1)
        # the gate (post-processing): some column's noisy mode is a bin >= 2 whose reading clears the union bound;
        # the reading: the mode's count plus the public n less the small bins' counts, N(0, 3 sigma^2) were it empty
        reading = noisy[np.arange(self.n_features), top] + self.n_users - noisy[:, 0] - noisy[:, 1]
        clear = magnitude_clear_sigmas(self.n_features) * self.noise_std * math.sqrt(3.0)
        clears = bool(np.any((top > 1) & (reading >= clear)))
        for j in range(self.n_features):  # the run of clearly occupied octaves above the mode
            while top[j] + 1 < MAGNITUDE_OCTAVES and noisy[j, top[j] + 1] >= tau:
                top[j] += 1
        # the bin's upper octave but one (2^(2k - 1) for (4^(k-1), 4^k]): within a factor 2 of its values either way
        # bins 0 and 1 (values within 4): 1, the units the default bound expects; rows in those units stay as they are
        b = np.where(top > 1, np.ldexp(1.0, top * MAGNITUDE_BIN_OCTAVES - 1), 1.0)
        if not np.any(b > 1.0):
            return np.ones(self.n_features), b
        # a large mode that does not clear may be noise: its own column is divided by b_j, the others keep their units
        return (b * math.sqrt(self.n_features) if clears else b), b

    @property
    def noise_std(self):
        """The noise's standard deviation per count (public: the plan's calibration)."""
        return float(self.mechanism.sigma)

    def release(self, rows, rng, n_jobs=None):
        """``(ColumnScaling, event)``: ``rows = (X, users)``; the histogram, then the centre of ``X / scale``."""
        X, users = rows
        H = user_octave_histogram(X, users)
        noisy = self.mechanism.release(H.ravel().astype(np.float64), rng)
        scale, octave = self.scales(noisy)
        d = self.n_features
        centre = np.zeros(d)
        if self.centring is not None:
            shifted, _ = self.centring.release((np.asarray(X, dtype=np.float64) / scale, users), rng, n_jobs)
            centre = shifted.centre * scale  # (x / s - c') = (x - c' s) / s
        out = ColumnScaling(np.array([np.zeros(d), octave]), centre, scale, np.zeros(d, dtype=bool))
        return out, self.event

    def info(self, columns):
        """Public facts for ``fit_info_``."""
        out = {"column_magnitudes": {"share": self.share, "octaves": np.log2(columns.quartiles[1]).astype(int).tolist(),
                                     "sigma": float(getattr(self.mechanism, "sigma", float("nan")))}}
        if self.centring is not None:
            out.update(self.centring.info(columns))
        return out
