"""Issue 16 (PSID): the column map's mapped columns clipped at k released spreads (COLUMN_CLIP for the quartile maps,
COLUMN_MAD_CLIP for the median and spread; linear_model/_column_scaling.py, "Clipped columns"), paired by seed against
no clip (main's behaviour: same releases, the map differs only beyond k spreads).

    OMP_NUM_THREADS=1 python benchmarks/study_psid_spread.py PSID:lin:1,HI:hinge:0.5 10 base,lib,q4m8,qnm8
    set: an extra_split name (PSID, Schooling, Workinghours), a bench_defaults set (raw encoding), SYN (synthetic,
    outlier codes 98 / 99), or fresh-NAME (a bench_fresh set); arms: see arm_setting; the first arm is the reference of the paired differences.
    "modes" as first argument prints each cell's column map mode and quits.
"""
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
sys.path.insert(0, __import__("os").path.dirname(__file__))
import _real_datasets as R  # noqa: E402

from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPHingeClassifier, DPLinearRegressor  # noqa: E402
from sklearn_dpsco.linear_model import _column_scaling as CS  # noqa: E402

EST = {"hinge": DPHingeClassifier, "lin": DPLinearRegressor, "growth": DPGrowthAdaptiveRegressor}
LIB = (CS.COLUMN_CLIP, CS.COLUMN_MAD_CLIP, CS.MAD_MISS_FAR_CENTRE)


def synthetic(seed=0):
    """PSID-like: age, education, children (codes 98 / 99 on 3 % / 2 % of rows), two indicators, income."""
    rng = np.random.default_rng(seed)
    n = 4000
    age = rng.normal(40, 10, n).round()
    educ = np.clip(rng.normal(12.5, 2.5, n).round(), 0, 20)
    kids = rng.poisson(1.5, n).astype(float)
    married = (rng.random(n) < 0.6).astype(float)
    south = (rng.random(n) < 0.3).astype(float)
    y = 2000 * (educ - 12) + 300 * (age - 40) - 1500 * kids + 4000 * married + rng.normal(0, 8000, n) + 15000
    educ_obs = np.where(rng.random(n) < 0.03, 99.0, educ)
    kids_obs = np.where(rng.random(n) < 0.02, 98.0, kids)
    X = np.column_stack([age, educ_obs, kids_obs, married, south])
    cut = int(0.7 * n)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def load(name):
    if name == "SYN":
        return synthetic()
    if name.startswith("fresh-"):  # bench_fresh's sets (nobody tuned on them), its fixed 70/30 split
        import bench_fresh as F

        rs = F.SETS[name[len("fresh-"):]]()
        tr, te = F.split(rs)
        return rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]
    if name in R.EXTRA_REGRESSION:
        return R.extra_split(name)
    return R.split(name, "raw")


def arm_setting(arm):
    """``(COLUMN_CLIP, COLUMN_MAD_CLIP, MAD_MISS_FAR_CENTRE)`` of an arm: ``base`` (no clip: main), ``lib`` (the
    library's), or ``q<K>m<M>[f|e]`` (``n``: no clip for that map; ``f``: the median and spread map clips every column,
    ``e``: it leaves every column at the floor unclipped; since 2026-11-29 the library scales a missed spread by
    ``|m|`` instead, and ``e`` scales every floored column by ``max(|m|, 1)``), e.g. ``q3m8f``, ``qnm4``; ``off``: ``column_scaling=False``."""
    if arm in ("base", "off"):
        return None, None, None
    if arm == "lib":
        return LIB
    q, m = arm[1:].split("m")
    far = LIB[2]
    if m[-1] in "fe":  # f: every column clipped; e: every column at the floor left unclipped
        m, far = m[:-1], (None if m[-1] == "f" else 0.0)
    return (None if q == "n" else float(q)), (None if m == "n" else float(m)), far


def score(model, Xte, yte):
    info = model.fit_info_[0] if isinstance(model.fit_info_, list) else model.fit_info_
    return model.score(Xte, yte), info.get("column_scaling", {}).get("mode")


def main():
    if sys.argv[1] == "modes":
        for name in sys.argv[2].split(","):
            Xtr, ytr, _, _ = load(name)
            for est in ("any",):
                for eps in (0.5, 1, 2):
                    mode = CS.column_scaling_mode("auto", Xtr.shape[0], Xtr.shape[1], eps, declared=False,
                                                  dense=True)
                    print(f"{name} n={Xtr.shape[0]} d={Xtr.shape[1]} eps={eps}: {mode}", flush=True)
        return
    cells = [c.split(":") for c in sys.argv[1].split(",")]
    seeds = int(sys.argv[2])
    arms = sys.argv[3].split(",")
    for name, est, eps in cells:
        eps = float(eps)
        Xtr, ytr, Xte, yte = load(name)
        out, mode = {}, None
        for arm in arms:
            CS.COLUMN_CLIP, CS.COLUMN_MAD_CLIP, CS.MAD_MISS_FAR_CENTRE = arm_setting(arm)
            v = []
            for s in range(seeds):
                extra = {"column_scaling": False} if arm == "off" else {}
                m = EST[est](epsilon=eps, random_state=s, **extra).fit(Xtr, ytr)
                sc, arm_mode = score(m, Xte, yte)
                mode = mode or arm_mode
                v.append(sc)
            out[arm] = np.array(v)
        base = out[arms[0]]
        parts = [f"{arms[0]} {base.mean():.3f} (min {base.min():.3f})"]
        for arm in arms[1:]:
            d = out[arm] - base
            parts.append(f"{arm} {out[arm].mean():.3f} (min {out[arm].min():.3f}) "
                         f"diff {d.mean():+.3f} (se {d.std(ddof=1) / np.sqrt(seeds):.3f})")
        print(f"{name} {est} eps={eps} [{mode}]: " + " | ".join(parts), flush=True)


if __name__ == "__main__":
    main()
