"""
===============================================================
User-level privacy as items per user grow
===============================================================

When each person contributes many rows — messages, visits, ratings — a
row-level guarantee protects a single row, not the person.
:class:`~sklearn_dpsco.UserLevelDPLogistic` protects *all* rows of a user at
once: replacing one user's whole block of rows, whatever its size and
content, changes the output distribution by at most ``(epsilon, delta)``.

The question is what more rows per user buy. We fix the number of users and
let the number of items per user ``m`` grow, comparing three user-level
private fits of the same ``alpha``-regularised logistic objective:

* ``solver="user_clip"``: output perturbation of the ERM in which each
  user's total loss is replaced by its Lipschitz extension — noise shrinks
  like ``1 / sqrt(m)`` for exchangeable items (doc/privacy/user_level.rst);
* ``solver="item_group"``: an item-level mechanism made user-level by group
  privacy (budget ``epsilon / m`` per item) — it cannot profit from ``m``;
* ``solver="user_dp_sgd"``: DP-SGD-like gradient descent on per-user
  clipped average gradients — its noise does not shrink with ``m`` either.

``benchmarks/bench_user_level.py`` runs the full comparison, with the
deletion-mechanism solvers of Ghazi et al. (2023) and diffprivlib
(``benchmarks/results/user_level.md``).
"""

# %%
# Exchangeable users
# ------------------
# 300 users, items i.i.d. from a logistic model in d = 10 dimensions (rows of
# norm about 1; the public bound ``data_norm=1.5``). Each ``m`` gets fresh
# users with exactly ``m`` items each, and ``max_items_per_user=m``.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic

n_users, d, alpha = 300, 10, 0.05
w_star = np.random.default_rng(123).standard_normal(d)
w_star *= 4.0 / np.linalg.norm(w_star)


def logistic_rows(rng, n_rows):
    X = rng.standard_normal((n_rows, d)) / np.sqrt(d)
    return X, (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-X @ w_star))).astype(int)


def coefficients(model):
    return np.append(np.ravel(model.coef_), np.ravel(model.intercept_)[:1])


X_test, y_test = logistic_rows(np.random.default_rng(999), 10000)

# %%
# Distance to the non-private minimizer
# -------------------------------------
# All three solvers release a noisy version of the same regularised
# objective's minimizer, so the distance ``||w - w_LR||`` to the non-private
# :class:`~sklearn.linear_model.LogisticRegression` with the same ridge
# (``C = 1 / (alpha N)``) isolates the cost of privacy.
ms = [1, 3, 10, 30, 100]
solvers = ("user_clip", "item_group", "user_dp_sgd")
# user_dp_sgd adds Gaussian noise at every step and has no secure (grid) sampler, so the comparison
# runs every solver with noise="float" (the library default, "secure", refuses user_dp_sgd).
ledger = BudgetAccountant(epsilon=float("inf"), delta=1.0)  # records every fit of the experiment
distance = {s: np.zeros((len(ms), 3)) for s in solvers}
accuracy = {s: np.zeros((len(ms), 3)) for s in solvers + ("LogisticRegression",)}
for i, m in enumerate(ms):
    for seed in range(3):
        X, y = logistic_rows(np.random.default_rng([seed, m]), n_users * m)
        groups = np.repeat(np.arange(n_users), m)
        reference = LogisticRegression(C=1.0 / (alpha * len(y)), intercept_scaling=0.5).fit(X, y)
        accuracy["LogisticRegression"][i, seed] = reference.score(X_test, y_test)
        for solver in solvers:
            model = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, solver=solver, max_items_per_user=m,
                                        data_norm=1.5, intercept_scaling=0.5, alpha=alpha,
                                        noise="float", random_state=seed, accountant=ledger).fit(X, y, groups)
            distance[solver][i, seed] = np.linalg.norm(coefficients(model) - coefficients(reference))
            accuracy[solver][i, seed] = model.score(X_test, y_test)

for solver in solvers:
    slope = np.polyfit(np.log(ms), np.log(distance[solver].mean(axis=1)), 1)[0]
    print(f"{solver:12s} log-log slope of ||w - w_LR|| against m: {slope:+.2f}")

# %%
# Only the user-level mechanism improves with m
# ---------------------------------------------
# ``user_clip``'s error falls like ``m^(-1/2)`` (slope -0.5); the group-privacy
# baseline and user-level DP-SGD stay flat, because their noise does not
# shrink with m: group privacy divides the per-item budget by m exactly as
# the per-item sensitivity ``2R / (alpha n m)`` falls by m, and DP-SGD adds
# noise to a sum of per-user clipped average gradients whose sensitivity
# does not depend on m.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
for solver, marker in zip(solvers, ("o", "s", "^")):
    ax1.errorbar(ms, distance[solver].mean(axis=1), yerr=distance[solver].std(axis=1), marker=marker,
                 capsize=3, label=solver)
    ax2.plot(ms, accuracy[solver].mean(axis=1), marker=marker, label=solver)
ax2.plot(ms, accuracy["LogisticRegression"].mean(axis=1), "k--", label="LogisticRegression (non-private)")
ax1.set_xscale("log")
ax1.set_yscale("log")
ax1.set_ylabel("||w - w_LR||")
ax1.set_title(f"{n_users} users, epsilon = 1, delta = 1e-6 per user", fontsize=9)
ax2.set_xscale("log")
ax2.set_ylabel("test accuracy")
ax2.set_title("accuracy (mean of 3 seeds)", fontsize=9)
for ax in (ax1, ax2):
    ax.set_xlabel("items per user m")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The default ``solver="auto"`` chooses among these solvers from public facts
# only (users, cap, dimension, budget), by the smallest expected norm of the
# planned noise: DP-SGD at ``m = 1``, ``user_clip`` from ``m = 10`` on.
for m in (1, 10):
    X, y = logistic_rows(np.random.default_rng([0, m]), n_users * m)
    auto = UserLevelDPLogistic(epsilon=1.0, delta=1e-6, max_items_per_user=m, data_norm=1.5,
                               intercept_scaling=0.5, alpha=alpha, random_state=0, accountant=ledger)
    print(f"m = {m:3d}: solver='auto' chose {auto.fit(X, y, np.repeat(np.arange(n_users), m)).solver_!r}")
