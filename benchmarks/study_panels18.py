"""Issue 17 (panels18): where the eps-1 baseball fit of UserLevelDPLogistic loses, and whether a public rule wins on all panels.

``OMP_NUM_THREADS=1 python benchmarks/study_panels18.py --variants default,cap20 --enc raw,scaled,scaledbare --eps 1
--out <jsonl>``: every variant on the seven panels of bench_panels.py (its split and seeds) and, on the raw
encoding, the three panels of bench_fresh.py (Snmesp, Ketchup, Tuna: its split, ``max_items_per_user=10``), one
JSON line per (variant, encoding, panel, epsilon) with the per-seed accuracies. Encodings as in
study_panels17.py: ``raw`` = raw columns, nothing declared; ``scaled`` = public-range rows with ``data_norm=sqrt(2)``
declared (bench_panels' "ours default"); ``scaledbare`` = public-range rows, nothing declared. ``--m5`` runs
baseball with bench_defaults' cap m = 5 instead of bench_panels' 10. Variants patch public rule constants only
(module attributes, restored after each cell); ``nf`` is study_panels17's noise-free reading (eps = 1000 with
every rule read at the study's epsilon). ``--summary <jsonl>`` prints the paired gaps of every variant against
``default`` (mean over seeds of the difference, its standard error).
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_fresh as F  # noqa: E402
import bench_panels as B  # noqa: E402
import study_panels17 as S  # noqa: E402

FRESH = ("Snmesp", "Ketchup", "Tuna")


def fresh_panel(key):
    rs = F.SETS[key]()
    tr, te = F.split(rs)
    X = np.asarray(rs.X, dtype=float)
    return {"name": key, "Xraw": X[tr], "Xtraw": X[te], "y": rs.y[tr], "yt": rs.y[te], "g": rs.groups[tr],
            "m": 10, "X": None, "Xt": None}


def _rr(name, value):
    import sklearn_dpsco.linear_model._user_logistic_rules as RR

    return S.patched(RR, name, value)


def _ul(name, value):
    import sklearn_dpsco.linear_model._user_logistic as UL

    return S.patched(UL, name, value)


def _centre_mod(name, value):
    import sklearn_dpsco.linear_model._centering as C

    return S.patched(C, name, value)


def _multi(*factories):
    @contextlib.contextmanager
    def ctx():
        with contextlib.ExitStack() as st:
            for f in factories:
                st.enter_context(f())
            yield
    return ctx


#: name -> (context factory or "nf" or None, extra params, epsilon override)
VARIANTS = {
    "default": (None, {}, None),
    "nf": ("nf", {}, S.NF_EPS),
    # the step cap (SGD_MAX_STEPS): fewer / more releases, the momentum rule covers the horizon
    "cap20": (lambda: _rr("SGD_MAX_STEPS", 20), {}, None),
    "cap40": (lambda: _rr("SGD_MAX_STEPS", 40), {}, None),
    "cap60": (lambda: _rr("SGD_MAX_STEPS", 60), {}, None),
    # the horizon past the cap: power 3, and the horizon ceiling 600
    "hpow3": (lambda: _rr("SGD_HORIZON_POWER", 3.0), {}, None),
    "hmax600": (lambda: _rr("SGD_MAX_HORIZON", 600), {}, None),
    "hmax150": (lambda: _rr("SGD_MAX_HORIZON", 150), {}, None),
    # users per unit of noise: the step / horizon rule's factor
    "k0.7": (lambda: _rr("SGD_STEPS_PER_USER_NOISE", 0.7), {}, None),
    "k1.4": (lambda: _rr("SGD_STEPS_PER_USER_NOISE", 1.4), {}, None),
    # clip (finer than panels17's x0.5 / x2)
    "clip0.7x": (lambda: S._clip(0.7), {}, None),
    "clip1.4x": (lambda: S._clip(1.4), {}, None),
    # shares: centre, magnitudes
    "centre0.05": (lambda: S._centre_share(0.05), {}, None),
    "centre0.15": (lambda: S._centre_share(0.15), {}, None),
    "mag0.1": (lambda: S._mag_share(0.1), {}, None),
    # alpha
    "alpha0.3x": (lambda: _ul("SGD_ALPHA_SHARE", 0.01), {}, None),
    "alpha3x": (lambda: _ul("SGD_ALPHA_SHARE", 0.09), {}, None),
    # the centred row share (R/8): R/10, R/6
    "row0.1": (lambda: _rr("CENTRED_ROW_SHARE", 0.1), {}, None),
    "row0.16": (lambda: _rr("CENTRED_ROW_SHARE", 0.16), {}, None),
    # combinations
    "cap40+clip0.7x": (_multi(lambda: _rr("SGD_MAX_STEPS", 40), lambda: S._clip(0.7)), {}, None),
    "hpow4": (lambda: _rr("SGD_HORIZON_POWER", 4.0), {}, None),
    "hpow3+hmax450": (_multi(lambda: _rr("SGD_HORIZON_POWER", 3.0), lambda: _rr("SGD_MAX_HORIZON", 450)), {}, None),
    "hpow3+clip0.85x": (_multi(lambda: _rr("SGD_HORIZON_POWER", 3.0), lambda: S._clip(0.85)), {}, None),
    "cap25": (lambda: _rr("SGD_MAX_STEPS", 25), {}, None),
    "cap20+row0.1": (_multi(lambda: _rr("SGD_MAX_STEPS", 20), lambda: _rr("CENTRED_ROW_SHARE", 0.1)), {}, None),
    "row0.1+k1.4": (_multi(lambda: _rr("CENTRED_ROW_SHARE", 0.1), lambda: _rr("SGD_STEPS_PER_USER_NOISE", 1.4)),
                    {}, None),
}


def run(name, enc, ds, eps, seeds):
    if name.startswith("epsx"):  # epsx<k>[+<variant>]: the fit at k eps (less noise), every rule read at eps
        head, _, rest = name.partition("+")
        k = float(head[4:])
        inner = VARIANTS[rest or "default"][0]
        with S.patched(S, "NF_EPS", eps * k):
            return _run(("nf", inner), {}, eps * k, enc, ds, eps, seeds)
    ctx, params, eps_override = VARIANTS[name]
    return _run((ctx, None), params, eps_override, enc, ds, eps, seeds)


def _run(ctxs, params, eps_override, enc, ds, eps, seeds):
    ctx, inner = ctxs
    params = dict(params)
    if enc in ("raw", "scaledbare"):
        params["data_norm"] = None
    fit_eps = eps_override or eps
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in seeds:
            with contextlib.ExitStack() as stack:
                if ctx == "nf":
                    stack.enter_context(S._rules_at(eps))
                elif ctx is not None:
                    stack.enter_context(ctx())
                if inner is not None:
                    stack.enter_context(inner())
                out.append(B.ours(ds, fit_eps, s, raw=enc == "raw", **params))
    return out


def summary(path):
    recs = [json.loads(line) for line in open(path)]
    base = {(r["enc"], r["panel"], r["eps"]): np.asarray(r["acc"]) for r in recs if r["variant"] == "default"}
    rows = {}
    for r in recs:
        if r["variant"] == "default":
            continue
        b = base.get((r["enc"], r["panel"], r["eps"]))
        if b is None:
            continue
        diff = np.asarray(r["acc"]) - b
        se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        rows.setdefault(r["variant"], []).append((r["enc"], r["panel"], r["eps"], b.mean(), diff.mean(), se))
    for v, cells in rows.items():
        worst = min((d / s if s > 0 else (0.0 if d == 0 else math.copysign(np.inf, d))) for *_, d, s in cells)
        print(f"== {v}: {len(cells)} cells, worst gap / s.e. {worst:.2f}")
        for enc, panel, eps, bm, d, s in cells:
            flag = " LOSS" if (s > 0 and d < -1.5 * s) or (s == 0 and d < 0) else ""
            print(f"   {enc:10s} eps={eps:g} {panel:9s} base {bm:.3f} gap {d:+.4f} ± {s:.4f}{flag}")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--variants", default="default")
    p.add_argument("--enc", default="raw,scaled,scaledbare")
    p.add_argument("--eps", default="1")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--panels", default=",".join(list(B.PANELS) + ["synthetic", *FRESH]))
    p.add_argument("--m5", action="store_true", help="baseball at bench_defaults' m = 5")
    p.add_argument("--out")
    p.add_argument("--summary")
    a = p.parse_args(argv)
    if a.summary:
        summary(a.summary)
        return
    seeds = list(range(a.seeds))
    datasets = {k: (B.synthetic() if k == "synthetic" else fresh_panel(k) if k in FRESH else B.load_panel(k))
                for k in a.panels.split(",")}
    if a.m5 and "baseball" in datasets:
        datasets["baseball"]["m"] = 5
    t0 = time.perf_counter()
    with open(a.out, "a") as fh:
        for enc in a.enc.split(","):
            for eps in [float(e) for e in a.eps.split(",")]:
                for key, ds in datasets.items():
                    if enc != "raw" and ds["X"] is None:
                        continue
                    for name in a.variants.split(","):
                        runs = run(name, enc, ds, eps, seeds)
                        acc = [r["acc"] for r in runs]
                        rec = {"variant": name, "enc": enc, "panel": key + ("_m5" if a.m5 and key == "baseball" else ""),
                               "eps": eps, "acc": acc, "solver": runs[0]["solver"], "steps": runs[0]["steps"],
                               "momentum": runs[0]["momentum"]}
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(f"{name:14s} {enc:10s} eps={eps:g} {rec['panel']:9s} {np.mean(acc):.3f} ± {np.std(acc):.3f} "
                              f"{runs[0]['solver']} T={runs[0]['steps']} b={runs[0]['momentum']} "
                              f"({time.perf_counter() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
