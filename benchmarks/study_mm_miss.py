"""A missed spread in the median and spread map: scale 1 unclipped (before) against ``|m|`` clipped (library).

The median and spread map (``column_scaling_mode == "median_mad"``, about ``200 d <= n epsilon < 400 d``) releases a
median ``m`` and a spread ``a`` per column. A spread below the floor (``2 a < 1``) at ``|m| >= 16`` is a missed
release. Before 2026-11-29 such a column kept scale 1 and no clip, so a raw column in the tens or thousands
dominated every mapped row; the library now scales it by ``|m|`` and clips it at ``COLUMN_MAD_CLIP`` like the others
(``ColumnScaling.from_median_mad``). The ``before`` arm rebuilds the previous map from the same released pair (same
draws: only the post-processing differs), so the two arms are paired seed by seed.

    OMP_NUM_THREADS=1 python benchmarks/study_mm_miss.py band    # raw study sets at n epsilon / d = 210, 250, 300
    OMP_NUM_THREADS=1 python benchmarks/study_mm_miss.py fresh   # bench_fresh's sets at epsilon 0.5, 1, 2 (20 seeds)

Prints one line per cell; results in benchmarks/results/learning_curves.md.
"""

import math
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_learning_curves as L  # noqa: E402
import study_mm_band as B  # noqa: E402

from sklearn_dpsco.linear_model import _column_scaling as C  # noqa: E402

_LIBRARY = C.ColumnScalingPlan._median_mad
MISSES = []


def _before(self, X, rng, n_jobs=None):
    """The library's releases, mapped as before 2026-11-29: a missed spread keeps scale 1 and is not clipped."""
    columns, event = _LIBRARY(self, X, rng, n_jobs)
    lo, hi = columns.quartiles
    m, a = (lo + hi) / 2.0, (hi - lo) / 2.0
    missed = (2.0 * a < C.MIN_COLUMN_SCALE) & (np.abs(m) >= C.MAD_MISS_FAR_CENTRE) & ~columns.passthrough
    MISSES.append(int(missed.sum()))
    scale = np.where(missed, 1.0, columns.scale)
    clip = np.where(missed, np.inf, C.COLUMN_MAD_CLIP)
    return C.ColumnScaling(columns.quartiles, columns.centre, scale, columns.passthrough).with_clip(clip), event


def fit_score(kind, eps, seed, X, y, Xte, yte, arm):
    C.ColumnScalingPlan._median_mad = _before if arm == "before" else _LIBRARY
    est = L.model(kind, eps, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    info = est.fit_info_ if isinstance(est.fit_info_, dict) else est.fit_info_[0]
    return L.score("clf" if kind == "hinge" else "reg", est, Xte, yte), info.get("column_scaling", {}).get("mode")


def line(label, before, library):
    dd = np.array(library) - np.array(before)
    return (f"{label} before {np.mean(before):+.3f} library {np.mean(library):+.3f} diff {dd.mean():+.3f} "
            f"({dd.std(ddof=1) / math.sqrt(len(dd)):.3f}) worst {min(before):+.3f} / {min(library):+.3f} "
            f"missed columns a fit {np.mean(MISSES) if MISSES else 0:.2f}")


def band(seeds=range(10)):
    todo = [(k, m) for k in ("BudgetFood", "PSID", "Computers", "Wages") for m in ("linear", "growth")]
    todo += [("HI", "hinge"), ("Vocab", "linear"), ("Participation", "hinge"), ("Schooling", "linear")]
    for key, kind in todo:
        Xtr, ytr, _, Xte, yte, _ = L.data(key, "raw")
        total, d = len(ytr), Xtr.shape[1]
        for ratio in (210, 250, 300):
            n, eps = B.band_point(total, d, ratio)
            MISSES.clear()
            scores = {"before": [], "library": []}
            for s in seeds:
                idx = B.band_rows(total, n, s)
                for arm in scores:
                    scores[arm].append(fit_score(kind, eps, s, Xtr[idx], ytr[idx], Xte, yte, arm)[0])
            print(line(f"{key:13s} {kind:6s} {ratio} n={n} eps={eps:.3f}", scores["before"], scores["library"]),
                  flush=True)


def fresh(seeds=range(20)):
    import bench_fresh as F

    for key in ("Treatment", "SLID", "Star", "Forbes2000", "OFP", "flchain", "Hdma", "VietNamI", "Chile",
                "DoctorAUS", "digits"):
        rs = F.SETS[key]()
        tr, te = F.split(rs)
        for kind in (("linear", "growth") if rs.task == "reg" else ("hinge",)):
            for eps in (0.5, 1.0, 2.0):
                MISSES.clear()
                scores = {"before": [], "library": []}
                for s in seeds:
                    for arm in scores:
                        sc, mode = fit_score(kind, eps, s, rs.X[tr], rs.y[tr], rs.X[te], rs.y[te], arm)
                        scores[arm].append(sc)
                    if mode != "median_mad":
                        break
                if mode != "median_mad":
                    print(f"{key:10s} {kind:6s} {eps} mode {mode}: unchanged", flush=True)
                    continue
                print(line(f"{key:10s} {kind:6s} {eps} n={len(tr)}", scores["before"], scores["library"]), flush=True)


if __name__ == "__main__":
    {"band": band, "fresh": fresh}[sys.argv[1] if len(sys.argv) > 1 else "band"]()
