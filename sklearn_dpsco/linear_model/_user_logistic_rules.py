"""Public rules of UserLevelDPLogistic: the ``solver="auto"`` choice.

The choice reads public facts only — users, the per-user cap, dimension,
budget, parameters — through the plans they give (doc/privacy/user_level.rst):
among the solvers of the ``alpha``-regularised objective, the feasible one
whose planned noise on the coefficients has the smallest expected norm.
"""

from .._solvers import get_solver, solver_names

__all__ = ["AUTO_CANDIDATES", "SOLVERS", "candidates", "choose_plan"]

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
