"""The main job: fit the private estimators on generated data and print utility next to privacy spent.

Run ``dpsco-demo`` (installed console script) or ``python -m sklearn_dpsco.demo``
from outside the source tree.
"""

import argparse
import time

import numpy as np

from .accounting import BudgetAccountant
from ._budget import Budget
from ._mechanisms._calibrate import mechanism_for
from ._rng import check_random_state, is_cryptographic

__all__ = ["main"]


def _private_mean_demo(accountant, rng, n=20000, d=5, epsilon=0.5):
    """A private mean of clipped rows: the smallest end-to-end example of the privacy core."""
    X = rng.standard_t(df=3, size=(n, d)) + 1.0
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    clipped = X * np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))  # rows clipped to norm 1 (public)
    # replace-one: the mean of norm-1 rows moves by at most 2/n in l2
    mech = mechanism_for(2.0 / n, Budget(epsilon), d)  # pure DP: l2-Laplace
    accountant.check(mech.event)
    release = mech.release(clipped.mean(axis=0), rng)
    accountant.spend(mech.event, label="private clipped mean")
    err = np.linalg.norm(release - clipped.mean(axis=0))
    return "clipped mean (l2-Laplace)", f"l2 error {err:.4f}", epsilon, 0.0


def _hinge_demo(accountant, rng, n=4000, d=10, epsilon=1.0):
    """DPHingeClassifier on generated data, with its defaults (solver="auto"), next to LinearSVC."""
    from sklearn.datasets import make_classification
    from sklearn.svm import LinearSVC

    from .linear_model import DPHingeClassifier

    seed = int(rng.integers(2**31 - 1))
    X, y = make_classification(n + 2000, n_features=d, n_informative=5, random_state=seed)
    # the defaults estimate the row scale (clip="auto") and the column scales privately, inside epsilon; to
    # standardize private data first use DPStandardScaler in a DPPipeline, never the data's own statistics
    noise_seed = None if is_cryptographic(rng) else int(rng.integers(2**31 - 1))  # None: OS-entropy noise
    clf = DPHingeClassifier(epsilon=epsilon, accountant=accountant, random_state=noise_seed).fit(X[:n], y[:n])
    acc = clf.score(X[n:], y[n:])
    base = LinearSVC().fit(X[:n], y[:n]).score(X[n:], y[n:])
    utility = f"accuracy {acc:.3f} (non-private {base:.3f})"
    return f"DPHingeClassifier ({clf.solver_})", utility, clf.epsilon_spent_, clf.delta_spent_


def _linear_regression_demo(accountant, rng, n=20000, d=10, epsilon=1.0, delta=1e-6):
    """DPLinearRegressor (solver="auto") on rows of norm <= 1, next to non-private least squares."""
    from sklearn.linear_model import LinearRegression

    from .linear_model import DPLinearRegressor

    w = rng.uniform(-1, 1, d)
    X = rng.uniform(-1, 1, (n + 5000, d)) / np.sqrt(d)
    y = np.clip(X @ w + 0.05 * rng.standard_normal(n + 5000), -1, 1)
    seed = None if is_cryptographic(rng) else int(rng.integers(2**31))  # OS entropy stays OS entropy
    reg = DPLinearRegressor(epsilon=epsilon, delta=delta, row_bound=1.0, label_bound=1.0, accountant=accountant,
                            random_state=seed).fit(X[:n], y[:n])
    base = LinearRegression().fit(X[:n], y[:n]).score(X[n:], y[n:])
    utility = f"R^2 {reg.score(X[n:], y[n:]):.4f} (non-private {base:.4f})"
    return f"DPLinearRegressor ({reg.solver_})", utility, reg.epsilon_spent_, delta


