"""Issue 16 prototypes: per-column releases below the quartiles' rule, outside the library (doc/privacy/column_scaling.rst,
"Median and spread"). Each method releases a column map on a quarter of epsilon (private_column_quantiles) and fits the
estimator with column_scaling=False on the rest; cells where the library's quartiles already run (or n eps < 50 d) fit
the library default. Methods: main, forced (column_scaling=True), quart<k> (quartiles, k points per octave), mag<k>
(median |x|, unsigned, no centre), mm (median 8/oct signed, 2/3; median |x - m| 1/oct unsigned, 1/3), medmad<k>, oracle
(non-private mean/std, a reference only).

    python benchmarks/study_lowcols_variants.py Participation,Wages main,mag1,mm 10
"""
import sys, numpy as np, warnings
sys.path.insert(0, __import__("os").path.dirname(__file__))
warnings.filterwarnings("ignore")
import _real_datasets as R
from sklearn_dpsco import DPHingeClassifier, DPLinearRegressor
from sklearn_dpsco._budget import Budget
from sklearn_dpsco._scale_estimation import private_column_quantiles
from sklearn_dpsco._mechanisms._scale_grid import ScaleGrid
from sklearn.metrics import accuracy_score, r2_score

def score(task, m, X, y):
    p = m.predict(X)
    return accuracy_score(y, p) if task == "clf" else r2_score(y, p)

def qrel(X, qs, eps, grid, rng):
    return private_column_quantiles(X, qs, Budget(eps, 0.0, "float"), grid=grid, random_state=rng).value

def method_map(name, X, eps_c, rng):
    d = X.shape[1]
    if name.startswith("quart"):  # quartiles, grid per_octave=k
        k = int(name[5:] or 8)
        g = ScaleGrid(per_octave=k, signed=True)
        q = qrel(X, (0.25, 0.75), eps_c, g, rng)
        q1, q3 = np.minimum(q[0], q[1]), np.maximum(q[0], q[1])
        step = 2 ** (1 / k) - 1
        sp = np.maximum(np.maximum(q3 - q1, step * np.maximum(abs(q1), abs(q3))), 1.0)
        pt = (q1 == 0) & (q3 == 0)
        return np.where(pt, 0, (q1 + q3) / 2), np.where(pt, 1, sp)
    if name.startswith("medmad"):  # median on signed grid, then median |x-m| on unsigned grid
        k = int(name[6:] or 8)
        gs = ScaleGrid(per_octave=k, signed=True); gu = ScaleGrid(per_octave=k)
        m = qrel(X, (0.5,), eps_c / 2, gs, rng)[0]
        a = qrel(np.abs(X - m), (0.5,), eps_c / 2, gu, rng)[0]
        return m, np.maximum(a * 2, 1.0)
    if name.startswith("mag"):  # median |x| unsigned, no centre
        k = int(name[3:] or 2)
        gu = ScaleGrid(per_octave=k)
        a = qrel(np.abs(X), (0.5,), eps_c, gu, rng)[0]
        return np.zeros(d), np.maximum(a, 1.0)
    if name.startswith("mm"):  # median signed 8/oct (2/3 of eps_c), then median |x-m| unsigned 1/oct (1/3)
        gs = ScaleGrid(per_octave=8, signed=True); gu = ScaleGrid(per_octave=1)
        m = qrel(X, (0.5,), eps_c * 2 / 3, gs, rng)[0]
        a = qrel(np.abs(X - m), (0.5,), eps_c / 3, gu, rng)[0]
        return m, np.maximum(a * 2, 1.0)
    if name == "oracle":
        return X.mean(0), np.maximum(X.std(0), 1e-9)
    raise ValueError(name)

def run(key, method, eps, seed, share=0.25):
    Xtr, ytr, Xte, yte = R.split(key, "raw")
    task = R.load(key).task
    Est = DPHingeClassifier if task == "clf" else DPLinearRegressor
    if method == "main":
        m = Est(epsilon=eps, random_state=seed).fit(Xtr, ytr); return score(task, m, Xte, yte)
    if method == "forced" and len(Xtr) * eps >= 50 * Xtr.shape[1]:
        m = Est(epsilon=eps, random_state=seed, column_scaling=True).fit(Xtr, ytr); return score(task, m, Xte, yte)
    from sklearn_dpsco.linear_model._column_scaling import column_scaling_applies
    if column_scaling_applies("auto", len(Xtr), Xtr.shape[1], eps, declared=False, dense=True) or len(Xtr) * eps < 50 * Xtr.shape[1]:
        return run(key, "main", eps, seed)
    rng = np.random.default_rng(1000 + seed)
    c, s = method_map(method, Xtr, share * eps, rng)
    m = Est(epsilon=(1 - share) * eps, random_state=seed, column_scaling=False).fit((Xtr - c) / s, ytr)
    return score(task, m, (Xte - c) / s, yte)

CELLS = [("Participation", 0.5), ("Participation", 1), ("Participation", 2), ("Wages", 0.5), ("Wages", 1),
         ("Computers", 0.5), ("HI", 0.5)]

if __name__ == "__main__":
    keys = sys.argv[1].split(","); methods = sys.argv[2].split(","); seeds = int(sys.argv[3])
    for k, e in [c for c in CELLS if c[0] in keys]:
        for m in methods:
            v = [run(k, m, e, s) for s in range(seeds)]
            print(f"{k} eps={e} {m}: {np.mean(v):.3f} (sd {np.std(v):.3f}, se {np.std(v)/np.sqrt(seeds):.3f}) "
                  f"min {np.min(v):.3f}", flush=True)
