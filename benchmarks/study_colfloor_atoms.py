"""Release-level check of the two-stage enlargement on atom-valued columns (issue 16/18 study).

For each column kind, over many noise draws of the quartile releases (d = 20 columns: the atom columns next
to unit normal ones), the fraction of draws whose scale falls below 1 and the smallest scale seen.
    OMP_NUM_THREADS=1 python benchmarks/study_colfloor_atoms.py 2e5 1.0 200
"""
import sys
import numpy as np
from sklearn_dpsco._budget import Budget
import sklearn_dpsco.linear_model._column_scaling as CS

n, eps, draws = int(float(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3])
rule = sys.argv[4] if len(sys.argv) > 4 else "code"
if rule not in ("code", "new"):
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    import study_colfloor
    study_colfloor.set_rule(rule)
rng = np.random.default_rng(0)
u = rng.uniform(size=n)
kinds = {}
for p in (0.05, 0.2, 0.25, 0.3, 0.6, 0.7, 0.75, 0.8, 0.9):
    kinds[f"01 p={p}"] = (u < p).astype(float)
for p in (0.25, 0.75):
    kinds[f"12 p={p}"] = 1.0 + (u < p)
    kinds[f"-1,1 p={p}"] = np.where(u < p, 1.0, -1.0)
    kinds[f"0,.01 p={p}"] = 0.01 * (u < p)
    kinds[f"1e3+{{0,1}} p={p}"] = 1000.0 + (u < p)
for lam in (0.5, 1.4, 2, 5.5):
    kinds[f"pois {lam}"] = rng.poisson(lam, n).astype(float)
names = list(kinds)
cols = np.column_stack([kinds[k] for k in names])
X = np.column_stack([cols, rng.standard_normal((n, 20 - cols.shape[1] % 20 if cols.shape[1] < 20 else 0))]) if cols.shape[1] < 20 else cols
d = X.shape[1]
plan = CS.ColumnScalingPlan.build(Budget(eps), n, d, centre=True)
print("d", d, "stages", plan.stages, "stride", plan.stride, "share", plan.share)
scales = np.array([plan.release(X, np.random.default_rng(s))[0].scale for s in range(draws)])
for j, k in enumerate(names):
    s = scales[:, j]
    print(f"{k:18s} P(scale<1)={np.mean(s < 1):.3f} P(<1/4)={np.mean(s < .25):.3f} min={s.min():.3g} median={np.median(s):.3g}")
