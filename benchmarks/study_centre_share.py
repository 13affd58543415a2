"""Study (centreshare, issue 16): candidate rules for the "auto" label centre / label mean of DPLinearRegressor
at small budgets, on every regression set of bench_defaults (raw and scaled) and study_negative_r2.

Rules (monkeypatched; public facts only):
  base   main before branch centreshare (fixed 5 % share for the label mean, from 50 ranks)
  new    the library as installed (branch centreshare: msr25)
  mr30   label mean from MEAN_MIN_RANKS = 30 (n eps_AdaSSP MEAN_SHARE >= 30)
  mr20   ... from 20
  msr    the mean's share buys 50 ranks: share = clip(50 / (n eps_AdaSSP), 0.05, MSR_CAP=0.15)
  msrNN  ... with MSR_CAP = NN / 100
  cx2    the label centre gets two estimates' parts (share = default_scale_share(n, eps, k + 1))
Usage: OMP_NUM_THREADS=1 python benchmarks/study_centre_share.py seeds rules [sets] [modes] > out
A (set, eps, rule) whose seed-0 fit is bit-identical to base is reported "same" (the rules are public:
same plan, same draws) and not run further.
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
import sklearn_dpsco.linear_model._auto_scales as _AS
from sklearn_dpsco._budget import Budget

ORIG = dict(mmr=_S.MEAN_MIN_RANKS, applies=_B.recentre_applies, share=_A.mean_share,
            dss=_AS.default_scale_share, mechs=_AS.ScalePlan.mechanisms)
MSR_CAP = _S.MEAN_SHARE_CAP
EPS = tuple(float(e) for e in os.environ.get("EPS", "0.5,1,2").split(","))


def msr_share(n, eps):
    return min(MSR_CAP, max(_S.MEAN_SHARE, 50.0 / (n * eps)))


def set_rule(rule):
    """``base``: main before this branch (a fixed 5 % share, from 50 ranks); ``new``: the library as installed."""
    global MSR_CAP
    _S.MEAN_MIN_RANKS = ORIG["mmr"]; _B.recentre_applies = ORIG["applies"]; _A.mean_share = ORIG["share"]
    _AS.default_scale_share = ORIG["dss"]; _AS.ScalePlan.mechanisms = ORIG["mechs"]
    if rule == "new":
        return
    if rule != "cx2" and not rule.startswith("msr"):
        # the fixed 5 % share of main (df6cd2e), from MEAN_MIN_RANKS (50, or mrNN) ranks
        _S.MEAN_MIN_RANKS = float(rule[2:]) if rule.startswith("mr") else ORIG["mmr"]
        _B.recentre_applies = lambda n, d, eps: _S._share_applies(n, d, eps, _S.MEAN_SHARE, _S.MEAN_MIN_RANKS,
                                                                  _S.MEAN_BELOW)
        _A.mean_share = lambda n, eps: _S.MEAN_SHARE
        assert rule == "base" or rule.startswith("mr"), rule
    elif rule.startswith("msr"):
        MSR_CAP = int(rule[3:] or 15) / 100.0
        _B.recentre_applies = lambda n, d, eps: _S._share_applies(n, d, eps, msr_share(n, eps), 50.0 - 1e-9,
                                                                  _S.MEAN_BELOW)
        _A.mean_share = msr_share
    elif rule == "cx2":
        set_rule("base")
        def dss(n, eps, k):
            return ORIG["dss"](n, eps, k + 1 if k == 3 else k)
        def mechs(self):
            k = len(self.targets)
            if k != 3 or not any(t.signed for t in self.targets):
                return ORIG["mechs"](self)
            e = self.budget.epsilon / (k + 1)
            return [_AS.quantile_mechanism_for(t.q, Budget((2 if t.signed else 1) * e, 0.0, self.budget.noise),
                                               self.signed_grid if t.signed else self.grid, self.method)
                    for t in self.targets]
        _AS.default_scale_share, _AS.ScalePlan.mechanisms = dss, mechs


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
                base = [fit(mode, eps, s, Xtr, ytr).score(Xte, yte) for s in range(seeds)]
                line = f"{name:20s} {mode:4s} eps{eps:<4} base {np.mean(base):+.4f}±{np.std(base)/math.sqrt(seeds):.4f}"
                out[f"{name}|{mode}|{eps}|base"] = base
                for rule in rules:
                    set_rule(rule)
                    first = fit(mode, eps, 0, Xtr, ytr).score(Xte, yte)
                    if first == base[0]:
                        line += f" | {rule} same"
                        continue
                    sc = [first] + [fit(mode, eps, s, Xtr, ytr).score(Xte, yte) for s in range(1, seeds)]
                    out[f"{name}|{mode}|{eps}|{rule}"] = sc
                    d = np.array(sc) - np.array(base)
                    t = d.mean() / (d.std(ddof=1) / math.sqrt(seeds) + 1e-300)
                    line += f" | {rule} {np.mean(sc):+.4f} d{d.mean():+.4f} t{t:+.1f}"
                set_rule("base")
                print(line, flush=True)
    if len(sys.argv) > 5:
        json.dump(out, open(sys.argv[5], "w"))


main()
