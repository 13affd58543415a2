"""Private intercept refit of DPHingeClassifier: one threshold chosen by private selection.

Output perturbation adds isotropic noise ``z`` to ``(w, b)``. On rows that
are not centred (every real set: raw columns, or columns mapped onto a
documented range) the score ``<w + z, x> + (b + z_b) s`` of every row moves
by about the same amount ``<z, (m, s)>`` (``m`` the rows' mean): a common
offset that, on small or imbalanced sets, puts every score on one side of 0
(a single-class model). The refit moves the decision threshold after the
solver's release: given the released ``w~`` (public from then on) it picks
the shift ``t`` of a public grid with the fewest training errors
``err(t) = #{y_i = +1, <w~, x_i> <= t} + #{y_i = -1, <w~, x_i> > t}`` by
private selection (exponential mechanism / permute-and-flip,
:mod:`sklearn_dpsco._mechanisms._selection`) and releases ``w~ - t e_b / s``
(``e_b`` the intercept coordinate, ``s`` the intercept column's value).

Privacy (doc/privacy/hinge.rst, "Private intercept refit"): with ``w~``
fixed, replacing one row changes one indicator of ``err(t)`` for every
``t`` at once, so the utility ``-err`` has sensitivity 1 (a weighted row
counts ``floor(weight 2^20)`` units of ``2^-20``, sensitivity ``2^20``
units); the selection is ``epsilon_t``-DP, and the fit is the adaptive
composition of the solver's event and ``PureDPEvent(epsilon_t)``. The grid
is a public function of the release and of public settings:
``linspace(-B, B, GRID_POINTS)`` with ``B = ||w~|| sqrt(clip^2 + s^2)``, the
largest score of a row of norm ``clip`` (scores beyond it never change
which grid points they fall between, so no clipping is needed).
"""

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._quantile import DEFAULT_SELECTION
from .._mechanisms._selection import (
    SELECTION_METHODS,
    PureSelection,
    exponential_pmf,
    permute_and_flip_pmf,
    select_exact,
    select_float,
)
from .._param_checks import check_epsilon
from .._solvers import PrivateFit
from ..accounting import ComposedEvent

__all__ = ["GRID_POINTS", "WEIGHT_BITS", "InterceptRefit", "InterceptRefitPlan", "joint_refit_rows", "joint_shifts"]

#: Public grid size (odd, so the solver's own intercept, shift 0, is a candidate). Steps of
#: ``B / 50``; 51 and 101 points gave the same accuracy on the real sets (benchmarks/results/hinge_intercept.md).
GRID_POINTS = 101

#: A row of weight ``w`` in [0, 1] counts ``floor(w 2^WEIGHT_BITS)`` integer units: exact sums.
WEIGHT_BITS = 20


