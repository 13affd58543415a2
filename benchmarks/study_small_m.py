"""Study (smallm, issue 16 T1): default "auto"-scale DPLinearRegressor vs the intercept-only release, by
m = n eps_solver / d (eps_solver = epsilon less the scale share and the column-quartile share, from fit_info_).

The intercept-only model is the existing constant plan's release (private label median on the whole epsilon),
forced per seed by patching ``_base.scales_supported`` to False (study only). Results:
benchmarks/results/small_m_real.txt, small_m_synth.txt.

Usage: OMP_NUM_THREADS=1 python benchmarks/study_small_m.py seeds [real|synth] [out.json]
"""
import sys, json, warnings, numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn_dpsco import DPLinearRegressor
import sklearn_dpsco.linear_model._base as _B
_orig = _B.scales_supported
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
kind = sys.argv[2] if len(sys.argv) > 2 else "real"
EPS = [0.25, 0.5, 1.0, 2.0]


def solver_eps(m):
    """The solver's epsilon: epsilon less the scale and column shares (pure DP defaults)."""
    info = m.fit_info_ if isinstance(m.fit_info_, dict) else m.fit_info_[0]
    rest = m.epsilon - float(info.get("scale_epsilon", 0.0))
    cols = info.get("column_scaling")
    if isinstance(cols, dict):
        rest -= float(cols.get("epsilon", 0.0))
    return rest


def sets():
    if kind == "real":
        import _real_datasets as R
        for name in ("diabetes", "Wages", "Computers"):
            for enc in ("raw", "scaled"):
                yield f"{name}/{enc}", R.split(name, enc)
    else:
        for n in (200, 500, 1000, 2000, 5000):
            for d in (3, 10, 30):
                for r2 in (0.4, 0.8):
                    rng = np.random.default_rng(1000 * n + 10 * d + int(10 * r2))
                    N = int(n / 0.7)
                    X = rng.normal(size=(N, d)) * rng.uniform(0.5, 3, d) + rng.uniform(-2, 5, d)
                    w = rng.normal(size=d)
                    s = X @ w
                    noise = np.sqrt(s.var() * (1 - r2) / r2)
                    y = 50 + s + rng.normal(scale=noise, size=N)
                    yield f"syn n{n} d{d} r{r2}", (X[:n], y[:n], X[n:], y[n:])


out = {}
for name, (Xtr, ytr, Xte, yte) in sets():
    n, d = Xtr.shape
    base = LinearRegression().fit(Xtr, ytr).score(Xte, yte)
    const = r2_score(yte, np.full(len(yte), np.median(ytr)))
    for eps in EPS:
        sc, ms, solv, cs = [], [], [], []
        for s in range(seeds):
            m = DPLinearRegressor(epsilon=eps, random_state=s).fit(Xtr, ytr)
            sc.append(m.score(Xte, yte)); ms.append(n * solver_eps(m) / d); solv.append(m.solver_)
            _B.scales_supported = lambda *a: False  # force the existing constant plan (intercept-only release)
            try:
                c = DPLinearRegressor(epsilon=eps, random_state=s).fit(Xtr, ytr)
            finally:
                _B.scales_supported = _orig
            assert c.solver_ == "intercept_only"
            cs.append(c.score(Xte, yte))
        sc = np.array(sc); cs = np.array(cs)
        row = dict(n=n, d=d, eps=eps, base=base, const=const, mean=sc.mean(), p10=np.percentile(sc, 10),
                   min=sc.min(), cmean=cs.mean(), cp10=np.percentile(cs, 10), win=float(np.mean(sc > cs)), m=float(np.nanmedian(ms)), solvers=sorted(set(solv)))
        out[f"{name}/{eps}"] = row
        print(f"{name:22s} n{n:5d} d{d:2d} eps{eps:<5} base {base:+.3f} const {const:+.3f} | mean {row['mean']:+.3f} "
              f"p10 {row['p10']:+.3f} min {row['min']:+.3f} | C mean {row['cmean']:+.3f} p10 {row['cp10']:+.3f} win {row['win']:.2f} | m {row['m']:8.1f} {row['solvers']}", flush=True)
if len(sys.argv) > 3:
    json.dump(out, open(sys.argv[3], "w"), indent=1)
