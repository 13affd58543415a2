"""
========================================================
A privacy report: one ledger, a whole workflow, in words
========================================================

A workflow on private data is rarely one fit: a scaled classifier, a
hyperparameter search, a regressor on the same rows. Each fit charges the
one :class:`~sklearn_dpsco.BudgetAccountant` in force, and the ledger
composes them against its ceiling. :func:`~sklearn_dpsco.privacy_report`
reads that record back — it never spends — as a table (one row per spend,
its mechanism, its ``(epsilon, delta)`` and the running total against the
ceiling) and states the guarantee: the unit of privacy, the neighbouring
relation, and the public parameters it rests on.
"""

# %%
# Data with public ranges, one ledger
# -----------------------------------
# Four features with ranges known before seeing the data (they become the
# scaler's ``bounds``), a binary label and a bounded numeric target. The
# ledger's ceiling is the budget of the whole workflow: epsilon 4 at
# delta 1e-6.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_dpsco import (
    BudgetAccountant,
    DPGridSearchCV,
    DPHingeClassifier,
    DPLinearRegressor,
    DPStandardScaler,
    RowNormClipper,
    make_dp_pipeline,
    privacy_report,
)

rng = np.random.default_rng(0)
lower = np.array([0.0, -10.0, 0.0, 100.0])
upper = np.array([1.0, 10.0, 50.0, 200.0])
n = 4000
Z = rng.uniform(-1, 1, (n, 4))
X = (lower + upper) / 2 + Z * (upper - lower) / 2
y = (Z @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.3 * rng.standard_normal(n) > 0).astype(int)
target = np.clip(Z @ np.array([0.4, 0.2, -0.3, 0.1]) + 0.05 * rng.standard_normal(n), -1, 1)

ledger = BudgetAccountant(epsilon=4.0, delta=1e-6)

# %%
# Step 1: a private scaler and classifier in one pipeline
# -------------------------------------------------------
# The pipeline's epsilon 1 is split between the scaler and the classifier;
# each step charges its share to the ledger.
pipe = make_dp_pipeline(
    DPStandardScaler(bounds=(lower, upper), random_state=0),
    RowNormClipper(max_norm=2.0),
    DPHingeClassifier(random_state=0),
    epsilon=1.0,
    accountant=ledger,
).fit(X, y)
print(privacy_report(pipe))

# %%
# Step 2: a private grid search over the classifier's regularization
# ------------------------------------------------------------------
# The search is ONE spend, charged before its first fit; its report shows
# how that spend is split between candidate fits, the private selection and
# the refit.
search = DPGridSearchCV(
    DPHingeClassifier(clip=1.0, noise="float"),
    {"alpha": [0.003, 0.03, 0.3]},
    epsilon=1.5,
    delta=1e-7,
    cv=2,
    accountant=ledger,
    random_state=0,
).fit(Z, y)
print(privacy_report(search))

# %%
# Step 3: a regressor with declared row and label bounds
# ------------------------------------------------------
# Rows of ``Z / 2`` have norm at most 1 (the declared ``row_bound``) and the
# target lies in [-1, 1] (``label_bound``); these public bounds are part of
# what the guarantee rests on.
reg = DPLinearRegressor(epsilon=1.0, delta=1e-7, row_bound=1.0, label_bound=1.0, random_state=0,
                        accountant=ledger).fit(Z / 2, target)
print(privacy_report(reg))

# %%
# The ledger's report
# -------------------
# Every spend of the workflow, in order, with the running total. Gaussian
# and zCDP spends are read at the ledger's delta, so the last running total
# is exactly ``ledger.total()``. In a notebook the report renders as an
# HTML table; ``report.table`` is a pandas DataFrame when pandas is
# installed.
report = privacy_report(ledger)
print(report)
print("ledger.total():", ledger.total())

# %%
# Budget spent over the workflow
# ------------------------------
# The running total after each spend, against the ceiling. Composition is
# not addition: the zCDP spend of the regressor composes with the earlier
# Gaussian and pure parts more tightly than the sum of the epsilons each
# spend has on its own.
rows = report.rows
steps = [r["spend"] for r in rows]
running = [r["total_epsilon"] for r in rows]
naive = np.cumsum([r["epsilon"] for r in rows])

fig, ax = plt.subplots(figsize=(8, 4))
ax.plot([0] + steps, [0.0] + running, marker="o", label="running total (composed)")
ax.plot([0] + steps, [0.0] + list(naive), marker="x", linestyle=":", color="C1",
        label=f"sum of the spends' epsilons (each read at delta {ledger.delta:g})")
ax.axhline(ledger.epsilon, color="k", linestyle="--", label=f"ceiling epsilon = {ledger.epsilon:g}")
ax.set_xticks([0] + steps)
names = [r["label"].split(" ")[0].split("[")[-1].rstrip("]:") for r in rows]  # the step or estimator
ax.set_xticklabels(["start"] + names, rotation=20, fontsize=8)
ax.set_ylabel(f"epsilon at delta = {ledger.delta:g}")
ax.set_title("Cumulative privacy budget over the workflow")
ax.legend(fontsize=8)
ax.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()
