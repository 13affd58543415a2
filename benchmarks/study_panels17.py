"""Issue 17 study: where UserLevelDPLogistic's default loses accuracy on the panels (noise vs bias, one default at a time).

``OMP_NUM_THREADS=1 python benchmarks/study_panels17.py --variants default,nf,... --enc raw,scaled --eps 1,0.5
--out <jsonl>``: every variant on the seven panels of bench_panels.py (10 seeds, the same split and seeds as
bench_panels), one JSON line per (variant, encoding, panel, epsilon) with the per-seed accuracies, solver and
steps. ``raw`` = the raw columns with nothing declared (``data_norm=None``: the column magnitude histogram where
the quartiles do not run), ``scaled`` = the public-range encoding with ``data_norm=sqrt(2)`` declared
(bench_panels' "ours default"), ``scaledbare`` = the public-range encoding with
nothing declared (bench_defaults' scaled "ours (defaults)"). Variants patch ONE public setting (a rule's constant) at a time; ``nf`` is the
same default at epsilon = 1000 with every public rule (steps, momentum, alpha, solver choice) read at the
study's epsilon, so it measures the bias of the pipeline (clipping, steps, ridge) without its noise.
"""

import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_panels as B  # noqa: E402

NF_EPS = 1000.0


@contextlib.contextmanager
def patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _rules_at(eps_true):
    """Patch the public rules in _user_logistic so they read a budget share at ``eps_true`` instead of NF_EPS."""
    import sklearn_dpsco.linear_model._user_logistic as UL

    ratio = eps_true / NF_EPS
    stack = contextlib.ExitStack()
    for name, pos in (("default_sgd_iterations", 3), ("default_sgd_momentum", 2), ("default_user_alpha", 4),
                      ("prefers_dp_sgd", 2)):
        orig = getattr(UL, name)

        def wrap(*a, _orig=orig, _pos=pos, **kw):
            a = list(a)
            a[_pos] = a[_pos] * ratio
            return _orig(*a, **kw)

        stack.enter_context(patched(UL, name, wrap))
    # which column map runs (quartiles / magnitudes) is read at the study's epsilon too
    import sklearn_dpsco.linear_model._base as LB

    mode = LB.column_scaling_mode
    stack.enter_context(patched(LB, "column_scaling_mode",
                                lambda setting, n, d, epsilon, **kw: mode(setting, n, d, epsilon * ratio, **kw)))
    return stack


def _mag_share(share):
    from sklearn_dpsco.linear_model._column_magnitudes import MagnitudePlan

    return patched(MagnitudePlan, "split", staticmethod(lambda budget, share=share: budget.split([share, 1.0 - share])))


def _ul(name, value):
    import sklearn_dpsco.linear_model._user_logistic as UL

    return patched(UL, name, value)


def _clip(k):
    import sklearn_dpsco.linear_model._user_logistic as UL

    orig = UL.default_sgd_clip
    return patched(UL, "default_sgd_clip", lambda rb: k * orig(rb))


def _rules(name, value):
    import sklearn_dpsco.linear_model._user_logistic_rules as RR

    return patched(RR, name, value)


def _steps(k):
    """Step count times k (same horizon rule: the momentum follows)."""
    import sklearn_dpsco.linear_model._user_logistic as UL

    orig = UL.default_sgd_iterations
    return patched(UL, "default_sgd_iterations", lambda *a: max(1, int(round(k * orig(*a)))))


def _horizon(k):
    import sklearn_dpsco.linear_model._user_logistic_rules as RR

    orig = RR.sgd_horizon
    return patched(RR, "sgd_horizon", lambda *a: k * orig(*a))


def _centre_share(share):
    from sklearn_dpsco.linear_model._centering import CenteringPlan

    build = CenteringPlan.build.__func__
    return patched(CenteringPlan, "build", classmethod(
        lambda cls, budget, n_users, n_features, bound, max_items, share=share: build(
            cls, budget, n_users, n_features, bound, max_items, share=share)))


