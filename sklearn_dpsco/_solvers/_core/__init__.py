"""What every solver stands on: data views, geometry, losses, settings and the result type.

Row data (:class:`GLMData`, row sources for in-memory, iterable and dask
input, rows held by a Dask cluster with their map-reduce primitives, rows
grouped by user), projections onto balls and intersections of
balls, the NumPy GLM losses (``get_loss``), the per-row SGD settings and
:class:`PrivateFit`. Nothing here draws noise or spends budget.
"""
