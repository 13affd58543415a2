"""Same seed, same release: a fingerprint of every estimator x solver x noise path x delta.

Fits each public estimator with every ``solver`` it accepts, on both noise
paths and at ``delta = 0`` and ``delta > 0``, with a fixed ``random_state``
on fixed generated data, and records the released floats exactly (hex), the
privacy spent and the solver chosen -- or the error raised. A refactoring
that claims to preserve behaviour must leave this fingerprint unchanged::

    python benchmarks/same_outputs.py --save before.json   # on the old commit
    python benchmarks/same_outputs.py --compare before.json  # on the new one

Only the public API is used, so the script survives moves of private modules.
"""

import argparse
import json
import sys
import warnings

import numpy as np

from sklearn_dpsco import (
    DPGrowthAdaptiveRegressor,
    DPHingeClassifier,
    DPLinearRegressor,
    UserLevelDPLogistic,
)
from sklearn_dpsco.preprocessing import DPStandardScaler
from sklearn_dpsco.testing import mixed_units

DELTAS = (0.0, 1e-6)
NOISES = ("secure", "float")


def _solvers(cls):
    (options,) = cls._parameter_constraints["solver"]
    return sorted(options.options)


def _data(seed=0, n=600, d=4):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    w = np.linspace(1.0, -0.5, d)
    y_reg = np.clip(X @ w + 0.1 * rng.standard_normal(n), -1, 1)
    y_cls = (X @ w + 0.2 * rng.standard_normal(n) > 0).astype(int)
    groups = np.repeat(np.arange(n // 3), 3)
    return X, y_reg, y_cls, groups


def _cases():
    X, y_reg, y_cls, groups = _data()
    for solver in _solvers(DPHingeClassifier):
        yield DPHingeClassifier, dict(solver=solver), (X, y_cls), {}
    for solver in _solvers(DPLinearRegressor):
        yield DPLinearRegressor, dict(solver=solver, row_bound=1.0, label_bound=1.0), (X, y_reg), {}
    for solver in _solvers(DPGrowthAdaptiveRegressor):
        for power in (1.0, 2.0):
            extra = dict(solver=solver, power=power)
            Xs = X
            if solver == "inverse_sensitivity":
                Xs, extra["fit_intercept"] = X[:, :1], False
            if solver == "interpolation":
                extra.update(smoothness=1.0, growth=0.5)
            yield DPGrowthAdaptiveRegressor, extra, (Xs, y_reg), {}
    Xu, _, yu, gu = _data(seed=1, n=3000)
    for solver in _solvers(UserLevelDPLogistic):
        yield UserLevelDPLogistic, dict(solver=solver), (Xu, yu), {"groups": gu}
    yield from _default_cases()


def _default_cases():
    """Every estimator with its defaults (nothing declared), where the default rules branch: raw columns in
    mixed units (column quartiles in two stages), a small-d regression (the auto table's gap), tiny budgets
    (the intercept-only regressors, the hinge's 3-point refit), and the scaler's statistics."""
    Xm, lab, tgt = mixed_units(8000, seed=3)
    X, y_reg, y_cls, groups = _data(seed=2, n=3000, d=3)
    Xt, yt_reg, _, _ = _data(seed=4, n=200, d=6)
    for cls, args in ((DPHingeClassifier, (Xm, lab)), (DPLinearRegressor, (Xm, tgt)),
                      (DPGrowthAdaptiveRegressor, (Xm, tgt))):
        yield cls, dict(defaults="mixed_units"), args, {}
    yield DPLinearRegressor, dict(defaults="small_d"), (X, y_reg), {}
    yield DPLinearRegressor, dict(defaults="tiny"), (Xt, yt_reg), {}
    yield DPGrowthAdaptiveRegressor, dict(defaults="tiny"), (Xt, yt_reg), {}
    Xh, _, yh, _ = _data(seed=4, n=120, d=20)  # n epsilon / d < 6: the 3-point intercept refit
    yield DPHingeClassifier, dict(defaults="tiny"), (Xh, yh), {}
    yield UserLevelDPLogistic, dict(defaults="mixed_units"), (Xm, lab), {"groups": np.arange(8000) // 4}
    yield DPStandardScaler, dict(defaults="mixed_units"), (Xm,), {}
    yield DPStandardScaler, dict(bounds=((1975.0, -4e3, 0.0, -4.0), (2015.0, 4e3, 1.0, 4.0))), (Xm,), {}
    yield DPStandardScaler, dict(bounds=(-1.0, 1.0), privacy_unit="user", max_items_per_user=3), (X,), \
        {"groups": groups}


def _hex(a):
    return [float(v).hex() for v in np.ravel(np.asarray(a, dtype=float))]


def fingerprint():
    out = {}
    for cls, params, args, fit_kw in _cases():
        for delta in DELTAS:
            for noise in NOISES:
                key = f"{cls.__name__}({', '.join(f'{k}={v}' for k, v in params.items())}, delta={delta}, noise={noise})"
                settings = {k: v for k, v in params.items() if k != "defaults"}  # "defaults": a label only
                est = cls(epsilon=1.0, delta=delta, noise=noise, random_state=0, **settings)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(*args, **fit_kw)
                except Exception as exc:  # the refusal itself is part of the behaviour
                    out[key] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
                    continue
                released = (est.coef_, getattr(est, "intercept_", 0.0)) if hasattr(est, "coef_") else (
                    est.mean_, est.scale_)  # the scaler's releases
                out[key] = {
                    "coef": _hex(released[0]),
                    "intercept": _hex(released[1]),
                    "solver": str(getattr(est, "solver_", "")),
                    "epsilon_spent": float(est.epsilon_spent_).hex(),
                    "delta_spent": float(est.delta_spent_).hex(),
                    "event": repr(getattr(est, "privacy_event_", None)),
                }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", metavar="FILE")
    group.add_argument("--compare", metavar="FILE")
    args = parser.parse_args(argv)
    fp = fingerprint()
    if args.save:
        with open(args.save, "w") as fh:
            json.dump(fp, fh, indent=1, sort_keys=True)
        n_err = sum("error" in v for v in fp.values())
        print(f"saved {len(fp)} cases ({n_err} refusals) to {args.save}")
        return 0
    with open(args.compare) as fh:
        before = json.load(fh)
    changed = sorted(k for k in set(before) | set(fp) if before.get(k) != fp.get(k))
    for k in changed:
        print(f"CHANGED {k}\n  before: {before.get(k)}\n  after:  {fp.get(k)}")
    print(f"{len(fp)} cases, {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
