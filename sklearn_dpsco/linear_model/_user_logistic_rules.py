"""Public rules of UserLevelDPLogistic: the ``solver="auto"`` choice and the default regularization.

The choice reads public facts only — users, the per-user cap, dimension,
budget, parameters — through the plans they give (doc/privacy/user_level.rst):
among the solvers of the ``alpha``-regularised objective, the feasible one
whose planned noise on the coefficients has the smallest expected norm.
"""

import math

from .._mechanisms._calibrate import expected_noise_norm
from .._solvers import get_solver, solver_names

__all__ = ["AUTO_CANDIDATES", "SOLVERS", "USER_ALPHA_CAP", "USER_ALPHA_FACTOR", "candidates", "choose_plan",
           "default_user_alpha"]

#: Solvers reachable by name (``"auto"`` picks one of them).
SOLVERS = solver_names("user_logistic")
#: solver="auto" chooses among the solvers of the alpha-regularised objective
AUTO_CANDIDATES = ("user_clip", "sc_output_pert", "item_group", "user_dp_sgd")


def candidates(solver, noise, delta):
    """The solvers to plan: ``(solver,)``, or for ``"auto"`` the candidates supporting the noise path."""
    if solver != "auto":
        return (solver,)
    # a solver without a sampler on this noise path (at this delta) is left out
    return tuple(name for name in AUTO_CANDIDATES if get_solver("user_logistic", name).supports_noise(noise, delta))


def choose_plan(solver, build, noise, delta):
    """The plan to run: ``build(name)`` of the requested solver, or for ``"auto"`` the quietest feasible one.

    ``build`` raises ``ValueError`` for a public refusal (too few users, an
    exhaustive test over budget): a named solver re-raises it; ``"auto"``
    skips the candidate and raises the first refusal if none is feasible.
    Candidates are ranked by the expected norm of the noise their plan adds
    to the coefficients (the registry's ``expected_noise_norm``, public).
    """
    best, first_error = None, None
    for name in candidates(solver, noise, delta):
        try:
            plan = build(name)
        except ValueError as err:  # public refusal (too few users, exhaustive over budget)
            if solver != "auto":
                raise
            first_error = first_error or err
            continue
        proxy = get_solver("user_logistic", name).expected_noise_norm(plan.schedule) if solver == "auto" else 0.0
        if best is None or proxy < best[0]:
            best = (proxy, plan)
    if best is None:
        raise first_error
    return best[1]


#: ``alpha = min(USER_ALPHA_FACTOR * R^2 * u / (n_users sqrt(m) d), USER_ALPHA_CAP * R^2 / d)`` with
#: ``u`` the expected noise norm per unit of sensitivity (about ``sqrt(d) / mu(epsilon, delta)``).
#: It is DPHingeClassifier's rule (linear_model/_hinge_rules.py) with ``n sqrt(m)`` in place of
#: ``n``: a user's loss is ``R sqrt(m)``-Lipschitz over ``m`` rows, so the release sensitivity is
#: ``2 R / (alpha n sqrt(m))``. The best alpha of a half-decade grid on the sweep of
#: benchmarks/study_rules.py (``user``: d = 4..101, 500 / 5000 users, m = 5, and two real panels)
#: corresponded to factors 8..50; 20 is their geometric middle (benchmarks/results/rules.md). The
#: former constant ``alpha = 0.01`` was 10x too small for a few hundred users (single-class models)
#: and 5-10x too large for thousands.
USER_ALPHA_FACTOR = 20.0
#: Ceiling ``alpha <= R^2 / d``: past it the minimizer is the regularized mean of ``y x``.
USER_ALPHA_CAP = 1.0


def default_user_alpha(n_users, m, d, data_norm, epsilon, delta):
    """Default strong convexity of the user-level objective, from public facts only.

    Decreasing in ``n_users``, ``m`` and ``epsilon``; increasing in ``data_norm``.
    """
    d = max(int(d), 1)
    u = expected_noise_norm(1.0, d, epsilon, delta)  # noise norm per unit of sensitivity
    scale = data_norm**2 / d
    return scale * min(USER_ALPHA_FACTOR * u / (max(n_users, 1) * math.sqrt(max(m, 1))), USER_ALPHA_CAP)
