"""Issue 16, follow-up: label bound rules that keep LABEL_UPPER's protection on atomic labels and recover its cost
on continuous labels. Paired seeds against the previous rule (LABEL_SPREAD, 3 x the split median, weight 1).

    python benchmarks/study_label_atoms2.py cont RULE[,RULE...] [seeds] [eps,...]   # continuous sets, paired diffs
    python benchmarks/study_label_atoms2.py atoms RULE[,RULE...] [seeds] [eps]       # study_label_atoms.py cases
    python benchmarks/study_label_atoms2.py synth RULE[,RULE...] [seeds] [eps]       # its synthetic cases only
    python benchmarks/study_label_atoms2.py tails | jtails                            # exact laws (no sampling)

``REF=upper`` pairs against the current rule instead of the previous one (same releases for margin variants).

Rules are ScaleTargets monkeypatched into DPLinearRegressor's label bound (_least_squares.LABEL_UPPER): ``prev``
(LABEL_SPREAD), ``upper`` (LABEL_UPPER), ``spread_w3`` (LABEL_SPREAD on LABEL_UPPER's weight 3: the share alone),
``upper_wW`` / ``upper_mM`` (LABEL_UPPER at weight W / margin M: upper_m135 = 1.35), ``q82_w25`` (level 0.82, margin
1.45, weight 2.5) and ``joint_wW`` (the centre and the bound selected jointly on the centre's and W bound parts:
benchmarks/_joint_label.py, a study prototype, not a library mechanism). Results: benchmarks/results/label_atoms.md
("Follow-up") and label_atoms2_raw.txt.
"""

import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sklearn_dpsco.linear_model._auto_scales as A  # noqa: E402
import sklearn_dpsco.linear_model._least_squares as LS  # noqa: E402
from sklearn_dpsco import BudgetAccountant, DPLinearRegressor  # noqa: E402


def _rules():
    up = A.LABEL_UPPER
    r = {"prev": A.LABEL_SPREAD, "upper": up}
    r["spread_w3"] = dataclasses.replace(A.LABEL_SPREAD, weight=3.0)
    r["upper_w1"] = dataclasses.replace(up, weight=1.0)
    r["upper_w2"] = dataclasses.replace(up, weight=2.0)
    r["upper_m2"] = dataclasses.replace(up, margin=2.0)
    for m in (1.0, 1.1, 1.2, 1.3, 1.35):
        r[f"upper_m{m:g}".replace(".", "")] = dataclasses.replace(up, margin=m)
    r["upper_w25"] = dataclasses.replace(up, weight=2.5)
    r["q82_w25"] = dataclasses.replace(up, q=0.82, margin=1.45, weight=2.5)
    import _joint_label as J

    J.install_rows()  # both joint prototypes (the plain rules are released as before)
    for w in (1.0, 1.5, 2.0, 2.5, 3.0):
        r[f"joint_w{w:g}".replace(".", "")] = J.joint_target(w)
        r[f"rowjoint_w{w:g}".replace(".", "")] = J.joint_row_target(w)
    for name in dir(A):  # candidate rules defined in the library (if any)
        if name.startswith("LABEL_RULE_"):
            r[name[len("LABEL_RULE_"):].lower()] = getattr(A, name)
    return r


RULES = _rules()


def use(rule):
    LS.LABEL_UPPER = RULES[rule]


def cont_sets():
    import _real_datasets as R
    import bench_fresh as B

    for k in ("SLID", "OFP", "Treatment"):
        rs = B.SETS[k]()
        tr, te = B.split(rs)
        yield k, rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]
    yield ("PSID", *R.extra_split("PSID"))
    for k in ("Computers", "Wages"):
        yield (k + "/scaled", *R.split(k, "scaled"))


