"""Private choice among AdaSSP's ridge levels and the intercept-only model (doc/privacy/adassp.rst).

AdaSSP's adaptive ridge ``bound_E - lambda~`` is a worst-case rule: on
small ``n epsilon / d`` it can under-regularize (a noisy ``A^`` inverts
into a model worse than predicting the label centre) or over-regularize
(shrinking towards 0 instead of towards the label mean when the labels are
not centred). Every candidate below is post-processing of the released
``A^``, ``b^`` and public constants:

* AdaSSP's own model (the adaptive ridge) and the zero model (the label
  centre of an "auto" label bound);
* with an intercept column, the intercept-only model ``b^_s / A^_ss`` (the
  noisy label mean; not when the labels were recentred by their released mean,
  which the zero model then is: :data:`DROP_NOISY_MEAN`) and ``(A^ + f bound_E P)^-1 b^`` with ``P = I`` minus
  the intercept's diagonal entry (the intercept not shrunk), for each public factor
  ``f`` in ``FREE_INTERCEPT_FACTORS`` whose matrix is positive definite.

One candidate is released by the exponential mechanism's
permute-and-flip form over the utilities ``u_c = -sum_i q_c(i)``, with
``q_c(i) = floor(QUANT w_i min(r_c(i)^2, L) / L)`` an integer in
``[0, QUANT]`` and ``r_c(i) = y~_i - <theta_c, x~_i>`` on the CLIPPED row
and label (the statistics' own per-row map), ``L = LOSS_FRACTION B^2`` (``RECENTRED_LOSS_FRACTION B^2``
when the labels were recentred by their released mean). Replacing one row
changes every ``u_c`` by at most ``QUANT`` (Lemma in adassp.rst, "Private
ridge choice"), so gaps ``epsilon_sel (u* - u_c) / (2 QUANT)`` give an
``epsilon_sel``-DP choice for ANY candidate set fixed before the scores
are read; the candidates depend on the data only through the earlier
releases (adaptive basic composition). The utilities are exact integers
and the gaps exact rationals, so the secure path samples the exact law
(:mod:`sklearn_dpsco._mechanisms._selection`).
"""

import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

import numpy as np

from .._mechanisms._quantile import DEFAULT_SELECTION
from .._mechanisms._selection import PureSelection, select_exact, select_float

__all__ = ["PHASED_CHOICE_SELECTION_SHARE", "PHASED_CHOICE_SHARE", "FREE_INTERCEPT_FACTORS", "LOSS_FRACTION", "DROP_NOISY_MEAN", "MEAN_BELOW", "MEAN_CLIP_MULTIPLE", "MEAN_MIN_RANKS", "MEAN_SHARE", "MEAN_SHARE_CAP", "QUANT",
           "RECENTRED_LOSS_FRACTION", "SELECTION_BELOW", "SELECTION_MIN_RANKS", "SELECTION_SHARE", "RidgeSelection", "label_sum_terms", "mean_share", "recentre_applies", "ridge_candidates",
           "selection_applies", "selection_share"]

