"""Study (choiceshare): candidate shares for AdaSSP's private ridge choice at small budgets, on every
regression set of bench_defaults (raw and scaled) and study_negative_r2 (as benchmarks/study_centre_share.py).

Rules (monkeypatched; public facts only: n and AdaSSP's epsilon):
  base   main (the choice on a fixed 10 % share, from n eps 0.1 >= 100 ranks)
  new    the library as installed
  ssrNN  the choice's share buys 100 ranks: share = min(NN/100, max(0.10, 100 / (n eps))), applies from
         n eps NN/100 >= 100
  smrK   fixed 10 % share, from K ranks (n eps 0.1 >= K)
  meanR  (a lead, not the choice) the label mean's share buys R ranks instead of 50:
         min(0.25, max(0.05, R / (n eps))); same rule for when it applies; the choice as on main
Usage: EPS=0.5,1,2 OMP_NUM_THREADS=1 python benchmarks/study_choice_share.py seeds rules [sets] [modes] [out.json]
A (set, mode, eps, rule) whose seed-0 fit is bit-identical to base is reported "same" (public rules: same
plan, same draws) and not run further.
"""
import json, math, os, sys, warnings
import numpy as np
from pathlib import Path
warnings.simplefilter("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_datasets as R
from sklearn_dpsco import DPLinearRegressor
from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline
import sklearn_dpsco._solvers._adassp as _A
import sklearn_dpsco._solvers._adassp_selection as _S
import sklearn_dpsco._solvers._builders._least_squares as _B

ORIG = dict(share=_A.selection_share, applies=_B.selection_applies, mean=_A.mean_share)
EPS = tuple(float(e) for e in os.environ.get("EPS", "0.5,1,2").split(","))
BASE_SHARE, BASE_RANKS = 0.1, 100.0


def set_rule(rule):
    _A.selection_share, _B.selection_applies, _A.mean_share = ORIG["share"], ORIG["applies"], ORIG["mean"]
    if rule == "new":
        return
    if rule == "base":
        _A.selection_share = lambda n, eps: BASE_SHARE
        _B.selection_applies = lambda n, d, eps: _S._share_applies(n, d, eps, BASE_SHARE, BASE_RANKS,
                                                                   _S.SELECTION_BELOW)
    elif rule.startswith("ssr"):
        cap = int(rule[3:]) / 100.0

        def share(n, eps):
            ne = n * eps
            return min(cap, max(BASE_SHARE, BASE_RANKS / ne)) if math.isfinite(ne) and ne > 0 else BASE_SHARE
        _A.selection_share = share
        _B.selection_applies = lambda n, d, eps: _S._share_applies(n, d, eps, cap, BASE_RANKS - 1e-9,
                                                                   _S.SELECTION_BELOW)
    elif rule.startswith("smr"):
        k = float(rule[3:])
        _A.selection_share = lambda n, eps: BASE_SHARE
        _B.selection_applies = lambda n, d, eps: _S._share_applies(n, d, eps, BASE_SHARE, k, _S.SELECTION_BELOW)
    elif rule.startswith("mean"):
        set_rule("base")
        r = float(rule[4:])
        _A.mean_share = lambda n, eps: min(_S.MEAN_SHARE_CAP, max(_S.MEAN_SHARE, r / (n * eps)))
    else:
        raise ValueError(rule)


ALL = R.REGRESSION_STUDY_SETS
load = R.regression_study_split


def fit(mode, eps, seed, Xtr, ytr):
    if mode == "lin":
        m = DPLinearRegressor(epsilon=eps, random_state=seed)
    else:
        m = make_dp_pipeline(DPStandardScaler(random_state=seed), DPLinearRegressor(random_state=seed), epsilon=eps)
    return m.fit(Xtr, ytr)


def main():
    seeds = int(sys.argv[1]); rules = sys.argv[2].split(",")
    sets = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] != "all" else ALL
    modes = sys.argv[4].split(",") if len(sys.argv) > 4 else ["lin"]
    out = {}
    for name in sets:
        Xtr, ytr, Xte, yte = load(name)
        for mode in modes:
            for eps in EPS:
                set_rule("base")
                b0 = fit(mode, eps, 0, Xtr, ytr).score(Xte, yte)
                firsts = {}
                for rule in rules:
                    set_rule(rule)
                    firsts[rule] = fit(mode, eps, 0, Xtr, ytr).score(Xte, yte)
                line = f"{name:20s} {mode:4s} eps{eps:<4}"
                if all(f == b0 for f in firsts.values()):
                    set_rule("base")
                    print(line + f" base(seed0) {b0:+.4f} | all same", flush=True)
                    continue
                set_rule("base")
                base = [b0] + [fit(mode, eps, s, Xtr, ytr).score(Xte, yte) for s in range(1, seeds)]
                line += f" base {np.mean(base):+.4f}±{np.std(base, ddof=1)/math.sqrt(seeds):.4f}"
                out[f"{name}|{mode}|{eps}|base"] = base
                for rule in rules:
                    if firsts[rule] == b0:
                        line += f" | {rule} same"
                        continue
                    set_rule(rule)
                    sc = [firsts[rule]] + [fit(mode, eps, s, Xtr, ytr).score(Xte, yte) for s in range(1, seeds)]
                    out[f"{name}|{mode}|{eps}|{rule}"] = sc
                    d = np.array(sc) - np.array(base)
                    t = d.mean() / (d.std(ddof=1) / math.sqrt(seeds) + 1e-300)
                    line += f" | {rule} {np.mean(sc):+.4f} d{d.mean():+.4f} t{t:+.1f}"
                set_rule("base")
                print(line, flush=True)
    if len(sys.argv) > 5:
        json.dump(out, open(sys.argv[5], "w"))


main()
