"""The main job: fit the private estimators on generated data and print utility next to privacy spent.

Run ``dpsco-demo`` (installed console script) or ``python -m sklearn_dpsco.demo``
from outside the source tree.
"""

import argparse
import time

import numpy as np

from .accounting import BudgetAccountant
from ._mechanisms import L2LaplaceMechanism
from ._rng import check_random_state, is_cryptographic

__all__ = ["main"]


def _private_mean_demo(accountant, rng, n=20000, d=5, epsilon=0.5):
    """A private mean of clipped rows: the smallest end-to-end example of the privacy core."""
    X = rng.standard_t(df=3, size=(n, d)) + 1.0
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    clipped = X * np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))  # rows clipped to norm 1 (public)
    # replace-one: the mean of norm-1 rows moves by at most 2/n in l2
    mech = L2LaplaceMechanism(sensitivity=2.0 / n, epsilon=epsilon, dimension=d)
    accountant.check(mech.event)
    release = mech.release(clipped.mean(axis=0), rng)
    accountant.spend(mech.event, label="private clipped mean")
    err = np.linalg.norm(release - clipped.mean(axis=0))
    return "clipped mean (l2-Laplace)", f"l2 error {err:.4f}", epsilon, 0.0


def _hinge_demo(accountant, rng, n=4000, d=10, epsilon=1.0):
    """DPHingeClassifier on standardized generated data, with its defaults (solver="auto")."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    from .linear_model import DPHingeClassifier

    seed = int(rng.integers(2**31 - 1))
    X, y = make_classification(n + 2000, n_features=d, n_informative=5, random_state=seed)
    X = StandardScaler().fit_transform(X)  # the demo's data are public; standardize with care on private data
    noise_seed = None if is_cryptographic(rng) else int(rng.integers(2**31 - 1))  # None: OS-entropy noise
    clf = DPHingeClassifier(epsilon=epsilon, accountant=accountant, random_state=noise_seed).fit(X[:n], y[:n])
    acc = clf.score(X[n:], y[n:])
    return f"DPHingeClassifier ({clf.solver_})", f"test accuracy {acc:.3f}", clf.epsilon_spent_, clf.delta_spent_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=None, help="seed for data and noise (default: OS entropy)")
    args = parser.parse_args(argv)
    rng = check_random_state(args.seed)
    accountant = BudgetAccountant(epsilon=10.0, delta=1e-5)
    rows = []
    for job in (_private_mean_demo, _hinge_demo):
        t0 = time.perf_counter()
        name, utility, eps, delta = job(accountant, rng)
        rows.append((name, utility, eps, delta, time.perf_counter() - t0))

    print(f"{'task':42s} {'utility':28s} {'epsilon':>8s} {'delta':>8s} {'time':>7s}")
    for name, utility, eps, delta, secs in rows:
        print(f"{name:42s} {utility:28s} {eps:8.3g} {delta:8.1g} {secs:6.2f}s")
    total_eps, total_delta = accountant.total()
    left_eps, _ = accountant.remaining()
    print(
        f"\nledger: {len(accountant.ledger)} spends, total epsilon={total_eps:.4g}, delta={total_delta:.2g} "
        f"(ceiling epsilon={accountant.epsilon:g}, delta={accountant.delta:g}; remaining epsilon={left_eps:.4g})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