#: Fraction of AdaSSP's epsilon spent on the choice (utility only; any share is private). On
#: Wages (2.9k rows, d = 11, 8 noise seeds, benchmarks/results/adassp_selection.md) 0.1 beat 0.15
#: and 0.25: the statistics lose little, and the choice only has to tell a harmful model apart.
SELECTION_SHARE = 0.1
#: The choice runs when ``m = n epsilon / d`` is below this (public): above it the adaptive ridge is
#: within noise of the best level (benchmarks/results/rules.md, AdaSSP regret 0.007 up to m = 5000).
SELECTION_BELOW = 5000.0
#: ... and only when ``n epsilon_sel`` reaches this many rows: a candidate worse than the best by
#: ``t`` rows' worth of clipped loss (``t L``) is chosen with probability at most ``exp(-epsilon_sel
#: t / 2)`` against it, so below ~100 the choice is close to uniform and a noisy intercept-only
#: candidate costs more than the guard gains (diabetes, 309 rows: R^2 -0.26 -> -3.3 at epsilon 0.5).
SELECTION_MIN_RANKS = 100.0
#: Multiples of the noise bound ``bound_E`` offered with the intercept not shrunk (public constants).
#: ``bound_E`` keeps ``A^ + ridge I`` positive definite in the worst case; at moderate ``m`` the
#: released ``A^`` is far better conditioned than that, and the full ridge shrinks the slopes
#: (Vocab, declared bounds, epsilon 0.5: R^2 0.251 -> 0.259; BudgetFood 0.247 -> 0.298, 10 seeds,
#: benchmarks/results/adassp_selection.md). A factor whose matrix is not positive definite is
#: not offered (0: the unregularized solve of the releases).
FREE_INTERCEPT_FACTORS = (1.0, 0.3, 0.1, 0.03, 0.0)
#: The loss clip ``L = LOSS_FRACTION B^2``: residuals above B / 2 count as B / 2.
LOSS_FRACTION = 0.25
#: ... and ``RECENTRED_LOSS_FRACTION B^2`` (residuals above B / sqrt(2)) when the labels were recentred by
#: their released mean (:func:`recentre_applies`): at B / 2 the clipped loss favours a median-like constant,
#: so the zero model at the MEAN lost the choice to ridges that predict the atom (Workinghours, 25 % zeros:
#: R^2 -0.20 at epsilon 2 with 0.25 vs -0.04 with 0.5, 10 seeds; benchmarks/results/negr2_label_mean.md).
#: Public constant: the utility's sensitivity stays QUANT whatever L is.
RECENTRED_LOSS_FRACTION = 0.5
#: Fraction of AdaSSP's epsilon for the label mean (pure Laplace on the quantized clipped-label sum,
#: :func:`label_sum_terms`), released first when AdaSSP recentres (:func:`recentre_applies`): the
#: statistics then read the labels minus it, so the ridge and the zero candidate sit at the constant
#: squared loss asks for. The label centre of an "auto" bound is a
#: median on a 9 %-step grid: on Schooling (log wages, sd 6 % of the mean) it lands at the 85th
#: percentile, on Workinghours (25 % zeros) anywhere from the atom at 0 to the 69th percentile.
MEAN_SHARE = 0.05
#: The label mean's own clip, in multiples of the fit's label bound B (public constant): the mean reads
#: ``clip(y, -MEAN_CLIP_MULTIPLE B, MEAN_CLIP_MULTIPLE B)``, the statistics still ``|y - m| <= B``. With
#: an "auto" bound (3 private median deviations around the private median) a mean clipped at B is a
#: trimmed mean near the MEDIAN on right-skewed labels (counts, dollars), and a noise-dominated model that
#: falls back to it scores R^2 < 0 (benchmarks/results/fresh.md, proposal D). The release's noise grows
#: by the same factor (sensitivity 2 QUANT of a sum quantized at the wider clip). Measured and kept at 1
#: (10 seeds, epsilon 0.5 / 1 / 2, benchmarks/results/skewlabel.md): 4 moves Forbes2000 only from -0.039 /
#: -0.054 / -0.058 to -0.018 / -0.034 / -0.043 and costs Schooling 0.5 -0.05 -> -0.30, SLID 0.5 0.03 -> -0.13,
#: Treatment 0.5 0.11 -> 0.03, diabetes 2 -0.10 -> -0.23: the mean has only ~50 ranks, so its noise (2 sqrt 2
#: K B / 50) beats the trimmed mean's bias everywhere but on a label as skewed as Forbes (sd 1.85 B).
MEAN_CLIP_MULTIPLE = 1.0
#: With the labels recentred by their released mean the zero model IS that mean; the intercept-only
#: candidate ``b^_s / A^_ss`` then re-estimates the same constant from the statistics' far noisier ``b^``
#: and ``A^`` (the mean's residual, clipped at the same B), and the clipped-loss choice cannot tell the two
#: apart at small m: it chose it on OFP (R^2 -0.135 where the zero model scored -0.012) and Workinghours.
#: Not offered then (public: whether the plan recentres). 10 seeds, epsilon 0.5 / 1 / 2, defaults, 13 sets:
#: OFP 0.5 -0.052 -> -0.017 (worst -0.135 -> -0.059), OFP 2 +0.028, Forbes2000 1 / 2 +0.011 / +0.016,
#: Workinghours 0.5 -0.071 -> -0.008 (worst -0.359 -> -0.047), Schooling 1 +0.025; no cell loses beyond
#: its standard error (Computers 1: -0.011 +- 0.011) (benchmarks/results/skewlabel.md).
DROP_NOISY_MEAN = True
#: The choice between AdaSSP and Phased-ERM (issue 16 item 5; benchmarks/results/solver_choice.md): where the
#: "auto" table picks AdaSSP at small m with d >= 5 (linear_model._least_squares_rules.phased_choice_applies),
#: Phased-ERM is released first on this share of the solver's epsilon and offered to AdaSSP's private choice.
#: AdaSSP's ridge ``bound_E`` (its noise bound on A, ~ d^2 / epsilon) exceeds the signal eigenvalues of the
#: clipped rows on most real sets at m < 500 and shrinks the slopes to ~0 even without noise (Treatment eps 1:
#: the noiseless ridge explains 0.17 of the clipped labels' variance, least squares 0.61), while Phased-ERM's
#: noise grows like d; Phased-ERM alone has negative tails (diabetes, Workinghours, Schooling, OFP) that the
#: choice avoids. 0.6 beat 0.5 and 0.3 (20 seeds, 13 sets; benchmarks/results/solver_choice.md).
PHASED_CHOICE_SHARE = 0.6
#: ... and the choice gets this share of the solver's epsilon (out of AdaSSP's part): 0.2 fired from n eps = 500
#: (Treatment eps 0.5: +0.26) where 0.1 needs n eps >= 1000, with the same losses elsewhere.
PHASED_CHOICE_SELECTION_SHARE = 0.2
#: Integer resolution of one row's clipped loss: every per-row term is an integer in [0, QUANT].
QUANT = 1 << 20


