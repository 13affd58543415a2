"""User-level solvers (doc/privacy/user_level.rst).

The deletion-sensitivity mechanism (``_deletion``), Ghazi et al.'s schedules
(``_gkkmmz``), user-clipped output perturbation (``_clip``) and the DP-GD and
group-privacy baselines (``_baselines``). Rows grouped by user are a data view
in :mod:`.._core._user_data`; the certified user solver is in
:mod:`.._optim._user_erm`.
"""