#: name -> (context factory or None, extra params, epsilon override)
VARIANTS = {
    "default": (None, {}, None),
    "nf": ("nf", {}, NF_EPS),
    "mom0": (None, {"sgd_momentum": 0.0}, None),
    "steps2x": (lambda: _steps(2.0), {}, None),
    "horizon2x": (lambda: _horizon(2.0), {}, None),
    "horizon0.5x": (lambda: _horizon(0.5), {}, None),
    "clip0.5x": (lambda: _clip(0.5), {}, None),
    "clip2x": (lambda: _clip(2.0), {}, None),
    "alpha0.1x": (lambda: _ul("SGD_ALPHA_SHARE", 0.003), {}, None),
    "alpha10x": (lambda: _ul("SGD_ALPHA_SHARE", 0.3), {}, None),
    "mag0.05": (lambda: _mag_share(0.05), {}, None),
    "mag0.3": (lambda: _mag_share(0.3), {}, None),
    "uncentred": (None, {"centering": False}, None),
    "centred": (None, {"centering": True}, None),
    "rowshare2x": (lambda: _rules("CENTRED_ROW_SHARE", 0.25), {}, None),
    "rowshare0.5x": (lambda: _rules("CENTRED_ROW_SHARE", 0.0625), {}, None),
    "user_clip": (None, {"solver": "user_clip"}, None),
    "user_dp_sgd": (None, {"solver": "user_dp_sgd"}, None),
    # the magnitudes' DP-GD threshold (MAGNITUDE_SGD_MIN_STEPS; 20 = the threshold of every other fit)
    "centre0.05": (lambda: _centre_share(0.05), {}, None),
    "centre0.2": (lambda: _centre_share(0.2), {}, None),
    "thr20": (lambda: _rules("MAGNITUDE_SGD_MIN_STEPS", 20), {}, None),
    "thr10": (lambda: _rules("MAGNITUDE_SGD_MIN_STEPS", 10), {}, None),
}


def run(variant, enc, ds, eps, seeds):
    ctx, params, eps_override = VARIANTS[variant]
    params = dict(params)
    raw = enc == "raw"
    if enc in ("raw", "scaledbare"):  # nothing declared (scaledbare: the public-range rows, no bound given)
        params["data_norm"] = None
    fit_eps = eps_override or eps
    out = []
    for s in seeds:
        with contextlib.ExitStack() as stack:
            if ctx == "nf":
                stack.enter_context(_rules_at(eps))
            elif ctx is not None:
                stack.enter_context(ctx())
            try:
                out.append(B.ours(ds, fit_eps, s, raw=raw, **params))
            except ValueError:  # centering=True where the column quartiles run (they centre): the default there
                params.pop("centering")
                out.append(B.ours(ds, fit_eps, s, raw=raw, **params))
    return out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--variants", default="default,nf")
    p.add_argument("--enc", default="raw,scaled")
    p.add_argument("--eps", default="1,0.5")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--panels", default=",".join(list(B.PANELS) + ["synthetic"]))
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    seeds = list(range(a.seeds))
    datasets = {k: (B.synthetic() if k == "synthetic" else B.load_panel(k)) for k in a.panels.split(",")}
    t0 = time.perf_counter()
    with open(a.out, "a") as fh:
        for variant in a.variants.split(","):
            for enc in a.enc.split(","):
                for eps in [float(e) for e in a.eps.split(",")]:
                    for key, ds in datasets.items():
                        runs = run(variant, enc, ds, eps, seeds)
                        acc = [r["acc"] for r in runs]
                        rec = {"variant": variant, "enc": enc, "panel": key, "eps": eps, "acc": acc,
                               "solver": runs[0]["solver"], "steps": runs[0]["steps"],
                               "momentum": runs[0]["momentum"]}
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(f"{variant:12s} {enc:6s} eps={eps:g} {key:9s} {np.mean(acc):.3f} ± {np.std(acc):.3f} "
                              f"{runs[0]['solver']} T={runs[0]['steps']} ({time.perf_counter() - t0:.0f}s)",
                              flush=True)


if __name__ == "__main__":
    main()
