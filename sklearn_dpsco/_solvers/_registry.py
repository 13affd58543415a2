"""The solver registry: estimator family -> solver name -> :class:`SolverSpec`.

A name is unique within a family (the objective an estimator minimises):
``"lowy"`` of the hinge family and ``"lowy"`` of the least-squares family
are different plans of different losses. Estimators look solvers up here
(through the ``_solvers`` package face) and call every one the same way:
``spec.build(n, d, budget, params)`` gives a :class:`Plan`, and
``plan.run(problem, rng)`` a :class:`PrivateFit` (doc/design.rst, section 2).
"""

from ._builders import _growth, _hinge, _least_squares, _user_logistic
from ._core._losses import get_loss

__all__ = ["FAMILIES", "get_solver", "loss_for", "solver_names"]

#: family -> {name: spec}, in each family's documented order
FAMILIES = {
    "hinge": {spec.name: spec for spec in _hinge.SOLVERS},
    "least_squares": {spec.name: spec for spec in _least_squares.SOLVERS},
    "growth": {spec.name: spec for spec in _growth.SOLVERS},
    "user_logistic": {spec.name: spec for spec in _user_logistic.SOLVERS},
}


def solver_names(family, **where):
    """Names of ``family``'s solvers, in registry order; ``where`` filters on spec fields (``one_pass=True``)."""
    return tuple(name for name, spec in FAMILIES[family].items()
                 if all(getattr(spec, key) == value for key, value in where.items()))


def get_solver(family, name):
    """The :class:`SolverSpec` of solver ``name`` in ``family``."""
    try:
        return FAMILIES[family][name]
    except KeyError:
        raise ValueError(f"unknown {family} solver {name!r}; expected one of {solver_names(family)}.") from None


def loss_for(spec, power=None):
    """The loss object a spec's runs minimise (``power`` for the ``"power"`` loss; 1 is the absolute loss)."""
    if spec.loss == "power":
        return get_loss("absolute") if power == 1 else get_loss("power", power=power)
    return get_loss(spec.loss)
