"""Plan builders of each estimator family, one module per family.

Each module lists the :class:`~sklearn_dpsco._solvers._core._plan.SolverSpec`
of its solvers (``SOLVERS``): how a plan is built from public facts and a
:class:`~sklearn_dpsco._budget.Budget`, and how it runs on one problem.
The registry (:mod:`sklearn_dpsco._solvers._registry`) collects them.
"""
