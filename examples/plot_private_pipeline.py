"""
===============================================================
A private pipeline: scaler, clipper and classifier, one budget
===============================================================

Standardizing features is routine — and a privacy leak when the means and
standard deviations are computed exactly from private rows: the fitted
scaler is then a release of private statistics, and every later step is
trained on its output. :class:`~sklearn_dpsco.DPPipeline` takes ONE
``(epsilon, delta)`` for the whole pipeline, splits it across its private
steps, and refuses data-dependent non-private steps.

Here :class:`~sklearn_dpsco.DPStandardScaler` (private means and variances
from public feature ranges), :class:`~sklearn_dpsco.RowNormClipper`
(stateless, free) and :class:`~sklearn_dpsco.DPHingeClassifier` share one
budget; we look at the split (``budget_shares_``), the ledger, and accuracy
against the budget.
"""

# %%
# Sensor-like data with public ranges
# -----------------------------------
# Six features on very different scales, each with a range known before
# seeing any data (a datasheet, a questionnaire's scale). Those ranges are
# the ``bounds`` of the private scaler; they are never read from the data.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_dpsco import BudgetAccountant, DPHingeClassifier, DPPipeline, DPStandardScaler, RowNormClipper

rng = np.random.default_rng(0)
lower = np.array([0.0, -40.0, 0.0, 900.0, 0.0, 0.0])
upper = np.array([1.0, 60.0, 100.0, 1100.0, 5000.0, 10.0])
centre, spread = (lower + upper) / 2, (upper - lower) / 8
n = 6000
Z = rng.standard_normal((n + 4000, 6))
X = centre + spread * Z
y = (Z @ np.array([1.0, -1.0, 0.5, 0.0, 2.0, -0.5]) + 0.5 * rng.standard_normal(n + 4000) > 0).astype(int)
X, Xt, y, yt = X[:n], X[n:], y[:n], y[n:]

# %%
# The pipeline
# ------------
# ``weights`` gives the classifier three quarters of the budget. After
# scaling, rows are clipped to the norm of a standardized row,
# ``sqrt(6)``, which is also the classifier's default Lipschitz level.
ledger = BudgetAccountant(epsilon=3.0)


def private_pipeline(epsilon, seed, accountant):
    return DPPipeline(
        [
            ("scale", DPStandardScaler(bounds=(lower, upper), random_state=seed)),
            ("clip", RowNormClipper(max_norm=np.sqrt(6))),
            ("svm", DPHingeClassifier(random_state=seed)),
        ],
        epsilon=epsilon,
        weights={"scale": 1, "svm": 3},
        accountant=accountant,
    )


pipe = private_pipeline(1.0, 0, ledger).fit(X, y)
print("budget shares:", pipe.budget_shares_)
print("spent by the pipeline:", pipe.epsilon_spent_, pipe.delta_spent_)
print("test accuracy:", pipe.score(Xt, yt))

# %%
# The ledger
# ----------
# Each private step charged its share to the ledger in force when it was
# fitted; the stateless clipper charged nothing. The ceiling of 3 leaves
# room for two more such fits.
for entry in ledger.ledger:
    print(f"{entry.label}: {entry.event}")
print("total:", ledger.total(), "remaining:", ledger.remaining())

# %%
# A plain StandardScaler is refused
# ---------------------------------
# Before any step sees the data, the pipeline classifies its steps. A
# scikit-learn ``StandardScaler`` learns exact statistics, so the fit is
# refused with an error naming the step — and nothing is spent.
try:
    DPPipeline([("scale", StandardScaler()), ("svm", DPHingeClassifier())], epsilon=1.0,
               accountant=ledger).fit(X, y)
except ValueError as err:
    print(str(err)[:160], "...")
print("ledger entries after the refusal:", len(ledger.ledger))

# %%
# Accuracy against the total budget
# ---------------------------------
# Each point is a fresh pipeline on the same data, recorded by a ledger
# without ceiling; the dashed line is the non-private scikit-learn pipeline
# (``StandardScaler`` + ``LinearSVC``).
sweep_ledger = BudgetAccountant(epsilon=float("inf"))
epsilons = [0.1, 0.3, 1.0, 3.0, 10.0]
scores = np.array([[private_pipeline(eps, seed, sweep_ledger).fit(X, y).score(Xt, yt) for seed in range(5)]
                   for eps in epsilons])
reference = make_pipeline(StandardScaler(), LinearSVC()).fit(X, y).score(Xt, yt)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1, 2]})
names = list(pipe.budget_shares_)
ax1.bar(names, [pipe.budget_shares_[k][0] for k in names], color=["C2", "C0"])
ax1.set_ylabel("epsilon")
ax1.set_title("budget_shares_ at total epsilon = 1", fontsize=9)
ax2.errorbar(epsilons, scores.mean(axis=1), yerr=scores.std(axis=1), marker="o", capsize=3,
             label="DPPipeline (mean ± std, 5 seeds)")
ax2.axhline(reference, color="k", linestyle="--", label="StandardScaler + LinearSVC (non-private)")
ax2.set_xscale("log")
ax2.set_xlabel("total epsilon of the pipeline")
ax2.set_ylabel("test accuracy")
ax2.legend(fontsize=8)
ax2.grid(True, which="both", alpha=0.3)
fig.tight_layout()
plt.show()
