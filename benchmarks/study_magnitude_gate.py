"""The user-level column magnitudes' clear gate (issue 16): paired noise seeds, gate off (main) vs on.

UserLevelDPLogistic with its defaults (bench_defaults.py's ``ours (defaults)``: ``delta = 1e-6``, nothing else
declared) on the panels of bench_panels.py, encoding ``scaled`` (b, columns by public ranges, rows of norm <= 1)
or ``raw`` (a). For every cell and seed the same fit runs twice in this process: ``main`` with the gate off
(main's ``MagnitudePlan.scales`` verbatim, ``_main_scales``: the same floats as main) and ``gate`` with the
library's rule (or ``--rate``, or a candidate ``--rule`` of ``_rule_scales``). Test accuracy, single-class models, the number of columns the
map scaled down (``b_j > 1``)::

    OMP_NUM_THREADS=1 python benchmarks/study_magnitude_gate.py --seeds 10 \\
        --cells Males/scaled/0.5,Males/scaled/1,Males/scaled/2 --out benchmarks/results/males20.jsonl
    python benchmarks/study_magnitude_gate.py --table benchmarks/results/males20.jsonl

Writes one JSON line per (cell, seed, variant); ``--table`` prints the paired summary (mean ± s.e. of the paired
difference gate - main, single-class counts).
"""

import argparse
import json
import math
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_panels as P  # noqa: E402

DELTA = 1e-6


def _rule_scales(plan, noisy, rule, rate):
    """Candidate rules (study only): the released histogram -> (scale, b), like ``MagnitudePlan.scales``.

    ``count``: a large mode acted on when its count >= z sigma; ``combined``: when ``H[k] + n - H[0] - H[1] >=
    z sigma sqrt(3)`` (the count and the public total less the small bins, both readings of the column's large
    mass); ``global_count`` / ``global_combined``: the same test opens the map for all columns (argmax rule
    once open) when some column's large mode passes it."""
    from sklearn_dpsco.linear_model import _column_magnitudes as CM

    d, K = plan.n_features, CM.MAGNITUDE_OCTAVES
    noisy = np.asarray(noisy, dtype=float).reshape(d, K)
    sigma = plan.noise_std
    z = CM.magnitude_clear_sigmas(d, K, rate) if rate is not None else CM.magnitude_clear_sigmas(d, K)
    top = np.argmax(noisy, axis=1)
    at = noisy[np.arange(d), top]
    if rule.endswith("count") or rule == "soft_count":
        passed = at >= z * sigma
    else:
        passed = at + plan.n_users - noisy[:, 0] - noisy[:, 1] >= z * sigma * math.sqrt(3.0)
    large = top > 1
    opened = bool(np.any(large & passed))
    if rule.startswith("soft"):  # every large mode acted on (main), the others divided by sqrt(d) only when the gate opens
        pass
    elif rule.startswith("global"):
        if not np.any(large & passed):
            top = np.zeros(d, dtype=int)
    else:
        top = np.where(large & ~passed, 0, top)
    tau = CM.MAGNITUDE_RUN_SIGMAS * sigma
    for j in range(d):
        while top[j] + 1 < K and noisy[j, top[j] + 1] >= tau:
            top[j] += 1
    b = np.where(top > 1, np.ldexp(1.0, top * CM.MAGNITUDE_BIN_OCTAVES - 1), 1.0)
    if not np.any(b > 1.0):
        return np.ones(d), b
    if rule.startswith("soft") and not opened:
        return b, b
    return b * math.sqrt(d), b


def _main_scales(plan, noisy):
    """Main's rule (b5aaaa5) verbatim: every large mode acted on, the others divided by sqrt(d) when some b_j > 1."""
    from sklearn_dpsco.linear_model import _column_magnitudes as CM

    noisy = np.asarray(noisy, dtype=float).reshape(plan.n_features, CM.MAGNITUDE_OCTAVES)
    tau = CM.MAGNITUDE_RUN_SIGMAS * plan.noise_std
    top = np.argmax(noisy, axis=1)
    for j in range(plan.n_features):
        while top[j] + 1 < CM.MAGNITUDE_OCTAVES and noisy[j, top[j] + 1] >= tau:
            top[j] += 1
    b = np.where(top > 1, np.ldexp(1.0, top * CM.MAGNITUDE_BIN_OCTAVES - 1), 1.0)
    if not np.any(b > 1.0):
        return np.ones(plan.n_features), b
    return b * math.sqrt(plan.n_features), b


