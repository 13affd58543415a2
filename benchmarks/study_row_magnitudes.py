"""Row magnitudes below the median-and-spread rule (issue 16, fresh.md proposal B).

``python benchmarks/study_row_magnitudes.py [--seeds 10] [--sets Chile,wine] [--ranks 0] [--regressors]``
``python benchmarks/study_row_magnitudes.py --arms "gated:r10,o4,g4;ungated:r10,o4,g0" [--eps 0.5,1,2,4,6,8]``

``--arms``: several variants against main in one run (the main fit shared, paired by seed), each ``r`` =
``ROW_MAGNITUDE_RANKS``, ``o`` = octaves per bin, ``g`` = ``ROW_MAGNITUDE_GATE_BIN`` (``g0``: no gate), ``c`` =
``ROW_MAGNITUDE_COUNT_SHARE`` (``c0``: no count first); unset options take the library's values; ``applied`` = seeds
whose released map is not the identity (the gate fired), ``opened`` = seeds whose noisy count opened the histogram. Without
``--arms`` the new arm is the library's rule (its octaves and gate) at ``--ranks``.

Below ``n epsilon ~ 200 d`` (``COLUMN_MAD_RANKS``) ``column_scaling="auto"`` leaves the columns alone, and the
"auto" clip follows the largest-unit columns (Chile: population and income in the hundred thousands next to a
-2..2 ``statusquo``: 0.59 accuracy, non-private 0.93). ``magnitudes`` = the same fit with
``ROW_MAGNITUDE_RANKS`` set (linear_model/_column_scaling.py, "Row magnitudes": a Laplace histogram of every
column's two-octave bins of ``|x|``, each column divided by its released magnitude). Paired seeds: the same
``random_state`` for both arms. Only the cells where the new rule applies are run (``column_scaling_mode`` is a
public function of n, d, epsilon). Raw columns, nothing declared; fresh sets (bench_fresh.py), the tuned
classification sets and the regression sets (_real_datasets.py, raw encoding; DPLinearRegressor and
DPGrowthAdaptiveRegressor). ``ranks`` = ``n share epsilon / (2 d)`` (each histogram cell's count over its Laplace
scale). ``win`` / ``loss``: seeds where the new arm is better / worse.
"""

import argparse
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _real_datasets as R  # noqa: E402
import bench_fresh as B  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
FRESH = ("Chile", "flchain", "DoctorAUS", "digits")
TUNED_CLF = ("breast_cancer", "wine", "Participation", "biopsy", "HI", "Benefits")
TUNED_REG = ("diabetes", "Wages", "Computers")
EXTRA_REG = ("PSID", "Schooling")


def _sets(names):
    for k in FRESH:
        if names is None or k in names:
            rs = B.SETS[k]()
            tr, te = B.split(rs)
            yield k, rs.task, rs.X[tr], rs.y[tr], rs.X[te], rs.y[te]
    for k in TUNED_CLF + TUNED_REG:
        if names is None or k in names:
            Xtr, ytr, Xte, yte = R.split(k, "raw")
            yield k, R.load(k).task, Xtr, ytr, Xte, yte
    for k in EXTRA_REG:
        if names is None or k in names:
            Xtr, ytr, Xte, yte = R.extra_split(k)
            yield k, "reg", Xtr, ytr, Xte, yte


def _ranks(n, d, eps):
    from sklearn_dpsco.linear_model._column_scaling import BOUNDS_LEVELS, default_column_share

    return n * default_column_share(n, d, eps) * eps / (len(BOUNDS_LEVELS) * d)


#: ``--both-ways``: four-octave bins extended below 1 (bin 0: exact zeros; bin SHIFT: (1/16, 1]; SHIFT + 1: (1, 16]),
#: columns released in (1/16, 16] or at zero kept, larger ones divided and smaller ones enlarged to about 1.
SHIFT, WIDE_BINS = 5, 13


def _both_ways(C):
    def histogram(X, bins=None):
        A = np.abs(np.asarray(X, dtype=np.float64))
        with np.errstate(divide="ignore"):
            k = np.ceil(np.log2(A) / 4.0) + SHIFT
        k = np.clip(np.nan_to_num(k, neginf=0.0), 0, WIDE_BINS - 1).astype(np.intp)
        H = np.zeros((A.shape[1], WIDE_BINS), dtype=np.int64)
        for j in range(A.shape[1]):
            H[j] = np.bincount(k[:, j], minlength=WIDE_BINS)
        return H

    def scales(noisy, tau):
        noisy = np.asarray(noisy, dtype=float)
        top = np.argmax(noisy, axis=1)
        for j in range(noisy.shape[0]):
            while top[j] + 1 < noisy.shape[1] and noisy[j, top[j] + 1] >= tau:
                top[j] += 1
        kept = (top == 0) | (top == SHIFT) | (top == SHIFT + 1)
        return np.where(kept, 1.0, np.ldexp(1.0, 4 * (top - SHIFT) - 2))

    C.row_magnitude_histogram, C.row_magnitude_scales, C.ROW_MAGNITUDE_BINS = histogram, scales, WIDE_BINS


