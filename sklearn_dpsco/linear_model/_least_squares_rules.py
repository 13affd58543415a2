"""Public rules of DPLinearRegressor's ``solver="auto"`` table (no data: n, d, budget, declared bounds).

``m = n epsilon / d`` is the number of rows per unit of privacy per coefficient (``d`` with the
intercept column). The thresholds come from benchmarks/study_rules.py (``linear``: synthetic rows
of norm <= 1 at d = 4..31, n = 2000 / 20000, and the real sets of benchmarks/bench_defaults.py in
encoding (b)) together with benchmarks/results/linear.md (d = 21, near-interpolating labels);
benchmarks/results/rules.md has the regret of each candidate table.
"""

__all__ = ["ADASSP_BELOW_APPROX", "ADASSP_BELOW_PURE", "ADASSP_MAX_FEATURES", "LOWY_BELOW", "rows_per_unit",
           "table_solver"]

#: Pure DP with a declared row bound: AdaSSP below this m. Its adaptive ridge never went below
#: R^2 ~ 0 on the sweep, while Lowy and Phased-ERM went negative at m up to ~400 (d = 11, 31, real
#: Wages, Computers); mean regret to the best solver 0.053 (the former threshold 75: 0.201, six
#: negative-R^2 picks in 32 cells).
ADASSP_BELOW_PURE = 500.0
#: Approximate DP (secure noise, so no Snowball) with a declared row bound: AdaSSP's Gaussian
#: statistics stayed within 0.05 of the best solver in every cell up to m = 5000 (mean regret 0.007).
ADASSP_BELOW_APPROX = 5000.0
#: Without the AdaSSP branch (no row bound, or d too large): Lowy below this m, Phased-ERM above.
LOWY_BELOW = 500.0
#: AdaSSP releases a d x d matrix; above this many coefficients auto avoids it.
ADASSP_MAX_FEATURES = 1000


def rows_per_unit(n, d, epsilon):
    """``m = n epsilon / d``: rows per unit of privacy per coefficient."""
    return n * epsilon / max(d, 1)


def table_solver(n, d, epsilon, delta, row_bound):
    """The extension / sufficient-statistics part of the ``solver="auto"`` table (public facts only).

    ==============================================================  ============
    condition (``m = n epsilon / d``)                                solver
    ==============================================================  ============
    row bound declared, ``d <= 1000``, ``m < 500`` (pure DP) or     adassp
    ``m < 5000`` (``delta > 0``)
    ``m < 500``                                                     lowy
    otherwise                                                       phased_erm
    ==============================================================  ============
    """
    m = rows_per_unit(n, d, epsilon)
    below = ADASSP_BELOW_APPROX if delta > 0 else ADASSP_BELOW_PURE
    if row_bound is not None and d <= ADASSP_MAX_FEATURES and m < below:
        return "adassp"
    return "lowy" if m < LOWY_BELOW else "phased_erm"
