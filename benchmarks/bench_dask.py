"""Fits on a Dask LocalCluster (2 workers): time against n, the client's peak memory, utility.

Protocol (public synthetic family, as benchmarks/bench_scaling_n.py): d = 20 rows
``x = z / sqrt(d) / 2`` with z standard normal (norms about 0.5), ``y = clip(<w, x> +
0.1 N(0, 1), -1, 1)`` with ``||w|| = 2``. The rows are generated ON the workers
(``dask.array.random``, chunks of ``--chunk`` rows) and persisted there before the
timer starts, so the client never holds them. ``DPLinearRegressor(epsilon=1)`` at
its defaults (``row_bound="auto"``, ``label_bound="auto"``: private grid counts on
the workers; ``solver="auto"`` picks AdaSSP here: statistics folded on the workers).
Test R^2 on 100000 fresh in-memory rows.

Measured per n: wall time of ``fit``, the client's peak traced allocation during
``fit`` (``tracemalloc``, which sees NumPy buffers) and its RSS growth (psutil), the
fitted R^2, and that the release equals the in-memory fit's where the client can
hold the rows (``--check-max-n``). Time against n is fitted by least squares
(slope in seconds per million rows).

``--solver phased_sgd`` / ``--solver snowball`` measure a one-pass SGD solver instead:
``fit`` draws the public permutation and applies it on the workers, then feeds the
run chunk by chunk on the workers holding the rows; ``--stream`` calls ``fit_stream``
(declared bounds, the rows in the order given). ``--append`` adds the table to the
results file instead of replacing it.

Writes benchmarks/results/dask.md. Run by hand (not in CI; 1e7 rows hold 1.7 GB
on the workers)::

    OMP_NUM_THREADS=1 python benchmarks/bench_dask.py                       # 1e6 .. 1e7
    OMP_NUM_THREADS=1 python benchmarks/bench_dask.py --sizes 1e6 2e6 --repeats 1
    OMP_NUM_THREADS=1 python benchmarks/bench_dask.py --solver phased_sgd --sizes 1e6 2e6 4e6 --append
"""

import argparse
import os
import platform
import time
import tracemalloc

import numpy as np

D = 20
_W = np.random.default_rng(12345).standard_normal(D)
_W *= 2.0 / np.linalg.norm(_W)


def _rows_dask(n, chunk, seed):
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n, D), chunks=(chunk, D)) / (2.0 * np.sqrt(D))
    y = da.clip(X @ _W + 0.1 * rs.standard_normal(n, chunks=chunk), -1.0, 1.0)
    return X, y


def _rows_numpy(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D)) / (2.0 * np.sqrt(D))
    return X, np.clip(X @ _W + 0.1 * rng.standard_normal(n), -1.0, 1.0)


def _labels_dask(n, chunk, seed):
    """The hinge family of benchmarks/bench_scaling_n.py: standard normal rows, ``sign(<w, x> + 0.5 N)``."""
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n, D), chunks=(chunk, D))
    return X, da.where(X @ _W + 0.5 * rs.standard_normal(n, chunks=chunk) > 0, 1, -1)


def _labels_numpy(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    return X, np.where(X @ _W + 0.5 * rng.standard_normal(n) > 0, 1, -1)


def _accuracy(model, X, y):
    return float(np.mean(model.predict(X) == y))


def _r2(model, X, y):
    resid = y - model.predict(X)
    return 1.0 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))


def _cpu_seconds(client):
    """CPU seconds used so far by the client process (it hosts the scheduler) and by every worker."""
    workers = client.run(time.process_time)
    return time.process_time(), sum(workers.values())


def _fit(model, X, y, stream):
    return model.fit_stream(X, y) if stream else model.fit(X, y)


def _fit_timed(make, X, y, client, stream=False):
    """``(model, wall seconds, client CPU seconds, workers' CPU seconds)`` of one fit."""
    c0, w0 = _cpu_seconds(client)
    t0 = time.perf_counter()
    model = _fit(make(), X, y, stream)
    seconds = time.perf_counter() - t0
    c1, w1 = _cpu_seconds(client)
    return model, seconds, c1 - c0, w1 - w0