@dataclass(frozen=True)
class InterceptRefit(PureSelection):
    """Release the decision-threshold shift with the fewest training errors, ``epsilon``-DP.

    Parameters
    ----------
    epsilon : float
        > 0; the selection is ``epsilon``-DP under replace-one neighbours for
        a fixed (released) weight vector.
    grid_points : int, default=GRID_POINTS
        Number of candidate shifts (odd).
    method : {"permute_and_flip", "exponential"}, default=DEFAULT_SELECTION
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        ``"secure"``: exact rational gaps and exact Bernoulli(exp(-x)) coins.
    """

    epsilon: float
    grid_points: int = GRID_POINTS
    method: str = DEFAULT_SELECTION
    noise: str = DEFAULT_NOISE

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.method not in SELECTION_METHODS:
            raise ValueError(f"method must be one of {SELECTION_METHODS}, got {self.method!r}.")
        if int(self.grid_points) < 1 or int(self.grid_points) % 2 == 0:
            raise ValueError(f"grid_points must be a positive odd integer, got {self.grid_points!r}.")

    def grid(self, coef, row_bound):
        """``linspace(-B, B, grid_points)``, ``B = ||coef|| row_bound`` (public: a release and a setting)."""
        bound = float(np.linalg.norm(coef)) * float(row_bound)
        if not math.isfinite(bound):
            bound = 0.0
        return bound * np.linspace(-1.0, 1.0, int(self.grid_points))

    @staticmethod
    def units(y, sample_weight):
        """``(integer units per row, sensitivity)``: 1 per row, or ``floor(w 2^20)`` with sensitivity ``2^20``."""
        if sample_weight is None:
            return np.ones(len(y), dtype=np.int64), 1
        scale = 1 << WEIGHT_BITS
        return np.floor(np.asarray(sample_weight, dtype=float) * scale).astype(np.int64), scale

    def utility(self, scores, y, sample_weight, points):
        """``-err(t)`` at every grid point, in integer units (Python ints), and the sensitivity."""
        scores = np.asarray(scores, dtype=float)
        y = np.asarray(y, dtype=float)
        units, sensitivity = self.units(y, sample_weight)
        pos, neg = y > 0, ~(y > 0)
        # errors at t: positives with score <= t, negatives with score > t (exact int64 sums)
        order_p = np.argsort(scores[pos], kind="stable")
        sp_, up = scores[pos][order_p], np.concatenate([[0], np.cumsum(units[pos][order_p])])
        order_n = np.argsort(scores[neg], kind="stable")
        sn, un = scores[neg][order_n], np.concatenate([[0], np.cumsum(units[neg][order_n])])
        below_p = up[np.searchsorted(sp_, points, side="right")]
        above_n = un[-1] - un[np.searchsorted(sn, points, side="right")]
        return [-int(a + b) for a, b in zip(below_p, above_n)], sensitivity

    def gaps(self, scores, y, sample_weight, points):
        """``epsilon (u* - u(t)) / (2 Delta)`` per grid point, as exact ``(numerator, denominator)``."""
        u, sensitivity = self.utility(scores, y, sample_weight, points)
        best = max(u)
        # why: with the released w fixed, one replaced row moves err(t) by at most Delta for every t,
        # so weights exp(epsilon u / (2 Delta)) are epsilon-DP (doc/privacy/hinge.rst, "Private intercept refit")
        scale = self.exact_epsilon / (2 * sensitivity)
        out = []
        for ut in u:
            g = scale * (best - ut) if best != ut else Fraction(0)
            out.append((g.numerator, g.denominator))
        return out

    def pmf(self, scores, y, sample_weight, points):
        """The law of the released grid index (float64; tests and benchmarks)."""
        gaps = [a / b for a, b in self.gaps(scores, y, sample_weight, points)]
        return exponential_pmf(gaps) if self.method == "exponential" else permute_and_flip_pmf(gaps)

    def release_index(self, scores, y, sample_weight, points, rng, size=None):
        """Index into ``points`` of one release (``size=None``) or of ``size`` independent releases."""
        gaps = self.gaps(scores, y, sample_weight, points)
        if self.noise == "secure":
            return select_exact(rng, gaps, self.method, size)
        return select_float(rng, gaps, self.method, size)


#: The shift is rounded to a power of two at most ``2^-SHIFT_BITS`` times the grid step.
SHIFT_BITS = 12


def dyadic_round(shift, points):
    """``shift`` rounded to a multiple of a power of two ``<= step 2^-SHIFT_BITS`` (public values only)."""
    step = float(points[1] - points[0]) if len(points) > 1 else 0.0
    if not (step > 0 and math.isfinite(step) and math.isfinite(shift)):
        return 0.0 if not math.isfinite(shift) else float(shift)
    quantum = 2.0 ** (math.floor(math.log2(step)) - SHIFT_BITS)
    return float(np.rint(shift / quantum) * quantum)


def joint_shifts(data, coefs, refit, row_bound, rng):
    """The threshold shifts of a one-vs-rest model, released one class at a time for the fewest
    multiclass training errors (doc/privacy/hinge.rst, "Private intercept refit", "Several classes").

    A class's own binary error is flat wherever its threshold sits above every score (a class without
    signal at this budget: "never me"), so per-class refits left the argmax over classes to arbitrary
    shifts, and a rare class could win every row. Here class ``k`` (in order) picks its shift ``t`` for
    the model's own prediction ``argmax_j (s_j(x) - t_j)``, the other classes at their released shifts
    (0 before theirs): with ``m_i = max_{j != k} (s_ij - t_j)`` at ``j*_i``, row ``i`` is wrong at ``t``
    when it is of class ``k`` and ``s_ik - m_i <= t``, or when ``j*_i`` is its class and ``s_ik - m_i > t``
    (other rows are wrong at every ``t``: a constant). That is :meth:`InterceptRefit.utility` on the
    scores ``s_ik - m_i`` of those rows; one replaced row changes only its own term, so each release is
    ``refit.epsilon``-DP given the released coefficients and shifts, as a binary refit.

    Parameters
    ----------
    data : GLMData
        The rows; ``y`` holds each row's class index ``0..K-1`` (as floats).
    coefs : list of ndarray
        The solvers' released vectors, one per class (intercept coordinate last).
    refit : InterceptRefit
    row_bound : float
    rng : numpy.random.Generator

    Returns
    -------
    shifts : list of float
        The released grid shifts ``t_k`` (decision ``<w~_k, x> + b~_k s - t_k``).
    """
    labels = np.asarray(data.y, dtype=np.int64)
    scores = np.column_stack([data.matvec(np.asarray(c, dtype=float)) for c in coefs])
    applied = np.zeros(scores.shape[1])  # the shifts as the released intercepts apply them
    shifts = []
    for k in range(scores.shape[1]):
        points = refit.grid(coefs[k], row_bound)
        margin, sign, weights = joint_refit_rows(scores, labels, applied, k, data.sample_weight)
        index = int(refit.release_index(margin, sign, weights, points, rng))
        shifts.append(float(points[index]))
        applied[k] = dyadic_round(points[index] / data.intercept_scaling, points) * data.intercept_scaling
    return shifts


