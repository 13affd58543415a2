"""Re-check DPLinearRegressor solver="auto" on the real regression sets of bench_defaults.py (run by hand).

    OMP_NUM_THREADS=1 python benchmarks/check_solver_auto.py Vocab,Computers,BudgetFood,Wages,diabetes auto,adassp,phased_sgd,phased_erm,lowy

Raw columns through make_dp_pipeline(DPStandardScaler(), DPLinearRegressor(solver=s)); encoding (b) with
row_bound=1, label_bound=1. Prints test R^2 (mean of 3 seeds) per solver; results in benchmarks/results/rules.md.
"""
import sys, warnings, numpy as np
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
import _real_datasets as R
from sklearn_dpsco import DPLinearRegressor, BudgetAccountant
from sklearn_dpsco.preprocessing import DPStandardScaler, make_dp_pipeline
from sklearn.metrics import r2_score
warnings.simplefilter("ignore")
solvers = sys.argv[2].split(",")
for key in sys.argv[1].split(","):
    rs = R.load(key); tr, te = R.train_test(rs)
    for enc in ("raw", "scaled"):
        X, y = R.encode(rs, enc)
        for eps in (0.5, 1.0, 2.0):
            line = f"{key} {enc} d={X.shape[1]} n={len(tr)} eps={eps}:"
            for solver in solvers:
                sc = []
                for seed in range(3):
                    try:
                        if enc == "raw":
                            est = make_dp_pipeline(DPStandardScaler(random_state=seed), DPLinearRegressor(solver=solver, random_state=seed), epsilon=eps, accountant=BudgetAccountant(np.inf, 1))
                        else:
                            est = DPLinearRegressor(solver=solver, row_bound=1.0, label_bound=1.0, epsilon=eps, random_state=seed, accountant=BudgetAccountant(np.inf, 1))
                        est.fit(X[tr], y[tr]); sc.append(r2_score(y[te], est.predict(X[te])))
                        if solver == "auto" and seed == 0: chosen = (est[-1] if enc == "raw" else est).solver_
                    except Exception:
                        sc.append(np.nan)
                line += f" {solver}={np.nanmean(sc):.3f}" + (f"[{chosen}]" if solver == "auto" else "")
            print(line, flush=True)