def _solve_pd(M, b):
    """``M^-1 b`` for a symmetric ``M``, or None unless ``M`` is positive definite (post-processing)."""
    evals, evecs = np.linalg.eigh(M)
    if not np.all(np.isfinite(evals)) or evals[0] <= 1e-12 * max(1.0, abs(evals[-1])):
        return None
    return evecs @ ((evecs.T @ b) / evals)


def label_sum_terms(yc, sw, label_bound):
    """``sum_i floor(QUANT w_i yc_i / B)`` as a Python int: each term an integer in [-QUANT, QUANT].

    ``yc`` are the labels (``yc / B`` is clipped to [-1, 1] here), ``sw`` the weights (clipped to [0, 1] here
    too; None: every weight 1), so a replaced row moves the sum by at most ``2 QUANT`` (the "label_mean"
    release's sensitivity).
    """
    t = np.clip(np.asarray(yc, float) / label_bound, -1.0, 1.0)
    if sw is not None:
        t = t * np.clip(sw, 0.0, 1.0)
    return int(np.clip(np.floor(t * QUANT), -QUANT, QUANT).astype(np.int64).sum())


def ridge_candidates(A_hat, b_hat, adaptive_theta, bound_E, intercept, recentred=False):
    """``[(name, theta)]``: the public candidates built from the releases (post-processing only).

    ``adaptive_theta`` (AdaSSP's own model) comes first, then the zero model
    (the released label mean when AdaSSP recentred the labels by it, else the label
    centre of an "auto" label bound, 0 otherwise); with an
    intercept column (``intercept``: the last coordinate), the noisy label
    mean ``b^_s / A^_ss`` alone (not when ``recentred``: the zero model is then the released
    label mean, :data:`DROP_NOISY_MEAN`) and the ridge ``f bound_E`` on every
    coordinate but the intercept's (labels not centred: a declared bound).
    """
    d = A_hat.shape[0]
    out = [("adaptive", adaptive_theta), ("zero", np.zeros(d))]
    if intercept:
        if A_hat[-1, -1] > 0 and not (recentred and DROP_NOISY_MEAN):
            mean_only = np.zeros(d)
            mean_only[-1] = b_hat[-1] / A_hat[-1, -1]
            out.append(("intercept_only", mean_only))
        free = np.ones(d)
        free[-1] = 0.0
        for f in FREE_INTERCEPT_FACTORS:
            theta = _solve_pd(A_hat + f * bound_E * np.diag(free), b_hat)
            if theta is not None:
                out.append((f"ridge_free_intercept_{f:g}", theta))
    return out


def _block_losses(thetas, clip_block, X, y, w):
    """Integer per-candidate sums of one block's quantized clipped losses (runs where the block is)."""
    Xc, yc, sw, loss_bound = clip_block(X, y, w)
    r2 = (yc[:, None] - Xc @ thetas.T) ** 2
    # a non-finite residual (an extreme candidate) is read as the largest loss: still in [0, L]
    r2 = np.nan_to_num(r2, nan=loss_bound, posinf=loss_bound)
    terms = np.minimum(r2, loss_bound) * np.clip(sw, 0.0, 1.0)[:, None]
    # why: each row's term is an integer in [0, QUANT], so a replaced row moves each sum by <= QUANT
    q = np.clip(np.floor(terms * (QUANT / loss_bound)), 0, QUANT).astype(np.int64)
    return q.sum(axis=0)



