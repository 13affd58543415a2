"""Public rules of UserLevelDPLogistic: the default regularization (no data: users, cap, d, budget, R)."""

import math

from .._mechanisms._calibrate import expected_noise_norm

__all__ = ["USER_ALPHA_CAP", "USER_ALPHA_FACTOR", "default_user_alpha"]

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
