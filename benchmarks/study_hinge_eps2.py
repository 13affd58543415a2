"""DPHingeClassifier with a declared clip against diffprivlib: where the remaining gaps come from.

Two commands (2 cores, about 3 minutes each)::

    OMP_NUM_THREADS=1 python benchmarks/study_hinge_eps2.py diagnose [--datasets Benefits,Participation,HI,baseball]
    OMP_NUM_THREADS=1 python benchmarks/study_hinge_eps2.py variants [--seeds 5] [--variants base,p1=0.25,share=0.25]
    OMP_NUM_THREADS=1 python benchmarks/study_hinge_eps2.py margins [--datasets baseball,HI,syn20000,Participation]

Datasets: bench_defaults.py's scaled encoding (b) (columns mapped onto [-1, 1] by documented ranges,
rows divided by sqrt(d)), run_all.py's baseball seasons and ``syn<n>`` (bench_hinge.bounded_data, rows of
norm <= 1, d = 20); declared ``clip=1``.

``diagnose`` (no noise; public settings of the rules at each epsilon, linear_model/_hinge_rules.py):

* ``hinge ERM``: LinearSVC(loss="hinge", C=1000, intercept_scaling=s) — the unregularized hinge
  minimizer, the limit of the rule as alpha -> 0; ``sq. hinge`` and ``LR``: LinearSVC's default
  loss and LogisticRegression (C=1) on the same rows;
* per epsilon, the rule's ``(c, alpha)`` (output perturbation's alpha on all n rows) and alpha / 4,
  / 16, / 64: the minimizer's test accuracy at threshold 0 (``thr0``), with the threshold of the
  intercept refit's grid that has the fewest training errors (``refit*``, the refit without its
  selection noise) and the test accuracy expected under the refit's selection law at its epsilon
  (``E[refit]``); epsilon = 1e6 and tolerance 1e-3 (at the default tolerance 0.05 the certified
  distance is relative to the sensitivity, not to the noise, and a noiseless run stops early).

``variants`` (private fits, noise seeds 0..seeds-1, mean ± std): ``base`` = the current rules;
``p1=<f>``: the localization's first-phase factor multiplied by f; ``share=<x>``: a declared clip C
fitted at x C where the rule fits it at C / 2; ``g=<x>``: localization growth x. A variant patches
the module constants for the run only.

``margins`` (no noise, epsilon 1, rows centred at their exact mean as the private centre does): the
minimizer at the rule's alpha, alpha / 4 and alpha / 16, its norm and the fraction of training rows with
margin below 1, below 0.5 and below 0 — could a private count of active hinges tell an over-regularized
fit (baseball) from a well-regularized one (HI)? Results: benchmarks/results/hinge_eps2.md.
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
import run_all  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
FACTORS = (1.0, 1 / 4, 1 / 16, 1 / 64)


def load(key):
    if key.startswith("syn"):
        import bench_hinge

        return bench_hinge.bounded_data(int(key[3:]))
    if key in ("biopsy", "baseball"):
        ds = run_all.real_classification(key)
        return ds.X, ds.y, ds.Xt, ds.yt
    return R.split(key, "scaled")


def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def noiseless(X, y, alpha, c, s):
    """The output-perturbation minimizer at ``(alpha, c, s)`` with negligible noise (epsilon 1e6)."""
    from sklearn_dpsco.linear_model import DPHingeClassifier
    from sklearn_dpsco.linear_model import _hinge as module
    from sklearn_dpsco.linear_model import _hinge_rules as rules

    module.declared_clip_level = lambda clip, *args: float(clip)  # c as given on every problem
    try:
        return DPHingeClassifier(epsilon=1e6, clip=c, alpha=alpha, solver="output_perturbation", intercept_scaling=s,
                                 intercept_share=0.0, tolerance=1e-3, random_state=0, accountant=_ledger()).fit(X, y)
    finally:
        module.declared_clip_level = rules.declared_clip_level


def refit_accuracies(est, X, y, Xt, yt, c, s, epsilon_t):
    """(thr0, best-training-threshold, expected under the refit's law) test accuracies of ``est``'s w."""
    from sklearn_dpsco.linear_model._intercept_refit import InterceptRefit

    pos = est.classes_[1]
    ys, yts = np.where(y == pos, 1.0, -1.0), np.where(yt == pos, 1.0, -1.0)
    w, b = est.coef_[0], est.intercept_[0]
    scores, test = X @ w + b, Xt @ w + b
    refit = InterceptRefit(max(epsilon_t, 1e-3), noise="float")
    points = refit.grid(np.append(w, b / s), np.hypot(c, s))
    acc = np.array([np.mean(np.where(test > t, 1.0, -1.0) == yts) for t in points])
    train = np.array([np.mean(np.where(scores > t, 1.0, -1.0) == ys) for t in points])
    pmf = refit.pmf(scores, ys, None, points)
    return float(np.mean(np.where(test > 0, 1.0, -1.0) == yts)), float(acc[np.argmax(train)]), float(pmf @ acc)


def diagnose(keys):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    from sklearn_dpsco.linear_model import _hinge_rules as rules

    for key in keys:
        X, y, Xt, yt = load(key)
        n, d_raw = X.shape
        d = d_raw + 1
        s_default = rules.default_intercept_scaling(1.0, d_raw)
        erm = LinearSVC(loss="hinge", C=1000.0, intercept_scaling=s_default, max_iter=200000).fit(X, y)
        sq = LinearSVC(max_iter=200000).fit(X, y)
        lr = LogisticRegression(max_iter=5000).fit(X, y)
        print(f"\n### {key} (n = {n}, d = {d} with the intercept column)\n")
        print(f"hinge ERM {erm.score(Xt, yt):.3f} (|w| {np.linalg.norm(erm.coef_):.1f}), "
              f"sq. hinge {sq.score(Xt, yt):.3f}, LR {lr.score(Xt, yt):.3f}\n")
        print("| eps | n eps / d | c | alpha | alpha x | thr0 | refit* | E[refit] | score sd |")
        print("|---|---|---|---|---|---|---|---|---|")
        for eps in EPSILONS:
            share = rules.default_intercept_share(n, d, eps)
            solver_eps = eps * (1 - share)
            c = rules.declared_clip_level(1.0, n, d, solver_eps, 0.0)
            alpha = rules.default_alpha(n, d, c, solver_eps, 0.0)
            s = rules.default_intercept_scaling(c, d_raw)
            for f in FACTORS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = noiseless(X, y, alpha * f, c, s)
                thr0, best, expected = refit_accuracies(est, X, y, Xt, yt, c, s, eps * share)
                sd = float(np.std(X @ est.coef_[0]))
                print(f"| {eps} | {n * eps / d:.0f} | {c:g} | {alpha:.3g} | {f:g} | {thr0:.3f} | {best:.3f} | "
                      f"{expected:.3f} | {sd:.3g} |", flush=True)


def margins(keys):
    from sklearn_dpsco.linear_model import _hinge_rules as rules

    print("| dataset | alpha x | alpha | norm of w | margin < 1 | margin < 0.5 | margin < 0 |")
    print("|---|---|---|---|---|---|---|")
    for key in keys:
        X, y, _, _ = load(key)
        X = X - X.mean(axis=0)  # the oracle centre (the private one is within 0.1 clip of it)
        n, d_raw = X.shape
        share = rules.default_intercept_share(n, d_raw + 1, 1.0)
        c = rules.declared_clip_level(1.0, n, d_raw + 1, 1.0 - share, 0.0)
        alpha = rules.default_alpha(n, d_raw + 1, c, 1.0 - share, 0.0)
        s = rules.default_intercept_scaling(c, d_raw)
        for f in FACTORS[:3]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = noiseless(X, y, alpha * f, c, s)
            signs = np.where(y == est.classes_[1], 1.0, -1.0)
            margin = signs * (X @ est.coef_[0] + est.intercept_[0])
            print(f"| {key} | {f:g} | {alpha * f:.3g} | {np.linalg.norm(est.coef_):.2f} | {np.mean(margin < 1):.3f} | "
                  f"{np.mean(margin < 0.5):.3f} | {np.mean(margin < 0):.3f} |", flush=True)


def _patched(variant):
    """Patch the rules' constants for ``variant``; returns the function that restores them."""
    from sklearn_dpsco.linear_model import _hinge as module
    from sklearn_dpsco.linear_model import _hinge_rules as rules

    saved = rules.PHASE1_ALPHA_FACTOR, module.LOCALIZATION_GROWTH, rules.DECLARED_CLIP_SHARE
    for part in variant.split("+"):
        name, _, value = part.partition("=")
        if name == "p1":
            rules.PHASE1_ALPHA_FACTOR = saved[0] * float(value)
        elif name == "g":
            module.LOCALIZATION_GROWTH = float(value)
        elif name == "share":
            rules.DECLARED_CLIP_SHARE = float(value)
        elif name != "base":
            raise ValueError(variant)

    def restore():
        rules.PHASE1_ALPHA_FACTOR, module.LOCALIZATION_GROWTH, rules.DECLARED_CLIP_SHARE = saved

    return restore


def variants(keys, names, seeds):
    from sklearn_dpsco.linear_model import DPHingeClassifier

    print("| dataset | variant | eps 0.5 | eps 1 | eps 2 |")
    print("|---|---|---|---|---|")
    for key in keys:
        X, y, Xt, yt = load(key)
        for variant in names:
            restore = _patched(variant)
            cells = []
            try:
                for eps in EPSILONS:
                    acc = []
                    for seed in range(seeds):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = DPHingeClassifier(epsilon=eps, clip=1.0, random_state=seed,
                                                    accountant=_ledger()).fit(X, y)
                        acc.append(est.score(Xt, yt))
                    cells.append(f"{np.mean(acc):.3f} ± {np.std(acc):.3f}")
            finally:
                restore()
            print(f"| {key} | {variant} | " + " | ".join(cells) + " |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=("diagnose", "variants", "margins"))
    p.add_argument("--datasets", default="Benefits,Participation,HI,baseball")
    p.add_argument("--variants", default="base,p1=0.25,share=0.25")
    p.add_argument("--seeds", type=int, default=5)
    args = p.parse_args(argv)
    keys = args.datasets.split(",")
    if args.mode == "diagnose":
        diagnose(keys)
    elif args.mode == "margins":
        margins(keys)
    else:
        variants(keys, args.variants.split(","), args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