@dataclass(frozen=True)
class RidgeSelection(PureSelection):
    """The ``epsilon``-DP choice of one candidate model by its clipped squared loss on the rows.

    Parameters
    ----------
    epsilon : float
        The choice's budget (pure DP).
    noise : {"secure", "float"}
        ``"secure"``: exact rational gaps and exact coins.
    method : {"permute_and_flip", "exponential"}, default=DEFAULT_SELECTION
    """

    epsilon: float
    noise: str
    method: str = DEFAULT_SELECTION
    #: Public: offer only AdaSSP's own model and the zero model (the guard of :func:`guard_applies`).
    guard: bool = False

    def utilities(self, source, clip_block, thetas):
        """``u_c = -sum_i q_c(i)`` (Python ints) of the candidate rows ``thetas`` over the source's rows."""
        thetas = np.asarray(thetas, dtype=float)
        init = np.zeros(thetas.shape[0], dtype=np.int64)
        totals = source.fold_blocks(partial(_block_losses, thetas, clip_block), operator.add, init)
        return [-int(t) for t in totals]

    def gaps(self, utilities):
        """``epsilon (u* - u_c) / (2 QUANT)`` as exact ``(numerator, denominator)``."""
        best = max(utilities)
        # why: every utility moves by at most QUANT when one row is replaced (module docstring), so
        # weights exp(epsilon u / (2 QUANT)) are epsilon-DP (doc/privacy/adassp.rst, "Private ridge choice")
        scale = self.exact_epsilon / (2 * QUANT)
        out = []
        for u in utilities:
            g = scale * Fraction(best - u)
            out.append((g.numerator, g.denominator))
        return out

    def select(self, utilities, rng, size=None):
        """The chosen index (or ``size`` independent choices)."""
        gaps = self.gaps(utilities)
        if self.noise == "secure":
            return select_exact(rng, gaps, self.method, size)
        return select_float(rng, gaps, self.method, size)


#: Recentre only when the mean's share buys this many ranks ``n epsilon share`` (public; the share rises
#: above MEAN_SHARE to buy them, :func:`mean_share`): the mean's Laplace noise is then
#: at most ``2 sqrt(2) / MEAN_MIN_RANKS`` of the label bound in standard deviation (0.057 B at 50). At 20
#: (0.14 B) Schooling at epsilon 0.5 gained (R^2 -0.49 -> -0.14, 4 seeds) but diabetes at epsilon 2 lost
#: (scaled 0.046 -> -0.124, 3 seeds; benchmarks/bench_defaults.py; at 10 seeds the 20-rank rule is -0.003 /
#: -0.008 there, noise, and +0.46 on Schooling, less than the 50 ranks a larger share buys: +0.50;
#: benchmarks/results/centre_share.md).
MEAN_MIN_RANKS = 50.0
#: ... and only while ``m = n epsilon / d`` is below this (public): above it the adaptive ridge shrinks
#: little, the centre hardly matters and the mean's share of epsilon is a pure cost (Vocab, d = 3,
#: m = 1900 to 7600: R^2 -0.0009 +- 0.0004 raw and -0.0017 +- 0.0008 scaled at epsilon 1, 10 seeds;
#: benchmarks/results/negr2_label_mean.md).
MEAN_BELOW = 1000.0


def _share_applies(n, d, epsilon, share, min_ranks, below):
    """``n epsilon share >= min_ranks`` and ``n epsilon / d < below`` (a finite ``epsilon``): the share of
    AdaSSP's budget buys enough ranks, and there are few enough rows per coefficient for it to matter."""
    return math.isfinite(epsilon) and n * epsilon * share >= min_ranks and n * epsilon / max(d, 1) < below


#: The mean's share rises above :data:`MEAN_SHARE` to buy :data:`MEAN_MIN_RANKS` ranks (``n epsilon share =
#: MEAN_MIN_RANKS``) up to this cap (public): below ``n epsilon = 1000`` a 5 % share buys fewer than 50
#: ranks, and there the "auto" median centre is worst (Schooling at epsilon 0.5, n epsilon = 564: R^2
#: -0.56 with no mean, -0.06 with a 9 % share; diabetes at epsilon 2: -0.076 -> -0.032 raw, -0.072 ->
#: +0.025 scaled; 30 seeds; benchmarks/results/centre_share.md). The rule applies from ``n epsilon >=
#: MEAN_MIN_RANKS / MEAN_SHARE_CAP = 200``.
MEAN_SHARE_CAP = 0.25


