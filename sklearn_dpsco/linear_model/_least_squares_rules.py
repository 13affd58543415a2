"""Public rules of DPLinearRegressor: the ``solver="auto"`` table and default intercept column.

Every function here takes public facts only — the number of rows ``n``,
the number of coefficients ``d`` (intercept column included), the budget,
the declared bounds and noise path — and never data
(doc/privacy/linear_regression.rst; the numbers behind them are in
benchmarks/results/linear.md).
"""

from .._budget import Budget
from .._mechanisms import DEFAULT_NOISE
from .._solvers import snowball_fits, solver_names

__all__ = [
    "ADASSP_MAX_FEATURES",
    "AUTO_LOWY_BELOW",
    "AUTO_SSP_ABOVE",
    "AUTO_SSP_BELOW",
    "EXTENSION_SOLVERS",
    "ONE_PASS_SOLVERS",
    "ROW_BOUND_SOLVERS",
    "SOLVERS",
    "choose_solver",
    "choose_stream_solver",
    "default_intercept_scaling",
    "resolve_solver",
]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("least_squares")
#: Solvers that read the rows once, in order (they can fit from chunks).
ONE_PASS_SOLVERS = solver_names("least_squares", one_pass=True)
#: Solvers that need the public row bound R (smoothness or sensitivity).
ROW_BOUND_SOLVERS = solver_names("least_squares", needs_row_bound=True)
#: Solvers whose privacy rests on the Lipschitz extension alone (any rows, any labels).
EXTENSION_SOLVERS = solver_names("least_squares", needs_row_bound=False)

#: solver="auto" thresholds on m = n epsilon / d (benchmarks/results/linear.md).
AUTO_SSP_BELOW = 75.0
AUTO_LOWY_BELOW = 500.0
#: From this m on AdaSSP ties or beats Phased-ERM (pure and approximate DP) at 5-10x less
#: fit time, and both are flat in n (benchmarks/results/scaling_n.md).
AUTO_SSP_ABOVE = 1e4
#: AdaSSP releases a d x d matrix; above this many coefficients auto avoids it.
ADASSP_MAX_FEATURES = 1000


def choose_solver(n_samples, n_features, epsilon, delta, row_bound, noise=DEFAULT_NOISE):
    """The ``solver="auto"`` table (public facts only; benchmarks/results/linear.md justifies it).

    ``m = n epsilon / d`` (rows per unit of privacy per coefficient, d with the intercept column):

    ===============================================  ============  =======================================
    condition                                        solver        why (benchmark, d = 21)
    ===============================================  ============  =======================================
    ``delta > 0``, ``noise="float"``, a row bound,   snowball      best R^2 whenever it runs (n >= 2000),
    Snowball fits in n                                             linear time (float noise only)
    ``m < 75`` and a row bound (``d <= 1000``)       adassp        the adaptive ridge degrades to R^2 ~ 0
                                                                   where every other solver goes negative
    ``m >= 1e4`` and a row bound (``d <= 1000``)     adassp        ties or beats Phased-ERM, 5-10x faster
                                                                   (benchmarks/results/scaling_n.md)
    ``m < 500``                                      lowy          best pure-DP solver at moderate m
    otherwise                                        phased_erm    best pure-DP R^2 for 500 <= m < 1e4
    ===============================================  ============  =======================================

    Without a row bound only the extension solvers qualify (lowy, phased_erm). Snowball adds
    floating-point Gaussian noise at every step (no secure sampler), so under the default
    ``noise="secure"`` it is never chosen.
    """
    m = n_samples * epsilon / n_features
    if row_bound is not None:
        if delta > 0 and noise == "float" and snowball_fits(n_samples, n_features, Budget(epsilon, delta, noise),
                                                            row_bound):
            return "snowball"
        if (m < AUTO_SSP_BELOW or m >= AUTO_SSP_ABOVE) and n_features <= ADASSP_MAX_FEATURES:
            return "adassp"
    return "lowy" if m < AUTO_LOWY_BELOW else "phased_erm"


def choose_stream_solver(delta, noise):
    """``solver="auto"`` for ``fit_stream``: Snowball-SGD for approximate DP on float noise, else AdaSSP."""
    return "snowball" if delta > 0 and noise == "float" else "adassp"


def resolve_solver(solver, n_samples, n_features, epsilon, delta, row_bound, noise, streaming=False):
    """``solver`` itself, or the auto table's pick (:func:`choose_stream_solver` when streaming)."""
    if solver != "auto":
        return solver
    if streaming:
        return choose_stream_solver(delta, noise)
    return choose_solver(n_samples, n_features, epsilon, delta, row_bound, noise)


def default_intercept_scaling(spec, row_bound):
    """The intercept column's value s when none is declared (the solver's fraction of R, else 1)."""
    fraction = spec.traits.get("intercept_fraction")
    if fraction is not None and row_bound is not None:
        return fraction * row_bound
    return 1.0
