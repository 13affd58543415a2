"""Issue 16 (T2 on baseball): what limits UserLevelDPLogistic's defaults on bench_defaults' grouped panels.

``OMP_NUM_THREADS=1 python benchmarks/study_baseball_user_level.py --panels baseball,Males --enc raw,scaled --eps 1
--variants default,nf,m20,rand --seeds 5 --out <jsonl>``: UserLevelDPLogistic on bench_defaults.py's split
(benchmarks/_real_datasets.py ``train_test``) and encodings; ``raw`` = raw columns, nothing declared (bench_defaults'
raw "ours (defaults)"), ``scaled`` = public-range rows, nothing declared (its scaled "ours (defaults)"), ``decl`` =
public-range rows with ``data_norm=sqrt(2)``, ``max_items_per_user=rs.m`` declared (its "ours (declared)").
One JSON line per (variant, encoding, panel, epsilon) with the per-seed accuracies (seeds 0..k-1, the same
``random_state`` for every variant: paired). ``--refs`` prints non-private LogisticRegression on the rows each item
selection keeps (all rows, first m, a random m, user-weighted); ``--intercept``: the intercept diagnostic
(:func:`intercept_diag`). ``--summary <jsonl>``: paired gaps vs ``default``. Results: benchmarks/results/baseball_user_level.md.

Variants (public settings only): ``nf`` = the same fit at epsilon 1000 with every public rule read at the study's
epsilon (study_panels17.py); ``m<k>`` = ``max_items_per_user=k``; ``rand`` = ``item_selection="random"``;
``nf+<v>`` = ``<v>`` noise-free; ``p.<param>=<v>``: an estimator parameter; ``RR.<CONST>=<v>`` (also ``UL.``,
``C.``): a patched constant of _user_logistic_rules / _user_logistic / _centering; ``clipx<k>``: the DP-GD clip
times k; ``fbx<k>``: the centre's clip bound times k; ``hx<k>``: the horizon rule times k; ``wins<k>``: every mapped feature clipped at ``+-k c / sqrt(d)`` before
the row's norm clip (``c`` the fit's row scale; a public per-row map, a diagnostic). ``std`` (encoding):
the raw columns standardised by the training rows' exact mean and std (a non-private diagnostic); ``rawdrop<j>``:
the raw columns without column j (baseball's year is 9).
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
import study_panels17 as S  # noqa: E402

DELTA = 1e-6


def load(key):
    rs = R.load(key)
    tr, te = R.train_test(rs)
    out = {"name": key, "m": rs.m, "g": rs.groups[tr], "gt": rs.groups[te]}
    for enc in ("raw", "scaled"):
        X, y = R.encode(rs, enc)
        out[enc] = (X[tr], y[tr], X[te], y[te])
    # oracle (non-private) standardisation of the raw columns: a diagnostic of the column map's conditioning only
    Xtr, ytr, Xte, yte = out["raw"]
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    out["std"] = ((Xtr - mu) / sd, ytr, (Xte - mu) / sd, yte)
    return out


def _variant_params(name, ds, enc):
    params = {}
    for part in name.split("+"):
        if part in ("default", "nf"):
            continue
        if part.startswith(("clipx", "fbx", "hx", "wins")):
            continue
        if part.startswith("m") and part[1:].isdigit():
            params["max_items_per_user"] = int(part[1:])
        elif part == "rand":
            params["item_selection"] = "random"
        elif part.startswith("p.") and "=" in part:  # p.<param>=<value>: an estimator parameter
            key, _, val = part[2:].partition("=")
            params[key] = _value(val)
        elif "=" in part:  # <module>.<CONST>=<value>: a patched public constant (see _patches)
            continue
        else:
            raise ValueError(part)
    if enc == "decl":
        params.setdefault("max_items_per_user", ds["m"])
        params["data_norm"] = math.sqrt(2.0)
    return params


def _value(text):
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _patches(name):
    """``RR.<CONST>=v`` / ``UL.<CONST>=v`` / ``C.<CONST>=v``: constants of _user_logistic_rules / _user_logistic /
    _centering; ``clipx<k>``: the default DP-GD clip times k."""
    import sklearn_dpsco.linear_model._centering as C
    import sklearn_dpsco.linear_model._user_logistic as UL
    import sklearn_dpsco.linear_model._user_logistic_rules as RR

    mods = {"RR": RR, "UL": UL, "C": C}
    out = []
    for part in name.split("+"):
        if part.startswith("clipx"):
            out.append(S._clip(float(part[5:])))
        elif part.startswith("hx"):  # the horizon rule H (RR.sgd_horizon) times k: steps and momentum follow
            orig, k = RR.sgd_horizon, float(part[2:])
            out.append(S.patched(RR, "sgd_horizon", lambda *a, _o=orig, _k=k: _k * _o(*a)))
        elif part.startswith("wins"):  # each mapped feature clipped at +-k c / sqrt(d) before the row's norm clip
            orig, k = UL.make_user_data, float(part[4:])

            def wrapped(X, y, groups, _o=orig, _k=k, **kw):
                c = kw.get("intercept_scaling") or kw["data_norm"] / math.sqrt(2.0)  # c is (intercept_scaling = 1)
                t = _k * c / math.sqrt(np.asarray(X).shape[1])
                return _o(np.clip(np.asarray(X, dtype=float), -t, t), y, groups, **kw)

            out.append(S.patched(UL, "make_user_data", wrapped))
        elif part.startswith("fbx"):  # the centre's clip bound B times k
            orig, k = UL.feature_bound, float(part[3:])
            out.append(S.patched(UL, "feature_bound", lambda r, i, _o=orig, _k=k: _k * _o(r, i)))
        elif "=" in part and not part.startswith("p."):
            key, _, val = part.partition("=")
            mod, _, const = key.partition(".")
            out.append(S.patched(mods[mod], const, _value(val)))
    return out


def fit_one(ds, enc, eps, seed, name):
    from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic

    if enc.startswith("rawdrop"):  # raw columns without column j (a diagnostic of one column's conditioning)
        j = int(enc[7:])
        Xtr, ytr, Xte, yte = ds["raw"]
        Xtr, Xte = np.delete(Xtr, j, axis=1), np.delete(Xte, j, axis=1)
    else:
        Xtr, ytr, Xte, yte = ds[{"decl": "scaled"}.get(enc, enc)]
    params = _variant_params(name, ds, enc)
    nf = "nf" in name.split("+")
    est = UserLevelDPLogistic(epsilon=S.NF_EPS if nf else eps, delta=DELTA, random_state=seed,
                              accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0), **params)
    with contextlib.ExitStack() as st, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if nf:
            st.enter_context(S._rules_at(eps))
        for ctx in _patches(name):
            st.enter_context(ctx)
        est.fit(Xtr, ytr, ds["g"])
    return {"acc": float(est.score(Xte, yte)), "solver": est.solver_, "steps": est.sgd_iterations_,
            "momentum": est.sgd_momentum_}


def refs(ds, enc):
    from sklearn.linear_model import LogisticRegression

    Xtr, ytr, Xte, yte = ds["raw" if enc == "raw" else "scaled"]
    g = ds["g"]
    _, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
    out = {}
    for m in (5, 10, 20, 1000):
        keep = R.first_m_rows(g, m)
        lr = LogisticRegression(max_iter=5000).fit(Xtr[keep], ytr[keep])
        out[f"first{m}"] = float(lr.score(Xte, yte))
        rng = np.random.default_rng(0)
        perm = rng.permutation(len(g))
        keep_r = np.sort(perm[R.first_m_rows(g[perm], m)])
        lr = LogisticRegression(max_iter=5000).fit(Xtr[keep_r], ytr[keep_r])
        out[f"random{m}"] = float(lr.score(Xte, yte))
        kc = np.minimum(counts, m)[inv][keep]
        lr = LogisticRegression(max_iter=5000).fit(Xtr[keep], ytr[keep], sample_weight=1.0 / kc)
        out[f"first{m}_userweighted"] = float(lr.score(Xte, yte))
    maj = np.bincount(ytr.astype(int)).argmax()
    out["majority"] = float(np.mean(yte == maj))
    out["rows_per_user_median"] = float(np.median(counts))
    out["share_above_10"] = float(np.mean(counts > 10))
    return out


def intercept_diag(ds, enc, seeds):
    """Accuracy with the fitted intercept and with one re-fitted non-privately on the training rows (coefficients
    kept; a diagnostic of where the noise lands), at eps 1 (T = 30, beta 0.7685) and at eps 1000 with its own rules."""
    from scipy.optimize import minimize_scalar
    from sklearn_dpsco import BudgetAccountant, UserLevelDPLogistic

    Xtr, ytr, Xte, yte = ds[enc]
    for eps in (1.0, S.NF_EPS):
        acc, refit = [], []
        for s in seeds:
            est = UserLevelDPLogistic(epsilon=eps, delta=DELTA, random_state=s, sgd_iterations=30, sgd_momentum=0.7685,
                                      accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(Xtr, ytr, ds["g"])
            z, zt = Xtr @ est.coef_[0], Xte @ est.coef_[0]
            c = minimize_scalar(lambda b: np.mean(np.logaddexp(0, z + b) - ytr * (z + b)), bounds=(-50, 50),
                                method="bounded").x
            acc.append(np.mean(((zt + est.intercept_[0]) > 0) == yte))
            refit.append(np.mean(((zt + c) > 0) == yte))
        print(f"{enc} eps={eps:g}: fitted intercept {np.mean(acc):.4f}, re-fitted {np.mean(refit):.4f}")


def summary(path):
    recs = [json.loads(line) for line in open(path)]
    base = {(r["enc"], r["panel"], r["eps"]): np.asarray(r["acc"]) for r in recs if r["variant"] == "default"}
    for r in recs:
        b = base.get((r["enc"], r["panel"], r["eps"]))
        a = np.asarray(r["acc"])
        if b is None or r["variant"] == "default" or len(b) != len(a):
            print(f"{r['variant']:16s} {r['enc']:6s} eps={r['eps']:g} {r['panel']:9s} {a.mean():.4f} ± {a.std():.4f}")
            continue
        diff = a - b
        se = diff.std(ddof=1) / math.sqrt(len(diff))
        print(f"{r['variant']:16s} {r['enc']:6s} eps={r['eps']:g} {r['panel']:9s} {a.mean():.4f} "
              f"(default {b.mean():.4f}) gap {diff.mean():+.4f} ± {se:.4f}")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--variants", default="default")
    p.add_argument("--enc", default="raw")
    p.add_argument("--eps", default="1")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--panels", default="baseball")
    p.add_argument("--out")
    p.add_argument("--refs", action="store_true")
    p.add_argument("--summary")
    p.add_argument("--intercept", action="store_true", help="the intercept diagnostic (intercept_diag)")
    a = p.parse_args(argv)
    if a.summary:
        summary(a.summary)
        return
    data = {k: load(k) for k in a.panels.split(",")}
    if a.intercept:
        for ds in data.values():
            for enc in a.enc.split(","):
                intercept_diag(ds, enc, range(a.seeds))
        return
    if a.refs:
        for k, ds in data.items():
            for enc in a.enc.split(","):
                print(k, enc, json.dumps(refs(ds, enc)))
        return
    t0 = time.perf_counter()
    with open(a.out, "a") as fh:
        for enc in a.enc.split(","):
            for eps in [float(e) for e in a.eps.split(",")]:
                for key, ds in data.items():
                    for name in a.variants.split(","):
                        runs = [fit_one(ds, enc, eps, s, name) for s in range(a.seeds)]
                        acc = [r["acc"] for r in runs]
                        rec = {"variant": name, "enc": enc, "panel": key, "eps": eps, "acc": acc,
                               "solver": runs[0]["solver"], "steps": runs[0]["steps"], "momentum": runs[0]["momentum"]}
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(f"{name:16s} {enc:6s} eps={eps:g} {key:9s} {np.mean(acc):.4f} ± {np.std(acc):.4f} "
                              f"{rec['solver']} T={rec['steps']} b={rec['momentum']} ({time.perf_counter() - t0:.0f}s)",
                              flush=True)


if __name__ == "__main__":
    main()
