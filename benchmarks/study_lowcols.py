"""Issue 16: the library's median and spread (column_scaling_mode "median_mad") against the fit without it, paired by
seed (COLUMN_MAD_RANKS set to inf: the main branch's behaviour), on the benchmark cells it changes.

    OMP_NUM_THREADS=1 python benchmarks/study_lowcols.py HI:raw:hinge:0.5,Wages:raw:lin:1 10
"""
import sys, numpy as np, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, __import__("os").path.dirname(__file__))
import _real_datasets as R
from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor, DPGrowthAdaptiveRegressor
from sklearn_dpsco.linear_model import _column_scaling as CS
EST = {"hinge": DPHingeClassifier, "lin": DPLinearRegressor, "growth": DPGrowthAdaptiveRegressor}
cells = [c.split(":") for c in sys.argv[1].split(",")]
seeds = int(sys.argv[2])
orig = CS.COLUMN_MAD_RANKS
for key, enc, est, eps in cells:
    eps = float(eps)
    Xtr, ytr, Xte, yte = R.split(key, enc)
    out = {}
    for arm in ("main", "new"):
        CS.COLUMN_MAD_RANKS = float("inf") if arm == "main" else orig
        v = []
        for s in range(seeds):
            m = EST[est](epsilon=eps, random_state=s).fit(Xtr, ytr)
            sc = m.score(Xte, yte)
            v.append(sc)
        out[arm] = np.array(v)
    d = out["new"] - out["main"]
    se = {k: v.std() / np.sqrt(seeds) for k, v in out.items()}
    print(f"{key} {enc} {est} eps={eps}: main {out['main'].mean():.3f} (se {se['main']:.3f}) "
          f"new {out['new'].mean():.3f} (se {se['new']:.3f}) diff {d.mean():+.3f} (se {d.std() / np.sqrt(seeds):.3f}) "
          f"min new {out['new'].min():.3f}", flush=True)