def _fit_score(model, task, eps, seed, Xtr, ytr, Xte, yte):
    est = B.ours(model, eps, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    p = est.predict(Xte)
    info = est.fit_info_[0] if isinstance(est.fit_info_, list) else est.fit_info_
    mode = info.get("column_scaling", {}).get("mode")
    applied = info.get("column_scaling", {}).get("applied", False)
    opened = info.get("column_scaling", {}).get("opened", True)
    one = task == "clf" and len(np.unique(p)) == 1
    return B.score(task, yte, p), mode, one, (applied, opened)


def _parse_arms(spec, C):
    """``name:r10,o4,g4;...``: ROW_MAGNITUDE_RANKS, octaves per bin, ROW_MAGNITUDE_GATE_BIN (the share variants of
    row_magnitudes.md, ``s0.1`` and ``q12``, were measured with a share knob the library no longer has)."""
    arms = []
    for part in spec.split(";"):
        name, _, opts = part.partition(":")
        # unset options: the library's values (g0: no gate)
        cfg = {"ranks": C.ROW_MAGNITUDE_RANKS, "octaves": C.ROW_MAGNITUDE_BIN_OCTAVES, "gate": C.ROW_MAGNITUDE_GATE_BIN,
               "count": C.ROW_MAGNITUDE_COUNT_SHARE}
        for o in filter(None, opts.split(",")):
            key = {"r": "ranks", "o": "octaves", "g": "gate", "c": "count"}[o[0]]
            cfg[key] = int(o[1:]) if key in ("octaves", "gate") else float(o[1:])
        cfg["gate"] = cfg["gate"] or None
        cfg["count"] = cfg["count"] or None  # c0: no count first (the histogram wherever the ranks rule holds)
        arms.append((name, cfg))
    return arms


def _set_arm(C, cfg):
    if cfg is None:
        C.ROW_MAGNITUDE_RANKS = None
        return
    C.ROW_MAGNITUDE_RANKS = cfg["ranks"]
    C.ROW_MAGNITUDE_BIN_OCTAVES, C.ROW_MAGNITUDE_BINS = cfg["octaves"], 32 // cfg["octaves"]
    C.ROW_MAGNITUDE_GATE_BIN = cfg["gate"]
    C.ROW_MAGNITUDE_COUNT_SHARE = cfg["count"]


def _row(name, model, n, d, eps, label, old, new, ones, applied=None):
    old, new = np.array(old), np.array(new)
    diff = new - old
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    oc = f" 1c{ones[0]}" if ones[0] else ""
    nc = f" 1c{ones[1]}" if ones[1] else ""
    ap = "" if applied is None else f" | {applied}"
    print(f"| {name} | {model} | {n} | {d} | {eps:g} | {_ranks(n, d, eps):.1f} | {label} | "
          f"{old.mean():.3f} ({old.std():.3f}){oc} | {new.mean():.3f} ({new.std():.3f}){nc} | "
          f"{diff.mean():+.3f} (se {se:.3f}) | {(diff > 1e-12).sum()}/{(diff < -1e-12).sum()}{ap} |", flush=True)


def main_arms(args):
    """Several arms against main in one run (``--arms``), the main fit shared (paired by seed)."""
    from sklearn_dpsco.linear_model import _column_scaling as C

    if args.regressors:
        from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor

        DPLinearRegressor._ROW_MAGNITUDES = DPGrowthAdaptiveRegressor._ROW_MAGNITUDES = True
    arms = _parse_arms(args.arms, C)
    names = None if args.sets is None else set(args.sets.split(","))
    print("| set | model | n | d | eps | ranks | arm | main | arm's | diff | win/loss | applied |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, task, Xtr, ytr, Xte, yte in _sets(names):
        n, d = Xtr.shape
        for model in ("hinge",) if task == "clf" else ("linear", "growth"):
            for eps in (EPSILONS if args.eps is None else [float(e) for e in args.eps.split(",")]):
                takes = model == "hinge" or args.regressors
                live = []
                for label, cfg in arms:
                    _set_arm(C, cfg)
                    if C.column_scaling_mode("auto", n, d, eps, declared=False, dense=True,
                                             magnitudes=takes) == "magnitudes":
                        live.append((label, cfg))
                _set_arm(C, None)
                if not live:
                    mode = C.column_scaling_mode("auto", n, d, eps, declared=False, dense=True, magnitudes=takes)
                    print(f"| {name} | {model} | {n} | {d} | {eps:g} | {_ranks(n, d, eps):.1f} | all | not released "
                          f"({mode}): identical | | | | |", flush=True)
                    continue
                old, ones0 = [], 0
                new = {label: ([], [0], [0], [0]) for label, _ in live}
                for s in range(args.seeds):
                    _set_arm(C, None)
                    sc, mode, one, _ = _fit_score(model, task, eps, s, Xtr, ytr, Xte, yte)
                    assert mode != "magnitudes"
                    old.append(sc)
                    ones0 += one
                    for label, cfg in live:
                        _set_arm(C, cfg)
                        sc, mode, one, (applied, opened) = _fit_score(model, task, eps, s, Xtr, ytr, Xte, yte)
                        assert mode == "magnitudes", mode
                        new[label][0].append(sc)
                        new[label][1][0] += one
                        new[label][2][0] += applied
                        new[label][3][0] += opened
                _set_arm(C, None)
                for label, _ in live:
                    opened = "" if dict(live)[label]["count"] is None else f" (opened {new[label][3][0]})"
                    _row(name, model, n, d, eps, label, old, new[label][0], (ones0, new[label][1][0]),
                         f"{new[label][2][0]}{opened}")
                skipped = [label for label, _ in arms if label not in dict(live)]
                if skipped:
                    print(f"| {name} | {model} | {n} | {d} | {eps:g} | {_ranks(n, d, eps):.1f} | "
                          f"{','.join(skipped)} | not released: identical | | | | |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sets", default=None)
    ap.add_argument("--ranks", type=float, default=0.0, help="ROW_MAGNITUDE_RANKS of the new arm")
    ap.add_argument("--eps", default=None, help="comma-separated epsilons (default 0.5,1,2)")
    ap.add_argument("--both-ways", action="store_true", help="enlarge small columns too (see _both_ways)")
    ap.add_argument("--octaves", type=int, default=None, help="octaves per bin (bins: 32 / octaves)")
    ap.add_argument("--regressors", action="store_true",
                    help="let the regressors take the magnitudes too (the library's rule: hinge only)")
    ap.add_argument("--arms", default=None,
                    help="several arms, 'name:r10,o4,g4;...' (ranks, octaves, gate bin; see _parse_arms)")
    args = ap.parse_args(argv)
    if args.arms:
        return main_arms(args)
    from sklearn_dpsco.linear_model import _column_scaling as C

    if args.octaves:
        C.ROW_MAGNITUDE_BIN_OCTAVES, C.ROW_MAGNITUDE_BINS = args.octaves, 32 // args.octaves
    if args.both_ways:
        _both_ways(C)
    if args.regressors:
        from sklearn_dpsco import DPGrowthAdaptiveRegressor, DPLinearRegressor

        DPLinearRegressor._ROW_MAGNITUDES = DPGrowthAdaptiveRegressor._ROW_MAGNITUDES = True


    names = None if args.sets is None else set(args.sets.split(","))
    print("| set | model | n | d | eps | ranks | main | magnitudes | diff | win/loss |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, task, Xtr, ytr, Xte, yte in _sets(names):
        n, d = Xtr.shape
        for model in ("hinge",) if task == "clf" else ("linear", "growth"):
            for eps in (EPSILONS if args.eps is None else [float(e) for e in args.eps.split(",")]):
                C.ROW_MAGNITUDE_RANKS = args.ranks
                takes = model == "hinge" or args.regressors
                applies = C.column_scaling_mode("auto", n, d, eps, declared=False, dense=True,
                                                magnitudes=takes) == "magnitudes"
                if not applies:
                    C.ROW_MAGNITUDE_RANKS = None
                    print(f"| {name} | {model} | {n} | {d} | {eps:g} | {_ranks(n, d, eps):.1f} | - | not applied "
                          f"({C.column_scaling_mode('auto', n, d, eps, declared=False, dense=True, magnitudes=takes)}) | | |", flush=True)
                    continue
                old, new, ones = [], [], [0, 0]
                for s in range(args.seeds):
                    for arm, ranks, out in ((0, None, old), (1, args.ranks, new)):
                        C.ROW_MAGNITUDE_RANKS = ranks
                        sc, mode, one, _ = _fit_score(model, task, eps, s, Xtr, ytr, Xte, yte)
                        assert (mode == "magnitudes") == (arm == 1), (mode, arm)
                        out.append(sc)
                        ones[arm] += one
                C.ROW_MAGNITUDE_RANKS = None
                old, new = np.array(old), np.array(new)
                diff = new - old
                se = diff.std(ddof=1) / np.sqrt(len(diff))
                oc = f" 1c{ones[0]}" if ones[0] else ""
                nc = f" 1c{ones[1]}" if ones[1] else ""
                print(f"| {name} | {model} | {n} | {d} | {eps:g} | {_ranks(n, d, eps):.1f} | "
                      f"{old.mean():.3f} ({old.std():.3f}){oc} | {new.mean():.3f} ({new.std():.3f}){nc} | "
                      f"{diff.mean():+.3f} (se {se:.3f}) | {(diff > 1e-12).sum()}/{(diff < -1e-12).sum()} |",
                      flush=True)


if __name__ == "__main__":
    main()
