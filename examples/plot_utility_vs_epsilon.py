"""
===============================================================
Utility against epsilon: each estimator next to scikit-learn
===============================================================

Privacy has a price in accuracy, and the price falls as the budget grows.
This example fits each of the four private estimators over a range of
``epsilon`` and plots its test score next to the non-private scikit-learn
model fitted on the same rows:

* :class:`~sklearn_dpsco.DPHingeClassifier` against
  :class:`~sklearn.svm.LinearSVC` (accuracy);
* :class:`~sklearn_dpsco.DPLinearRegressor` against
  :class:`~sklearn.linear_model.LinearRegression` (R^2);
* :class:`~sklearn_dpsco.DPGrowthAdaptiveRegressor` (least absolute
  deviations, ``power=1``) against
  :class:`~sklearn.linear_model.QuantileRegressor` at the median (mean
  absolute test error, lower is better);
* :class:`~sklearn_dpsco.UserLevelDPLogistic` (one *user* protected, ten
  rows each) against :class:`~sklearn.linear_model.LogisticRegression`
  (accuracy).

The data are generated with fixed seeds; the private noise is seeded through
``random_state`` integers because this is an experiment — a release would
keep the default ``random_state=None`` (the operating system's CSPRNG).
"""

# %%
# Setup
# -----
# One ledger with an infinite ceiling records every fit of the sweep: it
# refuses nothing, but its total shows how much privacy an experiment like
# this one consumes when all fits touch the same data.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LinearRegression, LogisticRegression, QuantileRegressor
from sklearn.svm import LinearSVC

from sklearn_dpsco import (
    BudgetAccountant,
    DPGrowthAdaptiveRegressor,
    DPHingeClassifier,
    DPLinearRegressor,
    UserLevelDPLogistic,
)

epsilons = np.array([0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0])
seeds = range(5)
ledger = BudgetAccountant(epsilon=float("inf"), delta=1.0)


def sweep(make, X, y, Xt, yt, score, fit_kwargs=None):
    """Mean and std of ``score(model, Xt, yt)`` over seeds, for every epsilon."""
    out = np.array([[score(make(eps, seed).fit(X, y, **(fit_kwargs or {})), Xt, yt) for seed in seeds]
                    for eps in epsilons])
    return out.mean(axis=1), out.std(axis=1)


results = {}

# %%
# Linear SVM
# ----------
# ``make_classification`` rows are roughly standardized, so the default
# Lipschitz level ``clip = sqrt(n_features)`` (the norm of a standardized row)
# is a sensible public choice. Pure DP (``delta=0``).
X, y = make_classification(4000, 10, n_informative=5, random_state=0)
X, Xt, y, yt = X[:3000], X[3000:], y[:3000], y[3000:]
results["DPHingeClassifier vs LinearSVC\n(accuracy)"] = (
    sweep(lambda eps, s: DPHingeClassifier(epsilon=eps, random_state=s, accountant=ledger), X, y, Xt, yt,
          lambda m, A, b: m.score(A, b)),
    LinearSVC().fit(X, y).score(Xt, yt),
)

# %%
# Least squares
# -------------
# Rows are scaled to norm at most 1 and labels into [-1, 1] by fixed public
# constants (the default ``row_bound=1`` and ``label_bound=1``). With a small
# ``delta`` and the default secure noise the ``"auto"`` solver picks from the
# output-perturbation family by ``n epsilon / d`` (AdaSSP, Lowy, Phased-ERM;
# Snowball-SGD needs ``noise="float"``). ``solver_`` records the pick.
X, y, coef = make_regression(6000, 20, n_informative=10, noise=10.0, random_state=0, coef=True)
X = X / 6.5
X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
y = np.clip(y / (3.0 * np.sqrt(coef @ coef + 100.0)), -1.0, 1.0)
X, Xt, y, yt = X[:4000], X[4000:], y[:4000], y[4000:]
results["DPLinearRegressor vs LinearRegression\n(R^2, delta = 1e-5)"] = (
    sweep(lambda eps, s: DPLinearRegressor(epsilon=eps, delta=1e-5, random_state=s, accountant=ledger),
          X, y, Xt, yt, lambda m, A, b: m.score(A, b)),
    LinearRegression().fit(X, y).score(Xt, yt),
)

# %%
# Least absolute deviations
# -------------------------
# Laplace label noise, rows of norm about 1; the estimator adapts to the
# (unknown) growth of the risk. The search ball has public radius 3.
rng = np.random.default_rng(0)
X = rng.standard_normal((5000, 5)) / np.sqrt(5)
y = X @ np.array([1.0, -0.5, 0.3, 0.0, 0.2]) + 0.1 * rng.laplace(size=5000)
X, Xt, y, yt = X[:3000], X[3000:], y[:3000], y[3000:]


def mae(model, A, b):
    return np.mean(np.abs(model.predict(A) - b))


results["DPGrowthAdaptiveRegressor vs QuantileRegressor\n(mean absolute error, lower is better)"] = (
    sweep(lambda eps, s: DPGrowthAdaptiveRegressor(epsilon=eps, power=1.0, radius=3.0, random_state=s,
                                                   accountant=ledger), X, y, Xt, yt, mae),
    mae(QuantileRegressor(quantile=0.5, alpha=0.0).fit(X, y), Xt, yt),
)

# %%
# User-level logistic regression
# ------------------------------
# 500 users with 10 rows each; the guarantee covers all ten rows of a user
# at once. The non-private reference minimizes the same objective (the same
# ridge ``alpha``).
n_users, m, d, alpha = 500, 10, 10, 0.05
w_star = rng.standard_normal(d)
w_star *= 4.0 / np.linalg.norm(w_star)


def logistic_rows(n_rows):
    A = rng.standard_normal((n_rows, d)) / np.sqrt(d)
    return A, (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-A @ w_star))).astype(int)


X, y = logistic_rows(n_users * m)
Xt, yt = logistic_rows(5000)
groups = np.repeat(np.arange(n_users), m)
results["UserLevelDPLogistic vs LogisticRegression\n(accuracy, delta = 1e-6, one user = 10 rows)"] = (
    sweep(lambda eps, s: UserLevelDPLogistic(epsilon=eps, delta=1e-6, max_items_per_user=m, data_norm=1.5,
                                             alpha=alpha, random_state=s, accountant=ledger),
          X, y, Xt, yt, lambda mdl, A, b: mdl.score(A, b), fit_kwargs={"groups": groups}),
    LogisticRegression(C=1.0 / (alpha * len(y))).fit(X, y).score(Xt, yt),
)

# %%
# The price of privacy
# --------------------
# Each private curve approaches its non-private reference (dashed) as epsilon
# grows; at small epsilon the noise dominates.
fig, axes = plt.subplots(2, 2, figsize=(10, 7))
for ax, (title, ((mean, std), reference)) in zip(axes.ravel(), results.items()):
    ax.errorbar(epsilons, mean, yerr=std, marker="o", capsize=3, label="private (mean ± std, 5 seeds)")
    ax.axhline(reference, color="k", linestyle="--", label="non-private scikit-learn")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
axes[0, 0].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# What the sweep cost
# -------------------
# Each panel's fits touched the same data, so an experiment like this one
# is itself the composition of all of them. The ledger composes the events
# (exactly for the Gaussian ones) and reports epsilon at a chosen total
# delta — here 1e-3, as this ledger has no delta ceiling.
epsilon_total, delta_total = ledger.total(delta=1e-3)
print(f"{len(ledger.ledger)} fits recorded; total epsilon {epsilon_total:.1f} at delta {delta_total:g}")