def fit_score(Xtr, ytr, Xte, yte, eps, seed):
    est = DPLinearRegressor(epsilon=eps, random_state=seed, accountant=BudgetAccountant(float("inf"), 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    return est.score(Xte, yte), est


def cont(rules, seeds, epsilons, ref="prev"):
    print(f"paired vs {ref}, {seeds} seeds: mean diff (s.e.) [#better/#worse]; {ref} mean")
    for name, Xtr, ytr, Xte, yte in cont_sets():
        ytr, yte = np.asarray(ytr, float), np.asarray(yte, float)
        for eps in epsilons:
            sc = {}
            for rule in [ref, *rules]:
                use(rule)
                sc[rule] = np.array([fit_score(Xtr, ytr, Xte, yte, eps, s)[0] for s in range(seeds)])
            cells = []
            for rule in rules:
                d = sc[rule] - sc[ref]
                cells.append(f"{rule}: {d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(seeds):.4f}) "
                             f"[{(d > 1e-12).sum()}/{(d < -1e-12).sum()}]")
            print(f"{name:16s} eps {eps:<4g} {ref} {sc[ref].mean():.4f} | " + " | ".join(cells), flush=True)


def atoms(rules, seeds, eps):
    import study_label_atoms as S

    print(f"epsilon {eps}; {seeds} seeds; neg share, median, worst")
    for name, load, real in S.cases(True):
        if real and not name.startswith("HI"):
            continue
        if name.startswith("binary") and name.split()[1] in ("10%", "20%", "80%", "90%"):
            continue
        Xtr, ytr, Xte, yte = load()
        ytr, yte = np.asarray(ytr, float), np.asarray(yte, float)
        cells = []
        for rule in ["prev", *rules]:
            use(rule)
            sc = np.array([DPLinearRegressor(epsilon=eps, random_state=s).fit(Xtr, ytr).score(Xte, yte)
                           for s in range(seeds)])
            cells.append(f"{rule}: {np.mean(sc < 0):4.0%} {np.median(sc):7.4f} {sc.min():10.4g}")
        print(f"{name:28s} " + " | ".join(cells), flush=True)


def synth(rules, seeds, eps):
    """The synthetic atomic cases (study_label_atoms.py: n 3000, d 4, training R^2) on many seeds."""
    import study_label_atoms as S

    print(f"eps {eps}, {seeds} seeds: neg share, share below 0.05, median, mean, worst")
    for case in [("binary", 0.3), ("binary", 0.5), ("binary", 0.7), ("count", 0), ("ordinal", 0)]:
        X, y, _, _ = S.synthetic(*case)
        for rule in rules:
            use(rule)
            sc = np.array([DPLinearRegressor(epsilon=eps, random_state=s).fit(X, y).score(X, y) for s in range(seeds)])
            print(f"{case[0]} {case[1]:.0%}".ljust(14), rule.ljust(10), f"neg {np.mean(sc < 0):4.0%} <0.05 "
                  f"{np.mean(sc < 0.05):4.0%} median {np.median(sc):.4f} mean {sc.mean():.4f} worst {sc.min():.4g}",
                  flush=True)


def main():
    warnings.simplefilter("ignore")
    mode, rules = sys.argv[1], (sys.argv[2].split(",") if len(sys.argv) > 2 else [])
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    if mode == "tails":
        return tails()
    if mode == "jtails":
        return joint_tails()
    if mode == "rtails":
        return row_joint_tails()
    if mode == "cont":
        epsilons = [float(e) for e in sys.argv[4].split(",")] if len(sys.argv) > 4 else [0.5, 1.0, 2.0]
        cont(rules, seeds, epsilons, os.environ.get("REF", "prev"))
    elif mode == "synth":
        synth(rules, seeds, float(sys.argv[4]) if len(sys.argv) > 4 else 1.0)
    else:
        atoms(rules, seeds, float(sys.argv[4]) if len(sys.argv) > 4 else 1.0)



def tails(ranks_list=(50, 100, 125, 150)):
    """Exact laws (no sampling) of the label bound's release given the centre at the labels' median: P(B > 10 sd)
    (catastrophic: the solver's noise grows with B) and P(B < sd / 10) (the model predicts the centre), sd = the
    labels' standard deviation; per rule (q, ties, margin) and rank budget n epsilon_B."""
    import study_label_atoms as S

    from sklearn_dpsco._mechanisms._quantile import QuantileMechanism
    from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid

    grid = ScaleGrid()
    pts = grid.points
    labels = []
    for name, X, y, _, _ in cont_sets():
        labels.append((name, np.asarray(y, float)))
    for name, load, real in S.cases(False):
        labels.append((name, np.asarray(load()[1], float)))
    rules = [("split median x3", 0.5, True, 3.0), ("q0.8 ties0 x1.5", 0.8, False, 1.5),
             ("q0.82 ties0 x1.45", 0.82, False, 1.45), ("q0.85 ties0 x1.4", 0.85, False, 1.4)]
    print("P(B > 10 sd) / P(B < sd/10) at n epsilon_B ranks (centre = the labels' median, exactly)")
    print(f"{'labels':28s} {'rule':18s} " + " ".join(f"{f'ranks {r}':>19s}" for r in ranks_list))
    for name, y in labels:
        c = float(np.quantile(y, 0.5, method="inverted_cdf"))
        sd = float(np.std(y))
        data = (np.zeros((y.size, 1)), [y], None)
        for rname, q, split, margin in rules:
            vals = A.label_deviations(data, {"label_center": c}) if split else A.centre_deviations(data, {"label_center": c})
            vals = A.finite(vals)
            floor = float(pts[pts > 0][0])
            B = margin * np.maximum(pts, floor)
            cells = []
            for r in ranks_list:
                pmf = QuantileMechanism(q, r / y.size, grid).pmf(vals)
                cells.append(f"{pmf[B > 10 * sd].sum():9.1e} {pmf[B < sd / 10].sum():9.1e}")
            print(f"{name:28s} {rname:18s} " + " ".join(cells), flush=True)


def joint_tails(ranks_list=(150, 175, 200)):
    """Exact permute-and-flip laws of the joint (centre, bound) release (benchmarks/_joint_label.py) on the fine
    centre grid: P(B > 10 sd), P(B < sd / 10) and P(|c - median| > 10 sd) (and > 1 sd), against the separate
    releases (the centre alone at 100 ranks, the bound alone at 150 with the centre at the median: tails())."""
    import _joint_label as J
    import study_label_atoms as S

    cpts, tpts = A.FINE_CENTRE_GRID.points, A.ScaleGrid().points
    floor = float(tpts[tpts > 0][0])
    labels = [(name, np.asarray(y, float)) for name, _, y, _, _ in cont_sets()]
    labels += [(name, np.asarray(load()[1], float)) for name, load, _ in S.cases(False)]
    print("joint: P(B > 10 sd) P(B < sd/10) P(|c - med| > 10 sd) P(> 1 sd) at n epsilon ranks; "
          "separate: centre alone at 100 ranks")
    for name, y in labels:
        sd, med = float(np.std(y)), float(np.quantile(y, 0.5, method="inverted_cdf"))
        U = J.joint_utility(y, cpts, tpts)
        B = 1.5 * np.maximum(tpts, floor)
        far = np.abs(cpts - med) / sd
        cells = []
        for r in ranks_list:
            P = J.pf_pmf_grouped(0.5 * (r / y.size) * (U.max() - U))
            pb, pc = P.sum(0), P.sum(1)
            cells.append(f"{pb[B > 10 * sd].sum():8.1e} {pb[B < sd / 10].sum():8.1e} {pc[far > 10].sum():8.1e} "
                         f"{pc[far > 1].sum():8.1e}")
        uc = J._utility(np.searchsorted(np.sort(y), cpts, side="right"), y.size, 0.5)
        pc = J.pf_pmf_grouped(0.5 * (100 / y.size) * (uc.max() - uc))
        print(f"{name:28s} " + " | ".join(f"r{r}: {c}" for r, c in zip(ranks_list, cells))
              + f" | centre@100 {pc[far > 10].sum():8.1e} {pc[far > 1].sum():8.1e}", flush=True)


def row_joint_tails(ranks_list=(125, 150, 175, 200)):
    """Exact laws of the joint (row bound, label bound) selection (benchmarks/_joint_label.py, the centre at the
    labels' median): P(B > 10 sd), P(B < sd / 10), P(row release > 8 x / < 1/8 x the median row norm); the row
    bound alone at its 50 ranks for comparison (the bound alone: tails())."""
    import _joint_label as J
    import study_label_atoms as S

    from sklearn_dpsco._mechanisms._quantile import QuantileMechanism
    from sklearn_dpsco._solvers import safe_row_norms

    grid = A.ScaleGrid()
    pts = grid.points
    floor = float(pts[pts > 0][0])
    sets = [(name, X, y) for name, X, y, _, _ in cont_sets()]
    sets += [(name, *load()[:2]) for name, load, _ in S.cases(False)]
    print("row x bound joint: P(B > 10 sd) P(B < sd/10) P(row > 8 med) P(row < med/8) at n epsilon ranks | row alone @50")
    for name, X, y in sets:
        X, y = np.asarray(X, float), np.asarray(y, float)
        sd, med = float(np.std(y)), float(np.quantile(y, 0.5, method="inverted_cdf"))
        norms = safe_row_norms(X)
        nmed = float(np.quantile(norms, 0.5, method="inverted_cdf"))
        devs = A.finite(A.centre_deviations((X, [y], None), {"label_center": med}))
        ur = np.array(QuantileMechanism(0.5, 1.0, grid).utility(norms), dtype=np.int64)
        ut = np.array(QuantileMechanism(0.8, 1.0, grid).utility(devs), dtype=np.int64)
        U = np.minimum(ur[:, None], ut[None, :])
        B = 1.5 * np.maximum(pts, floor)
        cells = []
        for r in ranks_list:
            P = J.pf_pmf_grouped(0.5 * (r / y.size) * (U.max() - U))
            pr, pb = P.sum(1), P.sum(0)
            cells.append(f"{pb[B > 10 * sd].sum():8.1e} {pb[B < sd / 10].sum():8.1e} {pr[pts > 8 * nmed].sum():8.1e} "
                         f"{pr[pts < nmed / 8].sum():8.1e}")
        alone = J.pf_pmf_grouped(0.5 * (50 / y.size) * (ur.max() - ur))
        print(f"{name:28s} " + " | ".join(f"r{r}: {c}" for r, c in zip(ranks_list, cells))
              + f" | row@50 {alone[pts > 8 * nmed].sum():8.1e} {alone[pts < nmed / 8].sum():8.1e}", flush=True)


if __name__ == "__main__":
    main()