def _fit_traced(make, X, y, stream=False):
    """``(peak traced MB, RSS growth MB)`` of the client during one fit (a separate, slower run)."""
    import psutil

    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    tracemalloc.start()
    _fit(make(), X, y, stream)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20, (proc.memory_info().rss - rss0) / 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 2e6, 4e6, 7e6, 1e7])
    parser.add_argument("--chunk", type=int, default=8192 * 32)
    parser.add_argument("--repeats", type=int, default=2, help="fits per n (the fastest time is kept)")
    parser.add_argument("--check-max-n", type=float, default=2e6,
                        help="also fit in memory up to this n and compare the releases")
    parser.add_argument("--estimator", choices=["linear", "hinge"], default="linear",
                        help="DPLinearRegressor (AdaSSP on the workers) or DPHingeClassifier (solved on one worker)")
    parser.add_argument("--solver", choices=["auto", "phased_sgd", "snowball"], default="auto",
                        help="DPLinearRegressor's solver (one-pass SGD solvers run chunk by chunk on the workers)")
    parser.add_argument("--stream", action="store_true", help="fit_stream (declared bounds, the order given)")
    parser.add_argument("--append", action="store_true", help="append to the results file instead of replacing it")
    parser.add_argument("--out", default=None, help="default: benchmarks/results/dask.md (dask_hinge.md for hinge)")
    args = parser.parse_args()

    import dask
    import distributed
    from dask.distributed import Client, LocalCluster

    from sklearn_dpsco import __version__ as dpsco_version
    from sklearn_dpsco.linear_model import DPHingeClassifier, DPLinearRegressor

    hinge = args.estimator == "hinge"
    out = args.out or os.path.join(os.path.dirname(__file__), "results", "dask_hinge.md" if hinge else "dask.md")
    rows_dask, rows_numpy, score = (_labels_dask, _labels_numpy, _accuracy) if hinge else (_rows_dask, _rows_numpy, _r2)

    sgd = args.solver != "auto"
    options = {}
    if sgd:
        options["solver"] = args.solver
        if args.solver == "snowball":
            options.update(noise="float", delta=1e-6)
    if args.stream:  # one pass in the order given: the bounds must be declared (rows have norm ~0.5)
        options.update(row_bound=1.0, label_bound=1.0)

    def make():
        if hinge:
            return DPHingeClassifier(epsilon=1.0, random_state=0)
        return DPLinearRegressor(epsilon=1.0, random_state=0, **options)

    X_test, y_test = rows_numpy(100_000, 999)
    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.run(lambda: os.environ.setdefault("OMP_NUM_THREADS", "1"))
        # warm-up: imports and first tasks on the workers
        Xw, yw = rows_dask(50_000, 8192, 1)
        _fit(make(), Xw, yw, args.stream)
        for n in (int(s) for s in args.sizes):
            X, y = rows_dask(n, args.chunk, 7)
            X, y = client.persist(X), client.persist(y)
            distributed.wait([X, y])
            best = None
            for _ in range(args.repeats):
                run = _fit_timed(make, X, y, client, args.stream)
                if best is None or run[1] < best[1]:
                    best = run
            model, seconds, client_cpu, worker_cpu = best
            peak_mb, rss_mb = _fit_traced(make, X, y, args.stream)
            same = ""
            if n <= args.check_max_n:
                Xm, ym = dask.compute(X, y)
                # fit_stream on the dask array reads each chunk as one block: the same block size in memory
                ref = make().fit_stream(Xm, ym, block_rows=args.chunk) if args.stream else make().fit(Xm, ym)
                same = "yes" if (np.array_equal(ref.coef_, model.coef_) and ref.intercept_ == model.intercept_
                                 and ref.privacy_event_ == model.privacy_event_) else "NO"
                del Xm, ym, ref
            row = dict(n=n, seconds=seconds, client_cpu=client_cpu, worker_cpu=worker_cpu, peak_mb=peak_mb, rss_mb=rss_mb,
                       r2=score(model, X_test, y_test), solver=model.solver_, same=same,
                       chunks=len(X.chunks[0]))
            rows.append(row)
            print(row, flush=True)
            del X, y, model, best  # releases the persisted chunks on the workers

    n = np.array([r["n"] for r in rows], dtype=float)

    def linear(values):
        slope, intercept = np.polyfit(n / 1e6, values, 1)
        fitted = slope * n / 1e6 + intercept
        return slope, intercept, 1.0 - ((values - fitted) ** 2).sum() / max(((values - values.mean()) ** 2).sum(), 1e-300)

    wall = linear(np.array([r["seconds"] for r in rows]))
    cpu = linear(np.array([r["worker_cpu"] for r in rows]))
    r2s = [r["r2"] for r in rows]
    metric = "accuracy" if hinge else "R^2"
    what = ("DPHingeClassifier(epsilon=1) at its defaults (auto clip from private grid counts on the "
            "workers, then the certified solver on ONE worker)," if hinge else
            "DPLinearRegressor(epsilon=1) at its defaults (auto row and label bounds from private grid "
            "counts on the workers, then AdaSSP's sufficient statistics folded on the workers),")
    flags = " --estimator hinge" if hinge else ""
    if sgd:
        flags = f" --solver {args.solver}" + (" --stream" if args.stream else "")
        what = (f"DPLinearRegressor(epsilon=1, {', '.join(f'{k}={v!r}' for k, v in options.items())}): "
                + ("fit_stream, the rows in the order given, each chunk fed to the run on the worker holding it "
                   "(a chain of tasks passing only the run)," if args.stream else
                   "fit with auto bounds (grid counts on the workers), the public permutation drawn and "
                   "applied on the workers, then each permuted chunk fed to the run on the worker holding it "
                   "(a chain of tasks passing only the run),"))
    lines = [
        "# Dask fits on a LocalCluster (2 worker processes, 1 thread each)" + (f": {args.solver}" if sgd else ""),
        "",
        f"Written by benchmarks/bench_dask.py{flags}. {what}",
        f"d = {D}, rows generated and persisted on the workers in chunks of {args.chunk} rows;",
        f"test {metric} on 100000 fresh rows; fastest of {args.repeats} fits",
        "(wall time; CPU seconds of the client process, which hosts the scheduler, and of both workers",
        "in that fit). Client memory: a separate traced fit, peak traced allocation (tracemalloc) and RSS",
        "growth (psutil).",
        "",
        "| n | chunks | solver | fit wall (s) | client CPU (s) | workers' CPU (s) | client peak traced (MB) "
        "| client RSS growth (MB) | test " + metric + " | release == in-memory |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n']:.0e} | {r['chunks']} | {r['solver']} | {r['seconds']:.2f} | {r['client_cpu']:.2f} | "
                     f"{r['worker_cpu']:.2f} | {r['peak_mb']:.1f} | {r['rss_mb']:.1f} | {r['r2']:.4f} | "
                     f"{r['same'] or 'not run'} |")
    lines += [
        "",
        f"Wall time against n (least squares): {wall[0]:.3f} s per million rows + {wall[1]:.2f} s "
        f"(R^2 of the linear fit {wall[2]:.3f}).",
        f"Workers' CPU time against n: {cpu[0]:.3f} s per million rows + {cpu[1]:.2f} s "
        f"(R^2 of the linear fit {cpu[2]:.3f}).",
        f"Client peak traced memory: {min(r['peak_mb'] for r in rows):.1f} to {max(r['peak_mb'] for r in rows):.1f} MB "
        f"while the data grows from {rows[0]['n'] * (D + 1) * 8 / 2**20:.0f} to {rows[-1]['n'] * (D + 1) * 8 / 2**20:.0f} MB.",
        f"Test {metric} non-decreasing in n: " + ("yes" if all(b >= a - 1e-3 for a, b in zip(r2s, r2s[1:])) else "NO")
        + " (tolerance 1e-3).",
        "",
        f"Environment: sklearn_dpsco {dpsco_version}, dask {dask.__version__}, distributed {distributed.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores shared with other jobs, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}.",
    ]
    text = "\n".join(lines) + "\n"
    with open(out, "a" if args.append else "w") as fh:
        if args.append:
            fh.write("\n")
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