def joint_refit_rows(scores, labels, applied, k, sample_weight=None):
    """``(margin, sign, weights)``: the rows class ``k``'s joint refit counts, as a binary refit's inputs.

    ``margin_i = s_ik - max_{j != k} (s_ij - t_j)``; ``sign`` +1 for the rows of class ``k``, -1 for the
    other rows the other classes already predict right (the rest are wrong at every shift and left out).
    Row ``i``'s entry depends on row ``i`` and released values only (:func:`joint_shifts`).
    """
    others = np.asarray(scores, dtype=float) - np.asarray(applied, dtype=float)
    others[:, k] = -np.inf
    best = np.argmax(others, axis=1)
    margin = scores[:, k] - others[np.arange(len(best)), best]
    own = labels == k
    keep = own | (best == labels)
    weights = None if sample_weight is None else np.asarray(sample_weight)[keep]
    return margin[keep], np.where(own[keep], 1.0, -1.0), weights


class InterceptRefitPlan:
    """A solver's plan followed by :class:`InterceptRefit` on the same problem (its event composes both).

    Parameters
    ----------
    inner : Plan
        The solver's plan (its ``info`` dict is shared, so settings added to
        ``info`` reach ``fit_info_``).
    refit : InterceptRefit
    row_bound : float
        ``sqrt(clip^2 + s^2)``: the norm of a row at the clip level with its intercept column.
    """

    map_reduce = False

    def __init__(self, inner, refit, row_bound, joint=False):
        self.inner = inner
        self.refit = refit
        self.row_bound = float(row_bound)
        #: one-vs-rest with several classes: :meth:`run` releases the solver's point only, and the shifts are
        #: released after every class's run, together (:meth:`complete`, :func:`joint_shifts`)
        self.joint = bool(joint)
        self.event = ComposedEvent((inner.event, refit.event))
        self.info = inner.info
        self.info.update(intercept_refit_epsilon=refit.epsilon, intercept_refit_grid=refit.grid_points,
                         intercept_refit="joint" if self.joint else "per class")

    @property
    def schedule(self):
        return self.inner.schedule

    def run(self, problem, rng):
        """The solver's release ``w~``, then ``w~`` with its threshold moved by the released shift
        (``joint``: ``w~`` alone; :meth:`complete` moves the thresholds)."""
        fit = self.inner.run(problem, rng)
        if self.joint:
            return fit
        data = problem.data
        coef = np.array(fit.coef, dtype=float)
        points = self.refit.grid(coef, self.row_bound)
        index = self.refit.release_index(data.matvec(coef), data.y, data.sample_weight, points, rng)
        return self.shifted(fit, points[int(index)], data.intercept_scaling, points)

    def shifted(self, fit, shift, intercept_scaling, points):
        """``fit`` with its threshold moved by the released ``shift`` (its event now composes the refit's)."""
        coef = np.array(fit.coef, dtype=float)
        # decision <w~, x> + b~ s - t: the intercept coordinate moves by t / s (post-processing),
        # rounded to a dyadic quantum far below the grid step so the moved coordinate stays on the
        # solver's power-of-two release grid (doc/privacy/secure_noise.rst, "The release contract")
        coef[-1] -= dyadic_round(shift / intercept_scaling, points)
        return PrivateFit(coef=coef, event=ComposedEvent((fit.event, self.refit.event)), info=fit.info,
                          outputs=dict(fit.outputs, intercept_shift=float(shift)))

    def complete(self, data, fits, rng):
        """The joint refit of a one-vs-rest fit: every class's fit with its released shift (``joint`` only).

        ``data``: the rows with each row's class index as ``y``; ``fits``: the solvers' runs, in class order.
        """
        coefs = [np.asarray(f.coef, dtype=float) for f in fits]
        shifts = joint_shifts(data, coefs, self.refit, self.row_bound, rng)
        return [self.shifted(f, t, data.intercept_scaling, self.refit.grid(c, self.row_bound))
                for f, t, c in zip(fits, shifts, coefs)]

    def __repr__(self):
        return f"InterceptRefitPlan({self.inner!r}, epsilon={self.refit.epsilon!r})"
