"""Fitted models for the persistence tests: every public estimator, fitted with each kind of ledger.

Importable by spawned processes, which fit and save the models of a session
that then ends (tests/integration/test_persistence.py, doc/persistence.rst).
"""

import math
import os

import joblib
import numpy as np
from sklearn.pipeline import Pipeline

from ..accounting import BudgetAccountant
from ..linear_model import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
from ..model_selection import DPGridSearchCV, DPRandomizedSearchCV
from ..preprocessing import DPPipeline, DPStandardScaler, RowNormClipper

__all__ = ["LEDGERS", "MODELS", "fit_model", "output_of", "save_session"]

MODELS = (
    "hinge", "linear", "growth", "user", "scaler", "dp_pipeline", "sk_pipeline", "dp_grid", "dp_random",
)
LEDGERS = ("memory", "sqlite", "none")
CEILING = (100.0, 1e-3)


def _classes(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X @ np.array([1.0, -0.5, 0.25]) + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _regression(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = np.clip(X @ np.linspace(1.0, -1.0, d) + 0.05 * rng.standard_normal(n), -1, 1)
    return X, y


def make_model(name, accountant):
    """(unfitted model, X, y, fit kwargs); ``accountant`` is passed where the model charges its ledger."""
    acc = dict(accountant=accountant)
    if name == "hinge":
        return DPHingeClassifier(1.0, random_state=0, **acc), *_classes(), {}
    if name == "linear":
        return DPLinearRegressor(1.0, random_state=0, **acc), *_regression(), {}
    if name == "growth":
        return DPGrowthAdaptiveRegressor(1.0, radius=2.0, random_state=0, **acc), *_regression(), {}
    if name == "user":
        X, y = _classes(1000)
        groups = np.repeat(np.arange(100), 10)
        return UserLevelDPLogistic(1.0, 1e-6, random_state=0, **acc), X, y, {"groups": groups}
    if name == "scaler":
        return DPStandardScaler(1.0, bounds=(-3.0, 3.0), random_state=0, **acc), *_classes(), {}
    if name == "dp_pipeline":
        steps = [("scale", DPStandardScaler(bounds=(-3.0, 3.0), random_state=0)),
                 ("clf", DPHingeClassifier(random_state=1))]
        return DPPipeline(steps, epsilon=2.0, **acc), *_classes(), {}
    if name == "sk_pipeline":
        steps = [("clip", RowNormClipper()), ("clf", DPHingeClassifier(1.0, random_state=0, **acc))]
        return Pipeline(steps), *_classes(), {}
    search = DPGridSearchCV if name == "dp_grid" else DPRandomizedSearchCV
    grid = {"solver": ["output_perturbation", "localized_output_perturbation"]}
    kw = dict(selection="exponential", cv=2) if name == "dp_grid" else dict(n_iter=2)
    return search(DPHingeClassifier(), grid, epsilon=2.0, random_state=0, **kw, **acc), *_classes(), {}


def make_ledger(kind, directory):
    if kind == "memory":
        return BudgetAccountant(*CEILING)
    if kind == "sqlite":
        return BudgetAccountant(*CEILING, path=os.path.join(directory, "ledger.sqlite"))
    return None


def fit_model(name, ledger):
    """The fitted model and its data."""
    model, X, y, fit_kw = make_model(name, ledger)
    return model.fit(X, y, **fit_kw), X


def output_of(model, X):
    """What the model releases on ``X``: predictions, or the transform of a transformer."""
    return model.transform(X) if hasattr(model, "transform") and not hasattr(model, "predict") else model.predict(X)


def save_session(directory):
    """Fit every model with every kind of ledger, save it (joblib) with its outputs; the session then ends."""
    for kind in LEDGERS:
        ledger = make_ledger(kind, directory)
        for name in MODELS:
            model, X = fit_model(name, ledger)
            joblib.dump(model, os.path.join(directory, f"{name}-{kind}.joblib"))
            np.save(os.path.join(directory, f"{name}-{kind}.npy"), output_of(model, X))
        if ledger is not None:
            joblib.dump(ledger, os.path.join(directory, f"ledger-{kind}.joblib"))
