"""Small, fast private estimators for the budget tests (importable by worker processes).

:class:`TinyDPClassifier` is a real private mechanism (a noisy mean of
``y_i x_i`` over rows clipped to norm 1, l2-sensitivity 2/n) that fits in
microseconds, so the tests can run hundreds of fits through every
scikit-learn entry point. It follows the library's fit template: check
before touching data, spend once after success, nothing on failure. Its
``crash`` parameter simulates failures for the crash tests.
"""

import os

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._budget import Budget
from .._mechanisms import DEFAULT_NOISE
from .._mechanisms._calibrate import mechanism_for
from .._rng import check_random_state
from ..accounting._resolve import AccountantMixin

__all__ = ["TinyDPClassifier"]


class TinyDPClassifier(AccountantMixin, ClassifierMixin, BaseEstimator):
    """Binary classifier ``sign(<w, x> + shift)`` with ``w`` a noisy mean of ``y_i clip(x_i)``.

    Parameters
    ----------
    epsilon, delta : float
        ``delta=0``: isotropic l2-Laplace noise; else Gaussian.
    noise : {"secure", "float"}, default=DEFAULT_NOISE
        Sampling path of the mechanism (doc/privacy/secure_noise.rst): the
        secure Gaussian spends zCDP, the float one a Gaussian-DP event.
    shift : float, default=0.0
        A hyperparameter for the search tests (public offset of the decision).
    classes : array-like of 2 labels, default=None
    accountant : BudgetAccountant, default=None
    random_state : int or None
    crash : {"never", "raise_before", "raise_after_spend", "exit_after_spend"}, default="never"
        Test hook: raise before touching data, raise after spending, or kill
        the process (``os._exit``) right after the spend is committed.
    spend_log : str, default=None
        Test hook: after a committed spend, append one line to this file.
    """

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        shift=0.0,
        noise=DEFAULT_NOISE,
        classes=None,
        accountant=None,
        random_state=None,
        crash="never",
        spend_log=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.shift = shift
        self.noise = noise
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.crash = crash
        self.spend_log = spend_log

    def _mechanism(self, n, d):
        sensitivity = 2.0 / n  # replace-one: y_i clip(x_i) has norm <= 1, the mean moves by <= 2/n
        return mechanism_for(sensitivity, Budget(self.epsilon, self.delta, self.noise), d)

    def fit(self, X, y):
        X = np.asarray(X, dtype=float)
        y = np.asarray(y)
        if X.ndim != 2 or not np.all(np.isfinite(X)):
            raise ValueError("X must be a finite 2-D array. Nothing was spent.")
        classes = np.unique(y) if self.classes is None else np.sort(np.asarray(self.classes))
        if classes.size != 2:
            raise ValueError("TinyDPClassifier is binary. Nothing was spent.")
        n, d = X.shape
        mech = self._mechanism(n, d)
        accountant = self._get_accountant()
        accountant.check(mech.event)
        if self.crash == "raise_before":
            raise RuntimeError("TinyDPClassifier: simulated failure before touching data")
        norms = np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
        Xc = X * np.minimum(1.0, 1.0 / norms)
        signs = np.where(y == classes[1], 1.0, -1.0)
        w = mech.release((signs[:, None] * Xc).mean(axis=0), check_random_state(self.random_state))
        entry = accountant.spend(mech.event, label=type(self).__name__)
        if self.spend_log is not None:
            with open(self.spend_log, "a") as fh:
                fh.write(f"{os.getpid()} {entry.timestamp!r}\n")
                fh.flush()
                os.fsync(fh.fileno())
        if self.crash == "exit_after_spend":
            os._exit(17)
        if self.crash == "raise_after_spend":
            raise RuntimeError("TinyDPClassifier: simulated failure after the spend")
        self.classes_ = classes
        self.coef_ = w
        self.privacy_event_ = mech.event
        self.n_features_in_ = d
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=float) @ self.coef_ + self.shift

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