def mean_share(n, epsilon):
    """``min(MEAN_SHARE_CAP, max(MEAN_SHARE, MEAN_MIN_RANKS / (n epsilon)))``: the label mean's share of
    AdaSSP's epsilon (public: n and AdaSSP's epsilon)."""
    ne = n * epsilon
    if not (math.isfinite(ne) and ne > 0):
        return MEAN_SHARE
    return min(MEAN_SHARE_CAP, max(MEAN_SHARE, MEAN_MIN_RANKS / ne))


def recentre_applies(n, d, epsilon):
    """Public rule: release the label mean first when its share (:func:`mean_share`) buys
    ``n epsilon share >= MEAN_MIN_RANKS`` ranks (``n epsilon MEAN_SHARE_CAP >= MEAN_MIN_RANKS``) and
    ``n epsilon / d < MEAN_BELOW`` (``epsilon``: AdaSSP's budget; ``d`` as in :func:`selection_applies`)."""
    return _share_applies(n, d, epsilon, MEAN_SHARE_CAP, MEAN_MIN_RANKS, MEAN_BELOW)


def selection_share(n, epsilon):
    """The ridge choice's share of AdaSSP's epsilon (what the label mean leaves), :data:`SELECTION_SHARE` at
    every ``(n, epsilon)``. A share raised to buy 100 ranks from ``n epsilon = 400`` (``min(0.25, max(0.1,
    100 / (n epsilon)))``) was measured and not adopted: it wins Wages (epsilon 0.2, t 3.2) and Workinghours
    (0.3, t 2.8) but loses PSID (0.2: t -2.8; 0.3) and Computers (0.2: t -2.3), and adds +0.003 on Schooling
    at epsilon 0.5 (120 seeds; benchmarks/results/choice_share.md)."""
    return SELECTION_SHARE


#: The guard: where the full choice does not run for want of ranks (``n epsilon SELECTION_SHARE < 100``) and
#: there are few rows per coefficient (``m = n epsilon / d < GUARD_BELOW``) on more than
#: ``GUARD_MIN_FEATURES - 1`` coefficients, a choice between two candidates only, AdaSSP's own model and the
#: zero model (the label centre or the released label mean), on ``GUARD_SHARE`` of AdaSSP's epsilon, from
#: ``n epsilon GUARD_SHARE >= GUARD_MIN_RANKS`` (public constants; :func:`guard_applies`). Why: there AdaSSP's
#: noise along the mean row acts as a second, noisy intercept (raw columns far from 0, no column map below
#: its gate) and a few seeds release a model whose level is off by a label spread (diabetes raw, 20 seeds, at
#: epsilon 2: R^2 -0.048, worst -0.27 -> -0.022, worst -0.13; at epsilon 1, before DPLinearRegressor's 400 rule
#: made it intercept-only: -0.106, worst -1.37 -> -0.025, worst -0.11), while the full choice's nine candidates at 16-32
#: ranks picked badly (its SELECTION_MIN_RANKS). Two candidates, the worse one losing ``t`` rows' worth of
#: clipped loss, the worse is chosen with probability below ``exp(-epsilon_sel t / 2)``. Measured (20 seeds,
#: synthetic d 3..30, n 150..3000, epsilon 0.5..2, and the regression study sets): at m >= 75 with d + 1 = 4 it
#: lost up to 0.09 (AdaSSP's model learns there and the choice's share costs the statistics), at d + 1 = 4 and
#: n epsilon = 300 it lost 0.32 once (the centre itself missed; benchmarks/results/smallsets2.md).
GUARD_SHARE = 0.2
GUARD_MIN_RANKS = 10.0
GUARD_BELOW = 50.0
GUARD_MIN_FEATURES = 5


def guard_applies(n, d, epsilon):
    """Public rule: the two-candidate guard (``d`` counts the intercept column; ``epsilon``: AdaSSP's budget)
    where the full choice (:func:`selection_applies`) does not run."""
    return (d >= GUARD_MIN_FEATURES and not selection_applies(n, d, epsilon)
            and _share_applies(n, d, epsilon, GUARD_SHARE, GUARD_MIN_RANKS, GUARD_BELOW))


def selection_applies(n, d, epsilon):
    """Public rule: choose privately when ``m = n epsilon / d < SELECTION_BELOW`` and ``n epsilon
    SELECTION_SHARE >= SELECTION_MIN_RANKS`` (``epsilon``: AdaSSP's budget)."""
    return _share_applies(n, d, epsilon, SELECTION_SHARE, SELECTION_MIN_RANKS, SELECTION_BELOW)
