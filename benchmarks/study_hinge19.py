"""DPHingeClassifier, issue 16 (session 19 helper): two measurements, no default changed.

    OMP_NUM_THREADS=1 python benchmarks/study_hinge19.py colscale [--seeds 16]
    OMP_NUM_THREADS=1 python benchmarks/study_hinge19.py zcdp [--seeds 16]

``colscale``: encoding (b) of bench_defaults.py, nothing declared (``clip="auto"``), the default against
``column_scaling=False`` at epsilon 0.5 / 1 / 2 on the six hinge sets, paired noise seeds (same seed both
arms). At Participation epsilon 2 (``n epsilon = 1220``, 200-400 ``n_features``) the default runs the
median-and-spread column map on 0.25 of epsilon; on columns already mapped onto [-1, 1] its scale
``max(2 spread, 1)`` is 1, so the map only centres.

``zcdp``: the default fit at ``(epsilon, delta = 1e-6)`` against the same fit under a
``FitAllowance(ZCDPEvent(zcdp_rho(epsilon, delta)))`` (what DPPipeline / DPGridSearchCV give a fit at
delta > 0), paired seeds; prints the plan's shares (refit, scales, solver epsilon) too.
Results: benchmarks/results/hinge19.md.
"""

import argparse
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402

SETS = ("HI", "Benefits", "Participation", "biopsy", "breast_cancer", "wine")
EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-6


def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def _data(key):
    rs = R.load(key)
    tr, te = R.train_test(rs)
    X, y = R.encode(rs, "scaled")
    return X[tr], y[tr], X[te], y[te]


def _score(est, data):
    Xtr, ytr, Xte, yte = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    return float(np.mean(est.predict(Xte) == yte)), est


def _report(key, eps, a, b, extra=""):
    a, b = np.asarray(a), np.asarray(b)
    diff = b - a
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    print(f"| {key} | {eps} | {a.mean():.3f} ({a.std():.3f}) | {b.mean():.3f} ({b.std():.3f}) | "
          f"{diff.mean():+.4f} ± {se:.4f} |{extra}", flush=True)


def colscale(seeds):
    from sklearn_dpsco import DPHingeClassifier

    print("| dataset | eps | default | column_scaling=False | paired diff ± s.e. |")
    print("|---|---|---|---|---|")
    for key in SETS:
        data = _data(key)
        for eps in EPSILONS:
            a = [_score(DPHingeClassifier(epsilon=eps, random_state=s, accountant=_ledger()), data)[0] for s in seeds]
            b = [_score(DPHingeClassifier(epsilon=eps, random_state=s, accountant=_ledger(), column_scaling=False),
                        data)[0] for s in seeds]
            _report(key, eps, a, b)


def zcdp(seeds, declared):
    from sklearn_dpsco import DPHingeClassifier
    from sklearn_dpsco.accounting import FitAllowance, ZCDPEvent, zcdp_rho

    print("| dataset | eps | (eps, delta) | zCDP allowance | paired diff ± s.e. | solver eps: (eps, delta) / zCDP |")
    print("|---|---|---|---|---|---|")
    extra = {"clip": 1.0} if declared else {}
    for key in SETS:
        data = _data(key)
        for eps in EPSILONS:
            a, b, info = [], [], None
            for s in seeds:
                sa, ea = _score(DPHingeClassifier(epsilon=eps, delta=DELTA, random_state=s, accountant=_ledger(),
                                                  **extra), data)
                allowance = FitAllowance(ZCDPEvent(zcdp_rho(eps, DELTA)), delta=DELTA)
                sb, eb = _score(DPHingeClassifier(epsilon=eps, delta=DELTA, random_state=s, accountant=allowance,
                                                  **extra), data)
                a.append(sa)
                b.append(sb)
                if info is None:
                    fa, fb = ea.fit_info_[0], eb.fit_info_[0]
                    info = (f" {fa['epsilon']:.3f} / {fb['epsilon']:.3f} (refit {fa.get('intercept_refit_epsilon', 0):.3f}"
                            f" / {fb.get('intercept_refit_epsilon', 0):.3f}; total {eb.epsilon_spent_:.3f}) |")
            _report(key, eps, a, b, info)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("colscale", "zcdp"))
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--declared", action="store_true", help="zcdp: clip=1 declared")
    args = parser.parse_args(argv)
    seeds = list(range(args.seeds))
    if args.what == "colscale":
        colscale(seeds)
    else:
        zcdp(seeds, args.declared)


if __name__ == "__main__":
    main()
