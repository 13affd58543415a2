"""Run by bench_tuning.py in the peer library's venv: what diffprivlib's accountant records through scikit-learn."""

import json, warnings
import numpy as np
warnings.simplefilter("ignore")
from diffprivlib import BudgetAccountant
from diffprivlib.models import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 3)); y = (X[:, 0] > 0).astype(int)
acc = BudgetAccountant()
clf = LogisticRegression(epsilon=0.1, data_norm=5.0, accountant=acc)
cross_val_score(clf, X, y, cv=5)
after_cv = acc.total()
GridSearchCV(clf, {"C": [0.1, 1.0, 10.0]}, cv=3).fit(X, y)
print(json.dumps({"after_cv": after_cv[0], "after_grid": acc.total()[0], "n_entries": len(acc.spent_budget)}))