def fit_one(ds, enc, eps, seed, gate, rate=None, rule=None):
    """One fit; ``gate`` False: main's rule; True: the library's (``rate``: its MAGNITUDE_CLEAR_RATE) or ``rule``."""
    from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic
    from sklearn_dpsco.linear_model import _column_magnitudes as CM

    seen = []
    original_z, original_scales = CM.magnitude_clear_sigmas, CM.MagnitudePlan.scales

    def spy(self, noisy):
        if not gate:
            out = _main_scales(self, noisy)
        elif rule is not None:
            out = _rule_scales(self, noisy, rule, rate)
        else:
            out = original_scales(self, noisy)
        seen.append(int(np.sum(out[1] > 1.0)))
        return out

    if gate and rate is not None and rule is None:
        CM.magnitude_clear_sigmas = lambda d, octaves=CM.MAGNITUDE_OCTAVES: original_z(d, octaves, rate)
    CM.MagnitudePlan.scales = spy
    try:
        X, Xt = (ds["Xraw"], ds["Xtraw"]) if enc == "raw" else (ds["X"], ds["Xt"])
        est = UserLevelDPLogistic(epsilon=eps, delta=DELTA, random_state=seed,
                                  accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, ds["y"], ds["g"])
        pred = est.predict(Xt)
    finally:
        CM.magnitude_clear_sigmas, CM.MagnitudePlan.scales = original_z, original_scales
    return {"acc": float(np.mean(pred == ds["yt"])), "single": bool(np.unique(pred).size == 1),
            "scaled_columns": seen[0] if seen else None, "solver": est.solver_}


def run(cells, seeds, out, rate=None, rule=None):
    cache = {}
    with open(out, "a") as fh:
        for cell in cells:
            key, enc, eps = cell.split("/")
            if key not in cache:
                cache[key] = P.load_panel(key)
            ds = cache[key]
            for seed in seeds:
                for variant in ("main", "gate"):
                    rec = fit_one(ds, enc, float(eps), seed, variant == "gate", rate, rule)
                    rec.update(cell=cell, seed=seed, variant=variant, rate=rate, rule=rule)
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
            print("done", cell, flush=True)


def table(path, rate=None, rule=None):
    recs = [json.loads(line) for line in open(path)]
    recs = [r for r in recs if r.get("rate") == rate and r.get("rule") == rule]
    cells = list(dict.fromkeys(r["cell"] for r in recs))
    lines = ["| cell (panel/encoding/epsilon) | seeds | main acc | gate acc | gate - main (s.e.) | 1c main | 1c gate "
             "| cols scaled main | cols scaled gate |", "|---|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        by = {}
        for r in recs:
            if r["cell"] == cell:
                by.setdefault(r["seed"], {})[r["variant"]] = r
        pairs = [v for v in by.values() if "main" in v and "gate" in v]
        a = np.array([p["main"]["acc"] for p in pairs])
        b = np.array([p["gate"]["acc"] for p in pairs])
        diff = b - a
        se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else float("nan")

        def cols(v):
            vals = [p[v]["scaled_columns"] for p in pairs if p[v]["scaled_columns"] is not None]
            return f"{np.mean(vals):.1f}" if vals else "-"

        lines.append(f"| {cell} | {len(pairs)} | {a.mean():.3f} | {b.mean():.3f} | {diff.mean():+.3f} ({se:.3f}) | "
                     f"{sum(p['main']['single'] for p in pairs)} | {sum(p['gate']['single'] for p in pairs)} | "
                     f"{cols('main')} | {cols('gate')} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", default="Males/scaled/0.5")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--rate", type=float, default=None, help="MAGNITUDE_CLEAR_RATE for the gate (default: library)")
    ap.add_argument("--rule", default=None, help="a candidate rule of _rule_scales (default: the library's)")
    ap.add_argument("--out", default="benchmarks/results/males20.jsonl")
    ap.add_argument("--table", default=None, help="print the paired table of this jsonl and exit")
    args = ap.parse_args(argv)
    if args.table:
        print(table(args.table, args.rate, args.rule))
        return
    run(args.cells.split(","), range(args.first_seed, args.first_seed + args.seeds), args.out, args.rate, args.rule)
    print(table(args.out, args.rate, args.rule))


if __name__ == "__main__":
    main()