def _growth_regressor_demo(accountant, rng, n=8000, d=5, epsilon=1.0):
    """Private least absolute deviations on noiseless data (sharp growth): ALD-2 epochs adapt to it."""
    from .linear_model import DPGrowthAdaptiveRegressor

    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # rows of norm 1: LAD is 1-Lipschitz at clip=1
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    y = X @ w
    seed = None if is_cryptographic(rng) else int(rng.integers(2**31))  # OS entropy stays OS entropy
    reg = DPGrowthAdaptiveRegressor(epsilon=epsilon, power=1.0, radius=2.0, fit_intercept=False,
                                    accountant=accountant, random_state=seed).fit(X, y)
    err = np.linalg.norm(reg.coef_ - w)
    return (f"growth-adaptive LAD ({reg.solver_}, {reg.n_epochs_} epochs)", f"||w - w*|| {err:.2e}",
            reg.epsilon_spent_, reg.delta_spent_)


def _user_level_demo(accountant, rng, n_users=2000, m=20, d=5, epsilon=1.0, delta=1e-6):
    """User-level logistic regression: every row of a user protected at once (replace-one-user)."""
    from .linear_model import UserLevelDPLogistic

    w = np.linspace(1.0, -1.0, d) * 2.0
    X = rng.standard_normal((n_users * m, d)) / np.sqrt(d)
    y = (rng.random(n_users * m) < 1.0 / (1.0 + np.exp(-X @ w))).astype(int)
    groups = np.repeat(np.arange(n_users), m)
    seed = None if is_cryptographic(rng) else int(rng.integers(2**31))  # OS entropy stays OS entropy
    est = UserLevelDPLogistic(epsilon=epsilon, delta=delta, max_items_per_user=m, data_norm=1.5, alpha=0.05,
                              accountant=accountant, random_state=seed).fit(X, y, groups)
    acc = est.score(X, y)
    return f"user-level logistic ({est.solver_}, {n_users} users)", f"train accuracy {acc:.3f}", epsilon, delta


def _private_search_demo(accountant, rng, n=2000, d=4, epsilon=1.0):
    """Tune DPHingeClassifier's regularization privately: one total budget, one ledger entry."""
    from sklearn.model_selection import ShuffleSplit

    from .linear_model import DPHingeClassifier
    from .model_selection import DPGridSearchCV

    X = rng.normal(size=(n, d))
    y = (X @ np.linspace(1.0, -0.5, d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    X_test = rng.normal(size=(n, d))
    y_test = (X_test @ np.linspace(1.0, -0.5, d) > 0).astype(int)
    seed = None if is_cryptographic(rng) else int(rng.integers(2**32))  # None: OS entropy for the noise
    search = DPGridSearchCV(
        DPHingeClassifier(clip=1.0),
        {"alpha": [0.01, 0.1, 1.0]},
        epsilon=epsilon,
        selection="exponential",
        cv=ShuffleSplit(1, test_size=0.3, random_state=seed),
        selection_share=0.4,
        accountant=accountant,
        random_state=seed,
    ).fit(X, y)
    alpha = search.best_params_["alpha"]
    return "private grid search (3 alphas)", f"accuracy {search.score(X_test, y_test):.3f}, alpha={alpha}", epsilon, 0.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=None, help="seed for data and noise (default: OS entropy)")
    args = parser.parse_args(argv)
    rng = check_random_state(args.seed)
    accountant = BudgetAccountant(epsilon=10.0, delta=1e-5)
    rows = []
    for job in (_private_mean_demo, _hinge_demo, _linear_regression_demo, _growth_regressor_demo,
                _user_level_demo, _private_search_demo):
        t0 = time.perf_counter()
        name, utility, eps, delta = job(accountant, rng)
        rows.append((name, utility, eps, delta, time.perf_counter() - t0))

    print(f"{'task':50s} {'utility':34s} {'epsilon':>8s} {'delta':>8s} {'time':>7s}")
    for name, utility, eps, delta, secs in rows:
        print(f"{name:50s} {utility:34s} {eps:8.3g} {delta:8.1g} {secs:6.2f}s")
    total_eps, total_delta = accountant.total()
    left_eps, _ = accountant.remaining()
    print(
        f"\nledger: {len(accountant.ledger)} spends, total epsilon={total_eps:.4g}, delta={total_delta:.2g} "
        f"(ceiling epsilon={accountant.epsilon:g}, delta={accountant.delta:g}; remaining epsilon={left_eps:.4g})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
