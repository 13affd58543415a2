"""Issue 17 (panels19): does an in-fit private selection among 2-3 configurations pay on the real panels?

``OMP_NUM_THREADS=1 python benchmarks/study_panels19.py --cands default,row0.1 --enc raw,scaled --eps 1
--out <jsonl>``: for every panel (bench_panels' seven and bench_fresh's three on raw columns, study_panels18's
encodings and seeds) and seed, the pieces of two selection designs, each fit scored on the test users:

* ``full``: every candidate fitted on all training users at the whole budget (the oracle's menu; ``full`` of
  ``default`` is main's default, seed for seed);
* design A (split, no refit): the training users split by a seeded permutation of the user ids into a training
  part (1 - q) and a held-in part (q); every candidate fitted on the training part at rho / K (K candidates
  compose); the held-in users score every candidate (per user: the fraction of its first m rows predicted
  right, in [0, 1], so one user moves a score by at most 1); the exponential mechanism on the held-in part
  (disjoint users, so it composes in parallel with the fits; optimistic for replace-one neighbours, whose
  replaced and new user may fall in different parts) at eps0 = sqrt(8 rho) (bounded range: eps0^2 / 8 zCDP)
  picks one, which is released;
* design B (select, then refit): every candidate fitted on the training part at s rho / K, the exponential
  mechanism on the held-in users at eps0 = sqrt(8 s rho), the winner refitted on all users at (1 - s) rho
  (total (1 - s) rho + max(s rho, s rho) = rho, again with the optimistic parallel step).

The selection's noise is not drawn: the record holds the held-in scores and every candidate's accuracy, so
the expected accuracy of each design is computed exactly (``--summary``). Variants are study_panels18's
(public rule constants patched for the fit, restored after it). Budget shares: the fit at share f of rho runs
at ``epsilon = zcdp_epsilon(f rho, delta)`` (its own rules read at that epsilon, as a library fit would).
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
import _real_datasets as R  # noqa: E402
import bench_panels as B  # noqa: E402
import study_panels18 as P18  # noqa: E402

FRESH = P18.FRESH


def _eps_at(eps, share):
    from sklearn_dpsco.accounting._calibration import zcdp_epsilon, zcdp_rho

    if share == 1.0:
        return eps
    return float(zcdp_epsilon(share * zcdp_rho(eps, B.DELTA), B.DELTA))


def fit(variant, ds, enc, eps, seed, users=None):
    """The variant's estimator fitted on the training users ``users`` (all if None)."""
    from sklearn_dpsco import BudgetAccountant
    from sklearn_dpsco.linear_model import UserLevelDPLogistic

    ctx = P18.VARIANTS[variant][0]
    X = ds["Xraw"] if enc == "raw" else ds["X"]
    y, g = ds["y"], ds["g"]
    if users is not None:
        keep = np.isin(g, users)
        X, y, g = X[keep], y[keep], g[keep]
    dn = math.sqrt(2.0) if enc == "scaled" else None
    est = UserLevelDPLogistic(epsilon=eps, delta=B.DELTA, max_items_per_user=ds["m"], random_state=seed,
                              data_norm=dn, accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
    with contextlib.ExitStack() as st, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if ctx is not None:
            st.enter_context(ctx())
        est.fit(X, y, g)
    return est


def test_acc(est, ds, enc):
    Xt = ds["Xtraw"] if enc == "raw" else ds["Xt"]
    return float(est.score(Xt, ds["yt"]))


def heldin_score(est, ds, enc, users):
    """Sum over held-in users of the fraction of their first m rows predicted right (sensitivity 1)."""
    X = ds["Xraw"] if enc == "raw" else ds["X"]
    keep = np.flatnonzero(np.isin(ds["g"], users))
    first = keep[R.first_m_rows(ds["g"][keep], ds["m"])]
    right = (est.predict(X[first]) == ds["y"][first]).astype(float)
    _, inv, cnt = np.unique(ds["g"][first], return_inverse=True, return_counts=True)
    return float(np.sum(np.bincount(inv, weights=right) / cnt))


def run_cell(cands, ds, enc, eps, seed, q, shares):
    K = len(cands)
    users = np.unique(ds["g"])
    perm = np.random.default_rng(10_000 + seed).permutation(users)
    n_hold = int(round(q * users.size))
    hold, train = perm[:n_hold], perm[n_hold:]
    rec = {"seed": seed, "n_users": int(users.size), "n_hold": int(n_hold), "full": {}, "A": {}, "B": {}}
    for c in cands:
        rec["full"][c] = test_acc(fit(c, ds, enc, eps, seed), ds, enc)
        eA = fit(c, ds, enc, _eps_at(eps, 1.0 / K), seed, train)
        rec["A"][c] = {"acc": test_acc(eA, ds, enc), "score": heldin_score(eA, ds, enc, hold)}
    for s in shares:
        rs = {}
        for c in cands:
            eB = fit(c, ds, enc, _eps_at(eps, s / K), seed, train)
            eR = fit(c, ds, enc, _eps_at(eps, 1.0 - s), seed)
            rs[c] = {"score": heldin_score(eB, ds, enc, hold), "refit_acc": test_acc(eR, ds, enc)}
        rec["B"][str(s)] = rs
    return rec


def em_probs(scores, eps0):
    s = np.asarray(scores, float)
    if not np.isfinite(eps0):
        p = (s == s.max()).astype(float)
        return p / p.sum()
    z = eps0 * (s - s.max()) / 2.0
    p = np.exp(z)
    return p / p.sum()


def summary(path):
    from sklearn_dpsco.accounting._calibration import zcdp_rho

    recs = [json.loads(line) for line in open(path)]
    groups = {}
    for r in recs:
        groups.setdefault((r["cands"], r["enc"], r["eps"], r["panel"]), []).append(r)
    for (cands, enc, eps, panel), rows in sorted(groups.items()):
        cl = cands.split(",")
        rho = zcdp_rho(eps, B.DELTA)
        out = {}
        base = np.array([r["full"]["default"] for r in rows])
        for c in cl:
            out[f"full:{c}"] = np.array([r["full"][c] for r in rows])
        out["oracle-per-seed"] = np.array([max(r["full"][c] for c in cl) for r in rows])
        for lab, e0 in (("A", math.sqrt(8 * rho)), ("A-nonpriv", math.inf)):
            out[lab] = np.array([
                float(np.dot(em_probs([r["A"][c]["score"] for c in cl], e0), [r["A"][c]["acc"] for c in cl]))
                for r in rows])
        out["A:default-only"] = np.array([r["A"]["default"]["acc"] for r in rows])
        for s in rows[0]["B"]:
            e0 = math.sqrt(8 * float(s) * rho)
            for lab, ee in ((f"B{s}", e0), (f"B{s}-nonpriv", math.inf)):
                out[lab] = np.array([
                    float(np.dot(em_probs([r["B"][s][c]["score"] for c in cl], ee),
                                 [r["B"][s][c]["refit_acc"] for c in cl])) for r in rows])
            out[f"B{s}:default-only"] = np.array([r["B"][s]["default"]["refit_acc"] for r in rows])
            out[f"B{s}:P(pick default)"] = np.array([
                em_probs([r["B"][s][c]["score"] for c in cl], e0)[0] for r in rows])
        print(f"== {panel} {enc} eps={eps:g} cands={cands} seeds={len(rows)} held-in users={rows[0]['n_hold']} "
              f"default {base.mean():.3f}")
        for lab, v in out.items():
            if "P(" in lab:
                print(f"   {lab:28s} {v.mean():.2f}")
                continue
            d = v - base
            print(f"   {lab:28s} {v.mean():.3f}  gap {d.mean():+.4f} ± {d.std(ddof=1) / math.sqrt(len(d)):.4f}")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--cands", default="default,row0.1")
    p.add_argument("--enc", default="raw,scaled")
    p.add_argument("--eps", default="1")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--q", type=float, default=0.2, help="held-in share of the users")
    p.add_argument("--shares", default="0.2", help="design B's selection shares s of rho")
    p.add_argument("--panels", default=",".join(list(B.PANELS) + ["synthetic", *FRESH]))
    p.add_argument("--out")
    p.add_argument("--summary")
    a = p.parse_args(argv)
    if a.summary:
        summary(a.summary)
        return
    cands = a.cands.split(",")
    assert cands[0] == "default"
    shares = [float(s) for s in a.shares.split(",") if s]
    datasets = {k: (B.synthetic() if k == "synthetic" else P18.fresh_panel(k) if k in FRESH else B.load_panel(k))
                for k in a.panels.split(",")}
    t0 = time.perf_counter()
    with open(a.out, "a") as fh:
        for enc in a.enc.split(","):
            for eps in [float(e) for e in a.eps.split(",")]:
                for key, ds in datasets.items():
                    if enc != "raw" and ds["X"] is None:
                        continue
                    accs = []
                    for s in range(a.seeds):
                        rec = run_cell(cands, ds, enc, eps, s, a.q, shares)
                        rec.update({"cands": a.cands, "enc": enc, "eps": eps, "panel": key, "q": a.q})
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        accs.append(rec["full"]["default"])
                    print(f"{enc:7s} eps={eps:g} {key:9s} default {np.mean(accs):.3f} ({time.perf_counter() - t0:.0f}s)",
                          flush=True)



def table(path, cands):
    """One markdown row per (encoding, panel): paired gaps against main's default (mean ± s.e. over seeds)."""
    from sklearn_dpsco.accounting._calibration import zcdp_rho

    recs = [json.loads(line) for line in open(path) if json.loads(line)["cands"] == cands]
    cl = cands.split(",")
    groups = {}
    for r in recs:
        groups.setdefault((r["eps"], r["enc"], r["panel"]), []).append(r)
    shares = list(recs[0]["B"])
    head = ["eps", "enc", "panel", "held-in", "default", "best candidate (full)", "A", "A non-private sel."]
    head += [f"B s={s}" for s in shares] + [f"B s={shares[0]} non-private sel.", "P(default) B", "median |Δscore| B"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))

    def g(v, b):
        d = np.asarray(v) - b
        return f"{d.mean():+.3f} ± {d.std(ddof=1) / math.sqrt(len(d)):.3f}"

    for (eps, enc, panel), rows in sorted(groups.items()):
        rho = zcdp_rho(eps, B.DELTA)
        b = np.array([r["full"]["default"] for r in rows])
        best = max(cl[1:], key=lambda c: np.mean([r["full"][c] for r in rows]))
        cells = [f"{eps:g}", enc, panel, str(rows[0]["n_hold"]), f"{b.mean():.3f}",
                 f"{best} {g([r['full'][best] for r in rows], b)}"]
        for e0 in (math.sqrt(8 * rho), math.inf):
            cells.append(g([float(np.dot(em_probs([r["A"][c]["score"] for c in cl], e0), [r["A"][c]["acc"] for c in cl]))
                            for r in rows], b))

        def bval(s, e0):
            return [float(np.dot(em_probs([r["B"][s][c]["score"] for c in cl], e0),
                                 [r["B"][s][c]["refit_acc"] for c in cl])) for r in rows]

        for s in shares:
            cells.append(g(bval(s, math.sqrt(8 * float(s) * rho)), b))
        s0 = shares[0]
        cells.append(g(bval(s0, math.inf), b))
        e0 = math.sqrt(8 * float(s0) * rho)
        cells.append(f"{np.mean([em_probs([r['B'][s0][c]['score'] for c in cl], e0)[0] for r in rows]):.2f}")
        dsc = [abs(r["B"][s0][cl[1]]["score"] - r["B"][s0]["default"]["score"]) for r in rows]
        cells.append(f"{np.median(dsc):.1f}")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__" and "--table" in sys.argv:
    i = sys.argv.index("--table")
    table(sys.argv[i + 1], sys.argv[i + 2])
    sys.exit(0)


if __name__ == "__main__":
    main()
